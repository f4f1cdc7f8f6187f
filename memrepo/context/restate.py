"""Derived passages that only restate the transcript passages shown beside them.

A journal or knowledge line written from a turn (``- Decided: … [src: 2023/05/08/1356-cc-…]``)
and that turn, both recalled, say one thing twice, and the line outranked the turn it
came from (issue 35, "the memory feeds on itself"). The turn is the evidence: its words,
its speaker, its time. So a derived passage is left out when each of its lines has a
``[src: …]`` and at least half of its words (:func:`memrepo.entries.words`, as the
extractors compare entries) in one passage of that source shown with it, and the rest of
it is headings. A derived line that adds something (another session's fact, a line
without a source, a summary in other words) keeps its passage. The prompt hook's recall
drops them from what it took (:func:`restatements`); ``memory compile``'s P3 (and so MCP
``memory_context``) does not place them (:class:`Shown`): search ranks a derived hit just
below its source's, so the source is placed first. bench/quality/lived.py measures the
share of echoes in what the agent receives.
"""

from __future__ import annotations

from collections.abc import Sequence

from memrepo import entries as E
from memrepo.context.sections import Section
from memrepo.layout import SRC, is_transcript, source_ref


def restates(text: str, sources: dict[str, list[set[str]]]) -> bool:
    """Whether ``text`` (a derived passage) says nothing the transcript passages of its
    sources (``sources``: short reference -> each shown passage's :func:`entries.words`)
    do not."""
    sourced = 0
    for line in text.splitlines():
        body = line.strip()
        if not body or body.startswith(("#", "<!--")):
            continue
        refs = [r.strip().split("#")[0] for m in SRC.finditer(body) for r in m["src"].split(";")]
        if not refs:
            return False  # a line with no source: nothing says it is repeated
        # one passage of the line's own source says at least half of it (a reference
        # written before sources named their whole session is a prefix of its ref; a
        # turn anchor, ``#…``, is not part of it)
        said = [w for r in refs for ref, ps in sources.items() if ref.startswith(r) for w in ps]
        if not any(E.restated(SRC.sub("", body), w) for w in said):
            return False
        sourced += 1
    return sourced > 0


def restatements(sections: Sequence[Section]) -> list[Section]:
    """The derived sections of ``sections`` that restate its transcript passages."""
    shown = Shown()
    for s in sections:
        shown.add(s)
    return [s for s in sections if s.kind != "topic" and shown.restates(s.path, s.text)]


class Shown:
    """The transcript passages shown so far, by source: what a derived passage placed
    after them would only say again (the compiler's P3 leaves such a passage out, its
    room to the next one)."""

    def __init__(self) -> None:
        self.sources: dict[str, list[set[str]]] = {}

    def add(self, section: Section | None) -> None:
        if section is not None and is_transcript(section.path):
            self.sources.setdefault(source_ref(section.path), []).append(E.words(section.text))

    def restates(self, path: str, text: str) -> bool:
        """Whether a passage of ``path`` would only say again what is shown."""
        return bool(self.sources) and not is_transcript(path) and restates(text, self.sources)
