"""SIGKILL at random moments of every writing command, then carry on as a user would.

Runs the real ``memory`` as processes in a temporary repo and kills them (seeded) while
they work: ``capture start``, ``capture append`` (short turns, and long multibyte turns
killed the moment the transcript starts to grow, i.e. mid-write), ``capture end``,
``remember``, ``memory reinforce``, ``memory commit``, ``memory index --rebuild`` and
``memory hook post-commit``. After each kill the next step a user would take runs unkilled (append
again, end again, commit again, index again), and the promises are checked:

- every acknowledged (exit 0) append and remember is on disk, and after its session's
  ``end`` / the next ``memory commit``, in HEAD;
- every transcript parses (memrepo.transcript.read); a session can always be ended;
- nothing is appended (exit 0) into a closed transcript;
- ``git fsck`` is clean; ``memory doctor`` names the ``*.tmp`` leftovers and the closed
  transcripts that were never committed.

    .venv/bin/python bench/torture/kill.py            # >= 200 kills (~3-5 min)
    .venv/bin/python bench/torture/kill.py --quick    # 30 kills (~1 min)

Prints the counts, a final ``SUMMARY`` line, and exits 1 when a promise was broken.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1] / "common"))  # results.py
from common import (
    MULTIBYTE,
    Env,
    err,
    fsck,
    head_files,
    make_env,
    session_files,
    tmp_leftovers,
    unparseable,
)
from results import add_record_option, record_summary

#: Room for a few long turns per session: the limit is met now and then, on purpose.
MAX_FILE_KB = 3072
LONG_TURN_CHARS = (200_000, 700_000)


@dataclass
class Session:
    sid: str
    acked: list[str] = field(default_factory=list)
    ended: bool = False
    path: str | None = None


@dataclass
class Run:
    env: Env
    rng: random.Random
    sessions: dict[str, Session] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # acknowledged remember markers
    reinforced: int = 0  # acknowledged reinforce calls
    kills: Counter = field(default_factory=Counter)
    broken: Counter = field(default_factory=Counter)
    details: list[str] = field(default_factory=list)
    durations: dict[str, float] = field(default_factory=dict)
    serial: int = 0
    torn: set[str] = field(default_factory=set)  # transcripts ever seen unparseable
    parsed: dict[str, tuple[int, int]] = field(default_factory=dict)
    checked: dict[str, int] = field(default_factory=dict)  # session -> acked turns checked

    def fail(self, what: str, detail: str) -> None:
        self.broken[what] += 1
        if len(self.details) < 40:
            self.details.append(f"{what}: {detail}")

    def marker(self, kind: str) -> str:
        self.serial += 1
        return f"{kind}{self.serial:05d}q"


def killed_run(run: Run, args: list[str], data: bytes | None = None,
               watch: Path | None = None, kind: str = "") -> tuple[bool, int, str]:
    """Run ``memory ARGS`` and SIGKILL it at a random moment (or, with ``watch``, the
    moment that file starts to grow); (killed, exit status, last stderr line)."""
    t0 = time.monotonic()
    p = run.env.popen(*args, stdin=data is not None)
    feeder = None
    if data is not None:
        def feed() -> None:
            try:
                p.stdin.write(data)  # type: ignore[union-attr]
                p.stdin.close()  # type: ignore[union-attr]
            except (BrokenPipeError, OSError):
                pass
        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
    if watch is not None:
        size0 = watch.stat().st_size if watch.exists() else 0
        deadline = time.monotonic() + 10
        while p.poll() is None and time.monotonic() < deadline:
            try:
                if watch.stat().st_size != size0:
                    break
            except OSError:
                pass
    else:
        time.sleep(run.rng.uniform(0, run.durations.get(kind, 0.3) * 1.1))
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
    if feeder is not None:
        feeder.join()
    errb = p.stderr.read()  # type: ignore[union-attr]
    p.stdout.read()  # type: ignore[union-attr]
    rc = p.wait()
    if rc == -signal.SIGKILL:
        run.kills[kind] += 1
        return True, rc, ""
    if kind in run.durations:  # the machine's load changes: follow how long it takes now
        run.durations[kind] = 0.7 * run.durations[kind] + 0.3 * (time.monotonic() - t0)
    tail = errb.decode("utf-8", "replace").strip().splitlines()
    return False, rc, tail[-1] if tail else ""


def timed(run: Run, kind: str, *args: str, data: bytes | None = None) -> None:
    """Learn how long an unkilled ``kind`` takes, so kills spread over its whole run."""
    t0 = time.monotonic()
    run.env.run(*args, input=data)
    run.durations[kind] = max(time.monotonic() - t0, 0.05)


# ---------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------


def open_session(run: Run, kill: bool = False) -> Session | None:
    sid = f"k{run.serial + 1:04d}"
    run.serial += 1
    args = ["capture", "start", "--session", sid]
    if run.rng.random() < 0.5:
        args += ["--topic", f"torture {sid}"]
    if kill:
        killed, rc, msg = killed_run(run, args, kind="start")
        if not killed and rc != 0:
            run.fail("start refused", f"{sid}: {msg}")
        if killed:
            # as a user would: start again; an open transcript left by the killed one is
            # that same session (start refuses it) and is used as is
            again = run.env.run(*args)
            if again.returncode != 0 and "already open" not in err(again):
                run.fail("start after kill", f"{sid}: {err(again)}")
                return None
    else:
        proc = run.env.run(*args)
        if proc.returncode != 0:
            run.fail("start refused", f"{sid}: {err(proc)}")
            return None
    s = Session(sid)
    run.sessions[sid] = s
    return s


def turn_text(run: Run, marker: str, long: bool) -> str:
    if not long:
        return f"{marker} {MULTIBYTE} a short turn {marker}end"
    n = run.rng.randint(*LONG_TURN_CHARS) // 8
    body = " ".join(run.rng.choice([MULTIBYTE, "naïve", "straße", "数据", "word"])
                    for _ in range(n))
    return f"{marker} {body} {marker}end"


def append(run: Run, s: Session, kill: bool, long: bool, closed: bool = False) -> None:
    marker = run.marker("T")
    data = turn_text(run, marker, long).encode("utf-8")
    args = ["capture", "append", "--session", s.sid, "--role",
            run.rng.choice(["user", "agent"])]
    if kill:
        files = session_files(run.env.repo, s.sid)
        watch = files[0] if (long and files) else None
        killed, rc, msg = killed_run(run, args, data, watch, "append-long" if long else "append")
    else:
        proc = run.env.run(*args, input=data)
        killed, rc, msg = False, proc.returncode, err(proc)
    if killed:
        if long and _torn(run, s):
            run.kills["torn tail left (the next step repairs it)"] += 1
        return
    if rc == 0:
        if s.ended or closed:
            run.fail("append into closed transcript", f"{s.sid}: exit 0")
            return
        s.acked.append(marker)
    elif "max_file_kb" in msg or "too large" in msg or "full" in msg:
        run.kills["refused: transcript full"] += 1
        end(run, s, kill=False)
    elif s.ended or closed or "closed" in msg or "ended" in msg:
        pass  # refused into a closed session: right
    else:
        run.fail("append refused", f"{s.sid}: {msg}")


def end(run: Run, s: Session, kill: bool) -> None:
    args = ["capture", "end", "--session", s.sid]
    if kill:
        killed, rc, msg = killed_run(run, args, kind="end")
        if not killed:
            if rc == 0:
                s.ended = True
            else:
                run.fail("end refused", f"{s.sid}: {msg}")
            return
        state = run.env.repo / ".memrepo/sessions" / f"{s.sid}.json"
        try:
            phase = json.loads(state.read_text(encoding="utf-8")).get("phase", "open")
        except (OSError, ValueError):
            phase = "gone" if _committed(run, s) else "open"
        run.kills[f"end killed: state {phase}"] += 1
        # a user (or the agent) carries on: maybe one more turn, then end again
        if run.rng.random() < 0.5:
            append(run, s, kill=False, long=False, closed=_closed_on_disk(run, s))
    proc = run.env.run(*args)
    if proc.returncode == 0:
        s.ended = True
        return
    msg = err(proc)
    if ("no open session" in msg or "already ended" in msg) and _committed(run, s):
        s.ended = True  # the killed end had finished before the kill
        return
    run.fail("session cannot be ended", f"{s.sid}: {msg}")


def _torn(run: Run, s: Session) -> bool:
    """Whether the killed write left part of a turn (a cut character, or less than the
    tail record announced)."""
    from memrepo.errors import MemrepoError
    from memrepo.transcript.session import load_session
    from memrepo.transcript.tail import torn_tail

    try:
        session = load_session(run.env.repo, s.sid)
        data = (run.env.repo / session.path).read_bytes()
    except (MemrepoError, OSError):
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return torn_tail(run.env.repo, session) is not None


def _closed_on_disk(run: Run, s: Session) -> bool:
    for p in session_files(run.env.repo, s.sid):
        head = p.read_bytes()[:2000]
        if b"\nended:" in head:
            return True
    return False


def _committed(run: Run, s: Session) -> bool:
    files = run.env.git("ls-tree", "-r", "--name-only", "HEAD", "--", "raw/conversations/")
    return any(f"-{s.sid}-" in line for line in files.split("\n"))


def remember(run: Run, kill: bool) -> None:
    marker = run.marker("N")
    args = ["remember", f"note {marker} {MULTIBYTE}"]
    if kill:
        killed, rc, msg = killed_run(run, args, kind="remember")
        if killed:
            marker = run.marker("N")  # the user tries again, with the same words
            args = ["remember", f"note {marker} {MULTIBYTE}"]
        elif rc == 0:
            run.notes.append(marker)
            return
        else:
            run.fail("remember refused", msg)
            return
    proc = run.env.run(*args)
    if proc.returncode == 0:
        run.notes.append(marker)
    else:
        run.fail("remember refused", err(proc))


def reinforce(run: Run, kill: bool) -> None:
    args = ["reinforce", "knowledge/memory/MEMORY.md"]
    if kill:
        killed, rc, msg = killed_run(run, args, kind="reinforce")
        if not killed:
            if rc == 0:
                run.reinforced += 1
            else:
                run.fail("reinforce refused", msg)
            return
    proc = run.env.run(*args)
    if proc.returncode == 0:
        run.reinforced += 1
    else:
        run.fail("reinforce refused", err(proc))


def reinforce_events(texts: list[str]) -> int:
    """Reinforce events a JSON reader gets back from the signal files."""
    n = 0
    for text in texts:
        for line in text.splitlines():
            try:
                n += json.loads(line).get("event") == "reinforce"
            except (ValueError, AttributeError):
                continue
    return n


def simple(run: Run, kind: str, args: list[str], after: list[str], kill: bool) -> None:
    """commit / index / post-commit: killed, then the follow-up must succeed."""
    if kill:
        killed, rc, msg = killed_run(run, args, kind=kind)
        if not killed and rc != 0:
            run.fail(f"{kind} failed", msg)
    proc = run.env.run(*after)
    if proc.returncode != 0:
        run.fail(f"{' '.join(after[:2])} after a killed {kind}", err(proc))


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------


def check_disk(run: Run, full: bool = False) -> None:
    """Acknowledged turns and notes are on disk (the sessions that changed, or all)."""
    for s in run.sessions.values():
        if not full and run.checked.get(s.sid) == len(s.acked) and s.ended:
            continue
        run.checked[s.sid] = len(s.acked)
        text = "".join(p.read_text("utf-8", "replace") for p in session_files(run.env.repo, s.sid))
        for m in s.acked:
            if m not in text or f"{m}end" not in text:
                run.fail("acknowledged turn lost", f"{s.sid} {m}")
        s.acked = [m for m in s.acked if m in text]
    journals = "".join(p.read_text("utf-8", "replace")
                       for p in (run.env.repo / "knowledge/journal").glob("*.md"))
    for n in run.notes:
        if n not in journals:
            run.fail("acknowledged note lost", n)
    run.notes = [n for n in run.notes if n in journals]


def check_head(run: Run) -> None:
    """After ending everything and `memory commit`: all of it is in HEAD."""
    convs = "".join(head_files(run.env, "raw/conversations/").values())
    for s in run.sessions.values():
        for m in s.acked:
            if f"{m}end" not in convs:
                run.fail("acknowledged turn not in HEAD", f"{s.sid} {m}")
    journals = "".join(head_files(run.env, "knowledge/journal/").values())
    for n in run.notes:
        if n not in journals:
            run.fail("acknowledged note not in HEAD", n)
    disk = reinforce_events([p.read_text("utf-8", "replace")
                             for p in (run.env.repo / "raw/signals").glob("*.jsonl")])
    head = reinforce_events(list(head_files(run.env, "raw/signals/").values()))
    if disk < run.reinforced or head < run.reinforced:
        run.fail("acknowledged reinforce lost",
                 f"{run.reinforced} acknowledged, {disk} on disk, {head} in HEAD")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=None, help="kills to reach (default 200)")
    ap.add_argument("--quick", action="store_true", help="30 kills")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--memory", help="the memory executable (default: beside this python)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary repo")
    add_record_option(ap)
    a = ap.parse_args()
    target = a.kills or (30 if a.quick else 200)
    env = make_env(a.memory, max_file_kb=MAX_FILE_KB)
    run = Run(env, random.Random(a.seed))
    t0 = time.monotonic()
    try:
        s = open_session(run)
        if s is None:
            raise SystemExit(f"capture start fails: {run.details}")
        timed(run, "append", "capture", "append", "--session", s.sid, "--role", "user",
              data=b"warm up")
        timed(run, "remember", "remember", "warm up")
        timed(run, "commit", "commit")
        timed(run, "index", "index", "--rebuild")
        timed(run, "post-commit", "hook", "post-commit")
        timed(run, "reinforce", "reinforce", "knowledge/memory/MEMORY.md")
        run.reinforced += 1
        timed(run, "start", "capture", "start", "--session", "warm")
        timed(run, "end", "capture", "end", "--session", "warm")
        kinds = ["append"] * 4 + ["append-long"] * 3 + ["end"] * 3 + ["remember"] * 3 + \
                ["commit"] * 2 + ["index", "post-commit", "start", "reinforce"]
        step = 0
        while sum(v for k, v in run.kills.items() if " " not in k) < target:
            step += 1
            open_now = [x for x in run.sessions.values() if not x.ended]
            while len(open_now) < 3:
                new = open_session(run)
                if new is None:
                    break
                open_now.append(new)
            kind = run.rng.choice(kinds)
            s = run.rng.choice(open_now)
            if kind in ("append", "append-long"):
                if run.rng.random() < 0.6:  # a few turns, unkilled, between the kills
                    append(run, s, kill=False, long=False)
                append(run, s, kill=True, long=kind == "append-long")
                append(run, s, kill=False, long=False)  # the next turn, as the agent would
            elif kind == "end":
                end(run, s, kill=True)
            elif kind == "remember":
                remember(run, kill=True)
            elif kind == "reinforce":
                reinforce(run, kill=True)
            elif kind == "commit":
                simple(run, "commit", ["commit"], ["commit"], kill=True)
            elif kind == "index":
                simple(run, "index", ["index", "--rebuild"], ["index"], kill=True)
            elif kind == "post-commit":
                simple(run, "post-commit", ["hook", "post-commit"], ["index"], kill=True)
            else:
                new = open_session(run, kill=True)
                if new is not None:
                    append(run, new, kill=False, long=False)
            check_disk(run)
            bad = unparseable(env.repo, run.parsed)
            for b in bad:
                if b.split(":")[0] not in run.torn:
                    run.torn.add(b.split(":")[0])
                    run.fail("unparseable transcript", b)
            if bad:
                # the next append / end must repair it; count it once
                for x in run.sessions.values():
                    if not x.ended and any(f"-{x.sid}-" in b for b in bad):
                        append(run, x, kill=False, long=False)
            if step % 25 == 0:
                problem = fsck(env)
                if problem:
                    run.fail("git fsck", problem)
            if step % 10 == 0:
                print(f"  step {step}: {sum(run.kills.values())} kills, "
                      f"{sum(run.broken.values())} broken, {time.monotonic() - t0:.0f} s",
                      flush=True)
        # leftovers doctor must name, before anything cleans them up: their writers were
        # killed, so they are aged past doctor's grace period as if time had passed
        leftovers = tmp_leftovers(env.repo)
        old = time.time() - 3600
        for t in leftovers:
            os.utime(env.repo / t, (old, old))
        doc = env.run("doctor")
        said = doc.stdout.decode("utf-8", "replace") + doc.stderr.decode("utf-8", "replace")
        unreported = [t for t in leftovers if Path(t).name not in said and ".tmp" not in said]
        if unreported:
            run.fail("tmp leftovers doctor does not name", ", ".join(unreported[:5]))
        # finish: every open session ended, everything committed
        for x in list(run.sessions.values()):
            if not x.ended:
                end(run, x, kill=False)
        proc = env.run("commit")
        if proc.returncode != 0:
            run.fail("final commit refused", err(proc))
        check_disk(run, full=True)
        check_head(run)
        for b in unparseable(env.repo):
            run.fail("unparseable transcript at the end", b)
            run.torn.add(b.split(":")[0])
        problem = fsck(env)
        if problem:
            run.fail("git fsck", problem)
        uncommitted = [line for line in env.git("status", "--porcelain", "--",
                                                "raw/conversations/").split("\n") if line]
        if uncommitted:
            doc = env.run("doctor").stdout.decode("utf-8", "replace")
            if "uncommitted" not in doc and "not committed" not in doc:
                run.fail("closed transcripts left uncommitted, doctor silent",
                         "; ".join(uncommitted[:3]))
        fix = env.run("doctor", "--fix")
        left = tmp_leftovers(env.repo)
        if left:
            run.fail("tmp leftovers doctor --fix did not remove", ", ".join(left[:5]))
    finally:
        if not a.keep:
            shutil.rmtree(env.base, ignore_errors=True)
        else:
            print(f"kept {env.base}")
    kills = {k: v for k, v in sorted(run.kills.items()) if " " not in k}
    print("seen:", ", ".join(f"{k} {v}" for k, v in sorted(run.kills.items()) if " " in k)
          or "-")
    print("kills:", ", ".join(f"{k} {v}" for k, v in kills.items()))
    acked_turns = sum(len(x.acked) for x in run.sessions.values())
    print(f"acknowledged turns {acked_turns}, notes {len(run.notes)}, sessions "
          f"{len(run.sessions)}, tmp leftovers {len(leftovers)} before doctor --fix, "
          f"{len(left)} after (doctor --fix exit {fix.returncode})")
    for d in run.details:
        print("  BROKEN", d)
    total = sum(kills.values())
    b = run.broken
    summary = (f"SUMMARY kills={total} "
               f"lost_turns={b['acknowledged turn lost'] + b['acknowledged turn not in HEAD']} "
               f"lost_notes={b['acknowledged note lost'] + b['acknowledged note not in HEAD']} "
               f"unparseable={len(run.torn)} "
               f"unendable={b['session cannot be ended']} "
               f"into_closed={b['append into closed transcript']} "
               f"lost_reinforces={b['acknowledged reinforce lost']} "
               f"broken={sum(b.values())} seconds={time.monotonic() - t0:.0f}")
    print(summary)
    record_summary(__file__, summary, a)
    return 1 if run.broken else 0


if __name__ == "__main__":
    sys.exit(main())
