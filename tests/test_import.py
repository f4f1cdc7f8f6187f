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


def test_slash_commands_and_their_output_are_not_user_turns(
        crepo: Path, tmp_path: Path) -> None:
    """`/compact` is recorded by Claude Code as a user record in command markup: neither
    it nor its local output is something the user said."""
    def rec(uuid: str, kind: str, content: object, ts: str) -> bytes:
        message = {"role": kind, "content": content}
        if kind == "assistant":
            message |= {"id": uuid, "model": "claude-x", "usage": {}}
        return json.dumps({"type": kind, "uuid": uuid, "sessionId": "s-cmd",
                           "timestamp": ts, "message": message}).encode() + b"\n"

    log = tmp_path / "s-cmd.jsonl"
    log.write_bytes(
        rec("u1", "user", "Which cluster builds kestrel-7?", "2026-11-28T16:30:00Z")
        + rec("a1", "assistant", [{"type": "text", "text": "Zephyrine."}],
              "2026-11-28T16:30:05Z")
        + rec("u2", "user", "<command-name>/compact</command-name>\n"
              "<command-message>compact</command-message>\n<command-args></command-args>",
              "2026-11-28T16:38:00Z")
        + rec("u3", "user", [{"type": "text", "text": "<local-command-stdout>Not enough "
                              "messages to compact.</local-command-stdout>"}],
              "2026-11-28T16:38:01Z"))
    [result] = import_file(crepo, log, "claude-code", timezone="UTC")
    doc = documents.read_document(crepo / result.path, result.path)
    assert "command-name" not in doc.body and "local-command" not in doc.body
    assert [h.split(" — ")[1] for h in doc.body.split("\n") if h.startswith("## ")] == [
        "user", "agent"]
    assert str(doc.meta["ended"]).startswith("2026-11-28 16:30:05")


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
         "1: not UTF-8 text (byte 0xe9 at offset 3)"),
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


# --- hostile logs (issue #14: bad input): an error naming the file and the place, never a
# traceback or a hang, nothing written; bench/torture/bad_input.py runs ~200 more


def _parse_error(tmp_path: Path, name: str, data: bytes, fmt: str = "auto") -> str:
    """The message `memory capture import` prints for this log (parse only, nothing written)."""
    import datetime as dt

    from memrepo.errors import MemrepoError
    from memrepo.transcript.importers.run import ImportContext, parse

    f = tmp_path / name
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(data)
    started = dt.datetime(2026, 1, 5, tzinfo=dt.timezone.utc)
    with pytest.raises(MemrepoError) as err:
        parse(f, fmt, ImportContext(f, started))
    return str(err.value)


def _cc_line(ts: str = '"2026-01-05T10:00:00Z"', content: str = '"hi"') -> str:
    return (f'{{"type": "user", "sessionId": "s", "timestamp": {ts}, '
            f'"message": {{"role": "user", "content": {content}}}}}')


@pytest.mark.parametrize("ts", ["1e20", "1e999999", "NaN", "-1", '"yesterday"', "true",
                                '"0001-01-01T00:00:00+14:00"', '"9999-12-31T23:59:59-12:00"'])
def test_a_timestamp_that_is_not_one_is_refused_on_its_line(tmp_path: Path, ts: str) -> None:
    log = f"{_cc_line()}\n{_cc_line(ts)}\n".encode()
    message = _parse_error(tmp_path, "s.jsonl", log)
    assert message.startswith(f"{tmp_path / 's.jsonl'}:2: not a valid claude-code log: timestamp")


@pytest.mark.parametrize(("fmt", "doc", "where"), [
    ("anthropic", b'{"messages": "hello"}', "messages: must be a list, got a string"),
    ("anthropic", b'{"messages": [{"role": "user", "content": 5}]}', "messages[0].content"),
    ("anthropic", b'{"messages": [{"role": "user", "content": [{"text": "x"}]}]}',
     "messages[0].content[0].type"),
    ("anthropic", b"3", "must be an object with 'messages' or a list, got a number"),
    ("openai", b'{"messages": [{"role": "assistant", "tool_calls": [5]}]}',
     "messages[0].tool_calls[0]: must be an object"),
    ("openai", b'{"messages": [{"role": "user", "content": [{"type": "image_url", '
               b'"image_url": {"url": "data:image/png;base64,!!!"}}]}]}', "is not valid base64"),
    ("chatgpt", b'[{"mapping": {"m1": "x"}, "current_node": "m1"}]', "[0].mapping.m1"),
])
def test_a_value_of_the_wrong_shape_is_named_by_its_json_path(
    tmp_path: Path, fmt: str, doc: bytes, where: str
) -> None:
    message = _parse_error(tmp_path, "log.json", doc, fmt)
    assert f"not a valid {fmt} log: " in message and where in message, message


@pytest.mark.parametrize(("name", "doc"), [
    ("deep.json", b"[" * 100_000 + b"]" * 100_000),
    ("deep-ok-for-json.json", b'{"messages": ' + b"[" * 500 + b"]" * 500 + b"}"),
    ("deep.jsonl", (_cc_line() + "\n" + _cc_line(content="[" * 5000 + "]" * 5000)).encode()),
])
def test_deep_nesting_is_refused_not_a_recursion_error(
    tmp_path: Path, name: str, doc: bytes
) -> None:
    message = _parse_error(tmp_path, name, doc)
    assert "nested deeper than" in message or "not valid JSON" in message, message
    if name.endswith(".jsonl"):
        assert f"{name}:2:" in message


def _gpt(mapping: dict, current: str | None) -> bytes:
    conv = {"title": "t", "conversation_id": "c", "mapping": mapping}
    if current:
        conv["current_node"] = current
    return json.dumps([conv]).encode()


def _node(nid: str, parent: str | None, children: list[str], parts: list | None = None) -> dict:
    return {"id": nid, "parent": parent, "children": children,
            "message": {"author": {"role": "user"}, "create_time": 1767600000,
                        "content": {"content_type": "text", "parts": parts or ["hi"]}}}


@pytest.mark.parametrize(("mapping", "current"), [
    ({"r": _node("r", None, ["a"]), "a": _node("a", "r", ["b"]), "b": _node("b", "a", ["a"])},
     None),  # children loop, no current node: this hung before
    ({"a": _node("a", "b", []), "b": _node("b", "a", [])}, "a"),  # parents loop
    ({"r": _node("r", "r", ["r"])}, "r"),
])
def test_a_chatgpt_tree_with_a_cycle_is_refused(
    tmp_path: Path, mapping: dict, current: str | None
) -> None:
    message = _parse_error(tmp_path, "conversations.json", _gpt(mapping, current))
    assert "cycle" in message and "conversations.json" in message


@pytest.mark.parametrize("pointer", ["file-service://../secret", "../secret", "/etc/passwd",
                                     "file-service:///etc/passwd", "sediment://**/*",
                                     "file-service://link"])
def test_an_asset_pointer_cannot_leave_the_export_folder(tmp_path: Path, pointer: str) -> None:
    (tmp_path / "secret.png").write_bytes(b"OUTSIDE")
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "link.png").symlink_to(tmp_path / "secret.png")
    parts = ["look", {"content_type": "image_asset_pointer", "asset_pointer": pointer}]
    doc = _gpt({"m1": _node("m1", None, [], parts)}, "m1")
    message = _parse_error(tmp_path, "export/conversations.json", doc)
    assert "mapping.m1.message.content.parts[1].asset_pointer" in message, message


def test_an_asset_inside_the_export_folder_is_attached(tmp_path: Path) -> None:
    import datetime as dt

    from memrepo.transcript.importers.run import ImportContext, parse

    (tmp_path / "file-ok.png").write_bytes(b"\x89PNG inside")
    parts = ["look", {"content_type": "image_asset_pointer",
                      "asset_pointer": "file-service://file-ok"}]
    f = tmp_path / "conversations.json"
    f.write_bytes(_gpt({"m1": _node("m1", None, [], parts)}, "m1"))
    _fmt, [conv] = parse(f, "auto", ImportContext(f, dt.datetime.now(dt.timezone.utc)))
    assert list(conv.attachments.values()) == [b"\x89PNG inside"]


def test_a_refused_hostile_import_writes_nothing(crepo: Path, tmp_path: Path) -> None:
    f = tmp_path / "conversations.json"
    f.write_bytes(_gpt({"a": _node("a", "b", []), "b": _node("b", "a", [])}, "a"))
    before = run_git(crepo, "rev-parse", "HEAD").stdout
    proc = run_memory(crepo, "capture", "import", str(f))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"memory: {f}: not a valid chatgpt log: ")
    _no_new_transcripts(crepo, before)


def test_started_out_of_range_is_refused(crepo: Path) -> None:
    import datetime as dt

    from memrepo.errors import MemrepoError

    with pytest.raises(MemrepoError, match=r"--started: 9999-12-31.*out of range"):
        import_file(crepo, FIX / "chat.md", started=dt.datetime(9999, 12, 31, 23, 59,
                                                                tzinfo=dt.timezone.utc))
