"""Loopback-only isolation: the harness re-runs itself inside ``unshare -n`` (a network
namespace of its own), brings ``lo`` up there and checks that ``lo`` is its only interface
(read from /proc/net/dev; nothing is sent to find out), so that no client, no mock and no
memrepo process can reach anything but loopback.

Standard library only. Linux; root, or unprivileged user namespaces (``unshare -rn``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys

INSIDE_ENV = "MEMREPO_BENCH_NETNS"
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def unshare_argv() -> list[str] | None:
    """The ``unshare`` prefix that works here (root: ``-n``; else ``-rn``), or None."""
    exe = shutil.which("unshare")
    if exe is None:
        return None
    for flags in (["-n"], ["-r", "-n"]):
        try:
            ok = subprocess.run([exe, *flags, "true"], capture_output=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            continue
        if ok.returncode == 0:
            return [exe, *flags]
    return None


def lo_up() -> None:
    """``ip link set lo up`` without ``ip``."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req + b"\0" * 14)
                              [:18])[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS,
                    struct.pack("16sH", b"lo", flags | IFF_UP) + b"\0" * 14)


def interfaces() -> list[str]:
    """The network interfaces of this process's namespace (``/proc/net/dev``)."""
    with open("/proc/net/dev", encoding="ascii") as f:
        return [line.split(":", 1)[0].strip() for line in f.readlines()[2:] if ":" in line]


def only_loopback() -> str | None:
    """None when loopback works and it is the only interface (so no packet can go
    anywhere else; nothing is sent to find out); else why not."""
    others = [name for name in interfaces() if name != "lo"]
    if others:
        return f"interfaces besides lo: {', '.join(others)}"
    try:
        with socket.socket() as srv:
            srv.bind(("127.0.0.1", 0))
            srv.listen(1)
            with socket.create_connection(srv.getsockname(), timeout=2):
                pass
    except OSError as exc:
        return f"loopback does not work: {exc}"
    return None


def reexec_inside(argv: list[str]) -> int:
    """Run ``python argv…`` inside a fresh network namespace; its exit status. The child
    sees INSIDE_ENV and calls :func:`enter`."""
    prefix = unshare_argv()
    if prefix is None:
        raise OSError("`unshare -n` does not work here (not root, no user namespaces?); "
                      "run with --no-netns to rely on loopback base URLs alone")
    env = {**os.environ, INSIDE_ENV: "1"}
    return subprocess.run([*prefix, sys.executable, *argv], env=env).returncode


def enter() -> None:
    """Inside the namespace: ``lo`` up, then make sure only loopback is routable."""
    lo_up()
    why = only_loopback()
    if why:
        raise OSError(f"network namespace not isolated: {why}")


def inside() -> bool:
    return os.environ.get(INSIDE_ENV) == "1"
