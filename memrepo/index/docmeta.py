"""What the index keeps about a file: category, type, date, tags, status, body start.

This reads frontmatter with a small line scanner rather than
:func:`memrepo.documents.parse_document`, because importing python-frontmatter and PyYAML
would take a large share of the post-commit hook's budget, 150 ms in all
(``bench/perf/bench_commit.py``). It only needs a few top-level scalar keys and flow or
block lists, and the pre-commit validators have already refused files whose YAML does
not parse. The frontmatter delimiters and ``body_line`` follow
:mod:`memrepo.layout` exactly (a ``---`` line opens and closes it); when a needed key
holds something the scanner cannot read, it falls back to the full YAML parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memrepo.layout import FRONTMATTER_DELIM, category_of

_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:(?:\s+(.*))?$")
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")
_TRANSCRIPT_DATE = re.compile(r"^(?:archive/)?raw/conversations/(\d{4})/(\d{2})/(\d{2})/")
_JOURNAL_DATE = re.compile(r"(?:^|/)journal/(\d{4}-\d{2}-\d{2})\.md(?:\.gz)?$")  # .gz: archive

#: Keys the index uses; the first one present dates the file (for recency and --since).
DATE_KEYS = ("updated", "date", "ended", "started", "created")
#: Keys that name people (memrepo.index.names): a transcript's ``participants``, any
#: file's ``people`` / ``person``; and a person file's own ``name``, ``aliases``, ``title``.
NAME_KEYS = ("participants", "people", "person")
PERSON_NAME_KEYS = ("name", "aliases", "title")
WANTED = frozenset(
    {*DATE_KEYS, *NAME_KEYS, *PERSON_NAME_KEYS, "type", "tags", "status", "superseded_by"}
)


@dataclass
class DocMeta:
    path: str
    category: str | None
    type: str | None
    modified: str | None
    tags: list[str] = field(default_factory=list)
    status: str = ""
    body_line: int = 1
    #: people this file names (participants, people, a person file's own name)
    names: list[str] = field(default_factory=list)


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if " #" in raw and not raw.startswith(("'", '"')):
        raw = raw.split(" #", 1)[0].rstrip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        raw = raw[1:-1]
    return raw


def _flow_list(raw: str) -> list[str] | None:
    raw = raw.strip()
    if not (raw.startswith("[") and raw.endswith("]")):
        return None
    inner = raw[1:-1].strip()
    return [_scalar(x) for x in inner.split(",") if x.strip()] if inner else []


def _flow_map(raw: str) -> dict[str, str] | None:
    """``{user: Ana, agent: Bo}`` (scalars only), else None."""
    raw = raw.strip()
    if not (raw.startswith("{") and raw.endswith("}")) or any(c in raw[1:-1] for c in "{}[]"):
        return None
    out: dict[str, str] = {}
    for part in raw[1:-1].split(","):
        if not part.strip():
            continue
        k, sep, v = part.partition(":")
        if not sep:
            return None
        out[_scalar(k)] = _scalar(v)
    return out


def scan_frontmatter(lines: list[str]) -> tuple[dict[str, Any], int, bool]:
    """(wanted keys, 1-based body line, whether YAML fallback is needed)."""
    if not lines or not FRONTMATTER_DELIM.match(lines[0]):
        return {}, 1, False
    end = next((i for i in range(1, len(lines)) if FRONTMATTER_DELIM.match(lines[i])), None)
    if end is None:
        return {}, 1, False  # unclosed: the whole file is body (the validator refuses it)
    meta: dict[str, Any] = {}
    odd = False
    i = 1
    while i < end:
        m = _KEY.match(lines[i])
        i += 1
        if not m or m.group(1) not in WANTED:
            continue
        key, raw = m.group(1), (m.group(2) or "").strip()
        if raw.startswith("{") and (fm := _flow_map(raw)) is not None:
            meta[key] = fm
        elif raw and raw[0] in "|>&*!{":
            odd = True
        elif raw.startswith("["):
            lst = _flow_list(raw)
            if lst is None:
                odd = True
            else:
                meta[key] = lst
        elif raw:
            meta[key] = _scalar(raw)
        else:  # a block list or a block mapping of scalars follows, or nothing
            items: list[str] = []
            mapping: dict[str, str] = {}
            while i < end and (lines[i].startswith((" ", "\t", "-")) or not lines[i].strip()):
                s = lines[i].strip()
                if s.startswith("- "):
                    items.append(_scalar(s[2:]))
                elif (km := _KEY.match(s)) and km.group(2) and km.group(2)[0] not in "|>&*!{[":
                    mapping[km.group(1)] = _scalar(km.group(2))
                elif s and s != "-":
                    odd = True
                i += 1
            if mapping and items:
                odd = True
            meta[key] = mapping or items
    return meta, end + 2, odd


def _yaml_meta(text: str, path: str) -> dict[str, Any]:
    from memrepo import documents

    try:
        return documents.parse_document(text, path).meta
    except Exception:
        return {}


def _date(value: Any) -> str | None:
    if value is None:
        return None
    m = _DATE.search(str(value))
    return m.group(1) if m else None


def read_meta(text: str, lines: list[str], path: str) -> DocMeta:
    meta, body_line, odd = scan_frontmatter(lines)
    if odd:
        full = _yaml_meta(text, path)
        meta = {k: v for k, v in full.items() if k in WANTED}
    modified = next((d for k in DATE_KEYS if (d := _date(meta.get(k)))), None)
    if modified is None:
        m = _TRANSCRIPT_DATE.match(path) or None
        if m:
            modified = f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
        elif jm := _JOURNAL_DATE.search(path):
            modified = jm.group(1)
    tags = meta.get("tags") or []
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    category = category_of(path)
    status = ""
    if category == "archive":
        status = "archived"
    elif meta.get("superseded_by") or str(meta.get("status", "")).lower() == "superseded":
        status = "superseded"
    typ = meta.get("type")
    names = _names(meta, category, path)
    return DocMeta(
        path=path,
        category=category,
        type=str(typ) if typ is not None else None,
        modified=modified,
        tags=[str(t) for t in tags] if isinstance(tags, list) else [],
        status=status,
        body_line=body_line,
        names=names,
    )


def _names(meta: dict[str, Any], category: str | None, path: str) -> list[str]:
    """People this file names: ``participants`` (a transcript's speakers; a mapping or a
    list), ``people`` / ``person``, and for a person file its ``name``, ``aliases`` and
    ``title``, and its file name ("jane-doe" -> "Jane Doe")."""
    keys = NAME_KEYS + PERSON_NAME_KEYS if category == "person" else NAME_KEYS
    out: list[str] = []
    for key in keys:
        value = meta.get(key)
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            out += [str(v).strip() for v in value if isinstance(v, str | int) and str(v).strip()]
    if category == "person":
        stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
        if not stem.startswith("_"):
            out.append(" ".join(w.capitalize() for w in stem.replace("_", "-").split("-") if w))
    return list(dict.fromkeys(n for n in out if n and len(n) <= 80))
