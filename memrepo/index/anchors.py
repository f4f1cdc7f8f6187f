"""Signals follow their entry: where a reinforced line is now, after edits and ``git mv``.

A reinforce or demote names ``path:LINE`` and, since signals are append-only, that number
is never rewritten. So each event also keeps the line's text (:data:`TEXT_CHARS` of it),
and every fold re-finds it: the same line if it still says that, else the nearest line
that does, else (an entry edited in place: ``memory update --replace``, a typo fixed) the
nearest line at least :data:`SIMILAR` alike; a file that is gone is followed through git's
rename detection, and into its ``.md.gz`` when ``memory prune`` compressed it. An entry
that cannot be found was deleted: its signal goes with it (kept at its old number, it
counted for whatever entry took that line). Events written before anchors (no text)
keep their number.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import os
from pathlib import Path

from memrepo import compression, worktree
from memrepo.errors import FormatError, GitError

#: How much of a line an event keeps: enough to tell entries apart, little to duplicate.
TEXT_CHARS = 200
#: difflib ratio from which an edited line is still the same entry.
SIMILAR = 0.6
#: Renames followed one after the other (a → b → c), at most.
MAX_HOPS = 16


def line_text(root: Path, rel: str, line: int) -> str | None:
    """The anchor of ``rel:line`` in the work tree: its text, stripped and cut."""
    lines = _read(root, rel)
    if lines is None or not 0 < line <= len(lines):
        return None
    return lines[line - 1] or None


def _read(root: Path, rel: str) -> list[str] | None:
    """A repo file's lines, stripped and cut to :data:`TEXT_CHARS` (None: not there, or
    not a regular file of the repo: :mod:`memrepo.worktree`); a compressed archive's are
    its text's (``raw/signals/`` is committed and append-only: neither gzip bytes nor a
    linked file's lines may land there)."""
    with contextlib.suppress(OSError, FormatError):
        data = worktree.read_plain(root, rel, compression.DEFAULT_LIMIT)
        text = io.StringIO(data.decode("utf-8", "replace"), newline=None)
        return [ln.strip()[:TEXT_CHARS] for ln in text]
    return None


class Relocator:
    """Finds anchored lines in the work tree; reads each file once."""

    def __init__(self, root: Path, since: str | None = None) -> None:
        self.root = Path(root)
        self.since = since  # the oldest event's date: renames before it cannot matter
        self._files: dict[str, list[str] | None] = {}
        self._renames: dict[str, str] | None = None

    def lines(self, rel: str) -> list[str] | None:
        if rel not in self._files:
            self._files[rel] = _read(self.root, rel)
        return self._files[rel]

    def locate(self, rel: str, line: int, text: str | None) -> tuple[str, int] | None:
        """Where the entry ``text`` once at ``rel:line`` is now; None when it is gone."""
        if not text or line <= 0:
            return rel, line
        here = rel
        lines = self.lines(rel)
        if lines is None:
            moved = self.renamed(rel)
            lines = self.lines(moved) if moved else None
            if lines is None:
                return rel, line
            here = moved
        if 0 < line <= len(lines) and lines[line - 1] == text:
            return here, line
        same = [i for i, ln in enumerate(lines, 1) if ln == text and not _struck(ln)]
        if same:
            return here, min(same, key=lambda n: (abs(n - line), n))
        near = _most_alike(lines, text, line)
        return (here, near) if near else None

    def renamed(self, rel: str) -> str | None:
        """The path ``rel`` was renamed to (following chains), if git saw it renamed."""
        if self._renames is None:
            self._renames = _renames(self.root, self.since)
        path, hops = rel, 0
        while path in self._renames and hops < MAX_HOPS:
            path, hops = self._renames[path], hops + 1
        # prune's gzip of an archive is no rename to git (the bytes differ): follow it here
        packed = compression.compressed_name(path)
        if compression.allowed(packed) and self.lines(path) is None and self.lines(packed):
            path = packed
        return path if path != rel else None


def _struck(line: str) -> bool:
    """A superseded entry (``- ~~old~~ … (superseded … by: new)``): its signals belong to
    the entry that replaced it, which ``memory update`` writes on the old line."""
    return line.startswith(("- ~~", "* ~~", "~~"))


def _most_alike(lines: list[str], text: str, line: int) -> int | None:
    """The line most like ``text`` (ties: the nearest to ``line``), if alike enough."""
    import difflib  # only when an anchored line moved: the commit hook rarely pays it

    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(text)
    best: tuple[float, int, int] | None = None
    for i, ln in enumerate(lines, 1):
        if not ln or _struck(ln):
            continue
        matcher.set_seq1(ln)
        if matcher.real_quick_ratio() < SIMILAR or matcher.quick_ratio() < SIMILAR:
            continue
        ratio = matcher.ratio()
        if ratio >= SIMILAR and (best is None or (ratio, -abs(i - line)) > best[:2]):
            best = (ratio, -abs(i - line), i)
    return best[2] if best else None


def _renames(root: Path, since: str | None) -> dict[str, str]:
    """old path -> new path for every rename git detects since ``since``, oldest first (so
    a file renamed twice chains a -> b -> c)."""
    from memrepo import git  # only when a signalled file is gone: search never pays it

    args = ["log", "--reverse", "-M", "--diff-filter=R", "--name-status", "--format=", "-z"]
    with contextlib.suppress(ValueError):  # an unreadable date: every rename
        # to git a bare date is that day at the current time of day, which missed a
        # rename made earlier that day: from the midnight before, in any time zone
        day = dt.date.fromisoformat((since or "")[:10]) - dt.timedelta(days=1)
        args.append(f"--since={day.isoformat()}T00:00:00Z")
    try:
        raw = git.git_bytes([*args, "HEAD"], root, check=False)
    except GitError:
        return {}
    fields = [os.fsdecode(f) for f in raw.split(b"\0") if f.strip()]
    found: dict[str, str] = {}
    i = 0
    while i < len(fields):  # -z: "R087", old, new; other statuses are filtered out
        if fields[i].strip().startswith("R") and i + 2 < len(fields):
            found[fields[i + 1]] = fields[i + 2]
            i += 3
        else:
            i += 1
    return found
