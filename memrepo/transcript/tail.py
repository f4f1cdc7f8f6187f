"""One write per turn into an open transcript, and the torn turn a killed write leaves.

Appends are one ``O_APPEND`` write under the session lock, so several processes writing
one session never interleave (the frontmatter is written once at start and rewritten only
at end, atomically). A write killed half way (SIGKILL, OOM) can still leave part of a
turn, perhaps half a UTF-8 character: each write first records where it starts and how
long it is (``<id>.tail``), and the next append, ``end`` or ``doctor --fix`` cuts such a
torn turn off (:func:`repair_tail`); the turns acknowledged before it stay. Limits are
checked here, when a turn is written, never at ``end``: a transcript that grew past
``validation.max_file_kb`` could never be committed, so ``end`` could never finish.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from memrepo.atomic import NOFOLLOW
from memrepo.errors import MemrepoError
from memrepo.transcript.session import OpenSession, _is_closed, _tail_file
from memrepo.worktree import check_write, writing

#: Room kept below ``validation.max_file_kb`` for what ``end`` adds to the frontmatter
#: (end time, counts, knowledge changes); at most a quarter of the limit.
END_MARGIN = 16 * 1024
#: The tail record (see :func:`repair_tail`): fixed width, written with one ``pwrite``.
_TAIL_BYTES = 64


def write_turn(root: Path, session: OpenSession, chunk: str) -> None:
    """Append ``chunk`` (whole turns or lines) to the open transcript, with the session
    lock held: a torn tail left by a killed writer is cut off first, the transcript must
    be open and stay under its size limit, and the bytes go in one ``O_APPEND`` write,
    after a record of where they start and how long they are."""
    data = chunk.encode("utf-8")
    room = _session_max_bytes(root, session)
    if len(data) > room // 2 and _TURNS.subn("", chunk, count=2)[1] <= 1:
        # one turn that no transcript could hold: its head and tail (several turns are
        # refused as they are: the caller writes them one by one)
        data = cut_middle(chunk, room // 4).encode("utf-8")
    path = root / session.path
    with writing(root):  # never while a sync's rebase moves the work tree
        repair_tail(root, session)
        _check_open(root, session)
        check_write(root, path)  # raw/ swapped for a link since the start: not through it
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | NOFOLLOW)
        try:
            st = os.fstat(fd)
            _check_size(root, session, st.st_size, len(data))
            _note_tail(root, session.session_id, st.st_ino, st.st_size, len(data))
            while data:  # one write; a second only after a short write (a full disk)
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)


#: A turn header line inside a chunk (memrepo.layout.TURN_HEADER, unanchored per line).
_TURNS = re.compile(r"^## \d\d:\d\d — ", re.MULTILINE)


def cut_middle(text: str, most: int) -> str:
    """``text`` within ``most`` bytes: its head and tail, and a line saying how much of the
    middle went (a 2 MB pasted log must not cost the session every later turn). The text
    is redacted already, so a cut cannot expose a secret."""
    keep = max(most // 4 - 64, 16)  # characters: at most 4 bytes each in UTF-8
    head, tail = keep * 3 // 4, keep - keep * 3 // 4
    header = _TURNS.search(text)
    if header is not None:  # the turn's header line stays whole
        head = max(head, header.end() + 1)
    return (f"{text[:head]}\n[… {len(text) - head - tail:,} characters cut by memrepo]\n"
            f"{text[len(text) - tail:]}")


def _note_tail(root: Path, sid: str, ino: int, start: int, length: int) -> None:
    """Record, before writing, the bytes a write is about to add (one small pwrite)."""
    record = f"{ino} {start} {length}".ljust(_TAIL_BYTES - 1).encode("ascii") + b"\n"
    fd = os.open(_tail_file(root, sid), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, record, 0)
    finally:
        os.close(fd)


def _read_tail(root: Path, sid: str) -> tuple[int, int, int] | None:
    try:
        with _tail_file(root, sid).open("rb") as fh:
            parts = fh.read(_TAIL_BYTES).split()
        ino, start, length = (int(x) for x in parts[:3])
    except (OSError, ValueError):
        return None
    return ino, start, length


def torn_tail(root: Path, session: OpenSession) -> tuple[int, str] | None:
    """(the size to cut the open transcript back to, why) when its last write was cut
    short by a kill, else None.

    The tail record says where the last write started and how long it was: a file that
    ends inside that range holds part of a turn nobody was told was written. Without a
    record for this file (an older memrepo wrote it), a UTF-8 character cut at the very
    end still shows, and the file is cut back to its last complete turn.
    """
    path = root / session.path
    try:
        st = path.stat()
    except OSError:
        return None
    rec = _read_tail(root, session.session_id)
    if rec is not None and rec[0] == st.st_ino:
        _, start, length = rec
        if start < st.st_size < start + length:
            return start, (f"its last write stopped after {st.st_size - start} of "
                           f"{length} bytes")
        return None
    with path.open("rb") as fh:
        fh.seek(max(0, st.st_size - 4))
        if not _ends_mid_character(fh.read()):
            return None
        fh.seek(0)
        data = fh.read()
    heads = list(_TURN_BYTES.finditer(data))
    if not heads:
        return None
    return heads[-1].start(), "it ends inside a UTF-8 character"


#: Where a turn begins (a content line that looks like a header is escaped, and a header
#: cut short still begins so).
_TURN_BYTES = re.compile(rb"\n## [0-9]")


def _ends_mid_character(tail: bytes) -> bool:
    """Whether ``tail`` (a file's last bytes) stops inside a multibyte UTF-8 character."""
    for i in range(1, len(tail) + 1):
        b = tail[-i]
        if b & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead byte
        need = 1 if b < 0x80 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4
        return i < need
    return bool(tail)  # only continuation bytes: not UTF-8


def repair_tail(root: Path, session: OpenSession) -> str | None:
    """Cut a torn last turn off the open transcript (see :func:`torn_tail`); what was
    done, or None when the tail was whole. The caller holds the session lock."""
    torn = torn_tail(root, session)
    if torn is None:
        return None
    size, why = torn
    full = root / session.path
    cut = full.stat().st_size - size
    os.truncate(full, size)
    return f"{session.path}: cut a torn last turn ({cut} bytes; {why})"


def _check_open(root: Path, session: OpenSession) -> None:
    """Refuse to write to a transcript an ``end`` closed (or began to close)."""
    sid = session.session_id
    if session.phase != "open" or _is_closed(root / session.path):
        raise MemrepoError(
            f"session {sid}: its transcript {session.closing_path or session.path} is closed "
            f"(an 'end' did not finish), so nothing was written: run 'memory capture end "
            f"--session {sid}' to finish closing it, then start a new session"
        )


def _check_size(root: Path, session: OpenSession, size: int, adding: int) -> None:
    limit = _session_max_bytes(root, session)
    if size + adding <= limit:
        return
    sid = session.session_id
    kb = f"{(size + adding) / 1024:,.0f} KB"
    room = f"{limit / 1024:,.0f} KB (validation.max_file_kb less room for 'end')"
    if adding > limit // 2:
        raise TranscriptFull(
            f"session {sid}: a turn of {adding / 1024:,.0f} KB is too large for a transcript "
            f"(at most {room}); nothing was written: store it with 'memory capture attach'",
            session.path)
    raise TranscriptFull(
        f"session {sid}: the transcript would grow to {kb}, above {room}; nothing was "
        f"written: end it ('memory capture end --session {sid}') and go on in a new session",
        session.path)


def _max_bytes(max_file_kb: float) -> int:
    """How large an open transcript may grow: the commit limit less room for ``end``."""
    limit = int(max_file_kb * 1024)
    return limit - min(END_MARGIN, limit // 4)


def _session_max_bytes(root: Path, session: OpenSession) -> int:
    if session.max_bytes is not None:
        return session.max_bytes
    from memrepo.config import load_config  # a state file from before max_bytes was kept

    return _max_bytes(float(load_config(root)["validation"]["max_file_kb"]))


class TranscriptFull(MemrepoError):
    """A turn would take the open transcript past ``validation.max_file_kb``."""
