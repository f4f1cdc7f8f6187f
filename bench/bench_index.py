#!/usr/bin/env python3
"""Index and search figures on generated memory repos of 10K and 100K files, side by side.

    python bench/bench_index.py                      # 10k and 100k (cached under bench/corpus/)
    python bench/bench_index.py --sizes 10k --queries 50

Per size, in one run: full rebuild (default "none" and the hash embedder) against the
floor of walking and reading the same files; incremental index after a 10-file commit,
as the hook function's wall time in-process and as whole processes (a bare Python that
calls the hook, and ``memory hook post-commit``); search p50/p95 in-process and as whole
``memory search`` processes; the index-free scan for the same queries (pure Python, and
ripgrep listing the matching files, or ``grep -rliF`` where rg is not installed); peak RSS of each
child process. Commits made here are undone at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: ripgrep listing the files that hold any query word (what the fallback starts from)
RG_ARGS = ["rg", "-l", "-i", "-F", "--no-messages", "-g", "*.md"]
CORPUS = HERE / "corpus"
GEN = HERE.parent.parent / "shared" / "bench" / "gen_corpus.py"
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
PY = sys.executable
MEMORY = str(Path(sys.executable).with_name("memory"))


def ensure_repo(size: str) -> Path:
    """bench/corpus/n<size>: generated once, then a git repo at one commit (cached)."""
    n = {"10k": 10_000, "100k": 100_000}[size]
    root = CORPUS / f"n{size}"
    if not root.exists():
        subprocess.run([PY, str(GEN), "--n", str(n), "--out", str(root)], check=True)
    if not (root / ".git").exists():
        (root / "memory-config.yaml").write_text("{}\n")
        (root / ".gitignore").write_text("memory.db*\n*.tmp\nraw/signals/\n")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run([*GIT, "commit", "-q", "--no-verify", "-m", "corpus"], cwd=root, check=True)
    return root


def child(code: str, cwd: Path, env: dict | None = None) -> tuple[float, int, str]:
    """Run python -c CODE; (wall seconds, peak RSS MB of that process, stdout)."""
    wrapped = (
        "import resource, sys\n" + code + "\n"
        "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    )
    t0 = time.perf_counter()
    proc = subprocess.run([PY, "-c", wrapped], cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    rss = int(proc.stderr.rsplit("RSS", 1)[1].split()[0]) // 1024
    return wall, rss, proc.stdout


def timed_cmd(args: list[str], cwd: Path) -> tuple[float, int]:
    """Wall time and peak RSS (MB) of one external command, measured by a small wrapper
    (its own RUSAGE_CHILDREN holds exactly that one command)."""
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([PY, "-c", wrapper, *args], cwd=cwd, capture_output=True, text=True)
    wall, rss = out.stdout.split()
    return float(wall), int(rss) // 1024


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def queries(size: str, n: int) -> list[str]:
    rows = (CORPUS / f"n{size}.files.tsv").read_text().splitlines()
    rng = random.Random(7)
    out = []
    forms = [
        "what did we decide about {a} and {b}?",
        "{a} {b}",
        "notes on the {a} {b}",
        "when did {a} come up",
        '{a}-{b} "{b}" NEAR',
    ]
    for row in rng.sample(rows, n):
        topic = row.split("\t")[3].split()
        a, b = topic[0], topic[-1]
        out.append(rng.choice(forms).format(a=a, b=b))
    return out


def bench_rebuild(root: Path, res: dict) -> None:
    for emb in ("hash", "none"):  # "none" last: it is the default the other steps use
        wall, rss, out = child(
            "from pathlib import Path\nfrom memrepo.index.indexer import rebuild\n"
            f"r = rebuild(Path('.'), {emb!r})\nprint(r.files, r.chunks, r.seconds)",
            root,
        )
        files, chunks, secs = out.split()
        res[f"rebuild_{emb}_files_s"] = int(files) / float(secs)
        res[f"rebuild_{emb}_rss_mb"] = rss
        res[f"rebuild_{emb}_db_mb"] = (root / "memory.db").stat().st_size / 1e6
        res["files"], res["chunks"] = int(files), int(chunks)
    t0 = time.perf_counter()
    n = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.endswith(".md"):
                with open(os.path.join(dirpath, name), "rb") as fh:
                    fh.read()
                n += 1
    res["floor_walk_read_files_s"] = n / (time.perf_counter() - t0)
    wall, _, _ = child(
        "from pathlib import Path\nfrom memrepo.index import gitsource\n"
        "rows = gitsource.list_tree(Path('.'), 'HEAD')\n"
        "for _ in gitsource.stream_blobs(Path('.'), [s for p, s in rows]): pass",
        root,
    )
    res["floor_git_read_files_s"] = n / wall


def bench_hook(root: Path, res: dict, commits: int) -> None:
    rng = random.Random(11)
    md = [
        ln.split("\t")[0]
        for ln in (root.parent / f"{root.name}.files.tsv").read_text().splitlines()
    ]
    fn, proc, cli, rss = [], [], [], []
    # one untimed commit first: the measured ones see the steady state a repo in use has
    # (page cache warm), not the state right after writing a 2 GB rebuild
    for rel in rng.sample(md, 10):
        with open(root / rel, "a", encoding="utf-8") as fh:
            fh.write("\n- bench warm-up\n")
    subprocess.run([*GIT, "commit", "-qam", "warm-up", "--no-verify"], cwd=root, check=True)
    subprocess.run([MEMORY, "hook", "post-commit"], cwd=root, capture_output=True)
    for i in range(commits * 3):
        for rel in rng.sample(md, 10):
            with open(root / rel, "a", encoding="utf-8") as fh:
                fh.write(f"\n- bench edit {i} {rng.random()}\n")
        subprocess.run([*GIT, "commit", "-qam", f"bench {i}", "--no-verify"], cwd=root, check=True)
        kind = i % 3
        if kind == 0:
            _, _, out = child(
                "import time\nfrom pathlib import Path\n"
                "from memrepo.hooks.post_commit import on_git_event\n"
                "t = time.perf_counter()\non_git_event(Path.cwd(), 'post-commit')\n"
                "print(time.perf_counter() - t)",
                root,
            )
            fn.append(float(out))
        elif kind == 1:
            wall, r, _ = child(
                "from pathlib import Path\nfrom memrepo.hooks.post_commit import on_git_event\n"
                "on_git_event(Path.cwd(), 'post-commit')",
                root,
            )
            proc.append(wall)
            rss.append(r)
        else:
            wall, _ = timed_cmd([MEMORY, "hook", "post-commit"], root)
            cli.append(wall)
    res["hook_fn_ms_p50"] = 1000 * statistics.median(fn)
    res["hook_process_ms_p50"] = 1000 * statistics.median(proc)
    res["memory_hook_cmd_ms_p50"] = 1000 * statistics.median(cli)
    res["hook_rss_mb"] = max(rss)
    log = (root / ".git" / "memrepo" / "index.log").read_text().splitlines()
    res["hook_last_log"] = log[-1].split("\t", 3)[-1]


def bench_search(root: Path, res: dict, qs: list[str], scans: int) -> None:
    code = (
        "import json, sys, time\nfrom pathlib import Path\n"
        "from memrepo.index.search import Searcher\n"
        "s = Searcher(Path('.'))\nqs = json.loads(sys.stdin.read())\ns.search(qs[0])\nts = []\n"
        "for q in qs:\n    t = time.perf_counter(); s.search(q, 10)\n"
        "    ts.append(time.perf_counter() - t)\n"
        "print(json.dumps(ts))"
    )
    wrapped = code + "\nimport resource\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    out = subprocess.run(
        [PY, "-c", wrapped],
        cwd=root,
        input=json.dumps(qs),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    ts = json.loads(out[0])
    res["search_ms_p50"], res["search_ms_p95"] = 1000 * pct(ts, 50), 1000 * pct(ts, 95)
    res["search_inproc_rss_mb"] = int(out[1]) // 1024
    walls, rsss = [], []
    for q in qs[:20]:
        w, r = timed_cmd([MEMORY, "search", "--json", q], root)
        walls.append(w)
        rsss.append(r)
    res["search_cmd_ms_p50"] = 1000 * statistics.median(walls)
    res["search_cmd_ms_p95"] = 1000 * pct(walls, 95)
    res["search_cmd_rss_mb"] = max(rsss)
    scan, grep = [], []
    for q in qs[:scans]:
        w, _, _ = child(
            "from pathlib import Path\nfrom memrepo.index.fallback import Scanner\n"
            f"Scanner(Path('.')).search({q!r}, 10)",
            root,
        )
        scan.append(w)
        from memrepo.index.query import terms

        args = list(RG_ARGS) if shutil.which("rg") else ["grep", "-rliF", "--include=*.md"]
        for t in terms(q):
            args += ["-e", t]
        w, _ = timed_cmd([*args, "."], root)
        grep.append(w)
    res["scan_python_ms_p50"] = 1000 * statistics.median(scan)
    res["grep_rliF_ms_p50"] = 1000 * statistics.median(grep)
    res["grep_tool"] = "rg -l -i -F" if shutil.which("rg") else "grep -rliF (no rg here)"
    res["scan_mode"] = "rg candidates + Python BM25" if shutil.which("rg") else "pure Python"


ROWS = [
    ("files / chunks", lambda r: f"{r['files']:,} / {r['chunks']:,}"),
    ("rebuild, embedder none (files/s)", lambda r: f"{r['rebuild_none_files_s']:,.0f}"),
    ("rebuild, embedder hash (files/s)", lambda r: f"{r['rebuild_hash_files_s']:,.0f}"),
    ("floor: walk + read files (files/s)", lambda r: f"{r['floor_walk_read_files_s']:,.0f}"),
    ("floor: git cat-file all blobs (files/s)", lambda r: f"{r['floor_git_read_files_s']:,.0f}"),
    (
        "memory.db size none / hash (MB)",
        lambda r: f"{r['rebuild_none_db_mb']:,.0f} / {r['rebuild_hash_db_mb']:,.0f}",
    ),
    (
        "rebuild peak RSS none / hash (MB)",
        lambda r: f"{r['rebuild_none_rss_mb']} / {r['rebuild_hash_rss_mb']}",
    ),
    ("hook fn, 10-file commit (ms, p50)", lambda r: f"{r['hook_fn_ms_p50']:.0f}"),
    ("hook whole process (ms, p50)", lambda r: f"{r['hook_process_ms_p50']:.0f}"),
    ("`memory hook post-commit` (ms, p50)", lambda r: f"{r['memory_hook_cmd_ms_p50']:.0f}"),
    ("hook peak RSS (MB)", lambda r: f"{r['hook_rss_mb']}"),
    (
        "search in-process p50 / p95 (ms)",
        lambda r: f"{r['search_ms_p50']:.1f} / {r['search_ms_p95']:.1f}",
    ),
    (
        "`memory search` process p50 / p95 (ms)",
        lambda r: f"{r['search_cmd_ms_p50']:.0f} / {r['search_cmd_ms_p95']:.0f}",
    ),
    (
        "search peak RSS in-proc / cmd (MB)",
        lambda r: f"{r['search_inproc_rss_mb']} / {r['search_cmd_rss_mb']}",
    ),
    ("no index: `memory search` fallback p50 (ms)", lambda r: f"{r['scan_python_ms_p50']:,.0f}"),
    ("same queries, bare ripgrep file list p50 (ms)", lambda r: f"{r['grep_rliF_ms_p50']:,.0f}"),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="10k,100k")
    ap.add_argument("--commits", type=int, default=5, help="commits per hook variant")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--scans", type=int, default=5, help="queries for the index-free scan")
    ap.add_argument("--skip-rebuild", action="store_true")
    ap.add_argument("--json-out", default=str(HERE / "results" / "bench_index.json"))
    args = ap.parse_args(argv)
    results: dict[str, dict] = {}
    load_start = os.getloadavg()[0]
    for size in args.sizes.split(","):
        root = ensure_repo(size)
        start = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        res: dict = {}
        try:
            if args.skip_rebuild and (root / "memory.db").exists():
                res.update(files=0, chunks=0)
            else:
                bench_rebuild(root, res)
            print(f"[{size}] rebuild done", file=sys.stderr)
            bench_hook(root, res, args.commits)
            print(f"[{size}] hook done", file=sys.stderr)
            bench_search(root, res, queries(size, args.queries), args.scans)
        finally:
            subprocess.run(["git", "reset", "-q", "--hard", start], cwd=root, check=True)
            shutil.rmtree(root / "raw" / "signals", ignore_errors=True)
            subprocess.run([MEMORY, "index"], cwd=root, capture_output=True)
        results[size] = res
        print(f"[{size}] done", file=sys.stderr)
    sizes = list(results)
    print("| measure | " + " | ".join(f"{s} files" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for label, fmt in ROWS:
        cells = []
        for s in sizes:
            try:
                cells.append(fmt(results[s]))
            except KeyError:
                cells.append("n/a")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(
        f"\nload average (1 min) at start / end: {load_start:.2f} / {os.getloadavg()[0]:.2f} "
        f"on {os.cpu_count()} cores (other work on the machine inflates every figure)"
    )
    if len(sizes) == 2:
        a, b = (results[s].get("hook_fn_ms_p50") for s in sizes)
        if a and b:
            print(f"\nhook fn ratio {sizes[1]}/{sizes[0]}: {b / a:.2f}")
    Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json_out).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
