"""`memory capture append` without Click: the same result as the Click command, or a hand-off."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import run_memory

from memrepo.scripts import fastpath
from memrepo.transcript import capture


@pytest.mark.parametrize(
    "argv",
    [
        ["capture", "append", "--session", "s", "--role", "user", "hi"],
        ["--repo", "/r", "capture", "append", "--role=agent", "--session=s", "--memory", "hi"],
        ["--repo=/r", "capture", "append", "--session", "s", "--role", "system", "hi"],
    ],
)
def test_plain_forms_are_taken(argv: list[str]) -> None:
    call = fastpath.parse_append(argv)
    assert call is not None and call["session"] == "s" and call["text"] == "hi"


@pytest.mark.parametrize(
    "argv",
    [
        ["capture", "append", "--session", "s", "--role", "user", "--at", "2026-01-01T10:00", "hi"],
        ["capture", "append", "--session", "s", "--role", "boss", "hi"],
        ["capture", "append", "--role", "user", "hi"],  # no session (and none in the env)
        ["capture", "append", "--session", "s", "--role", "user", "a", "b"],
        ["capture", "append", "--session", "s", "--role", "user", "--", "hi"],
        ["capture", "append", "--help"],
        ["capture", "append", "--session"],
        ["capture", "start", "--session", "s"],
        ["search", "x"],
        [],
    ],
)
def test_everything_else_goes_to_click(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORY_SESSION", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO("from stdin"))
    assert fastpath.parse_append(argv) is None


def test_fast_and_click_paths_write_the_same_turns(crepo: Path) -> None:
    s = capture.start(crepo, session_id="ses_fast", topic="fast path")
    fast = run_memory(crepo, "capture", "append", "--session", "ses_fast", "--role", "user",
                      "key AKIAIOSFODNN7EXAMPLE here")
    slow = run_memory(crepo, "capture", "append", "--session", "ses_fast", "--role", "user",
                      "--at", "2030-01-01T10:00:00+00:00", "key AKIAIOSFODNN7EXAMPLE here")
    assert fast.returncode == slow.returncode == 0
    assert fast.stderr == slow.stderr == "redacted 1 secret(s)\n"
    text = (crepo / s.path).read_text()
    assert text.count("key [REDACTED:aws-access-key] here") == 2 and "AKIA" not in text
    piped = run_memory(crepo, "capture", "append", "--session", "ses_fast", "--role", "agent",
                       input="from stdin\n")
    assert piped.returncode == 0 and "from stdin" in (crepo / s.path).read_text()
    missing = run_memory(crepo, "capture", "append", "--session", "ses_nope", "--role", "user", "x")
    assert missing.returncode == 1 and missing.stderr.startswith("memory: ")
    assert "Traceback" not in missing.stderr


def test_hooks_are_served_without_click_unless_help_is_asked() -> None:
    assert fastpath.is_hook(["hook", "post-commit"])
    assert fastpath.is_hook(["hook", "pre-commit", "--index"])
    assert fastpath.is_hook(["hook", "check-secrets", "a.md", "b.md"])
    assert not fastpath.is_hook(["hook", "post-commit", "--help"])
    assert not fastpath.is_hook(["hook", "nonsense"]) and not fastpath.is_hook(["hook"])


def test_the_console_script_serves_hooks_without_importing_click(crepo: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\nfrom memrepo.scripts import fastpath\n"
        "code = fastpath.run(['hook', 'post-commit'])\n"
        "print(code, 'click' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=crepo, capture_output=True, text=True)
    assert out.stdout.split() == ["0", "False"], out.stderr
    helped = run_memory(crepo, "hook", "post-commit", "--help")
    assert helped.returncode == 0 and "Usage: memory hook" in helped.stdout


def test_python_dash_m_memrepo_is_the_memory_command(crepo: Path) -> None:
    """What the scheduler runs when the ``memory`` script is not beside the interpreter."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "memrepo", "--version"], cwd=crepo,
                         capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("memory, version ")
    hooked = subprocess.run([sys.executable, "-m", "memrepo", "hook", "post-commit"], cwd=crepo,
                            capture_output=True, text=True)
    assert hooked.returncode == 0, hooked.stderr


def test_stdin_that_is_not_utf8_is_refused_naming_stdin(
    crepo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    s = capture.start(crepo, session_id="ses_bytes", topic="bytes")
    before = (crepo / s.path).read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"caf\xe9 au lait\n")))
    argv = ["capture", "append", "--repo", str(crepo), "--session", "ses_bytes", "--role", "user"]
    assert fastpath.run(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("memory: stdin is not UTF-8 text (byte 0xe9 at offset 3)"), err
    assert (crepo / s.path).read_bytes() == before
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("café\n".encode())))
    assert fastpath.run(argv) == 0
    assert "café" in (crepo / s.path).read_text(encoding="utf-8")


def test_an_agent_hooks_hand_off_imports_no_yaml_nor_compiler() -> None:
    """Stop and SessionEnd only hand their work to a detached worker: every module they
    import is start-up time Claude Code waits for (bench/clients/run.py, issue 36)."""
    import subprocess
    import sys

    code = ("import sys\nimport memrepo.agents.events\n"
            "print(sorted(m for m in ('yaml', 'memrepo.context.sections', "
            "'memrepo.context.compiler', 'memrepo.documents') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
