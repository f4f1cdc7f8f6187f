"""An agent's own committed edits of memory: change one knowledge entry by REF (replace it,
or supersede it as extraction does), or add a note to today's journal or a knowledge file.

Seed 001 ``memory_update``: a fact that changed is never silently overwritten. SUPERSEDE
keeps the old line, struck through with ``(superseded YYYY-MM-DD by: …)`` (the marker
extraction writes, :data:`memrepo.layout.SUPERSEDED_LINE`); REPLACE rewrites the line in
place (a typo, a wording).

Why the new entry takes the old entry's line: usage signals (reinforce, demote) are
keyed by (path, line) in an append-only log (:mod:`memrepo.index.signals`), so the
entry keeps its reinforcement by keeping its line; the struck-through old line goes to
the end of its section, where extraction would have put the new one (so no other entry
of the section moves either).

Every write here is checked before anything touches the disk (REF, path, text, secrets),
committed through :func:`memrepo.commit.write.commit_paths` (the validators and the
index update run in-process), and undone when the commit is refused: a caller that gets
an error has nothing written.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memrepo import clock, compression, namespaces
from memrepo import entries as E
from memrepo.atomic import atomic_write
from memrepo.commit import write
from memrepo.documents import decode, parse_document, with_line_count
from memrepo.errors import FormatError, MemrepoError
from memrepo.git import git
from memrepo.index.paths import is_markdown
from memrepo.layout import JOURNAL_PATH, category_of, journal_path, shared_mount
from memrepo.lifecycle import journal
from memrepo.locks import LockBusy, file_lock
from memrepo.worktree import writing

log = logging.getLogger(__name__)

MODES = ("supersede", "replace")
#: ``path``, ``path:12`` or ``path:12-30`` (what search prints).
_SPAN = re.compile(r"^(?P<path>.+?)(?::(?P<a>\d{1,9})(?:-(?P<b>\d{1,9}))?)?$", re.DOTALL)
#: A journal bullet's ``HH:MM`` (``memory remember``): kept when its entry changes.
_TIME = re.compile(r"^(?P<time>[0-2]\d:[0-5]\d) (?P<text>.+)$")
_UPDATED = re.compile(r"^updated:[ \t]*\S.*$")


@dataclass
class Written:
    """What a write did: the entry's file and line, the commit, and for an update the old
    entry's text and where its struck-through line went."""

    path: str
    line: int
    commit: str | None
    old: str | None = None
    old_line: int | None = None

    @property
    def ref(self) -> str:
        return f"{self.path}:{self.line}"


# ---------------------------------------------------------------------------
# REFs and paths
# ---------------------------------------------------------------------------


def parse_span(ref: str) -> tuple[str, int | None, int | None]:
    """(path, first line, last line) of ``path`` / ``path:12`` / ``path:12-30``."""
    ref = ref.strip()
    m = _SPAN.match(ref)
    if not ref or not m:
        raise MemrepoError("empty ref: name a file like knowledge/reference/x.md, or path:LINE")
    a = int(m["a"]) if m["a"] else None
    b = int(m["b"]) if m["b"] else a
    if a is not None and (a < 1 or (b is not None and b < a)):
        raise MemrepoError(f"{ref}: lines are numbered from 1, and a span reads A-B with A <= B")
    return m["path"], a, b


def memory_path(root: Path, given: str, *, knowledge: bool = False) -> str:
    """``given`` as a checked repo path of an existing memory file (Markdown under
    knowledge/, topics/, raw/conversations/ or archive/, where a compressed
    ``archive/**.md.gz`` is read too; only knowledge/ when ``knowledge``): never outside
    the repo, through a symlink out of it, or into .git."""
    text = given.strip()
    if not text or "\0" in text:
        raise MemrepoError("empty path: name a file like knowledge/reference/x.md")
    root = Path(root)
    p = PurePosixPath(text.replace("\\", "/"))
    if p.is_absolute():
        rel = _inside(root, Path(os.path.normpath(text)))
        if rel is None:
            raise MemrepoError(f"{given}: outside the memory repo; use a path relative to it")
        p = PurePosixPath(rel)
    if ".." in p.parts:
        raise MemrepoError(f"{given}: '..' is not allowed; use a path inside the memory repo")
    rel = p.as_posix().removeprefix("./")
    if any(part.startswith(".") for part in p.parts if part != "."):
        raise MemrepoError(f"{given}: .git and hidden files are not memory")
    if knowledge and compression.allowed(rel):
        raise MemrepoError(
            f"{given}: a compressed archive (memory prune gzipped it); archives are not "
            "edited in place: write the fact to a knowledge file instead"
        )
    if not (is_markdown(rel) or compression.allowed(rel)) or category_of(rel) in (None, "raw"):
        raise MemrepoError(
            f"{given}: not a memory file (Markdown under knowledge/, topics/, "
            "raw/conversations/ or archive/)"
        )
    if knowledge and shared_mount(rel):
        raise MemrepoError(f"{given}: shared knowledge mounted from {shared_mount(rel)!r} "
                           "(memory shared), read-only here: change it in that repo, then "
                           f"`memory shared pull {shared_mount(rel)}`")
    if knowledge and not rel.startswith("knowledge/"):
        raise MemrepoError(f"{given}: only files under knowledge/ can be written")
    full = root / rel
    try:
        real = full.resolve(strict=True)
    except (OSError, RuntimeError):
        raise MemrepoError(f"{rel}: no such file in the memory repo") from None
    if _inside(root.resolve(), real) is None:
        raise MemrepoError(f"{rel}: a symlink that leads out of the memory repo")
    if not real.is_file():
        raise MemrepoError(f"{rel}: not a file")
    if knowledge and full.is_symlink():
        raise MemrepoError(f"{rel}: a symlink; write to the file it points to")
    return rel


def _inside(root: Path, target: Path) -> str | None:
    try:
        rel = target.relative_to(root).as_posix()
    except ValueError:
        return None
    return None if rel == "." else rel


# ---------------------------------------------------------------------------
# The writes
# ---------------------------------------------------------------------------


def update_entry(
    root: Path, ref: str, text: str, mode: str = "supersede", today: dt.date | None = None
) -> Written:
    """Replace or supersede the knowledge entry (a ``- `` bullet) at ``ref``, committed.

    ``ref`` is ``path:LINE``, or a span holding exactly one current entry (a search hit).
    The new entry keeps the old one's line (and so its signals), its date form (dated
    entries get today's date) and a journal bullet's ``HH:MM``; REPLACE keeps its
    ``[src: …]`` too (the same fact, reworded), SUPERSEDE starts a new fact without one.
    """
    if mode not in MODES:
        raise MemrepoError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    said = _one_line(text, "the new text")
    given, a, b = parse_span(ref)
    if a is None:
        raise MemrepoError(
            f"{ref}: name the entry's line, like {given}:12 (memory_read shows line numbers)"
        )
    root = Path(root)
    rel = memory_path(root, given, knowledge=True)
    journal.refuse_secrets(root, said)
    day = (today or clock.today()).isoformat()
    with _lock(root):
        with writing(root):  # read and written with no sync's rebase between
            before, after, i, old, old_line = _reword(root, rel, said, mode, day, a, b)
        verb = "supersede" if mode == "supersede" else "reword"
        message = (f"memory: {verb} an entry of {_label(rel)}\n\n"
                   f"- {rel}:{i + 1} was: {old.text}\n- now: {said}\n")
        sha = _commit_or_restore(root, rel, before, after.encode("utf-8"), message)
    return Written(rel, i + 1, sha, old.text, old_line)


def _reword(root: Path, rel: str, said: str, mode: str, day: str, a: int, b: int | None
            ) -> tuple[bytes, str, int, E.Entry, int | None]:
    """:func:`update`'s change of ``rel``, written: (before, after, line index, the old
    entry, the struck line's number)."""
    before = (root / rel).read_bytes()
    lines, body_start = _lines(before, rel)
    old = _pick_entry(rel, lines, body_start, a, b or a)
    i = old.line_no
    owner = _line_owner(root, rel, lines[i], i)
    time = _TIME.match(old.text) if old.date is None else None
    body = f"{time['time']} {said}" if time else said
    srcs = old.srcs if mode == "replace" else ()
    if body == namespaces.MARK.sub("", old.text):
        raise MemrepoError(f"{rel}:{i + 1} already says that")
    lines[i] = namespaces.mark(E.Entry(0, body, day if old.date else None, srcs).render(), owner)
    old_line = None
    if mode == "supersede":
        span = _section_of(lines, body_start, i)
        struck = E.superseded_line(old, day, said)
        E.insert_entry(lines, span, struck)
        old_line = 1 + max(n for n in range(i + 1, min(span[1] + 1, len(lines)))
                           if lines[n] == struck)
    _touch_updated(lines, body_start, day)
    after = with_line_count("\n".join(lines), add=False)  # MEMORY.md states its size
    atomic_write(root / rel, after, root=root)
    return before, after, i, old, old_line


def _line_owner(root: Path, rel: str, line: str, i: int) -> str | None:
    """The namespace a journal line belongs to (its marker's, or its one source's; None:
    shared), which its new wording is marked with, since a superseding line drops the
    ``[src:]`` that made it the namespace's; MemrepoError when it is another namespace's
    than the writer's, which the writer cannot even read (docs/namespaces.md)."""
    view = namespaces.View(root, namespaces.current())
    if view.filters_lines(rel) and view.hides_line(line):
        raise MemrepoError(f"{rel}:{i + 1} is another namespace's line, not {view.ns}'s")
    if JOURNAL_PATH.match(rel.removesuffix(".gz")) is None:
        return None  # only a journal's lines are one agent's
    owners = view.owners(line)
    if view.ns in owners:
        return view.ns
    return next(iter(owners)) if len(owners) == 1 else None


def remember(
    root: Path, text: str, file: str | None = None, now: dt.datetime | None = None
) -> Written:
    """``text`` as a bullet in today's journal (``file`` None or today's journal) or at
    the end of the knowledge file ``file`` (``- YYYY-MM-DD: text``), committed."""
    root = Path(root)
    said = _one_line(text, "the note")
    now = now or clock.now()
    today = journal_path(now.date())
    rel = None
    if file is not None and file.strip():
        rel = _knowledge_target(root, file, today)
    journal.refuse_secrets(root, said)
    if rel is None or rel == today:
        # before, the write, after, and the undo of a refused commit all under the lock:
        # a note another writer adds in between is neither in ``before`` nor undone
        with _lock(root):
            full = root / today
            with writing(root):  # read and written with no sync's rebase between
                before = full.read_bytes() if full.exists() else None
                bullet = namespaces.mark(f"- {now:%H:%M} {said}", namespaces.current())
                line = journal.append_bullets(root, now.date(), [bullet])
            sha = _commit_or_restore(root, today, before, full.read_bytes(),
                                     f"memory: remember in {_label(today)}\n\n- {said}\n")
        return Written(today, line, sha)
    with _lock(root):
        with writing(root):  # read and written with no sync's rebase between
            before, after, end, add = _append_entry(root, rel, said, now)
        sha = _commit_or_restore(root, rel, before, after.encode("utf-8"),
                                 f"memory: remember in {_label(rel)}\n\n- {said}\n")
    return Written(rel, end + len(add), sha)


def _append_entry(root: Path, rel: str, said: str, now: dt.datetime
                  ) -> tuple[bytes, str, int, list[str]]:
    """:func:`remember`'s note at the end of ``rel``, written: (before, after, the end
    line index, the lines added)."""
    before = (root / rel).read_bytes()
    lines, body_start = _lines(before, rel)
    end = len(lines)
    while end > body_start and not lines[end - 1].strip():
        end -= 1
    entry = E.Entry(0, said, now.date().isoformat()).render()
    after_bullet = end > body_start and lines[end - 1].startswith(("- ", "* "))
    add = [entry] if after_bullet else ["", entry]
    lines[end:] = [*add, ""]
    _touch_updated(lines, body_start, now.date().isoformat())
    after = with_line_count("\n".join(lines), add=False)  # MEMORY.md states its size
    atomic_write(root / rel, after, root=root)
    return before, after, end, add


def _knowledge_target(root: Path, file: str, today: str) -> str:
    """The file a note goes to: an existing knowledge file, a journal only today's."""
    rel = file.strip().removeprefix("./")
    if rel == today:
        return today  # may not exist yet: remember starts it
    rel = memory_path(root, file, knowledge=True)
    if JOURNAL_PATH.match(rel) and rel != today:
        raise MemrepoError(
            f"{rel}: past journals are closed; leave file empty for today's journal ({today})"
        )
    return rel


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


#: The longest note or entry: one line a briefing can show beside the day's others.
MAX_NOTE_CHARS = 4000


def _one_line(text: str, what: str) -> str:
    """``text`` on one line; a NUL byte is refused here, in words, not by git ("a NUL
    byte in commit log message not allowed") after the write."""
    said = " ".join(str(text).split())
    if not said:
        raise MemrepoError(f"{what} is empty")
    if len(said) > MAX_NOTE_CHARS:
        raise MemrepoError(f"{what} is {len(said):,} characters: a note is one line of at "
                           f"most {MAX_NOTE_CHARS:,}; write longer text as a knowledge file")
    if "\0" in said:
        raise MemrepoError(f"{what} holds a NUL byte (character {said.index(chr(0)) + 1}): "
                           "memory keeps text; leave it out")
    return said


@contextlib.contextmanager
def _lock(root: Path) -> Iterator[None]:
    """The journal writers' lock: every committed knowledge write takes it, so a note and
    an update of the same file never read-modify-write over each other."""
    try:
        with file_lock(root / journal.LOCK_FILE, wait=journal.LOCK_WAIT, poll=0.005):
            yield
    except LockBusy:
        raise MemrepoError(
            f"another writer has held {journal.LOCK_FILE} for {journal.LOCK_WAIT:g} s; "
            "try again"
        ) from None


def _lines(data: bytes, rel: str) -> tuple[list[str], int]:
    """(the file's lines, index of the first body line): the frontmatter must parse."""
    try:
        text = decode(data, rel)
        doc = parse_document(text, rel)
    except FormatError as exc:
        raise MemrepoError(f"{exc} (fix the file before writing to it)") from None
    return text.split("\n"), doc.body_line - 1


def _pick_entry(rel: str, lines: list[str], body_start: int, a: int, b: int) -> E.Entry:
    """The one current entry on lines ``a``..``b`` (1-based), or an error that names them."""
    count = len(lines) - (1 if lines and lines[-1] == "" else 0)
    if a > count:
        raise MemrepoError(f"{rel} has {count} line(s), no line {a}")
    found = [e for i in range(max(a - 1, body_start), min(b, count))
             if (e := E.parse_entry(lines[i], i)) is not None]
    current = [e for e in found if not e.superseded]
    if len(current) == 1:
        return current[0]
    where = f"{rel}:{a}" if a == b else f"{rel}:{a}-{b}"
    if current:
        shown = "; ".join(f"{rel}:{e.line_no + 1} {_short(e.text)}" for e in current[:8])
        raise MemrepoError(f"{where} holds {len(current)} entries; name one: {shown}")
    if found:
        raise MemrepoError(f"{where} is already superseded; update the entry that replaced it")
    raise MemrepoError(
        f"{where} is not an entry (a '- ' bullet line){_entries_listing(rel, lines, body_start)}"
    )


def _entries_listing(rel: str, lines: list[str], body_start: int) -> str:
    nums = [str(i + 1) for i in range(body_start, len(lines))
            if (e := E.parse_entry(lines[i], i)) is not None and not e.superseded]
    if not nums:
        return f"; {rel} has no entries"
    more = f" … ({len(nums)} in all)" if len(nums) > 12 else ""
    return f"; entries of {rel} are on lines {', '.join(nums[:12])}{more}"


def _short(text: str, n: int = 60) -> str:
    return repr(text if len(text) <= n else text[: n - 1] + "…")


def _section_of(lines: list[str], body_start: int, i: int) -> tuple[int, int]:
    """(heading index, end index) of the section line ``i`` is in; before any heading,
    the span from the frontmatter's closing line to the first heading."""
    for h in range(i - 1, body_start - 1, -1):
        m = E.HEADING.match(lines[h])
        if m:
            level = len(m["hashes"])
            for j in range(i + 1, len(lines)):
                n = E.HEADING.match(lines[j])
                if n and len(n["hashes"]) <= level:
                    return h, j
            return h, len(lines)
    end = next((j for j in range(i + 1, len(lines)) if E.HEADING.match(lines[j])), len(lines))
    return body_start - 1, end


def _touch_updated(lines: list[str], body_start: int, day: str) -> None:
    """Set a frontmatter ``updated:`` to ``day`` in place (one line: no line moves)."""
    for k in range(1, max(body_start - 1, 1)):
        if _UPDATED.match(lines[k]):
            lines[k] = f"updated: {day}"
            return


def _label(rel: str) -> str:
    m = JOURNAL_PATH.match(rel)
    if m:
        return f"journal {m['date']}"
    return rel.removeprefix("knowledge/").removesuffix(".md")


def _commit_or_restore(
    root: Path, rel: str, before: bytes | None, after: bytes, message: str
) -> str | None:
    """Commit ``rel``; when the commit is refused, put the file (and its index entry) back
    as they were, unless someone else wrote it meanwhile (then it is left and logged)."""
    staged = git(["ls-files", "-s", "-z", "--", rel], root, check=False)
    try:
        return write.commit_paths(root, [rel], message)
    except BaseException:
        full = root / rel
        try:
            now = full.read_bytes() if full.exists() else None
            if now == after:
                if before is None:
                    full.unlink()
                else:
                    atomic_write(full, before, root=root)
            else:
                log.warning("%s changed while its commit failed; left as it is", rel)
            if git(["ls-files", "-s", "-z", "--", rel], root, check=False) != staged:
                _restage(root, rel, staged)
        except Exception as exc:  # the commit's own error is the one to report
            log.warning("could not undo the write to %s: %s", rel, exc)
        raise


def _restage(root: Path, rel: str, staged: str) -> None:
    """Put ``rel``'s index entry back to what ``git ls-files -s`` said before."""
    if not staged.strip("\0"):
        git(["rm", "-q", "--cached", "--ignore-unmatch", "--", rel], root)
        return
    mode_sha, _, _ = staged.partition("\t")
    mode, sha, _stage = mode_sha.split(" ")
    git(["update-index", "--cacheinfo", f"{mode},{sha},{rel}"], root)
