"""The prompts of agents whose log memrepo cannot read (Codex, Gemini CLI), through the
real hooks: the prompt hook queues each prompt, the detached end-of-turn worker takes
this exchange's, so N prompts then N Stops (their workers racing) give N user turns, in
order, none lost, none doubled (issue 37, defect 1); and a prompt of megabytes is answered
within the hook's deadline, the transcript announcing what was cut (defect 5).
bench/torture/agent_sessions.py drives many such sessions at once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from memrepo.agents import events, state
from memrepo.agents import harness as H

TURN = re.compile(r"^## \d\d:\d\d — (user|agent)\s*$", re.MULTILINE)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items()
         if k not in ("ANTHROPIC_API_KEY", H.GUARD_ENV, "MEMORY_REPO")}
    e["XDG_STATE_HOME"] = str(tmp_path / "state")
    return e


def hook(root: Path, harness: str, event: str, payload: dict, env: dict[str, str]
         ) -> subprocess.CompletedProcess[bytes]:
    data = json.dumps({"hook_event_name": event, **payload}).encode("utf-8")
    proc = subprocess.run(["memory", "--repo", str(root), "hook", harness, event],
                          input=data, capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc


def detached(root: Path) -> list[dict]:
    return [e for e in state.read_log(root / state.LOG) if e.get("detached")]


def wait_detached(root: Path, count: int, timeout: float = 90.0) -> list[dict]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done = detached(root)
        if len(done) >= count:
            return done
        time.sleep(0.05)
    raise AssertionError(f"detached jobs did not finish: {state.read_log(root / state.LOG)}")


def turns(root: Path, harness: str, hsid: str) -> list[tuple[str, str]]:
    """(role, text) of the session's captured turns, in order."""
    base = H.payload_session(harness, hsid)
    body = "".join(p.read_text(encoding="utf-8")
                   for p in sorted((root / "raw" / "conversations").rglob(f"*-{base}*.md")))
    parts = TURN.split(body)
    return [(r, t.strip()) for r, t in zip(parts[1::2], parts[2::2], strict=True)]


@pytest.mark.parametrize("harness", ["codex", "gemini"])
def test_n_prompts_then_n_stops_lose_none(crepo: Path, env: dict[str, str],
                                          harness: str) -> None:
    """Five prompts, then five end-of-turn hooks back to back: five workers race for the
    parked prompts. (Unfixed: each prompt overwrote the last one parked, so four of the
    five Codex prompts never reached the transcript.)"""
    ask, done = ("UserPromptSubmit", "Stop") if harness == "codex" else ("BeforeAgent",
                                                                          "AfterAgent")
    n, sid = 5, f"{harness}-race"
    prompts = [f"prompt number {i} about the ledger database" for i in range(n)]
    for i, p in enumerate(prompts):
        hook(crepo, harness, ask, {"session_id": sid, "turn_id": f"t{i}", "model": "m",
                                   "prompt": p}, env)
    for i, p in enumerate(prompts):
        end = {"turn_id": f"t{i}", "last_assistant_message": f"answer number {i}"} \
            if harness == "codex" else {"prompt": p, "prompt_response": f"answer number {i}"}
        hook(crepo, harness, done, {"session_id": sid, "model": "m", **end}, env)
    logged = wait_detached(crepo, n)
    assert all(e["status"] == "ok" for e in logged), logged
    got = turns(crepo, harness, sid)
    assert [t for r, t in got if r == "user"] == prompts
    assert [t for r, t in got if r == "agent"] == [f"answer number {i}" for i in range(n)]
    assert got == [x for i in range(n) for x in (("user", prompts[i]),
                                                 ("agent", f"answer number {i}"))]
    assert not state.prompt_queue(crepo, harness, sid).exists()  # all taken


def test_a_torn_queue_line_loses_no_other_prompt(crepo: Path, env: dict[str, str]) -> None:
    """A record cut short (its writer killed) between two whole ones: both whole ones are
    captured, and the torn one is logged, not fatal."""
    sid = "codex-torn"
    hook(crepo, "codex", "UserPromptSubmit", {"session_id": sid, "turn_id": "t0",
                                              "model": "m", "prompt": "first prompt here"},
         env)
    queue = state.prompt_queue(crepo, "codex", sid)
    with queue.open("ab") as fh:
        fh.write(b'{"turn": "tx", "prompt": "cut sho')  # no newline: the writer died
    hook(crepo, "codex", "UserPromptSubmit", {"session_id": sid, "turn_id": "t1",
                                              "model": "m", "prompt": "second prompt here"},
         env)
    for i in range(2):
        hook(crepo, "codex", "Stop", {"session_id": sid, "turn_id": f"t{i}", "model": "m",
                                      "last_assistant_message": f"reply {i}"}, env)
    logged = wait_detached(crepo, 2)
    assert [t for r, t in turns(crepo, "codex", sid) if r == "user"] == [
        "first prompt here", "second prompt here"]
    assert any(e.get("torn") for e in logged), logged


def test_an_answer_without_a_prompt_is_logged(crepo: Path, env: dict[str, str]) -> None:
    hook(crepo, "codex", "Stop", {"session_id": "codex-np", "turn_id": "t9", "model": "m",
                                  "last_assistant_message": "an answer to nothing"}, env)
    [entry] = wait_detached(crepo, 1)
    assert entry["status"] == "ok" and entry.get("unprompted") == 1, entry
    assert turns(crepo, "codex", "codex-np") == [("agent", "an answer to nothing")]


@pytest.mark.parametrize("harness", ["codex", "gemini"])
def test_a_5_mb_prompt_is_answered_within_the_deadline(crepo: Path, env: dict[str, str],
                                                       harness: str) -> None:
    """(Unfixed: 0.85 s a MB and more, the deadline never fired: the agent killed the
    hook at its 5 s timeout.) The transcript then holds the prompt's start and end, and
    says how much memrepo cut out of the middle."""
    ask, done = ("UserPromptSubmit", "Stop") if harness == "codex" else ("BeforeAgent",
                                                                          "AfterAgent")
    words = "ledger database migration accounts created report staging index query"
    line = " ".join(f"{w}{i % 997}" for i, w in enumerate(words.split() * 12)) + "\n"
    body = line * (5 * 1024 * 1024 // len(line))
    prompt = f"BEGINMARK please read this log\n{body}what went wrong? ENDMARK"
    sid = f"{harness}-huge"
    start = time.monotonic()
    hook(crepo, harness, ask, {"session_id": sid, "turn_id": "t0", "model": "m",
                               "prompt": prompt}, env)
    took = time.monotonic() - start
    assert took < events.DEADLINE[H.RECALL], f"{took:.2f} s"
    end = {"last_assistant_message": "it was the index"} if harness == "codex" else {
        "prompt": prompt, "prompt_response": "it was the index"}
    hook(crepo, harness, done, {"session_id": sid, "turn_id": "t0", "model": "m", **end},
         env)
    [entry] = wait_detached(crepo, 1)
    assert entry["status"] == "ok", entry
    [(r1, said), (r2, answer)] = turns(crepo, harness, sid)
    assert (r1, r2, answer) == ("user", "agent", "it was the index")
    assert said.startswith("BEGINMARK please read this log") and said.endswith("ENDMARK")
    cut = re.search(r"\[… ([\d,]+) characters cut by memrepo\]", said)
    assert cut, said[:300]
    assert len(said) - len(cut[0]) - 2 + int(cut[1].replace(",", "")) == len(prompt)


def test_a_cut_never_splits_a_secret() -> None:
    """A secret across the cut is kept whole on one side, so it is redacted whole."""
    key = "AKIAIOSFODNN7EXAMPLE"
    for at in range(state.PARK_HEAD_CHARS - 30, state.PARK_HEAD_CHARS + 10, 3):
        text = "x " * (at // 2) + key + " y" * 60_000
        kept = state.clip_prompt(text, [])
        assert "AKIA" not in kept and "IOSFODNN7" not in kept and "EXAMPLE" not in kept
        assert "characters cut by memrepo" in kept


def test_gemini_hands_memrepos_briefing_back_and_it_is_not_the_users_words(
        crepo: Path, env: dict[str, str]) -> None:
    """Gemini CLI 0.61 puts the SessionStart context into later prompts, in
    <hook_context>: captured verbatim it became the user's turn and the recall query."""
    sid = "gemini-ctx"
    said = "Which build cluster runs kestrel-7?"
    prompt = ("<hook_context>memrepo briefing: what the user's memory repo holds\n"
              "## 2026-11-28\n- an old note</hook_context>\n\n" + said)
    hook(crepo, "gemini", "BeforeAgent", {"session_id": sid, "prompt": prompt}, env)
    hook(crepo, "gemini", "AfterAgent", {"session_id": sid, "prompt": prompt,
                                         "prompt_response": "Zephyrine."}, env)
    wait_detached(crepo, 1)
    assert turns(crepo, "gemini", sid) == [("user", said), ("agent", "Zephyrine.")]
    assert events.without_hook_context("<hook_context>x" * 50_000) == (
        "<hook_context>x" * 50_000)  # unclosed: kept, and in one pass
