#!/usr/bin/env python3
"""Index and search figures on generated memory repos of 10K and 100K files, side by side.

    python bench/perf/bench_index.py                 # 10k and 100k (cached under bench/corpus/)
    python bench/perf/bench_index.py --sizes 10k --queries 50

Per size, in one run: full rebuild (default "none" and the hash embedder) against the
floor of walking and reading the same files; incremental index after a 10-file commit,
as the hook function's wall time in-process and as whole processes (a bare Python that
calls the hook, and ``memory hook post-commit``); search p50/p95 in-process and as whole
``memory search`` processes; the index-free scan for the same queries (pure Python, and
ripgrep listing the matching files, or ``grep -rliF`` where rg is not installed); peak RSS of each
child process. Commits made here are undone at the end.

    python bench/perf/bench_index.py --cjk 0.1 [--baseline-python OLD_VENV/bin/python]

``--cjk SHARE`` measures text in scripts written without spaces instead (memrepo.index.cjk):
a copy of each corpus where SHARE of the files also hold a paragraph of generated
Chinese, rebuilt and searched side by side with the plain corpus (index size, the bigram
table's share of it, rebuild files/s and CPU seconds, a Latin query and a Chinese one
in-process, p50 / p95 of CPU time: other work on the machine inflates wall time far
more); ``--baseline-python`` rebuilds and searches the plain corpus with another install
too (the release before the bigram table), so the ratios say what the change costs.
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
sys.path.insert(0, str(HERE.parent / "common"))
from results import add_record_option, record  # noqa: E402

#: ripgrep listing the files that hold any query word (what the fallback starts from)
RG_ARGS = ["rg", "-l", "-i", "-F", "--no-messages", "-g", "*.md"]
CORPUS = HERE.parent / "corpus"
GEN = HERE.parents[2] / "shared" / "bench" / "gen_corpus.py"
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


def child(
    code: str, cwd: Path, env: dict | None = None, py: str = PY, stdin: str | None = None
) -> tuple[float, int, str]:
    """Run python -c CODE; (wall seconds, peak RSS MB of that process, stdout)."""
    wrapped = (
        "import resource, sys\n" + code + "\n"
        "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    )
    t0 = time.perf_counter()
    proc = subprocess.run(
        [py, "-c", wrapped], cwd=cwd, capture_output=True, text=True, env=env, input=stdin
    )
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


# -- text in scripts written without spaces (--cjk) ------------------------------------


def _lexicon(rng: random.Random, n: int = 4000) -> list[str]:
    """Generated Chinese words: mostly two characters, some three, a few one."""
    chars = [chr(c) for c in range(0x4E00, 0x9FA6)]
    out: list[str] = []
    while len(out) < n:
        k = rng.choices((1, 2, 3, 4), (5, 70, 20, 5))[0]
        w = "".join(rng.choice(chars) for _ in range(k))
        if w not in out:
            out.append(w)
    return out


def _paragraph(rng: random.Random, lex: list[str]) -> str:
    """3-6 sentences of Zipf-drawn words, no spaces, a Latin name glued in now and then."""
    weights = [1 / (i + 1) for i in range(len(lex))]
    sents = []
    for _ in range(rng.randint(3, 6)):
        words = rng.choices(lex, weights, k=rng.randint(6, 16))
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words)), rng.choice(["Redis", "Kafka", "Postgres"]))
        sents.append("".join(words) + "。")
    return "".join(sents)


def cjk_repo(size: str, share: float) -> Path:
    """A copy of the ``size`` corpus where ``share`` of the files end with a Chinese
    paragraph, committed (cached beside the plain one)."""
    plain = ensure_repo(size)
    root = CORPUS / f"n{size}-cjk{int(share * 100)}"
    if (root / ".git" / "bench-cjk-ready").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", "--local", str(plain), str(root)], check=True)
    (root / "memory-config.yaml").write_text("{}\n")
    rng = random.Random(5)
    lex = _lexicon(rng)
    md = [ln.split("\t")[0] for ln in (CORPUS / f"n{size}.files.tsv").read_text().splitlines()]
    for rel in rng.sample(md, int(len(md) * share)):
        with open(root / rel, "a", encoding="utf-8") as fh:
            fh.write("\n" + _paragraph(rng, lex) + "\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-q", "--no-verify", "-m", "cjk"], cwd=root, check=True)
    (root / ".git" / "bench-cjk-ready").write_text("")
    return root


def cjk_queries(n: int) -> list[str]:
    """Chinese queries of the corpus's words: one word, two words written together, two
    words with a space; the words drawn from the frequent half of the lexicon."""
    rng = random.Random(9)
    lex = _lexicon(random.Random(5))[:2000]
    two = [w for w in lex if len(w) == 2]
    forms = ["{a}", "{a}{b}", "{a} {b}", "{a}的{b}"]
    return [rng.choice(forms).format(a=rng.choice(two), b=rng.choice(lex)) for _ in range(n)]


CJK_REBUILD = (
    "import resource, sqlite3, time\nfrom pathlib import Path\n"
    "from memrepo.index.indexer import rebuild\n"
    "spent = [0.0]\n"
    "try:\n"  # CPU time inside the bigram table's code (an upper bound: the clock's own cost)
    "    from memrepo.index import cjk\n    add = cjk.add\n"
    "    def timed(*a):\n        t = time.thread_time(); add(*a)\n"
    "        spent[0] += time.thread_time() - t\n"
    "    cjk.add = timed\n"
    "except ImportError:\n    pass\n"
    "r = rebuild(Path('.'), 'none')\n"
    "cpu = sum(x.ru_utime + x.ru_stime for x in (resource.getrusage(resource.RUSAGE_SELF), "
    "resource.getrusage(resource.RUSAGE_CHILDREN)))\n"
    "con = sqlite3.connect('memory.db')\n"
    "size = con.execute('SELECT sum(pgsize) FROM dbstat').fetchone()[0]\n"
    "cjk = con.execute(\"SELECT coalesce(sum(pgsize), 0) FROM dbstat \"\n"
    "                  \"WHERE name LIKE 'chunks_cjk%'\").fetchone()[0]\n"
    "try:\n    rows = con.execute('SELECT count(*) FROM chunks_cjk_docsize').fetchone()[0]\n"
    "except sqlite3.Error:\n    rows = 0\n"
    "print(r.files, r.chunks, r.seconds, size, cjk, rows, cpu, spent[0])"
)
CJK_SEARCH = (
    "import json, sys, time\nfrom pathlib import Path\n"
    "from memrepo.index.search import Searcher\n"
    "s = Searcher(Path('.'))\nout = {}\n"
    "for name, qs in json.loads(sys.stdin.read()).items():\n"
    "    s.search(qs[0], 10)\n    ts, found = [], 0\n"
    "    for q in qs:\n        t = time.process_time(); hits = s.search(q, 10)\n"
    "        ts.append(time.process_time() - t); found += bool(hits)\n"
    "    out[name] = [ts, found]\n"
    "print(json.dumps(out))"
)


def bench_cjk(sizes: list[str], share: float, nq: int, baseline: str | None
              ) -> dict[str, dict[str, str]]:
    """Plain and CJK-bearing corpora side by side (and the plain one under a baseline)."""
    rows: dict[str, dict[str, str]] = {}
    for size in sizes:
        latin = queries(size, nq)
        chinese = cjk_queries(nq)
        runs = [("plain", ensure_repo(size), PY)]
        if baseline:
            runs.insert(0, ("plain, baseline", ensure_repo(size), baseline))
        runs.append((f"{int(share * 100)} % files with Chinese", cjk_repo(size, share), PY))
        got: dict[str, dict] = {}
        for label, root, py in runs:
            _, rss, out = child(CJK_REBUILD, root, py=py)
            files, chunks, secs, size_b, cjk_b, cjk_rows, cpu, spent = out.split()
            asks = {"latin": latin}
            if "Chinese" in label:
                asks["chinese"] = chinese
            _, _, sout = child(CJK_SEARCH, root, py=py, stdin=json.dumps(asks))
            times = json.loads(sout)
            r = {
                "files/s": int(files) / float(secs),
                "rebuild s": float(secs),
                "rebuild CPU s": float(cpu),
                "in cjk.add s": float(spent),
                "chunks": int(chunks),
                "db MB": int(size_b) / 1e6,
                "bigram table MB": int(cjk_b) / 1e6,
                "bigram rows": int(cjk_rows),
                "rss": rss,
            }
            for name, (ts, found) in times.items():
                r[f"{name} p50"] = 1000 * pct(ts, 50)
                r[f"{name} p95"] = 1000 * pct(ts, 95)
                r[f"{name} found"] = found / len(ts)
            got[label] = r
            print(f"[{size}] {label}: {r}", file=sys.stderr)
        base = got[runs[0][0]]
        for label, r in got.items():
            rows[f"{size} {label}"] = {
                "rebuild (files/s, wall)": (
                    f"{r['files/s']:,.0f} ({r['files/s'] / base['files/s']:.2f})"
                ),
                "rebuild CPU, all processes (s)": (
                    f"{r['rebuild CPU s']:,.1f} ({r['rebuild CPU s'] / base['rebuild CPU s']:.2f})"
                ),
                "CPU inside cjk.add, upper bound (s)": (
                    f"{r['in cjk.add s']:.2f} ({r['in cjk.add s'] / r['rebuild CPU s']:.1%})"
                ),
                "memory.db (MB)": f"{r['db MB']:,.0f} ({r['db MB'] / base['db MB']:.2f})",
                "of which chunks_cjk (MB)": f"{r['bigram table MB']:.1f}",
                "chunks / with bigrams": f"{r['chunks']:,} / {r['bigram rows']:,}",
                "Latin query CPU p50 / p95 (ms)": (
                    f"{r['latin p50']:.1f} / {r['latin p95']:.1f} "
                    f"({r['latin p50'] / base['latin p50']:.2f})"
                ),
                "Chinese query CPU p50 / p95 (ms)": (
                    f"{r['chinese p50']:.1f} / {r['chinese p95']:.1f} "
                    f"(answered {r['chinese found']:.0%})"
                    if "chinese p50" in r
                    else "n/a"
                ),
            }
    cols = list(rows)
    print("| measure | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for key in next(iter(rows.values())):
        print(f"| {key} | " + " | ".join(rows[c][key] for c in cols) + " |")
    print(f"\n(ratios in brackets: against the first column of the same size; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)")
    return rows


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
    ap.add_argument("--json-out", help="also write the figures to this file")
    ap.add_argument("--cjk", type=float, metavar="SHARE",
                    help="measure Chinese text instead: SHARE of the files get a paragraph")
    ap.add_argument("--baseline-python", help="with --cjk: another install's python")
    add_record_option(ap)
    args = ap.parse_args(argv)
    if args.cjk:
        rows = bench_cjk(args.sizes.split(","), args.cjk, args.queries, args.baseline_python)
        record(__file__, rows, args, suite="perf-bench_index-cjk")
        return 0
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
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(results, indent=1) + "\n")
    record(__file__, results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
