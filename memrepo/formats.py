"""The file formats of a memory repo, in one place (seed 000 §2, DESIGN.md).

Markdown files with YAML frontmatter; the category of a file comes from its path and the
frontmatter ``type`` must agree with it. Transcript paths, turn headers and journal names
are defined here too, so validators, capture and the indexer read them the same way.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import yamlsafe
from memrepo.errors import FormatError

# ---------------------------------------------------------------------------
# Layout and categories
# ---------------------------------------------------------------------------

#: Directories ``memory init`` lays down (seed 000 §3.1 and §2).
LAYOUT_DIRS = (
    "raw/conversations",
    "knowledge/identity",
    "knowledge/memory",
    "knowledge/journal",
    "knowledge/projects",
    "knowledge/people",
    "knowledge/procedures",
    "knowledge/reference",
    "topics",
    "attachments",
    "archive",
    "scratch",
)

#: Trees whose markdown files must carry frontmatter.
FRONTMATTER_ROOTS = ("raw/", "knowledge/", "topics/", "archive/")

_KNOWLEDGE_CATEGORIES = {
    "identity": "identity",
    "memory": "memory",
    "journal": "journal",
    "projects": "project",
    "people": "person",
    "procedures": "procedure",
    "reference": "reference",
}

#: type values a file of each category may declare (seed 000 §2.3 and DESIGN.md).
TYPES_BY_CATEGORY: dict[str, frozenset[str]] = {
    "conversation": frozenset({"conversation"}),
    "identity": frozenset({"identity"}),
    "memory": frozenset({"memory"}),
    "journal": frozenset({"journal"}),
    "project": frozenset({"project_context", "project_progress", "project_notes"}),
    "person": frozenset({"person"}),
    "procedure": frozenset({"procedure"}),
    "reference": frozenset({"reference"}),
    "topic": frozenset({"topic"}),
}
#: Index files have their own type.
SPECIAL_TYPES = {
    "knowledge/projects/_active.md": "project_index",
    "knowledge/people/_index.md": "people_index",
}
KNOWN_TYPES = frozenset().union(*TYPES_BY_CATEGORY.values(), SPECIAL_TYPES.values())

#: Fields each type must have, beyond ``type`` itself.
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "conversation": ("session_id", "started"),
    "identity": ("role",),
    "journal": ("date",),
    "person": ("name",),
    "topic": ("triggers",),
}
IDENTITY_ROLES = ("soul", "user", "rules", "tools")

#: Fields that hold an ISO date or datetime, and those that must be a full datetime.
DATE_FIELDS = ("updated", "created", "date")
DATETIME_FIELDS = ("started", "ended")
#: Fields that are counts (seed 000 §2.3 "number"; tokens, lines, turns are whole and >= 0).
COUNT_FIELDS = ("tokens_in", "tokens_out", "turns", "redactions", "line_count")
#: Fields that are lists of strings (seed 000 §2.3 "string[]").
STRING_LIST_FIELDS = ("tags",)


def category_of(path: str) -> str | None:
    """The category of a repo-relative path, or None for files outside the memory layout."""
    parts = path.split("/")
    if parts[0] == "raw":
        return "conversation" if len(parts) > 2 and parts[1] == "conversations" else "raw"
    if parts[0] == "knowledge" and len(parts) > 2:
        return _KNOWLEDGE_CATEGORIES.get(parts[1], "knowledge")
    if parts[0] == "knowledge":
        return "knowledge"
    if parts[0] == "topics":
        return "topic"
    if parts[0] == "archive":
        return "archive"
    return None


def expected_types(path: str) -> frozenset[str]:
    """The ``type`` values allowed for the file at ``path``.

    ``archive/`` mirrors the source path (``archive/journal/…`` holds journals), so an
    archived file keeps the type rules of where it came from.
    """
    if path in SPECIAL_TYPES:
        return frozenset({SPECIAL_TYPES[path]})
    if path.startswith("archive/"):
        rest = path[len("archive/") :]
        mirrored = (
            rest if rest.startswith(("knowledge/", "raw/", "topics/")) else f"knowledge/{rest}"
        )
        cat = category_of(mirrored)
        if mirrored in SPECIAL_TYPES:
            return frozenset({SPECIAL_TYPES[mirrored]})
        return TYPES_BY_CATEGORY.get(cat or "", KNOWN_TYPES)
    return TYPES_BY_CATEGORY.get(category_of(path) or "", KNOWN_TYPES)


def needs_frontmatter(path: str) -> bool:
    return path.endswith(".md") and path.startswith(FRONTMATTER_ROOTS)


# ---------------------------------------------------------------------------
# Documents: markdown + YAML frontmatter
# ---------------------------------------------------------------------------


@functools.cache
def _handler() -> Any:
    """python-frontmatter's YAML handler on the strict loader, keeping key order.

    Built on first use: parsing never needs python-frontmatter (the split is done here to
    keep real line numbers), and importing it costs ~30 ms on the commit path.
    """
    import frontmatter

    class StrictYAMLHandler(frontmatter.YAMLHandler):
        def load(self, fm: str, **kwargs: object) -> Any:
            return yamlsafe.load(fm)

        def export(self, metadata: dict[str, object], **kwargs: object) -> str:
            return yamlsafe.dump(metadata).strip()

    return StrictYAMLHandler()


_DELIM = re.compile(r"^-{3,}\s*$")


@dataclass
class Document:
    """A parsed memory file. ``body_line`` is the 1-based line the body starts on."""

    path: str
    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    body_line: int = 1
    has_frontmatter: bool = False


def decode(data: bytes, path: str) -> str:
    """UTF-8 text of a file, or a FormatError that says where decoding failed."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(f"not UTF-8 text (byte 0x{data[exc.start]:02x})", path, line) from None


def parse_document(text: str, path: str) -> Document:
    """Split and parse frontmatter; errors carry the file line."""
    lines = text.split("\n")
    if not lines or not _DELIM.match(lines[0]):
        return Document(path=path, body=text, body_line=1)
    for i in range(1, len(lines)):
        if _DELIM.match(lines[i]):
            end = i
            break
    else:
        raise FormatError("frontmatter is not closed: no '---' line after the opening one", path, 1)
    fm_text = "\n".join(lines[1:end])
    try:
        meta = yamlsafe.load(fm_text, line_offset=1)
    except yamlsafe.YAMLProblem as exc:
        # an error found at the end of the block is reported on its last line, not on '---'
        line = min(exc.line, end) if exc.line else 1
        raise FormatError(exc.message, path, line) from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise FormatError("frontmatter must be a YAML mapping (key: value lines)", path, 2)
    body = "\n".join(lines[end + 1 :])
    return Document(path=path, meta=meta, body=body, body_line=end + 2, has_frontmatter=True)


def read_document(file: str | Path, path: str | None = None) -> Document:
    """Read and parse a file; ``path`` is the repo-relative name used in messages."""
    name = path or str(file)
    try:
        data = Path(file).read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror}", name) from None
    return parse_document(decode(data, name), name)


def render_document(meta: dict[str, Any], body: str) -> str:
    """Serialise frontmatter and body, keeping key order (the inverse of parse_document)."""
    import frontmatter

    handler = _handler()
    post = frontmatter.Post(body.lstrip("\n"), handler=handler, **meta)
    text = frontmatter.dumps(post, handler=handler)
    return text if text.endswith("\n") else text + "\n"


def meta_line(doc_text: str, key: str) -> int | None:
    """The file line of a top-level frontmatter key (for messages)."""
    lines = doc_text.split("\n")
    if not lines or not _DELIM.match(lines[0]):
        return None
    for i in range(1, len(lines)):
        if _DELIM.match(lines[i]):
            break
        if re.match(rf"^{re.escape(key)}\s*:", lines[i]):
            return i + 1
    return None


# ---------------------------------------------------------------------------
# Dates
# ---------------------------------------------------------------------------


def parse_datetime(value: Any) -> dt.datetime | None:
    """A datetime from YAML's own timestamp or an ISO 8601 string, else None."""
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, str):
        s = value.strip()
        if s.endswith(("Z", "z")):
            s = s[:-1] + "+00:00"
        try:
            return dt.datetime.fromisoformat(s)
        except ValueError:
            return None
    return None


def parse_date(value: Any) -> dt.date | None:
    """A date (or the date of a datetime) from YAML or an ISO 8601 string, else None."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        d = parse_datetime(value)
        if d is not None:
            return d.date()
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            return None
    return None


# ---------------------------------------------------------------------------
# Transcripts (seed 000 §2.1) and journals
# ---------------------------------------------------------------------------

TRANSCRIPT_ROOT = "raw/conversations/"
TRANSCRIPT_PATH = re.compile(
    r"^raw/conversations/(?P<y>\d{4})/(?P<m>\d{2})/(?P<d>\d{2})/(?P<hh>\d{2})(?P<mm>\d{2})-(?P<rest>.+)\.md$"
)
SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*$", re.IGNORECASE)
#: ``## HH:MM — role``; only an agent turn may be a memory operation (seed 000 §2.1:
#: "Memory operations: ``## HH:MM — agent [memory]``").
TURN_HEADER = re.compile(
    r"^## (?P<hh>[01]\d|2[0-3]):(?P<mm>[0-5]\d) — (?P<role>user|agent|system)"
    r"(?P<memory>(?<=agent) \[memory\])?\s*$"
)
#: Anything that looks like it meant to be a turn header (checked against TURN_HEADER).
TURN_HEADER_LIKE = re.compile(r"^##\s+\d{1,2}:\d{2}\b")
#: Frontmatter a still-open transcript may gain or change as it closes.
TRANSCRIPT_MUTABLE_FIELDS = frozenset(
    {"ended", "tokens_in", "tokens_out", "knowledge_changes", "redactions", "turns", "updated"}
)

JOURNAL_PATH = re.compile(r"^(?:archive/)?(?:knowledge/)?journal/(?P<date>\d{4}-\d{2}-\d{2})\.md$")


def transcript_path(started: dt.datetime, session_id: str, slug: str) -> str:
    """``raw/conversations/YYYY/MM/DD/HHMM-<session_id>-<slug>.md`` in the session's own time."""
    return f"{TRANSCRIPT_ROOT}{started:%Y/%m/%d/%H%M}-{session_id}-{slug}.md"


def source_ref(transcript_path: str) -> str:
    """``YYYY/MM/DD/HHMM-<session>`` for a transcript path (the whole path when unusual)."""
    m = TRANSCRIPT_PATH.match(transcript_path)
    if not m:
        return transcript_path
    session = m["rest"].split("-", 1)[0]
    return f"{m['y']}/{m['m']}/{m['d']}/{m['hh']}{m['mm']}-{session}"


def is_transcript(path: str) -> bool:
    return path.startswith(TRANSCRIPT_ROOT) and path.endswith(".md")


def slugify(text: str, max_words: int = 6) -> str:
    """kebab-case slug from free text (for transcript and file names)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words[:max_words]) or "session"
