"""Smart trim: tool pairs stay together, a second trim changes nothing, recall stays in its cap."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo.context.tokens import estimate_tokens
from memrepo.context.trim import is_recall, smart_trim, tokens
from memrepo.transcript import messages as m

FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor".split()  # noqa: SIM905


def anthropic_session(rng: random.Random, n: int = 60) -> list[dict]:
    msgs: list[dict] = []
    for i in range(n):
        words = " ".join(rng.choice(FILLER) for _ in range(rng.randint(20, 120)))
        if i % 5 == 3:
            cid = f"toolu_{i}"
            msgs.append({"role": "assistant", "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": cid, "name": "grep", "input": {"q": words[:40]}},
            ]})  # fmt: skip
            msgs.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": cid, "content": words},
            ]})  # fmt: skip
        else:
            role = "user" if i % 2 == 0 else "assistant"
            extra = " We decided to always deploy on Tuesdays." if i == 7 else ""
            msgs.append({"role": role, "content": f"turn {i}: {words}{extra}"})
    msgs.append({"role": "user", "content": "what database did we pick for billing?"})
    return msgs


def openai_session(rng: random.Random, n: int = 50) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "You are a helpful agent."}]
    for i in range(n):
        words = " ".join(rng.choice(FILLER) for _ in range(rng.randint(20, 120)))
        if i % 4 == 1:
            cid = f"call_{i}"
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "search", "arguments": "{}"}},
            ]})  # fmt: skip
            msgs.append({"role": "tool", "tool_call_id": cid, "content": words})
        else:
            msgs.append(
                {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}: {words}"}
            )
    msgs.append({"role": "user", "content": "summarise turn 30 please"})
    return msgs


def pairs_intact(msgs: list[dict]) -> None:
    calls = {c for x in msgs for c in m.tool_calls(x)}
    results = {c for x in msgs for c in m.tool_results(x)}
    assert results <= calls, "a tool result lost its call"
    assert calls <= results, "a tool call lost its result"


def test_tool_pairs_stay_intact_and_trim_is_idempotent() -> None:
    for seed in range(8):
        rng = random.Random(seed)
        for msgs in (anthropic_session(rng), openai_session(rng)):
            window = 2500 + rng.randint(0, 1500)
            res = smart_trim(msgs, window)
            assert res.did_trim
            pairs_intact(res.messages)
            body = sum(tokens(x) for x in res.messages if not is_recall(x))
            assert body <= res.safe_limit
            again = smart_trim(res.messages, window)
            assert not again.did_trim and again.messages == res.messages
            if msgs[0]["role"] == "system":
                assert res.messages[0] == msgs[0]
            assert res.messages[-1] == msgs[-1]  # the newest message is protected


def test_recalled_context_within_its_cap_and_relevant() -> None:
    msgs = anthropic_session(random.Random(1))
    window = 3000
    res = smart_trim(msgs, window, hard_cap=4000)
    recall = [x for x in res.messages if is_recall(x)]
    assert len(recall) == 1
    block = m.text(recall[0])
    assert estimate_tokens(block) <= min(4000, window // 10)
    assert block.startswith('<recalled-context source="memrepo">')
    assert "<knowledge>" in block and "Tuesdays" in block  # a trimmed decision comes back
    small = smart_trim(msgs, window, hard_cap=50)
    sblock = (
        next(m.text(x) for x in small.messages if is_recall(x))
        if any(is_recall(x) for x in small.messages)
        else ""
    )
    assert estimate_tokens(sblock) <= 50


def test_nothing_to_trim_is_untouched() -> None:
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    res = smart_trim(msgs, 10_000)
    assert res.messages == msgs and not res.did_trim


def test_cli(tmp_path: Path) -> None:
    path = tmp_path / "msgs.json"
    path.write_text(json.dumps({"model": "x", "messages": anthropic_session(random.Random(3))}))
    proc = invoke_memory(tmp_path, "trim", "--messages", str(path), "--context-window", "3000")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["model"] == "x"
    pairs_intact(out["messages"])
    assert "trimmed" in proc.stderr


def filler(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(FILLER) for _ in range(n))


def test_protected_messages_over_the_limit_trim_once_then_stay_and_say_so() -> None:
    rng = random.Random(5)
    system = {"role": "system", "content": "You are an agent. " + filler(rng, 1200)}
    older = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"old {i}: {filler(rng, 60)}"}
        for i in range(10)
    ]
    last = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"recent {i}: {filler(rng, 80)}"}
        for i in range(5)
    ]
    msgs = [system, *older, *last, {"role": "user", "content": "which deploy day did we pick?"}]
    window = 1500
    res = smart_trim(msgs, window)
    assert res.did_trim and len(res.trimmed) == len(older)  # all that was not protected
    body = sum(tokens(x) for x in res.messages if not is_recall(x))
    assert body > res.safe_limit
    assert res.over_limit and "protected messages alone" in res.warning
    assert sum(is_recall(x) for x in res.messages) == 1
    again = smart_trim(res.messages, window)
    assert not again.did_trim
    assert again.messages == res.messages  # the recalled block is not summarised into itself
    assert again.over_limit and "nothing left to trim" in again.warning
    third = smart_trim(again.messages, window)
    assert third.messages == res.messages


def test_a_long_one_line_message_is_recalled_cut_to_its_share() -> None:
    rng = random.Random(9)
    long_line = "The kubernetes ingress certificate renewal runbook: " + " ".join(
        f"step{i} rotate the ingress certificate in namespace edge{i}" for i in range(120)
    )
    assert "\n" not in long_line and estimate_tokens(long_line) > 1000
    msgs: list[dict] = [{"role": "system", "content": "You are an agent."}]
    msgs.append({"role": "user", "content": long_line})
    for i in range(30):
        msgs.append(
            {"role": "user" if i % 2 else "assistant", "content": f"turn {i}: {filler(rng, 80)}"}
        )
    msgs.append({"role": "user", "content": "how do we renew the kubernetes ingress certificate?"})
    res = smart_trim(msgs, 3000, hard_cap=300)
    assert 1 in res.trimmed
    block = next(m.text(x) for x in res.messages if is_recall(x))
    assert estimate_tokens(block) <= 300
    detail = block.split("<detail>")[1].split("</detail>")[0]
    snippet = next(
        p for p in detail.strip().split("\n\n") if "ingress certificate renewal runbook" in p
    )
    assert snippet.startswith("[user] The kubernetes ingress")
    assert snippet.endswith("…") and not snippet.endswith(" …")
    assert snippet[:-1] in "[user] " + long_line  # a prefix of the message, cut between words
    assert long_line[len(snippet) - len("[user] ") - 1] == " "


SUMMARY = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\nWe set up the billing service and chose PostgreSQL.\n</summary>"
)


def test_recalled_context_goes_after_the_system_prompt_and_the_compaction_summary() -> None:
    msgs = anthropic_session(random.Random(4))
    with_summary = [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "user", "content": SUMMARY},
        *msgs,
    ]
    res = smart_trim(with_summary, 3000)
    assert res.messages[0]["role"] == "system"
    assert res.messages[1]["content"] == SUMMARY  # protected, and still first after system
    assert is_recall(res.messages[2])
    # a request for a summary is not a compaction summary: the block goes right after system
    asks = [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "user", "content": "Give me a summary of the billing work, then continue."},
        *msgs,
    ]
    res = smart_trim(asks, 3000)
    assert is_recall(res.messages[1])
    again = smart_trim(smart_trim(with_summary, 3000).messages, 3000)
    assert not again.did_trim


def test_cli_reads_jsonl_and_warns_when_over(tmp_path: Path) -> None:
    rng = random.Random(2)
    msgs = [{"role": "system", "content": filler(rng, 1500)}, *anthropic_session(rng, 20)]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps({"type": x["role"], "message": x}) for x in msgs))
    proc = invoke_memory(tmp_path, "trim", "--messages", str(path), "--context-window", "1000")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert isinstance(out, list) and out[0] == msgs[0] and out[-1] == msgs[-1]
    pairs_intact(out)
    assert "memory trim: warning: " in proc.stderr and "over the" in proc.stderr


def test_cli_bad_messages_are_one_line_errors(tmp_path: Path) -> None:
    cases = {
        "broken.json": ('[\n {"role": "user", "content": "hi"},\n {"role": "user" "x"}\n]', ":3: invalid JSON: Expecting ',' delimiter"),
        "broken.jsonl": ('{"role": "user", "content": "a"}\n{"role": \n', ":2: invalid JSONL line: Expecting value"),
        "entry.json": ('{"messages": [{"role": "user", "content": "hi"}, "oops"]}', ": messages[1] is a string, not a message object"),
        "entry.jsonl": ('{"role": "user", "content": "a"}\n\n[1]\n', ":3: entry is an array, not a message object"),
    }  # fmt: skip
    for name, (text, _) in cases.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "latin.json").write_bytes(b'[{"role": "user", "content": "caf\xe9"}]')
    cases["latin.json"] = ("", ":1: not UTF-8 text (byte 0xe9)")
    for name, (_, want) in cases.items():
        path = tmp_path / name
        proc = invoke_memory(tmp_path, "trim", "--messages", str(path), "--context-window", "1000")
        assert proc.returncode == 1 and proc.stdout == "", name
        assert proc.stderr == f"memory: {path}{want}\n", name


# --- the block recalls the memory repo too (audit row 119) ----------------------------

BILLING = """---
type: project_context
project: billing
---

# Billing

## Key Decisions

- 2026-01-10: We picked Postgres for the billing ledger, not DynamoDB (decided with Alice).
- 2026-01-12: The invoice mailer runs at 06:00 UTC.
"""
OLD_SESSION = """---
session_id: s-ledger
started: 2026-01-09T10:00:00
ended: 2026-01-09T10:20:00
---

# Billing ledger storage

## 10:00 — user

Which store should the billing ledger use? DynamoDB or Postgres?

## 10:02 — agent

For the billing ledger, Postgres: transactions across invoice rows and ledger entries are
the common case, and DynamoDB would need a saga for each of them.
"""


def _repo_with_memory(root: Path) -> Path:
    (root / "knowledge" / "projects" / "billing").mkdir(parents=True, exist_ok=True)
    (root / "knowledge" / "projects" / "billing" / "context.md").write_text(BILLING)
    old = root / "raw" / "conversations" / "2026" / "01" / "09" / "1000-s-ledger-billing.md"
    old.parent.mkdir(parents=True, exist_ok=True)
    old.write_text(OLD_SESSION)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "--no-verify", "-m", "memory: billing")  # hook indexes it
    return root


def _session(rng: random.Random) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "You are a helpful agent."}]
    for i in range(40):
        role = "user" if i % 2 == 0 else "assistant"
        msgs.append({"role": role, "content": f"turn {i}: {filler(rng, 70)}"})
    msgs.append({"role": "user", "content": "which database did we pick for the billing ledger?"})
    return msgs


def _block(res_messages: list[dict]) -> str:
    return next(m.text(x) for x in res_messages if is_recall(x))


def test_the_block_recalls_knowledge_and_transcripts_from_the_repo(memrepo_root: Path) -> None:
    root = _repo_with_memory(memrepo_root)
    assert (root / "memory.db").exists()
    msgs = _session(random.Random(6))
    alone = smart_trim(msgs, 3000)
    res = smart_trim(msgs, 3000, root=root)
    assert res.trimmed == alone.trimmed  # the repo changes what is recalled, not what is cut
    block = _block(res.messages)
    assert estimate_tokens(block) <= 300  # the same cap: 10 % of the window
    knowledge = block.split("<knowledge>")[1].split("</knowledge>")[0]
    detail = block.split("<detail>")[1].split("</detail>")[0]
    fact = "- 2026-01-10: We picked Postgres for the billing ledger"
    assert fact in knowledge and "(knowledge/projects/billing/context.md:10)" in knowledge
    assert "invoice mailer" not in knowledge  # shares no word with the question
    assert "[raw/conversations/2026/01/09/1000-s-ledger-billing.md:" in detail
    assert "[user] turn" in detail or "[assistant] turn" in detail  # dropped messages too
    assert res.repo_facts == 1 and res.repo_passages >= 1 and res.notes == []
    assert "Postgres" not in _block(alone.messages)
    # a trim of the result changes nothing
    again = smart_trim(res.messages, 3000, root=root)
    assert not again.did_trim and again.messages == res.messages
    # what the conversation already holds is not recalled from the repo again
    held = [*msgs[:-1], {"role": "assistant", "content": fact[2:] + ", not DynamoDB (decided "
                         "with Alice)."}, msgs[-1]]  # fmt: skip
    assert "context.md:10" not in _block(smart_trim(held, 3000, root=root).messages)


def test_the_repo_recall_never_fails_the_trim(memrepo_root: Path) -> None:
    root = _repo_with_memory(memrepo_root)
    msgs = _session(random.Random(7))
    (root / "memory.db").unlink()  # no index: the scan answers, and says so
    res = smart_trim(msgs, 3000, root=root)
    assert "Postgres for the billing ledger" in _block(res.messages)
    assert any("fallback scan" in n for n in res.notes)
    (root / "memory-config.yaml").write_text("search: [unclosed\n")  # a broken config
    broken = smart_trim(msgs, 3000, root=root)
    assert broken.did_trim and broken.messages == smart_trim(msgs, 3000).messages
    assert any(n.startswith("repo recall failed: ") for n in broken.notes)


def _cli_passes_the_repo() -> bool:
    import inspect

    from memrepo.scripts import trim as cli

    return "root=" in inspect.getsource(cli)


@pytest.mark.skipif(
    not _cli_passes_the_repo(), reason="scripts/trim.py does not pass the repo to smart_trim yet"
)
def test_cli_recalls_from_the_repo(memrepo_root: Path, tmp_path: Path) -> None:
    root = _repo_with_memory(memrepo_root)
    path = tmp_path / "msgs.json"
    path.write_text(json.dumps(_session(random.Random(8))))
    proc = invoke_memory(root, "trim", "--messages", str(path), "--context-window", "3000")
    assert proc.returncode == 0, proc.stderr
    block = _block(json.loads(proc.stdout))
    assert "We picked Postgres for the billing ledger" in block
    assert "1000-s-ledger-billing.md:" in block
    assert "from the repo" in proc.stderr
    elsewhere = invoke_memory(
        tmp_path, "--repo", str(root), "trim", "--messages", str(path), "--context-window", "3000"
    )
    assert elsewhere.stdout == proc.stdout


def test_a_messages_file_nested_too_deep_is_refused_naming_it(tmp_path) -> None:
    import subprocess
    import sys

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    res = subprocess.run([sys.executable, "-m", "memrepo", "trim", "--messages", str(deep),
                          "--context-window", "1000"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert f"{deep}:1: nested deeper than JSON's parser goes" in res.stderr
