"""Reading a file an agent hook's payload names: a regular file only, a bounded part at
a time, from an offset.

A hook payload names the agent's session log (``transcript_path``) and the detached
worker reads it, so the path may name anything: a FIFO (opening it waits for a writer,
reading it for data: one worker stuck for good per hook call), ``/dev/zero`` or
``/dev/urandom`` (they never end), a socket, a folder, a symlink to any file of the
user's, or a log far larger than a session writes. The file is opened with O_NONBLOCK
(a FIFO opens at once rather than waiting) and O_NOFOLLOW (a link is refused, never read
through; the folders on the way are the user's to place, as in :mod:`memrepo.worktree`),
then what was opened is checked with fstat: anything but a regular file is refused, as
is one larger than the caller accepts, with a :class:`LogRefused` worded for the agents
log. Reads are ``pread`` from an offset and return whole lines: a log is followed from
where the last read stopped, and a line longer than the caller accepts is passed over in
bounded reads rather than held whole in memory. (:func:`memrepo.worktree.read_path` makes
the same checks but reads a whole file.)
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from memrepo.errors import MemrepoError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
          | getattr(os, "O_CLOEXEC", 0))
#: What a path that is not a regular file is, in the words of the refusal.
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symlink"))
#: The least a read grows by while it looks for the end of a long line.
_STEP = 1 << 20


class LogRefused(MemrepoError):
    """A path memrepo does not read as a log: not a regular file, a symlink, too large."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


@dataclass
class Lines:
    """What one :meth:`LogFile.lines` read gave."""

    data: bytes  # whole lines, each ending in a newline (perhaps none)
    start: int  # the offset ``data`` starts at
    end: int  # where the next read starts
    read: int  # bytes read from the log
    dropped: int  # bytes of a line longer than the read accepts, passed over
    inside: bool  # the read stopped inside such a line: the next one passes over its rest
    eof: bool  # the read reached the end of the log


class LogFile:
    """A log opened for reading (a context manager); ``size`` and ``mtime`` are the
    file's as it was opened."""

    def __init__(self, fd: int, name: str, st: os.stat_result) -> None:
        self.fd, self.name = fd, name
        self.size, self.mtime = st.st_size, st.st_mtime

    def __enter__(self) -> LogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def read(self, offset: int, count: int) -> bytes:
        """Up to ``count`` bytes from ``offset`` (fewer only at the end of the file)."""
        parts: list[bytes] = []
        while count > 0:
            got = os.pread(self.fd, min(count, 1 << 30), offset)
            if not got:
                break
            parts.append(got)
            offset += len(got)
            count -= len(got)
        return b"".join(parts)

    def lines(self, offset: int, limit: int, *, inside: bool = False,
              longest: int | None = None) -> Lines:
        """The whole lines in at most ``limit`` bytes from ``offset`` (a last line not
        ended yet is left for the next read). A line that does not end within ``limit``
        is read on up to ``longest`` bytes (default ``limit``); one longer still is
        passed over, as is, with ``inside``, the rest of one passed over before."""
        longest = max(limit, longest or limit)
        raw = self.read(offset, limit)
        eof = len(raw) < limit
        skip = 0
        if inside:
            nl = raw.find(b"\n")
            if nl < 0:
                return Lines(b"", offset, offset + len(raw), len(raw), len(raw), True, eof)
            skip = nl + 1
        while not eof and skip == 0 and b"\n" not in raw and len(raw) < longest:
            want = min(max(len(raw), _STEP) * 3, longest - len(raw))
            more = self.read(offset + len(raw), want)
            eof = len(more) < want
            raw += more
        last = raw.rfind(b"\n", skip)
        if last >= 0:
            return Lines(raw[skip:last + 1], offset + skip, offset + last + 1, len(raw), skip,
                         False, eof)
        if skip == 0 and not eof and len(raw) >= longest:  # one line longer than accepted
            return Lines(b"", offset, offset + len(raw), len(raw), len(raw), True, False)
        return Lines(b"", offset + skip, offset + skip, len(raw), skip, False, eof)

    def ends_line(self, offset: int) -> bool:
        """Whether ``offset`` starts a line (the byte before it is a newline)."""
        return offset <= 0 or self.read(offset - 1, 1) == b"\n"

    def whole(self) -> bytes:
        """The file's bytes, as many as it held when it was opened."""
        return self.read(0, self.size)


def open_log(path: str | Path, *, largest: int | None = None,
             links: bool = False) -> LogFile:
    """``path`` opened for reading if it is a regular file of at most ``largest`` bytes,
    not a symlink (unless ``links``: a path a person gives on the command line);
    FileNotFoundError when there is nothing there, else :class:`LogRefused` saying why
    it is not read."""
    name = os.fspath(path)
    flags = _FLAGS | (0 if links else NOFOLLOW)
    if not links and not NOFOLLOW and os.path.islink(name):
        raise LogRefused("a symlink, never read through", name)
    try:
        fd = os.open(name, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise LogRefused(_why_not(name, exc, links), name) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LogRefused(f"{_kind(st.st_mode)}, not a regular file: never read", name)
        if largest is not None and st.st_size > largest:
            raise LogRefused(f"{st.st_size} bytes, more than the {largest} read from one "
                             "log: refused, not read", name)
    except BaseException:
        os.close(fd)
        raise
    return LogFile(fd, name, st)


def _why_not(name: str, exc: OSError, links: bool) -> str:
    """Why ``name`` could not be opened: what it is when that is the reason (a symlink
    met by O_NOFOLLOW, a socket), else the system's words."""
    try:
        st = os.stat(name) if links else os.lstat(name)
    except OSError:
        st = None
    if (st is not None and stat.S_ISLNK(st.st_mode)) or exc.errno in (errno.ELOOP,
                                                                       errno.EMLINK):
        return "a symlink, never read through"
    if st is not None and not stat.S_ISREG(st.st_mode):
        return f"{_kind(st.st_mode)}, not a regular file: never read"
    return f"cannot read: {exc.strerror or exc}"


def read_whole(path: str | Path, *, largest: int | None = None, links: bool = False) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_log`)."""
    with open_log(path, largest=largest, links=links) as f:
        return f.whole()


#: How much of a log :func:`log_cwd` reads for its first record naming a folder.
CWD_HEAD = 1 << 16


def log_cwd(path: str | Path) -> str | None:
    """The folder the agent worked in, as the first records of a Claude Code log say
    (``cwd``); None when they do not say or the log is not read."""
    try:
        with open_log(path) as f:
            data = f.read(0, CWD_HEAD)
    except (OSError, LogRefused):
        return None
    lines = data.split(b"\n")
    for line in lines[:-1] if len(data) == CWD_HEAD else lines:
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict) and isinstance(rec.get("cwd"), str):
            return rec["cwd"]
    return None
