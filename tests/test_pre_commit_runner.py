"""hooks/pre_commit.py: all the checks in one process, each file read once, said once."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from memrepo.hooks import pre_commit
from memrepo.hooks.dispatch import VALIDATORS
from memrepo.hooks.pre_commit import main

if TYPE_CHECKING:
    from conftest import VRepo

TRANSCRIPT = "raw/conversations/2026/02/16/1845-ses_a1-email-triage.md"
GOOD_FILES: dict[str, str | bytes] = {
    "knowledge/identity/SOUL.md": "---\ntype: identity\nrole: soul\nupdated: 2026-02-16\n---\n",
    "knowledge/memory/MEMORY.md": "---\ntype: memory\nupdated: 2026-02-16\n---\n\n# Core\n",
    "knowledge/journal/2026-02-16.md": "---\ntype: journal\ndate: 2026-02-16\n---\n",
    "knowledge/journal/.gitkeep": "",
    "knowledge/people/david.md": "---\ntype: person\nname: David\n---\n",
    "topics/email.md": (
        "---\ntype: topic\ntriggers:\n  - type: pattern\n    match: 'email|inbox'\n"
        "subscriptions: [knowledge/people/david.md]\nactivation: gated\npriority: high\n---\n"
    ),
    TRANSCRIPT: (
        "---\nsession_id: ses_a1\nstarted: 2026-02-16T18:45:00+01:00\n---\n\n"
        "## 18:45 — user\nCheck my inbox.\n\n## 18:46 — agent\nThree new mails.\n"
    ),
    "attachments/2026/scan.png": b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(100),
    "memory-config.yaml": "validation:\n  memory_warn_lines: 180\n",
    "README.md": "# my memory\n",
}


@pytest.fixture
def good(vrepo: VRepo) -> VRepo:
    for path, content in GOOD_FILES.items():
        vrepo.write(path, content)
    vrepo.add()
    return vrepo


def test_runs_the_checks_in_order() -> None:
    assert [cid for cid, _ in pre_commit.CHECKS] == [
        "check-filetypes",
        "check-frontmatter",
        "check-transcripts",
        "check-memory-cap",
        "check-topics",
        "check-journal",
        "check-secrets",  # contents (UTF-8)
        "check-secrets",  # contents with NUL bytes, UTF-16/32 (check_encoded)
        "check-secrets",  # file names (check_names)
        "check-private",  # private.paths stored encrypted
        "check-size",
        "check-links",  # warnings only, last
    ]


def test_a_good_first_commit_passes(good: VRepo) -> None:
    assert good.run_staged(main) == (0, "")


def test_a_good_follow_up_commit_passes(good: VRepo) -> None:
    good.commit()
    with open(TRANSCRIPT, "a", encoding="utf-8") as fh:
        fh.write("\n## 18:50 — user\nThanks.\n")
    good.write(
        "knowledge/journal/2026-02-17.md", "---\ntype: journal\ndate: 2026-02-17\n---\n- x\n"
    )
    good.add()
    assert good.run_staged(main) == (0, "")


def test_every_check_reports_in_one_run(good: VRepo) -> None:
    good.commit()
    token = "ghp_" + "aB3" * 12
    good.write("knowledge/people/nobody.md", "---\ntype: person\n---\n")
    with open(TRANSCRIPT, "a", encoding="utf-8") as fh:
        fh.write("\n## 18:50 - user\nThanks.\n")
    good.write("knowledge/memory/MEMORY.md", "---\ntype: memory\n---\n" + "- x\n" * 230)
    good.write("topics/bad.md", "---\ntype: topic\ntriggers: []\npriority: urgent\n---\n")
    good.write("knowledge/journal/2026-02-18.md", "---\ntype: journal\ndate: 2026-02-19\n---\n")
    good.write("scratch-notes.txt", f"token {token}\n")
    good.write("knowledge/reference/photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF")
    good.add()
    code, out = good.run_staged(main)
    assert code == 1
    assert token not in out
    assert sorted(out.splitlines()) == sorted(
        [
            "knowledge/people/nobody.md:2: error: a person file needs 'name' [check-frontmatter]",
            f"{TRANSCRIPT}:12: error: turn header must be '## HH:MM — user|agent|system' "
            "(24-hour time, an em dash; ' [memory]' may follow agent only) [check-transcripts]",
            "knowledge/memory/MEMORY.md:221: error: MEMORY.md has 233 lines, above the limit of "
            "220 (validation.memory_error_lines); condense it or move detail to knowledge/ "
            "[check-memory-cap]",
            "topics/bad.md:4: error: 'priority' must be one of low, medium, high, critical, got "
            "'urgent' [check-topics]",
            "knowledge/journal/2026-02-18.md:3: error: date 2026-02-19 does not match the file "
            "name (2026-02-18) [check-journal]",
            "scratch-notes.txt:1: error: possible github-token — remove it or allowlist it "
            "[check-secrets]",
            "knowledge/reference/photo.jpg: error: binary file (0.0 KB) outside attachments/; "
            "binaries belong in attachments/ (stored with git LFS) [check-size]",
        ]
    )


def test_warnings_alone_pass(good: VRepo) -> None:
    good.write("knowledge/memory/MEMORY.md", "---\ntype: memory\n---\n" + "- x\n" * 187)
    good.add()
    code, out = good.run_staged(main)
    assert code == 0
    assert out == (
        "knowledge/memory/MEMORY.md:181: warning: MEMORY.md has 190 lines, above 180 "
        "(validation.memory_warn_lines); condense it before it reaches 220 [check-memory-cap]\n"
    )


@pytest.mark.parametrize(
    ("path", "content", "expected"),
    [
        ("topics/t.md", b"---\ntype: topic\nname: \xff\n---\n", "topics/t.md:3: error: not UTF-8"),
        ("topics/t.md", b"", "topics/t.md:1: error: file is empty"),
        ("topics/t.md", b"---\ntype: topic\n", "topics/t.md:1: error: frontmatter is not closed"),
        ("topics/t.md", b"---\ntype: topic\n---\n", "topics/t.md:2: error: a topic file needs"),
        ("topics/t.md", b"# no frontmatter\n", "topics/t.md:1: error: no YAML frontmatter"),
        ("topics/t.md", b"---\ntype: journal\ntriggers: []\n---\n", "topics/t.md:2: error: type"),
        (
            "knowledge/journal/2026-02-16.md",
            b"---\ntype: journal\ndate: soon\n---\n",
            "knowledge/journal/2026-02-16.md:3: error: 'date' must be a date",
        ),
        (
            "knowledge/journal/2026-02-16.md",
            b"---\ntype: journal\ndate: 2026-02-16\ndate: 2026-02-16\n---\n",
            "knowledge/journal/2026-02-16.md:4: error: duplicate key 'date'",
        ),
        (TRANSCRIPT, b"---\nsession_id: ses_a1\n---\n", f"{TRANSCRIPT}:1: error: a conversation"),
        (
            TRANSCRIPT,
            b"---\nsession_id: ses_a1\nstarted: 2026-02-16T18:45:00\n---\n",
            f"{TRANSCRIPT}:3: error: 'started' must be an ISO 8601 datetime with a UTC offset",
        ),
        (
            TRANSCRIPT,
            b"---\nsession_id: ses_a1\nstarted: 2026-02-16T18:45:00Z\nx: &a [1]\ny: *a\n---\n",
            f"{TRANSCRIPT}:4: error: YAML anchors and aliases",
        ),
    ],
)
def test_a_broken_file_is_reported_once(
    vrepo: VRepo, path: str, content: bytes, expected: str
) -> None:
    vrepo.write(path, content)
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out.count("\n") == 1, out
    assert out.startswith(expected), out


def test_each_staged_file_is_read_at_most_once(
    good: VRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    good.commit()
    with open(TRANSCRIPT, "a", encoding="utf-8") as fh:
        fh.write("\n## 18:50 — user\nThanks.\n")
    good.write("knowledge/memory/MEMORY.md", "---\ntype: memory\n---\n" + "- x\n" * 190)
    good.write("topics/email.md", "---\ntype: topic\ntriggers: []\n---\n")
    good.write("knowledge/people/ann.md", "---\ntype: person\nname: Ann\n---\n")
    good.add()
    reads: dict[str, int] = {}
    real_open = Path.open  # read_bytes and read_text go through it

    def open_(self: Path, *args: object, **kwargs: object) -> object:
        rel = self.resolve().relative_to(good.root.resolve()).as_posix()
        reads[rel] = reads.get(rel, 0) + 1
        return real_open(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", open_)
    staged = good.staged()
    code, out = good.run(main, *staged)
    assert code == 0, out
    assert set(staged) <= set(reads)
    assert all(n == 1 for n in reads.values()), reads


def test_a_deleted_transcript_is_refused_with_no_file_arguments(good: VRepo) -> None:
    good.commit()
    good.git("rm", "-q", TRANSCRIPT)
    code, out = good.run_staged(main)
    assert code == 1
    assert out.startswith(f"{TRANSCRIPT}: error: transcripts may not be deleted")


def test_a_broken_config_is_one_error_and_the_defaults_apply(good: VRepo) -> None:
    good.write("memory-config.yaml", "validation:\n  max_file_kb: big\n")
    good.write("knowledge/people/nobody.md", "---\ntype: person\n---\n")
    good.add()
    code, out = good.run_staged(main)
    assert code == 1
    assert out.splitlines() == [
        "memory-config.yaml:2: error: 'validation.max_file_kb' must be a number, got str 'big' "
        "[config]",
        "knowledge/people/nobody.md:2: error: a person file needs 'name' [check-frontmatter]",
    ]


def test_outside_a_git_repository_git_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "a.txt").write_text("fine\n")
    assert main(["a.txt"]) == 0  # nothing staged, nothing to compare
    (tmp_path / TRANSCRIPT).parent.mkdir(parents=True)
    (tmp_path / TRANSCRIPT).write_text(str(GOOD_FILES[TRANSCRIPT]))
    capsys.readouterr()
    assert main([TRANSCRIPT]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("error: git cat-file --batch failed: ")
    assert out.rstrip().endswith("[check-transcripts]")
    assert out.count("\n") == 1 and "Traceback" not in out + err


def test_runs_as_its_own_process(good: VRepo) -> None:
    good.write("knowledge/people/nobody.md", "---\ntype: person\n---\n")
    good.add()
    proc = subprocess.run(
        [sys.executable, "-m", "memrepo.hooks.pre_commit", *good.staged()],
        cwd=good.root,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert proc.stdout == (
        "knowledge/people/nobody.md:2: error: a person file needs 'name' [check-frontmatter]\n"
    )
    assert proc.stderr == ""


MANIFEST = Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml"
HOOK_FILES = {
    "memrepo-frontmatter": (["knowledge/people/a.md", "raw/conversations/2026/01/01/x.md",
                             "topics/t.md", "archive/journal/2025-01-01.md"],
                            ["README.md", "knowledge/people/a.txt", "scratch/a.md"]),
    "memrepo-transcripts": (["raw/conversations/2026/01/01/0101-s-x.md"], ["raw/usage.jsonl"]),
    "memrepo-memory-cap": (["knowledge/memory/MEMORY.md"], ["knowledge/memory/OLD.md"]),
    "memrepo-topics": (["topics/email.md", "topics/work/a.md"], ["topics/README.txt"]),
    "memrepo-journal": (["knowledge/journal/2026-01-01.md", "archive/journal/x.md",
                         "archive/knowledge/journal/2025-01-01.md"], ["knowledge/people/j.md"]),
    "memrepo-secrets": (["any/file.txt", "attachments/a.json"], []),
    "memrepo-size": (["any/file.bin"], ["attachments/a.png"]),
    "memrepo-links": (["knowledge/people/a.md", "topics/t.md"], ["raw/x.txt"]),
    "memrepo-validate": (["any/file.txt"], []),
    "memrepo-filetypes": (["any/link.md", "attachments/a.png"], []),
    "memrepo-commit-msg": (["COMMIT_EDITMSG"], []),
}


def test_the_hook_manifest_exposes_every_check() -> None:


    hooks = {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))}
    assert set(hooks) == set(HOOK_FILES)
    for hook_id, (matched, skipped) in HOOK_FILES.items():
        hook = hooks[hook_id]
        stage = "commit-msg" if hook_id == "memrepo-commit-msg" else "pre-commit"
        assert hook["language"] == "python" and hook["stages"] == [stage]
        name = hook["entry"].removeprefix("memory hook ")
        assert name in VALIDATORS, hook["entry"]
        files, exclude = re.compile(hook.get("files", "")), re.compile(hook.get("exclude", "^$"))
        for path in matched:
            assert files.search(path) and not exclude.search(path), (hook_id, path)
        for path in skipped:
            assert not files.search(path) or exclude.search(path), (hook_id, path)
    assert hooks["memrepo-transcripts"]["always_run"] and hooks["memrepo-validate"]["always_run"]
    assert hooks["memrepo-filetypes"]["always_run"]  # symlinks are never passed as files
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(MANIFEST)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_pre_commit_runner_refuses_symlinks_and_message_secrets(tmp_path: Path) -> None:
    """`memory init --hooks pre-commit`: the framework passes no symlink as a file name, so
    the file-types check reads the staged modes from the index itself."""
    from conftest import run_git, run_memory

    root = tmp_path / "mem"
    proc = run_memory(tmp_path, "init", "--hooks", "pre-commit", str(root))
    assert proc.returncode == 0, proc.stderr
    (root / "knowledge/reference/passwd.md").symlink_to("/etc/passwd")
    run_git(root, "add", "-A")
    proc = run_git(root, "commit", "-m", "memory: link", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "knowledge/reference/passwd.md: error: is a symlink" in out
    run_git(root, "rm", "-q", "--cached", "knowledge/reference/passwd.md")
    proc = run_git(root, "commit", "--allow-empty", "-m", "memory: ghp_" + "aB3" * 12,
                   check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "possible github-token in the commit message" in out
