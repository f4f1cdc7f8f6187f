"""The installed hooks, end to end: real git, a repo made by `memory init` (the default,
direct runner), and a bare remote with the pre-receive hook.

Each rule broken once: the commit is refused with the expected message and nothing lands;
good commits land; MEMORY.md at 190 lines warns and still commits. Pushed past the local
hooks (``--no-verify``), every route a secret or a symlink could take is refused by the
remote, naming the commit and the path (and line).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_git

GOOD_TRANSCRIPT = """---
type: conversation
session_id: ses_a1b2c3d4
started: 2026-02-16T18:45:00+00:00
model: claude-opus-4.6
channel: cli
tags: [coding]
---

# Restructuring

## 18:45 — user
Read all open issues and give me a summary.

## 18:46 — agent
> [tool:exec] gh issue list → 12 results

Here are all 12 open issues.
"""
TRANSCRIPT = "raw/conversations/2026/02/16/1845-ses_a1b2c3d4-restructuring.md"


def commit(root: Path, files: dict[str, str | bytes], message: str = "memory: test"):
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        run_git(root, "add", "--", rel)
    return run_git(root, "commit", "-m", message, check=False)


def assert_refused(root: Path, proc, *needles: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    for needle in needles:
        assert needle in out, f"{needle!r} not in:\n{out}"
    assert "Traceback" not in out
    assert run_git(root, "log", "-1", "--format=%s").stdout.strip() != "memory: test"


def test_good_commit_lands(memrepo_root: Path) -> None:
    proc = commit(
        memrepo_root,
        {
            "knowledge/journal/2026-02-16.md": "---\ntype: journal\ndate: 2026-02-16\n---\n\n## 2026-02-16\n- did things\n",
            TRANSCRIPT: GOOD_TRANSCRIPT,
        },
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert run_git(memrepo_root, "log", "-1", "--format=%s").stdout.strip() == "memory: test"


@pytest.mark.parametrize(
    ("files", "needles"),
    [
        pytest.param(
            {"knowledge/reference/x.md": "---\ntype: reference\ntitle: [oops\n---\nbody\n"},
            ["knowledge/reference/x.md:3", "YAML"],
            id="unparseable-frontmatter",
        ),
        pytest.param(
            {"knowledge/people/ann.md": "---\ntype: journal\nname: Ann\n---\n# Ann\n"},
            ["knowledge/people/ann.md", "type"],
            id="type-does-not-fit-directory",
        ),
        pytest.param(
            {"knowledge/people/bob.md": "---\ntype: person\n---\n# Bob\n"},
            ["knowledge/people/bob.md", "name"],
            id="missing-required-field",
        ),
        pytest.param(
            {"raw/conversations/2026/02/16/1900-ses_a1b2c3d4-restructuring.md": GOOD_TRANSCRIPT},
            ["1900-ses_a1b2c3d4-restructuring.md", "started"],
            id="transcript-path-vs-started",
        ),
        pytest.param(
            {TRANSCRIPT: GOOD_TRANSCRIPT.replace("## 18:46 — agent", "## 18:46 - assistant")},
            [f"{TRANSCRIPT}:15"],
            id="bad-turn-header",
        ),
        pytest.param(
            {
                "knowledge/memory/MEMORY.md": "---\ntype: memory\n---\n"
                + "".join(f"- 2026-01-01: entry {i}\n" for i in range(230))
            },
            ["knowledge/memory/MEMORY.md", "220"],
            id="memory-over-cap",
        ),
        pytest.param(
            {
                "topics/t.md": "---\ntype: topic\ntriggers:\n  - type: pattern\n    match: '(a+)+$'\n---\n# T\n"
            },
            ["topics/t.md", "backtrack"],
            id="topic-catastrophic-regex",
        ),
        pytest.param(
            {
                "topics/u.md": "---\ntype: topic\ntriggers: []\nsubscriptions: [../../etc/passwd]\n---\n# U\n"
            },
            ["topics/u.md", ".."],
            id="topic-subscription-outside",
        ),
        pytest.param(
            {"knowledge/journal/2026-02-17.md": "---\ntype: journal\ndate: 2026-02-16\n---\n"},
            ["knowledge/journal/2026-02-17.md", "date"],
            id="journal-date-mismatch",
        ),
        pytest.param(
            {
                "knowledge/reference/keys.md": "---\ntype: reference\n---\n\naws AKIAIOSFODNN7EXAMPLE\n"
            },
            ["knowledge/reference/keys.md:5", "aws-access-key"],
            id="secret",
        ),
        pytest.param(
            {"knowledge/reference/blob.bin": b"\x00\x01\x02" * 100},
            ["knowledge/reference/blob.bin", "binary"],
            id="binary-outside-attachments",
        ),
    ],
)
def test_each_rule_blocks_the_commit(memrepo_root: Path, files: dict, needles: list[str]) -> None:
    proc = commit(memrepo_root, files)
    assert_refused(memrepo_root, proc, *needles)


def test_secret_value_is_never_printed(memrepo_root: Path) -> None:
    token = "ghp_" + "Ab1" * 12
    proc = commit(
        memrepo_root, {"knowledge/reference/t.md": f"---\ntype: reference\n---\ntoken {token}\n"}
    )
    assert_refused(memrepo_root, proc, "github-token")
    assert token not in proc.stdout + proc.stderr


def test_memory_at_190_lines_warns_and_commits(memrepo_root: Path) -> None:
    body = "".join(f"- 2026-01-01: entry {i}\n" for i in range(185))
    proc = commit(memrepo_root, {"knowledge/memory/MEMORY.md": "---\ntype: memory\n---\n" + body})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "warning" in out.lower() and "MEMORY.md" in out


def test_closed_transcript_is_immutable(memrepo_root: Path) -> None:
    closed = GOOD_TRANSCRIPT.replace(
        "started: 2026-02-16T18:45:00+00:00",
        "started: 2026-02-16T18:45:00+00:00\nended: 2026-02-16T19:00:00+00:00",
    )
    assert commit(memrepo_root, {TRANSCRIPT: closed}, "conversation: x").returncode == 0
    proc = commit(memrepo_root, {TRANSCRIPT: closed + "\n## 19:05 — user\nmore\n"})
    assert_refused(memrepo_root, proc, TRANSCRIPT)
    run_git(memrepo_root, "reset", "-q", "--hard")
    run_git(memrepo_root, "rm", "-q", TRANSCRIPT)
    proc = run_git(memrepo_root, "commit", "-m", "memory: test", check=False)
    assert_refused(memrepo_root, proc, TRANSCRIPT)


def test_open_transcript_may_grow_and_close(memrepo_root: Path) -> None:
    assert commit(memrepo_root, {TRANSCRIPT: GOOD_TRANSCRIPT}, "conversation: open").returncode == 0
    grown = GOOD_TRANSCRIPT + "\n## 18:50 — user\nThanks.\n"
    proc = commit(memrepo_root, {TRANSCRIPT: grown}, "conversation: grow")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    closed = grown.replace(
        "tags: [coding]", "tags: [coding]\nended: 2026-02-16T18:51:00+00:00\ntokens_in: 10"
    )
    proc = commit(memrepo_root, {TRANSCRIPT: closed}, "conversation: close")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rewritten = closed.replace("give me a summary", "give me a poem")
    proc = commit(memrepo_root, {TRANSCRIPT: rewritten})
    assert_refused(memrepo_root, proc, TRANSCRIPT)


# --- the remote: pre-receive over commits made with --no-verify ----------------------

SECRET = "AKIAIOSFODNN7EXAMPLE"
NOTE = "---\ntype: reference\n---\n"


@pytest.fixture
def pushed(memrepo_root: Path, tmp_path: Path) -> Path:
    """``memrepo_root`` with an ``origin``: a bare clone whose pre-receive is memrepo's."""
    from memrepo.hooks.install import install_server_hook

    bare = tmp_path / "remote.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(memrepo_root), str(bare))
    install_server_hook(bare)
    run_git(memrepo_root, "remote", "add", "origin", str(bare))
    return memrepo_root


def sneak(root: Path, files: dict[str, str | bytes], message: str = "memory: sneak") -> str:
    """Commit past the local hooks; the new commit's sha."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "--no-verify", "-m", message)
    return run_git(root, "rev-parse", "HEAD").stdout.strip()


def push(root: Path, *refspecs: str):
    return run_git(root, "push", "origin", *(refspecs or ("HEAD:main",)), check=False)


def assert_push_refused(proc, *needles: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "pre-receive hook declined" in out, out
    for needle in needles:
        assert needle in out, f"{needle!r} not in:\n{out}"
    assert SECRET not in out.replace(f"-> {SECRET}", "")  # git itself echoes a ref name
    assert "Traceback" not in out


def test_a_clean_push_is_accepted(pushed: Path) -> None:
    sneak(pushed, {"knowledge/reference/ok.md": NOTE + "fine\n"})
    proc = push(pushed)
    assert proc.returncode == 0, proc.stderr


def test_a_pushed_allowlist_does_not_let_its_secret_through(pushed: Path) -> None:
    cfg = pushed / "memory-config.yaml"
    from memrepo.config import set_setting

    widened = set_setting(cfg.read_text(), "validation", "secrets_allowlist", [".*"])
    sha = sneak(pushed, {"memory-config.yaml": widened,
                         "knowledge/reference/k.md": NOTE + f"key {SECRET}\n"})
    assert_push_refused(push(pushed), sha[:10], "knowledge/reference/k.md:4: error: possible "
                        "aws-access-key")


def test_the_servers_own_allowlist_applies(pushed: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("validation:\n  secrets_allowlist: ['^AKIAIOSFODNN7EXAMPLE$']\n")
    run_git(tmp_path / "remote.git", "config", "memrepo.policy", str(policy))
    sneak(pushed, {"knowledge/reference/k.md": NOTE + f"documented example {SECRET}\n"})
    proc = push(pushed)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\0" + (NOTE + f"key {SECRET}\n").encode(), id="nul-in-first-8k"),
        pytest.param((NOTE + f"key {SECRET}\n").encode("utf-16"), id="utf-16-bom"),
        pytest.param((NOTE + f"key {SECRET}\n").encode("utf-16-be"), id="utf-16-be-no-bom"),
    ],
)
def test_a_secret_in_binary_or_utf16_content_is_refused(pushed: Path, data: bytes) -> None:
    sha = sneak(pushed, {"knowledge/reference/k.md": data})
    assert_push_refused(push(pushed), sha[:10], "knowledge/reference/k.md:4: error: possible "
                        "aws-access-key")


def test_a_secret_in_a_commit_message_is_refused(pushed: Path) -> None:
    sha = sneak(pushed, {"knowledge/reference/ok.md": NOTE}, f"memory: x\n\nkey {SECRET}\n")
    assert_push_refused(push(pushed), sha[:10],
                        "commit message:3: error: possible aws-access-key")


def test_a_secret_in_a_commit_subject_is_refused_and_not_printed(pushed: Path) -> None:
    sneak(pushed, {"knowledge/reference/ok.md": NOTE}, f"memory: key {SECRET}")
    assert_push_refused(push(pushed), "memory: key [REDACTED:aws-access-key]",
                        "commit message:1: error")


def test_a_secret_in_an_annotated_tag_message_is_refused(pushed: Path) -> None:
    run_git(pushed, "tag", "-a", "v1", "-m", f"release\n\nkey {SECRET}")
    assert_push_refused(push(pushed, "refs/tags/v1"), "annotated tag refs/tags/v1",
                        "tag message:3: error: possible aws-access-key")


def test_a_secret_in_a_file_name_is_refused(pushed: Path) -> None:
    sha = sneak(pushed, {f"knowledge/reference/{SECRET}.md": NOTE})
    assert_push_refused(push(pushed), sha[:10], "knowledge/reference/[REDACTED:aws-access-key]"
                        ".md: error: possible aws-access-key in the file name")


@pytest.mark.parametrize("ref", [f"refs/heads/{SECRET}", f"refs/tags/{SECRET}"])
def test_a_secret_in_a_branch_or_tag_name_is_refused(pushed: Path, ref: str) -> None:
    assert_push_refused(push(pushed, f"HEAD:{ref}"),
                        "[REDACTED:aws-access-key]: error: possible aws-access-key in the ref "
                        "name")


SYMLINKS = {
    "md-to-etc-passwd": ("knowledge/reference/passwd.md", "/etc/passwd"),
    "dir-to-etc": ("knowledge/etc", "/etc"),
    "memory-md-replaced": ("knowledge/memory/MEMORY.md", "/etc/hostname"),
    "transcript": ("raw/conversations/2026/02/16/1845-ses_l-link.md", "../../../x.md"),
    "dangling": ("topics/gone.md", "/nonexistent/nowhere.md"),
}


@pytest.mark.parametrize("case", list(SYMLINKS))
def test_a_pushed_symlink_is_refused(pushed: Path, case: str) -> None:
    rel, target = SYMLINKS[case]
    path = pushed / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    path.symlink_to(target)
    run_git(pushed, "add", "-A")
    run_git(pushed, "commit", "-q", "--no-verify", "-m", "memory: link")
    sha = run_git(pushed, "rev-parse", "HEAD").stdout.strip()
    assert_push_refused(push(pushed), sha[:10], f"{rel}: error: is a symlink")


def test_a_chained_pre_receive_gets_the_same_stdin(pushed: Path, tmp_path: Path) -> None:
    log = tmp_path / "received"
    old = tmp_path / "remote.git" / "hooks" / "pre-receive.pre-memrepo"
    old.write_text(f"#!/bin/sh\ncat >> {log}\n")
    old.chmod(0o755)
    sneak(pushed, {"knowledge/reference/k.md": NOTE + f"key {SECRET}\n"})
    assert_push_refused(push(pushed), "knowledge/reference/k.md:4: error")  # memrepo saw it too
    assert log.read_text().strip().endswith(" refs/heads/main")
