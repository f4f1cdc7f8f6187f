"""``memory private``: private knowledge with git-crypt (docs/private.md).

``private.paths`` in memory-config.yaml names the files git-crypt encrypts (gitattributes
patterns such as ``knowledge/people/**``). :func:`init` makes (or keeps) this clone's key,
writes memrepo's block of ``.gitattributes`` for those patterns, and commits it with the
private files encrypted; :func:`unlock` opens a clone with an exported key and rebuilds
the index; :func:`status` and :func:`health_checks` (``memory doctor``) say what a push
would give away in the clear, and whether this clone is locked.

How memrepo reads a git-crypt blob (the index, the validators, the merge driver) is
:mod:`memrepo.gitcrypt`; the commit-time refusal of a private file staged in the clear is
``hooks/check_private.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memrepo import gitcrypt, yamlsafe
from memrepo.atomic import atomic_write
from memrepo.config import load_config, set_setting, validate
from memrepo.errors import ConfigError, GitError, MemrepoError
from memrepo.git import git, git_dir, head, read_blobs
from memrepo.health import Check
from memrepo.index.indexer import sync
from memrepo.layout import CONFIG_FILE

if TYPE_CHECKING:
    from memrepo.repo import MemoryRepo

ATTRIBUTES_FILE = ".gitattributes"
INSTALL = ("git-crypt is not installed: install it (Debian/Ubuntu: apt-get install "
           "git-crypt; macOS: brew install git-crypt)")
COMMIT_MESSAGE = "private: encrypt private.paths with git-crypt"
#: How many unpushed commits the check for private files committed in the clear reads.
HISTORY_LIMIT = 2000


def git_crypt() -> str | None:
    """The git-crypt on PATH, or None."""
    return shutil.which("git-crypt")


def has_key(root: Path) -> bool:
    """Whether this clone holds a git-crypt key (``git-crypt init`` or ``unlock`` put it
    in ``.git/git-crypt/keys/``)."""
    keys = git_dir(root) / "git-crypt" / "keys"
    return keys.is_dir() and any(keys.iterdir())


def can_encrypt(root: Path) -> bool:
    """Whether ``git add`` here runs git-crypt's clean filter (defined in this clone's
    git config by ``git-crypt init`` / ``unlock``)."""
    return bool(git(["config", "--get", "filter.git-crypt.clean"], root, check=False).strip())


def pathspecs(patterns: list[str]) -> list[str]:
    """``patterns`` as git pathspecs with the same wildmatch (``:(glob)``)."""
    return [":(glob)" + (p.lstrip("/") if "/" in p else "**/" + p) for p in patterns]


def tracked(root: Path, patterns: list[str]) -> list[str]:
    """The tracked files ``patterns`` name."""
    if not patterns:
        return []
    match = gitcrypt.Matcher(patterns)
    out = git(["ls-files", "-z", "--", *pathspecs(patterns)], root)
    return [p for p in out.split("\0") if p and match(p)]


def attributes(root: Path, paths: list[str], *names: str) -> dict[str, dict[str, str]]:
    """The attributes ``names`` (default ``filter``) git gives each of ``paths``:
    path -> name -> value (``unspecified`` when none)."""
    names = names or ("filter",)
    if not paths:
        return {}
    out = git(["check-attr", "-z", "--stdin", *names], root,
              input="".join(p + "\0" for p in paths)).split("\0")
    got: dict[str, dict[str, str]] = {}
    for i in range(0, len(out) - 2, 3):
        got.setdefault(out[i], {})[out[i + 1]] = out[i + 2]
    return got


def filters(root: Path, paths: list[str]) -> dict[str, str]:
    """The ``filter`` attribute of each of ``paths`` (``unspecified`` when none)."""
    return {p: a.get("filter", "unspecified") for p, a in attributes(root, paths).items()}


def encrypted_files(root: Path) -> list[str]:
    """The tracked files a git-crypt filter attribute reaches (none without a
    ``.gitattributes`` that names git-crypt: then no git call)."""
    attributes = root / ATTRIBUTES_FILE
    try:
        if "git-crypt" not in attributes.read_text(encoding="utf-8", errors="replace"):
            return []
    except OSError:
        return []
    files = [p for p in git(["ls-files", "-z"], root).split("\0") if p]
    return [p for p, f in filters(root, files).items() if f.startswith("git-crypt")]


def _sample(pattern: str) -> str:
    """A path ``pattern`` names, to ask git which attributes it would get."""
    p = re.sub(r"\[!?([^\]])[^\]]*\]", r"\1", pattern.lstrip("/"))
    p = p.replace("**/", "").replace("/**", "/x")
    return p.replace("**", "x").replace("*", "x").replace("?", "x") or "x"


def _encrypts(attrs: dict[str, str]) -> bool:
    """Whether these attributes store a file as git-crypt ciphertext, unharmed: the
    filter, and no end-of-line conversion (``text``, or an ``eol`` that implies it, would
    rewrite CRLF inside the ciphertext)."""
    text, eol = attrs.get("text", "unspecified"), attrs.get("eol", "unspecified")
    return attrs.get("filter", "").startswith("git-crypt") and (
        text in ("unset", "auto") or (text == "unspecified" and eol == "unspecified"))


def uncovered(root: Path, patterns: list[str]) -> list[str]:
    """The patterns (a sample path of each) and tracked files ``git add`` would not
    store as git-crypt ciphertext (:func:`_encrypts`)."""
    paths = [*dict.fromkeys([_sample(p) for p in patterns] + tracked(root, patterns))]
    got = attributes(root, paths, "filter", "text", "eol")
    return [p for p in paths if not _encrypts(got.get(p, {}))]


def locked(root: Path, paths: list[str]) -> list[str]:
    """The files among ``paths`` that are ciphertext in the work tree: a clone without
    the key (or one locked again by ``git-crypt lock``)."""
    out = []
    for path in paths:
        try:
            with open(root / path, "rb") as fh:
                if gitcrypt.is_ciphertext(fh.read(len(gitcrypt.HEADER))):
                    out.append(path)
        except OSError:
            continue
    return out


@dataclass(frozen=True)
class Clear:
    """A private file git holds unencrypted: where, and whether a remote has it."""

    path: str
    commit: str
    pushed: bool


def _plain(root: Path, rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The (commit, path, blob) rows whose blob is not git-crypt ciphertext."""
    blobs = read_blobs(root, dict.fromkeys(sha for _c, _p, sha in rows))
    return [r for r in rows if blobs.get(r[2]) is not None
            and not gitcrypt.is_ciphertext(blobs[r[2]])]


def _log_rows(out: str) -> list[tuple[str, str, str]]:
    """(commit, path, new blob) of ``git log -z --raw --format=%x01%H`` output."""
    rows: list[tuple[str, str, str]] = []
    fields = out.split("\0")
    commit = ""
    i = 0
    while i < len(fields):
        f = fields[i].lstrip("\n")
        if f.startswith("\x01"):
            commit = f[1:13]
        elif f.startswith(":") and i + 1 < len(fields):
            rows.append((commit, fields[i + 1], f.split(" ")[3]))
            i += 1
        i += 1
    return rows


def in_the_clear(root: Path, patterns: list[str]) -> list[Clear]:
    """Private files committed unencrypted: in commits no remote has yet (the last
    :data:`HISTORY_LIMIT`), which the next push would give away, and in HEAD's tree from
    a commit a remote has (``pushed``)."""
    if not patterns or head(root) is None:
        return []
    match = gitcrypt.Matcher(patterns)
    rows = _log_rows(git(
        ["log", "-z", "--raw", "--no-renames", "--no-abbrev", "--format=%x01%H", "-n",
         str(HISTORY_LIMIT), "HEAD", "--not", "--remotes", "--", *pathspecs(patterns)], root))
    introduced = {(path, sha) for _c, path, sha in rows}
    for entry in git(["ls-tree", "-r", "-z", "--full-tree", "HEAD"], root).split("\0"):
        info, _, path = entry.partition("\t")
        kind_sha = info.split(" ")[1:3]
        if path and kind_sha[:1] == ["blob"] and (path, kind_sha[1]) not in introduced:
            rows.append(("HEAD", path, kind_sha[1]))
    rows = [r for r in rows if match(r[1]) and set(r[2]) != {"0"}]
    return [Clear(p, c, c == "HEAD") for c, p, _sha in _plain(root, rows)]


@dataclass
class Status:
    """Where private knowledge stands in one clone (``memory private status``)."""

    patterns: list[str]
    git_crypt: str | None
    key: bool
    filter: bool
    files: list[str] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)
    locked: list[str] = field(default_factory=list)
    clear: list[Clear] = field(default_factory=list)


def status(root: Path) -> Status:
    patterns = load_config(root)["private"]["paths"]
    st = Status(patterns, git_crypt(), has_key(root), can_encrypt(root))
    if patterns:
        st.files = tracked(root, patterns)
        st.uncovered = uncovered(root, patterns)
        st.locked = locked(root, encrypted_files(root))
        st.clear = in_the_clear(root, patterns)
    return st


# ---------------------------------------------------------------------------
# memory private init / unlock / export-key
# ---------------------------------------------------------------------------


def _run_git_crypt(root: Path, *args: str) -> str:
    exe = git_crypt()
    if exe is None:
        raise MemrepoError(INSTALL)
    proc = subprocess.run([exe, *args], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().replace("\n", " ")
        raise MemrepoError(f"git-crypt {args[0]} failed: {said}")
    return (proc.stdout + proc.stderr).strip()


def add_patterns(root: Path, patterns: list[str]) -> bool:
    """Add ``patterns`` to ``private.paths`` in memory-config.yaml (validated; comments
    kept); whether the file changed."""
    if not patterns:
        return False
    path = root / CONFIG_FILE
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    current = load_config(root)["private"]["paths"]
    wanted = [*dict.fromkeys([*current, *patterns])]
    if wanted == current:
        return False
    new = set_setting(text, "private", "paths", wanted)
    try:
        cfg = validate(yamlsafe.load(new), new)
    except yamlsafe.YAMLProblem as exc:
        raise ConfigError(exc.message, CONFIG_FILE, exc.line) from None
    if cfg["private"]["paths"] != wanted:
        raise MemrepoError(f"could not write private.paths into {CONFIG_FILE}: set it by "
                           "hand (a list of patterns), then run `memory private init`")
    atomic_write(path, new, root=root)
    return True


def write_attributes(root: Path, patterns: list[str]) -> bool:
    """memrepo's block of ``.gitattributes`` set to ``patterns``; whether it changed."""
    path = root / ATTRIBUTES_FILE
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    new = gitcrypt.merge_attributes(old, patterns)
    if new == old:
        return False
    atomic_write(path, new, root=root)
    return True


def _make_key(root: Path) -> str:
    """This clone's key: kept when it has one, made by ``git-crypt init`` otherwise;
    refused in a clone of an encrypted repo (a second key would split it)."""
    if has_key(root):
        return "kept this clone's git-crypt key"
    sealed = locked(root, encrypted_files(root))
    if sealed:
        raise MemrepoError(
            f"this clone is locked ({len(sealed)} file(s) are git-crypt ciphertext, e.g. "
            f"{sealed[0]}): unlock it with the repo's key (`memory private unlock KEYFILE`) "
            "instead of making a new key")
    _run_git_crypt(root, "init")
    return "made a git-crypt key for this repo (.git/git-crypt/keys/default)"


def _commit(root: Path, paths: list[str], private: list[str]) -> str | None:
    """Commit exactly ``paths`` (``git commit -- paths``), the ``private`` ones read
    again through their filter (``git add --renormalize``: one committed in the clear
    before is now encrypted); the short sha, or None when there was nothing to commit."""
    paths = [p for p in dict.fromkeys(paths) if (root / p).exists()]
    if not paths:
        return None
    env = {"PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    git(["add", "--", *paths], root, env=env)
    if private:
        git(["add", "--renormalize", "--", *private], root, env=env)
    if head(root) is not None and not git(
            ["diff", "--cached", "--name-only", "HEAD", "--", *paths], root).strip():
        return None
    git(["commit", "-q", "-m", COMMIT_MESSAGE, "--", *paths], root, env=env)
    return git(["rev-parse", "--short", "HEAD"], root).strip()


def init(root: Path, add: list[str] | None = None, commit: bool = True) -> list[str]:
    """``memory private init``: what was done, line by line."""
    if git_crypt() is None:
        raise MemrepoError(INSTALL)
    done = []
    if add_patterns(root, list(add or [])):
        done.append(f"added {', '.join(add or [])} to private.paths in {CONFIG_FILE}")
    patterns = load_config(root)["private"]["paths"]
    if not patterns:
        raise MemrepoError("no private paths: name them (`memory private init "
                           "'knowledge/people/**'`) or set private.paths in " + CONFIG_FILE)
    done.append(_make_key(root))
    if write_attributes(root, patterns):
        done.append(f"wrote memrepo's git-crypt block in {ATTRIBUTES_FILE}: "
                    + ", ".join(patterns))
    files = tracked(root, patterns)
    if commit:
        sha = _commit(root, [ATTRIBUTES_FILE, CONFIG_FILE, *files], files)
        if sha:
            done.append(f"committed {sha}: {ATTRIBUTES_FILE}, {CONFIG_FILE} and "
                        f"{len(files)} private file(s), encrypted")
    return done


def guide() -> list[str]:
    """How another clone (another machine, an agent's sandbox) gets the key."""
    return [
        "Other clones read the private files only with the key. Export it once, keep it "
        "out of the repo (a password manager, an encrypted disk):",
        "  memory private export-key ~/memrepo.key    (git-crypt export-key)",
        "then, in each clone that should read them:",
        "  memory private unlock ~/memrepo.key        (git-crypt unlock, then the index "
        "is rebuilt)",
        "A clone without the key works on everything else; its private files stay "
        "ciphertext and memrepo skips them.",
    ]


def export_key(root: Path, dest: Path) -> str:
    if not has_key(root):
        raise MemrepoError("this clone has no git-crypt key to export (`memory private "
                           "init` makes one; `memory private unlock KEYFILE` brings one)")
    if dest.resolve().is_relative_to(root.resolve()):
        raise MemrepoError(f"{dest} is inside the memory repo: keep the key out of it (a "
                           "commit would give it to every remote with what it opens)")
    _run_git_crypt(root, "export-key", str(dest))
    return f"exported the key to {dest}: anyone holding it reads the private files"


def unlock(root: Path, keyfile: Path, embedder: str | None = None) -> list[str]:
    """``git-crypt unlock KEYFILE``, then the index rebuilt: what it held of the private
    files was their ciphertext (a document without text)."""
    _run_git_crypt(root, "unlock", str(keyfile))
    done = [f"unlocked with {keyfile}: the private files are plaintext in this work tree"]
    try:
        res = sync(root, embedder_name=embedder, force_rebuild=True)
        if res is not None:
            done.append(f"index rebuilt at {(res.commit or 'no commit')[:12]}")
    except Exception as exc:  # the unlock stands; the index is one `memory index` away
        done.append(f"index not rebuilt ({exc}): run `memory index --rebuild`")
    return done


# ---------------------------------------------------------------------------
# memory doctor
# ---------------------------------------------------------------------------


def _shown(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def _clear_checks(clear: list[Clear]) -> list[Check]:
    out = []
    unpushed = [c for c in clear if not c.pushed]
    pushed = [c for c in clear if c.pushed]
    if unpushed:
        out.append(Check(
            "private in the clear", False,
            "committed unencrypted, not pushed yet (the next push gives them away): "
            + _shown([f"{c.path} ({c.commit})" for c in unpushed]),
            "`memory private init` encrypts HEAD's; rewrite the older commits before "
            "pushing (git rebase -i, git filter-repo)", warning=True))
    if pushed:
        out.append(Check(
            "private in the clear", False,
            "unencrypted at HEAD and already on a remote: "
            + _shown([c.path for c in pushed]),
            "`memory private init` encrypts them from now on; their old versions stay "
            "readable in the remote's history", warning=True))
    return out


def health_checks(repo: MemoryRepo) -> list[Check]:
    """Private paths that a push would carry in the clear, and a locked clone."""
    root = repo.root
    try:
        patterns = repo.config["private"]["paths"]
    except MemrepoError:
        return []  # an invalid config is its own failed check
    if not patterns:
        return []
    try:
        st = status(root)
    except GitError:
        return []  # not a repository: the hooks check says so
    out: list[Check] = []
    if st.git_crypt is None:
        out.append(Check("git-crypt", False, f"private.paths is set but {INSTALL}",
                         warning=True))
    if st.uncovered or not st.filter:
        what = (f"no filter=git-crypt attribute (or a text/eol one that would rewrite the "
                f"ciphertext) for {_shown(st.uncovered)}" if st.uncovered
                else "git-crypt's filter is not defined in this clone")
        out.append(Check("private paths", False, f"{what}: `git add` stores them in the "
                         "clear, and the commit hook refuses them",
                         "memory private unlock KEYFILE" if st.locked and not st.key
                         else "memory private init", warning=True))
    if st.locked:
        out.append(Check("private files locked", False,
                         f"{len(st.locked)} private file(s) are git-crypt ciphertext in the "
                         f"work tree (no key here): {_shown(st.locked)}; memrepo skips them",
                         "memory private unlock KEYFILE", warning=True))
    out += _clear_checks(st.clear)
    if not out:
        out.append(Check("private paths", True, f"{len(st.files)} file(s) encrypted by "
                         f"git-crypt in every remote: {', '.join(patterns)}"))
    return out

