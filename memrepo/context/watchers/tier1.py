"""Tier 1 (seed 000 §4.2): free pattern matching against every topic's triggers.

Everything is compiled once per topic set. Regexes run with a timeout (the validator
refuses catastrophic patterns, but a message is arbitrary input): a pattern that times
out counts as no match and is reported, never hangs the agent.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

import regex

from memrepo.context.watchers.loader import Topic
from memrepo.topics import compile_pattern

#: Seconds a single trigger regex may run on one message.
REGEX_TIMEOUT = 0.02
#: Longest text matched (longer messages are matched on their head and tail).
MAX_TEXT = 20_000

_URL = regex.compile(r"\bhttps?://[^\s<>\"'`)\]]+", regex.IGNORECASE)
_PATHLIKE = regex.compile(
    r"(?:[\w.~-]+/)*[\w~-][\w.~-]*\.[A-Za-z0-9]{1,10}\b|(?:[\w.~-]+/)+[\w.~-]+"
)


@dataclass(frozen=True)
class Tier1Hit:
    """Why a trigger fired: its kind, what matched, and its correction hint if any."""

    topic: str
    kind: str
    matched: str
    scope: str
    hint: str | None = None

    def as_json(self) -> dict[str, Any]:
        d = {"kind": self.kind, "matched": self.matched, "scope": self.scope}
        if self.hint:
            d["hint"] = self.hint
        return d


@dataclass
class _Rule:
    topic: str
    kind: str
    scope: str
    hint: str | None
    pattern: regex.Pattern[str] | None = None  # pattern, keyword, mention, url filter
    globs: tuple[Any, ...] = ()


def _scopes(scope: str) -> tuple[str, ...]:
    return ("input", "output") if scope == "both" else (scope,)


def _words_pattern(words: list[str], mention: bool = False) -> regex.Pattern[str]:
    alts = []
    for w in sorted({w.strip() for w in words if w.strip()}, key=len, reverse=True):
        esc = regex.escape(w)
        if mention and w.startswith("@"):
            alts.append(esc + r"\b")
        elif mention:
            alts.append(rf"(?:@|\b){esc}\b")
        else:
            alts.append(rf"\b{esc}\b" if w[0].isalnum() and w[-1].isalnum() else esc)
    return regex.compile("|".join(alts) or r"(?!)", regex.IGNORECASE)


class PatternMatcher:
    """All Tier 1 rules of a topic set, grouped by the scope they watch."""

    def __init__(self, topics: list[Topic]):
        self.rules: dict[str, list[_Rule]] = {"input": [], "output": []}
        self.timeouts: list[str] = []
        for topic in topics:
            for trig in topic.triggers:
                rule = self._rule(topic, trig.kind, trig.spec, trig.scope, trig.hint)
                if rule is None:
                    continue
                for s in _scopes(trig.scope):
                    self.rules.setdefault(s, []).append(rule)

    @staticmethod
    def _rule(
        topic: Topic, kind: str, spec: dict[str, Any], scope: str, hint: str | None
    ) -> _Rule | None:
        r = _Rule(topic.name, kind, scope, hint)
        if kind == "pattern":
            r.pattern = compile_pattern(spec["match"])
        elif kind == "keyword":
            r.pattern = _words_pattern([str(k) for k in spec["keywords"]])
        elif kind == "mention":
            r.pattern = _words_pattern([str(n) for n in spec["names"]], mention=True)
        elif kind == "url":
            r.pattern = compile_pattern(spec["match"]) if spec.get("match") else None
        elif kind == "glob":
            globs = spec["match"] if isinstance(spec["match"], list) else [spec["match"]]
            r.globs = tuple(
                (g, regex.compile(fnmatch.translate(g)), "/" in g) for g in map(str, globs)
            )
        else:  # cron and webhook fire on events, not on text
            return None
        return r

    def match(self, text: str, scope: str = "input") -> list[Tier1Hit]:
        """Every trigger of ``scope`` that fires on ``text`` (one hit per trigger)."""
        if len(text) > MAX_TEXT:
            text = text[: MAX_TEXT // 2] + "\n" + text[-MAX_TEXT // 2 :]
        urls: list[str] | None = None
        paths: list[str] | None = None
        hits: list[Tier1Hit] = []
        for r in self.rules.get(scope, []):
            found: str | None = None
            if r.kind == "url":
                if urls is None:
                    urls = _URL.findall(text)
                found = next((u for u in urls if r.pattern is None or self._search(r, u)), None)
            elif r.kind == "glob":
                if paths is None:
                    paths = _PATHLIKE.findall(text)
                found = _glob_hit(r.globs, paths)
            else:
                found = self._search(r, text)
            if found is not None:
                hits.append(Tier1Hit(r.topic, r.kind, found[:120], scope, r.hint))
        return hits

    def _search(self, r: _Rule, text: str) -> str | None:
        assert r.pattern is not None
        try:
            m = r.pattern.search(text, timeout=REGEX_TIMEOUT)
        except TimeoutError:
            self.timeouts.append(r.topic)
            return None
        return m.group(0) if m else None


def _glob_hit(globs: tuple[Any, ...], paths: list[str]) -> str | None:
    for p in paths:
        base = p.rsplit("/", 1)[-1]
        for _g, rx, has_slash in globs:
            if rx.match(p) or (not has_slash and rx.match(base)):
                return p
    return None
