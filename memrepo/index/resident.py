"""The resident model: one process per clone keeps a heavy embedder loaded and serves it.

A sentence model costs ~0.5 s to load and ~300 MB, which no hook, commit or single
``memory search`` may pay. So a long-lived process (``memory serve``, or ``memory mcp``
hosting it) loads it once and answers on a UNIX socket in the clone's state dir
(``<git-dir>/memrepo/serve/embed.sock``: the dir 0700, the socket 0600, and the peer's uid
checked, so another user cannot connect). Callers use it through
:class:`~memrepo.index.embedders.ResidentEmbedder` with a tight budget (100 ms for connect
and reply); on any failure their search runs on FTS5 alone and says why.

Protocol: one JSON object per line each way, on a connection per request.

- ``{"op": "ping"}`` -> ``{"ok": true, "pid", "model", "loaded", "cache", "catching_up", …}``
- ``{"op": "embed", "model": ID, "texts": [...]}`` -> ``{"ok": true, "vectors": [b64…]}``
  (little-endian float32; an LRU cache per text, so a repeated query costs no model time)
- ``{"op": "nearest", "model": ID, "text": T, "k": N}`` -> ``{"ok": true, "via", "hits":
  [[vector key, cosine], …], "vector": b64}``: T's vector (cached as above) searched in the server's
  in-memory nearest-neighbour index of the index's vectors
  (:class:`~memrepo.index.vectors.NearestIndex`: usearch HNSW over int8 codes, else exact
  numpy), kept current by a keeper thread and saved in the serve dir; a search asks this
  instead of scanning 1.2M vectors itself (~0.7 s at 100K files). While that index is
  being built it refuses, and the searcher embeds and scans locally.
- ``{"op": "catch-up"}`` -> embed the chunks the index left without vectors, in a thread
  of the server, writing under the index lock in short transactions
- ``{"op": "stop"}``
- anything else, or a malformed line -> ``{"ok": false, "error": …}``; the server goes on.

Embedding never happens in a hook: :func:`after_commit` (for the post-commit hook) asks a
running server to catch up, or, with no server, starts one detached low-priority
catch-up worker (``python -m memrepo.index.resident catch-up ROOT``), at most one at a time.

Only one server per clone: it holds ``serve.lock`` (flock) for its life, so a socket file
found while the lock is free is a dead server's, and is removed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import socket
import struct
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from memrepo.index.paths import db_path, state_dir
from memrepo.jsonsafe import json_object

SERVE_DIR = "serve"
SOCKET_NAME = "embed.sock"
PIDFILE = "serve.pid"
LOGFILE = "serve.log"
SERVER_LOCK = "serve.lock"
CATCHUP_LOCK = "catchup.lock"
CATCHUP_PENDING = "catchup.pending"
CATCHUP_ERR = "catchup.err"

#: connect + request + reply, for a query on a hook's or a search's path
QUERY_BUDGET_S = 0.1
#: a request line the server reads at most (then it answers an error and hangs up)
MAX_REQUEST = 1 << 20
#: a reply line a client reads at most
MAX_REPLY = 16 << 20
MAX_TEXTS = 256
#: the most neighbours a ``nearest`` returns
MAX_K = 2000
#: the keeper looks at memory.db this often (a request that sees it changed wakes it)
KEEP_POLL_S = 1.0
#: a client that connects and sends nothing is dropped after this
REQUEST_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 16
CACHE_SIZE = 4096
#: chunks embedded per write under the index lock (the lock is held for the write only)
CATCHUP_BATCH = 32
CATCHUP_DOCS = 200
#: AF_UNIX paths are limited to ~108 bytes; a longer one moves to a short per-user dir
_SUN_PATH_MAX = 100


class Unavailable(Exception):
    """No usable resident server (the message says why: FTS5 alone answers)."""


class Refused(Unavailable):
    """The server runs and answered, but with an error (an op it cannot do now)."""


# ---------------------------------------------------------------------------
# Where
# ---------------------------------------------------------------------------


def git_dir(root: Path) -> Path:
    """The clone's git dir without running git when ``root/.git`` says it (a hook's or a
    search's path: a ``git rev-parse`` costs ~3 ms)."""
    dot = Path(root) / ".git"
    if dot.is_dir():
        return dot.absolute()
    if dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text[7:].strip())
            return target if target.is_absolute() else (Path(root) / target).absolute()
    from memrepo.index import gitsource

    return gitsource.locate(Path(root))[0]


def serve_dir(root: Path) -> Path:
    return state_dir(git_dir(root)) / SERVE_DIR


def socket_path(sdir: Path) -> Path:
    """The socket of the server whose files are in ``sdir``; a short per-user path when
    the natural one is too long for AF_UNIX (deep clones, test temp dirs)."""
    natural = sdir / SOCKET_NAME
    if len(os.fsencode(str(natural))) <= _SUN_PATH_MAX:
        return natural
    key = hashlib.sha256(os.fsencode(os.path.realpath(sdir))).hexdigest()[:20]
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp") / f"memrepo-{os.getuid()}"
    return base / f"{key}.sock"


def _private_dir(path: Path) -> None:
    """Create ``path`` 0700 (or tighten it): the socket inside it is reachable by us only."""
    path.mkdir(parents=True, exist_ok=True)
    st = path.stat()
    if st.st_uid != os.getuid():
        raise OSError(f"{path} belongs to another user; refusing to serve there")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


# ---------------------------------------------------------------------------
# Client
# ---------------------------------------------------------------------------


def request(sock_path: Path, msg: dict[str, Any], budget: float = QUERY_BUDGET_S) -> dict:
    """One request, its reply as a dict with ``ok`` true; Unavailable on anything else
    (no socket, a dead server's socket, a timeout, a garbage or error reply)."""
    deadline = time.monotonic() + budget
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(budget)
        try:
            s.connect(str(sock_path))
        except FileNotFoundError:
            raise Unavailable("no resident server (start one: memory serve --detach)") from None
        except ConnectionRefusedError:
            raise Unavailable("stale socket: the resident server is not running") from None
        except OSError as exc:
            raise Unavailable(f"cannot reach the resident server ({exc})") from None
        try:
            s.sendall(json.dumps(msg).encode() + b"\n")
            buf = bytearray()
            while not buf.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                s.settimeout(left)
                part = s.recv(1 << 16)
                if not part:
                    raise Unavailable("the resident server closed the connection mid-request")
                buf += part
                if len(buf) > MAX_REPLY:
                    raise Unavailable("the resident server's reply is too long")
        except TimeoutError:
            ms = f"{budget * 1000:.0f} ms"
            raise Unavailable(f"the resident server did not answer within {ms}") from None
        except OSError as exc:
            raise Unavailable(f"the resident server failed mid-request ({exc})") from None
    finally:
        s.close()
    reply = json_object(buf)
    if reply is None:
        raise Unavailable("the resident server sent a garbage reply")
    if reply.get("ok") is not True:
        raise Refused(f"the resident server refused: {str(reply.get('error'))[:200]}")
    return reply


def embed(sock_path: Path, model: str, texts: list[str], budget: float = QUERY_BUDGET_S
          ) -> list[bytes]:
    """Vectors of ``texts`` from the server (which must run ``model``: an embedder id)."""
    reply = request(sock_path, {"op": "embed", "model": model, "texts": texts}, budget)
    vecs = reply.get("vectors")
    if not isinstance(vecs, list) or len(vecs) != len(texts):
        raise Unavailable("the resident server sent a garbage reply (vectors)")
    try:
        return [base64.b64decode(v, validate=True) for v in vecs]
    except (ValueError, TypeError):
        raise Unavailable("the resident server sent a garbage reply (vectors)") from None


class Nearest(NamedTuple):
    """What a ``nearest`` answers."""

    hits: list[tuple[int, float]]  # (vector key, cosine), best first
    via: str  # which index answered
    vector: bytes  # the query's own vector: search scores a turn's other vector with it


def nearest(sock_path: Path, model: str, text: str, k: int, budget: float = QUERY_BUDGET_S
            ) -> Nearest:
    """The ``k`` vector keys nearest ``text``'s vector, by the server's index. Refused
    when the server cannot (its index being built)."""
    reply = request(sock_path, {"op": "nearest", "model": model, "text": text, "k": k},
                    budget)
    hits = reply.get("hits")
    try:
        out = [(int(h), float(s)) for h, s in hits]  # type: ignore[union-attr]
        vector = base64.b64decode(reply.get("vector") or "", validate=True)
    except (TypeError, ValueError):
        raise Unavailable("the resident server sent a garbage reply (hits)") from None
    return Nearest(out, str(reply.get("via") or ""), vector)


def ping(root: Path, budget: float = 0.5) -> dict | None:
    """The server's status, or None when none answers."""
    try:
        return request(socket_path(serve_dir(root)), {"op": "ping"}, budget)
    except (Unavailable, OSError):
        return None


class ResidentEmbedder:
    """A heavy embedder's query vectors from the resident process (this module's server),
    never loading the model here: a hook or one ``memory search`` cannot pay its load.

    Same ``id`` and ``dim`` as the model it stands for, so its vectors meet the index's.
    ``embed`` raises :class:`Unavailable` (the reason in its
    message) when no server answers within ``budget`` seconds: the search then runs on
    FTS5 alone and says why.
    """

    light = True  # no model in this process

    def __init__(self, root: Path, model: Any, budget: float | None = None):
        self.id = model.id
        self.dim = model.dim
        self.budget = QUERY_BUDGET_S if budget is None else budget
        self.socket = socket_path(serve_dir(root))

    def reachable(self) -> str | None:
        """None when a server may answer (its socket exists), else why not (a stat)."""
        if self.socket.exists():
            return None
        return "no resident server (start one: memory serve --detach)"

    def embed(self, texts: list[str]) -> list[bytes]:
        return embed(self.socket, self.id, texts, self.budget)

    def nearest(self, text: str, k: int) -> Nearest:
        """The vectors nearest ``text``, searched by the server."""
        return nearest(self.socket, self.id, text, k, self.budget)


class HostedEmbedder:
    """The server this process hosts (``memory mcp``), asked in-process: its model and
    query cache for ``embed``, its nearest index for ``nearest``, no socket; a search in
    the MCP process neither scans every vector nor waits on itself."""

    light = False

    def __init__(self, server: Server):
        self.server = server
        self.id = server.embedder.id
        self.dim = server.embedder.dim

    def embed(self, texts: list[str]) -> list[bytes]:
        return self.server.query_vectors(texts)

    def nearest(self, text: str, k: int) -> Nearest:
        found = self.server.search_nearest(text, k)
        return found._replace(via=f"hosted {found.via}")


def query_embedder(recorded: str, root: Path, *, local: bool = False) -> Any:
    """The embedder a search uses for query vectors against an index built by
    ``recorded``: a light one in-process; a heavy one through the resident process,
    unless ``local`` (``--batch``, the MCP server: they amortise loading it)."""
    from memrepo.index.embedders import get_embedder

    emb = get_embedder(recorded)
    if emb is None or emb.light or local:
        return emb
    return ResidentEmbedder(root, emb)


# ---------------------------------------------------------------------------
# After a commit: catch up in the background, never in the hook
# ---------------------------------------------------------------------------


def after_commit(root: Path, state: Path | None = None) -> str:
    """Get the chunks a commit left without vectors embedded, without waiting for it.

    A running server is asked to catch up (one local round trip). With none, a detached,
    low-priority catch-up worker is started unless one already runs (its lock) — it sees
    the pending mark left here and takes one more round. Returns what it did:
    ``server``, ``running``, ``spawned`` or ``failed: …``; never raises.
    """
    try:
        sdir = (Path(state) / SERVE_DIR) if state is not None else serve_dir(root)
        try:
            request(socket_path(sdir), {"op": "catch-up"}, budget=0.2)
            return "server"
        except Unavailable:
            pass
        _private_dir(sdir)
        (sdir / CATCHUP_PENDING).touch()
        from memrepo.locks import try_lock

        fd = try_lock(sdir / CATCHUP_LOCK, 0o600)
        if fd is None:
            return "running"  # it sees the pending mark and takes one more round
        try:
            spawn_worker(Path(root), sdir, fd)
        finally:
            os.close(fd)  # the worker holds the lock now (the same open file)
        return "spawned"
    except Exception as exc:  # never fail a commit
        return f"failed: {type(exc).__name__}: {exc}"


def _locked(path: Path) -> bool:
    """Whether another process holds the flock on ``path`` (a probe, released at once)."""
    from memrepo.locks import LockBusy, file_lock

    try:
        with file_lock(path, 0.0):
            return False
    except LockBusy:
        return True


def spawn_worker(root: Path, sdir: Path, lock_fd: int) -> None:
    """``python -m memrepo.index.resident catch-up ROOT --lock-fd 3`` in a session of its
    own (niced there), holding the catch-up lock it inherits as fd 3 (so no second worker
    starts while this one boots); stdout to /dev/null, stderr appended to ``catchup.err``."""
    argv = [sys.executable, "-m", "memrepo.index.resident", "catch-up", str(root),
            "--lock-fd", "3"]
    _spawn(argv, sdir / CATCHUP_ERR, lock_fd)


def _spawn(argv: list[str], stderr: Path, lock_fd: int | None = None) -> None:
    env = dict(os.environ)
    if hasattr(os, "posix_spawn"):
        actions: list[tuple[Any, ...]] = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, str(stderr), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
        ]
        if lock_fd is not None:
            actions.append((os.POSIX_SPAWN_DUP2, lock_fd, 3))
        os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
        return
    import subprocess  # pragma: no cover - Windows

    with open(stderr, "ab") as ferr:  # pragma: no cover
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=ferr, env=env, start_new_session=True, close_fds=True)


# ---------------------------------------------------------------------------
# Catch-up: embed what the index left without vectors, in short locked writes
# ---------------------------------------------------------------------------


def catch_up(
    root: Path,
    embedder: Any,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] | None = None,
    lock_fd: int | None = None,
) -> int:
    """Embed every chunk of the index that has no vector yet; the number embedded.

    Runs alone (``catchup.lock``; a second caller returns 0 at once; ``lock_fd``: an fd
    that holds it already, closed here when done, as the worker :func:`after_commit`
    spawns has). The model runs outside the index lock; each batch is written in one short
    transaction under it, so a post-commit hook is never held up for long, and a hook that
    found the lock taken (its pending mark) gets its pass run here right after. Stops when
    the index records another embedder, when ``should_stop()``, or when nothing is left —
    after one more round when :func:`after_commit` marked new work meanwhile, also once
    the lock is released (its mark may land just before).
    """
    from memrepo.locks import LockBusy, file_lock

    root = Path(root)
    gd = git_dir(root)
    sdir = state_dir(gd) / SERVE_DIR
    _private_dir(sdir)
    pending = sdir / CATCHUP_PENDING
    done = 0
    while True:
        held = _fd_held(lock_fd) if lock_fd is not None else file_lock(sdir / CATCHUP_LOCK, 0.0)
        lock_fd = None
        try:
            with held:
                while True:
                    with contextlib.suppress(FileNotFoundError):
                        pending.unlink()
                    done += _catch_up_rounds(root, gd, embedder, should_stop, progress, log,
                                             done)
                    if should_stop() or not pending.exists():
                        break
        except LockBusy:  # another one runs: it sees the pending mark
            return done
        if should_stop() or not pending.exists():
            return done


@contextlib.contextmanager
def _fd_held(fd: int) -> Iterator[None]:
    """A lock held through an inherited fd: released when the block ends."""
    try:
        yield
    finally:
        os.close(fd)


def _catch_up_rounds(root: Path, gd: Path, embedder: Any, should_stop: Callable[[], bool],
                     progress: Callable[[int, int], None] | None,
                     log: Callable[[str], None] | None, before: int) -> int:
    from memrepo.index import db as dbmod
    from memrepo.index import gitsource, schema
    from memrepo.index.indexer import parse

    path = db_path(root)
    tried: set[str] = set()  # blobs read once: one that cannot give its chunks is not retried
    done = 0
    while not should_stop():
        if not path.exists():
            return done
        con = dbmod.connect(path, readonly=True)
        try:
            if schema.get_meta(con).get("embedder") != embedder.id:
                if log:
                    log(f"catch-up: the index is not built with {embedder.id}; nothing to do")
                return done
            missing = con.execute(schema.MISSING_VECTORS).fetchone()[0]
            rows = con.execute(schema.MISSING_VECTOR_DOCS).fetchall()
        finally:
            con.close()
        rows = [(p, b) for p, b in rows if b not in tried][:CATCHUP_DOCS]
        if not rows or not missing:
            return done
        if progress:
            progress(before + done, before + done + missing)
        by_sha = {sha: p for p, sha in rows}
        tried.update(by_sha)
        texts: dict[int, str] = {}
        for sha, data in gitsource.stream_blobs(root, by_sha):
            if data is not None:
                for c in parse(by_sha[sha], data).chunks:
                    for h, text in c.vector_texts().items():
                        texts.setdefault(h, text)
        items = list(texts.items())
        for i in range(0, len(items), CATCHUP_BATCH):
            if should_stop():
                return done
            part = items[i : i + CATCHUP_BATCH]
            vecs = embedder.embed([t for _, t in part])
            if not _write_vectors(root, gd, embedder.id, [(h, v) for (h, _), v in
                                                         zip(part, vecs, strict=True)]):
                return done
            done += len(part)
            if progress:
                progress(before + done, before + done + max(0, missing - done))
    return done


def _write_vectors(root: Path, gd: Path, embedder_id: str, pairs: list[tuple[int, bytes]]
                   ) -> bool:
    """Insert vectors of chunks still in the index, under the index lock (one short
    transaction); then run the pass a hook left pending. False when the index no longer
    takes them (another embedder, or gone)."""
    from memrepo.index import db as dbmod
    from memrepo.index import schema
    from memrepo.index.indexer import sync
    from memrepo.index.lock import Busy, IndexLock

    lock = IndexLock(state_dir(gd))
    try:
        lock.acquire(wait=30.0)
    except Busy:  # a long `memory index` holds it: it embeds these chunks itself
        return False
    try:
        if not db_path(root).exists():
            return False
        con = dbmod.connect(db_path(root))
        try:
            if schema.get_meta(con).get("embedder") != embedder_id:
                return False
            con.execute("BEGIN IMMEDIATE")
            try:
                con.executemany(
                    "INSERT OR IGNORE INTO vectors(hash, vec) SELECT ?, ? "
                    f"WHERE {schema.VECTOR_IN_USE}",
                    [(h, v, h, h) for h, v in pairs],
                )
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        finally:
            con.close()
    finally:
        lock.release()
    if lock.pending.exists():  # a hook found us holding the lock: its pass, now
        with contextlib.suppress(Exception):
            sync(root, hook=True)
    return True


# ---------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------


class _Cache:
    """Vectors by text, least recently used out first (thread-safe)."""

    def __init__(self, size: int = CACHE_SIZE):
        self.size = size
        self._d: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, text: str) -> bytes | None:
        with self._lock:
            v = self._d.get(text)
            if v is None:
                self.misses += 1
                return None
            self._d.move_to_end(text)
            self.hits += 1
            return v

    def put(self, text: str, vec: bytes) -> None:
        with self._lock:
            self._d[text] = vec
            self._d.move_to_end(text)
            while len(self._d) > self.size:
                self._d.popitem(last=False)

    def __len__(self) -> int:
        return len(self._d)


class AlreadyRunning(Exception):
    """Another server holds this clone's ``serve.lock``."""


class Server:
    """The socket server around one embedder (``start()`` returns once it listens).

    ``idle``: stop after that many seconds without a request (and no catch-up running);
    None: never. The model loads in a thread at start, so ``ping`` answers at once
    (``loaded`` says when the model is ready; an ``embed`` before then waits for it).
    """

    def __init__(self, root: Path, embedder: Any, *, idle: float | None = None,
                 log: Callable[[str], None] | None = None, catch_up_on_start: bool = False):
        self.root = Path(root)
        self.embedder = embedder
        self.idle = idle
        self.log = log or (lambda msg: None)
        self.catch_up_on_start = catch_up_on_start
        self.sdir = serve_dir(self.root)
        self.sock_path = socket_path(self.sdir)
        self.cache = _Cache()
        self.started = time.time()
        self.load_seconds: float | None = None
        self.load_error: str | None = None
        self.embedded = 0
        self._loaded = threading.Event()
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._last = time.monotonic()
        self._conns = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._catchup: threading.Thread | None = None
        self._catchup_again = False
        self._catchup_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._sock_ino: int | None = None
        self._held: contextlib.ExitStack | None = None
        self._thread: threading.Thread | None = None
        self._loader: threading.Thread | None = None
        from memrepo.index.vectors import NearestIndex

        self.nearest = NearestIndex(db_path(self.root), embedder.id, embedder.dim,
                                    store=self.sdir, log=self.log)
        self._keeper: threading.Thread | None = None
        self._keep_wake = threading.Event()

    # -- life -----------------------------------------------------------------
    def start(self) -> None:
        """Take the clone's server lock, bind the socket (a stale one removed), listen."""
        from memrepo.locks import LockBusy, file_lock

        _private_dir(self.sdir)
        _private_dir(self.sock_path.parent)
        held = contextlib.ExitStack()
        try:
            held.enter_context(file_lock(self.sdir / SERVER_LOCK, 0.0))
        except LockBusy:
            raise AlreadyRunning(_running_note(self.sdir)) from None
        try:
            with contextlib.suppress(FileNotFoundError):  # the lock was free: a dead server's
                self.sock_path.unlink()
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o177)
            try:
                s.bind(str(self.sock_path))
            finally:
                os.umask(old)
            os.chmod(self.sock_path, 0o600)
            s.listen(MAX_CONNECTIONS)
            s.settimeout(0.25)
            self._sock, self._sock_ino = s, os.stat(self.sock_path).st_ino
            self._write_pidfile()
        except BaseException:
            held.close()
            raise
        self._held = held
        self._loader = threading.Thread(target=self._load, name="memrepo-resident-load",
                                        daemon=True)
        self._loader.start()
        self._keeper = threading.Thread(target=self._keep_nearest,
                                        name="memrepo-resident-nearest", daemon=True)
        self._keeper.start()
        self._thread = threading.Thread(target=self._accept_loop, name="memrepo-resident",
                                        daemon=True)
        self._thread.start()
        self.log(f"listening on {self.sock_path} (pid {os.getpid()}, {self.embedder.id})")

    def wait(self) -> None:
        """Block until the server stopped (``stop`` op, idle timeout or :meth:`stop`)."""
        while not self._stopped.wait(0.5):
            pass
        self._join_workers()

    def _join_workers(self, timeout: float = 60.0) -> None:
        """Let the model load and the catch-up batch in flight finish: a process that
        exits while onnxruntime runs in a daemon thread aborts (SIGABRT)."""
        self._keep_wake.set()
        for t in (self._loader, self._catchup, self._keeper):
            if t is not None and t is not threading.current_thread():
                t.join(timeout)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as wake:
                wake.settimeout(0.2)  # wakes accept() now rather than at its next poll
                wake.connect(str(self.sock_path))
            self._thread.join(timeout=5)
        else:
            self._shutdown()
        self._join_workers()

    def _shutdown(self) -> None:
        if self._stopped.is_set():
            return
        self._stop.set()  # an idle timeout ends here: the keeper and catch-up stop too
        self._keep_wake.set()
        if self._sock is not None:
            self._sock.close()
        try:  # only our own socket and pidfile: a newer server may have replaced them
            if os.stat(self.sock_path).st_ino == self._sock_ino:
                self.sock_path.unlink()
        except OSError:
            pass
        with contextlib.suppress(OSError, ValueError):
            pid = json.loads((self.sdir / PIDFILE).read_text()).get("pid")
            if pid == os.getpid():
                (self.sdir / PIDFILE).unlink()
        if self._held is not None:
            self._held.close()
        self._stopped.set()
        self.log("stopped")

    def _write_pidfile(self) -> None:
        from memrepo.atomic import atomic_write

        info = {"pid": os.getpid(), "socket": str(self.sock_path), "model": self.embedder.id,
                "started": int(self.started)}
        atomic_write(self.sdir / PIDFILE, json.dumps(info) + "\n", mode=0o600)

    def _load(self) -> None:
        t0 = time.perf_counter()
        try:
            self.embedder.embed(["warm up"])
            self.load_seconds = time.perf_counter() - t0
            self.log(f"model {self.embedder.id} loaded in {self.load_seconds:.2f}s")
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            self.log(f"model {self.embedder.id} failed to load: {self.load_error}")
        finally:
            self._loaded.set()
        if self.catch_up_on_start and self.load_error is None:
            self.start_catch_up()

    # -- connections ----------------------------------------------------------
    def _accept_loop(self) -> None:
        assert self._sock is not None
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = self._sock.accept()
                except TimeoutError:
                    if self._idle_out():
                        self.log(f"idle for {self.idle:.0f}s: stopping")
                        break
                    continue
                except OSError:
                    if self._stop.is_set():
                        break
                    raise
                if self._stop.is_set():
                    conn.close()
                    break
                if not self._conns.acquire(blocking=False):
                    _send(conn, {"ok": False, "error": "busy: too many connections"})
                    conn.close()
                    continue
                threading.Thread(target=self._serve_conn, args=(conn,), daemon=True).start()
        finally:
            self._shutdown()

    def _idle_out(self) -> bool:
        if not self.idle or not self._loaded.is_set():
            return False
        busy = self._catchup is not None and self._catchup.is_alive()
        return not busy and time.monotonic() - self._last > self.idle

    def _serve_conn(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(REQUEST_TIMEOUT_S)
            if not _same_user(conn):
                _send(conn, {"ok": False, "error": "refused: another user"})
                return
            line = _read_line(conn, MAX_REQUEST)
            if line is None:
                return
            self._last = time.monotonic()
            reply = self.handle(line)
            _send(conn, reply)
            self._last = time.monotonic()
            if reply.get("stopping"):
                self._stop.set()
        except (OSError, ValueError):
            pass  # a client gone or too slow: nothing to answer
        finally:
            conn.close()
            self._conns.release()

    def handle(self, line: bytes) -> dict[str, Any]:
        """The reply to one request line (never raises)."""
        try:
            req = json.loads(line)
        except (ValueError, RecursionError):
            return {"ok": False, "error": "not JSON"}
        if not isinstance(req, dict):
            return {"ok": False, "error": "not a JSON object"}
        op = req.get("op")
        try:
            if op == "ping":
                return self.status()
            if op == "embed":
                return self._embed(req)
            if op == "nearest":
                return self._nearest(req)
            if op == "catch-up":
                return {"ok": True, "started": self.start_catch_up()}
            if op == "stop":
                return {"ok": True, "stopping": True}
        except Exception as exc:  # a model error: this request fails, the server goes on
            self.log(f"{op} failed: {type(exc).__name__}: {exc}")
            return {"ok": False, "error": f"{op} failed: {type(exc).__name__}: {exc}"[:300]}
        return {"ok": False, "error": f"unknown op {str(op)[:40]!r} "
                                      "(ping, embed, nearest, catch-up, stop)"}

    def status(self) -> dict[str, Any]:
        return {
            "ok": True, "pid": os.getpid(), "model": self.embedder.id, "root": str(self.root),
            "loaded": self._loaded.is_set() and self.load_error is None,
            "load_error": self.load_error, "load_seconds": self.load_seconds,
            "uptime": round(time.time() - self.started, 1), "idle_timeout": self.idle,
            "cache": len(self.cache), "cache_hits": self.cache.hits,
            "catching_up": self._catchup is not None and self._catchup.is_alive(),
            "embedded": self.embedded, "rss_mb": _rss_mb(),
            "nearest": self.nearest.status(),
        }

    def _embed(self, req: dict[str, Any]) -> dict[str, Any]:
        texts = req.get("texts")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return {"ok": False, "error": "texts must be a list of strings"}
        if len(texts) > MAX_TEXTS:
            return {"ok": False, "error": f"at most {MAX_TEXTS} texts a request"}
        model = req.get("model")
        if model is not None and model != self.embedder.id:
            return {"ok": False, "error": f"this server runs {self.embedder.id}, not {model}"}
        try:
            out = self.query_vectors(texts)
        except Refused as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "model": self.embedder.id,
                "vectors": [base64.b64encode(v).decode() for v in out]}

    def query_vectors(self, texts: list[str]) -> list[bytes]:
        """Vectors of ``texts``, from the cache or the model (which fills the cache);
        Refused while the model loads or when it failed to."""
        if not self._loaded.wait(REQUEST_TIMEOUT_S):
            raise Refused("the model is still loading")
        if self.load_error:
            raise Refused(f"the model failed to load: {self.load_error}")
        out: list[bytes | None] = [self.cache.get(t) for t in texts]
        todo = [i for i, v in enumerate(out) if v is None]
        if todo:
            fresh = self.embedder.embed([texts[i] for i in dict.fromkeys(todo)])
            for i, v in zip(dict.fromkeys(todo), fresh, strict=True):
                self.cache.put(texts[i], v)
            out = [self.cache.get(t) if v is None else v for t, v in zip(texts, out, strict=True)]
        return [v or b"" for v in out]

    # -- nearest ----------------------------------------------------------------
    def _nearest(self, req: dict[str, Any]) -> dict[str, Any]:
        """The ``nearest`` op: the request checked, then :meth:`search_nearest`."""
        text, k = req.get("text"), req.get("k", 400)
        if not isinstance(text, str):
            return {"ok": False, "error": "text must be a string"}
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
            return {"ok": False, "error": f"k must be an integer from 1 to {MAX_K}"}
        model = req.get("model")
        if model is not None and model != self.embedder.id:
            return {"ok": False, "error": f"this server runs {self.embedder.id}, not {model}"}
        try:
            found = self.search_nearest(text, k)
        except Refused as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "model": self.embedder.id, "via": found.via,
                "hits": [[h, round(s, 6)] for h, s in found.hits],
                "vector": base64.b64encode(found.vector).decode()}

    def search_nearest(self, text: str, k: int) -> Nearest:
        """The ``k`` vectors nearest ``text`` (keys, cosines), which index answered, and
        the query's vector; Refused while the model loads or the index is being built."""
        from memrepo.index.vectors import NotReady

        if self.nearest.changed():
            self._keep_wake.set()  # memory.db moved on: the keeper catches up (not here)
        (qv,) = self.query_vectors([text])
        try:
            hits = self.nearest.search(qv, k)
        except NotReady as exc:
            raise Refused(f"nearest: {exc}") from None
        return Nearest(hits, self.nearest.status()["via"], qv)

    def _keep_nearest(self) -> None:
        """The keeper thread: build, load or update the nearest index when memory.db
        changes (niced, as catch-up); save it to the serve dir now and then and at stop."""
        with contextlib.suppress(Exception):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        while not self._stop.is_set():
            try:
                self.nearest.refresh(should_stop=self._stop.is_set)
                self.nearest.save()
            except Exception as exc:  # a locked or torn memory.db: the next round retries
                self.nearest.state = f"update failed: {type(exc).__name__}: {exc}"[:200]
                self.log(f"nearest: {self.nearest.state}")
            self._keep_wake.wait(KEEP_POLL_S)
            self._keep_wake.clear()
        try:
            self.nearest.save(force=True)
        except Exception as exc:
            self.log(f"nearest: save failed: {type(exc).__name__}: {exc}")

    # -- catch-up ---------------------------------------------------------------
    def start_catch_up(self) -> bool:
        """Start the catch-up thread (or have the running one take one more round)."""
        with self._catchup_lock:
            if self._catchup is not None and self._catchup.is_alive():
                self._catchup_again = True
                return False
            self._catchup_again = False
            self._catchup = threading.Thread(target=self._catch_up_loop,
                                             name="memrepo-resident-catchup", daemon=True)
            self._catchup.start()
            return True

    def _catch_up_loop(self) -> None:
        with contextlib.suppress(Exception):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        while True:
            try:
                n = catch_up(self.root, self.embedder, should_stop=self._stop.is_set,
                             log=self.log)
                self.embedded += n
                if n:
                    self.log(f"catch-up: embedded {n} chunks")
                    self._keep_wake.set()
            except Exception as exc:
                self.log(f"catch-up failed: {type(exc).__name__}: {exc}")
            with self._catchup_lock:
                if not self._catchup_again or self._stop.is_set():
                    self._catchup = None
                    return
                self._catchup_again = False


def _running_note(sdir: Path) -> str:
    try:
        info = json.loads((sdir / PIDFILE).read_text())
        return f"a resident server already runs for this clone (pid {info.get('pid')})"
    except (OSError, ValueError):
        return "a resident server already runs for this clone"


def _same_user(conn: socket.socket) -> bool:
    """The peer runs as our uid (Linux SO_PEERCRED; elsewhere the 0600 socket decides)."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:  # pragma: no cover - macOS, BSD
        return True
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


def _read_line(conn: socket.socket, limit: int) -> bytes | None:
    buf = bytearray()
    while b"\n" not in buf:
        part = conn.recv(1 << 16)
        if not part:
            return bytes(buf) if buf.strip() else None
        buf += part
        if len(buf) > limit:
            _send(conn, {"ok": False, "error": f"request longer than {limit} bytes"})
            return None
    return bytes(buf.split(b"\n", 1)[0])


def _send(conn: socket.socket, reply: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(reply).encode() + b"\n")


def _rss_mb() -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for row in fh:
                if row.startswith("VmRSS:"):
                    return round(int(row.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


# ---------------------------------------------------------------------------
# Running one (``memory serve`` and the detached entry)
# ---------------------------------------------------------------------------


def configured_embedder(root: Path, name: str | None = None) -> Any:
    """The embedder a server for ``root`` runs: ``name``, else the one the index was built
    with, else the configured one. MemrepoError when that is none."""
    from memrepo.errors import MemrepoError
    from memrepo.index.embedders import available, get_embedder

    if name is None:
        name = _recorded(root)
    if name in (None, "none"):
        from memrepo.repo import MemoryRepo

        name = MemoryRepo(root).config["search"]["embedder"]
    emb = get_embedder(name)
    if emb is None:
        raise MemrepoError("search.embedder is none: there is no model to serve")
    missing = available(name.partition("-")[0])
    if missing:
        raise MemrepoError(f"the {name} embedder is not installed: {missing}")
    return emb


def _recorded(root: Path) -> str | None:
    from memrepo.index import db as dbmod
    from memrepo.index import schema

    path = db_path(root)
    if not path.exists():
        return None
    try:
        con = dbmod.connect(path, readonly=True)
        try:
            return schema.get_meta(con).get("embedder")
        finally:
            con.close()
    except Exception:
        return None


def file_logger(sdir: Path) -> Callable[[str], None]:
    """A line logger into ``serve.log`` (timestamped; trimmed past 1 MB)."""
    path = sdir / LOGFILE
    lock = threading.Lock()

    def write(msg: str) -> None:
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {msg}\n"
        with lock, contextlib.suppress(OSError):
            if path.exists() and path.stat().st_size > 1 << 20:
                path.replace(path.with_suffix(".log.1"))
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as fh:
                fh.write(line)

    return write


def run_foreground(root: Path, model: str | None = None, idle: float | None = None,
                   echo: Callable[[str], None] | None = None) -> None:
    """Serve until stopped (``stop`` op, idle timeout, SIGTERM or Ctrl-C)."""
    import signal

    emb = configured_embedder(root, model)
    sdir = serve_dir(root)
    _private_dir(sdir)
    flog = file_logger(sdir)

    def log(msg: str) -> None:
        flog(msg)
        if echo:
            echo(msg)

    server = Server(root, emb, idle=idle, log=log, catch_up_on_start=True)
    server.start()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda *_: server._stop.set())
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()


def start_detached(root: Path, model: str | None = None, idle: float | None = None,
                   wait: float = 20.0) -> dict[str, Any]:
    """Start a server in a session of its own and wait until it answers with its model
    loaded; its status. MemrepoError when it does not come up (its log names why)."""
    from memrepo.errors import MemrepoError

    root = Path(root).absolute()
    configured_embedder(root, model)  # fail here, with the reason, not in the child
    running = ping(root)
    if running is not None:
        raise MemrepoError(f"a resident server already runs for this clone "
                           f"(pid {running.get('pid')}, {running.get('model')})")
    sdir = serve_dir(root)
    _private_dir(sdir)
    argv = [sys.executable, "-m", "memrepo.index.resident", "serve", str(root)]
    if model:
        argv += ["--model", model]
    if idle:
        argv += ["--idle", str(idle)]
    _spawn(argv, sdir / LOGFILE)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        st = ping(root, budget=0.5)
        if st is not None and (st.get("loaded") or st.get("load_error")):
            if st.get("load_error"):
                raise MemrepoError(f"the resident server could not load its model: "
                                   f"{st['load_error']} (log: {sdir / LOGFILE})")
            return st
        time.sleep(0.05)
    raise MemrepoError(f"the resident server did not come up within {wait:.0f}s "
                       f"(log: {sdir / LOGFILE})")


def stop(root: Path, wait: float = 10.0) -> bool:
    """Ask the clone's server to stop and wait until its lock is free; False if none ran."""
    sdir = serve_dir(root)
    try:
        request(socket_path(sdir), {"op": "stop"}, budget=2.0)
    except Unavailable:
        if not _locked(sdir / SERVER_LOCK):
            return False
        # holds the lock but does not answer: stop the pid it wrote (its lock proves it)
        import signal

        with contextlib.suppress(OSError, ValueError, TypeError):
            os.kill(int(json.loads((sdir / PIDFILE).read_text())["pid"]), signal.SIGTERM)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not _locked(sdir / SERVER_LOCK):
            return True
        time.sleep(0.05)
    return True


def status(root: Path) -> dict[str, Any]:
    """What ``memory serve --status`` shows: the running server's ping, or why none."""
    sdir = serve_dir(root)
    st = ping(root)
    if st is not None:
        return {"running": True, "socket": str(socket_path(sdir)), **st}
    info: dict[str, Any] = {"running": False, "socket": str(socket_path(sdir))}
    if _locked(sdir / SERVER_LOCK):
        info["note"] = "a server holds the lock but does not answer"
    elif socket_path(sdir).exists():
        info["note"] = "a stale socket is left (the next server removes it)"
    return info


@contextlib.contextmanager
def hosted(root: Path, embedder: Any, log: Callable[[str], None] | None = None
           ) -> Iterator[Server | None]:
    """Serve ``embedder`` from this process while the block runs (``memory mcp``); None
    when another server already runs for the clone (use it through the socket)."""
    server = Server(root, embedder, log=log, catch_up_on_start=True)
    try:
        server.start()
    except AlreadyRunning:
        yield None
        return
    try:
        yield server
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m memrepo.index.resident serve ROOT [--model M] [--idle S]`` (what
    ``memory serve --detach`` spawns) or ``catch-up ROOT`` (what :func:`after_commit`
    spawns): no Click, no YAML on the way to the model."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m memrepo.index.resident")
    p.add_argument("cmd", choices=["serve", "catch-up"])
    p.add_argument("root")
    p.add_argument("--model")
    p.add_argument("--idle", type=float)
    p.add_argument("--lock-fd", type=int, help="the catch-up lock, held by this fd")
    a = p.parse_args(argv)
    root = Path(a.root)
    if a.cmd == "serve":
        try:
            run_foreground(root, a.model, a.idle)
        except AlreadyRunning as exc:
            print(f"memory serve: {exc}", file=sys.stderr)
            return 1
        return 0
    with contextlib.suppress(Exception):
        os.nice(10)
    name = _recorded(root)
    if name in (None, "none"):
        return 0
    from memrepo.index.embedders import get_embedder

    log = file_logger(serve_dir(root))
    try:
        n = catch_up(root, get_embedder(name), lock_fd=a.lock_fd)
    except Exception as exc:  # one line in the log, not a traceback per commit
        log(f"catch-up worker failed: {type(exc).__name__}: {exc}")
        return 1
    if n:
        log(f"catch-up worker: embedded {n} chunks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
