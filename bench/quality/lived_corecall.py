#!/usr/bin/env python3
"""Would co-recall help the prompt's recall? Measured on lived repos, before it is built.

    .venv/bin/python bench/quality/lived.py --keep          # prints "kept: DIR" per conversation
    .venv/bin/python bench/quality/lived_corecall.py DIR:conv-26 DIR:conv-30 [--top 3 --min 2]

Seed 001's "future relations": files recalled together link together, and retrieving one
pulls its related ones in. memrepo records what each recall showed together (the ``batch``
of ``.memrepo/signals/hits-*.jsonl``; ``memory links FILE`` lists it). This asks each of
a kept lived repo's questions (lived.py's first prompt of a new session) twice through
the prompt hook's :func:`memrepo.agents.recall.recall`: as it is, and with the files most
often co-recalled (at least ``--min`` times, in the replay's batches only) with the
``--top`` ranked files moved up to just after them, and counts the evidence turns in
each (lived_measure.Matcher). The repos are copied first: recall records what it shows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import types
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "common"))

from eval_compile_locomo import DATA, harness  # noqa: E402
from lived import asked_at  # noqa: E402
from lived_measure import Matcher, Sessions  # noqa: E402
from lived_replay import memrepo_id  # noqa: E402


def pairs_before(repo: Path, day: dt.date) -> Counter[tuple[str, str]]:
    """How often each ordered pair of files was shown in one recall before ``day``."""
    batches: dict[str, set[str]] = {}
    for f in sorted((repo / ".memrepo" / "signals").glob("hits-*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            ev = json.loads(line)
            if ev["ts"][:10] < day.isoformat():
                batches.setdefault(ev["batch"], set()).add(ev["path"])
    out: Counter[tuple[str, str]] = Counter()
    for members in batches.values():
        out.update((a, b) for a in members for b in members if a != b)
    return out


def pull_related(result: Any, pairs: Counter[tuple[str, str]], top: int, least: int) -> None:
    """Move each co-recalled file's best-placed passage to just after the top files'."""
    ranked = sorted((s for s in result.sections if s.slot == 3), key=lambda s: s.placed)
    heads = list(dict.fromkeys(s.path for s in ranked))[:top]
    related: Counter[str] = Counter()
    for (a, b), n in pairs.items():
        if a in heads and b not in heads and n >= least:
            related[b] += n
    cut = max((s.placed for s in ranked if s.path in heads), default=0)
    for i, (path, _n) in enumerate(related.most_common(3), 1):
        mine = [s for s in ranked if s.path == path]
        if mine:
            min(mine, key=lambda s: s.placed).placed = cut + i / 1000


def measure(repo: Path, conv: Any, top: int, least: int) -> tuple[int, int, int]:
    """(evidence turns, found without co-recall, found with it) for one conversation."""
    import memrepo.context.compiler as compiler
    from memrepo.agents.recall import recall

    qs = [qa for qa in conv.qas if qa.category in (1, 2, 3, 4) and qa.evidence]
    when = asked_at(conv.sessions)
    os.environ["MEMREPO_NOW"] = when.strftime("%Y-%m-%dT%H:%M:%S")
    ids = {s.num: memrepo_id(f"{conv.sample_id}-s{s.num:02d}") for s in conv.sessions}
    matcher = Matcher(conv, Sessions(types.SimpleNamespace(repo=repo, session_ids=ids)).load())
    pairs = pairs_before(repo, when.date())
    original = compiler.compile_context
    found = [0, 0]
    try:
        for on in (0, 1):
            def compile_with(r: Any, req: Any, on: int = on) -> Any:
                result = original(r, req)
                if on:
                    pull_related(result, pairs, top, least)
                return result

            compiler.compile_context = compile_with
            for i, qa in enumerate(qs):
                payload = {"session_id": f"corecall-{on}-{i}", "cwd": str(repo),
                           "transcript_path": "", "prompt": qa.question}
                text = recall(repo, "claude-code", payload, today=when.date())
                found[on] += matcher.found(text, qa.evidence)
    finally:
        compiler.compile_context = original
    return sum(len(qa.evidence) for qa in qs), found[0], found[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repos", nargs="+", help="DIR:CONVERSATION, a repo kept by lived.py --keep")
    ap.add_argument("--top", type=int, default=3, help="ranked files whose partners move up")
    ap.add_argument("--min", type=int, default=2, help="times shown together, at least")
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    convs = {c.sample_id: c for c in harness().load_locomo(args.data)}
    total = [0, 0, 0]
    with tempfile.TemporaryDirectory() as tmp:
        for item in args.repos:
            src, _, cid = item.rpartition(":")
            repo = Path(tmp) / cid
            shutil.copytree(src, repo, symlinks=True)
            got = measure(repo, convs[cid], args.top, args.min)
            total = [t + g for t, g in zip(total, got, strict=True)]
            print(f"{cid}: evidence {got[0]}, in recall {got[1]} without co-recall, "
                  f"{got[2]} with it")
    ev = total[0] or 1
    print(f"all: {100 * total[1] / ev:.1f} % without, {100 * total[2] / ev:.1f} % with "
          f"(top {args.top}, at least {args.min} times together)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
