"""Memory tags (seed 000 §3.4): snapshots people and scripts can name and go back to.

``memory/daily/DATE`` and ``memory/weekly/YYYY-Www`` are made only when knowledge changed
since the previous tag of that kind; milestones, ``before/EVENT`` and ``extract/VERSION``
are made on request. All are annotated, with a summary of what changed.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from memrepo import clock, gitcrypt
from memrepo.errors import GitError, MemrepoError
from memrepo.git import git, git_bytes

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


def previous(root: Path, kind: str, before: str | None = None) -> str | None:
    """The newest tag of ``kind``, or the newest one named before ``before`` (daily and
    weekly names sort by date, so a tag made for a past date compares with its own past)."""
    names = sorted(git(["tag", "--list", f"memory/{kind}/*"], root).split())
    if before is not None:
        names = [n for n in names if n < before]
    return names[-1] if names else None


def target(root: Path, kind: str, value: str | dt.date) -> str:
    """The commit a tag names: HEAD, or for a daily / weekly tag of a past date the last
    commit made by the end of that day / ISO week (what the memory said then)."""
    head = git(["rev-parse", "HEAD"], root).strip()
    if kind not in ("daily", "weekly"):
        return head
    day = value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
    if kind == "weekly":
        day += dt.timedelta(days=6 - day.weekday())  # the week's Sunday
    if day >= clock.today():
        return head
    end = f"{day + dt.timedelta(days=1)} 00:00:00"
    found = git(["rev-list", "-1", f"--before={end}", "HEAD"], root).strip()
    if not found:
        raise MemrepoError(f"no commit on or before {day}: nothing to tag")
    return found


def summary(root: Path, since: str | None, commit: str = "HEAD") -> str:
    rng = [f"{since}..{commit}"] if since else [commit]
    commits = git(["rev-list", "--count", *rng, "--", *SCOPE], root).strip()
    stat = git(["diff", "--shortstat", since, commit, "--", *SCOPE], root).strip() if since \
        else "first snapshot"
    return f"{commits} commits touching knowledge/ and topics/; {stat or 'no diff'}"


def make(root: Path, kind: str, value: str | dt.date, force: bool = False,
         note: str | None = None) -> str | None:
    """Create the tag (``note``: a message of the person's own, above the summary); None
    when a daily/weekly tag is skipped because nothing changed."""
    name = tag_name(kind, value)
    if git(["tag", "--list", name], root).strip() and not force:
        if kind in ("daily", "weekly"):
            return None
        raise MemrepoError(f"tag {name} already exists")
    commit = target(root, kind, value)
    prev = previous(root, kind, before=name) if kind in ("daily", "weekly") else None
    if prev:
        try:
            git(["diff", "--quiet", prev, commit, "--", *SCOPE], root)
            return None  # nothing changed since the previous one
        except GitError:
            pass
    body = f"{note.strip()}\n\n" if note and note.strip() else ""
    message = f"{name}\n\n{body}{summary(root, prev, commit)}\n"
    git(["tag", "-a", *(["-f"] if force else []), name, commit, "-F", "-"], root, input=message)
    return name


def resolve_at(root: Path, at: str) -> str:
    """What ``memory log --at`` names: a tag (``memory/daily/2026-02-01`` or
    ``daily/2026-02-01``), or a date ``YYYY-MM-DD``: the last commit made by the end of
    that day. The daily tag on or before the date names it only when it is that commit:
    a tag is a shortcut, and a stale one (commits came after it, still before the date)
    would answer with what the memory said days earlier."""
    try:
        day = dt.date.fromisoformat(at.strip())
    except ValueError:
        day = None
    if day is not None:
        commit = target(root, "daily", day)
        name = tag_name("daily", day)
        tagged = name if git(["tag", "--list", name], root).strip() else previous(
            root, "daily", before=name)
        if tagged and git(["rev-parse", f"{tagged}^{{commit}}"], root).strip() == commit:
            return tagged
        return commit
    if not at.startswith("memory/") and not git(["tag", "--list", at], root).strip():
        return f"memory/{at}"
    return at


def show_at(root: Path, at: str, path: str) -> str:
    """What ``path`` said at ``at`` (``git show REV:PATH``; see :func:`resolve_at`)."""
    rev = resolve_at(root, at)
    try:
        data = git_bytes(["show", f"{rev}:{path}"], root)
    except GitError as exc:
        raise MemrepoError(f"{path} at {at}: {exc}") from None
    data = gitcrypt.reveal(root, data)  # a git-crypt blob through this clone's key
    if gitcrypt.is_ciphertext(data):
        raise MemrepoError(f"{path} at {at}: {gitcrypt.LOCKED}")
    return data.decode("utf-8", "replace")
