"""OAuth 2.1 for ``memory mcp --http --oauth``: the MCP authorization spec's authorization
server, on the MCP SDK's own (:mod:`mcp.server.auth`).

The SDK serves the protocol: protected-resource metadata (RFC 9728) at
``/.well-known/oauth-protected-resource/mcp``, authorization-server metadata (RFC 8414),
dynamic client registration (RFC 7591) at ``/register``, ``/authorize`` (code flow, PKCE
S256 required), ``/token`` (authorization code and refresh token) and ``/revoke`` (RFC
7009). :class:`Provider` is memrepo's side: where clients, codes and tokens live, and who
says yes.

**Who says yes.** memrepo has one user, its owner, and no accounts: ``/authorize`` sends
the browser to ``/oauth/approve``, a page naming the client and where the code will go,
which asks for a one-time approval code. The owner makes one on the machine that holds the
memory, ``memory mcp oauth approve [--read-only]`` (ten minutes, spent on use, 60 random
bits; ``--read-only`` caps the login at ``read``). Nothing is ever approved without a code,
from loopback or elsewhere; a wrong code costs a second, and five end the request.

**What is kept** (:class:`memrepo.agents.tokens.TokenStore`, one home for credentials):
each approved login is a grant named ``oauth-<client>-<hex>`` in ``tokens.json`` with the
SHA-256 digests of its access token (an hour) and its refresh token (90 days, rotated at
each use); ``memory mcp token list`` shows it and ``memory mcp token revoke`` ends it.
Registered clients are in ``oauth-clients.json`` beside it (0600, at most
:data:`MAX_CLIENTS`), with the client secrets the SDK compares in clear: a secret alone
gets no token (that takes an approval code, or a refresh token). Pending requests and
authorization codes (five minutes) live in the server's memory only.

**Scopes**: ``read`` and ``write``, as the bearer tokens'; a login gets ``write`` when the
client asked for it (or for neither) and the approval code allows it.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlparse

import anyio
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import (
    create_auth_routes,
    create_protected_resource_routes,
    validate_issuer_url,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from memrepo.agents.tokens import OAUTH, READ, SCOPES, WRITE, Token, TokenStore, epoch
from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.index.remote import private_dir
from memrepo.locks import LockBusy, file_lock

log = logging.getLogger("memrepo.mcp.oauth")

APPROVE_PATH = "/oauth/approve"
CLIENTS_FILE = "oauth-clients.json"
#: registered clients kept; past it the oldest without a grant makes room
MAX_CLIENTS = 100
#: a pending request (the approval page) and an authorization code, in seconds
PENDING_TTL, CODE_TTL = 600, 300
MAX_PENDING, MAX_ATTEMPTS, WRONG_CODE_DELAY = 64, 5, 1.0
HEADERS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY",
           "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
                                      "frame-ancestors 'none'"}


def settings(base: str, path: str) -> AuthSettings:
    """The SDK's settings for an issuer at ``base`` (``scheme://host[:port]``, the address
    clients reach) serving the MCP endpoint at ``base + path``. MemrepoError for a base
    with a path, or plain http beyond loopback."""
    parsed = urlparse(base)
    if parsed.scheme not in ("http", "https") or not parsed.netloc or parsed.path.strip("/") \
            or parsed.query or parsed.fragment:
        raise MemrepoError(f"--public-url {base!r}: expected https://HOST[:PORT], no path")
    base = f"{parsed.scheme}://{parsed.netloc}"
    try:
        validate_issuer_url(AnyHttpUrl(base))
    except (ValueError, ValidationError):
        raise MemrepoError(
            f"--oauth: {base} is neither https nor loopback; OAuth needs the https address "
            "clients reach: --public-url https://HOST (a reverse proxy or tailscale serve, "
            "docs/remote-mcp.md)") from None
    return AuthSettings(
        issuer_url=base, resource_server_url=base + path, validate_token_resource=False,
        client_registration_options=ClientRegistrationOptions(
            enabled=True, default_scopes=[READ, WRITE]),
        revocation_options=RevocationOptions(enabled=True))


def scopes_of(scope: str) -> list[str]:
    return [READ, WRITE] if scope == WRITE else [READ]


# --- registered clients -------------------------------------------------------------------


class ClientStore:
    """Dynamically registered clients, ``oauth-clients.json`` in the token folder."""

    def __init__(self, folder: Any):
        self.dir = folder
        self.path = folder / CLIENTS_FILE

    def rows(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise MemrepoError(f"{self.path}: {exc}; move it away (clients register "
                               "again)") from None
        return [r for r in data.get("clients", []) if isinstance(r, dict)]

    def get(self, client_id: str) -> OAuthClientInformationFull | None:
        for row in self.rows():
            if row.get("client_id") == client_id:
                return OAuthClientInformationFull.model_validate(row)
        return None

    def add(self, info: OAuthClientInformationFull, keep: set[str]) -> None:
        """Keep ``info``; when full, drop the oldest client not in ``keep`` (those with a
        grant), else refuse."""
        private_dir(self.dir)
        try:
            with file_lock(self.dir / "tokens.lock", wait=5.0):
                rows = self.rows()
                while len(rows) >= MAX_CLIENTS:
                    spare = [r for r in rows if r.get("client_id") not in keep]
                    if not spare:
                        raise RegistrationError("invalid_client_metadata",
                                                "too many clients hold logins here")
                    rows.remove(spare[0])
                rows.append(info.model_dump(mode="json", exclude_none=True))
                atomic_write(self.path, json.dumps({"clients": rows}, indent=1) + "\n",
                             mode=0o600)
        except LockBusy:
            raise RegistrationError("invalid_client_metadata", "busy; try again") from None


# --- the provider ---------------------------------------------------------------------------


class Access(AccessToken):
    grant: str


class Refresh(RefreshToken):
    grant: str


@dataclass
class Pending:
    """An authorization request waiting for the owner's approval code."""

    client: OAuthClientInformationFull
    params: AuthorizationParams
    expires: float
    attempts: int = 0


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, Refresh, Access]):
    """memrepo's authorization server behind the SDK's handlers (see the module)."""

    def __init__(self, store: TokenStore, config: AuthSettings):
        self.store = store
        self.clients = ClientStore(store.dir)
        self.issuer = str(config.issuer_url).rstrip("/")
        self.pending: dict[str, Pending] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        #: the namespace each code's grant acts in (the approval's; "": none)
        self.code_namespaces: dict[str, str] = {}

    # -- clients ---------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        keep = {t.client for t in self.store.tokens() if t.kind == OAUTH}
        await anyio.to_thread.run_sync(self.clients.add, client_info, keep)

    # -- the authorization code ------------------------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        """Hold the request; the browser goes to the approval page."""
        _sweep(self.pending, lambda p: p.expires)
        request = secrets.token_urlsafe(24)
        self.pending[request] = Pending(client, params, time.time() + PENDING_TTL)
        return f"{self.issuer}{APPROVE_PATH}?{urlencode({'request': request})}"

    def approved(self, pending: Pending, allowed: Token) -> str:
        """An authorization code for an approved request (at most the approval's scope,
        in its namespace): where the browser goes next."""
        asked = set(pending.params.scopes or SCOPES)
        scope = WRITE if allowed.scope == WRITE and (WRITE in asked
                                                      or not asked & set(SCOPES)) else READ
        _sweep(self.codes, lambda c: c.expires_at)
        self.code_namespaces = {c: n for c, n in self.code_namespaces.items() if c in self.codes}
        code = secrets.token_urlsafe(32)
        self.code_namespaces[code] = allowed.namespace
        self.codes[code] = AuthorizationCode(
            code=code, scopes=scopes_of(scope), expires_at=time.time() + CODE_TTL,
            client_id=pending.client.client_id, code_challenge=pending.params.code_challenge,
            redirect_uri=pending.params.redirect_uri,
            redirect_uri_provided_explicitly=pending.params.redirect_uri_provided_explicitly,
            resource=pending.params.resource)
        return construct_redirect_uri(str(pending.params.redirect_uri), code=code,
                                      state=pending.params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        found = self.codes.get(authorization_code)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "the authorization code was used already")
        scope = WRITE if WRITE in authorization_code.scopes else READ
        ns = self.code_namespaces.pop(authorization_code.code, "")
        row, access, refresh = await anyio.to_thread.run_sync(
            lambda: self.store.grant(client.client_id, client.client_name or "client", scope,
                                     namespace=ns))
        log.warning("OAuth login approved: %s (%s) for %s", row.name, scope,
                    client.client_name or client.client_id)
        return _token(row, access, refresh)

    # -- refresh and access tokens ---------------------------------------------------------
    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> Refresh | None:
        row = self.store.find_refresh(refresh_token)
        if row is None or row.client != client.client_id:
            return None
        # every scope: a client asking its usual "read write" on a read grant gets read
        # (exchange_refresh_token narrows, never widens) rather than a failed refresh
        return Refresh(token=refresh_token, client_id=row.client, scopes=list(SCOPES),
                       expires_at=int(epoch(row.refresh_expires)), grant=row.name)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: Refresh, scopes: list[str]) -> OAuthToken:
        got = await anyio.to_thread.run_sync(
            lambda: self.store.rotate(refresh_token.grant, refresh_token.token,
                                      write=WRITE in scopes))
        if got is None:
            raise TokenError("invalid_grant", "the refresh token was used already or revoked")
        return _token(*got)

    async def load_access_token(self, token: str) -> Access | None:
        row = self.store.verify(token)
        if row is None or row.kind != OAUTH:
            return None
        return Access(token=token, client_id=row.client, scopes=scopes_of(row.scope),
                      expires_at=int(epoch(row.expires)), grant=row.name)

    async def revoke_token(self, token: Access | Refresh) -> None:
        """End the whole grant, whichever of its tokens was given."""
        def forget() -> None:
            with contextlib.suppress(MemrepoError):  # gone already
                self.store.revoke(token.grant)

        await anyio.to_thread.run_sync(forget)

    # -- the approval page -----------------------------------------------------------------
    async def page(self, request: Request) -> Response:
        pending = self._pending(request.query_params.get("request", ""))
        if pending is None:
            return _page(_GONE, 400)
        return _page(_form(request.query_params["request"], pending), 200)

    async def answer(self, request: Request) -> Response:
        form = await request.form()
        key = str(form.get("request", ""))
        pending = self._pending(key)
        if pending is None:
            return _page(_GONE, 400)
        if form.get("decision") == "deny":
            self.pending.pop(key, None)
            return _redirect(construct_redirect_uri(
                str(pending.params.redirect_uri), error="access_denied",
                error_description="the owner declined", state=pending.params.state))
        allowed = await anyio.to_thread.run_sync(self.store.redeem, str(form.get("code", "")))
        if allowed is None:
            await anyio.sleep(WRONG_CODE_DELAY)
            pending.attempts += 1
            if pending.attempts >= MAX_ATTEMPTS:
                self.pending.pop(key, None)
                return _page("<p>Too many wrong codes: start the sign-in again from the "
                             "app.</p>", 403)
            return _page(_form(key, pending, "That code is wrong, used or expired."), 403)
        self.pending.pop(key, None)
        return _redirect(self.approved(pending, allowed))

    def _pending(self, key: str) -> Pending | None:
        _sweep(self.pending, lambda p: p.expires)
        return self.pending.get(key)


def _sweep(held: dict[str, Any], expires: Any) -> None:
    """Drop what lapsed, then the oldest past :data:`MAX_PENDING`."""
    now = time.time()
    for key in [k for k, v in held.items() if expires(v) <= now]:
        del held[key]
    while len(held) >= MAX_PENDING:
        del held[next(iter(held))]


def _token(row: Token, access: str, refresh: str) -> OAuthToken:
    return OAuthToken(access_token=access, expires_in=max(0, int(epoch(row.expires) - time.time())),
                      scope=" ".join(scopes_of(row.scope)), refresh_token=refresh)


def _redirect(url: str) -> Response:
    return RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})


_GONE = "<p>This sign-in request is unknown or expired: start it again from the app.</p>"


def _form(key: str, pending: Pending, error: str = "") -> str:
    e = html.escape
    client = pending.client
    asked = set(pending.params.scopes or SCOPES)
    wants = "read and write" if WRITE in asked or not asked & set(SCOPES) else "read"
    return f"""<p><b>{e(client.client_name or "An unnamed client")}</b> asks to {wants} this
memory. If you approve, the code goes to <code>{e(str(pending.params.redirect_uri))}</code>.</p>
<p>On the machine that holds the memory, run <code>memory mcp oauth approve</code> (add
<code>--read-only</code> to allow searching and reading only) and type the code here.</p>
{f'<p class="err">{e(error)}</p>' if error else ''}
<form method="post" action="{APPROVE_PATH}">
<input type="hidden" name="request" value="{e(key)}">
<input name="code" autocomplete="off" autofocus placeholder="XXXX-XXXX-XXXX" size="16">
<button name="decision" value="approve">Approve</button>
<button name="decision" value="deny">Deny</button>
</form>"""


def _page(body: str, status: int) -> Response:
    return HTMLResponse(
        "<!doctype html><meta charset=utf-8><meta name=viewport content='width=device-width'>"
        "<title>memrepo: approve a sign-in</title><style>body{font:16px sans-serif;"
        "max-width:36em;margin:2em auto;padding:0 1em}.err{color:#b00}</style>"
        f"<h1>memrepo</h1>{body}", status_code=status, headers=HEADERS)


# --- the ASGI app ---------------------------------------------------------------------------


@dataclass
class Front:
    """The OAuth endpoints, open to all (and every ``/.well-known/`` path: a 404, not a
    401, for metadata a client probes that is not here); every other request goes to
    ``protected`` (the MCP endpoint behind the bearer check), as does the lifespan."""

    protected: Any
    public: Any
    paths: frozenset[str]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path in self.paths or path.startswith("/.well-known/")):
            await self.public(scope, receive, send)
        else:
            await self.protected(scope, receive, send)


def front(protected: Any, store: TokenStore, config: AuthSettings) -> Front:
    """``protected`` with the SDK's OAuth routes and the approval page in front of it."""
    provider = Provider(store, config)
    assert config.resource_server_url is not None
    routes = [
        *create_auth_routes(provider, config.issuer_url,
                            client_registration_options=config.client_registration_options,
                            revocation_options=config.revocation_options),
        *create_protected_resource_routes(config.resource_server_url, [config.issuer_url],
                                          scopes_supported=list(SCOPES),
                                          resource_name="memrepo"),
        Route(APPROVE_PATH, provider.page, methods=["GET"]),
        Route(APPROVE_PATH, provider.answer, methods=["POST"]),
    ]
    return Front(protected, Starlette(routes=routes), frozenset(r.path for r in routes))
