"""``memory extract``: transcripts in, knowledge edits out, one ``extract:`` commit.

Transcripts are read, never written. Each (extractor, transcript) pair is answered by
the model when one is available (cached by extractor version, model, prompt hash and
transcript hash) and by the heuristics otherwise — or when the model's answer is
malformed twice, which is said. Edits are applied in chronological order of the
transcripts so that later facts supersede earlier ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import clock
from memrepo.atomic import atomic_write
from memrepo.commit import write
from memrepo.config import load_config
from memrepo.documents import parse_date
from memrepo.errors import MemrepoError
from memrepo.layout import MEMORY_FILE, STATE_DIR, TRANSCRIPT_ROOT, is_transcript
from memrepo.lifecycle.cap import enforce_cap
from memrepo.lifecycle.extract import extractors as X
from memrepo.lifecycle.extract.apply import Edit, Workspace, llm_decider
from memrepo.llm import LLM, ResultCache, cache_key, template_hash
from memrepo.secrets import redact
from memrepo.transcript.read import Transcript, read_transcript

STATE_FILE = f"{STATE_DIR}/extract-state.json"
PROMPT = "extract"
#: The template of one request for all extractors (an agent session end's extraction).
ALL_PROMPT = "extract_all"


@dataclass
class Report:
    transcripts: list[str] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    commit: str | None = None
    offline_pairs: int = 0
    llm_pairs: int = 0
    #: ``path:line: reason`` of each transcript that could not be read (skipped)
    bad: list[str] = field(default_factory=list)
    #: transcripts still open (skipped: extracted once the session ends)
    open: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("ADD", "UPDATE", "SUPERSEDE", "NONE"), 0)
        for e in self.edits:
            out[e.action] += 1
        return out


def all_transcripts(root: Path) -> list[str]:
    """Every transcript under raw/conversations/, oldest first (paths sort by time)."""
    base = root / TRANSCRIPT_ROOT
    if not base.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in base.rglob("*.md"))


def select(root: Path, paths: Sequence[str] = (), since: str | None = None,
           pending_only: bool = True) -> list[str]:
    """The transcripts to extract: those given, those since a date, or those not done yet."""
    if paths:
        out = []
        for p in paths:
            full = (Path.cwd() / p).resolve() if not Path(p).is_absolute() else Path(p)
            rel = full.relative_to(root.resolve()).as_posix() if full.is_relative_to(
                root.resolve()) else p
            if not is_transcript(rel) or not (root / rel).is_file():
                raise MemrepoError(f"{p}: not a transcript under {TRANSCRIPT_ROOT}")
            out.append(rel)
        return sorted(set(out))
    found = all_transcripts(root)
    if since:
        day = parse_date(since)
        if day is None:
            raise MemrepoError(f"--since {since!r}: expected a date (YYYY-MM-DD)")
        found = [p for p in found if p[len(TRANSCRIPT_ROOT):][:10].replace("/", "-")
                 >= day.isoformat()]
        return found
    if pending_only:
        done = load_state(root)
        found = [p for p in found if p not in done]
    return found


def load_state(root: Path) -> dict[str, Any]:
    try:
        return json.loads((root / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def save_state(root: Path, transcripts: dict[str, str]) -> None:
    state = load_state(root)
    state.update(transcripts)
    atomic_write(root / STATE_FILE, json.dumps(state, indent=0, sort_keys=True), root=root)


def context(root: Path) -> X.Context:
    base = root / "knowledge/projects"
    projects = {p.name for p in base.iterdir() if p.is_dir()} if base.is_dir() else set()
    ctx = X.Context(projects)
    people = root / "knowledge/people"
    for p in sorted(people.glob("*.md")) if people.is_dir() else []:
        if not p.name.startswith("_"):
            ctx.learn(p.stem.replace("-", " ").title())
    return ctx


def _closed(t: Transcript) -> bool:
    return t.meta.get("ended") is not None


class Extraction:
    """Items for (extractor, transcript) pairs: the model's (cached) or the heuristics'."""

    def __init__(self, root: Path, llm: Any, ctx: X.Context, max_chars: int = 12000,
                 cache_root: Path | None = None) -> None:
        self.root, self.llm, self.ctx = root, llm, ctx
        self.cache = ResultCache(cache_root or root)
        self.max_chars = max_chars
        self.prompt_hash = template_hash(PROMPT)
        self.offline_pairs = 0
        self.llm_pairs = 0

    def cache_key(self, ex: X.Extractor, t: Transcript) -> str:
        return cache_key(ex.name, ex.version, self.llm.model_for("extract"), self.prompt_hash,
                   t.content_hash)

    def llm_data(self, ex: X.Extractor, t: Transcript) -> dict[str, Any] | None:
        """The model's answer for a pair (from the cache when possible), or None."""
        if not self.llm.available:
            return None
        k = self.cache_key(ex, t)
        data = self.cache.get(k)
        if data is not None:
            self.llm.usage.note_cached()
            return data
        body = redact(t.text)[0][: self.max_chars]
        data = self.llm.complete_json("extract", PROMPT, X.ITEM_SCHEMA, max_tokens=1200,
                                      extractor=ex.name, guidance=ex.guidance,
                                      path=t.path, date=t.date, transcript=body)
        if data is not None:
            self.cache.put(k, data)
        return data

    def llm_all(self, exs: list[X.Extractor], t: Transcript) -> dict[str, Any] | None:
        """One request for every extractor of a transcript (the model's answer, from the
        cache when possible), or None: an agent's session end costs one request, not one
        per extractor, and no retry (the offline path takes over)."""
        if not self.llm.available:
            return None
        k = cache_key("all", *(ex.id for ex in exs), self.llm.model_for("extract"),
                      template_hash(ALL_PROMPT), t.content_hash)
        data = self.cache.get(k)
        if data is not None:
            self.llm.usage.note_cached()
            return data
        item_list = X.ITEM_SCHEMA["properties"]["items"]
        schema = {"type": "object", "properties": {ex.name: item_list for ex in exs}}
        data = self.llm.complete_json(
            "extract", ALL_PROMPT, schema, max_tokens=3000, retry=False, path=t.path,
            date=t.date, transcript=redact(t.text)[0][: self.max_chars],
            extractors="\n".join(f"- {ex.name}: {ex.guidance}" for ex in exs))
        if data is not None:
            self.cache.put(k, data)
        return data

    def items(self, ex: X.Extractor, t: Transcript,
              data: dict[str, Any] | None = None, ask: bool = True) -> list[X.Item]:
        """The items of a pair: from ``data`` (the model's), else asked for (``ask``), else
        the heuristics'."""
        data = data if data is not None or not ask else self.llm_data(ex, t)
        if data is not None:
            self.llm_pairs += 1
            return ex.from_llm(t, self.ctx, data)
        self.offline_pairs += 1
        return ex.offline(t, self.ctx)

    def prefetch(self, pairs: list[tuple[X.Extractor, Transcript]],
                 progress: Callable[[int], None] | None = None) -> dict[tuple[str, str], Any]:
        """Ask the model for many pairs in parallel, within the concurrency limit.

        One call per transcript goes first, and its other extractors follow once it has
        answered: the first call writes the prompt-cache entry (instructions + transcript)
        that the others then read, instead of all of them paying for a cache write at once.
        """
        out: dict[tuple[str, str], Any] = {}
        if not self.llm.available:
            return out
        groups: dict[str, list[tuple[X.Extractor, Transcript]]] = {}
        for ex, t in pairs:
            groups.setdefault(t.path, []).append((ex, t))
        queue = list(groups.values())
        limit = self.llm.concurrency
        with ThreadPoolExecutor(max_workers=limit) as pool:
            running: dict[Future[Any], tuple[tuple[str, str], list[Any]]] = {}

            def submit(ex: X.Extractor, t: Transcript, followers: list[Any]) -> None:
                running[pool.submit(self.llm_data, ex, t)] = ((ex.name, t.path), followers)

            while queue or running:
                while queue and len(running) < limit:
                    lead, *followers = queue.pop(0)
                    submit(*lead, followers)
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for f in finished:
                    k, followers = running.pop(f)
                    out[k] = f.result()
                    for ex, t in followers:
                        submit(ex, t, [])
                    if progress:
                        progress(1)
        return out


def extract(
    root: Path,
    paths: Sequence[str],
    llm: Any,
    extractor_names: list[str] | None = None,
    *,
    commit: bool = True,
    workspace: Workspace | None = None,
    progress: Callable[[int], None] | None = None,
    prefetched: dict[tuple[str, str], Any] | None = None,
    cache_root: Path | None = None,
    one_request: bool = False,
) -> Report:
    """Run the extractors over ``paths`` (chronologically), write, and commit.

    ``one_request``: at most one model request per transcript (:meth:`Extraction.llm_all`),
    reconciled and capped by the heuristics: what an agent's session end may spend.
    """
    report = Report()
    exs = X.get(extractor_names)
    ctx = context(root)
    cfg_chars = int(load_config(root).get("llm", {}).get("max_transcript_chars", 12000))
    with_llm = Extraction(root, llm, ctx, cfg_chars, cache_root)
    ws = workspace or Workspace(root)
    decider = llm_decider(llm, with_llm.cache) if llm.available and not one_request else None
    done: dict[str, str] = {}
    for path in sorted(paths):
        try:
            t = read_transcript(root, path)
        except MemrepoError as exc:  # reported and skipped: one bad file blocks nothing
            report.bad.append(str(exc))
            continue
        if not _closed(t):
            report.open.append(path)  # an open session is extracted once it ends
            continue
        items: list[X.Item] = []
        bundle = with_llm.llm_all(exs, t) if one_request else None
        for ex in exs:
            data = prefetched.get((ex.name, path)) if prefetched else None
            if bundle is not None:
                data = {"items": bundle.get(ex.name) or []}
            got = with_llm.items(ex, t, data, ask=not one_request)
            items += got
            if ex.name == "decisions":
                ctx.projects |= {it.path.split("/")[2] for it in got
                                 if it.path.startswith("knowledge/projects/")}
        # one apply per transcript: its reconcile calls (one per file section) run in
        # parallel; transcripts stay sequential, each weighed against what the last wrote
        report.edits += ws.apply(items, decider, parallel=llm.concurrency if decider else 1)
        report.transcripts.append(path)
        done[path] = t.content_hash
        if progress:
            progress(1)
    report.offline_pairs, report.llm_pairs = with_llm.offline_pairs, with_llm.llm_pairs
    if workspace is None:
        report.written = finish(root, ws, LLM(llm.models, offline=True) if one_request else llm)
        if commit and report.written:
            report.commit = commit_extract(root, report)
        save_state(root, done)
    return report


def finish(root: Path, ws: Workspace, llm: Any) -> list[str]:
    """Write the workspace, then bring MEMORY.md back under its cap if it went over."""
    written = ws.write()
    if MEMORY_FILE in written:
        extra = enforce_cap(root, llm)
        written = sorted(set(written) | set(extra))
    return written


def commit_extract(root: Path, report: Report, title: str | None = None) -> str | None:
    """``extract: …`` with what changed in the body and the transcripts as trailers."""
    c = report.counts()
    summary = title or (f"extract: {c['ADD']} added, {c['UPDATE']} updated, "
                        f"{c['SUPERSEDE']} superseded from {len(report.transcripts)} "
                        f"transcript{'s' if len(report.transcripts) != 1 else ''}")
    body = [f"- {p}" for p in report.written[:40]]
    if len(report.written) > 40:
        body.append(f"- … and {len(report.written) - 40} more files")
    trailers = [f"Session: {p}" for p in report.transcripts[:200]]
    message = summary + "\n\n" + "\n".join(body) + "\n\n" + "\n".join(trailers) + "\n"
    return write.commit_paths(root, report.written, message)


def today() -> str:
    return clock.today().isoformat()
