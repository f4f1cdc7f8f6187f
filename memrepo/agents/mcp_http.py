"""``memory mcp --http [HOST:]PORT``: the memory's MCP tools over streamable HTTP at ``/mcp``.

The same server as ``memory mcp`` on stdio: the tools, their descriptions and their
annotations are :func:`memrepo.agents.mcp_server.build_server`'s, served through the SDK's
streamable HTTP transport (``MCPServer.streamable_http_app``) by uvicorn. While it runs,
this process is the clone's resident server (:func:`memrepo.agents.resident.host_resident`):
the agents' ``memory mcp`` sessions are relayed here and share one
:class:`~memrepo.agents.mcp_server.Memory` (one worker thread, one writer) with the HTTP
sessions, and the hooks' recall is answered here. When another process already serves the
clone (an agent's resident, ``memory serve``), it is left alone: the HTTP sessions get a
Memory of this process, which asks that server for the model as ``memory mcp`` in-process
does; ``MEMREPO_NO_RESIDENT=1`` does the same without hosting one.

Who may call (tokens: :mod:`memrepo.agents.tokens`):

- ``Authorization: Bearer <token>`` is required whenever the clone has a token, and always
  on a server that started with one or off loopback: revoking the last token then locks
  everyone out rather than opening the door. A missing or unknown token is a 401 with
  ``WWW-Authenticate: Bearer``.
- Loopback is the default host; any other address is refused while the clone has no token.
- A ``read`` token sees only the tools annotated read-only; a call to another is a tool
  error saying why. ``write`` (and a loopback server with no tokens) calls them all.
- DNS-rebinding protection (the SDK's Host and Origin checks) guards an open loopback
  server from web pages; a server that requires a token needs no such check (a page has no
  token), so a reverse proxy or ``tailscale serve`` may send its own Host.

With ``--oauth`` (:mod:`memrepo.agents.oauth`) the server is also the OAuth 2.1
authorization server the MCP authorization spec describes: a connector registers, its
owner approves the login with a one-time code, and the access token it gets passes the same
bearer check (scope included). A 401 then names the protected-resource metadata
(``resource_metadata`` in ``WWW-Authenticate``), tokens are always required, and an
address beyond loopback is allowed once an https ``--public-url`` says where clients
reach the server.

TLS is a reverse proxy's or a tailnet's (docs/remote-mcp.md).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent

from memrepo import namespaces
from memrepo.agents import mcp_server, oauth
from memrepo.agents.mcp_front import NO_RESIDENT_ENV
from memrepo.agents.resident import host_resident, shared_app
from memrepo.agents.tokens import READ, WRITE, TokenStore
from memrepo.errors import MemrepoError
from memrepo.resident.server import AlreadyRunning, Server

log = logging.getLogger("memrepo.mcp.http")

PATH = "/mcp"
DEFAULT_HOST = "127.0.0.1"
#: the ASGI scope key the bearer check sets to the caller's scope (read or write)
SCOPE_KEY = "memrepo.scope"
#: and to the namespace its token acts in (None: none; docs/namespaces.md)
NAMESPACE_KEY = "memrepo.namespace"
REALM = 'Bearer realm="memrepo"'


# --- where to listen ------------------------------------------------------------------


def parse_listen(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` -> (host, port); the host defaults to
    loopback. MemrepoError for anything else."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        host, port = DEFAULT_HOST, text.strip()
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise MemrepoError(f"--http {text!r}: expected [HOST:]PORT, the port 0-65535")
    if not host or (":" in host and not _is_ip(host)):
        raise MemrepoError(f"--http {text!r}: expected [HOST:]PORT (an IPv6 host in [])")
    return host, int(port)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_loopback(address: str) -> bool:
    """Whether a bound address is a loopback one (127.0.0.0/8, ::1, ::ffff:127.x)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (its first address). MemrepoError when the
    host does not resolve or the port is taken."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise MemrepoError(f"--http: cannot resolve {host!r}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise MemrepoError(f"--http: cannot listen on {host}:{port}: "
                           f"{exc.strerror or exc}") from None
    return sock


def url_of(sock: socket.socket, path: str = PATH) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


# --- who may call ---------------------------------------------------------------------


@dataclass
class BearerAuth:
    """ASGI middleware: the bearer check, and the caller's scope in ``scope[SCOPE_KEY]``.
    ``always``: a token is required even while the clone has none (fail closed);
    ``metadata``: the protected-resource metadata URL a 401 names (OAuth on)."""

    app: Any
    store: TokenStore
    always: bool
    metadata: str | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan: the SDK's session manager
            await self.app(scope, receive, send)
            return
        try:
            tokens = self.store.tokens()
        except MemrepoError as exc:
            log.error("%s", exc)
            await _refuse(send, 503, "the token store cannot be read; see the server's log")
            return
        if not tokens and not self.always:
            await self.app({**scope, SCOPE_KEY: WRITE}, receive, send)
            return
        given = _bearer(scope)
        if given is None:
            await _refuse(send, 401, "an Authorization: Bearer token is required",
                          metadata=self.metadata)
            return
        token = self.store.verify(given)
        if token is None:
            await _refuse(send, 401, "the token is unknown, expired or revoked",
                          "invalid_token", self.metadata)
            return
        await self.app({**scope, SCOPE_KEY: token.scope, NAMESPACE_KEY: token.namespace or None},
                       receive, send)


def _bearer(scope: dict[str, Any]) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == b"authorization":
            kind, _, token = value.decode("latin-1").strip().partition(" ")
            if kind.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


async def _refuse(send: Any, status: int, why: str, error: str | None = None,
                  metadata: str | None = None) -> None:
    challenge = f'{REALM}, error="{error}"' if error else REALM
    if metadata:
        challenge += f', resource_metadata="{metadata}"'
    body = json.dumps({"error": error or "unauthorized", "error_description": why}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", challenge.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ScopeGuard:
    """SDK middleware on the shared server: a session whose HTTP request carries a
    ``read`` scope lists only the read-only tools and is refused the others, and every
    HTTP request runs in its token's namespace. stdio sessions (no HTTP request) pass
    untouched."""

    def __init__(self, app: MCPServer):
        self.app = app
        self._writes: frozenset[str] | None = None

    async def writes(self) -> frozenset[str]:
        """The tools not annotated read-only: what a read token may not call."""
        if self._writes is None:
            self._writes = frozenset(
                t.name for t in await self.app.list_tools()
                if not (t.annotations and t.annotations.read_only_hint))
        return self._writes

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        request = getattr(ctx, "request", None)
        scope = getattr(request, "scope", None)
        if not isinstance(scope, dict) or SCOPE_KEY not in scope:
            return await call_next(ctx)  # a relayed stdio session: its own namespace
        with namespaces.scope(scope.get(NAMESPACE_KEY)):  # the token's, even none
            return await self._guarded(ctx, call_next, scope)

    async def _guarded(self, ctx: Any, call_next: Callable[[Any], Any],
                       scope: dict[str, Any]) -> Any:
        if scope.get(SCOPE_KEY) != READ:
            return await call_next(ctx)
        writes = await self.writes()
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            if name in writes:
                return CallToolResult(is_error=True, content=[TextContent(
                    type="text", text=f"{name} writes to memory and this token is "
                    "read-only: ask the user, who can make a write token (memory mcp "
                    "token create NAME)")])
        result = await call_next(ctx)
        if ctx.method == "tools/list":
            if isinstance(result, dict) and isinstance(result.get("tools"), list):
                result["tools"] = [t for t in result["tools"]
                                   if (t.get("name") if isinstance(t, dict) else
                                       getattr(t, "name", None)) not in writes]
            elif hasattr(result, "tools"):
                result.tools = [t for t in result.tools if t.name not in writes]
        return result


def guard(app: MCPServer) -> None:
    """Put the :class:`ScopeGuard` on ``app`` (once)."""
    if not any(isinstance(m, ScopeGuard) for m in app.middleware):
        app.middleware.append(ScopeGuard(app))


def build_app(app: MCPServer, store: TokenStore, *, always: bool, host: str,
              auth: AuthSettings | None = None) -> Any:
    """The ASGI app: ``app``'s streamable HTTP endpoint at :data:`PATH` behind the bearer
    check. ``always``: tokens required whatever the store holds (and no DNS-rebinding
    check); else the open loopback server's Host and Origin checks. ``auth``: OAuth on,
    its endpoints in front (tokens always required)."""
    guard(app)
    always = always or auth is not None
    if always:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    else:
        hosts = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=sorted(f"{h}:*" for h in hosts),
            allowed_origins=sorted(f"http://{h}:*" for h in hosts))
    http = app.streamable_http_app(streamable_http_path=PATH, transport_security=security,
                                   host=host)
    if auth is None:
        return BearerAuth(http, store, always)
    assert auth.resource_server_url is not None
    metadata = str(build_resource_metadata_url(auth.resource_server_url))
    return oauth.front(BearerAuth(http, store, True, metadata), store, auth)


def exposure(bound: str, store: TokenStore, *, oauth_on: bool = False) -> bool:
    """Whether tokens are required from the start (the clone has some, OAuth is on, or the
    address is not loopback); MemrepoError for a non-loopback address while the clone has
    none and OAuth is off (with OAuth on, a login is the owner's approval away)."""
    tokens = store.tokens()
    if oauth_on:
        return True
    if not is_loopback(bound) and not tokens:
        raise MemrepoError(
            f"refusing to serve on {bound}, beyond loopback, with no token: create one "
            "first (memory mcp token create NAME), or serve on 127.0.0.1 behind a "
            "reverse proxy or tailscale serve (docs/remote-mcp.md)")
    return bool(tokens) or not is_loopback(bound)


# --- running --------------------------------------------------------------------------


@contextlib.contextmanager
def hosting(root: Path, say: Callable[[str], None]) -> Iterator[tuple[MCPServer, Server | None]]:
    """The MCP server to serve and the resident hosted here while the block runs (its
    sessions' server); else (one runs elsewhere, or MEMREPO_NO_RESIDENT) a server of this
    process, and None."""
    resident = None
    if not os.environ.get(NO_RESIDENT_ENV):
        try:
            resident = host_resident(root, idle=None)
        except AlreadyRunning as exc:
            say(f"{exc}: it keeps the agents' stdio sessions; HTTP is served here, "
                "asking it for the model")
    if resident is None:
        app = mcp_server.build_server(root)
        try:
            yield app, None
        finally:
            app.memrepo.close()  # type: ignore[attr-defined]
        return
    try:
        yield shared_app(resident), resident
    finally:
        resident.stop()


def serve_http(root: Path, listen: str, say: Callable[[str], None], *,
               with_oauth: bool = False, public_url: str | None = None) -> None:
    """Serve until SIGINT, SIGTERM or SIGHUP, or until the resident hosted here is
    stopped (``memory serve --stop``). MemrepoError, before anything is served, for an
    address it must not listen on. ``with_oauth``: OAuth 2.1 too, its issuer
    ``public_url`` (``https://HOST``, where clients reach it) else the bound address."""
    host, port = parse_listen(listen)
    store = TokenStore(root)
    sock = bind(host, port)
    try:
        auth = oauth.settings(public_url or url_of(sock, ""), PATH) if with_oauth else None
        always = exposure(sock.getsockname()[0], store, oauth_on=auth is not None)
        with hosting(root, say) as (app, resident):
            asgi = build_app(app, store, always=always, host=host, auth=auth)
            debug = bool(os.environ.get("MEMORY_DEBUG"))
            server = uvicorn.Server(uvicorn.Config(
                asgi, log_level="info" if debug else "warning", lifespan="on",
                access_log=debug))
            if resident is not None:
                threading.Thread(target=_stop_with, args=(resident, server), daemon=True,
                                 name="memrepo-http-resident").start()
            need = "required" if always else "none yet: loopback, open to local users"
            say(f"serving {root} at {url_of(sock)} (tokens: {need})")
            if auth is not None:
                say(f"OAuth issuer {auth.issuer_url!s}: approve each login with "
                    "a code from memory mcp oauth approve")
            _run(server, sock)
    finally:
        sock.close()


def _stop_with(resident: Server, server: uvicorn.Server) -> None:
    """End the HTTP server when the resident it serves for stops."""
    resident.wait()
    server.should_exit = True


def _run(server: uvicorn.Server, sock: socket.socket) -> None:
    """``server.run`` with SIGTERM and SIGHUP ending it as Ctrl-C does: uvicorn raises
    the signal it caught again once it has shut down; here that is a no-op, so the
    resident and the Memory are closed on the way out."""
    main = threading.current_thread() is threading.main_thread()
    old = {s: signal.signal(s, lambda *_: None) for s in (signal.SIGTERM, signal.SIGHUP)
           } if main else {}
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
