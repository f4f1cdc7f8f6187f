"""``memory compile MESSAGE``: the prompt an agent runtime sends with its next model call.

``--format claude-code-hook`` reads a Claude Code SessionStart / UserPromptSubmit hook
payload on stdin and answers with ``additionalContext`` within the 10,000 characters those
hooks inject. SessionStart gets the fixed slots (P0 identity, P1 memory, journals,
projects); UserPromptSubmit gets what depends on the prompt (P2 topics, P3 knowledge),
since the fixed slots are already in the session. The text is shown as every agent hook
shows stored text (memrepo.context.sections.stored): fenced, topics labelled as the
user's instructions, the rest as reference data. A hook never blocks the prompt: on any
error it prints nothing and says why on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from memrepo.context.sections import steering
from memrepo.errors import MemrepoError
from memrepo.repo import discover

HOOK_CHAR_CAP = 10_000
HOOK_SLOTS = {"SessionStart": frozenset({0, 1}), "UserPromptSubmit": frozenset({2, 3})}


@click.command("compile")
@click.argument("message", nargs=-1)
@click.option("--budget", type=click.IntRange(min=1), help="Token budget (default: config).")
@click.option(
    "--session",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Session history: a transcript (.md) or a messages JSON / JSONL.",
)
@click.option("--shared", is_flag=True, help="A shared session: leave MEMORY.md out.")
@click.option("--json", "as_json", is_flag=True, help="Sections with path, span, tokens, why.")
@click.option("--explain", is_flag=True, help="Also say what was left out and why.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "claude-code-hook"]),
    default="text",
    show_default=True,
)
@click.option("--event", "events", multiple=True, help="cron:NAME or webhook:SOURCE:EVENT.")
@click.pass_context
def compile_cmd(
    ctx: click.Context,
    message: tuple[str, ...],
    budget: int | None,
    session: Path | None,
    shared: bool,
    as_json: bool,
    explain: bool,
    fmt: str,
    events: tuple[str, ...],
) -> None:
    """Assemble the densest prompt for MESSAGE within the token budget."""
    from memrepo.context.compiler import CompileRequest, compile_context

    if fmt == "claude-code-hook":
        _hook(ctx, budget, shared)
        return
    repo = discover((ctx.obj or {}).get("repo"))
    _check_events(repo.root, events)
    req = CompileRequest(" ".join(message), budget, session, shared, list(events),
                         cwd=_here())  # the project it runs in: its rules (docs/scopes.md)
    result = compile_context(repo, req)
    if as_json:
        click.echo(json.dumps(result.as_json(explain), indent=1, ensure_ascii=False))
        return
    click.echo(result.prompt())
    steer = steering(result.topics.corrections() if result.topics else [])
    if steer:  # the output watchers the --session's last reply fired
        click.echo("\n" + steer)
    if explain:
        _explain(result)


def _here() -> str | None:
    """The current folder, None when it is gone."""
    try:
        return os.getcwd()
    except OSError:
        return None


def _check_events(root: Path, events: tuple[str, ...]) -> None:
    """Each ``--event`` well formed, and each ``cron:NAME`` one a cron topic fires, as
    ``memory schedule fire`` checks it (memrepo.context.watchers.fired.unknown_cron)."""
    for ev in events:
        if not ev.startswith(("cron:", "webhook:")):
            raise MemrepoError(f"--event wants cron:NAME or webhook:SOURCE:EVENT, got {ev!r}")
    crons = [ev for ev in events if ev.startswith("cron:")]
    if not crons:
        return
    from memrepo.context.watchers.fired import unknown_cron
    from memrepo.context.watchers.loader import load_topics

    topics = load_topics(root)
    for ev in crons:
        unknown = unknown_cron(topics, ev)
        if unknown:
            raise click.BadParameter(unknown, param_hint="'--event'")


def _explain(result: object) -> None:
    """What was chosen, left out and why, on stderr (stdout stays the prompt)."""
    d = result.as_json(explain=True)  # type: ignore[attr-defined]
    err = sys.stderr
    print(f"# {d['tokens']} of {d['budget']} tokens", file=err)
    for s in d["sections"]:
        span = f"{s['start_line']}-{s['end_line']}"
        print(f"+ {s['slot']} {s['kind']} {s['path']}:{span} {s['tokens']}t  {s['why']}", file=err)
    for o in d["omitted"]:
        print(f"- {o['slot']} {o['kind']} {o['path']}: {o['reason']}", file=err)
    for t in d.get("dropped_topics", []):
        print(f"- topic {t['topic']}: {t['reason']}", file=err)
    if d.get("gate_mode") == "offline":
        print("# gate offline: tier-2 similarity thresholds decided in its place", file=err)
    for n in d["notes"]:
        print(f"! {n}", file=err)


def _hook_request(raw: str) -> tuple[str, str, str | None]:
    """(event, prompt, cwd) of a hook payload, or ValueError saying what is wrong with it."""
    try:
        payload = json.loads(raw or "{}")
    except ValueError as exc:
        raise ValueError(f"hook payload is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise ValueError("hook payload is not a JSON object")
    fields: dict[str, str | None] = {}
    for key in ("hook_event_name", "prompt", "cwd"):
        value = payload.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"hook payload field {key!r} is not a string")
        fields[key] = value or None
    event = fields["hook_event_name"] or "UserPromptSubmit"
    return event, fields["prompt"] or "", fields["cwd"]


def _hook(ctx: click.Context, budget: int | None, shared: bool) -> None:
    """Run as a Claude Code hook: never block the prompt. Any failure (a bad payload, no
    repo, a broken file) prints nothing on stdout, exits 0 and says why in one stderr line."""
    from memrepo.agents.recall import BRIEF_INTRO, RECALL_INTRO
    from memrepo.context.compiler import CompileRequest, compile_context
    from memrepo.context.sections import stored_fit, stored_overhead

    try:
        event, message, cwd = _hook_request(sys.stdin.read())
        if event not in HOOK_SLOTS:  # PreCompact, SessionEnd, PostCompact… take no context
            return
        repo = discover((ctx.obj or {}).get("repo"), cwd=cwd)
        slots = HOOK_SLOTS[event]
        # what the agent hooks' brief and recall say they are, above the fences
        intro = BRIEF_INTRO if event == "SessionStart" else RECALL_INTRO
        req = CompileRequest(
            message=message,
            budget=budget,
            shared=shared,
            slots=slots,
            max_chars=HOOK_CHAR_CAP - stored_overhead(intro, topics=2 in slots),
            cwd=cwd,
        )
        # stored text as every hook shows it: fenced, topics labelled as instructions
        prompt, _ = stored_fit(intro, compile_context(repo, req).sections, HOOK_CHAR_CAP)
    except (MemrepoError, ValueError, OSError) as exc:
        _hook_skipped(str(exc))
        return
    except Exception as exc:  # a hook must not block the prompt, whatever went wrong
        _hook_skipped(f"{type(exc).__name__}: {exc}")
        return
    if prompt:
        out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": prompt}}
        click.echo(json.dumps(out, ensure_ascii=False))


def _hook_skipped(reason: str) -> None:
    """The one stderr line a skipped hook leaves (stdout stays empty: nothing injected)."""
    click.echo(f"memory compile: hook skipped: {' '.join(reason.split())}", err=True)
