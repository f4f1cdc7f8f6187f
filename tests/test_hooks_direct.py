"""`git.hook_runner: direct` (the default): thin git hooks that name their Python.

They validate what is staged (read from the index, nothing stashed), so a partly staged
file is judged by the version being committed; they run whatever PATH is (a shell
without the virtualenv, a deleted virtualenv says so in one line); a hook that was there
before is chained, run first with the same arguments and stdin, and given back.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo import git
from memrepo.config import load_config, set_setting
from memrepo.hooks import install

SECRET = "AKIAIOSFODNN7EXAMPLE"
JOURNAL = "knowledge/journal/2026-02-16.md"
CLEAN = "---\ntype: journal\ndate: 2026-02-16\n---\n\n## 2026-02-16\n- clean\n"
BARE_PATH = "/usr/bin:/bin"


@pytest.fixture
def direct_root(memrepo_root: Path) -> Path:
    """A repo `memory init` made with the default runner (a copy of the session's one)."""
    return memrepo_root


def _commit(root: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = subprocess.run(["git", "commit", "-m", "memory: test", *extra], cwd=root,
                          capture_output=True, text=True, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def _bare_env() -> dict[str, str]:
    """A new shell's environment: no virtualenv on PATH."""
    return {**os.environ, "PATH": BARE_PATH}


def _same_venv(python: str | None) -> bool:
    """The interpreter a shim names is this test run's (``python`` or ``python3``)."""
    return python is not None and Path(python).parent == Path(sys.executable).parent


def _hook(root: Path, name: str, body: str) -> Path:
    path = git.hooks_dir(root) / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_init_defaults_to_direct_shims_that_name_their_python(direct_root: Path) -> None:
    assert load_config(direct_root)["git"]["hook_runner"] == "direct"
    assert install.hooks_status(direct_root) == {k: "ok" for k in install.HOOK_TYPES}
    hook = (git.hooks_dir(direct_root) / "pre-commit").read_text()
    assert _same_venv(install.shim_python(hook))
    assert "hook pre-commit --index" in hook and "exec memory" not in hook
    assert invoke_memory(direct_root, "doctor").returncode == 0


def test_hooks_run_without_memory_on_path(direct_root: Path) -> None:
    (direct_root / JOURNAL).write_text(CLEAN + f"- key {SECRET}\n")
    run_git(direct_root, "add", JOURNAL)
    code, out = _commit(direct_root, env=_bare_env())
    assert code == 1 and f"{JOURNAL}:8: error: possible aws-access-key" in out
    (direct_root / JOURNAL).write_text(CLEAN)
    run_git(direct_root, "add", JOURNAL)
    code, out = _commit(direct_root, env=_bare_env())
    assert code == 0, out


def test_a_memrepo_py_in_the_repo_is_not_imported(direct_root: Path) -> None:
    """The shim's Python does not put the cwd (the repo, pushable) on sys.path."""
    (direct_root / "memrepo.py").write_text("raise SystemExit('hijacked')\n")
    (direct_root / JOURNAL).write_text(CLEAN)
    run_git(direct_root, "add", JOURNAL)
    code, out = _commit(direct_root)
    assert code == 0 and "hijacked" not in out, out


def test_a_deleted_interpreter_refuses_in_one_line_and_doctor_fixes_it(
    direct_root: Path,
) -> None:
    hooks = git.hooks_dir(direct_root)
    for kind in install.HOOK_TYPES:
        (hooks / kind).write_text(install.direct_hook_script(kind, "/gone/venv/bin/python"))
    (direct_root / JOURNAL).write_text(CLEAN)
    run_git(direct_root, "add", JOURNAL)
    code, out = _commit(direct_root)
    assert code == 1
    (line,) = out.strip().splitlines()
    assert "/gone/venv/bin/python" in line and "memory doctor --fix" in line
    assert "--no-verify" in line
    # the index upkeep steps aside: a commit that skips validation still lands
    code, out = _commit(direct_root, "--no-verify")
    assert code == 0 and "post-commit hook skipped" in out
    proc = invoke_memory(direct_root, "doctor")
    assert proc.returncode == 1
    assert "its Python is gone (/gone/venv/bin/python)" in proc.stdout
    assert "git hooks run: " in proc.stdout and "FAIL" in proc.stdout
    proc = invoke_memory(direct_root, "doctor", "--fix")
    assert proc.returncode == 0, proc.stdout
    assert _same_venv(install.shim_python((hooks / "pre-commit").read_text()))


def test_a_python_without_memrepo_is_one_line_and_doctor_sees_it(direct_root: Path) -> None:
    other = "/usr/bin/python3"
    if not os.access(other, os.X_OK) or subprocess.run(
        [other, "-c", "import memrepo"], capture_output=True, cwd="/"
    ).returncode == 0:
        pytest.skip("needs a system python without memrepo")
    hook = git.hooks_dir(direct_root) / "post-commit"
    hook.write_text(install.direct_hook_script("post-commit", other))
    probes = install.probe_hooks(direct_root)
    assert "cannot import memrepo" in probes["post-commit"]
    assert probes["pre-commit"] == ""
    code, out = _commit(direct_root, "--allow-empty")
    assert code == 0  # post-commit never fails a commit
    assert out.count("cannot import memrepo") == 1 and "Traceback" not in out
    assert install.hooks_status(direct_root)["post-commit"] == "ok"  # the file is there…
    proc = invoke_memory(direct_root, "doctor", "--fix")  # …so only the probe tells
    assert proc.returncode == 0 and "rewrote git hooks for" in proc.stdout, proc.stdout
    assert _same_venv(install.shim_python(hook.read_text()))


def test_doctor_probes_each_hook_as_git_runs_it(direct_root: Path) -> None:
    probes = install.probe_hooks(direct_root)
    assert set(probes) == set(install.HOOK_TYPES) and not any(probes.values())
    proc = subprocess.run([str(git.hooks_dir(direct_root) / "pre-commit")], cwd=direct_root,
                          env=install.git_hook_env(), capture_output=True, text=True)
    assert proc.returncode == 0 and "pre-commit hook ready" in proc.stdout


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


def test_a_secret_in_the_commit_message_is_refused(direct_root: Path) -> None:
    (direct_root / JOURNAL).write_text(CLEAN)
    run_git(direct_root, "add", JOURNAL)
    proc = run_git(direct_root, "commit", "-m", "memory: note", "-m", f"key {SECRET}",
                   check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "COMMIT_EDITMSG:3: error: possible aws-access-key" in out
    assert SECRET not in out
    # a secret being removed shows in `commit -v`'s diff, below the scissors: not flagged
    msg = direct_root / "msg"
    msg.write_text("memory: drop a key\n# ------------------------ >8 ------------------------"
                   f"\n-key {SECRET}\n")
    proc = invoke_memory(direct_root, "hook", "commit-msg", str(msg))
    assert proc.returncode == 0, proc.stderr


def test_a_secret_in_a_file_name_is_refused_without_printing_it(direct_root: Path) -> None:
    rel = f"knowledge/reference/{SECRET}.md"
    (direct_root / rel).write_text("---\ntype: reference\n---\nhi\n")
    run_git(direct_root, "add", rel)
    code, out = _commit(direct_root)
    assert code == 1 and "possible aws-access-key in the file name" in out
    assert SECRET not in out and "[REDACTED:aws-access-key].md" in out


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "nul"])
def test_a_secret_in_utf16_or_after_a_nul_is_refused(direct_root: Path, encoding: str) -> None:
    text = f"---\ntype: reference\n---\nkey {SECRET}\n"
    data = b"\0" + text.encode() if encoding == "nul" else text.encode(encoding)
    rel = "attachments/notes.bin"  # binaries are allowed here; secrets are not
    (direct_root / rel).write_bytes(data)
    run_git(direct_root, "add", rel)
    code, out = _commit(direct_root)
    assert code == 1 and "possible aws-access-key (in binary or UTF-16 content)" in out, out
    assert SECRET not in out


# --- symlinks and other non-regular entries ----------------------------------------


def _symlink_cases(root: Path) -> dict[str, str]:
    """name -> the path each case stages."""
    return {
        "md to /etc/passwd": "knowledge/reference/passwd.md",
        "directory to /etc": "knowledge/etc",
        "MEMORY.md replaced": "knowledge/memory/MEMORY.md",
        "transcript": "raw/conversations/2026/02/16/1845-ses_l-link.md",
        "dangling": "topics/gone.md",
    }


def make_symlink(root: Path, case: str, rel: str) -> None:
    target = {"md to /etc/passwd": "/etc/passwd", "directory to /etc": "/etc",
              "MEMORY.md replaced": "/etc/hostname", "transcript": "../../../../../x.md",
              "dangling": "/nonexistent/nowhere.md"}[case]
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(target)


@pytest.mark.parametrize("case", list(_symlink_cases(Path())))
def test_symlinks_are_refused_at_commit(direct_root: Path, case: str) -> None:
    rel = _symlink_cases(direct_root)[case]
    make_symlink(direct_root, case, rel)
    run_git(direct_root, "add", "-A")
    code, out = _commit(direct_root)
    assert code == 1 and f"{rel}: error: is a symlink" in out, out
    assert "[check-filetypes]" in out


def test_a_submodule_is_refused_and_deleting_a_symlink_is_allowed(direct_root: Path) -> None:
    sha = run_git(direct_root, "rev-parse", "HEAD").stdout.strip()
    run_git(direct_root, "update-index", "--add", "--cacheinfo", f"160000,{sha},knowledge/sub")
    code, out = _commit(direct_root)
    assert code == 1 and "knowledge/sub: error: is a submodule" in out
    run_git(direct_root, "rm", "-q", "--cached", "knowledge/sub")
    (direct_root / "old.md").symlink_to("/etc/passwd")
    run_git(direct_root, "add", "old.md")
    run_git(direct_root, "commit", "-q", "--no-verify", "-m", "memory: slipped in")
    run_git(direct_root, "rm", "-q", "old.md")
    code, out = _commit(direct_root)
    assert code == 0, out


# --- chaining a hook that was there -------------------------------------------------


def test_a_foreign_hook_is_chained_first_with_its_arguments_and_stdin(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    root.mkdir()
    run_git(root, "init", "-q")
    log = tmp_path / "log"
    _hook(root, "pre-commit", f'echo "pre-commit $*" >> {log}\nexit ${{FAIL:-0}}\n')
    _hook(root, "post-rewrite", f'echo "post-rewrite $1 $(cat | wc -l)" >> {log}\n')
    mine = (git.hooks_dir(root) / "pre-commit").read_text()
    proc = invoke_memory(tmp_path, "init", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "kept and chained: pre-commit.pre-memrepo, post-rewrite.pre-memrepo" in proc.stdout
    assert (git.hooks_dir(root) / "pre-commit.pre-memrepo").read_text() == mine
    assert not install.only_memrepo_hooks(root)  # memrepo's own commits run the real hooks
    (root / JOURNAL).write_text(CLEAN)
    run_git(root, "add", JOURNAL)
    code, out = _commit(root, env={**os.environ, "FAIL": "3"})
    assert code == 1 and "aws" not in out  # the chained hook's refusal stops the commit
    assert run_git(root, "log", "-1", "--format=%s").stdout.strip() != "memory: test"
    (root / JOURNAL).write_text(CLEAN + f"- {SECRET}\n")
    run_git(root, "add", JOURNAL)
    code, out = _commit(root)
    assert code == 1 and "aws-access-key" in out  # then memrepo's checks run
    (root / JOURNAL).write_text(CLEAN)
    run_git(root, "add", JOURNAL)
    assert _commit(root)[0] == 0
    run_git(root, "commit", "-q", "--amend", "-m", "memory: amended")
    lines = log.read_text().splitlines()
    assert lines.count("pre-commit ") >= 3
    assert lines[-1] == "post-rewrite amend 1"  # stdin reached the chained hook
    # switching runners hands the hook to pre-commit (.legacy), then back
    install.install_hooks(root, "pre-commit")
    hooks = git.hooks_dir(root)
    assert (hooks / "pre-commit.legacy").read_text() == mine
    assert not list(hooks.glob("*.pre-memrepo"))
    install.install_hooks(root, "direct")
    assert (hooks / "pre-commit.pre-memrepo").read_text() == mine
    assert not list(hooks.glob("*.legacy"))
    # uninstalling gives it back
    assert set(install.uninstall_hooks(root)) == set(install.HOOK_TYPES)
    assert (hooks / "pre-commit").read_text() == mine
    assert not list(hooks.glob("*.pre-memrepo"))
    assert "post-rewrite $1" in (hooks / "post-rewrite").read_text()


def test_a_failing_chained_post_hook_never_fails_the_commit(direct_root: Path) -> None:
    _hook(direct_root, "post-commit" + install.CHAIN_SUFFIX, "exit 7\n")
    code, out = _commit(direct_root, "--allow-empty")
    assert code == 0, out


def test_the_pre_commit_framework_with_other_hooks_is_chained(direct_root: Path) -> None:
    """`pre-commit install` over the shims: doctor --fix keeps the framework (it runs the
    user's other hook) and memrepo's own entries there do nothing (the shim runs them)."""
    cfg = direct_root / install.PRE_COMMIT_CONFIG
    cfg.write_text(cfg.read_text() + (
        "  - repo: local\n    hooks:\n      - id: mine\n        name: mine\n"
        "        entry: sh -c 'echo MINE-RAN; exit 0'\n        language: system\n"
        "        always_run: true\n        pass_filenames: false\n"
        "        stages: [pre-commit]\n"
    ))
    proc = invoke_memory(direct_root, "doctor")
    assert "other pre-commit hooks" in proc.stdout and "pre-commit install" in proc.stdout
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=direct_root,
                   check=True, capture_output=True)
    assert install.hooks_status(direct_root)["pre-commit"].startswith("installed by pre-commit")
    proc = invoke_memory(direct_root, "doctor", "--fix")
    assert proc.returncode == 0, proc.stdout
    hooks = git.hooks_dir(direct_root)
    assert install.runner_of((hooks / "pre-commit.pre-memrepo").read_text()) == "pre-commit"
    assert not (hooks / "pre-commit.legacy").exists()  # the old shim: it would loop
    assert not (hooks / "post-merge.pre-memrepo").exists()  # no other post-merge hook
    (direct_root / JOURNAL).write_text(CLEAN + f"- {SECRET}\n")
    run_git(direct_root, "add", JOURNAL, install.PRE_COMMIT_CONFIG)
    code, out = _commit(direct_root)
    assert code == 1 and re.search(r"^mine\.+Passed", out, re.MULTILINE), out
    assert out.count("possible aws-access-key") == 1  # memrepo's checks ran once


def test_switching_runners_replaces_only_memrepos_hooks(direct_root: Path) -> None:
    proc = invoke_memory(direct_root, "init", "--hooks", "pre-commit")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert load_config(direct_root)["git"]["hook_runner"] == "pre-commit"
    assert install.hooks_status(direct_root, "pre-commit") == {
        k: "ok" for k in install.HOOK_TYPES
    }
    assert not list(git.hooks_dir(direct_root).glob("*.legacy"))
    assert "hook_runner: pre-commit" in (direct_root / "memory-config.yaml").read_text()


def test_an_existing_repo_keeps_the_runner_its_config_names(direct_root: Path) -> None:
    cfg = direct_root / "memory-config.yaml"
    cfg.write_text(set_setting(cfg.read_text(), "git", "hook_runner", "pre-commit"))
    proc = invoke_memory(direct_root, "init")
    assert proc.returncode == 0, proc.stderr
    assert install.hooks_status(direct_root, "pre-commit")["pre-commit"] == "ok"


def test_the_server_hook_is_a_shim_too(tmp_path: Path) -> None:
    bare = tmp_path / "r.git"
    run_git(tmp_path, "init", "-q", "--bare", str(bare))
    _hook(bare, "pre-receive", "cat > /dev/null\necho OLD-HOOK >&2\n")
    assert "kept and chained" in install.install_server_hook(bare)
    text = (bare / "hooks/pre-receive").read_text()
    assert _same_venv(install.shim_python(text))
    assert (bare / "hooks/pre-receive.pre-memrepo").is_file()
