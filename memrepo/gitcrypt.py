"""git-crypt's side of a memory repo: telling its ciphertext, reading it through the key,
and the paths ``private.paths`` names (docs/private.md).

A file git-crypt encrypts is plaintext in a keyed clone's work tree and ciphertext in
git's object database: ``git add`` runs its clean filter, checkout its smudge filter.
Whatever memrepo reads from git by sha or by ``REV:PATH`` (the index, the validators,
``memory log --at``, the merge driver) is therefore ciphertext, and goes through
:func:`reveal` / :class:`Revealer`: the smudge filters this clone's git config defines
(``git-crypt unlock`` and ``git-crypt init`` write them; a clone without the key has
none). What still starts with :data:`HEADER` afterwards cannot be read here, and each
reader says so instead of reading binary noise.

Standard library only: the hooks, the indexer and the work-tree reader import it at the
top. The feature itself (``memory private``, the doctor's checks) is
:mod:`memrepo.private`.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

#: What every file git-crypt encrypted starts with (then a 12-byte nonce, then the data).
HEADER = b"\0GITCRYPT\0"
#: Why a file cannot be read here: a clone without the key (or a server).
LOCKED = "encrypted with git-crypt and this clone has no key (git-crypt unlock KEYFILE)"
#: The attributes memrepo writes for a private path: git-crypt's filter and diff, and
#: ``-text``: a ``text``/``eol`` attribute (``*.md text eol=lf``) would run its CRLF
#: conversion on the ciphertext the clean filter returns, and corrupt it.
ATTRIBUTES = "filter=git-crypt diff=git-crypt -text"

K = TypeVar("K")


def is_ciphertext(data: bytes | None) -> bool:
    """Whether ``data`` is a file as git-crypt stores it (encrypted)."""
    return data is not None and data.startswith(HEADER)


def _git_config(root: Path, pattern: str) -> list[tuple[str, str]]:
    """(key, value) of this repo's git config entries whose key matches ``pattern``."""
    try:
        proc = subprocess.run(["git", "config", "-z", "--get-regexp", pattern], cwd=root,
                              capture_output=True)
    except OSError:
        return []
    out = []
    for entry in proc.stdout.decode("utf-8", "replace").split("\0"):
        key, _, value = entry.partition("\n")
        if key and value:
            out.append((key, value))
    return out


def _run_filter(root: Path, command: str, data: bytes) -> bytes | None:
    """``data`` through a filter command as git runs it (a shell line, at the repo root)."""
    try:
        proc = subprocess.run(command, shell=True, cwd=root, input=data, capture_output=True)
    except OSError:
        return None
    return proc.stdout if proc.returncode == 0 else None


class Revealer:
    """Decrypts git-crypt blobs with this clone's smudge filters (``filter.git-crypt*``):
    the config is read once, at the first ciphertext; a blob no key opens stays as it is."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._smudge: list[str] | None = None

    @property
    def smudge(self) -> list[str]:
        if self._smudge is None:
            self._smudge = [v for _k, v in _git_config(
                self.root, r"^filter\.git-crypt(-[^.]+)?\.smudge$")]
        return self._smudge

    def reveal(self, data: bytes) -> bytes:
        """The plaintext of ``data``, or ``data`` itself when it is not ciphertext or no
        key of this clone opens it (a key whose MAC does not match fails: the next one is
        tried)."""
        if not is_ciphertext(data):
            return data
        for command in self.smudge:
            out = _run_filter(self.root, command, data)
            if out is not None and not is_ciphertext(out):
                return out
        return data

    def reveal_all(self, blobs: Mapping[K, bytes | None]) -> dict[K, bytes | None]:
        """``blobs`` with each ciphertext revealed (when a key opens it)."""
        return {k: (self.reveal(v) if is_ciphertext(v) else v) for k, v in blobs.items()}


def reveal(root: str | Path, data: bytes) -> bytes:
    """:meth:`Revealer.reveal` for one blob."""
    return Revealer(root).reveal(data) if is_ciphertext(data) else data


def reveal_all(root: str | Path, blobs: Mapping[K, bytes | None]) -> dict[K, bytes | None]:
    """:meth:`Revealer.reveal_all`; no git call when nothing is ciphertext."""
    if not any(is_ciphertext(v) for v in blobs.values()):
        return dict(blobs)
    return Revealer(root).reveal_all(blobs)


def filter_of(root: str | Path, path: str) -> str:
    """The ``filter`` attribute git gives ``path`` (``unspecified`` when none)."""
    proc = subprocess.run(["git", "check-attr", "-z", "filter", "--", path], cwd=root,
                          capture_output=True)
    fields = proc.stdout.decode("utf-8", "replace").split("\0")
    return fields[2] if proc.returncode == 0 and len(fields) >= 3 else "unspecified"


def seal(root: str | Path, path: str, data: bytes) -> bytes | None:
    """``data`` encrypted as git would store ``path`` (its git-crypt clean filter), or
    None when ``path`` has no git-crypt filter or this clone cannot encrypt."""
    name = filter_of(root, path)
    if not (name == "git-crypt" or name.startswith("git-crypt-")):
        return None
    clean = [v for _k, v in _git_config(Path(root), rf"^filter\.{re.escape(name)}\.clean$")]
    out = _run_filter(Path(root), clean[0], data) if clean else None
    return out if is_ciphertext(out) else None


# ---------------------------------------------------------------------------
# private.paths: gitattributes patterns
# ---------------------------------------------------------------------------


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """The paths a ``.gitattributes`` pattern matches (git's wildmatch): with a ``/`` it
    is anchored at the root, without one it matches a name at any depth; ``*`` and ``?``
    stay inside one folder, ``**/`` spans folders, a trailing ``/**`` is everything
    inside."""
    anchored = "/" in pattern
    p = pattern[1:] if pattern.startswith("/") else pattern
    out: list[str] = []
    i = 0
    while i < len(p):
        if p.startswith("**/", i) and (i == 0 or p[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif p.startswith("/**", i) and i + 3 == len(p):
            out.append("/.*")
            i += 3
        elif p[i] == "*":
            while i < len(p) and p[i] == "*":
                i += 1
            out.append("[^/]*")
        elif p[i] == "?":
            out.append("[^/]")
            i += 1
        elif p[i] == "[" and "]" in p[i + 2:]:
            end = p.index("]", i + 2)
            body = p[i + 1:end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif p[i] == "\\" and i + 1 < len(p):
            out.append(re.escape(p[i + 1]))
            i += 2
        else:
            out.append(re.escape(p[i]))
            i += 1
    body = "".join(out)
    return re.compile(body if anchored else "(?:.*/)?" + body)


class Matcher:
    """Whether a repo path is one of ``private.paths``."""

    def __init__(self, patterns: Iterable[str]):
        self.patterns = list(patterns)
        self._regexes = [pattern_regex(p) for p in self.patterns]

    def __call__(self, path: str) -> bool:
        return any(r.fullmatch(path) for r in self._regexes)

    def __bool__(self) -> bool:
        return bool(self._regexes)


#: Files that must stay readable without the key: git reads the attributes and ignores,
#: every hook (a server's too) reads the config, and the transcripts are evidence the
#: server-side hook checks by content (append-only), which it cannot do on ciphertext.
MUST_STAY_CLEAR = {
    ".gitattributes": "git reads it to know what to decrypt",
    ".gitignore": "git reads it before any filter",
    ".pre-commit-config.yaml": "the hooks read it",
    "memory-config.yaml": "every hook, a server's too, reads it",
    "raw/conversations/2026/01/01/0000-session-topic.md": "transcripts are evidence the "
    "server-side hook checks by content (append-only), which it cannot do on ciphertext",
    "raw/signals/events.jsonl": "raw/ is append-only evidence checked by content",
}


def patterns_problem(value: Sequence[object]) -> tuple[str, tuple[str, ...]] | None:
    """Why a ``private.paths`` list is wrong (the config's check), or None."""
    for pattern in value:
        text = str(pattern)
        why = None
        if not text.strip() or text != text.strip() or any(c.isspace() for c in text):
            why = "must be a pattern without spaces"
        elif text.startswith("!"):
            why = "cannot be negative: .gitattributes has no '!' patterns"
        elif text.endswith("/"):
            why = (f"names a folder, which attributes never reach inside: write "
                   f"'{text}**'")
        elif text.startswith("../") or "/../" in text or text in ("..", "."):
            why = "must stay inside the repo"
        else:
            match = pattern_regex(text)
            hit = next((f for f in MUST_STAY_CLEAR if match.fullmatch(f)), None)
            if hit is not None:
                what = hit.split("/")[0] + "/" if "/" in hit else hit
                why = f"would encrypt {what}: {MUST_STAY_CLEAR[hit]}"
        if why:
            return (f"entry {text!r} {why}", ())
    return None


# ---------------------------------------------------------------------------
# .gitattributes: memrepo's block
# ---------------------------------------------------------------------------

BEGIN = ("# >>> memrepo private: git-crypt encrypts these (private.paths in "
         "memory-config.yaml; `memory private init` rewrites this block)")
END = "# <<< memrepo private"


def attribute_lines(patterns: Iterable[str]) -> list[str]:
    """memrepo's block for ``patterns`` (nothing when there are none)."""
    lines = [f"{p} {ATTRIBUTES}" for p in dict.fromkeys(patterns)]
    return [BEGIN, *lines, END] if lines else []


def merge_attributes(existing: str, patterns: Iterable[str]) -> str:
    """``existing`` .gitattributes with memrepo's block set to ``patterns``: every other
    line kept as it is, the block replaced where it stands (appended the first time, last:
    a later line wins, so nothing above can turn the filter off), removed when empty."""
    lines = existing.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    block = attribute_lines(patterns)
    if BEGIN in lines:
        start = lines.index(BEGIN)
        end = lines.index(END, start) if END in lines[start:] else len(lines) - 1
        lines[start:end + 1] = block
    elif block:
        if lines and lines[-1].strip():
            lines.append("")
        lines += block
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""
