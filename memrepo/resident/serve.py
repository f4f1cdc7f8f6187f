"""Running a resident server: ``memory serve`` in the foreground or detached, its
``--stop`` and ``--status``, one hosted by ``memory mcp`` while it runs, and the entry a
detached server or catch-up worker runs (``python -m memrepo.resident.serve serve|catch-up
ROOT``: no Click, no YAML on the way to the model).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from memrepo.errors import MemrepoError
from memrepo.index import db as dbmod
from memrepo.index import schema
from memrepo.index.catchup import catch_up
from memrepo.index.embedders import available, get_embedder
from memrepo.index.paths import db_path
from memrepo.index.remote import Unavailable, ping, private_dir, request, serve_dir, socket_path
from memrepo.locks import LockBusy, file_lock
from memrepo.repo import MemoryRepo
from memrepo.resident.server import PIDFILE, SERVER_LOCK, AlreadyRunning, Server, Service
from memrepo.spawn import detached, module_argv

LOGFILE = "serve.log"


def configured_embedder(root: Path, name: str | None = None) -> Any:
    """The embedder a server for ``root`` runs: ``name``, else the one the index was built
    with, else the configured one. MemrepoError when that is none."""
    if name is None:
        name = _recorded(root)
    if name in (None, "none"):
        name = MemoryRepo(root).config["search"]["embedder"]
    emb = get_embedder(name)
    if emb is None:
        raise MemrepoError("search.embedder is none: there is no model to serve")
    missing = available(name.partition("-")[0])
    if missing:
        raise MemrepoError(f"the {name} embedder is not installed: {missing}")
    return emb


def _recorded(root: Path) -> str | None:
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
                   echo: Callable[[str], None] | None = None,
                   services: Mapping[str, Service] | None = None) -> None:
    """Serve until stopped (``stop`` op, idle timeout, SIGTERM or Ctrl-C); ``services``:
    ops a higher layer answers here (``memrepo.agents.resident.SERVICES``)."""

    emb = configured_embedder(root, model)
    sdir = serve_dir(root)
    private_dir(sdir)
    flog = file_logger(sdir)

    def log(msg: str) -> None:
        flog(msg)
        if echo:
            echo(msg)

    server = Server(root, emb, idle=idle, log=log, catch_up_on_start=True, services=services)
    server.start()
    run_until_stopped(server)


def run_until_stopped(server: Server) -> None:
    """Serve until SIGTERM / SIGHUP (in the main thread), Ctrl-C, or the idle limit."""
    import signal

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda *_: server._stop.set())
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()


def start_detached(root: Path, model: str | None = None, idle: float | None = None,
                   wait: float = 20.0, entry: str = "memrepo.resident.serve") -> dict[str, Any]:
    """Start a server in a session of its own and wait until it answers with its model
    loaded; its status. MemrepoError when it does not come up (its log names why).
    ``entry``: the module ``python -m`` runs as the server (whose :func:`main` it
    calls): ``memory serve`` names ``memrepo.agents.resident``, which adds its services."""
    root = Path(root).absolute()
    configured_embedder(root, model)  # fail here, with the reason, not in the child
    running = ping(root)
    if running is not None:
        raise MemrepoError(f"a resident server already runs for this clone "
                           f"(pid {running.get('pid')}, {running.get('model')})")
    sdir = serve_dir(root)
    private_dir(sdir)
    argv = module_argv(entry, "serve", str(root))
    if model:
        argv += ["--model", model]
    if idle:
        argv += ["--idle", str(idle)]
    detached(argv, sdir / LOGFILE)
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


def _locked(path: Path) -> bool:
    """Whether another process holds the flock on ``path`` (a probe, released at once)."""
    try:
        with file_lock(path, 0.0):
            return False
    except LockBusy:
        return True


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


def main(argv: list[str] | None = None, services: Mapping[str, Service] | None = None
         ) -> int:
    """``python -m memrepo.resident.serve serve ROOT [--model M] [--idle S]`` (the server;
    ``memory serve --detach`` spawns it through ``memrepo.agents.resident``, which passes
    its ``services``) or ``catch-up ROOT`` (what
    :func:`~memrepo.index.catchup.after_commit` spawns): no Click, no YAML on the way to
    the model."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m memrepo.resident.serve")
    p.add_argument("cmd", choices=["serve", "catch-up"])
    p.add_argument("root")
    p.add_argument("--model")
    p.add_argument("--idle", type=float)
    p.add_argument("--lock-fd", type=int, help="the catch-up lock, held by this fd")
    a = p.parse_args(argv)
    root = Path(a.root)
    if a.cmd == "serve":
        try:
            run_foreground(root, a.model, a.idle, services=services)
        except AlreadyRunning as exc:
            print(f"memory serve: {exc}", file=sys.stderr)
            return 1
        return 0
    with contextlib.suppress(Exception):
        os.nice(10)
    name = _recorded(root)
    if name in (None, "none"):
        return 0
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
