"""ADD / UPDATE / SUPERSEDE / NONE (seed 002): weigh a candidate line against its section.

Offline, the decision is lexical: a near-duplicate is NONE, a longer line that contains
an existing one is UPDATE, a line with a replacement cue ("instead of", "switched to",
"no longer"…) that overlaps an existing one SUPERSEDEs it, anything else is ADD. With a
model, the ``reconcile`` prompt decides for the candidates of a section that has entries
(cached by the section's text and the candidates, so a replay costs nothing). DELETE is
never done: a superseded line is kept, struck through and marked.

``Workspace`` holds the knowledge files being edited in memory and writes each changed
one once, atomically, under the journal writers' lock; what another writer added to a
file since the workspace read it (a ``memory remember`` during a flush) is merged in,
never written over (issue #14: an acknowledged note is a note kept).
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import clock, scaffold, worktree
from memrepo import entries as E
from memrepo.atomic import atomic_write
from memrepo.documents import parse_date, parse_document, render_document
from memrepo.errors import FormatError, MemrepoError
from memrepo.layout import JOURNAL_PATH, MEMORY_FILE, PEOPLE_INDEX, PROJECTS_INDEX
from memrepo.lifecycle.extract.extractors import Item
from memrepo.lifecycle.journal import LOCK_FILE, LOCK_WAIT, journal_text
from memrepo.llm import ResultCache, cache_key, template_hash
from memrepo.locks import LockBusy, file_lock

ACTIONS = ("ADD", "UPDATE", "SUPERSEDE", "NONE")
REPLACES = re.compile(
    r"\b(?:instead of|no longer|switch(?:ed|ing)? (?:from|to|back to)|replac(?:e|es|ed|ing)"
    r"|chang(?:e|ed|ing) (?:\w+ )?to|mov(?:e|ed|ing) (?:from|to)|rather than|not anymore"
    r"|from now on|now uses?|deprecated)\b",
    re.I,
)
RECONCILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["decisions"],
    "properties": {
        "decisions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["candidate", "action"],
                "properties": {
                    "candidate": {"type": "integer"},
                    "action": {"type": "string", "enum": list(ACTIONS)},
                    "existing": {"type": ["integer", "null"]},
                    "text": {"type": ["string", "null"]},
                },
            },
        }
    },
}


def decide(text: str, existing: list[E.Entry]) -> tuple[str, E.Entry | None]:
    """The offline ADD / UPDATE / SUPERSEDE / NONE for ``text`` against ``existing``."""
    new = E.words(text)
    if not new:
        return "NONE", None
    best: tuple[float, E.Entry | None] = (0.0, None)
    for e in existing:
        if e.superseded:
            continue
        old = E.words(e.text)
        if not old:
            continue
        inter = len(new & old)
        if old == new or inter / len(new) >= 0.9:
            return "NONE", e
        j = inter / len(new | old)
        if j > best[0]:
            best = (j, e)
    j, e = best
    if e is not None and REPLACES.search(text) and j >= 0.2 and len(new & E.words(e.text)) >= 2:
        return "SUPERSEDE", e
    for e in existing:
        old = E.words(e.text)
        if not e.superseded and old and len(new & old) / len(old) >= 0.8 and len(new) > len(old):
            return "UPDATE", e
    return "ADD", None


def said_elsewhere(path: str, lines: list[str], text: str) -> bool:
    """A day's journal already says ``text`` in another section: the pre-compaction flush
    wrote the decision, the session-end extraction is about to write it again."""
    if not JOURNAL_PATH.match(path):
        return False
    return decide(text, E.section_entries(lines, (-1, len(lines))))[0] == "NONE"


def known(it: Item, existing: list[E.Entry]) -> bool:
    """This source already said this here (a replay): nothing to decide, nothing to ask."""
    new = E.words(it.text)
    return bool(new) and any(
        it.src in e.srcs and len(new & E.words(e.text)) / len(new) >= 0.5 for e in existing
    )


@dataclass
class Edit:
    action: str
    path: str
    section: str
    text: str
    src: str
    old: str | None = None


@dataclass
class Workspace:
    """Knowledge files under edit: loaded on first use, written once at the end."""

    root: Path
    files: dict[str, list[str]] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)
    touched_dates: dict[str, str] = field(default_factory=dict)
    sessions: dict[str, list[str]] = field(default_factory=dict)
    edits: list[Edit] = field(default_factory=list)
    #: each loaded file's text as read (or as started, when it was missing): what
    #: :meth:`write` compares the disk with, to keep what others wrote since
    read: dict[str, str] = field(default_factory=dict)

    def lines(self, path: str, create: dict[str, Any] | None = None, date: str = "") -> list[str]:
        if path not in self.files:
            text = worktree.read_text(self.root, path)
            if text is not None:
                self.load(path, text)
            else:
                self.load(path, new_file(self, path, create or {}, date))
                self.changed.add(path)
        return self.files[path]

    def load(self, path: str, text: str) -> list[str]:
        """Hold ``text`` as ``path``'s lines, remembering it as read."""
        self.read[path] = text
        self.files[path] = text.split("\n")
        return self.files[path]

    def apply(self, items: list[Item], decider: Any = None, parallel: int = 1) -> list[Edit]:
        """Apply candidates grouped by (file, section); ``decider`` may override decisions.

        The sections are independent, so the decider (a model call each) is asked for
        all of them first — up to ``parallel`` at once — and the answers applied after.
        """
        done: list[Edit] = []
        groups: dict[tuple[str, str], list[Item]] = {}
        for it in items:
            groups.setdefault((it.path, it.section), []).append(it)
        prepared: list[tuple[str, str, list[E.Entry], list[Item]]] = []
        for (path, section), group in groups.items():
            first = group[0]
            lines = self.lines(path, first.create, first.date)
            span = E.ensure_section(lines, section, first.level, first.under)
            existing = E.section_entries(lines, span)
            pending = []
            for it in group:
                if known(it, existing):
                    done.append(Edit("NONE", it.path, it.section, it.text, it.src))
                else:
                    pending.append(it)
            prepared.append((path, section, existing, pending))
        all_verdicts = _ask(decider, prepared, parallel)
        for (path, section, _, pending), verdicts in zip(prepared, all_verdicts, strict=True):
            lines = self.files[path]
            for i, it in enumerate(pending):
                span = E.ensure_section(lines, section, it.level, it.under)
                existing = E.section_entries(lines, span)
                action, old, text = "ADD", None, it.text
                if verdicts and i in verdicts:
                    action, idx, text = verdicts[i]
                    text = text or it.text
                    old = existing[idx] if idx is not None and 0 <= idx < len(existing) else None
                    if action in ("UPDATE", "SUPERSEDE") and (old is None or old.superseded):
                        action = "ADD"
                else:
                    action, old = decide(it.text, existing)
                if action == "ADD" and said_elsewhere(path, lines, it.text):
                    action = "NONE"
                edit = self._one(lines, span, it, action, old, text)
                if edit.action != "NONE":
                    self.changed.add(path)
                    self.touched_dates[path] = max(self.touched_dates.get(path, ""), it.date)
                    sid = it.create.get("session")
                    if sid:
                        self.sessions.setdefault(path, []).append(str(sid))
                done.append(edit)
        self.edits += done
        return done

    def _one(
        self,
        lines: list[str],
        span: tuple[int, int],
        it: Item,
        action: str,
        old: E.Entry | None,
        text: str,
    ) -> Edit:
        new = E.Entry(0, text.strip(), it.date if it.dated else None, (it.src,))
        if action == "NONE":
            return Edit("NONE", it.path, it.section, text, it.src, old.text if old else None)
        if action == "UPDATE" and old is not None:
            srcs = tuple(dict.fromkeys([*old.srcs, it.src]))
            lines[old.line_no] = E.Entry(0, new.text, new.date, srcs).render(it.dated)
            return Edit("UPDATE", it.path, it.section, text, it.src, old.text)
        if action == "SUPERSEDE" and old is not None:
            lines[old.line_no] = E.superseded_line(old, it.date, new.text, it.dated)
            E.insert_entry(lines, span, new.render(it.dated))
            return Edit("SUPERSEDE", it.path, it.section, text, it.src, old.text)
        E.insert_entry(lines, span, new.render(it.dated))
        return Edit("ADD", it.path, it.section, text, it.src)

    def write(self) -> list[str]:
        """Write every changed file, atomically, under the journal writers' lock (the one
        ``memory remember`` and MCP writes take); a file written by someone else since it
        was read keeps the lines added there (:func:`merge_written`). The workspace is
        empty afterwards."""
        out = {}
        try:
            with (file_lock(self.root / LOCK_FILE, wait=LOCK_WAIT, poll=0.005),
                  worktree.writing(self.root)):  # no sync's rebase between read and write
                for path, text in self.rendered().items():
                    full = self.root / path
                    disk = worktree.read_text(self.root, path)
                    base = self.read.get(path)
                    if disk is not None and base is not None and disk not in (base, text):
                        text = merge_written(base, disk, text, path)
                    if disk != text:
                        atomic_write(full, text, root=self.root)
                        out[path] = text
        except LockBusy:
            raise MemrepoError(f"another writer has held {LOCK_FILE} for {LOCK_WAIT:g} s; "
                               "nothing was written, try again") from None
        self.changed.clear()
        self.files.clear()
        self.read.clear()
        return sorted(out)

    def rendered(self) -> dict[str, str]:
        """New text of every changed file (frontmatter ``updated`` / ``sessions`` updated)."""
        result: dict[str, str] = {}
        for path in sorted(self.changed):
            text = "\n".join(self.files[path])
            doc = parse_document(text, path)
            meta = dict(doc.meta)
            when = self.touched_dates.get(path)
            if "updated" in meta and when:
                cur = parse_date(meta["updated"])
                new = dt.date.fromisoformat(when)
                if cur is None or new > cur:
                    meta["updated"] = new
            if path in self.sessions and meta.get("type") == "journal":
                have = [str(s) for s in meta.get("sessions") or []]
                meta["sessions"] = list(dict.fromkeys([*have, *self.sessions[path]]))
            out = render_document(meta, doc.body) if doc.has_frontmatter else text
            result[path] = out if out.endswith("\n") else out + "\n"
        return result


def merge_written(base: str, disk: str, new: str, path: str) -> str:
    """``new`` (an edit of ``base``) keeping what another writer put on disk since
    ``base`` was read: body lines added there are inserted after the line they followed
    (``difflib``, base to disk), frontmatter keys changed there keep the disk's value
    (a list: both sides' items; a date both changed: the later). Lines removed or
    rewritten on disk are not removed here: a lost line is worse than one kept twice."""
    try:
        b, d, n = (parse_document(t, path) for t in (base, disk, new))
    except FormatError:
        return _merge_lines(base, disk, new)
    if not (b.has_frontmatter and d.has_frontmatter and n.has_frontmatter):
        return _merge_lines(base, disk, new)
    meta = dict(n.meta)
    for key, value in d.meta.items():
        was, ours = b.meta.get(key), meta.get(key)
        if value in (was, ours):
            continue
        if isinstance(value, list) and isinstance(ours, list):
            meta[key] = [*ours, *(v for v in value if v not in ours)]
        elif ours == was:
            meta[key] = value
        elif isinstance(value, dt.date) and isinstance(ours, dt.date):
            meta[key] = max(value, ours)
    body = _merge_lines(b.body, d.body, n.body)
    out = render_document(meta, body)
    return out if out.endswith("\n") else out + "\n"


def _merge_lines(base: str, disk: str, new: str) -> str:
    """``new`` with the lines ``disk`` added to ``base`` inserted where they sat."""
    bl, dl, nl = base.split("\n"), disk.split("\n"), new.split("\n")
    to_new = difflib.SequenceMatcher(None, bl, nl, autojunk=False).get_opcodes()
    ours = set(nl) - set(bl)
    adds: list[tuple[int, list[str]]] = []  # (position in base, lines added there)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, bl, dl, autojunk=False).get_opcodes():
        if tag in ("insert", "replace"):
            extra = [x for x in dl[j1:j2] if x not in bl[i1:i2] and not (x.strip() and x in ours)]
            if extra:
                adds.append((i2 if tag == "replace" else i1, extra))
    out = list(nl)
    for pos, lines in reversed(adds):  # from the end: earlier positions stay valid
        at = _new_position(to_new, pos, len(nl))
        out[at:at] = lines
    return "\n".join(out)


def _new_position(ops: list[Any], pos: int, size: int) -> int:
    """Where a line inserted before ``base[pos]`` goes in ``new``: after the line it
    followed in base (after what replaced it, when new changed that line)."""
    if pos == 0:
        return 0
    k = pos - 1
    for tag, i1, i2, j1, j2 in ops:
        if i1 <= k < i2:
            return j1 + (k - i1) + 1 if tag == "equal" else j2
    return size


def _ask(decider: Any, prepared: list[tuple[str, str, list[E.Entry], list[Item]]],
         parallel: int) -> list[Any]:
    """The decider's verdicts for each prepared section (None where it was not asked)."""
    out: list[Any] = [None] * len(prepared)
    asks = [i for i, p in enumerate(prepared) if decider and p[3]]
    if parallel > 1 and len(asks) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(parallel, len(asks))) as pool:
            futures = {i: pool.submit(decider, *prepared[i]) for i in asks}
            for i, f in futures.items():
                out[i] = f.result()
    else:
        for i in asks:
            out[i] = decider(*prepared[i])
    return out


def new_file(ws: Workspace, path: str, create: dict[str, Any], date: str) -> str:
    """A knowledge file that does not exist yet, with the frontmatter its path requires."""
    day = dt.date.fromisoformat(date) if date else clock.today()
    typ = create.get("type")
    if path == MEMORY_FILE:
        return scaffold.render_template("MEMORY.md", day)
    if typ == "journal":
        return journal_text(day)
    if typ == "project_context":
        p = create["project"]
        _index_line(ws, PROJECTS_INDEX, "projects_active.md", p, "", day)
        return render_document(
            {"type": "project_context", "project": p, "updated": day},
            f"# {p} — Context\n\n## Key Decisions\n",
        )
    if typ == "person":
        name = create["name"]
        meta: dict[str, Any] = {"type": "person", "name": name}
        if create.get("relationship"):
            meta["relationship"] = create["relationship"]
        meta["updated"] = day
        _index_line(
            ws,
            PEOPLE_INDEX,
            "people_index.md",
            name,
            create.get("relationship", ""),
            day,
        )
        return render_document(meta, f"# {name}\n\n## Context\n")
    title = create.get("title") or Path(path).stem.replace("-", " ").title()
    return render_document({"type": typ or "reference", "updated": day}, f"# {title}\n")


def _index_line(
    ws: Workspace, path: str, template: str, name: str, what: str, day: dt.date
) -> None:
    """Name a new project or person in its index file (``- **name** — what``)."""
    if path not in ws.files:
        text = worktree.read_text(ws.root, path)
        if text is None:
            text = scaffold.render_template(template, day)
        ws.load(path, text)
    lines = ws.files[path]
    if any(line.startswith(f"- **{name}**") for line in lines):
        return
    E.insert_entry(lines, (0, len(lines)), f"- **{name}**" + (f" — {what}" if what else ""))
    ws.changed.add(path)
    ws.touched_dates[path] = max(ws.touched_dates.get(path, ""), day.isoformat())


def llm_decider(llm: Any, cache: ResultCache) -> Any:
    """A ``decider`` that asks the model (cached) for sections that already have entries."""

    def decide_with_llm(
        path: str, section: str, existing: list[E.Entry], group: list[Item]
    ) -> dict[int, tuple[str, int | None, str]] | None:
        active = [e for e in existing if not e.superseded]
        if not active or not llm.available:
            return None
        listing = "\n".join(f"{i}. {e.text}" for i, e in enumerate(existing) if not e.superseded)
        cands = "\n".join(f"{i}. {it.text}" for i, it in enumerate(group))
        model = llm.model_for("extract")
        k = cache_key("reconcile", model, template_hash("reconcile"), path, section, listing, cands)
        data = cache.get(k)
        if data is None:
            data = llm.complete_json(
                "extract",
                "reconcile",
                RECONCILE_SCHEMA,
                path=path,
                section=section,
                existing=listing,
                candidates=cands,
            )
            if data is None:
                return None
            cache.put(k, data)
        else:
            llm.usage.note_cached()
        out: dict[int, tuple[str, int | None, str]] = {}
        for d in data.get("decisions", []):
            c = d.get("candidate")
            if isinstance(c, int) and 0 <= c < len(group):
                out[c] = (d["action"], d.get("existing"), (d.get("text") or "").strip())
        return out

    return decide_with_llm
