"""Secrets torture: every kind of credential is caught at commit and at capture, and
ordinary notes and turns are left alone.

Run: ``.venv/bin/python bench/torture/secrets.py [--quick]``. The corpora come from
``secret_corpus.py`` (seeded, so a run is repeatable). Each secret case is checked

(a) at commit: embedded in a note of a repo made by ``memory init``, scanned by the real
    pre-commit check (``memory hook check-secrets FILE…``, one process for all files),
    which must name the file and never print the value; for a sample, a real
    ``git commit`` through the installed hooks must be refused and leave HEAD alone;
(b) at capture: ``memrepo.secrets.redact`` must leave none of the case's values; for a
    sample, ``memory capture append`` on a real session must store only placeholders.

The ordinary corpora (>= 2,400 notes, >= 1,200 turns) go through the same two paths: a
refused note or a redacted turn is a false positive. A real commit of ordinary notes
must pass. The summary line counts it all; the exit code is 1 when fewer than 95 % of the
kinds are caught on either path, when more than 1 % of notes or turns are flagged, or
when a sample breaks its promise.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
import timeit
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.append(str(Path(__file__).resolve().parents[1] / "common"))  # results.py
from common import Env, err, make_env
from results import add_record_option, record_summary
from secret_corpus import (
    SecretCase,
    ordinary_notes,
    ordinary_turns,
    secret_cases,
)

from memrepo.secrets import GITLEAKS_META, find_secrets, redact

#: The families issue #14 names as missed: each must have a case, and be caught.
ISSUE_FAMILIES = (
    "GitLab", "Google", "Azure", "Twilio", "SendGrid", "Mailchimp", "PyPI", "Docker Hub",
    "Shopify", "Square", "Braintree", "Discord", "Telegram", "PuTTY", "age", "Hugging Face",
    "Atlassian", "Notion", "Figma", "Okta", "Vault", "New Relic", "Grafana", "Postman",
    "PlanetScale", "Groq", "Perplexity", "Firebase", "Alibaba", "Artifactory", "EasyPost",
    "Dropbox", "Airtable", "HTTP headers", "Command lines",
)
#: The classes issue #37 names as still passing: every case of each must be caught.
ROUND3_CLASSES = ("URL empty user", "Framework keys", "Vendor token alphabets",
                  "Long prefixed tokens", "Hex tokens in prose")
MIN_CAUGHT = 0.95
MAX_FP = 0.01
REPORT = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+): error: possible (?P<kind>\S+) — ")


def _note(text: str) -> str:
    return f"---\ntype: reference\n---\n\n{text}\n"


def _scan(env: Env, files: dict[str, str]) -> tuple[dict[str, list[str]], str]:
    """Write ``files`` into the repo and run the real check over them in one process:
    the reported kinds per file, and everything the check printed."""
    for rel, text in files.items():
        path = env.repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    reported: dict[str, list[str]] = {}
    printed = []
    names = list(files)
    for i in range(0, len(names), 500):  # stay far below the argument-length limit
        proc = env.run("hook", "check-secrets", *names[i : i + 500])
        out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
        printed.append(out)
        for line in out.splitlines():
            m = REPORT.match(line)
            if m:
                reported.setdefault(m["path"], []).append(m["kind"])
    for rel in files:
        (env.repo / rel).unlink()
    return reported, "".join(printed)


def _commit_sample(env: Env, cases: list[SecretCase]) -> list[str]:
    """A real ``git commit`` per case through the installed hooks: refused, HEAD kept,
    the value not printed. Returns what broke."""
    broken = []
    head = env.git("rev-parse", "HEAD").strip()
    for i, case in enumerate(cases):
        rel = f"knowledge/reference/commit-{i}.md"
        (env.repo / rel).write_text(_note(case.text), encoding="utf-8")
        env.git("add", rel)
        proc = subprocess_git(env, "commit", "-qm", f"add {case.kind}")
        out = proc.stdout + proc.stderr
        if proc.returncode == 0:
            broken.append(f"{case.kind}: committed")
            env.git("reset", "-q", "--soft", head)
        elif env.git("rev-parse", "HEAD").strip() != head:
            broken.append(f"{case.kind}: HEAD moved")
        elif f"{rel}:" not in out or "possible " not in out:
            broken.append(f"{case.kind}: refused, but not for a secret in {rel}")
        if any(v in out for v in case.values):
            broken.append(f"{case.kind}: the value was printed")
        env.git("rm", "-q", "--cached", rel)
        (env.repo / rel).unlink()
    return broken


def subprocess_git(env: Env, *args: str):
    import subprocess

    return subprocess.run(["git", *args], cwd=env.repo, env=env.env, capture_output=True,
                          text=True)


def _ordinary_commit(env: Env, notes: list[str]) -> str:
    """Ordinary notes committed for real: '' when the commit went through."""
    for i, text in enumerate(notes):
        (env.repo / f"knowledge/reference/plain-{i}.md").write_text(_note(text), "utf-8")
    env.git("add", "knowledge/reference")
    proc = subprocess_git(env, "commit", "-qm", "maintenance: ordinary notes")
    return "" if proc.returncode == 0 else (proc.stdout + proc.stderr).strip()[-400:]


def _capture_sample(env: Env, cases: list[SecretCase], turns: list[str]) -> tuple[list[str], int]:
    """One real session: the sample's secrets and ordinary turns appended with
    ``memory capture append``; the closed transcript must hold none of the values and
    exactly one placeholder per secret found. Returns what broke and the placeholders."""
    broken = []
    sid = "ses_secrets1"
    proc = env.run("capture", "start", "--session", sid, "--topic", "secrets torture",
                   "--model", "test", "--channel", "cli")
    if proc.returncode != 0:
        return [f"capture start: {err(proc)}"], 0
    expected = 0
    for i, case in enumerate(cases):
        expected += len(find_secrets(case.text))
        proc = env.run("capture", "append", "--session", sid, "--role", "user", input=case.text)
        if proc.returncode != 0:
            broken.append(f"append {case.kind}: {err(proc)}")
        if turns:
            env.run("capture", "append", "--session", sid, "--role", "agent",
                    input=turns[i % len(turns)])
    for text in turns[len(cases):]:
        env.run("capture", "append", "--session", sid, "--role", "agent", input=text)
    proc = env.run("capture", "end", "--session", sid)
    if proc.returncode != 0:
        return [*broken, f"capture end: {err(proc)}"], 0
    final = env.repo / proc.stdout.decode().strip().splitlines()[-1]
    stored = final.read_text(encoding="utf-8") if final.is_file() else ""
    if not stored:
        return [*broken, f"no transcript at {final}"], 0
    for case in cases:
        if any(v in stored for v in case.values):
            broken.append(f"{case.kind}: stored in the transcript")
    placeholders = stored.count("[REDACTED:")
    if placeholders != expected:
        broken.append(f"{placeholders} placeholders in the transcript, {expected} expected")
    return broken, placeholders


def _speed(notes: list[str], turns: list[str]) -> str:
    def build(parts: list[str], size: int) -> str:
        out = ""
        for p in parts:
            if len(out) >= size:
                break
            out += p + "\n"
        return out[:size]

    res = []
    for name, text in (("10KB-note", build(notes, 10_000)), ("2KB-turn", build(turns, 2_000))):
        find_secrets(text)
        best = min(timeit.repeat(lambda t=text: find_secrets(t), number=10, repeat=5)) / 10
        res.append(f"{name}={best * 1e3:.1f}ms")
    return " ".join(res)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller corpora and samples (<1 min)")
    ap.add_argument("--memory", help="the memory executable (default: beside this python)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary repo")
    add_record_option(ap)
    args = ap.parse_args()
    t0 = time.monotonic()
    cases = secret_cases()
    notes = ordinary_notes(600 if args.quick else 2400)
    turns = ordinary_turns(300 if args.quick else 1200)
    meta = GITLEAKS_META
    print(f"rules: gitleaks {meta['rules_used']}/{meta['rules_upstream']} "
          f"({len(meta['skipped'])} path-only or path-gated skipped) + memrepo's own")
    print(f"corpus: {len(cases)} kinds in {len({c.family for c in cases})} families, "
          f"{len(notes)} ordinary notes, {len(turns)} ordinary turns")
    missing = [f for f in ISSUE_FAMILIES + ROUND3_CLASSES if f not in {c.family for c in cases}]

    env = make_env(args.memory)
    broken: list[str] = [f"family without a case: {f}" for f in missing]
    try:
        # (a) commit: the real check over every case, then a few real commits
        files = {f"knowledge/reference/secret-{i:03d}.md": _note(c.text)
                 for i, c in enumerate(cases)}
        reported, printed = _scan(env, files)
        commit_miss = [c.kind for rel, c in zip(files, cases, strict=True) if rel not in reported]
        leaked = [c.kind for c in cases if any(v in printed for v in c.values)]
        broken += [f"{k}: the check printed the value" for k in leaked]
        step = max(1, len(cases) // (4 if args.quick else 12))
        broken += _commit_sample(env, cases[::step])

        note_files = {f"knowledge/reference/note-{i:04d}.md": _note(t)
                      for i, (_, t) in enumerate(notes)}
        note_reports, _ = _scan(env, note_files)
        fp_notes = Counter()
        for (cls, _), rel in zip(notes, note_files, strict=True):
            if rel in note_reports:
                fp_notes[cls] += 1
        why = _ordinary_commit(env, [t for _, t in notes[: 10 if args.quick else 50]])
        if why:
            broken.append(f"ordinary notes refused at a real commit: {why}")

        # (b) capture: redact every case and turn, then one real session
        capture_miss = []
        for c in cases:
            text, n = redact(c.text)
            if n == 0 or any(v in text for v in c.values):
                capture_miss.append(c.kind)
        fp_turns = Counter(cls for cls, t in turns if redact(t)[1])
        sample = cases[:: max(1, len(cases) // (5 if args.quick else 20))]
        cap_broken, placeholders = _capture_sample(
            env, sample, [t for _, t in turns[: 10 if args.quick else 40]])
        broken += cap_broken
        speed = _speed([t for _, t in notes], [t for _, t in turns])
    finally:
        if args.keep:
            print(f"kept {env.base}")
        else:
            shutil.rmtree(env.base, ignore_errors=True)

    n = len(cases)
    commit_ok, capture_ok = n - len(commit_miss), n - len(capture_miss)
    n_fp, t_fp = sum(fp_notes.values()), sum(fp_turns.values())
    fam_miss = sorted({c.family for c in cases if c.kind in set(commit_miss) | set(capture_miss)}
                      & set(ISSUE_FAMILIES))
    r3_cases = [c for c in cases if c.family in ROUND3_CLASSES]
    r3_miss = [c.kind for c in r3_cases if c.kind in set(commit_miss) | set(capture_miss)]
    broken += [f"issue #37 class missed: {k}" for k in r3_miss]
    for k in commit_miss:
        print("MISSED at commit:", k)
    for k in capture_miss:
        print("MISSED at capture:", k)
    if fp_notes:
        print("false positives in notes by class:", dict(fp_notes))
    if fp_turns:
        print("false positives in turns by class:", dict(fp_turns))
    for b in broken:
        print("BROKEN", b)
    if fam_miss:
        print("issue families missed:", ", ".join(fam_miss))
    print(f"speed: {speed}")
    ok = (commit_ok >= MIN_CAUGHT * n and capture_ok >= MIN_CAUGHT * n
          and n_fp <= MAX_FP * len(notes) and t_fp <= MAX_FP * len(turns) and not broken)
    summary = (f"SUMMARY kinds={n} commit={commit_ok}/{n} ({commit_ok / n:.1%}) "
               f"capture={capture_ok}/{n} ({capture_ok / n:.1%}) "
               f"notes_fp={n_fp}/{len(notes)} ({n_fp / len(notes):.2%}) "
               f"turns_fp={t_fp}/{len(turns)} ({t_fp / len(turns):.2%}) "
               f"issue_families={len(ISSUE_FAMILIES) - len(fam_miss)}/{len(ISSUE_FAMILIES)} "
               f"round3={len(r3_cases) - len(r3_miss)}/{len(r3_cases)} "
               f"session_placeholders={placeholders} broken={len(broken)} "
               f"time={time.monotonic() - t0:.0f}s {'OK' if ok else 'FAIL'}")
    print(summary)
    record_summary(__file__, summary, args, speed=speed)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
