"""What the torture harnesses share: a throw-away memory repo driven by the real `memory`.

Each harness works in its own temporary directory with a private git identity and
config, runs the installed ``memory`` (the one beside this interpreter, or ``--memory``)
as separate processes, and checks the promises against the files and git afterwards:
acknowledged (exit 0) writes are on disk and, once committed, in HEAD; every transcript
parses; ``git fsck`` is clean.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
#: A 4-byte, a 3-byte and a 2-byte character, so a cut anywhere can split a character.
MULTIBYTE = "😀€é"


@dataclass
class Env:
    """A temporary memory repo and the environment its `memory` processes run in."""

    base: Path
    repo: Path
    memory: str
    env: dict[str, str] = field(default_factory=dict)

    def run(self, *args: str, input: bytes | str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
        data = input.encode("utf-8") if isinstance(input, str) else input
        return subprocess.run([self.memory, *args], cwd=self.repo, env=self.env, input=data,
                              capture_output=True, timeout=timeout)

    def popen(self, *args: str, stdin: bool = False) -> subprocess.Popen[bytes]:
        return subprocess.Popen([self.memory, *args], cwd=self.repo, env=self.env,
                                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def git(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(["git", *args], cwd=self.repo, env=self.env,
                              capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout


def sandbox_env(home: Path, memory: str, name: str = "Torture") -> dict[str, str]:
    """The environment of a harness's processes: ``home`` (created) with a private git
    identity and config, ``memory``'s folder first on PATH, UTC, and nothing of this
    machine's memory repo, session, git dir or API key."""
    home.mkdir()
    (home / ".gitconfig").write_text(
        f"[user]\n\tname = {name}\n\temail = {name.lower()}@example.com\n"
        "[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n"
    )
    env = {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PRE_COMMIT_HOME": str(home / "pre-commit"),
        "PATH": f"{Path(memory).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "TZ": "UTC",
    }
    for var in ("MEMORY_REPO", "MEMORY_SESSION", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
                "ANTHROPIC_API_KEY"):
        env.pop(var, None)
    return env


def make_env(memory: str | None = None, hooks: str = "direct",
             max_file_kb: int | None = None) -> Env:
    """A fresh memory repo in a temporary directory (removed by the caller's cleanup)."""
    base = Path(tempfile.mkdtemp(prefix="memrepo-torture-"))
    exe = memory or str(BIN / "memory")
    env = {**sandbox_env(base / "home", exe), "MEMREPO_NO_HOOKS": "1"}
    e = Env(base, base / "repo", exe, env)
    proc = subprocess.run([exe, "init", str(e.repo), "--hooks", hooks], cwd=base, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"memory init failed: {proc.stderr}")
    if max_file_kb is not None:
        cfg = e.repo / "memory-config.yaml"
        text = cfg.read_text(encoding="utf-8")
        cfg.write_text(text.replace("max_file_kb: 1024", f"max_file_kb: {max_file_kb}"),
                       encoding="utf-8")
        e.git("commit", "-qam", "maintenance: torture config", "--no-verify")
    return e


def transcripts(repo: Path) -> list[Path]:
    return sorted((repo / "raw/conversations").glob("*/*/*/*.md"))


def session_files(repo: Path, sid: str) -> list[Path]:
    return [p for p in transcripts(repo) if f"-{sid}-" in p.name]


def unparseable(repo: Path, seen: dict[str, tuple[int, int]] | None = None) -> list[str]:
    """Transcripts that memrepo.transcript.read cannot read (a torn turn, a cut UTF-8);
    with ``seen`` (path -> size and mtime of a file that parsed), only files that changed."""
    from memrepo.errors import MemrepoError
    from memrepo.transcript.read import read_transcript

    bad = []
    for p in transcripts(repo):
        rel = p.relative_to(repo).as_posix()
        try:
            st = p.stat()
        except OSError:
            continue
        stamp = (st.st_size, st.st_mtime_ns)
        if seen is not None and seen.get(rel) == stamp:
            continue
        try:
            read_transcript(repo, rel)
        except MemrepoError as exc:
            bad.append(f"{rel}: {exc}")
            continue
        if seen is not None:
            seen[rel] = stamp
    return bad


def head_text(env: Env, rel: str) -> str | None:
    proc = subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=env.repo, env=env.env,
                          capture_output=True)
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None


def head_files(env: Env, prefix: str) -> dict[str, str]:
    """Every file under ``prefix`` in HEAD, with its text."""
    out = {}
    for rel in env.git("ls-tree", "-r", "--name-only", "HEAD", "--", prefix).split("\n"):
        if rel:
            out[rel] = head_text(env, rel) or ""
    return out


def fsck(env: Env) -> str:
    """'' when ``git fsck`` is clean, else what it said."""
    proc = subprocess.run(["git", "fsck", "--no-progress", "--no-dangling"], cwd=env.repo,
                          env=env.env, capture_output=True, text=True)
    return "" if proc.returncode == 0 else (proc.stdout + proc.stderr).strip()[:500]


def tmp_leftovers(repo: Path) -> list[str]:
    """``*.tmp`` files an atomic write left behind (git's own directory aside)."""
    return sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.tmp")
                  if ".git" not in p.relative_to(repo).parts)


def err(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:][0] \
        if proc.stderr.strip() else f"exit {proc.returncode}"


def worker_pids(repo: Path) -> list[int]:
    """Pids of the detached memrepo workers of ``repo`` still alive (their command line
    names it)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"memrepo.agents.worker" in cmd and str(repo).encode() in cmd:
            out.append(int(d.name))
    return out
