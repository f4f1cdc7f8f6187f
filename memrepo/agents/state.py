"""What the agent hooks keep between calls, and the log ``memory doctor`` reads.

Everything lives in the repo's gitignored ``.memrepo/`` (per clone, never committed):

- ``agents.log``: one JSON line per hook call and per detached job (ok, skipped, failed,
  with why and how long). Hooks fail open, so this log is the only place a failure
  shows; :func:`health_checks` puts it in ``memory doctor``. A hook that cannot reach a
  repo at all (a wrong ``--repo``) logs to the user's state directory instead
  (``$XDG_STATE_HOME/memrepo/agents.log``), which the doctor of any repo shows.
- ``agents/shown/<harness>-<session>.refs``: the passages a session has been shown
  (briefing and recalls), one ``path:start-end`` a line. Appended with one ``O_APPEND``
  write per hook, never rewritten: two hooks at once cannot lose each other's lines,
  and there is no lock to wait for on the prompt's path.
- ``agents/prompts/<harness>-<session>.txt``: the last prompt of an agent whose log
  memrepo cannot read (Codex), kept until its Stop hook captures the exchange.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo.atomic import NOFOLLOW
from memrepo.layout import STATE_DIR

if TYPE_CHECKING:  # imported when used: every hook imports this module
    from memrepo.health import Check
    from memrepo.repo import MemoryRepo

LOG = f"{STATE_DIR}/agents.log"
AGENTS_DIR = f"{STATE_DIR}/agents"
#: The log is renamed to ``agents.log.1`` past this size (one line per prompt adds up).
LOG_MAX_BYTES = 1 << 20
#: How far back ``memory doctor`` looks for failures.
WINDOW = dt.timedelta(days=7)
#: A failure logged by a hook that found no repo is shown as a failure for a day, then
#: as a warning until it leaves the window.
NO_REPO_FRESH = dt.timedelta(days=1)
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


# ---------------------------------------------------------------------------
# The log
# ---------------------------------------------------------------------------


def user_log() -> Path:
    """The log of hooks that found no repo: ``$XDG_STATE_HOME/memrepo/agents.log``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "memrepo" / "agents.log"


def log(root: Path | None, entry: dict[str, Any]) -> None:
    """Append one line to the repo's log (the user's when ``root`` is None); never raises:
    a hook whose log cannot be written still exits 0 with nothing on stdout."""
    path = root / LOG if root is not None else user_log()
    line = json.dumps({"t": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                       **entry}, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if path.stat().st_size > LOG_MAX_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        except FileNotFoundError:
            pass
        append_line(path, line)
    except OSError:
        pass


def append_line(path: Path, text: str) -> None:
    """One ``O_APPEND`` write: lines from several processes never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW, 0o644)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def read_log(path: Path, max_bytes: int = 256 * 1024) -> list[dict[str, Any]]:
    """The last entries of a log (its tail), oldest first; unreadable lines skipped."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - max_bytes))
            raw = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    lines = raw.splitlines()
    if len(raw) >= max_bytes and lines:
        lines = lines[1:]  # the first line may be cut
    out = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("t"), str):
            out.append(entry)
    return out


# ---------------------------------------------------------------------------
# Per-session files
# ---------------------------------------------------------------------------


def session_key(harness: str, session_id: str) -> str:
    """A file name for the harness's session id (ids are UUIDs; anything else is hashed)."""
    safe = _SAFE.sub("_", session_id)[:80].strip("._")
    if not safe or safe != session_id:
        import hashlib

        safe = (safe[:40] + "-" if safe else "") + hashlib.sha256(
            session_id.encode("utf-8")).hexdigest()[:12]
    return f"{harness}-{safe}"


def shown_file(root: Path, harness: str, session_id: str) -> Path:
    return root / AGENTS_DIR / "shown" / f"{session_key(harness, session_id)}.refs"


def shown_refs(root: Path, harness: str, session_id: str) -> dict[str, list[tuple[int, int]]]:
    """path -> the line spans this session has been shown."""
    out: dict[str, list[tuple[int, int]]] = {}
    try:
        text = shown_file(root, harness, session_id).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return out
    for line in text.splitlines():
        path, _, span = line.rpartition(":")
        a, _, b = span.partition("-")
        if path and a.isdigit() and b.isdigit():
            out.setdefault(path, []).append((int(a), int(b)))
    return out


def add_shown(root: Path, harness: str, session_id: str, refs: list[tuple[str, int, int]]) -> None:
    """Record ``refs`` (path, first line, last line) as shown to the session."""
    if not refs:
        return
    path = shown_file(root, harness, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    append_line(path, "".join(f"{p}:{a}-{b}\n" for p, a, b in refs))


def prompt_file(root: Path, harness: str, session_id: str) -> Path:
    return root / AGENTS_DIR / "prompts" / f"{session_key(harness, session_id)}.txt"


# ---------------------------------------------------------------------------
# memory doctor
# ---------------------------------------------------------------------------


def _when(entry: dict[str, Any]) -> dt.datetime | None:
    try:
        t = dt.datetime.fromisoformat(entry["t"])
    except (KeyError, TypeError, ValueError):
        return None
    return t if t.tzinfo else t.astimezone()


def _line(entry: dict[str, Any]) -> str:
    what = " ".join(str(entry[k]) for k in ("harness", "event") if entry.get(k)) or "hook"
    return f"{what} at {entry.get('t', '?')}: {entry.get('detail') or entry.get('status')}"


def health_checks(repo: MemoryRepo) -> list[Check]:
    """Doctor: agent hooks that failed (they fail open, so nothing else says so)."""
    from memrepo.health import Check

    now = dt.datetime.now().astimezone()
    since = now - WINDOW
    entries = [e for e in read_log(repo.root / LOG) if (_when(e) or since) >= since]
    out = []
    failed = [e for e in entries if e.get("status") == "failed"]
    if failed:
        last_status: dict[tuple[str, str], str] = {}
        for e in entries:
            last_status[(str(e.get("harness")), str(e.get("action")))] = str(e.get("status"))
        still = [e for e in failed
                 if last_status.get((str(e.get("harness")), str(e.get("action")))) == "failed"]
        latest = (still or failed)[-1]
        detail = (f"{len(failed)} failed hook call(s) in {WINDOW.days} days"
                  f"{'' if still else ' (later calls succeeded)'}; last: {_line(latest)}")
        out.append(Check("agent hooks", False, detail, f"see {LOG}", warning=not still))
    elif entries:
        last = entries[-1]
        out.append(Check("agent hooks", True,
                         f"{len(entries)} hook call(s) in {WINDOW.days} days, none failed; "
                         f"last: {_line(last)}"))
    else:
        out.append(Check("agent hooks", True, "no agent hook ran in the last "
                                              f"{WINDOW.days} days"))
    lost = [e for e in read_log(user_log())
            if e.get("status") == "failed" and (_when(e) or since) >= since]
    if lost:
        latest = lost[-1]
        fresh = (_when(latest) or now) >= now - NO_REPO_FRESH
        out.append(Check(
            "agent hooks without a repo", False,
            f"{len(lost)} hook call(s) found no memory repo; last: {_line(latest)}"
            f" (repo {latest.get('repo') or 'not given'})",
            f"check --repo in the agent's hook settings; the log is {user_log()}",
            warning=not fresh,
        ))
    return out
