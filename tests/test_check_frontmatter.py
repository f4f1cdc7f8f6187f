"""hooks/check_frontmatter.py: parseable frontmatter, type by directory, required fields, dates."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from memrepo.hooks.check_frontmatter import main

if TYPE_CHECKING:
    from conftest import VRepo

GOOD = {
    "knowledge/identity/SOUL.md": "type: identity\nrole: soul\nupdated: 2026-02-16T18:00:00Z\n",
    "knowledge/identity/USER.md": "type: identity\nrole: user\nupdated: 2026-02-16\n",
    "knowledge/memory/MEMORY.md": "type: memory\nupdated: 2026-02-16\nline_count: 3\n",
    "knowledge/journal/2026-02-16.md": "type: journal\ndate: 2026-02-16\n",
    "knowledge/projects/_active.md": "type: project_index\nupdated: 2026-02-16\n",
    "knowledge/projects/auto/context.md": "type: project_context\nproject: auto\n",
    "knowledge/projects/auto/progress.md": "type: project_progress\n",
    "knowledge/people/_index.md": "type: people_index\n",
    "knowledge/people/david.md": "type: person\nname: David\ncreated: '2026-02-01'\n",
    "knowledge/procedures/email.md": "type: procedure\n",
    "knowledge/reference/git.md": "type: reference\ntags: [git]\n",
    "topics/email.md": "type: topic\ntriggers: []\n",
    "archive/journal/2025-10-01.md": "type: journal\ndate: 2025-10-01\n",
    "archive/knowledge/people/old.md": "type: person\nname: Old\n",
    "raw/conversations/2026/02/16/1845-ses_a1-x.md": (
        "session_id: ses_a1\nstarted: 2026-02-16T18:45:00+01:00\nended: 2026-02-16T19:00:00+01:00\n"
    ),
}
TRANSCRIPT = "raw/conversations/2026/02/16/1845-s-x.md"


def doc(meta: str, body: str = "\n# Title\n") -> str:
    return f"---\n{meta}---\n{body}"


def test_every_kind_of_good_file_passes(vrepo: VRepo) -> None:
    for path, meta in GOOD.items():
        vrepo.write(path, doc(meta))
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")


def test_files_outside_the_memory_layout_are_not_checked(vrepo: VRepo) -> None:
    vrepo.write("README.md", "# no frontmatter here\n")
    vrepo.write("knowledge/people/notes.txt", "no frontmatter, not markdown\n")
    vrepo.write("scratch/x.md", "")
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")


def test_missing_frontmatter(vrepo: VRepo) -> None:
    vrepo.write("knowledge/people/bob.md", "# Bob\n")
    code, out = vrepo.run(main, "knowledge/people/bob.md")
    assert code == 1
    assert out.startswith("knowledge/people/bob.md:1: error: no YAML frontmatter")
    assert out.rstrip().endswith("[check-frontmatter]")


def test_missing_type(vrepo: VRepo) -> None:
    vrepo.write("knowledge/people/bob.md", doc("name: Bob\n"))
    code, out = vrepo.run(main, "knowledge/people/bob.md")
    assert code == 1
    assert out == (
        "knowledge/people/bob.md:1: error: frontmatter needs 'type' (here: person) "
        "[check-frontmatter]\n"
    )


@pytest.mark.parametrize(
    ("path", "meta", "expected"),
    [
        ("knowledge/people/bob.md", "name: Bob\ntype: journal\n", "expected person"),
        ("knowledge/projects/x/notes.md", "type: person\n", "expected project_context, "),
        ("knowledge/projects/_active.md", "type: project_context\n", "expected project_index"),
        ("topics/t.md", "type: 3\n", "type 3 does not fit topics/: expected topic"),
        ("archive/journal/2025-01-01.md", "type: memory\n", "expected journal"),
        ("raw/conversations/2026/02/16/1845-s-x.md", "type: journal\n", "expected conversation"),
    ],
)
def test_type_must_fit_the_directory(vrepo: VRepo, path: str, meta: str, expected: str) -> None:
    vrepo.write(path, doc(meta))
    code, out = vrepo.run(main, path)
    assert code == 1
    line = 3 if meta.startswith("name") else 2
    assert out.startswith(f"{path}:{line}: error: type ")
    assert expected in out


def test_transcript_may_omit_type_or_say_conversation(vrepo: VRepo) -> None:
    meta = "session_id: s1\nstarted: 2026-02-16T18:45:00Z\n"
    vrepo.write("raw/conversations/2026/02/16/1845-s1-a.md", doc(meta))
    vrepo.write("raw/conversations/2026/02/16/1846-s1-b.md", doc("type: conversation\n" + meta))
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")


@pytest.mark.parametrize(
    ("path", "meta", "field", "line"),
    [
        ("knowledge/people/bob.md", "type: person\nupdated: 2026-01-01\n", "name", 2),
        ("knowledge/people/bob.md", "type: person\nname: ''\n", "name", 3),
        ("knowledge/identity/SOUL.md", "type: identity\n", "role", 2),
        ("knowledge/journal/2026-01-01.md", "type: journal\n", "date", 2),
        ("topics/t.md", "type: topic\n", "triggers", 2),
        (TRANSCRIPT, "started: 2026-02-16T18:45:00Z\n", "session_id", 1),
        (TRANSCRIPT, "session_id: s\n", "started", 1),
    ],
)
def test_required_fields(vrepo: VRepo, path: str, meta: str, field: str, line: int) -> None:
    vrepo.write(path, doc(meta))
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out.startswith(f"{path}:{line}: error: a ")
    assert f"file needs '{field}'" in out


def test_identity_role_must_be_known(vrepo: VRepo) -> None:
    meta = "type: identity\nupdated: 2026-01-01\nrole: ghost\n"
    vrepo.write("knowledge/identity/SOUL.md", doc(meta))
    code, out = vrepo.run(main, "knowledge/identity/SOUL.md")
    assert code == 1
    assert out == (
        "knowledge/identity/SOUL.md:4: error: role 'ghost' must be one of soul, user, rules, tools "
        "[check-frontmatter]\n"
    )


@pytest.mark.parametrize("value", ["yesterday", "'2026-13-01'", "12", "[2026]", "true"])
def test_date_fields_must_be_dates(vrepo: VRepo, value: str) -> None:
    vrepo.write("knowledge/reference/a.md", doc(f"type: reference\nupdated: {value}\n"))
    code, out = vrepo.run(main, "knowledge/reference/a.md")
    assert code == 1
    assert out.startswith("knowledge/reference/a.md:3: error: 'updated' must be a date ")
    assert out.count("\n") == 1


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ("tags: notalist\n", "'tags' must be a list of strings, e.g. [coding, git], got 'notalist'"),
        ("tags: {a: 1}\n", "'tags' must be a list of strings, e.g. [coding, git], got {'a': 1}"),
        ("tags: [ok, [nested]]\n", "'tags' must be a list of strings"),
        ("tags: [yes]\n", "'tags' must be a list of strings, e.g. [coding, git], got [True] (quote values YAML reads as true/false or null)"),
        ("line_count: abc\n", "'line_count' must be a whole number (0 or more), got 'abc'"),
        ("line_count: -3\n", "'line_count' must be a whole number (0 or more), got -3"),
        ("line_count: 2.5\n", "'line_count' must be a whole number (0 or more), got 2.5"),
        ("line_count: true\n", "'line_count' must be a whole number (0 or more), got True"),
    ],
)
def test_tags_and_counts_have_their_types(vrepo: VRepo, meta: str, expected: str) -> None:
    vrepo.write("knowledge/memory/MEMORY.md", doc("type: memory\n" + meta))
    code, out = vrepo.run(main, "knowledge/memory/MEMORY.md")
    assert code == 1
    assert out.startswith(f"knowledge/memory/MEMORY.md:3: error: {expected}")
    assert out.count("\n") == 1


@pytest.mark.parametrize("key", ["tokens_in", "tokens_out", "turns", "redactions"])
def test_transcript_counts_are_whole_numbers(vrepo: VRepo, key: str) -> None:
    meta = f"session_id: s\nstarted: 2026-02-16T18:45:00Z\n{key}: many\n"
    vrepo.write(TRANSCRIPT, doc(meta))
    code, out = vrepo.run(main, TRANSCRIPT)
    assert code == 1
    assert out == (f"{TRANSCRIPT}:4: error: '{key}' must be a whole number (0 or more), got "
                   "'many' [check-frontmatter]\n")


def test_good_tags_and_counts_pass(vrepo: VRepo) -> None:
    meta = ("session_id: s\nstarted: 2026-02-16T18:45:00Z\ntags: [coding, 2026]\n"
            "tokens_in: 0\ntokens_out: 12840\nturns: 6\nredactions: 0\n")
    vrepo.write(TRANSCRIPT, doc(meta))
    assert vrepo.run(main, TRANSCRIPT) == (0, "")


@pytest.mark.parametrize(("key", "value"), [
    ("updated", "0001-01-01"), ("created", "9999-12-31"), ("date", "1899-12-31"),
    ("updated", "3000-01-01T00:00:00Z"),
])
def test_dates_out_of_range_are_refused_on_their_line(vrepo: VRepo, key: str, value: str) -> None:
    """0001-01-01 or 9999-12-31 is a typo, and would overflow once moved to a time zone."""
    vrepo.write("knowledge/reference/a.md", doc(f"type: reference\n{key}: {value}\n"))
    code, out = vrepo.run(main, "knowledge/reference/a.md")
    assert code == 1
    assert out.startswith(f"knowledge/reference/a.md:3: error: '{key}' {value[:10]}")
    assert "is out of range: memrepo keeps dates from 1900-01-01 to 2999-12-31" in out


def test_a_transcript_started_in_year_one_is_refused_not_a_crash(vrepo: VRepo) -> None:
    path = "raw/conversations/0001/01/01/0000-s-x.md"
    vrepo.write(path, doc("session_id: s\nstarted: 0001-01-01T00:00:00-12:00\n"))
    code, out = vrepo.run(main, path)
    assert code == 1 and out.startswith(f"{path}:3: error: 'started' 0001-01-01T00:00:00-12:00")


@pytest.mark.parametrize("value", ["2026-13-01", "2026-02-30"])
def test_impossible_yaml_dates_name_their_line(vrepo: VRepo, value: str) -> None:
    vrepo.write("knowledge/reference/a.md", doc(f"type: reference\nupdated: {value}\n"))
    code, out = vrepo.run(main, "knowledge/reference/a.md")
    assert code == 1
    assert out.startswith("knowledge/reference/a.md:3: error: invalid date ")
    assert out.count("\n") == 1


@pytest.mark.parametrize(
    "value", ["2026-02-16", "2026-02-16", "'2026-02-16T10:00:00+02:00'", "2026-02-16 10:00:00Z"]
)
def test_date_fields_accept_dates_and_datetimes(vrepo: VRepo, value: str) -> None:
    vrepo.write("knowledge/reference/a.md", doc(f"type: reference\ncreated: {value}\n"))
    assert vrepo.run(main, "knowledge/reference/a.md") == (0, "")


@pytest.mark.parametrize(
    "value",
    ["2026-02-16T18:45:00", "2026-02-16", "'2026-02-16 18:45'", "tomorrow", "1771267500"],
)
def test_datetime_fields_need_a_utc_offset(vrepo: VRepo, value: str) -> None:
    path = "raw/conversations/2026/02/16/1845-s1-a.md"
    vrepo.write(path, doc(f"session_id: s1\nstarted: {value}\n"))
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out.startswith(
        f"{path}:3: error: 'started' must be an ISO 8601 datetime with a UTC offset"
    )
    assert out.count("\n") == 1


@pytest.mark.parametrize(
    "value", ["2026-02-16T18:45:00Z", "2026-02-16T18:45:00-05:00", "'2026-02-16T18:45:00+05:30'"]
)
def test_datetime_fields_with_offset_pass(vrepo: VRepo, value: str) -> None:
    path = "raw/conversations/2026/02/16/1845-s1-a.md"
    vrepo.write(path, doc(f"session_id: s1\nstarted: {value}\n"))
    assert vrepo.run(main, path) == (0, "")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"---\ntype: person\nname: Ren\xe9\n---\n", ":3: error: not UTF-8 text (byte 0xe9)"),
        (b"", ":1: error: file is empty"),
        (b"\n  \n", ":1: error: file is empty"),
        (
            b"---\ntype: person\na: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n---\n",
            ": error: YAML anchors and aliases (&name / *name) are not allowed",
        ),
        (b"---\ntype: person\nname: A\ntype: person\n---\n", ":4: error: duplicate key 'type'"),
        (b"---\ntype: person\nname: A\n\n# body\n", ":1: error: frontmatter is not closed"),
        (b"---\ntype: person\nname: [A\n---\n", ": error: invalid YAML"),
        (b"---\n- a\n- b\n---\n", ":2: error: frontmatter must be a YAML mapping"),
        (b"---\n" + b"x: " + b"[" * 5000 + b"\n---\n", ": error: "),
        (b"---\ntype: person\nname: A\nx: " + b"[" * 40 + b"]" * 40 + b"\n---\n",
         ":4: error: YAML nested deeper than 32 levels"),
        (b"---\ntype: person\nname: A\nturns: " + b"9" * 5000 + b"\n---\n",
         ":4: error: invalid number"),
        (b"---\ntype: person\nname: A\nx: a\x00b\n---\n",
         ":4: error: invalid YAML: control character 0x00 is not allowed"),
    ],
    ids=["not-utf8", "empty", "blank", "alias-bomb", "duplicate-key", "unclosed", "bad-yaml",
         "not-a-mapping", "deep-nesting", "nested-40", "int-5000-digits", "nul"],
)
def test_bad_input_is_one_clear_line(vrepo: VRepo, content: bytes, expected: str) -> None:
    path = "knowledge/people/a.md"
    vrepo.write(path, content)
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out.count("\n") == 1, out
    assert out.startswith(path + ":")
    assert expected in out
    assert out.endswith("[check-frontmatter]\n")


def test_every_bad_file_is_reported(vrepo: VRepo) -> None:
    vrepo.write("knowledge/people/a.md", "# A\n")
    vrepo.write("knowledge/people/b.md", doc("type: person\nname: B\n"))
    vrepo.write("topics/c.md", doc("type: person\n"))
    code, out = vrepo.run(main, "knowledge/people/a.md", "./knowledge/people/b.md", "topics/c.md")
    assert code == 1
    assert out.splitlines()[0].startswith("knowledge/people/a.md:1: error:")
    assert out.splitlines()[1].startswith("topics/c.md:2: error: type 'person'")
    assert len(out.splitlines()) == 2


def test_deleted_file_is_not_an_error(vrepo: VRepo) -> None:
    assert vrepo.run(main, "knowledge/people/gone.md") == (0, "")


def test_a_broken_config_is_reported_not_raised(vrepo: VRepo) -> None:
    vrepo.write("memory-config.yaml", "validation:\n  memory_warn_line: 3\n")
    vrepo.write("knowledge/people/b.md", doc("type: person\nname: B\n"))
    code, out = vrepo.run(main, "knowledge/people/b.md")
    assert code == 1
    assert out.startswith("memory-config.yaml:2: error: unknown key 'validation.memory_warn_line'")
    assert out.endswith("[config]\n")


def test_a_name_that_is_not_kebab_case_is_warned_not_refused(crepo) -> None:
    """Seed 000 §2 naming (seed audit row 151): `Bob Smith.md` gets a warning, the
    layout's own names (MEMORY.md, SOUL.md, _index.md, journals) none."""
    import subprocess

    (crepo / "knowledge/people/Bob Smith.md").write_text(
        "---\ntype: person\nname: Bob\n---\n\n- Bob runs the ops rota.\n", encoding="utf-8")
    (crepo / "knowledge/people/carol-ann.md").write_text(
        "---\ntype: person\nname: Carol Ann\n---\n\n- Carol owns billing.\n", encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=crepo, check=True)
    res = subprocess.run(["git", "commit", "-m", "knowledge: people"], cwd=crepo,
                         capture_output=True, text=True)
    said = res.stdout + res.stderr
    assert res.returncode == 0, said
    assert "knowledge/people/Bob Smith.md: warning: file names here are kebab-case " \
        "(e.g. bob-smith.md)" in said
    assert said.count("kebab-case") == 1
