"""Secret rules: each kind is found at its line, redaction is typed, allowlists work."""

from __future__ import annotations

from typing import Any

import pytest

from memrepo.secrets import find_secrets, redact

SAMPLES = {
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "aB3" * 12,
    "slack-token": "xoxb-1234567890-abcdefghij",
    "anthropic-api-key": "sk-ant-api03-" + "Zz9_" * 10,
    "openai-api-key": "sk-proj-" + "Qq8" * 10,
    "google-api-key": "AIza" + "Sy0-" * 8 + "abc",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "stripe-key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
}


@pytest.mark.parametrize(("kind", "value"), SAMPLES.items())
def test_each_kind_is_found_and_redacted(kind: str, value: str) -> None:
    text = f"line one\nhere: {value} trailing\n"
    hits = find_secrets(text)
    assert [(h.kind, h.line) for h in hits] == [(kind, 2)]
    redacted, n = redact(text)
    assert n == 1 and value not in redacted and f"[REDACTED:{kind}]" in redacted


def test_private_key_block_url_credentials_and_generic_assignments() -> None:
    text = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\n"
        "db: postgres://admin:s3cr3tPassw0rd@db.example.com/app\n"
        "api_key = 'q8Zr2Lm4Xv9Tn1Pw7Ks3'\n"
        "password: password\n"
    )
    kinds = [(h.kind, h.line) for h in find_secrets(text)]
    assert kinds == [("private-key", 1), ("url-credentials", 5), ("generic-secret", 6)]
    redacted, _ = redact(text)
    assert "MIIEow" not in redacted and "s3cr3t" not in redacted and "admin:" in redacted


def test_ordinary_prose_and_placeholders_are_not_secrets() -> None:
    text = (
        "We discussed the token budget and the password policy.\n"
        "token: [REDACTED:github-token]\n"
        "url: https://user:${PASSWORD}@example.com\n"
        "the key is in the vault\n"
    )
    assert find_secrets(text) == []


def test_allowlist_and_inline_marker() -> None:
    text = "AKIAIOSFODNN7EXAMPLE\nAKIAABCDEFGHIJKLMNOP  # memrepo: allow-secret\n"
    assert [h.line for h in find_secrets(text)] == [1]
    assert find_secrets(text, allowlist=[r"EXAMPLE$"]) == []


def test_a_catastrophic_allowlist_pattern_cannot_hang_and_allows_nothing() -> None:
    """Config validation refuses such a pattern; one that gets here anyway (an old config,
    a direct caller) times out per value, and the value stays a secret."""
    import time

    key = "AKIA" + "A" * 16  # a run the pattern below backtracks on
    start = time.perf_counter()
    found = find_secrets(f"key = {key}\n", allowlist=[r"(.*.*)*$B"])
    assert time.perf_counter() - start < 2
    assert [f.kind for f in found] and redact(f"key = {key}")[1] == 1


# Built at run time so this file does not itself look like it leaks anything.
PW = "hunter" + "2"
STRONG = "Sup3r" + "S3cret!"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (f"The staging admin password is {PW} and it is stored in the team vault.", PW),
        (f"db_password={STRONG}", STRONG),
        (f"password: {PW}", PW),
        (f"password={PW}", PW),
        (f"export PGPASSWORD={PW}", PW),
        (f'{{"password": "{STRONG}"}}', STRONG),
        (f"mysql --password={PW} ledger", PW),
        (f"the password for the staging db was set to {STRONG}", STRONG),
        (f"password: {PW}.", PW),
    ],
)
def test_short_passwords_are_found_and_redacted(text: str, value: str) -> None:
    hits = find_secrets(text)
    assert [(h.kind, text[h.start:h.end]) for h in hits] == [("password", value)]
    redacted, n = redact(text)
    assert n == 1 and value not in redacted and "[REDACTED:password]" in redacted


@pytest.mark.parametrize(
    "text",
    [
        "The password is stored in the team vault.",
        "Reset the password via the portal; the password policy requires 12 characters.",
        "The password is letters only, which is weak.",
        "password: password",
        "password: required",
        "password_policy: strict",
        "password = request.form['password']",
        "password=args.password",
        "password: Optional[str]",
        "password=DB_PASSWORD",
        "password: ${DB_PASSWORD}",
        "password: <your password>",
        "password: ********",
        "max_tokens=4000",
        "The database password is [REDACTED:generic-secret] and it lives in the vault.",
    ],
)
def test_password_prose_and_code_references_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_states_credential_is_looser_for_extraction() -> None:
    from memrepo.secrets import states_credential

    assert states_credential(f"The staging admin password is {PW}.")
    assert states_credential("The admin password is letmein.")  # no digit: not a commit block
    assert find_secrets("The admin password is letmein.") == []
    assert states_credential("The PIN is 4321.")
    assert not states_credential("The API token was rotated yesterday.")
    assert not states_credential("The password is stored in the team vault.")


def test_the_keyword_prefilter_never_hides_a_match() -> None:
    """A rule runs only on text holding one of its keywords: every match must hold one."""
    from memrepo.secrets import RULES

    texts = [f"x {v} y" for v in SAMPLES.values()] + [
        "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
        "postgres://admin:s3cr3tPassw0rd@db.example.com/app",
        "API-KEY := 'q8Zr2Lm4Xv9Tn1Pw7Ks3'",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX",
        "GITHUB_PAT_" + "a" * 30, "glpat-" + "x" * 20, "smtp.pwd=Zx9!kk", "PassPhrase: Zx9!kkQ",
        "the PASSWD is Zx9!kkQ", "rk_test_" + "a1" * 10,
    ] + [template.format(v=value) for template, value in NEW_FAMILIES.values()]
    for text in texts:
        lowered = text.lower()
        for rule in RULES:
            if rule.pattern.search(text):
                assert rule.may_match(lowered), (rule.kind, text)
    assert find_secrets("nothing to see: a plain sentence about keys and tokens") == []


# --- issue #14: families gitleaks' rule set and memrepo's additions now cover ---------
# Every value is assembled at run time from a fixed random-looking body (never a real key).
B62 = "q7Rk2ZpL9sXv4TmN8cWb3YhJ6dGf5AeU1oPi0uQz"  # 40 characters, letters and digits
HEX40 = "9f3c1a7e5b2d8046c1e3a5f7092b4d6e8a0c2e4f"
URLS = B62 + "_-" + B62[::-1] + "-_" + B62
B64 = "Zm9vYmFyYmF6cXV4" + B62 + "+/" + B62[::-1] + "=="

NEW_FAMILIES = {
    "gitlab-runner": ("gitlab-runner register --token {v}", "gl" + "rt-" + B62[:20]),
    "google-oauth-access": ("the access token {v} expires soon", "ya" + "29." + URLS[:120]),
    "azure-storage-key": (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={v};EndpointSuffix=x",
        B64[:86] + "=="),
    "azure-sas": ("https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig={v}",
                  B62[:30] + "%2B" + B62[:10] + "%3D"),
    "twilio": ("TWILIO_API_KEY={v}", "S" + "K" + HEX40[:32]),
    "sendgrid": ("SENDGRID_API_KEY={v}", "S" + "G." + URLS[:22] + "." + URLS[30:73]),
    "mailchimp": ("Mailchimp key {v} for the list", HEX40[:32] + "-us" + "14"),
    "pypi-prose": ("Published with the upload token {v} yesterday.",
                   "pypi-" + "AgEIcHlwaS5vcmc" + URLS[:120]),
    "docker-hub": ("docker login -p {v}", "dckr" + "_pat_" + URLS[:27]),
    "shopify": ("X-Shopify-Access-Token: {v}", "shp" + "at_" + HEX40[:32]),
    "square": ("Square OAuth secret {v}", "sq0" + "csp-" + URLS[:43]),
    "braintree": ("BRAINTREE={v}", "access_token$production$" + B62[:16].lower()
                  + "$" + HEX40[:32]),
    "discord-bot": ("the bot logs in with {v}",
                    "MTE4NzY1NDMyMTA5ODc2NTQz" + ".Gk3xYz." + URLS[:38]),
    "discord-webhook": ("https://discord.com/api/webhooks/1187654321098765432/{v}", URLS[:68]),
    "telegram": ("BotFather gave me {v} for alerts", "1234567890:" + "AA" + URLS[:33]),
    "age": ("# public key: age1xyz\n{v}",
            "AGE-" + "SECRET-KEY-1" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58]),
    "hugging-face": ("huggingface-cli login --token {v}", "h" + "f_" + "qRkZpLsXvTmNcWbYhJdGfAeUoPiuQzaBcD"),
    "atlassian": ("Jira token: {v}", "ATA" + "TT3" + (URLS * 2)[:186]),
    "notion": ("NOTION_TOKEN={v}", "nt" + "n_" + "12345678901" + B62[:35]),
    "figma": ("Figma token {v}", "fi" + "gd_" + URLS[:40]),
    "okta": ("OKTA_API_TOKEN={v}", "0" + "0" + URLS[:40]),
    "vault": ("VAULT_TOKEN={v}", "hv" + "s." + URLS[:91]),
    "new-relic": ("New Relic user key {v} for dashboards", "NR" + "AK-" + B62[:27].upper()),
    "grafana": ("grafana token {v}", "gl" + "sa_" + B62[:32] + "_" + HEX40[:8]),
    "postman": ("Postman key: {v}", "PM" + "AK-" + HEX40[:24] + "-" + HEX40[:34]),
    "planetscale": ("pscale password {v}", "pscale" + "_pw_" + URLS[:43]),
    "groq": ("GROQ_API_KEY={v}", "gs" + "k_" + (B62 * 2)[:52]),
    "perplexity": ("Perplexity key: {v}", "pp" + "lx-" + (B62 * 2)[:48]),
    "firebase": ("FCM server key: {v}", "AAAA" + URLS[:7] + ":APA91b" + (URLS * 2)[:134]),
    "alibaba": ("ALIBABA_CLOUD_ACCESS_KEY_ID={v}", "LT" + "AI" + B62[:20]),
    "artifactory": ("ARTIFACTORY_API_KEY={v}", "AK" + "Cp" + (B62 * 2)[:69]),
    "easypost": ("EasyPost key: {v}", "EZ" + "AK" + (B62 * 2)[:54]),
    "dropbox": ("Dropbox access token {v}", "s" + "l." + (URLS * 2)[:140]),
    "airtable": ("airtable sync uses {v}", "pa" + "t" + B62[:14] + "." + (HEX40 * 2)[:64]),
    "bearer-header": ("> Authorization: Bearer {v}\n> Accept: */*", URLS[:40]),
    "basic-header": ("Authorization: Basic {v}", "ZGVwbG95OlMzY3IzdC1wYTU1"),
    "curl-user": ("curl -u admin:{v} https://jenkins.internal/api/json", "Tiger" + "maple42!"),
    "sshpass": ("sshpass -p '{v}' ssh deploy@10.0.4.12 uptime", "Cobalt" + "orbit7#"),
}


@pytest.mark.parametrize(("family", "case"), NEW_FAMILIES.items())
def test_new_families_are_found_with_an_exact_span(family: str, case: tuple[str, str]) -> None:
    template, value = case
    text = "context before\n" + template.format(v=value) + "\ncontext after"
    hits = find_secrets(text)
    assert hits, family
    redacted, _ = redact(text)
    assert value not in redacted, family
    # exact span: the placeholder replaces the secret (what the rule calls the secret)
    # and every character around it survives
    assert any(text[h.start : h.end] == value for h in hits), [text[h.start : h.end] for h in hits]
    assert redacted.startswith("context before\n") and redacted.endswith("\ncontext after")


def test_redaction_replaces_the_secret_group_only() -> None:
    value = "gl" + "rt-" + B62[:20]
    text = f'runner:\n  token: "{value}"  # registered 2025-01-14\n'
    redacted, n = redact(text)
    assert n == 1
    assert redacted == 'runner:\n  token: "[REDACTED:gitlab-token]"  # registered 2025-01-14\n'
    key = "SK" + HEX40[:32]
    assert redact(f"export TWILIO_API_KEY={key}; echo ok")[0] == (
        "export TWILIO_API_KEY=[REDACTED:twilio-api-key]; echo ok")


@pytest.mark.parametrize(
    "text",
    [
        # code that reads a credential from the environment
        'api_key = os.environ["API_KEY"]',
        'token = os.getenv("GITHUB_TOKEN")',
        "client = OpenAI(api_key=os.environ['OPENAI_API_KEY'])",
        "const apiKey = process.env.STRIPE_SECRET_KEY;",
        'curl -H "Authorization: Bearer $API_TOKEN" https://api.example.com/v1/me',
        'curl -u "$USER:$JENKINS_TOKEN" https://jenkins.internal/api/json',
        'sshpass -p "$SSH_PASS" ssh deploy@host',
        "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
        "password=${DB_PASSWORD:?missing}",
        # LLM configs
        "tokenizer: sentence-transformers/all-MiniLM-L6-v2\nmax_tokens: 4096",
        "tokenizer_name: meta-llama/Llama-3.1-8B-Instruct\ntokenizer_revision: " + HEX40,
        "max_new_tokens: 512\nstop_tokens: ['</s>']\ntoken_budget: 12000\nauth: oauth2",
        # prose about passwords and keys
        "The password is case-sensitive.",
        "The password must be at least 12 characters and include a digit.",
        "We rotated the API key last week; the old one is revoked.",
        "Bearer tokens are sent in the Authorization header, never in the URL.",
        "Use Basic auth only over TLS.",
        # hashes, UUIDs, URLs, images
        f"commit {HEX40}\nsha256: {HEX40}{HEX40[:24]}\nmd5 of the export: {HEX40[:32]}",
        '"integrity": "sha512-' + B64[:86] + '"',
        "request_id: 3f2a9c1e-5b7d-4e8f-a1c3-9d7e5f3b1a2c\n"
        'idempotency_key = "0c7e1d2f-8a4b-4c6d-9e1f-2a3b4c5d6e7f"\n'
        "tenant_key: 6b1f0e2d-3c4a-4b5c-8d9e-0f1a2b3c4d5e.",
        "https://github.com/acme/ledger/commit/" + HEX40,
        "https://docs.example.com/auth?utm_source=notes&id=123456",
        "![diagram](data:image/png;base64,iVBORw0KGgo" + B64 * 3 + ")",
    ],
)
def test_ordinary_notes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == [], [(f.kind, text[f.start : f.end]) for f in find_secrets(text)]


def _refresh_tool() -> Any:
    """tools/refresh_gitleaks.py (a maintainer tool, not part of the package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "tools" / "refresh_gitleaks.py"
    spec = importlib.util.spec_from_file_location("refresh_gitleaks", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gitleaks_go_patterns_are_translated() -> None:
    import re

    go_to_python = _refresh_tool().go_to_python

    assert go_to_python(r"\b(p8e-(?i)[a-z0-9]{32})") == r"\b(p8e-(?i:[a-z0-9]{32}))"
    # RE2 flags carry across "|" to the end of the group
    pat = re.compile(go_to_python(r"(a(?i)b|c)d"), re.ASCII)
    assert pat.fullmatch("aBd") and pat.fullmatch("Cd") and not pat.fullmatch("aBD")
    assert go_to_python(r"\b(pat[[:alnum:]]{14})") == r"\b(pat[a-zA-Z0-9]{14})"
    assert go_to_python(r"x(?:\s|\z)") == r"x(?:\s|\Z)"


def test_the_vendored_rules_match_the_vendored_gitleaks_toml() -> None:
    """memrepo/data/gitleaks-rules.json is built from gitleaks.toml by
    ``python tools/refresh_gitleaks.py``: a hand edit of either shows here."""
    import json
    from pathlib import Path

    gitleaks_rule_data = _refresh_tool().gitleaks_rule_data

    data = Path(__file__).parents[1] / "memrepo" / "data"
    built = json.loads((data / "gitleaks-rules.json").read_text("utf-8"))
    fresh = gitleaks_rule_data((data / "gitleaks.toml").read_text("utf-8"), built["meta"]["source"])
    assert fresh == built
    assert built["meta"]["rules_used"] >= 200 and (data / "gitleaks-LICENSE").is_file()


def test_every_multi_group_gitleaks_rule_was_reviewed() -> None:
    """gitleaks takes the first non-empty group as the secret; where that group is a
    fragment the whole match must be redacted instead (a refresh adding such a rule
    fails here until it is listed)."""
    import json
    from pathlib import Path

    from memrepo.secrets import _FIRST_GROUP_OK, _WHOLE_MATCH

    path = Path(__file__).parents[1] / "memrepo" / "data" / "gitleaks-rules.json"
    multi = {r["id"] for r in json.loads(path.read_text("utf-8"))["rules"]
             if r["groups"] > 1 and not r["secret_group"]}
    assert multi <= _WHOLE_MATCH | _FIRST_GROUP_OK, multi - (_WHOLE_MATCH | _FIRST_GROUP_OK)


def test_cutting_the_lazy_lead_finds_the_same_secrets() -> None:
    """gitleaks' ``[\\w.-]{0,50}?`` lead is cut for speed: same spans as the upstream regex."""
    import json
    import re
    from pathlib import Path

    from memrepo.secrets import RULES

    path = Path(__file__).parents[1] / "memrepo" / "data" / "gitleaks-rules.json"
    upstream = [r["regex"] for r in json.loads(path.read_text("utf-8"))["rules"]]
    gitleaks = [r for r in RULES if r.origin == "gitleaks"]
    texts = [
        "my_api_token = 'q7Rk2ZpL9sXv4TmN8cWb'\nx", "DISCORD_CLIENT_SECRET=" + URLS[:32],
        'cloudflare_api_key: "' + URLS[:40] + '"', "OKTA_TOKEN=00" + URLS[:40],
        "api_version: 2024-06-01\nsecret = 'Zx9kQ2mL7pW4'", "tenant_key: " + HEX40,
    ]
    for rule, source in zip(gitleaks, upstream, strict=True):
        if not rule.lead:
            continue
        full = re.compile(source, re.ASCII)
        for text in texts:
            assert [rule.secret_span(m) for m in full.finditer(text)] == [
                rule.secret_span(m) for m in rule.pattern.finditer(text)], (rule.kind, text)


def test_a_gitleaks_allow_marker_and_stopwords_are_honoured() -> None:
    value = "api_key = 'q7Rk2ZpL9sXv4TmN8cWb'"
    assert find_secrets(value)
    assert find_secrets(value + "  # gitleaks:allow") == []
    assert find_secrets("api_key = 'q7Rk2ZpL9sXv-example-4TmN8'") == []  # a stopword
