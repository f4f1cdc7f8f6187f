"""Generated benchmark corpora and memory repos built from them (cached under bench/corpus/).

The corpus generator lives in ../shared/bench/gen_corpus.py (realistic transcripts,
journals, project notes and references in the memory repo layout).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / "corpus"
GENERATOR = HERE.parent.parent / "shared" / "bench" / "gen_corpus.py"


def label(n: int) -> str:
    return f"n{n // 1000}k" if n >= 1000 else f"n{n}"


def ensure_corpus(n: int) -> Path:
    """The generated files for ``n`` documents (generated once, then reused)."""
    out = CACHE / label(n)
    if not (CACHE / f"{label(n)}.manifest.json").exists():
        if not GENERATOR.exists():
            sys.exit(f"corpus generator not found at {GENERATOR}")
        CACHE.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run(
            [sys.executable, str(GENERATOR), "--n", str(n), "--out", str(out)], check=True
        )
    return out


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def ensure_memory_repo(n: int) -> Path:
    """A repo made by `memory init` holding the ``n``-file corpus in one commit."""
    repo = CACHE / f"repo-{label(n)}"
    if (repo / ".git" / "bench-ready").exists():
        return repo
    corpus = ensure_corpus(n)
    shutil.rmtree(repo, ignore_errors=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["memory", "init", str(repo)], check=True, env=env, capture_output=True)
    shutil.copytree(corpus, repo, dirs_exist_ok=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", f"maintenance: import {n} generated files")
    (repo / ".git" / "bench-ready").write_text("")
    git(repo, "gc", "-q")  # pack the objects as a long-lived repo would be
    return repo
