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
#: The most characters one injection may carry (Claude Code saves longer values to a file
#: and hands the model only a preview).
MAX_CONTEXT_CHARS = 10_000


def action(harness: str, event: str) -> str | None:
    """What memrepo does for ``event`` of ``harness`` (None: nothing)."""
    return HARNESSES.get(harness, {}).get(event)
