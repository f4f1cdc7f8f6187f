"""``memory reconstruct``: replay every transcript into fresh knowledge on ``extract/NAME``.

Why a worktree: the replay must never touch main nor the working tree someone is using,
so it runs in ``.memrepo/worktrees/NAME`` (gitignored) on branch ``extract/NAME``. It
is resumable: transcripts are replayed in batches, each committed, with progress in the
worktree's ``.memrepo/reconstruct.json``; a rerun continues where it stopped. LLM answers
come from the main repo's cache, so a second reconstruct with nothing changed makes no
call at all.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.extract import extractors as X
from memrepo.extract.runner import Extraction, context, extract
from memrepo.extract.transcript import read_transcript
from memrepo.git import git

DERIVED = ("memory", "journal", "projects", "people", "procedures", "reference")
WORKTREES = ".memrepo/worktrees"
STATE = ".memrepo/reconstruct.json"
#: Expected output tokens of one extraction call (for dry-run estimates).
OUT_TOKENS = 300


@dataclass
class Result:
    branch: str
    worktree: Path
    replayed: int = 0
    resumed_from: int = 0
    edits: dict[str, int] = field(default_factory=dict)
    diffstat: str = ""
    planned_calls: int = 0
    cached_calls: int = 0
    estimated_cost: float = 0.0


def committed_transcripts(root: Path) -> list[str]:
    out = git(["ls-files", "-z", "--", "raw/conversations/"], root)
    return sorted(p for p in out.split("\0") if p.endswith(".md"))


def plan(root: Path, llm: Any, names: list[str] | None) -> Result:
    """The calls a replay would make (uncached pairs) and their estimated cost."""
    from memrepo.llm import estimate_cost, load_template

    exs = X.get(names)
    res = Result("", root)
    ex_obj = Extraction(root, llm, X.Context())
    p = load_template("extract")
    for path in committed_transcripts(root):
        t = read_transcript(root, path)
        for ex in exs:
            if ex_obj.cache.get(ex_obj.cache_key(ex, t)) is not None:
                res.cached_calls += 1
                continue
            res.planned_calls += 1
            chars = len(p.system) + len(p.user) + min(len(t.text), ex_obj.max_chars)
            res.estimated_cost += estimate_cost(llm.model_for("extract"), chars, OUT_TOKENS)
    return res


def _clear(wt: Path) -> None:
    """Remove derived knowledge (identity kept) and lay the index files down again."""
    import datetime as dt

    from memrepo import scaffold

    for d in DERIVED:
        git(["rm", "-r", "-q", "--ignore-unmatch", "--", f"knowledge/{d}"], wt)
        shutil.rmtree(wt / "knowledge" / d, ignore_errors=True)
    today = dt.date.today()
    for name, dest in scaffold.KNOWLEDGE_TEMPLATES.items():
        if not dest.startswith("knowledge/identity/"):
            atomic_write(wt / dest, scaffold.render_template(name, today))
    for d in DERIVED:
        (wt / "knowledge" / d).mkdir(parents=True, exist_ok=True)
        if not any((wt / "knowledge" / d).iterdir()):
            (wt / "knowledge" / d / ".gitkeep").write_text("")
    git(["add", "-A", "--", "knowledge"], wt)
    git(["commit", "-q", "--allow-empty", "-m",
         "extract: clear derived knowledge for reconstruction"], wt)


def reconstruct(
    root: Path,
    name: str,
    llm: Any,
    names: list[str] | None = None,
    *,
    batch: int = 200,
    progress: Callable[[int], None] | None = None,
    start: Callable[[int, int], None] | None = None,
) -> Result:
    """Replay everything on ``extract/NAME`` (resuming an interrupted run)."""
    from memrepo import condense
    from memrepo.extract.cache import ResultCache

    branch = f"extract/{name}"
    base = git(["symbolic-ref", "--short", "-q", "HEAD"], root, check=False).strip() or "HEAD"
    if base == branch:
        raise MemrepoError(f"run reconstruct from main, not from {branch}")
    wt = root / WORKTREES / name
    res = Result(branch, wt)
    state: dict[str, Any] = {}
    if (wt / STATE).exists():
        state = json.loads((wt / STATE).read_text(encoding="utf-8"))
    if not state or state.get("finished"):
        if wt.exists():
            git(["worktree", "remove", "--force", str(wt)], root)
        git(["worktree", "prune"], root)
        git(["worktree", "add", "-q", "-B", branch, str(wt), "HEAD"], root)
        _clear(wt)
        state = {"done": [], "finished": False, "base": base}
        atomic_write(wt / STATE, json.dumps(state))
    llm.cache = ResultCache(root)
    transcripts = committed_transcripts(root)
    done = set(state["done"])
    res.resumed_from = len(done)
    todo = [p for p in transcripts if p not in done]
    if start:
        start(len(transcripts), len(done))
    exs = X.get(names)
    for i in range(0, len(todo), batch):
        chunk = todo[i:i + batch]
        pre = None
        if llm.available:
            fetch = Extraction(wt, llm, context(wt), cache_root=root)
            pairs = [(ex, read_transcript(wt, p)) for p in chunk for ex in exs]
            pre = fetch.prefetch(pairs)
        report = extract(wt, chunk, llm, names, commit=True, progress=progress,
                         prefetched=pre, cache_root=root)
        for k, v in report.counts().items():
            res.edits[k] = res.edits.get(k, 0) + v
        state["done"] += chunk
        atomic_write(wt / STATE, json.dumps(state))
        res.replayed += len(chunk)
    journals = sorted((wt / "knowledge/journal").glob("*.md"))
    if journals:
        import datetime as dt

        last = dt.date.fromisoformat(journals[-1].stem)
        condense.weekly(wt, last, llm).apply(wt, f"extract: weekly condensation for {name}")
    state["finished"] = True
    atomic_write(wt / STATE, json.dumps(state))
    res.diffstat = git(["diff", "--stat", f"{state.get('base', base)}..{branch}", "--",
                        "knowledge/"], root)
    return res
