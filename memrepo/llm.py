"""The one LLM client of memrepo: models per task, prompt templates, JSON, caching, costs.

Why one module: every step that may use a model (extraction, condensation, the topic gate,
commit messages) needs the same things — a model chosen per task from the config, prompt
templates from ``templates/prompts/``, answers validated before anything is written, the
long shared instructions marked for prompt caching, timeouts and retries, and a token and
cost account printed at the end of a run. Offline (no ``ANTHROPIC_API_KEY``,
``MEMREPO_OFFLINE`` set, ``--offline``, or in an agent's hook without ``agents.llm`` or
``MEMREPO_AGENT_LLM=1``) nothing is called and callers take their deterministic path.

Templates: ``templates/prompts/NAME.md``; the text above a line ``<<<INPUT>>>`` is the
system prompt (the instructions), the text below it is the user message. A line
``<<<CACHE>>>`` in the user message ends its *shared* part: what several calls of a run
send alike (the transcript the six extractors read), put before what differs per call
(which extractor). All are ``string.Template`` texts (``$var``).

Prompt caching: the cached prefix is the system prompt plus the shared part, marked with
``cache_control`` only when it is plausibly above the model's minimum cacheable length
(``MIN_CACHE_TOKENS``; below it the API caches nothing, and a prompt that is never
reused would only pay the 1.25x cache write). The instructions alone (~350 tokens) are
far below every minimum, which is why the transcript goes into the cached prefix.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import re
import string
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo.atomic import atomic_write
from memrepo.config import load_config
from memrepo.layout import STATE_DIR
from memrepo.resources import templates_dir
from memrepo.spawn import AGENT_WORKER_ENV

#: Short names of the config to API model ids.
#: Short names in the config -> model ids (none the SDK lists as deprecated on 2026-11-22).
MODEL_ALIASES = {
    "haiku": "claude-haiku-4-5",
    "sonnet": "claude-sonnet-4-6",
    "opus": "claude-opus-4-5",
}
#: USD per million tokens (input, output); cache writes cost 1.25x input, reads 0.1x.
PRICES: dict[str, tuple[float, float]] = {
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-opus-4-5": (5.0, 25.0),
}
DEFAULT_PRICE = (3.0, 15.0)
#: task -> the config key naming its model.
TASK_MODEL_KEYS = {
    "gate": "watchers.gate_model",
    "commit_message": "git.commit_message_model",
    "extract": "llm.extract_model",
    "condense": "llm.condense_model",
}
INPUT_MARKER = "<<<INPUT>>>"
CACHE_MARKER = "<<<CACHE>>>"
#: Minimum cacheable prefix per model, in tokens (shorter prefixes are not cached).
#: Sonnet 4.6 is documented at 1,024 but reported to cache from 2,048 only.
MIN_CACHE_TOKENS: dict[str, int] = {
    "claude-haiku-4-5": 4096,
    "claude-opus-4-5": 4096,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4-6": 2048,
}
#: Unknown models: the largest minimum, so that nothing is marked for nothing.
DEFAULT_MIN_CACHE_TOKENS = 4096
#: ~chars per token, for estimates before a call (cache minimum, dry-run cost) from a
#: character count. Budgets count text with ``memrepo.context.tokens.estimate_tokens``.
CHARS_PER_TOKEN = 3.5


class LLMUnavailable(Exception):
    """No model can be called (offline, no key, or the call failed after retries)."""


def resolve_model(name: str) -> str:
    return MODEL_ALIASES.get(name.strip().lower(), name.strip())


#: Set (to 1) in the agent's environment to let its hooks' worker use the LLM with the
#: agent's credentials (:data:`memrepo.spawn.AGENT_WORKER_ENV`).
AGENT_LLM_ENV = "MEMREPO_AGENT_LLM"


def online_by_default(agent_llm: bool = False) -> bool:
    """A key, not offline, and, inside an agent's hook, LLM use switched on (the repo's
    ``agents.llm``: ``agent_llm``, or ``MEMREPO_AGENT_LLM=1``)."""
    if os.environ.get(AGENT_WORKER_ENV) and not (agent_llm or os.environ.get(AGENT_LLM_ENV)):
        return False
    return bool(os.environ.get("ANTHROPIC_API_KEY")) and not os.environ.get("MEMREPO_OFFLINE")


# ---------------------------------------------------------------------------
# Templates
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    name: str
    system: str
    user: str
    hash: str
    #: the shared part of the user message (before ``<<<CACHE>>>``), "" when none
    shared: str = ""


@functools.cache
def load_template(name: str) -> Prompt:
    """``templates/prompts/NAME.md`` split into system, shared and user parts, with its hash."""
    text = (templates_dir() / "prompts" / f"{name}.md").read_text(encoding="utf-8")
    system, sep, user = text.partition(f"\n{INPUT_MARKER}\n")
    if not sep:
        system, user = "", text
    shared, sep, rest = user.partition(f"\n{CACHE_MARKER}\n")
    if not sep:
        shared, rest = "", user
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return Prompt(name, system.strip(), rest.strip(), digest, shared.strip())


def template_hash(name: str) -> str:
    return load_template(name).hash


@dataclass(frozen=True)
class Rendered:
    """A filled template: the system prompt, the shared part and the per-call part."""

    system: str
    shared: str
    user: str


def render(name: str, **variables: Any) -> Rendered:
    """The parts of a template filled with ``variables``."""
    p = load_template(name)
    values = {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
              for k, v in variables.items()}

    def fill(text: str) -> str:
        return string.Template(text).safe_substitute(values)

    return Rendered(fill(p.system), fill(p.shared), fill(p.user))


def cacheable(model: str, chars: int) -> bool:
    """Whether a prefix of ``chars`` characters is plausibly long enough to be cached."""
    return chars / CHARS_PER_TOKEN >= MIN_CACHE_TOKENS.get(model, DEFAULT_MIN_CACHE_TOKENS)


def request_parts(prompt: Rendered, model: str) -> tuple[list[dict[str, Any]], Any]:
    """(system blocks, first user message content), with ``cache_control`` on the end of
    the shared prefix when it is long enough to be cached for ``model``."""
    system: list[dict[str, Any]] = [{"type": "text", "text": prompt.system}] \
        if prompt.system else []
    if not prompt.shared:
        if system and cacheable(model, len(prompt.system)):
            system[-1]["cache_control"] = {"type": "ephemeral"}
        return system, prompt.user
    shared: dict[str, Any] = {"type": "text", "text": prompt.shared}
    if cacheable(model, len(prompt.system) + len(prompt.shared)):
        shared["cache_control"] = {"type": "ephemeral"}  # caches the system prompt and this block
    return system, [shared, {"type": "text", "text": prompt.user}]


# ---------------------------------------------------------------------------
# JSON answers
# ---------------------------------------------------------------------------


def parse_json(text: str) -> Any:
    """The JSON value in a model answer (fences and prose around it tolerated)."""
    s = text.strip()
    m = re.search(r"```(?:json)?\s*\n(.*?)\n```", s, re.S)
    if m:
        s = m[1].strip()
    if not s.startswith(("{", "[")):
        starts = [i for i in (s.find("{"), s.find("[")) if i >= 0]
        if starts:
            s = s[min(starts):]
    return json.loads(s)


def schema_errors(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """A small JSON-schema subset: type, properties, required, items, enum."""
    kinds = {"object": dict, "array": list, "string": str, "integer": int,
             "number": (int, float), "boolean": bool, "null": type(None)}
    t = schema.get("type")
    if t:
        types = t if isinstance(t, list) else [t]
        ok = any(isinstance(value, kinds[x]) and not (x in ("integer", "number")
                 and isinstance(value, bool)) for x in types)
        if not ok:
            return [f"{where}: expected {t}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} not one of {schema['enum']}"]
    errors: list[str] = []
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{where}: missing {key!r}")
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                errors += schema_errors(value[key], sub, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{where}[{i}]")
    return errors


# ---------------------------------------------------------------------------
# Usage accounting
# ---------------------------------------------------------------------------


@dataclass
class ModelUsage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def cost(self, model: str) -> float:
        pin, pout = PRICES.get(model, DEFAULT_PRICE)
        return (self.input_tokens * pin + self.output_tokens * pout
                + self.cache_write * pin * 1.25 + self.cache_read * pin * 0.1) / 1e6


@dataclass
class Usage:
    """Tokens and cost per model, cache hits and fallbacks, for the end-of-run line."""

    models: dict[str, ModelUsage] = field(default_factory=dict)
    cached: int = 0
    fallbacks: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, model: str, u: Any) -> None:
        with self._lock:
            m = self.models.setdefault(model, ModelUsage())
            m.calls += 1
            m.input_tokens += int(getattr(u, "input_tokens", 0) or 0)
            m.output_tokens += int(getattr(u, "output_tokens", 0) or 0)
            m.cache_read += int(getattr(u, "cache_read_input_tokens", 0) or 0)
            m.cache_write += int(getattr(u, "cache_creation_input_tokens", 0) or 0)

    def note_fallback(self, why: str) -> None:
        with self._lock:
            self.fallbacks.append(why)

    def note_cached(self, n: int = 1) -> None:
        with self._lock:
            self.cached += n

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.models.values())

    @property
    def cost(self) -> float:
        return sum(m.cost(name) for name, m in self.models.items())

    def summary(self) -> str:
        """One line (plus one per model) for the end of every run."""
        head = f"LLM: {self.calls} calls, {self.cached} cached, ${self.cost:.4f}"
        if self.fallbacks:
            head += f", {len(self.fallbacks)} fell back to the offline path"
        lines = [head]
        for name, m in sorted(self.models.items()):
            lines.append(f"  {name}: {m.calls} calls, {m.input_tokens} in / {m.output_tokens}"
                         f" out tokens, cache {m.cache_read} read / {m.cache_write} written,"
                         f" ${m.cost(name):.4f}")
        return "\n".join(lines)


def estimate_cost(model: str, input_chars: int, output_tokens: int) -> float:
    pin, pout = PRICES.get(resolve_model(model), DEFAULT_PRICE)
    return (input_chars / CHARS_PER_TOKEN * pin + output_tokens * pout) / 1e6


# ---------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------


class LLM:
    """Calls a model for a task, or says it cannot (``available`` is False offline)."""

    def __init__(
        self,
        models: dict[str, str],
        *,
        client: Any = None,
        offline: bool = False,
        timeout: float = 60.0,
        max_retries: int = 2,
        concurrency: int = 4,
        usage: Usage | None = None,
        agent_llm: bool = False,
    ) -> None:
        self.models = {task: resolve_model(m) for task, m in models.items()}
        self.offline = offline or (client is None and not online_by_default(agent_llm))
        self.timeout = timeout
        self.max_retries = max_retries
        self.concurrency = max(1, concurrency)
        self.usage = usage or Usage()
        self._client = client
        #: optional result cache (get/put by key) for whole prompts: replays cost nothing
        self.cache: Any = None

    @classmethod
    def from_config(
        cls, cfg: Any, *, offline: bool = False, client: Any = None, model: str | None = None
    ) -> LLM:
        """The client for a repo's config; ``model`` overrides every task's model."""
        models: dict[str, str] = {}
        for task, dotted in TASK_MODEL_KEYS.items():
            section, key = dotted.split(".")
            models[task] = model or str(cfg.get(section, {}).get(key) or "haiku")
        llm_cfg = cfg.get("llm", {})
        return cls(
            models,
            client=client,
            offline=offline,
            timeout=float(llm_cfg.get("timeout_seconds", 60)),
            max_retries=int(llm_cfg.get("max_retries", 2)),
            concurrency=int(llm_cfg.get("max_concurrency", 4)),
            agent_llm=bool(cfg.get("agents", {}).get("llm")),
        )

    @property
    def available(self) -> bool:
        return not self.offline

    def model_for(self, task: str) -> str:
        return self.models.get(task) or resolve_model("haiku")

    @property
    def client(self) -> Any:
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(timeout=self.timeout, max_retries=self.max_retries)
        return self._client

    def complete(self, task: str, template: str, *, max_tokens: int = 1024, **vars: Any) -> str:
        """The model's text answer; raises LLMUnavailable offline or when the call fails."""
        system, content = request_parts(render(template, **vars), self.model_for(task))
        return self._call(task, system, [{"role": "user", "content": content}], max_tokens)

    def complete_json(
        self,
        task: str,
        template: str,
        schema: dict[str, Any],
        *,
        max_tokens: int = 2048,
        retry: bool = True,
        **vars: Any,
    ) -> Any | None:
        """A validated JSON answer, or None (the caller falls back; the reason is noted).

        A malformed answer is retried once with the parse error quoted back to the model
        (``retry``; without it, one request at most).
        """
        if not self.available:
            return None
        prompt = render(template, **vars)
        system, content = request_parts(prompt, self.model_for(task))
        ckey = None
        if self.cache is not None:
            ckey = cache_key("prompt", self.model_for(task), template_hash(template), prompt.system,
                       prompt.shared, prompt.user)
            hit = self.cache.get(ckey)
            if hit is not None:
                self.usage.note_cached()
                return hit
        messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        problem = ""
        for attempt in range(2 if retry else 1):
            try:
                text = self._call(task, system, messages, max_tokens)
            except LLMUnavailable as exc:
                self.usage.note_fallback(f"{template}: {exc}")
                return None
            try:
                value = parse_json(text)
                errors = schema_errors(value, schema)
            except ValueError as exc:
                errors = [f"not JSON: {exc}"]
            if not errors:
                if ckey is not None:
                    self.cache.put(ckey, value)
                return value
            problem = "; ".join(errors[:3])
            if attempt == 0:
                messages = [*messages, {"role": "assistant", "content": text[:4000] or "?"},
                            {"role": "user", "content": "That answer was not valid: "
                             f"{problem}. Reply with the JSON only, matching the format."}]
        why = f"{template}: malformed answer{' twice' if retry else ''} ({problem})"
        self.usage.note_fallback(why)
        print(f"memory: LLM {why}; used the offline path", file=sys.stderr)
        return None

    def _call(self, task: str, system: list[dict[str, Any]], messages: list[dict[str, Any]],
              max_tokens: int) -> str:
        if not self.available:
            raise LLMUnavailable("offline")
        model = self.model_for(task)
        kwargs: dict[str, Any] = {"model": model, "max_tokens": max_tokens,
                                  "messages": messages}
        if system:
            kwargs["system"] = system
        if "temperature" in _create_params(self.client):
            kwargs["temperature"] = 0
        try:
            resp = self.client.with_options(
                timeout=self.timeout, max_retries=self.max_retries
            ).messages.create(**kwargs)
        except Exception as exc:  # the SDK's errors, timeouts, connection failures
            raise LLMUnavailable(f"{type(exc).__name__}: {str(exc)[:160]}") from exc
        self.usage.add(model, getattr(resp, "usage", None))
        return "".join(getattr(b, "text", "") for b in resp.content
                       if getattr(b, "type", "") == "text").strip()


def _create_params(client: Any) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(client.messages.create).parameters)
    except (TypeError, ValueError):
        return frozenset()


def for_repo(root: Any, *, offline: bool = False, model: str | None = None,
             client: Any = None) -> LLM:
    """The client for the repo at ``root`` (the commands' one-liner)."""
    llm = LLM.from_config(load_config(root), offline=offline, model=model, client=client)
    llm.cache = ResultCache(root)
    return llm


# ---------------------------------------------------------------------------
# The result cache: a replay with nothing changed makes no LLM call
# ---------------------------------------------------------------------------

#: One small JSON file per key (gitignored: a cache, rebuilt by calling again).
CACHE_DIR = f"{STATE_DIR}/cache/llm"


def cache_key(*parts: str) -> str:
    """What asked (extractor name and version, or ``reconcile``), model, prompt template
    hash and input hash, folded into one key."""
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:32]


class ResultCache:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.dir = Path(root) / CACHE_DIR if root is not None else None

    def get(self, k: str) -> Any | None:
        if self.dir is None:
            return None
        try:
            return json.loads((self.dir / k[:2] / f"{k}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, k: str, value: Any) -> None:
        if self.dir is not None:
            atomic_write(self.dir / k[:2] / f"{k}.json", json.dumps(value, ensure_ascii=False),
                         root=self.root)  # the model's answers: never under a linked folder
