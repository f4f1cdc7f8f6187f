"""What the agent receives from a lived memory, measured: the measuring half of lived.py.

Evidence matcher. A LoCoMo evidence turn is *in* a text when at least half of its 8-word
shingles (lower-cased words; the whole turn when it has fewer than 8 words) are in the
text: a passage cut by a snippet or interleaved with markers still counts, a turn that
merely shares a phrase does not. A derived line (a line with ``[src: REF]``) stands for
the turn when REF names the turn's session transcript and at least half of the line's
content words are the turn's.

Echo. An injected passage (one ``<!-- P… -->`` block) is an echo when it adds nothing to
what the agent already has: it quotes the asking session's own transcript, carries
memrepo's own injected markup, or is a derived passage each of whose lines restates (half
of its content words) one passage injected beside it from the transcript its ``[src:]``
names.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lived_replay import Lived, hook, log_record

WORD = re.compile(r"\w+")
SRC = re.compile(r"\[src: ([^\]\s]+)\]")
MARKER = re.compile(r"^<!-- (P\d) (?:[a-z-]+: )?(\S+?)(?::\d+(?:-\d+)?)?(?: [^>]*)? -->$",
                    re.MULTILINE)
SHINGLE = 8
STOP = frozenset(re.findall(r"\w+", """
    the and for that this with you your are was were have has had not but all can its from
    they them their what when how who will would about been into just also than then there
    here out our she her his him decided user agent session turns"""))
MEMREPO_MARKUP = ("memrepo recall", "memrepo briefing", "<!-- P")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def shingles(ws: list[str]) -> set[tuple[str, ...]]:
    if len(ws) < SHINGLE:
        return {tuple(ws)} if ws else set()
    return {tuple(ws[i:i + SHINGLE]) for i in range(len(ws) - SHINGLE + 1)}


class Text:
    """A text prepared for the matcher: its shingles, and its short-turn word string."""

    def __init__(self, text: str) -> None:
        self.ws = words(text)
        self.joined = " " + " ".join(self.ws) + " "
        self.sh = shingles(self.ws)


def turn_in(turn: list[str], text: Text) -> bool:
    """At least half of the turn's shingles in ``text`` (the whole turn when short)."""
    if not turn:
        return False
    if len(turn) < SHINGLE:
        return f" {' '.join(turn)} " in text.joined
    sh = shingles(turn)
    return 2 * len(sh & text.sh) >= len(sh)


def content(ws: Iterable[str]) -> set[str]:
    return {w for w in ws if len(w) > 2 and w not in STOP}


def restates(line: str, turn: list[str]) -> bool:
    """A derived line says what the turn says: half of its content words are the turn's."""
    mine = content(words(SRC.sub("", line)))
    return bool(mine) and 2 * len(mine & set(turn)) >= len(mine)


@dataclass
class Sessions:
    """Which LoCoMo session a lived path or ``[src:]`` reference belongs to."""

    lived: Lived
    by_path: dict[str, int] = field(default_factory=dict)

    def load(self) -> Sessions:
        ids = {v: k for k, v in self.lived.session_ids.items()}
        for p in (self.lived.repo / "raw").rglob("*.md"):
            rel = p.relative_to(self.lived.repo).as_posix()
            for sid, num in ids.items():
                if sid in rel:
                    self.by_path[rel] = num
        return self

    def of(self, ref: str) -> int | None:
        """The session of a path, or of a reference that starts a transcript's path."""
        ref = ref.strip().split("#")[0]
        if ref in self.by_path:
            return self.by_path[ref]
        for prefix in ("raw/conversations/", ""):
            hits = {n for p, n in self.by_path.items() if p.startswith(prefix + ref)}
            if len(hits) == 1:
                return hits.pop()
        return None


def passages(text: str) -> list[tuple[str, str]]:
    """(marker path, body) of each injected block."""
    marks = list(MARKER.finditer(text))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append((m.group(2), text[m.end():end].strip().strip("`").strip()))
    return out


@dataclass
class Question:
    conv: str
    category: int
    evidence: list[str]
    found_context: int = 0
    found_recall: int = 0
    found_compile: int = 0
    session_r5: float = 0.0
    #: the same search asked at today's clock, as the fresh index is: what living did to
    #: ranking, without the recency of the lived clock
    session_r5_today: float = 0.0
    passages: int = 0
    echoes: int = 0
    brief_chars: int = 0
    recall_chars: int = 0


class Matcher:
    """Evidence of one conversation against what the agent received."""

    def __init__(self, conv: Any, sessions: Sessions) -> None:
        self.sessions = sessions
        self.turn_words = {t.dia_id: words(t.text) for s in conv.sessions for t in s.turns}
        self.turn_session = {t.dia_id: s.num for s in conv.sessions for t in s.turns}

    def derived_for(self, text: str, dia: str) -> bool:
        num = self.turn_session[dia]
        for line in text.splitlines():
            for ref in SRC.findall(line):
                if self.sessions.of(ref) == num and restates(line, self.turn_words[dia]):
                    return True
        return False

    def found(self, text: str, evidence: list[str]) -> int:
        t = Text(text)
        return sum(turn_in(self.turn_words[d], t) or self.derived_for(text, d)
                   for d in evidence)

    def echo(self, blocks: list[tuple[str, str]], own: str) -> int:
        """How many of ``blocks`` are echoes (module docstring)."""
        quoted: dict[int, list[set[str]]] = defaultdict(list)  # session -> passages' words
        for path, body in blocks:
            num = self.sessions.of(path) if is_transcript(path) else None
            if num is not None:
                quoted[num].append(content(words(body)))

        def restated(line: str) -> bool:
            mine = content(words(SRC.sub("", line)))
            said = [w for ref in SRC.findall(line) for w in quoted.get(self.sessions.of(ref), [])]
            return bool(mine) and any(2 * len(mine & w) >= len(mine) for w in said)

        n = 0
        for path, body in blocks:
            lines = [ln for ln in body.splitlines()
                     if ln.strip() and not ln.lstrip().startswith(("#", "<!--"))]
            n += bool(
                (own and own in path) or any(m in body for m in MEMREPO_MARKUP)
                or (not is_transcript(path) and lines and all(map(restated, lines))))
        return n


def is_transcript(path: str) -> bool:
    """A marker's path names a transcript (in full, or by its short ``YYYY/MM/DD/…`` ref)."""
    return path.startswith(("raw/", "1", "2"))


def ask(lived: Lived, conv: Any, matcher: Matcher, qs: list[Any], when: dt.datetime
        ) -> list[Question]:
    """Each question as the first prompt of a new Claude Code session."""
    out = []
    for i, qa in enumerate(qs):
        sid = f"{conv.sample_id}-ask-{i:03d}"
        log = lived.env.base / "claude-logs" / f"{sid}.jsonl"
        log.write_text(log_record("user", sid, 0, qa.question, when), encoding="utf-8")
        common = {"session_id": sid, "cwd": str(lived.repo), "transcript_path": str(log)}
        brief = hook(lived, "SessionStart", {**common, "source": "startup"}, when)
        recall = hook(lived, "UserPromptSubmit", {**common, "prompt": qa.question}, when)
        q = Question(conv.sample_id, qa.category, list(qa.evidence),
                     brief_chars=len(brief), recall_chars=len(recall))
        q.found_context = matcher.found(brief + "\n" + recall, qa.evidence)
        q.found_recall = matcher.found(recall, qa.evidence)
        blocks = passages(brief) + passages(recall)
        q.passages, q.echoes = len(blocks), matcher.echo(blocks, sid)
        out.append(q)
    return out


def compile_and_search(lived: Lived, matcher: Matcher, qs: list[Any], found: list[Question],
                       when: dt.datetime) -> None:
    """Evidence in a 4,000-token ``memory compile`` and session R@5 of ``memory search``,
    on the lived repo, for each question (hits not recorded); R@5 again at today's clock,
    the fresh index's."""
    env = {**lived.hook_env, "MEMREPO_NOW": when.strftime("%Y-%m-%dT%H:%M:%S")}
    today = {k: v for k, v in env.items() if k != "MEMREPO_NOW"}
    at_when, at_today = (ranked_sessions(lived, matcher, qs, e) for e in (env, today))
    from memrepo.context.compiler import CompileRequest, compile_context
    from memrepo.repo import discover

    repo = discover(lived.repo)
    os.environ["MEMREPO_NOW"] = env["MEMREPO_NOW"]  # the in-process compile's clock
    for i, (qa, q) in enumerate(zip(qs, found, strict=True)):
        gold = {matcher.turn_session[d] for d in qa.evidence}
        q.session_r5 = len(gold & set(at_when.get(str(i), [])[:5])) / len(gold)
        q.session_r5_today = len(gold & set(at_today.get(str(i), [])[:5])) / len(gold)
        req = CompileRequest(qa.question, budget=4000, record_hits=False, today=when.date())
        prompt = compile_context(repo, req).prompt()
        q.found_compile = matcher.found(prompt, qa.evidence)


def ranked_sessions(lived: Lived, matcher: Matcher, qs: list[Any], env: dict[str, str]
                    ) -> dict[str, list[int]]:
    """Each question's ranked LoCoMo sessions from one ``memory search --batch`` run."""
    stdin = "".join(json.dumps({"id": str(i), "query": qa.question, "k": 50}) + "\n"
                    for i, qa in enumerate(qs))
    proc = subprocess.run([lived.env.memory, "--repo", str(lived.repo), "search", "--batch",
                           "--json"], input=stdin, text=True, env=env, capture_output=True,
                          cwd=lived.repo, timeout=1800, check=True)
    ranked: dict[str, list[int]] = {}
    for line in proc.stdout.splitlines():
        obj = json.loads(line)
        ranked[str(obj["id"])] = hit_sessions(lived.repo, matcher.sessions, obj["results"])
    return ranked


def hit_sessions(repo: Path, sessions: Sessions, results: list[dict[str, Any]]) -> list[int]:
    """The LoCoMo sessions of ranked hits, first occurrence order: a transcript by its
    path, a derived file by the ``[src:]`` references in the hit's lines."""
    out: list[int] = []
    for r in results:
        path = str(r.get("path") or "")
        nums = [sessions.of(path)]
        if nums[0] is None and (repo / path).is_file():
            lines = (repo / path).read_text("utf-8", "replace").splitlines()
            a, b = int(r.get("start_line") or 1), int(r.get("end_line") or len(lines))
            nums = [sessions.of(ref) for ln in lines[a - 1:b] for ref in SRC.findall(ln)]
        for n in nums:  # a chunk citing one session on several lines names it once
            if n is not None and n not in out:
                out.append(n)
    return out


#: the figure of the lived repo's session R@5 asked at today's clock
TODAY_R5 = "session R@5 at today's clock"


def summarise(qs: list[Question]) -> dict[str, float]:
    ev = sum(len(q.evidence) for q in qs) or 1
    n = len(qs) or 1
    passages = sum(q.passages for q in qs) or 1
    return {
        "questions": len(qs),
        "evidence in context %": 100 * sum(q.found_context for q in qs) / ev,
        "evidence in recall %": 100 * sum(q.found_recall for q in qs) / ev,
        "evidence in 4K compile %": 100 * sum(q.found_compile for q in qs) / ev,
        "session R@5": 100 * sum(q.session_r5 for q in qs) / n,
        TODAY_R5: 100 * sum(q.session_r5_today for q in qs) / n,
        "echo share %": 100 * sum(q.echoes for q in qs) / passages,
        "briefing chars": sum(q.brief_chars for q in qs) / n,
        "recall chars": sum(q.recall_chars for q in qs) / n,
    }


def by_conversation(qs: list[Question]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[Question]] = defaultdict(list)
    for q in qs:
        groups[q.conv].append(q)
    return {c: summarise(g) for c, g in groups.items()}
