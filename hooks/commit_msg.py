"""``commit-msg``: no secret in a commit message.

A message is history like a file is (``git log`` on every clone), and the file checks
never read it. git passes the message file; its comment lines (``#``, and everything
below the ``--verbose`` scissors line, which shows the staged diff) are git's own and are
dropped first, so a secret being removed from a file is not taken for one added to the
message. The same rules and allowlist as the content scan; the report names the line.
It costs a Python start per commit, so the config (and YAML) is read only when the
message holds a candidate.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memrepo.secrets import find_secrets

if TYPE_CHECKING:
    from .engine import Context

CHECK_ID = "check-secrets"
SCISSORS = "------------------------ >8 ------------------------"


def message_text(raw: str, comment_char: str = "#") -> str:
    """The message as git will store it, line for line (comments blanked, not removed, so
    the line numbers stay those of the file)."""
    lines = []
    for line in raw.split("\n"):
        if line.startswith(comment_char) and SCISSORS in line:
            break
        lines.append("" if line.startswith(comment_char) else line)
    return "\n".join(lines)


def scan(text: str, allowlist: Sequence[str], ctx: Context, where: str) -> None:
    """Report each secret of a message as ``where:LINE``."""
    for hit in find_secrets(text, allowlist):
        ctx.report.error(where, hit.line,
                         f"possible {hit.kind} in the commit message — reword it", CHECK_ID)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: memory hook commit-msg MESSAGE_FILE", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        print(f"memrepo commit-msg: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    text = message_text(raw)
    if not find_secrets(text):
        return 0  # the usual case, decided without loading the config (YAML) at all
    from .engine import Context

    ctx = Context()
    scan(text, ctx.setting("secrets_allowlist"), ctx, path.name)
    ctx.report.print(sys.stderr)
    return ctx.report.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
