"""Secret detection and redaction: one rule set for the pre-commit check and for capture.

Two tables, one matcher. gitleaks' rule set (``memrepo/data/gitleaks.toml``, MIT, vendored
verbatim and compiled once into ``gitleaks-rules.json``) is the maintained one: ~220
provider formats with keywords, entropy thresholds and allowlists. A small hand-written
table (``HAND_RULES``) adds only what gitleaks lacks or words differently: passwords in
prose and assignments, credentials in URLs, ``curl -u``/``sshpass -p``, opaque
``Authorization`` headers, and provider formats gitleaks misses (Google OAuth, Azure
storage, Discord bots, Telegram, Docker Hub, …). Every hit is an exact span (the rule's
secret group), so the hook reports file:line without printing the value and capture
redacts only the secret, before anything touches disk. Both run on every text, so each
rule runs only when one of its keywords is in the text and compiles on first use.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

#: A line containing this marker is never flagged (for documented example keys);
#: gitleaks' own marker is honoured too, for text copied from a gitleaks-scanned repo.
ALLOW_MARKER = "memrepo: allow-secret"
_MARKERS = (ALLOW_MARKER, "gitleaks:allow")

#: Rule priorities: where hits overlap, the most specific kind names the placeholder.
SPECIFIC, CONTEXTUAL, GENERIC = 0, 1, 2


@dataclass(frozen=True)
class Allow:
    """One gitleaks allowlist: a hit is dropped when a regex matches its target (the
    secret, the whole match or its line) or the secret contains a stopword."""

    target: str = "secret"  # "secret" | "match" | "line"
    regexes: tuple[str, ...] = ()
    stopwords: tuple[str, ...] = ()

    @functools.cached_property
    def compiled(self) -> list[re.Pattern[str]]:
        return [re.compile(p, re.ASCII) for p in self.regexes]

    @functools.cached_property
    def _stopword_index(self) -> tuple[frozenset[str], tuple[int, ...]]:
        words = frozenset(self.stopwords)
        return words, tuple(sorted({len(w) for w in words}))

    def has_stopword(self, secret: str) -> bool:
        """Whether ``secret`` contains a stopword written as a word is (``example``,
        ``EXAMPLE``, ``Example``). gitleaks matches them in any case, so 1-2 % of random
        40-90 character tokens hold one of its ~1,450 four-to-nine letter words
        (``wIkIp…`` holds "kip") and slip through; one case pattern cuts that ~5x.
        Each substring of a stopword's length is looked up in a set (a regex of them
        would cost ~100 ms to compile in each ``capture append``)."""
        if not self.stopwords:
            return False
        words, lengths = self._stopword_index
        lowered = secret.lower()
        for n in lengths:
            for i in range(len(secret) - n + 1):
                low = lowered[i : i + n]
                if low in words:
                    sub = secret[i : i + n]
                    if sub == low or sub == low.upper() or sub == low.capitalize():
                        return True
        return False


def _trie_regex(words: Iterable[str]) -> str:
    """An alternation of ``words`` factored by common prefixes (``key(?:board|word)?``):
    Python's engine then tests a few characters per position, not every word."""
    trie: dict[str, Any] = {}
    for w in words:
        node = trie
        for c in w:
            node = node.setdefault(c, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        alts = [re.escape(c) + build(sub) for c, sub in sorted(node.items()) if c]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


@dataclass(frozen=True)
class Rule:
    kind: str
    source: str
    keywords: tuple[str, ...]  # lower case; every match contains one (gitleaks' prefilter)
    flags: int = 0
    min_entropy: float = 0.0  # bits per character the secret must reach (hand rules: >=)
    prose: bool = False  # a value found in a sentence must look like one, not a word
    group: int | str | None = None  # the secret's group; None: first non-empty, else all
    priority: int = SPECIFIC
    entropy_above: float = 0.0  # gitleaks' threshold: the secret's entropy must exceed it
    allow: tuple[Allow, ...] = ()
    check: Callable[[str], bool] | None = field(default=None, compare=False)
    origin: str = "memrepo"  # or "gitleaks"
    lead: bool = False  # gitleaks' ``[\w.-]{0,50}?`` lead was cut off ``source`` (see _cut_lead)

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on first use: most texts hold none of a rule's keywords, and compiling
        every rule costs far more than one ``capture append`` may spend."""
        return re.compile(self.source, self.flags)

    def may_match(self, lowered: str) -> bool:
        return not self.keywords or any(k in lowered for k in self.keywords)

    def secret_span(self, m: re.Match[str]) -> tuple[int, int]:
        if self.group is not None and (self.group == 0 or m.start(self.group) >= 0):
            return m.span(self.group)  # else an alternative's group holds it (sshpass)
        for i in range(1, (m.re.groups or 0) + 1):
            if m.group(i):
                return m.span(i)
        return m.span()


# --------------------------------------------------------------------------- hand rules

#: Names a password is stored under, as the last part of a key (``db_password``,
#: ``PGPASSWORD``, ``smtp.passphrase``): ``password_policy`` or ``passwords`` are not.
_PASSWORD_KEY = r"(?:passw(?:or)?d|passphrase|[_.-]pwd)"
#: A password value: no spaces or quotes; a trailing ``.`` or ``)`` is prose, left out.
_PASSWORD_VALUE = r"(?P<s>[^\s\"'`,;]*[^\s\"'`,;.)])"
#: "the password for the staging db was set to …": the words that may sit in between.
_FOR_WHAT = r"(?:[ \t]+(?:for|of|on|to)(?:[ \t]+[\w.@/-]+){1,4}?)?"
#: The end of a token: not followed by more token characters.
_END = r"(?![A-Za-z0-9_-])"


def _r(kind: str, pattern: str, keywords: str, flags: int = 0, *, min_entropy: float = 0.0,
       prose: bool = False, priority: int = SPECIFIC, check: Callable[[str], bool] | None = None,
       allow: tuple[Allow, ...] = ()) -> Rule:
    return Rule(kind, pattern, tuple(keywords.split()), flags, min_entropy, prose,
                "s", priority, allow=allow, check=check)


def _mixed(value: str) -> bool:
    """Generated tokens mix digits and letters; words, names and paths rarely do."""
    return bool(re.search(r"[0-9]", value) and re.search(r"[A-Za-z]", value))


def _wordy(value: str) -> bool:
    """``prod/db/credentials-2024``, ``user:{id}:profile``: identifiers made of words and
    numbers, where a generated secret mixes letters and digits inside its segments."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", value) if p]
    return len(parts) >= 2 and all(p.isdigit() or p.isalpha() for p in parts)


def _basic_credentials(value: str) -> bool:
    """``Basic`` carries base64 of ``user:password``: anything else is not one."""
    import base64
    import binascii

    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in raw and not raw.startswith(b":")


def _not_a_reference(value: str) -> bool:
    """``$PASS``, ``${TOKEN}``, ``<token>``, ``{{ secret }}``, ``%PASSWORD%`` are names."""
    v = value.strip("'\"")
    return len(v) >= 4 and not v.startswith(("$", "{", "<", "%", "*", "[")) and len(set(v)) > 2


#: memrepo's additions to generic-api-key's allowlist (matched against the whole match),
#: also used by the hand-written generic rules: key names whose values are identifiers,
#: digests or counts in a memory repo's notes.
_GENERIC_ALLOW = Allow("match", (
    r"(?i)(?:cache|idempotency|partition|sort|dedup|lookup|object|row|hash|s3|routing|sharding"
    r"|license|registry|ssh[_.-]?host|signing[_.-]?key[_.-]?id)[_.-]?key",
    r"(?i)(?:token|key)s?[_.-]?(?:count|limit|budget|usage|ids?|type|len(?:gth)?|prefix|hint)",
    r"(?i)tokeni[sz]er",
    # a UUID under a plain name (tenant_key, job_id) is an identifier; under a credential's
    # name (api_key, auth_token, client_secret) it stays a secret
    r"(?i)(?:^|[^\w-])(?![\w-]*(?:token|secret|passw|pwd|api|cred|access|private|signing|auth))"
    r"[\w-]+[\"']?[ \t]*[:=]{1,2}[ \t]*[\"']?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}"
    r"[.,]?[\"'\s;`]*$",
))


# Each pattern's group "s" is the secret itself (what gets redacted); the rest is context.
HAND_RULES: tuple[Rule, ...] = (
    _r(
        "private-key",
        r"(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)?)",
        "private",
    ),
    # PuTTY .ppk: the private half is the base64 under "Private-Lines: N"
    _r("putty-private-key", r"Private-Lines:[ \t]*\d+[ \t]*\r?\n(?P<s>(?:[A-Za-z0-9+/=]{4,}"
       r"[ \t]*(?:\r?\n|$))+)", "private-lines"),
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
    _r("gitlab-token", r"\b(?P<s>gl(?:pat|rt|dt|ft|cbt|ptt|soat|oas|imt|ffct|agent)-"
       r"[A-Za-z0-9_.-]{20,})", "glpat- glrt- gldt- glft- glcbt- glptt- glsoat- gloas- glimt- "
       "glffct- glagent-"),
    _r(
        "slack-webhook",
        r"(?P<s>https://hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]+/"
        r"[A-Za-z0-9/]+)",
        "hooks.slack.com",
    ),
    _r("slack-token", r"\b(?P<s>xox[abposre]-[A-Za-z0-9-]{10,})", "xox"),
    _r("anthropic-api-key", r"\b(?P<s>sk-ant-[A-Za-z0-9_-]{20,})", "sk-ant-"),
    _r(
        "openai-api-key",
        r"\b(?P<s>sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})",
        "sk-",
        check=_mixed,
    ),
    _r("google-api-key", r"\b(?P<s>AIza[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])", "aiza"),
    _r("google-oauth-access-token", r"\b(?P<s>ya29\.[0-9A-Za-z_-]{20,})", "ya29."),
    _r("google-oauth-client-secret", r"\b(?P<s>GOCSPX-[0-9A-Za-z_-]{28})" + _END, "gocspx-"),
    _r("google-oauth-refresh-token", r"(?<![\w/])(?P<s>1//0[0-9A-Za-z_-]{40,})", "1//0"),
    _r("stripe-key", r"\b(?P<s>(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,})", "_live_ _test_"),
    _r("jwt", r"\b(?P<s>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})", "eyj"),
    # Azure: storage account keys in connection strings, Service Bus keys, SAS signatures
    _r("azure-storage-key", r"(?i)\b(?:Account|SharedAccess|Primary|Secondary)Key[ \t]*=[ \t]*"
       r"(?P<s>[A-Za-z0-9+/]{40,90}={0,2})", "accountkey sharedaccesskey primarykey "
       "secondarykey"),
    _r("azure-sas-token", r"[?&;\s\"']sig=(?P<s>[A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})", "sig=",
       re.IGNORECASE),
    _r("twilio-auth-token", r"(?i)twilio[\w .-]{0,30}?(?:token|secret)[\w \t.\"'=:-]{0,40}?"
       r"\b(?P<s>[a-f0-9]{32})\b", "twilio"),
    _r("mailchimp-api-key", r"\b(?P<s>[a-f0-9]{32}-us[0-9]{1,2})\b", "-us"),
    _r("mailgun-api-key", r"\b(?P<s>key-[a-f0-9]{32})\b", "key-"),
    _r("dockerhub-token", r"\b(?P<s>dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,})", "dckr_"),
    _r("square-oauth-secret", r"\b(?P<s>sq0csp-[0-9A-Za-z_-]{43})", "sq0csp-"),
    _r("braintree-access-token", r"\b(?P<s>access_token\$(?:production|sandbox)\$[0-9a-z]{16}"
       r"\$[0-9a-f]{32})", "access_token$"),
    _r("discord-bot-token", r"(?<![\w.-])(?P<s>[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\."
       r"[A-Za-z0-9_-]{27,38})" + _END, "", check=_mixed, min_entropy=4.0),
    _r("discord-webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/"
       r"[0-9]{15,20}/(?P<s>[A-Za-z0-9_-]{60,68})", "discord"),
    _r("telegram-bot-token", r"(?<![\w:])(?P<s>[0-9]{8,10}:AA[A-Za-z0-9_-]{33})" + _END, ":aa"),
    _r("notion-api-token", r"\b(?P<s>secret_[A-Za-z0-9]{43})\b", "secret_"),
    _r("figma-token", r"\b(?P<s>fig[du]_[A-Za-z0-9_-]{40,})", "figd_ figu_"),
    _r("okta-api-token", r"(?i)okta[\s\S]{0,80}?\b(?P<s>00[A-Za-z0-9_-]{40})" + _END, "okta",
       check=_mixed),
    _r("new-relic-key", r"\b(?P<s>NR(?:AK|II|JS|RA)-[A-Za-z0-9_-]{19,32})\b",
       "nrak- nrii- nrjs- nrra-"),
    _r("groq-api-key", r"\b(?P<s>gsk_[A-Za-z0-9]{52})\b", "gsk_"),
    _r("firebase-fcm-server-key", r"\b(?P<s>AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,})",
       ":apa91b"),
    _r("dropbox-token", r"\b(?P<s>sl\.(?:u\.)?[A-Za-z0-9_-]{130,})", "sl."),
    _r("airtable-token", r"\b(?P<s>pat[A-Za-z0-9]{14}\.[a-f0-9]{64})\b", "pat"),
    # opaque tokens in HTTP headers, whatever the provider
    _r("authorization-header", r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
       r"(?:Bearer|Token|Bot|Api-Key|Key|SSWS|OAuth|Digest|Negotiate|NTLM)[ \t]+"
       r"(?P<s>[A-Za-z0-9._~+/=-]{8,})", "authorization", check=_not_a_reference,
       priority=CONTEXTUAL),
    _r("authorization-header", r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
       r"Basic[ \t]+(?P<s>[A-Za-z0-9+/]{6,}={0,2})" + _END, "authorization",
       check=_basic_credentials, priority=CONTEXTUAL),
    _r("bearer-token", r"\bBearer[ \t]+(?P<s>[A-Za-z0-9._~+/-]{20,}=*)", "bearer",
       check=_mixed, min_entropy=3.0, priority=CONTEXTUAL),
    # passwords on command lines
    _r("curl-user-password", r"\bcurl\b[^\n]*?[ \t](?:-u|--user)(?:=|[ \t]+)[\"']?[^\s:\"']+:"
       r"(?P<s>[^\s\"']+)", "curl", check=_not_a_reference, priority=CONTEXTUAL),
    _r("sshpass-password", r"\bsshpass\b[^\n]*?[ \t]-p[ \t]*(?:'(?P<s>[^'\n]+)'|\"(?P<d>[^\"\n]+)\""
       r"|(?P<b>[^\s'\"-][^\s'\"]*))", "sshpass", check=_not_a_reference, priority=CONTEXTUAL),
    _r("mysql-password", r"\bmysql(?:dump|admin)?\b[^\n]*?[ \t]-p(?P<s>[^\s'\"-][^\s'\"]{3,})",
       "mysql", check=_not_a_reference, priority=CONTEXTUAL),
    _r(
        "url-credentials",
        r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@\"'<>]{1,100}:(?P<s>[^\s:/@\"'<>]{3,200})@[A-Za-z0-9.-]",
        "://",
        re.IGNORECASE,
        priority=CONTEXTUAL,
    ),
    # ``password: value``, ``password=value``, ``db_password=Sup3rS3cret!``: short,
    # low-entropy values the generic rule misses; common words and placeholders are not.
    # (The key's name starts the pattern at its keyword: a lazy ``[\w.-]*?`` lead before
    # it would be tried at every position of the text and find the same secrets.)
    _r(
        "password",
        rf"{_PASSWORD_KEY}[\"']?[ \t]*(?::|=|=>|:=)[ \t]*[\"']?{_PASSWORD_VALUE}",
        "passw passphrase pwd",
        re.IGNORECASE,
        priority=GENERIC,
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
        priority=GENERIC,
    ),
    # a quoted value with symbols gitleaks' generic rule leaves out (Django's SECRET_KEY)
    Rule(
        "generic-secret",
        r"(?i)(?:secret|token|passw(?:or)?d|key)[\w-]*[\"']?[ \t]*(?:=|:|=>)"
        r"[ \t]*(?P<q>[\"'])(?P<s>[^\"'\s]{16,200})(?P=q)",
        ("secret", "token", "passw", "key"),
        min_entropy=3.5,
        group="s",
        check=lambda v: _mixed(v) and not _wordy(v) and _not_a_reference(v),
        priority=GENERIC,
        allow=(_GENERIC_ALLOW,),
        lead=True,  # the key's name before the keyword joins the match for the allowlist
    ),
    # an unquoted base64 value gitleaks' generic rule cannot start on (``KEY=+A4m…``);
    # above hex's 4 bits a character, so digests under a "…_key" name stay out
    Rule(
        "generic-secret",
        r"(?i)(?:secret|token|passw(?:or)?d|key)[\w-]*[\"']?[ \t]*(?:=|:|=>)[ \t]*"
        r"(?P<s>[A-Za-z0-9+/]{20,}={0,2})(?![\w+/=.-])",
        ("secret", "token", "passw", "key"),
        min_entropy=4.2,
        group="s",
        check=lambda v: _mixed(v) and not _wordy(v),
        priority=GENERIC,
        allow=(_GENERIC_ALLOW,),
        lead=True,
    ),
    # hex or UUID tokens right under a credential's name (``DD_API_KEY=…``,
    # ``POSTMARK_SERVER_TOKEN=…``): below gitleaks' entropy floor for 1 in ~4 such values
    Rule(
        "generic-secret",
        r"(?i)(?:api[_.-]?key|token|secret|passw(?:or)?d)[\"']?[ \t]*(?:=|:|=>)[ \t]*[\"']?"
        r"(?P<s>[0-9a-f]{30,64}|[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12})(?![\w-])",
        ("key", "token", "secret", "passw"),
        min_entropy=3.0,
        group="s",
        priority=GENERIC,
        allow=(_GENERIC_ALLOW,),
        lead=True,
    ),
    # prose: "the okta token is 00Xk…", "my azure storage key was lqTn…==": a generated
    # value (long, high entropy, letters and digits) right after a credential word
    _r(
        "generic-secret",
        r"(?i)\b(?:api[ _-]?key|key|token|secret|credentials?|pat|access[ _-]?key)"
        + _FOR_WHAT + r"[ \t]+(?:is|was|is now|=|:)[ \t]+"
        r"[\"'`]?(?P<s>[A-Za-z0-9+/_.~-]{20,}={0,2})" + r"(?![A-Za-z0-9+/_~=-])",
        "key token secret credential pat",
        min_entropy=3.7,
        check=_mixed,
        priority=GENERIC,
        allow=(_GENERIC_ALLOW,),
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
        from memrepo.errors import MemrepoError

        raise MemrepoError(f"cannot load the secret rules: {exc}", path) from exc
    rules = []
    for r in data["rules"]:
        allow = tuple(Allow(a["target"], tuple(a["regexes"]), tuple(a["stopwords"]))
                      for a in r["allowlists"])
        if r["id"] == "generic-api-key":
            allow += (_GENERIC_ALLOW,)
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
    return re.compile(_trie_regex(words)), words


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
                if rule.origin == "memrepo" and _GENERIC_ALLOW in rule.allow:
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


# ------------------------------------------------------- refreshing the vendored rule set

#: POSIX classes (RE2 accepts them inside brackets; Python's ``re`` does not).
_POSIX = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "lower": "a-z", "upper": "A-Z",
    "xdigit": "0-9A-Fa-f", "word": r"\w", "space": r"\t\n\v\f\r ", "blank": r" \t",
    "punct": r"!-/:-@\[-`{-~", "cntrl": r"\x00-\x1f\x7f", "print": r" -~", "graph": r"!-~",
}
_FLAG_GROUP = re.compile(r"\(\?([imsU-]+)\)")


def go_to_python(src: str) -> str:
    """An RE2 (Go) pattern as Python ``re`` syntax (compile it with ``re.ASCII``).

    What differs in gitleaks' rules: ``(?i)`` in mid-pattern applies to the end of the
    enclosing group in RE2 (Python only allows it at the start, so it becomes a scoped
    ``(?i:…)``, closed and reopened around each ``|`` as RE2's flags carry across
    alternatives); POSIX classes ``[[:alnum:]]``; ``\\z`` is Python's ``\\Z``.
    """
    out: list[str] = []
    stack: list[list[str]] = [[]]  # per open group: the scoped flag groups opened in it
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            out.append(r"\Z" if src[i + 1 : i + 2] == "z" else src[i : i + 2])
            i += 2
        elif c == "[":
            j, buf = i + 1, ["["]
            if src[j : j + 1] == "^":
                buf.append("^")
                j += 1
            if src[j : j + 1] == "]":
                buf.append(r"\]")
                j += 1
            while src[j] != "]":
                if src[j] == "\\":
                    buf.append(src[j : j + 2])
                    j += 2
                elif src.startswith("[:", j):
                    k = src.index(":]", j)
                    buf.append(_POSIX[src[j + 2 : k]])
                    j = k + 2
                else:
                    buf.append("\\[" if src[j] == "[" else src[j])
                    j += 1
            out.append("".join(buf) + "]")
            i = j + 1
        elif c == "(":
            m = _FLAG_GROUP.match(src, i)
            if m and i > 0:
                out.append(f"(?{m[1]}:")
                stack[-1].append(m[1])
                i = m.end()
            else:
                stack.append([])
                out.append("(")
                i += 1
        elif c == ")":
            out.append(")" * len(stack.pop()) + ")")
            i += 1
        elif c == "|":
            opened = stack[-1]
            out.append(")" * len(opened) + "|" + "".join(f"(?{f}:" for f in opened))
            i += 1
        else:
            out.append(c)
            i += 1
    out.append(")" * len(stack[0]))
    return "".join(out)


def _allowlist_data(a: dict[str, Any]) -> dict[str, Any] | None:
    """One gitleaks allowlist as data; None when it only applies to paths or commits
    (memrepo scans texts, not a project tree) or needs them with AND."""
    if a.get("condition", "OR").upper() == "AND" and (a.get("paths") or a.get("commits")):
        return None
    if not (a.get("regexes") or a.get("stopwords")):
        return None
    return {
        "target": a.get("regexTarget", "secret"),
        "regexes": [go_to_python(p) for p in a.get("regexes", [])],
        "stopwords": [w.lower() for w in a.get("stopwords", [])],
    }


def gitleaks_rule_data(toml_text: str, source: str = "") -> dict[str, Any]:
    """gitleaks.toml as the JSON memrepo loads: regexes translated and checked to compile,
    path-only and path-gated rules left out (and counted)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: tomli is a dev dependency
        import tomli as tomllib

    config = tomllib.loads(toml_text)
    rules, skipped = [], {}
    for r in config["rules"]:
        if "regex" not in r or "path" in r:
            skipped[r["id"]] = "applies to file paths (memrepo scans texts)"
            continue
        regex = go_to_python(r["regex"])
        try:
            compiled = re.compile(regex, re.ASCII)
        except re.error as exc:
            skipped[r["id"]] = f"does not compile in Python: {exc}"
            continue
        group = r.get("secretGroup", 0)
        if group > compiled.groups:
            skipped[r["id"]] = f"secretGroup {group} but {compiled.groups} groups"
            continue
        allowlists = [d for a in r.get("allowlists", []) if (d := _allowlist_data(a))]
        rules.append({
            "id": r["id"],
            "regex": regex,
            "keywords": sorted({k.lower() for k in r.get("keywords", [])}),
            "entropy": float(r.get("entropy", 0.0)),
            "secret_group": group,
            "groups": compiled.groups,
            "allowlists": allowlists,
        })
    g = config.get("allowlist", {})
    return {
        "meta": {"source": source, "min_version": config.get("minVersion", ""),
                 "rules_upstream": len(config["rules"]), "rules_used": len(rules),
                 "skipped": skipped},
        "global": {"regexes": [go_to_python(p) for p in g.get("regexes", [])],
                   "stopwords": [w.lower() for w in g.get("stopwords", [])]},
        "rules": rules,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m memrepo.secrets refresh [SOURCE]``: rebuild the JSON from the vendored
    gitleaks.toml (copy a newer upstream ``config/gitleaks.toml`` over it first)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "refresh":
        print("usage: python -m memrepo.secrets refresh [SOURCE-DESCRIPTION]", file=sys.stderr)
        return 2
    from pathlib import Path

    from memrepo.atomic import atomic_write

    data_dir = Path(__file__).parent / DATA
    source = args[1] if len(args) > 1 else GITLEAKS_META.get("source", "")
    data = gitleaks_rule_data((data_dir / "gitleaks.toml").read_text("utf-8"), source)
    atomic_write(data_dir / RULES_JSON, json.dumps(data, indent=1, sort_keys=True) + "\n")
    meta = data["meta"]
    print(f"{meta['rules_used']} of {meta['rules_upstream']} gitleaks rules; skipped: "
          + ", ".join(f"{k} ({v})" for k, v in meta["skipped"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
