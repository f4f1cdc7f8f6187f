"""Stage working-tree paths onto HEAD by writing only the trees they touch.

Why: ``git add`` and ``git write-tree`` each read and rewrite the whole index, which grows
with the repo (bench/perf/bench_capture.py times a commit of 20 notes in a 100K-file
repo). A batch commit of 20 notes touches a handful
of directories, so their trees are read (one ``git cat-file --batch``), changed here, and
written back (one ``git hash-object -w -t tree --stdin-paths``, which checks each one);
the blobs come from ``git hash-object -w --stdin-paths``, which applies the same
attributes and filters ``git add`` does. A tree stays raw bytes per entry, so changing a
directory of many thousand entries costs a splice, not parsing and re-sorting objects. The
index is then set for exactly these paths with one ``git update-index --index-info``,
so it matches the commit and nothing else anyone staged is touched or committed (what
``git commit -- PATHS`` promises, without its temporary index of the whole repo).

Anything this module does not handle the way ``git add`` would makes :func:`prepare`
return None, and the caller takes the ``git add`` route (which may refuse, as git does):
a name that is not a plain repo path (``..``, ``.git``, ``//``, a leading quote, a CR, a
name that is not UTF-8), a symlink or a symlinked directory on the way, a submodule or
directory in the way, an ignored new file, a deletion of a sparse or skip-worktree entry,
``core.autocrlf`` or ``core.sparseCheckout`` set, an unborn branch, a SHA-256 repository.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memrepo import git, worktree

ZERO = "0" * 40
TREE_MODE = "40000"
_TREE = TREE_MODE.encode() + b" "
_SUBMODULE = b"160000 "
#: one entry of a tree object: mode, name, 20-byte id
_ENTRY = re.compile(rb"([0-7]+) ([^\0]*)\0(.{20})", re.S)

#: name -> raw entry (b"mode name\0<20-byte id>"), in the tree's order
Entries = dict[bytes, bytes]
#: (size, mtime ns, inode, mode) of a file, as lstat says
FileState = tuple[int, int, int, int]


@dataclass
class Prepared:
    """New trees written for ``paths``; HEAD, the index and the refs untouched so far."""

    parent: str
    base_tree: str
    tree: str
    #: what changed against HEAD, as :func:`memrepo.git.staged_blobs` rows (A/M/D)
    rows: list[git.StagedRow]
    #: per staged path, its ``--index-info`` line: exactly what the new tree holds
    index_lines: dict[str, str]
    #: per staged path, what lstat said before it was hashed (None: deleted)
    stats: dict[str, FileState | None]
    #: paths whose file changed while it was hashed: left out, for the next run
    moving: list[str] = field(default_factory=list)


class Unsupported(Exception):
    """A case for the ``git add`` route (see the module doc)."""


def prepare(root: Path, paths: Sequence[str]) -> Prepared | None:
    """Blobs and trees for ``paths`` as they are on disk (deleted when missing)."""
    try:
        return _prepare(Path(root), list(dict.fromkeys(paths)))
    except Unsupported:
        return None


def _prepare(root: Path, paths: list[str]) -> Prepared:
    parent = git.head(root)
    if parent is None or len(parent) != 40 or not paths:
        raise Unsupported("unborn branch, SHA-256, or nothing to do")
    if not all(git.plain_path(p) for p in paths):
        raise Unsupported("a name git add would normalise, refuse or read otherwise")
    cfg = _config(root)
    if _true(cfg.get("core.sparsecheckout")) or cfg.get("core.autocrlf", "false") != "false":
        raise Unsupported("sparse checkout or autocrlf: git add knows the rules")
    for p in paths:
        _no_symlink_on_the_way(root, p)
    before = {p: file_state(root / p, strict=True) for p in paths}
    present = [p for p in paths if before[p] is not None]
    shas = _hash(root, present)
    after = {p: file_state(root / p, strict=True) for p in paths}
    moving = [p for p in paths if before[p] != after[p]]
    new = {p: shas.get(p) for p in paths if p not in moving}  # None: deleted

    dirs = sorted({a for p in new for a in _ancestors(_parent(p))} | {""}, key=_depth)
    base_tree, trees = _read_trees(root, parent, dirs)
    changed: set[str] = set()
    grown: set[str] = set()  # new names: that tree must be sorted again
    # core.filemode=false: the file system cannot tell, so git keeps the index's mode
    exec_bits = _true(cfg.get("core.filemode", "true"))
    index_modes = {} if exec_bits else _index_modes(root, list(new))
    olds = {p: trees[_split(p)[0]].get(_name(_split(p)[1])) for p in new}
    _check_deletions(root, [p for p, sha in new.items() if sha is None and olds[p]])
    _check_ignored(root, [p for p, sha in new.items() if sha is not None and olds[p] is None])

    rows: list[git.StagedRow] = []
    lines: dict[str, str] = {}
    gone: dict[str, str] = {}  # deleted path -> its blob in HEAD, to pair exact renames
    for p, sha in new.items():
        d, name = _split(p)
        key = _name(name)
        old = olds[p]
        if old is not None and (old.startswith(_TREE) or old.startswith(_SUBMODULE)):
            raise Unsupported(f"{p}: a directory or submodule in HEAD")
        if sha is None:
            lines[p] = f"0 {ZERO}\t{p}"
            if old is not None:
                del trees[d][key]
                changed.add(d)
                gone[p] = old[-20:].hex()
            continue
        mode = index_modes.get(p) or _mode(before[p], old, exec_bits)
        lines[p] = f"{mode} {sha}\t{p}"
        entry = _entry(mode, key, sha)
        if entry != old:
            trees[d][key] = entry
            changed.add(d)
            if old is None:
                grown.add(d)
            rows.append(("M" if old is not None else "A", p, None, sha))
    rows = _pair_renames(rows, gone)

    tree, written = _new_trees(trees, dirs, changed, grown, base_tree)
    _write_trees(root, written)
    stats = {p: before[p] for p in lines}
    return Prepared(parent, base_tree, tree, rows, lines, stats, moving)


def _new_trees(trees: dict[str, Entries], dirs: list[str], changed: set[str],
               grown: set[str], base_tree: str) -> tuple[str, dict[str, bytes]]:
    """The changed directories' trees hashed again, children before their parents, each
    new id entered in its parent (an emptied directory leaves it); (the new root tree,
    the bodies of the trees to write by id). ``trees``, ``changed`` and ``grown`` are
    updated on the way up."""
    written: dict[str, bytes] = {}
    tree = base_tree
    for d in sorted(dirs, key=_depth, reverse=True):  # children before their parents
        if d not in changed:
            continue
        body = _tree_bytes(trees[d], d in grown)
        sha = hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()
        if d == "":
            tree = sha
            written[sha] = body
            break
        up, name = _split(d)
        key = _name(name)
        old = trees[up].get(key)
        if old is not None and not old.startswith(_TREE):
            raise Unsupported(f"{d}: a file in HEAD where a directory would go")
        if trees[d]:
            trees[up][key] = _entry(TREE_MODE, key, sha)
            written[sha] = body
            if old is None:
                grown.add(up)
        else:
            trees[up].pop(key, None)
        changed.add(up)
    return tree, written


def update_index(root: Path, prepared: Prepared, env: dict[str, str] | None = None) -> None:
    """Set the index entries of the prepared paths (others stay as they are).

    ``update-index --add --remove`` records each file's stat data, as ``git add`` does
    (``--index-info`` alone leaves it empty, and every later status would re-read the
    file); a file written again since it was hashed is then set to the committed blob
    by ``--index-info``, so the index never holds what the commit does not. With the
    untracked cache on, as ``memory commit``'s status asks for it: otherwise the
    rewritten index drops it and the next status walks every directory again. ``env``:
    ``GIT_INDEX_FILE`` when the caller holds index.lock (:mod:`memrepo.commit.person`).
    """
    if not prepared.index_lines:
        return
    cache = ["-c", "core.untrackedCache=true"]
    paths = list(prepared.index_lines)
    git.git([*cache, "update-index", "--add", "--remove", "-z", "--stdin"], root,
            input="".join(p + "\0" for p in paths), env=env)
    drifted = [p for p in paths if file_state(root / p) != prepared.stats[p]]
    if drifted:
        info = "".join(prepared.index_lines[p] + "\0" for p in drifted)
        git.git([*cache, "update-index", "-z", "--index-info"], root, input=info, env=env)


# -- helpers ---------------------------------------------------------------------------


def file_state(path: Path, strict: bool = False) -> FileState | None:
    """(size, mtime, inode, mode) of ``path`` not followed through a symlink, None when
    it is gone: two equal states mean nobody wrote the file in between. ``strict``: a
    symlink or other non-regular file is a case for ``git add`` (Unsupported)."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if strict and not stat.S_ISREG(st.st_mode):
        raise Unsupported(f"{path}: not a regular file")
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)


def _no_symlink_on_the_way(root: Path, path: str) -> None:
    """git add refuses a path "beyond a symbolic link"; so do we (the caller falls back)."""
    if worktree.link_on_the_way(root, path) is not None:
        raise Unsupported(f"{path}: beyond a symbolic link")


def _config(root: Path) -> dict[str, str]:
    """The few core settings that change what git add does, in one call."""
    out = git.git(["config", "-z", "--get-regexp", r"^core\.(filemode|sparsecheckout|autocrlf)$"],
                  root, check=False)
    cfg: dict[str, str] = {}
    for item in out.split("\0"):
        if item:
            key, _, value = item.partition("\n")
            cfg[key.lower()] = value.strip().lower() or "true"
    return cfg


def _true(value: str | None) -> bool:
    return value in ("true", "yes", "on", "1")


def _index_modes(root: Path, paths: list[str]) -> dict[str, str]:
    out = git.git(["ls-files", "-s", "-z", "--", *paths], root)
    modes = {}
    for item in out.split("\0"):
        if item:
            meta, _, path = item.partition("\t")
            modes[path] = meta.split()[0]
    return modes


def _check_deletions(root: Path, paths: list[str]) -> None:
    """A missing file is deleted, unless git keeps it off disk on purpose."""
    if not paths:
        return
    out = git.git(["ls-files", "-v", "-z", "--", *paths], root)
    for item in out.split("\0"):
        if item and (item[0] == "S" or item[0].islower()):
            raise Unsupported(f"{item[2:]}: skip-worktree or assume-unchanged")


def _check_ignored(root: Path, paths: list[str]) -> None:
    """git add refuses an ignored new file; so do we (the caller falls back to it)."""
    if not paths:
        return
    out = git.git(["check-ignore", "-z", "--stdin"], root, check=False,
                  input="".join(p + "\0" for p in paths))
    if out.strip("\0"):
        raise Unsupported("an ignored file")


def _pair_renames(rows: list[git.StagedRow], gone: dict[str, str]) -> list[git.StagedRow]:
    """A deleted file whose blob reappears under a new name is a rename (as ``-M``
    would find it at 100 %), so messages and validators see a move, not a loss."""
    by_sha: dict[str, list[str]] = {}
    for path, sha in gone.items():
        by_sha.setdefault(sha, []).append(path)
    out: list[git.StagedRow] = []
    for st, path, new, sha in rows:
        olds = by_sha.get(sha) if st == "A" else None
        if olds:
            out.append(("R", olds.pop(0), path, sha))
        else:
            out.append((st, path, new, sha))
    out += [("D", p, None, ZERO) for ps in by_sha.values() for p in ps]
    return out


def _hash(root: Path, paths: list[str]) -> dict[str, str]:
    if not paths:
        return {}
    out = git.git(["hash-object", "-w", "--stdin-paths"], root, input="\n".join(paths) + "\n")
    shas = out.split()
    if len(shas) != len(paths):
        raise Unsupported("hash-object answered another number of objects")
    return dict(zip(paths, shas, strict=True))


def _mode(st: FileState | None, old: bytes | None, exec_bits: bool) -> str:
    if not exec_bits:  # the file system cannot tell: keep what HEAD says
        return old.split(b" ", 1)[0].decode() if old is not None else "100644"
    assert st is not None
    return "100755" if st[3] & stat.S_IXUSR else "100644"  # git looks at the owner's bit


def _name(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


def _entry(mode: str, name: bytes, sha: str) -> bytes:
    return mode.encode() + b" " + name + b"\0" + bytes.fromhex(sha)


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _split(path: str) -> tuple[str, str]:
    head, _, name = path.rpartition("/")
    return head, name


def _depth(d: str) -> int:
    return -1 if d == "" else d.count("/")


def _ancestors(d: str) -> list[str]:
    out = [""]
    parts = d.split("/") if d else []
    for i in range(1, len(parts) + 1):
        out.append("/".join(parts[:i]))
    return out


def _read_trees(root: Path, commit: str, dirs: list[str]) -> tuple[str, dict[str, Entries]]:
    """(HEAD's root tree, each directory's entries in HEAD; {} for one HEAD lacks)."""
    revs = [f"{commit}^{{tree}}", *(f"{commit}:{d}" for d in dirs if d)]
    out = git.git_bytes(["cat-file", "--batch"], root, input="".join(r + "\n" for r in revs))
    trees: dict[str, Entries] = {}
    base = ""
    pos = 0
    for d, _rev in zip(["", *(d for d in dirs if d)], revs, strict=True):
        nl = out.index(b"\n", pos)
        line = out[pos:nl]
        pos = nl + 1
        if line.endswith(b" missing"):  # "<rev> missing": a directory the commit adds
            trees[d] = {}
            continue
        header = line.decode("utf-8", "replace").split()
        if len(header) != 3:  # "ambiguous" or anything else unexpected: git add decides
            raise Unsupported(f"{d}: cat-file answered {line[-40:]!r}")
        sha, kind, size = header[0], header[1], int(header[2])
        if kind != "tree":
            raise Unsupported(f"{d}: a {kind} in HEAD where a directory would go")
        trees[d] = _parse_tree(out[pos : pos + size])
        pos += size + 1
        if d == "":
            base = sha
    return base, trees


def _parse_tree(data: bytes) -> Entries:
    entries: Entries = {}
    size = 0
    for m in _ENTRY.finditer(data):
        entries[m[2]] = m[0]
        size += len(m[0])
    if size != len(data):  # the entries must tile the object, or it was misread
        raise Unsupported("a tree this parser cannot read")
    return entries


def _sort_key(item: tuple[bytes, bytes]) -> bytes:
    name, entry = item
    return name + b"/" if entry.startswith(_TREE) else name  # git's order: "dir/"


def _tree_bytes(entries: Entries, resort: bool) -> bytes:
    """The tree object's body; entries keep HEAD's order unless names were added."""
    values = [e for _n, e in sorted(entries.items(), key=_sort_key)] if resort else entries.values()
    return b"".join(values)


def _write_trees(root: Path, written: dict[str, bytes]) -> None:
    """Write the trees with one ``git hash-object -w -t tree``, which checks each one;
    git's ids must be the ones computed here, or nothing is committed."""
    if not written:
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="memrepo-trees-") as tmp:
        files = []
        for i, body in enumerate(written.values()):
            f = Path(tmp) / f"{i}.tree"
            f.write_bytes(body)
            files.append(str(f))
        out = git.git(["hash-object", "-w", "-t", "tree", "--stdin-paths"], root,
                      input="\n".join(files) + "\n")
    if out.split() != list(written):
        raise Unsupported("git computed other tree ids than memrepo")
