"""Server-side ``pre-receive`` check for a shared bare remote of memory repos.

Local hooks can be skipped (``git commit --no-verify``, a clone without ``memory init``),
so the remote enforces what must never reach shared history: a closed transcript is never
modified, deleted or renamed, an open one only grows at its end, only regular files (no
symlink, no submodule), and no secret, whether in a file (UTF-8, UTF-16, or after a NUL
byte), a file name, a commit or tag message, or a ref name. The rules are the pre-commit
validators' own (memrepo.hooks.verify runs them over the pushed blobs); the secrets
allowlist is the server's (``git config memrepo.policy FILE``, else the receiving ref's
current ``memory-config.yaml``, else the default branch's), never the pushed one. Each
new commit is checked, not only the tip.

Install on the machine that hosts the bare repository (memrepo installed there), with
the Python memrepo is installed in, so the server's PATH plays no part::

    /path/to/venv/bin/python -c 'from pathlib import Path; from memrepo.hooks.install \
        import install_server_hook; print(install_server_hook(Path("/srv/git/memory.git")))'

(an existing pre-receive hook is kept and run first). git feeds the hook ``<old> <new>
<ref>`` lines on stdin; a non-zero exit refuses the whole push, and what the hook prints
reaches the pusher as ``remote:`` lines.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from memrepo.errors import MemrepoError
from memrepo.hooks.verify import check_push, format_findings

CHECK_ID = "pre-receive"


def parse_updates(lines: Iterable[str]) -> list[tuple[str, str, str]]:
    updates = []
    for line in lines:
        parts = line.split()
        if len(parts) == 3:
            updates.append((parts[0], parts[1], parts[2]))
    return updates


def main(lines: Iterable[str] | None = None, root: Path | None = None) -> int:
    """Check the pushed ref updates; print why and return 1 to refuse the push."""
    updates = parse_updates(sys.stdin if lines is None else lines)
    try:
        findings = check_push(root or Path.cwd(), updates)
    except MemrepoError as exc:
        print(f"memrepo pre-receive: cannot check the push: {exc}", file=sys.stderr)
        return 1
    if not findings:
        return 0
    print("memrepo pre-receive: push refused; these commits break the memory repo's rules:",
          file=sys.stderr)
    print(format_findings(findings), file=sys.stderr)
    print("Transcripts are immutable once closed and secrets never enter shared history: "
          "rewrite the offending commits locally (the pre-commit hook explains each rule), "
          "then push again.", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
