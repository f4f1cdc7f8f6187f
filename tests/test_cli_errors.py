"""The `memory` entry point: errors about the person's files are one line, bugs are not hidden."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import click
import pytest
from conftest import invoke_memory

from memrepo.scripts import cli


def _failing(exc: BaseException) -> click.Command:
    @click.command("boom")
    def boom() -> None:
        raise exc

    return boom


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        (FileNotFoundError(2, "No such file or directory", "knowledge/a.md"),
         "memory: knowledge/a.md: No such file or directory\n"),
        (PermissionError(13, "Permission denied", "raw/x.md"), "memory: raw/x.md: Permission denied\n"),
        (OSError(28, "No space left on device"), "memory: No space left on device\n"),
        (OSError(18, "Invalid cross-device link", "a", None, "b"),
         "memory: a -> b: Invalid cross-device link\n"),
        (UnicodeDecodeError("utf-8", b"caf\xe9", 3, 4, "invalid continuation byte"),
         "memory: a file is not UTF-8 text (byte 0xe9 at offset 3)\n"),
        # stdin that is not UTF-8 reaches Python as lone surrogates (issue #14)
        (UnicodeEncodeError("utf-8", "caf\udce9", 3, 4, "surrogates not allowed"),
         "memory: the input (stdin or an argument) is not UTF-8 text (byte 0xe9 at character "
         "3)\n"),
        (RecursionError("maximum recursion depth exceeded"),
         "memory: the input is nested too deeply to read (a file, or stdin, that nests lists "
         "or objects thousands of levels deep)\n"),
    ],
)
def test_system_errors_are_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], exc: Exception, said: str
) -> None:
    monkeypatch.setitem(cli.COMMANDS, "boom", "x:y")
    monkeypatch.setattr(cli.importlib, "import_module", lambda name: type("M", (), {"y": _failing(exc)}))
    monkeypatch.delenv("MEMORY_DEBUG", raising=False)
    assert cli.main(["boom"]) == 1
    out, err = capsys.readouterr()
    assert err == said and out == ""


def test_bugs_keep_their_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "boom", "x:y")
    monkeypatch.setattr(cli.importlib, "import_module",
                        lambda name: type("M", (), {"y": _failing(KeyError("bug"))}))
    with pytest.raises(KeyError):
        cli.main(["boom"])


def test_an_encode_error_that_is_not_about_input_stays_a_bug(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exc = UnicodeEncodeError("ascii", "café", 3, 4, "ordinal not in range")
    monkeypatch.setitem(cli.COMMANDS, "boom", "x:y")
    monkeypatch.setattr(cli.importlib, "import_module",
                        lambda name: type("M", (), {"y": _failing(exc)}))
    with pytest.raises(UnicodeEncodeError):
        cli.main(["boom"])


def test_memory_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "boom", "x:y")
    monkeypatch.setattr(cli.importlib, "import_module",
                        lambda name: type("M", (), {"y": _failing(FileNotFoundError(2, "gone", "f"))}))
    monkeypatch.setenv("MEMORY_DEBUG", "1")
    with pytest.raises(FileNotFoundError):
        cli.main(["boom"])


def test_a_real_os_error_through_the_cli(crepo: Path) -> None:
    """End to end: the journal folder is a file, so writing today's journal fails."""
    import shutil
    import subprocess

    shutil.rmtree(crepo / "knowledge/journal")
    (crepo / "knowledge/journal").write_text("not a folder\n")
    proc = subprocess.run(["memory", "remember", "a fact"], cwd=crepo, capture_output=True,
                          text=True)
    assert proc.returncode == 1
    assert proc.stderr == f"memory: {crepo / 'knowledge/journal'}: File exists\n"


# --- `--repo` before or after any subcommand --------------------------------------------
# An agent's hook line puts it where it likes (`memory compile --format claude-code-hook
# --repo ~/mem`); a usage error there is exit 2, which Claude Code reads as "block".


def test_repo_after_the_compile_hook_is_no_usage_error(
    crepo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import io
    import json

    monkeypatch.chdir(tmp_path)  # no memory repo here: only --repo says where it is
    payload = {"hook_event_name": "SessionStart", "session_id": "s", "cwd": str(tmp_path)}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(payload)))
    assert cli.main(["compile", "--format", "claude-code-hook", "--repo", str(crepo)]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("tail", [["UserPromptSubmit", "--bogus"], [], ["-x"],
                                  ["UserPromptSubmit", "Stop"]],
                         ids=["extra-option", "no-event", "option-only", "two-events"])
def test_a_malformed_agent_hook_line_exits_0_and_is_logged(tail: list[str], crepo: Path
                                                           ) -> None:
    """Exit 2 would block the user's prompt: a known agent's line fails open, logged."""
    proc = subprocess.run(["memory", "--repo", str(crepo), "hook", "claude-code", *tail],
                          input="{}", capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, "")
    last = json.loads((crepo / ".memrepo/agents.log").read_text().splitlines()[-1])
    assert last["status"] == "failed" and "expected: one event name" in last["event"]


def test_namespace_after_the_agent_hook_is_the_hooks_namespace(crepo: Path) -> None:
    payload = json.dumps({"session_id": "s", "prompt": "anything at all here",
                          "transcript_path": str(crepo / "none.jsonl")})
    for tail in (["--namespace", "alice"], ["--namespace=alice"]):
        proc = subprocess.run(["memory", "--repo", str(crepo), "hook", "claude-code",
                               "UserPromptSubmit", *tail], input=payload,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        last = json.loads((crepo / ".memrepo/agents.log").read_text().splitlines()[-1])
        assert (last["event"], last["status"]) == ("UserPromptSubmit", "ok"), last
    bad = subprocess.run(["memory", "--repo", str(crepo), "hook", "claude-code",
                          "UserPromptSubmit", "--namespace", "Not A Name"], input=payload,
                         capture_output=True, text=True)
    assert (bad.returncode, bad.stdout) == (0, "")
    last = json.loads((crepo / ".memrepo/agents.log").read_text().splitlines()[-1])
    assert last["status"] == "failed" and "namespace" in last["detail"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--repo", "{R}", "capture", "start", "--session", "s1", "--topic", "t"],
        ["capture", "--repo", "{R}", "start", "--session", "s1", "--topic", "t"],
        ["capture", "start", "--repo", "{R}", "--session", "s1", "--topic", "t"],
        ["capture", "start", "--session", "s1", "--topic", "t", "--repo={R}"],
        # the deepest one wins, over the group's --repo and over $MEMORY_REPO
        ["--repo", "{X}", "capture", "--repo", "{X}", "start", "--repo", "{R}",
         "--session", "s1", "--topic", "t"],
    ],
    ids=["before", "group", "after", "equals", "deepest-wins"],
)
def test_repo_before_or_after_any_subcommand(
    argv: list[str], crepo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMORY_REPO", str(tmp_path / "nope"))
    args = [a.replace("{R}", str(crepo)).replace("{X}", str(tmp_path / "nope")) for a in argv]
    assert cli.main(args) == 0, capsys.readouterr().err
    assert [p.name for p in (crepo / "raw/conversations").rglob("*s1*")] == [
        capsys.readouterr().out.strip().rsplit("/", 1)[-1]]


def test_memory_repo_is_honoured_below_a_group(
    crepo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMORY_REPO", str(crepo))
    assert cli.main(["capture", "start", "--session", "s2", "--topic", "t"]) == 0
    assert list((crepo / "raw/conversations").rglob("*s2*"))


def test_repo_is_hidden_in_subcommand_help_but_shown_where_declared(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["search", "--help"]) in (0, None)
    assert "--repo" not in capsys.readouterr().out
    assert cli.main(["install", "--help"]) in (0, None)
    assert "--repo" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "repo", "rest"),
    [
        (["capture", "append", "--repo", "/r", "x"], "/r", ["capture", "append", "x"]),
        (["--repo=/a", "capture", "--repo", "/b"], "/b", ["capture"]),
        (["capture", "--", "--repo", "/r"], "/env", ["capture", "--", "--repo", "/r"]),
        (["capture", "--repo"], "/env", ["capture", "--repo"]),  # no value: Click says so
    ],
)
def test_fast_path_takes_repo_anywhere(
    argv: list[str], repo: str, rest: list[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memrepo.scripts import fastpath

    monkeypatch.setenv("MEMORY_REPO", "/env")
    assert fastpath.split_repo(argv) == (repo, rest)


def test_capture_append_with_repo_after_it_stays_on_the_fast_path(
    crepo: Path, tmp_path: Path,
) -> None:
    import subprocess

    from memrepo.scripts import fastpath
    from memrepo.transcript import capture

    argv = ["capture", "append", "--session", "s3", "--role", "user", "--repo", str(crepo), "hi"]
    call = fastpath.parse_append(argv)
    assert call is not None and call["repo"] == str(crepo) and call["text"] == "hi"
    session = capture.start(crepo, session_id="s3", topic="fast")
    proc = subprocess.run(["memory", *argv[:-1], "hello from elsewhere"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "hello from elsewhere" in (crepo / session.path).read_text()


def test_bad_values_the_torture_corpus_found_are_usage_errors(crepo: Path) -> None:
    """bench/torture/bad_input.py: each was exit 0 (or a traceback) before."""
    cases = [
        (("condense", "daily", "--date", "0001-01-01"), "out of range"),
        (("search", "--category", "", "x"), "an empty category"),
        (("compile", "--budget", "0", "hello"), "--budget"),
        (("reinforce", "knowledge/memory/MEMORY.md:9-2"), "ends before it starts"),
    ]
    for args, said in cases:
        res = invoke_memory(crepo, *args)
        assert res.returncode != 0 and said in res.stderr, (args, res.returncode, res.stderr)
    assert not list((crepo / "raw").glob("signals/*.jsonl"))  # the refused REF wrote nothing


def test_a_huge_topic_word_still_makes_a_file_name(crepo: Path) -> None:
    from memrepo.layout import SLUG_CHARS, slugify

    assert len(slugify("a" * 300)) == SLUG_CHARS
    assert slugify("---") == "session"
    res = invoke_memory(crepo, "capture", "start", "--session", "s1", "--topic", "w" * 300)
    assert res.returncode == 0, res.stderr
    assert len(Path(res.stdout.strip()).name) < 120


def test_an_offset_past_a_day_is_a_clear_refusal(crepo: Path) -> None:
    res = invoke_memory(crepo, "capture", "start", "--session", "tz1", "--timezone", "+25:00")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "not a UTC offset between -23:59 and +23:59" in res.stderr
    assert not list((crepo / "raw/conversations").rglob("*tz1*"))
