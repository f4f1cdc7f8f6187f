#!/usr/bin/env python3
"""The README's retrieval quality table: every search configuration, one command.

    python bench/quality/quality_table.py                       # dev split, every configuration
    python bench/quality/quality_table.py --configs default,minilm
    python bench/quality/quality_table.py --data locomo10.json --split test   # held out

For each configuration it runs ``bench/quality/eval_locomo.py`` (``memory index`` + ``memory
search --batch``: session R@5, turn R@10, multi-hop session R@5, ms per query in one
batch process) and ``bench/quality/eval_compile_locomo.py`` (evidence inside a 4,000-token
``memory compile``; a MiniLM configuration compiles through a running ``memory serve``,
as an agent's prompt hook would), then prints one markdown table overall and one per
conversation. A setting is kept as a default only when it wins in each dev conversation:
that is the one that carries over to conversations nobody tuned on (``--split test`` with
the full LoCoMo file, which this repo does not ship).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))

from eval_locomo import headline, per_conversation  # noqa: E402
from results import add_record_option, record  # noqa: E402

#: name -> (search.* overrides, what it costs)
CONFIGS: dict[str, tuple[dict[str, object], str]] = {
    "default": ({}, "FTS5 alone: no model, nothing to run"),
    "expansion": (
        {"expansion_weight": 0.2},
        "FTS5 + the static neighbour table (0.1 ms a query)",
    ),
    "minilm-names-kept": (
        {"embedder": "minilm", "mask_names": False},
        "MiniLM through memory serve, query embedded as written",
    ),
    "minilm": (
        {"embedder": "minilm"},
        "MiniLM through memory serve (names masked, 0.5 / 0.5, each turn also embedded "
        "with its reply, similarities from the last nearest vector, expansion auto = 0.2): "
        "the resident default",
    ),
    "minilm-no-expansion": (
        {"embedder": "minilm", "expansion_weight": 0},
        "the resident default without query expansion",
    ),
    "minilm-one-vector": (
        {"embedder": "minilm", "reply_vectors": False},
        "the resident default with one vector a turn (reply_vectors: false; ~2.5x less "
        "to embed)",
    ),
}


def _sets(settings: dict[str, object]) -> list[str]:
    return [a for k, v in settings.items() for a in ("--set", f"{k}={json.dumps(v)}")]


def retrieval(settings: dict[str, object], data: list[str], out: Path) -> dict:
    subprocess.run(
        [sys.executable, str(HERE / "eval_locomo.py"), *_sets(settings), *data,
         "--json-out", str(out), "--no-record"],
        check=True, stdout=subprocess.DEVNULL,
    )
    run = json.loads(out.read_text())[0]
    return {
        **headline(run["rows"]),
        "ms_per_query": run["timing"]["ms_per_query"],
        "index_s": run["timing"]["index_s"],
        "per_conversation": per_conversation(run["rows"]),
    }


def coverage(settings: dict[str, object], data: list[str], out: Path
             ) -> tuple[float, dict[str, float]]:
    """Evidence inside a 4,000-token compile, %: overall and per conversation."""
    subprocess.run(
        [sys.executable, str(HERE / "eval_compile_locomo.py"), *_sets(settings), *data,
         "--json-out", str(out), "--no-record"],
        check=True, stdout=subprocess.DEVNULL,
    )
    res = json.loads(out.read_text())
    cats = res["by_category"].values()
    per = {c: 100 * v["compiled"] / v["evidence"]
           for c, v in res["by_conversation"].items() if v["evidence"]}
    return 100 * sum(c["compiled"] for c in cats) / sum(c["evidence"] for c in cats), per


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated names")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--data", type=Path, help="LoCoMo JSON (default: the dev split's file)")
    ap.add_argument("--no-compile", action="store_true", help="retrieval only")
    add_record_option(ap)
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        ap.error(f"unknown configuration(s) {', '.join(unknown)}; known: {', '.join(CONFIGS)}")
    data = ["--split", args.split] + (["--data", str(args.data)] if args.data else [])
    lines = [
        f"LoCoMo {args.split}, categories 1-4",
        "",
        "| configuration | session R@5 | turn R@10 | multi-hop R@5 | evidence in a "
        "4,000-token compile | ms / query (batch) | index s | cost |",
        "|---|---|---|---|---|---|---|---|",
    ]
    details: list[str] = []
    figures: dict[str, object] = {"split": args.split, "data": str(args.data or "dev")}
    try:
        _rows(names, data, args, lines, details, figures)
    except subprocess.CalledProcessError as exc:  # its own message is already on stderr
        print(f"quality_table: {Path(exc.cmd[1]).name} failed (exit {exc.returncode})",
              file=sys.stderr)
        return 1
    print("\n".join(lines) + "\n\n" + "\n\n".join(details))
    record(__file__, figures, args)
    return 0


def _rows(names: list[str], data: list[str], args: argparse.Namespace, lines: list[str],
          details: list[str], figures: dict[str, object]) -> None:
    """Measure each configuration: a table row in ``lines``, its details in ``details``,
    its figures in ``figures``."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            settings, cost = CONFIGS[name]
            r = retrieval(settings, data, Path(tmp) / f"{name}.json")
            cov, per = "–", ""
            figures[name] = {k: v for k, v in r.items() if k != "per_conversation"}
            if not args.no_compile:
                total, by_conv = coverage(settings, data, Path(tmp) / f"{name}-compile.json")
                figures[name]["compile evidence %"] = total  # type: ignore[index]
                cov = f"{total:.1f} %"
                per = "\n\nEvidence in a 4,000-token compile: " + ", ".join(
                    f"{c} {x:.1f} %" for c, x in by_conv.items())
            lines.append(
                f"| {name} | {r['session_r5']:.1f} | {r['turn_r10']:.1f} | "
                f"{r['multihop_r5']:.1f} | {cov} | {r['ms_per_query']:.1f} | "
                f"{r['index_s']:.0f} | {cost} |"
            )
            details.append(f"### {name}\n\n{r['per_conversation']}{per}")
            print(lines[-1], file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
