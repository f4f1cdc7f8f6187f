"""Generated benchmark corpora and memory repos built from them (cached under bench/corpus/).

The corpus generator lives in ../shared/bench/gen_corpus.py (realistic transcripts,
journals, project notes and references in the memory repo layout).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE.parent / "corpus"
# Memory repos must be repository roots of their own, so they live outside this checkout.
REPOS = Path(os.environ.get("MEMREPO_BENCH_REPOS", Path(tempfile.gettempdir()) / "memrepo-bench"))
GENERATOR = HERE.parents[2] / "shared" / "bench" / "gen_corpus.py"


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
    """A repo made by `memory init` holding the ``n``-file corpus in one commit.

    Built once and reused; a lock file keeps two benchmarks from building it at once.
    """
    repo = REPOS / f"repo-{label(n)}"
    REPOS.mkdir(parents=True, exist_ok=True)
    with open(REPOS / f"{label(n)}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (repo / ".git" / "bench-ready").exists():
            _build_memory_repo(n, repo)
    return repo


def _build_memory_repo(n: int, repo: Path) -> None:
    corpus = ensure_corpus(n)
    shutil.rmtree(repo, ignore_errors=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["memory", "init", str(repo)], check=True, env=env, capture_output=True)
    # only the generated files: the corpus folder may also be another bench's git repo
    skip = shutil.ignore_patterns(
        ".git", "memory.db*", "memory-config.yaml", ".gitignore", ".memrepo"
    )
    shutil.copytree(corpus, repo, dirs_exist_ok=True, ignore=skip)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", f"maintenance: import {n} generated files")
    subprocess.run(["git", "gc", "-q"], cwd=repo, capture_output=True)  # best effort
    (repo / ".git" / "bench-ready").write_text("")


#: Realistic agent messages, filled with the topic words of corpus files.
TEMPLATES = (
    "what did we decide about {a} and {b}?",
    "remind me how {a} works with {b}",
    "any notes on {a} {b} from last week",
    "let's continue the {a} work, {b} is still open",
    "summarise what we know about {a}",
    "the {a} deploy failed again, check {b}",
)


def messages(n: int, size: int = 10_000, seed: int = 13) -> list[str]:
    """``n`` messages made of the topic words of random files of the ``size`` corpus (the
    10K corpus's list when that size has none)."""
    import random

    tsv = CACHE / f"{label(size)}.files.tsv"
    if not tsv.exists():
        tsv = CACHE / f"{label(10_000)}.files.tsv"
    rows = tsv.read_text(encoding="utf-8").splitlines()
    rng = random.Random(seed)
    out = []
    for row in rng.sample(rows, n):
        words = row.split("\t")[3].split()
        a, b = (words + words)[:2] if len(words) < 2 else rng.sample(words, 2)
        out.append(rng.choice(TEMPLATES).format(a=a, b=b))
    return out


def pct(xs: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank)."""
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]
