"""Hook-routes torture: every way past the git hooks named in issue #14, through real git.

Usage: ``python bench/torture/hook_routes.py [--quick]``

One memory repo made by the real ``memory init`` (the default, direct runner) and a bare
remote with memrepo's pre-receive shim. Each case writes something that must never land
and tries two doors:

- ``commit``: ``git commit`` with the installed hooks, from a shell whose PATH is
  ``/usr/bin:/bin`` (no virtualenv): must be refused and name the path (or message line);
- ``push``: the same made with ``--no-verify`` and pushed: the remote must refuse it,
  naming the commit and the path, and print no secret.

Cases: symlinks (.md to /etc/passwd, a directory to /etc, MEMORY.md replaced, a
transcript, a dangling one), a submodule, secrets in UTF-8, after a NUL byte, in UTF-16
(with and without BOM), in attachments/ binaries, inside a gzip archive
(``archive/**.md.gz``, and gzip bytes under a ``.md`` name), a gzip bomb, in file names,
commit messages, tag messages, branch and tag names, and a pushed
``secrets_allowlist: ['.*']``. Then the
hooks themselves: a deleted interpreter (one line, refused; post-commit never fails), a
chained foreign hook (runs first with its stdin), and doctor's probe.

Prints one line per failed promise and a final summary; exits 1 if any promise broke.
``--quick`` skips the push door for the content variants (under a minute).
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "common"))  # results.py
from results import add_record_option, record

SECRET = "AKIAIOSFODNN7EXAMPLE"
NOTE = "---\ntype: reference\n---\n"
BARE_PATH = "/usr/bin:/bin"
PY = sys.executable


def git(root: Path, *args: str, env: dict[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env=env)
    if check and proc.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr}")
    return proc


def memory(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(PY).parent / "memory"), *args], cwd=cwd,
                          capture_output=True, text=True)


class Run:
    """The repo, the remote, and the tally."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "mem"
        self.env = {**os.environ, "PATH": BARE_PATH}
        proc = memory(base, "init", str(self.root))
        if proc.returncode:
            sys.exit(f"memory init failed: {proc.stderr}")
        self.bare = base / "remote.git"
        git(base, "clone", "-q", "--bare", str(self.root), str(self.bare))
        subprocess.run([PY, "-c", "import sys; from pathlib import Path; from memrepo.hooks."
                        "install import install_server_hook as i; i(Path(sys.argv[1]))",
                        str(self.bare)], check=True)
        git(self.root, "remote", "add", "origin", str(self.bare))
        self.base_sha = git(self.root, "rev-parse", "HEAD").stdout.strip()
        self.checked = 0
        self.broken: list[str] = []

    def promise(self, ok: bool, what: str, out: str = "") -> None:
        self.checked += 1
        if not ok:
            self.broken.append(what)
            print(f"BROKEN: {what}\n    " + out.strip().replace("\n", "\n    ")[:1500])

    def reset(self) -> None:
        git(self.root, "reset", "-q", "--hard", self.base_sha)
        git(self.root, "clean", "-qfdx", "-e", "memory.db*", "-e", ".memrepo")
        for tag in git(self.root, "tag").stdout.split():
            git(self.root, "tag", "-d", tag)

    def door_commit(self, name: str, make: Callable[[Path], None], needle: str,
                    message: str = "memory: case") -> None:
        self.reset()
        make(self.root)
        git(self.root, "add", "-A")
        proc = git(self.root, "commit", "-m", message, env=self.env, check=False)
        out = proc.stdout + proc.stderr
        landed = git(self.root, "rev-parse", "HEAD").stdout.strip() != self.base_sha
        self.promise(proc.returncode != 0 and not landed and needle in out
                     and SECRET not in out and "Traceback" not in out,
                     f"commit refuses {name} naming {needle!r}", out)

    def door_push(self, name: str, make: Callable[[Path], None], needle: str,
                  message: str = "memory: case", refspec: str = "HEAD:main") -> None:
        self.reset()
        make(self.root)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "--no-verify", "--allow-empty", "-m", message)
        sha = git(self.root, "rev-parse", "HEAD").stdout.strip()
        proc = git(self.root, "push", "origin", refspec, check=False)
        out = proc.stdout + proc.stderr
        remote = "\n".join(ln for ln in out.splitlines() if ln.startswith("remote:"))
        named = sha[:10] in remote or "ref" in name or "tag" in name
        self.promise(proc.returncode != 0 and needle in remote and named
                     and SECRET not in remote and "Traceback" not in out,
                     f"pre-receive refuses {name} naming {needle!r}", out)


def write(rel: str, data: str | bytes) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return make


def link(rel: str, target: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        path.symlink_to(target)
    return make


def gzip_text(text: str) -> bytes:
    """What `memory prune` writes for an archived file (gzip -9, mtime 0)."""
    return gzip.compress(text.encode(), 9, mtime=0)


def cases() -> list[tuple[str, Callable[[Path], None], str, str, bool]]:
    """(name, make, needle, message, content variant) for both doors."""
    body = NOTE + f"key {SECRET}\n"
    allow = ("validation:\n  secrets_allowlist: ['.*']\n")
    return [
        ("an .md symlink to /etc/passwd", link("knowledge/reference/pw.md", "/etc/passwd"),
         "knowledge/reference/pw.md: error: is a symlink", "memory: case", False),
        ("a directory symlink to /etc", link("knowledge/etc", "/etc"),
         "knowledge/etc: error: is a symlink", "memory: case", False),
        ("MEMORY.md replaced by a symlink", link("knowledge/memory/MEMORY.md", "/etc/hostname"),
         "knowledge/memory/MEMORY.md: error: is a symlink", "memory: case", False),
        ("a transcript symlink",
         link("raw/conversations/2026/01/01/0101-s-x.md", "../../../../../x.md"),
         "raw/conversations/2026/01/01/0101-s-x.md: error: is a symlink", "memory: case", False),
        ("a dangling symlink", link("topics/gone.md", "/nonexistent/x.md"),
         "topics/gone.md: error: is a symlink", "memory: case", False),
        ("a UTF-8 secret", write("knowledge/reference/k.md", body),
         "knowledge/reference/k.md:4: error: possible aws-access-key", "memory: case", True),
        ("a secret after a NUL byte", write("knowledge/reference/k.md", b"\0" + body.encode()),
         "knowledge/reference/k.md:4: error: possible aws-access-key", "memory: case", True),
        ("a UTF-16 secret (BOM)", write("knowledge/reference/k.md", body.encode("utf-16")),
         "knowledge/reference/k.md:4: error: possible aws-access-key", "memory: case", True),
        ("a UTF-16-BE secret (no BOM)",
         write("knowledge/reference/k.md", body.encode("utf-16-be")),
         "knowledge/reference/k.md:4: error: possible aws-access-key", "memory: case", True),
        ("a secret in an attachments/ binary",
         write("attachments/x.bin", b"\x89PNG\0\0" + f"\nkey {SECRET}\n".encode()),
         "attachments/x.bin:2: error: possible aws-access-key", "memory: case", True),
        ("a secret inside an archived .md.gz",
         write("archive/reference/k.md.gz", gzip_text(body)),
         "archive/reference/k.md.gz:4: error: possible aws-access-key", "memory: case", False),
        ("a secret in gzip bytes named .md", write("knowledge/reference/k.md", gzip_text(body)),
         "knowledge/reference/k.md:4: error: possible aws-access-key", "memory: case", False),
        ("a gzip bomb .md.gz", write("archive/bomb.md.gz", gzip.compress(b"a" * (8 << 20))),
         "archive/bomb.md.gz: error: decompresses to more than", "memory: case", False),
        ("a secret in a file name", write(f"knowledge/reference/{SECRET}.md", NOTE),
         "[REDACTED:aws-access-key].md: error: possible aws-access-key in the file name",
         "memory: case", False),
        ("a secret in the commit message", write("knowledge/reference/ok.md", NOTE),
         "{where}:3: error: possible aws-access-key", f"memory: ok\n\nkey {SECRET}",
         False),
        ("a pushed allowlist ['.*'] with its secret",
         lambda root: (write("knowledge/reference/k.md", body)(root),
                       (root / "memory-config.yaml").write_text(allow)),
         "knowledge/reference/k.md:4: error: possible aws-access-key", "memory: case", False),
    ]


def submodule(r: Run) -> None:
    r.reset()
    git(r.root, "update-index", "--add", "--cacheinfo", f"160000,{r.base_sha},knowledge/sub")
    proc = git(r.root, "commit", "-m", "memory: sub", env=r.env, check=False)
    r.promise(proc.returncode != 0 and "knowledge/sub: error: is a submodule" in proc.stderr
              + proc.stdout, "commit refuses a submodule", proc.stdout + proc.stderr)


def refs_and_tags(r: Run) -> None:
    r.door_push("a secret in a branch name", lambda root: None,
                "[REDACTED:aws-access-key]: error: possible aws-access-key in the ref name",
                refspec=f"HEAD:refs/heads/{SECRET}")
    r.door_push("a secret in a tag name", lambda root: None,
                "[REDACTED:aws-access-key]: error: possible aws-access-key in the ref name",
                refspec=f"HEAD:refs/tags/{SECRET}")
    r.reset()
    git(r.root, "tag", "-a", "v1", "-m", f"release\n\nkey {SECRET}")
    proc = git(r.root, "push", "origin", "refs/tags/v1", check=False)
    out = proc.stdout + proc.stderr
    r.promise(proc.returncode != 0 and "tag message:3: error: possible aws-access-key" in out
              and SECRET not in out, "pre-receive refuses a secret in a tag message", out)


def the_hooks_themselves(r: Run) -> None:
    hooks = r.root / ".git" / "hooks"
    saved = {p.name: p.read_text() for p in hooks.iterdir() if not p.name.endswith(".sample")}
    try:
        for name, text in saved.items():
            lines = [("py=/gone/venv/bin/python" if ln.startswith("py=") else ln)
                     for ln in text.split("\n")]
            (hooks / name).write_text("\n".join(lines))
        r.reset()
        write("knowledge/reference/ok.md", NOTE)(r.root)
        git(r.root, "add", "-A")
        proc = git(r.root, "commit", "-m", "memory: ok", env=r.env, check=False)
        lines = (proc.stdout + proc.stderr).strip().splitlines()
        r.promise(proc.returncode != 0 and len(lines) == 1 and "/gone/venv/bin/python" in
                  lines[0] and "memory doctor --fix" in lines[0],
                  "a deleted interpreter refuses the commit in one line", "\n".join(lines))
        proc = git(r.root, "commit", "--no-verify", "-m", "memory: ok", env=r.env, check=False)
        r.promise(proc.returncode == 0, "post-commit with a deleted interpreter never fails",
                  proc.stderr)
        proc = memory(r.root, "doctor")
        r.promise(proc.returncode == 1 and "its Python is gone" in proc.stdout,
                  "doctor sees the deleted interpreter", proc.stdout)
        proc = memory(r.root, "doctor", "--fix")
        r.promise(proc.returncode == 0, "doctor --fix rewrites the shims", proc.stdout)
    finally:
        for name, text in saved.items():
            (hooks / name).write_text(text)
    r.reset()
    log = r.base / "chained.log"
    chained = hooks / "post-rewrite.pre-memrepo"
    chained.write_text(f"#!/bin/sh\necho \"$1 $(wc -l)\" >> {log}\n")
    chained.chmod(0o755)
    write("knowledge/reference/ok.md", NOTE)(r.root)
    git(r.root, "add", "-A")
    git(r.root, "commit", "-q", "-m", "memory: ok", env=r.env)
    git(r.root, "commit", "-q", "--amend", "-m", "memory: amended", env=r.env)
    chained.unlink()
    got = log.read_text().strip() if log.exists() else ""
    r.promise(got == "amend 1", "a chained post-rewrite hook gets its args and stdin", got)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="skip the push door of content "
                    "variants")
    add_record_option(ap)
    a = ap.parse_args()
    t0 = time.perf_counter()
    base = Path(tempfile.mkdtemp(prefix="memrepo-hook-routes-"))
    try:
        r = Run(base)
        for name, make, needle, message, variant in cases():
            if "allowlist" not in name:  # locally, the repo's own config is its owner's
                r.door_commit(name, make, needle.replace("{where}", "COMMIT_EDITMSG"),
                              message)
            if not (a.quick and variant):
                r.door_push(name, make, needle.replace("{where}", "commit message"), message)
        submodule(r)
        refs_and_tags(r)
        the_hooks_themselves(r)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    held = r.checked - len(r.broken)
    print(f"hook routes: {r.checked} promises checked, {held} held, {len(r.broken)} broken "
          f"({time.perf_counter() - t0:.0f} s)")
    record(__file__, {"checked": r.checked, "held": held, "broken": len(r.broken),
                      "seconds": round(time.perf_counter() - t0)}, a)
    return 1 if r.broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
