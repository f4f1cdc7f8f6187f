"""Derived passages that only restate the transcript passages shown beside them.

A journal or knowledge line written from a turn (``- Decided: … [src: 2023/05/08/1356-cc-…]``)
and that turn, both recalled, say one thing twice, and the line outranked the turn it
came from (issue 35, "the memory feeds on itself"). The turn is the evidence: its words,
its speaker, its time. So a derived passage is left out when each of its lines has a
``[src: …]`` and at least half of its content words in one passage of that source shown
with it, and the rest of it is headings. A derived line that adds something (another session's
fact, a line without a source, a summary in other words) keeps its passage.
bench/quality/lived.py measures the share of echoes in what the agent receives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memrepo.context.sections import Section
from memrepo.layout import SRC, is_transcript, source_ref

_WORD = re.compile(r"\w+")
#: Words that say nothing of a line's content (and the extractors' own labels).
_FILLER = frozenset(_WORD.findall("""
    the and for that this with you your are was were have has had not but all can its from
    they them their what when how who will would about been into just also than then there
    here out our she her his him user agent decided lesson learned prefers session turns
"""))


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry its content (three letters or more, not filler)."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _FILLER}


def restates(section: Section, sources: dict[str, list[set[str]]]) -> bool:
    """Whether ``section`` (a derived passage) says nothing the transcript passages of its
    sources (``sources``: short reference -> each shown passage's content words) do not."""
    sourced = 0
    for line in section.text.splitlines():
        body = line.strip()
        if not body or body.startswith(("#", "<!--")):
            continue
        refs = [r.strip().split("#")[0] for m in SRC.finditer(body) for r in m["src"].split(";")]
        mine = content_words(SRC.sub("", body))
        if not refs or not mine:
            return False  # a line with no source: nothing says it is repeated
        # one passage of the line's own source says at least half of it (a reference
        # written before sources named their whole session is a prefix of its ref; a
        # turn anchor, ``#…``, is not part of it)
        said = [w for r in refs for ref, ps in sources.items() if ref.startswith(r) for w in ps]
        if not any(2 * len(mine & w) >= len(mine) for w in said):
            return False
        sourced += 1
    return sourced > 0


def restatements(sections: Sequence[Section]) -> list[Section]:
    """The derived sections of ``sections`` that restate its transcript passages."""
    sources: dict[str, list[set[str]]] = {}
    for s in sections:
        if is_transcript(s.path):
            sources.setdefault(source_ref(s.path), []).append(content_words(s.text))
    if not sources:
        return []
    return [s for s in sections
            if s.kind != "topic" and not is_transcript(s.path) and restates(s, sources)]
