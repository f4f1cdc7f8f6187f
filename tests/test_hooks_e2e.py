"""The installed hooks, end to end: real git, real pre-commit, a repo made by `memory init`.

Each rule broken once: the commit is refused with the expected message and nothing lands;
good commits land; MEMORY.md at 190 lines warns and still commits.
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
