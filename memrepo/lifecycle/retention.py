"""``lifecycle.retention``: how long each kind of memory stays as it is (seed 003 §10).

Per directory of the memory repo (``journal``, ``knowledge``, ``knowledge/<kind>``,
``archive``), in ``memory-config.yaml``::

    lifecycle:
      retention:
        journal: {archive_after: 90, compress_after: 365}
        knowledge/people: {keep: true}
        archive: {compress_after: 730}

- ``archive_after`` (journals only; ``lifecycle.journal_retention_days`` is the same
  setting under its older name): days after a journal's date that ``memory prune`` moves
  it to ``archive/journal/``. Knowledge files are archived by score, not age.
- ``compress_after`` (default: never): days after which a file under ``archive/`` that
  came from that directory becomes ``NAME.md.gz`` (gzip -9, deterministic, see
  :mod:`memrepo.compression`), in prune's one commit. Age is the journal's date for a
  journal, else the file's last commit (for an archived file: the move into archive/).
  Still searched (``--include-archive``), still checked by every hook.
- ``keep: true``: prune never archives or compresses files of that directory.
- no ``delete_after``: memrepo never deletes a memory; the config refuses it.

A file is compressed by the prune *after* the one that archived it: the archive move
stays a rename git can follow, and the compression is its own step (git cannot see a
rename from text to gzip; the commit body names each ``old -> new`` instead).
Transcripts (``raw/``) are never archived or compressed: they are immutable evidence.
The live ``archive/memory/MEMORY-archive.md``, which the MEMORY.md cap appends to, is
never compressed either.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepo import compression
from memrepo.git import git
from memrepo.layout import JOURNAL_DIR, JOURNAL_PATH, MEMORY_ARCHIVE

ARCHIVE = "archive/"
#: What ``journal`` names in a policy.
ALIASES = {"journal": JOURNAL_DIR}


@dataclass(frozen=True)
class Policy:
    """The retention of one directory (None: not set, or never)."""

    archive_after: int | None = None
    compress_after: int | None = None
    keep: bool = False


def policies(cfg: Mapping[str, Any]) -> dict[str, Policy]:
    """The configured policies by directory (``journal`` spelled ``knowledge/journal``),
    the journals' ``archive_after`` filled in from ``journal_retention_days``."""
    life = cfg["lifecycle"]
    out: dict[str, Policy] = {}
    for folder, given in (life.get("retention") or {}).items():
        given = given or {}
        out[ALIASES.get(folder, folder)] = Policy(
            given.get("archive_after"), given.get("compress_after"), bool(given.get("keep")))
    journal = out.get(JOURNAL_DIR, Policy())
    if journal.archive_after is None:
        out[JOURNAL_DIR] = Policy(int(life["journal_retention_days"]), journal.compress_after,
                                  journal.keep)
    return out


def source_dir(path: str) -> str:
    """The knowledge directory a knowledge or archived file belongs to:
    ``archive/people/bob.md`` and ``knowledge/people/bob.md`` -> ``knowledge/people``
    (``archive/`` mirrors the source path, see :func:`memrepo.layout.expected_types`)."""
    rest = path
    if path.startswith(ARCHIVE):
        rest = path[len(ARCHIVE):]
        if not rest.startswith(("knowledge/", "raw/", "topics/")):
            rest = "knowledge/" + rest
    parts = rest.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def policy_for(path: str, pols: Mapping[str, Policy]) -> Policy:
    """The policy of ``path``, each setting from the most specific directory that gives
    it: ``knowledge/<kind>``, then ``knowledge``, then (archived files) ``archive``."""
    src = source_dir(path)
    chain = [src] + (["knowledge"] if src.startswith("knowledge/") else [])
    if path.startswith(ARCHIVE):
        chain.append("archive")
    found = [pols[k] for k in chain if k in pols]

    def first(attr: str) -> Any:
        return next((getattr(p, attr) for p in found if getattr(p, attr) is not None), None)

    keep = next((p.keep for p in found if p.keep), False)
    return Policy(first("archive_after"), first("compress_after"), keep)


def kept(path: str, pols: Mapping[str, Policy]) -> bool:
    """``keep: true`` for the directory of ``path``: never archived or compressed."""
    return policy_for(path, pols).keep


def journal_days(pols: Mapping[str, Policy]) -> int | None:
    """Days after which a journal is archived, None when journals are kept."""
    p = pols.get(JOURNAL_DIR, Policy())
    return None if p.keep else p.archive_after


def compresses(pols: Mapping[str, Policy]) -> bool:
    """Whether any policy compresses (none does by default: prune then asks git nothing)."""
    return any(p.compress_after is not None for p in pols.values())


@dataclass
class Compression:
    """Files to gzip (``archive/x.md`` -> ``archive/x.md.gz``) and why others wait."""

    moves: list[tuple[str, str]]
    notes: list[str]


def _tracked(root: Path) -> list[str]:
    out = git(["ls-files", "-z", "--", ARCHIVE], root)
    return [p for p in out.split("\0") if p]


def _dirty(root: Path) -> set[str]:
    out = git(["status", "--porcelain", "-z", "--untracked-files=all", "--", ARCHIVE], root)
    paths = set()
    entries = iter(out.split("\0"))
    for entry in entries:
        if len(entry) > 3:
            paths.add(entry[3:])
            if entry[0] in "RC":
                paths.add(next(entries, ""))  # the rename's source follows
    return paths


def age_date(path: str, changed: Mapping[str, dt.date], root: Path) -> dt.date:
    """What a file's age counts from: a journal's own date, else its last commit (the
    move into archive/ for an archived file), else its modification time."""
    m = JOURNAL_PATH.match(path)
    if m:
        try:
            return dt.date.fromisoformat(m["date"])
        except ValueError:
            pass
    when = changed.get(path)
    if when is not None:
        return when
    return dt.date.fromtimestamp(os.stat(root / path).st_mtime)


def compress_plan(root: Path, today: dt.date, cfg: Mapping[str, Any],
                  changed: Mapping[str, dt.date]) -> Compression:
    """The archived files past their ``compress_after`` (committed ones only: a file
    with uncommitted changes waits, so a compression never commits someone's edit)."""
    pols = policies(cfg)
    if not compresses(pols):
        return Compression([], [])
    tracked = _tracked(root)
    have = set(tracked)
    dirty = _dirty(root)
    moves: list[tuple[str, str]] = []
    notes: list[str] = []
    for rel in tracked:
        if not rel.endswith(".md") or rel == MEMORY_ARCHIVE or "/." in "/" + rel:
            continue
        pol = policy_for(rel, pols)
        if pol.keep or pol.compress_after is None:
            continue
        if not (root / rel).is_file() or (root / rel).is_symlink():
            continue
        days = (today - age_date(rel, changed, root)).days
        if days <= pol.compress_after:
            continue
        dst = compression.compressed_name(rel)
        if rel in dirty:
            notes.append(f"not compressed: {rel} has uncommitted changes")
        elif dst in have or (root / dst).exists():
            notes.append(f"not compressed: {dst} already exists")
        else:
            moves.append((rel, dst))
            # git sees a delete and an add (the bytes differ): this line is the link
            notes.append(f"compressed {rel} -> {dst} ({days} days, compress_after "
                         f"{pol.compress_after})")
    return Compression(moves, notes)
