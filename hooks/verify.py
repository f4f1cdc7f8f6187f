"""Audit commits for the rules local hooks enforce but ``--no-verify`` can skip.

Transcript immutability (no change to a closed transcript, an open one only grows, none
deleted or renamed) and no secrets: the very checks of ``hooks/check_transcripts.py`` and
``hooks/check_secrets.py``, run over blobs read from git instead of a working tree. A
:class:`BlobContext` serves those checks a commit's files, so the pre-receive hook, ``memory
verify`` and the pre-commit hook can never disagree about what is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memrepo import layout
from memrepo.errors import MemrepoError
from memrepo.git import EMPTY_TREE, git, is_ancestor, parse_name_status, read_blobs
from memrepo.hooks import check_secrets, check_transcripts
from memrepo.hooks.engine import BlobContext
from memrepo.layout import CONFIG_FILE

ZERO = "0" * 40


@dataclass
class Finding:
    commit: str
    subject: str
    problems: list[str] = field(default_factory=list)


def _changes(root: Path, base: str, target: str) -> list[tuple[str, str, str | None]]:
    """(status, path, new path) between two trees, renames detected."""
    out = git(
        ["diff-tree", "-r", "-M", "-z", "--no-commit-id", "--name-status", base, target], root
    )
    return parse_name_status(out)


def audit_change(root: Path, base: str, target: str) -> list[str]:
    """Every rule broken going from ``base`` to ``target`` (commits or trees), as report lines."""
    rows = _changes(root, base, target)
    if not rows:
        return []
    report_lines: list[str] = []
    new_paths = [(new or path) for st, path, new in rows if st in ("A", "M", "R", "C", "T")]
    old_transcripts = [path for st, path, _ in rows
                       if layout.is_transcript(path) and st in ("M", "R", "D", "T")]
    revs = [f"{target}:{p}" for p in new_paths] + [f"{base}:{p}" for p in old_transcripts]
    revs.append(f"{target}:{CONFIG_FILE}")
    blobs = read_blobs(root, revs)
    current = {p: blobs.get(f"{target}:{p}") for p in new_paths}
    ctx = BlobContext(root, current, blobs.get(f"{target}:{CONFIG_FILE}"))
    rep = ctx.report
    tid = check_transcripts.CHECK_ID
    for st, path, new in rows:
        if not layout.is_transcript(path):
            continue
        if st == "D":
            rep.error(path, None, "transcripts may not be deleted (raw/ is append-only evidence)",
                      tid)
        elif st == "R":
            rep.error(path, None, f"transcripts may not be renamed or moved (renamed to {new})",
                      tid)
        elif st == "T":
            rep.error(path, None, "a transcript may not become a symlink or submodule", tid)
        elif st in ("A", "M"):
            check_transcripts.check_shape(path, ctx)
            old = blobs.get(f"{base}:{path}") if st == "M" else None
            new_data = current.get(path)
            if old is not None and new_data is not None:
                check_transcripts.check_history(path, old, new_data, ctx)
    check_secrets.check([p for p in new_paths if current.get(p) is not None], ctx)
    report_lines.extend(rep.lines)
    return [ln for ln in report_lines if ": error: " in ln or ln.startswith("error:")]


def _parents(root: Path, commit: str) -> list[str]:
    out = git(["rev-list", "--parents", "-n", "1", commit], root).split()
    return out[1:]


def audit_commit(root: Path, commit: str) -> list[str]:
    """Rules a commit breaks against its first parent (each parent, for transcripts)."""
    parents = _parents(root, commit)
    problems = audit_change(root, parents[0] if parents else EMPTY_TREE, commit)
    for other in parents[1:]:  # a merge must not rewrite a transcript from either side
        problems += [p for p in audit_change(root, other, commit)
                     if f"[{check_transcripts.CHECK_ID}]" in p and p not in problems]
    return problems


def _subject(root: Path, commit: str) -> str:
    return git(["log", "-1", "--format=%s", commit], root).strip()


def audit_commits(root: Path, commits: Iterable[str]) -> list[Finding]:
    out = []
    for c in commits:
        problems = audit_commit(root, c)
        if problems:
            out.append(Finding(c, _subject(root, c), problems))
    return out


def commits_since(root: Path, since: str | None, rev: str = "HEAD") -> list[str]:
    """Commits of ``rev`` after ``since`` (all of them when None), oldest first."""
    spec = [rev] if not since else [f"{since}..{rev}"]
    try:
        out = git(["rev-list", "--reverse", *spec], root)
    except MemrepoError as exc:
        raise MemrepoError(f"cannot list commits {' '.join(spec)}: {exc}") from None
    return out.split()


def check_push(root: Path, updates: Sequence[tuple[str, str, str]]) -> list[Finding]:
    """Audit ref updates ``(old, new, ref)`` as a pre-receive hook receives them.

    Every new commit is checked on its own (a secret added then removed in one push still
    lands in history), and a forced update is also checked tip to tip, so dropping the
    commit that added a closed transcript is refused too.
    """
    findings: list[Finding] = []
    seen: set[str] = set()
    for old, new, ref in updates:
        if new == ZERO:
            continue  # deleting a ref removes no history
        fresh = git(["rev-list", "--reverse", new, "--not", "--all"], root).split()
        findings += audit_commits(root, [c for c in fresh if c not in seen])
        seen.update(fresh)
        if old != ZERO and not is_ancestor(root, old, new):
            problems = [p for p in audit_change(root, old, new)
                        if f"[{check_transcripts.CHECK_ID}]" in p]
            if problems:
                findings.append(Finding(new, f"forced update of {ref} ({old[:7]}..{new[:7]})",
                                        problems))
    return findings


def format_findings(findings: Sequence[Finding]) -> str:
    lines = []
    for f in findings:
        lines.append(f"{f.commit[:10]} {f.subject}")
        lines += [f"    {p}" for p in f.problems]
    return "\n".join(lines)
