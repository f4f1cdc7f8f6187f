"""What an agent hook puts into the agent's context: the session's brief and a prompt's recall.

- brief (SessionStart, again after a compaction): identity, core memory, active projects
  and the recent journal, fenced as reference data, within the agent's 10,000 characters;
- recall (UserPromptSubmit / BeforeAgent): the topics and passages this prompt calls for,
  less everything this session was already shown (injections stay in the conversation),
  and nothing at all when no passage clears the relevance bar. The clone's resident
  server is asked first (:func:`recall_served`); it runs the same :func:`recall`.

Both show stored text by the one rule (:func:`memrepo.context.sections.stored`): fenced,
topics labelled as the user's instructions, everything else as reference data.

The hook call itself (stdin, deadline, fail open) is :mod:`memrepo.agents.events`'s; the
compiler, the index and the section formats (and YAML with them) are imported when a brief or
a recall runs, not with this module: every hook imports it, Stop and SessionEnd only to
hand their work over.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo import clock, namespaces
from memrepo.agents import harness as H
from memrepo.agents import state
from memrepo.errors import MemrepoError
from memrepo.layout import TRANSCRIPT_PATH

if TYPE_CHECKING:
    from memrepo.context.sections import Section

#: How long the prompt hook waits for the resident server's recall before it recalls
#: itself: a busy server is not waited on for long, and the hook's own recall still fits
#: its deadline (bench/perf/bench_agent_hooks.py times the prompt hook).
SERVER_RECALL_S = 0.5
#: Most characters of a prompt recall searches by (:func:`recall_prompt`).
RECALL_PROMPT_CHARS = 16_000
#: Prompts shorter than this get no recall ("ok", "go on", "thanks").
MIN_PROMPT_CHARS = 10
#: Most characters of passages one recall injects: it stays in the conversation until
#: the next compaction, every prompt adding to it.
RECALL_MAX_CHARS = 4_000
#: The first recall of a session may fill what one injection holds: the model knows
#: nothing of the memory yet but the briefing, and the first prompt is the one a new
#: session's work turns on (bench/quality/lived.py: evidence in what the agent receives).
FIRST_RECALL_MAX_CHARS = 9_000
#: Ranked passages recall's compile asks for: three times what RECALL_MAX_CHARS shows, so
#: the ones this session was shown before (left out after compiling) leave room; compile's
#: larger default would cost the hook more nearest vectors and hits (search.nearest_k).
RECALL_PASSAGES = 60
#: A passage is recalled only if it holds this many of the prompt's search words (or all
#: of them, for a shorter prompt): one shared common word is not relevance. The first
#: recall of a session asks one (FIRST_SHARED_TERMS): a question's one rare word
#: ("Caroline's identity?") is often all its evidence shares with it.
MIN_SHARED_TERMS = 2
FIRST_SHARED_TERMS = 1
#: Recall's token budget is the character cap over this: a little more than the
#: compiler's "fast" count (~3.5 characters a token), so the tokens run out first.
CHARS_PER_TOKEN = 4

#: What the brief is, above its fence (memrepo.context.sections.stored labels the fence).
BRIEF_INTRO = (
    "memrepo briefing: what the user's memory repo holds about them and their work "
    "(identity, core memory, active projects, recent journal)."
)
#: What a recall is, above its fences: the topics' and the passages'.
RECALL_INTRO = (
    "memrepo recall for this prompt: what the user's memory repo holds that bears on it."
)


def brief(root: Path, harness: str, payload: dict[str, Any], today: dt.date | None = None
          ) -> str:
    """The session briefing: compile's fixed slots (P0 identity, P1 memory, journals,
    active projects), fenced as reference data (memrepo.context.sections.stored); what it
    holds is recorded as shown to the session. The resident server answers it too
    (:func:`served`): the hook then skips importing the compiler."""
    from memrepo.context.compiler import CompileRequest, compile_context
    from memrepo.context.sections import stored_fit, stored_overhead
    from memrepo.repo import MemoryRepo

    room = H.MAX_CONTEXT_CHARS - stored_overhead(BRIEF_INTRO, topics=False)
    req = CompileRequest(slots=frozenset({0, 1}), max_chars=room, record_hits=False,
                         today=today, cwd=payload.get("cwd"))  # its project's rules
    sections = [s for s in compile_context(MemoryRepo(root), req).sections if _says(s.text)]
    text, kept = stored_fit(BRIEF_INTRO, sections, H.MAX_CONTEXT_CHARS)
    _remember_shown(root, harness, payload, kept)
    return text


def _says(text: str) -> bool:
    """Whether a section holds more than headings (a new repo's files are only those)."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.split("\n"))


def recall_served(root: Path, harness: str, payload: dict[str, Any]) -> str | None:
    """:func:`recall` as the clone's resident server (``memory serve``, or ``memory mcp``
    hosting it) compiles it, or None when none answers within SERVER_RECALL_S or it
    refuses: the hook then recalls itself. A server has memrepo imported and its model's
    nearest index at hand; this process would import the compiler first."""
    payload = {**payload, "prompt": recall_prompt(str(payload.get("prompt") or ""))}
    return served(root, "recall", harness, payload)


def served(root: Path, op: str, harness: str, payload: dict[str, Any]) -> str | None:
    """``op`` (``recall``, ``brief``) as the clone's resident server answers it, or None
    when none runs, it refuses (an older server, another clone's) or it is not answered
    within SERVER_RECALL_S: the hook then does the work itself."""
    from memrepo.index import remote

    sock = remote.socket_path(remote.serve_dir(root))
    if not sock.exists():
        return None
    payload = {**payload, namespaces.PAYLOAD_KEY: namespaces.current()}  # served as ours
    msg = {"op": op, "harness": harness, "payload": payload, "root": str(root)}
    if os.environ.get(clock.NOW_ENV):  # the server keeps the real clock: say when this is
        msg["today"] = clock.today().isoformat()
    try:
        text = remote.request(sock, msg, SERVER_RECALL_S).get("text")
    except remote.Unavailable:
        return None
    return text if isinstance(text, str) else None


def recall_prompt(prompt: str) -> str:
    """What of a prompt recall searches by: all of it, or past RECALL_PROMPT_CHARS its
    start and its end (a pasted log and the question after it). The search takes its
    rarest words among the first few hundred anyway, and a megabyte of words costs
    seconds to split (issue 37)."""
    if len(prompt) <= RECALL_PROMPT_CHARS:
        return prompt
    head = RECALL_PROMPT_CHARS * 3 // 4
    return f"{prompt[:head]}\n…\n{prompt[len(prompt) - (RECALL_PROMPT_CHARS - head):]}"


def park(root: Path, harness: str, payload: dict[str, Any]) -> None:
    """Queue the prompt of an agent whose log memrepo cannot read (Codex, Gemini CLI):
    the detached worker of the turn's end captures it. Redacted before it is written, as
    capture would; a long one cut to its start and end, the cut said in the text
    (:func:`memrepo.agents.state.clip_prompt`). Once per prompt, by the hook itself,
    never by the resident server's recall (asked, then perhaps not waited for)."""
    prompt = str(payload.get("prompt") or "")
    sid = payload.get("session_id")
    if H.LOG_FORMAT.get(harness) is not None or not sid or not prompt.strip():
        return
    from memrepo.config import load_config

    allow = load_config(root)["validation"]["secrets_allowlist"]
    turn = payload.get("turn_id")
    state.push_prompt(root, harness, str(sid), state.clip_prompt(prompt, allow),
                      turn if isinstance(turn, str) else None)


def recall(root: Path, harness: str, payload: dict[str, Any], engine: Any = None,
           asked: Callable[[], bool] | None = None, today: dt.date | None = None) -> str:
    """What this prompt calls for that the session has not been shown: activated topics
    (P2) and passages (P3) that share enough of the prompt's words, at most
    RECALL_MAX_CHARS; '' when nothing qualifies. The resident server's recall passes
    ``engine`` (its search, the model in-process; else one is opened for this call) and
    ``asked``: when its hook has stopped waiting, nothing is recorded as shown. ``today``:
    the date the hook runs at, when it is not the server's (``$MEMREPO_NOW``)."""
    prompt = recall_prompt(str(payload.get("prompt") or ""))
    sid = payload.get("session_id")
    from memrepo.repo import MemoryRepo

    repo = MemoryRepo(root)
    if len(prompt.strip()) < MIN_PROMPT_CHARS:
        return ""
    from memrepo.context.compiler import CompileRequest, compile_context
    from memrepo.context.restate import restatements
    from memrepo.context.sections import steering, stored_fit
    from memrepo.context.watchers.gate import Gate
    from memrepo.index.query import shared_words, terms

    watch = repo.config["watchers"]
    # the topic gate offline (its cached answers, else the tier-2 thresholds): no model
    # call on the prompt's path, and the client library is never even imported
    gate = Gate(root, str(watch["gate_model"]), None, int(watch["gate_max_tokens"]))
    # a token budget below the character cap: once it is spent P3 stops reading passages
    # (with the config's 8K tokens it read every one asked for to find none fits 10K chars)
    req = CompileRequest(message=prompt, slots=frozenset({2, 3}),
                         budget=H.MAX_CONTEXT_CHARS // CHARS_PER_TOKEN,
                         max_chars=H.MAX_CONTEXT_CHARS, record_hits=False, gate=gate,
                         passages=RECALL_PASSAGES, engine=engine, today=today,
                         said=last_reply(harness, payload))
    result = compile_context(repo, req)
    words = terms(prompt)
    if result.topics:
        for a in result.topics.activated:
            words += [w for k in a.topic.all_keywords() for w in terms(k) if w not in words]
    shown = state.shown_refs(root, harness, sid) if sid else {}
    first = state.RECALLED not in shown
    need = min(FIRST_SHARED_TERMS if first else MIN_SHARED_TERMS, len(terms(prompt)))
    own = _own_session(root, harness, payload)
    fresh = []
    for s in result.sections:
        if any(a <= s.end_line and s.start_line <= b for a, b in shown.get(s.path, ())):
            continue
        if own and _is_own(s.path, own):
            continue
        if s.slot == 3 and shared_words(words, s.text) < need:
            continue
        fresh.append(s)
    steer = steering(result.topics.corrections() if result.topics else [])
    limit = FIRST_RECALL_MAX_CHARS if first else RECALL_MAX_CHARS
    taken = _take(fresh, limit)
    echoes = restatements(taken)
    if echoes:  # said by the turns beside them: their room goes to the next passages
        taken = _take([s for s in fresh if s not in echoes], limit)
    text, kept = stored_fit(RECALL_INTRO, taken, H.MAX_CONTEXT_CHARS - len(steer))
    if steer:  # the user's own topics, steering what the agent said last
        text = f"{text}\n{steer}" if text else f"{RECALL_INTRO}\n{steer}"
    if not kept:
        return text
    if asked is not None and not asked():
        return text  # its hook recalls itself: these passages are not shown by this one
    if H.RECALL_PERSISTS.get(harness, True):
        _remember_shown(root, harness, payload, kept, recalled=True)
    if repo.config["search"].get("record_hits", True):
        from memrepo.index.signals import record_hits

        record_hits(root, [(s.path, s.start_line) for s in kept if s.kind != "topic"])
    return text


#: How much of the end of a Claude Code log the prompt hook reads for the last reply.
TAIL_BYTES = 256 * 1024


def last_reply(harness: str, payload: dict[str, Any]) -> str | None:
    """What the agent said last, for the output watchers: the payload's own field (Codex
    sends ``last_assistant_message``), else the end of a Claude Code log; None unknown."""
    given = payload.get("last_assistant_message")
    if isinstance(given, str):
        return given
    log = payload.get("transcript_path")
    if H.LOG_FORMAT.get(harness) != "claude-code" or not isinstance(log, str) or not log:
        return None
    from memrepo.transcript.importers.claude_code import last_reply as from_log
    from memrepo.transcript.logfile import open_log

    try:  # a regular file only, never through a link: the payload may name anything
        with open_log(log) as f:
            return from_log(f.read(max(0, f.size - TAIL_BYTES), TAIL_BYTES))
    except (OSError, MemrepoError):
        return None




def _own_session(root: Path, harness: str, payload: dict[str, Any]) -> str:
    """The memrepo session id this hook's session is captured under ('' when none yet)."""
    log = payload.get("transcript_path")
    if H.LOG_FORMAT.get(harness) == "claude-code" and log:
        from memrepo.transcript.follow import load_progress

        p = load_progress(root, Path(log))
        return p.base if p is not None else ""
    if payload.get("session_id"):
        return H.payload_session(harness, str(payload["session_id"]))
    return ""


def _is_own(path: str, base: str) -> bool:
    """Whether ``path`` is a transcript of session ``base`` (any part: ``base.2``…): its
    turns are in the conversation already, or in the flush's notes once compacted."""
    m = TRANSCRIPT_PATH.match(path)
    return m is not None and m["rest"].startswith((f"{base}-", f"{base}."))


def _take(sections: list[Section], limit: int) -> list[Section]:
    """The sections placed first (P2's topics, then P3's passages in search rank order)
    whose rendered text stays within ``limit`` characters (the first one always, dropped
    by stored_fit if it must be), in the compile's order: a file's passages read in the
    file's order there, so taking the leading ones would keep a file's early turns over
    the next file's best."""
    from dataclasses import replace

    out, used = set(), 0
    for s in sorted(sections, key=lambda s: s.placed):
        size = len(replace(s, cont=False, joined=False, run_end=None).render()) + 2  # at most
        if out and used + size > limit:
            break
        out.add(id(s))
        used += size
    return [s for s in sections if id(s) in out]


def _remember_shown(root: Path, harness: str, payload: dict[str, Any],
                    sections: list[Section], recalled: bool = False) -> None:
    """Record ``sections`` as shown to the session (and, for a recall, that one was)."""
    sid = payload.get("session_id")
    if sid and sections:
        mark = [(state.RECALLED, 0, 0)] if recalled else []
        state.add_shown(root, harness, sid, [(s.path, s.start_line, s.end_line)
                                             for s in sections] + mark)
