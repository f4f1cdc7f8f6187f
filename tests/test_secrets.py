"""Secret rules: each kind is found at its line, redaction is typed, allowlists work."""

from __future__ import annotations

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
    ]
    for text in texts:
        lowered = text.lower()
        for rule in RULES:
            if rule.pattern.search(text):
                assert rule.may_match(lowered), (rule.kind, text)
    assert find_secrets("nothing to see: a plain sentence about keys and tokens") == []
