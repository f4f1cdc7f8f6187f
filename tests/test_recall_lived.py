"""Recall in a memory that has been lived in: a session's first prompt, and echoes.

After months of sessions the recall for a new session's first question was a third of a
4,000-token compile (bench/quality/lived.py): 4,000 characters, each passage sharing two
of the prompt's words. And the extractor's journal lines came back beside the very turns
they were written from. The first recall of a session now fills one injection and asks
one shared word; a derived line is left out next to the turn of its own source.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_git

from memrepo.agents import recall
from memrepo.context.restate import restatements
from memrepo.context.sections import Section
from memrepo.index.indexer import sync

T1 = "raw/conversations/2023/05/08/1356-cc-e8bc163c82ee-support-group.md"
T2 = "raw/conversations/2023/06/01/0900-cc-0123456789ab-painting.md"
REF1 = "2023/05/08/1356-cc-e8bc163c82ee"
TURN = "Caroline: I decided to pursue counseling as a career after the support group."


def _section(path: str, text: str, placed: int = 0) -> Section:
    return Section(3, "knowledge", path, 10, 10 + text.count("\n"), text, "", placed=placed)


def test_a_derived_line_beside_the_turn_it_came_from_is_an_echo() -> None:
    turn = _section(T1, f"## 13:58 — user\n{TURN}")
    journal = _section("knowledge/journal/2023-05-08.md",
                       f"### support-group\n- Decided: User decided to pursue counseling as a "
                       f"career. [src: {REF1}]")
    old_ref = _section("knowledge/journal/2023-05-09.md",
                       "- Decided: counseling career pursued. [src: 2023/05/08/1356-cc]")
    assert restatements([turn, journal, old_ref]) == [journal, old_ref]
    # another session's turn, a line without a source, a line saying more: not echoes
    other = _section(T2, f"## 09:00 — user\n{TURN}")
    assert restatements([other, journal]) == []
    unsourced = _section("knowledge/journal/2023-05-08.md",
                         f"- Decided: counseling as a career. [src: {REF1}]\n- Mel paints.")
    more = _section("knowledge/people/caroline.md",
                    f"- Caroline moved from Sweden four years ago, adopts. [src: {REF1}]")
    assert restatements([turn, unsourced, more]) == []


def _transcript(turns: list[str]) -> str:
    head = ("---\ntype: conversation\nsession_id: cc-e8bc163c82ee\nstarted: "
            "2023-05-08T13:56:00+00:00\nended: 2023-05-08T14:30:00+00:00\nchannel: claude-code\n"
            "---\n\n# Support group\n")
    return head + "".join(f"\n## 14:{i:02d} — user\n{t}\n" for i, t in enumerate(turns))


@pytest.fixture
def lived(crepo: Path) -> Path:
    """A repo holding one long session about a kayak trip, and a journal line restating
    one of its turns."""
    turns = [f"Caroline: the kayak trip on day {i} went along the {w} river with Melanie, "
             f"and we saw {w} herons near the old mill before lunch. " * 3 for i, w in
             enumerate(["green", "blue", "red", "grey", "wide", "cold", "slow", "long"] * 8)]
    turns.append(TURN)
    files = {T1: _transcript(turns),
             "knowledge/journal/2023-05-08.md":
                 "---\ntype: journal\ndate: 2023-05-08\n---\n\n## 2023-05-08\n\n"
                 f"### support-group\n- Decided: User decided to pursue counseling as a career."
                 f" [src: {REF1}]\n"}
    for rel, text in files.items():
        (crepo / rel).parent.mkdir(parents=True, exist_ok=True)
        (crepo / rel).write_text(text, encoding="utf-8")
    run_git(crepo, "add", "--", *files)
    run_git(crepo, "commit", "-q", "--no-verify", "-m", "memory: lived")
    sync(crepo)
    return crepo


def _recall(root: Path, sid: str, prompt: str) -> str:
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("MEMREPO_NO_HOOKS", "MEMORY_REPO")}
    env["MEMREPO_NO_RESIDENT"] = "1"
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": sid, "cwd": str(root),
               "transcript_path": str(root / "absent.jsonl"), "prompt": prompt}
    out = subprocess.run(["memory", "--repo", str(root), "hook", "claude-code",
                          "UserPromptSubmit"], input=json.dumps(payload), text=True,
                         capture_output=True, env=env, timeout=60).stdout
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""


def test_a_sessions_first_recall_fills_one_injection_the_next_ones_less(lived: Path) -> None:
    first = _recall(lived, "s1", "Tell me everything about the kayak trip with Melanie")
    second = _recall(lived, "s1", "And what about the kayak trip herons near the mill?")
    assert recall.RECALL_MAX_CHARS < len(first) <= 10_000
    assert 0 < len(second) <= recall.RECALL_MAX_CHARS + 600  # + the intro and fences
    # a new session starts with a first recall again
    assert len(_recall(lived, "s2", "Tell me everything about the kayak trip")) > len(second)


def test_the_turn_is_recalled_not_the_journal_line_restating_it(lived: Path) -> None:
    text = _recall(lived, "s3", "Which career did Caroline decide to pursue? counseling?")
    assert "pursue counseling as a career after the support group" in text
    assert "User decided to pursue counseling" not in text


def test_compile_leaves_out_the_journal_line_restating_a_turn_it_holds(lived: Path) -> None:
    """`memory compile` (and MCP memory_context) by the recall's rule: the turn is in the
    prompt, the journal line saying it again is not, and --explain says why."""
    import subprocess

    out = subprocess.run(["memory", "--repo", str(lived), "compile", "--json", "--explain",
                          "Which career did Caroline decide to pursue? counseling?"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    res = json.loads(out)
    assert "pursue counseling as a career after the support group" in res["prompt"]
    assert "User decided to pursue counseling" not in res["prompt"]
    assert any(o["path"] == "knowledge/journal/2023-05-08.md"
               and "says what its source above does" in o["reason"] for o in res["omitted"])


def test_search_ranks_a_derived_line_below_the_turn_it_cites(lived: Path) -> None:
    import subprocess

    query = "User decided to pursue counseling as a career"
    out = subprocess.run(["memory", "--repo", str(lived), "search", "--json", "--explain",
                          query], capture_output=True, text=True, check=True, timeout=60).stdout
    results = json.loads(out)
    paths = [h["path"] for h in results]
    journal = "knowledge/journal/2023-05-08.md"
    assert journal in paths and T1 in paths
    assert paths.index(T1) < paths.index(journal)
    # the journal line's own words would have put it first: it was moved, and says so
    moved = next(h for h in results if h["path"] == journal)
    assert moved["explain"].get("below_source") is True


def test_sources_first_keeps_a_derived_hit_whose_source_is_absent() -> None:
    from memrepo.index.ranking import Hit, sources_first

    def hit(path: str) -> Hit:
        return Hit(path, None, 1.0, 1, 2, "", 0, {})

    d1, t1 = hit("knowledge/journal/a.md"), hit(T1)
    d2, t2 = hit("knowledge/people/x.md"), hit(T2)
    refs = [{REF1}, {"2023/06/01/0900-cc-0123456789ab"}, set(), set()]
    # d1 above its source t1 moves just below it; d2's source t2 is ranked after it: moved
    assert sources_first([d1, d2, t1, t2], refs) == [t1, d1, t2, d2]
    # a source not in the list: the derived hit stays the way to it
    assert sources_first([d1, t2], [{REF1}, set()]) == [d1, t2]
