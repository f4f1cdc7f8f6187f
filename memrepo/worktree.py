"""Reading a memory repo's files from its working tree, never through a symlink.

The index reads files from git and never through a symlink: a link may point anywhere
(``knowledge/x.md -> ~/.aws/credentials``, committed by whoever shares the repo, or made
in the working tree since). What shows a file's text to a person, to an agent's context
or to a model, or rewrites it, reads the working tree, and reads it here: search's
snippets, its scan when there is no index, the context compiler and topic loader, and the
writers (through :func:`read_text` and ``documents.read_document``). A symlink (the file
itself or a folder on its way), a FIFO (opening it would wait for a writer), a device or a
path that leaves the repo (absolute, ``..``) is not a file of the repo: OSError, as for a
missing file, so each reader does what it does for one; a writer stops (MemrepoError).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from memrepo import gitcrypt
from memrepo.errors import MemrepoError
from memrepo.layout import dot_git_dir
from memrepo.locks import LockBusy, file_lock

SYMLINK = "a symlink, never read through"
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer (and hang the
# search); it is then refused as not a regular file
_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
          | getattr(os, "O_BINARY", 0))


def read_file(root: str | Path, rel: str) -> bytes:
    """The bytes of the repo file ``rel`` (``/``-separated, relative to ``root``); OSError
    when it is missing, is not a regular file, is reached through a symlink, or is a hard
    link (more than one name: git never makes one in a work tree, and the other name may
    be a file outside the repo).

    Each component is opened relative to the folder opened before it, never following a
    link, and what was opened is checked (fstat): a link swapped in after a check of the
    path is never read through."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise OSError(errno.EINVAL, "not a path inside the repo", rel)
    if not _WALK:  # no dir_fd (Windows): the path checked, then opened
        folder = link_on_the_way(root, rel)
        if folder is not None:
            raise OSError(errno.ELOOP, f"{folder!r} on its way is a symlink, never read "
                          "through", rel)
        return read_path(os.path.join(os.fspath(root), *parts), rel)
    fd = _open_in(root, parts, rel)
    try:
        _check_opened(fd, rel, one_name=True)
        with os.fdopen(fd, "rb") as fh:
            fd = -1  # the file object closes it
            return _readable(fh.read(), rel)
    finally:
        if fd >= 0:
            os.close(fd)


def _readable(data: bytes, name: str) -> bytes:
    """``data``, unless it is a git-crypt file this clone has no key for (ciphertext in
    the work tree): OSError naming it, as for any file that cannot be read."""
    if gitcrypt.is_ciphertext(data):
        raise OSError(errno.EACCES, gitcrypt.LOCKED, name)
    return data


#: Opening relative to a folder's descriptor (POSIX): the walk :func:`read_file` takes.
_WALK = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")


def _open_in(root: str | Path, parts: list[str], rel: str) -> int:
    """A descriptor of ``parts`` under ``root``, each component opened with O_NOFOLLOW
    relative to the folder before it (the root itself is the user's to place)."""
    at = os.open(os.fspath(root), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for i, part in enumerate(parts):
            try:
                fd = os.open(part, _FLAGS, dir_fd=at)
            except OSError as exc:
                if exc.errno != errno.ELOOP:  # O_NOFOLLOW met a symlink
                    raise OSError(exc.errno, exc.strerror, rel) from None
                if i == len(parts) - 1:
                    raise OSError(errno.ELOOP, SYMLINK, rel) from None
                folder = "/".join(parts[: i + 1])
                raise OSError(errno.ELOOP, f"{folder!r} on its way is a symlink, never "
                              "read through", rel) from None
            os.close(at)
            at = fd
            if i < len(parts) - 1 and not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise OSError(errno.ENOTDIR, "Not a directory", rel)
        fd, at = at, -1
        return fd
    finally:
        if at >= 0:
            os.close(at)


def _check_opened(fd: int, name: str, one_name: bool = False) -> None:
    """Refuse the opened file unless it is a regular file (and, ``one_name``, has one
    name only: a hard link's other name may be outside the repo)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", name)
    if one_name and st.st_nlink > 1:
        raise OSError(errno.EPERM, f"a hard link ({st.st_nlink} names), never read: git "
                      "never makes one in a work tree, and another name may be outside "
                      "the repo", name)


def link_on_the_way(root: str | Path, rel: str) -> str | None:
    """The first folder on ``rel``'s way from ``root`` that is a symlink (``raw`` or
    ``raw/signals``), None when none is (a folder not there yet is none). The root itself
    is the user's to place."""
    parts = rel.split("/")[:-1]
    at = os.fspath(root)
    for i, part in enumerate(parts):
        at = os.path.join(at, part)
        try:
            if stat.S_ISLNK(os.lstat(at).st_mode):
                return "/".join(parts[: i + 1])
        except (FileNotFoundError, NotADirectoryError):
            return None  # nothing further exists
    return None


#: The work tree's write gate, in its git dir: every memrepo write to the work tree holds
#: it shared; ``memory sync`` holds it exclusive while a rebase moves the work tree. A file
#: written mid-rebase was lost to the rebase's abort, and a commit made on its detached
#: HEAD was left behind (bench/torture/fleet.py found both).
TREE_LOCK = "memrepo-tree.lock"
#: How long a write waits for a sync's rebase (seconds); past it the write fails, named.
TREE_LOCK_WAIT = 180.0
#: Set by ``memory sync`` for the git it runs: a merge driver or a hook started by that
#: rebase writes inside it (waiting for it would wait for itself).
TREE_HELD_ENV = "MEMREPO_TREE_HELD"


def tree_lock_path(root: str | Path) -> Path | None:
    """The write gate of ``root``'s work tree; None when ``.git`` does not say where the
    git dir is (no gate: git is asked nowhere on a write's path)."""
    gd = dot_git_dir(Path(root))
    return None if gd is None else gd / TREE_LOCK


@contextlib.contextmanager
def writing(root: str | Path, exclusive: bool = False, wait: float = TREE_LOCK_WAIT
            ) -> Iterator[None]:
    """Hold ``root``'s write gate: shared for a write, ``exclusive`` for a sync's rebase."""
    path = tree_lock_path(root)
    if path is None or not path.parent.is_dir() or (
            not exclusive and os.environ.get(TREE_HELD_ENV) == str(path)):
        yield
        return
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(file_lock(path, wait=wait, poll=0.02, shared=not exclusive))
        except LockBusy:
            raise MemrepoError(f"{path}: a memory sync has held the work tree for {wait:g} "
                               "s; nothing was written, try again") from None
        yield


def check_write(root: str | Path, path: str | Path) -> None:
    """Refuse to write ``path`` when it is outside ``root`` or a folder on its way is a
    symlink: a new file would land wherever the link points (a transcript, a prompt). A
    new file in a sparse checkout: :func:`memrepo.sparse.before_write`."""
    rel = os.path.relpath(os.fspath(path), os.fspath(root)).replace(os.sep, "/")
    if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        raise MemrepoError(f"{path}: outside the memory repo {root}")
    folder = link_on_the_way(root, rel)
    if folder is not None:
        raise MemrepoError(f"{rel}: {folder}/ is a symlink; memrepo never writes through one")
    if not os.path.lexists(path):
        from memrepo import sparse  # git only for a new file; agents' hooks read plain files

        sparse.before_write(root, path)


def read_path(full: str | Path, name: str | None = None) -> bytes:
    """The bytes of the regular file ``full``, not followed if it is a symlink (the
    folders on its way are the caller's: :func:`read_file` checks a repo file's); OSError
    names ``name`` (default ``full``) when it is missing, a symlink, a FIFO or a device."""
    name = name or os.fspath(full)
    if not hasattr(os, "O_NOFOLLOW") and os.path.islink(full):
        raise OSError(errno.ELOOP, SYMLINK, name)
    try:
        fd = os.open(full, _FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink
            raise OSError(errno.ELOOP, SYMLINK, name) from None
        raise
    try:
        _check_opened(fd, name)
        with os.fdopen(fd, "rb") as fh:
            fd = -1  # the file object closes it
            return _readable(fh.read(), name)
    finally:
        if fd >= 0:
            os.close(fd)


def read_text(root: str | Path, rel: str) -> str | None:
    """The text of the repo file ``rel``, None when there is none: what a writer reads
    before it rewrites a memory file, so a link is an error naming the file (its text
    would be copied into the repo and committed), as is text that is not UTF-8."""
    try:
        data = read_file(root, rel)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MemrepoError(f"{rel}: cannot read: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemrepoError(f"{rel}: not UTF-8 (byte {exc.start})") from None


def irregular(root: str | Path, tops: tuple[str, ...]) -> list[str]:
    """The symlinks (to files or folders) and special files (FIFOs, sockets, devices)
    among ``tops`` (top-level names of ``root``) and everything under them, links never
    followed: what memrepo neither reads nor writes through (``memory doctor``)."""
    out: list[str] = []
    stack: list[str] = []
    for top in tops:
        try:
            st = os.lstat(os.path.join(os.fspath(root), top))
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            stack.append(top)
        elif not stat.S_ISREG(st.st_mode):
            out.append(top)
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(os.path.join(os.fspath(root), rel_dir)) as entries:
                for e in entries:  # the kind comes with the entry: no stat a file
                    rel = f"{rel_dir}/{e.name}"
                    if e.is_dir(follow_symlinks=False):
                        stack.append(rel)
                    elif e.is_symlink() or not e.is_file(follow_symlinks=False):
                        out.append(rel)
        except OSError:
            continue
    return sorted(out)


def read_plain(root: str | Path, rel: str, limit: int | None = None) -> bytes:
    """:func:`read_file`, a compressed archive (``*.md.gz``) inflated, at most ``limit``
    bytes (default: the repo's ``validation.max_file_kb``). OSError and FormatError
    propagate."""
    from memrepo import compression  # not on the hook path, which imports this module

    data = read_file(root, rel)
    if not compression.is_gzip_name(rel):
        return data
    return compression.decompress(data, rel, compression.limit_for(root)
                                  if limit is None else limit)
