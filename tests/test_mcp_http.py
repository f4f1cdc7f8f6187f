"""``memory mcp --http``: the stdio server's tools over streamable HTTP, through the SDK's own
client (both connect modes), behind bearer tokens; ``memory mcp token``; ``memory install
--url``.

The servers are real ``memory mcp --http 127.0.0.1:0`` processes (an ephemeral port, read
from the line the server prints once it listens: no sleeping). They run with
MEMREPO_NO_RESIDENT=1, except the one that checks it hosts the clone's resident server,
which it stops on exit (nothing detached outlives the test).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from conftest import run_git
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memrepo.agents import mcp_front
from memrepo.agents.mcp_http import is_loopback, parse_listen
from memrepo.agents.tokens import TokenStore, digest
from memrepo.errors import MemrepoError
from memrepo.index.indexer import sync
from memrepo.index.remote import ping, serve_dir
from memrepo.layout import socket_path

pytestmark = pytest.mark.anyio
TOOLS = {"memory_search", "memory_context", "memory_read", "memory_remember",
         "memory_update", "memory_reinforce", "memory_demote"}
READ_TOOLS = {"memory_search", "memory_context", "memory_read"}
LEDGER = """---
type: reference
title: Ledger
updated: 2026-01-01
---
# Ledger

- 2026-01-06: Ledger backups run nightly at 02:00
- Dana owns the ledger service
"""
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = {"accept": "application/json, text/event-stream"}
MEMORY = shutil.which("memory", path=str(Path(sys.executable).parent)) or "memory"


def git(root: Path, *args: str) -> str:
    return run_git(root, *args).stdout


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of the module's processes (the autouse fixture's, module-wide)."""
    home = tmp_path_factory.getbasetemp() / "home"
    return {**os.environ, "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1", "PRE_COMMIT_HOME": str(home / "pre-commit-cache"),
            "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
            "MEMREPO_NO_RESIDENT": "1"}


@contextlib.contextmanager
def seeded(template: Path, factory: pytest.TempPathFactory, env: dict[str, str],
           name: str, note: str = LEDGER) -> Iterator[Path]:
    """The template memory repo with ``note`` as its ledger, committed and indexed."""
    with pytest.MonkeyPatch.context() as mp:
        for key in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "PRE_COMMIT_HOME", "PATH"):
            mp.setenv(key, env[key])
        root = factory.mktemp(name) / "mem"
        shutil.copytree(template, root, symlinks=True)
        (root / "knowledge/reference/ledger.md").write_text(note, encoding="utf-8")
        git(root, "add", "-A")
        git(root, "-c", f"core.hooksPath={os.devnull}", "commit", "-q", "--no-verify", "-m", "seed")
        sync(root)
        yield root


@pytest.fixture(scope="module")
def repo(crepo_template: Path, tmp_path_factory: pytest.TempPathFactory,
         env: dict[str, str]) -> Iterator[Path]:
    with seeded(crepo_template, tmp_path_factory, env, "http") as root:
        yield root


class Served:
    """A ``memory mcp --http LISTEN [EXTRA…]`` process, the URL it printed (and the OAuth
    issuer: the URL's origin), read ready from the line holding ``marker``."""

    def __init__(self, root: Path, env: dict[str, str], listen: str = "127.0.0.1:0",
                 *extra: str, marker: str = "serving "):
        self.proc = subprocess.Popen(
            [MEMORY, "--repo", str(root), "mcp", "--http", listen, *extra], env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.lines = _lines_until(self.proc, marker, deadline=time.monotonic() + 20)
        self.url = re.findall(r"https?://\S+?/mcp\b", "\n".join(self.lines))[-1]
        self.issuer = self.url.removesuffix("/mcp")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(10)
        finally:
            assert self.proc.stderr is not None
            self.proc.stderr.close()


def _lines_until(proc: subprocess.Popen[bytes], marker: str, deadline: float) -> list[str]:
    """stderr lines up to the one holding ``marker`` (the server listens by then)."""
    assert proc.stderr is not None
    lines: list[str] = []
    buf = b""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                lines.append(line.decode(errors="replace"))
                if marker in lines[-1]:
                    return lines
    proc.kill()
    raise AssertionError(f"the server did not start: {lines} {buf!r}")


@pytest.fixture(scope="module")
def tokens(repo: Path) -> dict[str, str]:
    store = TokenStore(repo)
    return {"write": store.create("laptop"), "read": store.create("phone", "read")}


@pytest.fixture(scope="module")
def server(repo: Path, env: dict[str, str], tokens: dict[str, str]) -> Iterator[Served]:
    served = Served(repo, env)
    yield served
    assert served.stop() == 0


async def tools_and_search(url: str, token: str | None, mode: str = "legacy"
                           ) -> tuple[set[str], str]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, Client(
            streamable_http_client(url, http_client=http), mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        r = await client.call_tool("memory_search", {"query": "ledger backups"})
        assert not r.is_error, r.content
        return names, r.content[0].text


async def call(url: str, token: str, name: str, args: dict) -> tuple[bool, str]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=30) as http, Client(
            streamable_http_client(url, http_client=http), mode="legacy") as client:
        r = await client.call_tool(name, args)
        return bool(r.is_error), r.content[0].text


# --- the tools over HTTP -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_write_token_gets_every_tool(server: Served, tokens: dict, mode: str) -> None:
    assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
    assert "tokens: required" in server.lines[-1]
    names, text = await tools_and_search(server.url, tokens["write"], mode)
    assert names == TOOLS
    assert "knowledge/reference/ledger.md" in text


async def test_a_write_token_writes(server: Served, tokens: dict, repo: Path) -> None:
    err, text = await call(server.url, tokens["write"], "memory_remember",
                           {"text": "The HTTP endpoint of memrepo works"})
    assert not err and text.startswith("Remembered at knowledge/journal/"), text
    assert "HTTP endpoint" in git(repo, "show", "HEAD")


async def test_a_read_token_sees_and_calls_the_read_tools_only(
        server: Served, tokens: dict, repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    names, text = await tools_and_search(server.url, tokens["read"])
    assert names == READ_TOOLS and "ledger.md" in text
    for name, args in [("memory_remember", {"text": "not from a read token"}),
                       ("memory_demote", {"ref": "knowledge/reference/ledger.md:8"})]:
        err, text = await call(server.url, tokens["read"], name, args)
        assert err and "read-only" in text and "memory mcp token create" in text, text
    assert git(repo, "rev-parse", "HEAD") == head


async def test_no_or_a_wrong_token_is_a_401_with_a_bearer_challenge(
        server: Served, tokens: dict) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        for headers, error in [({}, None), ({"Authorization": "Bearer mrp_wrong"}, "invalid_token"),
                               ({"Authorization": f"Basic {tokens['write']}"}, None),
                               ({"Authorization": f"Bearer {tokens['write']}x"}, "invalid_token")]:
            r = await http.post(server.url, json=INIT, headers={**ACCEPT, **headers})
            assert r.status_code == 401, (headers, r.text)
            challenge = r.headers["www-authenticate"]
            assert challenge.startswith("Bearer realm=")
            assert (f'error="{error}"' in challenge) if error else ("error=" not in challenge)
        r = await http.post(server.url, json=INIT,
                            headers={**ACCEPT, "Authorization": f"Bearer {tokens['read']}"})
        assert r.status_code == 200


async def test_a_revoked_token_is_refused_at_its_next_request(
        server: Served, repo: Path) -> None:
    store = TokenStore(repo)
    token = store.create("temporary")
    names, _ = await tools_and_search(server.url, token)
    assert names == TOOLS
    store.revoke("temporary")
    async with httpx2.AsyncClient(timeout=10) as http:
        r = await http.post(server.url, json=INIT,
                            headers={**ACCEPT, "Authorization": f"Bearer {token}"})
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]


# --- where it may listen ---------------------------------------------------------------


async def test_a_token_with_a_namespace_acts_in_it(server: Served, tokens: dict,
                                                   repo: Path) -> None:
    """`memory mcp token create NAME --namespace NS`: that token's tools act in NS (its
    notes marked, another namespace's unseen); a token of none sees everything."""
    store = TokenStore(repo)
    alice, bob = (store.create(f"agent-{n}", namespace=n) for n in ("alice", "bob"))
    err, text = await call(server.url, alice, "memory_remember",
                           {"text": "the wallaby migration waits for the audit"})
    assert not err, text
    assert "wallaby migration waits for the audit [ns: alice]" in git(repo, "show", "HEAD")
    query = {"query": "wallaby migration audit"}
    said = "waits for the audit"
    assert said in (await call(server.url, alice, "memory_search", query))[1]
    assert said not in (await call(server.url, bob, "memory_search", query))[1]
    assert said in (await call(server.url, tokens["write"], "memory_search", query))[1]
    assert {"name": "agent-bob", "namespace": "bob"}.items() <= next(
        t.public() for t in store.tokens() if t.name == "agent-bob").items()


def test_no_token_no_listening_beyond_loopback(crepo: Path, env: dict[str, str]) -> None:
    proc = subprocess.run([MEMORY, "--repo", str(crepo), "mcp", "--http", "0.0.0.0:0"],
                          env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert "refusing to serve on 0.0.0.0" in proc.stderr and "token create" in proc.stderr


async def test_loopback_without_tokens_is_open_to_local_clients_only(
        crepo: Path, env: dict[str, str]) -> None:
    served = Served(crepo, env, "0")  # a port alone: loopback
    try:
        assert "loopback, open to local users" in served.lines[-1]
        names, _ = await tools_and_search(served.url, None)
        assert names == TOOLS
        async with httpx2.AsyncClient(timeout=10) as http:  # a web page's DNS rebinding
            r = await http.post(served.url, json=INIT,
                                headers={**ACCEPT, "Host": "evil.example:80"})
        assert r.status_code == 421, r.status_code
    finally:
        assert served.stop() == 0


async def test_it_hosts_the_resident_that_stdio_sessions_are_relayed_to(
        crepo: Path, env: dict[str, str]) -> None:
    """Without MEMREPO_NO_RESIDENT the HTTP server is the clone's resident server: a
    ``memory mcp`` front finds it and gets its session there; it stops with the server."""
    served = Served(crepo, {k: v for k, v in env.items() if k != "MEMREPO_NO_RESIDENT"})
    try:
        status = ping(crepo, budget=2.0)
        assert status is not None and status["pid"] == served.proc.pid
        assert "mcp" in status["services"]
        sock, reply, early = mcp_front.open_session(crepo, socket_path(serve_dir(crepo)))
        with sock:
            assert reply["pid"] == served.proc.pid
            sock.sendall(json.dumps(INIT).encode() + b"\n")
            data = early
            while b"\n" not in data:
                data += sock.recv(65536)
        assert json.loads(data.split(b"\n")[0])["result"]["serverInfo"]["name"] == "memrepo"
        names, _ = await tools_and_search(served.url, None)
        assert names == TOOLS
    finally:
        assert served.stop() == 0
    assert ping(crepo, budget=0.5) is None


def test_listen_addresses() -> None:
    assert parse_listen("8765") == ("127.0.0.1", 8765)
    assert parse_listen("0.0.0.0:80") == ("0.0.0.0", 80)
    assert parse_listen("[::1]:9000") == ("::1", 9000)
    assert parse_listen("localhost:1") == ("localhost", 1)
    for bad in ("", "http", "1:2:3", "host:99999", ":80", "host:"):
        with pytest.raises(MemrepoError):
            parse_listen(bad)
    assert is_loopback("127.0.0.1") and is_loopback("127.8.0.1") and is_loopback("::1")
    assert is_loopback("::ffff:127.0.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("100.64.1.2")


# --- memory mcp token ---------------------------------------------------------------------


def test_token_commands_keep_only_a_digest_outside_the_work_tree(
        crepo: Path, env: dict[str, str]) -> None:
    def memory(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([MEMORY, "--repo", str(crepo), "mcp", "token", *args], env=env,
                              capture_output=True, text=True, timeout=30)

    made = memory("create", "ci", "--read-only")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("mrp_") and len(token) >= 4 + 43 and "shown this once" in made.stderr
    assert memory("create", "ci").returncode == 1  # one name, one token
    listed = json.loads(memory("list", "--json").stdout)
    assert [(t["name"], t["scope"]) for t in listed] == [("ci", "read")]
    assert "sha256" not in listed[0] and token not in json.dumps(listed)
    store = TokenStore(crepo)
    text = store.path.read_text()
    assert token not in text and digest(token) in text
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.dir.stat().st_mode) == 0o700
    assert ".git" in store.path.relative_to(crepo).parts  # never in the work tree
    assert git(crepo, "status", "--porcelain") == ""
    assert store.verify(token).name == "ci" and store.verify(token + "x") is None
    gone = memory("revoke", "ci")
    assert gone.returncode == 0 and store.tokens() == []
    assert memory("revoke", "ci").returncode == 1


# --- memory install --url ----------------------------------------------------------------


def test_install_url_writes_each_agents_http_entry_and_uninstall_takes_it_back(
        crepo: Path, tmp_path: Path, env: dict[str, str]) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex/config.toml").write_text('model = "o4"\n')
    url = "https://mem.example.ts.net/mcp"

    def memory(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([MEMORY, *args, "--home", str(home)], env=env, cwd=crepo,
                              capture_output=True, text=True, timeout=60)

    for agent in ("claude-code", "gemini", "codex"):
        done = memory("install", agent, "--url", url, "--token-env", "MEMREPO_TOKEN")
        assert done.returncode == 0, done.stderr
    claude = json.loads((home / ".claude.json").read_text())["mcpServers"]["memrepo"]
    assert claude == {"type": "http", "url": url,
                      "headers": {"Authorization": "Bearer ${MEMREPO_TOKEN}"}}
    gemini = json.loads((home / ".gemini/settings.json").read_text())
    assert gemini["mcpServers"]["memrepo"] == {
        "httpUrl": url, "headers": {"Authorization": "Bearer ${MEMREPO_TOKEN}"}}
    assert "SessionStart" in gemini["hooks"]  # a clone here: its hooks too
    codex = (home / ".codex/config.toml").read_text()
    assert f'url = "{url}"\nbearer_token_env_var = "MEMREPO_TOKEN"' in codex
    assert "command" not in codex.split("[mcp_servers.memrepo]")[1]
    assert memory("install", "codex", "--url", url, "--token-env",
                  "MEMREPO_TOKEN").stdout.startswith("nothing to install")
    back = memory("install", "codex")  # back to stdio: no url left beside the command
    tail = (home / ".codex/config.toml").read_text().split("[mcp_servers.memrepo]")[1]
    assert back.returncode == 0 and "command = " in tail and "url =" not in tail
    for agent in ("claude-code", "gemini", "codex"):
        assert memory("uninstall", agent).returncode == 0
    assert (home / ".codex/config.toml").read_text() == 'model = "o4"\n'
    assert not (home / ".claude.json").exists() and not (home / ".gemini/settings.json").exists()
    bad = memory("install", "codex", "--url", "ftp://x", "--token-env", "MEMREPO_TOKEN")
    assert bad.returncode == 1 and "--url" in bad.stderr


def test_only_plain_memory_mcp_takes_the_fast_path() -> None:
    from memrepo.scripts.fastpath import parse_mcp

    assert parse_mcp(["mcp"]) == (None,)
    for argv in (["mcp", "--http", "8765"], ["mcp", "token", "list"],
                 ["--repo", "/r", "mcp", "--http=8765"]):
        assert parse_mcp(argv) is None, argv
