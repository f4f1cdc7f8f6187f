"""Private knowledge (docs/private.md), everything that does not need the git-crypt binary.

git-crypt is a clean/smudge filter pair named ``git-crypt`` in a clone's git config. A
stand-in filter of that name (``FAKE``: the ``\\0GITCRYPT\\0`` header, then the bytes
reversed) runs the same git machinery (``git add``, ``cat-file``, checkout, the merge
driver), so what memrepo does with ciphertext is tested here on every machine; the real
binary's tests are in test_private_gitcrypt.py.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo import gitcrypt, private, worktree
from memrepo.commit import merge
from memrepo.config import load_config, render_default_config, validate
from memrepo.errors import ConfigError, MemrepoError
from memrepo.hooks import check_private, pre_commit, verify
from memrepo.hooks.engine import run_checks
from memrepo.index import gitsource
from memrepo.index.indexer import sync
from memrepo.index.search import Searcher
from memrepo.index.writer import parse
from memrepo.lifecycle import tags
from memrepo.repo import MemoryRepo

PEOPLE = "knowledge/people/**"
BOB = "knowledge/people/bob-stone.md"
BOB_TEXT = ("---\ntype: person\nname: Bob Stone\n---\n# Bob Stone\n\n"
            "- 2026-01-02: Bob Stone lives in Lisbon and keeps zebrafish.\n")

FAKE = """\
import sys
HEADER = b"\\0GITCRYPT\\0"
data = sys.stdin.buffer.read()
if sys.argv[1] == "clean":
    out = data if data.startswith(HEADER) else HEADER + data[::-1]
else:
    out = data[len(HEADER):][::-1] if data.startswith(HEADER) else data
sys.stdout.buffer.write(out)
"""


def seal(text: str) -> bytes:
    """What the stand-in filter stores for ``text``."""
    return gitcrypt.HEADER + text.encode()[::-1]


def key(root: Path, tmp_path: Path) -> None:
    """Give ``root`` the stand-in filter, as ``git-crypt init`` / ``unlock`` would."""
    script = tmp_path / "fake_git_crypt.py"
    script.write_text(FAKE)
    for kind in ("clean", "smudge"):
        run_git(root, "config", f"filter.git-crypt.{kind}", f'"{sys.executable}" "{script}" {kind}')
    run_git(root, "config", "filter.git-crypt.required", "true")


def repo_with(root: Path, patterns: list[str], files: dict[str, str]) -> Path:
    """A git repo with ``private.paths`` set (config and .gitattributes) and ``files``
    committed past any hook."""
    root.mkdir(parents=True, exist_ok=True)
    run_git(root, "init", "-q", "-b", "main")
    (root / "memory-config.yaml").write_text(f"private:\n  paths: {patterns!r}\n".replace("'", '"'))
    (root / ".gitattributes").write_text(gitcrypt.merge_attributes("*.md text eol=lf\n", patterns))
    (root / ".gitignore").write_text("memory.db*\n")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "--no-verify", "-m", "seed")
    return root


@pytest.fixture
def keyed(tmp_path: Path) -> Path:
    """A repo whose people files are stored encrypted (by the stand-in filter)."""
    root = tmp_path / "keyed"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    key(root, tmp_path)
    return repo_with(root, [PEOPLE], {BOB: BOB_TEXT, "knowledge/reference/r.md":
                                      "---\ntype: reference\n---\n# R\n\nplain words\n"})


# --- config --------------------------------------------------------------------------


def test_private_paths_default_to_none_and_are_rendered() -> None:
    assert validate({})["private"]["paths"] == []
    assert "\nprivate:\n  paths: []  # .gitattributes patterns" in render_default_config()
    assert validate({"private": {"paths": [PEOPLE, "secret-*.md"]}})["private"]["paths"] == [
        PEOPLE, "secret-*.md"]


@pytest.mark.parametrize(("pattern", "says"), [
    ("raw/**", "would encrypt raw/: transcripts"),
    ("*.md", "would encrypt raw/"),
    ("*", "would encrypt .gitattributes"),
    ("memory-config.yaml", "would encrypt memory-config.yaml"),
    ("knowledge/people/", "write 'knowledge/people/**'"),
    ("!knowledge/x.md", "cannot be negative"),
    ("knowledge/a b.md", "without spaces"),
    ("../outside/**", "inside the repo"),
])
def test_private_paths_refuse_what_must_stay_readable(pattern: str, says: str) -> None:
    text = f"validation: {{}}\nprivate:\n  paths: [{pattern!r}]\n"
    with pytest.raises(ConfigError) as err:
        validate({"private": {"paths": [pattern]}}, text)
    assert says in str(err.value) and err.value.line == 3, str(err.value)


# --- patterns ------------------------------------------------------------------------

PATHS = ["knowledge/people/bob.md", "knowledge/people/x/deep.md", "knowledge/peoplex.md",
         "secret.md", "knowledge/secret.md", "a/b/secret.md", "knowledge/journal/2026-01-02.md",
         "knowledge/journal/notes.txt", "topics/x.md", "knowledge/projects/p/context.md"]
PATTERNS = ["knowledge/people/**", "secret.md", "/knowledge/journal/*.md", "**/context.md",
            "topics/?.md", "knowledge/projects/[op]/*.md"]


def test_the_matcher_agrees_with_git_check_attr(tmp_path: Path) -> None:
    """memrepo's wildmatch (config checks, the commit hook, doctor) against git's own."""
    root = tmp_path / "r"
    root.mkdir()
    run_git(root, "init", "-q")
    for pattern in PATTERNS:
        (root / ".gitattributes").write_text(gitcrypt.merge_attributes("", [pattern]))
        got = private.filters(root, PATHS)
        match = gitcrypt.Matcher([pattern])
        assert {p for p in PATHS if match(p)} == {p for p, f in got.items()
                                                 if f == "git-crypt"}, pattern


def test_tracked_finds_what_the_matcher_names(tmp_path: Path) -> None:
    root = repo_with(tmp_path / "r", PATTERNS, dict.fromkeys(PATHS, "x\n"))
    match = gitcrypt.Matcher(PATTERNS)
    assert sorted(private.tracked(root, PATTERNS)) == sorted(p for p in PATHS if match(p))


# --- .gitattributes ------------------------------------------------------------------


def test_the_block_is_appended_once_and_the_users_lines_kept() -> None:
    mine = "# mine\n*.md text eol=lf\nattachments/** filter=lfs -text\n"
    once = gitcrypt.merge_attributes(mine, [PEOPLE])
    assert once.startswith(mine)
    assert f"{PEOPLE} filter=git-crypt diff=git-crypt -text\n{gitcrypt.END}\n" in once
    assert gitcrypt.merge_attributes(once, [PEOPLE]) == once


def test_the_block_is_rewritten_in_place_and_removed_when_empty() -> None:
    before = "a merge=x\n\n" + "\n".join(gitcrypt.attribute_lines(["old/**"])) + "\nz -diff\n"
    after = gitcrypt.merge_attributes(before, [PEOPLE, "b.md"])
    assert "old/**" not in after and after.startswith("a merge=x\n") and after.endswith(
        "z -diff\n")
    assert after.index(PEOPLE) < after.index("z -diff")
    assert gitcrypt.merge_attributes(after, []) == "a merge=x\n\nz -diff\n"
    assert gitcrypt.merge_attributes("", []) == ""


def test_private_files_get_the_filter_and_no_eol_conversion(tmp_path: Path) -> None:
    """``*.md text eol=lf`` would convert CRLF inside the ciphertext: the block unsets it."""
    root = repo_with(tmp_path / "r", [PEOPLE], {})
    out = run_git(root, "check-attr", "filter", "diff", "text", "--", BOB).stdout
    assert out.split("\n")[:3] == [f"{BOB}: filter: git-crypt", f"{BOB}: diff: git-crypt",
                                   f"{BOB}: text: unset"]
    assert private.write_attributes(root, [PEOPLE]) is False  # idempotent on disk too


def test_a_text_attribute_after_the_block_counts_as_not_encrypted(tmp_path: Path) -> None:
    """A line below memrepo's block that turns end-of-line conversion back on would
    rewrite CRLF inside the ciphertext: doctor names it."""
    root = repo_with(tmp_path / "r", PATTERNS, {})
    assert private.uncovered(root, PATTERNS) == []
    with (root / ".gitattributes").open("a") as fh:
        fh.write("knowledge/people/*.md text eol=lf\n")
    assert private.uncovered(root, PATTERNS) == []  # no tracked file and samples are x
    (root / BOB).parent.mkdir(parents=True)
    (root / BOB).write_text("x\n")
    run_git(root, "add", "-A")
    assert private.uncovered(root, PATTERNS) == [BOB]


# --- reading what git stores ---------------------------------------------------------


def test_blobs_are_ciphertext_in_git_and_revealed_with_the_key(keyed: Path) -> None:
    sha = run_git(keyed, "rev-parse", f"HEAD:{BOB}").stdout.strip()
    stored = run_git(keyed, "cat-file", "blob", sha).stdout.encode()
    assert stored.startswith(gitcrypt.HEADER) and b"zebrafish" not in stored
    assert (keyed / BOB).read_text() == BOB_TEXT  # checkout smudged it
    assert gitcrypt.reveal(keyed, seal(BOB_TEXT)) == BOB_TEXT.encode()
    assert dict(gitsource.stream_blobs(keyed, [sha])) == {sha: BOB_TEXT.encode()}
    assert gitsource.read_blob(keyed, sha) == BOB_TEXT.encode()
    run_git(keyed, "tag", "t1")
    assert tags.show_at(keyed, "t1", BOB) == BOB_TEXT
    run_git(keyed, "config", "--remove-section", "filter.git-crypt")  # locked
    assert gitcrypt.reveal(keyed, seal(BOB_TEXT)) == seal(BOB_TEXT)
    with pytest.raises(MemrepoError, match="no key"):
        tags.show_at(keyed, "t1", BOB)


def test_the_index_holds_plaintext_with_the_key_and_no_garbage_without(keyed: Path,
                                                                        tmp_path: Path) -> None:
    sync(keyed, embedder_name="none", force_rebuild=True)
    s = Searcher(keyed)
    try:
        assert [h.path for h in s.search("zebrafish")] == [BOB]
    finally:
        s.close()
    locked = tmp_path / "locked"
    run_git(tmp_path, "clone", "-q", str(keyed), str(locked))
    assert (locked / BOB).read_bytes() == seal(BOB_TEXT)
    res = sync(locked, embedder_name="none", force_rebuild=True)
    assert res is not None and any(BOB in n and "no key" in n for n in res.notes), res.notes
    s = Searcher(locked)
    try:
        assert s.search("zebrafish") == [] and [h.path for h in s.search("plain")] == [
            "knowledge/reference/r.md"]
    finally:
        s.close()
    assert parse(BOB, seal(BOB_TEXT)).error == gitcrypt.LOCKED
    with pytest.raises(OSError, match="no key"):
        worktree.read_file(locked, BOB)


def _staged_run(root: Path) -> tuple[int, str]:
    paths, ctx = pre_commit.staged_context(root)
    code = run_checks(pre_commit.CHECKS, paths, ctx, out=io.StringIO())
    return code, "\n".join(ctx.report.lines)


def test_validators_read_the_plaintext_of_a_staged_private_file(keyed: Path) -> None:
    (keyed / BOB).write_text(BOB_TEXT.replace("name: Bob Stone\n", ""))
    run_git(keyed, "add", BOB)
    code, report = _staged_run(keyed)
    assert code == 1 and "a person file needs 'name'" in report, report
    assert "[check-private]" not in report
    (keyed / BOB).write_text(BOB_TEXT + "- 2026-01-03: Bob Stone moved to Porto.\n")
    run_git(keyed, "add", BOB)
    assert _staged_run(keyed) == (0, "")


def test_a_private_file_staged_in_the_clear_is_refused(
        keyed: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run_git(keyed, "config", "--remove-section", "filter.git-crypt")  # a clone without it
    alice = "knowledge/people/alice.md"
    (keyed / alice).write_text("---\ntype: person\nname: Alice\n---\n# Alice\n")
    run_git(keyed, "add", alice)
    code, report = _staged_run(keyed)
    assert code == 1 and f"{alice}: error: a private path" in report
    assert "[check-private]" in report and BOB not in report
    # the same through a hook run on file names (the pre-commit framework's way)
    monkeypatch.chdir(keyed)
    assert check_private.main([alice, BOB]) == 1
    assert capsys.readouterr().out.count("[check-private]") == 1


def test_a_locked_blob_is_a_warning_in_the_validators(keyed: Path) -> None:
    run_git(keyed, "config", "--remove-section", "filter.git-crypt")
    ctx = pre_commit.BlobContext(keyed, {BOB: seal(BOB_TEXT)}, None)
    ctx.config["private"]["paths"] = [PEOPLE]
    run_checks(pre_commit.CHECKS, [BOB], ctx, out=io.StringIO())
    assert ctx.report.errors == 0 and ctx.report.lines == [
        f"{BOB}: warning: {gitcrypt.LOCKED}: not checked [private]"]


def test_verify_refuses_a_private_file_committed_in_the_clear(keyed: Path) -> None:
    base = run_git(keyed, "rev-parse", "HEAD").stdout.strip()
    run_git(keyed, "config", "--remove-section", "filter.git-crypt")
    (keyed / "knowledge/people/alice.md").write_text("---\ntype: person\nname: A\n---\n")
    run_git(keyed, "add", "-A")
    run_git(keyed, "commit", "-q", "--no-verify", "-m", "alice in the clear")
    problems = verify.audit_change(keyed, base, "HEAD")
    assert any("knowledge/people/alice.md" in p and "[check-private]" in p for p in problems)


def test_the_merge_driver_merges_plaintext_and_stores_ciphertext(keyed: Path,
                                                                  tmp_path: Path) -> None:
    base = BOB_TEXT
    ours = base + "- 2026-01-03: Bob Stone moved to Porto.\n"
    theirs = base + "- 2026-01-04: Bob Stone plays cello.\n"
    files = []
    for name, text in (("o", base), ("a", ours), ("b", theirs)):
        (tmp_path / name).write_bytes(seal(text))
        files.append(tmp_path / name)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(keyed)
        assert merge.run_driver(*files, BOB) == 0
        merged = gitcrypt.reveal(keyed, files[1].read_bytes())
        assert files[1].read_bytes().startswith(gitcrypt.HEADER)
        assert "Porto" in merged.decode() and "cello" in merged.decode()
        run_git(keyed, "config", "--remove-section", "filter.git-crypt")  # no key: a person
        files[1].write_bytes(seal(ours))
        assert merge.run_driver(*files, BOB) == 1
        assert files[1].read_bytes() == seal(ours)


# --- memory doctor -------------------------------------------------------------------


def _doctor(root: Path) -> dict[str, str]:
    return {c.name: c.detail for c in private.health_checks(MemoryRepo(root))}


def test_doctor_says_how_to_get_git_crypt(keyed: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    monkeypatch.setattr(private.shutil, "which", lambda _name: None)
    found = {c.name: c for c in private.health_checks(MemoryRepo(keyed))}
    assert "apt-get install git-crypt" in found["git-crypt"].detail
    assert found["git-crypt"].warning


def test_doctor_says_nothing_without_private_paths(tmp_path: Path) -> None:
    root = repo_with(tmp_path / "r", [], {"knowledge/people/bob.md": "x\n"})
    assert private.health_checks(MemoryRepo(root)) == []


def test_doctor_warns_when_a_private_path_would_be_pushed_in_the_clear(tmp_path: Path) -> None:
    root = repo_with(tmp_path / "r", [PEOPLE], {BOB: BOB_TEXT})  # no filter defined here
    (root / ".gitattributes").write_text("")
    found = _doctor(root)
    assert "for knowledge/people/x, knowledge/people/bob-stone.md" in found["private paths"]
    assert f"not pushed yet (the next push gives them away): {BOB}" in found[
        "private in the clear"]
    checks = private.health_checks(MemoryRepo(root))
    assert all(c.warning and not c.ok for c in checks)
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "init", "-q", "--bare", str(bare))
    run_git(root, "push", "-q", str(bare), "main:main")
    run_git(root, "fetch", "-q", str(bare), "+main:refs/remotes/origin/main")
    assert f"already on a remote: {BOB}" in _doctor(root)["private in the clear"]


def test_doctor_is_content_when_everything_is_encrypted_and_warns_when_locked(
        keyed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(private, "git_crypt", lambda: "/usr/bin/git-crypt")  # the stand-in
    checks = private.health_checks(MemoryRepo(keyed))
    assert [(c.name, c.ok) for c in checks] == [("private paths", True)]
    assert "1 file(s) encrypted" in checks[0].detail
    locked = tmp_path / "locked"
    run_git(tmp_path, "clone", "-q", str(keyed), str(locked))
    found = private.health_checks(MemoryRepo(locked))
    names = {c.name: c for c in found}
    assert f"git-crypt ciphertext in the work tree (no key here): {BOB}" in names[
        "private files locked"].detail
    assert names["private paths"].fix == "memory private unlock KEYFILE"
    assert "in the clear" not in " ".join(names)  # ciphertext in history is no leak


# --- memory private ------------------------------------------------------------------


def test_the_command_needs_git_crypt_and_says_how_to_get_it(
        keyed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(private.shutil, "which", lambda _name: None)
    out = invoke_memory(keyed, "private", "init", "knowledge/journal/**")
    assert out.returncode == 1 and "git-crypt is not installed" in out.stderr
    assert load_config(keyed)["private"]["paths"] == [PEOPLE]  # nothing written


def test_status_json_and_add_patterns_keeps_the_config_readable(keyed: Path) -> None:
    out = invoke_memory(keyed, "private", "status", "--json")
    assert out.returncode == 0, out.stderr
    assert '"files": ["knowledge/people/bob-stone.md"]' in out.stdout
    assert private.add_patterns(keyed, ["knowledge/journal/*.md"]) is True
    assert private.add_patterns(keyed, ["knowledge/journal/*.md"]) is False
    assert load_config(keyed)["private"]["paths"] == [PEOPLE, "knowledge/journal/*.md"]
    with pytest.raises(ConfigError, match="would encrypt raw/"):
        private.add_patterns(keyed, ["raw/**"])


def test_add_patterns_edits_the_rendered_config_in_place(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "memory-config.yaml").write_text(render_default_config())
    assert private.add_patterns(root, [PEOPLE]) is True
    text = (root / "memory-config.yaml").read_text()
    assert f'  paths: ["{PEOPLE}"]  # .gitattributes patterns' in text
    assert load_config(root)["private"]["paths"] == [PEOPLE]


def test_export_key_refuses_a_file_inside_the_repo(keyed: Path) -> None:
    keys = keyed / ".git" / "git-crypt" / "keys"
    keys.mkdir(parents=True)
    (keys / "default").write_bytes(b"k")
    with pytest.raises(MemrepoError, match="keep the key out of it"):
        private.export_key(keyed, keyed / "scratch" / "memrepo.key")
