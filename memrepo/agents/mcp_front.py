"""``memory mcp`` as an agent starts it: a relay between its stdio and the clone's resident
server, which runs the MCP session.

An agent (Claude Code, Codex, Gemini CLI) starts ``memory mcp`` for every session and
waits for its answer to ``initialize``; importing the MCP SDK alone takes most of a second
(``bench/perf/bench_mcp.py``). So this process imports neither the SDK nor Click nor
memrepo's index: it finds the repo (the rules of :func:`memrepo.repo.discover`), asks the
clone's resident server for a session (``{"op": "mcp", "version", "root"}``, served by
:mod:`memrepo.agents.resident`) and then copies bytes both ways until either side closes.

When none answers, the server runs in this process as before (the Click command,
:mod:`memrepo.scripts.mcp`) and a resident is started, detached, for the next time (it
exits after RESIDENT_IDLE_S without a session or a request). One that answers but refuses
(busy, another protocol version, another working tree) or is too slow is left alone and
the server runs here too. One that dies mid-session loses that session: one line on
stderr, exit status 1; the agent starts ``memory mcp`` again. ``MEMREPO_NO_RESIDENT=1``:
always in this process, and no resident started.

Standard library only, and few modules of it (tests/test_mcp_front.py checks the imports).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
from pathlib import Path

from memrepo.layout import CONFIG_FILE, dot_git_dir, socket_path

#: the session protocol the front and the resident speak; a resident of another version
#: refuses the session and the front serves in-process
SESSION_VERSION = 1
#: connect, ask and read the resident's answer; past it the front serves in-process
HANDSHAKE_S = 2.0
#: a resident started by the front exits after this long without a session or a request
RESIDENT_IDLE_S = 900.0
NO_RESIDENT_ENV = "MEMREPO_NO_RESIDENT"
REPO_ENV = "MEMORY_REPO"
#: memrepo.resident.serve.LOGFILE: the same name, without importing that module
LOGFILE = "serve.log"
CHUNK = 1 << 16
MAX_REPLY = 1 << 16


class Unreached(Exception):
    """No resident server listens for this clone (no socket, or a dead one's)."""


class Declined(Exception):
    """A resident server answered but does not serve this session (the message says why)."""


def find_root(repo: str | None) -> Path | None:
    """The memory repo :func:`memrepo.repo.discover` would open (``repo``, else
    ``$MEMORY_REPO``, else the nearest one above the cwd), or None when it would refuse:
    the Click command then says why."""
    given = repo or os.environ.get(REPO_ENV) or None
    try:
        if given:
            root = Path(given).expanduser().resolve()
            return root if (root / CONFIG_FILE).is_file() else None
        here = Path(os.getcwd()).resolve()
    except (OSError, RuntimeError):  # a cwd deleted, a symlink loop
        return None
    return next((c for c in (here, *here.parents) if (c / CONFIG_FILE).is_file()), None)


def git_dir(root: Path) -> Path | None:
    """The clone's git dir as :func:`memrepo.index.remote.git_dir` finds it (``.git``
    read directly; git asked only when ``root`` has none), None when git knows none."""
    found = dot_git_dir(root)
    if found is not None:
        return found
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=root,
                             capture_output=True, check=False).stdout.decode().strip()
    except OSError:
        return None
    return Path(out) if out else None


def serve_dir(gd: Path) -> Path:
    """``<git-dir>/memrepo/serve``: :func:`memrepo.index.remote.serve_dir`."""
    return gd / "memrepo" / "serve"


def open_session(root: Path, sock_path: Path) -> tuple[socket.socket, dict, bytes]:
    """(the connection, the resident's answer, bytes it sent after it) once the resident
    took the session. Unreached when none listens, Declined when one refuses, sends
    garbage or takes longer than HANDSHAKE_S."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(HANDSHAKE_S)
        try:
            sock.connect(str(sock_path))
        except (FileNotFoundError, ConnectionRefusedError):
            raise Unreached(f"no resident server at {sock_path}") from None
        ask = {"op": "mcp", "version": SESSION_VERSION, "root": str(root)}
        sock.sendall(json.dumps(ask).encode() + b"\n")
        buf = b""
        while b"\n" not in buf and len(buf) <= MAX_REPLY:
            part = sock.recv(CHUNK)
            if not part:
                raise Declined("the resident server hung up")
            buf += part
        line, _, early = buf.partition(b"\n")
        reply = json.loads(line)
        if not isinstance(reply, dict) or reply.get("ok") is not True:
            error = reply.get("error") if isinstance(reply, dict) else reply
            raise Declined(f"the resident server refused: {str(error)[:200]}")
        sock.settimeout(None)
        return sock, reply, early
    except (Unreached, Declined):
        sock.close()
        raise
    except (OSError, ValueError) as exc:  # a timeout, a reset, not JSON
        sock.close()
        raise Declined(f"the resident server failed: {type(exc).__name__}: {exc}") from None


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def relay(sock: socket.socket, early: bytes = b"") -> int:
    """Copy stdin to ``sock`` and ``sock`` to stdout until the session ends: 0 when the
    agent closed stdin (what the resident still answers is written first) or stopped
    reading; 1, with one line on stderr, when the resident ended it first."""
    agent_done = threading.Event()

    def upstream() -> None:
        while True:
            try:
                data = os.read(0, CHUNK)
            except OSError:
                data = b""
            if not data:
                agent_done.set()  # before the resident can see EOF and hang up
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_WR)
                return
            try:
                sock.sendall(data)
            except OSError:
                return  # the resident is gone: the downstream loop says so

    threading.Thread(target=upstream, name="memory-mcp-stdin", daemon=True).start()
    try:
        _write_all(early)
        while data := sock.recv(CHUNK):
            _write_all(data)
    except BrokenPipeError:
        return 0  # the agent stopped reading: it is gone
    except OSError:
        pass  # a reset: the resident died
    finally:
        sock.close()
    if agent_done.is_set():
        return 0
    sys.stderr.write("memory mcp: the resident server ended this session (it stopped or "
                     "died); start memory mcp again\n")
    return 1


def start_resident(root: Path, sdir: Path) -> None:
    """Start the clone's resident server, detached, for the next ``memory mcp`` (a second
    one started meanwhile finds the server lock taken and exits)."""
    from memrepo.index.remote import private_dir
    from memrepo.spawn import detached

    private_dir(sdir)
    detached([sys.executable, "-m", "memrepo.agents.resident", "serve", str(root),
              "--idle", str(RESIDENT_IDLE_S)], sdir / LOGFILE)


def run(repo: str | None) -> int | None:
    """``memory [--repo REPO] mcp``: the exit status of a session relayed to the resident
    server, or None when the server must run in this process (the Click command)."""
    if os.environ.get(NO_RESIDENT_ENV):
        return None
    root = find_root(repo)
    gd = git_dir(root) if root is not None else None
    if root is None or gd is None or (gd / "info" / "sparse-checkout").is_file():
        _note("serving in-process (the repo is for memrepo.repo.discover to judge)")
        return None
    sdir = serve_dir(gd)
    try:
        sock, reply, early = open_session(root, socket_path(sdir))
    except Unreached as exc:
        _note(f"{exc}: serving in-process and starting one for the next time")
        try:
            start_resident(root, sdir)
        except Exception as err:  # never fail the agent for it
            _note(f"resident server not started: {type(err).__name__}: {err}")
        return None
    except Declined as exc:
        _note(f"{exc}: serving in-process")
        return None
    _note(f"relaying to the resident server (pid {reply.get('pid')})")
    return relay(sock, early)


def _note(text: str) -> None:
    """A line on stderr under MEMORY_DEBUG: which way this session went, and why."""
    if os.environ.get("MEMORY_DEBUG"):
        sys.stderr.write(f"memory mcp: {text}\n")
