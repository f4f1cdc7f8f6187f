"""Bearer tokens of ``memory mcp --http``: who may call the memory's tools over HTTP.

Kept per clone in ``<git-dir>/memrepo/mcp/tokens.json`` (the folder 0700, the file 0600),
beside the resident server's files: never in the work tree, so no commit, push or sync
carries one. A token is ``mrp_`` and 256 random bits (43 URL-safe characters), shown
once by ``memory mcp token create``; the file keeps its SHA-256 digest, its name, its
scope and when it was made. A plain digest, not argon2 or scrypt: those slow a guess at a
password a person chose, and 256 random bits are not guessed at any speed; a request is
then checked in microseconds, with no new dependency. Every digest is compared in
constant time (:func:`hmac.compare_digest`), all of them whatever matched.

Scopes: ``write`` calls every tool; ``read`` only those annotated read-only
(:mod:`memrepo.agents.mcp_http` hides and refuses the others).

The same file keeps what OAuth (:mod:`memrepo.agents.oauth`, ``memory mcp --http --oauth``)
issues, hashed the same way: a *grant* (kind ``oauth``) per approved login, holding the
digest of its access token (``mrp_``, one hour) and of its refresh token (``mrr_``, 90
days, replaced at each use), listed and revoked by name like a token; and the owner's
one-time *approval codes* (kind ``approval``, ten minutes, spent on use), never listed.
Lapsed codes and grants are dropped at the next change of the file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from memrepo import namespaces
from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.index.paths import state_dir
from memrepo.index.remote import git_dir, private_dir
from memrepo.locks import LockBusy, file_lock

READ, WRITE = "read", "write"
SCOPES = (READ, WRITE)
PREFIX = "mrp_"
REFRESH_PREFIX = "mrr_"
#: kinds of row: a token made by ``token create``, an OAuth grant, an approval code
BEARER, OAUTH, APPROVAL = "bearer", "oauth", "approval"
#: lifetimes in seconds: an OAuth access token, its refresh token, an approval code
ACCESS_TTL, REFRESH_TTL, APPROVAL_TTL = 3600, 90 * 86400, 600
#: approval codes: 12 symbols of Crockford's base32 (60 bits), shown as XXXX-XXXX-XXXX
CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
#: random bytes in a token: 256 bits
TOKEN_BYTES = 32
TOKENS_FILE = "tokens.json"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
FORMAT = 1


REQUIRED = ("name", "scope", "sha256", "created")
OPTIONAL = ("kind", "expires", "client", "refresh_sha256", "refresh_expires", "namespace")


@dataclass(frozen=True)
class Token:
    """One row as stored: never a token itself. ``expires`` (ISO, UTC): when an OAuth
    access token or an approval code lapses (``""``: never, a bearer token); ``client``:
    the OAuth client id; ``refresh_*``: the grant's refresh token; ``namespace``: the
    namespace its requests act in (docs/namespaces.md; ``""``: none)."""

    name: str
    scope: str
    sha256: str
    created: str
    kind: str = BEARER
    expires: str = ""
    client: str = ""
    refresh_sha256: str = ""
    refresh_expires: str = ""
    namespace: str = ""

    def public(self) -> dict[str, str]:
        """What ``memory mcp token list`` shows (the digest is nobody's business)."""
        shown = {"name": self.name, "scope": self.scope, "created": self.created}
        if self.namespace:
            shown["namespace"] = self.namespace
        if self.kind == OAUTH:
            shown.update(kind=OAUTH, expires=self.refresh_expires)
        return shown

    def admits(self, now: float) -> bool:
        """Whether this row's token lets a request in at ``now``."""
        return self.kind == BEARER or (self.kind == OAUTH and epoch(self.expires) > now)

    def lapsed(self, now: float) -> bool:
        """A spent-by-time approval code or a grant past its refresh token: dropped."""
        return ((self.kind == APPROVAL and epoch(self.expires) <= now)
                or (self.kind == OAUTH and epoch(self.refresh_expires) <= now))


def token_dir(root: Path) -> Path:
    """``<git-dir>/memrepo/mcp``: the clone's, outside the work tree."""
    return state_dir(git_dir(Path(root))) / "mcp"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def stamp(when: float) -> str:
    return dt.datetime.fromtimestamp(int(when), dt.timezone.utc).isoformat()


def epoch(iso: str) -> float:
    """Seconds since the epoch of a stored time; ``""`` is never (infinity)."""
    return dt.datetime.fromisoformat(iso).timestamp() if iso else float("inf")


def normal_code(code: str) -> str:
    """An approval code as typed (any case, with or without dashes) -> its canonical form."""
    return "".join(code.split()).replace("-", "").upper()


def _first(rows: list[Token], field: str, value: str) -> Token | None:
    """The first row whose ``field`` digest is ``value``'s, every row compared in constant
    time whichever matched."""
    want, found = digest(value), None
    for t in rows:
        if hmac.compare_digest(getattr(t, field) or "-", want) and found is None:
            found = t
    return found


class TokenStore:
    """The tokens of one clone. The server asks :meth:`verify` per request and sees a
    token created or revoked meanwhile (the file is read again when its stat changes)."""

    def __init__(self, root: Path):
        self.dir = token_dir(root)
        self.path = self.dir / TOKENS_FILE
        self._stamp: tuple[int, ...] | None = None
        self._cached: list[Token] = []
        self._lock = threading.Lock()

    # -- reading -------------------------------------------------------------------------
    def tokens(self) -> list[Token]:
        """Every token and OAuth grant (not approval codes), the file read again only when
        it changed. MemrepoError when it cannot be read or parsed (the server then lets
        nobody in)."""
        return [t for t in self._rows() if t.kind != APPROVAL]

    def _rows(self) -> list[Token]:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            with self._lock:
                self._stamp, self._cached = None, []
            return []
        except OSError as exc:
            raise MemrepoError(f"{self.path}: {exc.strerror or exc}") from None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)
        with self._lock:
            if stamp != self._stamp:
                self._cached, self._stamp = self._load(), stamp
            return list(self._cached)

    def _load(self) -> list[Token]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            rows = data["tokens"] if isinstance(data, dict) else None
            if not isinstance(rows, list):
                raise ValueError("no tokens list")
            found = [Token(**{k: str(row[k]) for k in REQUIRED},
                           **{k: str(row[k]) for k in OPTIONAL if k in row}) for row in rows]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MemrepoError(f"{self.path} is not a token file memrepo wrote ({exc}); "
                               "move it away and create the tokens again") from None
        return [t for t in found if t.scope in SCOPES and t.kind in (BEARER, OAUTH, APPROVAL)]

    def verify(self, token: str) -> Token | None:
        """The stored token or OAuth grant ``token`` lets in now, or None (unknown,
        revoked, an expired access token); every digest compared in constant time."""
        found = _first(self.tokens(), "sha256", token)
        return found if found is not None and found.admits(time.time()) else None

    def find_refresh(self, token: str) -> Token | None:
        """The OAuth grant whose live refresh token ``token`` is, or None."""
        found = _first([t for t in self.tokens() if t.kind == OAUTH], "refresh_sha256", token)
        return found if found is not None and not found.lapsed(time.time()) else None

    # -- changing ------------------------------------------------------------------------
    def create(self, name: str, scope: str = WRITE, namespace: str | None = None) -> str:
        """A new token named ``name`` (its sessions acting in ``namespace``): its only
        appearance in clear is this return value."""
        if not NAME.match(name):
            raise MemrepoError(f"token name {name!r}: letters, digits, '.', '_' and '-', "
                               "at most 64, starting with a letter or digit")
        if scope not in SCOPES:
            raise MemrepoError(f"scope {scope!r}: one of {', '.join(SCOPES)}")
        ns = _namespace(namespace)
        token = PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
        created = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()

        def add(rows: list[Token]) -> list[Token]:
            if any(t.name == name for t in rows):
                raise MemrepoError(f"a token named {name!r} exists: revoke it first "
                                   f"(memory mcp token revoke {name})")
            return [*rows, Token(name, scope, digest(token), created, namespace=ns)]

        self._change(add)
        return token

    def revoke(self, name: str) -> Token:
        """Remove the token named ``name`` (MemrepoError when there is none)."""
        gone: list[Token] = []

        def drop(rows: list[Token]) -> list[Token]:
            gone.extend(t for t in rows if t.name == name and t.kind != APPROVAL)
            if not gone:
                names = ", ".join(t.name for t in rows if t.kind != APPROVAL) or "none"
                raise MemrepoError(f"no token named {name!r} (tokens: {names})")
            return [t for t in rows if t not in gone]

        self._change(drop)
        return gone[0]

    # -- OAuth: approval codes and grants (memrepo.agents.oauth) --------------------------
    def approval(self, scope: str = WRITE, ttl: int = APPROVAL_TTL,
                 namespace: str | None = None) -> str:
        """A one-time code that approves one OAuth login with at most ``scope`` (acting in
        ``namespace``), shown as ``XXXX-XXXX-XXXX``: its only appearance in clear is this
        return value."""
        if scope not in SCOPES:
            raise MemrepoError(f"scope {scope!r}: one of {', '.join(SCOPES)}")
        ns = _namespace(namespace)
        raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(12))
        now = time.time()
        row = Token(f"approval-{secrets.token_hex(4)}", scope, digest(raw), stamp(now),
                    APPROVAL, stamp(now + ttl), namespace=ns)
        self._change(lambda rows: [*rows, row])
        return "-".join(raw[i:i + 4] for i in (0, 4, 8))

    def redeem(self, code: str) -> Token | None:
        """Spend an approval code: its row (the scope and namespace it grants), or None
        (wrong, used, lapsed)."""
        spent: list[Token] = []

        def take(rows: list[Token]) -> list[Token]:
            codes = [t for t in rows if t.kind == APPROVAL and not t.lapsed(time.time())]
            found = _first(codes, "sha256", normal_code(code))
            spent.extend([found] if found else [])
            return [t for t in rows if t is not found]

        self._change(take)
        return spent[0] if spent else None

    def grant(self, client: str, label: str, scope: str, *, access_ttl: int = ACCESS_TTL,
              refresh_ttl: int = REFRESH_TTL, namespace: str = "") -> tuple[Token, str, str]:
        """A new OAuth grant for ``client`` (acting in ``namespace``), named
        ``oauth-<label>-<hex>``: (the row, its access token, its refresh token)."""
        slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:32] or "client"
        made: list[tuple[Token, str, str]] = []

        def add(rows: list[Token]) -> list[Token]:
            names = {t.name for t in rows}
            name = f"oauth-{slug}-{secrets.token_hex(3)}"
            while name in names:
                name = f"oauth-{slug}-{secrets.token_hex(3)}"
            made.append(_issue(Token(name, scope, "", stamp(time.time()), OAUTH, client=client,
                                     namespace=namespace),
                               access_ttl, refresh_ttl))
            return [*rows, made[0][0]]

        self._change(add)
        return made[0]

    def rotate(self, name: str, refresh: str, *, write: bool = True,
               access_ttl: int = ACCESS_TTL, refresh_ttl: int = REFRESH_TTL,
               ) -> tuple[Token, str, str] | None:
        """Replace grant ``name``'s access and refresh tokens, if ``refresh`` still is its
        refresh token (else None: used already, or revoked). ``write=False`` narrows the
        grant to ``read``; nothing widens it."""
        made: list[tuple[Token, str, str]] = []

        def swap(rows: list[Token]) -> list[Token]:
            found = _first([t for t in rows if t.kind == OAUTH and t.name == name],
                           "refresh_sha256", refresh)
            if found is None or found.lapsed(time.time()):
                return rows
            made.append(_issue(found if write else replace(found, scope=READ),
                               access_ttl, refresh_ttl))
            return [made[0][0] if t is found else t for t in rows]

        self._change(swap)
        return made[0] if made else None

    def _change(self, edit: Any) -> None:
        """Read, edit and write the file under a lock (0600, atomically); lapsed codes
        and grants are dropped, and nothing is written when nothing changed."""
        private_dir(self.dir)
        try:
            with file_lock(self.dir / "tokens.lock", wait=5.0):
                self._stamp = None
                before = self._rows()
                now = time.time()
                rows = [t for t in edit(before) if not t.lapsed(now)]
                if rows == before:
                    return
                body = {"format": FORMAT, "tokens": [
                    {k: v for k, v in asdict(t).items() if v or k in REQUIRED} for t in rows]}
                atomic_write(self.path, json.dumps(body, indent=1) + "\n", mode=0o600)
        except LockBusy:
            raise MemrepoError(f"{self.dir}: another memory mcp token command is "
                               "running; try again") from None


def _namespace(name: str | None) -> str:
    """``name`` if it is a namespace (``""`` for none), else a MemrepoError saying why."""
    try:
        return namespaces.check(name) if name else ""
    except ValueError as exc:
        raise MemrepoError(str(exc)) from None


def _issue(row: Token, access_ttl: int, refresh_ttl: int) -> tuple[Token, str, str]:
    """``row`` with a new access token and refresh token: (the row, access, refresh)."""
    access = PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    refresh = REFRESH_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    now = time.time()
    return replace(row, sha256=digest(access), expires=stamp(now + access_ttl),
                   refresh_sha256=digest(refresh),
                   refresh_expires=stamp(now + refresh_ttl)), access, refresh
