"""Topic watchers: Tier 1 triggers, Tier 2 similarity, the gate (with a fake LLM), output steering."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from conftest import fake_anthropic, invoke_memory

from memrepo.context.watchers import gate as gatemod
from memrepo.context.watchers.loader import load_topics
from memrepo.context.watchers.match import match_topics
from memrepo.context.watchers.tune import collect


def write_topic(root: Path, name: str, front: str, body: str = "") -> None:
    path = root / "topics" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\ntype: topic\n{front.strip()}\n---\n\n# {name}\n\n{body}\n", encoding="utf-8"
    )


@pytest.fixture
def crepo6_topics(crepo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A memory repo with a handful of topics of every trigger type (offline by default)."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    write_topic(
        crepo,
        "deploy",
        """
description: Deploying services to production and rolling them back.
triggers:
  - type: pattern
    match: "\\\\b(deploy|rollback)\\\\b"
activation: auto
priority: medium
""",
        "Check the runbook before any production deploy.",
    )
    write_topic(
        crepo,
        "python-style",
        """
description: Python code quality.
triggers:
  - type: pattern
    match: "(?m)^\\\\s*print [^(]"
    scope: output
    correction_hint: Use Python 3 print() calls.
  - type: glob
    match: "*.py"
activation: auto
""",
    )
    write_topic(
        crepo,
        "github",
        """
description: GitHub pull requests.
triggers:
  - type: url
    match: "github\\\\.com/.+/pull/"
  - type: mention
    names: ["@octocat", Mona]
activation: auto
""",
    )
    write_topic(
        crepo,
        "payments",
        """
description: Payment processing with Stripe, invoices, refunds and webhook signatures.
triggers:
  - type: keyword
    keywords: [invoice]
activation: auto
priority: low
""",
        "Stripe webhooks must verify signatures. Refunds go through the billing service.",
    )
    write_topic(
        crepo,
        "security",
        """
description: Credentials, secrets and access keys.
triggers:
  - type: pattern
    match: "\\\\bkey\\\\b"
  - type: cron
    schedule: "0 8 * * *"
    name: morning-audit
  - type: webhook
    source: github
    event: push
activation: gated
priority: high
""",
        "Never paste credentials into chat.",
    )
    return crepo


def names(result) -> set[str]:
    return {a.topic.name for a in result.activated}


def test_tier1_triggers_activate_their_topics(crepo6_topics: Path) -> None:
    root = crepo6_topics
    assert names(match_topics(root, "Can you deploy the api?")) == {"deploy"}
    assert "python-style" in names(match_topics(root, "look at src/app/main.py please"))
    assert "github" in names(match_topics(root, "see https://github.com/a/b/pull/12"))
    plain = match_topics(root, "see https://gitlab.example.com/a/b")
    assert "github" not in names(plain)
    assert "github" in names(match_topics(root, "ask @octocat about it"))
    assert "payments" in names(match_topics(root, "the invoice is late"))
    assert names(match_topics(root, "good morning")) == set()


def test_tier2_similarity_activates_without_a_trigger(crepo6_topics: Path) -> None:
    res = match_topics(
        crepo6_topics, "stripe refunds and webhook signatures for payment processing"
    )
    act = {a.topic.name: a for a in res.activated}
    assert "payments" in act
    assert not act["payments"].tier1 and act["payments"].score >= 0.15


def test_output_watcher_fires_on_the_agents_own_text(crepo6_topics: Path) -> None:
    reply = "Here is the fix:\n    print 'hello'\n"
    out = match_topics(crepo6_topics, reply, scope="output")
    assert out.corrections() == [("python-style", "Use Python 3 print() calls.")]
    assert "python-style" not in names(match_topics(crepo6_topics, reply))  # input scope: no
    proc = invoke_memory(crepo6_topics, "topics", "match", "--output", reply, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["corrections"] == [{"topic": "python-style", "hint": "Use Python 3 print() calls."}]


def test_events_activate_cron_and_webhook_topics(crepo6_topics: Path) -> None:
    assert "security" in names(match_topics(crepo6_topics, events=["cron:morning-audit"]))
    assert "security" in names(match_topics(crepo6_topics, events=["webhook:github:push"]))
    assert "security" not in names(match_topics(crepo6_topics, events=["webhook:github:issue"]))


def test_gated_topic_asks_the_llm_once_then_uses_the_cache(crepo6_topics: Path) -> None:
    calls: list[dict] = []
    client = fake_anthropic("YES", calls)
    root = crepo6_topics

    def gate() -> gatemod.Gate:  # a new Gate per call: like a new `memory compile` process
        return gatemod.Gate(root, "haiku", gatemod.make_llm("haiku", client))

    msg = "where is the key for the staging box that runs our nightly reports in berlin?"
    first = match_topics(root, msg, gate=gate())
    second = match_topics(root, msg, gate=gate())
    assert len(calls) == 1
    assert calls[0]["max_tokens"] == 1 and calls[0].get("temperature", 0) == 0
    assert "security" in calls[0]["messages"][0]["content"]
    a1 = next(a for a in first.activated if a.topic.name == "security")
    a2 = next(a for a in second.activated if a.topic.name == "security")
    assert (a1.source, a1.gate) == ("llm", "yes")
    assert (a2.source, a2.gate) == ("cache", "yes")
    stats = {s.topic: s for s in collect(gatemod.read_log(root))}
    assert stats["security"].gate_yes == 2 and stats["security"].cached == 1


def test_gate_no_drops_the_topic(crepo6_topics: Path) -> None:
    calls: list[dict] = []
    g = gatemod.Gate(
        crepo6_topics, "haiku", gatemod.make_llm("haiku", fake_anthropic("NO", calls))
    )
    res = match_topics(crepo6_topics, "the key of the song is C major", gate=g)
    assert "security" not in names(res)
    assert any(a.topic.name == "security" and a.gate == "no" for a in res.dropped)


def test_offline_the_tier2_threshold_decides_and_says_so(crepo6_topics: Path) -> None:
    res = match_topics(crepo6_topics, "where is the key?")
    assert res.gate_mode == "offline"
    drop = next(a for a in res.dropped if a.topic.name == "security")
    assert "offline" in drop.reason and "threshold" in drop.reason
    proc = invoke_memory(crepo6_topics, "topics", "match", "where is the key?", "--explain")
    assert "offline" in proc.stdout
    words = invoke_memory(crepo6_topics, "topics", "match", "where", "is", "the", "key?", "--explain")
    assert words.stdout == proc.stdout


def test_bypass_table() -> None:
    from memrepo.context.watchers.loader import Topic

    def t(priority: str, activation: str = "gated") -> Topic:
        return Topic("x", "topics/x.md", "", "", 1, [], [], activation, priority)

    assert gatemod.bypass(t("critical"), True, 0.0, 0.15).action == "activate"
    assert gatemod.bypass(t("high"), True, 0.35, 0.15).action == "activate"
    assert gatemod.bypass(t("high"), True, 0.1, 0.15).action == "gate"
    assert gatemod.bypass(t("medium"), True, 0.25, 0.15).action == "gate"
    assert gatemod.bypass(t("medium"), True, 0.1, 0.15).action == "drop"
    assert gatemod.bypass(t("low"), True, 0.31, 0.15).action == "gate"
    assert gatemod.bypass(t("low"), True, 0.29, 0.15).action == "drop"
    assert gatemod.bypass(t("high", "auto"), True, 0.0, 0.15).action == "activate"
    assert gatemod.bypass(t("critical", "manual"), True, 1.0, 0.15).action == "drop"


def test_a_subscription_outside_the_repo_is_refused(crepo6_topics: Path, tmp_path: Path) -> None:
    root = crepo6_topics
    outside = tmp_path / "outside-secret.md"
    outside.write_text("TOP SECRET outside the repo\n")
    (root / "knowledge" / "reference").mkdir(parents=True, exist_ok=True)
    (root / "knowledge" / "reference" / "link.md").symlink_to(outside)
    (root / "knowledge" / "reference" / "ok.md").write_text(
        "---\ntype: reference\n---\nrunbook text\n"
    )
    write_topic(
        root,
        "leaky",
        """
triggers:
  - type: keyword
    keywords: [leak]
subscriptions:
  - ../outside-secret.md
  - knowledge/reference/link.md
  - knowledge/reference/ok.md
""",
    )
    ts = load_topics(root)
    leaky = ts.by_name()["leaky"]
    assert leaky.subscriptions == ["knowledge/reference/ok.md"]
    assert sum(p.path == "topics/leaky.md" and not p.skipped for p in ts.problems) == 2
    proc = invoke_memory(root, "compile", "leak", "--json", "--explain")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert "TOP SECRET" not in data["prompt"]
    assert "runbook text" in data["prompt"]
    refused = [o for o in data["omitted"] if o["reason"].startswith("refused")]
    assert len(refused) == 2


def test_broken_topic_is_skipped_and_reported(crepo6_topics: Path) -> None:
    write_topic(crepo6_topics, "broken", "triggers:\n  - type: pattern\n    match: '(a+)+$'\n")
    ts = load_topics(crepo6_topics)
    assert "broken" not in ts.by_name()
    assert any(p.path == "topics/broken.md" and p.skipped for p in ts.problems)
    proc = invoke_memory(crepo6_topics, "topics", "list")
    assert "topics/broken.md" in proc.stdout and "skipped" in proc.stdout


def test_matching_100_topics_is_fast(crepo: Path) -> None:
    for i in range(100):
        write_topic(
            crepo,
            f"t{i:03d}",
            f"""
description: Topic number {i} about subject{i} and area{i % 7}.
triggers:
  - type: pattern
    match: "\\\\bsubject{i}\\\\b"
  - type: keyword
    keywords: [word{i}, other{i}]
activation: auto
""",
            f"Instructions for subject{i}: do thing{i}.",
        )
    ts = load_topics(crepo)
    msg = "I need help with subject42 and something about area3 and github deploys " * 3
    match_topics(crepo, msg, topics=ts, log=False)
    t0 = time.perf_counter()
    for _ in range(50):
        res = match_topics(crepo, msg, topics=ts, log=False)
    per = (time.perf_counter() - t0) / 50
    assert "t042" in names(res)
    assert per < 0.05  # the budget is 5 ms; leave room for a loaded CI machine


def test_compile_steers_on_the_agents_last_reply(crepo6_topics: Path) -> None:
    """seed 000 §4.3: `memory compile --session` reads the agent's last turn with the output
    watchers; the corrective topic goes into P2 and its hint into the JSON."""
    session = crepo6_topics / "scratch/session.md"
    session.parent.mkdir(parents=True, exist_ok=True)
    head = "---\nsession_id: s9\nstarted: 2026-03-10T09:00:00+00:00\n---\n\n"
    turns = ("## 09:00 — user\nAdd a greeting.\n\n"
             "## 09:01 — agent\nDone:\n    print 'hello'\n\n"
             "## 09:02 — user\nThanks, now the tests.\n")
    session.write_text(head + turns)
    proc = invoke_memory(crepo6_topics, "compile", "--json", "--session", str(session),
                         "now", "the", "tests")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["corrections"] == [{"topic": "python-style", "hint": "Use Python 3 print() calls."}]
    assert any(s["path"] == "topics/python-style.md" and s["slot"] == "P2"
               for s in data["sections"])
    session.write_text(head + turns.replace("print 'hello'", "print('hello')"))
    calm = json.loads(invoke_memory(crepo6_topics, "compile", "--json", "--session",
                                    str(session), "now", "the", "tests").stdout)
    assert calm["corrections"] == [] and all(
        s["path"] != "topics/python-style.md" for s in calm["sections"])


def test_the_prompt_hook_steers_on_the_agents_last_reply(crepo6_topics: Path,
                                                          tmp_path: Path) -> None:
    """The installed prompt hook never read the agent's last reply, and a correction hint
    reached only `compile --json`: now the hook reads the end of Claude Code's log and
    shows the hint as the user's instruction, and `compile` prints it too."""
    from memrepo.agents import recall
    from memrepo.context.sections import TOPICS_LABEL

    log = tmp_path / "s-steer.jsonl"

    def rec(kind: str, content: object) -> str:
        return json.dumps({"type": kind, "sessionId": "s-steer", "uuid": kind,
                           "timestamp": "2026-03-10T09:01:00Z",
                           "message": {"role": kind, "content": content}}) + "\n"

    log.write_text("partial line cut by the tail read\n" + rec("user", "Add a greeting.")
                   + rec("assistant", [{"type": "text", "text": "Done:\n    print 'hello'"}])
                   + rec("user", [{"type": "tool_result", "tool_use_id": "t",
                                    "content": "ok"}]))
    payload = {"session_id": "s-steer", "transcript_path": str(log),
               "prompt": "Thanks, now write the tests for the greeting module."}
    assert recall.last_reply("claude-code", payload) == "Done:\n    print 'hello'"
    text = recall.recall(crepo6_topics, "claude-code", payload)
    assert f"{TOPICS_LABEL}\n```\n- Use Python 3 print() calls. (topic: python-style)" in text
    # a FIFO named as the log is never waited on
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert recall.last_reply("claude-code", {**payload, "transcript_path": str(fifo)}) is None
    session = crepo6_topics / "scratch/session.md"
    session.parent.mkdir(parents=True, exist_ok=True)
    session.write_text("---\nsession_id: s9\nstarted: 2026-03-10T09:00:00+00:00\n---\n\n"
                       "## 09:01 — agent\nDone:\n    print 'hello'\n")
    out = invoke_memory(crepo6_topics, "compile", "--session", str(session), "the", "tests")
    assert "- Use Python 3 print() calls. (topic: python-style)" in out.stdout
