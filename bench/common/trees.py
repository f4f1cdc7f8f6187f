"""Two source trees of memrepo side by side in one run (a client-side A/B): the options,
the trees, and one child process that imports memrepo from a tree (``PYTHONPATH``)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[2]


def add_options(ap: argparse.ArgumentParser) -> None:
    """``--a`` (the baseline tree, optional) and ``--b`` (this checkout by default)."""
    ap.add_argument("--a", type=Path, help="source tree A (holds memrepo/); default: none")
    ap.add_argument("--b", type=Path, default=CHECKOUT, help="source tree B")


def chosen(args: argparse.Namespace) -> dict[str, Path]:
    """{"A": tree, "B": tree}, or only "B" without ``--a``."""
    b = args.b.resolve()
    return {"A": args.a.resolve(), "B": b} if args.a else {"B": b}


def in_turn(trees: dict[str, Path], r: int) -> list[str]:
    """Round ``r``'s order: which tree goes first alternates (the second meets pages the
    first read)."""
    return list(trees) if r % 2 == 0 else list(reversed(trees))


def run_child(script: str, tree: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    """``script --child ARGS`` with memrepo imported from ``tree``: its JSON stdout."""
    full = {**os.environ, **(env or {}), "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, script, "--child", *args], env=full,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def row(label: str, samples: dict[str, list[float]], width: int = 8, digits: int = 1) -> str:
    """``label``, then each tree's median ('-' when it has none), then B / A when both
    have one."""
    import statistics

    med = {n: statistics.median(xs) for n, xs in samples.items() if xs}
    line = label + "".join(f"{med[n]:>{width}.{digits}f}" if n in med else f"{'-':>{width}}"
                           for n in samples)
    if len(med) == 2 and med.get("A"):
        line += f"   {med['B'] / med['A']:.2f}"
    return line
