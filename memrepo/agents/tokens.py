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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.index.paths import state_dir
from memrepo.index.remote import git_dir, private_dir
from memrepo.locks import LockBusy, file_lock

READ, WRITE = "read", "write"
SCOPES = (READ, WRITE)
PREFIX = "mrp_"
#: random bytes in a token: 256 bits
TOKEN_BYTES = 32
TOKENS_FILE = "tokens.json"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
FORMAT = 1


@dataclass(frozen=True)
class Token:
    """One token as stored: never the token itself."""

    name: str
    scope: str
    sha256: str
    created: str

    def public(self) -> dict[str, str]:
        """What ``memory mcp token list`` shows (the digest is nobody's business)."""
        return {"name": self.name, "scope": self.scope, "created": self.created}


def token_dir(root: Path) -> Path:
    """``<git-dir>/memrepo/mcp``: the clone's, outside the work tree."""
    return state_dir(git_dir(Path(root))) / "mcp"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


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
        """Every token, the file read again only when it changed. MemrepoError when it
        cannot be read or parsed (the server then lets nobody in)."""
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
            found = [Token(**{k: str(row[k]) for k in ("name", "scope", "sha256",
                                                       "created")}) for row in rows]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MemrepoError(f"{self.path} is not a token file memrepo wrote ({exc}); "
                               "move it away and create the tokens again") from None
        return [t for t in found if t.scope in SCOPES]

    def verify(self, token: str) -> Token | None:
        """The stored token ``token`` is, or None; every digest compared in constant
        time, whichever matched."""
        want = digest(token)
        found = None
        for t in self.tokens():
            if hmac.compare_digest(t.sha256, want) and found is None:
                found = t
        return found

    # -- changing ------------------------------------------------------------------------
    def create(self, name: str, scope: str = WRITE) -> str:
        """A new token named ``name``: its only appearance in clear is this return value."""
        if not NAME.match(name):
            raise MemrepoError(f"token name {name!r}: letters, digits, '.', '_' and '-', "
                               "at most 64, starting with a letter or digit")
        if scope not in SCOPES:
            raise MemrepoError(f"scope {scope!r}: one of {', '.join(SCOPES)}")
        token = PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
        created = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()

        def add(rows: list[Token]) -> list[Token]:
            if any(t.name == name for t in rows):
                raise MemrepoError(f"a token named {name!r} exists: revoke it first "
                                   f"(memory mcp token revoke {name})")
            return [*rows, Token(name, scope, digest(token), created)]

        self._change(add)
        return token

    def revoke(self, name: str) -> Token:
        """Remove the token named ``name`` (MemrepoError when there is none)."""
        gone: list[Token] = []

        def drop(rows: list[Token]) -> list[Token]:
            gone.extend(t for t in rows if t.name == name)
            if not gone:
                names = ", ".join(t.name for t in rows) or "none"
                raise MemrepoError(f"no token named {name!r} (tokens: {names})")
            return [t for t in rows if t.name != name]

        self._change(drop)
        return gone[0]

    def _change(self, edit: Any) -> None:
        """Read, edit and write the file under a lock (0600, atomically)."""
        private_dir(self.dir)
        try:
            with file_lock(self.dir / "tokens.lock", wait=5.0):
                self._stamp = None
                rows = edit(self.tokens())
                body = {"format": FORMAT, "tokens": [asdict(t) for t in rows]}
                atomic_write(self.path, json.dumps(body, indent=1) + "\n", mode=0o600)
        except LockBusy:
            raise MemrepoError(f"{self.dir}: another memory mcp token command is "
                               "running; try again") from None
