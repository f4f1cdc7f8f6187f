"""``memory import``: an agent's existing memory brought into the repo (issue #36).

What is read, and how safely, is :mod:`memrepo.lifecycle.migrate_sources`. Where each
kind goes (one rule each, so a person can predict it):

- **Instruction files** (CLAUDE.md, AGENTS.md, GEMINI.md; user-wide or a project's):
  ``knowledge/reference/agent-instructions/<agent>[-<project>].md``. Not identity: the
  agent goes on loading its own file, so a copy in identity would be in every prompt
  twice and take the budget the four identity files a person writes share. A person
  promotes the lasting rules into ``identity/AGENTS.md``.
- **A MEMORY.md** (Claude Code's auto-memory index, OpenClaw's core memory): a section
  ``## Imported: <label>`` of ``knowledge/memory/MEMORY.md``, loaded each session as the
  tool loaded it, while MEMORY.md stays under its warning line
  (``validation.memory_warn_lines``, ``memory_max_kb``); else, and from then on, a whole
  copy in ``knowledge/reference/imported/<label>-memory.md``.
- **A note**, by Claude Code's ``type``: ``project`` → ``knowledge/projects/<project>/``
  (project_notes); ``feedback`` (how the user wants work done) →
  ``knowledge/procedures/``; ``user`` (who the user is) → ``knowledge/reference/user/``
  (identity is a person's and always loaded, people/ is for others); ``reference`` or
  none → ``knowledge/reference/``. An untyped note named by a date (OpenClaw's
  ``memory/YYYY-MM-DD.md``) becomes that day's journal when the day has none. The file
  is named by the note's ``name`` (else its file name), kebab-case.

Provenance: every file gets ``source: migration`` (seed 001), ``imported_from`` (the
original path, ``~`` for home) and ``imported_hash`` (a fingerprint of what was
written); a MEMORY.md section carries the same three in a comment under its heading.

Idempotent by that provenance: a source maps to the file whose ``imported_from`` is its
path. The same fingerprint means nothing to do; a changed source rewrites its file,
unless the file was edited since it was written (its content no longer matches its
fingerprint): then it is left as it is and reported. A MEMORY.md section is touched
only when its source changed, and then only gains the lines it lacks (a line a person
removed stays out until the source changes). A source that disappeared removes nothing;
an import a person deleted comes back on the next run. A name a person's file holds is
never overwritten: the import takes ``<name>-2.md``, ``-3``…

Secrets are replaced by typed placeholders (as capture does), never written in clear:
``memory remember`` refuses instead, but there the person retypes one sentence, whereas
a refusal here would leave a whole CLAUDE.md out over one key. Everything is read and
planned before anything is written; the files are written under the knowledge writers'
lock and committed in one ``memory:`` commit, undone if that commit is refused.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import posixpath
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memrepo import clock, worktree
from memrepo.atomic import atomic_write
from memrepo.commit.write import commit_paths
from memrepo.config import load_config
from memrepo.documents import (
    Document,
    count_lines,
    date_range_problem,
    parse_document,
    render_document,
    unclosed_comment,
    with_line_count,
)
from memrepo.errors import FormatError, GitError, MemrepoError
from memrepo.git import git, retry_locked
from memrepo.layout import MEMORY_FILE, slugify
from memrepo.lifecycle.journal import LOCK_FILE, LOCK_WAIT
from memrepo.lifecycle.migrate_sources import (
    AGENTS,
    Source,
    find_sources,
    note_type,
    path_sources,
    read_source,
    split_note,
)
from memrepo.locks import LockBusy, file_lock
from memrepo.scaffold import render_template
from memrepo.secrets import find_secrets, redact

FROM_CHOICES = (*AGENTS, "path")
INSTRUCTIONS_DIR = "knowledge/reference/agent-instructions"
IMPORTED_DIR = "knowledge/reference/imported"
#: Claude Code's note types and the folder each goes to ("" for the project's own).
TYPE_DIRS = {"project": "", "feedback": "knowledge/procedures", "user": "knowledge/reference/user",
             "reference": "knowledge/reference"}
TYPE_OF_DIR = {"knowledge/procedures": "procedure"}
#: Room left below ``validation.max_file_kb`` for the frontmatter the import adds.
FRONTMATTER_ROOM = 2048
#: How far ``<name>-N.md`` goes before a name is given up on.
MAX_SUFFIX = 50
#: What the fingerprint covers: the frontmatter the import writes and the body.
FINGERPRINT_KEYS = ("type", "date", "project", "title", "description")
#: The provenance comment under an imported MEMORY.md section's heading.
MARKER = re.compile(r"^<!-- source: migration; imported_from: (?P<src>.+); "
                    r"imported_hash: (?P<hash>[0-9a-f]+) -->\s*$")
_HEADING = re.compile(r"^(#{1,6})[ \t]")
_MD_LINK = re.compile(r"(\]\(\s*<?)(?:\./)?([^()\s<>/]{1,200}\.md)((?:#[^()\s]*)?>?\s*\))")
_DATE_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass
class Item:
    """What the import did (or, with ``--dry-run``, would do) with one source.
    ``action``: added, updated, unchanged or skipped (``why`` says why)."""

    source: str
    agent: str
    path: str
    action: str
    why: str = ""
    redacted: int = 0
    section: str | None = None


@dataclass
class Result:
    items: list[Item] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    commit: str | None = None
    dry_run: bool = False

    @property
    def new(self) -> list[Item]:
        return [i for i in self.items if i.action in ("added", "updated")]

    def as_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "commit": self.commit, "written": self.written,
                "items": [asdict(i) for i in self.items]}


@dataclass
class _Plan:
    root: Path
    cfg: Any
    today: dt.date
    items: list[Item] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    #: (source folder, file name) -> the repo path it goes to: links between notes follow
    links: dict[tuple[str, str], str] = field(default_factory=dict)

    def repo_text(self, rel: str) -> str | None:
        """A repo file as this plan leaves it (planned text, else the work tree's; a link
        there is an error naming it, never replaced)."""
        return self.texts[rel] if rel in self.texts else worktree.read_text(self.root, rel)


def gather(agents: Sequence[str], paths: Sequence[Path], home: Path | None = None,
           project: Path | None = None) -> list[Source]:
    """The sources ``memory import --from AGENT… PATH…`` names."""
    if not agents and not paths:
        raise MemrepoError("nothing to import: name an agent (--from claude-code, codex or "
                           "gemini) or the files and folders to import")
    if "path" in agents and not paths:
        raise MemrepoError("--from path needs the files or folders to import (PATH…)")
    sources = [s for a in dict.fromkeys(agents) if a != "path"
               for s in find_sources(a, home, project)]
    return sources + path_sources(list(paths), home)


def pending(root: Path, agent: str, home: Path | None = None,
            project: Path | None = None) -> list[Item]:
    """What ``memory import --from AGENT`` would add or update now (reads the sources;
    a source that cannot be read raises, as the import would)."""
    result = import_memory(root, find_sources(agent, home, project), dry_run=True)
    return result.new


def import_memory(root: Path, sources: Sequence[Source], *, dry_run: bool = False,
                  commit: bool = True, today: dt.date | None = None) -> Result:
    """Read every source, plan, then (unless ``dry_run``) write and commit once."""
    cfg = load_config(root)
    limit = max(int(float(cfg["validation"]["max_file_kb"]) * 1024) - FRONTMATTER_ROOM, 1)
    loaded = [(src, read_source(src, limit)) for src in sources]  # bad input: nothing written
    plan = _Plan(root, cfg, today or clock.today())
    if dry_run:
        _fill(plan, loaded)
        return Result(plan.items, sorted(plan.texts), None, dry_run=True)
    before: dict[str, bytes | None] = {}
    try:
        with file_lock(root / LOCK_FILE, wait=LOCK_WAIT, poll=0.005), worktree.writing(root):
            _fill(plan, loaded)
            for rel, text in plan.texts.items():
                before[rel] = _bytes_of(root, rel)
                atomic_write(root / rel, text, root=root)
    except LockBusy:
        raise MemrepoError(f"another writer has held {LOCK_FILE} for {LOCK_WAIT:g} s; "
                           "nothing was written, try again") from None
    except BaseException:
        _undo(root, before)
        raise
    result = Result(plan.items, sorted(before))
    if commit and before:
        try:
            result.commit = commit_paths(root, result.written, _message(result))
        except MemrepoError as exc:
            _undo(root, before, unstage=True)
            raise MemrepoError(f"the commit was refused, so nothing was imported: {exc}"
                               ) from None
    return result


def _bytes_of(root: Path, rel: str) -> bytes | None:
    try:
        return worktree.read_file(root, rel)
    except FileNotFoundError:
        return None


def _undo(root: Path, before: dict[str, bytes | None], unstage: bool = False) -> None:
    """Put every written file back as it was (a new one removed)."""
    if unstage and before:
        with contextlib.suppress(GitError):
            retry_locked(lambda: git(["reset", "-q", "--", *before], root))
    for rel, data in before.items():
        if data is None:
            (root / rel).unlink(missing_ok=True)
        else:
            atomic_write(root / rel, data, root=root)


def _message(result: Result) -> str:
    new = result.new
    agents = sorted({i.agent for i in new})
    lines = [f"- {i.action} {i.path}{' (' + i.section + ')' if i.section else ''} "
             f"<- {i.source}" for i in new[:40]]
    if len(new) > 40:
        lines.append(f"- … and {len(new) - 40} more")
    n = len(result.written)
    return (f"memory: import existing memory into {n} file{'s' if n != 1 else ''} "
            f"({', '.join(agents)})\n\n" + "\n".join(lines) + "\n")


# --- planning -----------------------------------------------------------------------


def _fill(plan: _Plan, loaded: list[tuple[Source, str]]) -> None:
    """Decide every source's file and text, notes before the MEMORY.md that links them."""
    seen: dict[str, str] = {}
    files: list[tuple[Source, dict[str, Any], str, str]] = []
    indexes: list[tuple[Source, str]] = []
    for src, text in loaded:
        real = os.path.realpath(src.path)
        if real in seen:
            _skip(plan, src, f"the same file as {seen[real]}")
            continue
        seen[real] = src.shown
        if src.kind == "index":
            indexes.append((src, text))
            continue
        meta, body = split_note(text, src.shown)
        claimed = _claim(plan, src, _places(src, meta, body))
        if claimed is None:
            _skip(plan, src, f"no free name after {MAX_SUFFIX} tries")
            continue
        plan.links[(str(src.path.parent), src.path.name)] = claimed[0]
        files.append((src, claimed[1], claimed[0], body))
    for src, meta, rel, body in files:
        _whole_file(plan, src, meta, rel, body)
    for src, text in indexes:
        _index(plan, src, text)


def _skip(plan: _Plan, src: Source, why: str) -> None:
    plan.items.append(Item(src.shown, src.agent, "", "skipped", why))


def _places(src: Source, meta: dict[str, Any], body: str) -> list[tuple[str, dict[str, Any]]]:
    """Where ``src`` may go, in order: (path without ``.md``, frontmatter to write)."""
    stem = src.path.name.removesuffix(".md")
    if src.kind == "instructions":
        scope = f"project {src.project}" if src.project else "user"
        return [(f"{INSTRUCTIONS_DIR}/{src.label}",
                 {"type": "reference", "title": f"{src.path.name} ({src.agent}, {scope})"})]
    name = meta.get("name") if isinstance(meta.get("name"), str) and meta["name"].strip() else None
    title = (name or _title(meta, body) or stem).strip()
    slug = slugify(redact(name or stem)[0], max_words=8)
    head: dict[str, Any] = {"title": title}
    if isinstance(meta.get("description"), str) and meta["description"].strip():
        head["description"] = meta["description"].strip()
    kind = note_type(meta)
    reference = (f"knowledge/reference/{slug}", {"type": "reference", **head})
    if kind == "project" and src.project:
        return [(f"knowledge/projects/{src.project}/{slug}",
                 {"type": "project_notes", "project": src.project, **head})]
    if TYPE_DIRS.get(kind or ""):
        folder = TYPE_DIRS[kind]
        return [(f"{folder}/{slug}", {"type": TYPE_OF_DIR.get(folder, "reference"), **head})]
    day = _date_name(stem)
    if kind is None and day is not None:
        return [(f"knowledge/journal/{day}", {"type": "journal", "date": day}), reference]
    return [reference]


def _title(meta: dict[str, Any], body: str) -> str | None:
    """The note's own ``title``, else its first ``# heading``."""
    title = meta.get("title")
    if isinstance(title, str) and title.strip():
        return title
    m = re.search(r"^# +(\S.*)$", body, re.MULTILINE)
    return m[1] if m else None


def _date_name(stem: str) -> dt.date | None:
    if not _DATE_NAME.match(stem):
        return None
    try:
        day = dt.date.fromisoformat(stem)
    except ValueError:
        return None
    return day if dt.date(1900, 1, 1) <= day <= dt.date(2999, 12, 31) else None


def _claim(plan: _Plan, src: Source, places: list[tuple[str, dict[str, Any]]]
           ) -> tuple[str, dict[str, Any]] | None:
    """This source's import among ``places``, else the first free path there; a journal
    takes its own name only, anything else ``-2``, ``-3``… (a lower name a person freed
    since does not move an import)."""
    taken = set(plan.links.values()) | set(plan.texts)
    origin, free = _origin(plan, src), None
    for base, meta in places:
        for rel in _names(base, meta["type"] == "journal"):
            if rel in taken:
                continue
            owner = _owner(plan.root, rel)
            if owner == origin:
                return rel, meta
            if owner is None and free is None:
                free = rel, meta
    return free


def _names(base: str, only: bool = False) -> list[str]:
    """``base.md``, then (unless ``only``) ``base-2.md`` … ``base-MAX_SUFFIX.md``."""
    return [f"{base}.md", *([] if only else (f"{base}-{n}.md" for n in range(2, MAX_SUFFIX + 1)))]


def _owner(root: Path, rel: str) -> str | None:
    """None for a free path; else the ``imported_from`` of the import there, or "" for a
    file that is not an import (a person's, a link, unreadable): never to be written."""
    try:
        data = worktree.read_file(root, rel)
    except FileNotFoundError:
        return None if not os.path.lexists(root / rel) else ""
    except OSError:
        return ""
    try:
        meta = parse_document(data.decode("utf-8"), rel).meta
    except (UnicodeDecodeError, FormatError):
        return ""
    src = meta.get("imported_from")
    return src if meta.get("source") == "migration" and isinstance(src, str) else ""


def fingerprint(meta: dict[str, Any], body: str) -> str:
    """What an import wrote, in 16 hex digits: the same source gives the same one, and a
    file edited since its import no longer matches its own."""
    values = [None if meta.get(k) is None else str(meta.get(k)) for k in FINGERPRINT_KEYS]
    data = json.dumps([*values, body.strip()], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def _clean(plan: _Plan, text: str, shown: str) -> tuple[str, int]:
    """``text`` with its secrets replaced by typed placeholders, and how many."""
    allow = plan.cfg["validation"]["secrets_allowlist"]
    clean, count = redact(text, allow)
    if find_secrets(clean, allow):  # the same rules: never, but never written either
        raise MemrepoError("a secret would remain after redaction: nothing imported", shown)
    return clean, count


def _origin(plan: _Plan, src: Source) -> str:
    """The source's path as recorded (``imported_from``): what finds its import again."""
    return _clean(plan, src.shown, src.shown)[0]


def _relink(plan: _Plan, src: Source, text: str, rel: str) -> str:
    """Links to notes imported beside ``src`` point at where those notes went."""
    folder = str(src.path.parent)

    def swap(m: re.Match[str]) -> str:
        target = plan.links.get((folder, m[2]))
        if target is None:
            return m[0]
        return m[1] + posixpath.relpath(target, posixpath.dirname(rel)) + m[3]

    return _MD_LINK.sub(swap, text)


def _updated(src: Source) -> dt.date:
    """When the source last changed (its modification day; today for a clock gone wrong,
    which the validators would refuse)."""
    try:
        day = dt.date.fromtimestamp(os.stat(src.path).st_mtime)
    except (OSError, ValueError, OverflowError):
        return clock.today()
    return clock.today() if date_range_problem(day) else day


def _whole_file(plan: _Plan, src: Source, meta: dict[str, Any], rel: str, body: str,
                why: str = "") -> None:
    """``src`` as a file of its own at ``rel``: added, updated, unchanged or skipped."""
    redacted = 0
    meta = dict(meta)
    for key in ("title", "description"):
        if isinstance(meta.get(key), str):
            meta[key], n = _clean(plan, meta[key], src.shown)
            redacted += n
    body, n = _clean(plan, _relink(plan, src, body.strip("\n"), rel), src.shown)
    redacted += n
    body = "\n" + body + "\n"
    item = Item(src.shown, src.agent, rel, "added", why, redacted)
    plan.items.append(item)
    new_hash = fingerprint(meta, body)
    existing = plan.repo_text(rel)
    if existing is not None:
        try:
            doc: Document | None = parse_document(existing, rel)
        except FormatError:
            doc = None
        old_hash = doc.meta.get("imported_hash") if doc else None
        if old_hash == new_hash:
            item.action, item.redacted = "unchanged", 0
            return
        if doc is None or fingerprint(doc.meta, doc.body) != old_hash:
            item.action, item.redacted, item.why = "skipped", 0, (
                "edited since it was imported, so left as it is; the source changed: "
                "merge the change by hand")
            return
        item.action = "updated"
    full = {**meta, "source": "migration", "imported_from": _origin(plan, src),
            "imported_hash": new_hash, "updated": _updated(src)}
    plan.texts[rel] = render_document(full, body)


# --- a MEMORY.md --------------------------------------------------------------------


def _index(plan: _Plan, src: Source, text: str) -> None:
    """A MEMORY.md: its section of core memory while that fits, else a reference copy
    (and once there, always there)."""
    body = split_note(text, src.shown)[1]
    copy_base = f"{IMPORTED_DIR}/{src.label}-memory"
    copy_meta = {"type": "reference", "title": f"{src.path.name} ({src.label})"}
    for rel in _names(copy_base):
        if _owner(plan.root, rel) == _origin(plan, src):
            _whole_file(plan, src, copy_meta, rel, body)
            return
    why = _into_core(plan, src, body)
    if why is None:
        return
    claimed = _claim(plan, src, [(copy_base, copy_meta)])
    if claimed is None:
        _skip(plan, src, f"no free name after {MAX_SUFFIX} tries")
        return
    _whole_file(plan, src, copy_meta, claimed[0], body, why)


def _core_lines(plan: _Plan, src: Source, body: str) -> list[str]:
    """The source's lines as they sit in a section of MEMORY.md: a leading ``# title``
    dropped, headings below the section's ``##``, links to imported notes followed."""
    lines = _relink(plan, src, body.strip("\n"), MEMORY_FILE).split("\n")
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    out = []
    for line in lines:
        m = _HEADING.match(line)
        if m:
            line = "#" * min(max(len(m[1]) + 1, 3), 6) + line[len(m[1]):]
        out.append(line.rstrip())
    while out and not out[0]:
        out.pop(0)
    return out


def _into_core(plan: _Plan, src: Source, body: str) -> str | None:
    """Add ``src``'s section (or the lines its section lacks) to MEMORY.md; None when
    done, else why it does not fit."""
    clean, redacted = _clean(plan, body, src.shown)
    lines = _core_lines(plan, src, clean)
    new_hash = fingerprint({}, "\n".join(lines))
    shown = _origin(plan, src)
    current = plan.repo_text(MEMORY_FILE)
    if current is None:
        current = render_template("MEMORY.md", plan.today)
    rows = current.split("\n")
    at = next((i for i, r in enumerate(rows) if (m := MARKER.match(r)) and m["src"] == shown),
              None)
    marker = f"<!-- source: migration; imported_from: {shown}; imported_hash: {new_hash} -->"
    heading = f"## Imported: {src.label}"
    item = Item(src.shown, src.agent, MEMORY_FILE, "added", "", redacted, section=heading[3:])
    if at is None:
        while rows and not rows[-1].strip():
            rows.pop()
        rows += ["", heading, "", marker, *lines, ""]
    else:
        end = next((i for i in range(at + 1, len(rows)) if rows[i].startswith("## ")), len(rows))
        if MARKER.match(rows[at])["hash"] == new_hash:  # type: ignore[index]
            item.action, item.redacted = "unchanged", 0
            plan.items.append(item)
            return None
        have = {r.strip() for r in rows[at + 1 : end] if r.strip()}
        add = [r for r in dict.fromkeys(lines) if r.strip() and r.strip() not in have]
        while end > at + 1 and not rows[end - 1].strip():
            end -= 1
        rows[at] = marker
        rows[end:end] = add
        item.action = "updated"
        if not add:
            item.why = "no line to add (a line the source dropped stays)"
    text = with_line_count("\n".join(rows))
    why = _over_cap(plan, text)
    if why is not None:
        return why
    plan.texts[MEMORY_FILE] = text
    plan.items.append(item)
    return None


def _over_cap(plan: _Plan, text: str) -> str | None:
    """Why ``text`` cannot be MEMORY.md without a warning at commit, or None."""
    v = plan.cfg["validation"]
    if count_lines(text) > int(v["memory_warn_lines"]):
        return (f"core memory would pass its {int(v['memory_warn_lines'])}-line warning "
                "line (validation.memory_warn_lines): imported as reference instead")
    if len(text.encode("utf-8")) > float(v["memory_max_kb"]) * 1024:
        return (f"core memory would pass {float(v['memory_max_kb']):g} KB "
                "(validation.memory_max_kb): imported as reference instead")
    if unclosed_comment(text.split("\n")) is not None:
        return "it opens an HTML comment it never closes: imported as reference instead"
    return None
