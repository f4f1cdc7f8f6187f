"""Rule scopes: identity and rules from four places, merged into P0 (docs/scopes.md).

From the widest to the narrowest (seed 004 "hierarchical scope", Claude Code's
user → project → local):

- ``global``: the user's files for every memory repo on this machine,
  ``$XDG_CONFIG_HOME/memrepo/identity/*.md`` (default ``~/.config/memrepo/identity/``);
- ``repo``: the memory repo's ``knowledge/identity/*.md``, committed, shared by clones;
- ``project <slug>``: ``knowledge/projects/<slug>/rules.md`` of the project the agent works
  in (the folder of the hook payload's ``cwd``, or one above it, named like the project),
  merged into ``AGENTS.md``, the rules file;
- ``local``: ``knowledge/identity/<NAME>.local.md``, this clone's alone: the scaffold's
  ``.gitignore`` keeps ``*.local.md`` out of every commit.

Files of the same name merge, the narrower winning per rule: a section (a heading of level
2 or more) replaces the same-named section of every wider scope, a keyed bullet
(``- key: value``) the same key anywhere in a wider file, and a bullet a narrower scope
says word for word is said once. Everything else adds up. Each scope's part of a file is a
section of its own, its marker naming its file and scope (``… USER.md:1-4 (global) -->``),
the wider first; the narrower parts are placed first, so a cut takes the widest lines.

With no global, project or local file, :func:`find` returns the repo's files alone and
the compiler places them as it always has: the cost is one failed ``scandir`` of the global
folder and, with a ``cwd``, one listing of ``knowledge/projects/``.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from memrepo import git
from memrepo.context.sections import SEP, Count, Lines, Section, blocks, body_lines, fit
from memrepo.documents import Document, read_document, read_repo_document
from memrepo.errors import FormatError, GitError
from memrepo.health import Check
from memrepo.layout import IDENTITY_DIR, slugify
from memrepo.repo import MemoryRepo

#: The identity files in briefing order; any other name follows, sorted.
IDENTITY_ORDER = ("SOUL.md", "USER.md", "AGENTS.md", "TOOLS.md")
#: A clone's own override of ``knowledge/identity/NAME.md``: ``NAME.local.md``.
LOCAL_SUFFIX = ".local.md"
#: A project's rules (``knowledge/projects/<slug>/rules.md``) merge into this file.
RULES_FILE = "AGENTS.md"
PROJECT_RULES = "rules.md"
PROJECTS_DIR = "knowledge/projects"
#: Scopes, widest first (a Part's rank is its index).
GLOBAL, REPO, PROJECT, LOCAL = range(4)
KIND = "identity"

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^[-*+][ \t]+\S")
#: ``- key: value`` (also ``- **key:** value``): a label of up to 40 characters that
#: starts with a letter, then a colon and a space (a URL's ``http://`` is no key).
_KEYED = re.compile(
    r"^[-*+][ \t]+(?:\*\*|__)?(?P<key>[^\W\d_][\w ./'()-]{0,39}?)[ \t]*(?:\*\*|__)?:"
    r"(?:\*\*|__)?(?:[ \t]|$)"
)


@dataclass
class Part:
    """One scope's file, as it merges into the identity file ``name``."""

    name: str
    rank: int
    label: str
    path: str  # as the marker shows it: a repo path, or ``~/…`` for a global file
    lines: Lines
    last: int
    overridden: list[int] = field(default_factory=list)  # wider lines a narrower replaced


@dataclass
class Found:
    """The repo's identity files (``repo``: paths in briefing order) and, when another
    scope holds a file, every scope's parts (``parts``, each file's widest first)."""

    repo: list[str]
    parts: list[Part] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: another scope than the repo's holds a file: :func:`place` places the parts
    scoped: bool = False


class Placer(Protocol):
    """What :func:`place` uses of the compiler (memrepo.context.compiler._Compiler)."""

    left: float
    sep: float
    chars_left: int
    sections: list[Section]
    notes: list[str]
    count: Count
    cost: Count

    def _add(self, s: Section, pad: float = 0.0) -> None: ...
    def _omit(self, slot: int, kind: str, path: str, reason: str) -> None: ...


# -- where the scopes are ------------------------------------------------------------------


def global_dir() -> Path | None:
    """``$XDG_CONFIG_HOME/memrepo/identity`` (an absolute XDG_CONFIG_HOME), else
    ``~/.config/memrepo/identity``; None without a home."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        try:
            base = str(Path.home() / ".config")
        except RuntimeError:
            return None
    return Path(base) / "memrepo" / "identity"


def shown(path: Path) -> str:
    """``path`` as a marker names it: ``~/…`` under the home folder."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return path.as_posix()


def ordered(names: list[str]) -> list[str]:
    return [n for n in IDENTITY_ORDER if n in names] + sorted(
        n for n in names if n not in IDENTITY_ORDER)


def _global_files() -> list[Path]:
    """The global folder's ``*.md`` files (links followed: the user's own folder, often a
    dotfiles checkout); [] without one, at the cost of one failed ``scandir``."""
    where = global_dir()
    if where is None:
        return []
    try:
        with os.scandir(where) as it:
            return sorted(Path(e.path) for e in it
                          if e.name.endswith(".md") and not e.name.startswith(".")
                          and e.is_file())
    except OSError:
        return []


def project_of(root: Path, cwd: str | Path | None) -> str | None:
    """The project the agent works in: the nearest folder of ``cwd`` (itself, then the
    ones above it, below the home folder) whose name, as a slug, names a folder of
    ``knowledge/projects/``; None outside any (or inside the memory repo itself)."""
    if not cwd:
        return None
    here = Path(os.path.abspath(os.fspath(cwd)))
    if here == root or root in here.parents:
        return None
    try:
        with os.scandir(root / PROJECTS_DIR) as it:
            known = {e.name.lower(): e.name for e in it
                     if not e.name.startswith(("_", ".")) and e.is_dir(follow_symlinks=False)}
    except OSError:
        return None
    if not known:
        return None
    try:
        home: Path | None = Path.home()
    except RuntimeError:
        home = None
    for d in (here, *here.parents):
        if d == home or not d.name:
            break
        for name in (d.name.lower(), slugify(d.name)):
            if name in known:
                return known[name]
    return None


def find(root: Path, cwd: str | Path | None = None) -> Found:
    """The repo's identity files, and every scope's parts when a global, project or local
    file exists (:class:`Found`)."""
    base = root / IDENTITY_DIR
    names = sorted(p.name for p in base.glob("*.md")) if base.is_dir() else []
    local = [n for n in names if n.endswith(LOCAL_SUFFIX)]
    repo = ordered([n for n in names if n not in local])
    found = Found([f"{IDENTITY_DIR}/{n}" for n in repo])
    outside = _global_files()
    slug = project_of(root, cwd)
    rules = f"{PROJECTS_DIR}/{slug}/{PROJECT_RULES}" if slug else None
    if rules is not None and not (root / rules).is_file():
        rules = None
    if not (local or outside or rules):
        return found
    found.scoped = True
    wanted: list[tuple[str, int, str, str, Path | None]] = [
        (p.name, GLOBAL, "global", shown(p), p) for p in outside]
    wanted += [(n, REPO, "repo", f"{IDENTITY_DIR}/{n}", None) for n in repo]
    if rules is not None:
        wanted.append((RULES_FILE, PROJECT, f"project {slug}", rules, None))
    wanted += [(n[: -len(LOCAL_SUFFIX)] + ".md", LOCAL, "local", f"{IDENTITY_DIR}/{n}", None)
               for n in local]
    for name, rank, label, path, full in wanted:
        try:
            doc = _read(root, path, full)
        except FormatError as exc:
            found.notes.append(str(exc))
            continue
        lines = body_lines(doc.body, doc.body_line, path)
        found.parts.append(Part(name, rank, label, path, lines,
                                doc.body_line + doc.body.count("\n")))
    order = {n: i for i, n in enumerate(ordered(list({p.name for p in found.parts})))}
    found.parts.sort(key=lambda p: (order[p.name], p.rank))
    merge(found.parts)
    return found


def _read(root: Path, path: str, full: Path | None) -> Document:
    """A repo file never through a link; a global one through the user's own links, a
    regular file still (never a FIFO)."""
    if full is None:
        return read_repo_document(root, path)
    return read_document(os.path.realpath(full), path)


# -- merging: the narrower scope wins ------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def section_key(line: str) -> str | None:
    """A heading of level 2 or more, as the key a narrower scope's same heading replaces
    (case and spacing aside, a final colon aside); None for a title (``# User``)."""
    m = _HEADING.match(line)
    if not m or len(m[1]) < 2:
        return None
    return _norm(m[2]).rstrip(":").strip() or None


def bullet_key(line: str) -> str | None:
    """The key of a ``- key: value`` bullet at the start of a line, or None."""
    m = _KEYED.match(line)
    return _norm(m["key"]) if m else None


@dataclass
class _Said:
    """What a set of narrower parts say: their section keys, bullet keys and bullets."""

    sections: set[str] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)
    bullets: set[str] = field(default_factory=set)

    def add(self, lines: Lines) -> None:
        for _, text in lines.numbered:
            if (k := section_key(text)) is not None:
                self.sections.add(k)
            elif (k := bullet_key(text)) is not None:
                self.keys.add(k)
            elif _BULLET.match(text):
                self.bullets.add(_norm(text))


def merge(parts: list[Part]) -> None:
    """Take out of each part what a narrower part of the same file says in its place
    (``parts`` sorted by file, widest first); the line numbers go to ``overridden``."""
    by_name: dict[str, list[Part]] = {}
    for p in parts:
        by_name.setdefault(p.name, []).append(p)
    for group in by_name.values():
        said = _Said()
        for p in reversed(group):  # narrowest first: each is cut by the ones after it
            kept, gone = _without(p.lines, said)
            said.add(p.lines)
            p.lines, p.overridden = kept, gone


def _without(lines: Lines, said: _Said) -> tuple[Lines, list[int]]:
    """``lines`` less the sections, keyed bullets (with their indented continuation) and
    bullets ``said`` replaces, and less a heading left with nothing under it."""
    kept: list[tuple[int, str]] = []
    gone: list[int] = []
    for block in blocks(lines):
        head = section_key(block[0][1])
        if head is not None and head in said.sections:
            gone += [n for n, t in block if t.strip()]
            continue
        rows: list[tuple[int, str]] = []
        dropping = False
        for n, text in block:
            key = bullet_key(text)
            if key is not None:
                dropping = key in said.keys
            elif not (dropping and text[:1] in (" ", "\t") and text.strip()):
                dropping = _BULLET.match(text) is not None and _norm(text) in said.bullets
            if dropping:
                gone.append(n)
            else:
                rows.append((n, text))
        if len(rows) < len(block) and _HEADING.match(block[0][1]) and not any(
                t.strip() for _, t in rows[1:]):
            gone.append(block[0][0])  # its every line was replaced: its heading goes too
            continue
        kept += rows
    return Lines(lines.path, _tidy(kept)), gone


def _tidy(rows: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """No blank line first, last or twice in a row (what taking lines out leaves)."""
    out: list[tuple[int, str]] = []
    for n, text in rows:
        if not text.strip() and (not out or not out[-1][1].strip()):
            continue
        out.append((n, text))
    while out and not out[-1][1].strip():
        out.pop()
    return out


# -- placing into P0 -----------------------------------------------------------------------


def place(comp: Placer, found: Found, cap: float) -> None:
    """Place ``found.parts`` into P0 within ``cap``: shared fairly between the files (small
    ones whole, as the compiler shares the repo's), and within a file the narrowest part
    first, so that a cut leaves out the widest lines; shown widest first."""
    comp.notes += found.notes
    files: dict[str, list[Part]] = {}
    for p in found.parts:
        if p.overridden:
            comp._omit(0, KIND, p.path, f"{_spans(p.overridden)} overridden by a narrower "
                                        f"scope's {p.name}")
        if p.lines.empty:
            if not p.overridden:
                comp._omit(0, KIND, p.path, "empty")
            continue
        files.setdefault(p.name, []).append(p)
    sizes = sorted((sum(_size(comp, p) for p in ps), i, name)
                   for i, (name, ps) in enumerate(files.items()))
    pool, start_left = min(cap, comp.left), comp.left
    placed: list[tuple[tuple[int, int], Section]] = []
    for k, (_, i, name) in enumerate(sizes):
        share = (pool - (start_left - comp.left)) // (len(sizes) - k)
        before = comp.left
        for p in sorted(files[name], key=lambda p: -p.rank):
            s = _place(comp, p, share - (before - comp.left))
            if s is not None:
                placed.append(((i, p.rank), comp.sections.pop()))
    comp.sections += [s for _, s in sorted(placed, key=lambda x: x[0])]


def _size(comp: Placer, p: Part) -> float:
    return (comp.cost("\n".join(t for _, t in p.lines.numbered))
            + _marker_cost(comp, p) + comp.sep)


def _marker_cost(comp: Placer, p: Part) -> float:
    """An upper bound on the part's marker (sections.marker_cost, with its scope)."""
    probe = Section(0, KIND, p.path, p.last, p.last, "", "", cut=True, origin=p.label)
    return comp.cost(probe.marker() + "\n") + 1


def _place(comp: Placer, p: Part, cap: float) -> Section | None:
    """The part cut to ``cap`` at section boundaries (sections.fit), added; or None, and
    the reason among the omitted."""
    allowance = min(cap, comp.left) - comp.sep
    chars = comp.chars_left - len(SEP) - len(p.path) - 64
    got = fit(p.lines, allowance - _marker_cost(comp, p), comp.cost, max_chars=chars)
    if got is None:
        left = max(int(allowance), 0)
        comp._omit(0, KIND, p.path, f"does not fit ({left} tokens left for it)")
        return None
    rows, cut = got
    s = Section(0, KIND, p.path, rows[0][0], rows[-1][0],
                "\n".join(t for _, t in rows).strip("\n"),
                f"identity ({p.label} scope): always loaded", cut=cut, origin=p.label)
    s.tokens = math.ceil(comp.count(s.render()))
    if (comp.cost(s.render()) + comp.sep > min(cap, comp.left)
            or len(s.render()) + len(SEP) > comp.chars_left):
        comp._omit(0, KIND, p.path, "does not fit with its marker")
        return None
    comp._add(s)
    if cut:
        s.why += f"; cut to {s.tokens} tokens at a section boundary"
    return s


def _spans(numbers: list[int]) -> str:
    """``line 4``, ``lines 4-6, 9``."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
    return f"line{'s' if len(numbers) > 1 else ''} {text}"


# -- memory doctor -------------------------------------------------------------------------


def health_checks(repo: MemoryRepo) -> list[Check]:
    """The scopes found (global files, projects with rules, local files), and a failure
    for a local file git would commit (not ignored, or tracked already)."""
    root = repo.root
    where = global_dir()
    outside = [p.name for p in _global_files()]
    base = root / IDENTITY_DIR
    local = sorted(p.name for p in base.glob(f"*{LOCAL_SUFFIX}")) if base.is_dir() else []
    projects = sorted(p.parent.name for p in (root / PROJECTS_DIR).glob(f"*/{PROJECT_RULES}"))
    said = [f"global {shown(where) if where else '(no home)'}: "
            + (", ".join(outside) if outside else "none"),
            "project rules: " + (", ".join(projects) if projects else "none"),
            "local: " + (", ".join(local) if local else "none")]
    checks = [Check("rule scopes", True, "; ".join(said))]
    rels = [f"{IDENTITY_DIR}/{n}" for n in local]
    if rels:
        exposed = _not_ignored(root, rels)
        if exposed:
            checks.append(Check(
                "local rules", False,
                f"git would commit {', '.join(exposed)} (not ignored, or tracked already)",
                "memory doctor --fix (adds *.local.md to .gitignore); git rm --cached FILE"))
    return checks


def _not_ignored(root: Path, rels: list[str]) -> list[str]:
    """Those of ``rels`` git does not ignore (a tracked file is never ignored)."""
    try:
        out = git.git(["check-ignore", "--", *rels], root, check=False)
    except GitError:
        return []
    ignored = set(out.splitlines())
    return [r for r in rels if r not in ignored]

