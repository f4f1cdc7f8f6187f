"""Every path of a memory repo and what it means, and the line formats inside its files.

Standard library only: the hooks, the indexer and ``capture append`` import it at the top
(the YAML side of a file is :mod:`memrepo.documents`). Seed 000 §2 and §3.1, DESIGN.md.

    raw/conversations/YYYY/MM/DD/HHMM-<session>-<slug>.md   immutable transcripts
    knowledge/{identity,memory,journal,projects,people,procedures,reference}/
    topics/*.md   attachments/ (LFS)   archive/ (cold)   scratch/ (ignored)   memory.db

Knowledge lines carry markers the writers (extraction, flush) and the readers (the index,
search, compile) share::

    - 2026-03-05: Use PostgreSQL for the ledger database [src: 2026/03/05/1615-ses_w1d]
    - ~~2026-03-02: Use MySQL for the ledger~~ [src: …] (superseded 2026-03-05 by: …)
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

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


#: Well-known files and folders.
MEMORY_FILE = "knowledge/memory/MEMORY.md"
MEMORY_ARCHIVE = "archive/memory/MEMORY-archive.md"
IDENTITY_DIR = "knowledge/identity"
JOURNAL_DIR = "knowledge/journal"
PROJECTS_INDEX = "knowledge/projects/_active.md"
PEOPLE_INDEX = "knowledge/people/_index.md"
#: A project's line in PROJECTS_INDEX: ``- **slug** — what it is, where it stands``.
_ACTIVE_PROJECT = re.compile(r"^[-*][ \t]+\*\*(?P<slug>[A-Za-z0-9][A-Za-z0-9._-]{0,59})\*\*",
                             re.MULTILINE)
CONFIG_FILE = "memory-config.yaml"
DB_NAME = "memory.db"
#: Per-clone working state (gitignored): sessions, caches, locks, logs.
STATE_DIR = ".memrepo"
#: Per-session state and locks of the transcripts being captured (``<id>.json``).
SESSIONS_DIR = f"{STATE_DIR}/sessions"
#: Trees that are never indexed: scratch space and binary attachments.
EXCLUDED_ROOTS = ("scratch/", "attachments/", ".")
#: Append-only usage events (seed 001 signals), one JSON object a line.
SIGNALS_DIR = "raw/signals/"
#: Search and compile hits go to files of their own (``hits-YYYY-MM.jsonl``): they are
#: logged on every search and do not move ranking, so they must not make every commit
#: re-fold the signals into the index. They live in the per-clone state, not in
#: ``raw/signals/``: a read must never dirty the work tree (a tracked file appended on
#: every search was swept into unrelated commits and blocked merges and stash pops).
HITS_PREFIX = "hits-"
HITS_DIR = f"{STATE_DIR}/signals/"
#: A ``---`` line opens and closes the frontmatter.
FRONTMATTER_DELIM = re.compile(r"^-{3,}\s*$")


def journal_path(day: dt.date | str) -> str:
    """``knowledge/journal/YYYY-MM-DD.md``."""
    return f"{JOURNAL_DIR}/{day}.md"


#: Knowledge mounted from another memory repo (``memory shared``): ``shared/<name>/``
#: holds that repo's ``knowledge/`` and ``topics/``, read-only to memrepo's writers.
SHARED_ROOT = "shared/"
#: What ``memory shared`` mounts of the other repo's tree.
SHARED_TREES = ("knowledge", "topics")


def shared_mount(path: str) -> str | None:
    """The mount's name when ``path`` is inside ``shared/<name>/`` (None otherwise)."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "shared" and parts[1] else None


def category_of(path: str) -> str | None:
    """The category of a repo-relative path, or None for files outside the memory layout;
    a mounted team file (``shared/<name>/knowledge/…``) has the category it has there."""
    parts = path.split("/")
    if shared_mount(path) and parts[2] in SHARED_TREES:
        return category_of("/".join(parts[2:]))
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


#: Every category :func:`category_of` can give (what ``--category`` filters on).
CATEGORIES = frozenset({
    "conversation", "identity", "memory", "journal", "project", "person", "procedure",
    "reference", "knowledge", "topic", "archive", "raw",
})  # fmt: skip
_CATEGORY_ALIASES = {
    "transcript": "conversation", "transcripts": "conversation", "people": "person",
    "memories": "memory",
}  # fmt: skip


def category_names(values: list[str] | tuple[str, ...]) -> list[str]:
    """Categories as a person or a model names them (``projects``, ``People``, ``a,b``),
    checked: an unknown one is a ValueError that lists the known ones (a typo must not
    filter everything away in silence)."""
    out = []
    if any(not value.strip(" ,") for value in values):  # `-c ''` must not mean "all"
        raise ValueError(f"an empty category; use one of {', '.join(sorted(CATEGORIES))}")
    for part in (p for value in values for p in value.split(",")):
        name = part.strip().lower()
        if not name:
            continue
        name = _CATEGORY_ALIASES.get(name, name)
        if name not in CATEGORIES and name.endswith("s"):  # references, topics, ...
            name = name[:-1]
        if name not in CATEGORIES:
            raise ValueError(
                f"unknown category {part.strip()!r}; use one of {', '.join(sorted(CATEGORIES))}"
            )
        out.append(name)
    return out


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


def is_signal_file(path: str) -> bool:
    return path.startswith(SIGNALS_DIR) and path.endswith(".jsonl")


def is_ranking_signal_file(path: str) -> bool:
    """A signal file whose events move ranking (reinforce, demote): not a hits file."""
    return is_signal_file(path) and not path.rsplit("/", 1)[-1].startswith(HITS_PREFIX)


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

#: A journal's path and its date: live ``knowledge/journal/DAY.md``, archived
#: ``archive/journal/DAY.md``, and under archive/ only, compressed ``DAY.md.gz``
#: (``memory prune``'s gzip: named by its day too, never a live journal). Group
#: ``archived`` is set for an archived one.
JOURNAL_PATH = re.compile(
    r"^(?:(?P<archived>archive/)(?:knowledge/)?|(?:knowledge/)?)"
    r"journal/(?P<date>\d{4}-\d{2}-\d{2})\.md(?(archived)(?:\.gz)?)$"
)


def transcript_path(started: dt.datetime, session_id: str, slug: str) -> str:
    """``raw/conversations/YYYY/MM/DD/HHMM-<session_id>-<slug>.md`` in the session's own time."""
    return f"{TRANSCRIPT_ROOT}{started:%Y/%m/%d/%H%M}-{session_id}-{slug}.md"


#: The session id at the head of a transcript name's rest: an importer's or an agent's
#: ``<prefix>-<12 hex>`` (``cc-…``, ``codex-…``), else everything up to the first hyphen
#: (``ses_…``, a given id).
SESSION_HEAD = re.compile(r"^(?:[a-z]+-[0-9a-f]{12}(?![0-9a-z])|[^-]+)")


def source_ref(transcript_path: str) -> str:
    """``YYYY/MM/DD/HHMM-<session id>`` for a transcript path (the whole path when
    unusual): short, and naming its session whole, so two sessions of one minute differ."""
    m = TRANSCRIPT_PATH.match(transcript_path)
    if not m:
        return transcript_path
    head = SESSION_HEAD.match(m["rest"])
    session = head.group(0) if head else m["rest"]
    return f"{m['y']}/{m['m']}/{m['d']}/{m['hh']}{m['mm']}-{session}"


def is_transcript(path: str) -> bool:
    return path.startswith(TRANSCRIPT_ROOT) and path.endswith(".md")


#: The longest slug: names stay well under the 255 bytes a file name may have.
SLUG_CHARS = 60


def slugify(text: str, max_words: int = 6) -> str:
    """kebab-case slug from free text (for transcript and file names); at most
    :data:`SLUG_CHARS` long, so a 300-character word never makes a name the file system
    refuses."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words[:max_words])[:SLUG_CHARS].rstrip("-") or "session"


# ---------------------------------------------------------------------------
# Markers inside knowledge lines: source references and superseded entries
# ---------------------------------------------------------------------------

#: ``[src: A; B]``: the transcripts an entry came from.
SRC = re.compile(r"\s*\[src: (?P<src>[^\]]+)\]")
#: A superseded entry: kept, struck through, with what replaced it and when.
SUPERSEDED_LINE = re.compile(
    r"^\s*[-*] ~~(?P<old>.+?)~~(?P<src>\s*\[src: [^\]]+\])?"
    r" \(superseded (?P<date>\d{4}-\d{2}-\d{2}) by: (?P<new>.+)\)\s*$"
)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")


def superseded_share(lines: list[str]) -> float:
    """The share of the bullet lines in ``lines`` that are superseded entries (0 if none)."""
    bullets = superseded = 0
    for line in lines:
        if _BULLET.match(line):
            bullets += 1
            superseded += bool(SUPERSEDED_LINE.match(line))
    return superseded / bullets if bullets else 0.0


def project_contexts(index_text: str) -> list[str]:
    """The ``context.md`` of each project the active-projects index lists, in its order."""
    slugs = dict.fromkeys(m["slug"] for m in _ACTIVE_PROJECT.finditer(index_text))
    return [f"knowledge/projects/{slug}/context.md" for slug in slugs]


#: The resident server's socket in its serve dir (memrepo.resident), and the longest
#: AF_UNIX path used (the kernel's limit is ~108 bytes).
SOCKET_NAME = "embed.sock"
SUN_PATH_MAX = 100


def socket_path(sdir: Path) -> Path:
    """Where the resident server whose files are in ``sdir`` listens; a short per-user
    path when the natural one is too long for AF_UNIX (deep clones, test temp dirs). Here,
    stdlib only, so that ``memory mcp``'s front finds it without importing the index."""
    natural = sdir / SOCKET_NAME
    if len(os.fsencode(str(natural))) <= SUN_PATH_MAX:
        return natural
    import hashlib

    key = hashlib.sha256(os.fsencode(os.path.realpath(sdir))).hexdigest()[:20]
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp") / f"memrepo-{os.getuid()}"
    return base / f"{key}.sock"


def dot_git_dir(root: Path) -> Path | None:
    """The clone's git dir as ``root/.git`` says it (a folder, or a ``gitdir:`` file),
    without running git; None when it says nothing (the caller asks git)."""
    dot = Path(root) / ".git"
    if dot.is_dir():
        return dot.absolute()
    if dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text[7:].strip())
            return target if target.is_absolute() else (Path(root) / target).absolute()
    return None
