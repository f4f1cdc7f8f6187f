"""Links that follow a move: the rewrites that keep relative markdown links working when
``memory prune`` moves files into ``archive/`` (git mv).

A relative link in a moved file, or in another file to a moved one, would point nowhere
after the move. The rewrites are computed with the plan (``--dry-run`` lists them) and
written in the move's own commit, so no commit of the history holds a link the move broke.

Rewritten: inline links and images (a title kept), reference definitions (``[id]: a.md``),
the anchor (``#section``) kept, and only when the file a link names exists now and the
move changes where it lies from the link's file. Left alone: URLs and other schemes,
absolute paths, links in fenced or inline code, links already broken, wikilinks (found by
name wherever the file lies), ``raw/`` (transcripts never change) and files not tracked.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

from memrepo import worktree
from memrepo.errors import MemrepoError
from memrepo.git import git
from memrepo.index.links import compressed_form, destinations

#: Never rewritten: transcripts are evidence, kept as they were written.
UNTOUCHED = "raw/"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Relink:
    """One rewritten destination: in ``path`` (where the file is after the moves)."""

    path: str
    line: int
    old: str
    new: str

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "old": self.old, "new": self.new}


@dataclass
class Relinked:
    """New texts by path after the moves, the text each was made from, and the rewrites."""

    texts: dict[str, str] = field(default_factory=dict)
    base: dict[str, str] = field(default_factory=dict)
    links: list[Relink] = field(default_factory=list)


def new_destination(written: str, src: str, dst: str, moves: Mapping[str, str],
                    exists: Callable[[str], bool]) -> str | None:
    """``written`` (a destination in the file ``src``, which will be at ``dst``) rewritten
    to name the same file after ``moves``; None when it needs no rewrite or is no relative
    link to an existing file."""
    angled = written.startswith("<") and written.endswith(">")
    inner = written[1:-1] if angled else written
    target, sep, anchor = inner.partition("#")
    if not target or target.startswith("/") or _SCHEME.match(target):
        return None
    plain = unquote(target)
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(src), plain))
    if resolved == ".." or resolved.startswith("../") or not exists(resolved):
        return None  # outside the repo, or broken already: not this move's to mend
    to = moves.get(resolved, resolved)
    there = posixpath.dirname(dst)
    if posixpath.normpath(posixpath.join(there, plain)) == to:
        return None
    rel = posixpath.relpath(to, there or ".")
    if plain.endswith("/") and not rel.endswith("/"):
        rel += "/"
    if target != plain:  # percent-encoded as written: encoded again
        rel = quote(rel, safe="/")
    new = rel + sep + anchor
    return f"<{new}>" if angled or any(c.isspace() for c in new) else new


def rewrite(src: str, dst: str, text: str, moves: Mapping[str, str],
            exists: Callable[[str], bool]) -> tuple[str, list[Relink]]:
    """``text`` (the file ``src``, to be at ``dst``) with its destinations rewritten."""
    done: list[Relink] = []
    parts: list[str] = []
    at = 0
    for d in destinations(text):
        new = new_destination(d.written, src, dst, moves, exists)
        if new is None:
            continue
        parts += [text[at:d.start], new]
        at = d.end
        done.append(Relink(dst, d.line, d.written, new))
    return "".join(parts) + text[at:], done


def _linking(root: Path, names: Iterable[str]) -> list[str]:
    """The tracked markdown files outside ``raw/`` whose text holds one of ``names``: the
    only files a link to a moved file can be written in (one ``git grep``)."""
    args = ["grep", "-l", "-z", "-I", "-F", "--no-color"]
    for name in sorted(set(names)):
        args += ["-e", name]
    out = git([*args, "--", "*.md", f":(exclude){UNTOUCHED}"], root, check=False)
    return [p for p in out.split("\0") if p]


def relink(root: Path, moves: Iterable[tuple[str, str]],
           planned: Mapping[str, str] | None = None) -> Relinked:
    """The rewrites ``moves`` need: in each moved file (its text at its new path) and in
    every file that links to one. ``planned``: texts another part of the plan writes, which
    the rewrite starts from. A move whose source is gone or whose destination is taken is
    left out (``git mv -k`` skips it, so its links must stay as they are)."""
    planned = planned or {}
    live = {a: b for a, b in moves if (root / a).exists() and not (root / b).exists()}
    out = Relinked()
    if not live:
        return out

    def exists(rel: str) -> bool:
        packed = compressed_form(rel)
        return (root / rel).exists() or (packed is not None and (root / packed).exists())

    names = {n for a in live for n in (posixpath.basename(a), quote(posixpath.basename(a)))}
    for src in sorted({*live, *_linking(root, names)}):
        if src.startswith(UNTOUCHED):
            continue
        try:
            disk = worktree.read_text(root, src)
        except (OSError, MemrepoError):
            continue  # a link or not UTF-8: never rewritten through
        text = planned.get(src, disk)
        if text is None or disk is None:
            continue
        dst = live.get(src, src)
        new, done = rewrite(src, dst, text, live, exists)
        if done:
            out.texts[dst], out.base[dst] = new, disk
            out.links += done
    return out
