"""An agent hook in a few milliseconds: what ``memory install`` runs for each hook.

    python -I -S -c CODE SITE SOCKET MEMORY --repo R [--namespace N] hook AGENT EVENT

(:data:`CODE` puts SITE, the folder memrepo is installed in, on the path and calls
:func:`run`: no script path to go missing, which Python would answer with exit status 2,
and 2 blocks an agent's prompt).

A ``memory hook`` process costs tens of milliseconds before it does anything (the
interpreter's site, Click's entry, memrepo's modules), and Claude Code waits for four of
them in every ``claude -p`` run (``bench/clients/run.py``). This file runs with no site
and imports C modules only. It reads the payload and hands it to the clone's resident
server on SOCKET (op ``hook``, :func:`memrepo.agents.resident.hook_service`), which
answers brief and recall and starts the detached work exactly as ``memory hook`` would,
and logs the call. It prints what the server says the hook prints.

When no server takes the request (none runs, a refusal, an older server, a fake clock in
``$MEMREPO_NOW``), this process becomes ``MEMORY … hook AGENT EVENT`` with the same
payload on its stdin: the hook is never lost, only slower. When none runs, it first starts
one, as ``memory mcp`` does (``$MEMREPO_NO_RESIDENT``: not), so the next hooks are fast
whether or not the agent runs memrepo's MCP server. A server that took the request
but answers late is not waited for: the brief and the recall are then done by the full
hook, within what is left of the deadline; the other events print nothing (their work is
detached anyway). The server logs the late call.

Also the one home of reading a hook's payload (:func:`read_stdin`) and of the hook's start
time (:func:`started_ago`): :mod:`memrepo.agents.events` imports them.
"""

import _json
import _socket
import os
import select
import sys
import time

GUARD_ENV = "MEMREPO_NO_HOOKS"  # memrepo.agents.harness.GUARD_ENV
NAMESPACE_ENV = "MEMREPO_NAMESPACE"  # memrepo.cliargs.NAMESPACE_ENV
NOW_ENV = "MEMREPO_NOW"  # memrepo.clock.NOW_ENV: a fake clock the server does not share
#: How long a hook waits for more of its payload on stdin: agents write it at once, and
#: a stdin that is never closed (seen with ``claude --resume``) must not hang the hook.
STDIN_TIMEOUT = 1.0
#: The longest a hook reads its stdin, however steadily it comes (megabytes of prompt
#: arrive in milliseconds; a trickle must not eat the deadline).
STDIN_MAX_S = 2.0
STDIN_CHUNK = 1 << 20
#: connect and send: past it (a server not accepting) the full hook runs instead
CONNECT_S = 0.5
#: How long the brief and the recall wait for the server's answer: past it, the full hook
#: does the work in-process within what is left of its deadline (memrepo.agents.events.
#: DEADLINE, counted from this process's start), told the server was asked
#: (:data:`ASKED_ENV`: it parked the prompt, and is not asked again).
ANSWER_S = {"SessionStart": 4.0, "UserPromptSubmit": 2.0, "BeforeAgent": 2.0}
#: The rest only start detached work there: past this, the hook prints nothing (the
#: capture follows the agent's log, or the sweep catches up).
ANSWER_DEFAULT_S = 4.0
ASKED_ENV = "MEMREPO_HOOK_ASKED"
MAX_REPLY = 1 << 20


def started_ago() -> float:
    """Seconds since this process started (Linux ``/proc``; else 0): on a busy machine the
    interpreter's start and the imports take a second or more, and the agent's timeout
    counts them."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        ticks = int(stat[stat.rindex(b")") + 2:].split()[19])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def read_stdin(timeout: float, fd: int = 0) -> bytes:
    """The payload: read until EOF, or until what came is a whole JSON object, or until
    nothing more came for ``timeout`` or STDIN_MAX_S passed (a stdin left open must not
    hang the hook)."""
    try:
        if os.isatty(fd):
            return b""
    except OSError:
        return b""
    buf = bytearray()  # appended in place: a megabyte prompt is hundreds of chunks
    end = time.monotonic() + STDIN_MAX_S
    while (left := min(timeout, end - time.monotonic())) > 0:
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError):  # not selectable (a pipe on Windows): read to EOF
            return bytes(buf) + (sys.stdin.buffer.read() if os.name == "nt" else b"")
        if not ready:
            break
        try:
            chunk = os.read(fd, STDIN_CHUNK)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
        # parsed only when nothing more is waiting: once, for a whole payload
        if (bytes(buf[-64:]).rstrip().endswith(b"}")
                and not select.select([fd], [], [], 0)[0] and _whole_json(bytes(buf))):
            break
    return bytes(buf)


class _Context:
    """What the C scanner of ``_json`` reads from a decoder: plain JSON, nothing custom
    (``json`` itself would import ``re`` and ``enum``, most of this process's cost)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name)


_scan = _json.make_scanner(_Context())


def loads(data: bytes) -> object:
    """One JSON value (surrounding whitespace allowed); ValueError otherwise."""
    text = data.decode("utf-8").strip()
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def _whole_json(data: bytes) -> bool:
    try:
        loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return True


def _quote(text: str) -> str:
    return _json.encode_basestring_ascii(text)


def request_line(root: str, harness: str, event: str, raw: bytes, namespace: str | None,
                 t0: float) -> bytes:
    """The ``hook`` request: the payload as the text it came as (the server parses it,
    so that a bad payload is logged in the repo as ``memory hook`` logs it)."""
    fields = [("op", _quote("hook")), ("root", _quote(root)), ("harness", _quote(harness)),
              ("event", _quote(event)),
              ("raw", _quote(raw.decode("utf-8", errors="replace"))),
              ("namespace", _quote(namespace) if namespace else "null"), ("t0", repr(t0))]
    return ("{" + ", ".join(f'"{k}": {v}' for k, v in fields) + "}\n").encode("ascii")


#: :func:`ask`'s answers when no server listens on the socket (none runs), and when the
#: one that took the request did not answer in time
UNREACHED = "unreached"
LATE = "late"


def ask(sock_path: str, line: bytes, answer_s: float) -> str | None:
    """What the server says the hook prints ('' for nothing); None when a server did not
    take the request, :data:`UNREACHED` when none listens (the full hook then runs);
    :data:`LATE` when the one that took it did not answer within ``answer_s``."""
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(CONNECT_S)
        try:
            s.connect(sock_path)
        except (FileNotFoundError, ConnectionRefusedError):
            return UNREACHED
        except OSError:
            return None
        try:
            s.sendall(line)
        except OSError:
            return None
        s.settimeout(answer_s)
        buf = b""
        try:
            while b"\n" not in buf and len(buf) < MAX_REPLY:
                part = s.recv(1 << 16)
                if not part:
                    break
                buf += part
        except OSError:  # too slow: the server logs it
            return LATE
    finally:
        s.close()
    try:
        reply = loads(buf.split(b"\n", 1)[0])
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(reply, dict) or reply.get("ok") is not True:
        return None  # refused (another tree, an older server): the full hook runs
    out = reply.get("stdout")
    return out if isinstance(out, str) else None


def parse_args(argv: list[str]) -> tuple[str | None, str | None, str, str] | None:
    """(repo, namespace, agent, event) of ``[--repo R] [--namespace N] hook AGENT EVENT``
    (``--opt=value`` too), or None for anything else (the full hook judges it)."""
    opts: dict[str, str] = {}
    rest = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in ("--repo", "--namespace"):
            if not eq:
                if i + 1 >= len(argv):
                    return None
                value, i = argv[i + 1], i + 1
            opts[name] = value
        else:
            rest.append(arg)
        i += 1
    if len(rest) != 3 or rest[0] != "hook" or "--repo" not in opts:
        return None
    return opts["--repo"], opts.get("--namespace"), rest[1], rest[2]


def become_full_hook(memory: str, args: list[str], raw: bytes) -> None:
    """exec ``memory ARGS`` with ``raw`` on its stdin (a file: a pipe could not hold a
    megabyte prompt before the exec). Returns only if that failed."""
    try:
        fd = _payload_file(raw)
        os.dup2(fd, 0)
        os.close(fd)
        os.execv(memory, [memory, *args])
    except OSError:
        return


def _payload_file(raw: bytes) -> int:
    tmp = os.environ.get("TMPDIR") or "/tmp"
    flags = os.O_RDWR | getattr(os, "O_TMPFILE", 0)
    try:
        fd = os.open(tmp, flags, 0o600) if flags & getattr(os, "O_TMPFILE", 0) else -1
    except OSError:
        fd = -1
    if fd < 0:  # no O_TMPFILE here: a named file, unlinked once open
        path = os.path.join(tmp, f"memrepo-hook-{os.getpid()}-{time.time_ns()}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.unlink(path)
    view = memoryview(raw)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _start_resident(repo: str) -> None:
    """None runs: start one (memrepo.agents.mcp_front, as ``memory mcp`` does) for the
    next hooks, before this one runs in full. Its imports are paid once per server life."""
    try:
        from memrepo.agents.mcp_front import start_for_hooks

        start_for_hooks(repo)
    except Exception:  # never fail the hook for it
        pass


def _write_out(data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(1, view):]
    except OSError:  # the agent stopped reading: nothing to tell it
        pass


def main(argv: list[str]) -> int:
    """Always 0, as ``memory hook`` (fail open), unless it becomes the full hook."""
    t0 = time.time() - started_ago()
    if os.environ.get(GUARD_ENV):
        return 0
    if len(argv) < 2:
        return 0
    sock_path, memory, args = argv[0], argv[1], argv[2:]
    raw = read_stdin(STDIN_TIMEOUT)
    parsed = parse_args(args)
    if parsed is not None and not os.environ.get(NOW_ENV):
        repo, namespace, agent, event = parsed
        namespace = namespace or os.environ.get(NAMESPACE_ENV) or None
        line = request_line(repo, agent, event, raw, namespace, t0)
        out = ask(sock_path, line, ANSWER_S.get(event, ANSWER_DEFAULT_S))
        if out is UNREACHED:
            _start_resident(repo)
        elif out is LATE:
            if event not in ANSWER_S:
                return 0
            os.environ[ASKED_ENV] = "1"
        elif out is not None:
            if out:
                _write_out((out + "\n").encode("utf-8"))
            return 0
    become_full_hook(memory, args, raw)
    return 0


def run(argv: list[str] | None = None) -> None:
    """:func:`main`, then ``os._exit`` (the interpreter's teardown costs every hook). An
    error of this file's own becomes the full hook, when it can."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        code = main(argv)
    except Exception:
        if len(argv) >= 2:  # the payload may be half read: the full hook logs what came
            become_full_hook(argv[1], argv[2:], b"")
        code = 0
    os._exit(code)


#: What ``python -I -S -c`` runs: SITE (the first argument) on the path, then :func:`run`.
CODE = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
        "from memrepo.agents.hook_client import run; run()")
