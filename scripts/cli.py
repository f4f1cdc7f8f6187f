"""The ``memory`` command: a Click group whose subcommands are imported only when used.

Hooks call ``memory`` on every commit, so startup must not import every script (and
their dependencies) just to run one.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from memrepo import __version__, cliargs, namespaces
from memrepo.errors import MemrepoError

#: name -> "module:attribute" of the click command; the porcelain first, plumbing after.
COMMANDS: dict[str, str] = {
    "init": "memrepo.scripts.init:init",
    "config": "memrepo.scripts.config:config",
    "doctor": "memrepo.scripts.doctor:doctor",
    "hook": "memrepo.scripts.hook:hook",
    "index": "memrepo.scripts.index:index",
    "search": "memrepo.scripts.search:search",
    "remember": "memrepo.scripts.signals:remember",
    "reinforce": "memrepo.scripts.signals:reinforce",
    "demote": "memrepo.scripts.signals:demote",
    "update": "memrepo.scripts.update:update",
    "links": "memrepo.scripts.links:links",
    "mcp": "memrepo.scripts.mcp:mcp",
    "serve": "memrepo.scripts.serve:serve",
    "install": "memrepo.scripts.install:install",
    "uninstall": "memrepo.scripts.install:uninstall",
    "plugin": "memrepo.scripts.plugin:plugin",
    "capture": "memrepo.scripts.capture:capture",
    "commit": "memrepo.scripts.commit:commit",
    "sync": "memrepo.scripts.sync:sync",
    "clone": "memrepo.scripts.clone:clone",
    "remote": "memrepo.scripts.remote:remote",
    "private": "memrepo.scripts.private:private",
    "shared": "memrepo.scripts.shared:shared",
    "merge-driver": "memrepo.scripts.merge_driver:merge_driver",
    "verify": "memrepo.scripts.verify:verify",
    "compile": "memrepo.scripts.compile:compile_cmd",
    "topics": "memrepo.scripts.topics:topics",
    "trim": "memrepo.scripts.trim:trim",
    "flush": "memrepo.scripts.flush:flush",
    "extract": "memrepo.scripts.extract:extract",
    "condense": "memrepo.scripts.condense:condense",
    "prune": "memrepo.scripts.prune:prune",
    "explore": "memrepo.scripts.explore:explore",
    "tag": "memrepo.scripts.tag:tag",
    "log": "memrepo.scripts.tag:log_at",
    "export": "memrepo.scripts.export:export_cmd",
    "reconstruct": "memrepo.scripts.reconstruct:reconstruct",
    "import": "memrepo.scripts.migrate:import_cmd",
    "schedule": "memrepo.scripts.schedule:schedule",
}


REPO_HELP = "The memory repo (default: $MEMORY_REPO, else the nearest one above the cwd)."


def _take_repo(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """A ``--repo`` given after a subcommand: it becomes the repo every command reads
    (``ctx.obj["repo"]``, one dict shared by all the contexts); the deepest one wins."""
    if value is None:
        return
    root = ctx.find_root()
    if root.obj is None:
        root.obj = {}
    root.obj["repo"] = value
    if ctx.obj is None:
        ctx.obj = root.obj


def accepts_repo(hidden: bool = False) -> Any:
    """Decorator: the command takes ``--repo PATH`` itself (shown in its help unless
    ``hidden``), as well as before it (``memory --repo PATH COMMAND``)."""
    return click.option("--repo", type=click.Path(file_okay=False), expose_value=False,
                        is_eager=True, hidden=hidden, callback=_take_repo, help=REPO_HELP)


def _accept_repo_everywhere(cmd: click.Command) -> click.Command:
    """Give ``cmd`` and its subcommands a hidden ``--repo``: an agent's hook line (``memory
    compile --format claude-code-hook --repo ~/mem``) must not be a usage error (exit 2,
    which Claude Code reads as "block the prompt")."""
    if not any(p.name == "repo" for p in cmd.params):
        accepts_repo(hidden=True)(cmd)
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            _accept_repo_everywhere(sub)
    return cmd


class NamespaceParam(click.ParamType):
    """A namespace's name (:func:`memrepo.namespaces.check`): a bad one is a usage error,
    for every command that takes one."""

    name = "namespace"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        try:
            return namespaces.check(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


NAMESPACE = NamespaceParam()


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *COMMANDS]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS:
            module, attr = COMMANDS[name].split(":")
            return _accept_repo_everywhere(getattr(importlib.import_module(module), attr))
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--repo",
    "repo",
    type=click.Path(file_okay=False),
    envvar="MEMORY_REPO",
    help=REPO_HELP + " Also accepted after any subcommand.",
)
@click.option(
    "--namespace",
    "namespace",
    metavar="NAME",
    type=NAMESPACE,
    callback=lambda _ctx, _param, value: _act_in(value),
    expose_value=False,
    help="Act as the agent of this namespace ($MEMREPO_NAMESPACE; docs/namespaces.md).",
)
@click.version_option(__version__, prog_name="memory")
@click.pass_context
def cli(ctx: click.Context, repo: str | None) -> None:
    """memrepo: a git repository as the long-term memory of an AI agent."""
    ctx.obj = {"repo": repo}


def _act_in(namespace: str | None) -> None:
    """``memory --namespace NAME …``: this process and what it starts act in NAME."""
    if namespace is not None:
        os.environ[cliargs.NAMESPACE_ENV] = namespace


def main(argv: list[str] | None = None) -> Any:
    """Entry point: MemrepoError becomes a one-line message and exit status 1.

    So do OSError (a file that vanished, a full disk, a permission), UnicodeDecodeError
    and UnicodeEncodeError of undecodable input (stdin or an argument that is not UTF-8
    reaches Python as lone surrogates), and RecursionError (input nested deeper than any
    reader expects): they are about the person's input, not memrepo's code, though the
    readers should have named the file first. Anything else is a bug and keeps its
    traceback; ``MEMORY_DEBUG=1`` shows the traceback of these too.
    """
    try:
        return cli.main(args=argv, prog_name="memory", standalone_mode=False)
    except MemrepoError as exc:
        click.echo(f"memory: {exc}", err=True)
        return 1
    except (OSError, UnicodeDecodeError, UnicodeEncodeError, RecursionError) as exc:
        if os.environ.get("MEMORY_DEBUG") or (
                isinstance(exc, UnicodeEncodeError) and not _undecodable(exc)):
            raise
        click.echo(f"memory: {system_error(exc)}", err=True)
        return 1
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        return 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code


def _undecodable(exc: UnicodeEncodeError) -> bool:
    """Whether the text that could not be encoded holds lone surrogates: bytes that were
    not UTF-8 when read (stdin, an argument), not a character UTF-8 cannot represent."""
    return any(0xD800 <= ord(c) <= 0xDFFF for c in exc.object[exc.start : exc.end])


def system_error(exc: OSError | UnicodeError | RecursionError) -> str:
    """One line naming the file (when the OS says which) and what went wrong."""
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply to read (a file, or stdin, that nests lists or " \
               "objects thousands of levels deep)"
    if isinstance(exc, UnicodeEncodeError):
        char = exc.object[exc.start]
        byte = f"0x{ord(char) - 0xDC00:02x}" if 0xDC80 <= ord(char) <= 0xDCFF else "?"
        return (f"the input (stdin or an argument) is not UTF-8 text (byte {byte} at "
                f"character {exc.start})")
    if isinstance(exc, UnicodeDecodeError):
        byte = exc.object[exc.start : exc.start + 1].hex()
        return f"a file is not UTF-8 text (byte 0x{byte} at offset {exc.start})"
    what = exc.strerror or str(exc) or type(exc).__name__
    where = exc.filename if exc.filename is not None else None
    if where is not None and exc.filename2 is not None:
        where = f"{where} -> {exc.filename2}"
    return f"{where}: {what}" if where is not None else what


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
