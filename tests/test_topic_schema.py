"""The topic schema shared by the validator and the watchers."""

from __future__ import annotations

import os
from pathlib import Path

from memrepo.topics import cron_problem, regex_problem, subscription_problem, topic_problems


def test_regexes_that_could_hang_are_refused() -> None:
    assert regex_problem(r"\b(email|inbox|mail)\b") is None
    assert "nested repeat" in regex_problem(r"(a+)+$")
    assert "nested repeat" in regex_problem(r"(\w+\s?)*$")
    # alternatives alike under a repeat, and a long bounded repeat around an unbounded one
    for bad in (r"(a|a)*b", r"(a|a)*$", r"(.*a){20}", r"(a|ab)*c", r"(\w|\d)+x"):
        assert "catastrophic" in regex_problem(bad), bad
    for fine in (r"(\d+\.){3}\d+", r"(foo|bar)+", r"(x|y|z)*end", r"(ERROR|WARN|INFO)+",
                 r"(cat|car)s*", r"https?://\S+"):
        assert regex_problem(fine) is None, fine
    assert "does not compile" in regex_problem("[unclosed")
    assert regex_problem("") == "must be a non-empty string"


def test_more_catastrophic_regexes_are_refused_and_long_literals_are_not() -> None:
    """A sample of bench/torture/bad_input.py's corpus (issue #14): refused by the static
    check (fast, load-independent) rather than by the probe's timing."""
    for bad in (r"(a*)*b", r"(x+x+)+y", r"(.*){1,32000}[bc]", r"(?:a|a?)+b", r"((ab)*)*c",
                r"(.*,){12}P", r"(a|b|ab)*c", r"(?:.+)+x", r"(a{1,99}){1,99}b", r"(.*?a){25}",
                r"(a?){30}a{30}"):  # the last: accepted by the probe, 2**30 ways on "a"*30
        assert "nested repeat" in (regex_problem(bad) or ""), bad
    # a 300-character word is a pattern like any other: accepted (a watcher searches it with
    # a timeout anyway)
    assert regex_problem("a" * 300) is None
    assert regex_problem("deploy" * 50) is None


def test_cron_expressions() -> None:
    assert cron_problem("0 8 * * *") is None
    assert cron_problem("*/15 9-17 * * mon-fri") is None
    assert cron_problem("@daily") is None
    assert "out of range" in cron_problem("0 24 * * *")
    assert "5 fields" in cron_problem("0 8 * *")


def test_subscriptions_stay_inside_the_repo(tmp_path: Path) -> None:
    (tmp_path / "knowledge").mkdir()
    (tmp_path / "knowledge" / "a.md").write_text("x")
    outside = tmp_path.parent / "outside.md"
    outside.write_text("secret")
    os.symlink(outside, tmp_path / "knowledge" / "link.md")
    assert subscription_problem(tmp_path, "knowledge/a.md") is None
    assert "absolute" in subscription_problem(tmp_path, "/etc/passwd")
    assert "'..'" in subscription_problem(tmp_path, "knowledge/../../outside.md")
    assert "outside the repo" in subscription_problem(tmp_path, "knowledge/link.md")
    assert "does not exist" in subscription_problem(tmp_path, "knowledge/b.md")


def test_topic_problems_cover_triggers_and_enums(tmp_path: Path) -> None:
    meta = {
        "type": "topic",
        "triggers": [
            {"type": "pattern", "match": "deploy", "scope": "sideways"},
            {"type": "keyword"},
            {"type": "cron", "schedule": "61 * * * *"},
            {"type": "telepathy"},
            {"type": "webhook", "source": "email", "evnt": "x"},
        ],
        "activation": "sometimes",
        "priority": "urgent",
        "max_context_kb": -1,
    }
    messages = [p.message for p in topic_problems(meta, tmp_path)]
    expected = [
        "triggers[0].scope must be one of input, output, both",
        "triggers[1] (keyword) needs 'keywords'",
        "triggers[2].schedule minute field '61' is out of range",
        "triggers[3].type must be one of",
        "triggers[4] (webhook) has unknown key(s): evnt",
        "'activation' must be one of auto, gated, manual",
        "'priority' must be one of low, medium, high, critical",
        "'max_context_kb' must be a number between 0 and 1024",
    ]
    for e in expected:
        assert any(m.startswith(e) for m in messages), (e, messages)
    assert topic_problems({"type": "topic", "triggers": []}, tmp_path) == []
