"""Racing symlink swaps against ``memory_read``: the real ``memory mcp`` over stdio.

A hostile process beside the agent swaps what a path names while the MCP server reads
it. Each class runs ``--reads`` ``memory_read`` calls through a real MCP client against
``memory mcp`` (a separate process) while a thread swaps, and counts the answers that
hold the text of a file outside the repo:

  file-swap     a note swapped, atomically and again and again, for a link to outside
  folder-swap   the folder on the way swapped for a link to the outside folder
  symlink       a note that is a link to outside (no race)
  hard-link     a note that is a hard link to an outside file (no race)
  traversal     refs that climb out (``../``, absolute, ``raw/../../``)

    .venv/bin/python bench/torture/read_race.py --quick   # 300 reads a class (< 1 min)
    .venv/bin/python bench/torture/read_race.py           # 2000 reads a class

Prints the counts, a final ``SUMMARY`` line, and exits 1 when an outside read happened
or a call failed other than by a clear refusal.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
# after the standard library: this folder's secrets.py is a harness, not the stdlib module
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]
sys.path.append(str(Path(__file__).resolve().parents[1] / "common"))  # results.py
from common import Env, make_env  # noqa: E402
from results import add_record_option, record_summary  # noqa: E402

SECRET = "OUTSIDE-THE-REPO-canary"
INSIDE = "---\ntype: reference\n---\n- an ordinary note inside the repo\n"
TRAVERSALS = ("../away/swap.md", "knowledge/../../away/swap.md", "/etc/passwd",
              "raw/../../away/swap.md", "knowledge/reference/../../../away/swap.md")


def swap_file(target: Path, outside: Path, stop: threading.Event) -> None:
    """``target`` between an ordinary note and a link to ``outside``, atomically."""
    tmp = target.with_name(".swap-tmp")
    while not stop.is_set():
        for out in (True, False):
            tmp.unlink(missing_ok=True)
            if out:
                tmp.symlink_to(outside)
            else:
                tmp.write_text(INSIDE)
            os.replace(tmp, target)


def swap_folder(box: Path, outside: Path, stop: threading.Event) -> None:
    """``box`` between a folder holding an ordinary ``swap.md`` and a link to the
    folder holding the outside one."""
    real, link = box.with_name(".box-real"), box.with_name(".box-link")
    while not stop.is_set():
        os.rename(box, real)
        os.rename(link, box)
        os.rename(box, link)
        os.rename(real, box)


async def reads(env: Env, refs: list[str], n: int) -> Counter:
    """``n`` memory_read calls over ``refs`` in turn: outside / inside / refused."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=env.memory, args=["--repo", str(env.repo), "mcp"],
                                   env=env.env, cwd=str(env.repo))
    seen: Counter = Counter()
    async with Client(params) as client:
        for i in range(n):
            r = await client.call_tool("memory_read", {"ref": refs[i % len(refs)]})
            text = "".join(getattr(c, "text", "") for c in r.content)
            seen["outside" if SECRET in text else "refused" if r.is_error else "inside"] += 1
    return seen


def run_class(env: Env, name: str, refs: list[str], n: int,
              swapper: Callable[[threading.Event], None] | None) -> Counter:
    stop = threading.Event()
    t = threading.Thread(target=swapper, args=(stop,), daemon=True) if swapper else None
    if t:
        t.start()
    try:
        seen = asyncio.run(reads(env, refs, n))
    finally:
        stop.set()
        if t:
            t.join()
    print(f"{name:12} reads={n} outside={seen['outside']} inside={seen['inside']} "
          f"refused={seen['refused']}")
    return seen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reads", type=int, default=2000, help="memory_read calls a class")
    ap.add_argument("--quick", action="store_true", help="300 reads a class")
    ap.add_argument("--memory", help="the memory executable (default: beside this python)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary repo")
    add_record_option(ap)
    a = ap.parse_args()
    n = 300 if a.quick else a.reads
    started = time.monotonic()
    env = make_env(a.memory)
    env.env["MEMREPO_NO_RESIDENT"] = "1"  # served in-process: no resident outlives the run
    away = env.base / "away"
    away.mkdir()
    outside = away / "swap.md"
    outside.write_text(f"---\ntype: reference\n---\n- {SECRET}\n")
    ref_dir = env.repo / "knowledge/reference"
    ref_dir.mkdir(parents=True, exist_ok=True)
    counts: dict[str, Counter] = {}
    try:
        target = ref_dir / "swap.md"
        target.write_text(INSIDE)
        counts["file-swap"] = run_class(env, "file-swap", ["knowledge/reference/swap.md"], n,
                                        lambda stop: swap_file(target, outside, stop))
        box = env.repo / "knowledge/box"
        box.mkdir()
        (box / "swap.md").write_text(INSIDE)
        box.with_name(".box-link").symlink_to(away, target_is_directory=True)
        counts["folder-swap"] = run_class(env, "folder-swap", ["knowledge/box/swap.md"], n,
                                          lambda stop: swap_folder(box, outside, stop))
        (ref_dir / "link.md").symlink_to(outside)
        counts["symlink"] = run_class(env, "symlink", ["knowledge/reference/link.md"],
                                      max(n // 10, 10), None)
        os.link(outside, ref_dir / "hard.md")
        counts["hard-link"] = run_class(env, "hard-link", ["knowledge/reference/hard.md"],
                                        max(n // 10, 10), None)
        counts["traversal"] = run_class(env, "traversal", list(TRAVERSALS),
                                        max(n // 10, 10), None)
    finally:
        if a.keep:
            print(f"kept: {env.base}")
        else:
            shutil.rmtree(env.base, ignore_errors=True)
    total = sum(sum(c.values()) for c in counts.values())
    leaked = sum(c["outside"] for c in counts.values())
    summary = (f"SUMMARY classes={len(counts)} reads={total} outside_reads={leaked} "
               + " ".join(f"{k}={c['outside']}/{sum(c.values())}" for k, c in counts.items())
               + f" seconds={time.monotonic() - started:.0f}")
    print(summary)
    record_summary(__file__, summary, a)
    return 1 if leaked else 0


if __name__ == "__main__":
    sys.exit(main())
