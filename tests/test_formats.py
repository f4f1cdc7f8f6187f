"""File formats: strict YAML, frontmatter with file lines, categories and types."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memrepo import yamlsafe
from memrepo.documents import decode, parse_date, parse_datetime, parse_document, render_document
from memrepo.errors import FormatError
from memrepo.layout import TURN_HEADER, category_of, expected_types, transcript_path


def test_duplicate_keys_and_aliases_are_refused_with_lines() -> None:
    with pytest.raises(yamlsafe.YAMLProblem) as err:
        yamlsafe.load("a: 1\nb: 2\na: 3\n")
    assert err.value.line == 3 and "duplicate key 'a'" in err.value.message
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    bomb += "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    with pytest.raises(yamlsafe.YAMLProblem, match="aliases"):
        yamlsafe.load(bomb)


def test_frontmatter_errors_carry_the_file_line() -> None:
    with pytest.raises(FormatError) as err:
        parse_document("---\ntype: reference\ntitle: [oops\n---\nbody\n", "k.md")
    assert str(err.value).startswith("k.md:")
    assert err.value.line in (3, 4)
    with pytest.raises(FormatError, match="not closed"):
        parse_document("---\ntype: reference\nbody\n", "k.md")
    with pytest.raises(FormatError, match="mapping"):
        parse_document("---\n- a\n- b\n---\n", "k.md")


def test_non_utf8_names_the_line() -> None:
    with pytest.raises(FormatError) as err:
        decode(b"---\ntype: x\n---\nok\nbad \xff byte\n", "f.md")
    assert err.value.line == 5 and "not UTF-8" in str(err.value)


def test_round_trip_keeps_key_order_and_body_line() -> None:
    meta = {"type": "journal", "date": dt.date(2026, 2, 16), "tags": ["a", "b"]}
    text = render_document(meta, "## 2026-02-16\n- one\n")
    doc = parse_document(text, "knowledge/journal/2026-02-16.md")
    assert list(doc.meta) == ["type", "date", "tags"]
    assert doc.meta == meta
    assert text.split("\n")[doc.body_line - 1 :][1] == "## 2026-02-16"
    assert render_document(doc.meta, doc.body) == text


@pytest.mark.parametrize(
    ("path", "category", "types"),
    [
        ("raw/conversations/2026/02/16/1845-s-x.md", "conversation", {"conversation"}),
        ("knowledge/identity/SOUL.md", "identity", {"identity"}),
        ("knowledge/projects/_active.md", "project", {"project_index"}),
        (
            "knowledge/projects/a/context.md",
            "project",
            {"project_context", "project_progress", "project_notes"},
        ),
        ("knowledge/people/_index.md", "person", {"people_index"}),
        ("knowledge/people/ann.md", "person", {"person"}),
        ("topics/email.md", "topic", {"topic"}),
        ("archive/journal/2025-01-01.md", "archive", {"journal"}),
        ("archive/knowledge/people/ann.md", "archive", {"person"}),
    ],
)
def test_category_and_types_from_path(path: str, category: str, types: set[str]) -> None:
    assert category_of(path) == category
    assert expected_types(path) == types


def test_dates_and_transcript_names() -> None:
    started = parse_datetime("2026-02-16T18:45:00Z")
    assert started == dt.datetime(2026, 2, 16, 18, 45, tzinfo=dt.timezone.utc)
    assert parse_date("2026-02-16") == dt.date(2026, 2, 16)
    assert parse_date("16/02/2026") is None
    assert transcript_path(started, "ses_1", "hello-world") == (
        "raw/conversations/2026/02/16/1845-ses_1-hello-world.md"
    )
    assert TURN_HEADER.match("## 18:45 — agent [memory]")
    assert not TURN_HEADER.match("## 18:45 - agent")
    assert not TURN_HEADER.match("## 24:00 — user")
    # seed 000 §2.1: memory operations are agent turns only
    assert not TURN_HEADER.match("## 18:45 — user [memory]")
    assert not TURN_HEADER.match("## 18:45 — system [memory]")
    assert TURN_HEADER.match("## 18:45 — agent [memory]")["memory"]


def test_dump_never_writes_aliases_the_loader_refuses() -> None:
    """The same object twice (``ended`` clamped to ``started``) is written out twice."""
    from memrepo import yamlsafe

    when = dt.datetime(2026, 2, 16, 18, 45, tzinfo=dt.timezone.utc)
    tags = ["a", "b"]
    text = yamlsafe.dump({"started": when, "ended": when, "tags": tags, "more": tags})
    assert "&" not in text and "*" not in text
    assert yamlsafe.load(text) == {"started": when, "ended": when, "tags": tags, "more": tags}


def test_the_readme_lists_every_type_with_its_required_fields() -> None:
    """Docs that match the code: the README's type table is checked against the schema."""
    import re

    from memrepo.documents import REQUIRED_FIELDS
    from memrepo.layout import SPECIAL_TYPES, TYPES_BY_CATEGORY

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    if "| folder | `type` | required fields |" not in readme:  # pragma: no cover - sdist
        return
    table = readme.split("| folder | `type` | required fields |", 1)[1].split("\n\n", 1)[0]
    rows = [r.split("|")[1:4] for r in table.strip().split("\n")[1:]]
    listed_types = {t for _, types, _ in rows for t in re.findall(r"`([a-z_]+)`", types)}
    every = set().union(*TYPES_BY_CATEGORY.values(), SPECIAL_TYPES.values())
    assert every <= listed_types
    for _, types, fields in rows:
        first = re.findall(r"`([a-z_]+)`", types)[0]
        named = re.findall(r"`([a-z_]+)`", fields.split(":")[0])
        assert named == list(REQUIRED_FIELDS.get(first, ())), (first, named)


def test_a_source_reference_names_its_whole_session() -> None:
    """``[src: …]`` and recall markers named Claude Code sessions ``…/1356-cc``: every
    session of that minute (and every one of Codex's, Gemini's) looked the same."""
    from memrepo.layout import source_ref

    base = "raw/conversations/2023/05/08/1356-"
    assert source_ref(base + "cc-e8bc163c82ee-support-group.md") == "2023/05/08/1356-cc-e8bc163c82ee"
    assert source_ref(base + "codex-0123456789ab.md") == "2023/05/08/1356-codex-0123456789ab"
    assert source_ref(base + "ses_ab12cd34-standup.md") == "2023/05/08/1356-ses_ab12cd34"
    assert source_ref("knowledge/journal/2023-05-08.md") == "knowledge/journal/2023-05-08.md"
