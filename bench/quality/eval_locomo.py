#!/usr/bin/env python3
"""LoCoMo dev retrieval through the real commands: ``memory index`` + ``memory search --batch``.

    python bench/quality/eval_locomo.py                 # default config, dev split
    python bench/quality/eval_locomo.py --set embedder=wordllama --set per_file=2

For each conversation the harness (../shared/eval/locomo_retrieval.py) writes a corpus of
transcripts; ``--index-cmd`` turns it into a memory repo (git init, a memory-config.yaml
holding only the ``--set`` overrides, one commit) and runs ``memory index``; the
retriever is ``memory search --batch --json`` in that repo. Nothing is tuned per dataset:
without ``--set`` the repo has the defaults a new memory repo gets.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
from results import add_record_option, record  # noqa: E402

from memrepo.resources import memory_command  # noqa: E402

HARNESS = HERE.parents[2] / "shared" / "eval" / "locomo_retrieval.py"
GIT = ["git", "-c", "user.name=eval", "-c", "user.email=eval@example.com"]


def prepare(settings: dict[str, object]) -> int:
    """Run inside a corpus directory: make it a memory repo at one commit, then index it."""
    root = Path.cwd()
    lines = ["search:"] + [f"  {k}: {json.dumps(v)}" for k, v in settings.items()]
    (root / "memory-config.yaml").write_text("\n".join(lines) + "\n" if settings else "{}\n")
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run(["git", "add", "-A"], check=True)
    subprocess.run([*GIT, "commit", "-q", "--no-verify", "-m", "corpus"], check=True)
    return subprocess.run([*memory_command(), "index"], stdout=subprocess.DEVNULL).returncode


def parse_set(items: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items:
        key, _, raw = item.partition("=")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--set", action="append", default=[], help="search.KEY=VALUE override")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json-out", default=None)
    add_record_option(ap)
    args, rest = ap.parse_known_args(argv)
    settings = parse_set(args.set)
    if args.prepare:
        return prepare(settings)
    sets = " ".join(f"--set {shlex.quote(s)}" for s in args.set)
    me = shlex.quote(str(Path(__file__).resolve()))
    index_cmd = f"{shlex.quote(sys.executable)} {me} --prepare {sets}"
    search_cmd = " ".join(shlex.quote(x) for x in memory_command()) + " search --batch --json"
    cmd = [
        sys.executable,
        str(HARNESS),
        "--split",
        args.split,
        "--quiet",
        "--index-cmd",
        index_cmd,
        "--retriever-cmd",
        search_cmd,
        "--batch",
        *rest,
    ]
    with tempfile.TemporaryDirectory() as tmp:
        out = args.json_out or str(Path(tmp) / "run.json")
        cmd += ["--json-out", out]
        env = dict(os.environ, MEMORY_REPO="")
        rc = subprocess.run(cmd, env=env).returncode
        if rc == 0:
            rows = json.loads(Path(out).read_text())[0]["rows"]
            print(per_conversation(rows))
            record(__file__, {"split": args.split, "search": settings,
                              "cat 1-4, %": by_conversation(rows)}, args)
    return rc


def headline(rows: list[dict]) -> dict[str, float]:
    """Session R@5, turn R@10 and multi-hop session R@5 (%) over ``rows`` (cat 1-4)."""
    rows = [r for r in rows if r.get("category") in (1, 2, 3, 4) and r.get("session")]

    def mean(rs: list[dict], level: str, k: str) -> float:
        xs = [r[level][k] for r in rs if r.get(level)]
        return 100 * sum(xs) / len(xs) if xs else float("nan")

    return {
        "n": len(rows),
        "session_r5": mean(rows, "session", "R@5"),
        "turn_r10": mean(rows, "turn", "R@10"),
        "multihop_r5": mean([r for r in rows if r["category"] == 1], "session", "R@5"),
    }


def by_conversation(rows: list[dict]) -> dict[str, dict[str, float]]:
    """``headline`` for each conversation, then for "all"."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["conversation"], []).append(r)
    by["all"] = rows
    return {conv: headline(rs) for conv, rs in by.items()}


def per_conversation(rows: list[dict]) -> str:
    """The headline figures for each conversation: a setting that wins overall but loses
    on one conversation is tuning, not retrieval (issue #15)."""
    lines = [
        "Per conversation (cat 1-4):",
        "",
        "| conversation | n | session R@5 | turn R@10 | multi-hop session R@5 |",
        "|---|---|---|---|---|",
    ]
    for conv, h in by_conversation(rows).items():
        lines.append(
            f"| {conv} | {h['n']} | {h['session_r5']:.1f} | {h['turn_r10']:.1f} | "
            f"{h['multihop_r5']:.1f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
