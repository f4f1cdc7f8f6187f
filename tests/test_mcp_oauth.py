"""``memory mcp --http --oauth``: OAuth 2.1 as the MCP authorization spec describes, end to
end with the MCP SDK's own client (``OAuthClientProvider``: protected-resource discovery,
dynamic client registration, authorization code with PKCE, token exchange) against a real
``memory mcp --http 127.0.0.1:0 --oauth`` process, the owner approving each login with a
code from ``memory mcp oauth approve``; refresh, revocation and expiry over plain HTTP;
bearer tokens beside it unchanged.

The server runs with MEMREPO_NO_RESIDENT=1 and is read ready from the lines it prints.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import httpx2
import pytest
import test_mcp_http
from conftest import run_git
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl
from test_mcp_http import ACCEPT, INIT, MEMORY, Served, seeded

from memrepo.agents import oauth
from memrepo.agents.mcp_http import exposure
from memrepo.agents.tokens import OAUTH, TokenStore, digest
from memrepo.errors import MemrepoError

pytestmark = pytest.mark.anyio
TOOLS = {"memory_search", "memory_context", "memory_read", "memory_remember",
         "memory_update", "memory_reinforce", "memory_demote"}
READ_TOOLS = {"memory_search", "memory_context", "memory_read"}
#: test_mcp_http's module-scoped fixtures, one instance for this module
anyio_backend, env = test_mcp_http.anyio_backend, test_mcp_http.env
CALLBACK = "http://127.0.0.1:9/callback"  # never fetched: the owner's browser stops there
CODE = re.compile(r"^[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}$")


@pytest.fixture(scope="module")
def repo(crepo_template: Path, tmp_path_factory: pytest.TempPathFactory,
         env: dict[str, str]) -> Iterator[Path]:
    with seeded(crepo_template, tmp_path_factory, env, "oauth") as root:
        yield root


def memory(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMORY, "--repo", str(root), "mcp", *args], env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def server(repo: Path, env: dict[str, str]) -> Iterator[Served]:
    """Started while the clone has no token at all: OAuth on still requires one."""
    assert TokenStore(repo).tokens() == []
    served = Served(repo, env, "127.0.0.1:0", "--oauth", marker="OAuth issuer")
    yield served
    assert served.stop() == 0


# --- the SDK's client, and the owner at a browser -------------------------------------------


class Memory:
    """The client's token storage (the SDK's TokenStorage protocol), in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Owner:
    """The owner's browser: follows the client's authorization URL to the approval page,
    types the code, and stops at the client's redirect URI."""

    def __init__(self, code: str):
        self.code, self.page, self.location = code, "", ""

    async def redirect(self, url: str) -> None:
        async with httpx2.AsyncClient(timeout=10) as http:
            first = await http.get(url)
            assert first.status_code == 302, first.text  # never straight to the client
            approve = first.headers["location"]
            assert urlparse(approve).path == oauth.APPROVE_PATH
            self.page = (await http.get(approve)).text
            answer = await http.post(approve.split("?")[0], data={
                "request": parse_qs(urlparse(approve).query)["request"][0],
                "code": self.code.lower(), "decision": "approve"})
            assert answer.status_code == 302, answer.text
            self.location = answer.headers["location"]

    async def callback(self) -> AuthorizationCodeResult:
        assert self.location.startswith(CALLBACK + "?"), self.location
        query = parse_qs(urlparse(self.location).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])


@asynccontextmanager
async def logged_in(url: str, owner: Owner, storage: Memory) -> AsyncIterator[Client]:
    provider = OAuthClientProvider(
        server_url=url, storage=storage, redirect_handler=owner.redirect,
        callback_handler=owner.callback,
        client_metadata=OAuthClientMetadata(
            client_name="Test Connector", redirect_uris=[AnyUrl(CALLBACK)],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"]))
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http, Client(
            streamable_http_client(url, http_client=http), mode="legacy") as client:
        yield client


def approval(repo: Path, env: dict[str, str], *flags: str) -> str:
    made = memory(repo, env, "oauth", "approve", *flags)
    assert made.returncode == 0, made.stderr
    code = made.stdout.strip()
    assert CODE.match(code), code
    return code


async def initialize(url: str, token: str | None) -> httpx2.Response:
    headers = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.post(url, json=INIT, headers=headers)


# --- logging in -------------------------------------------------------------------------------


async def test_the_sdk_client_logs_in_and_calls_the_tools(
        server: Served, repo: Path, env: dict[str, str]) -> None:
    code = approval(repo, env)
    owner, storage = Owner(code), Memory()
    async with logged_in(server.url, owner, storage) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        found = await client.call_tool("memory_search", {"query": "ledger backups"})
        assert not found.is_error and "ledger.md" in found.content[0].text
        wrote = await client.call_tool("memory_remember", {"text": "OAuth logins work"})
        assert not wrote.is_error, wrote.content
    assert "OAuth logins work" in run_git(repo, "show", "HEAD").stdout
    assert "Test Connector" in owner.page and CALLBACK in owner.page
    assert storage.client is not None and storage.tokens is not None  # registered, tokens
    access, refresh = storage.tokens.access_token, storage.tokens.refresh_token
    assert access.startswith("mrp_") and refresh and refresh.startswith("mrr_")
    assert storage.tokens.scope == "read write" and 0 < (storage.tokens.expires_in or 0) <= 3600
    store = TokenStore(repo)
    grant = store.verify(access)
    assert grant is not None and grant.kind == OAUTH and grant.scope == "write"
    assert grant.client == storage.client.client_id and grant.name.startswith("oauth-test-")
    text = store.path.read_text()  # hashed like the bearer tokens
    assert access not in text and refresh not in text and code not in text
    assert digest(access) in text and digest(refresh) in text
    listed = json.loads(memory(repo, env, "token", "list", "--json").stdout)
    assert {"name": grant.name, "scope": "write", "kind": "oauth"}.items() <= \
        next(t for t in listed if t["name"] == grant.name).items()
    assert store.redeem(code) is None  # spent


async def test_a_read_only_approval_logs_in_read_only(
        server: Served, repo: Path, env: dict[str, str]) -> None:
    head = run_git(repo, "rev-parse", "HEAD").stdout
    storage = Memory()
    async with logged_in(server.url, Owner(approval(repo, env, "--read-only")),
                         storage) as client:
        assert {t.name for t in (await client.list_tools()).tools} == READ_TOOLS
        assert not (await client.call_tool("memory_read", {"ref": "knowledge/reference/"
                                                           "ledger.md"})).is_error
        for name, args in [("memory_remember", {"text": "not from a read login"}),
                           ("memory_demote", {"ref": "knowledge/reference/ledger.md:8"})]:
            refused = await client.call_tool(name, args)
            assert refused.is_error and "read-only" in refused.content[0].text
    assert storage.tokens is not None and storage.tokens.scope == "read"
    assert run_git(repo, "rev-parse", "HEAD").stdout == head


async def test_a_namespaced_approval_logs_in_in_that_namespace(
        server: Served, repo: Path, env: dict[str, str]) -> None:
    """`memory mcp oauth approve --namespace NS`: the login's grant acts in NS (its notes
    marked as NS's, another namespace's unseen); a bad name is refused."""
    storage = Memory()
    async with logged_in(server.url, Owner(approval(repo, env, "--namespace", "carol")),
                         storage) as client:
        wrote = await client.call_tool("memory_remember",
                                       {"text": "the numbat survey starts in May"})
        assert not wrote.is_error, wrote.content
    assert "numbat survey starts in May [ns: carol]" in run_git(repo, "show", "HEAD").stdout
    assert storage.tokens is not None
    grant = TokenStore(repo).verify(storage.tokens.access_token)
    assert grant is not None and grant.namespace == "carol"
    bob = TokenStore(repo).create("oauth-test-bob", namespace="bob")
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {bob}"},
                                  timeout=30) as http, Client(
            streamable_http_client(server.url, http_client=http), mode="legacy") as other:
        seen = await other.call_tool("memory_search", {"query": "numbat survey"})
        assert "starts in May" not in seen.content[0].text
    refused = memory(repo, env, "oauth", "approve", "--namespace", "Not Valid")
    assert refused.returncode == 2 and "lower-case" in refused.stderr  # a usage error


# --- the endpoints by hand: approval, refresh, revocation ------------------------------------


async def register(http: httpx2.AsyncClient, issuer: str) -> dict:
    r = await http.post(f"{issuer}/register", json={
        "client_name": "By Hand", "redirect_uris": [CALLBACK],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]})
    assert r.status_code == 201, r.text
    return r.json()


async def authorize(http: httpx2.AsyncClient, issuer: str, client: dict,
                    scope: str = "read write") -> tuple[str, str]:
    """Start an authorization: (the approval page's request id, the PKCE verifier)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(
        hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    r = await http.get(f"{issuer}/authorize?" + urlencode({
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": CALLBACK,
        "state": "s1", "code_challenge": challenge, "code_challenge_method": "S256",
        "scope": scope}))
    assert r.status_code == 302 and r.headers["location"].startswith(
        issuer + oauth.APPROVE_PATH), (r.status_code, r.headers)
    return parse_qs(urlparse(r.headers["location"]).query)["request"][0], verifier


async def test_only_the_owners_code_approves_and_only_once(
        server: Served, repo: Path, env: dict[str, str]) -> None:
    approve = server.issuer + oauth.APPROVE_PATH
    async with httpx2.AsyncClient(timeout=10) as http:
        client = await register(http, server.issuer)
        request, _ = await authorize(http, server.issuer, client)
        page = await http.get(approve, params={"request": request})
        assert page.status_code == 200 and "By Hand" in page.text
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        wrong = await http.post(approve, data={"request": request, "code": "0000-0000-0000",
                                               "decision": "approve"})
        assert wrong.status_code == 403 and "location" not in wrong.headers
        code = approval(repo, env)
        right = await http.post(approve, data={"request": request, "code": code,
                                               "decision": "approve"})
        assert right.status_code == 302
        query = parse_qs(urlparse(right.headers["location"]).query)
        assert right.headers["location"].startswith(CALLBACK) and query["state"] == ["s1"]
        again = await http.post(approve, data={"request": request, "code": code,
                                               "decision": "approve"})
        assert again.status_code == 400  # the request is done
        request, _ = await authorize(http, server.issuer, client)
        used = await http.post(approve, data={"request": request, "code": code,
                                              "decision": "approve"})
        assert used.status_code == 403  # the code is spent
        denied = await http.post(approve, data={"request": request, "decision": "deny"})
        assert denied.status_code == 302
        assert parse_qs(urlparse(denied.headers["location"]).query)["error"] == ["access_denied"]


async def test_refresh_rotates_and_revocation_and_expiry_get_401(
        server: Served, repo: Path, env: dict[str, str]) -> None:
    store = TokenStore(repo)
    async with httpx2.AsyncClient(timeout=10) as http:
        client = await register(http, server.issuer)
        request, verifier = await authorize(http, server.issuer, client, scope="read write")
        done = await http.post(server.issuer + oauth.APPROVE_PATH, data={
            "request": request, "code": approval(repo, env), "decision": "approve"})
        code = parse_qs(urlparse(done.headers["location"]).query)["code"][0]
        creds = {"client_id": client["client_id"], "client_secret": client["client_secret"]}
        bad = await http.post(f"{server.issuer}/token", data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK,
            "code_verifier": verifier + "x", **creds})
        assert bad.status_code == 400 and bad.json()["error"] == "invalid_grant"  # PKCE
        first = await http.post(f"{server.issuer}/token", data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK,
            "code_verifier": verifier, **creds})
        assert first.status_code == 200, first.text
        old = first.json()
        assert (await initialize(server.url, old["access_token"])).status_code == 200
        second = await http.post(f"{server.issuer}/token", data={
            "grant_type": "refresh_token", "refresh_token": old["refresh_token"], **creds})
        assert second.status_code == 200, second.text
        new = second.json()
        assert (await initialize(server.url, new["access_token"])).status_code == 200
        for token in (old["access_token"], "mrp_unknown"):  # rotated away; never issued
            refused = await initialize(server.url, token)
            assert refused.status_code == 401
            challenge = refused.headers["www-authenticate"]
            assert 'error="invalid_token"' in challenge
            assert f'resource_metadata="{server.issuer}/.well-known/oauth-protected-resource' \
                   '/mcp"' in challenge
        reused = await http.post(f"{server.issuer}/token", data={
            "grant_type": "refresh_token", "refresh_token": old["refresh_token"], **creds})
        assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
        revoked = await http.post(f"{server.issuer}/revoke", data={
            "token": new["refresh_token"], **creds})
        assert revoked.status_code == 200
        assert (await initialize(server.url, new["access_token"])).status_code == 401
    # revoked by name from the command line; an expired access token
    row, access, _ = store.grant("cli-client", "cli", "write")
    assert (await initialize(server.url, access)).status_code == 200
    assert memory(repo, env, "token", "revoke", row.name).returncode == 0
    assert (await initialize(server.url, access)).status_code == 401
    _, stale, refresh = store.grant("cli-client", "cli", "write", access_ttl=-1)
    assert (await initialize(server.url, stale)).status_code == 401
    assert store.find_refresh(refresh) is not None  # the grant lives on: refresh renews it


async def test_discovery_metadata_and_the_challenge(server: Served) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        prm = (await http.get(f"{server.issuer}/.well-known/oauth-protected-resource/mcp"))
        assert prm.status_code == 200
        assert prm.json()["resource"] == server.url
        assert prm.json()["authorization_servers"] == [server.issuer]
        asm = (await http.get(f"{server.issuer}/.well-known/oauth-authorization-server")).json()
        assert asm["issuer"] == server.issuer
        assert asm["code_challenge_methods_supported"] == ["S256"]
        assert asm["registration_endpoint"] == f"{server.issuer}/register"
        assert asm["revocation_endpoint"] == f"{server.issuer}/revoke"
        oidc = await http.get(f"{server.issuer}/.well-known/openid-configuration")
        assert oidc.status_code == 404  # not here, rather than a 401 to a probing client
    missing = await initialize(server.url, None)
    assert missing.status_code == 401 and "error=" not in missing.headers["www-authenticate"]
    assert "resource_metadata=" in missing.headers["www-authenticate"]


# --- beside the bearer tokens, and where it may listen -------------------------------------


async def test_bearer_tokens_work_unchanged_beside_oauth(server: Served, repo: Path) -> None:
    store = TokenStore(repo)
    write, read = store.create("laptop"), store.create("phone", "read")
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {write}"},
                                  timeout=30) as http, Client(
            streamable_http_client(server.url, http_client=http), mode="legacy") as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        assert not (await client.call_tool("memory_remember", {"text": "bearer too"})).is_error
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {read}"},
                                  timeout=30) as http, Client(
            streamable_http_client(server.url, http_client=http), mode="legacy") as client:
        assert {t.name for t in (await client.list_tools()).tools} == READ_TOOLS
    store.revoke("laptop")
    assert (await initialize(server.url, write)).status_code == 401


def test_oauth_is_asked_for_and_needs_https_beyond_loopback(
        crepo: Path, env: dict[str, str]) -> None:
    beyond = memory(crepo, env, "--http", "0.0.0.0:0", "--oauth")
    assert beyond.returncode == 1 and "--public-url https://" in beyond.stderr
    plain = memory(crepo, env, "--http", "127.0.0.1:0", "--oauth", "--public-url",
                   "http://mem.example.com")
    assert plain.returncode == 1 and "neither https nor loopback" in plain.stderr
    alone = memory(crepo, env, "--public-url", "https://mem.example.com")
    assert alone.returncode == 2 and "--oauth" in alone.stderr
    store = TokenStore(crepo)
    with pytest.raises(MemrepoError, match="beyond loopback"):
        exposure("0.0.0.0", store)  # off: no token, no listening beyond loopback
    assert exposure("0.0.0.0", store, oauth_on=True) is True  # on: a token always required
    auth = oauth.settings("https://mem.example.com", "/mcp")
    assert str(auth.issuer_url) == "https://mem.example.com"
    assert str(auth.resource_server_url) == "https://mem.example.com/mcp"
    with pytest.raises(MemrepoError, match="no path"):
        oauth.settings("https://mem.example.com/sub", "/mcp")


async def test_without_oauth_there_are_no_oauth_endpoints(
        crepo: Path, env: dict[str, str]) -> None:
    served = Served(crepo, env)  # open loopback: no token
    try:
        async with httpx2.AsyncClient(timeout=10) as http:
            for path in ("/.well-known/oauth-authorization-server", "/authorize",
                         oauth.APPROVE_PATH):
                assert (await http.get(served.issuer + path)).status_code == 404, path
        assert TokenStore(crepo).approval() and (await initialize(served.url, None)
                                                 ).status_code == 200  # codes are no tokens
    finally:
        assert served.stop() == 0
