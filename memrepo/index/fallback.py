"""Search without ``memory.db``: scan the files, rank them the same way, print the same.

Candidate files come from ripgrep when it is installed (``rg -l -a -i -F``), else from a
pure-Python walk. Compressed archives (``archive/**.md.gz``) are candidates only when the
archive is searched, inflated here as the index reads them (capped at
``validation.max_file_kb``): not by ``rg -z``, which starts a ``gzip`` process per file,
needs one installed, and knows no cap. Candidates are chunked
like the index does and scored with BM25 computed over the candidate chunks (statistics
are local, so scores differ from the index's, the order mostly does not). Signals are
read straight from ``raw/signals/``. A word of a script written without spaces
(:mod:`~memrepo.index.cjk`) is counted where it occurs inside a run, as the index's bigram
table finds it.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from memrepo import compression, worktree
from memrepo.errors import FormatError
from memrepo.index import cjk
from memrepo.index import query as q
from memrepo.index import signals as sig
from memrepo.index.dates import date_ranges, holding, window
from memrepo.index.paths import is_indexed
from memrepo.index.ranking import (
    ChunkHit,
    FileInfo,
    Filters,
    Hit,
    Settings,
    fuse,
    rank,
    to_hits,
    with_per_file,
)
from memrepo.index.writer import parse

_WORD = re.compile(r"\w+")
K1, B = 1.2, 0.75


class _StemCounter:
    """How often each query word occurs among a chunk's tokens: a token counts for a word
    it equals, or for a word of 4+ letters whose first ``max(4, len - 2)`` letters it
    starts with (the index's stemmer would find "failure" for "failed"). One lookup per
    token and prefix length, not one comparison per token and word, which a long prompt
    multiplies over every token of a scan (``bench/perf/bench_index.py``)."""

    def __init__(self, words: list[str]):
        self.exact = set(words)
        self.prefixes: dict[int, dict[str, list[str]]] = {}
        for w in words:
            if len(w) > 3:
                k = max(4, len(w) - 2)
                self.prefixes.setdefault(k, {}).setdefault(w[:k], []).append(w)

    def count(self, tokens: list[str], counts: Counter[str]) -> None:
        for t in tokens:
            hit = {t} if t in self.exact else set()
            for k, table in self.prefixes.items():
                hit.update(table.get(t[:k], ()))
            for w in hit:
                counts[w] += 1


def _scanned_words(words: list[str]) -> list[str]:
    """A long prompt's ``query.QUERY_TERMS`` longest words (the scanner has no counts to
    tell the rarest, and a longer word is a rarer one in most text), words without digits
    before those with (a pasted log's ids and hashes are long and in no note), words of
    scripts written without spaces taking their places first; in the prompt's order. A
    shorter query: all its words."""
    if len(words) <= q.QUERY_TERMS:
        return words
    runs = [w for w in words if cjk.has_run(w)][: q.QUERY_TERMS]
    rest = sorted((w for w in words if w not in runs),
                  key=lambda w: (any(c.isdigit() for c in w), -len(w)))
    chosen = set(runs + rest[: q.QUERY_TERMS - len(runs)])
    return [w for w in words if w in chosen]


class Scanner:
    """The index-free engine; ``mode`` says which scan ran."""

    def __init__(self, root: Path, settings: Settings | None = None):
        self.root = Path(root)
        self.settings = settings or Settings()
        self.rg = shutil.which("rg")
        self.mode = "ripgrep" if self.rg else "scan"
        self._signals: dict[str, list[tuple[int, float, str | None]]] | None = None

    def _candidates(self, words: list[str], archive: bool = False) -> list[str]:
        """Files holding any of ``words`` (case-insensitive); compressed archives only
        with ``archive`` (without it search drops every archived file anyway)."""
        if self.rg:
            # -a: a Markdown file with a stray NUL byte is still text to search
            args = [self.rg, "-l", "-a", "-i", "-F", "--no-messages", "-g", "*.md"]
            for w in words:
                args += ["-e", w]
            proc = subprocess.run(args, cwd=self.root, capture_output=True)
            paths = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
            found = {p.removeprefix("./") for p in paths}
            if archive:
                found.update(self._compressed_with(words))
            return sorted(p for p in found if is_indexed(p))
        out = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            rel_dir = os.path.relpath(dirpath, self.root)
            for name in filenames:
                rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
                if not is_indexed(rel) or (compression.is_gzip_name(rel) and not archive):
                    continue
                text = self._text(rel)
                if text is not None and _holds_any(text.lower(), words):
                    out.append(rel)
        return sorted(out)

    def _compressed_with(self, words: list[str]) -> list[str]:
        """The ``archive/**.md.gz`` files whose text holds any of ``words``."""
        base = self.root / compression.ROOT
        out = []
        for file in base.rglob("*" + compression.SUFFIX) if base.is_dir() else []:
            rel = file.relative_to(self.root).as_posix()
            if not compression.allowed(rel):
                continue
            text = self._text(rel)
            if text is not None and _holds_any(text.lower(), words):
                out.append(rel)
        return out

    def _text(self, rel: str) -> bytes | None:
        """A file's text bytes (a ``.gz`` inflated, capped), None when it cannot be read:
        a corrupt or oversized archive is the validators' and the indexer's to report."""
        try:
            return worktree.read_plain(self.root, rel)
        except (OSError, FormatError):
            return None

    def _signal_map(self) -> dict[str, list[tuple[int, float, str | None]]]:
        if self._signals is None:
            self._signals = {}
            s = self.settings
            for (path, line), a in sig.aggregate(self.root).items():
                score = sig.weighted(a.reinforces, a.demotes, s.reinforce_weight,
                                     s.demote_weight)
                self._signals.setdefault(path, []).append((line, score, a.reinforced))
        return self._signals

    def search(
        self, query: str, limit: int = 10, filters: Filters | None = None, snippets: bool = True,
        per_file: int | None = None,
    ) -> list[Hit]:
        f = filters or Filters()
        all_words = q.terms(query)
        words = _scanned_words(all_words)
        if not words:
            return []
        unsegmented = [w for w in words if cjk.has_run(w)]
        latin = [w for w in words if w not in unsegmented]
        files: dict[str, FileInfo] = {}
        texts: dict[str, list[str]] = {}
        units: list[tuple[ChunkHit, Counter[str], int]] = []
        stems = _StemCounter(latin)
        for path in self._candidates(words, f.include_archive):
            try:
                data = worktree.read_file(self.root, path)  # never through a symlink
            except OSError:
                continue
            text, limit = data, compression.DEFAULT_LIMIT
            if compression.is_gzip_name(path):
                try:
                    limit = compression.limit_for(self.root)
                    text = compression.decompress(data, path, limit)
                except FormatError:
                    continue
            parsed = parse(path, data, limit)  # inflates a .gz by its name (again: cheap)
            m = parsed.meta
            if not _keep(path, m.category, m.modified, m.status, f):
                continue
            files[path] = FileInfo(path, m.category, m.modified, m.status)
            texts[path] = text.decode("utf-8", "replace").split("\n")
            for c in parsed.chunks:
                low = c.text.lower()
                tokens = _WORD.findall(low)
                counts: Counter[str] = Counter()
                if cjk.has_run(low):
                    # a word inside a run: count it where it occurs; a Latin word written
                    # against a run (用Redis做缓存) is a token of its own
                    for w in unsegmented:
                        counts[w] += cjk.count(low, w)
                    tokens += [x for t in tokens if cjk.has_run(t) for x in cjk.pieces(t)]
                stems.count(tokens, counts)
                counts = +counts
                hit = ChunkHit(-1, path, c.ord, c.start_line, c.end_line, stale=c.stale)
                units.append((hit, counts, len(tokens)))
        if not units:
            return []
        n = len(units)
        avgdl = sum(dl for _, _, dl in units) / n
        df = Counter(w for _, counts, _ in units for w in counts)
        scored = []
        for hit, counts, dl in units:
            s = 0.0
            for w, tf in counts.items():
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))
            if s > 0:
                hit.bm25 = s
                scored.append(hit)
        fuse(scored, self.settings, False)
        dates = date_ranges(query, f.now, holding(i.modified for i in files.values()))
        ranked = rank(scored, files, self._signal_map(), with_per_file(self.settings, per_file),
                      limit, dates=dates)

        def span(path: str, start: int, end: int) -> list[str]:
            return texts[path][start - 1 : end]

        tag = {"engine": self.mode, **window(dates)}
        if len(words) < len(all_words):
            tag["long_prompt"] = q.searched_by(words, all_words, "the longest")
        return to_hits(ranked, limit, words, span, tag, chunk_explain=False, snippets=snippets,
                       width=self.settings.snippet_max_chars)

    def close(self) -> None:
        pass


def _holds_any(text: bytes, words: list[str]) -> bool:
    return any(w.encode() in text for w in words)


def _keep(path: str, category: str | None, modified: str | None, status: str, f: Filters) -> bool:
    if status == "archived" and not f.include_archive:
        return False
    if f.category and category not in f.category:
        return False
    if f.path_glob and not fnmatch.fnmatchcase(path, f.path_glob):
        return False
    if f.since and (modified is None or modified < f.since[:10]):
        return False
    return not (f.until and (modified is None or modified > f.until[:10]))
