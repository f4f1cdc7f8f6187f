"""``memory mcp`` as an agent starts it: a relay between its stdio and the clone's resident
server, which runs the MCP session.

An agent (Claude Code, Codex, Gemini CLI) starts ``memory mcp`` for every session and
waits for its answer to ``initialize``; importing the MCP SDK alone takes most of a second
(``bench/perf/bench_mcp.py``). So this process imports neither the SDK nor Click nor
memrepo's index: it finds the repo (the rules of :func:`memrepo.repo.discover`), asks the
clone's resident server for a session (``{"op": "mcp", "version", "root"}``, served by
:mod:`memrepo.agents.resident`) and then copies bytes both ways until either side closes.

When none answers, a resident is started, detached (it exits after RESIDENT_IDLE_S
without a session or a request), and the front answers the handshake itself
(``initialize``, ``ping``, the tool, prompt and resource lists) from the record of what
the server answers (``memrepo/data/mcp_handshake.json``, :mod:`memrepo.agents.mcp_record`):
a client that does not wait for a slow server (Codex) has the tools at once. At the first
other request (a tool call) the front replays the handshake to the resident, once it
listens, and relays from then on; when it does not take the session within
RESIDENT_WAIT_S, the server runs in a child process on a socket pair, relayed the same
way. Without a record that matches this memrepo, the server runs in this process (the
Click command, :mod:`memrepo.scripts.mcp`), as it did before the record existed.

A resident that answers but refuses (busy, another protocol version, another working
tree) or is too slow is left alone and the server runs here. One that dies mid-session
loses that session: one line on stderr, exit status 1; the agent starts ``memory mcp``
again. ``MEMREPO_NO_RESIDENT=1``:
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
import time
from pathlib import Path

from memrepo import __version__
from memrepo.cliargs import NAMESPACE_ENV
from memrepo.layout import CONFIG_FILE, dot_git_dir, socket_path

#: the session protocol the front and the resident speak; a resident of another version
#: refuses the session and the front serves in-process (2: the ask names the namespace)
SESSION_VERSION = 2
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
#: the record of the server's handshake answers (memrepo.agents.mcp_record writes it)
RECORD = Path(__file__).resolve().parent.parent / "data" / "mcp_handshake.json"
#: the list requests the record answers, and the key of each answer's list
LISTS = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources",
         "resources/templates/list": "resourceTemplates"}
#: the id of the ``initialize`` the front replays to the server it hands the session to
REPLAY_ID = "memrepo-front-initialize"
#: how long a session that needs the server waits for the started resident to take it
#: (it imports the SDK and opens the index); past it, a child process serves
RESIDENT_WAIT_S = 15.0
#: the longest a server takes to answer the replayed ``initialize``
REPLAY_S = 60.0


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
        ask = {"op": "mcp", "version": SESSION_VERSION, "root": str(root),
               "namespace": os.environ.get(NAMESPACE_ENV, "").strip() or None}
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


def relay(sock: socket.socket, early: bytes = b"", first: bytes = b"") -> int:
    """Copy stdin to ``sock`` and ``sock`` to stdout until the session ends (``first``:
    what the agent sent that was read already; ``early``: what the server sent): 0 when
    the agent closed stdin (what the resident still answers is written first) or stopped
    reading; 1, with one line on stderr, when the resident ended it first."""
    agent_done = threading.Event()

    def upstream() -> None:
        try:
            sock.sendall(first)
        except OSError:
            return
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
    from memrepo.spawn import detached, module_argv

    private_dir(sdir)
    detached(module_argv("memrepo.agents.resident", "serve", str(root),
                         "--idle", str(RESIDENT_IDLE_S)), sdir / LOGFILE)


def _servable(repo: str | None) -> tuple[Path, Path] | None:
    """(root, serve dir) of the clone a resident would serve, or None: no repo found, no
    git dir, or a sparse clone (a sub-agent's: its server would see a part of the memory)."""
    root = find_root(repo)
    gd = git_dir(root) if root is not None else None
    if root is None or gd is None or (gd / "info" / "sparse-checkout").is_file():
        return None
    return root, serve_dir(gd)


def start_for_hooks(repo: str) -> None:
    """Start the clone's resident server for an installed hook that found none
    (:mod:`memrepo.agents.hook_client`): the next hooks, and the next ``memory mcp``, find
    it. Not with ``MEMREPO_NO_RESIDENT``."""
    clone = None if os.environ.get(NO_RESIDENT_ENV) else _servable(repo)
    if clone is not None:
        start_resident(*clone)


def run(repo: str | None) -> int | None:
    """``memory [--repo REPO] mcp``: the exit status of a session relayed to the resident
    server, or None when the server must run in this process (the Click command)."""
    if os.environ.get(NO_RESIDENT_ENV):
        return None
    clone = _servable(repo)
    if clone is None:
        _note("serving in-process (the repo is for memrepo.repo.discover to judge)")
        return None
    root, sdir = clone
    try:
        sock, reply, early = open_session(root, socket_path(sdir))
    except Unreached as exc:
        try:
            start_resident(root, sdir)
        except Exception as err:  # never fail the agent for it
            _note(f"resident server not started: {type(err).__name__}: {err}")
            return None
        record = load_record()
        if record is None:
            _note(f"{exc}: serving in-process and starting one for the next time")
            return None
        _note(f"{exc}: answering the handshake and starting one")
        return serve_cold(root, sdir, record)
    except Declined as exc:
        _note(f"{exc}: serving in-process")
        return None
    _note(f"relaying to the resident server (pid {reply.get('pid')})")
    return relay(sock, early)


def _note(text: str) -> None:
    """A line on stderr under MEMORY_DEBUG: which way this session went, and why."""
    if os.environ.get("MEMORY_DEBUG"):
        sys.stderr.write(f"memory mcp: {text}\n")


# ---------------------------------------------------------------------------
# Cold: no resident yet
# ---------------------------------------------------------------------------


def load_record() -> dict | None:
    """The handshake record, or None when it is missing, broken, or another memrepo's."""
    try:
        rec = json.loads(RECORD.read_text(encoding="utf-8"))
        ok = rec["initialize"]["serverInfo"]["version"] == __version__ and all(
            isinstance(rec[k], list) for k in LISTS.values())
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return rec if ok else None


def recorded_answer(rec: dict, msg: dict) -> dict | None:
    """The server's answer to ``msg`` from the record, or None when only it can answer
    (a tool call, a list's next page, anything in the 2026 envelope)."""
    method, params = msg.get("method"), msg.get("params") or {}
    if "id" not in msg or not isinstance(params, dict) or _enveloped(params):
        return None
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in rec["handshake_versions"] else rec[
            "latest_handshake_version"]
        result = {**rec["initialize"], "protocolVersion": version}
    elif method == "ping":
        result = {}
    elif method in LISTS and not params.get("cursor"):
        result = {LISTS[method]: rec[LISTS[method]]}
    else:
        return None
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


def _enveloped(params: dict) -> bool:
    """A request of the 2026 protocol: its ``_meta`` carries the protocol's own keys (a
    progress token alone, as Codex sends with ``tools/list``, is no envelope)."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and any(
        str(k).startswith("io.modelcontextprotocol/") for k in meta)


def serve_cold(root: Path, sdir: Path, rec: dict) -> int:
    """Answer the handshake from ``rec`` until a request only the server can answer, then
    hand the session over (:func:`hand_over`)."""
    buf, held = b"", []  # held: the handshake's messages, replayed to the server
    while True:
        line, sep, buf = buf.partition(b"\n")
        if not sep:
            data = os.read(0, CHUNK)
            if not data:
                return 0  # the agent left before asking anything of the server
            buf = line + data
            continue
        try:
            msg = json.loads(line) if line.strip() else None
        except ValueError:
            msg = "garbage"  # the server answers it as the SDK does
        if msg is None:
            continue
        begun = bool(held) or (isinstance(msg, dict) and msg.get("method") == "initialize")
        if isinstance(msg, dict) and begun and "id" not in msg and "method" in msg:
            held.append(msg)  # a notification (initialized, cancelled): replayed
            continue
        answer = recorded_answer(rec, msg) if isinstance(msg, dict) and begun else None
        if answer is None or (msg.get("method") == "initialize" and held):
            return hand_over(root, sdir, held, line + b"\n" + buf)
        if msg.get("method") == "initialize":
            held.append(msg)
        _write_all(json.dumps(answer).encode() + b"\n")


def hand_over(root: Path, sdir: Path, held: list[dict], rest: bytes) -> int:
    """Replay ``held`` to a server (the resident once it listens, else a child process),
    its answer to the replayed ``initialize`` dropped, then relay from ``rest`` on."""
    sock = wait_for_resident(root, socket_path(sdir)) or child_server(root)
    early = b""
    try:
        if held:
            sock.sendall(json.dumps({**held[0], "id": REPLAY_ID}).encode() + b"\n")
            early = _drop_reply(sock)
            sock.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in held[1:]))
    except (OSError, ValueError) as exc:
        sock.close()
        sys.stderr.write(f"memory mcp: the server did not take the session ({exc})\n")
        return 1
    return relay(sock, early, rest)


def _drop_reply(sock: socket.socket) -> bytes:
    """Read up to the server's answer to the replayed ``initialize``; what it sent
    besides (before or after it) is returned, for the agent."""
    sock.settimeout(REPLAY_S)
    kept, buf = b"", b""
    while True:
        line, sep, buf = buf.partition(b"\n")
        if not sep:
            part = sock.recv(CHUNK)
            if not part:
                raise OSError("the server closed the session")
            buf = line + part
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if isinstance(msg, dict) and msg.get("id") == REPLAY_ID:
            sock.settimeout(None)
            return kept + buf
        kept += line + b"\n"


def wait_for_resident(root: Path, sock_path: Path) -> socket.socket | None:
    """A session of the resident started for this one, once it listens; None past
    RESIDENT_WAIT_S or when it refuses."""
    deadline = time.monotonic() + RESIDENT_WAIT_S
    while time.monotonic() < deadline:
        try:
            sock, reply, early = open_session(root, sock_path)
        except Unreached:
            time.sleep(0.05)
            continue
        except Declined as exc:
            _note(f"{exc}: a child process serves")
            return None
        _note(f"handing over to the resident server (pid {reply.get('pid')})")
        if early:  # nothing is sent before the first request; never lose it if it is
            _write_all(early)
        return sock
    _note("the resident did not start in time: a child process serves")
    return None


def child_server(root: Path) -> socket.socket:
    """``memory mcp`` served in a child process (no resident), its stdio one end of a
    socket pair; the other end returned."""
    import subprocess

    from memrepo.spawn import module_argv

    mine, theirs = socket.socketpair()
    env = {**os.environ, NO_RESIDENT_ENV: "1"}
    subprocess.Popen(module_argv("memrepo", "--repo", str(root), "mcp"),
                     stdin=theirs, stdout=theirs, env=env, close_fds=True)
    theirs.close()
    return mine

