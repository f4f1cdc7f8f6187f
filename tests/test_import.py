"""Importers: realistic logs of each format become valid, redacted transcripts, once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_git, run_memory

from memrepo import documents
from memrepo.transcript.importers.run import detect, import_file

FIX = Path(__file__).parent / "fixtures" / "import"


def imported(root: Path, name: str, fmt: str = "auto", **kw) -> list[documents.Document]:
    results = import_file(root, FIX / name, fmt, timezone="Europe/Lisbon", **kw)
    assert all(r.status == "imported" for r in results), results
    proc = run_memory(root, "hook", "pre-commit", *(r.path for r in results))
    assert proc.returncode == 0, proc.stdout
    return [documents.read_document(root / r.path, r.path) for r in results]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("claude_code_session.jsonl", "claude-code"),
        ("chatgpt_conversations.json", "chatgpt"),
        ("anthropic_messages.json", "anthropic"),
        ("openai_chat.json", "openai"),
        ("chat.md", "markdown"),
    ],
)
def test_detect(name: str, fmt: str) -> None:
    assert detect(FIX / name, (FIX / name).read_bytes()) == fmt


def test_a_claude_code_log_may_open_with_any_of_its_record_types(tmp_path: Path) -> None:
    """Real logs often start with a file-history snapshot or a queue operation."""
    body = (FIX / "claude_code_session.jsonl").read_bytes()
    for first in ({"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}},
                  {"type": "queue-operation", "operation": "enqueue"},
                  {"type": "some-future-record", "sessionId": "s1"}):
        log = tmp_path / "session.jsonl"
        log.write_bytes(json.dumps(first).encode() + b"\n" + body)
        assert detect(log, log.read_bytes()) == "claude-code"
    log.write_bytes(b'{"type": "not-claude"}\n{"x": 1}\n')
    with pytest.raises(Exception, match="not valid JSON"):
        detect(log, log.read_bytes())


def test_claude_code_session(crepo: Path) -> None:
    [doc] = imported(crepo, "claude_code_session.jsonl")
    body, meta = doc.body, doc.meta
    assert meta["session_id"].startswith("cc-")
    assert meta["source"]["id"] == "0e7c2a4b-5d1f-4c3e-9a8b-1f2e3d4c5b6a"
    assert meta["model"] == "claude-sonnet-4-20250514"
    assert meta["topic"] == "Fix flaky checkout test"
    assert str(meta["started"]) == "2025-07-01 10:58:03+01:00"  # 09:58Z in Lisbon (WEST)
    assert meta["tokens_in"] == 1200 + 1500 + 1800 + 2100 and meta["tokens_out"] == 215
    assert "SECRET-THOUGHT" not in body and "SIDECHAIN" not in body and "META" not in body
    assert "> [tool:Bash] pytest tests/test_checkout.py -q → F. (+2 lines)" in body
    assert "> [tool:Read] /home/dev/shop/tests/test_checkout.py → import time (+2 lines)" in body
    assert "[REDACTED:github-token]" in body and meta["redactions"] == 1
    assert "\\## 10:00 standup" in body  # content that looks like a header is escaped
    [att] = [ln for ln in body.split("\n") if ln.startswith("> [attachment:")]
    path = att[len("> [attachment:") : -1]
    assert (crepo / path).read_bytes().startswith(b"\x89PNG")
    assert [h.split(" — ")[1] for h in body.split("\n") if h.startswith("## ")] == [
        "user", "agent", "user", "agent"
    ]
    assert run_git(crepo, "log", "-1", "--format=%s").stdout.startswith(
        "conversation: fix-flaky-checkout-test"
    )


def test_chatgpt_export_takes_the_current_branch(crepo: Path) -> None:
    docs = imported(crepo, "chatgpt_conversations.json")
    assert [d.meta["topic"] for d in docs] == ["Lisbon trip", "Cat names"]
    body = docs[0].body
    assert "ABANDONED" not in body and "HIDDEN-REASONING" not in body
    assert "Plan a 3-day trip to Lisbon" in body and "Budget about 360 EUR" in body
    assert "> [tool:python] total = 3 * 120 print(total) → 360" in body
    att = [ln for ln in body.split("\n") if ln.startswith("> [attachment:")]
    assert len(att) == 1 and att[0].endswith("-file-Ab12Cd34-budget.png]")
    assert (crepo / att[0][len("> [attachment:") : -1]).read_bytes().endswith(b"budget")
    assert docs[0].meta["model"] == "o3"
    assert docs[0].path.startswith("raw/conversations/2024/07/01/")


def test_anthropic_messages(crepo: Path) -> None:
    [doc] = imported(crepo, "anthropic_messages.json")
    assert "HIDDEN-THINKING" not in doc.body
    assert "> [tool:get_weather] " in doc.body and "→ 15 C, light rain" in doc.body
    assert "bring an umbrella" in doc.body and doc.meta["tokens_out"] == 24
    assert "## " in doc.body and "— system\nYou are a helpful travel agent." in doc.body
    assert "> [attachment:attachments/" in doc.body


def test_openai_chat(crepo: Path) -> None:
    [doc] = imported(crepo, "openai_chat.json")
    assert "HIDDEN-REASONING" not in doc.body
    assert '> [tool:convert_currency] {"amount":100,"from":"USD","to":"EUR"} → {"result": 92.4}' \
        in doc.body
    assert "92.40 EUR" in doc.body and doc.meta["model"] == "gpt-4o-2024-08-06"
    assert "> [attachment:attachments/" in doc.body


def test_markdown(crepo: Path) -> None:
    [doc] = imported(crepo, "chat.md")
    roles = [h.split(" — ")[1] for h in doc.body.split("\n") if h.startswith("## ")]
    assert roles == ["user", "agent", "user", "agent"]
    assert "They tolerate light frost." in doc.body and doc.meta["topic"] == "Garden planning"


def test_reimport_is_detected(crepo: Path) -> None:
    imported(crepo, "claude_code_session.jsonl")
    commits = run_git(crepo, "rev-list", "--count", "HEAD").stdout
    proc = run_memory(crepo, "capture", "import", str(FIX / "claude_code_session.jsonl"),
                      "--json")
    assert proc.returncode == 0, proc.stderr
    [r] = json.loads(proc.stdout)
    assert r["status"] == "skipped" and "already imported" in r["detail"]
    assert run_git(crepo, "rev-list", "--count", "HEAD").stdout == commits
    assert len(list((crepo / "raw/conversations").rglob("*cc-*.md"))) == 1


def test_bad_input_is_a_clean_error(crepo: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "user", "sessionId": "x"}\nnot json\n')
    proc = run_memory(crepo, "capture", "import", str(bad), "--format", "claude-code")
    assert proc.returncode == 1 and proc.stderr == f"memory: {bad}:2:1: not valid JSON (Expecting value)\n"


def _no_new_transcripts(root: Path, before: str) -> None:
    assert run_git(root, "rev-parse", "HEAD").stdout == before
    assert run_git(root, "status", "--porcelain", "--untracked-files=all").stdout == ""


@pytest.mark.parametrize(
    ("name", "content", "fmt", "message"),
    [
        ("empty.md", b"", "auto", "no conversation found (format markdown)"),
        ("blank.md", b"\n  \n", "auto", "no conversation found (format markdown)"),
        ("list.json", b"[]", "auto", "no conversation found (format openai)"),
        ("obj.json", b"{}", "auto", "no conversation found (format openai)"),
        ("nomap.json", b'[{"mapping": null}]', "auto", "no conversation found (format chatgpt)"),
        ("cut.json", b'{"a": [1,2', "auto", "1:11: not valid JSON (Expecting ',' delimiter)"),
        ("cut2.json", b'[\n  {"role": "user",\n  "content": "hi"', "anthropic",
         "3:18: not valid JSON (Expecting ',' delimiter)"),
        ("latin1.md", "caf\u00e9 ol\u00e9".encode("latin-1"), "auto",
         "not UTF-8 (byte 0xe9 at offset 3)"),
    ],
)
def test_bad_input_writes_nothing(
    crepo: Path, tmp_path: Path, name: str, content: bytes, fmt: str, message: str
) -> None:
    """Nothing in these files is a conversation: no empty, permanent transcript is written."""
    f = tmp_path / name
    f.write_bytes(content)
    before = run_git(crepo, "rev-parse", "HEAD").stdout
    proc = run_memory(crepo, "capture", "import", str(f), "--format", fmt)
    assert proc.returncode == 1
    sep = ":" if message[0].isdigit() else ": "
    assert proc.stderr == f"memory: {f}{sep}{message}\n"
    _no_new_transcripts(crepo, before)


def test_a_log_of_another_format_is_not_imported_as_an_empty_one(crepo: Path) -> None:
    before = run_git(crepo, "rev-parse", "HEAD").stdout
    src = FIX / "chatgpt_conversations.json"
    proc = run_memory(crepo, "capture", "import", str(src), "--format", "anthropic")
    assert proc.returncode == 1
    assert proc.stderr == f"memory: {src}: no conversation found (format anthropic)\n"
    _no_new_transcripts(crepo, before)


def test_empty_conversations_of_an_export_are_dropped(crepo: Path, tmp_path: Path) -> None:
    export = json.loads((FIX / "chatgpt_conversations.json").read_text())
    export.append({"id": "empty-one", "title": "Nothing said", "mapping": {}})
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps(export))
    results = import_file(crepo, f)
    assert len(results) == len(export) - 1
    assert all("empty-one" not in r.session_id for r in results)


def test_secret_straddling_the_tool_line_cut_is_redacted_whole(
    crepo: Path, tmp_path: Path
) -> None:
    """Redaction runs before truncation (a cut token no longer matches its rule)."""
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    log = [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "bash",
             "input": {"command": "a" * 175 + " " + token}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "b" * 100 + " " + token},
        ]},
    ]
    f = tmp_path / "log.json"
    f.write_text(json.dumps(log))
    [r] = import_file(crepo, f, "anthropic")
    text = (crepo / r.path).read_text()
    assert "ghp_abc" not in text and "abcdefghijklmnopq" not in text
    assert "[REDACTED:github-token]" in text


def test_a_refused_import_commit_leaves_nothing_behind(crepo: Path) -> None:
    """A closed transcript left on disk (or staged) would read as imported on a retry."""
    hook = crepo / ".git/hooks/pre-commit"
    saved = hook.read_bytes()
    hook.write_text("#!/bin/sh\necho 'some.md:1: error: refused for the test [test]'\nexit 1\n")
    before = run_git(crepo, "rev-parse", "HEAD").stdout
    proc = run_memory(crepo, "capture", "import", str(FIX / "chat.md"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "was refused, so it was not imported: some.md:1: error: refused for the test" \
        in proc.stderr
    assert run_git(crepo, "rev-parse", "HEAD").stdout == before
    assert run_git(crepo, "diff", "--cached", "--name-only").stdout == ""
    assert not list((crepo / "raw/conversations").rglob("*.md"))
    hook.write_bytes(saved)
    [r] = import_file(crepo, FIX / "chat.md")
    assert r.status == "imported"
