"""A transcript's ``# Title`` (seed 000 §2.1, §8.2; audit row 9): sessions started without
``--topic``, imports of logs that name none, and the Claude Code follower all get one,
written when ``end`` names the file, and never in front of turns already committed."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_memory, run_git

from memrepo.documents import parse_document
from memrepo.transcript import capture


def _body(root: Path, rel: str) -> str:
    return parse_document((root / rel).read_text(encoding="utf-8"), rel).body


def test_a_session_without_topic_is_titled_from_its_slug_at_end(memrepo_root: Path) -> None:
    root = memrepo_root
    start = invoke_memory(root, "capture", "start", "--session", "ses_t1", "--model", "m")
    assert start.returncode == 0, start.stderr
    opened = start.stdout.strip()
    assert opened.endswith("-session.md")
    assert _body(root, opened) == ""  # nothing before the first message: no title yet
    for role, text in (("user", "Rotate the HMAC key for the webhook service"),
                       ("agent", "Done: the new key is in the vault."),
                       ("user", "Thanks")):
        said = invoke_memory(root, "capture", "append", "--session", "ses_t1", "--role",
                             role, text)
        assert said.returncode == 0, said.stderr
    done = invoke_memory(root, "capture", "end", "--session", "ses_t1")
    assert done.returncode == 0, done.stderr
    rel = done.stdout.strip().splitlines()[-1].split()[0]
    assert rel.endswith("-ses_t1-rotate-hmac-key-webhook-service-thanks.md"), rel
    body = _body(root, rel)
    assert body.startswith("\n# Rotate Hmac Key Webhook Service Thanks\n\n## ")
    doc = parse_document((root / rel).read_text(encoding="utf-8"), rel)
    assert doc.meta["turns"] == 3 and "topic" not in doc.meta
    # committed as it is on disk, through the transcript check
    assert run_git(root, "status", "--porcelain", "--", "raw/").stdout == ""
    assert run_git(root, "log", "-1", "--format=%s").stdout.strip().startswith("conversation:")


def test_a_session_with_a_topic_keeps_its_one_title(memrepo_root: Path) -> None:
    s = capture.start(memrepo_root, session_id="ses_t2", topic="Ledger migration")
    capture.append(memrepo_root, "ses_t2", "user", "move the ledger to postgres")
    done = capture.end(memrepo_root, "ses_t2")
    body = _body(memrepo_root, done.path)
    assert done.path == s.path
    assert body.count("\n# ") == 1 and body.startswith("\n# Ledger migration\n")


def test_a_title_is_never_put_before_turns_already_committed(memrepo_root: Path) -> None:
    """An open transcript someone committed by hand keeps its name and gets no title:
    its recorded body may only grow (check-transcripts would refuse the commit)."""
    root = memrepo_root
    s = capture.start(root, session_id="ses_t3")
    capture.append(root, "ses_t3", "user", "plan the release notes")
    run_git(root, "add", "--", s.path)
    run_git(root, "commit", "-q", "-m", "conversation: still open")
    capture.append(root, "ses_t3", "agent", "here is a plan")
    done = capture.end(root, "ses_t3")  # commits through the hooks: they accept it
    assert done.path == s.path and done.commit
    assert _body(root, done.path).startswith("\n## ")


def test_the_title_of_an_agent_log_names_the_followed_session(memrepo_root: Path,
                                                              tmp_path: Path) -> None:
    """Claude Code's own name for the session (a summary record) becomes the title; the
    file keeps the slug of its first messages."""
    from memrepo.transcript import follow

    log = tmp_path / "proj" / "abc.jsonl"
    log.parent.mkdir()
    recs = [
        {"type": "user", "sessionId": "abc", "timestamp": "2026-03-02T10:00:00Z",
         "message": {"role": "user", "content": "Fix the flaky upload test"}},
        {"type": "assistant", "sessionId": "abc", "timestamp": "2026-03-02T10:01:00Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]}},
        {"type": "summary", "summary": "Flaky upload test fix"},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    got = follow.follow(memrepo_root, log, final=True)
    assert got.closed and got.path
    assert _body(memrepo_root, got.path).startswith("\n# Flaky upload test fix\n\n## ")
    assert "fix-flaky-upload-test" in got.path


def test_an_import_without_a_title_is_titled_from_its_slug(memrepo_root: Path,
                                                           tmp_path: Path) -> None:
    src = tmp_path / "chat.json"
    src.write_text(json.dumps([
        {"role": "user", "content": "Summarise the vendor contract renewal"},
        {"role": "assistant", "content": "It renews on 1 May."},
    ]))
    done = invoke_memory(memrepo_root, "capture", "import", str(src), "--format", "openai")
    assert done.returncode == 0, done.stderr + done.stdout
    rel = next((memrepo_root / "raw" / "conversations").rglob("*.md"))
    body = _body(memrepo_root, rel.relative_to(memrepo_root).as_posix())
    assert body.startswith("\n# Summarise Vendor Contract Renewal\n\n## "), body[:80]
