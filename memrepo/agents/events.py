"""``memory hook <harness> <Event>``: what memrepo does when an agent fires a hook.

One entry for Claude Code, Codex and Gemini CLI (which event does what is
:mod:`memrepo.agents.harness`'s table); the payload is the JSON the agent writes on stdin.

- brief and recall (SessionStart, UserPromptSubmit / BeforeAgent): answered here, within
  a deadline, with what :mod:`memrepo.agents.recall` compiles;
- flush, capture, end (PreCompact, Stop, SessionEnd…): handed to a detached process
  (:mod:`memrepo.agents.worker`) so the hook returns at once.

Every hook fails open: whatever goes wrong (no repo, a broken config, a lock held, a bad
or never-ending stdin, a deadline passed) it prints nothing, exits 0 and logs one line
that ``memory doctor`` shows (:mod:`memrepo.agents.state`). It never exits 2, which
would block the user's prompt or the compaction.

Only the standard library and the small agents modules are imported at the top: the
capture hooks must detach at once (bench/perf/bench_agent_hooks.py times them), and recall
pays only for what it uses.
"""

from __future__ import annotations

import _thread
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from memrepo.agents import harness as H
from memrepo.agents import state
from memrepo.agents.hook_client import ASKED_ENV, STDIN_TIMEOUT, read_stdin, started_ago
from memrepo.agents.recall import brief, park, recall, recall_served, served
from memrepo.cliargs import NAMESPACE_ENV
from memrepo.layout import CONFIG_FILE
from memrepo.spawn import AGENT_WORKER_ENV, detached, module_argv

#: The hook gives up (logged, nothing printed) before the agent would kill it: below
#: the timeouts the installer writes (memrepo.agents.settings.TIMEOUTS: 10 s and 5 s).
DEADLINE = {H.BRIEF: 8.0, H.RECALL: 4.0}


class HookTimeout(Exception):
    """The hook's own deadline passed."""


# ---------------------------------------------------------------------------
# The hook call
# ---------------------------------------------------------------------------


def run(harness: str, event: str, repo_opt: str | None = None) -> int:
    """Answer one hook call of ``harness``; always 0 (fail open)."""
    if os.environ.get(H.GUARD_ENV):
        return 0
    # the agent's key is not memrepo's: nothing this hook runs or starts (the gate's
    # judge, a resident server, the worker) calls a model unless LLM use is switched on
    os.environ[AGENT_WORKER_ENV] = harness
    start = time.perf_counter() - started_ago()  # the agent's timeout counts from the exec
    act = H.action(harness, event)
    # the hook client asked the resident server, which did not answer in time: not again
    asked = bool(os.environ.pop(ASKED_ENV, None))
    entry: dict[str, Any] = {"harness": harness, "event": event, "action": act}
    root: Path | None = None
    out = ""
    try:
        raw = read_stdin(STDIN_TIMEOUT)  # read first, whatever follows: the agent writes it
        if repo_opt or os.environ.get("MEMORY_REPO"):  # found before the payload is parsed,
            root = find_root(repo_opt, {})  # so that a bad payload is logged in the repo
        payload = parse_payload(raw)
        entry["session"] = payload.get("session_id")
        if act is None:
            raise ValueError(f"{harness} {event}: memrepo has nothing to do at this event")
        if root is None:
            root = find_root(repo_opt, payload)
        if act in H.DETACHED:
            detach(root, harness, event, raw)
            entry["status"] = "detached"
        else:
            # the deadline counts from the hook's start: the agent's timeout does
            with deadline(max(0.1, DEADLINE[act] - (time.perf_counter() - start))):
                if act == H.BRIEF:
                    got = None if asked else served(root, "brief", harness, payload)
                    entry["via"] = "server" if got is not None else "here"
                    text = got if got is not None else brief(root, harness, payload)
                else:
                    if not asked:  # the server parks first: once per prompt
                        park(root, harness, payload)
                    got = None if asked else recall_served(root, harness, payload)
                    entry["via"] = "server" if got is not None else "here"
                    text = got if got is not None else recall(root, harness, payload)
            if text:
                out = json.dumps(H.context_output(event, text), ensure_ascii=False)
            entry["status"] = "ok"
            entry["chars"] = len(text)
    except Exception as exc:  # fail open, whatever it was
        entry["status"] = "failed"
        entry["detail"] = failure_detail(exc)
        if root is None:
            entry["repo"] = repo_opt or os.environ.get("MEMORY_REPO")
    entry["ms"] = round((time.perf_counter() - start) * 1000, 1)
    if out:
        try:  # UTF-8 whatever the locale (a hook may run under LANG=C)
            sys.stdout.buffer.write((out + "\n").encode("utf-8"))
            sys.stdout.flush()
        except (OSError, AttributeError, ValueError) as exc:
            entry["status"], entry["detail"] = "failed", f"answer not written: {exc}"
    state.log(root, entry)
    return 0


def failure_detail(exc: BaseException) -> str:
    """The log's one-line detail of a failure: the message alone for the errors memrepo
    words itself, else the exception's type and message."""
    text = " ".join(str(exc).split())
    known = ("MemrepoError", "ConfigError", "FormatError", "ValueError", "HookTimeout")
    return text if type(exc).__name__ in known and text else f"{type(exc).__name__}: {text}"


def parse_payload(raw: bytes) -> dict[str, Any]:
    """The hook payload as a dict of the fields memrepo reads, or ValueError saying why."""
    if not raw.strip():
        raise ValueError("no hook payload on stdin (or not within "
                         f"{STDIN_TIMEOUT:g} s)")
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"the hook payload is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise ValueError("the hook payload is not a JSON object")
    for key in ("session_id", "transcript_path", "cwd", "prompt", "source"):
        value = payload.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"hook payload field {key!r} is not a string")
    if payload.get("prompt") and HOOK_CONTEXT[0] in payload["prompt"]:
        payload["prompt"] = without_hook_context(payload["prompt"])
    return payload


#: How Gemini CLI hands a hook's injected context back inside later prompts.
HOOK_CONTEXT = ("<hook_context>", "</hook_context>")


def without_hook_context(prompt: str) -> str:
    """``prompt`` without the ``<hook_context>…</hook_context>`` blocks Gemini CLI puts
    back into it: memrepo's own briefing is not the user's words, nor a recall query.
    One pass with ``str.find`` (a regex would rescan a huge prompt per opening tag)."""
    opening, closing = HOOK_CONTEXT
    out, i = [], 0
    while (a := prompt.find(opening, i)) != -1:
        b = prompt.find(closing, a + len(opening))
        if b == -1:
            break
        out.append(prompt[i:a])
        i = b + len(closing)
    out.append(prompt[i:])
    return "".join(out).strip()


def find_root(repo_opt: str | None, payload: dict[str, Any]) -> Path:
    """The memory repo: ``--repo``, else ``MEMORY_REPO``, else above the agent's cwd.

    The installed hooks name the repo: checked here with one stat, so that a capture hook
    detaches without importing memrepo.repo and its dataclasses; anything else, or a
    repo that is not one, is memrepo.repo.discover's (and its error message).
    """
    given = repo_opt or os.environ.get("MEMORY_REPO")
    if given:
        root = Path(given).expanduser().resolve()
        if (root / CONFIG_FILE).is_file():
            return root
    from memrepo.repo import discover

    return discover(repo_opt, cwd=payload.get("cwd") or None).root


class deadline:
    """Raise HookTimeout after ``seconds`` (SIGALRM; no deadline where there is none)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = False

    def __enter__(self) -> None:
        if hasattr(signal, "setitimer") and self.seconds > 0:
            signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            self.armed = True

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _fire(self, *_: object) -> None:
        raise HookTimeout(f"no answer within the hook's {self.seconds:g} s deadline")


# ---------------------------------------------------------------------------
# Detached work: the worker's start
# ---------------------------------------------------------------------------


def detach(root: Path, harness: str, event: str, raw: bytes, namespace: str | None = None
           ) -> None:
    """Start :mod:`memrepo.agents.worker` fully detached (its own session, the payload
    from a file on its stdin, no inherited stdout) and return at once; ``namespace``: the
    worker's, when it is not this process's (the resident server starts it for a hook)."""
    queue = root / state.AGENTS_DIR / "queue"
    queue.mkdir(parents=True, exist_ok=True)
    # the resident server detaches for many hooks at once, one thread each
    tmp = queue / f"{os.getpid()}-{_thread.get_ident()}-{time.time_ns()}.json"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        argv = module_argv("memrepo.agents.worker", harness, event, str(root))
        env = {**os.environ, H.GUARD_ENV: "1", AGENT_WORKER_ENV: harness}
        if namespace is not None:
            env[NAMESPACE_ENV] = namespace
        detached(argv, root / state.AGENTS_DIR / "worker.err", stdin=tmp, env=env)
    finally:
        os.unlink(tmp)  # the child has it open
