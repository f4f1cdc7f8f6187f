"""Memory tags (seed 000 §3.4): snapshots people and scripts can name and go back to.

``memory/daily/DATE`` and ``memory/weekly/YYYY-Www`` are made only when knowledge changed
since the previous tag of that kind; milestones, ``before/EVENT`` and ``extract/VERSION``
are made on request. All are annotated, with a summary of what changed.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from memrepo.errors import GitError, MemrepoError
from memrepo.git import git

SCOPE = ("knowledge/", "topics/")


def tag_name(kind: str, value: str | dt.date) -> str:
    if kind == "daily":
        return f"memory/daily/{value}"
    if kind == "weekly":
        d = value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
        y, w, _ = d.isocalendar()
        return f"memory/weekly/{y}-W{w:02d}"
    if kind in ("milestone", "before", "extract"):
        name = str(value).strip()
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise MemrepoError(f"tag name {name!r}: use letters, digits, '.', '_' or '-'")
        return f"memory/{kind}/{name}"
    raise MemrepoError(f"unknown tag kind {kind!r}")


def previous(root: Path, kind: str) -> str | None:
    """The newest existing tag of ``kind`` (by tagger date)."""
    out = git(["tag", "--list", f"memory/{kind}/*", "--sort=-creatordate"], root).split()
    return out[0] if out else None


def summary(root: Path, since: str | None) -> str:
    rng = [f"{since}..HEAD"] if since else ["HEAD"]
    commits = git(["rev-list", "--count", *rng, "--", *SCOPE], root).strip()
    stat = git(["diff", "--shortstat", since, "HEAD", "--", *SCOPE], root).strip() if since \
        else "first snapshot"
    return f"{commits} commits touching knowledge/ and topics/; {stat or 'no diff'}"


def make(root: Path, kind: str, value: str | dt.date, force: bool = False) -> str | None:
    """Create the tag; None when a daily/weekly tag is skipped because nothing changed."""
    name = tag_name(kind, value)
    if git(["tag", "--list", name], root).strip() and not force:
        if kind in ("daily", "weekly"):
            return None
        raise MemrepoError(f"tag {name} already exists")
    prev = previous(root, kind) if kind in ("daily", "weekly") else None
    if prev:
        try:
            git(["diff", "--quiet", prev, "HEAD", "--", *SCOPE], root)
            return None  # nothing changed since the previous one
        except GitError:
            pass
    message = f"{name}\n\n{summary(root, prev)}\n"
    git(["tag", "-a", *(["-f"] if force else []), name, "-F", "-"], root, input=message)
    return name


def show_at(root: Path, tag: str, path: str) -> str:
    """What ``path`` said at ``tag`` (``git show TAG:PATH``)."""
    if not tag.startswith("memory/") and not git(["tag", "--list", tag], root).strip():
        tag = f"memory/{tag}"
    try:
        return git(["show", f"{tag}:{path}"], root)
    except GitError as exc:
        raise MemrepoError(f"{path} at {tag}: {exc}") from None
