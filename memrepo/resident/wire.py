"""One request on a server connection: the peer checked, a bounded line read, one JSON
reply sent, and whether the client still waits (it hangs up when it gives up)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import struct
from typing import Any


def same_user(conn: socket.socket) -> bool:
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


def still_asked(conn: socket.socket) -> bool:
    """Whether the client still waits for its reply: it sends one line, so anything
    readable after it is the client hanging up (a peek at EOF)."""
    try:
        poller = select.poll()  # not select(): no limit on the fd's number
        poller.register(conn, select.POLLIN | select.POLLHUP)
        return not poller.poll(0) or conn.recv(1, socket.MSG_PEEK) != b""
    except OSError:
        return False


def read_line(conn: socket.socket, limit: int) -> bytes | None:
    buf = bytearray()
    while b"\n" not in buf:
        part = conn.recv(1 << 16)
        if not part:
            return bytes(buf) if buf.strip() else None
        buf += part
        if len(buf) > limit:
            send(conn, {"ok": False, "error": f"request longer than {limit} bytes"})
            return None
    return bytes(buf.split(b"\n", 1)[0])


def send(conn: socket.socket, reply: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(reply).encode() + b"\n")
