"""N concurrent writers of every kind, then count what an acknowledgement did not keep.

Runs the real ``memory`` as processes in a temporary repo, all kinds at once, 8 writers
of each (``--writers``):

  append-own     each to its own session             append-shared  all to one session
  end            start, two turns, end (a commit), again and again
  remember       400 calls in all (``--notes``)      commit         `memory commit` loops
  index          `memory index --rebuild` / `memory index` loops
  reinforce      `memory reinforce` of one ref
  person         one person committing by hand (`git add` + `git commit`, a pre-commit
                 hook slowed by --person-hook seconds before memrepo's own, then
                 --person-pause seconds of work), plain and `-a` commits in turn: none
                 may be refused

When every writer is done, the sessions are ended and `memory commit` runs once more;
then every acknowledged (exit 0) turn, note, end and reinforce must be on disk and in
HEAD, every transcript must parse and ``git fsck`` must be clean; every one of the
person's commits must have been accepted, and its file must be in HEAD.

    .venv/bin/python bench/torture/concurrency.py            # 8 writers of each kind
    .venv/bin/python bench/torture/concurrency.py --quick    # fewer calls (< 1 min)

Prints the counts, a final ``SUMMARY`` line, and exits 1 on any loss.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
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
PERSON_LOST = "person's commit not in HEAD"


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
    ap.add_argument("--person-hook", type=float, default=0.5,
                    help="seconds the person's pre-commit hook sleeps (0.5)")
    ap.add_argument("--person-pause", type=float, default=1.0,
                    help="seconds the person works between two commits (1.0)")
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

    hooks = slow_hooks(env.repo, env.base / "person-hooks", a.person_hook)
    by_hand: list[str] = []
    tried: list[str] = []

    def person() -> None:
        n = 0
        while not stop.is_set() or n == 0:
            rel = f"by-hand/note-{n:03d}.md"
            (env.repo / "by-hand").mkdir(exist_ok=True)
            (env.repo / rel).write_text(f"# Note {n}\n\nwritten by hand\n", "utf-8")
            added = subprocess.run(["git", "add", rel], cwd=env.repo, env=env.env,
                                   capture_output=True)
            tried.append(rel)
            if not t.done("person", added):  # refused as a commit would be: counted
                n += 1
                continue
            args = ["-c", f"core.hooksPath={hooks}", "commit", "-q",
                    *(["-a"] if n % 2 else []), "-m", f"by hand: note {n}"]
            proc = subprocess.run(["git", *args], cwd=env.repo, env=env.env,
                                  capture_output=True)
            t.calls["person"] -= 1  # one attempt: the add and the commit
            if t.done("person", proc):
                by_hand.append(rel)
            else:  # a person commits again: this one's file goes in the next
                env.git("reset", "-q", "--", rel, check=False)
            n += 1
            stop.wait(a.person_pause)

    try:
        if not start("shared"):
            raise SystemExit(f"capture start fails: {t.samples}")
        writers = [threading.Thread(target=f, args=(i,)) for i in range(w)
                   for f in (own, shared, ender, rememberer, reinforcer)]
        loops = [threading.Thread(target=looper, args=("commit", "commit")) for _ in range(w)]
        loops += [threading.Thread(target=indexer, args=(i,)) for i in range(w)]
        loops.append(threading.Thread(target=person))
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
        in_head = set(env.git("ls-tree", "-r", "--name-only", "HEAD", "--", "by-hand").split())
        for rel in by_hand:
            if rel not in in_head:
                lose(PERSON_LOST, rel)
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
               f"person_refused={t.errors['person']}/{len(tried)} "
               f"person_lost={lost[PERSON_LOST]} "
               f"unparseable={len(bad)} fsck={'dirty' if problem else 'clean'} "
               f"refused={sum(t.errors.values())} seconds={elapsed:.0f}")
    print(summary)
    record_summary(__file__, summary, a)
    return 1 if (sum(lost.values()) or bad or problem or unendable or t.errors["person"]) else 0


def slow_hooks(repo: Path, folder: Path, seconds: float) -> Path:
    """A hooks folder for the person's commits: each of memrepo's installed hooks, the
    pre-commit one after a sleep (a linter, the tests), so memrepo's own route is
    unchanged (it reads the repo's hooks, not ``core.hooksPath`` given on one command)."""
    folder.mkdir(parents=True, exist_ok=True)
    for shim in (repo / ".git/hooks").iterdir():
        if shim.name.endswith(".sample") or not shim.is_file():
            continue
        pause = f"sleep {seconds}\n" if shim.name == "pre-commit" else ""
        (folder / shim.name).write_text(f'#!/bin/sh\n{pause}exec "{shim}" "$@"\n')
        (folder / shim.name).chmod(0o755)
    return folder


if __name__ == "__main__":
    sys.exit(main())
