"""The `memory` entry point: errors about the person's files are one line, bugs are not hidden."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

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
