"""memory prune: relative markdown links in and to the files it moves into archive/ are
rewritten in the move's own commit, so none breaks (#37)."""

from __future__ import annotations

import datetime as dt
import json
import posixpath
import re
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo.lifecycle.relink import rewrite

OLD = "knowledge/reference/old-api.md"
NEW = "archive/reference/old-api.md"
ALICE = "knowledge/people/alice.md"
TOPIC = "topics/ops.md"
JOURNAL = "knowledge/journal/2025-01-01.md"
JOURNAL_NEW = "archive/journal/2025-01-01.md"
FENCE = "```md\n[fenced](../people/alice.md)\n```\n"
FENCE_IN = "```\n[fenced](../reference/old-api.md)\n```\n"

FILES = {
    OLD: (
        "---\ntype: reference\n---\n# Old API\n\n## Usage\n\n"
        '- Restart with [the runbook](runbook.md#restart "The runbook").\n'
        "- Owner: [Alice][al], see [her notes](../people/alice.md).\n"
        "- Docs: [site](https://example.com/guide.md), [mail](mailto:ops@example.com).\n"
        "- Gone: [old](../people/nobody.md).\n"
        "- Self: [top](#usage), [usage](old-api.md#usage).\n\n"
        f"{FENCE}\n"
        '[al]: ../people/alice.md "Alice"\n'
    ),
    "knowledge/reference/runbook.md": "---\ntype: reference\n---\n# Runbook\n\n## Restart\n",
    ALICE: (
        "---\ntype: person\nname: Alice\n---\n# Alice\n\n"
        '- Wrote [the old API](../reference/old-api.md#auth "Old API"), see [api].\n\n'
        f"{FENCE_IN}\n"
        "[api]: ../reference/old-api.md\n"
    ),
    TOPIC: (
        "---\ntype: topic\nname: ops\ntriggers:\n  - type: keyword\n    keywords: [deploy]\n"
        "subscriptions:\n  - knowledge/reference/runbook.md\n  - knowledge/people/alice.md\n"
        "---\n# Ops\n\nBefore: [old api](../knowledge/reference/old-api.md#usage).\n"
    ),
    JOURNAL: (
        "---\ntype: journal\ndate: 2025-01-01\n---\n\n## Notes\n\n"
        "- Met [Alice](../people/alice.md) about [the API](../reference/old-api.md).\n"
        + "".join(f"- Step {n} of the ledger migration went as planned.\n" for n in range(8))
    ),
}

#: What the files say after the prune (each at its path after the moves).
AFTER = {
    NEW: FILES[OLD]
    .replace("(runbook.md#restart", "(../../knowledge/reference/runbook.md#restart")
    .replace("notes](../people/alice.md)", "notes](../../knowledge/people/alice.md)")
    .replace("[al]: ../people/alice.md", "[al]: ../../knowledge/people/alice.md"),
    ALICE: FILES[ALICE]
    .replace("(../reference/old-api.md#auth", "(../../archive/reference/old-api.md#auth")
    .replace("[api]: ../reference/old-api.md", "[api]: ../../archive/reference/old-api.md"),
    TOPIC: FILES[TOPIC].replace("(../knowledge/reference/", "(../archive/reference/"),
    # both moved: the link to old-api still holds; the one to alice leaves the archive
    JOURNAL_NEW: FILES[JOURNAL].replace("(../people/", "(../../knowledge/people/"),
}


def _transcript(root: Path) -> str:
    return run_git(root, "ls-files", "raw/conversations/*.md").stdout.split()[0]


@pytest.fixture
def linked(lrepo: Path) -> Path:
    """``lrepo`` with a cold reference file that links out and is linked to (by a person,
    a topic, an old journal and a transcript), all committed today."""
    for rel, text in FILES.items():
        (lrepo / rel).parent.mkdir(parents=True, exist_ok=True)
        (lrepo / rel).write_text(text)
    raw = lrepo / _transcript(lrepo)
    raw.write_text(raw.read_text() + "\nSee [the API](../../../../../knowledge/reference/old-api.md)\n")
    run_git(lrepo, "add", "-A")
    run_git(lrepo, "commit", "-q", "--no-verify", "-m", "memory: linked files")
    return lrepo


def _future() -> str:
    return (dt.date.today() + dt.timedelta(days=400)).isoformat()


def _prune(root: Path, *args: str):
    proc = invoke_memory(root, "prune", "--offline", "--date", _future(), *args)
    assert proc.returncode == 0, proc.stderr
    return proc


_LINK = re.compile(r"\]\(\s*(<[^<>\n]+>|[^()\s<>]+)|^ {0,3}\[[^\]\n]+\]:\s*(<[^<>\n]+>|\S+)", re.M)


def _broken(root: Path) -> list[str]:
    """Every relative link of the repo's markdown (raw/ included) that names no file."""
    out = []
    for rel in run_git(root, "ls-files", "*.md").stdout.split():
        text = re.sub(r"(?ms)^```.*?^```$", "", (root / rel).read_text())
        for m in _LINK.finditer(re.sub(r"`[^`\n]*`", "", text)):
            target = (m[1] or m[2]).strip("<>").partition("#")[0]
            if not target or re.match(r"[a-z]+:", target):
                continue
            path = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
            if not (root / path).exists():
                out.append(f"{rel}: {target}")
    return out


def test_every_relative_link_resolves_after_the_prune(linked: Path):
    before = _broken(linked)
    assert before == [f"{OLD}: ../people/nobody.md"]  # broken before: left as it is
    transcript = _transcript(linked)
    raw = (linked / transcript).read_text()
    _prune(linked)
    assert not (linked / OLD).exists() and (linked / NEW).exists()
    assert _broken(linked) == [
        f"{NEW}: ../people/nobody.md",
        f"{transcript}: ../../../../../knowledge/reference/old-api.md",  # raw/ never changes
    ]
    assert (linked / transcript).read_text() == raw


def test_the_move_and_the_rewrites_are_one_commit_the_hooks_accept(linked: Path):
    proc = _prune(linked)
    assert run_git(linked, "log", "-1", "--format=%s").stdout.strip() == "maintenance: prune"
    assert run_git(linked, "log", "-1", "--format=%s", "HEAD~1").stdout.strip() == \
        "memory: linked files"
    stat = run_git(linked, "show", "--stat=200", "--format=", "HEAD").stdout
    for path in ("{knowledge => archive}/reference/old-api.md",
                 "{knowledge => archive}/journal/2025-01-01.md", ALICE, TOPIC):
        assert path in stat, stat
    status = run_git(linked, "show", "-M", "--name-status", "--format=", "HEAD").stdout
    assert re.search(rf"^R\d+\t{OLD}\t{NEW}$", status, re.M), status
    assert re.search(rf"^R\d+\t{JOURNAL}\t{JOURNAL_NEW}$", status, re.M), status
    assert run_git(linked, "status", "--porcelain").stdout == ""
    # the link check ran on the commit: the link broken before is all it names (the
    # files this very commit moved away are not warned about)
    warned = [ln for ln in proc.stderr.splitlines()
              if ln.endswith("[check-links]") and "nobody.md" not in ln]
    assert warned == [], proc.stderr
    assert "rewrote 7 links in 4 files" in proc.stderr


def test_anchors_titles_and_definitions_kept_code_and_urls_untouched(linked: Path):
    _prune(linked)
    for rel, text in AFTER.items():
        assert (linked / rel).read_text() == text, rel
    assert FENCE in (linked / NEW).read_text() and FENCE_IN in (linked / ALICE).read_text()
    assert "[site](https://example.com/guide.md)" in AFTER[NEW]
    assert "[mail](mailto:ops@example.com)" in AFTER[NEW]


def test_dry_run_lists_the_rewrites_and_changes_nothing(linked: Path):
    head = run_git(linked, "rev-parse", "HEAD").stdout
    dry = _prune(linked, "--dry-run")
    assert f"move {OLD} -> {NEW}" in dry.stdout
    assert (f"link {ALICE}:7: ../reference/old-api.md#auth -> "
            "../../archive/reference/old-api.md#auth") in dry.stdout
    assert f"link {NEW}:8: runbook.md#restart -> ../../knowledge/reference/runbook.md#restart" \
        in dry.stdout
    # the moved file's diff is against its source: the changed lines, not the whole file
    assert f"--- a/{OLD}\n+++ b/{NEW}" in dry.stdout
    assert "+- Owner: [Alice][al], see [her notes](../../knowledge/people/alice.md).\n" \
        in dry.stdout
    as_json = json.loads(_prune(linked, "--dry-run", "--json").stdout)
    assert as_json["dry_run"] is True and as_json["commit"] is None
    assert {"from": OLD, "to": NEW} in as_json["moves"]
    assert {"path": TOPIC, "line": 13, "old": "../knowledge/reference/old-api.md#usage",
            "new": "../archive/reference/old-api.md#usage"} in as_json["links"]
    assert len(as_json["links"]) == 7
    assert sorted(as_json["changed"]) == sorted(AFTER)
    assert run_git(linked, "rev-parse", "HEAD").stdout == head
    assert run_git(linked, "status", "--porcelain").stdout == ""


def test_an_archive_due_for_gzip_whose_links_change_is_compressed_by_the_next_prune(
        linked: Path):
    """Only committed text is compressed: the rewrite comes first, the gzip one prune on."""
    older = "archive/reference/older.md"
    (linked / older).parent.mkdir(parents=True)
    (linked / older).write_text("---\ntype: reference\n---\n# Older\n\n"
                                "Superseded by [the API](../../knowledge/reference/old-api.md).\n")
    cfg = linked / "memory-config.yaml"
    text, n = re.subn(r"(?m)^  retention: .*$", "  retention: {archive: {compress_after: 1}}",
                      cfg.read_text())
    assert n == 1
    cfg.write_text(text)
    run_git(linked, "add", "-A")
    run_git(linked, "commit", "-q", "--no-verify", "-m", "memory: older reference")
    first = _prune(linked)
    assert f"not compressed: {older} has links this prune rewrites" in first.stderr
    assert f"compressed {older} ->" not in first.stderr
    assert "Superseded by [the API](old-api.md)." in (linked / older).read_text()
    assert run_git(linked, "status", "--porcelain").stdout == ""
    second = _prune(linked)
    assert f"compressed {older} -> {older}.gz" in second.stderr
    assert not (linked / older).exists() and (linked / f"{older}.gz").exists()


@pytest.mark.parametrize("written, expected", [
    ("[a](../people/a.md)", "[a](../../knowledge/people/a.md)"),
    ("`[a](../people/a.md)` and ``[b](../people/a.md)``", None),  # inline code
    ("[a](<../people/a b.md> 'T')", "[a](<../../knowledge/people/a b.md> 'T')"),
    ("[a](../people/a%20b.md#x)", "[a](../../knowledge/people/a%20b.md#x)"),
    ("![pic](../people/a.md)", "![pic](../../knowledge/people/a.md)"),
    ("   [id]: ../people/a.md (T)", "   [id]: ../../knowledge/people/a.md (T)"),
    ("[^1]: ../people/a.md", None),  # a footnote, not a link definition
    ("[a](/knowledge/people/a.md) [b](ftp://x/a.md) [c](#here)", None),
    ("[a](../../../outside.md) [b](../people/missing.md)", None),
])
def test_rewrite_of_one_destination(written: str, expected: str | None):
    exists = {"knowledge/people/a.md", "knowledge/people/a b.md"}.__contains__
    moves = {"knowledge/reference/x.md": "archive/reference/x.md"}
    text, done = rewrite("knowledge/reference/x.md", "archive/reference/x.md",
                         written + "\n", moves, exists)
    assert text == (expected or written) + "\n"
    assert bool(done) == (expected is not None)
