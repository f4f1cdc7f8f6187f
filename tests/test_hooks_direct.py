"""`git.hook_runner: direct`: thin git hooks that call `memory` with no framework.

They validate what is staged (read from the index, nothing stashed), so a partly staged
file is judged by the version being committed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_git, run_memory

from memrepo.config import load_config
from memrepo.hooks import install

SECRET = "AKIAIOSFODNN7EXAMPLE"
JOURNAL = "knowledge/journal/2026-02-16.md"
CLEAN = "---\ntype: journal\ndate: 2026-02-16\n---\n\n## 2026-02-16\n- clean\n"


@pytest.fixture
def direct_root(tmp_path: Path) -> Path:
    root = tmp_path / "mem"
    proc = run_memory(tmp_path, "init", "--hooks", "direct", str(root))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return root


def _commit(root: Path) -> tuple[int, str]:
    proc = run_git(root, "commit", "-m", "memory: test", check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_init_installs_direct_shims_and_saves_the_runner(direct_root: Path) -> None:
    assert load_config(direct_root)["git"]["hook_runner"] == "direct"
    assert install.hooks_status(direct_root, "direct") == {k: "ok" for k in install.HOOK_TYPES}
    hook = (direct_root / ".git/hooks/pre-commit").read_text()
    assert "exec memory hook pre-commit --index" in hook
    assert run_memory(direct_root, "doctor").returncode == 0


def test_staged_secret_is_refused_even_when_the_work_tree_is_clean(direct_root: Path) -> None:
    path = direct_root / JOURNAL
    path.write_text(CLEAN + f"- key {SECRET}\n")
    run_git(direct_root, "add", JOURNAL)
    path.write_text(CLEAN)  # unstaged fix: the commit would still carry the secret
    code, out = _commit(direct_root)
    assert code != 0 and f"{JOURNAL}:8: error: possible aws-access-key" in out
    assert SECRET not in out


def test_unstaged_secret_does_not_block_a_clean_staged_version(direct_root: Path) -> None:
    path = direct_root / JOURNAL
    path.write_text(CLEAN)
    run_git(direct_root, "add", JOURNAL)
    path.write_text(CLEAN + f"- key {SECRET}\n")  # not staged: not part of this commit
    code, out = _commit(direct_root)
    assert code == 0, out


def test_warnings_show_and_the_commit_lands(direct_root: Path) -> None:
    body = "".join(f"- 2026-01-01: entry {i}\n" for i in range(185))
    (direct_root / "knowledge/memory/MEMORY.md").write_text("---\ntype: memory\n---\n" + body)
    run_git(direct_root, "add", "knowledge/memory/MEMORY.md")
    code, out = _commit(direct_root)
    assert code == 0, out
    assert "knowledge/memory/MEMORY.md:181: warning:" in out


def test_switching_runners_replaces_only_memrepos_hooks(direct_root: Path) -> None:
    proc = run_memory(direct_root, "init", "--hooks", "pre-commit")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert load_config(direct_root)["git"]["hook_runner"] == "pre-commit"
    assert install.hooks_status(direct_root, "pre-commit") == {
        k: "ok" for k in install.HOOK_TYPES
    }
    assert not list((direct_root / ".git/hooks").glob("*.legacy"))
    assert "hook_runner: pre-commit" in (direct_root / "memory-config.yaml").read_text()


def test_direct_runner_never_replaces_a_foreign_hook(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    root.mkdir()
    run_git(root, "init", "-q")
    hook = root / ".git/hooks/post-merge"
    hook.write_text("#!/bin/sh\necho mine\n")
    hook.chmod(0o755)
    proc = run_memory(tmp_path, "init", "--hooks", "direct", str(root))
    assert proc.returncode == 1
    assert "post-merge is not memrepo's" in proc.stderr
    assert hook.read_text() == "#!/bin/sh\necho mine\n"
