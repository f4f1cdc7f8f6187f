"""A ``Plan``: the new file texts, ``git mv`` moves and compressions a maintenance job
would make.

Condense and prune compute a plan first, so ``--dry-run`` can print it as a diff, and a
real run writes it atomically and commits it as one ``maintenance: …`` commit.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from memrepo import worktree
from memrepo.atomic import atomic_write
from memrepo.commit.write import commit_staged
from memrepo.compression import compress
from memrepo.documents import with_line_count
from memrepo.errors import MemrepoError
from memrepo.git import git, head, retry_locked
from memrepo.lifecycle.extract.apply import merge_written
from memrepo.lifecycle.journal import LOCK_FILE, LOCK_WAIT
from memrepo.locks import LockBusy, file_lock


@dataclass
class Plan:
    """New texts by path, ``git mv`` moves, and notes for the person running it."""

    #: a file both moved and rewritten is under its new path (written after the move)
    texts: dict[str, str] = field(default_factory=dict)
    moves: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: ``path:line: reason`` of inputs that could not be read (skipped; exit non-zero)
    errors: list[str] = field(default_factory=list)
    #: the text each file had when the plan was made from it: a file written by someone
    #: else since (``memory remember``) keeps those lines when the plan is applied
    base: dict[str, str] = field(default_factory=dict)
    #: committed files to replace by their gzip (``archive/x.md`` -> ``archive/x.md.gz``)
    compress: list[tuple[str, str]] = field(default_factory=list)

    def merge(self, other: Plan) -> None:
        """Take ``other``'s texts and bases too (a job made of several plans)."""
        self.texts.update(other.texts)
        self.base.update({p: t for p, t in other.base.items() if p not in self.base})

    def changed(self, root: Path) -> dict[str, str]:
        out = {}
        for p, t in self.texts.items():
            full = root / p
            if not full.exists() or full.read_text(encoding="utf-8") != t:
                out[p] = t
        return out

    def empty(self, root: Path) -> bool:
        return not self.changed(root) and not self.moves and not self.compress

    def diff(self, root: Path) -> str:
        """The moves, then each new text against what is there now: a file the plan both
        moves and rewrites against its source (what changes, not the whole file)."""
        parts = [f"move {a} -> {b}" for a, b in self.moves]
        parts += [f"compress {a} -> {b} (gzip -9)" for a, b in self.compress]
        source = {b: a for a, b in self.moves}
        for p, t in sorted(self.changed(root).items()):
            was = p if (root / p).exists() else source.get(p, p)
            full = root / was
            old = full.read_text(encoding="utf-8").splitlines(True) if full.exists() else []
            parts.append("".join(difflib.unified_diff(old, t.splitlines(True),
                                                      f"a/{was}", f"b/{p}")).rstrip("\n"))
        return "\n".join(parts)

    def _write(self, root: Path) -> list[str]:
        """Write the changed texts under the journal writers' lock, merging in what another
        writer added to a file since the plan read it (one rule with extraction's
        ``Workspace.write``: :func:`~memrepo.lifecycle.extract.apply.merge_written`)."""
        written = []
        try:
            with (file_lock(root / LOCK_FILE, wait=LOCK_WAIT, poll=0.005),
                  worktree.writing(root)):  # no sync's rebase between read and write
                for p, text in self.changed(root).items():
                    full = root / p
                    disk = worktree.read_text(root, p)
                    base = self.base.get(p)
                    if disk is not None and base is not None and disk not in (base, text):
                        # MEMORY.md states its size: count again after the merge
                        text = with_line_count(merge_written(base, disk, text, p), add=False)
                    atomic_write(full, text, root=root)
                    written.append(p)
        except LockBusy:
            raise MemrepoError(f"another writer has held {LOCK_FILE} for {LOCK_WAIT:g} s; "
                               "nothing was written, try again") from None
        return written

    @staticmethod
    def _compress(root: Path, src: str, dst: str) -> list[str]:
        """Stage ``src`` replaced by its gzip ``dst``. ``git rm`` (without -f) refuses a
        file whose content is not HEAD's, so only committed text is ever compressed; the
        gzip is written from the bytes read just before. git cannot see this as a rename
        (the bytes differ), so the commit body names the pair."""
        data = worktree.read_file(root, src)  # never through a link
        retry_locked(lambda: git(["rm", "-q", "--", src], root))
        atomic_write(root / dst, compress(data), root=root)
        retry_locked(lambda: git(["add", "--", dst], root))
        return [src, dst]

    def apply(self, root: Path, message: str, commit: bool = True) -> str | None:
        """Write, move (git mv) and commit; returns the commit, or None when nothing changed."""
        paths: list[str] = []
        for src, dst in self.moves:
            (root / dst).parent.mkdir(parents=True, exist_ok=True)
            retry_locked(lambda s=src, d=dst: git(["mv", "-k", s, d], root))
            paths += [src, dst]
        for src, dst in self.compress:
            paths += self._compress(root, src, dst)
        written = self._write(root)
        paths += written
        if not paths or not commit:
            return None
        if written:
            retry_locked(lambda: git(["add", "-A", "--", *written], root))
        body = "\n".join(f"- {n}" for n in self.notes)
        commit_staged(root, paths, message + ("\n\n" + body if body else "") + "\n")
        return head(root)
