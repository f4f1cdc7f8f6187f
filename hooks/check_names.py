"""No secret in a name: file names at commit time, and (pre-receive) ref names too.

A key pasted into a file name (``knowledge/reference/sk-ant-….md``) or a branch name is
in history and on every clone as surely as one in a file, and the content scan never
reads names. Names are scanned with the rules and the allowlist of the content scan
(:mod:`memrepo.secrets`); the report prints the name with the secret replaced by its kind.
"""

from __future__ import annotations

from collections.abc import Sequence

from memrepo.secrets import find_secrets

from .engine import Context, run_main, safe_name

CHECK_ID = "check-secrets"


def secret_kinds(name: str, allowlist: Sequence[str]) -> list[str]:
    """The kinds of secret in ``name`` (empty when there is none)."""
    return [hit.kind for hit in find_secrets(name, allowlist)]


def check(paths: Sequence[str], ctx: Context) -> None:
    """Every staged path whose name carries a secret."""
    allow = ctx.setting("secrets_allowlist")
    names = [p for p in paths if "\n" not in p]
    if not names:
        return
    # one scan of all names, a line each: the keyword prefilter then runs once
    for hit in find_secrets("\n".join(names), allow):
        path = names[hit.line - 1]
        ctx.report.error(safe_name(path), None,
                         f"possible {hit.kind} in the file name — rename the file", CHECK_ID)


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Scan staged file names for secrets.")


if __name__ == "__main__":
    raise SystemExit(main())
