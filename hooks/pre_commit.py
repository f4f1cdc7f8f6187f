"""All seven validators in one process: what the memory repo's own pre-commit hook runs.

Starting a Python per check costs more than the checks; here one Context is shared, so
each staged file is read, decoded and parsed at most once, a broken file is reported once,
and git is asked only what the transcripts check needs (a fixed number of calls).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import (
    check_frontmatter,
    check_journal,
    check_memory_cap,
    check_secrets,
    check_size,
    check_topics,
    check_transcripts,
)
from ._common import CheckFn, run_main

#: In report order: a file's structure first, then its content, then its bytes.
CHECKS: tuple[tuple[str, CheckFn], ...] = tuple(
    (module.CHECK_ID, module.check)
    for module in (
        check_frontmatter,
        check_transcripts,
        check_memory_cap,
        check_topics,
        check_journal,
        check_secrets,
        check_size,
    )
)


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, CHECKS, "Run every memrepo validator over the staged files.")


if __name__ == "__main__":
    raise SystemExit(main())
