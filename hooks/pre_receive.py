"""Server-side ``pre-receive`` check for a shared bare remote of memory repos.

Local hooks can be skipped (``git commit --no-verify``, a clone without ``memory init``),
so the remote enforces what must never reach shared history: a closed transcript is never
modified, deleted or renamed, an open one only grows at its end, and no secret is added.
The rules are the pre-commit validators' own (memrepo.hooks.verify runs ``check_transcripts`` and
``check_secrets`` over the pushed blobs), with the allowlist of the pushed
``memory-config.yaml``. Each new commit is checked, not only the tip.

Install on the machine that hosts the bare repository (memrepo installed there)::

    cat > /srv/git/memory.git/hooks/pre-receive <<'EOF'
    #!/bin/sh
    exec memory hook pre-receive
    EOF
    chmod +x /srv/git/memory.git/hooks/pre-receive

(use the full path of ``memory`` when the git server's PATH lacks it). git feeds the hook
``<old> <new> <ref>`` lines on stdin; a non-zero exit refuses the whole push, and what the
hook prints reaches the pusher as ``remote:`` lines.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

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
    from memrepo.errors import MemrepoError
    from memrepo.hooks.verify import check_push, format_findings

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
