"""hooks/check_secrets.py: secrets block the commit with file:line and kind, never the value."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from memrepo.hooks.check_secrets import main

if TYPE_CHECKING:
    from conftest import VRepo

# Built at run time so this file does not itself look like it leaks anything.
SECRETS = {
    "aws-access-key": "AKIA" + "Q7ZK" * 4,
    "github-token": "ghp_" + "aB3" * 12,
    "slack-token": "xoxb-" + "1234567890-abcdefghij",
    "anthropic-api-key": "sk-ant-" + "api03-" + "Zz9_" * 10,
    "openai-api-key": "sk-" + "proj-" + "Qq8" * 10,
    "google-api-key": "AIza" + "Sy0-" * 8 + "abc",
    "stripe-key": "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "jwt": "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNr4J3",
    "password": "db_password=" + "Sup3r" + "S3cret!",
}


@pytest.mark.parametrize(("kind", "value"), SECRETS.items())
def test_each_kind_blocks_with_file_line_and_kind_only(vrepo: VRepo, kind: str, value: str) -> None:
    path = "knowledge/reference/setup.md"
    vrepo.write(path, f"---\ntype: reference\n---\n\nUse this: {value} for now.\n")
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out == f"{path}:5: error: possible {kind} — remove it or allowlist it [check-secrets]\n"
    assert value not in out
    assert value[4:20] not in out


def test_any_text_file_is_scanned_not_just_markdown(vrepo: VRepo) -> None:
    key = "postgres://admin:" + "s3cr3tPassw0rd" + "@db.example.com/app"
    vrepo.write("scripts/deploy.sh", f"#!/bin/sh\nexport DB={key}\n")
    vrepo.write("notes.yaml", "api_key: '" + "q8Zr2Lm4Xv9Tn1Pw7Ks3" + "'\n")
    pem = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n"
    vrepo.write("raw/keys/id_rsa.txt", "\n\n" + pem)
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert sorted(out.splitlines()) == [
        "notes.yaml:1: error: possible generic-secret — remove it or allowlist it [check-secrets]",
        "raw/keys/id_rsa.txt:3: error: possible private-key — remove it or allowlist it "
        "[check-secrets]",
        "scripts/deploy.sh:2: error: possible url-credentials — remove it or allowlist it "
        "[check-secrets]",
    ]
    assert "s3cr3t" not in out and "q8Zr2" not in out and "MIIEow" not in out


def test_every_hit_is_reported(vrepo: VRepo) -> None:
    text = f"x\n{SECRETS['github-token']}\ny\n{SECRETS['aws-access-key']}\n"
    vrepo.write("a.txt", text)
    code, out = vrepo.run(main, "a.txt")
    assert code == 1
    assert [ln.split(": error")[0] for ln in out.splitlines()] == ["a.txt:2", "a.txt:4"]


def test_password_in_prose_blocks_the_commit(vrepo: VRepo) -> None:
    value = "hunter" + "2"
    vrepo.write("knowledge/reference/staging.md",
                f"---\ntype: reference\n---\n\nThe staging admin password is {value} now.\n")
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1 and value not in out
    assert out.startswith("knowledge/reference/staging.md:5: error: possible password")


def test_clean_text_passes(vrepo: VRepo) -> None:
    vrepo.write("a.md", "We discussed the token budget and the password policy.\n"
                "The password is stored in the vault; password: <your password>\n")
    vrepo.write("b.txt", "url: https://u:${PASSWORD}@example.com\ntoken: [REDACTED:github-token]\n")
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")


def test_the_config_allowlist_silences_known_false_positives(vrepo: VRepo) -> None:
    vrepo.write("memory-config.yaml", "validation:\n  secrets_allowlist: ['^AKIAQ7ZK']\n")
    vrepo.write("a.txt", SECRETS["aws-access-key"] + "\n")
    assert vrepo.run(main, "a.txt") == (0, "")
    vrepo.write("b.txt", SECRETS["github-token"] + "\n")
    code, out = vrepo.run(main, "a.txt", "b.txt")
    assert code == 1
    assert out.startswith("b.txt:1: error: possible github-token")


def test_the_inline_marker_silences_a_line(vrepo: VRepo) -> None:
    vrepo.write("a.txt", SECRETS["aws-access-key"] + "  # memrepo: allow-secret\n")
    assert vrepo.run(main, "a.txt") == (0, "")


def test_an_invalid_allowlist_regex_is_reported_not_raised(vrepo: VRepo) -> None:
    vrepo.write("memory-config.yaml", "validation:\n  secrets_allowlist:\n    - '(unclosed'\n")
    vrepo.write("a.txt", "nothing to see\n")
    code, out = vrepo.run(main, "a.txt")
    assert code == 1
    assert out.startswith(
        "memory-config.yaml:2: error: 'validation.secrets_allowlist' entry '(unclosed' is not a valid regex"
    )


def test_text_that_is_not_utf8_is_still_scanned(vrepo: VRepo) -> None:
    vrepo.write("a.txt", b"caf\xe9\n" + SECRETS["github-token"].encode() + b"\n")
    code, out = vrepo.run(main, "a.txt")
    assert code == 1
    assert out.startswith("a.txt:2: error: possible github-token")


def test_binary_files_are_left_to_check_size(vrepo: VRepo) -> None:
    vrepo.write("attachments/blob.bin", b"\x00\x01" + SECRETS["github-token"].encode())
    assert vrepo.run(main, "attachments/blob.bin") == (0, "")


def test_deleted_and_symlinked_files_are_skipped(vrepo: VRepo) -> None:
    target = vrepo.write("../outside.txt", SECRETS["github-token"] + "\n")
    (vrepo.root / "link.txt").symlink_to(target)
    assert vrepo.run(main, "gone.txt", "link.txt") == (0, "")


# issue #14: formats from gitleaks' rule set and memrepo's additions block the commit too
NEW = {
    "gitlab-token": "gitlab-runner register --token " + "gl" + "rt-" + "q7Rk2ZpL9sXv4TmN8cWb",
    "discord-webhook": "https://discord.com/api/webhooks/1187654321098765432/"
    + "q7Rk2ZpL9sXv4TmN8cWb3YhJ6dGf5AeU1oPi0uQz_-q7Rk2ZpL9sXv4TmN8cWb3YhJ6d",
    "sendgrid-api-token": "S" + "G." + "q7Rk2ZpL9sXv4TmN8cWb3Y" + "." + "q7Rk2ZpL9sXv4TmN8cWb3YhJ6dGf5AeU1oPi0uQz-_x",
    "authorization-header": "Authorization: Bearer " + "q7Rk2ZpL9sXv4TmN8cWb3YhJ6dGf5AeU1oPi",
    "sshpass-password": "sshpass -p '" + "Cobalt" + "orbit7#' ssh deploy@host uptime",
}


@pytest.mark.parametrize(("kind", "line"), NEW.items())
def test_new_formats_block_with_file_line_and_kind(vrepo: VRepo, kind: str, line: str) -> None:
    path = "knowledge/reference/ops.md"
    vrepo.write(path, f"---\ntype: reference\n---\n\n{line}\n")
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out == f"{path}:5: error: possible {kind} — remove it or allowlist it [check-secrets]\n"


def test_ordinary_notes_that_used_to_be_refused_now_pass(vrepo: VRepo) -> None:
    vrepo.write("knowledge/reference/llm.md", "---\ntype: reference\n---\n\n"
                "```python\napi_key = os.environ[\"OPENAI_API_KEY\"]\n"
                "token = os.getenv(\"GITHUB_TOKEN\")\n```\n\n"
                "tokenizer: sentence-transformers/all-MiniLM-L6-v2\nmax_tokens: 4096\n\n"
                "The password is case-sensitive.\n"
                "request_id: 3f2a9c1e-5b7d-4e8f-a1c3-9d7e5f3b1a2c\n")
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")
