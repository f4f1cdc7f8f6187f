"""The resident server: one embedder behind a clone's UNIX socket (the protocol is in
:mod:`~memrepo.index.remote`).

It answers each connection in a thread (a bounded number, the peer's uid checked; a
service may keep its connection for a session, an agent's MCP session), keeps
query vectors in an LRU cache, loads the model in a thread so ``ping`` answers at once,
keeps its nearest-neighbour index current in a keeper thread and runs catch-up
(:mod:`~memrepo.index.catchup`) in another. :class:`HostedEmbedder` is the same server
asked in-process by the process that hosts it (``memory mcp``).

Only one server per clone: it holds ``serve.lock`` (flock) for its life, so a socket file
found while the lock is free is a dead server's, and is removed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo.atomic import atomic_write
from memrepo.index.catchup import catch_up
from memrepo.index.paths import db_path
from memrepo.index.ranking import settings_from_config
from memrepo.index.remote import (
    MAX_K,
    MAX_KEYS,
    Nearest,
    Refused,
    pack_keys,
    private_dir,
    serve_dir,
    socket_path,
    unpack_similarity,
)
from memrepo.index.search import Search
from memrepo.locks import LockBusy, file_lock
from memrepo.repo import MemoryRepo
from memrepo.resident.cache import QueryCache
from memrepo.resident.codestamp import CodeWatch
from memrepo.resident.nearest import NearestIndex, NotReady
from memrepo.resident.stats import OpStats, rss_mb
from memrepo.resident.wire import read_line, same_user, send, still_asked

if TYPE_CHECKING:
    from memrepo.index.search import Search

#: An op a higher layer adds to the server: (server, request, asked) -> reply (``ok`` and
#: the rest; an exception is answered as ``op failed: …``); ``asked()`` says whether the
#: client still waits (it hangs up when it gives up). The index knows none of them.
#: A reply may carry a :data:`SESSION` callable: the reply is sent without it, then it is
#: given the connection for as long as it runs (an agent's MCP session).
Service = Callable[["Server", dict[str, Any], Callable[[], bool]], dict[str, Any]]

#: the reply key of a service that takes the connection over (see :data:`Service`)
SESSION = "session"

PIDFILE = "serve.pid"
SERVER_LOCK = "serve.lock"

#: a request line the server reads at most (then it answers an error and hangs up)
MAX_REQUEST = 1 << 20
MAX_TEXTS = 256
#: the keeper looks at memory.db this often (a request that sees it changed wakes it)
KEEP_POLL_S = 1.0
#: a client that connects and sends nothing is dropped after this
REQUEST_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 16
#: connections a session may hold at once: the rest stay free for hooks and searches
MAX_SESSIONS = MAX_CONNECTIONS // 2
CACHE_SIZE = 4096


class AlreadyRunning(Exception):
    """Another server holds this clone's ``serve.lock``."""


class Server:
    """The socket server around one embedder (``start()`` returns once it listens).

    ``idle``: stop after that many seconds without a request (and no catch-up running);
    None: never. A server that idles out also retires when memrepo's code changes under
    it (memrepo.resident.codestamp): it stops listening at once, and ends once its
    sessions have. The model loads in a thread at start, so ``ping`` answers at once
    (``loaded`` says when the model is ready; an ``embed`` before then waits for it).
    """

    def __init__(self, root: Path, embedder: Any, *, idle: float | None = None,
                 log: Callable[[str], None] | None = None, catch_up_on_start: bool = False,
                 services: Mapping[str, Service] | None = None):
        self.root = Path(root)
        self.embedder = embedder
        self.idle = idle
        self.log = log or (lambda msg: None)
        self.catch_up_on_start = catch_up_on_start
        self.sdir = serve_dir(self.root)
        self.sock_path = socket_path(self.sdir)
        self.cache = QueryCache(CACHE_SIZE)
        self.started = time.time()
        self.load_seconds: float | None = None
        self.load_error: str | None = None
        self.embedded = 0
        #: ops a higher layer answers here (``agents.resident.SERVICES``: the prompt
        #: hook's recall), each called as ``service(server, request, asked)``
        self.services: Mapping[str, Service] = services or {}
        self.answered: dict[str, int] = {}  # requests each service answered
        #: what each kind of request has cost (``status()["ops"]``)
        self.spent = OpStats()
        self._loaded = threading.Event()
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._last = time.monotonic()
        self._code = CodeWatch() if idle else None
        self._retiring = False
        self._conns = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._catchup: threading.Thread | None = None
        self._catchup_again = False
        self._catchup_lock = threading.Lock()
        self._sessions: set[socket.socket] = set()  # connections a session holds
        self._sessions_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._sock_ino: int | None = None
        self._held: contextlib.ExitStack | None = None
        self._thread: threading.Thread | None = None
        self._loader: threading.Thread | None = None
        self.nearest = NearestIndex(db_path(self.root), embedder.id, embedder.dim,
                                    store=self.sdir, log=self.log)
        self._keeper: threading.Thread | None = None
        self._keep_wake = threading.Event()

    # -- life -----------------------------------------------------------------
    def start(self) -> None:
        """Take the clone's server lock, bind the socket (a stale one removed), listen."""
        private_dir(self.sdir)
        private_dir(self.sock_path.parent)
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
        self._retiring = False  # a stop asked for ends a retiring server's sessions too
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
        with self._sessions_lock:  # each session reads EOF and ends (not a retiring one's)
            for conn in () if self._retiring else self._sessions:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
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
            self._held.close()  # a new server may start now
        while self._retiring and self._sessions:  # they end as their agents leave
            time.sleep(0.5)
        self.log("stopped")  # first: wait() returns on the event, and the process may end
        self._stopped.set()

    def _write_pidfile(self) -> None:
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
                    if self._code is not None and self._code.changed():
                        self.log("memrepo's code changed: retiring (the next client starts "
                                 "a server of the new code; this one ends with its sessions)")
                        self._retiring = True
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
                    send(conn, {"ok": False, "error": "busy: too many connections"})
                    conn.close()
                    continue
                threading.Thread(target=self._serve_conn, args=(conn,), daemon=True).start()
        finally:
            self._shutdown()

    def _idle_out(self) -> bool:
        if not self.idle or not self._loaded.is_set():
            return False
        catching_up = self._catchup is not None and self._catchup.is_alive()
        busy = catching_up or bool(self._sessions)
        return not busy and time.monotonic() - self._last > self.idle

    def _serve_conn(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(REQUEST_TIMEOUT_S)
            if not same_user(conn):
                send(conn, {"ok": False, "error": "refused: another user"})
                return
            line = read_line(conn, MAX_REQUEST)
            if line is None:
                return
            self._last = time.monotonic()
            reply = self.handle(line, asked=lambda: still_asked(conn))
            session = reply.pop(SESSION, None)
            if session is not None and not self._hold(conn):
                reply, session = {"ok": False, "error": "busy: too many sessions"}, None
            send(conn, reply)
            self._last = time.monotonic()
            if session is not None:
                self._run_session(conn, session)
            if reply.get("stopping"):
                self._stop.set()
        except (OSError, ValueError):
            pass  # a client gone or too slow: nothing to answer
        finally:
            conn.close()
            self._conns.release()

    def _hold(self, conn: socket.socket) -> bool:
        """Count ``conn`` as a session's, unless MAX_SESSIONS already run (or stopping)."""
        with self._sessions_lock:
            if len(self._sessions) >= MAX_SESSIONS or self._stop.is_set():
                return False
            self._sessions.add(conn)
            return True

    def _run_session(self, conn: socket.socket, session: Callable[[socket.socket], None]
                     ) -> None:
        """Give ``conn`` to ``session`` until it returns (no timeout: an agent may sit idle
        for hours); the server does not idle out meanwhile."""
        try:
            conn.settimeout(None)
            session(conn)
        except Exception as exc:  # one session fails, the server goes on
            self.log(f"session failed: {type(exc).__name__}: {exc}")
        finally:
            with self._sessions_lock:
                self._sessions.discard(conn)
            self._last = time.monotonic()

    def handle(self, line: bytes, asked: Callable[[], bool] = lambda: True
               ) -> dict[str, Any]:
        """The reply to one request line (never raises); ``asked()``: whether the client
        still waits for it (a service skips its writes for one that gave up)."""
        try:
            req = json.loads(line)
        except (ValueError, RecursionError):
            return {"ok": False, "error": "not JSON"}
        if not isinstance(req, dict):
            return {"ok": False, "error": "not a JSON object"}
        op = req.get("op")
        known = ["ping", "embed", "nearest", "similarity", *self.services, "catch-up", "stop"]
        if not isinstance(op, str) or op not in known:
            return {"ok": False, "error": f"unknown op {str(op)[:40]!r} ({', '.join(known)})"}
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return self._answer(op, req, asked)
        except Exception as exc:  # a model error: this request fails, the server goes on
            self.log(f"{op} failed: {type(exc).__name__}: {exc}")
            return {"ok": False, "error": f"{op} failed: {type(exc).__name__}: {exc}"[:300]}
        finally:
            self.spent.count(op, time.perf_counter() - t0, time.thread_time() - c0)

    def _answer(self, op: str, req: dict[str, Any], asked: Callable[[], bool]
                ) -> dict[str, Any]:
        """The reply to a known ``op`` (may raise)."""
        if op == "ping":
            return self.status()
        if op == "embed":
            return self._embed(req)
        if op == "nearest":
            return self._nearest(req)
        if op == "similarity":
            return self._similarity(req)
        if op in self.services:
            self.answered[op] = self.answered.get(op, 0) + 1
            return self.services[op](self, req, asked)
        if op == "catch-up":
            return {"ok": True, "started": self.start_catch_up()}
        return {"ok": True, "stopping": True}  # "stop"

    def ops(self) -> dict[str, dict[str, float]]:
        """Per op answered through the socket: see :meth:`OpStats.table`."""
        return self.spent.table()

    def status(self) -> dict[str, Any]:
        return {
            "ok": True, "pid": os.getpid(), "model": self.embedder.id, "root": str(self.root),
            "loaded": self._loaded.is_set() and self.load_error is None,
            "load_error": self.load_error, "load_seconds": self.load_seconds,
            "uptime": round(time.time() - self.started, 1), "idle_timeout": self.idle,
            "cache": len(self.cache), "cache_hits": self.cache.hits,
            "catching_up": self._catchup is not None and self._catchup.is_alive(),
            "embedded": self.embedded, "rss_mb": rss_mb(),
            "services": {op: self.answered.get(op, 0) for op in self.services},
            "sessions": len(self._sessions),
            "ops": self.ops(), "cpu_s": round(sum(os.times()[:2]), 3),
            "nearest": self.nearest.status(),
        }

    def _embed(self, req: dict[str, Any]) -> dict[str, Any]:
        texts = req.get("texts")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return {"ok": False, "error": "texts must be a list of strings"}
        if len(texts) > MAX_TEXTS:
            return {"ok": False, "error": f"at most {MAX_TEXTS} texts a request"}
        if wrong := self._wrong_model(req):
            return wrong
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
        if wrong := self._wrong_model(req):
            return wrong
        try:
            found = self.search_nearest(text, k)
        except Refused as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "model": self.embedder.id, "via": found.via, "exact": found.exact,
                "hits": [[h, round(s, 6)] for h, s in found.hits]}

    def _similarity(self, req: dict[str, Any]) -> dict[str, Any]:
        """The ``similarity`` op: the request checked, then :meth:`similarity`."""
        text, packed = req.get("text"), req.get("keys")
        if not isinstance(text, str):
            return {"ok": False, "error": "text must be a string"}
        try:
            raw = base64.b64decode(packed, validate=True)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raw = None
        if raw is None or len(raw) % 8 or len(raw) > 8 * MAX_KEYS:
            return {"ok": False, "error": f"keys must be base64 of at most {MAX_KEYS} "
                    "little-endian int64"}
        if wrong := self._wrong_model(req):
            return wrong
        try:
            sims = self.similarity(text, raw)
        except Refused as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "model": self.embedder.id, "sims": base64.b64encode(sims).decode()}

    def _wrong_model(self, req: dict[str, Any]) -> dict[str, Any] | None:
        """The error reply for a request that names another model than this server's."""
        model = req.get("model")
        if model is not None and model != self.embedder.id:
            return {"ok": False, "error": f"this server runs {self.embedder.id}, not {model}"}
        return None

    # -- services -------------------------------------------------------------------
    def hosted_search(self) -> Search:
        """A search of this clone with the config's settings whose vectors come from this
        server in-process (:class:`HostedEmbedder`): no round trip through its own
        socket, nor a connection of the ones it allows."""
        cfg = MemoryRepo(self.root).config["search"]
        # a model other than this server's (the index rebuilt meanwhile) is asked over
        # the socket as any search would (and refused): never loaded a second time here
        search = Search(self.root, settings_from_config(cfg), cfg["embedder"])
        self.adopt(search)
        return search

    def adopt(self, search: Search) -> bool:
        """Give ``search`` this server's model, query cache and nearest index in-process
        (:class:`HostedEmbedder`) when its index asks for this model; whether it did."""
        mine = getattr(search.engine, "embedder", None)
        if mine is None or mine.id != self.embedder.id:
            return False
        search.engine.embedder = HostedEmbedder(self)  # type: ignore[attr-defined]
        return True

    def search_nearest(self, text: str, k: int) -> Nearest:
        """The ``k`` vectors nearest ``text`` (keys, cosines) and which index answered;
        Refused while the model loads or the index is being built."""
        if self.nearest.changed():
            self._keep_wake.set()  # memory.db moved on: the keeper catches up (not here)
        (qv,) = self.query_vectors([text])
        try:
            hits = self.nearest.search(qv, k)
        except NotReady as exc:
            raise Refused(f"nearest: {exc}") from None
        return Nearest(hits, self.nearest.status()["via"], self.nearest.exact)

    def similarity(self, text: str, keys: bytes) -> bytes:
        """The cosines of ``text``'s vector and the vectors of ``keys`` (little-endian
        int64), little-endian float32 in their order, NaN for a key the nearest index does
        not hold; Refused while the model loads or the index is being built."""
        import numpy as np

        (qv,) = self.query_vectors([text])
        try:
            sims = self.nearest.similarity(qv, np.frombuffer(keys, dtype="<i8"))
        except NotReady as exc:
            raise Refused(f"similarity: {exc}") from None
        return sims.astype("<f4").tobytes()

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

    def similarity(self, text: str, keys: list[int]) -> dict[int, float]:
        return unpack_similarity(keys, self.server.similarity(text, pack_keys(keys)))
