"""``memory condense daily|weekly|monthly`` (seed 000 §8.4, §10.3).

Daily: the day's closed transcripts become its journal entry — those no extraction has
processed: the session-end extraction writes each session's bullets as it ends (the
journal is what the next session's briefing shows), so the day is written once. Weekly:
the week's journals are rolled into MEMORY.md, which must end within its cap
(:mod:`memrepo.lifecycle.cap` guards a model's rewrite). Monthly: old journals to the
archive, stale projects and people named for review, MEMORY.md capped. Every change is first a
:class:`~memrepo.lifecycle.plan.Plan`, which ``--dry-run`` prints as a diff and a real
run writes atomically and commits as ``maintenance: …``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from memrepo import entries as E
from memrepo import worktree
from memrepo.errors import MemrepoError
from memrepo.layout import MEMORY_FILE, TRANSCRIPT_ROOT, journal_path
from memrepo.lifecycle.cap import (
    cap_plan,
    memory_cap,
    model_rewrite,
)
from memrepo.lifecycle.extract import heuristics as h
from memrepo.lifecycle.extract.apply import Workspace
from memrepo.lifecycle.extract.extractors import Context, Item, Journal
from memrepo.lifecycle.extract.runner import load_state
from memrepo.lifecycle.plan import Plan
from memrepo.lifecycle.prune import follow_moves, journal_moves, stale_reviews
from memrepo.secrets import redact
from memrepo.transcript.read import read_transcript

PREFIX_SECTION = {"Decided": "Key Decisions", "Learned": "Lessons Learned",
                  "Open": "Active Context"}


DAILY_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["topics"],
    "properties": {"topics": {"type": "array", "items": {
        "type": "object", "required": ["topic", "bullets"],
        "properties": {"topic": {"type": "string"}, "bullets": {"type": "array", "items": {
            "type": "object", "required": ["text", "source"],
            "properties": {"text": {"type": "string"}, "source": {"type": "integer"}}}}}}}},
}


def day_transcripts(root: Path, day: dt.date) -> list[str]:
    base = root / f"{TRANSCRIPT_ROOT}{day:%Y/%m/%d}"
    return sorted(p.relative_to(root).as_posix() for p in base.glob("*.md")) \
        if base.is_dir() else []


def daily(root: Path, day: dt.date, llm: Any) -> Plan:
    """The day's journal entry from its closed transcripts that no extraction has
    processed (``extract-state.json``): topics, bullets, sources."""
    plan = Plan()
    ts = []
    for p in day_transcripts(root, day):
        try:
            t = read_transcript(root, p)
        except MemrepoError as exc:  # reported and skipped: the others still make the day
            plan.errors.append(str(exc))
            continue
        if t.meta.get("ended"):
            ts.append(t)
    if not ts:
        plan.notes.append(f"no closed transcripts on {day}")
        return plan
    extracted = load_state(root)
    todo = [t for t in ts if t.path not in extracted]
    if len(todo) < len(ts):  # who writes what: the extraction wrote these sessions' bullets
        plan.notes.append(f"journal {day}: {len(ts) - len(todo)} of {len(ts)} sessions written "
                          "by their extraction")
    if not todo:
        return plan
    ts = todo
    ws = Workspace(root)
    items: list[Item] = []
    data = None
    if llm is not None and llm.available:
        listing = "\n\n".join(f"[{i}] {t.path}\n{redact(t.text)[0][:8000 // len(ts)]}"
                              for i, t in enumerate(ts))
        journal = worktree.read_text(root, journal_path(day))
        data = llm.complete_json("condense", "condense_daily", DAILY_SCHEMA, max_tokens=800,
                                 date=day.isoformat(), transcripts=listing,
                                 journal="(empty)" if journal is None else journal)
    jx = Journal()
    if data is not None:
        unsourced = excluded = 0
        for topic in data["topics"]:
            for b in topic["bullets"]:
                if not 0 <= b["source"] < len(ts):  # no transcript to trace it to: dropped
                    unsourced += 1
                    continue
                text = b["text"].strip()
                if not text or h.excluded(text):  # the exclusions extraction applies
                    excluded += 1
                    continue
                it = jx.item(ts[b["source"]], Context(), text, {})
                it.section = topic["topic"].strip().lower() or it.section
                items.append(it)
        if unsourced:
            plan.notes.append(f"dropped {unsourced} model bullets whose source is not one of "
                              f"the {len(ts)} transcripts")
        if excluded:
            plan.notes.append(f"dropped {excluded} model bullets the extraction exclusions "
                              "reject (small talk, questions, speculation, secrets)")
    else:
        for t in ts:
            items += jx.offline(t, Context())
    ws.apply(items)
    plan.texts.update(ws.rendered())
    plan.base.update(ws.read)
    plan.notes.append(f"journal {day} from {len(ts)} transcripts")
    return plan


def week_bounds(day: dt.date) -> tuple[dt.date, dt.date]:
    start = day - dt.timedelta(days=day.weekday())
    return start, start + dt.timedelta(days=6)


def week_journals(root: Path, day: dt.date) -> list[str]:
    start, _ = week_bounds(day)
    out = []
    for i in range(7):
        p = journal_path(start + dt.timedelta(days=i))
        if (root / p).exists():
            out.append(p)
    return out


def weekly(root: Path, day: dt.date, llm: Any) -> Plan:
    """The week's journals rolled up into MEMORY.md, which must end within its cap."""
    journals = week_journals(root, day)
    plan = Plan()
    if not journals:
        plan.notes.append(f"no journals in the week of {day}")
        return plan
    memory_text = worktree.read_text(root, MEMORY_FILE)
    cap = memory_cap(root)
    if memory_text is not None and llm is not None and llm.available:
        texts = "\n\n".join(worktree.read_text(root, j) or "" for j in journals)
        if model_rewrite(root, plan, llm, "condense_weekly", memory_text, cap,
                         f"weekly rollup of {len(journals)} journals by the model",
                         journals=texts):
            return plan
    ws = Workspace(root)
    items: list[Item] = []
    for j in journals:
        date = Path(j).stem
        lines = (worktree.read_text(root, j) or "").split("\n")
        for i, line in enumerate(lines):
            e = E.parse_entry(line, i)
            if e is None or e.superseded:
                continue
            prefix, _, rest = e.text.partition(": ")
            section = PREFIX_SECTION.get(prefix)
            if section and rest:
                items.append(Item("weekly", rest, MEMORY_FILE, section,
                                  "; ".join(e.srcs) or j, date))
    ws.apply(items)
    texts = ws.rendered()
    new_memory = texts.get(MEMORY_FILE, memory_text or "")
    cap_p = cap_plan(root, new_memory, None, cap)
    plan.texts.update(texts)
    plan.base.update(ws.read)
    plan.merge(cap_p)
    plan.notes.append(f"weekly rollup of {len(journals)} journals: "
                      f"{sum(1 for e in ws.edits if e.action != 'NONE')} entries")
    plan.notes += cap_p.notes
    return plan


def monthly(root: Path, day: dt.date, llm: Any) -> Plan:
    """Monthly distillation: archive old journals, review projects and people, cap MEMORY."""
    plan = Plan()
    plan.moves += journal_moves(root, day)
    if plan.moves:
        plan.notes.append(f"archived {len(plan.moves)} journals past retention")
        follow_moves(root, plan)  # their links, and the links to them, follow
    plan.notes += stale_reviews(root, day)
    memory_text = worktree.read_text(root, MEMORY_FILE)
    if memory_text is not None:
        cap_p = cap_plan(root, memory_text, llm)
        plan.merge(cap_p)
        plan.notes += cap_p.notes
    return plan
