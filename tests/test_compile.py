"""The context compiler: budgets, slots, markers, deduplication, session history, hooks."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random
import re
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo.context.compiler import CompileRequest, compile_context
from memrepo.context.sections import join
from memrepo.context.tokens import estimate_tokens
from memrepo.index.indexer import sync
from memrepo.repo import MemoryRepo

TODAY = dt.date(2026, 3, 10)
WORDS = "alpha beta gamma delta deploy payment webhook stripe kubernetes tea green invoice".split()  # noqa: SIM905


def put(root: Path, rel: str, text: str) -> None:
    """Write a file in the work tree (``commit`` makes P3 see it)."""
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def commit(root: Path, message: str, *paths: str) -> None:
    """Commit ``paths`` (default: the work tree) and index them as the post-commit hook
    would: P3 searches the index, which holds what is committed. The hook itself is skipped
    (``sync`` is what it runs; tests/test_hooks_e2e.py covers the hook)."""
    run_git(root, "add", "-A", "--", *paths)
    run_git(root, "-c", "core.hooksPath=/dev/null", "commit", "-q", "--no-verify", "-m", message)
    sync(root)


def write(root: Path, rel: str, text: str) -> None:
    """Write, commit and index one file."""
    put(root, rel, text)
    commit(root, f"memory: {rel}", rel)


def sections_text(rng: random.Random, n: int, width: int) -> str:
    out = []
    for i in range(n):
        out.append(f"## Section {i}")
        for _ in range(rng.randint(1, width)):
            out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))))
        out.append("")
    return "\n".join(out)


def random_repo(root: Path, rng: random.Random) -> None:
    for name, role in (
        ("SOUL.md", "soul"),
        ("USER.md", "user"),
        ("AGENTS.md", "rules"),
        ("TOOLS.md", "tools"),
    ):
        body = sections_text(rng, rng.randint(1, 6), rng.randint(1, 12))
        put(
            root,
            f"knowledge/identity/{name}",
            f"---\ntype: identity\nrole: {role}\n---\n# {name}\n\n{body}",
        )
    put(
        root,
        "knowledge/memory/MEMORY.md",
        f"---\ntype: memory\n---\n# Core\n\n{sections_text(rng, 3, 10)}",
    )
    for d in (TODAY, TODAY - dt.timedelta(days=1)):
        put(
            root,
            f"knowledge/journal/{d}.md",
            f"---\ntype: journal\ndate: {d}\n---\n\n## {d}\n\n{sections_text(rng, 4, 8)}",
        )
    for i in range(rng.randint(0, 6)):
        put(
            root,
            f"knowledge/reference/r{i}.md",
            f"---\ntype: reference\n---\n# R{i}\n\n{sections_text(rng, 3, 6)}",
        )
    turns = []
    for i in range(rng.randint(2, 12)):
        who = "user" if i % 2 == 0 else "agent"
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 40)))
        turns.append(f"## 09:{i:02d} — {who}\n{text}\n")
    put(root, SESSION, TRANSCRIPT_HEAD + "\n".join(turns))
    commit(root, "memory: a random repo")  # one commit, one index sync


#: An indexed transcript in the repo that is also the ``--session``: P3 and P4 both see it.
SESSION = "raw/conversations/2026/03/10/0900-ses_prop-chat.md"
TRANSCRIPT_HEAD = "---\nsession_id: ses_prop\nstarted: 2026-03-10T09:00:00+00:00\n---\n\n# Chat\n\n"


def check_invariants(repo: Path, result, budget: int) -> None:
    prompt = result.prompt()
    assert estimate_tokens(prompt) <= budget
    assert result.tokens <= budget
    # the accounting is exact: the last-resort check never has to drop anything
    assert not [o for o in result.omitted if "final budget check" in o.reason]
    seen: dict[str, list[tuple[int, int]]] = {}
    for s in result.sections:
        if s.unit != "line":  # messages of a JSON session have no file lines to overlap
            continue
        for a, b in seen.get(s.path, []):
            assert not (s.start_line <= b and a <= s.end_line), f"{s.path} included twice"
        seen.setdefault(s.path, []).append((s.start_line, s.end_line))
        # never mid-line: every line of the section is a whole line of the file, in its span
        file_lines = (repo / s.path).read_text(encoding="utf-8").split("\n")
        span = file_lines[s.start_line - 1 : s.end_line]
        for line in s.text.split("\n"):
            assert line.rstrip() in [x.rstrip() for x in span], (s.path, line)


@pytest.mark.parametrize("seed", range(12))
def test_budget_is_never_exceeded_and_p0_comes_first(crepo: Path, seed: int) -> None:
    """A seeded property test (hypothesis is not installed): random repos and budgets."""
    rng = random.Random(seed)
    random_repo(crepo, rng)
    repo = MemoryRepo(crepo)
    for k, budget in enumerate([0, 1, 10, 60, *(rng.randint(20, 4000) for _ in range(6))]):
        msg = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6)))
        session = crepo / SESSION if k % 2 else None  # half the runs: P3 and P4 on one file
        req = CompileRequest(msg, budget, session=session, today=TODAY, record_hits=False)
        res = compile_context(repo, req)
        check_invariants(crepo, res, budget)
        slots = [s.slot for s in res.sections]
        assert slots == sorted(slots)
        identity = [s for s in res.sections if s.slot == 0]
        if res.sections:  # P0 is never dropped for anything else
            assert identity, "lower slots included while P0 is empty"
        if budget >= 400:  # room for a line of each: every identity file is there
            assert len({s.path for s in identity}) == 4


def test_large_file_is_cut_at_a_section_boundary(crepo: Path) -> None:
    body = "\n".join(
        f"## Part {i}\n\n" + "\n".join(f"line {i}.{j} " + "word " * 10 for j in range(8)) + "\n"
        for i in range(6)
    )
    write(crepo, "knowledge/memory/MEMORY.md", f"---\ntype: memory\n---\n# Core\n\n{body}")
    for name in ("SOUL.md", "USER.md", "AGENTS.md", "TOOLS.md"):
        (crepo / "knowledge/identity" / name).unlink()
    res = compile_context(
        MemoryRepo(crepo), CompileRequest("", 400, today=TODAY, record_hits=False)
    )
    mem = next(s for s in res.sections if s.kind == "memory")
    assert mem.cut
    lines = (crepo / "knowledge/memory/MEMORY.md").read_text().split("\n")
    nxt = next(x for x in lines[mem.end_line :] if x.strip())
    assert nxt.startswith("## Part"), "the cut must fall before a heading"
    assert mem.text.rstrip().split("\n")[-1].startswith("line ")


def test_subscription_already_loaded_is_not_repeated_and_shared_leaves_memory_out(
    crepo: Path,
) -> None:
    write(
        crepo,
        "knowledge/memory/MEMORY.md",
        "---\ntype: memory\n---\n# Core\n\n- the user likes green tea\n",
    )
    # the message matches MEMORY.md three ways: P1, the topic's subscription, and search
    msg = "please remember this: does the user like green tea?"
    res = compile_context(
        MemoryRepo(crepo), CompileRequest(msg, 4000, today=TODAY, record_hits=False)
    )
    paths = [s.path for s in res.sections]
    assert paths.count("knowledge/memory/MEMORY.md") == 1
    assert "topics/remembering.md" in paths
    assert any(
        o.path == "knowledge/memory/MEMORY.md" and "already included" in o.reason
        for o in res.omitted
    )
    shared = compile_context(
        MemoryRepo(crepo), CompileRequest(msg, 4000, shared=True, today=TODAY, record_hits=False)
    )
    # --shared keeps MEMORY.md out of every slot: not P1, not a subscription, not search
    assert "topics/remembering.md" in [s.path for s in shared.sections]
    assert all(s.path != "knowledge/memory/MEMORY.md" for s in shared.sections)
    assert "green tea" not in shared.prompt()
    left_out = {(o.slot, o.kind) for o in shared.omitted if o.path == "knowledge/memory/MEMORY.md"}
    assert {(1, "memory"), (2, "subscription"), (3, "knowledge")} <= left_out


def test_p3_knowledge_and_p4_history(crepo: Path, tmp_path: Path) -> None:
    write(
        crepo,
        "knowledge/reference/stripe.md",
        "---\ntype: reference\n---\n# Stripe\n\n## Webhooks\n\nStripe webhooks need the signing secret whsec rotation every 90 days.\n",
    )
    session = tmp_path / "session.json"
    msgs = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"message number {i} " + "x " * 30,
        }
        for i in range(40)
    ]
    session.write_text(json.dumps(msgs))
    res = compile_context(
        MemoryRepo(crepo),
        CompileRequest(
            "how often do we rotate stripe webhook secrets?",
            1500,
            session=session,
            today=TODAY,
            record_hits=False,
        ),
    )
    check_invariants(crepo, res, 1500)
    assert any(s.path == "knowledge/reference/stripe.md" and s.slot == 3 for s in res.sections)
    hist = [s for s in res.sections if s.slot == 4]
    assert hist and hist[-1].start_line == 40  # the newest message is in, and last
    nums = [s.start_line for s in hist]
    assert nums == sorted(nums) and nums == list(range(nums[0], 41))  # a contiguous newest window


def test_cli_json_explain_and_markers(crepo: Path) -> None:
    proc = invoke_memory(
        crepo, "compile", "remember my tea", "--budget", "2000", "--json", "--explain"
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["tokens"] <= 2000
    for s in data["sections"]:
        assert {"path", "start_line", "end_line", "tokens", "why"} <= set(s)
    assert "omitted" in data
    text = invoke_memory(crepo, "compile", "remember my tea").stdout
    assert "<!-- P0 identity: knowledge/identity/SOUL.md:" in text
    assert invoke_memory(crepo, "compile", "remember", "my", "tea").stdout == text


def test_event_activates_cron_topic(crepo: Path) -> None:
    write(
        crepo,
        "topics/standup.md",
        "---\ntype: topic\ntriggers:\n  - type: cron\n    schedule: '0 9 * * 1-5'\n    name: standup\n---\n\n# Standup\n\nSummarise yesterday's journal.\n",
    )
    proc = invoke_memory(crepo, "compile", "--event", "cron:standup", "--json")
    data = json.loads(proc.stdout)
    assert any(s["path"] == "topics/standup.md" for s in data["sections"])


def test_claude_code_hook_format(crepo: Path) -> None:
    write(
        crepo,
        "knowledge/identity/SOUL.md",
        "---\ntype: identity\nrole: soul\n---\n# Soul\n\n" + "I am careful.\n" * 3000,
    )
    start = invoke_memory(
        crepo,
        "compile",
        "--format",
        "claude-code-hook",
        "--budget",
        "100000",
        input=json.dumps({"hook_event_name": "SessionStart", "source": "startup"}),
    )
    assert start.returncode == 0, start.stderr
    out = json.loads(start.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert 0 < len(out["additionalContext"]) <= 10_000
    prompt = invoke_memory(
        crepo,
        "compile",
        "--format",
        "claude-code-hook",
        input=json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "please remember this"}),
    )
    ctx = json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "topics/remembering.md" in ctx and "P0 identity" not in ctx
    bad = invoke_memory(crepo, "compile", "--format", "claude-code-hook", input="not json")
    assert bad.returncode == 0 and bad.stdout == ""
    # events that take no context get no output (PostCompact and Codex reject the key)
    for event in ("PreCompact", "PostCompact", "SessionEnd", "Stop"):
        quiet = invoke_memory(crepo, "compile", "--format", "claude-code-hook",
                              input=json.dumps({"hook_event_name": event, "trigger": "auto"}))
        assert quiet.returncode == 0 and quiet.stdout == "", event


def test_session_transcript_in_the_repo_is_not_repeated_by_p3(crepo: Path) -> None:
    """P4 carries the session: P3 finds the same transcript in the index but leaves it out."""
    turns = [
        "## 09:00 — user\nOur stripe webhook secret rotates every 90 days.\n",
        "## 09:01 — agent\nNoted: stripe webhook rotation every 90 days.\n",
        "## 09:02 — user\nWhen does the stripe webhook secret rotate?\n",
    ]
    write(crepo, SESSION, TRANSCRIPT_HEAD + "\n".join(turns))
    req = CompileRequest(
        "stripe webhook secret rotation", 4000, session=crepo / SESSION, today=TODAY,
        record_hits=False,
    )  # fmt: skip
    res = compile_context(MemoryRepo(crepo), req)
    check_invariants(crepo, res, 4000)
    assert [s.slot for s in res.sections if s.path == SESSION] == [4, 4, 4]
    assert any(
        o.slot == 3 and o.path == SESSION and "left to P4" in o.reason for o in res.omitted
    ), "the search did find the session: P3 must say it left it out"
    assert res.prompt().count("rotates every 90 days") == 1
    # without P4 in the prompt, P3 is free to bring the session's passages
    no_p4 = compile_context(
        MemoryRepo(crepo),
        CompileRequest(
            "stripe webhook secret rotation", 4000, session=crepo / SESSION,
            slots=frozenset({0, 1, 2, 3}), today=TODAY, record_hits=False,
        ),
    )  # fmt: skip
    assert any(s.slot == 3 and s.path == SESSION for s in no_p4.sections)


def test_p3_why_prints_enough_digits(crepo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memrepo.context import compiler, retrieve

    write(
        crepo,
        "knowledge/reference/tea.md",
        "---\ntype: reference\n---\n# Tea\n\n- green tea at 80 degrees\n\n## Black\n\n- black tea at 95\n",
    )
    hits = [
        retrieve.Passage("knowledge/reference/tea.md", 6, 6, 1.0, "reference"),
        retrieve.Passage("knowledge/reference/tea.md", 10, 10, 0.99996, "reference"),
    ]
    monkeypatch.setattr(retrieve, "retrieve", lambda *a, **k: (hits, None))
    res = compile_context(MemoryRepo(crepo), CompileRequest("tea", 4000, record_hits=False))
    whys = [s.why for s in res.sections if s.slot == 3]
    assert "score 1)" in whys[0] and "score 0.99996)" in whys[1]  # .3g printed both as 1
    assert compiler.score_text(0.000123456) == "0.000123456"


def test_bad_session_files_are_one_line_errors(crepo: Path, tmp_path: Path) -> None:
    latin = tmp_path / "y.md"
    latin.write_bytes(b"## 09:00 \xe2\x80\x94 user\ncaf\xe9 au lait\n")
    cases = [
        (latin, f"{latin}:2: not UTF-8 text (byte 0xe9)"),
        (
            tmp_path / "s.json",
            f"{tmp_path / 's.json'}: messages[1] is a number, not a message object",
        ),
        (tmp_path / "b.json", f"{tmp_path / 'b.json'}:3: invalid JSON: Expecting value"),
    ]
    (tmp_path / "s.json").write_text('[{"role": "user", "content": "hi"}, 5]')
    (tmp_path / "b.json").write_text('[\n {"role": "user", "content": "hi"},\n {"role": }\n]')
    for path, want in cases:
        proc = invoke_memory(crepo, "compile", "hi", "--session", str(path))
        assert proc.returncode == 1, (path, proc.stdout)
        assert "Traceback" not in proc.stderr
        assert proc.stderr.strip() == f"memory: {want}"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ('{"cwd": 5}', "field 'cwd' is not a string"),
        ('{"prompt": ["hi"]}', "field 'prompt' is not a string"),
        ("[1, 2]", "not a JSON object"),
        ("not json", "not JSON"),
    ],
)
def test_hook_with_a_bad_payload_prints_nothing_and_says_why(
    crepo: Path, payload: str, reason: str
) -> None:
    proc = invoke_memory(crepo, "compile", "--format", "claude-code-hook", input=payload)
    assert proc.returncode == 0 and proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memory compile: hook skipped: ")
    assert reason in lines[0]


def test_a_transcript_passage_carries_its_turn_header_in_the_marker() -> None:
    from memrepo.context.sections import Section

    path = "raw/conversations/2026/02/16/1845-ses_x-deploy.md"
    first = Section(3, "knowledge", path, 12, 13, "## 18:45 — agent\nUse blue-green.", "")
    assert first.render() == "<!-- P3 2026/02/16/1845-ses_x:12-13 agent -->\nUse blue-green."
    later = Section(3, "knowledge", path, 20, 21, "## 19:02 — user\nok", "")
    assert later.render() == "<!-- P3 2026/02/16/1845-ses_x:20-21 19:02 user -->\nok"
    memory = Section(3, "knowledge", path, 20, 21, "## 19:02 — agent [memory]\nnoted", "")
    assert memory.render() == "<!-- P3 2026/02/16/1845-ses_x:20-21 19:02 agent [memory] -->\nnoted"
    note = Section(3, "knowledge", "knowledge/reference/x.md", 3, 4, "## Deploys\nblue", "")
    assert note.render() == "<!-- P3 knowledge: knowledge/reference/x.md:3-4 -->\n## Deploys\nblue"


def test_p3_groups_a_files_passages_under_one_marker(crepo: Path) -> None:
    """Passages of one transcript sit together in the file's order, each after the first
    with a short marker, none for a turn that follows the one above it: the headers were
    ~30 % of a P3 of single turns."""
    kayak = "raw/conversations/2026/03/01/1000-ses_k-kayak.md"
    head = "---\nsession_id: ses_k\nstarted: 2026-03-01T10:00:00+00:00\n---\n\n# Kayak\n\n"
    turns = [
        "## 10:00 — user\nWe rented a kayak on the lake.\n",
        "## 10:01 — agent\nNice, how was the water?\n",
        "## 10:02 — user\nCold. The kayak tipped over twice.\n",
        "## 10:03 — agent\nGlad you are fine.\n",
        "## 10:04 — user\nNext kayak trip is in June.\n",
    ]
    write(crepo, kayak, head + "\n".join(turns))
    write(crepo, "knowledge/reference/boats.md",
          "---\ntype: reference\n---\n# Boats\n\n- a kayak paddle is 220 cm\n")
    res = compile_context(
        MemoryRepo(crepo), CompileRequest("kayak trip", 4000, today=TODAY, record_hits=False)
    )
    check_invariants(crepo, res, 4000)
    p3 = [s for s in res.sections if s.slot == 3]
    paths = [s.path for s in p3]
    assert paths.count(kayak) >= 3 and "knowledge/reference/boats.md" in paths
    runs = [p for i, p in enumerate(paths) if i == 0 or paths[i - 1] != p]
    assert len(runs) == len(set(paths)), f"each file's passages together: {paths}"
    group = [s for s in p3 if s.path == kayak]
    assert [s.start_line for s in group] == sorted(s.start_line for s in group)
    assert not group[0].cont and all(s.cont for s in group[1:])
    assert group[0].render().startswith("<!-- P3 2026/03/01/1000-ses_k:")
    for prev, s in itertools.pairwise(group):
        if s.start_line == prev.end_line + 2:  # the next turn: one run, no marker
            assert s.joined and re.match(r"10:0\d (user|agent):\n", s.render())
        else:
            assert s.render().startswith(f"<!-- :{s.start_line}-")
    # the JSON still names every passage in full
    assert all(j["path"] == kayak for j in (s.as_json() for s in group))


def test_turns_next_to_each_other_share_one_marker(crepo: Path) -> None:
    """Recalled turns that follow each other in a transcript read as one excerpt: one
    marker spanning them, a role line a turn, one line break between; a turn that does
    not follow the one above keeps its own marker. The tokens saved hold more passages."""
    path = "raw/conversations/2026/03/01/1000-ses_r-runs.md"
    head = "---\nsession_id: ses_r\nstarted: 2026-03-01T10:00:00+00:00\n---\n\n# Runs\n\n"
    said = [
        ("user", "The glacier hike starts at the north lodge."),
        ("agent", "Bring crampons."),
        ("user", "Lunch was soup."),  # a turn is indexed with the start of the one before
        ("agent", "Tomato, I hope."),
        ("user", "The glacier guide is called Ines."),
    ]
    write(crepo, path, head + "\n".join(f"## 10:0{i} — {r}\n{t}\n" for i, (r, t) in
                                          enumerate(said)))
    res = compile_context(MemoryRepo(crepo), CompileRequest(
        "glacier hike guide", 4000, slots=frozenset({3}), today=TODAY,
        record_hits=False))
    check_invariants(crepo, res, 4000)
    lines = (crepo / path).read_text().split("\n")
    at = {t: lines.index(t) + 1 for _, t in said}  # each turn's text line
    assert [(s.start_line, s.end_line) for s in res.sections] == [
        (at[said[0][1]] - 1, at[said[0][1]]), (at[said[1][1]] - 1, at[said[1][1]]),
        (at[said[4][1]] - 1, at[said[4][1]])]
    first, second, third = res.sections
    assert res.prompt() == (
        f"<!-- P3 2026/03/01/1000-ses_r:{first.start_line}-{second.end_line} user -->\n"
        "The glacier hike starts at the north lodge.\n"
        "10:01 agent:\nBring crampons.\n\n"
        f"<!-- :{third.start_line}-{third.end_line} 10:04 user -->\n"
        "The glacier guide is called Ines.")
    assert second.joined and not third.joined
    # a section's tokens are what it cost when placed: the prompt costs no more
    assert res.tokens <= sum(s.tokens + 1 for s in res.sections)
    # the layout follows the sections: without the first, the second opens the run
    assert join([second, third]).startswith(
        f"<!-- P3 2026/03/01/1000-ses_r:{second.start_line}-{second.end_line} 10:01 agent -->")


def test_a_cut_passage_is_never_joined(crepo: Path) -> None:
    """A turn cut to fit keeps its own marker, which says ``(cut)``."""
    path = "raw/conversations/2026/03/01/1000-ses_c-cut.md"
    head = "---\nsession_id: ses_c\nstarted: 2026-03-01T10:00:00+00:00\n---\n\n# Cut\n\n"
    long = "\n".join(f"The glacier rope line {i} is checked." for i in range(60))
    write(crepo, path, head + "## 10:00 — user\nThe glacier hike is on.\n\n"
          f"## 10:01 — agent\n{long}\n")
    res = compile_context(MemoryRepo(crepo), CompileRequest(
        "hike", 120, slots=frozenset({3}), today=TODAY, record_hits=False))
    check_invariants(crepo, res, 120)
    first, cut = res.sections  # the user's turn ranks first, the agent's is cut below it
    assert cut.cut and cut.start_line == first.next_line and not cut.joined
    assert f":{cut.start_line}-{cut.end_line} (cut) 10:01 agent -->" in res.prompt()


def test_a_recalled_turn_is_never_cut_to_its_header(crepo: Path) -> None:
    """A transcript turn that does not fit is left out whole: its ``## 09:00 — user``
    alone says nothing, and the tokens go to the next passage that fits."""
    long = "Our stripe webhook secret rotates every 90 days. " + "It is logged. " * 120
    turns = [
        f"## 09:00 — user\n{long}\n",
        "## 09:01 — agent\nNoted.\n",
        "## 09:02 — user\nThe stripe webhook secret lives in the vault.\n",
    ]
    write(crepo, SESSION, TRANSCRIPT_HEAD + "\n".join(turns))
    req = CompileRequest("stripe webhook secret rotates", 80, slots=frozenset({3}),
                         today=TODAY, record_hits=False)
    res = compile_context(MemoryRepo(crepo), req)
    check_invariants(crepo, res, 80)
    lines = (crepo / SESSION).read_text().split("\n")
    first = lines.index("## 09:00 — user") + 1
    assert any(o.path == SESSION and "does not fit" in o.reason for o in res.omitted)
    assert first not in [s.start_line for s in res.sections]
    assert "vault" in res.prompt() and "09:00" not in res.prompt()
    for s in res.sections:  # each passage holds text, not a header alone
        assert any(x.strip() and not x.startswith("#") for x in s.text.split("\n")), s.text


def test_the_budget_is_charged_for_the_prompt_not_section_by_section(crepo: Path) -> None:
    """The fast estimate adds up exactly, so P3 fills the budget to within one passage:
    rounding each section up (and each blank line between to a whole token) left ~1
    token a section unspent, ~100 tokens of a 4,000-token compile of ~75 passages."""
    for i in range(60):
        put(crepo, f"knowledge/reference/g{i:02d}.md",
            f"---\ntype: reference\n---\n# Glacier {i:02d}\n\nThe glacier rope {i:02d} is blue.\n")
    commit(crepo, "glaciers")
    budget = 900
    res = compile_context(MemoryRepo(crepo), CompileRequest(
        "glacier rope", budget, slots=frozenset({3}), today=TODAY, record_hits=False))
    check_invariants(crepo, res, budget)
    sizes = {estimate_tokens(s.render()) for s in res.sections}
    assert len(res.sections) < 60 and max(sizes) - min(sizes) <= 1
    assert budget - res.tokens < min(sizes), (budget - res.tokens, sizes)


def test_the_last_check_drops_the_lowest_priority_first(
    crepo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tokenizer that does not add up (tiktoken) can make the whole prompt cost more
    than its sections did: the last check then drops the oldest session turn, then P3's
    lowest-ranked passage, never the newest turn or a better passage."""
    from memrepo.context import compiler

    def lumpy(text: str) -> int:  # 8 tokens more for every blank line between sections
        return estimate_tokens(text) + 8 * text.count("\n\n<!--")

    monkeypatch.setattr(compiler, "counter", lambda name: lumpy)
    monkeypatch.setattr(compiler, "cost", lambda name, count: count)
    for i in range(4):
        put(crepo, f"knowledge/reference/k{i}.md",
            f"---\ntype: reference\n---\n# Kayak {i}\n\n" + "kayak " * (8 - i) + "paddle\n")
    turns = [f"## 09:0{i} — user\nSession line {i} about lunch.\n" for i in range(4)]
    put(crepo, SESSION, TRANSCRIPT_HEAD + "\n".join(turns))
    commit(crepo, "kayaks")
    req = CompileRequest("kayak paddle", 160, session=crepo / SESSION, slots=frozenset({3, 4}),
                         today=TODAY, record_hits=False)
    res = compile_context(MemoryRepo(crepo), req)
    assert lumpy(res.prompt()) <= 160
    dropped = [o for o in res.omitted if "final budget check" in o.reason]
    assert dropped, "the lumpy counter must overshoot"
    history = [s for s in res.sections if s.slot == 4]
    assert history and history[-1].text.startswith("## 09:03"), "the newest turn stays"
    p3 = sorted(s.placed for s in res.sections if s.slot == 3)
    assert p3 == list(range(len(p3))), "P3 keeps its best-ranked passages"


def test_an_event_for_a_cron_topic_that_does_not_exist_is_refused(crepo: Path) -> None:
    """``--event cron:NAME`` is checked as ``memory schedule fire`` checks it: a misspelt
    name would activate nothing, silently; refused, naming the cron topics there are."""
    write(
        crepo,
        "topics/standup.md",
        "---\ntype: topic\ntriggers:\n  - type: cron\n    schedule: '0 9 * * 1-5'\n"
        "    name: standup\n---\n\n# Standup\n\nSummarise yesterday's journal.\n",
    )
    typo = invoke_memory(crepo, "compile", "--event", "cron:stadnup", "--json")
    assert typo.returncode != 0 and typo.stdout == ""
    assert "no topic fires cron:stadnup" in typo.stderr and "cron:standup" in typo.stderr
    ok = invoke_memory(crepo, "compile", "--event", "cron:standup", "--json")
    assert ok.returncode == 0, ok.stderr
    assert any(s["path"] == "topics/standup.md" for s in json.loads(ok.stdout)["sections"])
    hook = invoke_memory(crepo, "compile", "--event", "webhook:github:push", "--json")
    assert hook.returncode == 0, hook.stderr


def test_an_active_projects_context_is_in_the_briefing(crepo: Path) -> None:
    """_active.md names the projects; their context.md (the current state) was never
    loaded, only the one-line index."""
    write(crepo, "knowledge/projects/_active.md", "---\ntype: project_index\n---\n\n"
          "# Active Projects\n\n- **kestrel** — build cluster migration, halfway\n"
          "- **ghost** — listed, no context file\n")
    write(crepo, "knowledge/projects/kestrel/context.md",
          "---\ntype: project_context\nproject: kestrel\n---\n\n# Kestrel\n\n"
          "## Current State\n\n- Zephyrine builds kestrel-7 since Tuesday\n")
    write(crepo, "knowledge/projects/old/context.md",
          "---\ntype: project_context\nproject: old\n---\n\n# Old\n\n- not active\n")
    out = compile_context(MemoryRepo(crepo), CompileRequest(slots=frozenset({1})))
    shown = {s.path for s in out.sections}
    assert "knowledge/projects/kestrel/context.md" in shown, shown
    assert "knowledge/projects/old/context.md" not in shown
    assert "Zephyrine builds kestrel-7" in out.prompt()
    assert not any("ghost" in n for n in out.notes)
