"""Keep knowledge/memory/MEMORY.md small enough to load every session (seed 000 §2.2).

The agent loads MEMORY.md whole, so it has a hard cap: a warning above
validation.memory_warn_lines (the commit still lands), an error above
validation.memory_error_lines or validation.memory_max_kb, and an error for a ``<!--``
never closed (everything after it would be hidden from the agent).
"""

from __future__ import annotations

from collections.abc import Sequence

from memrepo.documents import unclosed_comment
from memrepo.layout import MEMORY_FILE

from .engine import Context, kb, run_main

CHECK_ID = "check-memory-cap"


def check(paths: Sequence[str], ctx: Context) -> None:
    """Count the lines and bytes of MEMORY.md when it is among ``paths``."""
    if MEMORY_FILE not in paths:
        return
    data = ctx.data(MEMORY_FILE, CHECK_ID)
    if data is None:
        return
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    warn_lines = int(ctx.setting("memory_warn_lines"))
    error_lines = int(ctx.setting("memory_error_lines"))
    max_kb = float(ctx.setting("memory_max_kb"))
    opened = unclosed_comment(data.decode("utf-8", "replace").split("\n"))
    if opened is not None:
        ctx.report.error(
            MEMORY_FILE,
            opened + 1,
            "this `<!--` is never closed: every line after it is hidden (close it with "
            "`-->` on the same or a later line, or remove it)",
            CHECK_ID,
        )
    if len(data) > max_kb * 1024:
        ctx.report.error(
            MEMORY_FILE,
            None,
            f"MEMORY.md is {kb(len(data))}, above the limit of {max_kb:g} KB "
            "(validation.memory_max_kb); condense it into fewer, shorter entries",
            CHECK_ID,
        )
    if lines > error_lines:
        ctx.report.error(
            MEMORY_FILE,
            error_lines + 1,
            f"MEMORY.md has {lines} lines, above the limit of {error_lines} "
            "(validation.memory_error_lines); condense it or move detail to knowledge/",
            CHECK_ID,
        )
    elif lines > warn_lines:
        ctx.report.warning(
            MEMORY_FILE,
            warn_lines + 1,
            f"MEMORY.md has {lines} lines, above {warn_lines} (validation.memory_warn_lines); "
            f"condense it before it reaches {error_lines}",
            CHECK_ID,
        )


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Check the size of knowledge/memory/MEMORY.md.")


if __name__ == "__main__":
    raise SystemExit(main())
