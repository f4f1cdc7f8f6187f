"""The pre-compaction flush (seed 000 §6.4, seed 003 §9.3): save what matters before it drops.

When a session's context is about to be compacted, the older turns are lost unless the
durable part of them — decisions, lessons, preferences, facts about people, open tasks —
is written to the memory repo first. ``flush`` reads the session (a transcript or chat
messages: :func:`memrepo.transcript.read.read_session`), asks the model with
the ``flush`` prompt when one is available and otherwise uses the extraction heuristics of
``memrepo.lifecycle.extract`` (one set of cue phrases for both commands), and writes:

- dated bullets to today's journal, under one heading per session;
- decisions to MEMORY.md "Key Decisions" (or the project's context when the session names
  a project), lessons and preferences to "Lessons Learned";
- facts about a person to ``knowledge/people/<name>.md`` — only with a clear relationship
  cue or an existing file for that name, since a capitalised word is not a person.

Every bullet carries ``[src: …]``: the transcript's short reference when the session is a
transcript in the repo, else its repo path, its session id, or (outside the repo) its file
name. A note that changes a fact already written supersedes it (the old line is kept,
struck through), as extraction does. A note already present (lexically) is
not written again, so a second flush of the same session writes nothing. Secrets are
redacted before the model sees the session and before anything is written. When nothing
is worth keeping the answer is ``FLUSH_OK`` and no file is touched.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import clock, worktree
from memrepo import entries as E
from memrepo.layout import MEMORY_FILE, journal_path
from memrepo.lifecycle.extract import extractors as X
from memrepo.lifecycle.extract import heuristics as h
from memrepo.lifecycle.extract.apply import Edit, Workspace, decide
from memrepo.lifecycle.extract.runner import context, finish
from memrepo.secrets import find_secrets, redact
from memrepo.transcript.read import Session, Transcript, read_session

FLUSH_OK = "FLUSH_OK"
PROMPT = "flush"
#: The flush does the extraction kind of work: it uses the extraction model of the config.
TASK = "extract"
NOTE_TYPES = ("decision", "lesson", "preference", "fact", "task", "person", "event")
#: Journal prefix per note type (the journal reads as a log of the day).
PREFIX = {
    "decision": "Decided: ",
    "lesson": "Learned: ",
    "preference": "Preference: ",
    "fact": "Noted: ",
    "task": "Open: ",
    "event": "",
}
#: Relationship words that make "Name … my/our <rel>" clearly about a person.
PERSON_RELS = frozenset(
    [
        "colleague",
        "manager",
        "boss",
        "friend",
        "wife",
        "husband",
        "partner",
        "client",
        "coworker",
        "co-worker",
        "cofounder",
        "co-founder",
        "accountant",
        "designer",
        "lawyer",
        "sister",
        "brother",
        "mother",
        "father",
        "teammate",
        "lead",
        "mentor",
        "doctor",
        "landlord",
        "neighbour",
        "neighbor",
        "son",
        "daughter",
        "cousin",
        "uncle",
        "aunt",
        "contractor",
        "recruiter",
        "reviewer",
        "engineer",
        "developer",
        "director",
        "founder",
        "ceo",
        "cto",
    ]
)
NOTES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["notes"],
    "properties": {
        "notes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "text"],
                "properties": {
                    "type": {"type": "string", "enum": list(NOTE_TYPES)},
                    "text": {"type": "string"},
                    "person": {"type": ["string", "null"]},
                    "relationship": {"type": ["string", "null"]},
                },
            },
        }
    },
}


@dataclass
class Note:
    """One durable note found in the session, before it is placed in a file."""

    type: str
    text: str
    person: str | None = None
    relationship: str | None = None


@dataclass
class FlushReport:
    status: str  # FLUSH_OK | written | dry-run
    mode: str  # llm | offline
    source: str
    notes: list[Note] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    fallback: str | None = None
    redactions: int = 0

    @property
    def new(self) -> list[Edit]:
        return [e for e in self.edits if e.action != "NONE"]

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "mode": self.mode,
            "source": self.source,
            "fallback": self.fallback,
            "redactions": self.redactions,
            "notes": [vars(n) for n in self.notes],
            "edits": [
                {
                    "action": e.action,
                    "path": e.path,
                    "section": e.section,
                    "text": e.text,
                    "old": e.old,
                }
                for e in self.edits
            ],
            "written": self.written,
        }


def session_text(t: Transcript, max_chars: int) -> str:
    """The session as ``role: text`` lines for the prompt, oldest first (what compaction drops)."""
    out = "\n\n".join(f"{x.role}: {x.text}" for x in t.turns if x.text.strip())
    return out[:max_chars]


# ---------------------------------------------------------------------------
# Finding notes
# ---------------------------------------------------------------------------


def offline_notes(t: Transcript, known_people: set[str]) -> list[Note]:
    """The cue-phrase heuristics of ``memrepo.lifecycle.extract``: decisions, lessons, tasks,
    people."""
    notes: list[Note] = []
    for turn in t.turns:
        if turn.memory or turn.role not in ("user", "agent"):
            continue
        for s in h.sentences(turn.text):
            if h.excluded(s):
                continue
            text = h.clean(s, turn.role)
            if h.DECISION.search(s):
                notes.append(Note("decision", text))
            elif h.LESSON.search(s):
                notes.append(Note("lesson", text))
            elif turn.role == "user" and h.PREFERENCE.search(s):
                notes.append(Note("preference", text))
            elif h.TASK.search(s):
                notes.append(Note("task", text))
            elif h.FACT.search(s):
                notes.append(Note("fact", text))
            # the cue "my colleague Ana" is lower-case: a sentence may start with it
            for name, rel in h.person_mentions(re.sub(r"^(My|Our) ", _lower, s)):
                if _clearly_person(name, rel, known_people):
                    about = re.sub(r"^My ", "User's ", text) if turn.role == "user" else text
                    notes.append(Note("person", about, name, rel or None))
    return _dedup(notes)


def _lower(m: re.Match[str]) -> str:
    return m[1].lower() + " "


def _clearly_person(name: str, rel: str, known: set[str]) -> bool:
    """Conservative: a relationship word (my colleague Ana) or a people file that exists."""
    if name in known or name.split()[0] in known:
        return True
    return bool(rel) and any(w in PERSON_RELS for w in rel.lower().split())


def _dedup(notes: list[Note]) -> list[Note]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for n in notes:
        k = (n.type, n.text.lower(), (n.person or "").lower())
        if k not in seen:
            seen.add(k)
            out.append(n)
    return out


def llm_notes(
    llm: Any, s: Session, existing: str, day: dt.date, max_chars: int
) -> list[Note] | None:
    """The model's notes for the session, or None (the caller falls back offline)."""
    data = llm.complete_json(
        TASK,
        PROMPT,
        NOTES_SCHEMA,
        max_tokens=1500,
        date=day.isoformat(),
        source=s.src,
        existing=existing or "(nothing yet)",
        session=session_text(s.transcript, max_chars),
    )
    if data is None:
        return None
    notes = []
    for raw in data.get("notes", []):
        text = " ".join(str(raw.get("text", "")).split())[:300]
        if not text or "[REDACTED:" in text:
            continue
        person = (raw.get("person") or "").strip() or None
        if raw["type"] == "person" and not person:
            continue
        notes.append(Note(raw["type"], text, person, (raw.get("relationship") or None)))
    return _dedup(notes)


# ---------------------------------------------------------------------------
# Placing notes
# ---------------------------------------------------------------------------


def items_for(notes: list[Note], s: Session, ctx: X.Context, day: dt.date) -> list[X.Item]:
    """Where each note goes: the journal, and MEMORY.md / a project / a person file."""
    t, date = s.transcript, day.isoformat()
    heading = f"Flush: {' '.join(s.label.split())[:80]}"
    sid = str(t.meta.get("session_id") or "")
    jcreate: dict[str, Any] = {"type": "journal"}
    if sid:
        jcreate["session"] = sid
    out: list[X.Item] = []
    decisions, lessons, people = X.Decisions(), X.Lessons(), X.People()
    for n in notes:
        text = _safe(n.text)
        if not text:
            continue
        if n.type == "person" and n.person:
            it = people.item(t, ctx, text, {"subject": n.person, "relationship": n.relationship})
        else:
            out.append(
                X.Item(
                    "journal",
                    PREFIX.get(n.type, "") + text,
                    journal_path(day),
                    heading,
                    s.src,
                    date,
                    dated=True,
                    level=3,
                    under=date,
                    create=jcreate,
                )
            )
            if n.type == "decision":
                it = decisions.item(t, ctx, text, {})
            elif n.type in ("lesson", "preference"):
                it = lessons.item(t, ctx, text, {})
            else:
                continue
        it.src, it.date = s.src, date
        out.append(it)
    return out


def _safe(text: str) -> str:
    """A one-line bullet text with no secret and nothing that breaks the entry format."""
    text = redact(" ".join(text.split()))[0]
    text = re.sub(r"\[src:", "(src:", text)
    if "[REDACTED:" in text or find_secrets(text):
        return ""
    return text


def _existing_memory(root: Path, day: dt.date) -> str:
    """MEMORY.md and today's journal, for the prompt (the model should not repeat them)."""
    parts = []
    for rel in (MEMORY_FILE, journal_path(day)):
        text = worktree.read_text(root, rel)
        if text is not None:
            parts.append(f"--- {rel}\n" + text[:6000])
    return "\n".join(parts)


def _known_people(root: Path) -> set[str]:
    base = root / "knowledge/people"
    names: set[str] = set()
    for p in sorted(base.glob("*.md")) if base.is_dir() else []:
        if not p.name.startswith("_"):
            full = p.stem.replace("-", " ").title()
            names |= {full, full.split()[0]}
    return names


def keep_history(
    path: str, section: str, existing: list[E.Entry], pending: list[X.Item]
) -> dict[int, tuple[str, int | None, str]]:
    """Extraction's offline decisions, except that an UPDATE which drops words of the old
    entry (a TTL of 15 minutes raised to 30) supersedes it instead: the old fact stays,
    struck through with the date and what replaced it, rather than vanishing in place. An
    UPDATE that only adds detail keeps its in-place form (sources appended). Undecided items
    fall through to the workspace's own ``decide``."""
    out: dict[int, tuple[str, int | None, str]] = {}
    for i, it in enumerate(pending):
        action, old = decide(it.text, existing)
        if action == "UPDATE" and old is not None and E.words(old.text) - E.words(it.text):
            out[i] = ("SUPERSEDE", existing.index(old), it.text)
    return out


def _workspace(root: Path, day: dt.date) -> Workspace:
    """A workspace holding ``day``'s journal (a new one is written even when every note
    goes elsewhere)."""
    ws = Workspace(root)
    ws.lines(journal_path(day), {"type": "journal"}, day.isoformat())
    return ws


def flush(
    root: Path,
    text: str,
    *,
    path: Path | None = None,
    llm: Any = None,
    dry_run: bool = False,
    today: dt.date | None = None,
    source: str | None = None,
    max_chars: int = 24_000,
) -> FlushReport:
    """Flush the session ``text`` (read from ``path``, or stdin) into the repo at ``root``."""
    day = today or clock.today()
    s = read_session(root, text, path, source)
    mode, fallback, notes = "offline", None, None
    if llm is not None and llm.available:
        before = len(llm.usage.fallbacks)
        notes = llm_notes(llm, s, _existing_memory(root, day), day, max_chars)
        if notes is None:
            fallback = (llm.usage.fallbacks[before:] or ["the model gave no usable answer"])[-1]
        else:
            mode = "llm"
    if notes is None:
        notes = offline_notes(s.transcript, _known_people(root))
    report = FlushReport(FLUSH_OK, mode, s.src, notes, fallback=fallback, redactions=s.redactions)
    if not notes:
        return report
    ws = _workspace(root, day)
    report.edits = ws.apply(items_for(notes, s, context(root), day), keep_history)
    if not report.new:
        return report
    if dry_run:
        report.status = "dry-run"
        return report
    # finish() also brings MEMORY.md back under its cap should the flush push it over
    report.written = finish(root, ws, llm if mode == "llm" else None)
    report.status = "written"
    return report


def summary(report: FlushReport) -> str:
    """The human answer: FLUSH_OK, or one line per written note."""
    lines = []
    if report.fallback:
        lines.append(f"# LLM answer unusable ({report.fallback}); used the offline heuristics")
    if report.status == FLUSH_OK:
        kept = sum(1 for e in report.edits if e.action == "NONE")
        lines.append(FLUSH_OK + (f" ({kept} note(s) already in memory)" if kept else ""))
        return "\n".join(lines)
    verb = "would write" if report.status == "dry-run" else "wrote"
    for e in report.new:
        lines.append(f"{e.action.lower():9} {e.path} § {e.section}: {e.text}")
    files = sorted({e.path for e in report.new})
    lines.append(
        f"# {verb} {len(report.new)} note(s) to {len(files)} file(s) ({report.mode},"
        f" source {report.source})"
    )
    return "\n".join(lines)


def dumps(report: FlushReport) -> str:
    return json.dumps(report.as_json(), ensure_ascii=False, indent=1)


__all__ = ["FLUSH_OK", "FlushReport", "Note", "flush", "offline_notes", "summary"]
