#!/usr/bin/env python3
"""LoCoMo dev: are the evidence turns of a question inside ``memory compile``'s context?

    nice -n 10 python bench/quality/eval_compile_locomo.py                 # budget 4000, dev split
    nice -n 10 python bench/quality/eval_compile_locomo.py --budget 8000 --json-out /tmp/x.json

The question the context compiler answers is not "rank the right session first" but "is
what the model needs inside the prompt": so for each question (categories 1–4) the share
of its evidence turns whose text lies inside a compiled section, beside the baseline every
runtime has for free, a sliding window of the most recent BUDGET tokens of the same
conversation (counted with the same token estimator).

Corpus: the harness's own writer (../shared/eval/locomo_retrieval.py, imported, not
copied) writes each conversation's transcripts; the corpus is then made a memory repo
the way bench/quality/eval_locomo.py does it — ``memory-config.yaml`` with the defaults, ``git
init``, one commit, ``memory index`` — rather than inside a ``memory init`` repo, so that
the whole budget is knowledge: an init repo's template identity files and MEMORY.md
would take P0/P1 tokens that say nothing about the conversation. Each question is
compiled in-process (``compile_context``, the code ``memory compile --json`` runs; its
sections carry the same path and line spans) with hits not recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
from eval_locomo import parse_set  # noqa: E402  (the same --set as the search eval)
from results import add_record_option, record  # noqa: E402

from memrepo.resources import memory_command  # noqa: E402

EVAL = HERE.parents[2] / "shared" / "eval"
HARNESS = EVAL / "locomo_retrieval.py"
DATA = EVAL / "data" / "locomo10_dev.json"
GIT = ["git", "-c", "user.name=eval", "-c", "user.email=eval@example.com"]


def harness() -> ModuleType:
    """The shared harness module, imported from its path."""
    spec = importlib.util.spec_from_file_location("locomo_retrieval", HARNESS)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["locomo_retrieval"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def make_repo(root: Path, settings: dict[str, object]) -> None:
    """The harness corpus as a memory repo: config (defaults + ``--set``), a commit, an index."""
    lines = ["search:"] + [f"  {k}: {json.dumps(v)}" for k, v in settings.items()]
    cfg = "\n".join(lines) + "\n" if settings else "{}\n"
    (root / "memory-config.yaml").write_text(cfg, encoding="utf-8")
    (root / ".gitignore").write_text("memory.db*\n.memrepo/\nraw/signals/\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-q", "--no-verify", "-m", "corpus"], cwd=root, check=True)
    subprocess.run([*memory_command(), "index"], cwd=root, check=True, capture_output=True)


def inside(loc: Any, spans: dict[str, list[tuple[int, int]]]) -> bool:
    """The turn's text line (the one after its ``##`` header) is in an included span."""
    line = loc.start_line + 1
    return any(a <= line <= b for a, b in spans.get(loc.file, ()))


def window_turns(corpus: Any, budget: int, count: Any) -> set[str]:
    """Dialog ids inside the most recent ``budget`` tokens of the conversation."""
    locs = [loc for f in corpus.files for loc in corpus.file_turns[f]]
    kept: set[str] = set()
    used = 0
    for loc in reversed(locs):
        used += count(corpus.turn_text(loc)) + 1
        if used > budget:
            break
        kept.add(loc.dia_id)
    return kept


def tune_p3(limit: int | None, per_file: int | None) -> dict[str, int]:
    """Experiment only: change how many passages P3 asks of search (memrepo/compile untouched)."""
    from memrepo.context import retrieve as retr

    if limit is not None:
        retr.LIMIT = limit
        retr.retrieve.__defaults__ = (limit, *retr.retrieve.__defaults__[1:])
    if per_file is not None:
        retr.PER_FILE = per_file
    return {"limit": retr.retrieve.__defaults__[0], "per_file": retr.PER_FILE}


def evaluate(
    budget: int, split: str, work: Path, settings: dict[str, object], build: bool = True,
    data: Path = DATA,
) -> dict[str, Any]:
    H = harness()
    from memrepo.context.tokens import estimate_tokens
    from memrepo.repo import discover

    convs = [c for c in H.load_locomo(data) if c.sample_id in H.SPLITS[split]]
    stats: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    per_conv: dict[str, dict[str, float]] = {}
    for conv in convs:
        root = work / conv.sample_id
        corpus = H.build_corpus(conv, root)
        if build or not (root / "memory.db").exists():
            make_repo(root, settings)
        repo = discover(root)
        recent = window_turns(corpus, budget, estimate_tokens)
        mine: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        with resident_model(root, settings):
            compile_questions(conv, corpus, repo, budget, recent, mine)
        per_conv[conv.sample_id] = {k: sum(st[k] for st in mine.values())
                                    for k in ("questions", "evidence", "compiled")}
        for cat, st in mine.items():
            for k, x in st.items():
                stats[cat][k] += x
    return {"budget": budget, "split": split, "by_category": {k: dict(v) for k, v in stats.items()},
            "by_conversation": per_conv}


@contextlib.contextmanager
def resident_model(root: Path, settings: dict[str, object]) -> Iterator[None]:
    """A heavy embedder (MiniLM) answers compile's queries only through ``memory serve``
    (a compile never loads the model): run one for this corpus, as a user would."""
    from memrepo.index.embedders import get_embedder
    from memrepo.resident import serve

    emb = get_embedder(str(settings.get("embedder") or "none"))
    if emb is None or getattr(emb, "light", True):
        yield
        return
    serve.start_detached(root)
    try:
        yield
    finally:
        serve.stop(root)


def compile_questions(conv: Any, corpus: Any, repo: Any, budget: int, recent: set[str],
                      stats: dict[int, dict[str, float]]) -> None:
    from memrepo.context.compiler import CompileRequest, compile_context

    for qa in conv.qas:
        if qa.category not in (1, 2, 3, 4) or not qa.evidence:
            continue
        req = CompileRequest(qa.question, budget=budget, record_hits=False)
        res = compile_context(repo, req)
        spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for s in res.as_json()["sections"]:
            spans[s["path"]].append((s["start_line"], s["end_line"]))
        got = [inside(corpus.by_dia[d], spans) for d in qa.evidence]
        win = [d in recent for d in qa.evidence]
        st = stats[qa.category]
        st["questions"] += 1
        st["evidence"] += len(got)
        st["compiled"] += sum(got)
        st["window"] += sum(win)
        st["q_all_compiled"] += all(got)
        st["q_all_window"] += all(win)
        st["tokens"] += res.tokens


def table(res: dict[str, Any]) -> str:
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
    cats = res["by_category"]
    total: dict[str, float] = defaultdict(float)
    for v in cats.values():
        for k, x in v.items():
            total[k] += x
    head = (
        f"LoCoMo {res['split']}: evidence turns inside a {res['budget']}-token context "
        f"(P3 asks search for {res['p3']['limit']} passages, {res['p3']['per_file']} per file;"
        f" search overrides {res['search'] or 'none'})\n"
        f"{'category':14} {'questions':>9} {'evidence':>8} {'compile':>8} {'window':>8} "
        f"{'q all: compile':>15} {'window':>7} {'mean tokens':>11}"
    )
    rows = [head]
    for key, st in [*((names[c], cats[c]) for c in sorted(cats)), ("overall 1-4", total)]:
        n, e = st["questions"], st["evidence"]
        rows.append(
            f"{key:14} {n:9.0f} {e:8.0f} {100 * st['compiled'] / e:7.1f}% "
            f"{100 * st['window'] / e:7.1f}% {100 * st['q_all_compiled'] / n:14.1f}% "
            f"{100 * st['q_all_window'] / n:6.1f}% {st['tokens'] / n:11.0f}"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=int, default=4000)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--data", type=Path, default=DATA,
                    help="LoCoMo JSON (the full locomo10.json for --split test: held out)")
    ap.add_argument("--keep", type=Path, help="build the repos here (kept) instead of a tmp dir")
    ap.add_argument("--set", action="append", default=[], help="search.KEY=VALUE override")
    ap.add_argument("--p3-limit", type=int, help="experiment: passages P3 asks of search")
    ap.add_argument("--p3-per-file", type=int, help="experiment: passages per file")
    ap.add_argument("--json-out", help="also write the figures to this file")
    add_record_option(ap)
    args = ap.parse_args(argv)
    p3 = tune_p3(args.p3_limit, args.p3_per_file)
    settings = parse_set(args.set)
    if args.keep:  # a kept repo is built once and reused
        args.keep.mkdir(parents=True, exist_ok=True)
        res = evaluate(args.budget, args.split, args.keep, settings, build=False, data=args.data)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            res = evaluate(args.budget, args.split, Path(tmp), settings, data=args.data)
    res["p3"], res["search"] = (
        p3,
        settings,
    )
    print(table(res))
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    record(__file__, {"budget": args.budget, "split": args.split, **res}, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
