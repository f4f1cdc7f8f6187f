"""Issue #37, item 9: the classes of secret a hidden corpus still got through, and the
ordinary text beside them that must stay unflagged.

Every value is generated at run time from a seed (never a real key), so this file itself
passes the secrets check.
"""

from __future__ import annotations

import base64
import random
import string

import pytest

from memrepo.secrets import find_secrets, redact

_RNG = random.Random(37)
AL = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
DJANGO = string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)"


def _s(alphabet: str, n: int) -> str:
    while True:
        v = "".join(_RNG.choice(alphabet) for _ in range(n))
        if alphabet != HEX or (set(v) & set("abcdef") and set(v) & set(string.digits)):
            return v


def _mixed(n: int) -> str:
    while True:
        v = _s(AL, n)
        if all(set(v) & set(c) for c in (string.digits, string.ascii_lowercase,
                                          string.ascii_uppercase)):
            return v


def _b64(n: int) -> str:
    return base64.b64encode(bytes(_RNG.randrange(256) for _ in range(n))).decode()


PW = "Cobalt" + "tiger" + "482" + "!"
CASES = {
    # connection URLs with an empty user name and a password
    "redis-empty-user": ("REDIS_URL=redis://:{v}@cache.internal:6379/0", "p4ss" + "w0rdXk9"),
    "postgres-empty-user": ("psql postgres://:{v}@db.internal:5432/app", PW),
    "rediss-empty-user-prose": ("the worker uses rediss://:{v}@cache.example.net:6380 now",
                                _mixed(32)),
    # framework secret keys, by Django's prefix or by the setting's name
    "django-insecure": ("SECRET_KEY = '{v}'", "django-" + "insecure-" + _s(DJANGO, 50)),
    "django-insecure-prose": ("startproject made {v} as the key",
                              "django-" + "insecure-" + _s(DJANGO, 50)),
    "django-secret-env": ("DJANGO_SECRET_KEY={v}", _s(DJANGO, 50)),
    "flask-config": ("app.config['SECRET_KEY'] = '{v}'", _s(HEX, 32)),
    "laravel-app-key": ("APP_NAME=Ledger\nAPP_KEY=base64:{v}\n", _b64(32)),
    # vendor tokens with digits where a narrow rule expects letters only
    "hf-digits-prose": ("pulled the model with {v} yesterday", "h" + "f_" + _mixed(34)),
    "hf-org-digits": ("org token {v}", "api" + "_org_" + _mixed(34)),
    "shopify-alnum": ("shopify admin token {v}", "shp" + "at_" + _mixed(32)),
    # long vendor tokens with a fixed prefix
    "npm-long": ("publishing with {v} (automation)", "np" + "m_" + _mixed(48)),
    "pypi-plain": ("twine upload -u __token__ -p {v} dist/*", "py" + "pi-" + _mixed(140)),
    # a hex token named in prose beside its account id
    "auth-token-by-account": ("account AC" + _s(HEX, 32) + ", auth token {v}", _s(HEX, 32)),
    "auth-token-prose": ("the auth token is {v} (rotated quarterly)", _s(HEX, 32)),
    "auth-token-before-account": ("auth token {v} for account AC" + _s(HEX, 32), _s(HEX, 40)),
}


@pytest.mark.parametrize(("name", "case"), CASES.items(), ids=list(CASES))
def test_issue37_class_is_found_and_redacted(name: str, case: tuple[str, str]) -> None:
    template, value = case
    text = "note line\n" + template.format(v=value) + "\n"
    assert find_secrets(text), name
    redacted, n = redact(text)
    assert n >= 1 and value not in redacted


ORDINARY = [
    "SECRET_KEY = os.environ['DJANGO_SECRET_KEY']",
    "SECRET_KEY = env('SECRET_KEY', default=get_random_secret_key())",
    "app.config['SECRET_KEY'] = os.getenv('FLASK_SECRET_KEY')",
    "app.secret_key = secrets.token_hex(32)",
    "secret_key_base: <%= ENV['SECRET_KEY_BASE'] %>",
    "config.secret_key_base = Rails.application.credentials.secret_key_base",
    "SECRET_KEY_FILE=/run/secrets/django_secret_key",
    "secret_key: SecretStr = Field(..., alias='SECRET_KEY')",
    "php artisan key:generate writes APP_KEY=base64:... into .env",
    "The django-insecure- prefix marks a key startproject made; replace it in prod.",
    "REDIS_URL=redis://localhost:6379/0",
    "redis://:${REDIS_PASSWORD}@cache:6379/0 comes from the env",
    "postgres://:@localhost/test uses peer auth, no password",
    "npm_config_cache=/tmp/npm-1234 npm ci",
    "hf_hub_download(repo_id='sentence-transformers/all-MiniLM-L6-v2', filename='config.json')",
    "GitLab tokens look like glpat-xxxxxxxxxxxxxxxxxxxx; use CI variables.",
    "The auth token expires after 12 hours; refresh it with the CLI.",
    f"account AC{_s(HEX, 32)} sends the SMS alerts (the auth token is in Vault)",
    f"api key id {_s(HEX, 32)} belongs to the billing service account",
    f"commit {_s(HEX, 40)} stores only the API key hash",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_beside_those_classes_is_not_flagged(text: str) -> None:
    assert find_secrets(text) == []
