"""memory-config.yaml: every setting, its default and its type (seed 000 §9.3 + ours).

The schema below is the single source of truth: loading validates against it (unknown
keys and wrong types are errors naming the key path and line), ``memory config show``
prints the merged result, and the skeleton's memory-config.yaml is tested to match it.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepo import yamlsafe
from memrepo.errors import ConfigError
from memrepo.repo import CONFIG_FILE


@dataclass(frozen=True)
class Setting:
    default: Any
    kind: type | tuple[type, ...]
    help: str
    choices: tuple[Any, ...] | None = None


def _num(default: float, help: str) -> Setting:
    return Setting(default, (int, float), help)


SCHEMA: dict[str, dict[str, Setting]] = {
    "context_compiler": {
        "token_budget": Setting(8192, int, "target size of a compiled prompt, in tokens"),
        "identity_budget_kb": _num(17, "identity files (SOUL, USER, AGENTS, TOOLS)"),
        "memory_budget_kb": _num(3, "knowledge/memory/MEMORY.md"),
        "journal_budget_kb": _num(4, "today's and yesterday's journal"),
        "topic_budget_kb": _num(6, "activated topics and their subscriptions"),
        "projects_budget_kb": _num(1, "knowledge/projects/_active.md"),
        "history_share": _num(
            0.25, "share of what P0-P2 leave that P3 keeps free for --session history"
        ),
        "tokenizer": Setting(
            "fast",
            str,
            "token counting: fast (~3.5 chars/token, no dependency) or tiktoken",
            ("fast", "tiktoken"),
        ),
    },
    "search": {
        "bm25_weight": _num(0.7, "weight of full-text (BM25) scores in hybrid search"),
        "vector_weight": _num(0.3, "weight of vector similarity in hybrid search"),
        "embedding_model": Setting("text-embedding-3-small", str, "embedding model name"),
        "embedding_dimensions": Setting(1536, int, "embedding vector size"),
        "embedder": Setting(
            "none",
            str,
            "local embedder for vector search: none (FTS5 alone), hash, wordllama",
            ("none", "hash", "wordllama"),
        ),
        "fusion": Setting(
            "weighted",
            str,
            "how BM25 and vectors combine: weighted sum or rrf",
            ("weighted", "rrf"),
        ),
        "rrf_k": Setting(60, int, "k of reciprocal rank fusion: score = weight / (k + rank)"),
        "per_file": Setting(3, int, "most results (best chunks) one file may take in a list"),
        "recency_per_day": _num(0.01, "recency: score / (1 + days x this); 0 turns it off"),
        "date_boost": _num(
            1.0, "files dated on a day (or month) the query names: score x (1 + this)"
        ),
        "superseded_factor": _num(0.5, "score multiplier for superseded (and archived) files"),
        "record_hits": Setting(True, bool, "log search hits to raw/signals/ (not used in ranking)"),
    },
    "watchers": {
        "similarity_threshold": _num(0.15, "tier-2 similarity needed to consider a topic"),
        "gate_model": Setting("haiku", str, "model for the yes/no activation gate"),
        "gate_max_tokens": Setting(1, int, "tokens the gate may answer with"),
    },
    "lifecycle": {
        "commit_interval_minutes": Setting(30, int, "batching of knowledge commits"),
        "journal_retention_days": Setting(90, int, "journals older than this are archived"),
        "memory_line_cap": Setting(200, int, "target size of MEMORY.md in lines"),
        "extraction_trigger": Setting(
            "on_session_end", str, "when extraction runs", ("on_session_end", "hourly", "manual")
        ),
        "condensation_schedule": Setting("0 23 * * *", str, "cron: daily condensation"),
        "pruning_schedule": Setting("0 0 * * 0", str, "cron: weekly pruning"),
        "weekly_schedule": Setting("30 23 * * 0", str, "cron: weekly rollup and tag"),
        "archive_score_threshold": _num(
            0.01, "knowledge files scoring below this (recency x use) may be archived"
        ),
        "archive_min_age_days": Setting(30, int, "never archive a file changed more recently"),
        "explore_branch_days": Setting(7, int, "explore/* branches older than this are pruned"),
    },
    "git": {
        "auto_commit": Setting(True, bool, "commit knowledge changes on the interval"),
        "auto_push": Setting(True, bool, "push after committing when a remote exists"),
        "auto_tag_daily": Setting(True, bool, "tag memory/daily/DATE when something changed"),
        "commit_message_model": Setting("haiku", str, "model that writes commit messages"),
        "hook_runner": Setting(
            "pre-commit",
            str,
            "how git runs memrepo's hooks: the pre-commit framework, or direct shims whose "
            "cost does not grow with the repo (see docs/DESIGN-NOTES.md)",
            ("pre-commit", "direct"),
        ),
        "remote": Setting("origin", str, "remote that memory sync fetches from and pushes to"),
        "branch": Setting(
            "", str, "branch memory sync keeps in step with the remote (empty: the current one)"
        ),
    },
    "llm": {
        "extract_model": Setting("haiku", str, "model for extraction (cheap, per transcript)"),
        "condense_model": Setting("sonnet", str, "model for journal, weekly and monthly rewrites"),
        "timeout_seconds": _num(60, "timeout of one LLM call"),
        "max_retries": Setting(2, int, "retries of a failed LLM call (rate limits, 5xx)"),
        "max_concurrency": Setting(4, int, "parallel LLM calls (reconstruct)"),
        "max_transcript_chars": Setting(12000, int, "transcript characters sent per call"),
    },
    "validation": {
        "memory_warn_lines": Setting(180, int, "MEMORY.md: warn above this many lines"),
        "memory_error_lines": Setting(220, int, "MEMORY.md: refuse the commit above this"),
        "memory_max_kb": _num(25, "MEMORY.md: refuse the commit above this size"),
        "max_file_kb": _num(1024, "largest text file allowed outside attachments/"),
        "secrets_allowlist": Setting(
            [], list, "regexes; a flagged value matching one is a known false positive"
        ),
    },
}


def defaults() -> dict[str, dict[str, Any]]:
    return {
        sec: {k: copy.deepcopy(s.default) for k, s in keys.items()} for sec, keys in SCHEMA.items()
    }


class Config(dict):
    """The effective configuration: nested dicts, every key present."""

    def get_path(self, dotted: str) -> Any:
        section, key = dotted.split(".", 1)
        return self[section][key]


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "integer", float: "number", str: "string", bool: "true/false", list: "list"}
    if isinstance(kind, tuple):
        return "number" if float in kind else " or ".join(names[k] for k in kind)
    return names.get(kind, kind.__name__)


def validate(data: Any, text: str = "", source: str = CONFIG_FILE) -> Config:
    """Merge ``data`` over the defaults, refusing unknown keys and wrong types."""
    cfg = Config(defaults())
    if data is None:
        return cfg
    if not isinstance(data, dict):
        raise ConfigError("the config must be a mapping of sections", source, 1)

    def fail(message: str, *keypath: str) -> ConfigError:
        # the line is looked up only on failure: composing the YAML again costs ~15 ms
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
            if setting is None:
                known = ", ".join(SCHEMA[section])
                raise fail(f"unknown key '{path}' (known: {known})", section, str(key))
            problem = _value_problem(setting, value)
            if problem:
                raise fail(f"'{path}' {problem}", section, key)
            cfg[section][key] = value
    return cfg


def _value_problem(setting: Setting, value: Any) -> str | None:
    """Why ``value`` does not fit ``setting`` (type, list items, regexes, choices), or None."""
    kinds = setting.kind if isinstance(setting.kind, tuple) else (setting.kind,)
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if ok and setting.kind is list:
        ok = all(isinstance(v, str) for v in value)
    if not ok:
        of = " of strings" if setting.kind is list else ""
        return f"must be a {_type_name(setting.kind)}{of}, got {type(value).__name__} {value!r}"
    if setting.kind is list and setting.help.startswith("regexes"):
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                return f"entry {pattern!r} is not a valid regex: {exc}"
    if setting.choices and value not in setting.choices:
        return f"must be one of {', '.join(map(str, setting.choices))}, got {value!r}"
    return None


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
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text", CONFIG_FILE) from None
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
