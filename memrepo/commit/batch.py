"""``memory commit``: batch knowledge edits into one commit with a message drawn from the diff.

Why: knowledge changes accumulate during work and are committed in batches (seed 000 §3.2),
so this must be safe from cron every 30 minutes — nothing to commit is exit 0 and no
commit. It stages only what belongs in history: ``knowledge/``, ``topics/``, ``archive/``,
append-only event logs under ``raw/`` and transcripts that are closed; never an open
transcript, never ``scratch/``. The message is deterministic (files, sections, bullets
added and removed) unless an Anthropic key is configured, in which case a cheap model
writes it from the (redacted) diff; any LLM failure falls back and says so on stderr.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import documents, gitcrypt
from memrepo.commit import trees
from memrepo.commit.inline import NothingToCommit
from memrepo.commit.sync import sync
from memrepo.commit.write import (
    commit_lock,
    commit_prepared,
    commit_staged,
    prepare_trees,
    route,
)
from memrepo.config import load_config
from memrepo.errors import GitError, MemrepoError
from memrepo.git import (
    EMPTY_TREE,
    StagedRow,
    git,
    git_dir,
    head,
    plain_path,
    read_blobs,
    retry_locked,
    staged_blobs,
)
from memrepo.layout import SESSIONS_DIR
from memrepo.llm import LLM, Usage
from memrepo.secrets import redact

#: Trees whose changes a batch commit takes.
SCOPE = ("knowledge/", "topics/", "archive/", "raw/")
TYPES = ("conversation", "memory", "identity", "maintenance", "explore", "extract")
SUMMARY_CHARS = 72
#: How much of the diff the model sees (seed 000 §3.2 uses 4000 characters).
LLM_DIFF_CHARS = 4000


# ---------------------------------------------------------------------------
# What changed
# ---------------------------------------------------------------------------


@dataclass
class Change:
    status: str  # A, M, D, R
    path: str
    old_path: str | None = None
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)

    @property
    def bullets_added(self) -> list[str]:
        return [b for b in (_bullet(x) for x in self.added) if b]

    @property
    def bullets_removed(self) -> list[str]:
        return [b for b in (_bullet(x) for x in self.removed) if b]


def _bullet(line: str) -> str | None:
    m = re.match(r"^\s*(?:[-*+]|\d+[.)])\s+(.*\S)", line)
    return m[1] if m else None


def candidates(root: Path) -> tuple[list[str], list[str]]:
    """(paths to stage, paths left out with why) among the working tree's changes."""
    # No pathspec and untracked directories shown as ``dir/``: that is what lets git use
    # its untracked cache; new directories in scope are listed afterwards, each on its own.
    # No optional locks: status then does not rewrite the whole index to save refreshed
    # stat data, and a cron run never holds index.lock while a person works
    # (bench/perf/bench_capture.py times ``memory commit`` in a 100K-file repo).
    out = git(
        ["--no-optional-locks", "-c", "core.untrackedCache=true", "status", "--porcelain=v1",
         "-z", "--no-renames"],
        root,
    )
    entries = [(e[:2], e[3:]) for e in out.split("\0") if len(e) >= 4]
    new_dirs = [p for xy, p in entries if xy == "??" and p.endswith("/") and p.startswith(SCOPE)]
    if new_dirs:
        listed = git(["ls-files", "-z", "-o", "--exclude-standard", "--", *new_dirs], root)
        entries += [("??", p) for p in listed.split("\0") if p]
    take: list[str] = []
    skipped: list[str] = []
    closing: set[str] | None = None
    for xy, path in entries:
        if path.endswith("/"):
            continue
        if not path.startswith(SCOPE) or Path(path).name.endswith(".tmp"):
            continue
        if path.startswith("raw/conversations/") and path.endswith(".md"):
            closing = _closing_transcripts(root) if closing is None else closing
            why = "closing: its 'capture end' commits it" if path in closing else None
            why = why or _transcript_excluded(root, path, xy)
            if why:
                skipped.append(f"{path} ({why})")
                continue
        take.append(path)
    return take, skipped


def _addable(root: Path, paths: Sequence[str]) -> list[str]:
    """Paths ``git add`` accepts: on disk, or still in the index (a staged deletion is not)."""
    gone = [p for p in paths if not (root / p).exists()]
    if not gone:
        return list(paths)
    known = set(git(["ls-files", "-z", "--", *gone], root).split("\0"))
    return [p for p in paths if p not in gone or p in known]


def _closing_transcripts(root: Path) -> set[str]:
    """Transcripts a running (or killed) ``capture end`` is closing: its session's state
    file, ``.memrepo/sessions/<id>.json``, says ``"phase": "closing"``. That ``end``
    commits them (a restarted one finishes the job); a batch commit that took one first
    raced it (issue #14)."""
    out: set[str] = set()
    for f in (root / SESSIONS_DIR).glob("*.json"):
        try:
            state = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(state, dict) and state.get("phase") == "closing":
            out |= {p for p in (state.get("closing_path"), state.get("path"))
                    if isinstance(p, str)}
    return out


def _transcript_excluded(root: Path, path: str, xy: str) -> str | None:
    """Why a changed transcript is not committed by a batch (None: it is closed, take it)."""
    if "D" in xy:
        return "deleted: transcripts are never deleted; restore it"
    try:
        doc = documents.read_document(root / path, path)
    except Exception:
        return "unreadable"
    if doc.meta.get("ended") is None:
        return "open: committed when the session ends"
    return None


def _stat(root: Path, paths: Sequence[str]) -> dict[str, trees.FileState | None]:
    return {p: trees.file_state(root / p) for p in paths}


def staged_changes(
    root: Path,
    paths: Sequence[str],
    env: dict[str, str] | None = None,
    rows: list[StagedRow] | None = None,
    against: list[str] | None = None,
) -> list[Change]:
    """The staged diff of ``paths`` against HEAD, per file: lines added/removed, sections.

    ``rows``: :func:`memrepo.git.staged_blobs` of the same index, when the caller has it;
    ``against``: the two trees to compare instead (HEAD's and one not in the index yet).
    """
    if not paths:
        return []
    wanted = set(paths)
    changes: dict[str, Change] = {}
    shas: dict[str, str] = {}
    for st, path, new, sha in staged_blobs(root, env) if rows is None else rows:
        if st in ("R", "C") and new is not None and (new in wanted or path in wanted):
            changes[new] = Change("R", new, path)
            shas[new] = sha
        elif path in wanted:
            changes[path] = Change(st, path)
            shas[path] = sha
    diff = git(["diff", *_diff_sides(root, against), "-M", "-U0", "--no-color", "--no-ext-diff",
                "--", *paths], root, env=env)
    current: Change | None = None
    new_line = 0
    hunks: dict[str, list[int]] = {}
    old_name: str | None = None
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            current, old_name = None, None
        elif line.startswith("--- ") and current is None:
            old_name = line[6:] if line.startswith("--- a/") else None
        elif line.startswith("+++ ") and current is None:
            name = line[6:] if line.startswith("+++ b/") else old_name
            current = changes.get(name) if name else None
        elif line.startswith("@@"):
            m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", line)
            new_line = int(m[1]) if m else 0
        elif current is not None and line.startswith("+"):
            current.added.append(line[1:])
            hunks.setdefault(current.path, []).append(new_line)
            new_line += 1
        elif current is not None and line.startswith("-"):
            current.removed.append(line[1:])
            hunks.setdefault(current.path, []).append(max(new_line, 1))
    _sections(root, changes, hunks, shas)
    return list(changes.values())


def _diff_sides(root: Path, against: list[str] | None) -> list[str]:
    """What ``git diff`` compares: the index with HEAD, or the two trees given."""
    return against or ["--cached", head(root) or EMPTY_TREE]


def _sections(
    root: Path, changes: dict[str, Change], hunks: dict[str, list[int]], shas: dict[str, str]
) -> None:
    """The markdown headings the changed lines sit under (from the staged blob)."""
    wanted = [p for p in hunks if p in changes and changes[p].status != "D" and p in shas]
    blobs = read_blobs(root, [shas[p] for p in wanted])  # by sha: no index to load
    blobs = gitcrypt.reveal_all(root, blobs)  # a git-crypt blob through this clone's key
    for p in wanted:
        data = blobs.get(shas[p])
        if not data or gitcrypt.is_ciphertext(data):
            continue
        lines = data.decode("utf-8", "replace").split("\n")
        headings: list[tuple[int, str]] = []
        in_fm = bool(lines and lines[0].strip() == "---")
        for n, line in enumerate(lines, start=1):
            if in_fm:
                if n > 1 and line.strip() == "---":
                    in_fm = False
                continue
            m = re.match(r"^#{1,4}\s+(.*\S)", line)
            if m:
                headings.append((n, m[1]))
        found: list[str] = []
        for n in hunks[p]:
            title = None
            for hn, text in headings:
                if hn <= n:
                    title = text
                else:
                    break
            if title and title not in found:
                found.append(title)
        changes[p].sections = found


# ---------------------------------------------------------------------------
# Type and messages
# ---------------------------------------------------------------------------


def current_branch(root: Path) -> str | None:
    try:
        return git(["symbolic-ref", "--short", "-q", "HEAD"], root).strip() or None
    except GitError:
        return None


def pick_type(changes: Sequence[Change], branch: str | None) -> str:
    """The commit type of seed 000 §3.2 from the branch and what changed."""
    if branch and branch.startswith("explore/"):
        return "explore"
    if branch and branch.startswith("extract/"):
        return "extract"
    paths = [c.path for c in changes]
    if all(p.startswith(("raw/conversations/", "attachments/")) for p in paths):
        return "conversation"
    if all(p.startswith("knowledge/identity/") for p in paths):
        return "identity"
    if all(c.status == "D" or c.status == "R" or c.path.startswith("archive/") for c in changes):
        return "maintenance"
    return "memory"


def label(path: str) -> str:
    """A short human name for a file in a summary line."""
    p = path
    for prefix in ("archive/", "knowledge/"):
        if p.startswith(prefix):
            p = p[len(prefix) :]
    stem = p[:-3] if p.endswith(".md") else p
    parts = stem.split("/")
    if stem == "memory/MEMORY":
        return "core memory"
    if parts[0] == "identity":
        return parts[-1]
    if parts[0] == "journal":
        return f"journal {parts[-1]}"
    if parts[0] == "projects" and len(parts) > 2:
        return f"{parts[1]} {parts[-1]}"
    if parts[0] == "people":
        return parts[-1].replace("_", " ")
    if parts[0] == "topics":
        return f"topic {parts[-1]}"
    if parts[0] == "raw" and len(parts) > 1 and parts[1] == "conversations":
        return "transcript " + re.sub(r"^\d{4}-", "", parts[-1])
    return parts[-1]


_VERBS = {"A": "add", "M": "update", "D": "remove", "R": "move"}


def deterministic_message(
    changes: Sequence[Change], ctype: str, sessions: Sequence[str] = ()
) -> str:
    """``<type>: <summary>`` + a body listing files, sections and bullets, + trailers."""
    verbs = {_VERBS.get(c.status, "update") for c in changes}
    verb = verbs.pop() if len(verbs) == 1 else "update"
    plus = sum(len(c.bullets_added) for c in changes)
    minus = sum(len(c.bullets_removed) for c in changes)
    counts = f" (+{plus}/-{minus} bullets)" if plus or minus else ""
    names = [label(c.path) for c in changes]
    summary = f"{ctype}: {verb} " + ", ".join(names)
    if len(summary) + len(counts) > SUMMARY_CHARS or len(names) > 3:
        areas = list(dict.fromkeys(_area(c.path) for c in changes))
        summary = f"{ctype}: {verb} {len(changes)} files in " + ", ".join(areas)
        if len(summary) + len(counts) > SUMMARY_CHARS:
            summary = f"{ctype}: {verb} {len(changes)} files"
    summary = _cut(summary + counts, SUMMARY_CHARS)
    body: list[str] = []
    for c in changes[:30]:
        what = {"A": "added", "M": "modified", "D": "deleted", "R": f"moved from {c.old_path}"}
        bits = [what.get(c.status, c.status)]
        if c.sections:
            bits.append("sections: " + ", ".join(_cut(s, 40) for s in c.sections[:4]))
        stats = []
        if c.bullets_added:
            stats.append(f"+{len(c.bullets_added)} bullets")
        if c.bullets_removed:
            stats.append(f"-{len(c.bullets_removed)} bullets")
        line = f"- {c.path} ({'; '.join(bits)})" + (": " + ", ".join(stats) if stats else "")
        body.append(line)
        for b in c.bullets_added[:3]:
            body.append(f"  + {_cut(b, 90)}")
        for b in c.bullets_removed[:2]:
            body.append(f"  - {_cut(b, 90)}")
    if len(changes) > 30:
        body.append(f"- … and {len(changes) - 30} more files")
    return _assemble(summary, "\n".join(body), sessions)


def _area(path: str) -> str:
    parts = path.split("/")
    if parts[0] in ("knowledge", "archive") and len(parts) > 2:
        return parts[1] if parts[0] == "knowledge" else f"archive/{parts[1]}"
    return parts[0]


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _assemble(summary: str, body: str, sessions: Sequence[str]) -> str:
    out = summary.strip() + "\n"
    if body.strip():
        out += "\n" + body.strip() + "\n"
    if sessions:
        out += "\n" + "".join(f"Session: {s}\n" for s in sessions)
    return out


# --- the LLM path ---------------------------------------------------------------------


def prompt_vars(diff: str, ctype: str, files: Sequence[str], fallback: str) -> dict[str, str]:
    """The seed 000 §3.2 prompt's variables: the diff redacted and truncated."""
    clean = redact(diff)[0]
    if len(clean) > LLM_DIFF_CHARS:
        clean = clean[:LLM_DIFF_CHARS] + "\n[… diff truncated]"
    return {
        "type": ctype,
        "types": ", ".join(TYPES),
        "files": "\n".join(f"- {f}" for f in files),
        "summary": fallback.split("\n", 1)[0],
        "diff": clean,
    }


def llm_message(llm: Any, variables: dict[str, str], ctype: str, sessions: Sequence[str]) -> str:
    """Ask the model for ``<type>: <summary>`` and a short body; raise ValueError on nonsense."""
    text = llm.complete("commit_message", "commit_message", max_tokens=200, **variables)
    text = re.sub(r"^```\w*\n|\n```$", "", text).strip()
    if not text:
        raise ValueError("the model returned no text")
    first, _, rest = text.partition("\n")
    m = re.match(r"^\s*(?:(\w+)\s*:\s*)?(.+)$", first)
    if not m or not m[2].strip():
        raise ValueError("the model's first line is not '<type>: <summary>'")
    # The type comes from what changed (deterministic), never from the model.
    summary = _cut(f"{ctype}: {m[2].strip()}", SUMMARY_CHARS)
    body = "\n".join(
        line for line in rest.strip().split("\n") if not line.lower().startswith("session:")
    )
    return _assemble(summary, body, sessions)


# ---------------------------------------------------------------------------
# The batch commit
# ---------------------------------------------------------------------------


@dataclass
class Result:
    committed: bool
    commit: str | None
    type: str | None
    message: str
    files: list[str]
    skipped: list[str]
    llm: bool = False
    llm_error: str | None = None
    pushed: str | None = None
    #: the token and cost line of the LLM message (``Usage.summary``), when one was asked
    llm_usage: str | None = None


def _sessions(changes: Sequence[Change]) -> list[str]:
    return [c.path for c in changes if c.path.startswith("raw/conversations/") and c.status == "A"]


def _with_attachments(root: Path, take: list[str]) -> list[str]:
    """Attachments referenced by the closed transcripts being committed come along."""
    extra: list[str] = []
    for p in take:
        if p.startswith("raw/conversations/") and p.endswith(".md"):
            try:
                text = (root / p).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for m in re.finditer(r"^> \[attachment:(attachments/[^\]]+)\]", text, re.M):
                if plain_path(m[1]) and (root / m[1]).is_file():
                    extra.append(m[1])
    if not extra:
        return take
    new = git(["ls-files", "-z", "--others", "--modified", "--exclude-standard", "--", *extra],
              root)
    return [*take, *(p for p in new.split("\0") if p)]


def _message(
    root: Path,
    changes: list[Change],
    ctype: str,
    use_llm: bool | None,
    client: Any,
    diff_env: dict[str, str] | None,
    against: list[str] | None = None,
) -> tuple[str, bool, str | None, str | None]:
    """(message, written by the LLM, why the LLM was not used when it should have been,
    the LLM's token and cost line when it was asked)."""
    sessions = _sessions(changes)
    fallback = deterministic_message(changes, ctype, sessions)
    want = use_llm if use_llm is not None else bool(os.environ.get("ANTHROPIC_API_KEY"))
    if not want and client is None:
        return fallback, False, None, None
    usage = Usage()
    try:
        llm = LLM.from_config(load_config(root), client=client, offline=False)
        llm.usage = usage
        diff = git(["diff", *_diff_sides(root, against), "-M", "--no-color", "--no-ext-diff",
                    "--stat", "-p", "--", *[c.path for c in changes],
                    *[c.old_path for c in changes if c.old_path]], root, env=diff_env)
        variables = prompt_vars(diff, ctype, [c.path for c in changes], fallback)
        return llm_message(llm, variables, ctype, sessions), True, None, usage.summary()
    except Exception as exc:  # any LLM failure: the deterministic message, said on stderr
        reason = f"{type(exc).__name__}: {_cut(str(exc), 160)}"
        print(f"memory commit: LLM commit message failed ({reason}); "
              "used the deterministic message", file=sys.stderr)
        usage.note_fallback(f"commit_message: {reason}")
        return fallback, False, reason, usage.summary()


def run(
    root: Path,
    *,
    dry_run: bool = False,
    use_llm: bool | None = None,
    client: Any = None,
    push: bool | None = None,
) -> Result:
    """Stage the batch, write the message, commit (or show it with ``dry_run``).

    Under memrepo's commit lock from choosing the files to the commit, so two runs (or a
    run and ``capture end``) never stage over each other; a tree that another writer
    committed first is "nothing to commit", exit 0, safe from cron (issue #14)."""
    if dry_run:
        return _run(root, True, use_llm, client, push)
    with commit_lock(root):
        return _run(root, False, use_llm, client, push)


def _run(
    root: Path, dry_run: bool, use_llm: bool | None, client: Any, push: bool | None
) -> Result:
    take, skipped = candidates(root)
    take = _with_attachments(root, take)
    if not take:
        return Result(False, None, None, "nothing to commit", [], skipped)
    if dry_run:
        return _dry_run(root, take, skipped, use_llm, client)
    how = route(root)
    prepared = prepare_trees(root, take, how)
    if prepared is not None:  # the trees are written; the index is set when it commits
        moving = prepared.moving
        rows, against = prepared.rows, [prepared.base_tree, prepared.tree]
    else:
        before = _stat(root, take)
        add = _addable(root, take)
        if add:
            retry_locked(lambda: git(["add", "-A", "--", *add], root))
        after = _stat(root, take)
        moving = [p for p in take if before[p] != after[p]]
        if moving:
            retry_locked(lambda: git(["reset", "-q", "--", *moving], root, check=False))
        rows, against = staged_blobs(root), None
    if moving:  # written while we staged: leave it for the next run, never half a file
        skipped += [f"{p} (changed while staging; next run)" for p in moving]
        take = [p for p in take if p not in moving]
    changes = staged_changes(root, take, rows=rows, against=against)
    if not changes:
        if prepared is not None:  # the index takes what is on disk, as `git add` would
            retry_locked(lambda: trees.update_index(root, prepared))
        return Result(False, None, None, "nothing to commit", [], skipped)
    ctype = pick_type(changes, current_branch(root))
    message, by_llm, llm_error, usage = _message(root, changes, ctype, use_llm, client, None,
                                                 against)
    try:
        if prepared is not None:
            commit_prepared(root, take, message, prepared)
        else:
            paths = list(dict.fromkeys([*take, *(c.old_path for c in changes if c.old_path)]))
            commit_staged(root, paths, message, rows, how)
    except NothingToCommit:  # a commit beside this one (not memrepo's) took the same
        return Result(False, None, None, "nothing to commit", [], skipped)
    result = Result(True, head(root), ctype, message, [c.path for c in changes], skipped,
                    by_llm, llm_error, llm_usage=usage)
    result.pushed = _maybe_push(root, push)
    return result


def _dry_run(
    root: Path, take: list[str], skipped: list[str], use_llm: bool | None, client: Any
) -> Result:
    """Stage into a throw-away copy of the index, so nothing real changes."""
    real = git_dir(root) / "index"
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        if real.exists():
            shutil.copy2(real, index)  # its mtime too: see memrepo.commit.person.land
        env = {"GIT_INDEX_FILE": str(index)}
        add = _addable(root, take)
        if add:
            git(["add", "-A", "--", *add], root, env=env)
        changes = staged_changes(root, take, env=env)
        if not changes:
            return Result(False, None, None, "nothing to commit", [], skipped)
        ctype = pick_type(changes, current_branch(root))
        message, by_llm, err, usage = _message(root, changes, ctype, use_llm, client, env)
    return Result(False, None, ctype, message, [c.path for c in changes], skipped, by_llm, err,
                  llm_usage=usage)


def _maybe_push(root: Path, push: bool | None) -> str | None:
    """Push after committing when git.auto_push is on and the remote exists; never fails."""
    cfg = load_config(root)["git"]
    if push is False or (push is None and not cfg["auto_push"]):
        return None
    remote = cfg.get("remote") or "origin"
    remotes = git(["remote"], root).split()
    if remote not in remotes:
        return None
    try:
        return sync(root).summary
    except MemrepoError as exc:
        print(f"memory commit: committed, but sync failed: {exc}", file=sys.stderr)
        return f"sync failed: {exc}"
