"""Block secrets at commit time (DESIGN.md principle 7): API keys, tokens, private keys.

Every staged text file is scanned, whatever its path, with the rules capture uses to
redact (memrepo.secrets). A hit names file, line and kind, never the value: hook output
ends up in terminals, CI logs and agent transcripts. Known false positives go in
validation.secrets_allowlist (regexes matched against the flagged value) or carry the
marker ``memrepo: allow-secret`` on their line. Binary files are check_size's business.
"""

from __future__ import annotations

from collections.abc import Sequence

from memrepo.secrets import find_secrets

from .engine import Context, run_main

CHECK_ID = "check-secrets"


def check(paths: Sequence[str], ctx: Context) -> None:
    """Scan every text file among ``paths``."""
    allow = ctx.setting("secrets_allowlist")  # config validation compiled each one
    for path in paths:
        head = ctx.sniff(path, CHECK_ID)
        if head is None or b"\0" in head:
            continue
        data = ctx.data(path, CHECK_ID)
        if data is None:
            continue
        # Not-UTF-8 text is still scanned: replacement characters keep the line count.
        text = data.decode("utf-8", "replace")
        for hit in find_secrets(text, allow):
            ctx.report.error(
                path,
                hit.line,
                f"possible {hit.kind} — remove it or allowlist it",
                CHECK_ID,
            )


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Scan staged files for secrets.")


if __name__ == "__main__":
    raise SystemExit(main())
