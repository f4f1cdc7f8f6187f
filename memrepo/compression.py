"""Archived memory files kept gzip-compressed: ``archive/**.md.gz`` (seed 003 §10).

The one place for the rule and both directions, standard library only (the hooks, the
indexer, search snippets and ``memory prune`` import it):

- only a Markdown file under ``archive/`` may be stored compressed, as ``NAME.md.gz``;
- :func:`compress` is deterministic (gzip level 9, mtime 0, no file name, OS "unknown"):
  the same text always gives the same bytes, so two clones that compress the same
  archive agree and a re-run is a no-op;
- :func:`decompress` stops at a cap (``validation.max_file_kb``, the largest text file a
  commit may hold), so a gzip bomb costs at most that much memory, and a corrupt,
  truncated or non-gzip file is a :class:`~memrepo.errors.FormatError` naming the file.
"""

from __future__ import annotations

import functools
import struct
import zlib
from pathlib import Path
from typing import Any

from memrepo.errors import ConfigError, FormatError
from memrepo.layout import CONFIG_FILE

SUFFIX = ".md.gz"
ROOT = "archive/"
#: The first two bytes of every gzip member (RFC 1952).
MAGIC = b"\x1f\x8b"
#: ``validation.max_file_kb``'s default, for a caller without a config at hand.
DEFAULT_LIMIT = 1024 * 1024
LEVEL = 9
#: ID1 ID2 CM=deflate FLG=0 (no name, no comment), MTIME=0, XFL=2 (best), OS=255 (unknown).
_HEADER = MAGIC + b"\x08\x00" + b"\x00\x00\x00\x00" + b"\x02\xff"


def is_gzip_name(path: str) -> bool:
    """A name that says gzip (``.gz``): its content must be gzip, and is read inflated."""
    return path.endswith(".gz")


def allowed(path: str) -> bool:
    """Whether ``path`` may hold compressed text: ``archive/**.md.gz``, not hidden."""
    return path.startswith(ROOT) and path.endswith(SUFFIX) and "/." not in path


def plain_name(path: str) -> str:
    """``archive/journal/x.md.gz`` -> ``archive/journal/x.md`` (other names unchanged)."""
    return path[:-3] if path.endswith(SUFFIX) else path


def compressed_name(path: str) -> str:
    return path + ".gz"


def looks_gzip(data: bytes) -> bool:
    return data[:2] == MAGIC


def limit_of(config: Any) -> int:
    """The decompression cap of a loaded config: ``validation.max_file_kb`` in bytes."""
    try:
        return int(float(config["validation"]["max_file_kb"]) * 1024)
    except (KeyError, TypeError, ValueError):
        return DEFAULT_LIMIT


def limit_for(root: str | Path) -> int:
    """The decompression cap of the repo at ``root`` (:data:`DEFAULT_LIMIT` when its config
    cannot be read), read once per version of the config file: a search, an export or
    ``memory serve`` may inflate many archives."""
    try:
        stamp = (Path(root) / CONFIG_FILE).stat().st_mtime_ns
    except OSError:
        stamp = 0
    return _limit_at(str(root), stamp)


@functools.lru_cache(maxsize=8)
def _limit_at(root: str, _stamp: int) -> int:
    from memrepo.config import load_config

    try:
        return limit_of(load_config(root))
    except (ConfigError, OSError):
        return DEFAULT_LIMIT


def compress(data: bytes) -> bytes:
    """One gzip member of ``data`` at level 9 with a fixed header: same input, same bytes
    (on one zlib build; any build decompresses it to the same text)."""
    co = zlib.compressobj(LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, 9)
    body = co.compress(data) + co.flush()
    trailer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)
    return _HEADER + body + trailer


def decompress(data: bytes, path: str, limit: int = DEFAULT_LIMIT) -> bytes:
    """The text inside gzip ``data`` (every member), at most ``limit`` bytes of it.

    Raises FormatError naming ``path`` for data that is not gzip, is truncated or corrupt
    (zlib checks each member's CRC-32 and length), has bytes after its last member, or
    would decompress to more than ``limit`` bytes (reading stops there: a bomb never
    allocates more).
    """
    if not looks_gzip(data):
        raise FormatError("not gzip data (a .gz file must start with the gzip header 1f 8b)",
                          path)
    out = bytearray()
    rest = data
    while rest:
        if not looks_gzip(rest):
            raise FormatError(f"{len(rest)} byte(s) of non-gzip data after the compressed "
                              "text", path)
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip wrapper only
        try:
            out += d.decompress(rest, limit + 1 - len(out))
        except zlib.error as exc:
            raise FormatError(f"not a valid gzip file ({exc})", path) from None
        if len(out) > limit:
            raise FormatError(
                f"decompresses to more than {limit / 1024:g} KB (validation.max_file_kb): "
                "reading stopped there (a gzip bomb costs no more)", path)
        if not d.eof:
            raise FormatError("truncated gzip file (it ends inside the compressed data)", path)
        rest = d.unused_data
    return bytes(out)


def read_plain(file: str | Path, path: str, limit: int = DEFAULT_LIMIT) -> bytes:
    """A file's text bytes: ``*.gz`` decompressed (capped), anything else as stored.
    OSError and FormatError propagate."""
    data = Path(file).read_bytes()
    return decompress(data, path, limit) if is_gzip_name(path) else data
