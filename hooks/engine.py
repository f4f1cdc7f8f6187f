"""What every pre-commit check shares: findings, reading files once, the config, ``run_main``.

Each check is a function ``check(paths, ctx)`` that reports into ``ctx.report``. A check
module's ``main(argv)`` builds a fresh :class:`Context` and runs its one check; the combined
runner (``hooks/pre_commit.py``) builds one Context and runs them all, so every staged file
is read, decoded and parsed at most once, and a broken file is reported once, not once per
check.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from memrepo import compression, documents, gitcrypt, yamlsafe
from memrepo.config import Config, defaults, load_config, validate
from memrepo.errors import ConfigError, FormatError, GitError, MemrepoError
from memrepo.layout import CONFIG_FILE

from .modes import REGULAR, worktree_mode

#: How much of a file is sniffed for a NUL byte to call it binary (git uses the same idea).
SNIFF_BYTES = 8192
#: Files up to this size are read whole when sniffed (one read serves every check).
READ_WHOLE_BYTES = 1024 * 1024
#: Trees whose gzip files are binaries like any other (LFS), never read inflated.
INFLATE_EXEMPT = ("attachments/",)


@dataclass
class Report:
    """Findings as ``path:line: error|warning: message [check-id]`` lines, in report order."""

    lines: list[str] = field(default_factory=list)
    _said: set[str] = field(default_factory=set)
    errors: int = 0
    warnings: int = 0

    def add(self, level: str, path: str | None, line: int | None, message: str, check: str) -> None:
        path = safe_name(path) if path else path
        where = (path or "") + (f":{line}" if path and line else "")
        prefix = f"{where}: " if where else ""
        text = f"{prefix}{level}: {message} [{check}]"
        if text in self._said:  # the same finding reached twice is said once
            return
        self._said.add(text)
        self.lines.append(text)
        if level == "error":
            self.errors += 1
        else:
            self.warnings += 1

    def error(self, path: str | None, line: int | None, message: str, check: str) -> None:
        self.add("error", path, line, message, check)

    def warning(self, path: str | None, line: int | None, message: str, check: str) -> None:
        self.add("warning", path, line, message, check)

    def print(self, out: TextIO | None = None) -> None:
        for text in self.lines:
            print(text, file=out or sys.stdout)

    @property
    def exit_code(self) -> int:
        return 1 if self.errors else 0


def safe_name(name: str) -> str:
    """``name`` (a path, a ref) as it may be printed: a secret in it replaced by its kind.

    Hook output ends up in terminals, CI logs and agent transcripts, and a file or branch
    name can carry a key as well as a file can.
    """
    from memrepo.secrets import redact

    return redact(name)[0]


def normalize(path: str) -> str:
    """Repo-relative POSIX form of a file argument (``./a\\b.md`` -> ``a/b.md``)."""
    p = path.replace(os.sep, "/") if os.sep != "/" else path
    if os.path.isabs(p):
        p = os.path.relpath(p).replace(os.sep, "/")
    return posixpath.normpath(p)


class Context:
    """One validation run: the repo root (the cwd), its config, the report and a file cache."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else Path.cwd()
        self.report = Report()
        self.config: Config = self._load_config()
        self._data: dict[str, bytes | None] = {}
        #: gzip files met (a ``.gz`` name or gzip bytes): path -> why it cannot be read
        #: inflated, or None when it was (``check_filetypes`` reports both kinds)
        self.compressed: dict[str, str | None] = {}
        self._text: dict[str, str | None] = {}
        self._docs: dict[str, documents.Document | None] = {}
        self._seen: set[tuple[str, ...]] = set()
        #: Every staged change against HEAD, when the caller already asked git for it
        #: (the direct hook): the transcripts check then needs no second index read.
        self.staged_rows: list[tuple[str, str, str | None]] | None = None
        #: git mode of every added or changed entry (path -> "100644", "120000"...), when
        #: the caller knows them (a ``--raw`` diff); else :meth:`staged_modes` asks.
        self.modes: dict[str, str] | None = None

    def staged_modes(self, paths: Sequence[str]) -> dict[str, str]:
        """The git mode of each staged entry (deletions left out).

        Known from the caller's ``--raw`` diff, else read from git's index (one
        ``git diff --cached --raw``: with file names from the pre-commit framework, which
        passes no symlink), else, outside a repository, from the work tree's ``paths``.
        """
        if self.modes is None:
            from memrepo import git

            try:
                self.modes = {new or path: mode for st, path, new, _sha, mode
                              in git.staged_entries(self.root) if st != "D"}
            except (GitError, MemrepoError, OSError):
                self.modes = self.worktree_modes(paths)
        return self.modes

    def worktree_modes(self, paths: Sequence[str]) -> dict[str, str]:
        """git's modes for ``paths`` as they are in the work tree (not followed)."""
        modes = {}
        for path in paths:
            try:
                modes[path] = worktree_mode((self.root / path).lstat().st_mode)
            except OSError:
                continue
        return modes

    def staged_status(self, prefix: str) -> list[tuple[str, str, str | None]]:
        """Staged (status, path, new path) rows under ``prefix``."""
        if self.staged_rows is None:
            from memrepo import git

            return git.staged_status(self.root, prefix)
        return [r for r in self.staged_rows if r[1].startswith(prefix)]

    def _load_config(self) -> Config:
        """The repo's config; a broken one is reported and the defaults are used instead."""
        if not (self.root / CONFIG_FILE).is_file():
            return Config(defaults())
        try:
            return load_config(self.root)
        except ConfigError as exc:
            self.report.error(exc.path or CONFIG_FILE, exc.line, exc.message, "config")
        return Config(defaults())

    def setting(self, key: str) -> Any:
        """A ``validation.*`` setting."""
        return self.config["validation"][key]

    def first(self, *key: str) -> bool:
        """True the first time ``key`` is seen: lets two checks share one verdict."""
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def data(self, path: str, check: str) -> bytes | None:
        """The file's bytes, or None when there is nothing to check.

        Missing files (deletions), directories (submodules) and symlinks (git stores the
        link, not the target) are skipped silently; an unreadable file is an error.
        A gzip file (outside attachments/) is the text it holds, inflated up to
        ``validation.max_file_kb``: every check sees what a reader will, so compressing
        a file is no way past them; one that cannot be inflated is None here and
        refused by ``check_filetypes``.
        """
        if path in self._data:
            return self._data[path]
        raw = self._read(path, check)
        if gitcrypt.is_ciphertext(raw):  # a git-crypt file no key of this clone opens
            self.report.warning(path, None, f"{gitcrypt.LOCKED}: not checked", "private")
            raw = None
        data = self._inflate(path, raw)
        self._data[path] = data
        return data

    def inflates(self, path: str, head: bytes = b"") -> bool:
        """Whether ``path`` is read inflated: a ``.gz`` name or gzip bytes, outside
        attachments/."""
        return not path.startswith(INFLATE_EXEMPT) and (
            compression.is_gzip_name(path) or compression.looks_gzip(head))

    def _too_big(self, path: str, size: int) -> bool:
        """A compressed file bigger than the cap itself: refused unread (never loaded)."""
        limit = compression.limit_of(self.config)
        if size <= limit:
            return False
        self.compressed[path] = (f"the compressed file alone is {kb(size)}, above "
                                 f"validation.max_file_kb ({limit / 1024:g} KB)")
        return True

    def _inflate(self, path: str, raw: bytes | None) -> bytes | None:
        if raw is None or not self.inflates(path, raw[:2]):
            return raw
        if self._too_big(path, len(raw)):
            return None
        try:
            data: bytes | None = compression.decompress(
                raw, path, compression.limit_of(self.config))
        except FormatError as exc:
            self.compressed[path] = exc.message
            return None
        self.compressed[path] = None
        return data

    def _read(self, path: str, check: str) -> bytes | None:
        """The bytes as stored (a gzip file still compressed)."""
        full = self.root / path
        data: bytes | None = None
        try:
            if not full.is_symlink() and full.is_file():
                data = full.read_bytes()
        except OSError as exc:
            self.report.error(path, None, f"cannot read: {exc.strerror or exc}", check)
        return data

    def size(self, path: str) -> int | None:
        """Size of a regular file, None for what git stores as a link or not at all; a
        gzip file's is the size of its text (None when it cannot be inflated)."""
        if path in self.compressed or self.inflates(path):
            data = self.data(path, "")
            if path in self.compressed:
                return None if data is None else len(data)
        try:
            st = (self.root / path).lstat()
        except OSError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def sniff(self, path: str, check: str) -> bytes | None:
        """The first SNIFF_BYTES of a file, to tell binary from text.

        A file of ordinary size is read whole and cached (the secrets scan needs it next);
        only a big one is opened just for its head.
        """
        if path not in self._data:
            full = self.root / path
            try:
                if full.is_symlink() or not full.is_file():
                    return None
                size = full.stat().st_size
                if size > READ_WHOLE_BYTES:
                    with full.open("rb") as fh:
                        head = fh.read(SNIFF_BYTES)
                    if not self.inflates(path, head):
                        return head
                    if self._too_big(path, size):
                        self._data[path] = None
                        return None
            except OSError:
                pass  # data() reports it
        data = self.data(path, check)
        return None if data is None else data[:SNIFF_BYTES]

    def text(self, path: str, check: str) -> str | None:
        """UTF-8 text of a file; a decoding error (naming the line) is reported once."""
        if path in self._text:
            return self._text[path]
        data = self.data(path, check)
        text: str | None = None
        if data is not None:
            try:
                text = documents.decode(data, path)
            except FormatError as exc:
                self.report.error(exc.path, exc.line, exc.message, check)
        self._text[path] = text
        return text

    def document(self, path: str, check: str) -> documents.Document | None:
        """The parsed memory file; empty files and frontmatter errors are reported once."""
        if path in self._docs:
            return self._docs[path]
        text = self.text(path, check)
        doc: documents.Document | None = None
        if text is not None:
            if not text.strip():
                self.report.error(path, 1, "file is empty; it needs YAML frontmatter", check)
            else:
                try:
                    doc = documents.parse_document(text, path)
                except FormatError as exc:
                    self.report.error(exc.path, exc.line, exc.message, check)
        self._docs[path] = doc
        return doc


class BlobContext(Context):
    """A validator Context whose files are git blobs (a commit's, or the index's).

    Used by the pre-receive hook and `memory verify` (a pushed commit's files) and by the
    direct pre-commit hook (the staged versions, so a partly staged file is judged by
    what will be committed, without stashing anything).
    """

    def __init__(
        self,
        root: Path,
        blobs: dict[str, bytes | None],
        config: bytes | None,
        modes: dict[str, str] | None = None,
    ):
        self._blobs = blobs
        #: a git-crypt blob is read through this clone's key (stored() gives it as stored)
        self._revealer = gitcrypt.Revealer(root)
        self._config_blob = config
        super().__init__(root)
        self.modes = modes

    def _load_config(self) -> Config:
        if self._config_blob is None:
            return Config(defaults())
        try:
            text = self._config_blob.decode("utf-8")
            return validate(yamlsafe.load(text), text)
        except (UnicodeDecodeError, yamlsafe.YAMLProblem, ConfigError) as exc:
            self.report.error(CONFIG_FILE, None, f"invalid config: {exc}", "config")
            return Config(defaults())

    def staged_modes(self, paths: Sequence[str]) -> dict[str, str]:
        """The modes the caller passed; without them (memrepo's own commits, which staged
        ``paths`` from the work tree a moment ago), the work tree's."""
        if self.modes is None:
            self.modes = self.worktree_modes(paths)
        return self.modes

    def _read(self, path: str, check: str) -> bytes | None:
        """The blob of a regular file; None for a symlink or submodule, whose blob is a
        link target or nothing (check_filetypes refuses them), as in a work tree."""
        if self.modes is not None and self.modes.get(path, "100644") not in REGULAR:
            return None
        data = self._blobs.get(path)
        return self._revealer.reveal(data) if data is not None else None

    def stored(self, path: str) -> bytes | None:
        """The blob as git stores it (a git-crypt file's ciphertext)."""
        return self._blobs.get(path)

    def sniff(self, path: str, check: str) -> bytes | None:
        data = self.data(path, check)
        return None if data is None else data[:SNIFF_BYTES]

    def size(self, path: str) -> int | None:
        data = self.data(path, "")
        return None if data is None else len(data)


CheckFn = Callable[[Sequence[str], Context], None]


def run_checks(
    checks: Iterable[tuple[str, CheckFn]],
    paths: Sequence[str],
    ctx: Context,
    out: TextIO | None = None,
) -> int:
    """Run checks over ``paths``, print every finding (to ``out``, stdout by default),
    return the exit code.

    A failure of the machinery itself (git missing, not a repository) is one error line
    for that check, and the remaining checks still run.
    """
    for check_id, fn in checks:
        try:
            fn(paths, ctx)
        except MemrepoError as exc:
            ctx.report.error(exc.path, exc.line, exc.message, check_id)
    ctx.report.print(out)
    return ctx.report.exit_code


def run_main(
    argv: Sequence[str] | None,
    checks: Sequence[tuple[str, CheckFn]],
    description: str,
) -> int:
    """Parse ``FILES…`` like pre-commit passes them and run ``checks`` in the cwd."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("filenames", nargs="*", help="files, as pre-commit passes them")
    args = parser.parse_args(argv)
    paths = list(dict.fromkeys(normalize(p) for p in args.filenames))
    return run_checks(checks, paths, Context())


def kb(size: int) -> str:
    """A byte count for messages: ``26.4 KB``."""
    return f"{size / 1024:.1f} KB"
