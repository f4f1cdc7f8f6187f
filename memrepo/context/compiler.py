"""The compilation pipeline (seed 000 §6.2–6.3): slots P0–P4 filled within one token budget.

Each slot has a cap from the config (KB in the config, tokens here) and everything shares
the total budget: a section is added only if its tokens (marker included) fit both. P0 is
filled first and shared fairly between the identity files, so none of them is dropped
while another is whole. Nothing enters twice: every included span is remembered and a
subscription or passage that overlaps one is skipped, and P3 leaves the ``--session`` file
to P4 (which runs after it). ``--shared`` keeps MEMORY.md out of every slot, not only P1.
A last check on the assembled text
drops the lowest-priority sections should a non-additive tokenizer overshoot.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import clock, layout, namespaces, worktree
from memrepo.context import retrieve as retr
from memrepo.context import scopes
from memrepo.context.restate import Shown
from memrepo.context.sections import (
    SEP,
    Count,
    Lines,
    Omitted,
    Section,
    body_lines,
    fit,
    join,
    make_section,
    marker_cost,
)
from memrepo.context.tokens import cost, counter, kb_to_tokens
from memrepo.documents import read_repo_document
from memrepo.errors import FormatError, MemrepoError
from memrepo.index.signals import record_hits
from memrepo.layout import IDENTITY_DIR, JOURNAL_DIR, MEMORY_FILE, PROJECTS_INDEX, TURN_HEADER
from memrepo.repo import MemoryRepo
from memrepo.topics import subscription_problem
from memrepo.transcript.messages import transcript_role
from memrepo.transcript.read import Turn, read_history

#: Where MEMORY.md's overflow goes (memrepo.lifecycle.cap): as private as MEMORY.md itself.
MEMORY_ARCHIVE_DIR = "archive/memory/"
SHARED_WHY = "MEMORY.md is for the main session only"
#: Below this many tokens left, P3 stops looking for a passage small enough.
MIN_USEFUL = 24
#: Linked files pulled in: from the first few recalled files, a few each, each capped.
LINK_SOURCES, LINKS_PER_SOURCE, LINK_TOKENS = 3, 2, 300


@dataclass
class CompileRequest:
    message: str = ""
    budget: int | None = None  # tokens; None: context_compiler.token_budget
    session: Path | None = None
    shared: bool = False  # a shared session leaves MEMORY.md out (seed 000 §6.2)
    events: list[str] = field(default_factory=list)
    slots: frozenset[int] = frozenset({0, 1, 2, 3, 4})
    max_chars: int | None = None  # a second cap, in characters (hook output)
    today: dt.date | None = None
    record_hits: bool = True
    gate: Any = None  # a memrepo.context.watchers.gate.Gate (tests inject one)
    passages: int = retr.LIMIT  # P3's search: how many ranked passages it asks for
    #: an open memrepo.index.search.Search for P3 (``memory mcp``'s); None: P3 opens one
    engine: Any = None
    said: str | None = None  # the agent's last reply, for output watchers (else --session)
    cwd: str | Path | None = None  # the agent's folder: its project's rules (context.scopes)
    namespace: str | None = field(default_factory=namespaces.current)  # docs/namespaces.md


@dataclass
class Compiled:
    sections: list[Section]
    omitted: list[Omitted]
    budget: int
    tokens: int
    notes: list[str]
    topics: Any = None  # memrepo.context.watchers.match.MatchResult

    def prompt(self) -> str:
        return join(self.sections)

    def as_json(self, explain: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "budget": self.budget,
            "tokens": self.tokens,
            "sections": [s.as_json() for s in self.sections],
            "topics": [
                {"topic": a.topic.name, "reason": a.reason}
                for a in (self.topics.activated if self.topics else [])
            ],
            "corrections": [
                {"topic": t, "hint": h}
                for t, h in (self.topics.corrections() if self.topics else [])
            ],
            "notes": self.notes,
            "prompt": self.prompt(),
        }
        if explain:
            d["omitted"] = [o.as_json() for o in self.omitted]
            if self.topics:
                d["dropped_topics"] = [
                    {"topic": a.topic.name, "reason": a.reason} for a in self.topics.dropped
                ]
                d["gate_mode"] = self.topics.gate_mode
        return d


class _Compiler:
    def __init__(self, repo: MemoryRepo, req: CompileRequest):
        self.root = repo.root
        self.cfg = repo.config
        self.req = req
        cc = self.cfg["context_compiler"]
        tokenizer = str(cc.get("tokenizer", "fast"))
        #: a section's tokens as shown; ``cost``: what the budget is charged for it
        self.count: Count = counter(tokenizer)
        self.cost = cost(tokenizer, self.count)
        self.budget = int(req.budget if req.budget is not None else cc["token_budget"])
        self.left: float = self.budget
        self.chars_left = req.max_chars if req.max_chars is not None else 1 << 62
        self.sep = self.cost(SEP)
        self.sections: list[Section] = []
        self.placed = 0  # sections placed so far (Section.placed)
        self.omitted: list[Omitted] = []
        self.shown = Shown()  # P3's transcript passages: a derived one saying them again goes
        self.notes: list[str] = []
        self.spans: dict[str, list[tuple[int, int]]] = {}
        self.files: dict[str, tuple[Lines, int] | None] = {}
        self.texts: dict[str, list[str] | None] = {}  # P3's files, read once a compile
        self.topics: Any = None
        self.session_rel = self._session_rel()
        self.view = namespaces.View(self.root, req.namespace)  # what the namespace sees

    def _session_rel(self) -> str | None:
        """The ``--session`` file's repo path (None outside the repo or with no session)."""
        if self.req.session is None:
            return None
        try:
            return self.req.session.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return None

    def _private(self, rel: str) -> bool:
        """MEMORY.md (and its archive) stay out of a shared session in every slot, not
        only P1: a subscription or a search hit would leak it just the same."""
        return self.req.shared and (rel == MEMORY_FILE or rel.startswith(MEMORY_ARCHIVE_DIR))

    # -- bookkeeping ------------------------------------------------------------------
    def _add(self, s: Section, pad: float = 0.0) -> None:
        s.placed = self.placed
        self.placed += 1
        self.sections.append(s)
        self.left -= self.cost(s.render()) + pad + self.sep
        self.chars_left -= len(s.render()) + len(SEP)
        if s.unit == "line":
            self.spans.setdefault(s.path, []).append((s.start_line, s.end_line))

    def _overlaps(self, path: str, a: int, b: int) -> bool:
        return any(a <= y and x <= b for x, y in self.spans.get(path, ()))

    def _omit(self, slot: int, kind: str, path: str, reason: str) -> None:
        self.omitted.append(Omitted(slot, kind, path, reason))

    def _file(self, rel: str) -> tuple[Lines, int] | None:
        """(body lines, last line number) of a repo file, or None (and a note) if unreadable."""
        if rel not in self.files:
            try:
                doc = read_repo_document(self.root, rel)
            except FormatError as exc:
                self.notes.append(str(exc))
                self.files[rel] = None
            else:
                lines = self.view.lines(rel, body_lines(doc.body, doc.body_line, rel))
                last = doc.body_line + doc.body.count("\n")
                self.files[rel] = (lines, last)
        return self.files[rel]

    def _place(
        self, slot: int, kind: str, path: str, lines: Lines, last: int, cap: float, why: str,
        tail: bool = False, unit: str = "line", next_line: int | None = None,
    ) -> Section | None:  # fmt: skip
        """Fit ``lines`` into min(cap, what is left); add the section or say why not.

        A P3 passage of a file P3 already holds is a continuation: it will sit right
        below that file's passages with a marker of a few characters (see :meth:`run`),
        or none at all when it continues one of them (only blank lines between, see
        :meth:`_joins`); ``next_line`` is the file's first line after ``lines`` that is
        not blank.
        """
        allowance = min(cap, self.left) - self.sep
        cont = slot == 3 and any(x.slot == 3 and x.path == path for x in self.sections)
        joins = cont and self._joins(path, lines.numbered[0][0], next_line)
        chars = self.chars_left - len(SEP) - len(path) - 64

        def fitted(joined: bool) -> tuple[list[tuple[int, str]], bool] | None:
            # a joined passage's role line is shorter than the turn header fit counts
            mc = 0 if joined else marker_cost(slot, kind, path, last, self.cost, unit, cont)
            return fit(lines, allowance - mc, self.cost, tail=tail, max_chars=chars,
                       text_only=slot == 3)

        got = fitted(joins)
        if joins and got is not None and got[1]:  # a cut passage is never joined
            joins, got = False, fitted(False)
        if got is None:
            left = max(int(allowance), 0)
            self._omit(slot, kind, path, f"does not fit ({left} tokens left for it)")
            return None
        rows, cut = got
        s = make_section(slot, kind, path, rows, why, cut, self.count, unit, cont, joins,
                         None if cut else next_line)
        # a P3 marker may come to span a run of passages below it: charged as wide as
        # the file's last line allows (sections.lay_out)
        pad = self.cost(" " * (len(str(last)) - len(str(s.end_line)))) if slot == 3 else 0.0
        if (
            self.cost(s.render()) + pad + self.sep > min(cap, self.left)
            or len(s.render()) + len(SEP) > self.chars_left
        ):
            self._omit(slot, kind, path, "does not fit with its marker")
            return None
        self._add(s, pad)
        if cut:
            s.why += f"; cut to {s.tokens} tokens at a section boundary"
        return s

    def _joins(self, path: str, start: int, next_line: int | None) -> bool:
        """Whether a P3 passage of ``path`` from ``start`` (``next_line``: the first line
        after it that is not blank) will sit in one run with a passage P3 holds, so that
        one of the two needs no marker (:func:`~memrepo.context.sections.lay_out`)."""
        return any(
            x.slot == 3 and x.path == path and not x.cut
            and (x.next_line == start or (next_line is not None and x.start_line == next_line))
            for x in self.sections
        )

    def _place_file(
        self, slot: int, kind: str, rel: str, cap: float, why: str, tail: bool = False
    ) -> Section | None:
        got = self._file(rel)
        if got is None:
            return None
        lines, last = got
        if lines.empty:
            self._omit(slot, kind, rel, "empty")
            return None
        return self._place(slot, kind, rel, lines, last, cap, why, tail)

    def _place_group(
        self,
        slot: int,
        kind: str,
        rels: list[str],
        cap: float,
        why: dict[str, str],
        tail: bool = False,
    ) -> None:
        """Share ``cap`` fairly (water-filling): small files whole, large ones cut evenly."""
        present = []
        for i, rel in enumerate(rels):
            got = self._file(rel)
            if got is None or got[0].empty:
                if got is not None:
                    self._omit(slot, kind, rel, "empty")
                continue
            size = (
                self.cost("\n".join(t for _, t in got[0].numbered))
                + marker_cost(slot, kind, rel, got[1], self.cost)
                + self.sep
            )
            present.append((size, i, rel))
        placed: list[tuple[int, Section]] = []
        pool = min(cap, self.left)
        start_left = self.left
        present.sort()
        for k, (_size, i, rel) in enumerate(present):
            used = start_left - self.left
            share = (pool - used) // (len(present) - k)
            s = self._place_file(slot, kind, rel, share, why[rel], tail)
            if s is not None:
                placed.append((i, self.sections.pop()))
        for _, s in sorted(placed, key=lambda p: p[0]):
            self.sections.append(s)

    def _identity_exists(self) -> bool:
        base = self.root / IDENTITY_DIR
        return base.is_dir() and any(base.glob("*.md"))

    # -- slots ------------------------------------------------------------------------
    def p0(self) -> None:
        cap = kb_to_tokens(self.cfg["context_compiler"]["identity_budget_kb"])
        found = scopes.find(self.root, self.req.cwd)
        if found.scoped:  # a global, project or local file: merged (docs/scopes.md)
            scopes.place(self, found, cap)
            return
        rels = found.repo
        self._place_group(0, "identity", rels, cap, dict.fromkeys(rels, "identity: always loaded"))

    def p1(self) -> None:
        cc = self.cfg["context_compiler"]
        if self.req.shared:
            self._omit(1, "memory", MEMORY_FILE, f"--shared: {SHARED_WHY}")
        elif (self.root / MEMORY_FILE).is_file():
            self._place_file(1, "memory", MEMORY_FILE, kb_to_tokens(cc["memory_budget_kb"]),
                             "curated memory: main session")
        today = self.req.today or clock.today()
        days = {today: "today's journal", today - dt.timedelta(days=1): "yesterday's journal"}
        rels, why = [], {}
        for day, label in days.items():
            rel = f"{JOURNAL_DIR}/{day.isoformat()}.md"
            if (self.root / rel).is_file():
                rels.append(rel)
                why[rel] = f"{label}: newest entries kept"
        self._place_group(1, "journal", rels, kb_to_tokens(cc["journal_budget_kb"]), why, tail=True)
        if (self.root / PROJECTS_INDEX).is_file():
            cap = kb_to_tokens(cc.get("projects_budget_kb", 1))
            index = self._place_file(1, "projects", PROJECTS_INDEX, cap, "active projects index")
            rels = [r for r in layout.project_contexts(index.text if index else "")
                    if (self.root / r).is_file()]  # its projects' current state beside it
            self._place_group(1, "projects", rels, kb_to_tokens(cc["project_context_budget_kb"]),
                              dict.fromkeys(rels, "an active project's context"))

    def match(self) -> None:
        from memrepo.context.watchers.fired import live
        from memrepo.context.watchers.match import match_topics

        said = self._last_agent_turn()
        # cron topics the scheduler fired in the last hours ride along (seed 000 §4.4)
        events = list(dict.fromkeys([*self.req.events, *live(self.root)]))
        if not (self.req.message or events or said):
            return
        self.topics = match_topics(
            self.root, self.req.message, events=events,
            config=self.cfg["watchers"], gate=self.req.gate,
        )  # fmt: skip
        if said:  # seed 000 §4.3: the agent's own last reply fires corrective topics
            steer = match_topics(self.root, said, scope="output", config=self.cfg["watchers"],
                                 gate=self.req.gate, log=False)
            have = {a.topic.name for a in self.topics.activated}
            self.topics.activated += [a for a in steer.activated if a.topic.name not in have]
        for p in self.topics.problems:
            if p.skipped:
                self.notes.append(f"{p.path}: {p.message} (topic skipped)")
            else:
                self._omit(2, "subscription", p.path, f"refused: {p.message}")

    def _last_agent_turn(self) -> str:
        """What the agent said last: as the caller read it, else in the ``--session``."""
        if self.req.said is not None or self.req.session is None:
            return self.req.said or ""
        try:
            turns = read_history(self.req.session)
        except (MemrepoError, OSError, ValueError):
            return ""  # P4 reports a session it cannot read
        for turn in reversed(turns):
            if transcript_role(turn.role) == "agent":
                first, _, rest = turn.text.partition("\n")
                return rest if TURN_HEADER.match(first) else turn.text
        return ""

    def p2(self) -> None:
        if not self.topics:
            return
        pool = kb_to_tokens(self.cfg["context_compiler"]["topic_budget_kb"])
        used = 0
        for a in self.topics.activated:
            t = a.topic
            cap = pool - used
            if t.max_context_kb is not None:
                cap = min(cap, kb_to_tokens(float(t.max_context_kb)))
            before = self.left
            lines = body_lines(t.body, t.body_line, t.path)
            if not lines.empty:
                self._place(
                    2,
                    "topic",
                    t.path,
                    lines,
                    t.body_line + t.body.count("\n"),
                    cap,
                    f"topic {t.name}: {a.reason}",
                )
            for rel in t.subscriptions:
                topic_left = cap - (before - self.left)
                why = subscription_problem(self.root, rel)
                if why:
                    self._omit(2, "subscription", rel, f"refused: {why}")
                elif self._private(rel):
                    self._omit(2, "subscription", rel, f"--shared: {SHARED_WHY}")
                elif rel in self.spans:
                    self._omit(2, "subscription", rel, f"already included (subscribed by {t.name})")
                else:
                    self._place_file(
                        2, "subscription", rel, topic_left, f"subscribed by topic {t.name}"
                    )
            used += before - self.left

    def p3(self) -> None:
        words = [self.req.message]
        if self.topics:
            for a in self.topics.activated:
                words += a.topic.all_keywords()
        query = " ".join(w for w in words if w).strip()
        if not query:
            return
        reserve = 0
        if self.req.session is not None and 4 in self.req.slots:
            reserve = int(
                self.left * float(self.cfg["context_compiler"].get("history_share", 0.25))
            )
        floor = reserve
        passages, why = retr.retrieve(self.root, query, self.cfg["search"], self.req.passages,
                                      now=self.req.today, engine=self.req.engine)
        if why:
            self.notes.append(why)
        for rank, p in enumerate(passages, 1):
            if self.left - floor < MIN_USEFUL:
                self._omit(3, "knowledge", p.path, f"rank {rank}: P3 budget used up")
                continue
            if p.path.startswith("topics/"):
                self._omit(
                    3, "knowledge", p.path, f"rank {rank}: topic files enter only when activated"
                )
                continue
            if self._private(p.path):
                self._omit(3, "knowledge", p.path, f"rank {rank}: --shared: {SHARED_WHY}")
                continue
            if p.path == self.session_rel and 4 in self.req.slots:
                # P4 carries the session (newest turns first): a passage of it here would
                # repeat lines P4 includes, or spend P3's budget on what P4 is for
                self._omit(3, "knowledge", p.path, f"rank {rank}: the session, left to P4")
                continue
            if self._overlaps(p.path, p.start_line, p.end_line):
                self._omit(3, "knowledge", p.path, f"rank {rank}: already included")
                continue
            got = self._span(p.path, p.start_line, p.end_line)
            if got is None or got[0].empty:
                continue
            lines, next_line = got
            if self.shown.restates(p.path, "\n".join(t for _, t in lines.numbered)):
                self._omit(3, "knowledge", p.path, f"rank {rank}: says what its source above does")
                continue
            self.shown.add(self._place(
                3, "knowledge", p.path, lines, p.end_line, self.left - floor,
                f"search rank {rank} (score {score_text(p.score)}) for the message"
                + (" and topic keywords" if query != self.req.message.strip() else ""),
                next_line=next_line,
            ))  # fmt: skip
        self._linked(floor)

    def _linked(self, floor: int) -> None:
        """A file a recalled passage links to (``[[name]]``, ``[text](file.md)``) comes in
        after the ranked passages, head first, while P3 has room (seed 003 §5)."""
        recalled = list(dict.fromkeys(
            s.path for s in self.sections if s.slot == 3 and s.kind == "knowledge"))
        if not recalled or self.left - floor < MIN_USEFUL:
            return
        from memrepo.index.links import linked

        try:
            targets = linked(self.root, recalled[:LINK_SOURCES])
        except Exception as exc:  # the index is a cache: no links is no pull-in
            self.notes.append(f"links unavailable ({type(exc).__name__}: {exc})")
            return
        have = {s.path for s in self.sections}
        for src, tos in targets.items():
            for to in tos[:LINKS_PER_SOURCE]:
                if to in have or to.startswith("topics/") or self._private(to):
                    continue
                if self.left - floor < MIN_USEFUL:
                    self._omit(3, "linked", to, f"linked from {src}: P3 budget used up")
                    return
                have.add(to)
                cap = min(LINK_TOKENS, self.left - floor)
                self._place_file(3, "linked", to, cap, f"linked from {src}")

    def _span(self, rel: str, a: int, b: int) -> tuple[Lines, int | None] | None:
        """Lines ``a``..``b`` of a file, and the number of its first line after them that
        is not blank (None: there is none)."""
        if rel not in self.texts:
            try:
                data = worktree.read_plain(self.root, rel)
                self.texts[rel] = data.decode("utf-8").split("\n")
            except (OSError, UnicodeDecodeError, FormatError):
                self.texts[rel] = None
        rows = self.texts[rel]
        if rows is None:
            return None
        after = next((n for n in range(b + 1, len(rows) + 1) if rows[n - 1].strip()), None)
        return self.view.lines(rel, body_lines("\n".join(rows[a - 1 : b]), a, rel)), after

    def p4(self) -> None:
        if self.req.session is None:
            return
        path = self.req.session
        shown = self.session_rel or str(path)
        turns = read_history(path)
        kept: list[Section] = []
        for k, turn in enumerate(reversed(turns)):
            s = self._turn(turn, shown, first=k == 0)
            if s is None:
                older = len(turns) - k
                self._omit(4, "history", shown, f"{older} older turn(s) left out: budget used up")
                break
            kept.append(s)
        # newest first was the order of choice; the prompt reads oldest first
        for s in kept:
            self.sections.remove(s)
        self.sections.extend(reversed(kept))

    def _turn(self, turn: Turn, shown: str, first: bool) -> Section | None:
        """One turn whole; only the newest may be cut (so the latest message always shows)."""
        body = turn.text if turn.unit == "line" else f"[{turn.role}] {turn.text}"
        raw = body.split("\n")
        step = 1 if turn.unit == "line" else 0
        lines = Lines(shown, [(turn.start + i * step, t.rstrip()) for i, t in enumerate(raw)])
        mc = marker_cost(4, "history", shown, turn.end, self.cost, turn.unit)
        whole = self.cost(body) + mc + self.sep
        if whole > self.left and not first:
            return None
        why = f"session history ({turn.role}), newest first"
        return self._place(4, "history", shown, lines, turn.end, self.left, why, unit=turn.unit)

    # -- assembly ---------------------------------------------------------------------
    def run(self) -> Compiled:
        slots = self.req.slots
        if 0 in slots:
            self.p0()
            if self._identity_exists() and not self.sections:
                # P0 is never dropped in favour of anything else: nothing else goes in
                self.notes.append("the budget cannot hold a line of identity: nothing compiled")
                slots = frozenset()
        if 1 in slots:
            self.p1()
        if 2 in slots or 3 in slots:
            self.match()
        if 2 in slots:
            self.p2()
        if 3 in slots:
            self.p3()
        if 4 in slots:
            self.p4()
        # slot order; within P3 each file's passages together, in the file's order (a
        # conversation reads in its own order, and passages next to each other join),
        # the files in the order of their best passage
        order = {id(s): i for i, s in enumerate(self.sections)}
        first: dict[str, int] = {}
        for s in self.sections:
            if s.slot == 3:
                first.setdefault(s.path, order[id(s)])
        self.sections.sort(
            key=lambda s: (s.slot, first[s.path], s.start_line) if s.slot == 3
            else (s.slot, 0, order[id(s)])
        )
        text = join(self.sections)
        total = self.count(text)
        cap_chars = self.req.max_chars if self.req.max_chars is not None else 1 << 62
        while self.sections and (total > self.budget or len(text) > cap_chars):
            # the lowest priority: the last slot, in it the last placed (P3's lowest rank,
            # P4's oldest turn: the newest was placed first)
            s = max(self.sections, key=lambda x: (x.slot, x.placed))
            self.sections.remove(s)
            self._omit(s.slot, s.kind, s.path, "dropped by the final budget check")
            text = join(self.sections)
            total = self.count(text)
        if self.req.record_hits and self.cfg["search"].get("record_hits", True):
            refs = [
                (s.path, s.start_line)
                for s in self.sections
                if s.slot in (2, 3) and s.kind != "topic"
            ]
            record_hits(self.root, refs)
        return Compiled(self.sections, self.omitted, self.budget, total, self.notes, self.topics)


def score_text(score: float) -> str:
    """A search score with 6 significant digits, so that close and low scores read as
    what they are (``.3g`` printed 0.99996 as "1", the same as the best hit). A score of
    exactly 0 is real: with min-max fusion the weakest candidate of a query scores 0."""
    return f"{score:.6g}"


def compile_context(repo: MemoryRepo, req: CompileRequest) -> Compiled:
    """Assemble the prompt for ``req.message`` from ``repo`` within the budget."""
    return _Compiler(repo, req).run()
