"""Derived entries against LoCoMo's annotations: the matching half of extraction.py.

References. LoCoMo annotates each session with ``observation`` (per speaker, the facts a
careful reader keeps, each with the dialog ids it came from) and ``session_summary``.
A session's references are its observations and its summary's sentences; the turns an
observation cites are its *informative* turns.

Derived entries. Every bullet of ``knowledge/`` and ``archive/`` that carries ``[src: …]``,
every bullet of MEMORY.md (sourced or not) and every bullet of a person file; struck-through
(superseded) lines are left out, index files (``_index.md``, ``_active.md``) too. An entry's
sessions are the LoCoMo sessions its ``[src:]`` references name.

Matcher. ``states(entry, ref)``: the entry states the reference's fact (or the core of
it). Both texts become content words: lower-cased, light-stemmed (plural, -ed, -ing,
common irregular verbs), without stop words and without the conversation's speakers'
names (every line of a conversation is about them). The lexical score is the overlap
coefficient ``|E ∩ R| / min(|E|, |R|)``, counted only when two words at least are shared;
with MiniLM installed (``memrepo[minilm]``) the cosine of the two sentences' vectors too.
``states`` holds when ``lexical >= LEX`` or ``cosine >= COS`` (both need ``lexical > 0``).
LEX and COS were chosen on the hand-labelled sample ``extraction_labels.jsonl`` (pairs of
an entry and an observation, summary sentence or turn of its session, each labelled by a
reader: does the entry state that fact?) as the pair with the best agreement; every run
prints the matcher's agreement with the sample, and ``--calibrate`` the grid.

Figures (per conversation):

- observation recall: the share of observations stated by an entry whose sources name
  the observation's session;
- precision: the share of entries that state a reference of one of their sessions, or
  restate an informative turn of it (``states`` against the turn, and the turn's
  observation shares a word with the entry);
- noise: person files whose name is not a person (the speakers, and the names labelled in
  the sample; a name neither knows is listed as unlabelled), and entries that only restate
  a title or a count (``Session: <title> (N user turns)``, or nothing but the words of
  their session's title, numbers and ``session``/``turns``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
SRC = re.compile(r"\[src: ([^\]]+)\]")
#: Calibrated on extraction_labels.jsonl (``extraction.py --calibrate``).
LEX = 0.3
COS = 0.75
MIN_SHARED = 2
STOP = frozenset(WORD.findall("""
    a an the and or but of to in on for with at by from as into onto about over after before
    up down out off than then so too very just also still even really actually there here
    is are was were be been being am do does did done doing have has had having will would
    shall should can could may might must i me my mine myself we us our ours you your yours
    he him his she her hers they them their theirs it its this that these those who whom
    which what when where why how all any some each both such no not nor only own same
    other another more most much many lot lots one ones thing things something anything
    get got gets getting make made makes go going went gone say said says tell told
    like yeah yes oh wow hey hi hello thanks thank okay ok well now today if because while
    again always never ever sure definitely totally pretty quite kind sort way ways time
    keep kept keeping great awesome amazing cool nice someone everyone lot least
    user agent session sessions turn turns decided learned open
    i'm i've i'll i'd it's that's you're we're they're don't can't didn't isn't wasn't
    let's there's he's she's what's
"""))
IRREGULAR = {
    "went": "go", "gone": "go", "took": "take", "taken": "take", "made": "make",
    "got": "get", "felt": "feel", "saw": "see", "seen": "see", "bought": "buy",
    "ran": "run", "began": "begin", "begun": "begin", "found": "find", "gave": "give",
    "given": "give", "kept": "keep", "left": "leave", "met": "meet", "paid": "pay",
    "sent": "send", "spent": "spend", "taught": "teach", "thought": "think",
    "told": "tell", "won": "win", "wrote": "write", "written": "write", "built": "build",
    "brought": "bring", "came": "come", "chose": "choose", "chosen": "choose",
    "drew": "draw", "drawn": "draw", "drove": "drive", "ate": "eat", "fell": "fall",
    "flew": "fly", "grew": "grow", "heard": "hear", "held": "hold", "knew": "know",
    "lost": "lose", "read": "read", "sang": "sing", "sold": "sell", "spoke": "speak",
    "stood": "stand", "swam": "swim", "threw": "throw", "understood": "understand",
    "woke": "wake", "wore": "wear", "children": "child", "kids": "kid", "women": "woman",
    "men": "man", "people": "person", "attended": "attend", "attending": "attend",
}


def stem(w: str) -> str:
    """A light stem: irregular verbs and plurals mapped, -ing / -ed / -es / -s / -ly cut."""
    w = w.split("'")[0]
    if w in IRREGULAR:
        return IRREGULAR[w]
    for suf, keep in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""),
                      ("s", ""), ("ly", "")):
        if w.endswith(suf) and len(w) - len(suf) >= 3 and not w.endswith("ss"):
            base = w[: -len(suf)] + keep
            if suf in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2]:
                base = base[:-1]  # running -> run, planned -> plan
            return base.rstrip("e") if suf in ("ing", "ed", "es") else base
    return w.rstrip("e") if len(w) > 4 else w


def content(text: str, names: Iterable[str] = ()) -> frozenset[str]:
    """The stemmed content words of ``text`` without ``names`` (lower-case words)."""
    drop = set(names)
    return frozenset(stem(w) for w in WORD.findall(text.lower().replace("’", "'"))
                     if w not in STOP and w.split("'")[0] not in drop and len(w) > 1
                     and not w.isdigit())


def lexical(a: frozenset[str], b: frozenset[str]) -> float:
    """Overlap coefficient, 0 when fewer than MIN_SHARED words are shared."""
    shared = len(a & b)
    if not a or not b or shared < min(MIN_SHARED, len(a), len(b)):
        return 0.0
    return shared / min(len(a), len(b))


class Embeddings:
    """MiniLM sentence vectors when the model is installed (None otherwise), cached."""

    def __init__(self, enabled: bool = True) -> None:
        self.model: Any = None
        self.cache: dict[str, Any] = {}
        if enabled:
            try:
                from memrepo.index.embedders import MiniLMEmbedder, available

                if available("minilm") is None:
                    self.model = MiniLMEmbedder()
            except Exception:  # no model: lexical alone
                self.model = None

    def add(self, texts: Iterable[str]) -> None:
        if self.model is None:
            return
        import numpy as np

        todo = list(dict.fromkeys(t for t in texts if t not in self.cache))
        for t, raw in zip(todo, self.model.embed(todo), strict=True):
            self.cache[t] = np.frombuffer(raw, dtype="<f4")

    def cosine(self, a: str, b: str) -> float | None:
        if self.model is None:
            return None
        self.add([a, b])
        return float(self.cache[a] @ self.cache[b])


@dataclass
class Matcher:
    """``states(entry, reference)`` with the calibrated thresholds (module docstring)."""

    names: frozenset[str] = frozenset()
    emb: Embeddings = field(default_factory=lambda: Embeddings(False))
    lex_min: float = LEX
    cos_min: float = COS

    def scores(self, entry: str, ref: str) -> tuple[float, float | None]:
        lex = lexical(content(entry, self.names), content(ref, self.names))
        return lex, (self.emb.cosine(entry, ref) if lex > 0 else None)

    def decide(self, lex: float, cos: float | None) -> bool:
        return lex >= self.lex_min or (lex > 0 and cos is not None and cos >= self.cos_min)

    def states(self, entry: str, ref: str) -> bool:
        lex, cos = self.scores(entry, ref)
        return self.decide(lex, cos)


# ---------------------------------------------------------------------------
# References (LoCoMo) and derived entries (a lived repo)
# ---------------------------------------------------------------------------

DIA = re.compile(r"D:?(\d+):(\d+)")


@dataclass
class Ref:
    session: int
    kind: str  # observation | summary | turn
    text: str
    dias: tuple[str, ...] = ()
    speaker: str = ""


def references(sample: dict[str, Any]) -> dict[int, list[Ref]]:
    """Session number -> its observations and summary sentences (raw LoCoMo sample)."""
    out: dict[int, list[Ref]] = {}
    for key, by_speaker in (sample.get("observation") or {}).items():
        num = int(re.findall(r"\d+", key)[0])
        for speaker, obs in by_speaker.items():
            for text, dia in obs:
                dias = tuple(f"D{int(a)}:{int(b)}" for a, b in DIA.findall(json.dumps(dia)))
                out.setdefault(num, []).append(Ref(num, "observation", text, dias, speaker))
    for key, summary in (sample.get("session_summary") or {}).items():
        num = int(re.findall(r"\d+", key)[0])
        for sent in re.split(r"(?<=[.!?])\s+(?=[A-Z])", summary):
            if sent.strip():
                out.setdefault(num, []).append(Ref(num, "summary", sent.strip()))
    return out


@dataclass
class Derived:
    path: str
    line: int
    text: str
    sessions: frozenset[int]
    kind: str  # journal | memory | person | knowledge


def kind_of(path: str) -> str:
    if path.endswith("memory/MEMORY.md"):
        return "memory"
    if "/journal/" in path:
        return "journal"
    if "/people/" in path:
        return "person"
    return "knowledge"


def derived(repo: Path, session_of: Any) -> list[Derived]:
    """Every derived entry of a lived repo (module docstring); ``session_of(ref)`` maps a
    ``[src:]`` reference to its LoCoMo session (or None)."""
    from memrepo.entries import parse_entry

    out = []
    for top in ("knowledge", "archive"):
        for p in sorted((repo / top).rglob("*.md")):
            rel = p.relative_to(repo).as_posix()
            if p.name.startswith("_") or rel.startswith("knowledge/identity/"):
                continue
            kind = kind_of(rel)
            for i, line in enumerate(p.read_text("utf-8", "replace").splitlines()):
                e = parse_entry(line, i)
                if e is None or e.superseded or not e.text.strip():
                    continue
                if not e.srcs and kind not in ("memory", "person"):
                    continue
                nums = frozenset(n for s in e.srcs if (n := session_of(s)) is not None)
                out.append(Derived(rel, i + 1, e.text, nums, kind))
    return out


def person_files(repo: Path) -> list[tuple[str, str]]:
    """(path, name) of each person file (``knowledge/people/``, and ``archive/people/``
    where pruning moved one; the figures count each name once)."""
    from memrepo.documents import read_document

    out = []
    for base in (repo / "knowledge/people", repo / "archive/people"):
        for p in sorted(base.glob("*.md")) if base.is_dir() else []:
            if p.name.startswith("_"):
                continue
            rel = p.relative_to(repo).as_posix()
            try:
                name = str(read_document(p, rel).meta.get("name") or p.stem)
            except Exception:
                name = p.stem
            out.append((rel, name))
    return out


COUNT_ONLY = re.compile(r"^\s*session:|\(\d+ (?:user )?turns?\)", re.I)
TITLE_WORDS = frozenset({"session", "sessions", "turn", "turns", "user", "conversation",
                         "chat", "talk", "talked", "discussed", "about"})


def title_only(text: str, titles: Iterable[str]) -> bool:
    """An entry that says nothing but a title or a count (module docstring)."""
    if COUNT_ONLY.search(text):
        return True
    words = {w for w in WORD.findall(text.lower()) if not w.isdigit()}
    known = {w for t in titles for w in WORD.findall(t.lower())} | TITLE_WORDS | STOP
    return bool(words) and words <= known


# ---------------------------------------------------------------------------
# The figures
# ---------------------------------------------------------------------------


@dataclass
class Conversation:
    """What one conversation's measure needs from LoCoMo."""

    refs: dict[int, list[Ref]]
    turns: dict[str, tuple[int, str]]  # dia id -> (session, text)
    speakers: tuple[str, ...]
    titles: dict[int, list[str]] = field(default_factory=dict)  # session -> its titles

    def informative(self, num: int) -> list[tuple[str, list[Ref]]]:
        """(turn text, its observations) of each turn of session ``num`` an
        observation cites."""
        by_dia: dict[str, list[Ref]] = {}
        for r in self.refs.get(num, []):
            for d in r.dias:
                by_dia.setdefault(d, []).append(r)
        return [(self.turns[d][1], rs) for d, rs in by_dia.items() if d in self.turns]


def precise(e: Derived, conv: Conversation, m: Matcher) -> str | None:
    """Why ``e`` counts as precise (the kind of reference it states), or None."""
    if title_only(e.text, [t for s in e.sessions for t in conv.titles.get(s, [])]):
        return None
    nums = e.sessions or frozenset(conv.refs)
    for num in sorted(nums):
        for r in conv.refs.get(num, []):
            if m.states(e.text, r.text):
                return r.kind
    for num in sorted(nums):
        for text, obs in conv.informative(num):
            if states_turn(m, e.text, text, obs):
                return "turn"
    return None


def states_turn(m: Matcher, entry: str, turn: str, obs: list[Ref]) -> bool:
    """The entry states a fact of an informative turn: ``states`` against the turn, and
    it shares a content word with the turn's observations (what of the turn is a fact)."""
    said = frozenset().union(*(content(r.text, m.names) for r in obs))
    return bool(content(entry, m.names) & said) and m.states(entry, turn)


def measure(entries: list[Derived], people: list[tuple[str, str]], conv: Conversation,
            m: Matcher, known: dict[str, bool]) -> dict[str, Any]:
    """Observation recall, precision and noise of one lived conversation."""
    m.emb.add([e.text for e in entries] + [r.text for rs in conv.refs.values() for r in rs]
              + [t for _, t in conv.turns.values()])
    by_session: dict[int, list[Derived]] = {}
    for e in entries:
        for s in e.sessions:
            by_session.setdefault(s, []).append(e)
    obs = [r for rs in conv.refs.values() for r in rs if r.kind == "observation"]
    stated = [r for r in obs if any(m.states(e.text, r.text)
                                    for e in by_session.get(r.session, []))]
    why = [precise(e, conv, m) for e in entries]
    titles = [e for e in entries
              if title_only(e.text, [t for s in e.sessions for t in conv.titles.get(s, [])])]
    speakers = {s.lower() for s in conv.speakers}
    verdict = {name: (True if name.lower() in speakers or name.split()[0].lower() in speakers
                      else known.get(name.lower())) for _, name in people}
    kinds: dict[str, int] = {}
    for e in entries:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    return {
        "observations": len(obs),
        "observation recall %": 100 * len(stated) / max(len(obs), 1),
        "entries": len(entries),
        "precision %": 100 * sum(w is not None for w in why) / max(len(entries), 1),
        "precise by": {k: why.count(k) for k in ("observation", "summary", "turn")},
        "entries by kind": kinds,
        "person files": len(verdict),
        "person files not people": sorted(n for n, v in verdict.items() if v is False),
        "person files unlabelled": sorted(n for n, v in verdict.items() if v is None),
        "title or count only": len(titles),
        "_imprecise": [f"{e.path}:{e.line}: {e.text}" for e, w in zip(entries, why, strict=True)
                       if w is None],
        "_missed": [f"S{r.session} {r.dias}: {r.text}" for r in obs if r not in stated],
    }
