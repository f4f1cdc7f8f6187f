"""``memory mcp``: serve the memory repo to an agent over MCP (stdio, or HTTP with --http),
and ``memory mcp token``: the bearer tokens of the HTTP server.

An agent (Claude Code, Codex, Gemini CLI) starts ``memory mcp`` and talks JSON-RPC on its
stdin and stdout; nothing else may print there. The repo is found before the protocol
starts, so a wrong ``--repo`` is one line on stderr and exit status 1, not a server that
fails every call. The MCP SDK is imported here only: no other command pays its slow import
(bench/perf/bench_mcp.py times the server's start). Plain ``memory mcp`` rarely gets
here: the fast path (memrepo.scripts.fastpath) relays it to the resident server.
"""

from __future__ import annotations

import json

import click

from memrepo.repo import discover
from memrepo.scripts.cli import NAMESPACE, accepts_repo


@click.group("mcp", invoke_without_command=True)
@accepts_repo(hidden=True)
@click.option("--http", "listen", metavar="[HOST:]PORT",
              help="Serve the same tools over streamable HTTP at /mcp instead of stdio "
                   "(HOST defaults to 127.0.0.1; another host needs a token).")
@click.option("--oauth", "with_oauth", is_flag=True,
              help="With --http: also be the OAuth 2.1 server connectors log in to; each "
                   "login is approved with a code from `memory mcp oauth approve`.")
@click.option("--public-url", metavar="https://HOST",
              help="With --oauth: the address clients reach (a reverse proxy's or "
                   "tailscale serve's); default the bound one (loopback only).")
@click.pass_context
def mcp(ctx: click.Context, listen: str | None, with_oauth: bool,
        public_url: str | None) -> None:
    """Serve memory to an agent over MCP on stdio (tools: search, context, read,
    remember, update, reinforce, demote), or over HTTP with --http.

    Over HTTP every request needs `Authorization: Bearer TOKEN` once a token exists
    (`memory mcp token create NAME`); see docs/remote-mcp.md for TLS and the agents.
    """
    if ctx.invoked_subcommand is not None:
        if listen is not None:
            raise click.UsageError("--http serves; it takes no subcommand")
        return
    if (with_oauth and listen is None) or (public_url and not with_oauth):
        raise click.UsageError("--oauth goes with --http, --public-url with --oauth")
    repo = discover((ctx.obj or {}).get("repo"))
    if listen is not None:
        from memrepo.agents.mcp_http import serve_http

        serve_http(repo.root, listen, lambda text: click.echo(f"memory mcp: {text}", err=True),
                   with_oauth=with_oauth, public_url=public_url)
        return
    from memrepo.agents.mcp_server import serve

    serve(repo.root)


@mcp.group("token")
def token() -> None:
    """Bearer tokens for `memory mcp --http` (kept hashed in the clone's git dir)."""


@token.command("create")
@accepts_repo()
@click.argument("name")
@click.option("--read-only", is_flag=True,
              help="Search, context and read only: the writing tools are hidden and refused.")
@click.option("--namespace", metavar="NAME", type=NAMESPACE,
              help="Its sessions act in this namespace: the agent's own transcripts and "
              "journal lines, and the shared (docs/namespaces.md).")
@click.pass_context
def token_create(ctx: click.Context, name: str, read_only: bool, namespace: str | None) -> None:
    """Make a token named NAME and print it, once: only its digest is kept."""
    from memrepo.agents.tokens import READ, WRITE, TokenStore

    scope = READ if read_only else WRITE
    value = TokenStore(discover((ctx.obj or {}).get("repo")).root).create(name, scope,
                                                                          namespace)
    click.echo(value)
    where = f", namespace {namespace}" if namespace else ""
    click.echo(f"memory mcp: token {name!r} ({scope}{where}) created; it is shown this once: "
               "keep it in the client's environment, e.g. export MEMREPO_TOKEN=…",
               err=True)


@token.command("list")
@accepts_repo()
@click.option("--json", "as_json", is_flag=True, help="Print the tokens as JSON.")
@click.pass_context
def token_list(ctx: click.Context, as_json: bool) -> None:
    """The tokens: name, scope, when made (never the token)."""
    from memrepo.agents.tokens import TokenStore

    rows = [t.public() for t in TokenStore(discover((ctx.obj or {}).get("repo")).root)
            .tokens()]
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    if not rows:
        click.echo("no tokens (memory mcp token create NAME)")
    for row in rows:
        ns = f"\tnamespace {row['namespace']}" if row.get("namespace") else ""
        click.echo(f"{row['name']}\t{row['scope']}\t{row['created']}{ns}")


@token.command("revoke")
@accepts_repo()
@click.argument("name")
@click.pass_context
def token_revoke(ctx: click.Context, name: str) -> None:
    """Remove the token NAME: a running server refuses it from its next request."""
    from memrepo.agents.tokens import TokenStore

    gone = TokenStore(discover((ctx.obj or {}).get("repo")).root).revoke(name)
    click.echo(f"revoked {gone.name} ({gone.scope})")


@mcp.group("oauth")
def oauth() -> None:
    """OAuth logins to `memory mcp --http --oauth` (docs/remote-mcp.md)."""


@oauth.command("approve")
@accepts_repo()
@click.option("--read-only", is_flag=True,
              help="The login may search, get context and read only.")
@click.option("--namespace", metavar="NAME", type=NAMESPACE,
              help="The login acts in this namespace (docs/namespaces.md).")
@click.pass_context
def oauth_approve(ctx: click.Context, read_only: bool, namespace: str | None) -> None:
    """Print a one-time code that approves one OAuth login (valid ten minutes): type it
    on the approval page the connector opened. The login then shows in `token list`."""
    from memrepo.agents.tokens import READ, WRITE, TokenStore

    scope = READ if read_only else WRITE
    code = TokenStore(discover((ctx.obj or {}).get("repo")).root).approval(
        scope, namespace=namespace)
    click.echo(code)
    click.echo(f"memory mcp: approves one {scope} login within ten minutes; type it on the "
               "approval page", err=True)
