"""MEMORY.md states its size in its frontmatter (``line_count``, seed 000 §2.2/§2.3; audit
row 13): the whole file's lines, as the cap counts them. memrepo's writers keep it exact,
the merge driver counts it again, a person's stale count is committed and only warned
about by ``memory doctor``, which ``--fix`` corrects."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_memory, run_git

from memrepo import doctor
from memrepo.commit.merge import merge_text
from memrepo.documents import count_lines, stated_line_count, with_line_count
from memrepo.health import Check
from memrepo.layout import MEMORY_FILE
from memrepo.lifecycle import cap
from memrepo.repo import discover

SESSION = {"messages": [
    {"role": "user", "content": "We decided to use PostgreSQL 16 for the ledger instead of "
                                "MySQL."},
    {"role": "assistant", "content": "Noted. Lesson learned: always run EXPLAIN before "
                                     "shipping a migration."},
]}


def _exact(root: Path) -> int:
    text = (root / MEMORY_FILE).read_text(encoding="utf-8")
    present, value = stated_line_count(text)
    assert present and value == count_lines(text), (value, count_lines(text))
    return value


def _line_count_check(root: Path) -> Check:
    (check,) = doctor.memory_line_count_checks(discover(str(root)))
    return check


def test_the_rule_counts_the_whole_file_and_touches_one_line() -> None:
    text = "---\ntype: memory\nupdated: 2026-01-02  # by hand\n---\n\n# Core Memory\n- a\n"
    out = with_line_count(text)
    assert out == text.replace("---\n\n#", "line_count: 8\n---\n\n#")  # nothing else moves
    assert with_line_count(out) is out  # already right: the same text
    stale = out.replace("line_count: 8", "line_count: 3")
    assert with_line_count(stale) == out
    assert with_line_count("# no frontmatter\n") == "# no frontmatter\n"
    crlf = "---\r\ntype: memory\r\n---\r\nx\r\n"
    assert with_line_count(crlf) == "---\r\ntype: memory\r\nline_count: 5\r\n---\r\nx\r\n"


def test_init_and_every_lifecycle_writer_keep_it_exact(memrepo_root: Path,
                                                       tmp_path: Path) -> None:
    root = memrepo_root
    first = _exact(root)  # memory init's template
    assert _line_count_check(root).ok
    sess = tmp_path / "session.json"
    sess.write_text(json.dumps(SESSION), encoding="utf-8")
    proc = invoke_memory(root, "flush", "--session", str(sess), "--offline")
    assert proc.returncode == 0, proc.stderr
    assert "PostgreSQL 16" in (root / MEMORY_FILE).read_text(encoding="utf-8")
    assert _exact(root) > first  # flush wrote MEMORY.md, its cap step counted it
    committed = invoke_memory(root, "commit")
    assert committed.returncode == 0, committed.stderr + committed.stdout
    # the cap moving entries out keeps it too (offline enforcement)
    text = (root / MEMORY_FILE).read_text(encoding="utf-8")
    facts = "".join(f"- 2026-01-{1 + i % 28:02d}: Fact {i} [src: s{i}]\n" for i in range(230))
    (root / MEMORY_FILE).write_text(
        text.replace("## Lessons Learned\n", "## Lessons Learned\n" + facts), encoding="utf-8")
    cap.enforce_cap(root, None)
    assert _exact(root) <= cap.memory_cap(root)


def test_a_repo_whose_memory_lacks_the_key_gets_it_from_the_cap(memrepo_root: Path) -> None:
    root = memrepo_root
    text = (root / MEMORY_FILE).read_text(encoding="utf-8")
    old = "".join(ln for ln in text.splitlines(True) if not ln.startswith("line_count:"))
    (root / MEMORY_FILE).write_text(old, encoding="utf-8")
    plan = cap.cap_plan(root, old)
    out = plan.texts[MEMORY_FILE]
    assert stated_line_count(out) == (True, count_lines(out)) and count_lines(out) == \
        count_lines(old) + 1


def test_a_hand_edit_with_a_stale_count_commits_and_doctor_fixes_it(memrepo_root: Path) -> None:
    root = memrepo_root
    full = root / MEMORY_FILE
    text = full.read_text(encoding="utf-8")
    full.write_text(text + "- 2026-03-01: a note a person typed\n- and another\n",
                    encoding="utf-8")
    run_git(root, "add", MEMORY_FILE)
    done = run_git(root, "commit", "-q", "-m", "memory: by hand", check=False)
    assert done.returncode == 0, done.stdout + done.stderr  # never refused by the hooks
    check = _line_count_check(root)
    assert not check.ok and check.warning
    n = count_lines(full.read_text(encoding="utf-8"))
    assert f"line_count says {n - 2}, the file has {n} lines" in check.detail
    fixed = invoke_memory(root, "doctor", "--fix")  # a warning: doctor says healthy
    assert fixed.returncode == 0, fixed.stdout
    assert f"set line_count in {MEMORY_FILE}" in fixed.stdout
    assert _exact(root) == n
    assert _line_count_check(root).ok


def test_the_merge_driver_counts_it_again(memrepo_root: Path) -> None:
    """Two branches both grow MEMORY.md: their line_count lines differ, the real merge
    (git with memrepo's driver) stops on neither and the result is exact."""
    root = memrepo_root
    full = root / MEMORY_FILE
    base = full.read_text(encoding="utf-8")

    def grow(bullets: str) -> None:
        full.write_text(with_line_count(base.replace(
            "## Key Decisions\n", "## Key Decisions\n" + bullets)), encoding="utf-8")
        run_git(root, "commit", "-q", "--no-verify", "-am", "memory: grow")

    run_git(root, "checkout", "-q", "-b", "other")
    grow("- 2026-03-01: theirs one\n- 2026-03-01: theirs two\n- 2026-03-01: theirs three\n")
    run_git(root, "checkout", "-q", "main")
    grow("- 2026-03-02: ours\n")
    merged = run_git(root, "merge", "-q", "--no-edit", "other", check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    text = full.read_text(encoding="utf-8")
    assert "theirs three" in text and "ours" in text
    assert _exact(root) == count_lines(base) + 4
    # the text merge alone: a conflict elsewhere leaves the count as it was
    clean = merge_text(base, with_line_count(base + "- a\n"), with_line_count(base + "- b\n"))
    assert clean.conflicts == 0 and stated_line_count(clean.text)[1] == count_lines(clean.text)
