"""``memory topics match|list|log|feedback|tune``: the watchers from the command line."""

from __future__ import annotations

import json

import click

from memrepo.context.watchers.feedback import give
from memrepo.context.watchers.gate import read_log
from memrepo.repo import discover


@click.group("topics")
def topics() -> None:
    """Topic watchers: which topics a message activates, and how the gate behaves."""


@topics.command("match")
@click.argument("message", nargs=-1)
@click.option("--output", "output", help="The agent's own text: report corrective topics.")
@click.option("--event", "events", multiple=True, help="cron:NAME or webhook:SOURCE:EVENT.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--explain", is_flag=True, help="Also list candidates that were dropped, and why.")
@click.pass_context
def match(
    ctx: click.Context,
    message: tuple[str, ...],
    output: str | None,
    events: tuple[str, ...],
    as_json: bool,
    explain: bool,
) -> None:
    """Topics MESSAGE activates (and, with --output, corrections for the agent's text)."""
    from memrepo.context.watchers.match import match_topics

    repo = discover((ctx.obj or {}).get("repo"))
    cfg = repo.config["watchers"]
    results = []
    said = " ".join(message)
    if said or events or not output:
        results.append(match_topics(repo.root, said, events=list(events), config=cfg))
    if output:
        results.append(match_topics(repo.root, output, scope="output", config=cfg))
    if as_json:
        merged: dict = {"activated": [], "dropped": [], "corrections": [], "problems": []}
        for r in results:
            d = r.as_json()
            for k in ("activated", "dropped", "corrections"):
                merged[k] += d[k]
            merged["problems"] = d["problems"]
            merged["gate_mode"] = d["gate_mode"]
        click.echo(json.dumps(merged, indent=1, ensure_ascii=False))
        return
    for r in results:
        for a in r.activated:
            click.echo(f"{a.topic.name}  [{a.topic.priority}]  {a.reason}")
        for t, hint in r.corrections():
            click.echo(f"  correction ({t}): {hint}")
        if explain:
            for a in r.dropped:
                click.echo(f"- {a.topic.name}: dropped: {a.reason}")
            if r.gate_mode == "offline":
                click.echo("(gate offline: tier-2 thresholds decide in its place)")
            for p in r.problems:
                click.echo(f"! {p.path}: {p.message}")
    if not any(r.activated for r in results):
        click.echo("no topic activated")


@topics.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """Every topic, its triggers and activation, and the problems that disabled any."""
    from memrepo.context.watchers.loader import load_topics

    repo = discover((ctx.obj or {}).get("repo"))
    ts = load_topics(repo.root)
    if as_json:
        data = {
            "topics": [
                {
                    "name": t.name,
                    "path": t.path,
                    "activation": t.activation,
                    "priority": t.priority,
                    "triggers": [t2.spec for t2 in t.triggers],
                    "subscriptions": t.subscriptions,
                    "description": t.description,
                }
                for t in ts.topics
            ],
            "problems": [
                {"path": p.path, "message": p.message, "skipped": p.skipped} for p in ts.problems
            ],
        }
        click.echo(json.dumps(data, indent=1, ensure_ascii=False, default=str))
        return
    for t in ts.topics:
        kinds = ", ".join(sorted({tr.kind for tr in t.triggers})) or "no triggers"
        click.echo(f"{t.name}  {t.activation}/{t.priority}  ({kinds})  {t.path}")
    for p in ts.problems:
        state = "skipped" if p.skipped else "partly used"
        click.echo(f"! {p.path}: {p.message} ({state})")
    if not ts.topics:
        click.echo("no topics")


@topics.command("log")
@click.option("--limit", "-n", default=20, show_default=True, help="Most recent decisions.")
@click.option("--topic", help="Only this topic.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def log(ctx: click.Context, limit: int, topic: str | None, as_json: bool) -> None:
    """The most recent watcher/gate decisions (.memrepo/gate-log.jsonl)."""
    repo = discover((ctx.obj or {}).get("repo"))
    entries = [e for e in read_log(repo.root) if topic is None or e.get("topic") == topic]
    entries = entries[-limit:] if limit > 0 else entries
    if as_json:
        click.echo(json.dumps(entries, indent=1))
        return
    for e in entries:
        state = "ON " if e.get("active") else "off"
        t1 = ",".join(e.get("tier1") or []) or "-"
        gate = e.get("gate") or "-"
        useful = {True: "yes", False: "no"}.get(e.get("was_useful"), "-")
        by = f" ({e['useful_by']})" if e.get("useful_by") else ""
        click.echo(
            f"{e.get('ts', '?')}  {e.get('id', '?')}  {state} {e.get('topic')}  tier1={t1} "
            f"tier2={e.get('tier2')} gate={gate} ({e.get('source')}) useful={useful}{by}"
        )
    if not entries:
        click.echo("no decisions logged")


@topics.command("feedback")
@click.argument("decision")
@click.option("--useful/--not-useful", "useful", default=None,
              help="Whether the topic this decision activated helped.")
@click.option("--why", help="A note kept with the verdict.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def feedback(ctx: click.Context, decision: str, useful: bool | None, why: str | None,
             as_json: bool) -> None:
    """Say whether decision DECISION (an id from `memory topics log`, or a unique prefix)
    helped: its was_useful, which `memory topics tune` counts. A person's verdict
    overrules the one a session's end judged; the log itself is only appended to."""
    if useful is None:
        raise click.UsageError("say --useful or --not-useful")
    repo = discover((ctx.obj or {}).get("repo"))
    d = give(repo.root, decision, useful, why)
    if as_json:
        click.echo(json.dumps(d, indent=1))
        return
    click.echo(f"{d['id']}  {d.get('topic')}: {'useful' if useful else 'not useful'}")


@topics.command("tune")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def tune(ctx: click.Context, as_json: bool) -> None:
    """Per topic: how often each tier fired, gate yes/no rates, how many activations were
    judged useful (useful/judged), threshold suggestions."""
    from memrepo.context.watchers.tune import collect

    repo = discover((ctx.obj or {}).get("repo"))
    stats = collect(read_log(repo.root))
    if as_json:
        click.echo(json.dumps([s.as_json() for s in stats], indent=1))
        return
    if not stats:
        click.echo("no decisions logged yet (memory compile and memory topics match log them)")
        return
    click.echo(
        f"{'topic':<24} {'cand':>5} {'on':>5} {'t1':>5} {'t2':>5} {'yes':>5} {'no':>5} {'off':>5}"
        f" {'useful':>7}"
    )
    for s in stats:
        d = s.as_json()
        t1 = sum(s.tier1.values())
        useful = f"{s.useful}/{s.judged}" if s.judged else "-"
        click.echo(
            f"{s.topic[:24]:<24} {s.candidates:>5} {s.activated:>5} {t1:>5} {s.tier2_only:>5} "
            f"{s.gate_yes:>5} {s.gate_no:>5} {s.offline:>5} {useful:>7}"
        )
        if d["suggestion"]:
            click.echo(f"  -> {d['suggestion']}")
