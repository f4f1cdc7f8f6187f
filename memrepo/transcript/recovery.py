"""Sessions a crashed agent or a killed writer left behind: found for ``memory doctor``,
repaired by ``doctor --fix``. Repairs go through the live path (``end``, the tail repair),
so a repaired session is closed and committed exactly as ``memory capture end`` would.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from memrepo import documents, layout
from memrepo.errors import MemrepoError
from memrepo.git import git
from memrepo.health import Check
from memrepo.layout import SESSIONS_DIR
from memrepo.transcript.capture import AfterEnd, _closing_paths, _commit_closed, end
from memrepo.transcript.session import (
    OpenSession,
    _is_closed,
    load_session,
    open_sessions,
    session_lock,
)
from memrepo.transcript.tail import repair_tail, torn_tail

if TYPE_CHECKING:
    from memrepo.repo import MemoryRepo

#: A transcript with no append for this long (a crashed agent) is reported by ``memory
#: doctor`` and closed by ``memory doctor --fix``. Not a config setting: a day is far beyond
#: any live session's pause, and closing early only ever costs a new session id.
STALE_AFTER = dt.timedelta(days=1)


# ---------------------------------------------------------------------------
# Sessions a crashed agent left open (``memory doctor`` and ``doctor --fix``)
# ---------------------------------------------------------------------------


def stale_sessions(root: Path) -> list[tuple[str, str, dt.datetime | None]]:
    """Sessions open on this machine with no append for STALE_AFTER: (id, why, last append).

    The last append is the transcript's mtime (appends are the only writes to an open
    transcript); None when the transcript is gone.
    """
    import time

    stale: list[tuple[str, str, dt.datetime | None]] = []
    for s in open_sessions(root):
        if s.phase != "open":
            continue  # an interrupted end: interrupted_sessions() reports it
        try:
            mtime = (root / s.path).stat().st_mtime
        except OSError:
            stale.append((s.session_id, f"transcript {s.path} missing", None))
            continue
        age = time.time() - mtime
        if age > STALE_AFTER.total_seconds():
            last = dt.datetime.fromtimestamp(mtime, dt.timezone.utc)
            stale.append((s.session_id, f"idle {age / 86400:.1f} days", last))
    return stale


def close_stale_sessions(repo: MemoryRepo, after_end: AfterEnd | None = None
                         ) -> list[tuple[bool, str]]:
    """Doctor --fix: close (and commit) what a crashed agent left open, as `capture end`
    would, ended at its last append (then ``after_end``: the caller's topic judgement).
    (done, report line) per session."""
    out = []
    for sid, why, last in stale_sessions(repo.root):
        if last is None:
            out.append((False, f"session {sid} left open: {why}; restore the transcript or "
                               f"delete {SESSIONS_DIR}/{sid}.json"))
            continue
        try:
            done = end(repo.root, sid, when=last)
        except MemrepoError as exc:
            out.append((False, f"session {sid} left open: {exc}"))
            continue
        if after_end is not None:
            after_end(repo.root, done)
        commit = f", commit {done.commit[:10]}" if done.commit else ""
        out.append((True, f"closed session {sid} ({why}): {done.path}{commit}"))
    return out


def health_checks(repo: MemoryRepo) -> list[Check]:
    """Doctor: open transcripts a crashed agent left behind for more than a day, sessions a
    killed writer left half done, closed transcripts never committed."""
    stale = stale_sessions(repo.root)
    if not stale:
        checks = [Check("open transcripts", True, "no session left open for more than a day")]
    else:
        detail = ", ".join(f"{sid} ({why})" for sid, why, _ in stale)
        fix = "memory doctor --fix (closes them: " + "; ".join(
            f"memory capture end --session {sid}" for sid, _, _ in stale) + ")"
        checks = [Check("open transcripts", False, f"left open: {detail}", fix, warning=True)]
    return [*checks, *recovery_checks(repo)]


# ---------------------------------------------------------------------------
# What a killed writer leaves (``memory doctor`` and ``doctor --fix``)
# ---------------------------------------------------------------------------


def interrupted_sessions(root: Path) -> list[tuple[OpenSession, str]]:
    """Sessions a killed process left half done: an ``end`` that did not finish, or an
    open transcript ending in a torn turn; (session, what is wrong)."""
    out = []
    for s in open_sessions(root):
        if s.phase != "open":
            out.append((s, f"an 'end' did not finish (closing {s.closing_path or s.path})"))
            continue
        try:
            torn = torn_tail(root, s)
        except OSError:
            continue
        if torn is not None:
            out.append((s, f"{s.path} ends in a torn turn ({torn[1]})"))
    return out


def closed_uncommitted(root: Path) -> list[str]:
    """Closed transcripts git does not have: an ``end --no-commit``, an ``end`` killed
    before its commit, an import not committed (``memory commit`` takes them too)."""
    out = git(["status", "--porcelain", "-z", "--no-renames", "--untracked-files=all", "--",
               layout.TRANSCRIPT_ROOT], root)
    found = []
    for entry in out.split("\0"):
        xy, rel = entry[:2], entry[3:]
        if len(entry) < 4 or "D" in xy or not rel.endswith(".md"):
            continue
        try:
            if _is_closed(root / rel):
                found.append(rel)
        except OSError:
            continue
    return found


def recovery_checks(repo: MemoryRepo) -> list[Check]:
    """Doctor: interrupted sessions (a failure) and closed transcripts never committed."""
    root = repo.root
    bad = interrupted_sessions(root)
    closing = {s.closing_path for s, _ in bad if s.closing_path}
    loose = [p for p in closed_uncommitted(root) if p not in closing]
    checks = []
    if bad:
        checks.append(Check(
            "interrupted sessions", False,
            "; ".join(f"session {s.session_id}: {why}" for s, why in bad),
            "memory doctor --fix (or: " + "; ".join(
                f"memory capture end --session {s.session_id}" if s.phase != "open"
                else f"memory capture append --session {s.session_id} …" for s, _ in bad) + ")",
        ))
    else:
        checks.append(Check("interrupted sessions", True, "no torn turn, no unfinished end"))
    if loose:
        checks.append(Check(
            "uncommitted transcripts", False,
            f"{len(loose)} closed but not committed: " + ", ".join(loose[:5])
            + (" …" if len(loose) > 5 else ""),
            "memory doctor --fix (or memory commit)", warning=True,
        ))
    return checks


def repair_sessions(repo: MemoryRepo, after_end: AfterEnd | None = None
                    ) -> list[tuple[bool, str]]:
    """Doctor --fix: finish interrupted ends (then ``after_end``, as for
    :func:`close_stale_sessions`), cut torn turns, commit closed transcripts left
    uncommitted; (done, report line) each. A session in use is left alone."""
    root = repo.root
    out: list[tuple[bool, str]] = []
    for s, why in interrupted_sessions(root):
        sid = s.session_id
        try:
            if s.phase != "open":
                done = end(root, sid)
                if after_end is not None:
                    after_end(root, done)
                out.append((True, f"finished ending session {sid}: {done.path}"
                                  + (f", commit {done.commit[:10]}" if done.commit else "")))
                continue
            with session_lock(root, sid, timeout=2.0):
                said = repair_tail(root, load_session(root, sid))
            out.append((True, said or f"session {sid}: tail already whole"))
        except MemrepoError as exc:
            out.append((False, f"session {sid} ({why}): {exc}"))
    live = {s.session_id for s in open_sessions(root)}
    for rel in closed_uncommitted(root):
        try:
            doc = documents.read_document(root / rel, rel)
            sid = str(doc.meta.get("session_id") or "")
            if sid in live:
                continue  # an `end` may be at work on it: its session lock decides
            if not sid or f"-{sid}-" not in rel:
                raise MemrepoError("its session_id does not match its file name", rel)
            sha = _commit_closed(root, sid, rel, _closing_paths(root, rel, doc.body))
        except MemrepoError as exc:
            out.append((False, f"{rel} not committed: {exc}"))
            continue
        out.append((True, f"committed {rel}" + (f" ({sha[:10]})" if sha else "")))
    return out
