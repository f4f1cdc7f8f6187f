"""``memory condense daily|weekly|monthly`` and the MEMORY.md cap (seed 000 §8.4, §10.3).

Why the guard: MEMORY.md is loaded into every main session, so it must never exceed its
cap, and a model rewriting it must not silently forget. A rewrite is rejected — and the
offline path used instead, saying so — when it is over the cap, drops more than a
quarter of the existing entries without saying where they went, or keeps entries
without the ``[src: …]`` they had (every line must stay traceable); the superseded
entries it drops go to the archive. The offline cap enforcement moves superseded, then
the oldest, entries to ``archive/memory/`` (named in the commit), so nothing is lost.

Every change is first a ``Plan`` (new file texts and moves), which ``--dry-run`` prints
as a diff and a real run writes atomically and commits as ``maintenance: …``.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo.atomic import atomic_write
from memrepo.config import load_config
from memrepo.documents import parse_document, render_document
from memrepo.errors import MemrepoError
from memrepo.lifecycle.extract import entries as E
from memrepo.lifecycle.extract import heuristics as h
from memrepo.lifecycle.extract.apply import Workspace, tokens
from memrepo.lifecycle.extract.extractors import MEMORY, Context, Item, Journal
from memrepo.transcript.read import read_transcript

ARCHIVE_MEMORY = "archive/memory/MEMORY-archive.md"
MEMORY_SECTIONS = ("Key Decisions", "Lessons Learned", "Active Context")
#: Share of entries a rewrite may drop without saying where they went.
MAX_SILENT_DROP = 0.25
PREFIX_SECTION = {"Decided": "Key Decisions", "Learned": "Lessons Learned",
                  "Open": "Active Context"}


# ---------------------------------------------------------------------------
# Plans: compute, then show or apply
# ---------------------------------------------------------------------------


@dataclass
class Plan:
    """New texts by path, ``git mv`` moves, and notes for the person running it."""

    texts: dict[str, str] = field(default_factory=dict)
    moves: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: ``path:line: reason`` of inputs that could not be read (skipped; exit non-zero)
    errors: list[str] = field(default_factory=list)

    def changed(self, root: Path) -> dict[str, str]:
        out = {}
        for p, t in self.texts.items():
            full = root / p
            if not full.exists() or full.read_text(encoding="utf-8") != t:
                out[p] = t
        return out

    def empty(self, root: Path) -> bool:
        return not self.changed(root) and not self.moves

    def diff(self, root: Path) -> str:
        parts = [f"move {a} -> {b}" for a, b in self.moves]
        for p, t in sorted(self.changed(root).items()):
            full = root / p
            old = full.read_text(encoding="utf-8").splitlines(True) if full.exists() else []
            parts.append("".join(difflib.unified_diff(old, t.splitlines(True),
                                                      f"a/{p}", f"b/{p}")).rstrip("\n"))
        return "\n".join(parts)

    def apply(self, root: Path, message: str, commit: bool = True) -> str | None:
        """Write, move (git mv) and commit; returns the commit, or None when nothing changed."""
        from memrepo.commit.write import commit_staged, retry_locked
        from memrepo.git import git, head

        paths: list[str] = []
        for src, dst in self.moves:
            (root / dst).parent.mkdir(parents=True, exist_ok=True)
            retry_locked(lambda s=src, d=dst: git(["mv", "-k", s, d], root))
            paths += [src, dst]
        written = list(self.changed(root))
        for p in written:
            atomic_write(root / p, self.texts[p])
        paths += written
        if not paths or not commit:
            return None
        if written:
            retry_locked(lambda: git(["add", "-A", "--", *written], root))
        body = "\n".join(f"- {n}" for n in self.notes)
        commit_staged(root, paths, message + ("\n\n" + body if body else "") + "\n")
        return head(root)


def line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def memory_cap(root: Path) -> int:
    cfg = load_config(root)
    return min(int(cfg["lifecycle"]["memory_line_cap"]),
               int(cfg["validation"]["memory_error_lines"]))


# ---------------------------------------------------------------------------
# The cap
# ---------------------------------------------------------------------------


def cap_plan(root: Path, text: str, llm: Any = None, cap: int | None = None) -> Plan:
    """A plan that brings MEMORY.md ``text`` under its cap (empty when it already fits)."""
    cap = cap or memory_cap(root)
    plan = Plan()
    if line_count(text) <= cap:
        plan.texts[MEMORY] = text
        return plan
    if llm is not None and getattr(llm, "available", False):
        body = parse_document(text, MEMORY).body
        data = llm.complete_json("condense", "prune_memory", REWRITE_SCHEMA, max_tokens=4000,
                                 lines=line_count(text), cap=cap - 8, memory=body)
        if data is not None:
            new_text, why = guarded_rewrite(text, data, cap)
            if why is None:
                _accept_rewrite(root, plan, text, new_text, data)
                plan.notes.append(f"MEMORY.md rewritten by the model under {cap} lines")
                return plan
            llm.usage.note_fallback(f"prune_memory: rewrite rejected ({why})")
            print(f"memory: model rewrite of MEMORY.md rejected ({why}); "
                  "used the offline path", file=sys.stderr)
    return offline_cap(root, text, cap)


def offline_cap(root: Path, text: str, cap: int) -> Plan:
    """Move superseded, then Active Context, then the oldest entries to the archive."""
    lines = text.split("\n")
    found: list[tuple[int, str, E.Entry]] = []
    for section in MEMORY_SECTIONS:
        span = E.find_section(lines, section)
        if span:
            found += [(order, section, e) for e in E.section_entries(lines, span)
                      for order in [0 if e.superseded else 1 if section == "Active Context"
                                    else 2]]
    found.sort(key=lambda x: (x[0], x[2].date or "0000", x[2].line_no))
    over = line_count(text) - cap
    drop = found[:max(over, 0)]
    plan = Plan()
    if len(drop) < over:
        plan.notes.append(f"MEMORY.md: only {len(drop)} entries could move; "
                          "the rest of the overflow is prose — edit it by hand")
    drop_lines = {e.line_no for _, _, e in drop}
    plan.texts[MEMORY] = "\n".join(x for i, x in enumerate(lines) if i not in drop_lines)
    moved = [(section, lines[e.line_no]) for _, section, e in drop]
    if moved:
        plan.texts[ARCHIVE_MEMORY] = _archive_text(root, moved)
        plan.notes.append(f"moved {len(moved)} entries from MEMORY.md to {ARCHIVE_MEMORY} "
                          f"(cap {cap} lines)")
    return plan


def _archive_text(root: Path, moved: list[tuple[str, str]], base: str | None = None) -> str:
    full = root / ARCHIVE_MEMORY
    text = base if base is not None else (full.read_text(encoding="utf-8") if full.exists()
                                          else render_document(
                                              {"type": "memory",
                                               "updated": dt.date.today()},
                                              "# Archived core memory\n\n"
                                              "Entries moved out of MEMORY.md to keep it under "
                                              "its cap.\n"))
    lines = text.rstrip("\n").split("\n")
    for section, line in moved:
        span = E.ensure_section(lines, section)
        E.insert_entry(lines, span, line)
    return "\n".join(lines) + "\n"


def enforce_cap(root: Path, llm: Any = None) -> list[str]:
    """Bring MEMORY.md under its cap now (written, not committed); the paths touched."""
    full = root / MEMORY
    if not full.exists():
        return []
    plan = cap_plan(root, full.read_text(encoding="utf-8"), llm)
    changed = list(plan.changed(root))
    plan.apply(root, "", commit=False)
    for note in plan.notes:
        print(f"memory: {note}", file=sys.stderr)
    return changed


# ---------------------------------------------------------------------------
# Guarding a model's rewrite
# ---------------------------------------------------------------------------

REWRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["memory"],
    "properties": {
        "memory": {"type": "string"},
        "moved": {"type": "array", "items": {
            "type": "object", "required": ["entry", "to"],
            "properties": {"entry": {"type": "string"}, "to": {"type": "string"}}}},
    },
}


def _active(text: str) -> list[E.Entry]:
    lines = text.split("\n")
    return [e for i, line in enumerate(lines) if (e := E.parse_entry(line, i)) and
            not e.superseded]


def _similar(a: str, b: str) -> bool:
    ta, tb = tokens(a), tokens(b)
    return bool(ta) and len(ta & tb) / len(ta) >= 0.6


def guarded_rewrite(old_text: str, data: dict[str, Any], cap: int) -> tuple[str, str | None]:
    """(new MEMORY.md text, None) or (…, why it is rejected)."""
    doc = parse_document(old_text, MEMORY)
    meta = dict(doc.meta)
    meta["updated"] = dt.date.today()
    body = re.sub(r"^---\n.*?\n---\n", "", data["memory"].strip() + "\n", flags=re.S)
    new_text = render_document(meta, body)
    if line_count(new_text) > cap:
        return new_text, f"{line_count(new_text)} lines, over the cap of {cap}"
    old = _active(old_text)
    new = _active(new_text)
    moved = [str(m.get("entry", "")) for m in data.get("moved") or []]
    silent = [e for e in old if not any(_similar(e.text, n.text) for n in new)
              and not any(_similar(e.text, m) for m in moved)]
    if old and len(silent) > MAX_SILENT_DROP * len(old):
        return new_text, (f"drops {len(silent)} of {len(old)} entries without saying where "
                          f"(more than {MAX_SILENT_DROP:.0%})")
    # traceability: an entry the rewrite keeps must keep the [src: …] it had
    untraced = _untraced(old, new, moved)
    if untraced:
        return new_text, (f"{len(untraced)} kept entries lost their [src: …] reference "
                          f"(first: {untraced[0].text[:60]!r})")
    return new_text, None


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _untraced(old: list[E.Entry], new: list[E.Entry], moved: list[str]) -> list[E.Entry]:
    """Old entries kept by the rewrite without a source they had.

    Kept means: the closest new entry (by word overlap; "Fact 15" is not "Fact 150") is
    similar to it, and no entry said to be moved out is closer.
    """
    new_t = [(tokens(n.text), n) for n in new]
    moved_t = [tokens(m) for m in moved]
    out = []
    for e in old:
        te = tokens(e.text)
        if not e.srcs or not te or not new_t:
            continue
        scores = [(_jaccard(te, t), n) for t, n in new_t]
        best = max(score for score, _ in scores)
        closest = [n for score, n in scores if score == best]
        if not _similar(e.text, closest[0].text):
            continue  # not kept: dropped (counted above) or moved
        if any(_jaccard(te, t) > best for t in moved_t):
            continue
        if not set(e.srcs) <= {s for n in closest for s in n.srcs}:
            out.append(e)
    return out


def dropped_superseded(old_text: str, new_text: str) -> list[tuple[str, str]]:
    """(section, line) of the superseded entries a rewrite left out.

    A rewrite may drop replaced facts (that is what condensing is for), but nothing is
    deleted: they go to the archive, as the offline cap moves them.
    """
    kept = set(new_text.split("\n"))
    lines = old_text.split("\n")
    out: list[tuple[str, str]] = []
    for section in MEMORY_SECTIONS:
        span = E.find_section(lines, section)
        if span:
            out += [(section, lines[e.line_no]) for e in E.section_entries(lines, span)
                    if e.superseded and lines[e.line_no] not in kept]
    return out


def _accept_rewrite(root: Path, plan: Plan, old_text: str, new_text: str,
                    data: dict[str, Any]) -> None:
    """Take a guarded rewrite: the new MEMORY.md, and in the archive what it moved out."""
    plan.texts[MEMORY] = new_text
    _moved_to_archive(root, plan, data.get("moved") or [],
                      dropped_superseded(old_text, new_text))


def _moved_to_archive(root: Path, plan: Plan, moved: list[dict[str, Any]],
                      superseded: Sequence[tuple[str, str]] = ()) -> None:
    """Entries the model moved out are kept in the archive with where they were meant to
    go; superseded entries it dropped are kept there too, under their section."""
    keep = []
    for m in moved:
        entry = str(m.get("entry", "")).strip()
        if entry:
            keep.append(("Moved", f"- {entry.lstrip('- ')} (moved to: {m.get('to', '?')})"))
    keep += list(superseded)
    if keep:
        plan.texts[ARCHIVE_MEMORY] = _archive_text(root, keep)
        plan.notes.append(f"{len(keep)} entries moved out of MEMORY.md are kept in "
                          f"{ARCHIVE_MEMORY}"
                          + (f" ({len(superseded)} superseded)" if superseded else ""))


# ---------------------------------------------------------------------------
# daily / weekly / monthly
# ---------------------------------------------------------------------------

DAILY_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["topics"],
    "properties": {"topics": {"type": "array", "items": {
        "type": "object", "required": ["topic", "bullets"],
        "properties": {"topic": {"type": "string"}, "bullets": {"type": "array", "items": {
            "type": "object", "required": ["text", "source"],
            "properties": {"text": {"type": "string"}, "source": {"type": "integer"}}}}}}}},
}


def day_transcripts(root: Path, day: dt.date) -> list[str]:
    base = root / f"raw/conversations/{day:%Y/%m/%d}"
    return sorted(p.relative_to(root).as_posix() for p in base.glob("*.md")) \
        if base.is_dir() else []


def daily(root: Path, day: dt.date, llm: Any) -> Plan:
    """The day's journal entry from its closed transcripts: topics, bullets, sources."""
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
    ws = Workspace(root)
    items: list[Item] = []
    data = None
    if llm is not None and llm.available:
        from memrepo.secrets import redact

        listing = "\n\n".join(f"[{i}] {t.path}\n{redact(t.text)[0][:8000 // len(ts)]}"
                              for i, t in enumerate(ts))
        journal = root / f"knowledge/journal/{day}.md"
        data = llm.complete_json("condense", "condense_daily", DAILY_SCHEMA, max_tokens=800,
                                 date=day.isoformat(), transcripts=listing,
                                 journal=journal.read_text(encoding="utf-8")
                                 if journal.exists() else "(empty)")
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
    plan.notes.append(f"journal {day} from {len(ts)} transcripts")
    return plan


def week_bounds(day: dt.date) -> tuple[dt.date, dt.date]:
    start = day - dt.timedelta(days=day.weekday())
    return start, start + dt.timedelta(days=6)


def week_journals(root: Path, day: dt.date) -> list[str]:
    start, _ = week_bounds(day)
    out = []
    for i in range(7):
        p = f"knowledge/journal/{start + dt.timedelta(days=i)}.md"
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
    memory_text = (root / MEMORY).read_text(encoding="utf-8") if (root / MEMORY).exists() \
        else None
    cap = memory_cap(root)
    if llm is not None and llm.available and memory_text is not None:
        texts = "\n\n".join((root / j).read_text(encoding="utf-8") for j in journals)
        data = llm.complete_json("condense", "condense_weekly", REWRITE_SCHEMA,
                                 max_tokens=4000, journals=texts, cap=cap - 8,
                                 memory=parse_document(memory_text, MEMORY).body)
        if data is not None:
            new_text, why = guarded_rewrite(memory_text, data, cap)
            if why is None:
                _accept_rewrite(root, plan, memory_text, new_text, data)
                plan.notes.append(f"weekly rollup of {len(journals)} journals by the model")
                return plan
            llm.usage.note_fallback(f"condense_weekly: rewrite rejected ({why})")
            print(f"memory: model rollup rejected ({why}); used the offline path",
                  file=sys.stderr)
    ws = Workspace(root)
    items: list[Item] = []
    for j in journals:
        date = Path(j).stem
        lines = (root / j).read_text(encoding="utf-8").split("\n")
        for i, line in enumerate(lines):
            e = E.parse_entry(line, i)
            if e is None or e.superseded:
                continue
            prefix, _, rest = e.text.partition(": ")
            section = PREFIX_SECTION.get(prefix)
            if section and rest:
                items.append(Item("weekly", rest, MEMORY, section,
                                  "; ".join(e.srcs) or j, date))
    ws.apply(items)
    texts = ws.rendered()
    new_memory = texts.get(MEMORY, memory_text or "")
    cap_p = cap_plan(root, new_memory, None, cap)
    plan.texts.update(texts)
    plan.texts.update(cap_p.texts)
    plan.notes.append(f"weekly rollup of {len(journals)} journals: "
                      f"{sum(1 for e in ws.edits if e.action != 'NONE')} entries")
    plan.notes += cap_p.notes
    return plan


def monthly(root: Path, day: dt.date, llm: Any) -> Plan:
    """Monthly distillation: archive old journals, review projects and people, cap MEMORY."""
    from memrepo.lifecycle.prune import journal_moves, stale_reviews

    plan = Plan()
    plan.moves += journal_moves(root, day)
    if plan.moves:
        plan.notes.append(f"archived {len(plan.moves)} journals past retention")
    plan.notes += stale_reviews(root, day)
    if (root / MEMORY).exists():
        cap_p = cap_plan(root, (root / MEMORY).read_text(encoding="utf-8"), llm)
        plan.texts.update(cap_p.texts)
        plan.notes += cap_p.notes
    return plan
