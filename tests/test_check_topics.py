"""hooks/check_topics.py: the topic schema (memrepo.topics), each problem on its key's line."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from memrepo.hooks.check_topics import main

if TYPE_CHECKING:
    from conftest import VRepo

TOPIC = "topics/email.md"
GOOD = """\
type: topic
description: Email triage
triggers:
  - type: webhook
    source: email
    event: new_message
  - type: pattern
    match: "email|inbox|mail"
    scope: input
  - type: keyword
    keywords: [invoice, receipt]
    scope: both
  - type: glob
    match: ["*.eml"]
  - type: cron
    schedule: "0 8 * * 1-5"
subscriptions:
  - knowledge/procedures/email-workflow.md
activation: gated
priority: high
max_context_kb: 4
"""


def topic(meta: str) -> str:
    return f"---\n{meta}---\n\n# Email Triage\n"


@pytest.fixture
def repo(vrepo: VRepo) -> VRepo:
    vrepo.write("knowledge/procedures/email-workflow.md", "---\ntype: procedure\n---\n")
    return vrepo


def test_a_valid_topic_passes(repo: VRepo) -> None:
    repo.write(TOPIC, topic(GOOD))
    assert repo.run(main, TOPIC) == (0, "")


def test_a_manual_topic_with_no_triggers_passes(repo: VRepo) -> None:
    repo.write(TOPIC, topic("type: topic\ntriggers: []\nactivation: manual\n"))
    assert repo.run(main, TOPIC) == (0, "")


def test_type_must_be_topic(repo: VRepo) -> None:
    repo.write(TOPIC, topic(GOOD.replace("type: topic", "type: reference")))
    code, out = repo.run(main, TOPIC)
    assert code == 1
    assert out == (
        f"{TOPIC}:2: error: type 'reference' does not fit topics/: expected topic [check-topics]\n"
    )


def test_missing_triggers_is_one_error(repo: VRepo) -> None:
    repo.write(TOPIC, topic("type: topic\npriority: low\n"))
    code, out = repo.run(main, TOPIC)
    assert code == 1
    assert out == (
        f"{TOPIC}:2: error: a topic file needs 'triggers' (a list of triggers; [] for a "
        "manual-only topic) [check-topics]\n"
    )


def trigger(item: str) -> str:
    """A topic whose only trigger is ``item`` (the 'triggers' key is on file line 3)."""
    return f"type: topic\ntriggers:\n{item}\n"


def setting(line: str) -> str:
    """A manual topic plus one top-level line (on file line 4)."""
    return f"type: topic\ntriggers: []\n{line}\n"


BAD = [
    ("type: topic\ntriggers: {type: pattern}\n", 3, "'triggers' must be a list of trigger"),
    (trigger("  - type: telepathy"), 3, "triggers[0].type must be one of pattern, keyword"),
    (trigger("  - type: pattern\n    match: x\n    scope: sideways"), 3, "scope must be one of"),
    (trigger("  - type: pattern"), 3, "triggers[0] (pattern) needs 'match'"),
    (trigger("  - type: pattern\n    match: '(unclosed'"), 3, "match regex does not compile"),
    (trigger("  - type: pattern\n    match: '(a+)+$'"), 3, "backtrack catastrophically"),
    (trigger("  - type: pattern\n    match: x\n    colour: red"), 3, "unknown key(s): colour"),
    (trigger("  - type: keyword\n    keywords: []"), 3, "keywords must be a non-empty list"),
    (trigger("  - type: webhook\n    source: ''"), 3, "source must be a non-empty string"),
    (trigger("  - type: cron\n    schedule: '61 * * * *'"), 3, "minute field '61' is out of"),
    (trigger("  - type: cron\n    schedule: daily"), 3, "must have 5 fields"),
    (setting("subscriptions: [../outside.md]"), 4, "contains '..'"),
    (setting("subscriptions: [/etc/passwd]"), 4, "is an absolute path"),
    (setting("subscriptions: [knowledge/missing.md]"), 4, "'knowledge/missing.md' does not exist"),
    (setting("subscriptions: knowledge/x.md"), 4, "'subscriptions' must be a list"),
    (setting("activation: sometimes"), 4, "'activation' must be one of auto, gated, manual"),
    (setting("priority: urgent"), 4, "'priority' must be one of low, medium, high, critical"),
    (setting("max_context_kb: -1"), 4, "'max_context_kb' must be a number between 0"),
    (setting("colour: blue"), 4, "unknown topic key 'colour'"),
]


@pytest.mark.parametrize(("meta", "line", "message"), BAD, ids=[b[2][:30] for b in BAD])
def test_schema_problems_name_their_key_line(
    repo: VRepo, meta: str, line: int, message: str
) -> None:
    repo.write(TOPIC, topic(meta))
    code, out = repo.run(main, TOPIC)
    assert code == 1, meta
    assert out.startswith(f"{TOPIC}:{line}: error: "), out
    assert message in out
    assert out.endswith("[check-topics]\n")
    assert out.count("\n") == 1, out


def test_a_subscription_through_a_symlink_out_of_the_repo_is_refused(repo: VRepo) -> None:
    outside = repo.root.parent / "outside.md"
    outside.write_text("secret plans\n")
    (repo.root / "knowledge/link.md").symlink_to(outside)
    repo.write(TOPIC, topic(setting("subscriptions: [knowledge/link.md]")))
    code, out = repo.run(main, TOPIC)
    assert code == 1
    assert out.startswith(f"{TOPIC}:4: error: subscriptions[0] 'knowledge/link.md' points outside")
    assert str(outside) in out  # says where the link goes


def test_broken_yaml_is_one_line(repo: VRepo) -> None:
    repo.write(TOPIC, "---\ntype: topic\ntriggers: [\n---\n")
    code, out = repo.run(main, TOPIC)
    assert code == 1
    assert out.startswith(f"{TOPIC}:3: error: invalid YAML")
    assert out.count("\n") == 1


def test_only_markdown_under_topics_is_checked(repo: VRepo) -> None:
    repo.write("topics/README.txt", "not a topic\n")
    repo.write("knowledge/reference/topic.md", "---\ntype: reference\n---\n")
    repo.add()
    assert repo.run_staged(main) == (0, "")
