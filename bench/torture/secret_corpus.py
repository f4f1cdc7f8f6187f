"""The corpora of ``secrets.py``: credentials in real formats, and ordinary text that is not.

``secret_cases`` gives one case per kind of credential (well over the issue's 114), each a
syntactically valid fake: a random body in the provider's published format (prefix,
alphabet, length, checksum-free), embedded the way it turns up in a memory repo: an
``export`` line, a YAML or JSON config, an HTTP log, a shell command, a sentence. Nothing
here is a real key, and no literal in this file is one either: every value is assembled
at run time, so the file itself passes the secrets check.

``ordinary_notes`` and ``ordinary_turns`` are what a memory repo mostly holds, written to
tempt a secret scanner: code that reads credentials from the environment, LLM configs
(``tokenizer:``, ``max_tokens:``), prose about passwords and keys, hashes, UUIDs, URLs,
base64 images. Everything is generated from a seed, so a run is repeatable.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DI = string.digits
AL = UP + LO + DI
HEX = "0123456789abcdef"
B64 = AL + "+/"
URL = AL + "-_"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
DASH5 = "-" * 5  # PEM armour, split so this file holds no key header


@dataclass(frozen=True)
class SecretCase:
    family: str  # the provider or class, as the issue names it
    kind: str  # one credential format
    text: str  # the note or turn it appears in
    values: tuple[str, ...]  # what must not survive (the secret, or its key parts)


class _Gen:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def mixed(self, alphabet: str, n: int) -> str:
        """A random string that holds a digit, an upper and a lower case letter when the
        alphabet has them (as every generated token does past a few characters)."""
        if n < 6:
            return self.s(alphabet, n)
        while True:
            v = self.s(alphabet, n)
            need = [c for c in (DI, UP, LO) if set(c) & set(alphabet)]
            if all(set(v) & set(c) for c in need):
                return v

    def b64(self, nbytes: int, urlsafe: bool = False) -> str:
        raw = bytes(self.rng.randrange(256) for _ in range(nbytes))
        enc = base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)
        return enc.decode()

    def pem(self, label: str, lines: int = 12) -> tuple[str, tuple[str, ...]]:
        body = [self.s(B64, 64) for _ in range(lines)] + [self.s(B64, 40) + "=="]
        text = (f"{DASH5}BEGIN {label}{DASH5}\n" + "\n".join(body)
                + f"\n{DASH5}END {label}{DASH5}\n")
        return text, (body[0], body[len(body) // 2], body[-1])

    def password(self) -> str:
        words = ["Blue", "Tiger", "Maple", "Orbit", "Cobalt", "Falcon", "Quartz", "Willow"]
        return (self.rng.choice(words) + self.rng.choice(words).lower()
                + str(self.rng.randrange(10, 999)) + self.rng.choice("!#%*-_."))


Make = Callable[[_Gen], tuple[str, tuple[str, ...]]]


def _one(template: str, value: Callable[[_Gen], str]) -> Make:
    """A case whose text is ``template`` with its single secret at ``{v}``."""

    def make(g: _Gen) -> tuple[str, tuple[str, ...]]:
        v = value(g)
        return template.format(v=v), (v,)

    return make


def _pem_case(label: str, intro: str) -> Make:
    def make(g: _Gen) -> tuple[str, tuple[str, ...]]:
        text, parts = g.pem(label)
        return intro + "\n\n" + text, parts

    return make


def _ppk(g: _Gen) -> tuple[str, tuple[str, ...]]:
    priv = [g.s(B64, 64), g.s(B64, 22) + "=="]
    text = (
        "Saved the deploy key for the router (PuTTY format):\n\n"
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n"
        "Comment: eddsa-key-20250114\nPublic-Lines: 2\n"
        f"AAAAC3NzaC1lZDI1NTE5AAAAI{g.s(B64, 39)}\n{g.s(B64, 8)}\n"
        f"Private-Lines: {len(priv)}\n" + "\n".join(priv) + "\n"
        f"Private-MAC: {g.s(HEX, 64)}\n"
    )
    return text, tuple(priv)


def _aws_credentials_file(g: _Gen) -> tuple[str, tuple[str, ...]]:
    kid, secret = "AKIA" + g.s(UP + "234567", 16), g.mixed(AL + "+/", 40)
    return (f"~/.aws/credentials on the build box:\n\n[default]\naws_access_key_id = {kid}\n"
            f"aws_secret_access_key = {secret}\nregion = eu-west-1\n", (kid, secret))


def _gcp_service_account(g: _Gen) -> tuple[str, tuple[str, ...]]:
    _, parts = g.pem("PRIVATE KEY")
    body = "\\n".join(parts)
    key = f"{DASH5}BEGIN PRIVATE KEY{DASH5}\\n{body}\\n{DASH5}END PRIVATE KEY{DASH5}\\n"
    text = ('{"type": "service_account", "project_id": "ledger-prod-31337", '
            f'"private_key_id": "{g.s(HEX, 40)}", "private_key": "{key}", '
            '"client_email": "ci-deployer@ledger-prod-31337.iam.gserviceaccount.com"}')
    return text, parts


def _azure_connection_string(g: _Gen) -> tuple[str, tuple[str, ...]]:
    key = g.b64(64)
    return ("AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName="
            f"ledgerprodstore;AccountKey={key};EndpointSuffix=core.windows.net\"", (key,))


def _azure_sas(g: _Gen) -> tuple[str, tuple[str, ...]]:
    sig = g.b64(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    return ("Backup upload URL (valid a week): https://ledgerprodstore.blob.core.windows.net/"
            "backups/db.tar.gz?sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2025-03-01T00:00:00Z"
            f"&st=2025-02-22T00:00:00Z&spr=https&sig={sig}", (sig,))


def _servicebus(g: _Gen) -> tuple[str, tuple[str, ...]]:
    key = g.b64(32)
    return ("SERVICEBUS=Endpoint=sb://ledger-events.servicebus.windows.net/;"
            f"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}", (key,))


def _discord_bot(g: _Gen) -> tuple[str, tuple[str, ...]]:
    ident = str(g.rng.randrange(10**17, 10**18 * 2))
    first = base64.b64encode(ident.encode()).decode().rstrip("=")
    tok = f"{first}.{g.mixed(URL, 6)}.{g.mixed(URL, 38)}"
    return f"The Discord bot logs in with {tok} (kept in the bot's .env).", (tok,)


def _basic_header(g: _Gen) -> tuple[str, tuple[str, ...]]:
    cred = base64.b64encode(f"deploy:{g.password()}".encode()).decode()
    return ("Request that worked:\n\nGET /api/v2/builds HTTP/1.1\nHost: ci.example.internal\n"
            f"Authorization: Basic {cred}\nAccept: application/json\n", (cred,))


def _django_secret(g: _Gen) -> tuple[str, tuple[str, ...]]:
    v = g.s(LO + DI + "!@#%^&*(-_=+)", 50)
    return f"settings.py (prod):\nSECRET_KEY = '{v}'\nDEBUG = False\n", (v,)


def _dropbox_long(g: _Gen) -> tuple[str, tuple[str, ...]]:
    v = g.mixed(AL, 11) + "AAAAAAAAAA" + g.mixed(URL, 43)
    return f"DROPBOX_ACCESS_TOKEN={v}", (v,)


# family, kind, how to make it. Each template is how such a value typically reaches notes.
CASES: list[tuple[str, str, Make]] = [
    # --- cloud providers
    ("AWS", "aws-access-key-id", _one("export AWS_ACCESS_KEY_ID={v}",
                                      lambda g: "AKIA" + g.s(UP + "234567", 16))),
    ("AWS", "aws-session-key-id", _one("temporary creds from sts: {v} (expires 16:00)",
                                       lambda g: "ASIA" + g.s(UP + "234567", 16))),
    ("AWS", "aws-secret-access-key", _one("export AWS_SECRET_ACCESS_KEY={v}",
                                          lambda g: g.mixed(AL + "+/", 40))),
    ("AWS", "aws-credentials-file", _aws_credentials_file),
    ("AWS", "aws-bedrock-api-key", _one("AWS_BEARER_TOKEN_BEDROCK={v}",
                                        lambda g: "ABSK" + g.b64(100))),
    ("Google", "google-api-key", _one("maps key: {v}", lambda g: "AIza" + g.mixed(URL, 35))),
    ("Google", "google-oauth-access-token",
     _one("curl output showed the access token {v} — it expires in an hour.",
          lambda g: "ya29." + g.mixed(URL, 150))),
    ("Google", "google-oauth-client-secret", _one('"client_secret": "{v}"',
                                                  lambda g: "GOCSPX-" + g.mixed(URL, 28))),
    ("Google", "google-oauth-refresh-token", _one("refresh_token: {v}",
                                                  lambda g: "1//0" + g.mixed(URL, 100))),
    ("Google", "gcp-service-account-json", _gcp_service_account),
    ("Firebase", "firebase-fcm-server-key",
     _one("FCM legacy server key for push: {v}",
          lambda g: "AAAA" + g.mixed(URL, 7) + ":APA91b" + g.mixed(URL, 134))),
    ("Azure", "azure-storage-connection-string", _azure_connection_string),
    ("Azure", "azure-storage-account-key",
     _one("The primary storage account key for ledgerprodstore is {v}", lambda g: g.b64(64))),
    ("Azure", "azure-sas-url", _azure_sas),
    ("Azure", "azure-servicebus-connection-string", _servicebus),
    ("Azure", "azure-ad-client-secret",
     _one("AZURE_CLIENT_SECRET={v}",
          lambda g: g.mixed(AL, 3) + str(g.rng.randrange(10)) + "Q~" + g.mixed(AL + "_~.-", 34))),
    ("Alibaba", "alibaba-access-key-id", _one("ALIBABA_CLOUD_ACCESS_KEY_ID={v}",
                                              lambda g: "LTAI" + g.mixed(AL, 20))),
    ("Alibaba", "alibaba-secret-key", _one("alibaba_secret_key = \"{v}\"",
                                           lambda g: g.mixed(AL, 30))),
    ("DigitalOcean", "digitalocean-pat", _one("doctl auth init -t {v}",
                                              lambda g: "dop_v1_" + g.s(HEX, 64))),
    ("Heroku", "heroku-api-key-v2", _one("HEROKU_API_KEY={v}",
                                         lambda g: "HRKU-AA" + g.mixed(URL, 58))),
    ("Fly.io", "flyio-token", _one("FLY_API_TOKEN={v}", lambda g: "fo1_" + g.mixed(URL, 43))),
    ("Cloudflare", "cloudflare-api-token", _one("CLOUDFLARE_API_TOKEN={v}",
                                                lambda g: g.mixed(URL, 40))),
    ("Databricks", "databricks-token", _one("databricks token: {v}",
                                            lambda g: "dapi" + g.s(HEX, 32))),
    # --- code hosting and CI
    ("GitHub", "github-pat-classic", _one("git remote set-url origin https://x:{v}@github.com/o/r",
                                          lambda g: "ghp_" + g.mixed(AL, 36))),
    ("GitHub", "github-oauth-token", _one("GH_TOKEN={v}", lambda g: "gho_" + g.mixed(AL, 36))),
    ("GitHub", "github-user-to-server", _one("token {v}", lambda g: "ghu_" + g.mixed(AL, 36))),
    ("GitHub", "github-server-to-server", _one("installation token {v}",
                                               lambda g: "ghs_" + g.mixed(AL, 36))),
    ("GitHub", "github-refresh-token", _one("refresh: {v}", lambda g: "ghr_" + g.mixed(AL, 36))),
    ("GitHub", "github-fine-grained-pat",
     _one("Use the fine-grained token {v} for the release job.",
          lambda g: "github_pat_" + g.mixed(AL, 22) + "_" + g.mixed(AL, 59))),
    ("GitLab", "gitlab-pat", _one("GITLAB_TOKEN={v}", lambda g: "glpat-" + g.mixed(URL, 20))),
    ("GitLab", "gitlab-pat-routable",
     _one("new-style token {v}",
          lambda g: "glpat-" + g.mixed(AL, 40) + "." + g.s(LO + DI, 2) + g.s(LO + DI, 7))),
    ("GitLab", "gitlab-runner-token", _one("gitlab-runner register --token {v}",
                                           lambda g: "glrt-" + g.mixed(URL, 20))),
    ("GitLab", "gitlab-runner-registration-token",
     _one("registration-token: {v}", lambda g: "GR1348941" + g.mixed(URL, 20))),
    ("GitLab", "gitlab-deploy-token", _one("deploy token {v}",
                                           lambda g: "gldt-" + g.mixed(URL, 20))),
    ("GitLab", "gitlab-pipeline-trigger", _one("curl -F token={v} -F ref=main .../trigger",
                                               lambda g: "glptt-" + g.s(HEX, 40))),
    ("GitLab", "gitlab-ci-job-token", _one("CI_JOB_TOKEN looked like {v}",
                                           lambda g: "glcbt-" + g.mixed(AL, 2) + "_"
                                           + g.mixed(URL, 20))),
    ("GitLab", "gitlab-feed-token", _one("feed token: {v}", lambda g: "glft-" + g.mixed(URL, 20))),
    ("GitLab", "gitlab-oauth-app-secret", _one("oauth app secret {v}",
                                               lambda g: "gloas-" + g.mixed(URL, 64))),
    ("Bitbucket", "bitbucket-client-secret", _one("bitbucket_client_secret: {v}",
                                                  lambda g: g.mixed(URL, 64))),
    ("Atlassian", "atlassian-api-token",
     _one("Jira API token for the sync script: {v}", lambda g: "ATATT3" + g.mixed(URL, 186))),
    ("Atlassian", "jira-token-assignment", _one("JIRA_API_TOKEN={v}",
                                                lambda g: g.mixed(LO + DI, 20) + g.s(HEX, 4))),
    ("CircleCI", "circleci-token", _one("CIRCLE_TOKEN={v}", lambda g: g.s(HEX, 40))),
    ("Docker Hub", "dockerhub-pat", _one("docker login -u ledgerbot -p {v}",
                                         lambda g: "dckr_pat_" + g.mixed(URL, 27))),
    ("Docker Hub", "dockerhub-org-token", _one("DOCKERHUB_TOKEN={v}",
                                               lambda g: "dckr_oat_" + g.mixed(URL, 32))),
    ("npm", "npm-token", _one("//registry.npmjs.org/:_authToken={v}",
                              lambda g: "npm_" + g.mixed(AL, 36))),
    ("PyPI", "pypi-token-prose",
     _one("Published 0.4.1 to PyPI with the upload token {v} — revoke it after the release.",
          lambda g: "pypi-AgEIcHlwaS5vcmc" + g.mixed(URL, 160))),
    ("PyPI", "pypi-token-pypirc", _one("[pypi]\nusername = __token__\npassword = {v}\n",
                                       lambda g: "pypi-AgEIcHlwaS5vcmc" + g.mixed(URL, 120))),
    ("RubyGems", "rubygems-token", _one("GEM_HOST_API_KEY={v}",
                                        lambda g: "rubygems_" + g.s(HEX, 48))),
    ("Clojars", "clojars-token", _one("clojars deploy token {v}",
                                      lambda g: "CLOJARS_" + g.s(LO + DI, 60))),
    ("Artifactory", "artifactory-api-key", _one("ARTIFACTORY_API_KEY={v}",
                                                lambda g: "AKCp" + g.mixed(AL, 69))),
    ("Artifactory", "artifactory-reference-token", _one("jfrog token: {v}",
                                                        lambda g: "cmVmd" + g.mixed(AL, 59))),
    ("Terraform", "terraform-cloud-token",
     _one('credentials "app.terraform.io" {{ token = "{v}" }}',
          lambda g: g.mixed(AL, 14) + ".atlasv1." + g.mixed(URL, 67))),
    ("Vault", "vault-service-token", _one("VAULT_TOKEN={v}", lambda g: "hvs." + g.mixed(URL, 91))),
    ("Vault", "vault-batch-token", _one("batch token {v}", lambda g: "hvb." + g.mixed(URL, 150))),
    ("Vault", "vault-legacy-token", _one("export VAULT_TOKEN=s.{v}", lambda g: g.mixed(AL, 24))),
    ("Doppler", "doppler-token", _one("DOPPLER_TOKEN={v}", lambda g: "dp.pt." + g.mixed(AL, 43))),
    ("Pulumi", "pulumi-token", _one("PULUMI_ACCESS_TOKEN={v}", lambda g: "pul-" + g.s(HEX, 40))),
    ("Sentry", "sentry-user-token", _one("SENTRY_AUTH_TOKEN={v}",
                                         lambda g: "sntryu_" + g.s(HEX, 64))),
    ("Snyk", "snyk-token", _one(
        "SNYK_TOKEN={v}",
        lambda g: "-".join(g.s(HEX, n) for n in (8, 4, 4, 4, 12)))),
    ("Harness", "harness-pat", _one("harness api key {v}", lambda g: "pat." + g.mixed(URL, 22)
                                    + "." + g.mixed(AL, 24) + "." + g.mixed(AL, 20))),
    ("Octopus", "octopus-api-key", _one("Octopus key: {v}", lambda g: "API-" + g.s(UP + DI, 26))),
    ("Infracost", "infracost-token", _one("INFRACOST_API_KEY={v}",
                                          lambda g: "ico-" + g.mixed(AL, 32))),
    ("Scalingo", "scalingo-token", _one("scalingo login --api-token {v}",
                                        lambda g: "tk-us-" + g.mixed(URL, 48))),
    ("Prefect", "prefect-token", _one("PREFECT_API_KEY={v}", lambda g: "pnu_" + g.mixed(AL, 36))),
    ("Readme", "readme-token", _one("README_API_KEY={v}", lambda g: "rdme_" + g.s(LO + DI, 70))),
    ("Codecov", "codecov-token", _one("CODECOV_TOKEN={v}", lambda g: g.mixed(LO + DI, 32))),
    # --- chat, mail, messaging
    ("Slack", "slack-bot-token", _one(
        "SLACK_BOT_TOKEN={v}",
        lambda g: f"xoxb-{g.s(DI, 12)}-{g.s(DI, 13)}-{g.mixed(AL, 24)}")),
    ("Slack", "slack-user-token", _one(
        "user token {v}",
        lambda g: f"xoxp-{g.s(DI, 12)}-{g.s(DI, 12)}-{g.s(DI, 13)}-{g.s(HEX, 32)}")),
    ("Slack", "slack-app-token", _one(
        "socket mode: {v}",
        lambda g: f"xapp-1-A{g.s(UP + DI, 10)}-{g.s(DI, 13)}-{g.s(HEX, 64)}")),
    ("Slack", "slack-webhook", _one(
        "alerts go to {v}",
        lambda g: f"https://hooks.slack.com/services/T{g.s(UP + DI, 10)}/B{g.s(UP + DI, 10)}/"
        f"{g.mixed(AL, 24)}")),
    ("Slack", "slack-config-refresh-token", _one(
        "SLACK_CONFIG_REFRESH_TOKEN={v}", lambda g: f"xoxe-1-{g.mixed(UP + DI, 146)}")),
    ("Discord", "discord-bot-token", _discord_bot),
    ("Discord", "discord-webhook", _one(
        "Deploy notices: {v}",
        lambda g: f"https://discord.com/api/webhooks/{g.s(DI, 19)}/{g.mixed(URL, 68)}")),
    ("Discord", "discord-client-secret", _one("DISCORD_CLIENT_SECRET={v}",
                                              lambda g: g.mixed(URL, 32))),
    ("Telegram", "telegram-bot-token", _one(
        "BotFather gave me {v} for the alerts bot.",
        lambda g: f"{g.rng.randrange(10**8, 10**10)}:AA{g.mixed(URL, 33)}")),
    ("Microsoft Teams", "teams-webhook", _one(
        "teams webhook {v}",
        lambda g: f"https://ledger.webhook.office.com/webhookb2/{_uuid(g)}@{_uuid(g)}"
        f"/IncomingWebhook/{g.s(HEX, 32)}/{_uuid(g)}")),
    ("Twilio", "twilio-api-key", _one("TWILIO_API_KEY={v}", lambda g: "SK" + g.s(HEX, 32))),
    ("Twilio", "twilio-auth-token", _one("TWILIO_AUTH_TOKEN={v}", lambda g: g.s(HEX, 32))),
    ("Twilio", "twilio-auth-token-prose", _one(
        "The Twilio auth token for the SMS sender is {v}.", lambda g: g.s(HEX, 32))),
    ("SendGrid", "sendgrid-api-key", _one(
        "SENDGRID_API_KEY={v}", lambda g: "SG." + g.mixed(URL, 22) + "." + g.mixed(URL, 43))),
    ("Mailchimp", "mailchimp-api-key", _one(
        "Mailchimp key {v} (marketing list sync)",
        lambda g: g.s(HEX, 32) + "-us" + str(g.rng.randrange(1, 22)))),
    ("Mailgun", "mailgun-api-key", _one("MAILGUN_API_KEY={v}", lambda g: "key-" + g.s(HEX, 32))),
    ("Brevo", "sendinblue-api-key", _one(
        "BREVO_API_KEY={v}", lambda g: "xkeysib-" + g.s(HEX, 64) + "-" + g.mixed(AL, 16))),
    ("Postmark", "postmark-server-token", _one(
        "POSTMARK_SERVER_TOKEN={v}", lambda g: "-".join(g.s(HEX, n) for n in (8, 4, 4, 4, 12)))),
    # --- payments and commerce
    ("Stripe", "stripe-secret-key", _one("STRIPE_SECRET_KEY={v}",
                                         lambda g: "sk_live_" + g.mixed(AL, 99))),
    ("Stripe", "stripe-restricted-key", _one("restricted key {v}",
                                             lambda g: "rk_live_" + g.mixed(AL, 24))),
    ("Stripe", "stripe-test-key", _one("stripe.api_key = '{v}'",
                                       lambda g: "sk_test_" + g.mixed(AL, 24))),
    ("Stripe", "stripe-webhook-secret", _one("STRIPE_WEBHOOK_SECRET={v}",
                                             lambda g: "whsec_" + g.mixed(AL, 32))),
    ("Shopify", "shopify-access-token", _one("X-Shopify-Access-Token: {v}",
                                             lambda g: "shpat_" + g.s(HEX, 32))),
    ("Shopify", "shopify-shared-secret", _one("shopify app secret {v}",
                                              lambda g: "shpss_" + g.s(HEX, 32))),
    ("Shopify", "shopify-custom-app-token", _one("custom app: {v}",
                                                 lambda g: "shpca_" + g.s(HEX, 32))),
    ("Shopify", "shopify-private-app-token", _one("private app password {v}",
                                                  lambda g: "shppa_" + g.s(HEX, 32))),
    ("Square", "square-access-token", _one("SQUARE_ACCESS_TOKEN={v}",
                                           lambda g: "EAAA" + g.mixed(URL, 60))),
    ("Square", "square-legacy-access-token", _one("square token {v}",
                                                  lambda g: "sq0atp-" + g.mixed(URL, 22))),
    ("Square", "square-oauth-secret", _one("Square OAuth application secret: {v}",
                                           lambda g: "sq0csp-" + g.mixed(URL, 43))),
    ("Braintree", "braintree-access-token", _one(
        "BRAINTREE_ACCESS_TOKEN={v}",
        lambda g: f"access_token$production${g.s(LO + DI, 16)}${g.s(HEX, 32)}")),
    ("PayPal", "paypal-client-secret", _one("PAYPAL_CLIENT_SECRET={v}",
                                            lambda g: g.mixed(URL, 80))),
    ("Plaid", "plaid-secret", _one("PLAID_SECRET={v}", lambda g: g.s(HEX, 30))),
    ("Flutterwave", "flutterwave-secret-key", _one(
        "FLW_SECRET_KEY={v}", lambda g: "FLWSECK_TEST-" + g.s("abcdefgh" + DI, 32) + "-X")),
    ("Shippo", "shippo-token", _one("shippo key {v}", lambda g: "shippo_live_" + g.s(HEX, 40))),
    ("EasyPost", "easypost-api-key", _one("EasyPost production key: {v}",
                                          lambda g: "EZAK" + g.mixed(AL, 54))),
    ("EasyPost", "easypost-test-key", _one("EASYPOST_TEST_KEY={v}",
                                           lambda g: "EZTK" + g.mixed(AL, 54))),
    ("Duffel", "duffel-token", _one("DUFFEL_TOKEN={v}",
                                    lambda g: "duffel_live_" + g.mixed(URL, 43))),
    # --- AI providers
    ("Anthropic", "anthropic-api-key", _one(
        "ANTHROPIC_API_KEY={v}", lambda g: "sk-ant-api03-" + g.mixed(URL, 93) + "AA")),
    ("Anthropic", "anthropic-admin-key", _one(
        "admin key {v}", lambda g: "sk-ant-admin01-" + g.mixed(URL, 93) + "AA")),
    ("OpenAI", "openai-project-key", _one(
        "OPENAI_API_KEY={v}",
        lambda g: "sk-proj-" + g.mixed(URL, 74) + "T3BlbkFJ" + g.mixed(URL, 74))),
    ("OpenAI", "openai-service-account-key", _one(
        "service account key {v}",
        lambda g: "sk-svcacct-" + g.mixed(URL, 58) + "T3BlbkFJ" + g.mixed(URL, 58))),
    ("OpenAI", "openai-legacy-key", _one(
        "openai.api_key = \"{v}\"",
        lambda g: "sk-" + g.mixed(AL, 20) + "T3BlbkFJ" + g.mixed(AL, 20))),
    ("Hugging Face", "huggingface-token", _one("huggingface-cli login --token {v}",
                                               lambda g: "hf_" + g.mixed(UP + LO, 34))),
    ("Hugging Face", "huggingface-org-token", _one("HF org token {v}",
                                                   lambda g: "api_org_" + g.mixed(UP + LO, 34))),
    ("Groq", "groq-api-key", _one("GROQ_API_KEY={v}", lambda g: "gsk_" + g.mixed(AL, 52))),
    ("Perplexity", "perplexity-api-key", _one("Perplexity key for research: {v}",
                                              lambda g: "pplx-" + g.mixed(AL, 48))),
    ("Cohere", "cohere-api-key", _one("CO_API_KEY={v}", lambda g: g.mixed(AL, 40))),
    ("Replicate", "replicate-token", _one("REPLICATE_API_TOKEN={v}",
                                          lambda g: "r8_" + g.mixed(AL, 37))),
    # --- SaaS and observability
    ("Notion", "notion-token", _one("NOTION_TOKEN={v}",
                                    lambda g: "ntn_" + g.s(DI, 11) + g.mixed(AL, 35))),
    ("Notion", "notion-legacy-token", _one("notion integration secret: {v}",
                                           lambda g: "secret_" + g.mixed(AL, 43))),
    ("Figma", "figma-pat", _one("Figma personal access token {v} (read-only).",
                                lambda g: "figd_" + g.mixed(URL, 40))),
    ("Airtable", "airtable-pat", _one(
        "airtable base sync uses {v}", lambda g: "pat" + g.mixed(AL, 14) + "." + g.s(HEX, 64))),
    ("Linear", "linear-api-key", _one("LINEAR_API_KEY={v}",
                                      lambda g: "lin_api_" + g.mixed(AL, 40))),
    ("Okta", "okta-api-token", _one("OKTA_API_TOKEN={v}", lambda g: "00" + g.mixed(URL, 40))),
    ("Okta", "okta-ssws-header", _one("Authorization: SSWS {v}",
                                      lambda g: "00" + g.mixed(URL, 40))),
    ("New Relic", "new-relic-user-key", _one("NEW_RELIC_API_KEY={v}",
                                             lambda g: "NRAK-" + g.mixed(UP + DI, 27))),
    ("New Relic", "new-relic-key-prose", _one("New Relic user key {v} for the dashboards.",
                                              lambda g: "NRAK-" + g.mixed(UP + DI, 27))),
    ("New Relic", "new-relic-insert-key", _one("insert key {v}",
                                               lambda g: "NRII-" + g.mixed(URL, 32))),
    ("Grafana", "grafana-cloud-token", _one("GRAFANA_CLOUD_TOKEN={v}",
                                            lambda g: "glc_" + g.b64(90))),
    ("Grafana", "grafana-service-account", _one(
        "grafana sa token {v}", lambda g: "glsa_" + g.mixed(AL, 32) + "_" + g.s(HEX, 8))),
    ("Grafana", "grafana-legacy-api-key", _one(
        "GF_API_KEY={v}", lambda g: "eyJrIjoi" + g.mixed(AL, 80))),
    ("Datadog", "datadog-api-key", _one("DD_API_KEY={v}", lambda g: g.s(HEX, 32))),
    ("Postman", "postman-api-key", _one(
        "Postman API key: {v}", lambda g: "PMAK-" + g.s(HEX, 24) + "-" + g.s(HEX, 34))),
    ("PlanetScale", "planetscale-password", _one(
        "DATABASE_URL password part: {v}", lambda g: "pscale_pw_" + g.mixed(URL, 43))),
    ("PlanetScale", "planetscale-token", _one("pscale service token {v}",
                                              lambda g: "pscale_tkn_" + g.mixed(URL, 43))),
    ("PlanetScale", "planetscale-oauth", _one("oauth {v}",
                                              lambda g: "pscale_oauth_" + g.mixed(URL, 43))),
    ("Dropbox", "dropbox-short-lived", _one(
        "Dropbox access token (short-lived) {v}", lambda g: "sl." + g.mixed(URL, 140))),
    ("Dropbox", "dropbox-long-lived", _dropbox_long),
    ("Dynatrace", "dynatrace-token", _one(
        "DT_API_TOKEN={v}",
        lambda g: "dt0c01." + g.mixed(UP + DI, 24) + "." + g.mixed(UP + DI, 64))),
    ("1Password", "1password-secret-key", _one(
        "Emergency kit secret key: {v}",
        lambda g: f"A3-{g.mixed(UP + DI, 6)}-{g.mixed(UP + DI, 6)}-{g.mixed(UP + DI, 5)}-"
        f"{g.mixed(UP + DI, 5)}-{g.mixed(UP + DI, 5)}-{g.mixed(UP + DI, 5)}")),
    ("MaxMind", "maxmind-license-key", _one(
        "GEOIP license {v}", lambda g: g.mixed(AL, 6) + "_" + g.mixed(AL, 29) + "_mmk")),
    ("Mapbox", "mapbox-secret-token", _one(
        "MAPBOX_SECRET_TOKEN={v}",
        lambda g: "sk.eyJ1Ijoi" + g.mixed(AL, 40) + "." + g.mixed(URL, 22))),
    ("Algolia", "algolia-admin-key", _one("ALGOLIA_ADMIN_KEY={v}", lambda g: g.s(HEX, 32))),
    ("Contentful", "contentful-token", _one("CONTENTFUL_DELIVERY_TOKEN={v}",
                                            lambda g: g.mixed(URL, 43))),
    ("OpenShift", "openshift-token", _one("oc login --token={v}",
                                          lambda g: "sha256~" + g.mixed(URL, 43))),
    ("Sourcegraph", "sourcegraph-token", _one(
        "SRC_ACCESS_TOKEN={v}", lambda g: "sgp_" + g.s(HEX, 16) + "_" + g.s(HEX, 40))),
    ("Adobe", "adobe-client-secret", _one("adobe client secret {v}",
                                          lambda g: "p8e-" + g.mixed(AL, 32))),
    # --- keys and key files
    ("Private keys", "rsa-private-key", _pem_case("RSA PRIVATE KEY", "Old deploy key:")),
    ("Private keys", "openssh-private-key", _pem_case("OPENSSH PRIVATE KEY", "~/.ssh/id_ed25519:")),
    ("Private keys", "ec-private-key", _pem_case("EC PRIVATE KEY", "TLS key for the staging LB:")),
    ("Private keys", "pkcs8-private-key", _pem_case("PRIVATE KEY", "server.key:")),
    ("Private keys", "encrypted-private-key", _pem_case("ENCRYPTED PRIVATE KEY", "backup.key:")),
    ("Private keys", "dsa-private-key", _pem_case("DSA PRIVATE KEY", "legacy key:")),
    ("Private keys", "pgp-private-key", _pem_case("PGP PRIVATE KEY BLOCK", "signing key export:")),
    ("PuTTY", "putty-private-key", _ppk),
    ("age", "age-secret-key", _one(
        "# created: 2025-01-14T10:00:00Z\n# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw"
        "8zmrj2kg5sfn9aqmcac8p\n{v}\n", lambda g: "AGE-SECRET-KEY-1" + g.s(BECH32.upper(), 58))),
    ("JWT", "jwt", _one(
        "session cookie was {v}",
        lambda g: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + g.mixed(URL, 60) + "."
        + g.mixed(URL, 43))),
    # --- headers and command lines
    ("HTTP headers", "authorization-bearer-opaque", _one(
        "> GET /v1/accounts HTTP/1.1\n> Authorization: Bearer {v}\n> Accept: */*\n",
        lambda g: g.mixed(URL, 40))),
    ("HTTP headers", "authorization-basic", _basic_header),
    ("HTTP headers", "authorization-token", _one("Authorization: Token {v}",
                                                 lambda g: g.s(HEX, 40))),
    ("HTTP headers", "x-api-key-header", _one("X-API-Key: {v}", lambda g: g.mixed(AL, 32))),
    ("HTTP headers", "curl-bearer-header", _one(
        'curl -H "Authorization: Bearer {v}" https://api.example.com/v1/me',
        lambda g: g.mixed(URL, 48))),
    ("Command lines", "curl-user-password", _one(
        "curl -u admin:{v} https://jenkins.internal/api/json", lambda g: g.password())),
    ("Command lines", "sshpass-password", _one(
        "sshpass -p '{v}' ssh deploy@10.0.4.12 'systemctl restart api'", lambda g: g.password())),
    ("Command lines", "mysql-password-flag", _one(
        "mysql -u root -p{v} ledger < dump.sql", lambda g: g.password())),
    ("Command lines", "password-flag", _one(
        "psql-backup --host db1 --password={v} --all", lambda g: g.password())),
    # --- URLs with credentials
    ("URL credentials", "postgres-url", _one(
        "DATABASE_URL=postgres://ledger:{v}@db.internal:5432/ledger", lambda g: g.password())),
    ("URL credentials", "mongodb-srv-url", _one(
        "mongodb+srv://app:{v}@cluster0.ab1cd.mongodb.net/prod", lambda g: g.password())),
    ("URL credentials", "redis-url", _one("REDIS_URL=redis://default:{v}@cache:6379/0",
                                          lambda g: g.mixed(AL, 24))),
    ("URL credentials", "amqp-url", _one("amqp://worker:{v}@mq.internal:5672/",
                                         lambda g: g.password())),
    ("URL credentials", "https-basic-url", _one(
        "cloned from https://ci-bot:{v}@git.example.com/ledger.git", lambda g: g.password())),
    # --- passwords and generic assignments
    ("Passwords", "password-env", _one("DB_PASSWORD={v}", lambda g: g.password())),
    ("Passwords", "password-yaml", _one("database:\n  user: ledger\n  password: {v}\n",
                                        lambda g: g.password())),
    ("Passwords", "password-json", _one('{{"user": "svc", "password": "{v}"}}',
                                        lambda g: g.password())),
    ("Passwords", "password-prose", _one(
        "The staging admin password is {v} until Friday.", lambda g: g.password())),
    ("Passwords", "wifi-password-prose", _one(
        "Office wifi: the password for GuestNet was changed to {v}", lambda g: g.password())),
    ("Generic", "api-key-assignment", _one("api_key = \"{v}\"", lambda g: g.mixed(AL, 32))),
    ("Generic", "client-secret-yaml", _one(
        "oauth:\n  client_id: ledger-web\n  client_secret: {v}\n",
                                           lambda g: g.mixed(URL, 40))),
    ("Generic", "token-json", _one('{{"access_token": "{v}", "expires_in": 3600}}',
                                   lambda g: g.mixed(URL, 64))),
    ("Generic", "django-secret-key", _django_secret),
    ("Generic", "webhook-secret", _one("WEBHOOK_SIGNING_SECRET={v}", lambda g: g.mixed(AL, 40))),
    ("Generic", "encryption-key-base64", _one("ENCRYPTION_KEY={v}", lambda g: g.b64(32))),
    ("Generic", "secret-in-prose", _one(
        "The API key for the staging analytics project is {v}", lambda g: g.mixed(AL, 40))),
]


def _account_token(template: str) -> Make:
    """A 32-hex auth token in a sentence with its account id (``AC`` + 32 hex)."""

    def make(g: _Gen) -> tuple[str, tuple[str, ...]]:
        v = g.s(HEX, 32)
        return template.format(a="AC" + g.s(HEX, 32), v=v), (v,)

    return make


# --- issue #37: the classes a hidden corpus still got through (5 of 118 samples)
DJANGO = LO + DI + "!@#%^&*(-_=+)"
CASES += [
    # connection URLs with an empty user name: Redis' and Postgres' password-only form
    ("URL empty user", "redis-url-empty-user", _one(
        "REDIS_URL=redis://:{v}@cache.internal:6379/0", lambda g: g.password())),
    ("URL empty user", "rediss-url-empty-user-prose", _one(
        "The worker talks to rediss://:{v}@ledger-cache.redis.example.net:6380 since Monday.",
        lambda g: g.mixed(AL, 32))),
    ("URL empty user", "postgres-url-empty-user", _one(
        "psql postgres://:{v}@db.internal:5432/ledger -c 'select 1'", lambda g: g.password())),
    ("URL empty user", "mongodb-url-empty-user", _one(
        "MONGO_URL=mongodb://:{v}@mongo-0.internal:27017/app?authSource=admin",
        lambda g: g.mixed(AL, 20))),
    # framework secret keys: the prefix, or the setting's name
    ("Framework keys", "django-insecure-key", _one(
        "settings/base.py:\nSECRET_KEY = '{v}'\nALLOWED_HOSTS = []\n",
        lambda g: "django-insecure-" + g.s(DJANGO, 50))),
    ("Framework keys", "django-insecure-prose", _one(
        "startproject generated {v} as the key; replace it before deploying.",
        lambda g: "django-insecure-" + g.s(DJANGO, 50))),
    ("Framework keys", "django-secret-key-env", _one(
        "DJANGO_SECRET_KEY={v}", lambda g: g.s(LO + DI + "!@#%^&*(-_=+)", 50))),
    ("Framework keys", "rails-secret-key-base", _one(
        "config/credentials.yml.enc decrypted:\n\nsecret_key_base: {v}\n",
        lambda g: g.s(HEX, 128))),
    ("Framework keys", "rails-secret-key-base-env", _one(
        "heroku config:set SECRET_KEY_BASE={v}", lambda g: g.s(HEX, 128))),
    ("Framework keys", "flask-config-secret-key", _one(
        "app = Flask(__name__)\napp.config['SECRET_KEY'] = '{v}'\n", lambda g: g.s(HEX, 32))),
    ("Framework keys", "flask-app-secret-key", _one(
        "app.secret_key = \"{v}\"", lambda g: g.b64(24, urlsafe=True).rstrip("="))),
    ("Framework keys", "laravel-app-key", _one(
        ".env on the Laravel box:\nAPP_NAME=Ledger\nAPP_KEY=base64:{v}\nAPP_DEBUG=false\n",
        lambda g: g.b64(32))),
    # vendor tokens whose body holds digits where a narrow rule expects letters only
    ("Vendor token alphabets", "huggingface-token-digits", _one(
        "HF_TOKEN={v}", lambda g: "hf_" + g.mixed(AL, 34))),
    ("Vendor token alphabets", "huggingface-token-digits-prose", _one(
        "Pulled the gated model with hf token {v} from the team account.",
        lambda g: "hf_" + g.mixed(AL, 34))),
    ("Vendor token alphabets", "huggingface-org-token-digits", _one(
        "org token {v}", lambda g: "api_org_" + g.mixed(AL, 34))),
    ("Vendor token alphabets", "shopify-token-alnum", _one(
        "shopify admin token {v}", lambda g: "shpat_" + g.mixed(AL, 32))),
    # long vendor tokens with a fixed prefix, longer than (or unlike) the provider's rule
    ("Long prefixed tokens", "npm-token-long", _one(
        "Publishing from CI with {v} (automation token).", lambda g: "npm_" + g.mixed(AL, 48))),
    ("Long prefixed tokens", "pypi-token-plain", _one(
        "twine upload -u __token__ -p {v} dist/*", lambda g: "pypi-" + g.mixed(URL, 140))),
    ("Long prefixed tokens", "stripe-restricted-prose", _one(
        "The reporting job uses the restricted key {v} (read-only charges).",
        lambda g: "rk_live_" + g.mixed(AL, 99))),
    ("Long prefixed tokens", "stripe-live-prose", _one(
        "Charged the test card with {v} by mistake, rotate it.",
        lambda g: "sk_live_" + g.mixed(AL, 99))),
    ("Long prefixed tokens", "slack-rotating-token", _one(
        "token rotation gave {v} for the workspace",
        lambda g: "xoxe.xoxp-1-" + g.mixed(AL + "-", 160))),
    ("Long prefixed tokens", "gitlab-pat-long", _one(
        "the pipeline clones with {v}", lambda g: "glpat-" + g.mixed(URL, 64))),
    ("Long prefixed tokens", "digitalocean-pat-prose", _one(
        "DO token {v} has write scope", lambda g: "dop_v1_" + g.s(HEX, 64))),
    ("Long prefixed tokens", "shopify-token-long", _one(
        "Admin API token: {v}", lambda g: "shpat_" + g.mixed(AL, 48))),
    # a hex token named in prose, by its account id or as "auth token", no provider named
    ("Hex tokens in prose", "auth-token-by-account", _account_token(
        "SMS sender: account {a}, auth token {v}")),
    ("Hex tokens in prose", "token-beside-account", _account_token(
        "gateway creds: {a} / {v}")),
    ("Hex tokens in prose", "auth-token-prose", _one(
        "For the call-center account the auth token is {v} (rotated quarterly).",
        lambda g: g.s(HEX, 32))),
    ("Hex tokens in prose", "auth-token-before-account", _account_token(
        "auth token {v} for account {a}")),
    ("Hex tokens in prose", "api-secret-hex-prose", _one(
        "The webhook's API secret: {v}", lambda g: g.s(HEX, 64))),
]


def _uuid(g: _Gen) -> str:
    return "-".join(g.s(HEX, n) for n in (8, 4, 4, 4, 12))


def secret_cases(seed: int = 14) -> list[SecretCase]:
    g = _Gen(random.Random(seed))
    out = []
    for family, kind, make in CASES:
        text, values = make(g)
        out.append(SecretCase(family, kind, text, values))
    return out


# ---------------------------------------------------------------------------------------
# ordinary text

NAMES = ["Dana", "Priya", "Mateo", "Chen", "Amara", "Lukas", "Sofia", "Kenji", "Ines", "Omar"]
PROJECTS = ["ledger", "atlas", "billing-v2", "search", "onboarding", "data-pipeline", "mobile"]
ENVS = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "STRIPE_SECRET_KEY",
        "AWS_SECRET_ACCESS_KEY", "SLACK_BOT_TOKEN", "API_KEY", "SECRET_KEY", "AUTH_TOKEN",
        "HF_TOKEN", "DATABASE_URL", "SENTRY_DSN", "REDIS_PASSWORD", "JWT_SECRET"]
MODELS = ["gpt-4o-2024-08-06", "claude-sonnet-4-5", "meta-llama/Llama-3.1-8B-Instruct",
          "mistralai/Mistral-7B-v0.3", "bert-base-uncased",
          "sentence-transformers/all-MiniLM-L6-v2",
          "Qwen/Qwen2.5-7B-Instruct", "google/gemma-2-9b-it", "xlm-roberta-large"]
WORDS = ["the", "of", "and", "to", "in", "for", "on", "with", "budget", "deploy", "review",
         "migration", "latency", "cache", "index", "release", "customer", "invoice", "schema",
         "queue", "worker", "retry", "timeout", "backfill", "dashboard", "alert", "rollout",
         "feature", "flag", "canary", "pipeline", "embedding", "prompt", "context", "window",
         "summary"]


def _date(g: _Gen) -> str:
    return f"2025-{g.rng.randrange(1, 13):02d}-{g.rng.randrange(1, 29):02d}"


def _sha(g: _Gen, n: int = 40) -> str:
    return g.s(HEX, n)


def _sentence(g: _Gen, n: int = 8) -> str:
    words = [g.rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def _env_code(g: _Gen) -> str:
    var = g.rng.choice(ENVS)
    low = var.lower()
    return g.rng.choice([
        f'{low} = os.environ["{var}"]',
        f'{low} = os.getenv("{var}")',
        f'api_key = os.environ.get("{var}", "")',
        f"const apiKey = process.env.{var};",
        f'token := os.Getenv("{var}")',
        f'let key = std::env::var("{var}").expect("{var} not set");',
        f'export {var}="$(vault kv get -field=value secret/{g.rng.choice(PROJECTS)}/{low})"',
        f"{var}: ${{{{ secrets.{var} }}}}",
        f"  {low}: ${{{var}}}",
        f'password = getpass.getpass("Password for {g.rng.choice(NAMES).lower()}: ")',
        f"client = OpenAI(api_key=os.environ['{var}'])",
        f"secret = settings.{var}",
        f'headers = {{"Authorization": f"Bearer {{os.environ[\'{var}\']}}"}}',
        f'curl -H "Authorization: Bearer ${var}" https://api.example.com/v1/me',
        f"curl -u \"$USER:${var}\" https://jenkins.internal/api/json",
        f"sshpass -p \"${var}\" ssh deploy@host",
        f"password=${{{var}:?missing}}",
        f"auth_token = read_secret('{low}')",
        "db_password = config['database']['password']",
        f"- name: {var}\n  valueFrom:\n    secretKeyRef:\n      name: {low.replace('_', '-')}\n"
        f"      key: password",
        "token = request.headers.get('Authorization', '').removeprefix('Bearer ')",
        f"if not os.environ.get('{var}'):\n    raise SystemExit('{var} is required')",
    ])


def _llm_config(g: _Gen) -> str:
    model = g.rng.choice(MODELS)
    return g.rng.choice([
        f"model: {model}\ntokenizer: {model}\nmax_tokens: {g.rng.choice([256, 1024, 4096])}\n"
        f"temperature: 0.{g.rng.randrange(10)}",
        f"tokenizer_name: {model}\ntokenizer_revision: {_sha(g)}\ncontext_window: 128000",
        f"max_new_tokens: {g.rng.randrange(64, 4096)}\nstop_tokens: ['</s>', '<|eot_id|>']",
        f"token_budget: {g.rng.randrange(1000, 20000)}\nkey_bindings: vim\nauth: oauth2",
        f"api_base: https://api.openai.com/v1\napi_version: 2024-06-01\nmodel: {model}",
        f"embedder: minilm\ntokenizer: {model}\nbatch_size: 64\npad_token: '[PAD]'",
        f"secret_name: {g.rng.choice(PROJECTS)}-db-credentials\nkey_vault_name: kv-{g.s(LO, 6)}",
        f"auth:\n  provider: github\n  client_id: {g.s(HEX, 20)}\n  callback: /auth/callback",
        f"cache_key: {g.rng.choice(PROJECTS)}:{_sha(g, 16)}\ntoken_count: {g.rng.randrange(99999)}",
        f"tokens_used: {g.rng.randrange(100, 90000)}  # prompt {g.rng.randrange(100, 9000)}",
        "primary_key: id\nforeign_key: user_id\nsort_key: created_at",
        "keyring_backend: secretstorage\npassword_store: pass\ncredential_helper: osxkeychain",
    ])


def _password_prose(g: _Gen) -> str:
    return g.rng.choice([
        "The password is case-sensitive.",
        "Remember: the password must be at least 12 characters and include a digit.",
        f"{g.rng.choice(NAMES)} reset her password via the portal after the lockout.",
        "We rotated the API key last week; the old one is revoked.",
        "The token expires after 3600 seconds, so the job refreshes it every 50 minutes.",
        "The secret is stored in 1Password under 'Ledger prod'.",
        "The password for the staging db is in the team vault, not in this repo.",
        "Never paste the API key into the chat; use the env var.",
        "Password policy: 90-day rotation, no reuse of the last 5.",
        "The access token is a JWT signed with RS256; verify the kid header.",
        f"Ask {g.rng.choice(NAMES)} for the credentials to the vendor portal.",
        "Auth failed: invalid token (401) — the key had expired.",
        "The key insight: the cache key must include the tenant id.",
        "Bearer tokens are sent in the Authorization header, never in the URL.",
        "Set the password with `passwd` and then log out.",
        "The password is stored hashed with argon2id.",
        "Use Basic auth only over TLS.",
        "The secret sauce is the reranker, not the embedder.",
        "We pass the token via stdin so it never shows up in ps.",
        "Your password is too weak: use a passphrase.",
        "The API key lives in the OPENAI_API_KEY environment variable.",
        "The private key never leaves the HSM.",
        "Rotate the signing key yearly; the public key is published at /.well-known/jwks.json.",
    ])


def _hashes(g: _Gen) -> str:
    return g.rng.choice([
        f"commit {_sha(g)}",
        f"Fixed in {_sha(g, 7)} (see {_sha(g)}).",
        f"sha256: {_sha(g, 64)}",
        f"image: ghcr.io/acme/{g.rng.choice(PROJECTS)}@sha256:{_sha(g, 64)}",
        f"md5 of the export: {_sha(g, 32)}",
        f'"integrity": "sha512-{g.b64(64)}"',
        f"checksum={_sha(g, 64)}  {g.rng.choice(PROJECTS)}-1.4.2.tar.gz",
        f"git diff {_sha(g, 12)}..{_sha(g, 12)} -- knowledge/",
        f"etag: \"{_sha(g, 32)}\"",
        f"revision: {_sha(g)}",
        f"fingerprint SHA256:{g.b64(32).rstrip('=')}",
        f"tokenizer_sha: {_sha(g, 64)}",
        f"content_hash = \"{_sha(g, 64)}\"",
    ])


def _uuids(g: _Gen) -> str:
    u = _uuid(g)
    return g.rng.choice([
        f"request_id: {u}", f"trace_id={u}", f"session {u} ended at 14:02",
        f"idempotency_key = \"{u}\"", f'{{"id": "{u}", "status": "ok"}}',
        f"user {u} was migrated", f"correlation-id: {u}", f"job_id: {u}",
        f"tenant_key: {u}", f"Ticket {g.rng.choice(PROJECTS).upper()}-{g.rng.randrange(9999)}"
        f" links to run {u}.",
    ])


def _urls(g: _Gen) -> str:
    p = g.rng.choice(PROJECTS)
    return g.rng.choice([
        f"https://github.com/acme/{p}/commit/{_sha(g)}",
        f"https://github.com/acme/{p}/pull/{g.rng.randrange(9999)}#discussion_r{g.s(DI, 9)}",
        f"https://docs.example.com/{p}/auth?utm_source=notes&utm_medium=memo&id={g.s(DI, 6)}",
        f"https://app.example.com/dashboards/{_uuid(g)}?from=now-24h&to=now",
        f"ssh://git@github.com/acme/{p}.git",
        f"postgres://localhost:5432/{p.replace('-', '_')}",
        f"https://user@bitbucket.org/acme/{p}.git",
        f"https://www.youtube.com/watch?v={g.mixed(URL, 11)}",
        f"https://s3.amazonaws.com/acme-{p}/exports/{_date(g)}/{_uuid(g)}.parquet",
        f"https://accounts.google.com/o/oauth2/v2/auth?client_id={g.s(DI, 12)}-{g.s(LO + DI, 32)}"
        ".apps.googleusercontent.com&scope=email",
        f"https://grafana.internal/d/{g.mixed(AL, 9)}/latency?orgId=1",
        f"http://localhost:8080/api/v1/keys/{g.s(DI, 4)}",
        "https://example.com/reset-password?step=2",
        f"https://tokenizer.example.com/v2/{p}/{g.mixed(AL, 22)}",
    ])


def _image(g: _Gen) -> str:
    return f"![diagram](data:image/png;base64,iVBORw0KGgo{g.b64(g.rng.randrange(60, 900))})"


def _journal(g: _Gen) -> str:
    n = g.rng.choice(NAMES)
    p = g.rng.choice(PROJECTS)
    return g.rng.choice([
        f"- {_date(g)}: {n} decided to cap max_tokens at {g.rng.choice([512, 2048, 4096])} "
        f"for {p}.",
        f"- Met with {n} about the token budget for {p}; {_sentence(g)}",
        f"- Rotated the {p} API key (ticket OPS-{g.rng.randrange(9999)}); new one is in Vault.",
        f"- {n} prefers tabs; {_sentence(g, 6)}",
        f"- Deployed {p} v{g.rng.randrange(1, 5)}.{g.rng.randrange(20)}.{g.rng.randrange(20)} "
        f"at {g.rng.randrange(24):02d}:{g.rng.randrange(60):02d} UTC.",
        "- Lesson: keep secrets out of notes; use `memory remember` only for facts.",
        f"- {_sentence(g, 12)}",
        f"- TODO: ask {n} whether the {p} webhook secret is rotated automatically.",
        f"- Access review for {p}: {g.rng.randrange(3, 40)} users, {g.rng.randrange(5)} removed.",
        f"- The key takeaway from the {p} retro: {_sentence(g, 7)}",
    ])


def _code(g: _Gen) -> str:
    return g.rng.choice([
        "def authenticate(user, password):\n    return check_password_hash(user.pw_hash, password)",
        "if token is None or token.expired:\n    token = refresh_token(client_id, client_secret)",
        "SELECT id, api_key_hash, created_at FROM api_keys WHERE revoked_at IS NULL;",
        "ALTER TABLE users ADD COLUMN password_digest TEXT NOT NULL;",
        "for key, value in sorted(config.items()):\n    print(f'{key}={value}')",
        "tokens = tokenizer.encode(text, add_special_tokens=False)",
        "access_key = boto3.Session().get_credentials().access_key",
        "self.secret = secret  # injected by the container",
        "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=12))",
        "const token = await getAccessTokenSilently({ audience: API_AUDIENCE });",
        "kubectl create secret generic db-creds --from-env-file=.env.prod",
        "gh auth token | docker login ghcr.io -u USERNAME --password-stdin",
        "vault kv put secret/ledger/db password=@password.txt",
        "aws sts assume-role --role-arn arn:aws:iam::123456789012:role/deployer"
        " --role-session-name ci",
        "ssh-keygen -t ed25519 -C 'deploy@ledger' -f ~/.ssh/ledger_deploy",
        "openssl rand -base64 32 > /run/secrets/session_key",
        "key = hashlib.sha256(f'{tenant}:{path}'.encode()).hexdigest()",
        "api_key: str = Field(..., description='The API key, read from API_KEY')",
        "password: Optional[str] = None",
        "def get_secret(name: str) -> str:\n"
        "    return client.access_secret_version(name=name).payload",
    ])


def _log(g: _Gen) -> str:
    return g.rng.choice([
        f"{_date(g)}T{g.rng.randrange(24):02d}:12:03Z INFO worker={g.s(HEX, 8)} "
        f"job={_uuid(g)} took {g.rng.randrange(999)}ms",
        f"WARN token refresh failed for client {g.s(DI, 6)}: 401 invalid_grant",
        f"pytest: {g.rng.randrange(300)} passed, {g.rng.randrange(3)} skipped in "
        f"{g.rng.randrange(1, 99)}.{g.rng.randrange(99)}s",
        f"Successfully installed tokenizers-0.{g.rng.randrange(15, 22)}.1 "
        f"safetensors-0.4.{g.rng.randrange(9)}",
        "npm WARN deprecated request@2.88.2: request has been deprecated",
        f"Traceback (most recent call last):\n  File \"app.py\", line {g.rng.randrange(400)}, in "
        f"<module>\nKeyError: 'API_KEY'",
        f"Enumerating objects: {g.rng.randrange(900)}, done.\n"
        f"To github.com:acme/{g.rng.choice(PROJECTS)}.git\n"
        f"   {_sha(g, 7)}..{_sha(g, 7)}  main -> main",
    ])


def _framework_code(g: _Gen) -> str:
    """What issue #37's rules look at, without a secret: framework settings read from the
    environment, connection URLs without a password, tokens named but not given."""
    p = g.rng.choice(PROJECTS)
    return g.rng.choice([
        "SECRET_KEY = os.environ['DJANGO_SECRET_KEY']",
        "SECRET_KEY = env('SECRET_KEY', default=get_random_secret_key())",
        "app.config['SECRET_KEY'] = os.getenv('FLASK_SECRET_KEY')",
        "app.secret_key = secrets.token_hex(32)",
        "secret_key_base: <%= ENV['SECRET_KEY_BASE'] %>",
        "config.secret_key_base = Rails.application.credentials.secret_key_base",
        "APP_KEY=\nAPP_ENV=local\nAPP_DEBUG=true",
        "php artisan key:generate writes APP_KEY=base64:... into .env",
        "SECRET_KEY_FILE=/run/secrets/django_secret_key",
        "secret_key: SecretStr = Field(..., alias='SECRET_KEY')",
        "The django-insecure- prefix marks a key startproject made; replace it in prod.",
        f"REDIS_URL=redis://localhost:6379/{g.rng.randrange(16)}",
        f"redis://:${{REDIS_PASSWORD}}@cache:6379/0 is read from the env in {p}",
        f"DATABASE_URL=postgres://{p.replace('-', '_')}@db.internal:5432/{p.replace('-', '_')}",
        "postgres://:@localhost/test uses peer auth, no password",
        f"npm_config_cache=/tmp/npm-{g.s(DI, 4)} npm ci",
        "hf_hub_download(repo_id='sentence-transformers/all-MiniLM-L6-v2', filename='config.json')",
        "Stripe keys start with sk_live_ or rk_live_; never paste one here.",
        "GitLab tokens look like glpat-xxxxxxxxxxxxxxxxxxxx; use CI variables.",
        f"The auth token expires after {g.rng.randrange(1, 48)} hours; refresh it with the CLI.",
        f"account AC{g.s(HEX, 32)} sends the SMS alerts (the auth token is in Vault)",
        f"api key id {g.s(HEX, 32)} belongs to the {p} service account",
        f"The API key hash is sha256; commit {_sha(g)} stores only the hash.",
        f"session token count: {g.rng.randrange(9999)} ({_sha(g, 12)})",
        f"access key rotation for {p} is tracked in OPS-{g.rng.randrange(9999)}",
    ])


_NOTE_PARTS: list[tuple[str, Callable[[_Gen], str]]] = [
    ("journal", _journal), ("env-code", _env_code), ("llm-config", _llm_config),
    ("password-prose", _password_prose), ("hash", _hashes), ("uuid", _uuids), ("url", _urls),
    ("image", _image), ("code", _code), ("log", _log), ("framework-code", _framework_code),
]


def ordinary_notes(n: int = 2400, seed: int = 41) -> list[tuple[str, str]]:
    """(class, note) pairs: each note mixes a few blocks, mostly of its class."""
    g = _Gen(random.Random(seed))
    out = []
    for i in range(n):
        cls, make = _NOTE_PARTS[i % len(_NOTE_PARTS)]
        blocks = [make(g) for _ in range(g.rng.randrange(2, 6))]
        for _ in range(g.rng.randrange(0, 3)):
            blocks.append(g.rng.choice(_NOTE_PARTS)[1](g))
        title = f"# {g.rng.choice(PROJECTS)} notes {_date(g)}"
        body = "\n\n".join(blocks)
        if cls in ("env-code", "code", "llm-config"):
            body = f"```\n{body}\n```"
        out.append((cls, f"{title}\n\n{body}\n"))
    return out


def ordinary_turns(n: int = 1200, seed: int = 42) -> list[tuple[str, str]]:
    """(class, turn) pairs: what a user or an agent says in a session."""
    g = _Gen(random.Random(seed))
    asks = [
        "How do I read the API key from the environment instead of hard-coding it?",
        "Why does the tokenizer split this word into three tokens?",
        "Can you check that the password reset email goes out?",
        "What's the max_tokens we used for the summariser?",
        "The token keeps expiring after an hour, any idea why?",
        "Please rotate the webhook secret and tell me where you stored it.",
        "Is the secret key the same in staging and prod?",
        "Where do we keep the SSH keys for the build box?",
    ]
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            out.append(("user", g.rng.choice(asks) + " " + _sentence(g, 6)))
        elif kind == 1:
            out.append(("agent", "Here's how:\n\n```python\n" + _env_code(g) + "\n```\n\n"
                        + _password_prose(g)))
        elif kind == 2:
            out.append(("tool", _log(g) + "\n" + _hashes(g) + "\n" + _urls(g)))
        else:
            out.append(("agent", _llm_config(g).replace("\n", "; ") + ". " + _uuids(g) + ". "
                        + _journal(g)[2:]))
    return out
