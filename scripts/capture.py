"""``memory capture start|append|tool|attach|end|import``: conversations into transcripts.

An agent (or its harness) calls ``start`` once, ``append``/``tool``/``attach`` per turn and
``end`` when the session is over; ``end`` commits the transcript at once
(``conversation: <slug>`` with a ``Session:`` trailer). ``import`` turns a whole log from
another tool into closed transcripts in one go. Secrets are redacted before anything is
written. The session id may come from ``--session`` or ``MEMORY_SESSION``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import click

from memrepo.agents.state import LOG
from memrepo.context.watchers.feedback import judge_ended
from memrepo.documents import parse_datetime
from memrepo.repo import discover
from memrepo.transcript import capture as cap
from memrepo.transcript.capture import text_from_bytes

_session_opt = click.option(
    "--session", "session_id", envvar="MEMORY_SESSION", required=True, metavar="ID",
    help="The session id (default: $MEMORY_SESSION).",
)


def _root(ctx: click.Context) -> Path:
    return discover((ctx.obj or {}).get("repo"), op="capture").root


def _text(text: str | None) -> tuple[str, str]:
    """(the turn's text, where it came from): TEXT, else stdin read as bytes and decoded
    strictly, so bytes that are not UTF-8 are an error naming stdin, not a mangled turn."""
    if text is not None:
        return text, "TEXT"
    if sys.stdin is None or sys.stdin.isatty():
        raise click.UsageError("give the text as an argument or on stdin")

    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
    return text_from_bytes(data, "stdin"), "stdin"


def _when(value: str | None) -> dt.datetime | None:
    if not value:
        return None

    try:
        parsed = parse_datetime(value)
        if parsed is not None and not parsed.tzinfo:
            parsed = parsed.astimezone()
    except (ValueError, OverflowError):
        raise click.BadParameter(f"{value!r} is out of the range of datetimes") from None
    if parsed is None:
        raise click.BadParameter(f"not an ISO 8601 datetime: {value!r}")
    return parsed


@click.group()
def capture() -> None:
    """Capture conversations as immutable, redacted transcripts under raw/conversations/."""


@capture.command()
@click.option("--session", "session_id", envvar="MEMORY_SESSION", metavar="ID",
              help="Session id (default: a new ses_xxxxxxxx).")
@click.option("--model", help="Model the agent runs on, e.g. claude-opus-4.6.")
@click.option("--channel", help="Where the conversation happens: webchat, cli, slack…")
@click.option("--topic", help="What the session is about (also makes the slug).")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable; commas split too).")
@click.option("--timezone", help="Zone for turn times: IANA name or +HH:MM (default: local).")
@click.option("--started", help="Start time, ISO 8601 (default: now).")
@click.option("--json", "as_json", is_flag=True,
              help="Print {session_id, path, provisional} as JSON.")
@click.pass_context
def start(ctx: click.Context, session_id: str | None, model: str | None, channel: str | None,
          topic: str | None, tags: tuple[str, ...], timezone: str | None, started: str | None,
          as_json: bool) -> int:
    """Open a transcript and print its path (the session id is on stderr).

    With --topic the path is final. Without it the slug is not known yet (it comes from
    the first messages): the file is opened as HHMM-ID-session.md and `end` renames it,
    printing the final path; use `end`'s output, not this one, to find the closed transcript.
    """
    tag_list = [t.strip() for raw in tags for t in raw.split(",") if t.strip()]
    session = cap.start(_root(ctx), session_id=session_id, model=model, channel=channel,
                        topic=topic, tags=tag_list, timezone=timezone, started=_when(started))
    if as_json:
        click.echo(json.dumps({"session_id": session.session_id, "path": session.path,
                               "provisional": session.provisional_slug}))
    else:
        click.echo(session.path)
        click.echo(f"session {session.session_id}", err=True)
    return 0


@capture.command()
@_session_opt
@click.option("--role", type=click.Choice(["user", "agent", "system"]), required=True)
@click.option("--memory", is_flag=True, help="A memory operation turn (`agent [memory]`).")
@click.option("--at", "at", help="Time of the turn, ISO 8601 (default: now).")
@click.argument("text", required=False)
@click.pass_context
def append(ctx: click.Context, session_id: str, role: str, memory: bool, at: str | None,
           text: str | None) -> int:
    """Append one turn: TEXT, or stdin when TEXT is not given."""
    said, source = _text(text)
    count = cap.append(_root(ctx), session_id, role, said, memory=memory, when=_when(at),
                       source=source)
    if count:
        click.echo(f"redacted {count} secret(s)", err=True)
    return 0


@capture.command()
@_session_opt
@click.argument("name")
@click.argument("args", required=False, default="")
@click.argument("result", required=False, default="")
@click.pass_context
def tool(ctx: click.Context, session_id: str, name: str, args: str, result: str) -> int:
    """Record a tool call as one line: `> [tool:NAME] ARGS → RESULT`."""
    cap.tool(_root(ctx), session_id, name, args, result)
    return 0


@capture.command()
@_session_opt
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--role", type=click.Choice(["user", "agent", "system"]),
              help="Whose turn it belongs to (default: the current turn's).")
@click.option("--name", help="File name to store it under (default: FILE's name).")
@click.pass_context
def attach(ctx: click.Context, session_id: str, file: Path, role: str | None,
           name: str | None) -> int:
    """Store FILE under attachments/ and reference it: `> [attachment:PATH]`."""
    click.echo(cap.attach(_root(ctx), session_id, file, role=role, name=name))
    return 0


@capture.command()
@_session_opt
@click.option("--tokens-in", type=int, help="Input tokens used in the session.")
@click.option("--tokens-out", type=int, help="Output tokens used in the session.")
@click.option("--no-commit", is_flag=True, help="Close the transcript but do not commit.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def end(ctx: click.Context, session_id: str, tokens_in: int | None, tokens_out: int | None,
        no_commit: bool, as_json: bool) -> int:
    """Close the transcript (end time, counts, knowledge changes), commit it, print its path.

    The printed path is the final one: a session started without --topic is renamed here
    after its first messages. If the commit is refused (a hook), the transcript is reopened
    exactly as it was and nothing stays staged; fix the cause and run `end` again.
    """
    root = _root(ctx)
    done = cap.end(root, session_id, tokens_in=tokens_in, tokens_out=tokens_out,
                   commit=not no_commit)
    judge_ended(root, done)
    if as_json:
        click.echo(json.dumps(done.as_json()))
    else:
        click.echo(done.path)
        if done.commit:
            click.echo(f"committed {done.commit[:10]}", err=True)
    return 0


@capture.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "claude-code", "anthropic", "openai", "chatgpt",
                                 "markdown"]),
              help="The log's format.")
@click.option("--session", "session_id", metavar="ID", help="Session id (default: from the log).")
@click.option("--started", help="Start time for logs without timestamps (default: file mtime).")
@click.option("--timezone", help="Zone for turn times (default: local).")
@click.option("--model", help="Model, when the log does not say.")
@click.option("--channel", help="Channel to record (default: the format's name).")
@click.option("--no-commit", is_flag=True, help="Write the transcripts but do not commit.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def import_(ctx: click.Context, file: Path, fmt: str, session_id: str | None,
            started: str | None, timezone: str | None, model: str | None,
            channel: str | None, no_commit: bool, as_json: bool) -> int:
    """Convert a whole conversation log (or a ChatGPT export) into closed transcripts.

    Importing the same session again is detected and skipped.
    """
    from memrepo.transcript.importers.run import import_file

    results = import_file(
        _root(ctx), file, fmt, session_id=session_id, started=_when(started),
        timezone=timezone, model=model, channel=channel, commit=not no_commit,
    )
    if as_json:
        click.echo(json.dumps([r.__dict__ for r in results], indent=2))
        return 0
    for r in results:
        click.echo(f"{r.status:<9} {r.path}" + (f"  ({r.detail})" if r.detail else ""))
    return 0



@capture.command()
@click.option("--dir", "base", type=click.Path(file_okay=False, path_type=Path),
              help="Claude Code's projects folder (default: $CLAUDE_CONFIG_DIR/projects or "
                   "~/.claude/projects).")
@click.option("--idle-hours", type=click.FloatRange(min=0), default=None,
              help="Close sessions idle this long (default: 3).")
@click.option("--scheduled", is_flag=True,
              help="As the scheduled job: do nothing until an agent hook has run with "
                   "this repo.")
@click.pass_context
def sweep(ctx: click.Context, base: Path | None, idle_hours: float | None,
          scheduled: bool) -> int:
    """Capture every agent session log not captured yet, or grown since.

    Claude Code deletes its session logs after 30 days, and a session whose hooks did not
    run (or that crashed) would be lost: each log's new turns go to its session's
    transcript, and a session idle for --idle-hours is closed and committed. Sessions
    captured from Codex or Gemini hooks that have been idle as long are closed too.
    """
    from memrepo.agents.worker import close_idle, log_owner
    from memrepo.transcript.follow import IDLE_CLOSE
    from memrepo.transcript.sweep import sweep as run_sweep

    root = _root(ctx)
    if scheduled and not (root / LOG).exists():
        click.echo("no agent hook has run with this repo: nothing to sweep", err=True)
        return 0
    idle = dt.timedelta(hours=idle_hours) if idle_hours is not None else IDLE_CLOSE
    failed = 0
    for done, error in run_sweep(root, base, idle_close=idle, after_end=judge_ended,
                                 owner=log_owner(root)):
        if done is None:
            failed += 1
            click.echo(f"memory: {error}", err=True)
            continue
        what = "closed" if done.closed else "appended"
        turns = f"{done.appended} turn(s)" if done.appended else ""
        click.echo(f"{what:<9} {done.path or '-'}  {turns}  ({done.log})".rstrip()
                   + (f"  {done.note}" if done.note else ""))
    for path in close_idle(root, idle.total_seconds()):
        click.echo(f"{'closed':<9} {path}")
    return 1 if failed else 0
