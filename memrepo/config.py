"""memory-config.yaml: every setting, its default and its type (seed 000 §9.3 + ours).

The schema below is the single source of truth: loading validates against it (unknown
keys and wrong types are errors naming the key path and line), ``memory config show``
prints the merged result, and ``memory init`` renders the default memory-config.yaml
from it.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepo import gitcrypt, yamlsafe
from memrepo.errors import ConfigError
from memrepo.layout import CONFIG_FILE


@dataclass(frozen=True)
class Setting:
    """One setting. Numbers are checked against ``low``/``high`` (every number memrepo
    reads is a size, a count, a weight or a duration: none may be negative); ``cron``
    strings must be cron expressions (5 fields or a macro: what `memory schedule` runs)."""

    default: Any
    kind: type | tuple[type, ...]
    help: str
    choices: tuple[Any, ...] | None = None
    low: float = 0
    high: float | None = None
    above_low: bool = False  # low itself is not allowed (a timeout of 0)
    cron: bool = False
    #: a mapping setting's own check: (message, key path inside it) or None
    nested: Callable[[dict[Any, Any]], tuple[str, tuple[str, ...]] | None] | None = None
    #: the string "auto" is accepted too: the reader decides from the other settings
    auto: bool = False


def _num(default: float, help: str, **limits: Any) -> Setting:
    return Setting(default, (int, float), help, **limits)


def _int(default: int, help: str, low: int = 0) -> Setting:
    return Setting(default, int, help, low=low)


def _cron(default: str, help: str) -> Setting:
    return Setting(default, str, help, cron=True)


#: The names ``search.embedder`` accepts; ``memrepo.index.embedders.BUILDERS`` builds
#: each but ``none`` (a test checks the two agree).
EMBEDDERS = ("none", "hash", "wordllama", "minilm")

SCHEMA: dict[str, dict[str, Setting]] = {
    "context_compiler": {
        "token_budget": _int(8192, "target size of a compiled prompt, in tokens", low=1),
        "identity_budget_kb": _num(17, "identity files (SOUL, USER, AGENTS, TOOLS)"),
        "memory_budget_kb": _num(3, "knowledge/memory/MEMORY.md"),
        "journal_budget_kb": _num(4, "today's and yesterday's journal"),
        "topic_budget_kb": _num(6, "activated topics and their subscriptions"),
        "projects_budget_kb": _num(1, "knowledge/projects/_active.md"),
        "project_context_budget_kb": _num(
            2, "the context.md of the projects _active.md lists, shared"),
        "history_share": _num(
            0.25, "share of what P0-P2 leave that P3 keeps free for --session history", high=1
        ),
        "tokenizer": Setting(
            "fast",
            str,
            "token counting: fast (~3.5 chars/token, no dependency) or tiktoken",
            ("fast", "tiktoken"),
        ),
    },
    "search": {
        "bm25_weight": _num(0.5, "weight of full-text (BM25) scores in hybrid search"),
        "vector_weight": _num(0.5, "weight of vector similarity in hybrid search"),
        "embedder": Setting(
            "none",
            str,
            "local embedder for vector search: none (FTS5 alone), hash, wordllama, minilm",
            EMBEDDERS,
        ),
        "fusion": Setting(
            "weighted",
            str,
            "how BM25 and vectors combine: weighted sum or rrf",
            ("weighted", "rrf"),
        ),
        "rrf_k": _int(60, "k of reciprocal rank fusion: score = weight / (k + rank)"),
        "per_file": _int(10, "most results (best chunks) one file may take in a list", low=1),
        "min_score": _num(0, "a file scoring below this is no result; 0 keeps every match "
                          "(scores as --explain shows them)"),
        "snippet_max_chars": _int(220, "the longest snippet a search hit shows", low=20),
        "recency_per_day": _num(0.002, "recency: score / (1 + days x this); 0 turns it off"),
        "date_boost": _num(
            1.0, "files dated on a day (or month) the query names: score x (1 + this)"
        ),
        "people_boost": _num(
            1.0, "files naming a person the query names (participants, people files): "
            "score x (1 + this); a person more than 2% of all files name lifts nothing"
        ),
        "superseded_factor": _num(0.5, "score multiplier for superseded (and archived) files"),
        "reinforce_weight": _num(3.0, "signal score of each `memory reinforce` (seed 001: 3)"),
        "demote_weight": _num(1.0, "signal score taken off by each `memory demote` (seed 001: 1)"),
        "expansion_weight": Setting(
            "auto", (int, float), "weight of the query words' nearest words (a static table, "
            "no model) in BM25; 0 turns query expansion off; auto: 0.2 with an embedder, 0 "
            "with FTS5 alone (what measured best with each)", auto=True,
        ),
        "reply_vectors": Setting(
            True, bool, "embed each transcript turn twice: alone, and with the reply it got "
            "(search averages the two); false: one vector a chunk, ~2.5x less to embed "
            "(applies at the next 'memory index', which rebuilds)"
        ),
        "mask_names": Setting(
            True, bool, "embed a query with the people it names replaced by 'they' "
            "(names from participants, people files); BM25 still matches them"
        ),
        "record_hits": Setting(
            True, bool, "log search hits to .memrepo/signals/ (per clone; not ranking)"
        ),
    },
    "watchers": {
        "similarity_threshold": _num(0.15, "tier-2 similarity needed to consider a topic",
                                     high=1),
        "gate_model": Setting("haiku", str, "model for the yes/no activation gate"),
        "gate_max_tokens": _int(1, "tokens the gate may answer with", low=1),
    },
    "lifecycle": {
        "commit_interval_minutes": _int(30, "batching of knowledge commits", low=1),
        "journal_retention_days": _int(90, "journals older than this are archived"),
        "memory_line_cap": _int(200, "target size of MEMORY.md in lines", low=1),
        "extraction_trigger": Setting(
            "on_session_end", str, "when extraction runs", ("on_session_end", "hourly", "manual")
        ),
        "condensation_schedule": _cron("0 23 * * *", "cron: daily condensation"),
        "pruning_schedule": _cron("0 0 * * 0", "cron: weekly pruning"),
        "weekly_schedule": _cron("30 23 * * 0", "cron: weekly rollup and tag"),
        "archive_score_threshold": _num(
            0.01, "knowledge files scoring below this (recency x use) may be archived"
        ),
        "archive_min_age_days": _int(30, "never archive a file changed more recently"),
        "max_size_mb": _num(100, "over this many MB of knowledge files, prune also archives "
                            "the lowest-scoring (seed 001 maxSize); 0 turns it off", low=0),
        "prune_percent": _num(1, "the share of knowledge files, lowest score first, that one "
                              "prune over max_size_mb archives (seed 001)", low=0, high=100),
        "explore_branch_days": _int(7, "explore/* branches older than this are pruned"),
        "retention": Setting(
            {}, dict, "per directory, e.g. {journal: {compress_after: 365}}: archive_after "
            "(journals), compress_after (gzip archived files), keep; never a delete",
            nested=lambda v: _retention_problem(v),
        ),
    },
    "git": {
        "auto_commit": Setting(True, bool, "commit knowledge changes on the interval"),
        "auto_push": Setting(True, bool, "push after committing when a remote exists"),
        "auto_tag_daily": Setting(True, bool, "tag memory/daily/DATE when something changed"),
        "commit_message_model": Setting("haiku", str, "model that writes commit messages"),
        "hook_runner": Setting(
            "direct",
            str,
            "how git runs memrepo's hooks: direct shims whose cost does not grow with the "
            "repo, or the pre-commit framework (docs/design.md \"Hooks and their cost\")",
            ("direct", "pre-commit"),
        ),
        "remote": Setting("origin", str, "remote that memory sync fetches from and pushes to"),
        "branch": Setting(
            "", str, "branch memory sync keeps in step with the remote (empty: the current one)"
        ),
    },
    "llm": {
        "extract_model": Setting("haiku", str, "model for extraction (cheap, per transcript)"),
        "condense_model": Setting("sonnet", str, "model for journal, weekly and monthly rewrites"),
        "timeout_seconds": _num(60, "timeout of one LLM call", above_low=True),
        "max_retries": _int(2, "retries of a failed LLM call (rate limits, 5xx)"),
        "max_concurrency": _int(4, "parallel LLM calls (reconstruct)", low=1),
        "max_transcript_chars": _int(12000, "transcript characters sent per call", low=1),
    },
    "agents": {
        "llm": Setting(
            False, bool, "let the agent hooks' work (session-end extraction, the topic gate) "
            "call a model with the agent's ANTHROPIC_API_KEY: one request per session end"
        ),
        "tools_write_identity": Setting(
            False, bool, "let MCP tools write knowledge/identity/ (it opens every briefing)"
        ),
    },
    "validation": {
        "memory_warn_lines": _int(180, "MEMORY.md: warn above this many lines", low=1),
        "memory_error_lines": _int(220, "MEMORY.md: refuse the commit above this", low=1),
        "memory_max_kb": _num(25, "MEMORY.md: refuse the commit above this size",
                              above_low=True),
        "max_file_kb": _num(1024, "largest text file allowed outside attachments/",
                            above_low=True),
        "secrets_allowlist": Setting(
            [], list, "regexes; a flagged value matching one is a known false positive"
        ),
    },
    "private": {
        "paths": Setting(
            [], list, ".gitattributes patterns (knowledge/people/**) git-crypt encrypts in "
            "every remote; `memory private init` applies them (docs/private.md)",
            nested=lambda v: gitcrypt.patterns_problem(v),
        ),
    },
}


def defaults() -> dict[str, dict[str, Any]]:
    return {
        sec: {k: copy.deepcopy(s.default) for k, s in keys.items()} for sec, keys in SCHEMA.items()
    }


class Config(dict):
    """The effective configuration: nested dicts, every key present."""


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "integer", float: "number", str: "string", bool: "true/false", list: "list",
             dict: "mapping"}
    if isinstance(kind, tuple):
        return "number" if float in kind else " or ".join(names[k] for k in kind)
    return names.get(kind, kind.__name__)


#: Keys an older memory-config.yaml (or seed 000 §9.3) has that memrepo never read: the
#: model is ``search.embedder`` and its size comes with it. Accepted and ignored, so such
#: a config still loads; ``memory doctor`` names them (seed audit rows 92, "config keys").
IGNORED_KEYS: dict[str, str] = {
    "search.embedding_model": "the model is search.embedder (none, hash, wordllama, minilm)",
    "search.embedding_dimensions": "the vector size comes with search.embedder's model",
}
#: What such a key's value still has to be: a config that loads stays one that validates.
_IGNORED_SHAPES = {
    "search.embedding_model": Setting("", str, "ignored"),
    "search.embedding_dimensions": _int(1, "ignored", low=1),
}


def validate(data: Any, text: str = "", source: str = CONFIG_FILE) -> Config:
    """Merge ``data`` over the defaults, refusing unknown keys and wrong types."""
    cfg = Config(defaults())
    if data is None:
        return cfg
    if not isinstance(data, dict):
        raise ConfigError("the config must be a mapping of sections", source, 1)

    def fail(message: str, *keypath: str) -> ConfigError:
        # the line is looked up only on failure: it means composing the YAML again
        return ConfigError(message, source, yamlsafe.key_line(text, keypath))

    for section, values in data.items():
        if section not in SCHEMA:
            known = ", ".join(SCHEMA)
            raise fail(f"unknown key '{section}' (known sections: {known})", str(section))
        if values is None:
            continue
        if not isinstance(values, dict):
            raise fail(f"'{section}' must be a mapping of settings", section)
        for key, value in values.items():
            path = f"{section}.{key}"
            setting = SCHEMA[section].get(key)
            if path in IGNORED_KEYS:
                problem = _value_problem(_IGNORED_SHAPES[path], value)
                if problem:
                    raise fail(f"'{path}' {problem}", section, key)
                continue
            if setting is None:
                known = ", ".join(SCHEMA[section])
                raise fail(f"unknown key '{path}' (known: {known})", section, str(key))
            problem = _value_problem(setting, value)
            if problem:
                raise fail(f"'{path}' {problem}", section, key)
            found = setting.nested(value) if setting.nested else None
            if found:
                message, inner = found
                raise fail(f"'{'.'.join((path, *inner))}' {message}", section, key, *inner)
            cfg[section][key] = value
    _retention_agrees(data, fail)
    return cfg


# ---------------------------------------------------------------------------
# lifecycle.retention (seed 003 §10; the policy itself is memrepo.lifecycle.retention)
# ---------------------------------------------------------------------------

#: The directories a retention policy may name; ``journal`` is ``knowledge/journal``.
RETENTION_DIRS = ("journal", "knowledge", "knowledge/identity", "knowledge/memory",
                  "knowledge/journal", "knowledge/projects", "knowledge/people",
                  "knowledge/procedures", "knowledge/reference", "archive")
RETENTION_KEYS = ("archive_after", "compress_after", "keep")
#: Keys and directories refused with their reason, not as merely unknown.
_RETENTION_REFUSED = {
    "delete_after": "is not supported: memrepo never deletes a memory (DESIGN.md: nothing "
                    "lost; raw/ is immutable). Archived files stay in archive/ and in git "
                    "history; compress_after saves their space instead",
    "raw/conversations": "cannot be given: transcripts are immutable evidence (raw/ is "
                         "append-only), never archived, compressed or deleted; git "
                         "already stores them compressed",
}


def _retention_problem(value: dict[Any, Any]) -> tuple[str, tuple[str, ...]] | None:
    """Why ``lifecycle.retention`` is wrong, and where: (message, key path inside it)."""
    if "journal" in value and "knowledge/journal" in value:
        return ("and 'knowledge/journal' are the same directory: give one", ("journal",))
    for folder, policy in value.items():
        where = (str(folder),)
        if folder in _RETENTION_REFUSED or str(folder).startswith("raw"):
            return (_RETENTION_REFUSED["raw/conversations"], where)
        if folder not in RETENTION_DIRS:
            return (f"is not a directory a retention policy may name (known: "
                    f"{', '.join(RETENTION_DIRS)})", where)
        if not isinstance(policy, dict):
            return ("must be a mapping such as {compress_after: 365}", where)
        for key, days in policy.items():
            at = (*where, str(key))
            if key in _RETENTION_REFUSED:
                return (_RETENTION_REFUSED[key], at)
            if key not in RETENTION_KEYS:
                return (f"is not a retention setting (known: {', '.join(RETENTION_KEYS)})", at)
            if key == "keep":
                if not isinstance(days, bool):
                    return (f"must be true/false, got {type(days).__name__} {days!r}", at)
                continue
            if key == "archive_after" and folder not in ("journal", "knowledge/journal"):
                return ("is for journals only: knowledge files are archived by score "
                        "(archive_score_threshold, archive_min_age_days), the archive is "
                        "archived already", at)
            if days is None:
                continue  # never
            if isinstance(days, bool) or not isinstance(days, int):
                return (f"must be a whole number of days (or null: never), got "
                        f"{type(days).__name__} {days!r}", at)
            problem = _range_problem(_int(0, "days"), days)
            if problem:
                return (problem, at)
    return None


def _retention_agrees(data: dict[Any, Any], fail: Callable[..., ConfigError]) -> None:
    """The journals' archive age given twice (the older ``journal_retention_days`` and
    ``retention.journal.archive_after``) must not disagree."""
    life = data.get("lifecycle") if isinstance(data, dict) else None
    if not isinstance(life, dict) or "journal_retention_days" not in life:
        return
    retention = life.get("retention") or {}
    for folder in ("journal", "knowledge/journal"):
        given = (retention.get(folder) or {}).get("archive_after")
        if given is not None and given != life["journal_retention_days"]:
            raise fail(f"'lifecycle.retention.{folder}.archive_after' ({given}) and "
                       f"'lifecycle.journal_retention_days' ({life['journal_retention_days']})"
                       " disagree: give one of them", "lifecycle", "retention", folder,
                       "archive_after")


def _value_problem(setting: Setting, value: Any) -> str | None:
    """Why ``value`` does not fit ``setting`` (type, list items, regexes, choices), or None."""
    if setting.auto and value == "auto":
        return None
    kinds = setting.kind if isinstance(setting.kind, tuple) else (setting.kind,)
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if ok and setting.kind is list:
        ok = all(isinstance(v, str) for v in value)
    if not ok:
        of = " of strings" if setting.kind is list else ""
        auto = " or auto" if setting.auto else ""
        return (f"must be a {_type_name(setting.kind)}{of}{auto}, got {type(value).__name__} "
                f"{value!r}")
    if setting.kind is list and setting.help.startswith("regexes"):
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                return f"entry {pattern!r} is not a valid regex: {exc}"
            # the topic schema's check, imported here only, as it loads the regex package
            from memrepo.topics import regex_problem

            why = regex_problem(pattern)
            if why and "compile" not in why:
                return f"entry {pattern!r} {why}"
    if setting.choices and value not in setting.choices:
        return f"must be one of {', '.join(map(str, setting.choices))}, got {value!r}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _range_problem(setting, value)
    if setting.cron and value != setting.default:  # the defaults are known good
        return _cron_problem(value)
    return None


def _range_problem(setting: Setting, value: float) -> str | None:
    low, high = setting.low, setting.high
    if isinstance(value, float) and not math.isfinite(value):
        # .nan slips past every comparison, .inf past "at least"
        return f"must be a finite number, got {value!r}"
    if value < low or (setting.above_low and value == low):
        bound = f"above {low:g}" if setting.above_low else f"at least {low:g}"
        return f"must be {bound}, got {value!r}"
    if high is None:
        high = MAX_NUMBER
    if value > high:
        shown = repr(value) if len(repr(value)) <= 40 else f"a number of {len(str(value))} digits"
        return f"must be at most {high:g}, got {shown}"
    return None


#: The bound of a number setting without its own: every one is a size, count, weight or
#: duration, none anywhere near it; a 400-digit integer would overflow the first float().
MAX_NUMBER = 1e12


def _cron_problem(value: str) -> str | None:
    """A 5-field cron expression, or a macro such as @daily (what crontab and `memory
    schedule` run)."""
    fields = value.split()
    macro = len(fields) == 1 and fields[0].startswith("@")
    if len(fields) != 5 and not macro:
        return (f"must be a cron expression of 5 fields (minute hour day month weekday) or "
                f"a macro such as @daily, got {value!r}")
    # The topic schema's cron check; imported here only, as it loads the regex package.
    from memrepo.topics import cron_problem

    problem = cron_problem("@daily" if value.strip().lower() == "@midnight" else value.lower())
    return f"is not a valid cron expression: {problem}" if problem else None


def load_config(root: str | Path | None) -> Config:
    """The effective config of the repo at ``root`` (defaults when it has no config file)."""
    if root is None:
        return Config(defaults())
    path = Path(root) / CONFIG_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Config(defaults())
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x})", CONFIG_FILE,
                          line) from None
    text = text.removeprefix("\ufeff")
    try:
        data = yamlsafe.load(text)
    except yamlsafe.YAMLProblem as exc:
        raise ConfigError(exc.message, CONFIG_FILE, exc.line) from None
    return validate(data, text)


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, str):
        return value if re.fullmatch(r"[A-Za-z_][\w.-]*", value) else json.dumps(value)
    return json.dumps(value)


def render_default_config(overrides: dict[str, dict[str, Any]] | None = None) -> str:
    """memory-config.yaml as ``memory init`` writes it: every setting, its default (or the
    given override), its meaning."""
    overrides = overrides or {}
    out = [
        "# memory-config.yaml: every memrepo setting with its default (seed 000 §9.3).",
        "# Edit a value to change it; unknown keys and wrong types are refused.",
        "# `memory config show` prints the effective configuration.",
    ]
    for section, keys in SCHEMA.items():
        out.append("")
        out.append(f"{section}:")
        for key, s in keys.items():
            hint = s.help + (f" ({' | '.join(s.choices)})" if s.choices else "")
            value = overrides.get(section, {}).get(key, s.default)
            out.append(f"  {key}: {_yaml_scalar(value)}  # {hint}")
    return "\n".join(out) + "\n"


def set_setting(text: str, section: str, key: str, value: Any) -> str:
    """``text`` of a memory-config.yaml with one setting changed in place (comments kept)."""
    scalar = _yaml_scalar(value)
    lines = text.split("\n")
    in_section = False
    for i, line in enumerate(lines):
        if re.match(r"^\S", line):
            in_section = line.split(":", 1)[0].strip() == section
        elif in_section and re.match(rf"^\s+{re.escape(key)}\s*:", line):
            indent, rest = line.split(":", 1)
            comment = rest[rest.index("  #") :] if "  #" in rest else ""
            lines[i] = f"{indent}: {scalar}{comment}"
            return "\n".join(lines)
    for i, line in enumerate(lines):
        if line.rstrip() == f"{section}:":
            lines.insert(i + 1, f"  {key}: {scalar}")
            return "\n".join(lines)
    return text.rstrip("\n") + f"\n\n{section}:\n  {key}: {scalar}\n"
