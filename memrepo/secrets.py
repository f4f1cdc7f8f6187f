"""Secret detection and redaction: one rule set for the pre-commit check and for capture.

Two tables, one matcher. gitleaks' rule set (``memrepo/data/gitleaks.toml``, MIT, vendored
verbatim and compiled once into ``gitleaks-rules.json`` by ``tools/refresh_gitleaks.py``)
is the maintained one: ~220 provider formats with keywords, entropy thresholds and
allowlists. A small hand-written table (``HAND_RULES``, in memrepo.secret_rules) adds only
what gitleaks lacks or words differently. Every hit is an exact span (the rule's secret
group), so the hook reports file:line without printing the value and capture redacts
only the secret, before anything touches disk. Both run on every text, so each rule runs
only when one of its keywords is in the text and compiles on first use.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import string
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# the rule types and priorities stay importable from here: memrepo.secrets is the API
from memrepo.errors import MemrepoError
from memrepo.secret_rules import (
    CONTEXTUAL,  # noqa: F401
    FOR_WHAT,
    GENERIC,
    GENERIC_ALLOW,
    HAND_RULES,
    SPECIFIC,
    Allow,
    Rule,
    trie_regex,
)

#: A line containing this marker is never flagged (for documented example keys);
#: gitleaks' own marker is honoured too, for text copied from a gitleaks-scanned repo.
ALLOW_MARKER = "memrepo: allow-secret"
_MARKERS = (ALLOW_MARKER, "gitleaks:allow")


_PLACEHOLDER_PASSWORDS = {"password", "passwd", "pass", "secret", "changeme", "xxx", "***"}
#: Words that follow "password is" / "password:" in prose or docs and are not values.
_COMMON = """a an the this that these those it its is are was be been being in on at to of for
    from with by via as and or but not no none null nil empty blank unset set required
    optional mandatory needed missing wrong right correct incorrect invalid valid expired
    expiring stored kept saved managed rotated rotating changed reset hidden masked
    redacted secret secure insecure weak strong long short same different identical also
    still now too very there here below above unknown tbd todo n/a na changeme password
    passwd passphrase pass pwd example sample dummy test default defined configured
    encrypted hashed shared known available handled generated provided protected listed
    written sent given used only just always never fine ok okay good bad enabled disabled
    true false yes auto random env environment vault file prompt prompted asked entered
    typed ignored your my our their his her user admin root foo bar baz xyz abc value
    string case sensitive length characters chars digits letters policy rules updated
    removed deleted revoked leaked compromised exposed visible shown printed logged
    tested checked verified accepted rejected denied locked unlocked"""
COMMON_WORDS = frozenset(_COMMON.split())


@dataclass(frozen=True)
class Finding:
    kind: str
    line: int  # 1-based
    start: int  # offset of the secret in the text
    end: int


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _looks_like_password(value: str, prose: bool) -> bool:
    """Not a placeholder, a common word, a reference to a variable, or a code expression.

    In prose ("the password is …") the value must also look like one (a digit, a symbol
    or an inner capital), so that "the password is letters" stays prose.
    """
    v = value.lower().rstrip("!?:")
    if len(value) < 4 or v in COMMON_WORDS or v in _PLACEHOLDER_PASSWORDS:
        return False
    if value.startswith(("$", "{", "<", "%", "[", "(", "*", "/", "~", "@")) or len(set(v)) == 1:
        return False
    if re.match(r"^[A-Za-z_][\w.]*[(\[]", value):  # getpass(), os.environ[...]
        return False
    if re.fullmatch(r"[a-z_]\w*(?:\.\w+)+|[A-Z][A-Z0-9]*_[A-Z0-9_]+", value):
        return False  # args.password, self._pw, DB_PASSWORD: names of values, not values
    if prose:  # "case-sensitive", "write-only", "user's" are words, not values
        return bool(re.search(r"[0-9]|[^\w'-]|_", value) or re.search(r".[A-Z]", value))
    return True


def _plausible(rule: Rule, value: str) -> bool:
    if value.startswith("[REDACTED"):
        return False
    if rule.kind == "password":
        return _looks_like_password(value, rule.prose)
    if rule.kind == "url-credentials":
        v = value.lower()
        return not (v in _PLACEHOLDER_PASSWORDS or v.startswith(("$", "{", "<", "%")))
    if rule.min_entropy and entropy(value) < rule.min_entropy:
        return False
    if rule.entropy_above and entropy(value) <= rule.entropy_above:
        return False
    return rule.check is None or rule.check(value)


# ------------------------------------------------------------------------ gitleaks rules

#: gitleaks rule ids that name a kind memrepo already had: the placeholder text
#: (``[REDACTED:github-token]``) stays the same whichever table found the secret.
KIND_ALIASES = {
    "aws-access-token": "aws-access-key",
    "github-pat": "github-token",
    "github-oauth": "github-token",
    "github-app-token": "github-token",
    "github-refresh-token": "github-token",
    "github-fine-grained-pat": "github-token",
    "gitlab-pat": "gitlab-token",
    "gitlab-pat-routable": "gitlab-token",
    "slack-webhook-url": "slack-webhook",
    "slack-bot-token": "slack-token",
    "slack-user-token": "slack-token",
    "slack-app-token": "slack-token",
    "slack-legacy-bot-token": "slack-token",
    "slack-legacy-token": "slack-token",
    "slack-legacy-workspace-token": "slack-token",
    "slack-config-access-token": "slack-token",
    "slack-config-refresh-token": "slack-token",
    "gcp-api-key": "google-api-key",
    "stripe-access-token": "stripe-key",
    "generic-api-key": "generic-secret",
}
#: Rules whose first capture group is a fragment, not the secret (gitleaks reports the
#: fragment; redaction must cover the whole token). A refresh that adds a rule with more
#: than one group fails a test until it is listed here or in ``_FIRST_GROUP_OK``.
_WHOLE_MATCH = frozenset({"jwt-base64", "microsoft-teams-webhook"})
_FIRST_GROUP_OK = frozenset({
    "atlassian-api-token", "curl-auth-header", "curl-auth-user", "dropbox-long-lived-api-token",
    "facebook-access-token", "heroku-api-key-v2", "kubernetes-secret-yaml", "lob-api-key",
    "lob-pub-api-key", "sourcegraph-access-token",
})
#: gitleaks' "key = value" rules open with ``[\w.-]{0,50}?`` (lazy), only to carry the
#: key's name into the match: tried at every position of the text it makes those rules
#: ~15x slower in Python's backtracking engine. The lead is cut off, and the match start
#: found again by walking back over the name (``_lead_start``) for "match" allowlists.
_LEAD = re.compile(r"^(\(\?i\))?\[\\w\.-\]\{0,50\}\?(?:\(\?i:\[\\w\.-\]\{0,50\}\?)?")
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")


def _cut_lead(source: str) -> tuple[str, bool]:
    m = _LEAD.match(source)
    if not m:
        return source, False
    reopen = "(?i:" if "(?i:" in m.group(0) else ""  # okta's nested lead
    return (m.group(1) or "") + reopen + source[m.end() :], True


def _lead_start(text: str, start: int) -> int:
    i = start
    while i > 0 and start - i < 50 and text[i - 1] in _NAME_CHARS:
        i -= 1
    return i


DATA = "data"
RULES_JSON = "gitleaks-rules.json"


@dataclass(frozen=True)
class _Loaded:
    rules: tuple[Rule, ...]
    allow: tuple[Allow, ...]  # gitleaks' global allowlist, applied to every rule
    generic: tuple[Allow, ...]  # generic-api-key's, shared by memrepo's generic rules
    meta: dict[str, Any]


def _load_gitleaks() -> _Loaded:
    path = os.path.join(os.path.dirname(__file__), DATA, RULES_JSON)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:  # a broken install must not scan with half the rules
        raise MemrepoError(f"cannot load the secret rules: {exc}", path) from exc
    rules = []
    for r in data["rules"]:
        allow = tuple(Allow(a["target"], tuple(a["regexes"]), tuple(a["stopwords"]))
                      for a in r["allowlists"])
        if r["id"] == "generic-api-key":
            allow += (GENERIC_ALLOW,)
        group: int | None = r["secret_group"] or None
        if r["id"] in _WHOLE_MATCH:
            group = 0
        generic = r["id"] == "generic-api-key"
        source, lead = _cut_lead(r["regex"])
        rules.append(Rule(
            KIND_ALIASES.get(r["id"], r["id"]), source, tuple(r["keywords"]), re.ASCII,
            group=group, priority=GENERIC if generic else SPECIFIC,
            entropy_above=r["entropy"], allow=allow, origin="gitleaks", lead=lead,
        ))
    g = data["global"]
    generic_allow = next((r.allow for r in rules if r.kind == "generic-secret"), ())
    return _Loaded(tuple(rules), (Allow("secret", tuple(g["regexes"]), tuple(g["stopwords"])),),
                   generic_allow, data["meta"])


_GITLEAKS = _load_gitleaks()
#: Every rule, hand-written first (so an equal hit keeps memrepo's kind name).
RULES: tuple[Rule, ...] = HAND_RULES + _GITLEAKS.rules
GITLEAKS_META: dict[str, Any] = _GITLEAKS.meta


@functools.lru_cache(maxsize=1)
def _all_keywords() -> frozenset[str]:
    return frozenset(k for r in RULES for k in r.keywords)


@functools.lru_cache(maxsize=1)
def _keyword_scan() -> tuple[re.Pattern[str], frozenset[str]]:
    """One pass over the text finds every rule keyword in it (gitleaks uses Aho-Corasick;
    a trie-shaped regex is the nearest stdlib equivalent, 2-4x faster than ~300
    substring searches)."""
    words = _all_keywords()
    return re.compile(trie_regex(words)), words


@functools.lru_cache(maxsize=4096)
def _inside(w: str) -> tuple[frozenset[str], tuple[int, ...]]:
    """For a keyword match ``w``: the keywords within it, and the offsets inside it where a
    keyword longer than the rest of ``w`` may start (only the text can tell)."""
    words = _keyword_scan()[1]
    n = len(w)
    within = frozenset(w[i:j] for i in range(n) for j in range(i + 1, n + 1) if w[i:j] in words)
    longer = tuple(i for i in range(1, n)
                   if any(len(k) > n - i and k.startswith(w[i:]) for k in words))
    return within, longer


#: Bytes scanned by this process: the keyword trie costs ~10 ms to compile, so a
#: one-shot ``capture append`` looks keywords up one by one (~0.5 ms a turn) and a hook
#: scanning many files compiles the trie once it has seen this much text.
_TRIE_AFTER = 64_000
_scanned = 0


def _keywords_in(lowered: str) -> set[str]:
    """The rule keywords in ``lowered``, overlapping ones included (the scan's matches do
    not overlap: what starts inside one comes from ``_inside``)."""
    global _scanned
    _scanned += len(lowered)
    if _scanned < _TRIE_AFTER and not _keyword_scan.cache_info().currsize:
        return {k for k in _all_keywords() if k in lowered}
    scan = _keyword_scan()[0]
    found: set[str] = set()
    for m in scan.finditer(lowered):
        within, longer = _inside(m.group())
        found |= within
        for i in longer:
            hit = scan.match(lowered, m.start() + i)
            if hit:
                found |= _inside(hit.group())[0]
    return found


# ------------------------------------------------------------------------------ matching

#: How long one allowlist pattern may run on one value; past it the value is not allowed
#: (a hanging pattern must never hang a commit or ``capture append``).
ALLOW_TIMEOUT = 0.05


@functools.lru_cache(maxsize=32)
def _allow_patterns(patterns: tuple[str, ...]) -> list[Any]:
    if not patterns:
        return []
    import regex  # with match timeouts; loaded only when an allowlist is set

    return [regex.compile(p) for p in patterns]


def _allowed(allow: list[Any], value: str) -> bool:
    for pattern in allow:
        try:
            if pattern.search(value, timeout=ALLOW_TIMEOUT):
                return True
        except TimeoutError:
            continue
    return False


def _rule_allows(allows: Iterable[Allow], secret: str, match: str, line: str) -> bool:
    for a in allows:
        target = match if a.target == "match" else line if a.target == "line" else secret
        if any(p.search(target) for p in a.compiled):
            return True
        if a.has_stopword(secret):
            return True
    return False


def _line_of(text: str, start: int, end: int) -> str:
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    return text[a : b if b >= 0 else len(text)]


def find_secrets(text: str, allowlist: Iterable[str] = ()) -> list[Finding]:
    """Every secret in ``text``, leftmost first; overlapping hits are one finding covering
    them all, named by the most specific rule (a provider's format over a generic one)."""
    allow = _allow_patterns(tuple(allowlist))
    hits: list[tuple[int, int, int, int, str]] = []  # start, end, priority, order, kind
    present = _keywords_in(text.lower())
    for order, rule in enumerate(RULES):
        if rule.keywords and present.isdisjoint(rule.keywords):
            continue
        for m in rule.pattern.finditer(text):
            start, end = rule.secret_span(m)
            if start < 0 or start == end:
                continue
            value = text[start:end]
            if rule.origin == "gitleaks":  # gitleaks trims newlines off the match
                value = value.strip("\n")
                start = text.index(value, start) if value else start
                end = start + len(value)
            if not value or not _plausible(rule, value) or _allowed(allow, value):
                continue
            line = _line_of(text, start, end)
            if any(marker in line for marker in _MARKERS):
                continue
            if rule.allow or rule.origin == "gitleaks":
                allows = rule.allow + _GITLEAKS.allow
                if rule.origin == "memrepo" and GENERIC_ALLOW in rule.allow:
                    allows += _GITLEAKS.generic  # its ~1,450 stopwords too
                m_start = _lead_start(text, m.start()) if rule.lead else m.start()
                match = text[m_start : m.end()].strip("\n")
                if _rule_allows(allows, value, match, _line_of(text, m_start, m.end())):
                    continue
            hits.append((start, end, rule.priority, order, rule.kind))
    hits.sort()
    merged: list[Finding] = []
    best: tuple[int, int] = (0, 0)
    for start, end, priority, order, kind in hits:
        if merged and start < merged[-1].end:
            last = merged[-1]
            if (priority, order) < best:
                best, kind_ = (priority, order), kind
            else:
                kind_ = last.kind
            merged[-1] = Finding(kind_, last.line, last.start, max(last.end, end))
            continue
        best = (priority, order)
        merged.append(Finding(kind, text.count("\n", 0, start) + 1, start, end))
    return merged


def states_credential(sentence: str) -> bool:
    """Whether a sentence gives a credential's value ("the admin password is letmein").

    Looser than ``find_secrets`` (which blocks commits, so must not cry wolf): dropping a
    candidate knowledge line costs little, so any value that is not a common word counts.
    """
    if find_secrets(sentence):
        return True
    for m in _CREDENTIAL_STATEMENT.finditer(sentence):
        value = m["s"].strip("\"'`.,;:!?)")
        if value and not value.startswith("[REDACTED") and _looks_like_password(value, False):
            return True
    return False


_CREDENTIAL_STATEMENT = re.compile(
    r"\b(?:pass(?:word|phrase|wd|code)|pin(?: code)?|api[ _-]?key|access[ _-]?key|"
    r"(?:auth|access|api|bearer|session) token|token|secret|credentials?)\b"
    + FOR_WHAT
    + r"[ \t]+(?:(?:was |is |has been )?(?:set|changed|reset) to|is now|is|was|are|were)"
    r"[ \t]*:?[ \t]+[\"'`]?(?P<s>\S+)",
    re.IGNORECASE,
)


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact(text: str, allowlist: Iterable[str] = ()) -> tuple[str, int]:
    """Replace each secret by a typed placeholder; return the text and the count."""
    findings = find_secrets(text, allowlist)
    if not findings:
        return text, 0
    out, pos = [], 0
    for f in findings:
        out.append(text[pos : f.start])
        out.append(placeholder(f.kind))
        pos = f.end
    out.append(text[pos:])
    return "".join(out), len(findings)
