"""Shared knowledge from another memory repo: a git submodule against a git subtree.

Issue #38 ("the seed's shared knowledge composed from another memory repo: submodule or
subtree, measured against each other"). A team memory repo with N knowledge files is
mounted at ``shared/team`` of a personal memory repo (``memory init``, memrepo's hooks
on) four ways, each in its own temp dir, with real git:

- ``submodule``: ``git submodule add`` (a gitlink in the personal tree);
- ``subtree``: ``git subtree add/pull --prefix`` (the team's history merged in);
- ``subtree-squash``: the same with ``--squash`` (one synthetic root commit per pull);
- ``graft``: what ``memory shared`` does: the team commit's tree read under the prefix
  and committed as one ordinary commit on HEAD (``memrepo.commit.shared``).

For each: time to mount, whether memrepo's pre-commit hook let the mount in, clone time
of the personal repo (and whether the files are there), cost of pulling one team
update, whether the index finds a team word, whether ``memory sync`` (rebase onto
another clone's push) keeps the tree right (no team file replayed at the root), a clone
with the team's remote gone (offline), and how a personal edit flows back to the team.

    .venv/bin/python bench/perf/bench_shared.py              # N=500
    .venv/bin/python bench/perf/bench_shared.py --files 2000 --no-record
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "common"))  # results.py
from results import add_record_option, record

MEMORY = str(Path(sys.executable).with_name("memory"))
PREFIX = "shared/team"
WORD = "quokkafrobnicate"  # in one team file, nowhere else
UPDATE_WORD = "wombatreticulate"  # added by the team update
ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@x", "MEMREPO_NO_HOOKS": "1", "GIT_TERMINAL_PROMPT": "0",
       "GIT_ALLOW_PROTOCOL": "file"}
MODES = ("submodule", "subtree", "subtree-squash", "graft")


def run(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=ENV)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} in {cwd}: {proc.stderr.strip()[:400]}")
    return proc


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(["git", "-c", "protocol.file.allow=always", *args], cwd, check)


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return round(time.perf_counter() - t0, 3), out


def make_team(base: Path, n: int) -> Path:
    """A team memory repo (memory init) with ``n`` reference files, pushed to a bare."""
    work = base / "team-work"
    run([MEMORY, "init", str(work)], base)
    ref = work / "knowledge" / "reference"
    for i in range(n):
        word = WORD if i == n // 2 else f"note{i}"
        (ref / f"team-{i:05d}.md").write_text(
            f"---\ntype: reference\n---\n# Team note {i}\n\n- 2026-01-02: {word} about "
            f"service {i} and its runbook\n", encoding="utf-8")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "team knowledge")
    git(work, "branch", "-M", "main")
    bare = base / "team.git"
    git(base, "clone", "-q", "--bare", str(work), str(bare))
    git(work, "remote", "add", "origin", str(bare))
    git(work, "fetch", "-q", "origin")
    return bare


def team_update(base: Path) -> None:
    work = base / "team-work"
    f = work / "knowledge" / "reference" / "team-00000.md"
    f.write_text(f.read_text() + f"- 2026-01-03: {UPDATE_WORD} replaced the old runbook\n")
    git(work, "commit", "-qam", "team update")
    git(work, "push", "-q", "origin", "HEAD:main")


def make_personal(base: Path) -> tuple[Path, Path]:
    home = base / "me"
    run([MEMORY, "init", str(home)], base)
    bare = base / "me.git"
    git(base, "init", "-q", "--bare", "-b", "main", str(bare))
    git(home, "branch", "-M", "main")
    git(home, "remote", "add", "origin", str(bare))
    return home, bare


def mount(mode: str, home: Path, team: Path) -> dict:
    """Mount the team repo; whether memrepo's hook (run as git runs it) let it in."""
    if mode == "submodule":
        git(home, "submodule", "add", "-q", str(team), PREFIX)
        proc = git(home, "commit", "-qm", "mount team", check=False)
        hook_ok = proc.returncode == 0
        if not hook_ok:  # the pre-commit hook refused the gitlink: commit past it
            git(home, "commit", "-qm", "mount team", "--no-verify")
        return {"hook_accepts": hook_ok, "hook_said": proc.stderr.strip()[:160]}
    if mode in ("subtree", "subtree-squash"):
        squash = ["--squash"] if mode == "subtree-squash" else []
        git(home, "subtree", "add", "-q", f"--prefix={PREFIX}", *squash, str(team), "main")
        return {"hook_accepts": "not run (subtree writes its commits with commit-tree/merge)"}
    proc = run([MEMORY, "shared", "add", "team", str(team), "--json"], home, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    return {"hook_accepts": True}


def pull(mode: str, home: Path, team: Path) -> None:
    if mode == "submodule":
        git(home, "submodule", "update", "-q", "--remote", PREFIX)
        git(home, "add", PREFIX)
        git(home, "commit", "-qm", "team update", "--no-verify")
    elif mode in ("subtree", "subtree-squash"):
        squash = ["--squash"] if mode == "subtree-squash" else []
        git(home, "subtree", "pull", "-q", f"--prefix={PREFIX}", *squash, "-m", "team update",
            str(team), "main")
    else:
        run([MEMORY, "shared", "pull", "team"], home)


def found(home: Path, word: str) -> bool:
    run([MEMORY, "index"], home)
    out = run([MEMORY, "search", word, "--json"], home, check=False).stdout
    try:
        hits = json.loads(out or "[]")
    except ValueError:
        return False
    return any(h["path"].startswith(PREFIX + "/") for h in hits)


def sync_check(mode: str, base: Path, home: Path, bare: Path, team: Path) -> dict:
    """Another clone pushes a journal note; this clone pulls a team update and runs
    ``memory sync`` (rebase): does the tree stay right?"""
    other = base / f"other-{mode}"
    git(base, "clone", "-q", str(bare), str(other))
    (other / "knowledge" / "reference" / "other.md").write_text(
        "---\ntype: reference\n---\n# Other\n\n- 2026-01-03: a note from another machine\n")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "other machine")
    git(other, "push", "-q", "origin", "HEAD:main")
    team_update(base)
    pull_s, _ = timed(lambda: pull(mode, home, team))
    proc = run([MEMORY, "sync"], home, check=False)
    tree = git(home, "ls-tree", "-r", "--name-only", "HEAD").stdout.split()
    leaked = [p for p in tree if p.startswith("knowledge/reference/team-")]
    return {"pull_update_s": pull_s, "sync_ok": proc.returncode == 0,
            "other_machine_note_kept": "knowledge/reference/other.md" in tree,
            "sync_said": (proc.stdout + proc.stderr).strip().splitlines()[-1][:160]
            if (proc.stdout + proc.stderr).strip() else "",
            "team_files_replayed_at_root": len(leaked),
            "memory_verify_ok": run([MEMORY, "verify"], home, check=False).returncode == 0,
            "update_searchable_after_sync": found(home, UPDATE_WORD)}


def offline_clone(mode: str, base: Path, bare: Path, team: Path) -> dict:
    hidden = team.with_name("team-gone.git")
    team.rename(hidden)
    try:
        dest = base / f"offline-{mode}"
        proc = git(base, "clone", "-q", "--recurse-submodules", str(bare), str(dest), check=False)
        n = len(list((dest / PREFIX).rglob("*.md"))) if (dest / PREFIX).exists() else 0
        return {"clone_ok": proc.returncode == 0, "team_files_present": n}
    finally:
        hidden.rename(team)


def flow_back(mode: str, base: Path, home: Path, team: Path) -> dict:
    """A personal edit to a team file reaching the team repo."""
    f = home / PREFIX / "knowledge" / "reference" / "team-00001.md"
    f.write_text(f.read_text() + "- 2026-01-04: fixed by me\n")
    t0 = time.perf_counter()
    if mode == "submodule":
        sub = home / PREFIX
        git(sub, "commit", "-qam", "fix")
        ok = git(sub, "push", "-q", "origin", "HEAD:main", check=False).returncode == 0
        how = "commit inside the submodule, push it, then commit the gitlink"
    elif mode.startswith("subtree"):
        git(home, "commit", "-qam", "fix", "--no-verify")
        ok = git(home, "subtree", "push", "-q", f"--prefix={PREFIX}", str(team), "main",
                 check=False).returncode == 0
        how = "git subtree push (split the prefix's history, push it)"
    else:
        proc = run([MEMORY, "update", f"{PREFIX}/knowledge/reference/team-00001.md:6",
                    "x", "y"], home, check=False)
        git(home, "checkout", "-q", "--", PREFIX)
        return {"flows_back": False, "how": "refused: " + proc.stderr.strip()[:120]
                + "; edit the team repo, then `memory shared pull`"}
    return {"flows_back": ok, "seconds": round(time.perf_counter() - t0, 3), "how": how}


def one_mode(mode: str, base: Path, n: int) -> dict:
    base = base / mode
    base.mkdir()
    team = make_team(base, n)
    home, bare = make_personal(base)
    out: dict = {}
    out["mount_s"], out["mount"] = timed(lambda: mount(mode, home, team))
    git(home, "push", "-q", "origin", "HEAD:main")
    tree = git(home, "ls-tree", "-r", "HEAD").stdout.splitlines()
    out["files_in_personal_tree"] = sum(1 for ln in tree if f"\t{PREFIX}/" in ln)
    out["gitlink_in_tree"] = any(ln.startswith("160000") for ln in tree)
    out["commits_in_personal_history"] = int(git(home, "rev-list", "--count", "HEAD").stdout)
    out["index_finds_team_word"] = found(home, WORD)
    clone = base / "clone"
    out["clone_s"], _ = timed(lambda: git(base, "clone", "-q", "--recurse-submodules",
                                          str(bare), str(clone)))
    out["clone_team_files"] = len(list((clone / PREFIX).rglob("*.md")))
    out["clone_git_kb"] = sum(p.stat().st_size for p in (clone / ".git").rglob("*")
                              if p.is_file()) // 1024
    out["sync"] = sync_check(mode, base, home, bare, team)
    git(home, "push", "-q", "origin", "HEAD:main", check=False)
    out["offline_clone"] = offline_clone(mode, base, bare, team)
    out["flow_back"] = flow_back(mode, base, home, team)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=500, help="knowledge files in the team repo")
    ap.add_argument("--modes", default=",".join(MODES))
    add_record_option(ap)
    args = ap.parse_args()
    if git(Path.cwd(), "subtree", "-h", check=False).returncode not in (0, 129):
        print("git subtree is not installed", file=sys.stderr)
        return 1
    figures: dict = {"files": args.files,
                     "git": git(Path.cwd(), "--version").stdout.strip()}
    base = Path(tempfile.mkdtemp(prefix="bench-shared-"))
    try:
        for mode in args.modes.split(","):
            figures[mode] = one_mode(mode, base, args.files)
            print(mode, json.dumps(figures[mode], indent=1), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    record(__file__, figures, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
