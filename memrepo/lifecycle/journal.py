"""A day's journal, ``knowledge/journal/YYYY-MM-DD.md``: how a new day starts, and adding
dated bullets to it.

Every writer starts a missing day from ``templates/knowledge/journal.md``: ``memory
remember`` here, extraction, condense and flush through their workspace
(:func:`memrepo.lifecycle.extract.apply.new_file`). :func:`add_bullets` reads, appends and
writes under one lock, atomically, because agents remember side by side: without the
lock, two read-modify-writes of the same day keep only the later one, and a note that
was acknowledged is gone (issue #14: 163 of 400 concurrent ``remember`` calls).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from memrepo import clock, namespaces, scaffold
from memrepo.atomic import atomic_write
from memrepo.config import load_config
from memrepo.documents import parse_document, read_document, render_document
from memrepo.errors import MemrepoError
from memrepo.layout import STATE_DIR, journal_path
from memrepo.locks import file_lock
from memrepo.secrets import find_secrets
from memrepo.worktree import writing

#: One lock for every journal: a write takes milliseconds, and one file per day would be
#: left behind in .memrepo/ for good.
LOCK_FILE = f"{STATE_DIR}/journal.lock"
#: How long a writer waits for another one before giving up (LockBusy).
LOCK_WAIT = 30.0


def journal_text(day: dt.date) -> str:
    """A new day's journal: its frontmatter and the ``## YYYY-MM-DD`` heading."""
    return scaffold.render_template("journal.md", day)


def add_bullets(root: Path, day: dt.date, bullets: Sequence[str],
                tags: Sequence[str] = ()) -> int:
    """Append ``bullets`` (whole ``- …`` lines) to the end of ``day``'s journal, created from
    the template when missing, and add ``tags`` to its frontmatter; the file line of the
    last bullet.

    A journal written by hand without frontmatter gets the fields the validator needs.
    """
    with file_lock(root / LOCK_FILE, wait=LOCK_WAIT, poll=0.002), writing(root):
        return append_bullets(root, day, bullets, tags)  # read and written: no sync between


def append_bullets(root: Path, day: dt.date, bullets: Sequence[str],
                   tags: Sequence[str] = ()) -> int:
    """:func:`add_bullets` for a caller that holds :data:`LOCK_FILE` already (the lock is
    not re-entrant): ``memory update``'s remember reads, writes and commits under it."""
    rel = journal_path(day)
    full = root / rel
    doc = read_document(full, rel) if full.exists() else parse_document(journal_text(day), rel)
    meta, body = {"type": "journal", "date": day, **doc.meta}, doc.body
    if tags:
        old = meta.get("tags") or []
        old = old if isinstance(old, list) else [str(old)]
        meta["tags"] = [*old, *(t for t in tags if t not in old)]
    body = body.rstrip("\n") + "\n" + "".join(b + "\n" for b in bullets)
    if not body.startswith("\n"):
        body = "\n" + body
    content = render_document(meta, body)
    atomic_write(full, content, root=root)
    return content.rstrip("\n").count("\n") + 1


def remember(root: Path, text: str, tags: Sequence[str] = (),
             now: dt.datetime | None = None) -> tuple[str, int]:
    """``text`` as a ``- HH:MM …`` bullet in today's journal, ``#tags`` after it and in the
    frontmatter, `` [ns: NAME]`` last in a namespace (memrepo.namespaces); (the journal's
    path, the bullet's line)."""
    said = " ".join(text.split())
    if not said:
        raise MemrepoError("nothing to remember: TEXT is empty")
    refuse_secrets(root, said)
    tag_list = [t.strip().lstrip("#") for t in tags if t.strip().lstrip("#")]
    now = now or clock.now()
    suffix = ("  " + " ".join(f"#{t}" for t in tag_list)) if tag_list else ""
    bullet = namespaces.mark(f"- {now:%H:%M} {said}{suffix}", namespaces.current())
    line = add_bullets(root, now.date(), [bullet], tag_list)
    return journal_path(now.date()), line


def refuse_secrets(root: Path, text: str) -> None:
    """Refuse a credential before it is written (the commit would refuse it anyway, and a
    refused commit must not leave it on disk)."""
    allow = load_config(root)["validation"]["secrets_allowlist"]
    found = find_secrets(text, allow)
    if found:
        raise MemrepoError(
            f"the text holds what looks like a {found[0].kind}: leave credentials out of memory"
        )
