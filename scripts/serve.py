"""``memory serve``: keep the sentence model loaded for this clone's hooks and searches.

A heavy embedder (minilm) is slow to load (bench/perf/bench_resident.py); hooks and a single
``memory search`` never pay it: they ask this process over a local socket (within
memrepo.index.remote.QUERY_BUDGET_S) and fall back to FTS5 alone when it is not there. It
also embeds, in the background, the chunks commits left without vectors. ``memory mcp``
hosts the same server while it runs when none is up.
"""

from __future__ import annotations

import json

import click

from memrepo.errors import MemrepoError
from memrepo.repo import discover


@click.command("serve")
@click.option("--foreground", "mode", flag_value="foreground", default=True,
              help="Run here until stopped (Ctrl-C, --stop, idle timeout). The default.")
@click.option("--detach", "mode", flag_value="detach",
              help="Start in the background; return once the model is loaded.")
@click.option("--stop", "mode", flag_value="stop", help="Stop this clone's server.")
@click.option("--status", "mode", flag_value="status", help="Say whether one runs, and how.")
@click.option("--idle", type=click.FloatRange(min=1), metavar="SECONDS",
              help="Stop after this long without a request (default: never).")
@click.option("--model", help="Embedder to serve (default: the index's, else search.embedder).")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.pass_context
def serve(ctx: click.Context, mode: str, idle: float | None, model: str | None,
          as_json: bool) -> None:
    """Serve the sentence model to hooks and searches over a local socket."""
    from memrepo.agents.resident import SERVICES
    from memrepo.resident.serve import run_foreground, start_detached, status, stop
    from memrepo.resident.server import AlreadyRunning

    repo = discover((ctx.obj or {}).get("repo"))

    def out(info: dict, text: str) -> None:
        click.echo(json.dumps(info, indent=1) if as_json else text)

    if mode == "status":
        st = status(repo.root)
        if st["running"]:
            text = (f"running: pid {st['pid']}, {st['model']} "
                    f"({'loaded' if st['loaded'] else 'loading'}), {st['rss_mb']} MB, "
                    f"cache {st['cache']} queries, socket {st['socket']}")
            text += "\n" + _nearest_line(st.get("nearest") or {})
            text += "\n" + _ops_line(st.get("ops") or {}, st.get("cpu_s"))
        else:
            text = "not running" + (f" ({st['note']})" if st.get("note") else "")
        out(st, text)
        return
    if mode == "stop":
        stopped = stop(repo.root)
        out({"stopped": stopped}, "stopped" if stopped else "no server was running")
        return
    if mode == "detach":
        st = start_detached(repo.root, model, idle, entry="memrepo.agents.resident")
        out(st, f"started: pid {st['pid']}, {st['model']} loaded in "
                f"{st.get('load_seconds') or 0:.2f}s")
        return
    try:
        run_foreground(repo.root, model, idle,
                       echo=None if as_json else lambda m: click.echo(m, err=True),
                       services=SERVICES)
    except AlreadyRunning as exc:
        raise MemrepoError(str(exc)) from None


def _nearest_line(nr: dict) -> str:
    """How the server answers ``nearest`` (its ANN index, or exact numpy and why)."""
    if not nr:
        return "nearest: not offered by this server"
    text = f"nearest: {nr.get('via')}, {nr.get('vectors', 0):,} vectors ({nr.get('state')}"
    if nr.get("progress"):
        text += " {:,} of {:,}".format(*nr["progress"])
    text += ")"
    if nr.get("why_exact"):
        text += f"; {nr['why_exact']}"
    return text


def _ops_line(ops: dict, cpu_s: float | None) -> str:
    """What the requests answered so far cost, per kind: how many, and the mean time and
    CPU of one (the model's own threads count in the process's CPU only)."""
    parts = [f"{op} {o['requests']} x {1000 * o['seconds'] / o['requests']:.1f} ms "
             f"(CPU {1000 * o['cpu_s'] / o['requests']:.1f})"
             for op, o in ops.items() if o.get("requests")]
    text = "requests: " + (", ".join(parts) if parts else "none yet")
    return text + (f"; process CPU {cpu_s:.1f} s" if cpu_s is not None else "")
