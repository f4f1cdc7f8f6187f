"""``memory mcp`` as a thin front: relayed to the clone's resident server when one serves
it, in-process (starting one for the next time) when none does, and never failed by it.

The resident runs in the test process (``Server`` with the agents' services and no model,
what ``memory mcp`` starts for a clone with ``search.embedder: none``); ``memory mcp``
runs as a subprocess, as an agent starts it. Raw JSON-RPC lines where the front's stderr
or exit status matter, the SDK's ``Client`` for the full tool round trip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from memrepo.agents import mcp_front
from memrepo.agents.resident import SERVICES, NoModel
from memrepo.index import remote
from memrepo.index.indexer import sync
from memrepo.resident import serve
from memrepo.resident import server as server_mod
from memrepo.resident.server import Server
from memrepo.scripts import fastpath

MEMORY = shutil.which("memory", path=str(Path(sys.executable).parent))
NOTE = """---
type: reference
title: Ledger
updated: 2026-01-01
---
# Ledger

- Dana owns the ledger service
"""
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "test", "version": "0"}}}
#: what the front must never import on its way to the resident
HEAVY = ("mcp", "click", "pydantic", "sqlite_vec", "numpy", "anyio", "memrepo.index",
         "memrepo.repo", "memrepo.resident", "memrepo.agents.mcp_server")
WAIT_S = 30.0


def git(root: Path, *args: str) -> None:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def ledger_repo(crepo: Path) -> Path:
    """``crepo`` with one note (Dana owns the ledger service), committed and indexed (no
    embedder); test_hook_client.py's too."""
    (crepo / "knowledge/reference/ledger.md").write_text(NOTE, encoding="utf-8")
    git(crepo, "add", "-A")
    git(crepo, "-c", f"core.hooksPath={os.devnull}", "commit", "-q", "--no-verify", "-m", "seed")
    sync(crepo)
    return crepo


@pytest.fixture
def repo(crepo: Path) -> Path:
    return ledger_repo(crepo)


@pytest.fixture
def resident(repo: Path) -> Iterator[Server]:
    """The clone's resident server with the agents' services, in this process."""
    srv = Server(repo, NoModel(), services=SERVICES)
    srv.start()
    yield srv
    srv.stop()


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "MEMORY_DEBUG": "1", **extra}
    env.pop(mcp_front.NO_RESIDENT_ENV, None)
    return env


def _front(root: Path, *python_flags: str) -> subprocess.Popen[bytes]:
    assert MEMORY
    argv = [MEMORY] if not python_flags else [sys.executable, *python_flags, MEMORY]
    return subprocess.Popen([*argv, "--repo", str(root), "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())


def _ask(proc: subprocess.Popen[bytes], msg: dict) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def _until(check: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"waited {WAIT_S:.0f}s for {what}"
        time.sleep(0.05)


async def _round_trip(root: Path) -> None:
    """What an agent does: start ``memory mcp``, list the tools, search, close."""
    assert MEMORY
    params = StdioServerParameters(command=MEMORY, args=["--repo", str(root), "mcp"],
                                   env=_env())
    async with Client(params) as client:
        assert "memory_search" in {t.name for t in (await client.list_tools()).tools}
        r = await client.call_tool("memory_search", {"query": "Dana owns"})
        assert not r.is_error and "ledger.md" in r.content[0].text


# --- through the resident ------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_tool_round_trip_is_relayed_to_the_resident(resident: Server) -> None:
    await _round_trip(resident.root)
    assert resident.status()["services"]["mcp"] == 1  # the session ran in the resident
    _until(lambda: resident.status()["sessions"] == 0, "the session to end")


def test_the_front_imports_nothing_heavy(resident: Server) -> None:
    """``python -X importtime`` of the real front while it relays a session."""
    proc = _front(resident.root, "-X", "importtime")
    assert "result" in _ask(proc, INIT)
    _, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0
    rows = [r.split("|")[-1].strip() for r in err.decode().splitlines()
            if r.startswith("import time:")]
    assert "memrepo.agents.mcp_front" in rows and "relaying to the resident" in err.decode()
    heavy = [m for m in rows if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == []


def test_closing_stdin_ends_the_front_and_the_session(resident: Server) -> None:
    proc = _front(resident.root)
    assert _ask(proc, INIT)["result"]["serverInfo"]["name"] == "memrepo"
    _until(lambda: resident.status()["sessions"] == 1, "the session to start")
    _, err = proc.communicate(timeout=WAIT_S)  # stdin closed, as an agent leaving
    assert proc.returncode == 0, err.decode()
    _until(lambda: resident.status()["sessions"] == 0, "the session to end")


def test_a_resident_that_stops_mid_session_loses_it_with_one_line(resident: Server) -> None:
    proc = _front(resident.root)
    assert "result" in _ask(proc, INIT)
    resident.stop()
    assert proc.wait(WAIT_S) == 1
    assert proc.stderr is not None
    lost = [ln for ln in proc.stderr.read().decode().splitlines() if "ended this session" in ln]
    assert len(lost) == 1
    if proc.stdin is not None:
        proc.stdin.close()


def test_the_resident_refuses_another_version_and_past_its_sessions(
        resident: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    sock = remote.socket_path(remote.serve_dir(resident.root))
    ask = {"op": "mcp", "version": mcp_front.SESSION_VERSION + 1, "root": str(resident.root)}
    with pytest.raises(remote.Refused, match="session version"):
        remote.request(sock, ask, budget=5.0)
    monkeypatch.setattr(server_mod, "MAX_SESSIONS", 0)
    with pytest.raises(remote.Refused, match="busy: too many sessions"):
        remote.request(sock, {**ask, "version": mcp_front.SESSION_VERSION}, budget=5.0)


def test_a_session_keeps_an_idle_server_up(repo: Path) -> None:
    srv = Server(repo, NoModel(), services=SERVICES)
    srv.start()
    try:
        proc = _front(repo)
        assert "result" in _ask(proc, INIT)
        srv.idle = 0.3  # once the session is open: a slow start must not idle it out
        time.sleep(1.0)  # past the idle timeout, a session open
        assert remote.ping(repo, budget=5.0) is not None
        proc.communicate(timeout=WAIT_S)
        # a ping would count as a request: the socket file goes when the server stops
        _until(lambda: not srv.sock_path.exists(), "the idle server to stop")
    finally:
        srv.stop()


# --- without it ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_without_a_resident_the_front_starts_one_and_hands_the_session_over(
        repo: Path) -> None:
    try:
        # the handshake from the record (tests/test_mcp_cold.py), the tool call by the
        # resident this `memory mcp` started
        await _round_trip(repo)
        st = remote.ping(repo, budget=5.0)
        assert st is not None and st["model"] == NoModel.id and st["services"]["mcp"] == 1
        assert st["pid"] != os.getpid() and st["idle_timeout"] == mcp_front.RESIDENT_IDLE_S
        await _round_trip(repo)  # the next one is relayed to it from the start
        assert remote.ping(repo, budget=5.0)["services"]["mcp"] == 2  # type: ignore[index]
    finally:
        serve.stop(repo)


def test_sessions_right_after_the_resident_starts_wait_for_its_mcp_server(repo: Path) -> None:
    """A resident process builds its MCP server at start; fronts that connect meanwhile
    get their sessions once it is built (two threads importing the SDK at once fail)."""
    sock = remote.socket_path(remote.serve_dir(repo))
    resident = subprocess.Popen(
        [sys.executable, "-m", "memrepo.agents.resident", "serve", str(repo), "--idle", "60"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _until(sock.exists, "the resident to listen")
        fronts = []
        for _ in range(8):  # spread over the time it takes to import the SDK
            fronts.append(_front(repo))
            time.sleep(0.1)
        for proc in fronts:
            assert _ask(proc, INIT)["result"]["serverInfo"]["name"] == "memrepo"
            _, err = proc.communicate(timeout=WAIT_S)
            assert proc.returncode == 0 and "relaying" in err.decode()
    finally:
        serve.stop(repo)
        resident.wait(WAIT_S)


def test_a_resident_of_another_tree_refuses_and_the_front_serves_itself(
        repo: Path, tmp_path: Path) -> None:
    """A server on this clone's socket that serves another working tree (as a linked
    worktree's may): the front is refused, serves in-process, and starts no resident."""
    other = tmp_path / "other"
    shutil.copytree(repo, other, symlinks=True)
    srv = Server(other, NoModel(), services=SERVICES)
    srv.sdir = remote.serve_dir(repo)
    srv.sock_path = remote.socket_path(srv.sdir)
    srv.start()
    try:
        proc = _front(repo)
        assert _ask(proc, INIT)["result"]["serverInfo"]["name"] == "memrepo"
        _, err = proc.communicate(timeout=WAIT_S)
        assert proc.returncode == 0
        assert f"this server serves {other}" in err.decode()
        assert remote.ping(repo, budget=5.0)["pid"] == os.getpid()  # type: ignore[index]
        assert srv.status()["sessions"] == 0
    finally:
        srv.stop()


# --- the front's own rules -------------------------------------------------------------------


def test_the_front_finds_the_socket_where_the_server_listens(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    linked = tmp_path / "linked"
    for root in (plain, deep):
        root.mkdir(parents=True)
        git(root, "init", "-q")
    linked.mkdir()
    (linked / ".git").write_text("gitdir: ../plain/.git\n")
    inner = plain / "sub"
    inner.mkdir()
    for root in (plain, deep, linked, inner):
        gd = mcp_front.git_dir(root)
        assert gd is not None
        want = remote.socket_path(remote.serve_dir(root))
        assert mcp_front.socket_path(mcp_front.serve_dir(gd)) == want
    assert len(str(remote.socket_path(remote.serve_dir(deep)))) < len(str(deep))


def test_the_front_finds_the_repo_as_discover_does(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memrepo.layout import CONFIG_FILE
    from memrepo.resident.serve import LOGFILE

    assert (mcp_front.CONFIG_FILE, mcp_front.LOGFILE) == (CONFIG_FILE, LOGFILE)
    monkeypatch.chdir(repo / "knowledge")
    assert mcp_front.find_root(None) == repo.resolve()
    assert mcp_front.find_root(str(tmp_path)) is None  # not a memory repo: Click says so
    monkeypatch.setenv("MEMORY_REPO", str(repo))
    monkeypatch.chdir(tmp_path)
    assert mcp_front.find_root(None) == repo.resolve()
    assert mcp_front.run(str(tmp_path)) is None
    monkeypatch.setenv(mcp_front.NO_RESIDENT_ENV, "1")
    assert mcp_front.run(None) is None


@pytest.mark.parametrize(("argv", "taken"), [
    (["mcp"], (None,)), (["--repo", "/r", "mcp"], ("/r",)), (["mcp", "--repo=/r"], ("/r",)),
    (["mcp", "--help"], None), (["mcp", "x"], None), (["search", "mcp"], None),
])
def test_only_plain_memory_mcp_takes_the_fast_path(
        argv: list[str], taken: tuple | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORY_REPO", raising=False)
    assert fastpath.parse_mcp(argv) == taken


@pytest.mark.anyio
async def test_a_namespaced_session_is_relayed_and_acts_in_its_namespace(
        resident: Server) -> None:
    """``memory --namespace NAME mcp`` goes through the shared resident too (no slow
    in-process start), and its tools act in NAME: a note remembered there is marked as
    NAME's, and a session of another namespace cannot see it while one of none can."""
    assert MEMORY
    root = resident.root

    async def session(ns: str | None, tool: str, args: dict) -> str:
        extra = ["--namespace", ns] if ns else []
        params = StdioServerParameters(command=MEMORY, args=["--repo", str(root), *extra,
                                                             "mcp"], env=_env())
        async with Client(params) as client:
            r = await client.call_tool(tool, args)
            assert not r.is_error, r.content
            return r.content[0].text

    await session("alice", "memory_remember", {"text": "the quokkaberry audit is Tuesday"})
    journal = "\n".join(p.read_text() for p in (root / "knowledge/journal").glob("*.md"))
    assert "quokkaberry audit is Tuesday [ns: alice]" in journal
    assert resident.status()["services"]["mcp"] == 1  # in the resident, not in-process
    _until(lambda: resident.status()["sessions"] == 0, "the session to end")
    said = "audit is Tuesday"
    assert said in await session("alice", "memory_search", {"query": "quokkaberry"})
    assert said not in await session("bob", "memory_search", {"query": "quokkaberry"})
    assert said in await session(None, "memory_search", {"query": "quokkaberry"})
    assert resident.status()["services"]["mcp"] == 4


def test_the_resident_refuses_a_session_in_no_valid_namespace(resident: Server) -> None:
    sock = remote.socket_path(remote.serve_dir(resident.root))
    ask = {"op": "mcp", "version": mcp_front.SESSION_VERSION, "root": str(resident.root),
           "namespace": "Not A Name"}
    with pytest.raises(remote.Refused, match="namespace"):
        remote.request(sock, ask, budget=5.0)


def test_a_resident_retires_when_memrepos_code_changes(repo: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """After an upgrade the resident started for the agents stops listening (a new one of
    the new code can start at once), keeps the session it holds until its agent leaves,
    then ends."""
    from memrepo.resident import codestamp

    code = ["old"]
    monkeypatch.setattr(codestamp, "stamp", lambda: code[0])
    monkeypatch.setattr(codestamp, "CHECK_S", 0.0)
    old = Server(repo, NoModel(), idle=600.0, services=SERVICES)
    old.start()
    try:
        proc = _front(repo)
        assert "result" in _ask(proc, INIT)
        _until(lambda: old.status()["sessions"] == 1, "the session to start")
        code[0] = "new"
        sock = remote.socket_path(remote.serve_dir(repo))
        _until(lambda: not sock.exists(), "the old server to stop listening")
        new = Server(repo, NoModel(), idle=600.0, services=SERVICES)
        new.start()  # the clone's lock is free: no AlreadyRunning
        try:
            listed = _ask(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            assert "memory_search" in {t["name"] for t in listed["result"]["tools"]}
            assert not old._stopped.is_set()  # it serves its session to the end
            proc.communicate(timeout=WAIT_S)
            _until(old._stopped.is_set, "the retired server to end with its session")
            second = _front(repo)
            assert "result" in _ask(second, INIT)
            _until(lambda: new.status()["sessions"] == 1, "the next session in the new one")
            second.communicate(timeout=WAIT_S)
        finally:
            new.stop()
    finally:
        old.stop()
