"""The memory's remotes and what protects each: which server-side guarantees hold where.

The local hooks can be skipped (``--no-verify``, a clone without memrepo), so the rules
that make the history trustworthy (closed transcripts never change, no secret in any
commit) need a guard on the remote too. What that can be depends on the host:

- **a bare repository memrepo can reach** (a path, ``file://``, a server you run):
  memrepo's ``pre-receive`` hook, which refuses a bad push before it lands;
- **GitHub or GitLab**, where no custom pre-receive hook runs: a CI job in the memory
  repo that runs ``memory verify`` on every push and pull/merge request. It reports after
  the push; made a required check with branch protection, a bad change cannot be merged
  into the protected branch, but a direct push to an unprotected one still lands;
- **anything else** (an SSH host): nothing memrepo can install from here; the one-liner
  to run on the server is printed.

:func:`protection` says which holds for a remote (``memory remote``, ``memory doctor``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.git import git
from memrepo.hooks.install import install_server_hook, runner_of

#: Where the CI job goes in the memory repo, per host.
GITHUB_WORKFLOW = ".github/workflows/memrepo-verify.yml"
GITLAB_CI = ".gitlab-ci.yml"
#: How the CI job installs memrepo (``--install`` changes it).
DEFAULT_INSTALL = "pip install memrepo"
_GITHUB = re.compile(r"(^|[@/])github\.com[:/]")
_GITLAB = re.compile(r"(^|[@/])gitlab\.[a-z.]+[:/]")

GITHUB_TEMPLATE = """\
# memrepo: the rules the local hooks enforce, checked on the server side of GitHub.
# Make "memrepo verify" a required status check (Settings -> Branches -> branch
# protection rule -> Require status checks to pass) so that no change lands without it.
name: memrepo verify
on: [push, pull_request]
jobs:
  verify:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: {install}
      - run: memory verify
"""
GITLAB_TEMPLATE = """\
# memrepo: the rules the local hooks enforce, checked on the server side of GitLab.
# Require it: Settings -> Merge requests -> "Pipelines must succeed", and protect the
# default branch (Settings -> Repository -> Protected branches: no direct push).
memrepo-verify:
  image: python:3.12
  variables:
    GIT_DEPTH: "0"
  script:
    - {install}
    - memory verify
"""


@dataclass
class Protection:
    """What guards one remote: ``kind`` (pre-receive, github-ci, gitlab-ci, none), whether
    it is in place, and what to do."""

    remote: str
    url: str
    kind: str
    ok: bool
    detail: str


def remote_url(root: Path, name: str) -> str:
    url = git(["remote", "get-url", name], root, check=False).strip()
    if not url:
        raise MemrepoError(f"no remote named {name!r} (`memory remote add {name} URL`)")
    return url


def add(root: Path, name: str, url: str) -> str:
    """``git remote add``; what was done."""
    if name in git(["remote"], root).split():
        raise MemrepoError(f"remote {name!r} exists ({remote_url(root, name)}); "
                           f"`git remote set-url {name} URL` changes it")
    git(["remote", "add", name, url], root)
    return f"added remote {name} {url}"


def host_of(url: str) -> str:
    """``bare`` (a path memrepo can reach), ``github``, ``gitlab`` or ``other``."""
    if _GITHUB.search(url):
        return "github"
    if _GITLAB.search(url):
        return "gitlab"
    if _local_path(url) is not None:
        return "bare"
    return "other"


def _local_path(url: str) -> Path | None:
    path = url.removeprefix("file://")
    if "://" in path or re.match(r"^[^/]+@[^:]+:", path) or re.match(r"^[A-Za-z0-9.-]+:", path):
        return None
    return Path(path).expanduser()


def protect(root: Path, name: str, install: str = DEFAULT_INSTALL) -> list[str]:
    """Put in place what can guard remote ``name``; what was done and what is left to do."""
    url = remote_url(root, name)
    host = host_of(url)
    if host == "bare":
        path = _local_path(url)
        assert path is not None
        if not (path / "HEAD").is_file():
            raise MemrepoError(f"{path}: not a bare git repository")
        return [install_server_hook(path),
                "a push that breaks a rule is now refused before it lands"]
    if host in ("github", "gitlab"):
        rel, template = ((GITHUB_WORKFLOW, GITHUB_TEMPLATE) if host == "github"
                         else (GITLAB_CI, GITLAB_TEMPLATE))
        full = root / rel
        if full.exists() and host == "gitlab" and "memrepo-verify" not in full.read_text():
            raise MemrepoError(f"{rel} exists and is not memrepo's: add the memrepo-verify "
                               f"job to it by hand:\n{template.format(install=install)}")
        full.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(full, template.format(install=install), root=root)
        return [f"wrote {rel} (commit and push it: `memory commit`, `memory sync`)",
                *_required_steps(host)]
    return [f"{url}: memrepo cannot install a hook there from here; on the server run:",
            "  python3 -c 'from pathlib import Path; from memrepo.hooks.install import "
            "install_server_hook; print(install_server_hook(Path(\"/path/to/memory.git\")))'"]


def _required_steps(host: str) -> list[str]:
    if host == "github":
        return ["then make it required: Settings -> Branches -> add a protection rule for "
                "the default branch -> Require status checks -> 'memrepo verify'; "
                "until then it reports, it does not stop a push"]
    return ["then make it required: Settings -> Merge requests -> Pipelines must succeed, "
            "and protect the default branch against direct pushes"]


def protection(root: Path, name: str) -> Protection:
    """What guards remote ``name`` now."""
    url = remote_url(root, name)
    host = host_of(url)
    if host == "bare":
        path = _local_path(url)
        hook = path / "hooks" / "pre-receive" if path else None
        there = bool(hook and hook.is_file()
                     and runner_of(hook.read_text(encoding="utf-8", errors="replace")))
        return Protection(name, url, "pre-receive", there,
                          "memrepo's pre-receive hook refuses a bad push" if there else
                          "no memrepo pre-receive hook: `memory remote protect "
                          f"{name}` installs it")
    if host in ("github", "gitlab"):
        rel = GITHUB_WORKFLOW if host == "github" else GITLAB_CI
        tracked = bool(git(["ls-files", "--", rel], root).strip())
        return Protection(name, url, f"{host}-ci", tracked,
                          f"{rel} runs memory verify on every push (a report after the "
                          "push; a required check keeps it out of the protected branch)"
                          if tracked else f"nothing runs on {host}: `memory remote protect "
                          f"{name}` writes {rel}")
    return Protection(name, url, "none", False,
                      "unknown host: only the local hooks guard it (see `memory remote "
                      f"protect {name}` for the server-side hook)")
