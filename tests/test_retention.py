"""lifecycle.retention: archived files gzip-compressed by `memory prune`, still searched,
still checked by every hook; nothing compressed by default, nothing ever deleted."""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo import compression
from memrepo.config import defaults, validate
from memrepo.errors import ConfigError, FormatError
from memrepo.lifecycle import retention

SECRET = "AKIAIOSFODNN7EXAMPLE"
JOURNAL = "knowledge/journal/2025-01-01.md"
ARCHIVED = "archive/journal/2025-01-01.md"
PACKED = ARCHIVED + ".gz"
TEXT = ("---\ntype: journal\ndate: 2025-01-01\n---\n\n## Notes\n\n"
        "- The zanzibar migration finished on the ledger cluster.\n")


def _config(root: Path, retention_yaml: str) -> None:
    cfg = root / "memory-config.yaml"
    text, n = re.subn(r"(?m)^  retention: .*$", f"  retention: {retention_yaml}", cfg.read_text())
    assert n == 1
    cfg.write_text(text)


def _journal_archived(root: Path, via_prune: bool = True) -> None:
    """A journal of 2025-01-01 committed, then archived by a prune (still plain text);
    else committed straight into archive/ (quicker, for tests not about the move)."""
    (root / (JOURNAL if via_prune else ARCHIVED)).parent.mkdir(parents=True, exist_ok=True)
    (root / (JOURNAL if via_prune else ARCHIVED)).write_text(TEXT)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "--no-verify", "-m", "memory: journal")
    if via_prune:
        proc = invoke_memory(root, "prune", "--offline", "--date", "2025-06-01")
        assert proc.returncode == 0, proc.stderr
    assert (root / ARCHIVED).read_text() == TEXT


def _commit(root: Path, path: str, data: bytes, *, verify: bool = True):
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_bytes(data)
    run_git(root, "add", "-A")
    return run_git(root, "commit", "-q", *([] if verify else ["--no-verify"]), "-m",
                   "memory: case", check=False)


# --- compression itself ----------------------------------------------------------------


def test_compress_is_deterministic_gzip_level_9():
    data = TEXT.encode() * 50
    packed = compression.compress(data)
    assert packed == compression.compress(data)  # same text, same bytes
    assert packed[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # mtime 0, no name
    assert gzip.decompress(packed) == data  # any gzip reads it
    assert compression.decompress(packed + packed, "a.md.gz") == data + data  # members


@pytest.mark.parametrize("bad, why", [
    (gzip.compress(b"a" * (2 * 1024 * 1024)), "decompresses to more than 1024 KB"),
    (compression.compress(b"x" * 100)[:-6], "truncated"),
    (compression.compress(b"x") + b"junk", "non-gzip data after"),
    (b"plain text", "not gzip data"),
    (b"\x1f\x8b\x08\x00" + b"\0" * 20, "not a valid gzip file"),
])
def test_decompress_refuses_bombs_and_corruption_naming_the_file(bad: bytes, why: str):
    with pytest.raises(FormatError) as err:
        compression.decompress(bad, "archive/x.md.gz")
    assert why in err.value.message and err.value.path == "archive/x.md.gz"


# --- the setting -------------------------------------------------------------------------


@pytest.mark.parametrize("given, needle", [
    ({"journal": {"delete_after": 365}}, "never deletes a memory"),
    ({"raw/conversations": {"compress_after": 9}}, "transcripts are immutable"),
    ({"knowledge/people": {"archive_after": 9}}, "is for journals only"),
    ({"archive": {"compress_after": 1.5}}, "whole number of days"),
    ({"archive": {"compress_after": -1}}, "at least 0"),
    ({"notes": {"compress_after": 9}}, "is not a directory"),
    ({"journal": {}, "knowledge/journal": {}}, "same directory"),
])
def test_retention_setting_is_type_checked(given: dict, needle: str):
    with pytest.raises(ConfigError) as err:
        validate({"lifecycle": {"retention": given}})
    assert needle in err.value.message and "lifecycle.retention." in err.value.message


def test_journal_retention_days_is_the_journals_archive_after():
    pols = retention.policies(validate({"lifecycle": {"journal_retention_days": 30}}))
    assert retention.journal_days(pols) == 30
    pols = retention.policies(validate(
        {"lifecycle": {"retention": {"journal": {"archive_after": 12, "compress_after": 40}}}}))
    assert retention.journal_days(pols) == 12
    assert retention.policy_for(PACKED[:-3], pols).compress_after == 40
    with pytest.raises(ConfigError, match="disagree"):
        validate({"lifecycle": {"journal_retention_days": 30,
                                "retention": {"journal": {"archive_after": 12}}}})
    assert not retention.compresses(retention.policies(defaults()))  # off by default


def test_most_specific_directory_wins():
    pols = retention.policies(validate({"lifecycle": {"retention": {
        "archive": {"compress_after": 700}, "knowledge": {"compress_after": 300},
        "knowledge/people": {"keep": True}}}}))
    assert retention.policy_for("archive/reference/k8s.md", pols).compress_after == 300
    assert retention.policy_for("archive/people/bob.md", pols).keep
    assert retention.policy_for("archive/raw/conversations/x.md", pols).compress_after == 700


# --- memory prune, search, index -------------------------------------------------------


def test_prune_compresses_an_archived_journal_and_search_still_finds_it(memrepo_root: Path):
    root = memrepo_root
    _journal_archived(root)
    _config(root, "{journal: {compress_after: 200}}")
    run_git(root, "commit", "-q", "-am", "memory: compress journals after 200 days")
    dry = invoke_memory(root, "prune", "--offline", "--dry-run", "--date", "2025-07-01")
    assert "compress" not in dry.stdout  # 181 days: not yet
    dry = invoke_memory(root, "prune", "--offline", "--dry-run", "--date", "2025-09-01")
    assert f"compress {ARCHIVED} -> {PACKED} (gzip -9)" in dry.stdout
    assert (root / ARCHIVED).exists() and run_git(root, "status", "--porcelain").stdout == ""

    proc = invoke_memory(root, "prune", "--offline", "--date", "2025-09-01")
    assert proc.returncode == 0, proc.stderr
    assert not (root / ARCHIVED).exists()
    assert (root / PACKED).read_bytes() == compression.compress(TEXT.encode())
    assert run_git(root, "status", "--porcelain").stdout == ""
    body = run_git(root, "log", "-1", "--format=%B").stdout
    assert f"compressed {ARCHIVED} -> {PACKED}" in body  # git sees delete + add: the link
    history = run_git(root, "log", "--follow", "--format=%s", "--", ARCHIVED).stdout
    assert history.split("\n")[:3] == ["maintenance: prune", "maintenance: prune",
                                       "memory: journal"]

    hit = invoke_memory(root, "search", "zanzibar", "--include-archive")
    assert f"{PACKED}:6-8" in hit.stdout and "zanzibar migration finished" in hit.stdout
    rebuilt = invoke_memory(root, "index", "--rebuild")
    assert rebuilt.returncode == 0 and "note:" not in rebuilt.stdout
    hit = invoke_memory(root, "search", "zanzibar", "--include-archive")
    assert "zanzibar migration finished" in hit.stdout
    again = invoke_memory(root, "prune", "--offline", "--date", "2026-09-01")
    assert "nothing to prune" in again.stdout  # compressed once, never twice


def test_nothing_is_compressed_by_default(memrepo_root: Path):
    _journal_archived(memrepo_root, via_prune=False)
    proc = invoke_memory(memrepo_root, "prune", "--offline", "--date", "2030-01-01")
    assert proc.returncode == 0 and "nothing to prune" in proc.stdout
    assert (memrepo_root / ARCHIVED).exists()
    assert not list(memrepo_root.rglob("*.gz"))


def test_keep_and_uncommitted_changes_are_never_compressed(memrepo_root: Path):
    root = memrepo_root
    _journal_archived(root, via_prune=False)
    _config(root, "{archive: {compress_after: 1}, knowledge/journal: {keep: true}}")
    assert "compress" not in invoke_memory(root, "prune", "--offline", "--dry-run",
                                           "--date", "2030-01-01").stdout
    _config(root, "{archive: {compress_after: 1}}")
    (root / ARCHIVED).write_text(TEXT + "- an edit not committed yet\n")
    dry = invoke_memory(root, "prune", "--offline", "--dry-run", "--date", "2030-01-01")
    assert f"not compressed: {ARCHIVED} has uncommitted changes" in dry.stderr


def test_unreadable_gz_is_a_note_of_the_index_never_a_traceback(memrepo_root: Path):
    root = memrepo_root
    assert _commit(root, "archive/journal/2025-02-02.md.gz", b"\x1f\x8bnot really",
                   verify=False).returncode == 0
    assert _commit(root, "archive/bomb.md.gz", gzip.compress(b"a" * (3 << 20)),
                   verify=False).returncode == 0
    proc = invoke_memory(root, "index", "--rebuild")
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr
    assert "note: archive/journal/2025-02-02.md.gz: not a valid gzip file" in proc.stdout
    assert "note: archive/bomb.md.gz: decompresses to more than 1024 KB" in proc.stdout
    hit = invoke_memory(root, "search", "remembering", "--include-archive")
    assert hit.returncode == 0 and "Traceback" not in hit.stderr


# --- the hooks ---------------------------------------------------------------------------


def test_commit_refuses_a_secret_inside_a_gz_naming_file_and_line(memrepo_root: Path):
    text = TEXT.replace("2025-01-01", "2025-03-03") + f"- key {SECRET}\n"
    proc = _commit(memrepo_root, "archive/journal/2025-03-03.md.gz",
                   compression.compress(text.encode()))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and SECRET not in out
    assert "archive/journal/2025-03-03.md.gz:9: error: possible aws-access-key" in out


@pytest.mark.parametrize("path, data, needle", [
    ("archive/journal/2025-03-03.md.gz", b"not gzip at all", "not gzip data"),
    ("archive/bomb.md.gz", gzip.compress(b"a" * (3 << 20)), "decompresses to more than"),
    ("archive/big.md.gz", gzip.compress(os.urandom(1100 << 10), 1), "the compressed file alone"),
    ("archive/latin1.md.gz", compression.compress(b"---\ntype: reference\n---\n\xe9\n"),
     "not UTF-8 text (byte 0xe9)"),
    ("knowledge/reference/k8s.md.gz", compression.compress(b"---\ntype: reference\n---\nx\n"),
     "gzip data outside archive/**.md.gz"),
    ("knowledge/reference/k8s.md", compression.compress(b"---\ntype: reference\n---\nx\n"),
     "gzip data outside archive/**.md.gz"),
])
def test_commit_refuses_bad_or_misplaced_gzip(memrepo_root: Path, path: str, data: bytes,
                                              needle: str):
    proc = _commit(memrepo_root, path, data)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"{path}:" in out and needle in out, out
    assert "Traceback" not in out


def test_big_gzip_under_attachments_is_sniffed_not_read(tmp_path: Path):
    """Binaries (LFS) stay binaries: a 2 MB .tar.gz is sniffed (8 KB), never inflated."""
    from memrepo.hooks.engine import SNIFF_BYTES, Context

    blob = gzip.compress(os.urandom(2 << 20), 1)
    (tmp_path / "attachments").mkdir()
    (tmp_path / "attachments/backup.tar.gz").write_bytes(blob)
    ctx = Context(tmp_path)
    assert ctx.sniff("attachments/backup.tar.gz", "t") == blob[:SNIFF_BYTES]
    assert ctx.size("attachments/backup.tar.gz") == len(blob) and not ctx.compressed


def test_commit_accepts_a_valid_archive_gz_and_checks_it_as_markdown(memrepo_root: Path):
    good = compression.compress(TEXT.replace("2025-01-01", "2025-03-03").encode())
    assert _commit(memrepo_root, "archive/journal/2025-03-03.md.gz", good).returncode == 0
    wrong_date = compression.compress(TEXT.encode())  # says 2025-01-01
    proc = _commit(memrepo_root, "archive/journal/2025-04-04.md.gz", wrong_date)
    assert proc.returncode != 0 and "does not match the file name" in proc.stdout + proc.stderr


def test_memory_verify_scans_inside_a_gz_committed_past_the_hooks(memrepo_root: Path):
    text = TEXT + f"- key {SECRET}\n"
    assert _commit(memrepo_root, PACKED, compression.compress(text.encode()),
                   verify=False).returncode == 0
    proc = invoke_memory(memrepo_root, "verify")
    assert proc.returncode == 1 and f"{PACKED}:9: error: possible aws-access-key" in proc.stdout
    assert SECRET not in proc.stdout
