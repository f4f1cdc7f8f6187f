"""The MEMORY.md cap (seed 000 §8.4, §10.3): bring MEMORY.md back under it, and guard a
model's rewrite of it.

Why the guard: MEMORY.md is loaded into every main session, so it must never exceed its
cap, and a model rewriting it must not silently forget. A rewrite is rejected — and the
offline path used instead, saying so — when it is over the cap, drops more than a
quarter of the existing entries without saying where they went, or keeps entries
without the ``[src: …]`` they had (every line must stay traceable); the superseded
entries it drops go to the archive. The offline cap enforcement moves superseded, then
the oldest, entries to ``archive/memory/`` (named in the commit), so nothing is lost.
Used by ``memory condense``, ``memory prune`` and after every extraction or flush.

Every MEMORY.md the cap hands back states its size in its frontmatter (``line_count``,
seed 000 §2.2: the whole file's lines, as the cap and ``check-memory-cap`` count them):
the cap is the last step of every job that rewrites MEMORY.md, so this is the one place
those jobs keep it exact (:func:`memrepo.documents.with_line_count`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memrepo import clock, worktree
from memrepo import entries as E
from memrepo.config import load_config
from memrepo.documents import count_lines, parse_document, render_document, with_line_count
from memrepo.layout import MEMORY_ARCHIVE, MEMORY_FILE
from memrepo.lifecycle.plan import Plan

MEMORY_SECTIONS = ("Key Decisions", "Lessons Learned", "Active Context")
#: Share of entries a rewrite may drop without saying where they went.
MAX_SILENT_DROP = 0.25


def line_count(text: str) -> int:
    """The whole file's lines (frontmatter included): what the cap limits."""
    return count_lines(text)


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
    plan = Plan(base={MEMORY_FILE: text})
    counted = with_line_count(text)  # its own line counts too
    if line_count(counted) <= cap:
        plan.texts[MEMORY_FILE] = counted
        return plan
    if model_rewrite(root, plan, llm, "prune_memory", text, cap,
                     f"MEMORY.md rewritten by the model under {cap} lines",
                     lines=line_count(counted)):
        return plan
    return offline_cap(root, text, cap)


def model_rewrite(root: Path, plan: Plan, llm: Any, template: str, memory_text: str, cap: int,
                  note: str, **variables: Any) -> bool:
    """Ask the model (prompt ``template``) for a new MEMORY.md within ``cap``; take it into
    ``plan`` when the guard accepts it. False (and a note on stderr) means: go offline."""
    if llm is None or not getattr(llm, "available", False):
        return False
    data = llm.complete_json("condense", template, REWRITE_SCHEMA, max_tokens=4000, cap=cap - 8,
                             memory=parse_document(memory_text, MEMORY_FILE).body, **variables)
    if data is None:
        return False
    new_text, why = guarded_rewrite(memory_text, data, cap)
    if why is None:
        accept_rewrite(root, plan, memory_text, new_text, data)
        plan.notes.append(note)
        return True
    llm.usage.note_fallback(f"{template}: rewrite rejected ({why})")
    print(f"memory: model rewrite of MEMORY.md rejected ({why}); used the offline path",
          file=sys.stderr)
    return False


def offline_cap(root: Path, text: str, cap: int) -> Plan:
    """Move superseded, then Active Context, then the oldest entries to the archive."""
    base = text
    text = with_line_count(text)
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
    plan = Plan(base={MEMORY_FILE: base})
    if len(drop) < over:
        plan.notes.append(f"MEMORY.md: only {len(drop)} entries could move; "
                          "the rest of the overflow is prose — edit it by hand")
    drop_lines = {e.line_no for _, _, e in drop}
    plan.texts[MEMORY_FILE] = with_line_count(
        "\n".join(x for i, x in enumerate(lines) if i not in drop_lines))
    moved = [(section, lines[e.line_no]) for _, section, e in drop]
    if moved:
        plan.texts[MEMORY_ARCHIVE] = _archive_text(root, moved)
        plan.notes.append(f"moved {len(moved)} entries from MEMORY.md to {MEMORY_ARCHIVE} "
                          f"(cap {cap} lines)")
    return plan


def _archive_text(root: Path, moved: list[tuple[str, str]]) -> str:
    """The archive with ``moved`` (section, line) entries added under their sections."""
    text = worktree.read_text(root, MEMORY_ARCHIVE)
    if text is None:
        text = render_document(
            {"type": "memory", "updated": clock.today()},
            "# Archived core memory\n\nEntries moved out of MEMORY.md to keep it under its "
            "cap.\n")
    lines = text.rstrip("\n").split("\n")
    for section, line in moved:
        span = E.ensure_section(lines, section)
        E.insert_entry(lines, span, line)
    return "\n".join(lines) + "\n"


def enforce_cap(root: Path, llm: Any = None) -> list[str]:
    """Bring MEMORY.md under its cap now (written, not committed); the paths touched."""
    text = worktree.read_text(root, MEMORY_FILE)
    if text is None:
        return []
    plan = cap_plan(root, text, llm)
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
    ta, tb = E.words(a), E.words(b)
    return bool(ta) and len(ta & tb) / len(ta) >= 0.6


def guarded_rewrite(old_text: str, data: dict[str, Any], cap: int) -> tuple[str, str | None]:
    """(new MEMORY.md text, None) or (…, why it is rejected)."""
    doc = parse_document(old_text, MEMORY_FILE)
    meta = dict(doc.meta)
    meta["updated"] = clock.today()
    body = re.sub(r"^---\n.*?\n---\n", "", data["memory"].strip() + "\n", flags=re.S)
    new_text = with_line_count(render_document(meta, body))
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
    new_t = [(E.words(n.text), n) for n in new]
    moved_t = [E.words(m) for m in moved]
    out = []
    for e in old:
        te = E.words(e.text)
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


def accept_rewrite(root: Path, plan: Plan, old_text: str, new_text: str,
                    data: dict[str, Any]) -> None:
    """Take a guarded rewrite: the new MEMORY.md, and in the archive what it moved out."""
    plan.texts[MEMORY_FILE] = new_text
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
        plan.texts[MEMORY_ARCHIVE] = _archive_text(root, keep)
        plan.notes.append(f"{len(keep)} entries moved out of MEMORY.md are kept in "
                          f"{MEMORY_ARCHIVE}"
                          + (f" ({len(superseded)} superseded)" if superseded else ""))
