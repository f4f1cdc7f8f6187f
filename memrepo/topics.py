"""The topic file schema (seed 000 §2.2, §4.4): one definition for the validator and the watchers.

Topic regexes run against every message an agent sees, so a pattern that can backtrack
catastrophically would hang the agent: patterns are compiled with the ``regex`` package
(which supports match timeouts) and refused here if they have nested unbounded repeats or
take too long on adversarial probe inputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

try:  # Python >= 3.11
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

ACTIVATIONS = ("auto", "gated", "manual")
PRIORITIES = ("low", "medium", "high", "critical")
SCOPES = ("input", "output", "both")

#: Trigger type -> (required keys, optional keys).
TRIGGER_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pattern": (("match",), ("scope", "hint", "correction_hint", "name")),
    "keyword": (("keywords",), ("scope", "hint", "correction_hint", "name")),
    "glob": (("match",), ("scope", "name")),
    "mention": (("names",), ("scope", "name")),
    "url": ((), ("match", "scope", "name")),
    "webhook": (("source",), ("event", "name")),
    "cron": (("schedule",), ("name",)),
}
TOPIC_KEYS = frozenset(
    {
        "type", "name", "description", "triggers", "subscriptions", "activation", "priority",
        "max_context_kb", "similarity_threshold", "keywords", "updated", "created", "tags",
    }
)  # fmt: skip

REGEX_PROBE_TIMEOUT = 0.05  # seconds per probe: a linear pattern takes microseconds
_PROBE_LEN = 4096


@dataclass(frozen=True)
class Problem:
    message: str
    key: str  # top-level frontmatter key the problem is under (for the line number)


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """How watchers compile a trigger pattern (case-insensitive)."""
    return regex.compile(pattern, regex.IGNORECASE | regex.V0)


#: A bounded repeat this long around an unbounded one is polynomial of that degree:
#: ``(\d+\.){3}`` is fine, ``(.*a){20}`` never finishes on a long line.
MAX_BOUNDED_AROUND_UNBOUNDED = 8
_ANY = "any"


def _first_chars(items: Any) -> set[Any]:
    """What the first character of a match of ``items`` may be (approximate, erring wide):
    literal code points, ``_ANY``, or ``("notnl",)`` for ``.``."""
    out: set[Any] = set()
    for op, av in items:
        if op == sre_parse.LITERAL:
            out.add(av)
            return out
        if op == sre_parse.ANY:
            out.add(("notnl",))
            return out
        if op == sre_parse.IN:
            for kind, val in av:
                if kind == sre_parse.LITERAL:
                    out.add(val)
                else:  # ranges, categories, negations: anything
                    out.add(_ANY)
            return out
        if op == sre_parse.SUBPATTERN:
            out |= _first_chars(av[-1])
            return out
        if op == sre_parse.BRANCH:
            for branch in av[1]:
                out |= _first_chars(branch)
            return out
        if op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT):
            out |= _first_chars(av[2])
            if av[0] > 0:
                return out
            continue  # may match nothing: what follows may come first too
        if op in (sre_parse.AT, sre_parse.ASSERT, sre_parse.ASSERT_NOT):
            continue
        out.add(_ANY)
        return out
    return out


def _overlap(a: set[Any], b: set[Any]) -> bool:
    if _ANY in a or _ANY in b or a & b:
        return True
    if ("notnl",) in a:
        return bool(b - {ord("\n")})
    if ("notnl",) in b:
        return bool(a - {ord("\n")})
    return False


def _has_nested_repeat(pattern: str) -> bool:
    """True when a pattern can backtrack catastrophically: an unbounded repeat inside
    another unbounded (or long bounded) repeat, as in ``(a+)+`` or ``(.*a){20}``,
    alternatives that can start alike under an unbounded repeat, as in ``(a|ab)*``, or a
    long bounded repeat of what may match nothing, as in ``(a?){30}``."""
    try:
        tree = sre_parse.parse(pattern)
    except Exception:  # syntax only `regex` knows: rely on the runtime probe
        return False
    repeats = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT}
    repeats |= {getattr(sre_parse, "POSSESSIVE_REPEAT", sre_parse.MAX_REPEAT)}
    maxrep = sre_parse.MAXREPEAT

    def walk(items: Any, inside: bool) -> bool:
        for op, av in items:
            if op in repeats:
                _lo, hi, sub = av
                unbounded = hi == maxrep or hi > 64
                long_bounded = not unbounded and hi >= MAX_BOUNDED_AROUND_UNBOUNDED
                if unbounded and inside:
                    return True
                if walk(sub, inside or unbounded or long_bounded):
                    return True
                if unbounded and _ambiguous_branch(sub):
                    return True
                if long_bounded and sub.getwidth()[0] == 0:  # (a?){30}a{30}: 2**30 ways
                    return True
                continue
            if op == sre_parse.SUBPATTERN:
                children = [av[-1]]
            elif op == sre_parse.BRANCH:
                children = list(av[1])
            elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
                children = [av[1]]
            else:
                continue
            if any(walk(c, inside) for c in children):
                return True
        return False

    return walk(tree, False)


def _ambiguous_branch(items: Any) -> bool:
    """An alternation (inside ``items``, not under another repeat) two of whose branches
    are the same or may start alike: each repetition can then be matched several ways."""
    for op, av in items:
        if op == sre_parse.SUBPATTERN and _ambiguous_branch(av[-1]):
            return True
        if op == sre_parse.BRANCH:
            branches = [str(b) for b in av[1]]  # SubPattern compares by identity
            if any(branches[i] == branches[j] for i in range(len(branches))
                   for j in range(i + 1, len(branches))):
                return True
            firsts = [f for f in (_first_chars(b) for b in av[1]) if f]
            if any(_overlap(firsts[i], firsts[j]) for i in range(len(firsts))
                   for j in range(i + 1, len(firsts))):
                return True
    return False


def _probes(pattern: str) -> list[str]:
    """Long inputs that almost match: runs of the pattern's own characters, ended by a
    character it does not expect, then its literals (so a required-literal shortcut in the
    engine cannot answer "no match" before backtracking)."""
    chars = {c for c in pattern if c.isalnum()} or {"a"}
    tail = "!" + "".join(sorted(chars))
    probes = [c * _PROBE_LEN + tail for c in sorted(chars)[:8]]
    probes += ["a" * _PROBE_LEN + tail, " " * _PROBE_LEN + tail, "ab" * (_PROBE_LEN // 2) + tail]
    return probes


def regex_problem(pattern: Any) -> str | None:
    """Why ``pattern`` cannot be a trigger, or None when it is safe."""
    if not isinstance(pattern, str) or not pattern:
        return "must be a non-empty string"
    try:
        compiled = compile_pattern(pattern)
    except regex.error as exc:
        return f"does not compile: {exc}"
    if _has_nested_repeat(pattern):
        return ("can backtrack catastrophically: a nested repeat such as (a+)+ or (.*a){20},"
                " alternatives that match alike under a repeat such as (a|a)*, or a long"
                " repeat of what may match nothing such as (a?){30}")
    for probe in _probes(pattern):
        try:
            compiled.search(probe, timeout=REGEX_PROBE_TIMEOUT)
        except TimeoutError:
            return "takes too long on a long input (catastrophic backtracking)"
    return None


_CRON_FIELD = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$")
_CRON_NAMES = re.compile(r"^[A-Za-z]{3}(-[A-Za-z]{3})?(,[A-Za-z]{3}(-[A-Za-z]{3})?)*$")
_CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


def cron_problem(expr: Any) -> str | None:
    """A five-field cron expression (or @daily style macro) check."""
    if not isinstance(expr, str):
        return "must be a string"
    if expr.strip() in ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@hourly"):
        return None
    fields = expr.split()
    if len(fields) != 5:
        return f"must have 5 fields (minute hour day month weekday), got {len(fields)}"
    names = ("minute", "hour", "day", "month", "weekday")
    for value, (lo, hi), name in zip(fields, _CRON_RANGES, names, strict=True):
        if name in ("month", "weekday") and _CRON_NAMES.match(value):
            continue
        if not _CRON_FIELD.match(value):
            return f"{name} field {value!r} is not valid cron syntax"
        for num in re.findall(r"\d+", re.sub(r"/\d+", "", value)):
            if not lo <= int(num) <= hi:
                return f"{name} field {value!r} is out of range {lo}-{hi}"
    return None


def subscription_problem(root: Path, rel: Any) -> str | None:
    """A subscription must name an existing file inside the repo, with no way out of it."""
    if not isinstance(rel, str) or not rel.strip():
        return "must be a repo-relative path string"
    if rel.startswith(("/", "~", "\\")) or re.match(r"^[A-Za-z]:", rel):
        return f"{rel!r} is an absolute path; use a path relative to the repo root"
    if ".." in Path(rel).parts:
        return f"{rel!r} contains '..'; subscriptions must stay inside the repo"
    base = root.resolve()
    target = base / rel
    try:
        resolved = target.resolve()
    except (OSError, RuntimeError):
        return f"{rel!r} cannot be resolved (symlink loop?)"
    if resolved != base and base not in resolved.parents:
        return f"{rel!r} points outside the repo (symlink to {resolved})"
    if not resolved.is_file():
        return f"{rel!r} does not exist"
    return None


def _string_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) and v for v in value)


def trigger_problems(index: int, trig: Any) -> list[str]:
    where = f"triggers[{index}]"
    if not isinstance(trig, dict):
        return [f"{where} must be a mapping with a 'type'"]
    kind = trig.get("type")
    if kind not in TRIGGER_KEYS:
        return [f"{where}.type must be one of {', '.join(TRIGGER_KEYS)}, got {kind!r}"]
    required, optional = TRIGGER_KEYS[kind]
    out = [f"{where} ({kind}) needs '{k}'" for k in required if k not in trig]
    extra = set(trig) - {"type", *required, *optional}
    if extra:
        out.append(f"{where} ({kind}) has unknown key(s): {', '.join(sorted(map(str, extra)))}")
    if "scope" in trig and trig["scope"] not in SCOPES:
        out.append(f"{where}.scope must be one of {', '.join(SCOPES)}, got {trig['scope']!r}")
    if kind in ("pattern", "url") and "match" in trig:
        why = regex_problem(trig["match"])
        if why:
            out.append(f"{where}.match regex {why}")
    if kind == "glob" and "match" in trig:
        globs = trig["match"] if isinstance(trig["match"], list) else [trig["match"]]
        if not _string_list(globs):
            out.append(f"{where}.match must be a glob string or a list of them")
    if kind == "keyword" and "keywords" in trig and not _string_list(trig["keywords"]):
        out.append(f"{where}.keywords must be a non-empty list of strings")
    if kind == "mention" and "names" in trig and not _string_list(trig["names"]):
        out.append(f"{where}.names must be a non-empty list of strings")
    if kind == "webhook":
        for k in ("source", "event"):
            if k in trig and not (isinstance(trig[k], str) and trig[k]):
                out.append(f"{where}.{k} must be a non-empty string")
    if kind == "cron" and "schedule" in trig:
        why = cron_problem(trig["schedule"])
        if why:
            out.append(f"{where}.schedule {why}")
    return out


def topic_problems(meta: dict[str, Any], root: Path) -> list[Problem]:
    """Every way a topic's frontmatter breaks the schema."""
    out: list[Problem] = []
    unknown = set(meta) - TOPIC_KEYS
    for key in sorted(map(str, unknown)):
        out.append(Problem(f"unknown topic key '{key}'", key))
    triggers = meta.get("triggers")
    if "triggers" not in meta:
        out.append(Problem("topic needs 'triggers' (a list; [] for a manual-only topic)", "type"))
    elif not isinstance(triggers, list):
        out.append(Problem("'triggers' must be a list of trigger mappings", "triggers"))
    else:
        for i, trig in enumerate(triggers):
            out.extend(Problem(msg, "triggers") for msg in trigger_problems(i, trig))
    subs = meta.get("subscriptions", [])
    if not isinstance(subs, list):
        out.append(
            Problem("'subscriptions' must be a list of repo-relative paths", "subscriptions")
        )
    else:
        for i, rel in enumerate(subs):
            why = subscription_problem(root, rel)
            if why:
                out.append(Problem(f"subscriptions[{i}] {why}", "subscriptions"))
    if "activation" in meta and meta["activation"] not in ACTIVATIONS:
        out.append(
            Problem(
                f"'activation' must be one of {', '.join(ACTIVATIONS)}, got {meta['activation']!r}",
                "activation",
            )
        )
    if "priority" in meta and meta["priority"] not in PRIORITIES:
        out.append(
            Problem(
                f"'priority' must be one of {', '.join(PRIORITIES)}, got {meta['priority']!r}",
                "priority",
            )
        )
    for key, lo, hi in (("max_context_kb", 0, 1024), ("similarity_threshold", 0, 1)):
        if key in meta:
            v = meta[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                out.append(
                    Problem(f"'{key}' must be a number between {lo} and {hi}, got {v!r}", key)
                )
    return out
