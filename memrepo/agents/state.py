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
- ``agents/prompts/<harness>-<session>.jsonl``: the prompts of an agent whose log memrepo
  cannot read (Codex, Gemini CLI), queued by the prompt hook (one JSON line each,
  redacted, cut to PARK_HEAD_CHARS + PARK_TAIL_CHARS) until the detached worker of the
  turn's end takes them, oldest first; both hold ``<same>.lock`` while they touch it, so
  a prompt parked while a worker takes another is never lost (issue 37).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo.atomic import NOFOLLOW, atomic_write
from memrepo.layout import STATE_DIR
from memrepo.locks import file_lock

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


#: The pseudo-path in a session's shown file once a recall showed it something (its first
#: recall may be larger: memrepo.agents.recall.FIRST_RECALL_MAX_CHARS).
RECALLED = "#recall"


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


#: How long the prompt hook waits for the queue's lock (a worker holds it to rewrite a
#: small file: milliseconds).
QUEUE_LOCK_WAIT = 2.0
#: A parked prompt keeps its first and last characters, the middle cut with a marker:
#: a transcript turn may not pass half of ``validation.max_file_kb`` anyway, and the
#: prompt hook must redact what it parks within its deadline (issue 37: a 5 MB prompt).
PARK_HEAD_CHARS = 48_000
PARK_TAIL_CHARS = 16_000
#: Characters around a cut scanned for a secret the cut would split.
CUT_MARGIN = 8_192


def prompt_queue(root: Path, harness: str, session_id: str) -> Path:
    return root / AGENTS_DIR / "prompts" / f"{session_key(harness, session_id)}.jsonl"


def clip_prompt(text: str, allowlist: list[str] | tuple[str, ...]) -> str:
    """``text`` redacted, its middle cut out past PARK_HEAD_CHARS + PARK_TAIL_CHARS with
    a marker saying how many characters went; a secret across a cut stays whole on the
    side it starts in (so it is redacted whole) or goes whole with the middle."""
    from memrepo.secrets import find_secrets, redact

    a, b = PARK_HEAD_CHARS, len(text) - PARK_TAIL_CHARS
    if b - a <= CUT_MARGIN:
        return redact(text, allowlist)[0]
    for f in find_secrets(text[a - CUT_MARGIN: a + CUT_MARGIN], allowlist):
        if f.start < CUT_MARGIN < f.end:
            a = a - CUT_MARGIN + f.start
    off = b - CUT_MARGIN
    for f in find_secrets(text[off: b + CUT_MARGIN], allowlist):
        if f.start < CUT_MARGIN < f.end:
            b = off + f.end
    head, tail = redact(text[:a], allowlist)[0], redact(text[b:], allowlist)[0]
    return f"{head}\n[… {b - a:,} characters cut by memrepo]\n{tail}"


def push_prompt(root: Path, harness: str, session_id: str, text: str,
                turn: str | None = None) -> None:
    """Queue one prompt (already redacted and cut) of the session; its own line, after a
    newline, so a record torn by a killed writer never swallows the next one."""
    path = prompt_queue(root, harness, session_id)
    line = json.dumps({"turn": turn, "prompt": text}, ensure_ascii=False)
    with file_lock(path.with_suffix(".lock"), QUEUE_LOCK_WAIT):
        append_line(path, f"\n{line}\n")


def queued_prompts(root: Path, harness: str, session_id: str
                   ) -> tuple[list[dict[str, Any]], int]:
    """The session's queued prompts, oldest first, and how many lines were torn."""
    path = prompt_queue(root, harness, session_id)
    with file_lock(path.with_suffix(".lock"), QUEUE_LOCK_WAIT):
        return _read_queue(path)


def take_prompts(root: Path, harness: str, session_id: str, count: int
                 ) -> tuple[list[dict[str, Any]], int]:
    """Remove and return the ``count`` oldest queued prompts (and the torn lines' count;
    torn lines are dropped, every whole record kept)."""
    path = prompt_queue(root, harness, session_id)
    with file_lock(path.with_suffix(".lock"), QUEUE_LOCK_WAIT):
        records, torn = _read_queue(path)
        if count <= 0 and not torn:
            return [], 0
        left = records[count:]
        if left:
            atomic_write(path, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                       for r in left))
        else:
            path.unlink(missing_ok=True)
        return records[:count], torn


def _read_queue(path: Path) -> tuple[list[dict[str, Any]], int]:
    try:
        raw = path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return [], 0
    records, torn = [], 0
    for line in raw.split("\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if isinstance(rec, dict) and isinstance(rec.get("prompt"), str):
            records.append(rec)
        else:
            torn += 1
    return records, torn


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
