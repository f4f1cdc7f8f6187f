"""The named, versioned extractors (seed 000 §8.3): what each finds and where it writes.

Each extractor has an offline path (``heuristics``) and an LLM path (the shared
``extract`` prompt, told which extractor it serves); both produce ``Item``s — a line for
a section of a knowledge file — which ``reconcile`` then weighs against what the file
already says. Bump ``version`` whenever the output of an extractor changes: it is part
of the cache key and of ``memory tag extract VERSION``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from memrepo.errors import MemrepoError
from memrepo.layout import MEMORY_FILE, journal_path, slugify
from memrepo.lifecycle.extract import heuristics as h
from memrepo.transcript.read import Transcript


@dataclass
class Item:
    """One candidate line: where it goes and where it came from."""

    extractor: str
    text: str
    path: str
    section: str
    src: str
    date: str
    dated: bool = True
    level: int = 2
    under: str | None = None
    create: dict[str, Any] = field(default_factory=dict)


@dataclass
class Context:
    """What extractors may look at besides the transcript (projects that exist)."""

    projects: set[str] = field(default_factory=set)
    #: first name -> full name of the people files that exist (so "Bob" is "Bob Chen")
    people: dict[str, str] = field(default_factory=dict)

    def full_name(self, name: str) -> str:
        return self.people.get(name, name) if " " not in name else name

    def learn(self, name: str) -> None:
        if " " in name:
            self.people.setdefault(name.split()[0], name)


ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["items"],
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["text"],
                "properties": {
                    "text": {"type": "string"},
                    "subject": {"type": ["string", "null"]},
                    "relationship": {"type": ["string", "null"]},
                    "steps": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}


class Extractor:
    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    guidance: ClassVar[str] = ""

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    def offline(self, t: Transcript, ctx: Context) -> list[Item]:
        raise NotImplementedError

    def from_llm(self, t: Transcript, ctx: Context, data: dict[str, Any]) -> list[Item]:
        return [self.item(t, ctx, str(x["text"]), x) for x in data.get("items", [])
                if str(x.get("text", "")).strip() and not h.excluded(str(x["text"]))]

    def item(self, t: Transcript, ctx: Context, text: str, extra: dict[str, Any]) -> Item:
        raise NotImplementedError

    def _sentences(self, t: Transcript, roles: tuple[str, ...] = ("user", "agent")
                   ) -> Iterator[tuple[str, str, str | None]]:
        for _, role, s, who in said(t, roles):
            yield role, s, who


def said(t: Transcript, roles: tuple[str, ...] = ("user", "agent")
         ) -> Iterator[tuple[int, str, str, str | None]]:
    """(turn number, role, sentence, who said it) of each sentence the exclusions let
    through, relative dates resolved; who: the speaker's name when the chat carries it
    (``Name: …``), "User" for the user's turns, None for an unnamed agent."""
    names = h.speaker_names([(x.role, x.text) for x in t.turns if not x.memory])
    for i, turn in enumerate(t.turns):
        if turn.memory or turn.role not in roles:
            continue
        who = names.get(turn.role) or (h.USER if turn.role == "user" else None)
        for s in h.sentences(h.unnamed(turn.text, names.get(turn.role))):
            if not h.excluded(s):
                yield i, turn.role, h.dated(s, t.date), who


def _slug(text: object) -> str | None:
    """A slug for ``text``, or None when it has no word to make one of.

    ``slugify`` answers "session" for an empty text (a file-name default), which must
    not become a knowledge file like ``reference/session.md``.
    """
    s = str(text or "")
    return slugify(s) if re.search(r"[A-Za-z0-9]", s) else None


def project_of(t: Transcript, ctx: Context) -> str | None:
    """The project a session is about: frontmatter ``project``, else a tag naming one."""
    p = _slug(t.meta.get("project"))
    if p:
        return p
    for tag in t.tags:
        if slugify(tag) in ctx.projects:
            return slugify(tag)
    return None


class Decisions(Extractor):
    name = "decisions"
    version = "2"
    guidance = "decisions that were made (what was decided, and why when stated)"

    def offline(self, t: Transcript, ctx: Context) -> list[Item]:
        return [self.item(t, ctx, h.clean(s, role, who), {})
                for role, s, who in self._sentences(t)
                if h.DECISION.search(s) and h.durable(s, who)]

    def item(self, t: Transcript, ctx: Context, text: str, extra: dict[str, Any]) -> Item:
        project = project_of(t, ctx) or (slugify(extra["subject"])
                                         if extra.get("subject") in ctx.projects else None)
        if project:
            return Item(self.name, text, f"knowledge/projects/{project}/context.md",
                        "Key Decisions", t.ref, t.date,
                        create={"type": "project_context", "project": project})
        return Item(self.name, text, MEMORY_FILE, "Key Decisions", t.ref, t.date)


class Lessons(Extractor):
    name = "lessons"
    version = "2"
    guidance = ("lessons learned and lasting preferences of the user (how they like "
                "things done)")

    def offline(self, t: Transcript, ctx: Context) -> list[Item]:
        return [self.item(t, ctx, h.clean(s, role, who), {})
                for role, s, who in self._sentences(t)
                if (h.LESSON.search(s) or (role == "user" and h.PREFERENCE.search(s)))
                and h.durable(s, who)]

    def item(self, t: Transcript, ctx: Context, text: str, extra: dict[str, Any]) -> Item:
        return Item(self.name, text, MEMORY_FILE, "Lessons Learned", t.ref, t.date)


class People(Extractor):
    name = "people"
    version = "2"
    guidance = ("facts about people other than the user and the agent: subject = the "
                "person's full name, relationship = how they relate to the user")

    def offline(self, t: Transcript, ctx: Context) -> list[Item]:
        common = h.common_words(t.text)
        found = [(role, s, who, h.person_mentions(s, common))
                 for role, s, who in self._sentences(t)]
        for *_, mentions in found:
            for name, _ in mentions:
                ctx.learn(name)
        out = []
        for role, s, who, mentions in found:
            for name, rel in mentions:
                if name != who:
                    out.append(self.item(t, ctx, h.clean(s, role, who),
                                         {"subject": name, "relationship": rel}))
        return out

    def item(self, t: Transcript, ctx: Context, text: str, extra: dict[str, Any]) -> Item:
        name = ctx.full_name(str(extra.get("subject") or "unknown").strip())
        ctx.learn(name)
        create = {"type": "person", "name": name}
        if extra.get("relationship"):
            create["relationship"] = str(extra["relationship"])
        return Item(self.name, text, f"knowledge/people/{slugify(name, 4)}.md", "Context",
                    t.ref, t.date, create=create)


class Procedures(Extractor):
    name = "procedures"
    guidance = ("how-to procedures that were worked out: subject = what the procedure "
                "does, steps = the ordered steps")

    def offline(self, t: Transcript, ctx: Context) -> list[Item]:
        out: list[Item] = []
        for i, turn in enumerate(t.turns[1:], start=1):
            prev = t.turns[i - 1]
            m = h.HOWTO.search(prev.text) if prev.role == "user" else None
            steps = h.numbered_steps(turn.text) if turn.role == "agent" else []
            if m and len(steps) >= 2:
                what = m["what"].strip()
                for step in steps:
                    if not h.excluded(step + " step"):
                        out.append(self.item(t, ctx, h.clean(step, "agent"), {"subject": what}))
        return out

    def from_llm(self, t: Transcript, ctx: Context, data: dict[str, Any]) -> list[Item]:
        out = []
        for proc in data.get("items", []):
            subject = proc.get("subject") or proc.get("text")
            for step in proc.get("steps") or [proc.get("text", "")]:
                if step.strip() and not h.excluded(step + " step"):
                    out.append(self.item(t, ctx, step.strip(), {"subject": subject}))
        return out

    def item(self, t: Transcript, ctx: Context, text: str, extra: dict[str, Any]) -> Item:
        what = str(extra.get("subject") or t.topic)
        title = what[:1].upper() + what[1:]
        return Item(self.name, text, f"knowledge/procedures/{slugify(what)}.md", "Steps",
                    t.ref, t.date, dated=False, create={"type": "procedure", "title": title})


class Facts(Extractor):
    name = "facts"
    version = "2"
    guidance = ("durable facts worth looking up later (hosts, endpoints, versions, "
                "configuration, where things live): subject = the project or area")

    def offline(self, t: Transcript, ctx: Context) -> list[Item]:
        return [self.item(t, ctx, h.clean(s, role, who), {})
                for role, s, who in self._sentences(t)
                if h.FACT.search(s) and not h.DECISION.search(s)]

    def item(self, t: Transcript, ctx: Context, text: str, extra: dict[str, Any]) -> Item:
        area = (project_of(t, ctx) or _slug(extra.get("subject"))
                or next((s for s in map(_slug, t.tags) if s), None) or "general")
        return Item(self.name, text, f"knowledge/reference/{area}.md", "Facts", t.ref, t.date,
                    create={"type": "reference", "title": area.replace("-", " ").title()})


#: A turn's statements kept in its journal bullet, at most.
FACTS_A_TURN = 3


class Journal(Extractor):
    name = "journal"
    version = "2"
    guidance = ("a few bullets worth remembering about this session for today's journal: "
                "outcomes, decisions, open tasks, and what each person said of themselves "
                "(facts with who and when; no play-by-play, no small talk)")

    def offline(self, t: Transcript, ctx: Context) -> list[Item]:
        """Decided / Open / Learned bullets (``condense weekly`` rolls them into MEMORY.md)
        and, for each turn, what its speaker stated about themselves, in the third person
        with its dates resolved: one bullet a turn, which does not start with a sentence
        that leans on what came before ("It was great", "They're my rock"). A session
        with none of these leaves the journal alone (no "Session: <title>" line)."""
        bullets: list[str] = []
        facts: dict[int, list[str]] = {}
        for n, role, s, who in said(t):
            if h.DECISION.search(s) and h.durable(s, who):
                bullets.append("Decided: " + h.clean(s, role, who))
            elif h.TASK.search(s) and h.durable(s, who):
                bullets.append("Open: " + h.clean(s, role, who))
            elif h.LESSON.search(s) and h.durable(s, who):
                bullets.append("Learned: " + h.clean(s, role, who))
            elif who and h.informative(s) and (n in facts or not h.leaning(s)):
                facts.setdefault(n, []).append(h.clean(s, role, who))
        bullets += [" ".join(turn[:FACTS_A_TURN]) for turn in facts.values()]
        return [self.item(t, ctx, b, {}) for b in dict.fromkeys(bullets)]

    def item(self, t: Transcript, ctx: Context, text: str, extra: dict[str, Any]) -> Item:
        topic = project_of(t, ctx) or slugify(t.topic, 3)
        return Item(self.name, text, journal_path(t.date), topic, t.ref, t.date,
                    dated=False, level=3, under=t.date,
                    create={"type": "journal", "date": t.date, "session": t.session_id})


REGISTRY: dict[str, type[Extractor]] = {
    cls.name: cls for cls in (Decisions, Lessons, People, Procedures, Facts, Journal)
}


def get(names: list[str] | None) -> list[Extractor]:
    chosen = names or list(REGISTRY)
    unknown = [n for n in chosen if n not in REGISTRY]
    if unknown:
        raise MemrepoError(f"unknown extractor(s): {', '.join(unknown)} "
                           f"(known: {', '.join(REGISTRY)})")
    return [REGISTRY[n]() for n in chosen]
