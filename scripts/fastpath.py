"""The hot paths, served without Click: ``memory hook NAME``, ``capture append`` and ``mcp``.

Git runs ``memory hook …`` on every commit, a harness runs ``capture append`` on every
turn and an agent starts ``memory mcp`` for every session; importing Click and the command
tree would slow each (bench/perf/bench_commit.py, bench/perf/bench_capture.py and
bench/perf/bench_mcp.py time them). Only plain forms are taken here:

    memory hook NAME [ARGS…]            (NAME a validator, a post-* event or pre-receive)
    memory [--repo PATH] hook HARNESS EVENT   (an agent's hook: claude-code, codex, gemini)
    memory [--repo PATH] capture append --session ID --role user|agent|system [--memory] [TEXT]
    memory [--repo PATH] mcp            (relayed to the resident server when one serves it:
                                        memrepo.agents.mcp_front; else the Click command)

(a global ``--namespace NAME`` before the command is taken first: memrepo.cliargs)

(``--opt value`` or ``--opt=value``, ``--repo`` anywhere; TEXT or stdin). Anything else
(``--at``, ``--help``, a typo, a missing option) goes to the Click commands, which stay the
one definition of the interface, its help and its usage errors.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from memrepo import cliargs
from memrepo.errors import MemrepoError

ROLES = ("user", "agent", "system")


def split_repo(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """(the repo, ``argv`` without it): ``--repo PATH`` / ``--repo=PATH`` anywhere before a
    ``--`` (the last one wins), else $MEMORY_REPO; as the Click commands take it."""
    return cliargs.split_repo(argv, os.environ.get("MEMORY_REPO") or None)


def parse_append(argv: Sequence[str]) -> dict[str, object] | None:
    """The append call ``argv`` makes, or None when it is not the plain form."""
    repo, args = split_repo(argv)
    if args[:2] != ["capture", "append"]:
        return None
    opts: dict[str, str | None] = {"--session": os.environ.get("MEMORY_SESSION"), "--role": None}
    memory, text = False, None
    rest, i = args[2:], 0
    while i < len(rest):
        arg = rest[i]
        key, eq, value = arg.partition("=")
        if arg == "--memory":
            memory = True
        elif key in opts:
            if not eq:
                if i + 1 >= len(rest):
                    return None
                i += 1
                value = rest[i]
            opts[key] = value
        elif arg.startswith("-") or text is not None:
            return None  # another option, "-", "--", or a second TEXT: Click decides
        else:
            text = arg
        i += 1
    if not opts["--session"] or opts["--role"] not in ROLES:
        return None
    if text is None and (sys.stdin is None or sys.stdin.isatty()):
        return None
    return {"repo": repo, "session": opts["--session"], "role": opts["--role"],
            "memory": memory, "text": text}


def parse_agent_hook(argv: Sequence[str]) -> tuple[str, str, str | None] | None:
    """(harness, event, repo) of ``[--repo R] hook HARNESS EVENT`` (``--repo`` and
    ``--namespace`` anywhere: the namespace becomes ``$MEMREPO_NAMESPACE``), else None.

    Agents run it on every prompt with the payload on stdin (memrepo.agents.events): it
    never reaches Click, whose import would slow every prompt (bench/perf/bench_agent_hooks.py).
    A known agent's line that is malformed otherwise (no event, extra arguments) is still
    answered here, as a failure logged with exit 0: Click's usage error is exit 2, which an
    agent reads as "block this prompt".
    """
    repo, rest = split_repo(argv)
    if len(rest) < 2 or rest[0] != "hook" or "--help" in rest:
        return None
    from memrepo.agents.harness import HARNESSES

    if rest[1] not in HARNESSES:
        return None
    ns: str | None = None
    words: list[str] = []
    i = 2
    while i < len(rest):
        if rest[i] == "--namespace" and i + 1 < len(rest):
            ns, i = rest[i + 1], i + 2
            continue
        if rest[i].startswith("--namespace="):
            ns = rest[i].split("=", 1)[1]
        else:
            words.append(rest[i])
        i += 1
    if ns:
        os.environ[cliargs.NAMESPACE_ENV] = ns
    if repo is not None and repo == os.environ.get("MEMORY_REPO"):
        repo = None  # the hook finds $MEMORY_REPO itself (and names it when it is wrong)
    event = words[0] if len(words) == 1 and not words[0].startswith("-") else (
        f"{' '.join(words) or '(no event)'} (expected: one event name)")
    return rest[1], event, repo


def parse_mcp(argv: Sequence[str]) -> tuple[str | None] | None:
    """(repo,) of ``[--repo R] mcp [--repo R]`` (repo: $MEMORY_REPO when none is given;
    None: the repo above the cwd), else None (``mcp --help`` too: Click)."""
    repo, rest = split_repo(argv)
    return (repo,) if rest == ["mcp"] else None


def is_hook(argv: Sequence[str]) -> bool:
    """``hook NAME …`` with a known NAME and no request for help."""
    if len(argv) < 2 or argv[0] != "hook" or "--help" in argv:
        return False
    from memrepo.hooks.dispatch import NAMES

    return argv[1] in NAMES


def run(argv: Sequence[str]) -> int | None:
    """Exit status of the fast path, or None when Click must handle ``argv``. A global
    ``--namespace`` becomes this process's ``$MEMREPO_NAMESPACE`` first."""
    argv = cliargs.take_namespace(argv)
    mcp = parse_mcp(argv)
    if mcp is not None:
        from memrepo.agents.mcp_front import run as mcp_front

        return mcp_front(*mcp)  # None: no resident serves it, the Click command does
    agent = parse_agent_hook(argv)
    if agent is not None:
        from memrepo.agents.events import run as agent_hook

        return agent_hook(*agent)
    hook = is_hook(argv)
    call = None if hook else parse_append(argv)
    if not hook and call is None:
        return None

    try:
        if hook or call is None:
            from memrepo.hooks import dispatch

            return dispatch.run(argv[1], argv[2:])
        from memrepo.repo import discover
        from memrepo.transcript import capture

        if call["text"] is not None:
            text, source = str(call["text"]), "TEXT"
        else:  # bytes decoded strictly: what is not UTF-8 is an error naming stdin
            stream = getattr(sys.stdin, "buffer", None)
            data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
            text, source = capture.text_from_bytes(data, "stdin"), "stdin"
        count = capture.append(discover(call["repo"], op="capture").root, str(call["session"]),
                               str(call["role"]), text, memory=bool(call["memory"]),
                               source=source)
    except MemrepoError as exc:
        print(f"memory: {exc}", file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as exc:
        if os.environ.get("MEMORY_DEBUG"):
            raise
        from memrepo.scripts.cli import system_error

        print(f"memory: {system_error(exc)}", file=sys.stderr)
        return 1
    if count:
        print(f"redacted {count} secret(s)", file=sys.stderr)
    return 0


def main() -> None:
    """The ``memory`` console script: the fast path, else the Click group."""
    argv = cliargs.take_namespace(sys.argv[1:])
    code = run(argv)
    if code is None:
        from memrepo.scripts.cli import run as click_run

        click_run()
    if code is not None and parse_agent_hook(argv) is not None:
        # an agent waits for this process on every prompt: its answer is written and
        # flushed, its files closed; the interpreter's teardown would only make it wait
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
