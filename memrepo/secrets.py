"""Secret detection and redaction: one rule set for the pre-commit check and for capture.

Hand-written rules (gitleaks-style regexes) rather than a scanning library because the
same rules must (a) report file:line at commit time without printing the value and
(b) give exact spans so capture can redact before anything touches disk, and the hook
must stay cheap: one compiled pass per rule over the staged text.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: A line containing this marker is never flagged (for documented example keys).
ALLOW_MARKER = "memrepo: allow-secret"


@dataclass(frozen=True)
class Rule:
    kind: str
    source: str
    keywords: tuple[str, ...]  # lower case; every match contains one (gitleaks' prefilter)
    flags: int = 0
    min_entropy: float = 0.0  # for generic rules: bits per character of the value
    prose: bool = False  # a value found in a sentence must look like one, not a word

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on first use: most texts hold none of a rule's keywords, and compiling
        every rule costs ~10 ms of each ``capture append``."""
        return re.compile(self.source, self.flags)

    def may_match(self, lowered: str) -> bool:
        return any(k in lowered for k in self.keywords)


def _r(kind: str, pattern: str, keywords: str, flags: int = 0, min_entropy: float = 0.0,
       prose: bool = False) -> Rule:
    return Rule(kind, pattern, tuple(keywords.split()), flags, min_entropy, prose)


#: Names a password is stored under, as the last part of a key (``db_password``,
#: ``PGPASSWORD``, ``smtp.passphrase``): ``password_policy`` or ``passwords`` are not.
_PASSWORD_KEY = r"[A-Za-z0-9_.-]*?(?:passw(?:or)?d|passphrase|[_.-]pwd)"
#: A password value: no spaces or quotes; a trailing ``.`` or ``)`` is prose, left out.
_PASSWORD_VALUE = r"(?P<s>[^\s\"'`,;]*[^\s\"'`,;.)])"
#: "the password for the staging db was set to …": the words that may sit in between.
_FOR_WHAT = r"(?:[ \t]+(?:for|of|on|to)(?:[ \t]+[\w.@/-]+){1,4}?)?"

# Each pattern's group "s" is the secret itself (what gets redacted); the rest is context.
RULES: tuple[Rule, ...] = (
    _r(
        "private-key",
        r"(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)?)",
        "private",
    ),
    _r("aws-access-key", r"\b(?P<s>(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16})\b",
       "akia asia agpa aida aroa aipa anpa anva"),
    _r(
        "aws-secret-key",
        r"aws.{0,20}?(?:secret|key).{0,20}?[:=]\s*[\"']?(?P<s>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        "aws",
        re.IGNORECASE,
    ),
    _r("github-token", r"\b(?P<s>gh[pousr]_[A-Za-z0-9]{36,255})\b", "ghp_ gho_ ghu_ ghs_ ghr_"),
    _r("github-token", r"\b(?P<s>github_pat_[A-Za-z0-9_]{22,255})\b", "github_pat_"),
    _r("gitlab-token", r"\b(?P<s>glpat-[A-Za-z0-9_-]{20,})", "glpat-"),
    _r(
        "slack-webhook",
        r"(?P<s>https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+)",
        "hooks.slack.com",
    ),
    _r("slack-token", r"\b(?P<s>xox[abposr]-[A-Za-z0-9-]{10,})", "xox"),
    _r("anthropic-api-key", r"\b(?P<s>sk-ant-[A-Za-z0-9_-]{20,})", "sk-ant-"),
    _r(
        "openai-api-key",
        r"\b(?P<s>sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})",
        "sk-",
    ),
    _r("google-api-key", r"\b(?P<s>AIza[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])", "aiza"),
    _r("stripe-key", r"\b(?P<s>(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,})", "_live_ _test_"),
    _r("jwt", r"\b(?P<s>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})", "eyj"),
    _r(
        "url-credentials",
        r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@\"'<>]{1,100}:(?P<s>[^\s:/@\"'<>]{3,200})@[A-Za-z0-9.-]",
        "://",
        re.IGNORECASE,
    ),
    _r(
        "generic-secret",
        r"(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|access[_-]?key|auth[_-]?key|client[_-]?secret)"
        r"[A-Za-z0-9_-]{0,20}[\"']?\s*(?::|=|=>|:=)\s*[\"']?(?P<s>[A-Za-z0-9/+_.=~-]{16,})",
        "key secret token passw",
        re.IGNORECASE,
        min_entropy=3.5,
    ),
    # ``password: value``, ``password=value``, ``db_password=Sup3rS3cret!``: short,
    # low-entropy values the generic rule misses; common words and placeholders are not.
    _r(
        "password",
        rf"(?<![A-Za-z0-9]){_PASSWORD_KEY}[\"']?[ \t]*(?::|=|=>|:=)[ \t]*[\"']?{_PASSWORD_VALUE}",
        "passw passphrase pwd",
        re.IGNORECASE,
    ),
    # prose: "the staging admin password is hunter2" (the value must look like one)
    _r(
        "password",
        rf"\bpass(?:word|phrase|wd)\b{_FOR_WHAT}[ \t]+(?:has been (?:set|changed) to"
        rf"|(?:was |is )?(?:set|changed|reset) to|is now|is still|is|was)[ \t]*:?[ \t]+[\"'`]?"
        + _PASSWORD_VALUE,
        "passw passphrase",
        re.IGNORECASE,
        prose=True,
    ),
)

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
    if prose:
        return bool(re.search(r"[0-9]|[^\w]|_", value) or re.search(r".[A-Z]", value))
    return True


def _plausible(rule: Rule, value: str) -> bool:
    if rule.kind == "password":
        return _looks_like_password(value, rule.prose)
    if rule.kind == "url-credentials":
        v = value.lower()
        return not (v in _PLACEHOLDER_PASSWORDS or v.startswith(("$", "{", "<", "%")))
    if rule.min_entropy:
        return entropy(value) >= rule.min_entropy and not value.startswith("[REDACTED")
    return True


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


def find_secrets(text: str, allowlist: Iterable[str] = ()) -> list[Finding]:
    """Every secret in ``text``, leftmost first, overlapping hits merged (first rule wins)."""
    allow = _allow_patterns(tuple(allowlist))
    hits: list[Finding] = []
    lowered = text.lower()
    for rule in RULES:
        if not rule.may_match(lowered):
            continue
        for m in rule.pattern.finditer(text):
            value = m.group("s")
            if not _plausible(rule, value) or _allowed(allow, value):
                continue
            line_start = text.rfind("\n", 0, m.start("s")) + 1
            line_end = text.find("\n", m.start("s"))
            if ALLOW_MARKER in text[line_start : line_end if line_end >= 0 else len(text)]:
                continue
            hits.append(
                Finding(rule.kind, text.count("\n", 0, m.start("s")) + 1, m.start("s"), m.end("s"))
            )
    hits.sort(key=lambda f: (f.start, -(f.end - f.start)))
    merged: list[Finding] = []
    for f in hits:
        if merged and f.start < merged[-1].end:
            continue
        merged.append(f)
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
    + _FOR_WHAT
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
