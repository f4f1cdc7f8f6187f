"""Smart trim: tool pairs stay together, a second trim changes nothing, recall stays in its cap."""

from __future__ import annotations

import json
import random
from pathlib import Path

from conftest import run_memory

from memrepo.compile import messages as m
from memrepo.compile.tokens import estimate_tokens
from memrepo.trim import is_recall, smart_trim, tokens

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
    proc = run_memory(tmp_path, "trim", "--messages", str(path), "--context-window", "3000")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["model"] == "x"
    pairs_intact(out["messages"])
    assert "trimmed" in proc.stderr
