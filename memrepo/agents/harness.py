"""Which event of which agent does what: one table for the hook handlers and the installer.

Claude Code, Codex and Gemini CLI share the hook wire format (JSON on stdin, JSON on
stdout) but not the event names, nor the output keys each event accepts: an extra key is
a failed hook in Codex, and PostCompact rejects ``hookSpecificOutput`` in Claude Code.
(Sources: ../shared/reviews/agent-integration.md §1.4, §4.)
"""

from __future__ import annotations

#: What memrepo does at an event.
BRIEF = "brief"  # identity, core memory, active projects, today's journal
RECALL = "recall"  # what this prompt needs and this session has not been shown yet
FLUSH = "flush"  # durable notes out of the session before the model's context is compacted
CAPTURE = "capture"  # new turns of the agent's log into the session's open transcript
END = "end"  # capture, close and commit the session (then extraction if configured)

#: harness -> event name -> action. Events not listed are not installed.
HARNESSES: dict[str, dict[str, str]] = {
    "claude-code": {
        "SessionStart": BRIEF,
        "UserPromptSubmit": RECALL,
        "PreCompact": FLUSH,
        "Stop": CAPTURE,
        "SessionEnd": END,
    },
    "codex": {  # no SessionEnd: a session is closed by the sweep or the next SessionStart
        "SessionStart": BRIEF,
        "UserPromptSubmit": RECALL,
        "PreCompact": FLUSH,
        "Stop": CAPTURE,
    },
    "gemini": {
        "SessionStart": BRIEF,
        "BeforeAgent": RECALL,
        "PreCompress": FLUSH,
        "AfterAgent": CAPTURE,
        "SessionEnd": END,
    },
}

#: Actions whose answer is context for the model; every other action prints nothing.
INJECTS = frozenset({BRIEF, RECALL})
#: Actions done by a detached process, so the hook returns at once (SessionEnd has 1.5 s
#: for all its hooks; a PreCompact hook that waited would hold up compaction).
DETACHED = frozenset({FLUSH, CAPTURE, END})
#: Whether a recall stays in the conversation: Claude Code and Codex keep every
#: injection in the transcript (so a passage is recalled once per session), Gemini's
#: BeforeAgent context is "appended to the prompt for this turn only" (so each prompt may
#: be given what it needs again; only the briefing, its first turn, stays).
RECALL_PERSISTS = {"claude-code": True, "codex": True, "gemini": False}
#: The most characters one injection may carry (Claude Code saves longer values to a file
#: and hands the model only a preview).
MAX_CONTEXT_CHARS = 10_000

#: Set (to anything) in the environment, every agent hook does nothing: memrepo's own
#: detached work runs with it, so nothing it starts can fire the hooks again, and a user
#: can run one session without memory (``MEMREPO_NO_HOOKS=1 claude``).
GUARD_ENV = "MEMREPO_NO_HOOKS"

#: The agent log format ``transcript_path`` points at, when memrepo can follow it turn by
#: turn (memrepo.transcript.importers). Codex's rollout JSONL and Gemini's session JSON
#: have no importer: their turns are taken from the hook payloads instead.
LOG_FORMAT: dict[str, str | None] = {"claude-code": "claude-code", "codex": None, "gemini": None}
#: Session id prefix of a transcript captured from hook payloads (Claude Code's logs are
#: imported under the importer's own ``cc-…`` ids, so ``capture import`` finds them).
SESSION_PREFIX = {"claude-code": "cc", "codex": "codex", "gemini": "gemini"}
#: Payload fields that carry the agent's answer (Gemini's AfterAgent, Codex's Stop); the
#: user's words are ``prompt`` (AfterAgent, or UserPromptSubmit, kept until Stop).
ANSWER_FIELDS = ("prompt_response", "last_assistant_message")


def action(harness: str, event: str) -> str | None:
    """What memrepo does for ``event`` of ``harness`` (None: nothing)."""
    return HARNESSES.get(harness, {}).get(event)


def payload_session(harness: str, session_id: str) -> str:
    """The memrepo session id of a session captured from hook payloads (Codex, Gemini):
    ``<prefix>-<12 hex>``, stable per agent session, as the importers derive theirs."""
    import hashlib

    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:12]
    return f"{SESSION_PREFIX[harness]}-{digest}"


def context_output(event: str, text: str) -> dict[str, object]:
    """The stdout object that injects ``text``: the same two keys in all three agents.

    Nothing else is added: Codex's output schemas refuse unknown properties (a failed
    hook), and ``hookEventName`` must name the event being answered.
    """
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
