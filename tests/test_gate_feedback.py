"""The gate log's ``was_useful`` (seed 000 §5.5; audit row 49): filled in later by
follow-up records keyed by the decision's id (the log is only appended to), judged at a
session's end from the turns that followed, overruled by a person with ``memory topics
feedback``, shown by ``memory topics log`` and counted by ``memory topics tune``."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_memory

from memrepo.context.watchers import gate
from memrepo.context.watchers.feedback import judge_session

TOPIC = """---
type: topic
description: Shipping a release to production.
triggers:
  - type: keyword
    keywords: [deploy]
    scope: input
subscriptions:
  - knowledge/procedures/release-checklist.md
activation: auto
priority: medium
---

# Releases

Before a release: run the smoke tests, watch the canary dashboard, then tag it.
"""


def _repo(root: Path) -> Path:
    (root / "topics" / "releases.md").write_text(TOPIC, encoding="utf-8")
    proc = root / "knowledge" / "procedures" / "release-checklist.md"
    proc.write_text("---\ntype: procedure\n---\n\n# Release checklist\n", encoding="utf-8")
    return root


def _ok(root: Path, *args: str) -> str:
    proc = invoke_memory(root, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _session(root: Path, sid: str, prompt: str, reply: str) -> None:
    """A captured session whose prompt went through the watchers (as recall does)."""
    _ok(root, "capture", "start", "--session", sid)
    _ok(root, "topics", "match", prompt)
    _ok(root, "capture", "append", "--session", sid, "--role", "user", prompt)
    _ok(root, "capture", "append", "--session", sid, "--role", "agent", reply)
    _ok(root, "capture", "end", "--session", sid)


def _log(root: Path) -> list[dict]:
    return json.loads(_ok(root, "topics", "log", "--json", "--topic", "releases"))


def test_a_session_end_judges_its_activations(memrepo_root: Path) -> None:
    root = _repo(memrepo_root)
    _session(root, "ses_f1", "Please deploy the billing api today",
             "Running the smoke tests first; the canary dashboard is green. Tagged v2.")
    _session(root, "ses_f2", "deploy   the billing api\n\nagain",  # whitespace differs
             "Sure, here is a haiku about autumn leaves.")
    first, second = _log(root)
    assert first["active"] and first["was_useful"] is True and first["useful_by"] == "session"
    assert "canary" in first["useful_why"] and "smoke" in first["useful_why"]
    assert second["was_useful"] is False and second["useful_by"] == "session"
    text = _ok(root, "topics", "log", "--topic", "releases")
    assert f"{first['id']}  ON  releases" in text and "useful=yes (session)" in text
    assert "useful=no (session)" in text
    # a decision of no session (typed by hand) stays unjudged
    _ok(root, "topics", "match", "deploy it")
    assert _log(root)[-1]["was_useful"] is None


def test_naming_a_subscribed_file_or_reinforcing_it_is_use(memrepo_root: Path) -> None:
    root = _repo(memrepo_root)
    _session(root, "ses_f3", "deploy the web app",
             "> [tool:read] knowledge/procedures/release-checklist.md\n\nFollowing it.")
    _ok(root, "capture", "start", "--session", "ses_f4")
    _ok(root, "topics", "match", "deploy the worker")
    _ok(root, "capture", "append", "--session", "ses_f4", "--role", "user", "deploy the worker")
    _ok(root, "reinforce", "knowledge/procedures/release-checklist.md")
    _ok(root, "capture", "append", "--session", "ses_f4", "--role", "agent", "Done.")
    _ok(root, "capture", "end", "--session", "ses_f4")
    named, reinforced = _log(root)
    assert named["was_useful"] is True and "names knowledge/procedures" in named["useful_why"]
    assert reinforced["was_useful"] is True and "reinforced" in reinforced["useful_why"]


def test_a_person_overrules_the_session_and_the_log_only_grows(memrepo_root: Path) -> None:
    root = _repo(memrepo_root)
    _session(root, "ses_f5", "deploy the api", "Smoke tests pass, canary dashboard fine.")
    log = root / gate.LOG_FILE
    before = log.read_bytes()
    (d,) = _log(root)
    assert d["was_useful"] is True
    out = json.loads(_ok(root, "topics", "feedback", d["id"][:6], "--not-useful",
                         "--why", "it was a dry run", "--json"))
    assert out["id"] == d["id"] and out["was_useful"] is False and out["useful_by"] == "user"
    after = log.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    # a later judgement by a session never overrules the person
    gate.append_log(root, [{"feedback": d["id"], "was_useful": True, "by": "session"}])
    (again,) = _log(root)
    assert again["was_useful"] is False and again["useful_why"] == "it was a dry run"
    bad = invoke_memory(root, "topics", "feedback", "zzzzzz", "--useful")
    assert bad.returncode == 1 and "no decision with id 'zzzzzz'" in bad.stderr
    assert gate.LOG_FILE in bad.stderr
    assert invoke_memory(root, "topics", "feedback", d["id"]).returncode == 2  # no verdict


def test_tune_uses_the_precision_of_judged_activations(memrepo_root: Path) -> None:
    root = memrepo_root
    decisions = [{"id": f"d{i:09d}", "msg": f"m{i}", "topic": "noisy", "scope": "input",
                  "tier1": ["keyword"], "tier2": 0.1, "threshold": 0.15, "gate": None,
                  "source": "bypass", "active": True} for i in range(6)]
    gate.append_log(root, decisions)
    gate.append_log(root, [{"feedback": d["id"], "was_useful": i == 0, "by": "session"}
                           for i, d in enumerate(decisions)])
    (stats,) = json.loads(_ok(root, "topics", "tune", "--json"))
    assert (stats["judged"], stats["useful"], stats["precision"]) == (6, 1, 0.167)
    assert stats["candidates"] == 6  # feedback records are not decisions
    assert "only 1 of 6 judged activations were useful" in stats["suggestion"]
    table = _ok(root, "topics", "tune")
    assert "1/6" in table and "raise similarity_threshold to 0.20" in table


def test_decisions_logged_before_ids_get_a_stable_one(memrepo_root: Path) -> None:
    root = memrepo_root
    log = root / gate.LOG_FILE
    log.parent.mkdir(parents=True, exist_ok=True)
    old = {"ts": "2026-01-05T10:00:00+00:00", "msg": "abc", "topic": "t", "active": True}
    log.write_text(json.dumps(old) + "\n" + "{torn", encoding="utf-8")
    (d,) = gate.read_log(root)
    assert d["id"] == gate.read_log(root)[0]["id"] and len(d["id"]) == 10
    _ok(root, "topics", "feedback", d["id"], "--useful")
    (d2,) = gate.read_log(root)
    assert d2["was_useful"] is True and d2["id"] == d["id"]
    lines = log.read_text(encoding="utf-8").split("\n")
    assert lines[1] == "{torn" and json.loads(lines[2])["feedback"] == d["id"]  # not glued


def test_judging_reads_only_the_log_of_the_session(memrepo_root: Path) -> None:
    """Decisions logged long before a session started are never read as its own."""
    import datetime as dt

    root = _repo(memrepo_root)
    msg = gate.message_hash("deploy the api")
    early = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.timezone.utc)
    lines = [{"ts": (early + dt.timedelta(seconds=i)).isoformat(), "id": f"o{i:09d}",
              "msg": msg, "topic": "releases", "active": True} for i in range(3000)]
    log = root / gate.LOG_FILE
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    start = dt.datetime(2026, 2, 1, 9, 0, tzinfo=dt.timezone.utc)
    gate.append_log(root, [{"ts": (start + dt.timedelta(minutes=1)).isoformat(), "id": "n1",
                            "msg": msg, "topic": "releases", "active": True,
                            "scope": "input"}])
    body = "\n## 09:01 — user\ndeploy the api\n\n## 09:02 — agent\nSmoke tests, canary ok.\n"
    judged = judge_session(root, body, start, start + dt.timedelta(minutes=5))
    assert [j.id for j in judged] == ["n1"] and judged[0].was_useful


def test_an_agent_session_end_judges_its_activations(memrepo_root: Path) -> None:
    """The agents' SessionEnd (the detached worker) judges what it closed, as ``capture
    end`` does: ``end`` itself judges nothing, whoever ends the session does."""
    from memrepo.agents import worker
    from memrepo.transcript import capture

    root = _repo(memrepo_root)
    prompt = "Please deploy the billing api today"
    _ok(root, "topics", "match", prompt)
    payload = {"session_id": "s-1", "prompt": prompt, "last_assistant_message":
               "Running the smoke tests first; the canary dashboard is green. Tagged v2."}
    worker.capture_session(root, "codex", payload, final=True)
    [d] = _log(root)
    assert d["was_useful"] is True and d["useful_by"] == "session"
    # capture.end alone leaves the decision unjudged
    _ok(root, "topics", "match", prompt)
    capture.start(root, session_id="ses_plain")
    capture.append(root, "ses_plain", "user", prompt)
    capture.append(root, "ses_plain", "agent", "The canary dashboard and smoke tests, done.")
    done = capture.end(root, "ses_plain")
    assert _log(root)[-1]["was_useful"] is None and done.body is not None
