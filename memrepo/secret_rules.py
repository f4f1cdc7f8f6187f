"""The rule types and memrepo's hand-written secret rules (data for memrepo.secrets).

``HAND_RULES`` adds only what gitleaks' rule set lacks or words differently: passwords in
prose and assignments, credentials in URLs, ``curl -u``/``sshpass -p``, opaque
``Authorization`` headers, and provider formats gitleaks misses (Google OAuth, Azure
storage, Discord bots, Telegram, Docker Hub, …). Each pattern's group ``s`` is the secret
(what gets redacted); the rest is context. The matcher is in memrepo.secrets.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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
    lead: bool = False  # gitleaks' ``[\w.-]{0,50}?`` lead cut off ``source`` (secrets._cut_lead)

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


def trie_regex(words: Iterable[str]) -> str:
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


# --------------------------------------------------------------------------- hand rules

#: Names a password is stored under, as the last part of a key (``db_password``,
#: ``PGPASSWORD``, ``smtp.passphrase``): ``password_policy`` or ``passwords`` are not.
_PASSWORD_KEY = r"(?:passw(?:or)?d|passphrase|[_.-]pwd)"
#: A password value: no spaces or quotes; a trailing ``.`` or ``)`` is prose, left out.
_PASSWORD_VALUE = r"(?P<s>[^\s\"'`,;]*[^\s\"'`,;.)])"
#: "the password for the staging db was set to …": the words that may sit in between.
FOR_WHAT = r"(?:[ \t]+(?:for|of|on|to)(?:[ \t]+[\w.@/-]+){1,4}?)?"
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


#: Fixed prefixes of vendor tokens. A provider's own rule pins the body's length and
#: alphabet (``npm_`` + exactly 36, ``hf_`` + letters only, ``shpat_`` + 32 hex, ``pypi-``
#: + one macaroon header); a long, random body after a known prefix is a token whatever
#: its length or alphabet, in prose as in a config file.
_VENDOR_PREFIX_LIST = (
    "sk_live_ sk_test_ rk_live_ rk_test_ whsec_ dop_v1_ doo_v1_ dor_v1_ shpat_ shpss_ shpca_ "
    "shppa_ npm_ pypi- hf_ api_org_ gsk_ pplx- lin_api_ ntn_ r8_ xai- sk-or-v1- SG. AKCp hvs. "
    "hvb. sq0atp- sq0csp- shippo_live_ shippo_test_ sgp_ pul- rubygems_ glsa_ glc_ dapi fo1_ "
    "HRKU- tskey-auth- tskey-client- sntrys_ lsv2_pt_ lsv2_sk_ nvapi- rnd_ dckr_pat_ dckr_oat_ "
    "figd_ figu_ glpat- glrt- gldt- glptt- gloas- xoxa- xoxb- xoxe- xoxe.xoxp- xoxp- xoxr- "
    "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_ sk-ant- sk-proj- sk-svcacct- sk-admin- pscale_tkn_ "
    "pscale_pw_ pscale_oauth_ dp.pt. dp.st. dp.ct. dp.sa. EZAK EZTK PMAK- NRAK- NRII- "
    "duffel_live_ duffel_test_ FLWSECK- FLWSECK_TEST- ATATT3 rdme_ dapi_"
)
_VENDOR_PREFIXES = tuple(_VENDOR_PREFIX_LIST.split())
_VENDOR_PREFIX = trie_regex(_VENDOR_PREFIXES)  # one alternation per position, not ~90


def _vendor_body(value: str) -> bool:
    """After its prefix, a token's body is long and generated: letters mixed with digits,
    not words joined by ``_`` (``npm_config_cache``, ``hf_hub_download``)."""
    m = re.match(_VENDOR_PREFIX, value)
    body = value[m.end() :] if m else value
    return len(body) >= 20 and _mixed(body) and not _wordy(body)


def _framework_value(value: str) -> bool:
    """A framework's secret key as written, not a reference to one (``os.environ[…]``,
    ``ENV.fetch(…)``, ``<%= … %>``, ``${SECRET_KEY}``) nor a type (``Optional[str]``)."""
    if re.match(r"^[A-Za-z_][\w.]*[(\[]", value):
        return False
    return _mixed(value) and not _wordy(value) and _not_a_reference(value)


#: memrepo's additions to generic-api-key's allowlist (matched against the whole match),
#: also used by the hand-written generic rules: key names whose values are identifiers,
#: digests or counts in a memory repo's notes.
GENERIC_ALLOW = Allow("match", (
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
       "glffct- glagent-", min_entropy=3.0),  # not ``glpat-xxxxxxxxxxxxxxxxxxxx``
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
    # a Twilio auth token next to its account SID, the word "Twilio" left out
    _r("twilio-auth-token", r"\bAC[0-9a-fA-F]{32}\b[^\n]{0,80}?(?<![\w-])"
       r"(?P<s>[0-9a-fA-F]{32})(?![\w-])", "ac", check=_mixed),
    # "auth token 3f9a…", "API secret: 3f9a…": a hex token named in prose, no provider said
    _r("hex-token", r"(?i)(?<![\w-])(?:auth|access|api|secret|session|bearer|master|admin)"
       r"[ _-]?(?:token|key|secret)s?(?![\w-])[ \t]*(?:[:=(]|\bis\b|\bwas\b|->|\u2014|-)?"
       r"[ \t]*[\"'`(]?(?P<s>[0-9a-f]{32,128})(?![\w-])", "token key secret",
       min_entropy=3.0, check=_mixed, priority=CONTEXTUAL),
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
        r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@\"'<>]{0,100}:(?P<s>[^\s:/@\"'<>]{3,200})@[A-Za-z0-9.-]",
        "://",
        re.IGNORECASE,
        priority=CONTEXTUAL,
    ),
    # a long generated body after a vendor's fixed prefix (see ``_VENDOR_PREFIXES``)
    _r("vendor-token", r"(?<![\w.-])(?P<s>" + _VENDOR_PREFIX + r"[A-Za-z0-9_-]{16,}"
       r"(?:\.[A-Za-z0-9_-]+)*)(?![\w-])", " ".join({p.lower() for p in _VENDOR_PREFIXES}),
       min_entropy=3.5, check=_vendor_body, priority=CONTEXTUAL),
    # framework secret keys: Django's prefix, or the setting's name (Django and Flask
    # ``SECRET_KEY``, Rails ``secret_key_base``/``secret_token``, Laravel ``APP_KEY``)
    _r("framework-secret-key", r"(?<![\w-])(?P<s>django-insecure-[^\s\"'`]{20,})",
       "django-insecure-"),
    _r("framework-secret-key", r"(?i)(?<![A-Za-z0-9])(?:secret_key(?:_base)?|secret_token"
       r"|app_key)(?:[\"']\])?[\"']?[ \t]*(?:=|:|=>)[ \t]*[\"'`]?(?:base64:)?"
       r"(?P<s>[^\s\"'`,;]{16,})", "secret_key secret_token app_key", min_entropy=3.0,
       check=_framework_value, priority=CONTEXTUAL),
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
        rf"\bpass(?:word|phrase|wd)\b{FOR_WHAT}[ \t]+(?:has been (?:set|changed) to"
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
        allow=(GENERIC_ALLOW,),
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
        allow=(GENERIC_ALLOW,),
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
        allow=(GENERIC_ALLOW,),
        lead=True,
    ),
    # prose: "the okta token is 00Xk…", "my azure storage key was lqTn…==": a generated
    # value (long, high entropy, letters and digits) right after a credential word
    _r(
        "generic-secret",
        r"(?i)\b(?:api[ _-]?key|key|token|secret|credentials?|pat|access[ _-]?key)"
        + FOR_WHAT + r"[ \t]+(?:is|was|is now|=|:)[ \t]+"
        r"[\"'`]?(?P<s>[A-Za-z0-9+/_.~-]{20,}={0,2})" + r"(?![A-Za-z0-9+/_~=-])",
        "key token secret credential pat",
        min_entropy=3.7,
        check=_mixed,
        priority=GENERIC,
        allow=(GENERIC_ALLOW,),
    ),
)
