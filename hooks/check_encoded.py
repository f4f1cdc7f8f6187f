"""Secrets in the files the text scan leaves to others: UTF-16/32 text and anything with a
NUL byte in its first 8 KB.

``check_secrets`` reads UTF-8 text and skips what git would call binary (a NUL byte in
the first 8 KB). That is a door: one NUL at the top of a note, or the note saved as
UTF-16 (every other byte a NUL), and a key in it passed commit and pre-receive alike.
Outside attachments/ such a file is refused anyway (``check_size``), but the refusal
depends on a setting and the server never ran it; so those files are decoded here and
scanned with the same rules: by their byte-order mark, else by where their NULs sit (the
UTF-16 of ASCII text), and always also with the NUL bytes dropped.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence

from memrepo.secrets import find_secrets

from .engine import SNIFF_BYTES, Context, run_main

CHECK_ID = "check-secrets"
#: Share of NULs at even (odd) offsets from which a file is read as UTF-16 BE (LE).
UTF16_NUL_SHARE = 0.3
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def readings(data: bytes) -> list[str]:
    """The texts a file with NUL bytes (or a UTF-16/32 BOM) may hold, to be scanned."""
    texts = []
    for bom, codec in _BOMS:
        if data.startswith(bom):
            texts.append(data[len(bom):].decode(codec, "replace"))
            break
    else:
        head = data[:SNIFF_BYTES]
        half = max(len(head) // 2, 1)
        if head[1::2].count(0) >= UTF16_NUL_SHARE * half:
            texts.append(data.decode("utf-16-le", "replace"))
        if head[0::2].count(0) >= UTF16_NUL_SHARE * half:
            texts.append(data[1:].decode("utf-16-le", "replace"))  # BE read one byte on
    texts.append(data.replace(b"\0", b"").decode("utf-8", "replace"))
    return texts


def needs_decoding(head: bytes) -> bool:
    """What ``check_secrets`` skips: a NUL in the head, or a UTF-16/32 byte-order mark."""
    return b"\0" in head or head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))


def check(paths: Sequence[str], ctx: Context) -> None:
    """Scan every file the UTF-8 scan skips, in each of its plausible decodings."""
    allow = ctx.setting("secrets_allowlist")
    for path in paths:
        head = ctx.sniff(path, CHECK_ID)
        if head is None or not needs_decoding(head):
            continue
        data = ctx.data(path, CHECK_ID)
        if data is None:
            continue
        for text in readings(data):
            for hit in find_secrets(text, allow):
                ctx.report.error(path, hit.line,
                                 f"possible {hit.kind} (in binary or UTF-16 content) — "
                                 "remove it or allowlist it", CHECK_ID)


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Scan binary and UTF-16 files for secrets.")


if __name__ == "__main__":
    raise SystemExit(main())
