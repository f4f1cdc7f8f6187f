"""The installed hooks run through :mod:`memrepo.agents.hook_client`: a Python with no
site asks the clone's resident server, which answers as ``memory hook`` would; with no
server (or one that does not know the op) the client becomes ``memory hook``, same
payload. Each handler is run exactly as the agent runs it (argv from the settings file,
payload on stdin, nothing else in the environment that memrepo set)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_mcp_front import ledger_repo

from memrepo.agents import hook_client
from memrepo.agents import install as agents
from memrepo.agents.resident import SERVICES, NoModel
from memrepo.agents.settings import HOOKS, hook_handler, memrepo_call
from memrepo.health import Check
from memrepo.index import remote
from memrepo.repo import MemoryRepo
from memrepo.resident.server import Server

MEMORY = shutil.which("memory", path=str(Path(sys.executable).parent))
PROMPT = "Who owns the ledger service now?"


@pytest.fixture
def repo(crepo: Path) -> Path:
    return ledger_repo(crepo)


@pytest.fixture
def resident(repo: Path) -> Iterator[Server]:
    srv = Server(repo, NoModel(), services=SERVICES)
    srv.start()
    yield srv
    srv.stop()


def _handler(repo: Path, agent: str, event: str) -> dict:
    assert MEMORY
    client = agents.fast_client(MEMORY, str(repo))
    assert client is not None, "this installation's memory: the hooks go through the client"
    return hook_handler(agent, event, MEMORY, str(repo), client=client)


def _run(handler: dict, payload: object, **env: str) -> subprocess.CompletedProcess[str]:
    argv = ([handler["command"], *handler["args"]] if "args" in handler
            else ["/bin/sh", "-c", handler["command"]])
    data = payload if isinstance(payload, str) else json.dumps(payload)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMREPO_")}
    return subprocess.run(argv, input=data, capture_output=True, text=True, timeout=60,
                          env={**clean, **env})


def _last_log(repo: Path) -> dict:
    lines = (repo / ".memrepo/agents.log").read_text(encoding="utf-8").splitlines()
    return json.loads(lines[-1])


def _prompt(repo: Path, sid: str = "s1") -> dict:
    return {"session_id": sid, "transcript_path": str(repo / "nowhere.jsonl"),
            "cwd": str(repo), "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}


def test_the_prompt_hook_is_answered_by_the_resident(repo: Path, resident: Server) -> None:
    proc = _run(_handler(repo, "claude-code", "UserPromptSubmit"), _prompt(repo))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert "Dana owns the ledger service" in out["additionalContext"]
    entry = _last_log(repo)
    assert (entry["via"], entry["status"], entry["event"]) == ("server", "ok", "UserPromptSubmit")
    assert resident.answered["hook"] == 1
    # the session was shown it: the next prompt of the session recalls nothing new
    again = _run(_handler(repo, "claude-code", "UserPromptSubmit"), _prompt(repo))
    assert "Dana" not in again.stdout


def test_without_a_resident_the_client_becomes_the_full_hook_and_starts_one(
        repo: Path) -> None:
    handler = _handler(repo, "claude-code", "UserPromptSubmit")
    proc = _run(handler, _prompt(repo), MEMREPO_NO_RESIDENT="1")
    assert proc.returncode == 0, proc.stderr
    assert "Dana owns the ledger service" in proc.stdout
    entry = _last_log(repo)
    assert (entry["via"], entry["status"]) == ("here", "ok")
    sock = Path(handler["args"][5])
    assert not sock.exists(), "MEMREPO_NO_RESIDENT: none started"
    proc = _run(handler, _prompt(repo, "s2"))
    assert "Dana owns the ledger service" in proc.stdout and _last_log(repo)["via"] == "here"
    try:  # it started one for the next hooks
        end = time.monotonic() + 60
        while time.monotonic() < end and _last_log(repo)["via"] != "server":
            time.sleep(0.2)
            _run(handler, _prompt(repo, f"s-{time.monotonic()}"))
        assert _last_log(repo)["via"] == "server"
    finally:
        with contextlib.suppress(remote.Unavailable):
            remote.request(sock, {"op": "stop"}, 5.0)


def test_a_server_without_the_hook_op_gets_the_full_hook(repo: Path) -> None:
    old = Server(repo, NoModel(), services={k: v for k, v in SERVICES.items() if k != "hook"})
    old.start()
    try:
        proc = _run(_handler(repo, "codex", "UserPromptSubmit"), _prompt(repo))
    finally:
        old.stop()
    assert proc.returncode == 0, proc.stderr
    assert "Dana owns the ledger service" in proc.stdout
    assert _last_log(repo)["harness"] == "codex"


def test_the_brief_and_the_detached_events_through_the_resident(
        repo: Path, resident: Server) -> None:
    (repo / "knowledge/core/USER.md").parent.mkdir(parents=True, exist_ok=True)
    start = {"session_id": "s2", "cwd": str(repo), "hook_event_name": "SessionStart",
             "source": "startup", "transcript_path": str(repo / "nowhere.jsonl")}
    proc = _run(_handler(repo, "claude-code", "SessionStart"), start)
    assert proc.returncode == 0, proc.stderr
    assert _last_log(repo)["via"] == "server"
    stop = {**start, "hook_event_name": "Stop"}
    proc = _run(_handler(repo, "claude-code", "Stop"), stop)
    assert (proc.returncode, proc.stdout) == (0, "")
    entry = _last_log(repo)
    assert (entry["via"], entry["status"], entry["action"]) == ("server", "detached", "capture")


def test_a_bad_payload_is_logged_in_the_repo_and_fails_open(
        repo: Path, resident: Server) -> None:
    proc = _run(_handler(repo, "claude-code", "UserPromptSubmit"), "{not json")
    assert (proc.returncode, proc.stdout) == (0, "")
    entry = _last_log(repo)
    assert (entry["via"], entry["status"]) == ("server", "failed")
    assert "not JSON" in entry["detail"]


def test_the_recursion_guard_answers_nothing(repo: Path, resident: Server) -> None:
    log = repo / ".memrepo/agents.log"
    before = log.read_bytes() if log.exists() else None
    proc = _run(_handler(repo, "claude-code", "UserPromptSubmit"), _prompt(repo),
                MEMREPO_NO_HOOKS="1")
    assert (proc.returncode, proc.stdout) == (0, "")
    assert (log.read_bytes() if log.exists() else None) == before, "nothing logged"


def test_the_client_imports_c_modules_only(repo: Path) -> None:
    handler = _handler(repo, "claude-code", "Stop")
    site = handler["args"][4]
    code = (f"import sys; base = set(sys.modules); sys.path.insert(0, {site!r}); "
            "import memrepo.agents.hook_client; "
            "print(' '.join(sorted(set(sys.modules) - base)))")
    proc = subprocess.run([handler["command"], "-I", "-S", "-c", code], capture_output=True,
                          text=True, check=True)
    loaded = set(proc.stdout.split())
    assert {"memrepo.agents.hook_client", "_json", "_socket"} <= loaded
    heavy = {"json", "re", "enum", "socket", "pathlib", "collections", "functools", "typing",
             "selectors", "encodings.idna"}
    assert not loaded & heavy, loaded & heavy
    assert {m for m in loaded if m.startswith("memrepo")} == {
        "memrepo", "memrepo.agents", "memrepo.agents.hook_client"}


def test_the_installed_entry_is_recognised_and_uninstalled(repo: Path, tmp_path: Path) -> None:
    handler = _handler(repo, "claude-code", "Stop")
    call = memrepo_call(handler)
    assert call is not None and call.client is not None
    assert (call.memory, call.repo, call.kind, call.harness, call.event) == (
        MEMORY, str(repo), HOOKS, "claude-code", "Stop")
    other = {**handler, "args": [*handler["args"][:3], handler["args"][3] + "  # another "
                                 "release's", *handler["args"][4:]]}
    assert memrepo_call(other) == call, "an install of another release is recognised too"
    project = tmp_path / "proj"
    project.mkdir()
    assert MEMORY
    changes = agents.plan("claude-code", "project", memory=MEMORY, repo=str(repo),
                          home=tmp_path / "home", project=project,
                          client=agents.fast_client(MEMORY, str(repo)))
    agents.apply(changes, tmp_path / "home")
    settings = json.loads((project / ".claude/settings.json").read_text())
    assert settings["hooks"]["Stop"][0]["hooks"][0]["args"][:3] == ["-I", "-S", "-c"]
    again = agents.plan("claude-code", "project", memory=MEMORY, repo=str(repo),
                        home=tmp_path / "home", project=project,
                        client=agents.fast_client(MEMORY, str(repo)))
    assert not any(c.changed for c in again), "installing twice changes nothing"
    gone = agents.plan("claude-code", "project", home=tmp_path / "home", project=project)
    agents.apply(gone, tmp_path / "home")
    assert not (project / ".claude/settings.json").exists()


def test_request_line_round_trips_any_payload() -> None:
    raw = '{"prompt": "é \\u2028 \\"q\\" \\n tab\\t"}'.encode()
    line = hook_client.request_line("/r", "claude-code", "Stop", raw, None, 1.5)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    req = json.loads(line)
    assert req["raw"].encode() == raw and req["namespace"] is None and req["t0"] == 1.5
    assert hook_client.loads(b' {"a": [1, 2.5, null, true]} ') == {"a": [1, 2.5, None, True]}
    with pytest.raises(ValueError):
        hook_client.loads(b'{"a": 1} x')


def _doctor_on(repo: Path, home: Path, client: agents.Client) -> Check:
    """memory doctor's one agents check, with Claude Code's hooks installed through
    ``client`` at user scope in ``home``."""
    assert MEMORY
    agents.apply(agents.plan("claude-code", "user", memory=MEMORY, repo=str(repo), home=home,
                             client=client), home)
    [check] = agents.health_checks(MemoryRepo(repo))
    return check


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def test_doctor_checks_the_client(repo: Path, home: Path) -> None:
    assert MEMORY
    client = agents.fast_client(MEMORY, str(repo))
    check = _doctor_on(repo, home, client)
    assert check.ok and check.detail.startswith("5 hooks, MCP server"), check.detail
    check = _doctor_on(repo, home, agents.Client(client.python, str(home / "old-site"),
                                                 client.socket))
    assert not check.ok and "old-site, which is gone" in check.detail


def test_doctor_warns_of_a_socket_elsewhere(repo: Path, home: Path) -> None:
    assert MEMORY
    client = agents.fast_client(MEMORY, str(repo))
    check = _doctor_on(repo, home, agents.Client(client.python, client.site,
                                                 str(home / "elsewhere.sock")))
    assert not check.ok and "elsewhere.sock" in check.detail and client.socket in check.detail


def test_doctor_fix_moves_plain_hooks_to_the_client(repo: Path, home: Path) -> None:
    from memrepo import doctor

    assert MEMORY
    url = "http://127.0.0.1:9/mcp"  # an HTTP server entry: --fix leaves it as it is
    agents.apply(agents.plan("claude-code", "user", memory=MEMORY, repo=str(repo), home=home,
                             url=url), home)
    settings = home / ".claude/settings.json"
    assert memrepo_call(json.loads(settings.read_text())["hooks"]["Stop"][0]["hooks"][0]
                        ).client is None
    done, failed = doctor.fix(MemoryRepo(repo))
    assert not failed and any("claude-code (user) hooks now ask the resident" in d
                              for d in done), done
    for event, groups in json.loads(settings.read_text())["hooks"].items():
        call = memrepo_call(groups[0]["hooks"][0])
        assert call is not None and call.client is not None, event
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["memrepo"]
    assert server["url"] == url
    assert not any("hooks now" in d for d in doctor.fix(MemoryRepo(repo))[0]), "once"


def test_a_late_server_leaves_the_recall_to_the_full_hook(repo: Path) -> None:
    """A server that took the request but answers past the client's wait: the full hook
    recalls in-process (told not to ask again), and the server, once done, records the
    call as one its hook stopped waiting for."""
    from memrepo.agents.resident import hook_service

    def slow(server: Server, req: dict, asked: object) -> dict:
        time.sleep(hook_client.ANSWER_S["UserPromptSubmit"] + 1.0)
        return hook_service(server, req, asked)  # type: ignore[arg-type]

    srv = Server(repo, NoModel(), services={**SERVICES, "hook": slow})
    srv.start()
    try:
        t0 = time.monotonic()
        proc = _run(_handler(repo, "claude-code", "UserPromptSubmit"), _prompt(repo))
        took = time.monotonic() - t0
        assert proc.returncode == 0, proc.stderr
        assert "Dana owns the ledger service" in proc.stdout
        assert took < hook_client.ANSWER_S["UserPromptSubmit"] + 1.0, took
        assert _last_log(repo)["via"] == "here"
        end = time.monotonic() + 10
        while time.monotonic() < end and _last_log(repo).get("via") != "server":
            time.sleep(0.1)
        late = _last_log(repo)
        assert (late["via"], late["status"]) == ("server", "failed"), late
        assert "stopped waiting" in late["detail"]
    finally:
        srv.stop()


def test_the_full_hook_told_the_server_was_asked_parks_nothing(repo: Path) -> None:
    """Codex's prompt is parked by the server before it recalls: a full hook that runs
    after a late server must not park it again (the turn would be captured twice)."""
    from memrepo.agents import state

    assert MEMORY
    for sid, env in (("parked", {}), ("asked", {hook_client.ASKED_ENV: "1"})):
        proc = _run({"command": MEMORY, "args": ["--repo", str(repo), "hook", "codex",
                                                 "UserPromptSubmit"]},
                    {**_prompt(repo, sid), "turn_id": "t1"}, **env)
        assert proc.returncode == 0 and "Dana" in proc.stdout, proc.stderr
    assert len(state.queued_prompts(repo, "codex", "parked")[0]) == 1
    assert state.queued_prompts(repo, "codex", "asked")[0] == []
