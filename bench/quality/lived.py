#!/usr/bin/env python3
"""Lived memory: what the agent receives after a conversation's months of sessions.

    .venv/bin/python bench/quality/lived.py                          # dev split, default
    .venv/bin/python bench/quality/lived.py --configs default,minilm
    .venv/bin/python bench/quality/lived.py --data locomo10.json --split test  # held out
    .venv/bin/python bench/quality/lived.py --quick                  # 4 sessions, 30 questions
    .venv/bin/python bench/quality/lived.py --plain                  # transcripts alone

Each LoCoMo conversation is lived through memrepo's real Claude Code hooks, at its own
dates (``$MEMREPO_NOW``), with the scheduled jobs between sessions (bench/quality/
lived_replay.py). Then each question (categories 1-4) is the first prompt of a new
session, and the harness measures (bench/quality/lived_measure.py: the matcher and the
echo rule are documented there):

- evidence in context: evidence turns in the SessionStart briefing + the prompt's recall,
  and in the recall alone;
- evidence in a 4,000-token ``memory compile`` and session R@5 of ``memory search`` on
  the lived repo, beside the same figures on a fresh index of the same conversations
  (bench/quality/eval_compile_locomo.py and eval_locomo.py, run here side by side). The
  fresh index is asked today, and its R@5 again at the lived clock; the lived R@5 is given
  at both clocks too, so that what living did to ranking shows apart from what recency
  does at the lived date;
- ``--plain``: the same sessions through the same hooks with no derived knowledge
  (extraction manual, no scheduled job): the baseline the lived memory must beat;
- echo share of the injected passages; the briefing's size; growth per session (files,
  bytes, commits, MEMORY.md lines, the day's journal); each hook's and detached worker's
  time (from the agents log); LLM requests (the hooks run with an API key pointed at a
  counting mock on 127.0.0.1).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "common"))

from eval_compile_locomo import DATA, harness, resident_model  # noqa: E402
from eval_locomo import by_conversation as fresh_by_conversation  # noqa: E402
from eval_locomo import parse_set  # noqa: E402
from lived_measure import (  # noqa: E402
    TODAY_R5,
    Matcher,
    Question,
    Sessions,
    ask,
    by_conversation,
    compile_and_search,
    summarise,
)
from lived_replay import CountingLLM, hook_times, replay  # noqa: E402
from quality_table import CONFIGS, _sets, coverage  # noqa: E402
from results import add_record_option, record  # noqa: E402

#: the fresh index's session R@5 asked at the lived clock (:func:`fresh`)
LIVED_CLOCK_R5 = "session R@5 at the lived clock"


def asked_at(played: list[Any]) -> dt.datetime:
    """When the questions are asked: 9:00 the day after the last session lived."""
    return dt.datetime.combine(played[-1].when.date() + dt.timedelta(days=1), dt.time(9, 0))


def fresh_rows(settings: dict[str, object], args: list[str], out: Path,
               now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """eval_locomo.py's rows for ``args`` on a fresh index, asked at ``now`` (None:
    today, as the README's figures are)."""
    env = {k: v for k, v in os.environ.items() if k != "MEMREPO_NOW"}
    if now is not None:
        env["MEMREPO_NOW"] = now.isoformat()
    subprocess.run([sys.executable, str(HERE / "eval_locomo.py"), *_sets(settings), *args,
                    "--json-out", str(out), "--no-record"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())[0]["rows"]


def fresh(settings: dict[str, object], split: str, data: Path, tmp: Path, convs: list[Any]
          ) -> dict[str, dict[str, float]]:
    """The fresh-index figures of the same conversations: session R@5 asked today and at
    the lived clock (each conversation at its own :func:`asked_at`, so recency weighs as
    in the lived repo), and 4K-compile evidence; per conversation and "all"."""
    args = ["--split", split, "--data", str(data)]
    r5 = {c: h["session_r5"]
          for c, h in fresh_by_conversation(fresh_rows(settings, args, tmp / "fresh.json")).items()}
    then_rows = [row for conv in convs for row in fresh_rows(
        settings, ["--data", str(data), "--conversations", conv.sample_id],
        tmp / f"fresh-{conv.sample_id}.json", asked_at(conv.sessions))]
    then = {c: h["session_r5"] for c, h in fresh_by_conversation(then_rows).items()}
    os.environ.pop("MEMREPO_NOW", None)  # the compile's subprocess is asked today too
    total, per = coverage(settings, args, tmp / "fresh-compile.json")
    per["all"] = total
    return {c: {"session R@5": r5[c], "evidence in 4K compile %": per.get(c, float("nan")),
                LIVED_CLOCK_R5: then.get(c, float("nan"))} for c in r5}


def live_conversation(conv: Any, settings: dict[str, object], llm: CountingLLM,
                      sessions: int | None, questions: int | None, keep: bool = False,
                      plain: bool = False) -> tuple[list[Question], dict[str, Any]]:
    """Replay one conversation, ask its questions; the questions and the replay's figures."""
    lived = replay(conv, settings, llm, sessions, plain)
    try:
        played = conv.sessions[:sessions]
        gold = {t.dia_id for s in played for t in s.turns}
        qs = [qa for qa in conv.qas if qa.category in (1, 2, 3, 4) and qa.evidence
              and set(qa.evidence) <= gold][:questions]
        when = asked_at(played)
        matcher = Matcher(conv, Sessions(lived).load())
        with resident_model(lived.repo, settings):
            found = ask(lived, conv, matcher, qs, when)
            compile_and_search(lived, matcher, qs, found, when)
        info = {
            "growth": lived.growth, "briefing chars per session": lived.briefings,
            "hooks ms": hook_times(lived.repo), "jobs run": lived.jobs_run,
            "failed hooks": lived.failed_hooks,
        }
        return found, info
    finally:
        if keep:
            print(f"  kept: {lived.repo}", file=sys.stderr)
        else:
            shutil.rmtree(lived.env.base, ignore_errors=True)


def run_config(name: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    settings = {**CONFIGS[name][0], **parse_set(args.set)}
    H = harness()
    convs = [c for c in H.load_locomo(args.data) if c.sample_id in H.SPLITS[args.split]]
    llm = CountingLLM()
    questions: list[Question] = []
    infos: dict[str, Any] = {}
    try:
        for conv in convs:
            found, infos[conv.sample_id] = live_conversation(
                conv, settings, llm, args.sessions, args.questions, args.keep, args.plain)
            questions += found
    finally:
        llm.close()
    lived = by_conversation(questions)
    lived["all"] = summarise(questions)
    base = None if args.no_fresh else fresh(settings, args.split, args.data, tmp, convs)
    return {"lived": lived, "fresh": base, "replay": infos, "llm requests": llm.count}


def table(name: str, res: dict[str, Any]) -> str:
    head = ("| conversation | questions | evidence in context | in recall | lived 4K compile "
            "| fresh 4K compile | lived session R@5 (today's clock) "
            "| fresh session R@5 (lived clock) | echo share | briefing chars |")
    lines = [f"### {name} (LLM requests: {res['llm requests']})", "", head,
             "|" + "---|" * 10]
    for conv, f in res["lived"].items():
        fr = (res["fresh"] or {}).get(conv, {})
        lines.append(
            f"| {conv} | {f['questions']} | {f['evidence in context %']:.1f} % "
            f"| {f['evidence in recall %']:.1f} % | {f['evidence in 4K compile %']:.1f} % "
            f"| {fr.get('evidence in 4K compile %', float('nan')):.1f} % "
            f"| {f['session R@5']:.1f} ({f[TODAY_R5]:.1f}) "
            f"| {fr.get('session R@5', float('nan')):.1f} "
            f"({fr.get(LIVED_CLOCK_R5, float('nan')):.1f}) "
            f"| {f['echo share %']:.1f} % | {f['briefing chars']:.0f} |")
    for conv, info in res["replay"].items():
        g = info["growth"][-1] if info["growth"] else {}
        hooks = ", ".join(f"{k} p50 {v['p50']:.0f} / p95 {v['p95']:.0f} ms"
                          for k, v in info["hooks ms"].items())
        lines += ["", f"{conv}: after {len(info['growth'])} sessions {g}; "
                      f"{info['jobs run']} scheduled jobs, {info['failed hooks']} failed hooks",
                  f"  {hooks}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="default", help="comma-separated, of quality_table")
    ap.add_argument("--set", action="append", default=[],
                    help="search.KEY=VALUE over every configuration")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--sessions", type=int, help="live only each conversation's first N")
    ap.add_argument("--questions", type=int, help="ask at most N per conversation")
    ap.add_argument("--quick", action="store_true", help="--sessions 4 --questions 30")
    ap.add_argument("--no-fresh", action="store_true", help="skip the fresh-index figures")
    ap.add_argument("--keep", action="store_true", help="keep the lived repos (paths on stderr)")
    ap.add_argument("--plain", action="store_true",
                    help="no derived knowledge: no extraction, no scheduled job (the baseline)")
    ap.add_argument("--json-out", type=Path)
    add_record_option(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.sessions, args.questions = args.sessions or 4, args.questions or 30
        args.no_fresh = True
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        ap.error(f"unknown configuration(s) {', '.join(unknown)}; known: {', '.join(CONFIGS)}")
    figures: dict[str, Any] = {"split": args.split, "data": str(args.data)}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            key = f"{name} plain" if args.plain else name
            figures[key] = run_config(name, args, Path(tmp))
            print(table(key, figures[key]) + "\n", flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    record(__file__, figures, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
