"""``memory reconstruct``: replay every transcript into fresh knowledge on ``extract/NAME``.

Why a worktree: the replay must never touch main nor the working tree someone is using,
so it runs in ``.memrepo/worktrees/NAME`` (gitignored) on branch ``extract/NAME``. It
is resumable: transcripts are replayed in batches, each committed, with progress in the
worktree's ``.memrepo/reconstruct.json``; a rerun continues where it stopped. LLM answers
come from the main repo's cache, so a second reconstruct with nothing changed makes no
call at all. After the replay, every week's journals are rolled into MEMORY.md, oldest
week first.

Parallelism: the extraction calls of a batch run within ``llm.max_concurrency``. The
reconcile calls (ADD / UPDATE / SUPERSEDE / NONE) of one transcript run in parallel, one
per file section, but transcripts are reconciled one after the other: each is weighed
against what the earlier ones wrote, so a later fact can supersede an earlier one.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import clock, scaffold
from memrepo.atomic import atomic_write
from memrepo.commit.write import commit_paths
from memrepo.config import load_config
from memrepo.documents import parse_date
from memrepo.errors import MemrepoError
from memrepo.git import git
from memrepo.layout import JOURNAL_DIR, STATE_DIR
from memrepo.lifecycle.condense import week_bounds, weekly
from memrepo.lifecycle.extract import extractors as X
from memrepo.lifecycle.extract.runner import Extraction, context, extract
from memrepo.llm import ResultCache, estimate_cost, load_template
from memrepo.transcript.read import read_transcript

DERIVED = ("memory", "journal", "projects", "people", "procedures", "reference")
WORKTREES = f"{STATE_DIR}/worktrees"
STATE = f"{STATE_DIR}/reconstruct.json"
#: Dry-run estimates: output tokens of one extraction call; input characters and output
#: tokens of one reconcile call (a section's entries and the candidates) and of one
#: weekly rollup (a week of journals and MEMORY.md in, MEMORY.md out).
OUT_TOKENS = 300
RECONCILE_CHARS, RECONCILE_OUT = 3000, 200
WEEKLY_CHARS, WEEKLY_OUT = 20000, 2000


@dataclass
class Result:
    branch: str
    worktree: Path
    replayed: int = 0
    resumed_from: int = 0
    edits: dict[str, int] = field(default_factory=dict)
    diffstat: str = ""
    planned_calls: int = 0
    cached_calls: int = 0
    #: reconcile calls (at most one per uncached extraction) and weekly rollups
    reconcile_calls: int = 0
    condense_calls: int = 0
    estimated_cost: float = 0.0
    weeks: int = 0
    #: ``path:line: reason`` of transcripts that could not be read (skipped)
    bad: list[str] = field(default_factory=list)


def committed_transcripts(root: Path) -> list[str]:
    """The transcripts of HEAD — what the worktree holds (staged ones are not there yet)."""
    out = git(["ls-tree", "-r", "-z", "--name-only", "HEAD", "--", "raw/conversations"], root)
    return sorted(p for p in out.split("\0") if p.endswith(".md"))


def weeks_of(days: list[str]) -> list[dt.date]:
    """The Mondays of the weeks the ISO dates ``days`` fall in, oldest first."""
    return sorted({week_bounds(d)[0] for d in map(parse_date, days) if d is not None})


def plan(root: Path, llm: Any, names: list[str] | None) -> Result:
    """The calls a replay would make (uncached ones) and their estimated cost.

    Extraction calls are exact (the cache is looked up); reconcile calls are at most one
    per uncached extraction (when its section already has entries); the weekly rollups
    depend on the replayed knowledge, so they are cached exactly when all the extraction
    is. Offline, nothing is called and nothing costs.
    """
    exs = X.get(names)
    res = Result("", root)
    if not llm.available:
        return res
    max_chars = int(load_config(root)["llm"]["max_transcript_chars"])
    ex_obj = Extraction(root, llm, X.Context(), max_chars)
    p = load_template("extract")
    extract_model, condense_model = llm.model_for("extract"), llm.model_for("condense")
    days: list[str] = []
    for path in committed_transcripts(root):
        try:
            t = read_transcript(root, path)
        except MemrepoError as exc:
            res.bad.append(str(exc))
            continue
        days.append(t.date)
        for ex in exs:
            if ex_obj.cache.get(ex_obj.cache_key(ex, t)) is not None:
                res.cached_calls += 1
                continue
            res.planned_calls += 1
            chars = len(p.system) + len(p.shared) + len(p.user) + min(len(t.text), max_chars)
            res.estimated_cost += estimate_cost(extract_model, chars, OUT_TOKENS)
    res.reconcile_calls = res.planned_calls
    res.estimated_cost += res.reconcile_calls * estimate_cost(
        extract_model, len(load_template("reconcile").system) + RECONCILE_CHARS, RECONCILE_OUT)
    res.weeks = len(weeks_of(days)) if "journal" in [e.name for e in exs] else 0
    res.condense_calls = res.weeks if res.planned_calls else 0
    res.estimated_cost += res.condense_calls * estimate_cost(
        condense_model, len(load_template("condense_weekly").system) + WEEKLY_CHARS,
        WEEKLY_OUT)
    return res


def _clear(wt: Path) -> None:
    """Remove derived knowledge (identity kept) and lay the index files down again."""
    for d in DERIVED:
        git(["rm", "-r", "-q", "--ignore-unmatch", "--", f"knowledge/{d}"], wt)
        shutil.rmtree(wt / "knowledge" / d, ignore_errors=True)
    today = clock.today()
    for name, dest in scaffold.KNOWLEDGE_TEMPLATES.items():
        if not dest.startswith("knowledge/identity/"):
            atomic_write(wt / dest, scaffold.render_template(name, today))
    for d in DERIVED:
        (wt / "knowledge" / d).mkdir(parents=True, exist_ok=True)
        if not any((wt / "knowledge" / d).iterdir()):
            (wt / "knowledge" / d / ".gitkeep").write_text("")
    git(["add", "-A", "--", "knowledge"], wt)
    git(["commit", "-q", "--allow-empty", "-m",
         "extract: clear derived knowledge for reconstruction"], wt)


def reconstruct(
    root: Path,
    name: str,
    llm: Any,
    names: list[str] | None = None,
    *,
    batch: int = 200,
    progress: Callable[[int], None] | None = None,
    start: Callable[[int, int], None] | None = None,
) -> Result:
    """Replay everything on ``extract/NAME`` (resuming an interrupted run)."""
    branch = f"extract/{name}"
    base = git(["symbolic-ref", "--short", "-q", "HEAD"], root, check=False).strip() or "HEAD"
    if base == branch:
        raise MemrepoError(f"run reconstruct from main, not from {branch}")
    wt = root / WORKTREES / name
    res = Result(branch, wt)
    state: dict[str, Any] = {}
    if (wt / STATE).exists():
        state = json.loads((wt / STATE).read_text(encoding="utf-8"))
    if not state or state.get("finished"):
        if wt.exists():
            git(["worktree", "remove", "--force", str(wt)], root)
        git(["worktree", "prune"], root)
        git(["worktree", "add", "-q", "-B", branch, str(wt), "HEAD"], root)
        _clear(wt)
        state = {"done": [], "finished": False, "base": base}
        atomic_write(wt / STATE, json.dumps(state))
    llm.cache = ResultCache(root)
    transcripts = committed_transcripts(root)
    done = set(state["done"])
    res.resumed_from = len(done)
    todo = [p for p in transcripts if p not in done]
    if start:
        start(len(transcripts), len(done))
    exs = X.get(names)
    for i in range(0, len(todo), batch):
        chunk = todo[i:i + batch]
        pre = None
        if llm.available:
            fetch = Extraction(wt, llm, context(wt), cache_root=root)
            pairs = []
            for p in chunk:
                try:
                    t = read_transcript(wt, p)
                except MemrepoError:
                    continue  # extract() below reports it
                pairs += [(ex, t) for ex in exs]
            pre = fetch.prefetch(pairs)
        report = extract(wt, chunk, llm, names, commit=True, progress=progress,
                         prefetched=pre, cache_root=root)
        for k, v in report.counts().items():
            res.edits[k] = res.edits.get(k, 0) + v
        res.bad += report.bad
        state["done"] += chunk
        atomic_write(wt / STATE, json.dumps(state))
        res.replayed += len(report.transcripts)
    res.weeks = _condense_weeks(wt, name, llm, state)
    state["finished"] = True
    atomic_write(wt / STATE, json.dumps(state))
    res.diffstat = git(["diff", "--stat", f"{state.get('base', base)}..{branch}", "--",
                        "knowledge/"], root)
    return res


def _condense_weeks(wt: Path, name: str, llm: Any, state: dict[str, Any]) -> int:
    """Roll every week's journals into MEMORY.md, oldest week first, then commit once.

    Each rollup reads the MEMORY.md the previous one wrote, as the weekly job would have
    done week after week. Progress is kept in the state, so an interrupted run goes on
    from the next week (the written, uncommitted files stay in the worktree).
    """
    journal_dir = wt / JOURNAL_DIR
    weeks = weeks_of([p.stem for p in journal_dir.glob("*.md")] if journal_dir.is_dir() else [])
    done = set(state.setdefault("weeks_done", []))
    written = set(state.setdefault("weeks_written", []))
    for monday in weeks:
        if monday.isoformat() in done:
            continue
        plan = weekly(wt, monday, llm)
        written |= set(plan.changed(wt))
        plan.apply(wt, "", commit=False)
        state["weeks_done"].append(monday.isoformat())
        state["weeks_written"] = sorted(written)
        atomic_write(wt / STATE, json.dumps(state))
    if written:
        commit_paths(wt, sorted(written), f"extract: weekly condensation for {name} "
                     f"({len(weeks)} week{'s' if len(weeks) != 1 else ''})")
        state["weeks_written"] = []
    return len(weeks)
