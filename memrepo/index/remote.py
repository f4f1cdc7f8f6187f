"""The resident model: one process per clone keeps a heavy embedder loaded and serves it.

This module is its client side, the one hooks and searches import: where a clone's server
listens, one request to it, and the embedders a search asks it through.

A sentence model takes a load time and memory that no hook, commit or single
``memory search`` may pay (``bench/perf/bench_resident.py``). So a long-lived process
(``memory serve``, or ``memory mcp`` hosting it) loads it once and answers on a UNIX
socket in the clone's state dir
(``<git-dir>/memrepo/serve/embed.sock``: the dir 0700, the socket 0600, and the peer's uid
checked, so another user cannot connect). Callers use it through :class:`ResidentEmbedder`
with a tight budget (100 ms for connect and reply); on any failure their search runs on
FTS5 alone and says why.

Protocol: one JSON object per line each way, on a connection per request.

- ``{"op": "ping"}`` -> ``{"ok": true, "pid", "model", "loaded", "cache", "catching_up", …}``
- ``{"op": "embed", "model": ID, "texts": [...]}`` -> ``{"ok": true, "vectors": [b64…]}``
  (little-endian float32; an LRU cache per text, so a repeated query costs no model time)
- ``{"op": "nearest", "model": ID, "text": T, "k": N}`` -> ``{"ok": true, "via", "hits":
  [[vector key, cosine], …]}``: T's vector (cached as above) searched in the server's
  in-memory nearest-neighbour index of the index's vectors
  (:class:`~memrepo.resident.nearest.NearestIndex`: usearch HNSW over int8 codes, else exact
  numpy), kept current by a keeper thread and saved in the serve dir; a search asks this
  instead of scanning every vector itself (``bench/perf/bench_resident.py``). While that
  index is being built it refuses, and the searcher embeds and scans locally.
- ``{"op": "similarity", "model": ID, "text": T, "keys": b64}`` -> ``{"ok": true, "sims":
  b64}``: the keys little-endian int64, the cosines of T's vector and theirs little-endian
  float32 in the same order (NaN for a key the nearest index does not hold; base64 since
  hundreds of JSON numbers cost time to write and parse each way). A search scores its
  keyword candidates by the query's vector however far down the (approximate) nearest list
  they fell; it asks once ``nearest`` has answered, so T's vector is in the cache
- ``{"op": "catch-up"}`` -> embed the chunks the index left without vectors, in a thread
  of the server, writing under the index lock in short transactions
- ``{"op": "stop"}``
- anything else, or a malformed line -> ``{"ok": false, "error": …}``; the server goes on.

Embedding never happens in a hook: :func:`~memrepo.index.catchup.after_commit` (for the
post-commit hook) asks a running server to catch up, or, with no server, starts one
detached low-priority catch-up worker (``python -m memrepo.resident.serve catch-up ROOT``),
at most one at a time.

The server itself is :mod:`memrepo.resident` (a floor up: the index never imports it);
:mod:`~memrepo.index.catchup` embeds what the index left without vectors.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from memrepo.index.paths import state_dir
from memrepo.jsonsafe import json_object
from memrepo.layout import dot_git_dir, socket_path

SERVE_DIR = "serve"

#: connect + request + reply, for a query on a hook's or a search's path
QUERY_BUDGET_S = 0.1
#: a reply line a client reads at most
MAX_REPLY = 16 << 20
#: the most neighbours one ``nearest`` may ask for (the server refuses more)
MAX_K = 2000
#: the most keys one ``similarity`` may ask about (a search's keyword candidates: 400
#: chunks, two vectors each at most, and as many again from query expansion)
MAX_KEYS = 4000


class Unavailable(Exception):
    """No usable resident server (the message says why: FTS5 alone answers)."""


class Refused(Unavailable):
    """The server runs and answered, but with an error (an op it cannot do now)."""


# ---------------------------------------------------------------------------
# Where
# ---------------------------------------------------------------------------


def git_dir(root: Path) -> Path:
    """The clone's git dir without running git when ``root/.git`` says it (a hook's or a
    search's path: a ``git rev-parse`` costs a process start)."""
    found = dot_git_dir(root)
    if found is not None:
        return found
    from memrepo.index import gitsource

    return gitsource.locate(Path(root))[0]


def serve_dir(root: Path) -> Path:
    return state_dir(git_dir(root)) / SERVE_DIR


def private_dir(path: Path) -> None:
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


class Pending:
    """One request, sent now; its reply read by :meth:`reply`, after the caller's own work.

    The answer waits in the socket meanwhile, so no thread reads it: a search through the
    server sends ``nearest`` before FTS5 and reads it after, and a thread that read it
    cost one more wake-up (``bench/perf/search_steps.py``; docs/search.md). Never raises
    here: a failure to connect or send is raised by :meth:`reply`, as the reply's would be.
    """

    def __init__(self, sock_path: Path, msg: dict[str, Any], budget: float = QUERY_BUDGET_S):
        self.budget = budget
        self.deadline = time.monotonic() + budget
        self._error: Unavailable | None = None
        self._sock: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(budget)
            try:
                self._sock.connect(str(sock_path))
            except FileNotFoundError:
                raise Unavailable("no resident server (start one: memory serve --detach)"
                                  ) from None
            except ConnectionRefusedError:
                raise Unavailable("stale socket: the resident server is not running") from None
            except OSError as exc:
                raise Unavailable(f"cannot reach the resident server ({exc})") from None
            try:
                self._sock.sendall(json.dumps(msg).encode() + b"\n")
            except OSError as exc:
                raise Unavailable(f"the resident server failed mid-request ({exc})") from None
        except Unavailable as exc:
            self._error = exc
            self.close()

    def reply(self) -> dict:
        """The reply as a dict with ``ok`` true; Unavailable on anything else (no socket,
        a dead server's socket, past the budget, a garbage or error reply)."""
        if self._error is not None:
            raise self._error
        assert self._sock is not None, "a reply is read once"
        try:
            buf = bytearray()
            while not buf.endswith(b"\n"):
                # past the deadline, what has arrived still counts (the caller may read
                # late: a long keyword search); only waiting for more is over
                self._sock.settimeout(max(self.deadline - time.monotonic(), 0.0))
                try:
                    part = self._sock.recv(1 << 16)
                except BlockingIOError:  # a timeout of 0 and nothing there
                    raise TimeoutError from None
                if not part:
                    raise Unavailable("the resident server closed the connection mid-request")
                buf += part
                if len(buf) > MAX_REPLY:
                    raise Unavailable("the resident server's reply is too long")
        except TimeoutError:
            ms = f"{self.budget * 1000:.0f} ms"
            raise Unavailable(f"the resident server did not answer within {ms}") from None
        except OSError as exc:
            raise Unavailable(f"the resident server failed mid-request ({exc})") from None
        finally:
            self.close()
        reply = json_object(buf)
        if reply is None:
            raise Unavailable("the resident server sent a garbage reply")
        if reply.get("ok") is not True:
            raise Refused(f"the resident server refused: {str(reply.get('error'))[:200]}")
        return reply

    def close(self) -> None:
        """Hang up (a reply not read is dropped with the connection)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def request(sock_path: Path, msg: dict[str, Any], budget: float = QUERY_BUDGET_S) -> dict:
    """One request, its reply as a dict with ``ok`` true; Unavailable on anything else
    (no socket, a dead server's socket, a timeout, a garbage or error reply)."""
    return Pending(sock_path, msg, budget).reply()


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
    #: whether that index searched exactly: an approximate one (HNSW) can miss vectors
    #: above its last cosine, which ``similarity`` then scores for the keyword candidates
    exact: bool = False


class NearestRequest(Pending):
    """A ``nearest`` request, sent now; :meth:`result` reads what it answers."""

    def __init__(self, sock_path: Path, model: str, text: str, k: int,
                 budget: float = QUERY_BUDGET_S):
        super().__init__(sock_path, {"op": "nearest", "model": model, "text": text, "k": k},
                         budget)

    def result(self) -> Nearest:
        """The ``k`` vector keys nearest the text's vector, by the server's index.
        Refused when the server cannot (its index being built)."""
        reply = self.reply()
        hits = reply.get("hits")
        try:
            out = [(int(h), float(s)) for h, s in hits]  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise Unavailable("the resident server sent a garbage reply (hits)") from None
        return Nearest(out, str(reply.get("via") or ""), reply.get("exact") is True)


class SimilarityRequest(Pending):
    """A ``similarity`` request, sent now; :meth:`result` reads what it answers."""

    def __init__(self, sock_path: Path, model: str, text: str, keys: list[int],
                 budget: float = QUERY_BUDGET_S):
        self.keys = keys
        packed = base64.b64encode(pack_keys(keys)).decode()
        super().__init__(
            sock_path, {"op": "similarity", "model": model, "text": text, "keys": packed},
            budget)

    def result(self) -> dict[int, float]:
        """Vector key -> cosine with the text's vector, for the keys the server holds."""
        sims = self.reply().get("sims")
        try:
            return unpack_similarity(self.keys, base64.b64decode(sims, validate=True))  # type: ignore[arg-type]
        except (TypeError, ValueError, struct.error):
            raise Unavailable("the resident server sent a garbage reply (sims)") from None


def pack_keys(keys: list[int]) -> bytes:
    """Vector keys as ``similarity`` carries them: little-endian int64."""
    return struct.pack(f"<{len(keys)}q", *keys)


def unpack_similarity(keys: list[int], sims: bytes) -> dict[int, float]:
    """Key -> cosine from ``similarity``'s float32 (in ``keys``' order), NaN ones left out;
    struct.error when the sizes do not match."""
    values = struct.unpack(f"<{len(keys)}f", sims)
    return {k: v for k, v in zip(keys, values, strict=True) if v == v}  # NaN != NaN


def nearest(sock_path: Path, model: str, text: str, k: int, budget: float = QUERY_BUDGET_S
            ) -> Nearest:
    """The ``k`` vector keys nearest ``text``'s vector, by the server's index. Refused
    when the server cannot (its index being built)."""
    return NearestRequest(sock_path, model, text, k, budget).result()


def ping(root: Path, budget: float = 0.5) -> dict | None:
    """The server's status, or None when none answers."""
    try:
        return request(socket_path(serve_dir(root)), {"op": "ping"}, budget)
    except (Unavailable, OSError):
        return None


class ResidentEmbedder:
    """A heavy embedder's query vectors from the resident process (its server:
    :mod:`~memrepo.resident.server`), never loading the model here: a hook or one ``memory
    search`` cannot pay its load.

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
        return self.ask_nearest(text, k).result()

    def ask_nearest(self, text: str, k: int) -> NearestRequest:
        """The same request, sent now: ``.result()`` reads its answer later."""
        return NearestRequest(self.socket, self.id, text, k, self.budget)

    def ask_similarity(self, text: str, keys: list[int]) -> SimilarityRequest:
        """The cosines of ``text``'s vector and the vectors ``keys``, asked now."""
        return SimilarityRequest(self.socket, self.id, text, keys, self.budget)


def query_embedder(recorded: str, root: Path, *, local: bool = False) -> Any:
    """The embedder a search uses for query vectors against an index built by
    ``recorded``: a light one in-process; a heavy one through the resident process,
    unless ``local`` (``--batch``, the MCP server: they amortise loading it)."""
    from memrepo.index.embedders import get_embedder

    emb = get_embedder(recorded)
    if emb is None or emb.light or local:
        return emb
    return ResidentEmbedder(root, emb)


class Answer(Protocol):
    """What is asked now and read later: ``result()`` (:class:`NearestRequest`, or
    :class:`Early` for a server hosted in this process)."""

    def result(self) -> Any: ...

    def close(self) -> None: ...


class Early:
    """A call run in a thread from now until :meth:`result` (which re-raises its error)."""

    def __init__(self, fn: Callable[..., Any], *args: Any):
        self._out: Any = None
        self._exc: BaseException | None = None
        import threading  # only a search that asks the resident server pays for it

        self._thread = threading.Thread(target=self._run, args=(fn, *args), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            self._out = fn(*args)
        except BaseException as exc:  # handed to the caller by result()
            self._exc = exc

    def result(self) -> Any:
        self._thread.join()
        if self._exc is not None:
            raise self._exc
        return self._out

    def close(self) -> None:
        """Nothing to release: the thread ends with its call."""
