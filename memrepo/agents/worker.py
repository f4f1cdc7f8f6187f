"""The detached process of a capture, flush or end hook (``python -m memrepo.agents.worker
HARNESS EVENT ROOT``, the payload on stdin), and the work it does: the session's new turns
into its transcript, the durable notes before a compaction, and at the end the transcript
closed, committed, its topics judged and (when configured) extracted.

It runs in its own session, so it outlives the hook and the agent's process group; its
outcome goes to the agents log (memrepo.agents.state). It lowers its own priority before
importing anything heavy: its imports, parsing and commit must not slow the agent (or the
hook that just returned) on a busy machine. The hook side, which starts it, is
:func:`memrepo.agents.events.detach`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo.agents import harness as H
from memrepo.agents import state
from memrepo.agents.events import failure_detail, parse_payload
from memrepo.errors import MemrepoError

if TYPE_CHECKING:
    from memrepo.transcript.capture import Ended

#: How much nicer than the agent the detached work runs.
NICE = 10
#: Lock waits of the detached work (tests shorten it).
LOCK_WAIT_ENV = "MEMREPO_HOOK_LOCK_WAIT"


def lock_wait() -> float:
    try:
        return float(os.environ.get(LOCK_WAIT_ENV) or 20.0)
    except ValueError:
        return 20.0


def work(harness: str, event: str, root: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """The detached part of a hook (flush, capture, end); what was done, for the log."""
    act = H.action(harness, event)
    done: dict[str, Any] = {}
    if act in (H.CAPTURE, H.END):
        rel, closed = capture_session(root, harness, payload, final=act == H.END)
        done["transcript"] = rel
        if closed and rel:
            done["closed"] = True
            done.update(_extract_if_due(root, rel))
    elif act == H.FLUSH:
        done.update(flush_session(root, harness, payload))
    else:
        raise ValueError(f"{harness} {event}: no detached work")
    return done


def capture_session(root: Path, harness: str, payload: dict[str, Any], *, final: bool
                    ) -> tuple[str | None, bool]:
    """The session's new turns into its transcript (closed and committed when ``final``);
    (the transcript's path, whether it was closed now)."""
    log = payload.get("transcript_path")
    if H.LOG_FORMAT.get(harness) == "claude-code" and log:
        from memrepo.transcript.follow import follow

        got = follow(root, Path(log), final=final, lock_wait=lock_wait(), after_end=_judge)
        return got.path, got.closed
    return _capture_payload(root, harness, payload, final)


def _capture_payload(root: Path, harness: str, payload: dict[str, Any], final: bool
                     ) -> tuple[str | None, bool]:
    """Agents whose log memrepo cannot read: the prompt (from the payload, else the one
    recall kept) and the answer of this exchange, appended as two turns."""
    from memrepo.transcript import capture
    from memrepo.transcript.session import load_session

    hsid = payload.get("session_id")
    if not hsid:
        raise ValueError("the hook payload has no session_id")
    base = H.payload_session(harness, hsid)
    sid = _open_part(root, base)
    pending = state.prompt_file(root, harness, hsid)
    said = str(payload.get("prompt") or "")
    if not said and pending.is_file():
        said = pending.read_text(encoding="utf-8")
    answer = next((str(payload[k]) for k in H.ANSWER_FIELDS if payload.get(k)), "")
    if said or answer:
        try:
            session = load_session(root, sid)
        except MemrepoError:
            session = capture.start(root, session_id=sid, channel=harness,
                                    model=payload.get("model") or None)
        if said.strip():
            capture.append(root, sid, "user", said)
        if answer.strip():
            capture.append(root, sid, "agent", answer)
        pending.unlink(missing_ok=True)
    else:
        try:
            session = load_session(root, sid)
        except MemrepoError:
            return None, False
    if final:
        ended = capture.end(root, sid)
        _judge(root, ended)
        return ended.path, True
    return session.path, False


def _judge(root: Path, done: Ended) -> None:
    """After each ``end``: the closed session's topics judged (the gate log's
    ``was_useful``); the judgement is imported only once a session has closed."""
    from memrepo.context.watchers.feedback import judge_ended

    judge_ended(root, done)


def _open_part(root: Path, base: str) -> str:
    """The session id to write to: ``base``, or its next part once ``base`` is closed."""
    from memrepo.transcript.session import find_open_transcript, find_transcript

    n = 1
    while True:
        sid = base if n == 1 else f"{base}.{n}"
        rel = find_transcript(root, sid)
        if rel is None or find_open_transcript(root, sid):
            return sid
        n += 1


def flush_session(root: Path, harness: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Before a compaction: the session's turns captured, then its durable notes written
    to the journal and knowledge and committed (``flush:``)."""
    from memrepo.commit.write import commit_paths
    from memrepo.config import load_config
    from memrepo.lifecycle import flush as F
    from memrepo.llm import for_repo
    from memrepo.transcript.messages import read_text

    done: dict[str, Any] = {}
    rel = None
    try:
        rel, _ = capture_session(root, harness, payload, final=False)
    except Exception as exc:  # the flush can still read the agent's own log
        done["capture"] = failure_detail(exc)
    if rel and (root / rel).is_file():
        path = root / rel
    elif payload.get("transcript_path"):
        path = Path(str(payload["transcript_path"]))
    else:
        raise ValueError("nothing to flush: no transcript_path and no captured transcript")
    chars = int(load_config(root)["llm"]["max_transcript_chars"]) * 2
    report = F.flush(root, read_text(path), path=path, llm=for_repo(root), max_chars=chars)
    done["flush"] = report.status
    if report.written:
        notes = len(report.new)
        trailer = f"\n\nSession: {rel}\n" if rel else "\n"
        done["commit"] = commit_paths(
            root, report.written,
            f"flush: {notes} note{'s' if notes != 1 else ''} before compaction{trailer}")
        done["written"] = report.written
    return done


def _extract_if_due(root: Path, rel: str) -> dict[str, Any]:
    """Extraction of the closed transcript, when ``lifecycle.extraction_trigger`` is
    ``on_session_end``."""
    from memrepo.config import load_config

    if load_config(root)["lifecycle"]["extraction_trigger"] != "on_session_end":
        return {}
    from memrepo.lifecycle.extract.runner import extract
    from memrepo.llm import for_repo

    report = extract(root, [rel], for_repo(root))
    return {"extract": report.counts(), "extract_commit": report.commit}


def close_idle(root: Path, idle_seconds: float) -> list[str]:
    """Close the payload-captured sessions (Codex, Gemini) idle for ``idle_seconds``:
    Codex sends no SessionEnd. The closed transcripts' paths."""
    from memrepo.transcript import capture
    from memrepo.transcript.session import open_sessions

    prefixes = tuple(f"{p}-" for h, p in H.SESSION_PREFIX.items() if H.LOG_FORMAT[h] is None)
    out = []
    now = time.time()
    for s in open_sessions(root):
        if not s.session_id.startswith(prefixes):
            continue
        try:
            idle = now - (root / s.path).stat().st_mtime
        except OSError:
            continue
        if idle >= idle_seconds:
            done = capture.end(root, s.session_id)
            _judge(root, done)
            out.append(done.path)
    return out


def run_worker(argv: Sequence[str]) -> int:
    """The detached process: ``HARNESS EVENT ROOT``, the payload on stdin; logs its
    outcome and always exits 0."""
    start = time.perf_counter()
    harness, event, root = [*argv, "", "", ""][:3]
    entry: dict[str, Any] = {"harness": harness, "event": event,
                             "action": H.action(harness, event), "detached": True}
    path = Path(root) if root else None
    try:
        payload = parse_payload(sys.stdin.buffer.read())
        entry["session"] = payload.get("session_id")
        if path is None:
            raise ValueError("no repo given")
        from memrepo.repo import require_full_checkout

        require_full_checkout(path)  # the hook took --repo on trust: never write a sparse one
        entry.update(work(harness, event, path, payload))
        entry["status"] = "ok"
    except Exception as exc:
        entry["status"] = "failed"
        entry["detail"] = failure_detail(exc)
    entry["ms"] = round((time.perf_counter() - start) * 1000, 1)
    state.log(path, entry)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(OSError, AttributeError):
        os.nice(NICE)
    sys.exit(run_worker(sys.argv[1:]))
