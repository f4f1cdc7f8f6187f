"""``memory prune``: keep the hot memory small without losing anything (seed 000 §8.5–8.6).

MEMORY.md over its cap is condensed back under it; journals past the retention move to
``archive/journal/``; knowledge files whose score (recency × use) is below the threshold
and that are older than the minimum age move to ``archive/`` — all with ``git mv``, so
history follows the file; archived files past their ``compress_after`` become
``NAME.md.gz`` (:mod:`memrepo.lifecycle.retention`, off by default). ``explore/*``
branches older than a week are listed and, with ``--apply``, deleted after a
``memory/before/…`` tag keeps their commits reachable. Relative markdown links in and to
the moved files are rewritten in the same commit (:mod:`memrepo.lifecycle.relink`).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import worktree
from memrepo.config import load_config
from memrepo.documents import read_document
from memrepo.errors import FormatError
from memrepo.git import git
from memrepo.index.signals import aggregate
from memrepo.layout import (
    IDENTITY_DIR,
    JOURNAL_DIR,
    JOURNAL_PATH,
    MEMORY_FILE,
    PEOPLE_INDEX,
    PROJECTS_INDEX,
)
from memrepo.lifecycle import explore, retention
from memrepo.lifecycle.cap import cap_plan
from memrepo.lifecycle.plan import Plan
from memrepo.lifecycle.relink import Relink, relink

#: Knowledge files never scored for archiving (loaded every session, or indexes).
NEVER_ARCHIVE = (f"{IDENTITY_DIR}/", "knowledge/memory/", f"{JOURNAL_DIR}/", PROJECTS_INDEX,
                 PEOPLE_INDEX)
DECAY_PER_DAY = 0.05  # half-life ~14 days (seed 000 §8.5)


def subscribed(root: Path) -> set[str]:
    """Files some topic subscribes to: never archived, since moving one would make every
    later commit touching that topic fail its subscription check."""
    out: set[str] = set()
    base = root / "topics"
    for p in sorted(base.rglob("*.md")) if base.is_dir() else []:
        try:
            subs = read_document(p, p.relative_to(root).as_posix()).meta.get("subscriptions")
        except FormatError:
            continue
        if isinstance(subs, list):
            out.update(s.strip().removeprefix("./") for s in subs if isinstance(s, str))
    return out


def journal_moves(root: Path, today: dt.date) -> list[tuple[str, str]]:
    """(journal, archive path) for journals older than the retention (and no topic's):
    ``lifecycle.retention.journal.archive_after``, alias ``journal_retention_days``."""
    days = retention.journal_days(retention.policies(load_config(root)))
    if days is None:  # journal: {keep: true}
        return []
    cutoff = today - dt.timedelta(days=days)
    base = root / JOURNAL_DIR
    keep = subscribed(root)
    out = []
    for p in sorted(base.glob("*.md")) if base.is_dir() else []:
        rel = p.relative_to(root).as_posix()
        m = JOURNAL_PATH.match(rel)
        if m and dt.date.fromisoformat(m["date"]) < cutoff and rel not in keep:
            out.append((rel, f"archive/journal/{p.name}"))
    return out


def last_changed(root: Path, prefix: str = "knowledge/") -> dict[str, dt.date]:
    """The last commit date of every file under ``prefix``, from one ``git log``."""
    out: dict[str, dt.date] = {}
    try:
        log = git(["log", "--format=@%cs", "--name-only", "--no-renames", "--", prefix], root)
    except Exception:
        return out
    day: dt.date | None = None
    for line in log.split("\n"):
        if line.startswith("@"):
            day = dt.date.fromisoformat(line[1:])
        elif line and day and line not in out:
            out[line] = day
    return out


def usage_counts(root: Path) -> dict[str, float]:
    """Uses per file: search hits and reinforcements (signals) plus references to it."""
    uses: dict[str, float] = {}
    for (path, _line), agg in aggregate(root).items():
        uses[path] = uses.get(path, 0.0) + agg.hits + max(agg.score, 0.0)
    texts = []
    for base in ("knowledge", "topics"):
        for p in (root / base).rglob("*.md") if (root / base).is_dir() else []:
            try:  # a linked file is not the repo's: its references do not count
                texts.append(worktree.read_file(root, p.relative_to(root).as_posix())
                             .decode("utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    corpus = "\n".join(texts)
    for p in (root / "knowledge").rglob("*.md") if (root / "knowledge").is_dir() else []:
        rel = p.relative_to(root).as_posix()
        refs = corpus.count(rel) + corpus.count(rel[len("knowledge/"):])
        if refs:
            uses[rel] = uses.get(rel, 0.0) + refs
    return uses


@dataclass
class Scored:
    path: str
    days: int
    uses: float
    score: float


def score_files(root: Path, today: dt.date) -> list[Scored]:
    """Every archivable knowledge file with its recency × use score, lowest first."""
    changed = last_changed(root)
    uses = usage_counts(root)
    keep = subscribed(root)
    out = []
    for p in sorted((root / "knowledge").rglob("*.md")) if (root / "knowledge").is_dir() else []:
        rel = p.relative_to(root).as_posix()
        if rel.startswith(NEVER_ARCHIVE) or rel in keep:
            continue
        when = changed.get(rel) or dt.date.fromtimestamp(p.stat().st_mtime)
        days = max((today - when).days, 0)
        u = uses.get(rel, 0.0)
        out.append(Scored(rel, days, u, math.exp(-DECAY_PER_DAY * days) * (1 + u)))
    return sorted(out, key=lambda s: s.score)


def stale_moves(root: Path, today: dt.date, notes: list[str] | None = None
                ) -> list[tuple[str, str, Scored]]:
    """The knowledge files to archive: those scoring under the threshold, and while
    knowledge/ is over ``lifecycle.max_size_mb``, the lowest-scoring ``prune_percent`` of
    the rest (seed 001's size-based pruning, said in ``notes``); never one changed within
    the minimum age."""
    cfg = load_config(root)["lifecycle"]
    threshold = float(cfg["archive_score_threshold"])
    min_age = int(cfg["archive_min_age_days"])
    pols = retention.policies({"lifecycle": cfg})
    movable = [s for s in score_files(root, today)
               if s.days > min_age and not retention.kept(s.path, pols)]
    chosen = [s for s in movable if s.score < threshold]
    max_mb, percent = float(cfg["max_size_mb"]), float(cfg["prune_percent"])
    rest = [s for s in movable if s.score >= threshold]
    if max_mb > 0 and percent > 0 and rest:
        leaving = {s.path for s in chosen}
        size = sum(p.stat().st_size for p in (root / "knowledge").rglob("*")
                   if p.is_file() and not p.is_symlink()
                   and p.relative_to(root).as_posix() not in leaving)
        if size > max_mb * 1024 * 1024:
            bottom = rest[:max(1, math.ceil(len(rest) * percent / 100))]
            chosen += bottom
            if notes is not None:
                notes.append(f"knowledge/ holds {size / 1048576:.1f} MB, over "
                             f"lifecycle.max_size_mb ({max_mb:g}): archived the lowest-scoring "
                             f"{len(bottom)} ({percent:g} %) besides")
    return [(s.path, "archive/" + s.path[len("knowledge/"):], s) for s in chosen]


def stale_reviews(root: Path, today: dt.date, days: int = 90) -> list[str]:
    """Project and people files untouched for ``days``: named for a person to review."""
    changed = last_changed(root)
    out = []
    for rel, when in sorted(changed.items()):
        if rel.startswith(("knowledge/projects/", "knowledge/people/")) and \
                (root / rel).exists() and (today - when).days > days:
            out.append(f"review: {rel} unchanged since {when}")
    return out


@dataclass
class PruneResult:
    plan: Plan
    stale: list[tuple[str, str, Scored]] = field(default_factory=list)
    branches: list[explore.Branch] = field(default_factory=list)
    #: the link destinations the plan rewrites so that no link the moves touch breaks
    links: list[Relink] = field(default_factory=list)


def follow_moves(root: Path, plan: Plan) -> list[Relink]:
    """Add to ``plan`` the rewrites that keep links working across its moves. A file to
    compress that a rewrite changes is compressed by a later prune: only committed text is
    compressed, and its links must follow in this commit."""
    found = relink(root, plan.moves, plan.texts)
    if not found.links:
        return []
    plan.merge(Plan(texts=found.texts, base=found.base))
    later = {a for a, _ in plan.compress if a in found.texts}
    plan.compress = [(a, b) for a, b in plan.compress if a not in later]
    told = tuple(f"compressed {a} " for a in later)
    plan.notes = [n for n in plan.notes if not n.startswith(told)]
    plan.notes += [f"not compressed: {a} has links this prune rewrites" for a in sorted(later)]
    files = len({k.path for k in found.links})
    plan.notes.append(f"rewrote {len(found.links)} links in {files} files to follow the moves")
    return found.links


def plan_prune(root: Path, today: dt.date, llm: Any = None) -> PruneResult:
    plan = Plan()
    memory_text = worktree.read_text(root, MEMORY_FILE)
    if memory_text is not None:
        cap = cap_plan(root, memory_text, llm)
        plan.merge(cap)
        plan.notes += cap.notes
    jm = journal_moves(root, today)
    plan.moves += jm
    if jm:
        plan.notes.append(f"archived {len(jm)} journals past retention")
    stale = stale_moves(root, today, plan.notes)
    plan.moves += [(a, b) for a, b, _ in stale]
    for a, _, s in stale:
        plan.notes.append(f"archived {a} (score {s.score:.4f}, {s.days} days, {s.uses:g} uses)")
    cfg = load_config(root)
    if retention.compresses(retention.policies(cfg)):
        packed = retention.compress_plan(root, today, cfg, last_changed(root, "archive/"))
        plan.compress += packed.moves
        plan.notes += packed.notes
    links = follow_moves(root, plan)
    return PruneResult(plan, stale, explore.old(root, today), links)
