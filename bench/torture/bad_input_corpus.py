"""The hostile inputs of ``bad_input.py``: one :class:`Case` per input, grouped by surface.

Every input surface a person (or a tool, or an attacker) can feed memrepo: the config,
memory files' frontmatter, topic triggers, each import format, CLI arguments and stdin.
A case says what it writes, what it runs and what must happen: ``refuse`` (exit non-zero,
naming ``where`` and ``line`` when given), ``accept`` (exit 0) or ``either`` (no traceback,
no hang; a refusal still names its file). Nothing here runs anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

#: Bytes no repo file may ever contain: the content of a file outside the export folder.
SENTINEL = b"OUTSIDE-SECRET-7f3a9c"
LONG_WORD = "a" * 300
TS_BAD = {  # a timestamp that is not one, as JSON text
    "1e20": "1e20", "1e999999": "1e999999", "nan": "NaN", "neg": "-1", "neg-big": "-1e12",
    "inf": "Infinity", "word": '"yesterday"', "year1": '"0001-01-01T00:00:00+14:00"',
    "year9999": '"9999-12-31T23:59:59-12:00"', "bool": "true", "obj": "{}", "list": "[]",
    "empty-date": '"2026-02-30T10:00:00Z"',
}


@dataclass
class Case:
    surface: str
    name: str
    args: list[str]
    files: dict[str, bytes] = field(default_factory=dict)  # repo-relative, or "ext/..."
    links: dict[str, str] = field(default_factory=dict)  # link path -> target ("ext/...")
    fifos: list[str] = field(default_factory=list)  # repo paths made named pipes
    stdin: bytes | None = None
    expect: str = "refuse"  # refuse | accept | either
    where: str | None = None  # what a refusal must name (a file)
    line: int | None = None  # the line a refusal must name
    mention: str | None = None  # the place a refusal must name when there is no line
    setup: list[tuple[list[str], bytes | None]] = field(default_factory=list)
    sentinel: bool = False  # the outside secret must not end up in the repo
    holes: dict[str, int] = field(default_factory=dict)  # file -> size it is grown to (zeros)
    detached: bool = False  # an agent hook: its detached worker is waited for and watched
    worker: str = "either"  # refuse: the worker must log a failure and write no transcript


# ---------------------------------------------------------------------------
# memory-config.yaml
# ---------------------------------------------------------------------------

CONFIG = "memory-config.yaml"


def _default_config() -> str:
    from memrepo.config import render_default_config

    return render_default_config()


def _set(text: str, section: str, key: str, raw: str) -> tuple[str, int]:
    """The config text with ``section.key`` set to the YAML ``raw``, and that line."""
    lines = text.split("\n")
    inside = False
    for i, ln in enumerate(lines):
        if re.match(r"^\S", ln):
            inside = ln.rstrip(":") == section
        elif inside and re.match(rf"^\s+{re.escape(key)}:", ln):
            lines[i] = f"  {key}: {raw}"
            return "\n".join(lines), i + 1
    raise KeyError(f"{section}.{key}")


def config_cases() -> Iterator[Case]:
    from memrepo.config import SCHEMA

    base = _default_config()
    show = ["config", "show"]

    def case(name: str, text: str | bytes, expect: str = "refuse", line: int | None = None,
             ) -> Case:
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        return Case("config", name, show, {CONFIG: data}, expect=expect, where=CONFIG,
                    line=line)

    # wrong types, out of range and non-finite values for every setting (half of the
    # values each, alternating)
    n_key = 0
    for section, keys in SCHEMA.items():
        for key, s in keys.items():
            if s.kind is bool:
                bad = ["yes please", "[1]"]
            elif s.kind is list:
                bad = ['"one string"', "[1, 2]", "[{a: 1}]", "[\"(a+)+$\"]"]
            elif s.kind is str:
                bad = ["[a, b]", "{a: 1}"]
                if s.choices:
                    bad.append("not-a-choice")
                if s.cron:
                    bad += ['"61 * * * *"', '"* * *"', '"@never"']
            else:
                bad = ['"fast"', "-1", ".nan", ".inf"]
                if s.kind is int:
                    bad.append("1.5")
            n_key += 1
            for raw in bad[n_key % 2::2] if not (s.cron or s.kind is list) else bad:
                text, line = _set(base, section, key, raw)
                yield case(f"{section}.{key}={raw}", text, line=line)
    # numbers too big to mean anything are accepted or refused, never a crash
    for key in ("token_budget", "identity_budget_kb"):
        text, line = _set(base, "context_compiler", key, "1" + "0" * 400)
        yield case(f"huge-int-{key}", text, line=line)
    text, line = _set(base, "search", "rrf_k", "9" * 5000)
    yield case("int-5000-digits", text, line=line)
    # a number setting that also takes the word auto takes that word only
    yield case("auto-word", _set(base, "search", "expansion_weight", "auto")[0], expect="accept")
    text, line = _set(base, "search", "expansion_weight", "Auto")
    yield case("auto-capitalised", text, line=line)
    yield Case("frontmatter", "int-5000-digits", ["hook", "check-frontmatter",
                                                  "knowledge/memory/n.md"],
               {"knowledge/memory/n.md": _fm("memory", "turns: " + "9" * 5000 + "\n").encode()},
               where="knowledge/memory/n.md", line=3)
    # structure
    yield case("top-list", "- a\n- b\n", line=1)
    yield case("top-scalar", "hello\n", line=1)
    yield case("unknown-section", base + "\nbogus:\n  a: 1\n", line=len(base.split("\n")) + 1)
    yield case("unknown-key", base.replace("search:\n", "search:\n  bogus: 1\n", 1),
               line=base.split("\n").index("search:") + 2)
    yield case("section-not-mapping", "search: 3\n", line=1)
    yield case("key-is-list", "search:\n  ? [a, b]\n  : 1\n", line=2)
    yield case("key-is-int", "search:\n  1: 2\n", line=2)
    yield case("dup-section", "search:\n  rrf_k: 5\nsearch:\n  rrf_k: 6\n", line=3)
    yield case("dup-key", "search:\n  rrf_k: 5\n  rrf_k: 6\n", line=3)
    yield case("tab-indent", "search:\n\trrf_k: 5\n", line=2)
    yield case("tab-after-key", "search:\n  rrf_k:\t5\n", expect="accept")
    yield case("bom", b"\xef\xbb\xbf" + base.encode(), expect="accept")
    yield case("bom-only", b"\xef\xbb\xbf", expect="accept")
    yield case("empty", "", expect="accept")
    yield case("comments-only", "# nothing\n", expect="accept")
    yield case("crlf", base.replace("\n", "\r\n"), expect="accept")
    for n in (1, 5, 40):
        lines = base.split("\n")
        data = "".join(ln + "\n" for ln in lines[: n - 1]).encode() + b"  bm25_weight: \xff\n"
        yield case(f"non-utf8-line{n}", data, line=n)
    yield case("latin1", "search:\n  embedding_model: caf\xe9\n".encode("latin-1"), line=2)
    yield case("utf16", base.encode("utf-16"), line=1)
    yield case("nul-byte", "search:\n  rrf_k: 5\x00\n", line=2)
    yield case("control-char", "search:\n  embedding_model: a\x07b\n", line=2)
    yield case("python-tag", "search:\n  rrf_k: !!python/object/apply:os.system [ls]\n", line=2)
    yield case("unknown-tag", "search:\n  rrf_k: !custom 5\n", line=2)
    yield case("binary-tag", "search:\n  embedding_model: !!binary aGk=\n", line=2)
    yield case("set-tag", "search:\n  embedding_model: !!set {a: null}\n", line=2)
    yield case("multi-doc", "search:\n  rrf_k: 5\n---\nsearch:\n  rrf_k: 6\n", line=3)
    yield case("unclosed-flow", "search: {rrf_k: 5\n", line=2)
    yield case("unclosed-quote", 'search:\n  embedding_model: "abc\n', line=3)
    yield case("bad-indent", "search:\n  rrf_k: 5\n bm25_weight: 1\n", line=3)
    yield case("alias", "a: &x 1\nsearch:\n  rrf_k: *x\n", line=1)
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        bomb.append(f"{cur}: &{cur} [" + ", ".join(f"*{prev}" for _ in range(9)) + "]")
    yield case("billion-laughs", "\n".join(bomb) + "\n", line=1)
    yield case("merge-key", "base: &b {rrf_k: 5}\nsearch:\n  <<: *b\n", line=1)
    for depth in (60, 200, 1000, 5000, 20000):
        yield case(f"deep-flow-map-{depth}", "search: " + "{a: " * depth + "1" + "}" * depth,
                   line=1)
        yield case(f"deep-flow-list-{depth}", "search:\n  rrf_k: " + "[" * depth + "]" * depth,
                   line=2)
    for depth in (60, 300, 1500):
        block = "search:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(depth))
        c = case(f"deep-block-{depth}", block + "  " * (depth + 1) + "1\n")
        c.mention = "nested deeper" if depth < 100 else "64 KB"  # past 64 KB: the size
        yield c
    yield case("huge-value", "search:\n  embedding_model: " + "x" * 70_000 + "\n", line=None)
    yield case("huge-key", "search:\n  " + "k" * 5000 + ": 1\n", line=2)
    yield case("many-keys", "search:\n" + "".join(f"  k{i}: {i}\n" for i in range(5000)),
               line=None)
    yield case("secrets-allowlist-redos", base.replace(
        "secrets_allowlist: []", 'secrets_allowlist: ["(a|a)*b"]'),
        line=_set(base, "validation", "secrets_allowlist", "[]")[1])
    yield case("secrets-allowlist-bad-regex", base.replace(
        "secrets_allowlist: []", 'secrets_allowlist: ["("]'),
        line=_set(base, "validation", "secrets_allowlist", "[]")[1])
    yield case("long-unicode-key", "search:\n  " + "ключ" * 50 + ": 1\n", line=2)
    # the same broken config reached by other commands
    for args in (["search", "hello"], ["hook", "check-frontmatter",
                                       "knowledge/memory/MEMORY.md"], ["doctor"]):
        yield Case("config", f"dup-key-via-{args[0]}", args,
                   {CONFIG: b"search:\n  rrf_k: 5\n  rrf_k: 6\n"}, where=CONFIG, line=3)
        yield Case("config", f"deep-via-{args[0]}", args,
                   {CONFIG: ("search: " + "[" * 5000 + "]" * 5000).encode()}, where=CONFIG,
                   line=1)


# ---------------------------------------------------------------------------
# Memory files (frontmatter), journals, transcripts
# ---------------------------------------------------------------------------

FM_FILES = {  # every variant on the first three, a sample on the others
    "knowledge/memory/notes.md": "memory",
    "knowledge/people/ada.md": "person",
    "knowledge/journal/2026-01-05.md": "journal",
    "knowledge/reference/ref.md": "reference",
    "knowledge/procedures/deploy.md": "procedure",
    "knowledge/projects/alpha/context.md": "project_context",
    "archive/knowledge/reference/old.md": "reference",
}
_SAMPLE = 7  # every seventh variant on the sampled paths
_REQ = {"person": "name: Ada\n", "journal": "date: 2026-01-05\n"}


def _fm(kind: str, extra: str = "", body: str = "# Title\n\ntext\n") -> str:
    return f"---\ntype: {kind}\n{_REQ.get(kind, '')}{extra}---\n{body}"


def _extra_line(kind: str) -> int:
    """The file line of the first ``extra`` line in :func:`_fm`."""
    return 3 + _REQ.get(kind, "").count("\n")


def frontmatter_cases() -> Iterator[Case]:
    for n, (path, kind) in enumerate(FM_FILES.items()):
        cases = list(_frontmatter_variants(path, kind))
        yield from cases if n < 3 else cases[n % _SAMPLE::_SAMPLE]
    yield from _frontmatter_special()


def _frontmatter_variants(path: str, kind: str) -> Iterator[Case]:
    if True:
        checks = ["check-frontmatter"] + (["check-journal"] if "journal" in path else [])
        ln = _extra_line(kind)

        def case(name: str, data: str | bytes, expect: str = "refuse",
                 line: int | None = None, check: str = checks[0], path: str = path) -> Case:
            raw = data if isinstance(data, bytes) else data.encode("utf-8")
            return Case("frontmatter", f"{path.split('/')[1]}:{name}",
                        ["hook", check, path], {path: raw}, expect=expect, where=path,
                        line=line)

        yield case("valid", _fm(kind), expect="accept")
        yield case("bom", b"\xef\xbb\xbf" + _fm(kind).encode(), expect="accept")
        yield case("crlf", _fm(kind).replace("\n", "\r\n"), expect="accept")
        yield case("unclosed", f"---\ntype: {kind}\n{_REQ.get(kind, '')}# body\n", line=1)
        yield case("only-open", "---\n", line=1)
        yield case("empty", "", line=1)
        yield case("no-frontmatter", "# just a title\n", line=1)
        for value in ("0001-01-01", "9999-12-31", "1e999999", "1.0e+999", ".nan", "-1",
                      "2026-02-30", "2026-13-01", "yesterday", "20260101", "[2026-01-01]",
                      "{y: 2026}", "0000-01-01", "2026-1-5"):
            yield case(f"updated={value}", _fm(kind, f"updated: {value}\n"), line=ln)
        for value in ("1e999999", "-5", "1.5", "yes", "[1]"):
            yield case(f"turns={value}", _fm(kind, f"tokens_in: {value}\n"), line=ln)
        yield case("tags-str", _fm(kind, "tags: notalist\n"), line=ln)
        yield case("dup-key", _fm(kind, "tags: [a]\ntags: [b]\n"), line=ln + 1)
        yield case("tab", _fm(kind, "tags:\n\t- a\n"), line=ln + 1)
        yield case("alias", _fm(kind, "x: &a [1]\ny: *a\n"), line=ln)  # the anchor's line
        yield case("python-tag", _fm(kind, "x: !!python/name:os.system\n"), line=ln)
        yield case("list-frontmatter", "---\n- a\n- b\n---\nbody\n", line=2)
        yield case("scalar-frontmatter", "---\njust words\n---\nbody\n", line=2)
        yield case("type-list", f"---\ntype: [{kind}]\n---\nbody\n", line=2)
        yield case("nul", _fm(kind, "x: a\x00b\n"), line=ln)
        yield case("non-utf8-fm", _fm(kind, "x: caf\xe9\n").encode("latin-1"), line=ln)
        yield case("non-utf8-body", _fm(kind, "", "line\nline\n\xff\n").encode("latin-1"),
                   line=ln + 3)
        yield case("binary", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), line=1)
        for depth in (60, 1000, 20000):
            yield case(f"deep-{depth}", _fm(kind, "x: " + "[" * depth + "]" * depth + "\n"),
                       line=ln)
        yield case("deep-ok-10", _fm(kind, "x: " + "[" * 10 + "]" * 10 + "\n"), expect="accept")
        yield case("huge-frontmatter", _fm(kind, "x: " + "y" * 70_000 + "\n"), line=None)
        yield case("huge-body-line", _fm(kind, "", "z" * 2_000_000 + "\n"), expect="accept")
        if "journal" in path:
            yield case("journal-date-mismatch", _fm(kind).replace("2026-01-05", "2026-01-06"),
                       line=3, check="check-journal")
            yield case("journal-year1", _fm(kind, "").replace("2026-01-05", "0001-01-01"),
                       line=3, check="check-journal")
            yield case("journal-1e999999", _fm(kind).replace("2026-01-05", "1e999999"),
                       line=3, check="check-journal")


def _frontmatter_special() -> Iterator[Case]:
    for name, fname in (("year1", "0001-01-01"), ("year9999", "9999-12-31"),
                        ("feb30", "2026-02-30"), ("year0", "0000-01-01")):
        p = f"knowledge/journal/{fname}.md"
        yield Case("frontmatter", f"journal-name-{name}", ["hook", "check-journal", p],
                   {p: f"---\ntype: journal\ndate: {fname}\n---\nx\n".encode()}, where=p)
    # transcripts: started far in the past or future, in every zone
    for label, started, folder in (
        ("year1-east", "0001-01-01T00:00:00+14:00", "0001/01/01"),
        ("year1-west", "0001-01-01T00:00:00-12:00", "0001/01/01"),
        ("year9999-west", "9999-12-31T23:59:00-12:00", "9999/12/31"),
        ("year9999-east", "9999-12-31T23:59:00+14:00", "9999/12/31"),
        ("1e999999", "1e999999", "2026/01/01"),
        ("nan", ".nan", "2026/01/01"),
    ):
        p = f"raw/conversations/{folder}/0000-s1-x.md"
        text = (f"---\ntype: conversation\nsession_id: s1\nstarted: {started}\n---\n\n"
                "## 00:00 — user\n\nhi\n")
        for check in ("check-frontmatter", "check-transcripts"):
            yield Case("frontmatter", f"transcript-{label}-{check}", ["hook", check, p],
                       {p: text.encode()}, where=p, line=4)
    # the index reads every memory file: a broken one is skipped, never a crash
    for depth in (1000, 20000):
        p = "knowledge/reference/deep.md"
        yield Case("frontmatter", f"index-deep-{depth}", ["index"],
                   {p: _fm("reference", "x: " + "[" * depth + "]" * depth + "\n").encode()},
                   expect="either", where=p)
    yield Case("frontmatter", "index-year1", ["index"],
               {"knowledge/reference/y.md": _fm("reference", "updated: 0001-01-01\n").encode()},
               expect="either", where="knowledge/reference/y.md")
    yield Case("frontmatter", "search-year9999", ["search", "text"],
               {"knowledge/reference/y.md": _fm("reference", "updated: 9999-12-31\n").encode()},
               expect="either", where="knowledge/reference/y.md")


# ---------------------------------------------------------------------------
# Topics and their triggers
# ---------------------------------------------------------------------------

REDOS = [
    "(a|a)*b", "(.*a){20}", "(a+)+$", "(a*)*b", r"(\w+\s?)*$", "^(([a-z])+.)+[A-Z]([a-z])+$",
    "(x+x+)+y", "(a|aa)+$", "(.*){1,32000}[bc]", "(?:a|a?)+b", r"(\d+)*\.", "((ab)*)*c",
    "(a?){30}a{30}", "(.*,){12}P", r"(\s*)*$", "(a|b|ab)*c", "([a-z]+)*=", "(?:.+)+x",
    r"^(\w+\.?)*@", r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}",
    "(a|ab)*c", r"(\w|\d)+$", "(.+)+b", r"(a|a?)+\1", "(?:(?:a*)*)*b", "(.*?a){25}",
    r"(?i)(A|a)+$", "([^x]*)*y", "(a{1,99}){1,99}b", r"(\S+\s*)+z",
]
BAD_REGEX = ["(", "[a-", "*", "(?P<x>", "a{2,1}", "\\", "(?<!", ""]
SAFE_REGEX = [r"\bdeploy\b", r"(\d+\.){3}\d+", "kube(rnetes|ctl)", LONG_WORD,
              r"\b(remember|forget)\b", "[a-z]+@[a-z]+"]


def _topic(triggers: str, extra: str = "") -> bytes:
    return (f"---\ntype: topic\ntriggers:\n{triggers}{extra}---\n# T\n\nbody\n").encode()


def topic_cases() -> Iterator[Case]:
    p = "topics/t.md"
    check = ["hook", "check-topics", p]
    probe = "a" * 3000 + "!"
    for i, rx in enumerate(REDOS):
        body = _topic(f"  - type: pattern\n    match: {json.dumps(rx)}\n")
        yield Case("topics", f"redos:{rx}", check, {p: body}, where=p, line=3)
        if i % 3 == 0:
            yield Case("topics", f"redos-url:{rx}", check,
                       {p: _topic(f"  - type: url\n    match: {json.dumps(rx)}\n")}, where=p,
                       line=3)
        if i % 3 == 1:
            yield Case("topics", f"redos-match:{rx}", ["topics", "match", probe], {p: body},
                       expect="either", where=p)
    for rx in BAD_REGEX:
        yield Case("topics", f"bad-regex:{rx!r}", check,
                   {p: _topic(f"  - type: pattern\n    match: {json.dumps(rx)}\n")},
                   where=p, line=3)
    for rx in SAFE_REGEX:
        body = _topic(f"  - type: pattern\n    match: {json.dumps(rx)}\n")
        yield Case("topics", f"safe-regex:{rx[:20]}", check, {p: body}, expect="accept")
    yield Case("topics", "compile-with-redos-topic", ["compile", probe],
               {p: _topic('  - type: pattern\n    match: "(a|a)*b"\n')}, expect="either",
               where=p)
    yield Case("topics", "keyword-300", check,
               {p: _topic(f"  - type: keyword\n    keywords: [{LONG_WORD}]\n")}, expect="accept")
    yield Case("topics", "keyword-300-match", ["topics", "match", LONG_WORD],
               {p: _topic(f"  - type: keyword\n    keywords: [{LONG_WORD}]\n")},
               expect="accept")
    yield Case("topics", "mention-300", check,
               {p: _topic(f"  - type: mention\n    names: [{LONG_WORD}]\n")}, expect="accept")
    yield Case("topics", "match-300-word", ["topics", "match", LONG_WORD], {}, expect="accept")
    yield Case("topics", "match-huge-message", ["topics", "match", "word " * 20_000], {},
               expect="accept")
    for name, trig in (
        ("keywords-empty", "  - type: keyword\n    keywords: []\n"),
        ("keywords-empty-str", '  - type: keyword\n    keywords: [""]\n'),
        ("keywords-str", "  - type: keyword\n    keywords: deploy\n"),
        ("keywords-nested", "  - type: keyword\n    keywords: [[a]]\n"),
        ("names-int", "  - type: mention\n    names: 5\n"),
        ("type-unknown", "  - type: telepathy\n"),
        ("type-missing", "  - match: a\n"),
        ("trigger-str", "  - deploy\n"),
        ("match-int", "  - type: pattern\n    match: 5\n"),
        ("match-list", "  - type: pattern\n    match: [a]\n"),
        ("scope-bad", "  - type: pattern\n    match: a\n    scope: everywhere\n"),
        ("cron-bad", '  - type: cron\n    schedule: "61 * * * *"\n'),
        ("cron-fields", '  - type: cron\n    schedule: "* *"\n'),
        ("cron-int", "  - type: cron\n    schedule: 5\n"),
        ("webhook-empty", '  - type: webhook\n    source: ""\n'),
        ("glob-int", "  - type: glob\n    match: 3\n"),
        ("unknown-key", "  - type: pattern\n    match: a\n    bogus: 1\n"),
    ):
        yield Case("topics", name, check, {p: _topic(trig)}, where=p, line=3)
    yield Case("topics", "triggers-not-list", check,
               {p: b"---\ntype: topic\ntriggers: deploy\n---\nx\n"}, where=p, line=3)
    yield Case("topics", "triggers-missing", check, {p: b"---\ntype: topic\n---\nx\n"},
               where=p, line=2)
    for name, sub in (("dotdot", "../../etc/passwd"), ("abs", "/etc/passwd"),
                      ("home", "~/.ssh/id_rsa"), ("missing", "knowledge/nope.md"),
                      ("int", "5"), ("dotdot-inside", "knowledge/../../x.md"),
                      ("git", ".git/config")):
        yield Case("topics", f"subscription-{name}", check,
                   {p: _topic("  - type: keyword\n    keywords: [a]\n",
                              f"subscriptions:\n  - {json.dumps(sub)}\n")}, where=p, line=6,
                   expect="either" if name == "git" else "refuse")
    yield Case("topics", "subscription-symlink-out", check,
               {p: _topic("  - type: keyword\n    keywords: [a]\n",
                          "subscriptions:\n  - knowledge/link.md\n"), "ext/secret.txt": SENTINEL},
               links={"knowledge/link.md": "ext/secret.txt"}, where=p, line=6)
    yield Case("topics", "subscription-symlink-out-compile", ["compile", "a"],
               {p: _topic("  - type: keyword\n    keywords: [a]\n",
                          "subscriptions:\n  - knowledge/link.md\n"), "ext/secret.txt": SENTINEL},
               links={"knowledge/link.md": "ext/secret.txt"}, expect="either", sentinel=True)
    for key, value in (("activation", "sometimes"), ("priority", "urgent"),
                       ("max_context_kb", "1.0e+999"), ("max_context_kb", ".nan"),
                       ("similarity_threshold", "-1"), ("bogus", "1")):
        yield Case("topics", f"{key}={value}", check,
                   {p: _topic("  - type: keyword\n    keywords: [a]\n", f"{key}: {value}\n")},
                   where=p, line=6)


# ---------------------------------------------------------------------------
# Imports
# ---------------------------------------------------------------------------


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _cc(records: list[str]) -> bytes:
    return ("\n".join(records) + "\n").encode()


def _cc_rec(kind: str = "user", ts: str = '"2026-01-05T10:00:00Z"', content: str = '"hi"',
            extra: str = "") -> str:
    role = "user" if kind == "user" else "assistant"
    return (f'{{"type": "{kind}", "sessionId": "s-1", "timestamp": {ts}, '
            f'"message": {{"role": "{role}", "content": {content}}}{extra}}}')


def _imp(name: str, fname: str, data: bytes, expect: str = "refuse", line: int | None = None,
         fmt: str | None = None, mention: str | None = None, extra_files: dict | None = None,
         links: dict | None = None, sentinel: bool = False, args: list[str] = ()) -> Case:
    path = f"ext/{fname}"
    cmd = ["capture", "import", "@" + path, *args] + (["--format", fmt] if fmt else [])
    files = {path: data, **(extra_files or {})}
    return Case("import", name, cmd, files, links or {}, expect=expect, where=fname, line=line,
                mention=mention, sentinel=sentinel)


def import_cases() -> Iterator[Case]:
    ok = _cc_rec()
    reply = _cc_rec("assistant", content='[{"type": "text", "text": "hello"}]')
    # --- Claude Code JSONL
    yield _imp("cc-valid", "s.jsonl", _cc([ok, reply]), expect="accept")
    for label, ts in TS_BAD.items():
        yield _imp(f"cc-ts-{label}", "s.jsonl", _cc([ok, _cc_rec("assistant", ts), reply]),
                   line=2)
    for label, content in (
        ("content-int", "5"), ("content-obj", '{"a": 1}'), ("block-str", '["x"]'),
        ("block-int", "[5]"), ("block-type-int", '[{"type": 5}]'),
        ("tool-input-deep", '[{"type": "tool_use", "name": "x", "input": ' + _deep(5000) + "}]"),
        ("deep-100k", _deep(100_000)), ("deep-900", _deep(900)),
        ("image-bad-b64", '[{"type": "image", "source": {"type": "base64", '
                          '"media_type": "image/png", "data": "!!!"}}]'),
        ("image-src-str", '[{"type": "image", "source": "x"}]'),
        ("tool-result-content-int", '[{"type": "tool_result", "tool_use_id": "a", "content": 5}]'),
    ):
        yield _imp(f"cc-{label}", "s.jsonl", _cc([ok, _cc_rec("user", content=content)]), line=2)
    yield _imp("cc-message-str", "s.jsonl", _cc([ok, '{"type": "user", "sessionId": "s", '
                                                  '"message": "hi"}']), line=2)
    yield _imp("cc-usage-str", "s.jsonl", _cc([ok, _cc_rec("assistant", extra="").replace(
        '"content": "hi"}', '"content": "hi", "usage": {"input_tokens": "lots"}}')]), line=2)
    yield _imp("cc-usage-inf", "s.jsonl", _cc([ok, _cc_rec("assistant").replace(
        '"content": "hi"}', '"content": "hi", "usage": {"input_tokens": 1e999}}')]), line=2)
    yield _imp("cc-usage-neg", "s.jsonl", _cc([ok, _cc_rec("assistant").replace(
        '"content": "hi"}', '"content": "hi", "usage": {"input_tokens": -5}}')]), line=2)
    yield _imp("cc-truncated", "s.jsonl", _cc([ok, reply])[:-20], line=2)
    yield _imp("cc-bad-line-3", "s.jsonl", _cc([ok, reply, "{nope", ok]), line=3)
    yield _imp("cc-non-utf8-line-2", "s.jsonl",
               _cc([ok]) + _cc_rec("user", content='"caf\xe9"').encode("latin-1") + b"\n", line=2)
    yield _imp("cc-record-list", "s.jsonl", _cc([ok, "[1, 2]", reply]), expect="either")
    yield _imp("cc-nul", "s.jsonl", _cc([ok]) + b"\x00\x00\n", line=2)
    yield _imp("cc-empty", "s.jsonl", b"", line=None)
    yield _imp("cc-only-meta", "s.jsonl", _cc(['{"type": "summary", "summary": "x"}']),
               expect="refuse")
    yield _imp("cc-sessionid-int", "s.jsonl", _cc([ok.replace('"s-1"', "5"), reply]),
               expect="either")
    yield _imp("cc-huge-line", "s.jsonl", _cc([_cc_rec(content=json.dumps("x" * 3_000_000))]),
               expect="either")
    # --- Anthropic Messages JSON
    def anth(messages: str, extra: str = "") -> bytes:
        return f'{{"model": "claude", "system": "s"{extra}, "messages": {messages}}}'.encode()

    good = '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}]'  # noqa: E501
    yield _imp("anth-valid", "a.json", anth(good), fmt="anthropic", expect="accept")
    for label, messages in (
        ("messages-str", '"hello"'), ("messages-int", "5"), ("messages-obj", '{"a": 1}'),
        ("messages-null-ok", "null"), ("message-str", '["hi"]'), ("message-int", "[5]"),
        ("content-int", '[{"role": "user", "content": 5}]'),
        ("content-obj", '[{"role": "user", "content": {"a": 1}}]'),
        ("block-str", '[{"role": "user", "content": ["x"]}]'),
        ("block-type-null", '[{"role": "user", "content": [{"text": "x"}]}]'),
        ("block-type-int", '[{"role": "user", "content": [{"type": 3}]}]'),
        ("role-list", '[{"role": ["user"], "content": "x"}]'),
        ("deep", _deep(100_000)), ("deep-content", '[{"role": "user", "content": '
                                                   + _deep(3000) + "}]"),
        ("img-bad", '[{"role": "user", "content": [{"type": "image", "source": '
                    '{"type": "base64", "data": "%%%"}}]}]'),
    ):
        for fmt in ("anthropic", None):
            exp = "either" if label == "messages-null-ok" else "refuse"
            deep = label.startswith("deep")
            yield _imp(f"anth-{label}-{fmt or 'auto'}", "a.json", anth(messages), fmt=fmt,
                       expect=exp, mention="nested" if deep else "messages",
                       line=1 if deep else None)
    yield _imp("anth-response-str", "a.json", anth(good, ', "response": "x"'), fmt="anthropic",
               expect="either")
    yield _imp("anth-usage-str", "a.json", anth(good, ', "response": {"role": "assistant", '
               '"content": "x", "usage": "many"}'), fmt="anthropic")
    yield _imp("anth-top-scalar", "a.json", b"3", fmt="anthropic")
    yield _imp("anth-top-str", "a.json", b'"hello"', fmt="anthropic")
    yield _imp("anth-system-obj", "a.json", anth(good, ', "sys": 1').replace(
        b'"system": "s"', b'"system": {"a": 1}'), fmt="anthropic", expect="either")
    yield _imp("anth-truncated", "a.json", anth(good)[:-15], fmt="anthropic", line=1)
    yield _imp("anth-non-utf8", "a.json", anth('[{"role": "user", "content": "caf\xe9"}]')
               .decode().encode("latin-1"), fmt="anthropic", line=1)
    yield _imp("anth-nan-tokens", "a.json", anth(good, ', "response": {"role": "assistant", '
               '"content": "x", "usage": {"input_tokens": NaN}}'), fmt="anthropic")
    # --- OpenAI chat JSON
    def oai(messages: str, extra: str = "") -> bytes:
        return f'{{"model": "gpt", "id": "c1"{extra}, "messages": {messages}}}'.encode()

    ogood = '[{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]'  # noqa: E501
    yield _imp("oai-valid", "o.json", oai(ogood), fmt="openai", expect="accept")
    for label, messages in (
        ("messages-str", '"hello"'), ("messages-int", "5"), ("message-str", '["hi"]'),
        ("content-int", '[{"role": "user", "content": 5}]'),
        ("part-str", '[{"role": "user", "content": ["x"]}]'),
        ("part-type-int", '[{"role": "user", "content": [{"type": 5}]}]'),
        ("tool-calls-str", '[{"role": "assistant", "content": "x", "tool_calls": "t"}]'),
        ("tool-call-int", '[{"role": "assistant", "content": "x", "tool_calls": [5]}]'),
        ("function-str", '[{"role": "assistant", "tool_calls": [{"function": "f"}]}]'),
        ("image-url-str", '[{"role": "user", "content": [{"type": "image_url", '
                          '"image_url": "data:x"}]}]'),
        ("image-bad-b64", '[{"role": "user", "content": [{"type": "image_url", "image_url": '
                          '{"url": "data:image/png;base64,!!!"}}]}]'),
        ("audio-bad-b64", '[{"role": "user", "content": [{"type": "input_audio", '
                          '"input_audio": {"data": "%%%", "format": "wav"}}]}]'),
        ("audio-format-path", '[{"role": "user", "content": [{"type": "input_audio", '
                              '"input_audio": {"data": "aGk=", "format": "/../../x"}}]}]'),
        ("image-ext-path", '[{"role": "user", "content": [{"type": "image_url", "image_url": '
                           '{"url": "data:image/..%2F..%2Fx;base64,aGk="}}]}]'),
        ("deep", _deep(100_000)),
        ("deep-args", '[{"role": "assistant", "tool_calls": [{"id": "1", "function": '
                      '{"name": "f", "arguments": "' + _deep(5000) + '"}}]}]'),
    ):
        exp = "either" if label in ("audio-format-path", "image-ext-path") else "refuse"
        for fmt in ("openai", None):
            deep = label.startswith("deep")
            yield _imp(f"oai-{label}-{fmt or 'auto'}", "o.json", oai(messages), fmt=fmt,
                       expect=exp, mention="nested" if deep else "messages",
                       line=1 if label == "deep" else None)
    yield _imp("oai-choices-str", "o.json", oai(ogood, ', "choices": "x"'), fmt="openai")
    yield _imp("oai-choice-int", "o.json", oai(ogood, ', "choices": [5]'), fmt="openai")
    yield _imp("oai-usage-str", "o.json", oai(ogood, ', "usage": "x"'), fmt="openai")
    yield _imp("oai-id-obj", "o.json", oai(ogood).replace(b'"id": "c1"', b'"id": {"a": 1}'),
               fmt="openai", expect="either")
    yield _imp("oai-top-null", "o.json", b"null", fmt="openai")
    yield _imp("oai-truncated", "o.json", oai(ogood)[:-3], fmt="openai", line=1)
    # --- ChatGPT export
    yield from chatgpt_cases()
    # --- markdown / text
    yield _imp("md-valid", "log.md", b"User: hi\nAssistant: hello\n", expect="accept")
    yield _imp("md-non-utf8", "log.md", b"User: hi\nAssistant: caf\xe9\n", line=2)
    yield _imp("md-nul", "log.md", b"User: hi\x00\x00\nAssistant: x\n", line=1)
    yield _imp("md-binary", "log.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(256),
               line=1)
    yield _imp("md-empty", "log.md", b"", line=None)
    yield _imp("md-whitespace", "log.md", b"  \n\n\t\n", line=None)
    yield _imp("md-frontmatter-only", "log.md", b"---\ntitle: x\n---\n", line=None)
    yield _imp("md-utf16", "log.md", "User: hi\n".encode("utf-16"), line=1)
    yield _imp("md-huge-line", "log.md", b"User: " + b"w " * 1_500_000 + b"\n",
               expect="either")
    yield _imp("md-300-word", "log.md", f"User: {LONG_WORD}\n".encode(), expect="accept")
    yield _imp("json-scalar-auto", "x.json", b"42", expect="either")
    yield _imp("json-list-of-ints", "x.json", b"[1, 2, 3]")
    yield _imp("json-empty-list", "x.json", b"[]")
    yield _imp("json-empty-obj", "x.json", b"{}")
    # --- the import command's own arguments
    good_file = _cc([ok, reply])
    for label, args, exp in (
        ("started-year1", ["--started", "0001-01-01"], "refuse"),
        ("started-year9999", ["--started", "9999-12-31"], "refuse"),
        ("started-year9999-zone", ["--started", "9999-12-31T23:59:59-12:00"], "refuse"),
        ("started-garbage", ["--started", "tuesday"], "refuse"),
        ("started-1e20", ["--started", "1e20"], "refuse"),
        ("timezone-path", ["--timezone", "../../etc/passwd"], "refuse"),
        ("timezone-abs", ["--timezone", "/etc/passwd"], "refuse"),
        ("timezone-mars", ["--timezone", "Mars/Phobos"], "refuse"),
        ("timezone-offset", ["--timezone", "+25:00"], "refuse"),
        ("session-empty", ["--session", ""], "refuse"),
        ("session-slash", ["--session", "a/b"], "refuse"),
        ("session-dotdot", ["--session", "../../x"], "refuse"),
        ("session-newline", ["--session", "a\nb"], "refuse"),
        ("session-long", ["--session", "s" * 300], "refuse"),
        ("model-newline", ["--model", "a\nb: c"], "either"),
        ("channel-yaml", ["--channel", "x\n---\n"], "either"),
    ):
        md = b"User: hi\nAssistant: hello\n"
        data = md if label.startswith("started") else good_file
        fname = "log.md" if label.startswith("started") else "s.jsonl"
        c = _imp(f"arg-{label}", fname, data, expect=exp, args=args)
        c.surface, c.where = "cli", None
        yield c
    for label, args in (("missing-file", ["capture", "import", "nope.json"]),
                        ("dir", ["capture", "import", "knowledge"]),
                        ("format-bogus", ["capture", "import", "--format", "xml", "x"])):
        yield Case("cli", f"import-{label}", args)


def _gpt(mapping: dict, current: str | None = "m2", extra: dict | None = None) -> bytes:
    conv = {"title": "t", "create_time": 1767600000, "update_time": 1767600100,
            "mapping": mapping, "conversation_id": "c-1", **(extra or {})}
    if current is not None:
        conv["current_node"] = current
    return json.dumps([conv]).encode()


def _node(nid: str, parent: str | None, role: str = "user", text: str = "hi",
          ts: object = 1767600000, children: list | None = None, parts: list | None = None,
          ) -> dict:
    return {"id": nid, "parent": parent, "children": children or [],
            "message": {"id": nid, "author": {"role": role}, "create_time": ts,
                        "content": {"content_type": "text",
                                    "parts": parts if parts is not None else [text]}}}


def _chain(**over: object) -> dict:
    m1 = _node("m1", None, children=["m2"])
    m2 = _node("m2", "m1", "assistant", "hello")
    for k, v in over.items():
        m2["message"][k] = v
    return {"m1": m1, "m2": m2}


def chatgpt_cases() -> Iterator[Case]:
    yield _imp("gpt-valid", "conversations.json", _gpt(_chain()), expect="accept")
    for label, ts in TS_BAD.items():
        raw = _gpt(_chain()).replace(b'"create_time": 1767600000, "content": {"content_type": '
                                     b'"text", "parts": ["hello"]', b'"create_time": '
                                     + ts.encode() + b', "content": {"content_type": "text", '
                                     b'"parts": ["hello"]', 1)
        yield _imp(f"gpt-msg-ts-{label}", "conversations.json", raw, mention="m2")
        conv = _gpt(_chain()).replace(b'"create_time": 1767600000, "update_time"',
                                      b'"create_time": ' + ts.encode() + b', "update_time"', 1)
        yield _imp(f"gpt-conv-ts-{label}", "conversations.json", conv, mention="create_time")
    # cycles
    a = _node("a", "b", children=["b"])
    b = _node("b", "a", "assistant", children=["a"])
    yield _imp("gpt-cycle-parent", "conversations.json", _gpt({"a": a, "b": b}, "a"))
    yield _imp("gpt-cycle-children-no-current", "conversations.json",
               _gpt({"r": _node("r", None, children=["a"]), "a": _node("a", "r", children=["b"]),
                     "b": _node("b", "a", "assistant", children=["a"])}, None))
    yield _imp("gpt-self-child", "conversations.json",
               _gpt({"r": _node("r", None, children=["r"])}, None))
    yield _imp("gpt-self-parent", "conversations.json", _gpt({"r": _node("r", "r")}, "r"))
    yield _imp("gpt-child-missing", "conversations.json",
               _gpt({"r": _node("r", None, children=["zz"])}, None), expect="either")
    long_chain = {f"n{i}": _node(f"n{i}", f"n{i - 1}" if i else None, "user" if i % 2 else
                                 "assistant", children=[f"n{i + 1}"]) for i in range(3000)}
    yield _imp("gpt-long-chain", "conversations.json", _gpt(long_chain, "n2999"),
               expect="accept")
    # structure
    for label, conv in (
        ("mapping-list", _gpt([])),  # type: ignore[arg-type]
        ("mapping-str", json.dumps([{"mapping": "x", "current_node": "a"}]).encode()),
        ("node-str", _gpt({"m1": "x"}, "m1")),
        ("message-str", _gpt({"m1": {"id": "m1", "parent": None, "message": "hi"}}, "m1")),
        ("content-str", _gpt({"m1": {"id": "m1", "parent": None, "message": {
            "author": {"role": "user"}, "content": "hi"}}}, "m1")),
        ("parts-str", _gpt({"m1": _node("m1", None, parts="hi")}, "m1")),  # type: ignore
        ("author-str", _gpt({"m1": {"id": "m1", "parent": None, "message": {
            "author": "user", "content": {"parts": ["x"]}}}}, "m1")),
        ("metadata-str", _gpt({"m1": {"id": "m1", "parent": None, "message": {
            "author": {"role": "user"}, "metadata": "x", "content": {"parts": ["x"]}}}}, "m1")),
        ("children-str", _gpt({"r": {"id": "r", "parent": None, "children": "a",
                                     "message": None}}, None)),
        ("parent-list", _gpt({"r": _node("r", ["x"])}, "r")),  # type: ignore[arg-type]
        ("conv-not-object", b'[5, "x"]'),
        ("deep", b'[{"mapping": ' + _deep(100_000).encode() + b"}]"),
        ("deep-part", _gpt(_chain(content={"content_type": "text",
                                           "parts": [json.loads(_deep(500))]}))),
        ("title-obj", _gpt(_chain(), extra={"title": {"a": 1}})),
    ):
        yield _imp(f"gpt-{label}", "conversations.json", conv,
                   expect="either" if label in ("deep-part", "title-obj") else "refuse")
    # asset pointers that leave the export folder
    secret = {"ext/secret.png": SENTINEL, "ext/export/file-ok.png": b"\x89PNGok"}
    for label, ptr in (
        ("dotdot", "file-service://../secret"), ("dotdot-bare", "../secret"),
        ("abs", "/tmp/../etc/passwd"), ("abs-secret", "@ABS@"),
        ("scheme-abs", "file-service:///etc/passwd"), ("glob-star", "file-service://*"),
        ("glob-parent", "file-service://../*"), ("glob-recursive", "sediment://**/*"),
        ("backslash", "file-service://..\\secret"), ("empty", "file-service://"),
        ("nul", "file-service://a\x00b"), ("long", "file-service://" + "x" * 5000),
    ):
        parts = ["look", {"content_type": "image_asset_pointer", "asset_pointer": ptr}]
        conv = _gpt({"m1": _node("m1", None, parts=parts, children=["m2"]),
                     "m2": _node("m2", "m1", "assistant", "ok")})
        exp = "either" if label in ("empty", "long") else "refuse"
        yield _imp(f"gpt-asset-{label}", "export/conversations.json", conv, expect=exp,
                   extra_files=secret, sentinel=True, mention="m1" if exp == "refuse" else None)
    parts = ["look", {"content_type": "image_asset_pointer",
                      "asset_pointer": "file-service://file-link"}]
    conv = _gpt({"m1": _node("m1", None, parts=parts, children=["m2"]),
                 "m2": _node("m2", "m1", "assistant", "ok")})
    yield _imp("gpt-asset-symlink-out", "export/conversations.json", conv, extra_files=secret,
               links={"ext/export/file-link.png": "ext/secret.png"}, sentinel=True,
               mention="m1")
    parts = ["look", {"content_type": "image_asset_pointer",
                      "asset_pointer": "file-service://file-ok"}]
    conv = _gpt({"m1": _node("m1", None, parts=parts, children=["m2"]),
                 "m2": _node("m2", "m1", "assistant", "ok")})
    yield _imp("gpt-asset-inside", "export/conversations.json", conv, extra_files=secret,
               expect="accept", sentinel=True)
    yield _imp("gpt-asset-dir", "export/conversations.json", conv.replace(b"file-ok", b"sub"),
               extra_files={"ext/export/sub/x.png": b"x"}, expect="either")


# ---------------------------------------------------------------------------
# CLI arguments and stdin
# ---------------------------------------------------------------------------

START = (["capture", "start", "--session", "s1", "--topic", "t"], None)


LONG_PROMPT = " ".join(f"w{i}x" for i in range(15_000))


def cli_cases() -> Iterator[Case]:
    for label, args, exp in (
        ("session-empty", ["--session", ""], "refuse"),
        ("session-slash", ["--session", "a/b"], "refuse"),
        ("session-dotdot", ["--session", "../../x"], "refuse"),
        ("session-dot", ["--session", "."], "refuse"),
        ("session-newline", ["--session", "a\nb"], "refuse"),
        ("session-nul-like", ["--session", "a\tb"], "refuse"),
        ("session-300", ["--session", "s" * 300], "refuse"),
        ("timezone-path", ["--timezone", "../../etc/passwd"], "refuse"),
        ("timezone-abs", ["--timezone", "/etc/passwd"], "refuse"),
        ("timezone-mars", ["--timezone", "Mars/Phobos"], "refuse"),
        ("timezone-offset", ["--timezone", "+25:00"], "refuse"),
        ("timezone-empty", ["--timezone", ""], "either"),
        ("started-year1", ["--started", "0001-01-01"], "refuse"),
        ("started-year9999", ["--started", "9999-12-31"], "refuse"),
        ("started-year9999-zone", ["--started", "9999-12-31T23:59:59-12:00"], "refuse"),
        ("started-year1-zone", ["--started", "0001-01-01T00:00:00+14:00"], "refuse"),
        ("started-1e20", ["--started", "1e20"], "refuse"),
        ("started-feb30", ["--started", "2026-02-30"], "refuse"),
        ("started-garbage", ["--started", "tuesday"], "refuse"),
        ("topic-300-word", ["--topic", LONG_WORD], "accept"),
        ("topic-300-words", ["--topic", "word " * 300], "accept"),
        ("topic-slash", ["--topic", "../../etc/passwd"], "accept"),
        ("topic-unicode", ["--topic", "ünïcödé 日本語"], "accept"),
        ("topic-empty", ["--topic", ""], "either"),
        ("model-yaml", ["--model", "x\nstarted: 1999"], "either"),
        ("tag-yaml", ["--tag", "a]: b"], "either"),
    ):
        yield Case("cli", f"start-{label}", ["capture", "start", *args], expect=exp)
    for label, text, exp in (("non-utf8", b"caf\xe9 \xff\xfe", "refuse"),
                             ("nul", b"a\x00b", "either"), ("empty", b"", "either"),
                             ("crlf", b"a\r\nb\r\n", "accept"),
                             ("utf16", "hello".encode("utf-16"), "refuse"),
                             ("lone-surrogate", b"\xed\xa0\x80", "refuse"),
                             ("huge", b"word " * 1_000_000, "either")):
        yield Case("stdin", f"append-{label}", ["capture", "append", "--session", "s1",
                                                "--role", "user"], stdin=text, expect=exp,
                   setup=[START])
    yield Case("stdin", "append-no-session", ["capture", "append", "--session", "nope",
                                              "--role", "user", "hi"])
    yield Case("stdin", "append-at-year1", ["capture", "append", "--session", "s1", "--role",
                                            "user", "--at", "0001-01-01", "hi"], setup=[START])
    yield Case("stdin", "append-at-1e20", ["capture", "append", "--session", "s1", "--role",
                                           "user", "--at", "1e20", "hi"], setup=[START])
    yield Case("stdin", "append-5mb-turn", ["capture", "append", "--session", "s1", "--role",
                                            "user"], stdin=b"words " * 900_000, expect="either",
               setup=[START])
    yield Case("stdin", "end-after-900kb-turn", ["capture", "end", "--session", "s1"],
               expect="accept", setup=[START, (["capture", "append", "--session", "s1",
                                                "--role", "user"], b"words " * 150_000)])
    yield Case("stdin", "end-unknown", ["capture", "end", "--session", "nope"])
    yield Case("stdin", "end-tokens-neg", ["capture", "end", "--session", "s1", "--tokens-in",
                                           "-5"], setup=[START])
    yield Case("stdin", "attach-missing", ["capture", "attach", "--session", "s1", "nope.png"],
               setup=[START])
    yield Case("stdin", "attach-name-dotdot", ["capture", "attach", "--session", "s1",
                                               "--name", "../../../x.png", "@ext/a.png"],
               files={"ext/a.png": b"png"}, setup=[START], expect="either")
    yield Case("stdin", "tool-non-utf8-ish", ["capture", "tool", "--session", "s1", "x\udcff",
                                              "a", "b"], setup=[START], expect="either")
    for label, stdin in (("trim-non-utf8", b"\xff\xfe"), ("trim-not-json", b"{nope"),
                         ("trim-deep", _deep(100_000).encode()), ("trim-not-list", b'"x"')):
        yield Case("stdin", label, ["trim", "--messages", "-", "--context-window", "1000"],
                   stdin=stdin, expect="refuse")
    for label, data in (("file-deep", _deep(100_000).encode()), ("file-non-utf8", b"\xff"),
                        ("file-not-list", b"5"), ("file-bad-msg", b"[5]")):
        yield Case("cli", f"trim-{label}", ["trim", "--messages", "@ext/m.json",
                                            "--context-window", "1000"],
                   files={"ext/m.json": data}, where="m.json")
    for label, stdin in (("hook-non-utf8", b"\xff\xfe"), ("hook-deep", _deep(100_000).encode()),
                         ("hook-list", b"[1]")):
        yield Case("stdin", f"claude-{label}", ["hook", "claude-code", "UserPromptSubmit"],
                   stdin=stdin, expect="accept")
    # references to knowledge entries
    for label, ref in (("dotdot", "../x.md:1"), ("abs", "/etc/passwd:1"),
                       ("line0", "knowledge/memory/MEMORY.md:0"),
                       ("line-neg", "knowledge/memory/MEMORY.md:-1"),
                       ("line-word", "knowledge/memory/MEMORY.md:abc"),
                       ("line-huge", "knowledge/memory/MEMORY.md:" + "9" * 30),
                       ("range-open", "knowledge/memory/MEMORY.md:1-"),
                       ("range-back", "knowledge/memory/MEMORY.md:9-2"),
                       ("git", ".git/config:1"), ("empty", ""), ("missing", "nope.md:1"),
                       ("dir", "knowledge:1"), ("colon-only", ":"),
                       ("db", "memory.db:1")):
        for cmd in (["reinforce"], ["demote"], ["update"]):
            args = [*cmd, ref] + (["new text"] if cmd == ["update"] else [])
            yield Case("cli", f"{cmd[0]}-{label}", args)
    for label, args in (
        ("since-year0", ["search", "--since", "0000-01-01", "x"]),
        ("since-word", ["search", "--since", "tuesday", "x"]),
        ("since-feb30", ["search", "--since", "2026-02-30", "x"]),
        ("until-1e999", ["search", "--until", "1e999999", "x"]),
        ("limit-neg", ["search", "--limit", "-1", "x"]),
        ("limit-huge", ["search", "--limit", "9" * 30, "x"]),
        ("category", ["search", "--category", "bogus", "x"]),
        ("category-empty", ["search", "--category", "", "x"]),
        ("path-dotdot", ["search", "--path", "../../etc", "x"]),
        ("export-since", ["export", "--since", "2026-13-01"]),
        ("export-format", ["export", "--format", "xml"]),
        ("compile-budget-neg", ["compile", "--budget", "-5", "x"]),
        ("compile-budget-zero", ["compile", "--budget", "0", "x"]),
        ("compile-budget-huge", ["compile", "--budget", "9" * 40, "x"]),
        ("compile-session-missing", ["compile", "--session", "nope.md", "x"]),
        ("compile-session-dotdot", ["compile", "--session", "../../etc/passwd", "x"]),
        ("trim-window-neg", ["trim", "--messages", "-", "--context-window", "-1"]),
        ("config-get-bogus", ["config", "get", "bogus.key"]),
        ("config-get-empty", ["config", "get", ""]),
        ("condense-date", ["condense", "daily", "--date", "2026-02-30"]),
        ("condense-year1", ["condense", "daily", "--date", "0001-01-01"]),
        ("tag-bogus", ["tag", "bogus"]),
        ("log-at-bogus", ["log", "--at", "no-such-tag", "knowledge/memory/MEMORY.md"]),
        ("log-at-year1", ["log", "--at", "0001-01-01", "knowledge/memory/MEMORY.md"]),
        ("topics-event", ["topics", "match", "--event", "cron:", "x"]),
        ("hook-bogus", ["hook", "bogus"]),
        ("repo-missing", ["--repo", "/nonexistent/x", "search", "x"]),
        ("repo-file", ["--repo", "memory-config.yaml", "search", "x"]),
        ("remember-empty", ["remember", ""]),
        ("extract-missing", ["extract", "--offline", "nope.md"]),
        ("extract-dotdot", ["extract", "--offline", "../../etc/passwd"]),
        ("extract-since", ["extract", "--offline", "--since", "0001-01-01"]),
        ("prune-date", ["prune", "--today", "9999-12-31"]),
        # a pasted log as the query: 15,000 distinct words (~100 KB, under one argv
        # string's 128 KB), which the ranked query must not join into one OR
        ("search-15k-words", ["search", LONG_PROMPT]),
        ("compile-15k-words", ["compile", "--budget", "2000", LONG_PROMPT]),
    ):
        if label.endswith("15k-words"):
            yield Case("cli", label, args, expect="accept")
            continue
        exp = "either" if label in ("topics-event", "compile-budget-huge", "limit-huge",
                                    "path-dotdot", "extract-since") else "refuse"
        yield Case("cli", label, args, expect=exp)


# ---------------------------------------------------------------------------
# symlinks in the work tree: a memory file that is a link to a file outside the repo
# ---------------------------------------------------------------------------

LINKED = b"".join(SENTINEL + b" alpha bravo charlie delta\n" for _ in range(12))


def symlink_cases() -> Iterator[Case]:
    """Nothing reads through a link: not search (its snippets, its scan when memory.db is
    unreadable), not the compiler, and not a writer, which would copy the linked text into
    the repo. The outside text must appear neither in the repo nor in the output."""
    import datetime as dt

    from memrepo.layout import MEMORY_FILE, journal_path

    out = {"ext/secret.txt": LINKED}
    note = "knowledge/reference/notes.md"
    for name, args, files, links, expect, where in (
        ("search-file", ["search", "alpha bravo"], {}, {note: "ext/secret.txt"}, "either",
         None),
        ("search-scan-file", ["search", "alpha bravo"], {"memory.db": b"not a database"},
         {note: "ext/secret.txt"}, "either", None),
        ("search-folder", ["search", "alpha bravo"], {"ext/dir/notes.md": LINKED},
         {"knowledge/linked": "ext/dir"}, "either", None),
        ("search-scan-folder", ["search", "alpha bravo"],
         {"memory.db": b"not a database", "ext/dir/notes.md": LINKED},
         {"knowledge/linked": "ext/dir"}, "either", None),
        ("compile-memory", ["compile", "alpha bravo"], {}, {MEMORY_FILE: "ext/secret.txt"},
         "either", None),
        ("remember-journal", ["remember", "alpha"], {},
         {journal_path(dt.date.today()): "ext/secret.txt"}, "refuse",
         journal_path(dt.date.today())),
        ("prune-memory", ["prune", "--offline"], {}, {MEMORY_FILE: "ext/secret.txt"},
         "refuse", MEMORY_FILE),
    ):
        yield Case("symlinks", name, args, {**out, **files}, links=links, expect=expect,
                   where=where, sentinel=True)
    # a folder of the repo linked to one outside: a new file would be written there
    for name, args, folder in (("capture-start-raw", ["capture", "start", "--session", "s9"],
                                "raw"),
                               ("remember-knowledge", ["remember", "tea"], "knowledge")):
        yield Case("symlinks", name, args, {f"ext/{folder}/.keep": b""},
                   links={folder: f"ext/{folder}"}, expect="refuse", where=f"{folder}/")


def fifo_cases() -> Iterator[Case]:
    """A named pipe in place of a memory file: opening it to read waits for a writer that
    never comes. Every command must finish (a refusal naming it, or going on without it),
    and the agent's hooks within their deadline."""
    import datetime as dt

    from memrepo.layout import MEMORY_FILE, journal_path

    today = journal_path(dt.date.today())
    for name, args, fifo, expect, where in (
        ("compile-topic", ["compile", "deploy"], "topics/fifo.md", "either", None),
        ("compile-identity", ["compile", "deploy"], "knowledge/identity/SOUL.md", "either",
         None),
        ("compile-memory", ["compile", "deploy"], MEMORY_FILE, "either", None),
        ("search-scan", ["search", "deploy"], "knowledge/reference/fifo.md", "either", None),
        ("remember-journal", ["remember", "tea"], today, "refuse", today),
        ("prune-memory", ["prune", "--dry-run"], MEMORY_FILE, "refuse", MEMORY_FILE),
        ("prune-knowledge", ["prune", "--dry-run"], "knowledge/reference/fifo.md", "either",
         None),
    ):
        files = {"memory.db": b"not a database"} if name == "search-scan" else {}
        yield Case("fifos", name, args, files, fifos=[fifo], expect=expect, where=where)


# ---------------------------------------------------------------------------
# agent hooks: the transcript_path of a payload naming what is no session log
# ---------------------------------------------------------------------------

#: What a hook's payload may name as its log (``@EXT@``: the folder beside the repo):
#: name, path, files, links, FIFOs, holes, what the worker must do.
HOSTILE_LOGS: tuple[tuple[str, str, dict, dict, list, dict, str], ...] = (
    ("fifo", "@EXT@/fifo.jsonl", {}, {}, ["ext/fifo.jsonl"], {}, "refuse"),
    ("dev-zero", "/dev/zero", {}, {}, [], {}, "refuse"),
    ("dev-urandom", "/dev/urandom", {}, {}, [], {}, "refuse"),
    ("folder", "@EXT@/dir.jsonl", {"ext/dir.jsonl/.keep": b""}, {}, [], {}, "refuse"),
    ("symlink-outside", "@EXT@/p/link.jsonl",
     {"ext/private.jsonl": _cc([_cc_rec(content=json.dumps(SENTINEL.decode() + " plans")),
                                _cc_rec("assistant", content='"noted"')])},
     {"ext/p/link.jsonl": "ext/private.jsonl"}, [], {}, "refuse"),
    ("missing", "@EXT@/gone.jsonl", {}, {}, [], {}, "refuse"),
    ("sparse-200mb", "@EXT@/big.jsonl", {"ext/big.jsonl": _cc([_cc_rec()])}, {}, [],
     {"ext/big.jsonl": 200 << 20}, "either"),
)


def transcript_path_cases() -> Iterator[Case]:
    """`memory hook claude-code EVENT` with a payload whose ``transcript_path`` is a FIFO,
    a device, a folder, a link to a file outside, nothing, or a huge sparse file: the hook
    exits 0 at once, and its detached worker must finish within the harness's bound (no
    hung process), stay within its memory bound, and refuse (a logged failure, no
    transcript, nothing of the linked file in the repo) all but the sparse file, of which
    it reads a bounded part."""
    for event in ("Stop", "PreCompact", "SessionEnd"):
        for name, path, files, links, fifos, holes, worker in HOSTILE_LOGS:
            payload = {"hook_event_name": event, "session_id": f"hostile-{name}",
                       "transcript_path": path}
            if name == "missing" and event == "SessionEnd":
                worker = "either"  # `claude mcp list` ends a session it never logged: no-op
            yield Case("transcripts", f"{name}-{event}", ["hook", "claude-code", event],
                       files, links=links, fifos=fifos, stdin=json.dumps(payload).encode(),
                       expect="accept", sentinel=True, holes=holes, detached=True,
                       worker=worker)


def all_cases() -> list[Case]:
    out: list[Case] = []
    for gen in (config_cases, frontmatter_cases, topic_cases, import_cases, cli_cases,
                symlink_cases, fifo_cases, transcript_path_cases):
        out.extend(gen())
    return out
