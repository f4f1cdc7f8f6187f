"""Smart trim (seed 002): make a session fit its context window without losing what matters.

Three layers, applied only when the messages exceed the safe limit
(``window - reserve - recall cap``): (1) protect the system prompt, a compaction summary,
the last N turns, the last tool call span and any recalled-context block; (2) drop the
messages least relevant (BM25) to the last user messages; (3) drop the oldest. A tool call
and its results are one unit, never split. What was dropped comes back, condensed, as one
``<recalled-context>`` message: 30 % facts, 70 % detail, within min(cap, 10 % of the
window), placed after the system prompt and the compaction summary. Given the memory repo
(``root``), the block also recalls what the repo holds for the last user messages (the
compiler's search, :mod:`~memrepo.context.retrieve`): ``knowledge/`` lines among the facts,
transcript passages among the detail, so what an earlier compaction removed comes back
too; a passage the conversation already holds is left out, and a search that fails leaves
the block to the dropped messages (the reason in ``TrimResult.notes``). Trimming its own
output again changes nothing: a trimmed result is under the safe limit, and when the
protected messages alone are over it, nothing is left to remove (the existing block is
kept as it is, not summarised into itself) and the result says it does not fit.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from memrepo.context.retrieve import retrieve
from memrepo.context.tokens import estimate_tokens
from memrepo.index import cjk
from memrepo.index.query import shared_words, terms
from memrepo.index.snippets import read_span
from memrepo.layout import SUPERSEDED_LINE
from memrepo.repo import MemoryRepo
from memrepo.transcript import messages as m

log = logging.getLogger(__name__)
T = TypeVar("T")

RECALL_TAG = "<recalled-context"
MESSAGE_OVERHEAD = 4  # role and framing tokens per message
_WORD = re.compile(rf"[\w{cjk.RANGES}]+", re.UNICODE)
_FACT = re.compile(
    r"\b(decid\w*|agreed|use[sd]?|must|never|always|prefer\w*|todo|fixed|bug|error|config\w*|"
    r"deploy\w*|port|endpoint|version|deadline|because)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
#: Roles runtimes give a compaction summary message (Pi: compactionSummary).
SUMMARY_ROLES = frozenset({"compactionSummary", "compaction_summary", "compaction", "summary"})
#: How compaction summaries open when they are sent as an ordinary message: Pi's framing,
#: Claude Code's, a bare <summary> element, or a heading that says what it is.
_SUMMARY_OPENING = re.compile(
    r"\A\s*(?:\[compaction[- ]summary\]|<summary>|the conversation history before this point"
    r"|this session is being continued from a previous conversation"
    r"|#*\s*(?:previous |compaction |conversation |session |context )+summary\b"
    r"|summary of (?:the|our) (?:previous |earlier )?(?:conversation|session)\b)",
    re.IGNORECASE,
)
#: A compaction summary sits right after the system prompt (seed 002: index 1–2).
SUMMARY_MAX_INDEX = 2
#: The smallest share of the detail budget a snippet gets (a few lines say something).
MIN_SNIPPET_TOKENS = 60
SNIPPET_LINES = 12
ELLIPSIS = "…"
#: Passages asked of the repo's search for one block (``knowledge/`` ones become facts,
#: the others detail), and how many of the query's search words a passage must hold to
#: be recalled (or all of them, for a shorter query), as the agents' recall hook asks:
#: one shared common word is not relevance.
REPO_LIMIT = 12
MIN_SHARED_TERMS = 2
KNOWLEDGE_ROOT = "knowledge/"


def tokens(msg: dict[str, Any]) -> int:
    return estimate_tokens(m.text(msg)) + MESSAGE_OVERHEAD


def is_recall(msg: dict[str, Any]) -> bool:
    return RECALL_TAG in m.text(msg)


def is_compaction_summary(msg: dict[str, Any]) -> bool:
    """A runtime's compaction summary: by its role, or by how summaries open (a message that
    merely mentions "summary" is a request for one, not one)."""
    return m.role(msg) in SUMMARY_ROLES or bool(_SUMMARY_OPENING.match(m.text(msg)[:300]))


def summaries(msgs: list[dict[str, Any]]) -> list[int]:
    """Indices of the compaction summaries at the head of ``msgs`` (after the system prompt)."""
    return [
        i
        for i, x in enumerate(msgs[: SUMMARY_MAX_INDEX + 1])
        if m.role(x) not in ("system", "developer") and not is_recall(x)
        and is_compaction_summary(x)
    ]  # fmt: skip


@dataclass
class TrimResult:
    messages: list[dict[str, Any]]
    trimmed: list[int] = field(default_factory=list)  # indices into the input
    did_trim: bool = False
    tokens_before: int = 0
    tokens_after: int = 0
    safe_limit: int = 0
    recall_tokens: int = 0
    #: Said when the result is still over the safe limit (or the window): never silent.
    warning: str | None = None
    #: What the repo recall had to say (search failed, or ran without the index).
    notes: list[str] = field(default_factory=list)
    #: Facts and passages the block took from the repo (0 without ``root``).
    repo_facts: int = 0
    repo_passages: int = 0

    @property
    def over_limit(self) -> bool:
        return self.warning is not None


def _words(text: str) -> list[str]:
    """BM25's tokens: words of two or more characters, and a run of a script written
    without spaces as its character bigrams (a word inside it has no boundary)."""
    out: list[str] = []
    for w in _WORD.findall(text.lower()):
        if cjk.has_run(w):
            out += [g for r in cjk.runs(w) for g in cjk.bigrams(r)]
            out += [x for x in cjk.pieces(w) if len(x) > 1]
        elif len(w) > 1:
            out.append(w)
    return out


def bm25(query: str, docs: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """BM25 of each doc against ``query`` (docs are the corpus)."""
    toks = [_words(d) for d in docs]
    n = len(toks) or 1
    avg = sum(map(len, toks)) / n or 1.0
    df: Counter[str] = Counter()
    for t in toks:
        df.update(set(t))
    q = set(_words(query))
    out = []
    for t in toks:
        tf = Counter(t)
        s = 0.0
        for w in q:
            if w in tf:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(t) / avg))
        out.append(s)
    return out


def units(msgs: list[dict[str, Any]]) -> list[list[int]]:
    """Message indices grouped so a tool call and all its results are one unit."""
    parent = list(range(len(msgs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    opener: dict[str, int] = {}
    for i, msg in enumerate(msgs):
        for cid in m.tool_calls(msg):
            opener[cid] = i
    for i, msg in enumerate(msgs):
        for cid in m.tool_results(msg):
            if cid in opener:
                parent[find(i)] = find(opener[cid])
    groups: dict[int, list[int]] = {}
    for i in range(len(msgs)):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values())


def query_of(msgs: list[dict[str, Any]], last: int = 3) -> str:
    users = [m.text(x) for x in msgs if m.role(x) in ("user", "human") and not is_recall(x)]
    return " ".join(u for u in users[-last:] if u)


def _protected(msgs: list[dict[str, Any]], keep_last: int) -> set[int]:
    prot: set[int] = set(summaries(msgs))
    for i, msg in enumerate(msgs):
        if m.role(msg) in ("system", "developer") or is_recall(msg):
            prot.add(i)
    # a recalled-context block is not a turn: counting it would shift the last N turns
    # between a trim and a trim of its output
    convo = [
        i
        for i, x in enumerate(msgs)
        if m.role(x) in ("user", "assistant", "human", "model") and not is_recall(x)
    ]
    prot.update(convo[-keep_last:] if keep_last > 0 else [])
    for i in range(len(msgs) - 1, -1, -1):  # the last tool call span
        if m.tool_calls(msgs[i]):
            prot.add(i)
            break
    return prot


def sanitize(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop tool results without their call and calls without any result (provider 400s)."""
    calls = {c for x in msgs for c in m.tool_calls(x)}
    results = {c for x in msgs for c in m.tool_results(x)}
    out = []
    for i, x in enumerate(msgs):
        res = m.tool_results(x)
        if res and not res & calls:
            continue
        opened = m.tool_calls(x)
        if opened and not opened & results and i != len(msgs) - 1:
            continue  # an unanswered call is only legal as the very last message
        out.append(x)
    return out


def smart_trim(
    msgs: list[dict[str, Any]],
    context_window: int,
    *,
    reserve: int | None = None,
    hard_cap: int = 4000,
    keep_last: int = 6,
    root: Path | None = None,
) -> TrimResult:
    """Trim ``msgs`` to the safe limit and inject what was removed as recalled context
    (and, with the memory repo's ``root``, what the repo holds for the query)."""
    cap = min(hard_cap, context_window // 10)
    reserve = min(4000, context_window // 10) if reserve is None else reserve
    safe = context_window - reserve - cap
    sizes = [tokens(x) for x in msgs]
    res = TrimResult(list(msgs), tokens_before=sum(sizes), tokens_after=sum(sizes), safe_limit=safe)
    # recalled context has its own cap (outside the safe limit): only the rest must fit
    total = sum(n for n, x in zip(sizes, msgs, strict=True) if not is_recall(x))
    query = query_of(msgs)
    if total <= safe:
        return res
    if len(query.strip()) < 3:
        why = "not trimmed: the last user messages give no query of 3+ characters to rank by"
        res.warning = _over(res, total, context_window, why)
        return res
    prot = _protected(msgs, keep_last)
    groups = [g for g in units(msgs) if not prot.intersection(g)]
    texts = ["\n".join(m.text(msgs[i]) for i in g) for g in groups]
    removed, total = _to_remove(groups, bm25(query, texts), sizes, total, safe)
    kept = sanitize([x for i, x in enumerate(msgs) if i not in removed])
    kept_ids = {id(x) for x in kept}
    removed.update(i for i, x in enumerate(msgs) if id(x) not in kept_ids)
    if not removed:
        # everything left is protected: the messages (and any recalled block) stay as they
        # are, so a trim of a trimmed result is the identity
        why = f"nothing left to trim: the protected messages alone are {total} tokens"
        res.warning = _over(res, total, context_window, why)
        return res
    head = {id(msgs[i]) for i in summaries(msgs)}
    old_recall = [x for x in kept if is_recall(x)]
    kept = [x for x in kept if not is_recall(x)]
    body = sum(tokens(x) for x in kept)
    trimmed = [msgs[i] for i in sorted(removed)] + old_recall
    repo = None
    if root is not None:
        seen = [m.text(x) for x in [*kept, *trimmed] if not is_recall(x)]
        repo = repo_recall(Path(root), query, seen)
        res.notes += repo.notes
    block = recalled_context(trimmed, query, cap, repo)
    if block:
        # after the system prompt and the compaction summary, before the conversation
        at = 0
        while at < len(kept) and m.role(kept[at]) in ("system", "developer"):
            at += 1
        while at < len(kept) and id(kept[at]) in head:
            at += 1
        kept.insert(at, {"role": "user", "content": block})
    res.messages = kept
    res.trimmed = sorted(removed)
    res.did_trim = True
    res.recall_tokens = estimate_tokens(block) if block else 0
    if repo is not None and block:
        res.repo_facts = sum(f in block for f in repo.facts)
        res.repo_passages = sum(d.split("] ", 1)[0] + "]" in block for d in repo.detail)
    res.tokens_after = sum(tokens(x) for x in kept)
    why = f"the protected messages alone are {body} tokens"
    res.warning = _over(res, body, context_window, why)
    return res


def _to_remove(groups: list[list[int]], scores: list[float], sizes: list[int], total: int,
               safe: int) -> tuple[set[int], int]:
    """The messages to take out, group by group, until ``total`` tokens fit ``safe``:
    first the clearly irrelevant groups, least relevant first (ties: oldest first), then
    the oldest; (their indexes, the tokens left)."""
    top = max(scores, default=0.0)
    removed: set[int] = set()
    # layer 2: the least relevant first (ties: oldest first), only clearly irrelevant ones
    order = sorted(range(len(groups)), key=lambda k: (scores[k], groups[k][0]))
    for k in order:
        if total <= safe or scores[k] >= 0.5 * top > 0:
            break
        removed.update(groups[k])
        total -= sum(sizes[i] for i in groups[k])
    # layer 3: oldest first
    for g in groups:
        if total <= safe:
            break
        if not removed.intersection(g):
            removed.update(g)
            total -= sum(sizes[i] for i in g)
    return removed, total


def _over(res: TrimResult, body: int, window: int, why: str) -> str | None:
    """The warning for a result still over its limits (None when it fits)."""
    if body <= res.safe_limit:
        return None
    where = (
        f"over the {window}-token context window"
        if res.tokens_after > window
        else f"over the safe limit of {res.safe_limit} (into the reply's reserve)"
    )
    return f"{why}; the result ({res.tokens_after} tokens) is {where}"


def _facts(texts: list[str]) -> list[str]:
    out: list[str] = []
    for t in texts:
        for sent in _SENTENCE.split(t):
            sent = " ".join(sent.split())
            hit = _FACT.search(sent)
            if not hit or len(sent) < 12 or RECALL_TAG in sent:
                continue
            if len(sent) > 240:  # a run-on: the words around the cue
                a = sent.rfind(" ", 0, max(0, hit.start() - 60)) + 1
                b = sent.find(" ", hit.end() + 160)
                sent = ("…" if a else "") + sent[a : b if b > 0 else None] + ("…" if b > 0 else "")
            out.append(sent)
    return list(dict.fromkeys(out))


def _fill(lines: list[str], budget: int) -> list[str]:
    out: list[str] = []
    used = 0
    for line in lines:
        n = estimate_tokens(line) + 1
        if used + n > budget:
            continue
        out.append(line)
        used += n
    return out


def cut_text(text: str, budget: int) -> str:
    """``text`` within ``budget`` tokens: cut at a word boundary and marked with …
    (empty when not even a word fits)."""
    if estimate_tokens(text) <= budget:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits with its mark (the estimate is monotone)
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid] + ELLIPSIS) <= budget:
            lo = mid
        else:
            hi = mid - 1
    head = text[:lo]
    if lo < len(text) and not text[lo].isspace():
        space = max(head.rfind(" "), head.rfind("\n"))
        if space > len(head) // 2:  # else a very long word: cut inside it
            head = head[:space]
    head = head.rstrip()
    return head + ELLIPSIS if head else ""


@dataclass
class RepoRecall:
    """What the memory repo holds for a trim's query, ready for the block."""

    facts: list[str] = field(default_factory=list)  # "- line (path:N)", best first
    detail: list[str] = field(default_factory=list)  # "[path:a-b] lines", best first
    notes: list[str] = field(default_factory=list)


_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+")


def _norm(line: str) -> str:
    """A line as compared for "already said": no bullet, spaces collapsed, lower case."""
    return _BULLET.sub("", " ".join(line.split())).lower()




def repo_recall(root: Path, query: str, seen: list[str]) -> RepoRecall:
    """The repo's passages for ``query``: lines of ``knowledge/`` files holding a query word
    become facts, other passages (transcripts, topics) detail. A passage must share
    :data:`MIN_SHARED_TERMS` of the query's words, and one whose lines the conversation
    (``seen``: kept and dropped messages) already holds is left out. Never raises: a failed
    search is a note, and the block is built from the messages alone."""
    out = RepoRecall()
    try:
        cfg = MemoryRepo(root).config["search"]
        passages, why = retrieve(root, query, cfg, limit=REPO_LIMIT)
        if why:
            out.notes.append(f"repo recall: {why}")
        words = terms(query)
        need = min(MIN_SHARED_TERMS, len(words))
        held = {_norm(x) for t in seen for x in t.split("\n") if len(x.strip()) > 20}
        facts: list[tuple[int, int, str]] = []
        for rank_, p in enumerate(passages):
            lines = read_span(root, p.path, p.start_line, p.end_line)
            body = [(p.start_line + i, x) for i, x in enumerate(lines) if x.strip()]
            text = "\n".join(x for _, x in body)
            if not body or shared_words(words, text) < need:
                continue
            long = [x for _, x in body if len(x.strip()) > 20]
            if long and sum(_norm(x) in held for x in long) * 2 >= len(long):
                continue  # the conversation holds it already
            if p.path.startswith(KNOWLEDGE_ROOT):
                for n, x in body:
                    s = x.strip()
                    if s.startswith("#") or SUPERSEDED_LINE.match(x) or _norm(x) in held:
                        continue
                    k = shared_words(words, s)
                    if k:
                        s = _BULLET.sub("", s)
                        facts.append((-k, rank_, f"- {s} ({p.path}:{n})"))
            else:
                out.detail.append(f"[{p.path}:{p.start_line}-{p.end_line}] {text}")
        out.facts = list(dict.fromkeys(f for _, _, f in sorted(facts)))
    except Exception as exc:  # the trim never fails because the recall did
        log.warning("repo recall failed: %s: %s", type(exc).__name__, exc)
        out = RepoRecall(notes=[f"repo recall failed: {type(exc).__name__}: {exc}"])
    return out


def _interleave(a: list[T], b: list[T]) -> list[T]:
    """Both lists best first, taking turns: neither source crowds the other out."""
    out: list[T] = []
    for i in range(max(len(a), len(b))):
        out += [x[i] for x in (a, b) if i < len(x)]
    return out


def recalled_context(
    trimmed: list[dict[str, Any]], query: str, cap: int, repo: RepoRecall | None = None
) -> str:
    """The ``<recalled-context>`` block: facts in 30 % of ``cap``, detail in 70 %, hard cap.

    With ``repo``, its facts take turns with the dropped messages' facts, and its passages
    with the dropped messages' snippets (a fact said twice is kept once)."""
    if not (trimmed or (repo and (repo.facts or repo.detail))) or cap <= 0:
        return ""
    texts = [
        re.sub(r"</?(recalled-context|knowledge|detail)[^>]*>", "", m.text(x)).strip()
        for x in trimmed
    ]
    facts = [f"- {f}" for f in _facts(texts)]
    if repo is not None:
        known = {_norm(re.sub(r" \([^()]*:\d+\)$", "", f)) for f in repo.facts}
        facts = _interleave(repo.facts, [f for f in facts if _norm(f) not in known])
    scores = bm25(query, texts)
    ranked = [i for i in sorted(range(len(texts)), key=lambda i: -scores[i]) if texts[i]]
    frame = (
        '<recalled-context source="memrepo">\n\n<knowledge>\n</knowledge>\n\n'
        "<detail>\n</detail>\n\n</recalled-context>"
    )
    room = cap - estimate_tokens(frame)
    if room <= 0:
        return ""
    k = _fill(facts, int(room * 0.3))
    detail_room = room - sum(estimate_tokens(x) + 1 for x in k)
    # each snippet is cut to its share, so a long message is recalled in part rather than
    # dropped whole for not fitting (the best-ranked come first)
    sources = [(f"[{m.role(trimmed[i]) or 'message'}] ", texts[i]) for i in ranked]
    if repo is not None:
        sources = _interleave(sources, [("", x) for x in repo.detail])
    count = max(len(sources), 1)
    share = max(detail_room // count, min(detail_room, MIN_SNIPPET_TOKENS)) - 1
    detail = []
    for label, text in sources:
        lines = text.split("\n")
        snippet = "\n".join(lines[:SNIPPET_LINES])
        if len(lines) > SNIPPET_LINES:
            snippet += ELLIPSIS
        cut = cut_text(f"{label}{snippet}", share)
        if cut:
            detail.append(cut)
    d = _fill(detail, detail_room)
    while True:
        parts = ['<recalled-context source="memrepo">']
        if k:
            parts.append("<knowledge>\n" + "\n".join(k) + "\n</knowledge>")
        if d:
            parts.append("<detail>\n" + "\n\n".join(d) + "\n</detail>")
        parts.append("</recalled-context>")
        block = "\n\n".join(parts)
        if not (k or d):
            return ""
        if estimate_tokens(block) <= cap:
            return block
        if d:
            d.pop()  # the lowest-scoring detail first
        else:
            k.pop()
