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
    from memrepo.transcript.sweep import Owner

#: How much nicer than the agent the detached work runs.
NICE = 10
#: How long a worker waits for the workers of its session's older exchanges to take
#: their queued prompts before it takes them itself (:func:`_capture_payload`).
ORDER_WAIT = 5.0
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
        rel, closed = capture_session(root, harness, payload, final=act == H.END,
                                      notes=done)
        done["transcript"] = rel
        if closed and rel:
            done["closed"] = True
            done.update(_extract_if_due(root, rel))
    elif act == H.FLUSH:
        done.update(flush_session(root, harness, payload))
    else:
        raise ValueError(f"{harness} {event}: no detached work")
    return done


def capture_session(root: Path, harness: str, payload: dict[str, Any], *, final: bool,
                    notes: dict[str, Any] | None = None) -> tuple[str | None, bool]:
    """The session's new turns into its transcript (closed and committed when ``final``);
    (the transcript's path, whether it was closed now). ``notes`` gets what the log
    should say besides (a torn queue line, an answer that came without a prompt, the
    bytes of the agent's log read and why not all of them).

    The agent's log is whatever the payload names: :func:`memrepo.transcript.follow.follow`
    reads only a regular file, not through a symlink, within its bounds of bytes and time,
    and refuses anything else with an error the worker logs."""
    log = payload.get("transcript_path")
    if H.LOG_FORMAT.get(harness) == "claude-code" and log:
        from memrepo.transcript.follow import follow

        got = follow(root, Path(str(log)), final=final, lock_wait=lock_wait(),
                     after_end=_judge)
        if notes is not None:
            notes.update({"read": got.read, **({"note": got.note} if got.note else {})})
        return got.path, got.closed
    return _capture_payload(root, harness, payload, final, notes)


def _capture_payload(root: Path, harness: str, payload: dict[str, Any], final: bool,
                     notes: dict[str, Any] | None = None) -> tuple[str | None, bool]:
    """Agents whose log memrepo cannot read: the prompt of this exchange (the queued one,
    else the payload's) and its answer, appended as two turns, redacted and cut as the
    prompt hook parks them (:func:`memrepo.agents.state.clip_prompt`).

    Each end of turn has its own worker, and they race: one at a time per session takes
    the queue's oldest prompts, up to this exchange's (its ``turn_id``, else the
    payload's prompt, else the oldest); one whose exchange is not the oldest waits up to
    ORDER_WAIT for the older exchanges' workers, then takes their prompts too, as turns
    that never ended. So N prompts then N ends give N user turns, in order, once each."""
    from memrepo.config import load_config
    from memrepo.locks import file_lock

    hsid = payload.get("session_id")
    if not hsid:
        raise ValueError("the hook payload has no session_id")
    allow = load_config(root)["validation"]["secrets_allowlist"]
    said, answer = str(payload.get("prompt") or ""), next(
        (str(payload[k]) for k in H.ANSWER_FIELDS if payload.get(k)), "")
    said = state.clip_prompt(said, allow) if said.strip() else ""
    answer = state.clip_prompt(answer, allow) if answer.strip() else ""
    turn = payload.get("turn_id") if isinstance(payload.get("turn_id"), str) else None
    held = state.prompt_queue(root, harness, hsid).with_suffix(".capture.lock")
    until = time.monotonic() + ORDER_WAIT
    while True:
        with file_lock(held, lock_wait()):
            records, _ = state.queued_prompts(root, harness, hsid)
            own = _own_index(records, turn, said, bool(answer))
            if not own or time.monotonic() >= until:
                taken, torn = state.take_prompts(root, harness, hsid,
                                                 0 if own is None else own + 1)
                users = [r["prompt"] for r in taken] or ([said] if said.strip() else [])
                if notes is not None:
                    notes.update({"torn": torn} if torn else {})
                    notes.update({"unprompted": 1} if answer and not users else {})
                return _append_exchange(root, harness, payload, users, answer, final)
        time.sleep(0.05)


def _own_index(records: list[dict[str, Any]], turn: str | None, said: str, answered: bool
               ) -> int | None:
    """Which queued prompt is this exchange's: the one of its turn id, else the one the
    payload carries, else (an end of turn with neither) the oldest; None when none is."""
    if not records:
        return None
    if said:
        return next((i for i, r in enumerate(records) if r["prompt"] == said), None)
    if turn and any(r.get("turn") for r in records):
        return next((i for i, r in enumerate(records) if r.get("turn") == turn), None)
    return 0 if turn or answered else None


def _append_exchange(root: Path, harness: str, payload: dict[str, Any], users: list[str],
                     answer: str, final: bool) -> tuple[str | None, bool]:
    """``users`` then ``answer`` appended to the session's open part (a new part once the
    open one is full); the part closed when ``final``."""
    from memrepo.transcript import capture
    from memrepo.transcript.session import load_session
    from memrepo.transcript.tail import TranscriptFull

    base = H.payload_session(harness, str(payload["session_id"]))
    sid = _open_part(root, base)
    turns = [("user", u) for u in users if u.strip()] + ([("agent", answer)] if answer else [])
    try:
        session = load_session(root, sid)
    except MemrepoError:
        if not turns:
            return None, False
        session = capture.start(root, session_id=sid, channel=harness,
                                model=payload.get("model") or None)
    for role, text in turns:
        try:
            capture.append(root, sid, role, text)
        except TranscriptFull:  # the part is full: closed, the turns go on in the next
            _judge(root, capture.end(root, sid))
            sid = _open_part(root, base)
            session = capture.start(root, session_id=sid, channel=harness,
                                    model=payload.get("model") or None)
            capture.append(root, sid, role, text)
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
    from memrepo.transcript.follow import RUN_BYTES
    from memrepo.transcript.messages import read_text

    done: dict[str, Any] = {}
    rel = None
    try:
        rel, _ = capture_session(root, harness, payload, final=False, notes=done)
    except Exception as exc:  # the flush can still read the agent's own log
        done["capture"] = failure_detail(exc)
    if rel and (root / rel).is_file():
        path = root / rel
    elif payload.get("transcript_path"):
        path = Path(str(payload["transcript_path"]))
    else:
        raise ValueError("nothing to flush: no transcript_path and no captured transcript")
    chars = int(load_config(root)["llm"]["max_transcript_chars"]) * 2
    # the payload's path, like the log follow reads: a regular file, no link, bounded
    text = read_text(path, untrusted=True, largest=RUN_BYTES)
    report = F.flush(root, text, path=path, llm=for_repo(root), max_chars=chars)
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
    from memrepo.sparse import view

    if view(root) is not None:  # it rewrites knowledge anywhere: a full clone's job
        return {"extract": "skipped: a sparse checkout ('memory extract' in a full clone)"}
    from memrepo.lifecycle.extract.runner import extract
    from memrepo.llm import for_repo

    llm = for_repo(root)
    llm.max_retries = 0  # one request at most (LLM use switched on: memrepo.llm.AGENT_LLM_ENV)
    report = extract(root, [rel], llm, one_request=True)
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

        # the hook took --repo on trust: a sparse checkout only for what works there
        require_full_checkout(path, op=H.action(harness, event))
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


def log_owner(root: Path) -> Owner:
    """``memory capture sweep``'s question for each Claude Code log it has not read to its
    end (:data:`memrepo.transcript.sweep.Owner`): is it this repo's, and in which
    namespace are its turns written? The memrepo hooks Claude Code runs in the log's
    folder (its first ``cwd``) say: another repo's log is left to that repo's sweep; this
    repo's goes in its hooks' namespace. A log that names no folder, or one where no
    memrepo hook runs, is this repo's, written as this process acts. Each folder's
    settings are read once per sweep."""
    import functools

    from memrepo import namespaces
    from memrepo.agents.install import hooks_in
    from memrepo.transcript.logfile import log_cwd

    here = root.resolve()
    hooks_at = functools.lru_cache(maxsize=None)(lambda cwd: hooks_in(Path(cwd)))

    def owner(log: Path) -> tuple[bool, contextlib.AbstractContextManager[object]]:
        cwd = log_cwd(log)
        call = hooks_at(cwd) if cwd else None
        if call is None or not call.repo:
            return True, contextlib.nullcontext()
        if Path(call.repo).expanduser().resolve() != here:
            return False, contextlib.nullcontext()
        return True, namespaces.scope(call.namespace)

    return owner
