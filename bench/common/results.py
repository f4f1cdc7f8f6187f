"""Record a benchmark run in bench/results/: the only place figures accumulate.

Every script that prints final figures ends with ``record(__file__, figures, args)``:
it writes ``bench/results/YYYY-MM-DD-<suite>.json`` (the commit and whether the tree was
dirty, the machine: cores, load, Python, platform; the command line; the figures) and a
matching ``.md`` (the same, as a short table). A second run on the same day gets ``-2``,
then ``-3``: nothing is overwritten. ``<suite>`` is the script's group and name
(``perf-bench_commit``, ``quality-eval_locomo``, ``torture-kill``). ``--no-record`` (see
``add_record_option``) skips it. Standard library only, so every script stays fast to import.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[2]
RESULTS = CHECKOUT / "bench" / "results"


def add_record_option(ap: argparse.ArgumentParser) -> None:
    """``--no-record``: print the figures only, write nothing under bench/results/."""
    ap.add_argument("--no-record", action="store_true",
                    help="do not write the run to bench/results/ (written by default)")


def suite_of(script: str | Path) -> str:
    """``bench/perf/bench_commit.py`` -> ``perf-bench_commit``."""
    p = Path(script).resolve()
    return f"{p.parent.name}-{p.stem}"


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine() -> dict[str, Any]:
    """Cores, load averages (1, 5, 15 min), Python and platform of this run."""
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"nproc": os.cpu_count(), "loadavg": load,
            "python": platform.python_version(), "platform": platform.platform()}


def _flat(figures: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts as ``a / b`` rows, for the .md table."""
    if isinstance(figures, dict) and figures:
        rows: list[tuple[str, Any]] = []
        for k, v in figures.items():
            rows += _flat(v, f"{prefix} / {k}" if prefix else str(k))
        return rows
    return [(prefix or "value", figures)]


def _cell(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, default=str)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 100 else text[:97] + "..."


def _markdown(run: dict[str, Any]) -> str:
    m = run["machine"]
    load = ", ".join(str(x) for x in m["loadavg"]) if m["loadavg"] else "?"
    dirty = " (uncommitted changes)" if run["dirty"] else ""
    lines = [
        f"# {run['suite']}, {run['date']}",
        "",
        f"- commit: {run['commit'] or '?'}{dirty}",
        f"- machine: {m['nproc']} cores, load {load}; Python {m['python']}; {m['platform']}",
        f"- command: `{run['command']}`",
        "",
        "| figure | value |",
        "| --- | --- |",
    ]
    lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in _flat(run["figures"])]
    return "\n".join(lines) + "\n"


def _claim(stem: str) -> tuple[Path, Path]:
    """The first free ``stem``, ``stem-2``, ``stem-3`` … (the .json created exclusively,
    so two runs finishing at once do not share a name)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        name = stem if n == 1 else f"{stem}-{n}"
        js, md = RESULTS / f"{name}.json", RESULTS / f"{name}.md"
        if not md.exists():
            try:
                with open(js, "x", encoding="utf-8"):
                    return js, md
            except FileExistsError:
                pass
        n += 1


def record(script: str | Path, figures: dict[str, Any],
           args: argparse.Namespace | None = None, *, suite: str | None = None) -> Path | None:
    """Write this run's .json and .md under bench/results/ and return the .json's path;
    None (nothing written) when ``args.no_record`` is set."""
    if args is not None and getattr(args, "no_record", False):
        return None
    suite = suite or suite_of(script)
    date = dt.date.today().isoformat()
    run = {
        "suite": suite,
        "date": date,
        "time": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "machine": machine(),
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "figures": figures,
    }
    js, md = _claim(f"{date}-{suite}")
    js.write_text(json.dumps(run, indent=1, default=str) + "\n", encoding="utf-8")
    md.write_text(_markdown(run), encoding="utf-8")
    print(f"recorded {js.relative_to(CHECKOUT)}", file=sys.stderr)
    return js


_PAIR = re.compile(r"([A-Za-z_][\w.-]*)=(\S+?)(?=[\s,;]|$)")


def summary_figures(line: str) -> dict[str, Any]:
    """A torture harness's ``SUMMARY`` line as figures: the line itself, each ``k=v`` pair
    and the verdict (``OK``/``FAIL`` when the line ends with one)."""
    figures: dict[str, Any] = {"summary": line.strip()}
    for k, v in _PAIR.findall(line):
        figures[k] = v
    last = line.split()[-1] if line.split() else ""
    if last in ("OK", "FAIL"):
        figures["verdict"] = last
    return figures


def record_summary(script: str | Path, line: str, args: argparse.Namespace | None = None,
                   **extra: Any) -> Path | None:
    """``record`` for a torture harness: its SUMMARY line's counts (plus ``extra``)."""
    return record(script, {**summary_figures(line), **extra}, args)
