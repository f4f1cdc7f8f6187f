#!/usr/bin/env python3
"""Extraction quality: what the offline extractors and condensers derive, against
LoCoMo's own annotations (issue 39).

    .venv/bin/python bench/quality/extraction.py                      # dev split, offline
    .venv/bin/python bench/quality/extraction.py --quick              # 4 sessions each
    .venv/bin/python bench/quality/extraction.py --data locomo10.json --split test
    .venv/bin/python bench/quality/extraction.py --calibrate          # the matcher's grid

Each conversation is lived through memrepo's real Claude Code hooks at its own dates,
with the scheduled jobs between sessions (bench/quality/lived_replay.py; the hooks run
with an API key pointed at a counting mock, so extraction is offline unless LLM use is
switched on). Then every derived entry (a ``knowledge/`` or journal line with ``[src:
…]``, a MEMORY.md line, a person file's line) is compared with the conversation's
annotated observations and session summaries (bench/quality/extraction_match.py: the
matcher and its calibration on the hand-labelled sample extraction_labels.jsonl).
Printed per conversation: observation recall, precision, entries by kind, person files
that are not people, entries that only restate a title or a count, and the matcher's
agreement with the sample. ``--show N`` lists N missed observations and imprecise
entries of each conversation; ``--repos FILE`` measures lived repos kept before
(``{"conv-26": {"repo": PATH, "ids": {"1": "cc-…"}}}``) instead of replaying.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "common"))

from eval_compile_locomo import DATA, harness  # noqa: E402
from extraction_match import (  # noqa: E402
    COS,
    LEX,
    Conversation,
    Embeddings,
    Matcher,
    derived,
    measure,
    person_files,
    references,
    states_turn,
)
from results import add_record_option, record  # noqa: E402

LABELS = HERE / "extraction_labels.jsonl"


def load_labels(path: Path = LABELS) -> tuple[list[dict[str, Any]], dict[str, bool]]:
    """(the labelled pairs, name -> is a person) of the sample."""
    pairs, people = [], {}
    if path.is_file():
        for line in path.read_text("utf-8").splitlines():
            if not line.strip():
                continue
            obj = json.loads(line)
            if "person" in obj:
                people[str(obj["name"]).lower()] = bool(obj["person"])
            else:
                pairs.append(obj)
    return pairs, people


def agreement(pairs: list[dict[str, Any]], emb: Embeddings, lex: float = LEX,
              cos: float = COS, convs: dict[str, Conversation] | None = None
              ) -> tuple[float, float, int, int]:
    """(share of the labelled pairs the matcher decides as labelled, Cohen's kappa, pairs
    labelled no it says yes to, pairs labelled yes it says no to). A turn pair is decided
    as the precision measure decides it (:func:`states_turn`)."""
    if not pairs:
        return float("nan"), float("nan"), 0, 0
    said, truth = [], []
    for p in pairs:
        c = (convs or {}).get(p["conv"])
        names = frozenset(n.lower() for n in c.speakers) if c else frozenset()
        m = Matcher(names, emb, lex, cos)
        if p["ref_kind"] == "turn" and c is not None:
            obs = next((rs for text, rs in c.informative(p["session"]) if text == p["ref"]), [])
            said.append(states_turn(m, p["entry"], p["ref"], obs))
        else:
            said.append(m.states(p["entry"], p["ref"]))
        truth.append(bool(p["label"]))
    n = len(pairs)
    agree = sum(a == b for a, b in zip(said, truth, strict=True)) / n
    pa, pb = sum(said) / n, sum(truth) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    kappa = (agree - chance) / (1 - chance) if chance < 1 else 1.0
    wrong = [b for a, b in zip(said, truth, strict=True) if a != b]
    return 100 * agree, kappa, wrong.count(False), wrong.count(True)


def calibrate(pairs: list[dict[str, Any]], emb: Embeddings,
              convs: dict[str, Conversation]) -> None:
    """The agreement of each (LEX, COS) on the sample, best first; then each
    conversation's agreement under the thresholds the other conversations choose."""
    cos_values = [x / 100 for x in range(50, 96, 5)] if emb.model else [9.0]
    grid_values = [(x / 100, c) for x in range(10, 91, 5) for c in cos_values]

    def best(sample: list[dict[str, Any]]) -> list[tuple[float, float, float, float]]:
        return sorted(((*agreement(sample, emb, lex, cos, convs)[:2], lex, cos)
                       for lex, cos in grid_values), reverse=True)

    grid = best(pairs)
    print(f"calibration on {len(pairs)} labelled pairs "
          f"({sum(bool(p['label']) for p in pairs)} positive):")
    for acc, kappa, lex, cos in grid[:8]:
        print(f"  LEX {lex:.2f} COS {cos:.2f}: agreement {acc:.1f} %, kappa {kappa:.2f}")
    for name in sorted({p["conv"] for p in pairs}):
        _, _, lex, cos = best([p for p in pairs if p["conv"] != name])[0]
        held = [p for p in pairs if p["conv"] == name]
        acc, kappa, *_ = agreement(held, emb, lex, cos, convs)
        print(f"  {name} held out ({len(held)} pairs): LEX {lex:.2f} COS {cos:.2f} chosen on "
              f"the others, agreement {acc:.1f} %, kappa {kappa:.2f}")


def titles_of(repo: Path, ids: dict[int, str]) -> dict[int, list[str]]:
    """Session -> the titles its transcript carries (heading, topic)."""
    from memrepo.transcript.read import read_transcript

    out: dict[int, list[str]] = {}
    for p in (repo / "raw").rglob("*.md"):
        rel = p.relative_to(repo).as_posix()
        for num, sid in ids.items():
            if sid in rel:
                try:
                    t = read_transcript(repo, rel)
                    out[num] = [t.title, t.topic]
                except Exception:
                    out[num] = [p.stem]
    return out


def conversation(sample: dict[str, Any], conv: Any) -> Conversation:
    turns = {t.dia_id: (s.num, t.text) for s in conv.sessions for t in s.turns}
    return Conversation(references(sample), turns, tuple(conv.speakers))


def measure_repo(repo: Path, ids: dict[int, str], sample: dict[str, Any], conv: Any,
                 emb: Embeddings, known: dict[str, bool]) -> dict[str, Any]:
    """The figures of one lived repo (``ids``: LoCoMo session -> memrepo session id)."""

    def session_of(ref: str) -> int | None:
        hits = {n for n, sid in ids.items() if sid in ref}
        return hits.pop() if len(hits) == 1 else None

    c = conversation(sample, conv)
    c.refs = {n: refs for n, refs in c.refs.items() if n in ids}  # the sessions lived
    c.titles = titles_of(repo, ids)
    m = Matcher(frozenset(n.lower() for n in conv.speakers), emb)
    return measure(derived(repo, session_of), person_files(repo), c, m, known)


def total(per: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The conversations' figures pooled (recall over all observations, precision over
    all entries)."""
    obs = sum(f["observations"] for f in per.values()) or 1
    ent = sum(f["entries"] for f in per.values()) or 1
    return {
        "observations": sum(f["observations"] for f in per.values()),
        "observation recall %": sum(f["observation recall %"] * f["observations"]
                                    for f in per.values()) / obs,
        "entries": sum(f["entries"] for f in per.values()),
        "precision %": sum(f["precision %"] * f["entries"] for f in per.values()) / ent,
        "person files": sum(f["person files"] for f in per.values()),
        "person files not people": sum(len(f["person files not people"]) for f in per.values()),
        "person files unlabelled": sum(len(f["person files unlabelled"]) for f in per.values()),
        "title or count only": sum(f["title or count only"] for f in per.values()),
    }


def table(per: dict[str, dict[str, Any]], overall: dict[str, Any]) -> str:
    lines = ["| conversation | observations | observation recall | entries | precision "
             "| person files | not people | unlabelled | title/count only | entries by kind |",
             "|" + "---|" * 10]
    for name, f in [*per.items(), ("all", overall)]:
        np_ = f["person files not people"]
        un = f["person files unlabelled"]
        np_ = len(np_) if isinstance(np_, list) else np_
        un = len(un) if isinstance(un, list) else un
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(f.get("entries by kind", {}).items()))
        lines.append(f"| {name} | {f['observations']} | {f['observation recall %']:.1f} % "
                     f"| {f['entries']} | {f['precision %']:.1f} % | {f['person files']} "
                     f"| {np_} | {un} | {f['title or count only']} | {kinds} |")
    return "\n".join(lines)


def lived_repos(args: argparse.Namespace, convs: list[Any], llm: Any) -> Any:
    """(conversation, repo, ids, what to remove after) for each conversation: kept ones
    (``--repos``) or replayed now (the hooks' API key pointed at ``llm``, a counting mock)."""
    if args.repos:
        kept = json.loads(args.repos.read_text())
        for conv in [c for c in convs if c.sample_id in kept]:
            k = kept[conv.sample_id]
            yield conv, Path(k["repo"]), {int(n): s for n, s in k["ids"].items()}, None
        return
    from lived_replay import replay

    for conv in convs:
        lived = replay(conv, {}, llm, args.sessions)
        yield conv, lived.repo, dict(lived.session_ids), lived.env.base


def report(per: dict[str, dict[str, Any]], figures: dict[str, Any], show: int) -> None:
    """The table, the matcher's agreement, the person files that are not people and, with
    ``show``, that many misses and imprecise entries of each conversation."""
    m = figures["matcher"]
    print(table(per, figures["all"]))
    print(f"\nmatcher ({m['rule']}) agreement with {m['labelled pairs']} hand-labelled "
          f"pairs: {m['agreement %']:.1f} % (kappa {m['kappa']:.2f}); yes to "
          f"{m['yes to labelled no']} labelled no, no to {m['no to labelled yes']} labelled "
          f"yes; LLM requests: {figures['LLM requests']}")
    for name, f in per.items():
        if f["person files not people"] or f["person files unlabelled"]:
            print(f"{name}: not people {f['person files not people']}, "
                  f"unlabelled {f['person files unlabelled']}")
        for key in ("_missed", "_imprecise")[: 2 if show else 0]:
            print(f"\n{name} {key[1:]} ({len(f[key])}):")
            print("\n".join(f"  {x}" for x in f[key][:show]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--sessions", type=int, help="live only each conversation's first N")
    ap.add_argument("--quick", action="store_true", help="--sessions 4")
    ap.add_argument("--repos", type=Path, help="measure kept lived repos (JSON map)")
    ap.add_argument("--keep", action="store_true", help="keep the lived repos (paths on stderr)")
    ap.add_argument("--no-embed", action="store_true", help="lexical matcher only")
    ap.add_argument("--calibrate", action="store_true", help="the matcher's grid, then exit")
    ap.add_argument("--show", type=int, default=0, help="list N misses and imprecise entries")
    ap.add_argument("--json-out", type=Path)
    add_record_option(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.sessions = args.sessions or 4
    H = harness()
    every = H.load_locomo(args.data)
    convs = [c for c in every if c.sample_id in H.SPLITS[args.split]]
    raw = {s["sample_id"]: s for s in json.loads(args.data.read_text("utf-8"))}
    emb = Embeddings(not args.no_embed)
    pairs, known = load_labels()
    labelled = {c.sample_id: conversation(raw[c.sample_id], c)
                for c in every if c.sample_id in {p["conv"] for p in pairs}}
    if args.calibrate:
        calibrate(pairs, emb, labelled)
        return 0
    from lived_replay import CountingLLM

    per: dict[str, dict[str, Any]] = {}
    llm = CountingLLM()
    try:
        for conv, repo, ids, base in lived_repos(args, convs, llm):
            try:
                per[conv.sample_id] = measure_repo(repo, ids, raw[conv.sample_id], conv, emb,
                                                   known)
            finally:
                if base is not None and not args.keep:
                    shutil.rmtree(base, ignore_errors=True)
                elif base is not None:
                    print(f"  kept: {repo} {json.dumps(ids)}", file=sys.stderr)
    finally:
        llm.close()
    acc, kappa, fp, fn = agreement(pairs, emb, convs=labelled)
    figures = {"split": args.split, "data": str(args.data), "sessions": args.sessions,
               "LLM requests": None if args.repos else llm.count,
               "matcher": {"rule": f"LEX {LEX}" + (f", MiniLM COS {COS}" if emb.model else ""),
                           "labelled pairs": len(pairs), "agreement %": acc, "kappa": kappa,
                           "yes to labelled no": f"{fp} of {sum(not p['label'] for p in pairs)}",
                           "no to labelled yes": f"{fn} of {sum(bool(p['label']) for p in pairs)}"},
               "all": total(per),
               **{k: {x: y for x, y in f.items() if not x.startswith("_")}
                  for k, f in per.items()}}
    report(per, figures, args.show)
    if args.json_out:
        args.json_out.write_text(json.dumps({**figures, "detail": per}, indent=1) + "\n",
                                 encoding="utf-8")
    record(__file__, figures, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
