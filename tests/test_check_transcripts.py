"""hooks/check_transcripts.py: transcript shape, and immutability against HEAD."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from memrepo import git
from memrepo.hooks.check_transcripts import main

if TYPE_CHECKING:
    from conftest import VRepo

PATH = "raw/conversations/2026/02/16/1845-ses_a1b2-autopoiesis-restructuring.md"
META = """\
session_id: ses_a1b2
started: 2026-02-16T18:45:00Z
model: claude-opus-4.6
channel: webchat
"""
BODY = """\

# Autopoiesis Restructuring

## 18:45 — user
Read all open issues and give me a summary.

## 18:45 — agent
> [tool:exec] gh issue list → 12 results

Here are all 12 open issues.
"""
MORE = """\

## 18:52 — agent [memory]
> [knowledge:updated] knowledge/projects/autopoiesis/context.md — added migration plan

## 19:30 — user
That's a wrap.
"""
CLOSE = """\
ended: 2026-02-16T19:32:00Z
tokens_in: 45230
tokens_out: 12840
knowledge_changes:
  - path: knowledge/journal/2026-02-16.md
    action: appended
    summary: Logged architecture decision
"""


def transcript(meta: str = META, body: str = BODY) -> str:
    return f"---\n{meta}---\n{body}"


def test_a_well_formed_transcript_passes(vrepo: VRepo) -> None:
    vrepo.write(PATH, transcript(META + CLOSE, BODY + MORE))
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")


@pytest.mark.parametrize(
    "path",
    [
        "raw/conversations/2026/02/16/ses_a1b2-x.md",
        "raw/conversations/2026/02/1845-ses_a1b2-x.md",
        "raw/conversations/2026-02-16/1845-ses_a1b2-x.md",
        "raw/conversations/2026/02/16/845-ses_a1b2-x.md",
    ],
)
def test_path_pattern(vrepo: VRepo, path: str) -> None:
    vrepo.write(path, transcript())
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out == (
        f"{path}: error: transcript path must be "
        "raw/conversations/YYYY/MM/DD/HHMM-<session_id>-<slug>.md [check-transcripts]\n"
    )


@pytest.mark.parametrize(
    ("path", "started"),
    [
        ("raw/conversations/2026/02/16/1845-ses_a1b2-x.md", "2026-02-16T18:45:00+01:00"),
        ("raw/conversations/2026/02/15/2330-ses_a1b2-x.md", "2026-02-15T23:30:00-05:00"),
    ],
)
def test_path_time_is_started_in_its_own_offset(vrepo: VRepo, path: str, started: str) -> None:
    vrepo.write(path, transcript(META.replace("2026-02-16T18:45:00Z", started)))
    assert vrepo.run(main, path) == (0, "")


@pytest.mark.parametrize(
    ("path", "started", "says"),
    [
        (PATH, "2026-02-16T19:45:00+01:00", "2026/02/16/1945"),  # the path in UTC
        (PATH, "2026-02-16T18:46:00Z", "2026/02/16/1846"),
        (PATH, "2026-02-17T18:45:00Z", "2026/02/17/1845"),
    ],
)
def test_path_disagreeing_with_started(vrepo: VRepo, path: str, started: str, says: str) -> None:
    vrepo.write(path, transcript(META.replace("2026-02-16T18:45:00Z", started)))
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out.startswith(f"{path}:3: error: path says 2026/02/16/1845 but started is ")
    assert f"its own time zone ({says})" in out


@pytest.mark.parametrize(
    "name",
    [
        "1845-ses_zzzz-autopoiesis.md",
        "1845-ses_a1b2.md",
        "1845-ses_a1b2-.md",
        "1845-ses_a1b2-a b.md",
    ],
)
def test_name_is_session_id_then_slug(vrepo: VRepo, name: str) -> None:
    path = f"raw/conversations/2026/02/16/{name}"
    vrepo.write(path, transcript())
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out.startswith(f"{path}:2: error: file name must be HHMM-ses_a1b2-<slug>.md")


def test_session_id_must_be_a_plain_string(vrepo: VRepo) -> None:
    path = "raw/conversations/2026/02/16/1845-a-b.md"
    vrepo.write(path, transcript(META.replace("ses_a1b2", "a/b")))
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out.startswith(f"{path}:2: error: session_id must be a string of letters")


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        (META.replace("session_id: ses_a1b2\n", ""), ":1: error: a conversation file needs "),
        (META.replace("started: 2026-02-16T18:45:00Z\n", ""), ":1: error: a conversation file "),
        (META.replace("18:45:00Z", "18:45:00"), ":3: error: 'started' must be an ISO 8601 "),
    ],
)
def test_required_fields(vrepo: VRepo, meta: str, message: str) -> None:
    vrepo.write(PATH, transcript(meta))
    code, out = vrepo.run(main, PATH)
    assert code == 1
    assert out.startswith(PATH + message)


def test_ended_before_started(vrepo: VRepo) -> None:
    vrepo.write(PATH, transcript(META + "ended: 2026-02-16T17:00:00Z\n"))
    code, out = vrepo.run(main, PATH)
    assert code == 1
    assert out == f"{PATH}:6: error: 'ended' is before 'started' [check-transcripts]\n"


@pytest.mark.parametrize(
    "header",
    ["## 18:46 - agent", "## 18:46 — assistant", "## 9:05 — user", "## 24:00 — user",
     "## 18:46 —user", "##  18:46 — user", "## 18:61 — agent",
     "## 18:46 — user [memory]", "## 18:46 — system [memory]"],
)
def test_malformed_turn_header(vrepo: VRepo, header: str) -> None:
    vrepo.write(PATH, transcript(body=BODY + f"\n{header}\nhello\n"))
    code, out = vrepo.run(main, PATH)
    assert code == 1
    line = 7 + BODY.count("\n") + 1
    assert out == (
        f"{PATH}:{line}: error: turn header must be '## HH:MM — user|agent|system' (24-hour time, "
        "an em dash; ' [memory]' may follow agent only) [check-transcripts]\n"
    )


def test_many_bad_headers_are_summed_up(vrepo: VRepo) -> None:
    vrepo.write(PATH, transcript(body="".join(f"## 10:{i:02d} - user\nx\n" for i in range(15))))
    code, out = vrepo.run(main, PATH)
    assert code == 1
    assert len(out.splitlines()) == 11
    assert out.splitlines()[-1] == (
        f"{PATH}: error: 5 more malformed turn headers [check-transcripts]"
    )


def test_first_commit_has_no_history_to_check(vrepo: VRepo) -> None:
    vrepo.write(PATH, transcript())
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")
    assert vrepo.run(main) == (0, "")


# --- immutability against HEAD -----------------------------------------------------------


@pytest.fixture
def open_transcript(vrepo: VRepo) -> VRepo:
    vrepo.write(PATH, transcript())
    vrepo.commit("conversation: open")
    return vrepo


@pytest.fixture
def closed_transcript(vrepo: VRepo) -> VRepo:
    vrepo.write(PATH, transcript(META + CLOSE, BODY + MORE))
    vrepo.commit("conversation: closed")
    return vrepo


def test_appending_to_an_open_transcript_passes(open_transcript: VRepo) -> None:
    vrepo = open_transcript
    vrepo.write(PATH, transcript(body=BODY + MORE))
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")


def test_closing_an_open_transcript_passes(open_transcript: VRepo) -> None:
    vrepo = open_transcript
    vrepo.write(PATH, transcript(META + CLOSE + "turns: 6\nredactions: 1\n", BODY + MORE))
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")


def test_rewriting_the_middle_of_an_open_transcript_is_refused(open_transcript: VRepo) -> None:
    vrepo = open_transcript
    vrepo.write(PATH, transcript(body=BODY.replace("all 12 open issues", "all 13") + MORE))
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out == (
        f"{PATH}:16: error: an open transcript may only grow: this line differs from HEAD (the "
        "body is append-only; add new turns at the end) [check-transcripts]\n"
    )


def test_truncating_an_open_transcript_is_refused(open_transcript: VRepo) -> None:
    vrepo = open_transcript
    vrepo.write(PATH, transcript(body=BODY[:40]))
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert "an open transcript may only grow" in out


def test_changing_kept_frontmatter_of_an_open_transcript_is_refused(open_transcript: VRepo) -> None:
    vrepo = open_transcript
    meta = META.replace("webchat", "slack").replace("model: claude-opus-4.6\n", "")
    vrepo.write(PATH, transcript(meta))
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out.splitlines() == [
        f"{PATH}:1: error: frontmatter 'model' was removed; only ended, knowledge_changes, "
        "redactions, tokens_in, tokens_out, turns, updated may change while a transcript is "
        "open [check-transcripts]",
        f"{PATH}:4: error: frontmatter 'channel' changed from HEAD; only ended, "
        "knowledge_changes, redactions, tokens_in, tokens_out, turns, updated may change while "
        "a transcript is open [check-transcripts]",
    ]


@pytest.mark.parametrize("added", ["topic: something else\n", "tags: [sneaky]\n",
                                   "session_note: added later\n"])
def test_adding_a_kept_key_to_an_open_transcript_is_refused(
    open_transcript: VRepo, added: str
) -> None:
    vrepo = open_transcript
    vrepo.write(PATH, transcript(META + added, BODY + MORE))
    vrepo.add()
    code, out = vrepo.run_staged(main)
    key = added.split(":")[0]
    assert code == 1
    assert out == (
        f"{PATH}:6: error: frontmatter '{key}' was added; only ended, knowledge_changes, "
        "redactions, tokens_in, tokens_out, turns, updated may be added while a transcript is "
        "open [check-transcripts]\n"
    )


def test_modifying_a_closed_transcript_is_refused(closed_transcript: VRepo) -> None:
    vrepo = closed_transcript
    body = BODY + MORE + "\n## 19:40 — user\nOne more thing.\n"
    vrepo.write(PATH, transcript(META + CLOSE, body))
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    # the first new line: "## 19:40 — user", after the old text and its blank line
    line = 1 + (META + CLOSE).count("\n") + 1 + (BODY + MORE).count("\n") + 2
    assert out == (
        f"{PATH}:{line}: error: transcript is closed in HEAD (it has 'ended') and may not change; "
        f"restore it with: git restore --staged --worktree --source=HEAD -- {PATH} "
        "[check-transcripts]\n"
    )


def test_editing_closed_frontmatter_is_refused(closed_transcript: VRepo) -> None:
    vrepo = closed_transcript
    vrepo.write(PATH, transcript(META + CLOSE.replace("45230", "1"), BODY + MORE))
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out.startswith(f"{PATH}:7: error: transcript is closed in HEAD")


def test_restaging_an_unchanged_closed_transcript_passes(closed_transcript: VRepo) -> None:
    vrepo = closed_transcript
    assert vrepo.run(main, PATH) == (0, "")


def test_deleting_a_transcript_is_refused_without_file_arguments(closed_transcript: VRepo) -> None:
    vrepo = closed_transcript
    vrepo.git("rm", "-q", PATH)
    assert vrepo.staged() == []  # pre-commit passes nothing
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out == (
        f"{PATH}: error: transcripts may not be deleted (raw/ is append-only evidence); "
        f"restore it with: git restore --staged --worktree --source=HEAD -- {PATH} "
        "[check-transcripts]\n"
    )


def test_renaming_a_transcript_is_refused(open_transcript: VRepo) -> None:
    vrepo = open_transcript
    new = PATH.replace("restructuring", "rewrite")
    vrepo.git("mv", PATH, new)
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out.splitlines()[0] == (
        f"{PATH}: error: transcripts may not be renamed or moved (staged as a rename to {new}); "
        f"move it back with: git mv {new} {PATH} [check-transcripts]"
    )


def test_moving_a_transcript_out_of_raw_is_refused(closed_transcript: VRepo) -> None:
    vrepo = closed_transcript
    vrepo.write("archive/x.md", "")
    vrepo.git("mv", PATH, "archive/x.md", "-f")
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out.startswith(f"{PATH}: error: transcripts may not be deleted")


def test_deleting_other_files_under_raw_conversations_is_fine(vrepo: VRepo) -> None:
    vrepo.write("raw/conversations/.gitkeep", "")
    vrepo.commit()
    vrepo.git("rm", "-q", "raw/conversations/.gitkeep")
    assert vrepo.run_staged(main) == (0, "")


def test_a_broken_committed_version_may_still_only_grow(vrepo: VRepo) -> None:
    vrepo.write(PATH, "---\nsession_id: [\n---\nfirst\n")  # committed with --no-verify
    vrepo.commit()
    vrepo.write(PATH, "---\nsession_id: [\n---\nFIRST\n")
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert f"{PATH}:4: error: a committed transcript may only grow" in out


def test_history_costs_one_git_read_for_the_staged_transcripts_only(
    vrepo: VRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        vrepo.write(f"raw/conversations/2026/02/16/18{i:02d}-ses_{i}-old.md", "x\n")
    staged = []
    for minute in (10, 20, 30):
        path = f"raw/conversations/2026/02/16/18{minute}-ses_a1b2-x.md"
        vrepo.write(path, transcript(META.replace("18:45", f"18:{minute}")))
        staged.append(path)
    vrepo.commit()
    for path in staged:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(MORE)
    vrepo.add()
    calls: list[list[str]] = []
    real = git.read_blobs

    def spy(root: object, revs: list[str]) -> dict[str, bytes | None]:
        calls.append(list(revs))
        return real(root, revs)  # type: ignore[arg-type]

    monkeypatch.setattr(git, "read_blobs", spy)
    code, _ = vrepo.run_staged(main)
    assert calls == [[f"HEAD:{p}" for p in staged]]
    assert code == 0


def test_staged_transcripts_are_held_to_history_even_when_not_named(open_transcript: VRepo) -> None:
    vrepo = open_transcript
    vrepo.write(PATH, transcript(body="rewritten\n"))
    vrepo.add()
    code, out = vrepo.run(main)
    assert code == 1
    assert "an open transcript may only grow" in out


def test_a_symlinked_transcript_is_refused(vrepo: VRepo) -> None:
    target = vrepo.write("knowledge/reference/x.md", transcript())
    (vrepo.root / PATH).parent.mkdir(parents=True)
    (vrepo.root / PATH).symlink_to(target)
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out == f"{PATH}: error: a transcript must be a file, not a symlink [check-transcripts]\n"


def test_crlf_line_endings_in_the_work_tree_are_not_a_change(open_transcript: VRepo) -> None:
    vrepo = open_transcript
    vrepo.write(PATH, transcript(body=BODY + MORE).replace("\n", "\r\n").encode())
    assert vrepo.run(main, PATH) == (0, "")
