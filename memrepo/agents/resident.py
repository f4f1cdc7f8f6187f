"""The resident server with the agents' services: what ``memory serve`` and ``memory mcp``
run, and ``python -m memrepo.agents.resident serve ROOT`` (what ``memory serve --detach``
and ``memory mcp`` spawn).

The server (:mod:`memrepo.resident.server`) knows the model and the index; the ops a hook
or an agent asks of it live here, a floor up, and are handed to it (``services``):

- ``recall``: the prompt hook's recall (:func:`memrepo.agents.recall.recall`), compiled in
  the server, where memrepo is imported and the model's nearest index is in memory. The
  hook asks it first (:func:`memrepo.agents.recall.recall_served`) and recalls itself when
  no server answers.
- ``mcp``: an agent's MCP session (:mod:`memrepo.agents.mcp_front` relays ``memory mcp``'s
  stdio to it): the MCP SDK, memrepo and the open search are loaded once here, not in
  every process an agent starts (``bench/perf/bench_mcp.py``). All sessions share one
  :class:`~memrepo.agents.mcp_server.Memory`, so one worker thread writes; a server
  started here builds it at start, in a niced thread, not at the first session.
  ``memory mcp --http`` hosts this server while it runs (:func:`host_resident`), so its
  HTTP sessions (:mod:`memrepo.agents.mcp_http`) share that Memory too.

A clone with no model to serve (``search.embedder: none``, or one not installed) still
gets a server for these services (:class:`NoModel`): ``memory mcp`` starts one on first
use whatever the embedder.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import io
import json
import os
import socket
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memrepo import namespaces
from memrepo.agents import events, recall, state
from memrepo.agents.harness import BRIEF, DETACHED, HARNESSES, action, context_output
from memrepo.agents.mcp_front import SESSION_VERSION
from memrepo.errors import MemrepoError
from memrepo.index.remote import private_dir, serve_dir
from memrepo.resident import serve
from memrepo.resident.server import SESSION, AlreadyRunning, Server, Service


def _other_tree(server: Server, root: object) -> dict[str, Any] | None:
    """The refusal for a request from another working tree than the server's (a linked
    worktree shares the git dir, so its hooks and agents reach this socket)."""
    if not isinstance(root, str) or Path(root).resolve() != server.root.resolve():
        return {"ok": False, "error": f"this server serves {server.root}, not {root}"}
    return None


def recall_service(server: Server, req: dict[str, Any], asked: Callable[[], bool]
                   ) -> dict[str, Any]:
    """``{op: recall, harness, payload, root[, today]}`` -> ``{ok, text}``: what the hook
    would print. Refused for another working tree than the server's: that hook recalls
    itself. A hook that gave up waiting recalls itself too, so this one then writes
    nothing (shown passages, hit signals): the hook's recall must not find its passages
    already shown."""
    return _answer(server, req, lambda harness, payload, day: _recall(
        server, harness, payload, asked, day))


def brief_service(server: Server, req: dict[str, Any], asked: Callable[[], bool]
                  ) -> dict[str, Any]:
    """``{op: brief, harness, payload, root[, today]}`` -> ``{ok, text}``: the session's
    briefing, compiled here so the SessionStart hook need not import the compiler."""
    return _answer(server, req, lambda harness, payload, day: recall.brief(
        server.root, harness, payload, today=day))


def _recall(server: Server, harness: str, payload: dict[str, Any],
            asked: Callable[[], bool], day: dt.date | None) -> str:
    with server.hosted_search() as search:
        return recall.recall(server.root, harness, payload, search, asked, today=day)


def _answer(server: Server, req: dict[str, Any],
            work: Callable[[str, dict[str, Any], dt.date | None], str]) -> dict[str, Any]:
    """A hook's request checked (harness, payload, the tree, the date it runs at), then
    ``work`` done for it."""
    harness, payload = req.get("harness"), req.get("payload")
    if not isinstance(harness, str) or harness not in HARNESSES or not isinstance(
            payload, dict):
        return {"ok": False, "error": f"{req.get('op')} needs harness (one of "
                f"{', '.join(HARNESSES)}) and payload (an object)"}
    if wrong := _other_tree(server, req.get("root")):
        return wrong
    today = req.get("today")
    try:  # a hook run at another time ($MEMREPO_NOW) sends its date
        day = dt.date.fromisoformat(today) if isinstance(today, str) else None
    except ValueError:
        return {"ok": False, "error": f"today {today!r} is not an ISO date"}
    with namespaces.payload_scope(payload):  # the hook's namespace, not this process's
        return {"ok": True, "text": work(harness, payload, day)}


def hook_service(server: Server, req: dict[str, Any], asked: Callable[[], bool]
                 ) -> dict[str, Any]:
    """``{op: hook, root, harness, event, raw, namespace, t0}`` -> ``{ok, stdout}``: an agent
    hook as ``memory hook`` answers it (:mod:`memrepo.agents.hook_client` asks): brief and
    recall compiled here, flush, capture and end handed to the detached worker, one line in
    agents.log, and fail open (``stdout`` '' and the log saying why). Refused only for
    another working tree, whose hook then runs in full."""
    if wrong := _other_tree(server, req.get("root")):
        return wrong
    harness, event, raw = req.get("harness"), req.get("event"), req.get("raw")
    t0 = req.get("t0") if isinstance(req.get("t0"), (int, float)) else time.time()
    entry: dict[str, Any] = {"harness": harness, "event": event, "via": "server"}
    out = ""
    try:
        if not (isinstance(harness, str) and isinstance(event, str) and isinstance(raw, str)):
            raise ValueError("the hook request needs harness, event and raw (strings)")
        ns = req.get("namespace")
        ns = namespaces.check(ns) if isinstance(ns, str) else None
        entry["action"] = act = action(harness, event)
        payload = events.parse_payload(raw.encode("utf-8"))
        entry["session"] = payload.get("session_id")
        if act is None:
            raise ValueError(f"{harness} {event}: memrepo has nothing to do at this event")
        with namespaces.scope(ns):
            if act in DETACHED:
                events.detach(server.root, harness, event, raw.encode("utf-8"), ns)
                entry["status"] = "detached"
            else:
                text = recall.brief(server.root, harness, payload) if act == BRIEF else (
                    _parked_recall(server, harness, payload, asked))
                if text:
                    out = json.dumps(context_output(event, text), ensure_ascii=False)
                entry["status"], entry["chars"] = "ok", len(text)
    except Exception as exc:  # fail open, whatever it was
        entry["status"], entry["detail"] = "failed", events.failure_detail(exc)
    entry["ms"] = round((time.time() - t0) * 1000, 1)
    if entry["status"] != "failed" and not asked():
        entry["status"], entry["detail"] = "failed", "the hook stopped waiting for the answer"
    state.log(server.root, entry)
    return {"ok": True, "stdout": out}


def _parked_recall(server: Server, harness: str, payload: dict[str, Any],
                   asked: Callable[[], bool]) -> str:
    """The prompt hook's work: its prompt queued for capture where the agent's log cannot
    be read (:func:`memrepo.agents.recall.park`), then the recall."""
    recall.park(server.root, harness, payload)
    cut = {**payload, "prompt": recall.recall_prompt(str(payload.get("prompt") or ""))}
    return _recall(server, harness, cut, asked, None)


def mcp_service(server: Server, req: dict[str, Any], asked: Callable[[], bool]
                ) -> dict[str, Any]:
    """``{op: mcp, version, root, namespace}`` -> ``{ok, pid}``, then the connection
    carries an MCP session (JSON-RPC lines both ways) until the front hangs up, its tools
    acting in the front's namespace. Refused for another protocol version (the front then
    serves in-process), another working tree or a name that is no namespace."""
    version = req.get("version")
    if version != SESSION_VERSION:
        return {"ok": False, "error": f"this server speaks MCP session version "
                f"{SESSION_VERSION}, not {version!r}"}
    if wrong := _other_tree(server, req.get("root")):
        return wrong
    ns = req.get("namespace")
    try:
        ns = namespaces.check(ns) if ns is not None else None
    except (TypeError, ValueError) as exc:
        return {"ok": False, "error": str(exc)}
    return {"ok": True, "pid": os.getpid(),
            SESSION: lambda conn: mcp_session(server, conn, ns)}


#: the module of the MCP server sessions run (see :func:`shared_app`)
MCP_SERVER = "memrepo.agents.mcp_server"
#: the one MCP server (and its Memory) each resident server's sessions share
_APPS: weakref.WeakKeyDictionary[Server, Any] = weakref.WeakKeyDictionary()
_APPS_LOCK = threading.Lock()


def shared_app(server: Server) -> Any:
    """The MCP server this resident's sessions run, built at the first one. Its module is
    imported by name when a session first asks: it imports this one (the server a
    ``memory mcp`` process hosts offers :data:`HOSTED_SERVICES`), and only a resident an
    agent asks pays for the SDK."""
    with _APPS_LOCK:
        app = _APPS.get(server)
        if app is None:
            mcp_server = importlib.import_module(MCP_SERVER)
            app = mcp_server.build_server(
                memory=mcp_server.Memory(server.root, resident=server))
            _APPS[server] = app
        return app


def mcp_session(server: Server, conn: socket.socket, namespace: str | None = None) -> None:
    """Serve one MCP session over ``conn`` until it reads EOF: the SDK's stdio transport
    over the socket's files (as ``MCPServer.run_stdio_async`` runs it over stdin and
    stdout), on an event loop of this connection's thread, in ``namespace`` (the
    sessions share one Memory, whose calls carry the caller's context to its thread)."""
    # the app first: it imports the SDK under its lock (the warm-up may be importing it
    # now, and two threads importing the SDK's circular modules at once fail)
    low = shared_app(server)._lowlevel_server
    import anyio
    from mcp.server.stdio import stdio_server

    reader = io.TextIOWrapper(conn.makefile("rb"), encoding="utf-8", errors="replace")
    writer = io.TextIOWrapper(conn.makefile("wb"), encoding="utf-8")

    async def run() -> None:
        async with stdio_server(anyio.wrap_file(reader), anyio.wrap_file(writer)) as (r, w):
            await low.run(r, w, low.create_initialization_options())

    try:
        with namespaces.scope(namespace):
            anyio.run(run)
    finally:
        for fh in (writer, reader):
            with contextlib.suppress(OSError):  # the front is gone: nothing to flush to
                fh.close()


SERVICES: dict[str, Service] = {"recall": recall_service, "brief": brief_service,
                                "hook": hook_service, "mcp": mcp_service}
#: what a ``memory mcp`` process hosting the clone's server offers: no MCP sessions,
#: which would end with that agent
HOSTED_SERVICES: dict[str, Service] = {"recall": recall_service, "brief": brief_service,
                                       "hook": hook_service}


class NoModel:
    """The model of a server for a clone with none to serve: its services run alone.
    Nothing asks it for vectors (a search with no embedder asks no server; one naming a
    model is refused as another model's), and its id matches no index, so the nearest
    index stays empty."""

    id = "no model"
    dim = 1
    light = True

    def embed(self, texts: list[str]) -> list[bytes]:
        return [bytes(4) for _ in texts]


def _nothing_to_embed(server: Server, req: dict[str, Any], asked: Callable[[], bool]
                      ) -> dict[str, Any]:
    """``catch-up`` on a server with no model (a commit's hook asks): nothing to do."""
    return {"ok": True, "started": False}


def _warm(server: Server) -> None:
    """Build the MCP server sessions share now, niced, so the first session does not
    wait for the SDK's import."""
    with contextlib.suppress(Exception):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    try:
        shared_app(server)
    except Exception as exc:  # the first session builds it, or says why
        server.log(f"MCP server not built ahead: {type(exc).__name__}: {exc}")


def resident_server(root: Path, idle: float | None, log: Callable[[str], None],
                    model: str | None = None) -> tuple[Server, str | None]:
    """The clone's resident server with :data:`SERVICES`, not started, and a note for its
    log: without a model (:class:`NoModel`) when the clone has none to serve and none is
    named (MemrepoError when ``model`` is named and cannot be served)."""
    try:
        embedder = serve.configured_embedder(root, model)
    except MemrepoError as exc:
        if model is not None:
            raise
        return Server(root, NoModel(), idle=idle, log=log,
                      services={**SERVICES, "catch-up": _nothing_to_embed}), (
            f"serving the agents without a model ({exc})")
    return Server(root, embedder, idle=idle, log=log, services=SERVICES,
                  catch_up_on_start=True), None


def host_resident(root: Path, idle: float | None = None,
                  log: Callable[[str], None] | None = None, model: str | None = None
                  ) -> Server:
    """Start the clone's resident server in this process (what ``python -m
    memrepo.agents.resident serve`` runs, and ``memory mcp --http`` while it serves:
    ``memory mcp``'s sessions are relayed to it), its MCP server warmed meanwhile, its log
    in serve.log (and to ``log``). AlreadyRunning when another process serves the clone;
    MemrepoError when ``model`` cannot be served."""
    sdir = serve_dir(root)
    private_dir(sdir)
    flog = serve.file_logger(sdir)

    def both(msg: str) -> None:
        flog(msg)
        if log is not None:
            log(msg)

    server, note = resident_server(root, idle, both, model)
    server.start()
    if note:
        both(note)
    threading.Thread(target=_warm, args=(server,), name="memrepo-resident-mcp",
                     daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    """``python -m memrepo.agents.resident serve ROOT [--model M] [--idle S]``: the
    server, with :data:`SERVICES`; without a model when the clone has none to serve and
    none is named (why goes to its log). Serves until stopped (``stop`` op, idle
    timeout, SIGTERM); 1 when a server already runs for the clone."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m memrepo.agents.resident")
    p.add_argument("cmd", choices=["serve"])
    p.add_argument("root")
    p.add_argument("--model")
    p.add_argument("--idle", type=float)
    a = p.parse_args(argv)
    # it serves every agent of the clone: one's namespace is never everyone's (a hook's
    # request says its own: namespaces.PAYLOAD_KEY; an MCP session's ask, its "namespace")
    os.environ.pop(namespaces.ENV, None)
    try:
        server = host_resident(Path(a.root), a.idle, model=a.model)
    except (MemrepoError, AlreadyRunning) as exc:
        print(f"memory serve: {exc}", file=sys.stderr)
        return 1
    serve.run_until_stopped(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
