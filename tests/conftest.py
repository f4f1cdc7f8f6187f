"""Shared test set-up: real git and real pre-commit, isolated from the user's machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_git(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test: a private git identity and config, pre-commit's cache in a temp dir, its
    own XDG state folder, a cache folder for the session, and the `memory` this interpreter
    installed first on PATH (hooks call it by name)."""
    home = tmp_path_factory.getbasetemp() / "home"
    home.mkdir(exist_ok=True)
    gitconfig = home / ".gitconfig"
    if not gitconfig.exists():
        gitconfig.write_text(
            "[user]\n\tname = Test\n\temail = test@example.com\n"
            "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("PRE_COMMIT_HOME", str(home / "pre-commit-cache"))
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    # the per-user log of hooks that found no repo, which every repo's doctor shows: one
    # per test, never the machine's (a hook run by hand there failed the doctor's tests)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    # MiniLM's int8-kernel rewrite (memrepo.index.int8_model), made once for the session
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    # the user's global identity (memrepo.context.scopes): never the machine's in a briefing
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.delenv("MEMORY_REPO", raising=False)
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)


def run_git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run real git; return the completed process (stdout and stderr as text)."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def run_memory(cwd: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed `memory` command as a user would (a process of its own: for what a
    process adds, e.g. signals, concurrency, a terminal on stdin, import budgets)."""
    return subprocess.run(["memory", *args], cwd=cwd, capture_output=True, text=True, input=input)


class _ConsoleScript:
    """The `memory` console script (the fast path, else the Click group) as CliRunner calls
    a command: it reads its arguments from sys.argv, which ``invoke_memory`` sets."""

    name = "memory"

    def main(self, *_: object, **__: object) -> None:
        from memrepo.scripts import fastpath

        fastpath.main()


def invoke_memory(
    cwd: Path, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`run_memory` without the process (~0.1 s less a call): the same entry point, in this
    interpreter, from ``cwd``, stdout and stderr captured at the fd level (git and hooks it
    runs included), an escaping exception printed as Python would (exit status 1).

    What a process would throw away or start afresh is set for the call and put back
    after: the cwd, sys.argv, os.environ, the topic cache (keyed by path and stat, which a
    rewrite within one clock tick can miss) and the environment git's index reader copies
    at import.
    """
    import traceback

    from click.testing import CliRunner

    for name, attr in (
        ("memrepo.context.watchers.loader", "_CACHE"),
        ("memrepo.context.watchers.match", "_ENGINES"),
    ):
        if name in sys.modules:
            getattr(sys.modules[name], attr).clear()
    gitsource = sys.modules.get("memrepo.index.gitsource")
    old_git_env = gitsource._ENV if gitsource is not None else None
    if gitsource is not None:
        gitsource._ENV = {**os.environ, "GIT_INDEX_FILE": gitsource._ENV["GIT_INDEX_FILE"]}
    old_cwd, old_argv, old_env = os.getcwd(), sys.argv, dict(os.environ)
    try:
        os.chdir(cwd)
        sys.argv = [str(Path(sys.executable).with_name("memory")), *args]
        result = CliRunner(capture="fd").invoke(
            _ConsoleScript(),  # type: ignore[arg-type]
            list(args),
            input=input,
            prog_name="memory",
        )
    finally:
        os.chdir(old_cwd)
        sys.argv = old_argv
        if dict(os.environ) != old_env:
            os.environ.clear()
            os.environ.update(old_env)
        if gitsource is not None:
            gitsource._ENV = old_git_env
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(
        ["memory", *args], result.exit_code, result.stdout, stderr
    )


@pytest.fixture
def memrepo_root(crepo_template: Path, tmp_path: Path) -> Path:
    """A memory repo made by the real `memory init` (hooks installed, first commit made):
    a copy of the session's template (tests/test_init.py runs `memory init` per test)."""
    root = tmp_path / "mem"
    shutil.copytree(crepo_template, root, symlinks=True)
    return root


# --- validators (hooks/check_*.py): a bare git repo to stage files in -----------------


class VRepo:
    """A plain git repo in a temp dir, the cwd of the test, for calling validators' main()."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root = root
        self._capsys = capsys

    def git(self, *args: str) -> str:
        return run_git(self.root, *args).stdout

    def write(self, path: str, content: str | bytes) -> Path:
        full = self.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            full.write_bytes(content)
        else:
            full.write_text(content, encoding="utf-8", newline="\n")
        return full

    def add(self, *paths: str) -> None:
        self.git("add", "-A", "--", *(paths or (".",)))

    def commit(self, message: str = "seed") -> None:
        """Stage everything and commit past any hook (to give HEAD a history)."""
        self.add()
        self.git("commit", "-q", "--no-verify", "--allow-empty", "-m", message)

    def staged(self) -> list[str]:
        """What pre-commit passes a hook: staged files that still exist."""
        out = self.git("diff", "--cached", "--name-only", "--diff-filter=ACMRTUXB", "-z")
        return [p for p in out.split("\0") if p]

    def run(self, main: object, *files: str) -> tuple[int, str]:
        """Call a validator's main(files); return (exit code, stdout). Never a traceback."""
        self._capsys.readouterr()
        code = main(list(files))  # type: ignore[operator]
        out, err = self._capsys.readouterr()
        assert "Traceback" not in out + err
        return code, out

    def run_staged(self, main: object) -> tuple[int, str]:
        return self.run(main, *self.staged())


@pytest.fixture
def vrepo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> VRepo:
    """An empty git repo (no commit yet) that is the cwd, as pre-commit runs hooks."""
    root = tmp_path / "vrepo"
    root.mkdir()
    run_git(root, "init", "-q")
    run_git(root, "config", "user.name", "Validator Test")
    run_git(root, "config", "user.email", "validator@example.com")
    run_git(root, "config", "commit.gpgsign", "false")
    monkeypatch.chdir(root)
    return VRepo(root, capsys)


# --- index and search (memrepo/index): plain git repos, no `memory init` needed ----------


class IRepo:
    """A git repo with a memory-config.yaml, for index tests: write, commit, snapshot."""

    def __init__(self, root: Path):
        self.root = root

    def git(self, *args: str) -> str:
        return run_git(self.root, "-c", "user.name=t", "-c", "user.email=t@t", *args).stdout

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def commit(self, message: str = "change", *extra: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--no-verify", "--allow-empty", "-m", message, *extra)
        return self.git("rev-parse", "HEAD").strip()

    def event(self, name: str = "post-commit") -> None:
        """What the installed hook does after a git event."""
        from memrepo.hooks.post_commit import on_git_event

        on_git_event(self.root, name)

    def snapshot(self, db: Path | None = None) -> dict[str, object]:
        """Everything an index holds, independent of row ids (to compare with a rebuild)."""
        import sqlite3

        con = sqlite3.connect(db or self.root / "memory.db")
        try:
            con.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, chunks_fts, 'row')")
            con.execute("CREATE VIRTUAL TABLE temp.cjk_vocab "
                        "USING fts5vocab(main, chunks_cjk, 'row')")
            snap = {
                "commit": con.execute("SELECT value FROM meta WHERE key='commit'").fetchone()[0],
                "documents": con.execute(
                    "SELECT path, category, type, blob, modified, tokens, lines, tags, status "
                    "FROM documents ORDER BY path"
                ).fetchall(),
                "chunks": con.execute(
                    "SELECT d.path, c.ord, c.start_line, c.end_line, c.hash, c.stale, "
                    "c.reply_hash FROM chunks c "
                    "JOIN documents d ON d.id = c.doc_id ORDER BY d.path, c.ord"
                ).fetchall(),
                "vocab": con.execute("SELECT term, doc, cnt FROM vocab ORDER BY term").fetchall(),
                "vectors": con.execute("SELECT hash FROM vectors ORDER BY hash").fetchall(),
                "signals": con.execute("SELECT * FROM signals ORDER BY path, line").fetchall(),
                "cjk": con.execute("SELECT term, doc, cnt FROM cjk_vocab ORDER BY term").fetchall(),
                "links": con.execute("SELECT * FROM links ORDER BY src, line, kind, target"
                                     ).fetchall(),
            }
            con.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
            return snap
        finally:
            con.close()

    def rebuilt_snapshot(self, tmp: Path, embedder: str = "none", replies: bool = True
                         ) -> dict[str, object]:
        """The snapshot of a fresh rebuild of the same HEAD, in a copy of the repo."""
        import shutil

        from memrepo.index.indexer import rebuild

        copy = tmp / f"rebuilt-{len(list(tmp.iterdir()))}"
        shutil.copytree(self.root, copy, ignore=shutil.ignore_patterns("memory.db*"))
        rebuild(copy, embedder, replies=replies)
        return IRepo(copy).snapshot()


IREPO_JOURNAL = """---
type: journal
date: 2024-03-01
tags: [payments]
---

## 2024-03-01

- Deployed the payment API with HMAC signatures.
- Alice prefers green tea in the morning.
"""

IREPO_TRANSCRIPT = """---
type: conversation
session_id: s1
started: 2024-03-02T10:00:00+00:00
---
# Rotating keys

## 10:00 — user

How do I rotate the HMAC signing key for the payment webhook?

## 10:01 — agent

Run the vault rotation script, then redeploy the webhook consumer.
"""

IREPO_REFERENCE = """---
type: reference
title: Kubernetes notes
updated: 2023-06-01
---
# Kubernetes notes

## Deployments

Rolling updates replace pods gradually; set maxSurge and maxUnavailable.

## Secrets

Mount secrets as files, never as environment variables in logs.
"""


@pytest.fixture
def irepo(tmp_path: Path) -> IRepo:
    """A committed repo with a journal, a transcript and a reference note (no index yet)."""
    root = tmp_path / "irepo"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    repo = IRepo(root)
    repo.write("memory-config.yaml", "{}\n")
    repo.write(".gitignore", "memory.db*\n*.tmp\n")
    repo.write("knowledge/journal/2024-03-01.md", IREPO_JOURNAL)
    repo.write("raw/conversations/2024/03/02/1000-s1-rotating-keys.md", IREPO_TRANSCRIPT)
    repo.write("knowledge/reference/kubernetes.md", IREPO_REFERENCE)
    repo.commit("init")
    return repo


@pytest.fixture
def irepo_indexed(irepo: IRepo) -> IRepo:
    """``irepo`` with a built memory.db at HEAD."""
    from memrepo.index.indexer import sync

    sync(irepo.root)
    return irepo


# --- capture / commit / sync (issue 4): a memory repo copied from one made per session ----


@pytest.fixture(scope="session")
def crepo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One repo made by the real `memory init` (hooks installed), copied by `crepo`."""
    base = tmp_path_factory.getbasetemp()
    home = base / "home"
    home.mkdir(exist_ok=True)
    gitconfig = home / ".gitconfig"
    if not gitconfig.exists():
        gitconfig.write_text(
            "[user]\n\tname = Test\n\temail = test@example.com\n"
            "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        )
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PRE_COMMIT_HOME": str(home / "pre-commit-cache"),
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
    }
    env.pop("MEMORY_REPO", None)
    root = tmp_path_factory.mktemp("crepo-template") / "mem"
    proc = subprocess.run(["memory", "init", str(root)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return root


@pytest.fixture
def crepo(crepo_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the template memory repo (hooks included), cheaper than `memory init`."""
    root = tmp_path / "mem"
    shutil.copytree(crepo_template, root, symlinks=True)
    return root


# --- lifecycle (issue 5): a memory repo holding a committed week of transcripts --------

LREPO_WEEK = Path(__file__).parent / "fixtures" / "lifecycle" / "week"


@pytest.fixture
def lrepo(crepo: Path) -> Path:
    """``crepo`` with the week of fixture transcripts committed under raw/conversations/."""
    shutil.copytree(LREPO_WEEK, crepo / "raw" / "conversations", dirs_exist_ok=True)
    run_git(crepo, "add", "-A", "raw")
    run_git(crepo, "commit", "-q", "--no-verify", "-m", "conversation: a week")
    return crepo


def fake_anthropic(replies: object, seen: list[dict]) -> object:
    """The real anthropic SDK over a fake HTTP transport: no network, no key.

    ``replies`` is the answer text, a list of answers in call order (the last repeats),
    a function ``body -> text``, or ``(status, json body)`` pairs for error responses.
    Every request's JSON body is appended to ``seen``; usage reports 800 cached input
    tokens from the second call on, as a cached system prompt would.
    """
    import json as _json

    import anthropic

    try:
        import httpx2 as httpx  # what the installed SDK is built on
    except ImportError:  # pragma: no cover
        import httpx  # type: ignore[no-redef]

    def handler(request: httpx.Request) -> httpx.Response:
        body = _json.loads(request.content)
        seen.append(body)
        n = len(seen)
        if callable(replies):
            reply = replies(body)
        elif isinstance(replies, (str, tuple)):
            reply = replies
        else:
            reply = replies[min(n, len(replies)) - 1]  # type: ignore[index]
        if isinstance(reply, tuple):
            return httpx.Response(reply[0], json=reply[1])
        return httpx.Response(
            200,
            json={
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": reply}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 1000,
                    "output_tokens": 100,
                    "cache_read_input_tokens": 800 if n > 1 else 0,
                    "cache_creation_input_tokens": 0 if n > 1 else 800,
                },
            },
        )

    return anthropic.Anthropic(
        api_key="test-key",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )


@pytest.fixture
def lrepo_client():
    """Factory: ``lrepo_client(reply) -> (client, seen)``."""

    def make(reply: object) -> tuple[object, list[dict]]:
        seen: list[dict] = []
        return fake_anthropic(reply, seen), seen

    return make
