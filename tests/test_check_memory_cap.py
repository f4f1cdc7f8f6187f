"""hooks/check_memory_cap.py: MEMORY.md warns above 180 lines, refuses above 220 or 25 KB."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from memrepo.hooks.check_memory_cap import main

if TYPE_CHECKING:
    from conftest import VRepo

MEMORY = "knowledge/memory/MEMORY.md"


def memory(lines: int, width: int = 40) -> str:
    head = "---\ntype: memory\nupdated: 2026-02-16\n---\n"
    filler = "".join(f"- 2026-02-16: {'x' * (width - 16)}\n" for _ in range(lines - 4))
    return head + filler


@pytest.mark.parametrize("lines", [5, 150, 180])
def test_at_or_under_the_warning_line_is_silent(vrepo: VRepo, lines: int) -> None:
    vrepo.write(MEMORY, memory(lines))
    assert vrepo.run(main, MEMORY) == (0, "")


@pytest.mark.parametrize("lines", [181, 190, 220])
def test_above_180_lines_warns_and_passes(vrepo: VRepo, lines: int) -> None:
    vrepo.write(MEMORY, memory(lines))
    code, out = vrepo.run(main, MEMORY)
    assert code == 0
    assert out == (
        f"{MEMORY}:181: warning: MEMORY.md has {lines} lines, above 180 "
        "(validation.memory_warn_lines); condense it before it reaches 220 [check-memory-cap]\n"
    )


def test_above_220_lines_is_an_error(vrepo: VRepo) -> None:
    vrepo.write(MEMORY, memory(221))
    code, out = vrepo.run(main, MEMORY)
    assert code == 1
    assert out == (
        f"{MEMORY}:221: error: MEMORY.md has 221 lines, above the limit of 220 "
        "(validation.memory_error_lines); condense it or move detail to knowledge/ "
        "[check-memory-cap]\n"
    )


def test_a_last_line_without_newline_counts(vrepo: VRepo) -> None:
    vrepo.write(MEMORY, memory(220) + "- one more, unterminated")
    code, out = vrepo.run(main, MEMORY)
    assert code == 1
    assert "has 221 lines" in out


def test_above_25_kb_is_an_error_even_when_short(vrepo: VRepo) -> None:
    vrepo.write(MEMORY, memory(100, width=300))
    code, out = vrepo.run(main, MEMORY)
    assert code == 1
    assert out == (
        f"{MEMORY}: error: MEMORY.md is 28.1 KB, above the limit of 25 KB "
        "(validation.memory_max_kb); condense it into fewer, shorter entries [check-memory-cap]\n"
    )


def test_limits_come_from_the_config(vrepo: VRepo) -> None:
    vrepo.write(
        "memory-config.yaml",
        "validation:\n  memory_warn_lines: 10\n  memory_error_lines: 20\n  memory_max_kb: 0.5\n",
    )
    vrepo.write(MEMORY, memory(15))
    code, out = vrepo.run(main, MEMORY)
    assert code == 0
    assert out.startswith(f"{MEMORY}:11: warning: MEMORY.md has 15 lines, above 10 ")
    vrepo.write(MEMORY, memory(21))
    code, out = vrepo.run(main, MEMORY)
    assert code == 1
    assert out.splitlines()[0].startswith(f"{MEMORY}: error: MEMORY.md is 0.7 KB, above the limit")
    assert out.splitlines()[1].startswith(f"{MEMORY}:21: error: MEMORY.md has 21 lines")


def test_only_memory_md_is_capped(vrepo: VRepo) -> None:
    for path in ("knowledge/memory/OLD.md", "archive/memory/MEMORY.md", "knowledge/reference/a.md"):
        vrepo.write(path, memory(400))
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")


def test_a_comment_never_closed_is_an_error_naming_its_line(vrepo: VRepo) -> None:
    """Everything after an unclosed `<!--` was hidden from the briefing, and the commit
    accepted it; a closed comment is fine."""
    head = "---\ntype: memory\nupdated: 2026-02-16\n---\n"
    vrepo.write(MEMORY, head + "- one\n<!-- a note to self\n- two\n- three\n")
    code, out = vrepo.run(main, MEMORY)
    assert code == 1 and f"{MEMORY}:6: error: this `<!--` is never closed" in out, out
    vrepo.write(MEMORY, head + "- one\n<!-- a note\nto self -->\n- two\n")
    assert vrepo.run(main, MEMORY) == (0, "")


def test_the_briefing_shows_the_lines_after_a_comment_never_closed() -> None:
    from memrepo.context.sections import body_lines

    shown = body_lines("- one\n<!-- to self\n- two\n", 5, "m.md").numbered
    assert [t for _, t in shown] == ["- one", "<!-- to self", "- two"]
    shown = body_lines("- one\n<!-- to\nself -->\n- two\n", 5, "m.md").numbered
    assert [t for _, t in shown] == ["- one", "- two"]
