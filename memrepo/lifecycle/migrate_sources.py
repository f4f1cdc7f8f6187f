"""Where agents keep the memory ``memory import`` brings in, and reading it safely.

The files live outside the memory repo, in places the agents define (issue #36):

    claude-code  ~/.claude/CLAUDE.md; <project>/CLAUDE.md, <project>/.claude/CLAUDE.md,
                 <project>/CLAUDE.local.md; auto memory ~/.claude/projects/<enc>/memory/*.md,
                 <enc> being the project path with every character but [A-Za-z0-9] as "-"
    codex        ~/.codex/AGENTS.md; <project>/AGENTS.md
    gemini       ~/.gemini/GEMINI.md; <project>/GEMINI.md
    path         a file, or a folder's *.md (a flat MEMORY.md, memory/*.md of any tool)

Finding is cheap and never fails (``memory install`` counts what it finds); reading
refuses in one line naming the file what is not plain text memrepo could commit: a
symlink leading out of where the agent keeps its files (a cloned project's
``CLAUDE.md -> ~/.aws/credentials``), anything but a regular file (a FIFO would block the
read), a file above ``validation.max_file_kb``, NUL bytes, text that is not UTF-8.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepo.documents import decode, parse_document
from memrepo.errors import FormatError, MemrepoError
from memrepo.layout import FRONTMATTER_DELIM, slugify

AGENTS = ("claude-code", "codex", "gemini")
#: An agent's user-wide instruction file: (folder under home, file name).
USER_FILES = {"claude-code": (".claude", "CLAUDE.md"), "codex": (".codex", "AGENTS.md"),
              "gemini": (".gemini", "GEMINI.md")}
#: A project's instruction files: (path under the project, suffix of the label).
PROJECT_FILES = {
    "claude-code": (("CLAUDE.md", ""), (".claude/CLAUDE.md", "-claude-dir"),
                    ("CLAUDE.local.md", "-local")),
    "codex": (("AGENTS.md", ""),),
    "gemini": (("GEMINI.md", ""),),
}
#: The file a memory folder loads every session: an index or the core memory itself.
INDEX_NAME = "MEMORY.md"
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True)
class Source:
    """One file to import. ``kind``: instructions (CLAUDE.md, AGENTS.md, GEMINI.md), index
    (a MEMORY.md) or note. ``shown`` is its path as recorded (``~`` for home); a symlink
    may lead anywhere inside ``base`` only. ``label`` names it in the repo."""

    agent: str
    kind: str
    path: Path
    shown: str
    base: Path
    label: str
    project: str | None = None


def shown_path(path: Path, home: Path) -> str:
    """``path`` with the home folder as ``~``: the same file on another machine has the
    same name, and a user name stays out of the repo."""
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return path.as_posix()


def project_slug(project: Path) -> str:
    return slugify(project.name) if re.search(r"[A-Za-z0-9]", project.name) else "root"


def claude_memory_dirs(home: Path, project: Path) -> list[Path]:
    """Claude Code's auto-memory folders of ``project`` that exist (the path as given and
    with its links resolved, since either may be the one Claude Code saw)."""
    found = []
    for where in dict.fromkeys((str(project), os.path.realpath(project))):
        enc = re.sub(r"[^A-Za-z0-9]", "-", where)
        folder = home / ".claude" / "projects" / enc / "memory"
        if os.path.isdir(folder) and folder not in found:
            found.append(folder)
    return found


def md_files(folder: Path) -> list[Path]:
    """The ``*.md`` names directly in ``folder``, sorted, whatever they are (a FIFO or a
    link is refused when read, not hidden); none when it cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".md")
                           and not e.name.startswith(".") and not e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    return [folder / n for n in names]


def find_sources(agent: str, home: Path | None = None,
                 project: Path | None = None) -> list[Source]:
    """The files of ``agent``'s existing memory for ``project`` (default: the cwd) under
    ``home`` (default: ``~``). Stats only, never a read and never an error for a file
    that cannot be read: what ``memory install`` counts to offer ``memory import``."""
    if agent not in AGENTS:
        raise MemrepoError(f"unknown agent {agent!r}; use one of {', '.join(AGENTS)}")
    home = Path(os.path.abspath(home or Path.home()))
    project = Path(os.path.abspath(project or os.getcwd()))
    slug = project_slug(project)
    out: list[Source] = []
    folder, name = USER_FILES[agent]
    candidates = [(home / folder / name, home, agent, None)]
    candidates += [(project / rel, project, f"{agent}-{slug}{suffix}", slug)
                   for rel, suffix in PROJECT_FILES[agent]]
    for path, base, label, proj in candidates:
        if os.path.lexists(path):
            out.append(Source(agent, "instructions", path, shown_path(path, home), base,
                              label, proj))
    if agent == "claude-code":
        for memdir in claude_memory_dirs(home, project):
            for path in md_files(memdir):
                kind = "index" if path.name == INDEX_NAME else "note"
                out.append(Source(agent, kind, path, shown_path(path, home), home,
                                  f"{agent}-{slug}", slug))
    once: dict[Path, Source] = {}
    for src in out:
        once.setdefault(src.path, src)
    return list(once.values())


def path_sources(paths: list[Path], home: Path | None = None) -> list[Source]:
    """Sources for files and folders a person named: a file as it is (a link the person
    named is followed), a folder's ``*.md`` (which must stay inside it)."""
    home = Path(os.path.abspath(home or Path.home()))
    out: list[Source] = []
    for given in paths:
        path = Path(os.path.abspath(given))
        if not os.path.lexists(path):
            raise MemrepoError("no such file or folder", shown_path(path, home))
        if path.is_dir():
            files = md_files(path)
            if not files:
                raise MemrepoError("no .md file in this folder", shown_path(path, home))
            base, label = Path(os.path.realpath(path)), project_slug(path)
        else:
            files = [path]
            base, label = Path(os.path.realpath(path)).parent, project_slug(path.parent)
        for file in files:
            kind = "index" if file.name == INDEX_NAME else "note"
            out.append(Source("path", kind, file, shown_path(file, home), base, label))
    return out


def _inside(path: str, base: Path) -> bool:
    real_base = os.path.realpath(base)
    return os.path.commonpath([path, real_base]) == real_base


def read_source(src: Source, limit: int) -> str:
    """The text of ``src``, at most ``limit`` bytes, or a MemrepoError naming it."""
    try:
        os.lstat(src.path)
        real = os.path.realpath(src.path)
        if not _inside(real, src.base):
            raise MemrepoError(f"a symlink to {real}, outside {src.base}: not read", src.shown)
        st = os.stat(real)
        if not stat.S_ISREG(st.st_mode):
            raise MemrepoError("not a regular file (a FIFO, socket, device or folder): "
                               "not read", src.shown)
        if st.st_size > limit:
            raise MemrepoError(_too_big(st.st_size, limit), src.shown)
        fd = os.open(real, _FLAGS)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the stat
                raise OSError(errno.EINVAL, "not a regular file")
            data = b""
            while len(data) <= limit:
                chunk = os.read(fd, limit + 1 - len(data))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
    except MemrepoError:
        raise
    except OSError as exc:
        raise MemrepoError(f"cannot read: {exc.strerror or exc}", src.shown) from None
    if len(data) > limit:
        raise MemrepoError(_too_big(len(data), limit), src.shown)
    if b"\0" in data:
        line = data[: data.index(b"\0")].count(b"\n") + 1
        raise MemrepoError("a binary file (NUL bytes), not memory notes", src.shown, line)
    return decode(data, src.shown).replace("\r\n", "\n")


def _too_big(size: int, limit: int) -> str:
    return (f"{size / 1024:,.0f} KB, more than a memory file may hold "
            f"(validation.max_file_kb, less room for the frontmatter: {limit / 1024:,.0f} KB)")


def split_note(text: str, shown: str) -> tuple[dict[str, Any], str]:
    """(frontmatter, body) of a source file. Frontmatter that is not strict YAML (an
    agent's ``description: Fix: use pnpm``) is read line by line as ``key: value``: a
    note is not refused for what memrepo's own files may not hold."""
    try:
        doc = parse_document(text, shown)
        return doc.meta, doc.body
    except FormatError:
        pass
    lines = text.split("\n")
    end = next((i for i in range(1, len(lines)) if FRONTMATTER_DELIM.match(lines[i])), None)
    if end is None:
        return {}, text
    meta: dict[str, Any] = {}
    for line in lines[1:end]:
        m = re.match(r"^([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*?)\s*$", line)
        if m and m[2]:
            meta.setdefault(m[1], m[2].strip("'\""))
    return meta, "\n".join(lines[end + 1 :])


def note_type(meta: dict[str, Any]) -> str | None:
    """Claude Code's memory type (``type``, or ``metadata.type`` in newer versions)."""
    kind = meta.get("type")
    if not isinstance(kind, str):
        nested = meta.get("metadata")
        kind = nested.get("type") if isinstance(nested, dict) else None
    return kind.strip().lower() if isinstance(kind, str) else None
