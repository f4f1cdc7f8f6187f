"""memrepo.llm against the real SDK over a fake HTTP transport (no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import fake_anthropic

from memrepo.config import defaults
from memrepo.llm import LLM, load_template, parse_json, schema_errors

SCHEMA = {"type": "object", "required": ["items"],
          "properties": {"items": {"type": "array", "items": {"type": "string"}}}}


def make(lrepo_client, replies):
    answers = iter(replies)
    client, seen = lrepo_client(lambda body: next(answers))
    return LLM.from_config(defaults(), client=client), seen


def test_models_per_task_and_offline_without_key(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    llm = LLM.from_config(defaults())
    assert not llm.available
    assert llm.model_for("extract") == "claude-haiku-4-5"
    assert llm.model_for("condense") == "claude-sonnet-4-6"
    assert llm.complete_json("extract", "extract", SCHEMA) is None
    assert LLM.from_config(defaults(), model="opus").model_for("gate") == "claude-opus-4-5"


def test_complete_json_sends_system_and_counts_usage(lrepo_client):
    llm, seen = make(lrepo_client, ['{"items": ["a"]}', '{"items": []}'])
    assert llm.complete_json("extract", "extract", SCHEMA, extractor="x", transcript="t") == \
        {"items": ["a"]}
    assert llm.complete_json("condense", "extract", SCHEMA, extractor="y") == {"items": []}
    assert len(seen) == 2
    body = seen[0]
    assert body["model"] == "claude-haiku-4-5"
    assert seen[1]["model"] == "claude-sonnet-4-6"
    assert "Never extract" in body["system"][0]["text"]
    shared, per_call = body["messages"][0]["content"]
    assert "Transcript" in shared["text"] and "Extractor: x" in per_call["text"]
    u = llm.usage
    assert u.calls == 2 and u.models["claude-haiku-4-5"].cache_write == 800
    assert u.models["claude-sonnet-4-6"].cache_read == 800
    assert u.cost > 0
    assert "2 calls" in u.summary() and "claude-sonnet-4-6" in u.summary()


def _marked(body: dict) -> list[str]:
    """Where a request puts cache_control: 'system' and/or 'user[i]'."""
    out = [f"system[{i}]" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    content = body["messages"][0]["content"]
    if isinstance(content, list):
        out += [f"user[{i}]" for i, b in enumerate(content) if "cache_control" in b]
    return out


def test_cache_breakpoint_on_the_long_shared_transcript_only(lrepo_client):
    """The six extractor calls on one transcript share one cached prefix (instructions +
    transcript); the instructions alone are far below any model's minimum, so a short
    prompt is not marked at all (a cache write for nothing)."""
    llm, seen = make(lrepo_client, ['{"items": []}'] * 5)
    long_text = "## 10:00 — user\n" + "We decided to keep the ledger on PostgreSQL. " * 400
    assert len(long_text) / 3.5 > 4096  # above Haiku 4.5's minimum cacheable prefix
    for ex in ("decisions", "lessons"):
        llm.complete_json("extract", "extract", SCHEMA, extractor=ex, guidance="g",
                          path="p.md", date="2026-03-02", transcript=long_text)
    first, second = seen
    assert _marked(first) == _marked(second) == ["user[0]"]
    assert first["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert long_text in first["messages"][0]["content"][0]["text"]
    # the cached prefix is identical across extractors; only the instruction after it differs
    assert first["system"] == second["system"]
    assert first["messages"][0]["content"][0] == second["messages"][0]["content"][0]
    assert "Extractor: decisions" in first["messages"][0]["content"][1]["text"]
    assert "Extractor: lessons" in second["messages"][0]["content"][1]["text"]
    # short transcript, or a template without a shared part: nothing marked
    llm.complete_json("extract", "extract", SCHEMA, extractor="x", transcript="short")
    assert _marked(seen[2]) == []
    llm.complete_json("extract", "reconcile", {"type": "object"}, existing="", candidates="")
    assert _marked(seen[3]) == [] and isinstance(seen[3]["messages"][0]["content"], str)
    # a model with a lower minimum (Sonnet 4.6: 2,048 tokens) caches a shorter prefix
    mid = "x " * 4000  # ~2,300 tokens by the chars/3.5 estimate
    llm.complete_json("condense", "extract", SCHEMA, extractor="x", transcript=mid)
    assert _marked(seen[4]) == ["user[0]"]


def test_malformed_json_retried_once(lrepo_client):
    llm, seen = make(lrepo_client, ["sure! here you go", '```json\n{"items": ["b"]}\n```'])
    assert llm.complete_json("extract", "extract", SCHEMA) == {"items": ["b"]}
    assert len(seen) == 2
    retry = seen[1]["messages"]
    assert retry[1]["role"] == "assistant" and "not valid" in retry[2]["content"]


def test_malformed_twice_falls_back_and_says_so(lrepo_client, capsys):
    llm, seen = make(lrepo_client, ['{"items": 3}', "no"])
    assert llm.complete_json("extract", "extract", SCHEMA) is None
    assert len(seen) == 2
    assert llm.usage.fallbacks and "offline path" in capsys.readouterr().err
    assert "fell back" in llm.usage.summary()


def test_api_error_falls_back() -> None:
    calls: list[dict] = []
    boom = (500, {"type": "error", "error": {"type": "api_error", "message": "boom"}})
    llm = LLM.from_config(defaults(), client=fake_anthropic(boom, calls))
    llm.max_retries = 0
    assert llm.complete_json("extract", "extract", SCHEMA) is None
    assert len(calls) == 1 and "InternalServerError" in llm.usage.fallbacks[0]


def test_helpers():
    assert parse_json('Answer: {"a": [1]} ') == {"a": [1]}
    assert schema_errors({"items": [1]}, SCHEMA) == ["$.items[0]: expected string, got int"]
    p = load_template("extract")
    assert p.system and "$transcript" in p.shared and "$extractor" in p.user and len(p.hash) == 16
    assert json.loads('{"x": 1}') == {"x": 1}


def test_an_agent_hooks_worker_does_not_spend_the_agents_key(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The detached worker inherits Claude Code's ANTHROPIC_API_KEY / BASE_URL: it sent
    every transcript to that endpoint, 12 requests a session, silently. It stays offline
    unless the user sets MEMREPO_AGENT_LLM=1."""
    from memrepo import llm
    from memrepo.agents import events
    from memrepo.spawn import AGENT_WORKER_ENV

    seen: dict[str, str] = {}
    monkeypatch.setattr(events, "detached", lambda argv, err, stdin, env: seen.update(env))
    (tmp_path / ".memrepo").mkdir()
    events.detach(tmp_path, "claude-code", "SessionEnd", b"{}")
    assert seen[AGENT_WORKER_ENV] == "claude-code"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.delenv("MEMREPO_OFFLINE", raising=False)
    assert llm.online_by_default()
    monkeypatch.setenv(AGENT_WORKER_ENV, "claude-code")
    assert not llm.online_by_default()
    assert not llm.LLM({"extract": "haiku"}).available
    monkeypatch.setenv(llm.AGENT_LLM_ENV, "1")
    assert llm.online_by_default()
