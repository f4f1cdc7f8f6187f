"""``memory search``: BM25 over chunks (+ vectors when the index has them), ranked per file.

Words of scripts written without spaces are also looked up in ``chunks_cjk`` as bigrams
(:mod:`~memrepo.index.cjk`); a chunk's BM25 there adds to its BM25 in ``chunks_fts``, as if
one index held both kinds of token. A Latin word is looked up there too once the index
holds any such text (it may be written against a run: ``用Redis做缓存``).

A :class:`Searcher` opens the index once and answers many queries (``--batch``). Callers
search through :class:`Search`: when the index is missing, corrupt, locked, or built with
another schema (at open or mid-query), the fallback scanner answers instead and ``why``
says why, so callers print the same output. :func:`record_hits` logs what they showed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from memrepo.index import cjk, expand, gitsource, names, namespaced, schema, signals
from memrepo.index import db as dbmod
from memrepo.index import query as q
from memrepo.index.dates import date_ranges, holding, window
from memrepo.index.embedders import get_embedder, not_installed
from memrepo.index.paths import db_path
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
from memrepo.index.remote import (
    MAX_K,
    MAX_KEYS,
    Answer,
    Early,
    Refused,
    Unavailable,
    query_embedder,
)
from memrepo.index.rows import AFTER, CHUNK_COLS, chunk_hit, doc_filter_sql, marks
from memrepo.index.snippets import read_span
from memrepo.index.wordcounts import WordCounts

#: Chunks taken from FTS5 (and from vectors) before rolling up to files.
CANDIDATES = 400
#: nearest chunks a query's vector brings in: fewer than CANDIDATES, since fewer hits to
#: send and rank made a served search faster for the same recall
#: (``bench/perf/search_steps.py``, ``bench/quality/eval_locomo.py``)
VECTOR_CANDIDATES = 200
#: vectors a search may scan itself while the resident server builds its nearest index
LOCAL_SCAN_MAX = 100_000
#: A person the query names lifts the files naming them (``Settings.people_boost``)
#: unless more than this share of all files name them: the user, in every transcript,
#: says nothing of which file is meant (and reading all their files would cost a query)
PEOPLE_FRAC = 0.02


class Engine(Protocol):
    mode: str

    def search(
        self, query: str, limit: int = 10, filters: Filters | None = None, snippets: bool = True,
        per_file: int | None = None,
    ) -> list[Hit]:
        """Ranked hits for ``query``; without ``snippets`` each hit's snippet is empty (the
        compiler reads whole spans itself and would pay for a snippet per passage);
        ``per_file``: this query's chunks a file, instead of the settings' (compile's P3
        asks more of an engine opened for ``memory_search``)."""

    def close(self) -> None:
        """Release files and connections."""


class IndexUnavailable(Exception):
    """Why search cannot use memory.db (the fallback says so on stderr)."""


def nearest_k(limit: int, replies: bool = True) -> int:
    """How many nearest vectors a search for ``limit`` results takes: VECTOR_CANDIDATES,
    or as many as the results could have when more are asked, two a transcript turn in an
    index with reply vectors (either may bring the turn in): compile's P3 asks many
    passages, and more nearest vectors put more evidence turns in its budget
    (``bench/quality/eval_compile_locomo.py``). At most what one ``nearest`` may ask of
    the server."""
    return min(max(VECTOR_CANDIDATES, (2 if replies else 1) * limit), MAX_K)


def _similarity_of(keys: tuple[int, ...], sim: dict[int, float], cut: float | None
                   ) -> float | None:
    """A chunk's similarity from its vectors' (``sim``: key -> cosine): the mean of its own
    and a transcript turn's reply vector; one not in ``sim`` is at most ``cut`` and counts
    as ``cut`` (with no cut, it has no vector yet and is left out)."""
    got = [v for v in (sim.get(key, cut) for key in keys) if v is not None]
    return sum(got) / len(got) if got else None


class Searcher:
    """Search over memory.db. Raises IndexUnavailable at open when it cannot be used."""

    def __init__(
        self, root: Path, settings: Settings | None = None, embedder_name: str | None = None,
        *, local_model: bool = False,
    ):
        self.root = Path(root)
        self.settings = settings or Settings()
        self.notes: list[str] = []
        #: why the index's vectors are not used for this search (None: they are, or none)
        self.vectors_why: str | None = None
        #: which path answered the vector part (``resident usearch …``, ``local numpy``)
        self.vectors_via: str | None = None
        #: keyword candidates of the last query whose vectors the approximate nearest
        #: search missed above its cut, scored by ``similarity`` (--explain shows it)
        self.vectors_rescored = 0
        self.mode = "index"
        path = db_path(self.root)
        if not path.exists():
            raise IndexUnavailable(f"no index ({path.name} is missing)")
        try:
            self.con = dbmod.connect(path, readonly=True)
            self.meta = schema.get_meta(self.con)
        except dbmod.DatabaseError as exc:
            raise IndexUnavailable(f"{path.name} cannot be read ({exc})") from None
        if self.meta.get("schema_version") != str(schema.SCHEMA_VERSION):
            self.con.close()
            raise IndexUnavailable(f"{path.name} has another schema; run 'memory index'")
        self.embedder = None
        self._vsearch: Any = None
        self._has_cjk: bool | None = None
        #: how many chunks hold each word (a long-lived searcher, the MCP server or --batch,
        #: counts each word once); a commit since forgets them, and who is named where
        self.words = WordCounts(self.con, on_change=self._forget_people)
        #: name word -> the files naming that person (None: too many), as of the same
        self._people_files: dict[str, frozenset[str] | None] = {}
        self._documents: int | None = None
        self._known_name: Callable[[str], bool] | None = None
        recorded = self.meta.get("embedder", "none")
        self.vectors_why = not_installed(embedder_name)  # configured, not installed
        if self.vectors_why:
            self.notes.append(f"vectors off: {self.vectors_why}")
        elif recorded != "none":
            wanted = get_embedder(embedder_name) if embedder_name else None
            if embedder_name is not None and (wanted is None or wanted.id != recorded):
                self.notes.append(
                    f"the index was built with {recorded}, the config asks for {embedder_name}: "
                    "vectors unused until 'memory index' rebuilds it"
                )
            else:
                # a heavy model is asked of the resident process unless ``local_model``
                self.embedder = query_embedder(recorded, self.root, local=local_model)
                why = getattr(self.embedder, "reachable", lambda: None)()
                if why:
                    self.vectors_why, self.embedder = why, None
                    self.notes.append(f"vectors off: {why}; FTS5 alone")

    # -- candidates ---------------------------------------------------------
    def _forget_people(self) -> None:
        self._people_files, self._documents, self._known_name = {}, None, None

    def _fts(self, words: list[str], f: Filters, files: dict[str, FileInfo]
             ) -> list[ChunkHit]:
        match = q.fts_match(words)
        if not match:
            return []
        extra, args = doc_filter_sql(f)
        # ``rank`` is the bm25() FTS5 sorted by: selecting bm25() again computed it a second
        # time for each row returned (the same values)
        sql = (
            f"SELECT {CHUNK_COLS}, -rank "
            "FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
            "JOIN documents d ON d.id = c.doc_id "
            f"WHERE chunks_fts MATCH ?{extra} ORDER BY rank LIMIT ?"
        )
        rows = self.con.execute(sql, [match, *args, CANDIDATES]).fetchall()
        return [chunk_hit(row, files, bm25=row[AFTER]) for row in rows]

    def _cjk(self, words: list[str], f: Filters, hits: dict[int, ChunkHit],
             files: dict[str, FileInfo]) -> None:
        """Add the bigram table's BM25 to ``hits`` (new chunks for the ones only it finds).

        A query without such words costs one lookup per searcher while the table is empty
        (the common case), then nothing."""
        asks = any(cjk.has_run(w) for w in words)
        if not asks:
            if self._has_cjk is None:
                self._has_cjk = (
                    self.con.execute("SELECT 1 FROM chunks_cjk_docsize LIMIT 1").fetchone()
                    is not None
                )
            if not self._has_cjk:
                return
        match = cjk.match(words, glued=True)
        if not match:
            return
        extra, args = doc_filter_sql(f)
        sql = (
            f"SELECT {CHUNK_COLS}, -rank "
            "FROM chunks_cjk JOIN chunks c ON c.id = chunks_cjk.rowid "
            "JOIN documents d ON d.id = c.doc_id "
            f"WHERE chunks_cjk MATCH ?{extra} ORDER BY rank LIMIT ?"
        )
        for row in self.con.execute(sql, [match, *args, CANDIDATES]):
            hit = hits.get(row[0])
            if hit is None:
                hits[row[0]] = chunk_hit(row, files, bm25=row[AFTER])
            else:
                hit.bm25 += row[AFTER]

    def _expanded(self, words: list[str], f: Filters, hits: dict[int, ChunkHit],
                  files: dict[str, FileInfo]) -> None:
        """Add ``expansion_weight`` x the BM25 of the words' neighbours (new chunks for the
        ones only they find): "dog" also finds "puppy" (memrepo.index.expand)."""
        weight = self.settings.expansion_weight
        # at most QUERY_TERMS neighbours, for the cost of a long OR
        extra = expand.expansion(words, self._used)[:q.QUERY_TERMS] if weight > 0 else []
        if not extra:
            return
        for h in self._fts(extra, f, files):
            hit = hits.get(h.chunk_id)
            if hit is None:
                h.bm25 *= weight
                hits[h.chunk_id] = h
            else:
                hit.bm25 += weight * h.bm25

    def _used(self, word: str) -> bool:
        """Whether the index holds ``word`` at all (one FTS5 lookup, answered from the
        term's doclist head)."""
        row = self.con.execute("SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 1",
                               (q.fts_match([word]),)).fetchone()
        return row is not None

    def _names(self) -> Callable[[str], bool]:
        """Whether a word is a person's name in this index (as of its last commit)."""
        self.words.check()
        if self._known_name is None:
            self._known_name = names.lookup(self.con)
        return self._known_name

    def _people(self, query: str) -> tuple[list[str], set[str]]:
        """(the people ``query`` names whose files it lifts, those files): each name word
        named by at most PEOPLE_FRAC of the files (:mod:`~memrepo.index.names`)."""
        if self.settings.people_boost <= 0:
            return [], set()
        words = names.named(query, self._names())
        if not words:
            return [], set()
        if self._documents is None:
            (self._documents,) = self.con.execute("SELECT count(*) FROM documents").fetchone()
        cap = max(1, int((self._documents or 0) * PEOPLE_FRAC))
        used, files = [], set()
        for w in words:
            if w not in self._people_files:
                rows = self.con.execute(
                    "SELECT d.path FROM names n JOIN documents d ON d.id = n.doc_id "
                    "WHERE n.word = ? LIMIT ?", (w, cap + 1)).fetchall()
                self._people_files[w] = (frozenset(p for (p,) in rows) if len(rows) <= cap
                                         else None)
            theirs = self._people_files[w]
            if theirs:
                used.append(w)
                files |= theirs
        return used, files

    def _vector_text(self, query: str) -> str | None:
        """What the query's vector is made from (people's names masked), None: no vectors."""
        if self.embedder is None or not query.strip():
            return None
        if not self.settings.mask_names:
            return query
        return names.mask(query, self._names())

    def _ask_early(self, text: str | None, k: int) -> Answer | None:
        """Send the resident server's ``nearest`` before the keyword search, read it after:
        its round trip overlaps FTS5's instead of adding to it.
        Through the socket the request goes now and its reply waits there
        (``ask_nearest``); a server hosted in this process (``memory mcp``) answers in a
        thread."""
        if text is None:
            return None
        send = getattr(self.embedder, "ask_nearest", None)
        if send is not None:
            return send(text, k)  # type: ignore[no-any-return]
        ask = getattr(self.embedder, "nearest", None)
        return Early(ask, text, k) if ask is not None else None

    def _too_many_to_scan(self) -> bool:
        """Whether a local scan of the index's vectors would cost more than the query: past
        :data:`LOCAL_SCAN_MAX` vectors a search waits for the server's nearest index (FTS5
        alone meanwhile) rather than scan (``bench/perf/bench_resident.py``)."""
        (n,) = self.con.execute("SELECT max(id) FROM vectors").fetchone()
        return (n or 0) > LOCAL_SCAN_MAX

    def _vectors(self, text: str | None, k: int, f: Filters, hits: dict[int, ChunkHit],
                 files: dict[str, FileInfo], early: Answer | None = None) -> float | None:
        """Score ``hits`` (and add the chunks only vectors find) by the query's vector; the
        cosine of the last of the nearest vectors when the search took fewer than all
        (:func:`~memrepo.index.ranking.fuse`'s floor; 0 when it took all), or None when
        vectors are not used for this query."""
        self.vectors_rescored = 0
        if self.embedder is None or text is None:
            return None
        top = None
        exact = True  # a local scan is: it scores every vector
        ask = getattr(self.embedder, "nearest", None)  # the resident server searches too
        try:
            if ask is not None:
                try:
                    answer = early.result() if early is not None else ask(text, k)
                    top, via, exact = answer.hits, f"resident {answer.via}", answer.exact
                except Refused as exc:  # its index is being built: embed there, scan here
                    via = "local scan: " + str(exc).split(" (")[0][-80:]
                    if self._too_many_to_scan():  # ... unless that scan would take seconds
                        self.vectors_why = f"{str(exc)[:120]}; too many vectors to scan here"
                        return None
            if top is None:
                qv = self.embedder.embed([text])[0]
        except Exception as exc:  # a missing extra or a bad model file: BM25 still answers
            self.vectors_why = str(exc)[:120] or type(exc).__name__
            if ask is not None and isinstance(exc, Unavailable):
                return None  # a slow or busy server: this query alone goes without vectors
            self.notes.append(
                f"vectors unused: the {self.embedder.id} embedder failed "
                f"({type(exc).__name__}: {str(exc)[:120]})"
            )
            self.embedder = None
            return None
        if top is None:
            if self._vsearch is None:
                from memrepo.index.vectors import VectorSearch

                self._vsearch = VectorSearch(self.con, db_path(self.root))
            top = self._vsearch.top(qv, k)
            if ask is None:
                via = f"local {self._vsearch.mode}"
        self.vectors_via = via  # shown by --explain (vectors_via), not as a note per query
        if not top:
            return None
        sim = dict(top)
        # the floor is where the nearest search cut; one that returned every vector cut
        # nowhere (a small repo), and its least similar vector is not "just below" anything
        cut = min(sim.values()) if len(top) >= k else None
        # an approximate (HNSW) search can miss vectors above its cut, many of them in a
        # large index (bench/quality/eval_locomo_at_scale.py): the keyword candidates' own
        # vectors are scored by the server while the nearest keys' chunks are read here
        ours = [] if cut is None or exact else [
            key for h in hits.values() for key in h.keys if key not in sim]
        rescore = self._ask_similarity(text, ours) if ours else None
        try:
            self._score_vectors(sim, cut, f, hits, files)
            if rescore is not None and cut is not None:  # asked only with a cut
                self._rescore(rescore, sim, cut, hits)
        finally:
            if rescore is not None:
                rescore.close()
        return cut or 0.0

    def _ask_similarity(self, text: str, keys: list[int]) -> Answer | None:
        """Ask the server the cosines of the query's vector and ``keys``' vectors: through
        the socket now (read in :meth:`_rescore`), or in a thread for a hosted server."""
        keys = keys[:MAX_KEYS]  # the best keyword candidates come first
        send = getattr(self.embedder, "ask_similarity", None)
        if send is not None:
            return send(text, keys)  # type: ignore[no-any-return]
        ask = getattr(self.embedder, "similarity", None)
        return Early(ask, text, keys) if ask is not None else None

    def _rescore(self, answer: Answer, sim: dict[int, float], cut: float,
                 hits: dict[int, ChunkHit]) -> None:
        """The keyword candidates whose vectors lie above ``cut`` though the approximate
        search did not return them: scored as if it had. An unanswered request scores
        nothing (the search is as it would have been without it)."""
        try:
            found = answer.result()
        except Exception:  # a slow or busy server: the nearest keys alone, as before
            return
        above = {key: v for key, v in found.items() if v > cut}
        if not above:
            return
        sim.update(above)
        for hit in hits.values():
            if any(key in above for key in hit.keys):
                hit.vector = _similarity_of(hit.keys, sim, cut)
                self.vectors_rescored += 1

    def _score_vectors(self, sim: dict[int, float], cut: float | None, f: Filters,
                       hits: dict[int, ChunkHit], files: dict[str, FileInfo]) -> None:
        """Give every chunk one of whose vectors is among the nearest (``sim``: key ->
        cosine) its similarity: a transcript turn's is the mean of its own vector's and
        its reply vector's (:attr:`~memrepo.index.chunking.Chunk.reply_text`).

        The one of the two the nearest search did not return is at most ``cut``, the
        cosine where that search stopped, and counts as ``cut``: scoring it exactly meant
        fetching vector blobs from memory.db each query for the same recall
        (``bench/quality/eval_locomo.py``). (An
        approximate search can miss one above it: :meth:`_rescore` scores the keyword
        candidates' own.)
        A search that took every vector (``cut`` None) left out only keys with no vector
        yet (the background catch-up has not embedded them): the mean is of the others."""
        extra, args = doc_filter_sql(f)
        keys = list(sim)
        # the chunks' ids from the two hash indexes alone (covering), then each chunk read
        # once, in id order: a query per column read a turn both its vectors found twice,
        # on random pages (and ``hash IN … OR reply_hash IN …`` plans worse than either)
        for i in range(0, len(keys), 400):
            part = keys[i : i + 400]
            held = marks(len(part))
            sql = (
                f"SELECT {CHUNK_COLS} "
                "FROM chunks c JOIN documents d ON d.id = c.doc_id "
                f"WHERE c.id IN (SELECT id FROM chunks WHERE hash IN ({held}) "
                f"UNION SELECT id FROM chunks WHERE reply_hash IN ({held})){extra}"
            )
            for row in self.con.execute(sql, [*part, *part, *args]):
                hit = hits.get(row[0])
                if hit is None:
                    hit = hits[row[0]] = chunk_hit(row, files)
                hit.vector = _similarity_of(hit.keys, sim, cut)

    def _signals(self, paths: list[str]) -> dict[str, list[tuple[int, float, str | None]]]:
        out: dict[str, list[tuple[int, float, str | None]]] = {}
        for i in range(0, len(paths), 500):
            part = paths[i : i + 500]
            sql = (
                "SELECT path, line, reinforces, demotes, reinforced FROM signals "
                f"WHERE path IN ({marks(len(part))}) AND (score != 0 OR reinforced IS NOT NULL)"
            )
            s = self.settings
            for p, line, up, down, when in self.con.execute(sql, part):
                score = signals.weighted(up, down, s.reinforce_weight, s.demote_weight)
                out.setdefault(p, []).append((line, score, when))
        return out

    # -- the query ------------------------------------------------------------
    def search(
        self, query: str, limit: int = 10, filters: Filters | None = None, snippets: bool = True,
        per_file: int | None = None,
    ) -> list[Hit]:
        f = filters or Filters()
        words = q.terms(query)
        # the server's nearest first: it searches while the common words are counted too,
        # and its round trip is what a short query waits for
        vtext = self._vector_text(query)
        k = nearest_k(limit, schema.replies_recorded(self.meta)) if vtext is not None else 0
        early = self._ask_early(vtext, k)
        try:
            chosen, unsearched = self.words.rarest(words)
            ranked_words, dropped = self.words.prune_common(
                chosen, int(self.meta.get("chunks") or 0))
            files: dict[str, FileInfo] = {}  # filled by the chunk queries (CHUNK_COLS)
            hits = {h.chunk_id: h for h in self._fts(ranked_words, f, files)}
            self._cjk(ranked_words, f, hits, files)
            self._expanded(ranked_words, f, hits, files)
            # the keyword hits' signals while the server's reply is on its way (it usually
            # comes after FTS5), then the signals of the files only vectors found
            keyword_files = list(files)
            sigs = self._signals(keyword_files)
            floor = self._vectors(vtext, k, f, hits, files, early)
        finally:
            if early is not None:
                early.close()  # a reply not read (the keyword search failed) is dropped
        have_vectors = floor is not None
        chunk_hits = list(hits.values())
        fuse(chunk_hits, self.settings, have_vectors, floor or 0.0)
        if len(files) > len(keyword_files):
            sigs.update(self._signals(list(files)[len(keyword_files):]))
        dates = date_ranges(query, f.now, holding(i.modified for i in files.values()))
        people, their_files = self._people(query)
        settings = with_per_file(self.settings, per_file)
        ranked = rank(chunk_hits, files, sigs, settings, limit, dates=dates,
                      people=their_files)
        tag = {"vectors": "on" if have_vectors else "off", **window(dates)}
        if people:
            tag["people"] = " ".join(people)
        if unsearched:
            tag["long_prompt"] = q.searched_by(chosen, words, "the rarest")
        if self.vectors_why and not have_vectors:
            tag["vectors_why"] = self.vectors_why
        if have_vectors and self.vectors_via:
            tag["vectors_via"] = self.vectors_via
        if have_vectors and self.vectors_rescored:
            tag["vectors_rescored"] = self.vectors_rescored
        out = to_hits(ranked, limit, words, self._reader(files), tag, snippets=snippets,
                      width=self.settings.snippet_max_chars)
        if out and dropped and out[0].explain is not None:
            out[0].explain["common_words_skipped"] = " ".join(dropped)
        return out

    def _reader(self, files: dict[str, FileInfo]) -> Callable[[str, int, int], list[str]]:
        """Lines of a hit from the working tree, or from the indexed blob when the file is
        gone or its span is blank there (changed since the index was built)."""
        texts: dict[str, list[str]] = {}

        def span(path: str, start: int, end: int) -> list[str]:
            lines = texts.get(path)
            if lines is None:
                lines = texts[path] = read_span(self.root, path, 1, 10**9)
            part = lines[start - 1 : end]
            info = files.get(path)
            if not "".join(part).strip() and info is not None:
                blob = gitsource.read_blob(self.root, info.blob)
                lines = texts[path] = read_span(self.root, path, 1, 10**9, blob)
                part = lines[start - 1 : end]
            return part

        return span

    def close(self) -> None:
        if self._vsearch is not None:
            self._vsearch.close()
        self.con.close()


#: What one query may raise, beyond the index failing (which :class:`Search` survives):
#: a batch answers that query with an error and goes on.
QUERY_ERRORS = (ValueError, OverflowError, dbmod.Error)


class Search:
    """The one way to search with fallback: the index when it can be used, else the
    scanner. When the index fails mid-query (corrupt, or locked past the reader's wait),
    it is closed and the scanner answers this query and every later one.

    ``why`` says why the index is not used (None while it is); ``on_fallback(why)`` is
    called when a mid-query failure swaps the engine (the CLI says so at once).
    """

    def __init__(
        self,
        root: Path,
        settings: Settings | None = None,
        embedder_name: str | None = None,
        on_fallback: Callable[[str], None] | None = None,
        *,
        local_model: bool = False,
    ):
        self.root = Path(root)
        self.settings = settings
        self.on_fallback = on_fallback
        self.why: str | None = None
        self.engine: Engine
        try:
            self.engine = Searcher(self.root, settings, embedder_name, local_model=local_model)
        except IndexUnavailable as exc:
            self.engine, self.why = self._scanner(), str(exc)

    @property
    def mode(self) -> str:
        """``index``, ``ripgrep`` or ``scan``."""
        return self.engine.mode

    @property
    def notes(self) -> list[str]:
        """What the index searcher has to say (an embedder mismatch or failure)."""
        return list(getattr(self.engine, "notes", []))

    def search(
        self, query: str, limit: int = 10, filters: Filters | None = None, snippets: bool = True,
        per_file: int | None = None,
    ) -> list[Hit]:
        f = filters or Filters()  # in a namespace: its own hits and the shared (namespaced)
        return namespaced.search_in(f.namespace, self.root, query, limit, snippets,
                                    lambda n: self._search(query, n, f, snippets, per_file))

    def _search(self, query: str, limit: int, filters: Filters, snippets: bool,
                per_file: int | None) -> list[Hit]:
        try:
            return self.engine.search(query, limit, filters, snippets, per_file)
        except dbmod.DatabaseError as exc:
            self.engine.close()
            self.engine = self._scanner()
            self.why = f"index failed ({exc})"
            if self.on_fallback is not None:
                self.on_fallback(self.why)
            return self.engine.search(query, limit, filters, snippets, per_file)

    def _scanner(self) -> Engine:
        # imported when needed: the scanner parses files like the indexer, whose import
        # costs a prompt's compile time it does not need while the index answers
        from memrepo.index.fallback import Scanner

        return Scanner(self.root, self.settings)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> Search:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
