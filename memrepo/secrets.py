"""Secret detection and redaction: one rule set for the pre-commit check and for capture.

Hand-written rules (gitleaks-style regexes) rather than a scanning library because the
same rules must (a) report file:line at commit time without printing the value and
(b) give exact spans so capture can redact before anything touches disk, and the hook
must stay cheap: one compiled pass per rule over the staged text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

#: A line containing this marker is never flagged (for documented example keys).
ALLOW_MARKER = "memrepo: allow-secret"


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    min_entropy: float = 0.0  # for generic rules: bits per character of the value


def _r(kind: str, pattern: str, flags: int = 0, min_entropy: float = 0.0) -> Rule:
    return Rule(kind, re.compile(pattern, flags), min_entropy)


# Each pattern's group "s" is the secret itself (what gets redacted); the rest is context.
RULES: tuple[Rule, ...] = (
    _r(
        "private-key",
        r"(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)?)",
    ),
    _r("aws-access-key", r"\b(?P<s>(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16})\b"),
    _r(
        "aws-secret-key",
        r"aws.{0,20}?(?:secret|key).{0,20}?[:=]\s*[\"']?(?P<s>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        re.IGNORECASE,
    ),
    _r("github-token", r"\b(?P<s>gh[pousr]_[A-Za-z0-9]{36,255})\b"),
    _r("github-token", r"\b(?P<s>github_pat_[A-Za-z0-9_]{22,255})\b"),
    _r("gitlab-token", r"\b(?P<s>glpat-[A-Za-z0-9_-]{20,})"),
    _r(
        "slack-webhook",
        r"(?P<s>https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+)",
    ),
    _r("slack-token", r"\b(?P<s>xox[abposr]-[A-Za-z0-9-]{10,})"),
    _r("anthropic-api-key", r"\b(?P<s>sk-ant-[A-Za-z0-9_-]{20,})"),
    _r("openai-api-key", r"\b(?P<s>sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})"),
    _r("google-api-key", r"\b(?P<s>AIza[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])"),
    _r("stripe-key", r"\b(?P<s>(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,})"),
    _r("jwt", r"\b(?P<s>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"),
    _r(
        "url-credentials",
        r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@\"'<>]{1,100}:(?P<s>[^\s:/@\"'<>]{3,200})@[A-Za-z0-9.-]",
        re.IGNORECASE,
    ),
    _r(
        "generic-secret",
        r"(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|access[_-]?key|auth[_-]?key|client[_-]?secret)"
        r"[A-Za-z0-9_-]{0,20}[\"']?\s*(?::|=|=>|:=)\s*[\"']?(?P<s>[A-Za-z0-9/+_.=~-]{16,})",
        re.IGNORECASE,
        min_entropy=3.5,
    ),
)

_PLACEHOLDER_PASSWORDS = {"password", "passwd", "pass", "secret", "changeme", "xxx", "***"}


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


def _plausible(rule: Rule, value: str) -> bool:
    if rule.kind == "url-credentials":
        v = value.lower()
        return not (v in _PLACEHOLDER_PASSWORDS or v.startswith(("$", "{", "<", "%")))
    if rule.min_entropy:
        return entropy(value) >= rule.min_entropy and not value.startswith("[REDACTED")
    return True


def find_secrets(text: str, allowlist: Iterable[str] = ()) -> list[Finding]:
    """Every secret in ``text``, leftmost first, overlapping hits merged (first rule wins)."""
    allow = [re.compile(p) for p in allowlist]
    hits: list[Finding] = []
    for rule in RULES:
        for m in rule.pattern.finditer(text):
            value = m.group("s")
            if not _plausible(rule, value) or any(a.search(value) for a in allow):
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
