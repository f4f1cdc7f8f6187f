"""``memory shared``: knowledge composed from another memory repo (a team's), read-only here.

``shared/<name>/`` holds the other repo's ``knowledge/`` and ``topics/`` as of one of its
commits, grafted into this repo's tree as regular files and committed as one ordinary
commit on HEAD (``shared: <name> at <sha>``), with ``shared/<name>/mount.json`` saying
where they came from. Why a graft and not a submodule or ``git subtree``
(docs/shared-knowledge.md, measured by bench/perf/bench_shared.py):

- a submodule is a gitlink: the index (which reads blobs from the commit) never sees its
  files, the pre-commit hook refuses it (a memory repo holds regular files only), and a
  clone without the team's remote has an empty folder;
- ``git subtree`` merges the team's history (or a synthetic root commit, ``--squash``)
  into this one: ``memory sync``'s rebase then replays the team's commits, which land
  under the prefix only through git's rename detection, and its commits skip memrepo's
  hooks. A graft is one commit whose parent is HEAD: the validators run on the team's
  files, the index reads them like any other, a clone has them with no access to the
  team, and a rebase moves it like any note.

The team's objects are fetched into ``refs/memrepo/shared/<name>`` (never pushed).
memrepo's writers never write under ``shared/`` (:func:`memrepo.commit.write.commit_paths`
refuses); a change to shared knowledge is made in the team's repo, then pulled.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from memrepo.commit.write import commit_lock, commit_paths
from memrepo.errors import GitError, MemrepoError
from memrepo.git import git, head, read_blobs
from memrepo.health import Check
from memrepo.layout import SHARED_ROOT, SHARED_TREES
from memrepo.repo import MemoryRepo
from memrepo.worktree import check_write, writing

MOUNT_FILE = "mount.json"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
REGULAR = ("100644", "100755")


@dataclass
class Mount:
    name: str
    url: str
    branch: str  # "" = the remote's HEAD
    commit: str  # the team commit the files are from ("" before the first pull)

    @property
    def prefix(self) -> str:
        return f"{SHARED_ROOT}{self.name}"

    @property
    def ref(self) -> str:
        return f"refs/memrepo/shared/{self.name}"


@dataclass
class Pulled:
    name: str
    status: str  # "added" | "updated" | "up to date" | "offline"
    commit: str
    files: int
    detail: str = ""

    @property
    def line(self) -> str:
        at = f" at {self.commit[:12]}" if self.commit else ""
        extra = f": {self.detail}" if self.detail else ""
        return f"{self.name}: {self.status}{at} ({self.files} files){extra}"


def mounts(root: Path) -> list[Mount]:
    """The mounts this work tree holds (``shared/*/mount.json``), by name."""
    out = []
    for path in sorted((Path(root) / SHARED_ROOT).glob(f"*/{MOUNT_FILE}")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            out.append(Mount(path.parent.name, str(data["url"]), str(data.get("branch") or ""),
                             str(data.get("commit") or "")))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def _mount(root: Path, name: str) -> Mount:
    for m in mounts(root):
        if m.name == name:
            return m
    known = ", ".join(m.name for m in mounts(root)) or "none"
    raise MemrepoError(f"no shared mount named {name!r} (mounted: {known}); "
                       "add one with `memory shared add NAME URL`")


def add(root: Path, name: str, url: str, branch: str = "") -> Pulled:
    """Mount the memory repo at ``url`` as ``shared/<name>/`` and commit its files."""
    root = Path(root)
    if not NAME.match(name):
        raise MemrepoError(f"{name!r}: a mount name is lower-case letters, digits, - and _ "
                           "(at most 40), e.g. `team`")
    if urlsplit(url).password:
        raise MemrepoError("the URL holds a password, which would be committed in mount.json "
                           "and the message: use a credential helper or an SSH URL")
    if (root / SHARED_ROOT / name).exists():
        raise MemrepoError(f"{SHARED_ROOT}{name} exists already: `memory shared pull {name}`, "
                           "or choose another name")
    m = Mount(name, url, branch, "")
    return _graft(root, m, _fetch(root, m), "added")


def pull(root: Path, name: str | None = None) -> list[Pulled]:
    """Bring each mount (or ``name``) to its repo's newest commit; a mount whose repo
    cannot be reached stays as it is (status ``offline``)."""
    root = Path(root)
    chosen = [_mount(root, name)] if name else mounts(root)
    out = []
    for m in chosen:
        try:
            commit = _fetch(root, m)
        except MemrepoError as exc:
            out.append(Pulled(m.name, "offline", m.commit, _count(root, m), str(exc)))
            continue
        if commit == m.commit:
            out.append(Pulled(m.name, "up to date", commit, _count(root, m)))
            continue
        out.append(_graft(root, m, commit, "updated"))
    return out


def _fetch(root: Path, m: Mount) -> str:
    """Fetch the mount's branch (or HEAD) into its ref; the commit it names."""
    src = f"refs/heads/{m.branch}" if m.branch else "HEAD"
    try:
        git(["fetch", "-q", "--no-tags", m.url, f"+{src}:{m.ref}"], root)
    except GitError as exc:
        said = "; ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip())
        raise MemrepoError(f"could not fetch {m.url}: {said}") from None
    return git(["rev-parse", "--verify", "-q", f"{m.ref}^{{commit}}"], root).strip()


def _team_files(root: Path, commit: str) -> dict[str, str]:
    """mount-relative path -> blob sha of the regular files of the commit's mounted trees."""
    out = git(["ls-tree", "-r", "-z", commit, "--", *SHARED_TREES], root)
    files = {}
    for entry in out.split("\0"):
        if not entry:
            continue
        info, path = entry.split("\t", 1)
        mode, kind, sha = info.split(" ")
        if kind == "blob" and mode in REGULAR:  # never a symlink or a submodule
            files[path] = sha
    return files


def _tracked(root: Path, prefix: str) -> list[str]:
    if head(root) is None:
        return []
    out = git(["ls-tree", "-r", "-z", "--name-only", "HEAD", "--", f"{prefix}/"], root)
    return [p for p in out.split("\0") if p]


def local_changes(root: Path, m: Mount) -> list[str]:
    """Paths under the mount that differ from HEAD (edited by hand: read-only here)."""
    out = git(["status", "--porcelain=v1", "-z", "--no-renames", "--", f"{m.prefix}/"], root)
    return [e[3:] for e in out.split("\0") if len(e) > 3]


def _graft(root: Path, m: Mount, commit: str, status: str) -> Pulled:
    """Replace the mount's files by ``commit``'s and commit exactly them."""
    files = _team_files(root, commit)
    blobs = read_blobs(root, files.values())
    with writing(root), commit_lock(root):
        changed = local_changes(root, m) if status != "added" else []
        if changed:
            raise MemrepoError(
                f"{', '.join(changed[:3])}: changed here, but {m.prefix}/ is read-only (the "
                f"team's knowledge): `git checkout -- {m.prefix}` drops the change; make it "
                f"in {m.url} instead, then `memory shared pull {m.name}`")
        old = _tracked(root, m.prefix)
        base = root / m.prefix
        for tree in SHARED_TREES:
            shutil.rmtree(base / tree, ignore_errors=True)
        for rel, sha in files.items():
            target = base / rel
            check_write(root, target)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blobs[sha] or b"")
        m.commit = commit
        record = {k: v for k, v in asdict(m).items() if k != "name"}
        (base / MOUNT_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        new = [f"{m.prefix}/{rel}" for rel in files]
        message = (f"shared: {m.name} at {commit[:12]} ({len(files)} files)\n\n"
                   f"Shared-From: {m.url} {commit}\n")
        commit_paths(root, [*new, *old, f"{m.prefix}/{MOUNT_FILE}"], message, mounts=True)
    return Pulled(m.name, status, commit, len(files))


def _count(root: Path, m: Mount) -> int:
    return sum(1 for p in _tracked(root, m.prefix) if not p.endswith(f"/{MOUNT_FILE}"))


def health_checks(repo: MemoryRepo) -> list[Check]:
    """One line per mount: where it is from, at which commit, and hand edits in it."""
    out = []
    for m in mounts(repo.root):
        try:
            changed = local_changes(repo.root, m)
            files = _count(repo.root, m)
        except GitError as exc:
            out.append(Check(f"shared {m.name}", False, str(exc)))
            continue
        detail = f"{m.prefix}/ from {m.url} at {m.commit[:12]} ({files} files), read-only"
        if changed:
            out.append(Check(f"shared {m.name}", False,
                             f"{detail}; changed by hand: {', '.join(changed[:3])}",
                             f"git checkout -- {m.prefix} (make the change in {m.url})"))
        else:
            out.append(Check(f"shared {m.name}", True, f"{detail}; `memory shared pull` "
                             "brings the team's newest"))
    return out
