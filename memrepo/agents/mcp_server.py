"""``memory mcp``: the memory repo as an MCP server (stdio) that a model calls on demand.

Seven tools, few and tight (every tool's schema sits in the model's context): search,
a compiled context, read a span, remember, update an entry, reinforce, demote. Hooks are
the channel that always runs; these are what the model reaches for mid-task.

Why a resident process: the index connection, the config and an embedder load once and
serve every call. All memrepo work runs on one worker thread: SQLite connections belong
to the thread that opened them, and one writer at a time needs no further locking here.
Before each call a few ``stat`` calls tell whether HEAD, the config or ``memory.db``
moved; when they did, the index is brought to HEAD (what the post-commit hook does; a
no-op after memrepo's own commits, which index in-process) and the search reopened.

Errors a model can act on (a bad REF, a path outside the repo, empty text, an unknown
category) are ``ToolError`` messages, and nothing is written. The protocol owns stdout;
logs go to stderr. The SDK, slow to import (bench/perf/bench_mcp.py times the server's
start), is imported only by ``memory mcp`` serving in-process and by the resident server,
whose sessions ``memory mcp`` relays (:mod:`memrepo.agents.mcp_front`).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import ValidationError

from memrepo import __version__, compression, namespaces, worktree
from memrepo.agents.resident import HOSTED_SERVICES
from memrepo.context.compiler import CompileRequest, compile_context
from memrepo.context.sections import DATA_LABEL, fence, stored
from memrepo.context.tokens import counter
from memrepo.errors import MemrepoError
from memrepo.git import git
from memrepo.index import refs, signals
from memrepo.index.dates import BadBound, parse_bound
from memrepo.index.embedders import get_embedder
from memrepo.index.indexer import sync
from memrepo.index.ranking import Filters, Hit, settings_from_config
from memrepo.index.remote import ping
from memrepo.index.search import QUERY_ERRORS, Search
from memrepo.index.signals import record_hits
from memrepo.layout import CONFIG_FILE, DB_NAME, IDENTITY_DIR, category_names
from memrepo.lifecycle import update
from memrepo.locks import LockBusy
from memrepo.repo import MemoryRepo, discover
from memrepo.resident.server import AlreadyRunning, Server

log = logging.getLogger("memrepo.mcp")
T = TypeVar("T")

INSTRUCTIONS = (
    "Long-term memory of the user and their work: notes, decisions, people, projects and "
    "past conversations, kept as Markdown files in a git repo. Call memory_search before "
    "answering anything that may depend on earlier sessions (a past decision, a preference, "
    "how something was done) and memory_read to open a hit. Call memory_remember for a "
    "durable fact worth keeping (a decision, a preference, a lesson), memory_update when a "
    "remembered fact changed, and memory_reinforce / memory_demote on results that helped "
    "or were wrong. Refs look like knowledge/people/alice.md:12 or a span path:12-30."
)

#: Index categories a search may filter on, and the folder names a model may use instead.
MAX_LIMIT = 50
#: What heads a ``memory_context`` result (its fenced blocks label themselves).
CONTEXT_INTRO = ("memrepo context for this message: what the user's memory repo holds "
                 "that bears on it.")
#: A read returns at most this much; the rest is one more call away.
READ_LINES = 400
READ_CHARS = 40_000
BUDGET_RANGE = (100, 100_000)
#: A query quoted back in a result is cut to this many characters.
QUOTE_CHARS = 200

READ_ONLY = ToolAnnotations(read_only_hint=True)


class Memory:
    """The server's resident state: the repo, its config and one open search.

    Used from its one worker thread only (:meth:`call`). ``resident``: the clone's
    resident server this state lives in (its MCP sessions share it): its model is used,
    never stopped here.
    """

    def __init__(self, root: str | Path | None = None, resident: Server | None = None):
        self._given = root
        self._repo: MemoryRepo | None = None
        self._search: Search | None = None
        self._embedder: Any = None
        #: the resident model server this process hosts (heavy embedder, none running)
        self._server: Any = resident
        self._owns_server = resident is None
        self._stamp: tuple[Any, ...] | None = None
        self._git_dirs: tuple[Path, Path] | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="memrepo-mcp")

    # -- running a call ----------------------------------------------------------------
    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the worker thread, the repo state fresh, memrepo's errors
        turned into ToolError messages; in the caller's context (its session's namespace:
        a resident's sessions share this worker)."""
        fut = self._pool.submit(contextvars.copy_context().run, self._guarded, fn, *args)
        return await _wait(fut)

    def _guarded(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            self.fresh()
            return fn(*args)
        except ToolError:
            raise
        except MemrepoError as exc:
            raise ToolError(str(exc)) from None
        except LockBusy as exc:
            raise ToolError(f"memory is busy (lock {exc} held); try again") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ToolError(_system_error(exc)) from None

    def close(self) -> None:
        def shut() -> None:
            if self._search is not None:
                self._search.close()
                self._search = None

        self._pool.submit(shut).result()
        self._pool.shutdown()
        if self._server is not None and self._owns_server:
            self._server.stop()
            self._server = None

    # -- the repo and its freshness -------------------------------------------------------
    @property
    def repo(self) -> MemoryRepo:
        if self._repo is None:
            self._repo = discover(self._given)
        return self._repo

    @property
    def root(self) -> Path:
        return self.repo.root

    def fresh(self) -> None:
        """Notice HEAD, the config or memory.db changing (a few stat calls): bring the
        index to HEAD (on the first call too) and reopen the search; reload the config
        when it changed."""
        stamp = self._read_stamp()
        old, self._stamp = self._stamp, stamp
        if old == stamp:
            return
        if old is not None and old[0] != stamp[0]:
            self._repo = MemoryRepo(self.root)
        if old is None or old[1] != stamp[1]:
            self._catch_up()
        self._close_search()

    def _read_stamp(self) -> tuple[Any, ...]:
        """(config, HEAD, index file) identities: what must reopen the search."""
        root = self.root
        if self._git_dirs is None:
            out = git(["rev-parse", "--absolute-git-dir", "--git-common-dir"], root).split("\n")
            common = Path(out[1]) if Path(out[1]).is_absolute() else root / out[1]
            self._git_dirs = (Path(out[0]), common)
        gdir, common = self._git_dirs
        try:
            head = (gdir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            head = ""
        ref = head[5:].strip() if head.startswith("ref:") else None
        heads = (head, _stat(common / ref) if ref else None, _stat(common / "packed-refs"))
        db = _stat(root / DB_NAME)
        return _stat(root / CONFIG_FILE), heads, db[2:] if db else None

    def _catch_up(self) -> None:
        """Index HEAD as the post-commit hook would (never waits for another indexer,
        never rebuilds); a failure is logged and search goes on with what it has."""
        if not (self.root / DB_NAME).exists():
            return

        try:
            res = sync(self.root, hook=True)
        except Exception as exc:  # NoIndex, NeedsRebuild, a locked or broken index
            log.warning("index not brought to HEAD: %s: %s", type(exc).__name__, exc)
            return
        if res is not None and (res.added or res.updated or res.removed):
            log.info("index caught up: +%d ~%d -%d", res.added, res.updated, res.removed)
        if res is not None and res.pending_vectors and self._server is not None:
            self._server.start_catch_up()  # embedded in the server's thread, not this call

    def _close_search(self) -> None:
        if self._search is not None:
            self._search.close()
            self._search = None

    def search(self) -> Search:
        """The open search (index, or the fallback scan when there is none)."""
        if self._search is None:
            cfg = self.repo.config["search"]
            local = self._host_model(cfg["embedder"])
            s = Search(self.root, settings_from_config(cfg), cfg["embedder"], _fell_back,
                       local_model=local)
            engine = s.engine
            mine = getattr(engine, "embedder", None)
            hosted = self._server is not None and self._server.adopt(s)
            if mine is not None and (local or mine.light) and not hosted:  # else: by socket
                if self._embedder is not None and mine.id == self._embedder.id:
                    engine.embedder = self._embedder  # type: ignore[attr-defined] - keep the loaded model
                else:
                    self._embedder = mine
            if s.why:
                log.warning("search index unavailable (%s); scanning files", s.why)
            for note in s.notes:
                log.warning("%s", note)
            self._search = s
        return self._search

    def _host_model(self, name: str) -> bool:
        """Whether this process runs a heavy ``name`` model itself: it hosts the clone's
        resident server (started here when none answers), so hooks and searches share
        its loaded model; False when another server runs (used over its socket) or the
        embedder is light or none (in-process as ever)."""
        try:
            emb = get_embedder(name)
        except ValueError:
            return False
        if emb is None or emb.light:
            return False
        if self._server is not None:
            if self._server.embedder.id == emb.id:
                self._embedder = self._server.embedder
                return True
            if not self._owns_server:
                return False  # the resident runs another model: asked over its socket
            self._server.stop()  # the config changed model: serve the new one
            self._server = None
        if ping(self.root, budget=0.2) is not None:
            return False
        if self._embedder is None or self._embedder.id != emb.id:
            self._embedder = emb

        server = Server(self.root, self._embedder, log=log.info, catch_up_on_start=True,
                        services=HOSTED_SERVICES)
        try:
            server.start()
        except AlreadyRunning:
            return False
        except OSError as exc:  # no socket here: the model still serves this process
            log.warning("resident model server not started: %s", exc)
            return True
        self._server = server
        return True

    def _vectors_lost(self, s: Search) -> bool:
        """A search that used another process's server and lost it: reopen next call
        (this process then hosts the model)."""
        return getattr(s.engine, "vectors_why", None) is not None and self._server is None

    # -- the tools' work -------------------------------------------------------------------
    def search_text(
        self, query: str, limit: int, category: str | None, since: str | None,
        until: str | None,
    ) -> str:  # fmt: skip
        if not query.strip():
            raise ToolError("query is empty: say what to look for")
        if not 1 <= limit <= MAX_LIMIT:
            raise ToolError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        filters = Filters(
            category=_categories(category), since=_date(since, "since"),
            until=_date(until, "until"),
        )  # fmt: skip
        s = self.search()
        try:
            hits = s.search(query, limit, filters)
        except QUERY_ERRORS as exc:
            raise ToolError(f"search failed: {exc}") from None
        if hits and self.repo.config["search"].get("record_hits", True):
            record_hits(self.root, [(h.path, h.start_line) for h in hits])
        if self._vectors_lost(s):
            self._close_search()
        return _format_hits(query, hits, s.why)

    def context_text(self, message: str, budget: int) -> str:
        if not message.strip():
            raise ToolError("message is empty: pass the task or question to brief for")
        lo, hi = BUDGET_RANGE
        if not lo <= budget <= hi:
            raise ToolError(f"budget must be between {lo} and {hi} tokens, got {budget}")
        # P3 asks this server's open search: its connection, counts and model stay warm
        s = self.search()
        # stored text as the hooks show it (memrepo.context.sections.stored): fenced,
        # topics labelled as the user's instructions, the rest as reference data; the
        # wrapper is in the budget too (compiled again, smaller, if its fences outgrow it)
        count = counter(str(self.repo.config["context_compiler"].get("tokenizer", "fast")))
        spare = count(f"{CONTEXT_INTRO}\n{fence(DATA_LABEL, '')}")
        text = ""
        for _ in range(3):
            compiled = compile_context(self.repo, CompileRequest(
                message=message, budget=max(budget - spare, 1), engine=s, record_hits=False))
            text = stored(CONTEXT_INTRO, compiled.sections)
            over = count(text) - budget
            if over <= 0:
                break
            spare += over
        if self.repo.config["search"].get("record_hits", True):  # what compile records
            record_hits(self.root, [(x.path, x.start_line) for x in compiled.sections
                                    if x.slot in (2, 3) and x.kind != "topic"])
        if self._vectors_lost(s):
            self._close_search()
        return text or "Nothing in memory fits this message within the budget."

    def read_text(self, ref: str) -> str:
        given, a, b = update.parse_span(ref)
        rel = update.memory_path(self.root, given)
        lines = namespaces.View(self.root, namespaces.current()).masked(rel, self._lines(rel))
        if lines is None:  # another agent's transcript (docs/namespaces.md)
            raise ToolError(f"{rel} is another namespace's, not {namespaces.current()}'s")
        n = len(lines)
        first, last = (a, b or a) if a is not None else (1, n)
        if n == 0:
            return f"{rel} is empty"
        if first > n:
            raise ToolError(f"{rel} has {n} line(s), no line {first}")
        last = min(last, n)
        out, size, end = [], 0, first - 1
        for k in range(first, last + 1):
            row = f"{k}\t{lines[k - 1]}"
            if out and (len(out) >= READ_LINES or size + len(row) > READ_CHARS):
                break
            if len(row) > READ_CHARS:  # one line longer than a whole read: its start
                row = (f"{row[:READ_CHARS]}… [line {k} cut: "
                       f"{len(lines[k - 1]):,} characters in all]")
            out.append(row)
            size += len(row) + 1
            end = k
        head = f"{rel}:{first}-{end} (of {n} lines)"
        tail = f"\n… more: memory_read('{rel}:{end + 1}-{last}')" if end < last else ""
        return head + "\n" + "\n".join(out) + tail

    def _lines(self, rel: str) -> list[str]:
        """A memory file's lines as a model reads them (no empty last one after the final
        newline); a compressed archive inflated, capped at ``validation.max_file_kb``.
        Opened as :mod:`memrepo.worktree` opens a repo file: never through a symlink (one
        swapped in since :func:`update.memory_path` checked the path included), never a
        hard link."""
        data = worktree.read_plain(self.root, rel, compression.limit_of(self.repo.config))
        lines = data.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return lines

    def remember_text(self, text: str, file: str | None) -> str:
        if file is not None and file.strip():
            self._writable(update.memory_path(self.root, file, knowledge=True))
        done = update.remember(self.root, text, file)
        return f"Remembered at {done.ref}{_committed(done.commit)}."

    def update_text(self, ref: str, text: str, mode: str) -> str:
        self._writable(update.memory_path(self.root, update.parse_span(ref)[0], knowledge=True))
        done = update.update_entry(self.root, ref, text, mode)
        if done.old_line:
            return (f"Superseded: {done.ref} is the new entry; the old one is kept struck "
                    f"through at {done.path}:{done.old_line}{_committed(done.commit)}.")
        return f"Replaced {done.ref}{_committed(done.commit)}."

    def _writable(self, rel: str) -> None:
        """The identity files open every briefing: a tool writing there would let one
        prompt injection persist itself into every later session. A person edits them,
        or opts in (``agents.tools_write_identity``)."""
        if (rel.startswith(f"{IDENTITY_DIR}/")
                and not self.repo.config["agents"]["tools_write_identity"]):
            raise ToolError(
                f"{rel} is read-only to tools: the identity files open every briefing, so "
                "a person edits them (or sets agents.tools_write_identity: true); "
                "remember the note in today's journal instead")

    def signal_text(self, ref: str, event: str) -> str:
        try:
            parsed = signals.parse_ref(ref)  # PATH#CHUNK too, as `memory reinforce` takes it
        except signals.BadRef as exc:
            raise ToolError(str(exc)) from None
        chunk = parsed.ord
        given, a, _b = (parsed.path, None, None) if chunk is not None else update.parse_span(ref)
        rel = update.memory_path(self.root, given)
        where = f"{rel}:{a}" if a else f"{rel}#{chunk}" if chunk is not None else rel
        if a is not None:
            count = max(1, len(self._lines(rel)))
            if a > count:
                raise ToolError(f"{rel} has {count} line(s), no line {a}")
        done = refs.record(self.root, str(self.root / where), event)
        now = f" (score now {done.score:+g})" if done.score is not None else ""
        return f"{event.capitalize()}d {where}{now}."


class _Server(MCPServer):
    """The SDK's server, with arguments that do not fit a tool's schema said in one line
    a model can act on (the SDK's own text is pydantic's, with a docs URL)."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            raise ToolError(f"Error executing tool {name}: {_argument_errors(exc.__cause__)}"
                            ) from exc.__cause__


def _argument_errors(exc: ValidationError) -> str:
    """``query: required; limit: not an integer``: each wrong argument and why, never
    the value sent (it may be huge, and the model has it)."""
    said = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        why = "required" if err["type"] == "missing" else err["msg"].replace(
            "Input should be", "should be")
        said.append(f"{where}: {why}")
    return "wrong arguments: " + "; ".join(said)


def build_server(root: str | Path | None = None, memory: Memory | None = None) -> MCPServer:
    """An MCP server over the memory repo at ``root`` (None: ``MEMORY_REPO``, else the
    repo above the cwd, found on the first call), or over ``memory`` (a resident's)."""
    memory = memory or Memory(root)
    level = "DEBUG" if os.environ.get("MEMORY_DEBUG") else "WARNING"
    server = _Server("memrepo", instructions=INSTRUCTIONS, version=__version__,
                       log_level=level)

    def tool(read_only: bool = False) -> Callable[[Callable[..., Any]], Any]:
        """Register with the docstring as one line of description, no output schema
        (the text answer is what the model reads; a schema would cost context)."""

        def register(fn: Callable[..., Any]) -> Any:
            return server.tool(
                description=" ".join((fn.__doc__ or "").split()),
                annotations=READ_ONLY if read_only else None,
                structured_output=False,
            )(fn)

        return register

    @tool(read_only=True)
    async def memory_search(
        query: str,
        limit: int = 10,
        category: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> str:
        """Search memory by keywords (and meaning when vectors are on); ranked hits as
        path:start-end refs with a snippet. category: e.g. project, person, journal,
        conversation; since/until: YYYY-MM-DD or 7d, 2w, 3m."""
        return await memory.call(memory.search_text, query, limit, category, since, until)

    @tool(read_only=True)
    async def memory_context(message: str, budget: int = 2000) -> str:
        """A briefing compiled from memory for a task or question (identity, core
        memory, matching topics and passages), within budget tokens."""
        return await memory.call(memory.context_text, message, budget)

    @tool(read_only=True)
    async def memory_read(ref: str) -> str:
        """Read a memory file or a span of it, with line numbers: path, path:12 or
        path:12-30 (repo-relative, as search returns them)."""
        return await memory.call(memory.read_text, ref)

    @tool()
    async def memory_remember(text: str, file: str | None = None) -> str:
        """Save a durable note (a decision, preference, lesson) to today's journal, or
        append it to an existing knowledge file; committed. Returns its ref."""
        return await memory.call(memory.remember_text, text, file)

    @tool()
    async def memory_update(
        ref: str, text: str, mode: Literal["supersede", "replace"] = "supersede"
    ) -> str:
        """Change one knowledge entry (a bullet line, ref path:LINE): supersede keeps the
        old line struck through, replace rewrites it; committed."""
        return await memory.call(memory.update_text, ref, text, mode)

    @tool()
    async def memory_reinforce(ref: str) -> str:
        """Mark a memory (ref from search) as useful: it ranks higher from now on."""
        return await memory.call(memory.signal_text, ref, "reinforce")

    @tool()
    async def memory_demote(ref: str) -> str:
        """Mark a memory (ref from search) as stale or wrong: it ranks lower from now on."""
        return await memory.call(memory.signal_text, ref, "demote")

    server.memrepo = memory  # type: ignore[attr-defined] - for tests and the benchmark
    return server


def serve(root: str | Path) -> None:
    """Run the server on stdio until the client closes it (``memory mcp``)."""
    server = build_server(root)  # configures logging: stderr, WARNING (MEMORY_DEBUG: DEBUG)
    try:
        server.run("stdio")
    finally:
        server.memrepo.close()  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


async def _wait(fut: Future[T]) -> T:
    """Await a worker-thread future on asyncio directly; elsewhere through a thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio)
        return await anyio.to_thread.run_sync(fut.result)
    return await asyncio.wrap_future(fut)


def _stat(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev


def _fell_back(why: str) -> None:
    log.warning("search %s; scanning files", why)


def _categories(value: str | None) -> list[str] | None:
    if value is None or not value.strip():
        return None
    try:
        return category_names([value]) or None
    except ValueError as exc:
        raise ToolError(str(exc)) from None


def _date(value: str | None, name: str) -> str | None:
    """A ``since`` / ``until`` argument as a ``YYYY-MM-DD`` bound."""
    if value is None or not value.strip():
        return None
    try:
        return parse_bound(value)
    except BadBound as exc:
        raise ToolError(f"{name} {exc}") from None


def _quoted(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` as a result names it: the model sent it, so a long one is not sent back."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


def _format_hits(query: str, hits: list[Hit], why: str | None) -> str:
    note = f" (index unavailable: {why}; files scanned)" if why else ""
    if not hits:
        return f"No memory matches {_quoted(query)}{note}."
    rows = [f"{len(hits)} hit{'s' if len(hits) != 1 else ''} for {_quoted(query)}{note}:"]
    for h in hits:
        cat = f" [{h.category}]" if h.category else ""
        rows.append(f"{h.ref}{cat} {h.score:.3g}")
        if h.snippet:
            rows.append(f"  {h.snippet}")
    return "\n".join(rows)


def _committed(sha: str | None) -> str:
    return f" (commit {sha[:10]})" if sha else ""


def _system_error(exc: OSError | UnicodeDecodeError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"a file is not UTF-8 text (offset {exc.start})"
    what = exc.strerror or str(exc) or type(exc).__name__
    return f"{exc.filename}: {what}" if exc.filename else what


#: The server ``mcp run memrepo/agents/mcp_server.py`` finds (its repo: MEMORY_REPO or cwd).
mcp = build_server()
