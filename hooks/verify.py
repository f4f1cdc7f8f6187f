"""Audit commits for the rules local hooks enforce but ``--no-verify`` can skip.

Transcript immutability (no change to a closed transcript, an open one only grows, none
deleted or renamed), regular files only (no symlink, no submodule) and no secrets: in
file contents (UTF-8, UTF-16, or with NUL bytes), in file names, in commit messages and,
for a push, in annotated tag messages and ref names. The checks are the pre-commit
validators' own (``hooks/check_*.py``), run over blobs read from git instead of a working
tree: a :class:`BlobContext` serves them a commit's files, so the pre-receive hook,
``memory verify`` and the pre-commit hook can never disagree about what is allowed.

Which allowlist applies is the caller's ``policy`` (a ``memory-config.yaml`` blob): the
pre-receive hook passes the server's own (:func:`server_policy`), never the pushed one,
or a push could bring ``secrets_allowlist: ['.*']`` along with its secret; ``memory
verify`` audits each commit with the config it carried.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memrepo import gitcrypt, layout
from memrepo.errors import MemrepoError
from memrepo.git import EMPTY_TREE, RawRow, git, is_ancestor, parse_raw, read_blobs
from memrepo.hooks import (
    check_encoded,
    check_filetypes,
    check_names,
    check_private,
    check_secrets,
    check_transcripts,
    commit_msg,
)
from memrepo.hooks.engine import BlobContext, safe_name
from memrepo.layout import CONFIG_FILE
from memrepo.secrets import find_secrets

ZERO = "0" * 40
#: ``policy`` default: each commit is audited with the config it carries.
OWN_CONFIG = b"\0own"
#: git config key naming a memory-config.yaml on the server whose allowlist every push is
#: checked with (else: the receiving ref's current config, else the default branch's).
POLICY_KEY = "memrepo.policy"
SECRETS_ID = check_secrets.CHECK_ID


@dataclass
class Finding:
    commit: str
    subject: str
    problems: list[str] = field(default_factory=list)


def _changes(root: Path, base: str, target: str) -> list[RawRow]:
    """(status, path, new path, new sha, new mode) between two trees, renames detected."""
    out = git(["diff-tree", "-r", "-M", "-z", "--raw", "--no-abbrev", "--no-commit-id",
               base, target], root)
    return parse_raw(out)


def _errors(lines: Iterable[str]) -> list[str]:
    return [ln for ln in lines if ": error: " in ln or ln.startswith("error:")]


def audit_change(root: Path, base: str, target: str, policy: bytes | None = OWN_CONFIG
                 ) -> list[str]:
    """Every rule broken going from ``base`` to ``target`` (commits or trees), as report
    lines; ``policy``: the config blob whose allowlist applies (see the module doc)."""
    rows = _changes(root, base, target)
    if not rows:
        return []
    new_paths = [(new or path) for st, path, new, _sha, _m in rows
                 if st in ("A", "M", "R", "C", "T")]
    modes = {(new or path): mode for st, path, new, _sha, mode in rows if st != "D"}
    old_transcripts = [path for st, path, _new, _sha, _m in rows
                       if layout.is_transcript(path) and st in ("M", "R", "D", "T")]
    revs = [f"{target}:{p}" for p in new_paths] + [f"{base}:{p}" for p in old_transcripts]
    own = policy is OWN_CONFIG
    if own:
        revs.append(f"{target}:{CONFIG_FILE}")
    blobs = read_blobs(root, revs)
    current = {p: blobs.get(f"{target}:{p}") for p in new_paths}
    config = blobs.get(f"{target}:{CONFIG_FILE}") if own else policy
    ctx = BlobContext(root, current, config, modes)
    rep = ctx.report
    tid = check_transcripts.CHECK_ID
    for st, path, new, _sha, _mode in rows:
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
            new_data = ctx.data(path, tid)  # a git-crypt blob through this clone's key
            old = gitcrypt.reveal(root, old) if old is not None else None
            if old is not None and new_data is not None and not gitcrypt.is_ciphertext(old):
                check_transcripts.check_history(path, old, new_data, ctx)
    check_filetypes.report(modes, ctx)
    present = [p for p in new_paths if current.get(p) is not None]
    check_filetypes.check_compressed(present, ctx, unreadable_only=True)
    check_secrets.check(present, ctx)
    check_private.check(present, ctx)
    check_encoded.check(present, ctx)
    check_names.check([(new or path) for st, path, new, _sha, _m in rows
                       if st in ("A", "R", "C")], ctx)
    return _errors(rep.lines)


def _parents(root: Path, commit: str) -> list[str]:
    out = git(["rev-list", "--parents", "-n", "1", commit], root).split()
    return out[1:]


def _message(raw: str) -> str:
    """The message of a raw commit or tag object (after the headers)."""
    return raw.split("\n\n", 1)[1] if "\n\n" in raw else ""


def message_problems(text: str, what: str, root: Path, config: bytes | None) -> list[str]:
    """A secret in a commit or tag message, as report lines naming ``what`` and the line."""
    ctx = BlobContext(root, {}, config)
    commit_msg.scan(text, ctx.setting("secrets_allowlist"), ctx, what)
    return _errors(ctx.report.lines)


def audit_commit(root: Path, commit: str, policy: bytes | None = OWN_CONFIG,
                 prefetched: dict[str, bytes | None] | None = None) -> list[str]:
    """Rules a commit breaks against its first parent (each parent, for transcripts), and
    a secret in its message; ``prefetched``: :func:`_prefetch` for these commits."""
    parents = _parents(root, commit)
    problems = audit_change(root, parents[0] if parents else EMPTY_TREE, commit, policy)
    for other in parents[1:]:  # a merge must not rewrite a transcript from either side
        problems += [p for p in audit_change(root, other, commit, policy)
                     if f"[{check_transcripts.CHECK_ID}]" in p and p not in problems]
    objects = prefetched if prefetched is not None else _prefetch(root, [commit], policy)
    config = objects.get(f"{commit}:{CONFIG_FILE}") if policy is OWN_CONFIG else policy
    raw = (objects.get(commit) or b"").decode("utf-8", "replace")
    problems += message_problems(_message(raw), "commit message", root, config)
    return problems


def _prefetch(root: Path, commits: Sequence[str], policy: bytes | None) -> dict[str, bytes | None]:
    """The raw commit objects (and, auditing with their own configs, those configs) in
    one ``git cat-file --batch``."""
    revs = list(commits)
    if policy is OWN_CONFIG:
        revs += [f"{c}:{CONFIG_FILE}" for c in commits]
    return read_blobs(root, revs)


def _subject(root: Path, commit: str) -> str:
    """The subject, as it may be printed (a secret in it replaced by its kind)."""
    return safe_name(git(["log", "-1", "--format=%s", commit], root).strip())


def audit_commits(root: Path, commits: Iterable[str], policy: bytes | None = OWN_CONFIG
                  ) -> list[Finding]:
    commits = list(commits)
    objects = _prefetch(root, commits, policy)
    out = []
    for c in commits:
        problems = audit_commit(root, c, policy, objects)
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


def server_policy(root: Path, old: str) -> bytes | None:
    """The config whose allowlist a push to a ref at ``old`` is checked with: the file
    ``git config memrepo.policy`` names on the server, else the ref's current
    ``memory-config.yaml``, else the default branch's; None (no allowlist) when there is
    none or it is broken. Never the pushed one."""
    path = git(["config", "--get", POLICY_KEY], root, check=False).strip()
    if path:
        try:
            blob: bytes | None = Path(path).expanduser().read_bytes()
        except OSError as exc:
            raise MemrepoError(f"{POLICY_KEY} names {path}, which cannot be read: "
                               f"{exc.strerror or exc}") from None
    else:
        revs = ([f"{old}:{CONFIG_FILE}"] if old != ZERO else []) + [f"HEAD:{CONFIG_FILE}"]
        blobs = read_blobs(root, revs)
        blob = next((blobs[r] for r in revs if blobs.get(r) is not None), None)
    if blob is None or BlobContext(root, {}, blob).report.errors:
        return None  # a broken policy must not lock every pusher out: no allowlist at all
    return blob


def _ref_problems(ref: str, allow: Sequence[str]) -> list[str]:
    return [f"{safe_name(ref)}: error: possible {hit.kind} in the ref name — push it under "
            f"another name [{SECRETS_ID}]" for hit in find_secrets(ref, allow)]


def _tag_findings(root: Path, sha: str, ref: str, config: bytes | None) -> list[Finding]:
    """Annotated tags among ``sha`` and what it points to: a secret in a tag's name or
    message."""
    findings = []
    allow = BlobContext(root, {}, config).setting("secrets_allowlist")
    seen: set[str] = set()
    while sha not in seen and git(["cat-file", "-t", sha], root).strip() == "tag":
        seen.add(sha)
        raw = git(["cat-file", "tag", sha], root)
        headers = raw.split("\n\n", 1)[0].split("\n")
        name = next((h[4:] for h in headers if h.startswith("tag ")), "")
        problems = message_problems(_message(raw), "tag message", root, config)
        if name and name != ref.removeprefix("refs/tags/"):
            problems += _ref_problems(name, allow)
        if problems:
            findings.append(Finding(sha, f"annotated tag {safe_name(ref)}", problems))
        sha = next((h[7:] for h in headers if h.startswith("object ")), sha)
    return findings


def check_push(root: Path, updates: Sequence[tuple[str, str, str]]) -> list[Finding]:
    """Audit ref updates ``(old, new, ref)`` as a pre-receive hook receives them.

    Every new commit is checked on its own (a secret added then removed in one push still
    lands in history), with the server's policy; a forced update is also checked tip to
    tip, so dropping the commit that added a closed transcript is refused too. Ref names
    and annotated tags are checked as well.
    """
    findings: list[Finding] = []
    seen: set[str] = set()
    for old, new, ref in updates:
        if new == ZERO:
            continue  # deleting a ref removes no history
        policy = server_policy(root, old)
        allow = BlobContext(root, {}, policy).setting("secrets_allowlist")
        ref_problems = _ref_problems(ref, allow)
        if ref_problems:
            findings.append(Finding(new, f"ref {safe_name(ref)}", ref_problems))
        findings += _tag_findings(root, new, ref, policy)
        fresh = git(["rev-list", "--reverse", new, "--not", "--all"], root).split()
        findings += audit_commits(root, [c for c in fresh if c not in seen], policy)
        seen.update(fresh)
        if old != ZERO and not is_ancestor(root, old, new):
            problems = [p for p in audit_change(root, old, new, policy)
                        if f"[{check_transcripts.CHECK_ID}]" in p]
            if problems:
                findings.append(Finding(new, f"forced update of {safe_name(ref)} "
                                        f"({old[:7]}..{new[:7]})", problems))
    return findings


def format_findings(findings: Sequence[Finding]) -> str:
    lines = []
    for f in findings:
        lines.append(f"{f.commit[:10]} {f.subject}")
        lines += [f"    {p}" for p in f.problems]
    return "\n".join(lines)
