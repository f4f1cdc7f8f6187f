"""N concurrent writers of every kind, then count what an acknowledgement did not keep.

Runs the real ``memory`` as processes in a temporary repo, all kinds at once, 8 writers
of each (``--writers``):

  append-own     each to its own session             append-shared  all to one session
  end            start, two turns, end (a commit), again and again
  remember       400 calls in all (``--notes``)      commit         `memory commit` loops
  index          `memory index --rebuild` / `memory index` loops
  reinforce      `memory reinforce` of one ref

When every writer is done, the sessions are ended and `memory commit` runs once more;
then every acknowledged (exit 0) turn, note, end and reinforce must be on disk and in
HEAD, every transcript must parse and ``git fsck`` must be clean.

    .venv/bin/python bench/torture/concurrency.py            # 8 writers of each kind
    .venv/bin/python bench/torture/concurrency.py --quick    # fewer calls (< 1 min)

Prints the counts, a final ``SUMMARY`` line, and exits 1 on any loss.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1] / "common"))  # results.py
from common import MULTIBYTE, err, fsck, head_files, make_env, unparseable
from results import add_record_option, record_summary

REF = "knowledge/memory/MEMORY.md"
#: Seconds between two runs of a commit or index loop (the 2 cores are shared by all).
PAUSE = 0.5


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    turns: list[str] = field(default_factory=list)  # acknowledged append markers
    notes: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)  # session ids whose end was acked
    reinforced: int = 0
    calls: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    samples: dict[str, list[str]] = field(default_factory=dict)

    def done(self, kind: str, proc: object, ok: object = None) -> bool:
        rc = proc.returncode  # type: ignore[attr-defined]
        with self.lock:
            self.calls[kind] += 1
            if rc == 0:
                if isinstance(ok, str):
                    {"append": self.turns, "remember": self.notes,
                     "end": self.ended}[kind].append(ok)
                elif kind == "reinforce":
                    self.reinforced += 1
                return True
            self.errors[kind] += 1
            seen = self.samples.setdefault(kind, [])
            if len(seen) < 3:
                seen.append(err(proc))  # type: ignore[arg-type]
            return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls per writer")
    ap.add_argument("--writers", type=int, default=8, help="writers of each kind (8)")
    ap.add_argument("--notes", type=int, default=None, help="remember calls in all (400)")
    ap.add_argument("--memory", help="the memory executable (default: beside this python)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary repo")
    add_record_option(ap)
    a = ap.parse_args()
    w = a.writers
    notes = a.notes or (48 if a.quick else 400)
    turns = 3 if a.quick else 12  # appends per append writer
    cycles = 1 if a.quick else 3  # start/append/end cycles per end writer
    env = make_env(a.memory)
    t = Tally()
    stop = threading.Event()
    t0 = time.monotonic()

    def start(sid: str) -> bool:
        return t.done("start", env.run("capture", "start", "--session", sid))

    def append(sid: str, tag: str) -> None:
        marker = f"{tag}q"
        t.done("append", env.run("capture", "append", "--session", sid, "--role", "user",
                                 input=f"{marker} {MULTIBYTE} {marker}end"), marker)

    def own(i: int) -> None:
        sid = f"own{i}"
        if start(sid):
            for n in range(turns):
                append(sid, f"O{i}x{n}")

    def shared(i: int) -> None:
        for n in range(turns):
            append("shared", f"S{i}x{n}")

    def ender(i: int) -> None:
        for c in range(cycles):
            sid = f"end{i}x{c}"
            if not start(sid):
                continue
            append(sid, f"E{i}x{c}a")
            append(sid, f"E{i}x{c}b")
            t.done("end", env.run("capture", "end", "--session", sid), sid)

    def rememberer(i: int) -> None:
        for n in range(i, notes, w):
            marker = f"N{n:04d}q"
            t.done("remember", env.run("remember", f"{marker} {MULTIBYTE} note"), marker)

    def looper(kind: str, *args: str) -> None:
        while not stop.wait(PAUSE):
            t.done(kind, env.run(*args))

    def indexer(i: int) -> None:
        while not stop.wait(PAUSE * 2):
            t.done("index", env.run("index", *(["--rebuild"] if i % 2 == 0 else [])))

    def reinforcer(i: int) -> None:
        for _ in range(turns):
            t.done("reinforce", env.run("reinforce", REF))

    try:
        if not start("shared"):
            raise SystemExit(f"capture start fails: {t.samples}")
        writers = [threading.Thread(target=f, args=(i,)) for i in range(w)
                   for f in (own, shared, ender, rememberer, reinforcer)]
        loops = [threading.Thread(target=looper, args=("commit", "commit")) for _ in range(w)]
        loops += [threading.Thread(target=indexer, args=(i,)) for i in range(w)]
        for th in writers + loops:
            th.start()
        for th in writers:
            th.join()
        stop.set()
        for th in loops:
            th.join()
        elapsed = time.monotonic() - t0
        # the user's last steps: end what is open (again, where an end was refused), commit
        started = ["shared", *(f"own{i}" for i in range(w)),
                   *(f"end{i}x{c}" for i in range(w) for c in range(cycles))]
        unendable = []
        for sid in started:
            if sid in t.ended or not (env.repo / ".memrepo/sessions" / f"{sid}.json").exists():
                continue
            proc = env.run("capture", "end", "--session", sid)
            if not t.done("end", proc, sid):
                unendable.append(f"{sid}: {err(proc)}")
        final = env.run("commit")
        lost: Counter = Counter()
        examples: list[str] = []

        def lose(what: str, item: str) -> None:
            lost[what] += 1
            if len(examples) < 20:
                examples.append(f"{what}: {item}")

        disk = "".join(p.read_text("utf-8", "replace")
                       for p in (env.repo / "raw/conversations").rglob("*.md"))
        convs = "".join(head_files(env, "raw/conversations/").values())
        for m in t.turns:
            if f"{m}end" not in disk:
                lose("turn lost on disk", m)
            elif f"{m}end" not in convs:
                lose("turn not in HEAD", m)
        for sid in t.ended:
            if not re.search(rf"-{re.escape(sid)}-", "\n".join(
                    env.git("ls-tree", "-r", "--name-only", "HEAD").split("\n"))):
                lose("ended session not in HEAD", sid)
        journal = "".join(p.read_text("utf-8", "replace")
                          for p in (env.repo / "knowledge/journal").glob("*.md"))
        head_journal = "".join(head_files(env, "knowledge/journal/").values())
        for n in t.notes:
            if n not in journal:
                lose("note lost on disk", n)
            elif n not in head_journal:
                lose("note not in HEAD", n)
        events = "".join(p.read_text("utf-8", "replace")
                         for p in (env.repo / "raw/signals").glob("*.jsonl"))
        on_disk = events.count('"reinforce"')
        if on_disk < t.reinforced:
            lost["reinforce lost"] += t.reinforced - on_disk
        head_events = "".join(head_files(env, "raw/signals/").values()).count('"reinforce"')
        if head_events < min(on_disk, t.reinforced):
            lost["reinforce not in HEAD"] += min(on_disk, t.reinforced) - head_events
        bad = unparseable(env.repo)
        problem = fsck(env)
    finally:
        if not a.keep:
            shutil.rmtree(env.base, ignore_errors=True)
        else:
            print(f"kept {env.base}")
    print("calls:", ", ".join(f"{k} {v}" for k, v in sorted(t.calls.items())))
    print("refused (exit != 0):", ", ".join(f"{k} {v}" for k, v in sorted(t.errors.items()))
          or "none")
    for kind, samples in t.samples.items():
        for sample in samples:
            print(f"  e.g. {kind}: {sample[:400]}")
    print(f"acknowledged: turns {len(t.turns)}, notes {len(t.notes)}, ends {len(t.ended)}, "
          f"reinforces {t.reinforced}; final commit exit {final.returncode}")
    for e in examples:
        print("  LOST", e)
    for b in bad[:5]:
        print("  UNPARSEABLE", b)
    for u in unendable[:5]:
        print("  UNENDABLE", u)
    if problem:
        print("  FSCK", problem)
    notes_lost = lost["note lost on disk"] + lost["note not in HEAD"]
    turns_lost = lost["turn lost on disk"] + lost["turn not in HEAD"]
    summary = (f"SUMMARY writers={w} notes_lost={notes_lost}/{len(t.notes)} "
               f"turns_lost={turns_lost}/{len(t.turns)} "
               f"ends_lost={lost['ended session not in HEAD']} "
               f"reinforce_lost={lost['reinforce lost'] + lost['reinforce not in HEAD']} "
               f"unendable={len(unendable)} "
               f"unparseable={len(bad)} fsck={'dirty' if problem else 'clean'} "
               f"refused={sum(t.errors.values())} seconds={elapsed:.0f}")
    print(summary)
    record_summary(__file__, summary, a)
    return 1 if (sum(lost.values()) or bad or problem or unendable) else 0


if __name__ == "__main__":
    sys.exit(main())
