"""Offline ``memory reconstruct`` of N generated transcripts: time and transcripts/s.

    nice -n 10 /tmp/venv/bin/python bench/perf/bench_reconstruct.py [--n 1000] [--batch 200]

Transcripts are small and generated here (seed 000 §2.1 format, cue phrases for every
extractor), committed once without hooks; the timed part is the replay alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from results import add_record_option, record

PEOPLE = ["Alice Martin", "Bob Chen", "Carla Diaz", "Dev Patel", "Emma Stone"]
PROJECTS = ["ledger", "payments", "search", "mobile", "infra"]


def transcript(i: int, start: dt.datetime, rnd: random.Random) -> tuple[str, str]:
    proj = rnd.choice(PROJECTS)
    who = rnd.choice(PEOPLE)
    sid = f"ses_b{i:05d}"
    t = start + dt.timedelta(hours=7 * i)
    path = f"raw/conversations/{t:%Y/%m/%d/%H%M}-{sid}-{proj}-work.md"
    end = t + dt.timedelta(minutes=30)
    body = f"""---
session_id: {sid}
started: {t.isoformat()}
ended: {end.isoformat()}
timezone: UTC
project: {proj}
tags: [{proj}]
---

# {proj} work {i}

## {t:%H:%M} — user
Hello! {who} is our {rnd.choice(["lead", "designer", "client"])} on {proj}.

## {t:%H:%M} — agent
Noted. The {proj} service runs on port {5000 + i % 50} on host-{i % 7}.internal.

## {t:%H:%M} — user
We decided to use option {i % 13} for the {proj} cache layer.

## {t:%H:%M} — user
Lesson learned: always check the {proj} dashboard {i % 5} before deploying.

## {t:%H:%M} — user
TODO: follow up with {who.split()[0]} about the {proj} rollout {i % 9}.
"""
    return path, body


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=200)
    add_record_option(ap)
    args = ap.parse_args()
    import os

    from memrepo.lifecycle import reconstruct as R
    from memrepo.llm import for_repo

    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    rnd = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mem"
        subprocess.run([str(Path(sys.executable).parent / "memory"), "init", str(root)],
                       check=True, capture_output=True)
        start = dt.datetime(2025, 1, 1, 8, 0, tzinfo=dt.timezone.utc)
        for i in range(args.n):
            path, text = transcript(i, start, rnd)
            full = root / path
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(text, encoding="utf-8")
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(["git", "commit", "-q", "--no-verify", "-m", "conversation: bench"],
                       cwd=root, check=True)
        llm = for_repo(root, offline=True)
        t0 = time.perf_counter()
        res = R.reconstruct(root, "bench", llm, batch=args.batch)
        secs = time.perf_counter() - t0
        files = len(list((res.worktree / "knowledge").rglob("*.md")))
        print(f"offline reconstruct: {res.replayed} transcripts in {secs:.1f} s = "
              f"{res.replayed / secs:.1f} transcripts/s (batch {args.batch}, "
              f"{sum(res.edits.values())} edits: {res.edits}, {files} knowledge files)")
    record(__file__, {"transcripts": res.replayed, "batch": args.batch, "seconds": secs,
                      "transcripts_per_s": res.replayed / secs, "edits": dict(res.edits),
                      "knowledge_files": files}, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
