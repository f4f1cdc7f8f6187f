"""Per-agent namespaces (docs/namespaces.md): two agents on one memory, through the real
commands (`memory capture`, `memory remember`, `memory commit`, `memory search`, `memory
hook claude-code SessionStart / UserPromptSubmit`), each with $MEMREPO_NAMESPACE set.

Each sees its own transcripts and journal lines and everything shared, never the other's;
an agent with no namespace sees everything, as before namespaces.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memrepo import namespaces
from memrepo.documents import parse_document
from memrepo.layout import source_ref

NOW = "2026-03-05T10:00:00+00:00"
JOURNAL = "knowledge/journal/2026-03-05.md"
#: one word per owner, found in its transcript and its journal line
WORDS = {"alice": "quokkaberry", "bob": "wombatine", None: "platypoid"}
#: the repo, and each owner's transcript
Repo = tuple[Path, dict[str | None, str]]


def run(root: Path, ns: str | None, *args: str, stdin: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "MEMORY_REPO", namespaces.ENV)}
    env.update({"MEMREPO_NOW": NOW, "MEMREPO_NO_RESIDENT": "1", "MEMREPO_OFFLINE": "1"})
    if ns:
        env[namespaces.ENV] = ns
    proc = subprocess.run(["memory", "--repo", str(root), *args], input=stdin,
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc.stdout


def hook(root: Path, ns: str | None, event: str, **payload: str) -> str:
    return run(root, ns, "hook", "claude-code", event,
               stdin=json.dumps({"hook_event_name": event, "cwd": str(root), **payload}))


def search(root: Path, ns: str | None, query: str, *opts: str) -> list[dict]:
    return json.loads(run(root, ns, "search", query, "--json", *opts))


@pytest.fixture(scope="module")
def ns_repo(crepo_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """alice, bob and a namespace-less session, each captured and each remembering a note
    in one day's journal, committed; a flush-like bullet citing bob's transcript. The repo
    and the transcript of each owner. Made once: the tests only read it (and the hooks
    record what they showed, each test under sessions of its own)."""
    root = tmp_path_factory.mktemp("namespaces") / "mem"
    shutil.copytree(crepo_template, root, symlinks=True)
    home = tmp_path_factory.getbasetemp() / "home"  # conftest's: its git identity
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
        mp.setenv("XDG_CONFIG_HOME", str(home / "config"))
        mp.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
        return root, _populate(root)


def _populate(crepo: Path) -> dict[str | None, str]:
    paths: dict[str | None, str] = {}
    for ns, word in WORDS.items():
        sid = f"ses_{ns or 'shared'}"
        run(crepo, ns, "capture", "start", "--session", sid, "--topic", f"{word} planning")
        run(crepo, ns, "capture", "append", "--session", sid, "--role", "user",
            stdin=f"Let us plan the {word} rollout for the ledger service.\n")
        run(crepo, ns, "capture", "append", "--session", sid, "--role", "agent",
            stdin=f"The {word} rollout for the ledger service starts on Monday.\n")
        out = run(crepo, ns, "capture", "end", "--session", sid, "--json")
        paths[ns] = json.loads(out)["path"]
        run(crepo, ns, "remember", f"the {word} deadline for the ledger is Friday")
    with (crepo / JOURNAL).open("a") as f:  # what extraction or the flush would write
        f.write("\n### ledger\n"
                f"- Decided: wombatine ledger goes first [src: {source_ref(paths['bob'])}]\n")
    run(crepo, None, "commit")
    return paths


def words_in(text: str) -> set[str]:
    return {w for w in WORDS.values() if w in text}


def test_writers_record_the_namespace(ns_repo: Repo) -> None:
    crepo, shared_repo = ns_repo
    for ns, rel in shared_repo.items():
        meta = parse_document((crepo / rel).read_text(), rel).meta
        assert meta.get("namespace") == ns
    lines = (crepo / JOURNAL).read_text().splitlines()
    assert any(ln.endswith("Friday [ns: alice]") and "quokkaberry" in ln for ln in lines)
    assert any(ln.endswith("Friday [ns: bob]") and "wombatine" in ln for ln in lines)
    assert any(ln.endswith("platypoid deadline for the ledger is Friday") for ln in lines)


@pytest.mark.parametrize("ns", ["alice", "bob"])
def test_search_sees_its_own_and_the_shared(ns_repo: Repo, ns: str) -> None:
    crepo, shared_repo = ns_repo
    other = "bob" if ns == "alice" else "alice"
    mine = search(crepo, ns, f"{WORDS[ns]} ledger")
    assert shared_repo[ns] in [h["path"] for h in mine]
    assert JOURNAL in [h["path"] for h in mine]
    shared = search(crepo, ns, "platypoid ledger")
    assert {shared_repo[None], JOURNAL} <= {h["path"] for h in shared}
    theirs = search(crepo, ns, f"{WORDS[other]} ledger")
    assert shared_repo[other] not in [h["path"] for h in theirs]
    assert not any(WORDS[other] in h["snippet"] for h in theirs)
    # a person asks for another view, or for all of them
    assert shared_repo[other] in [h["path"] for h in
                                  search(crepo, ns, f"{WORDS[other]} ledger", "--all-namespaces")]
    assert shared_repo[other] in [h["path"] for h in
                                  search(crepo, None, f"{WORDS[other]} ledger",
                                         "--namespace", other)]


def test_no_namespace_sees_everything(ns_repo: Repo) -> None:
    crepo, shared_repo = ns_repo
    for ns, word in WORDS.items():
        paths = [h["path"] for h in search(crepo, None, f"{word} ledger")]
        assert shared_repo[ns] in paths and JOURNAL in paths
    brief = hook(crepo, None, "SessionStart", session_id="s-none", source="startup")
    assert words_in(brief) == set(WORDS.values())


@pytest.mark.parametrize("ns", ["alice", "bob"])
def test_briefing_and_recall_show_their_own_and_the_shared(ns_repo: Repo, ns: str) -> None:
    crepo = ns_repo[0]
    other = "bob" if ns == "alice" else "alice"
    brief = hook(crepo, ns, "SessionStart", session_id=f"s-{ns}", source="startup")
    assert words_in(brief) == {WORDS[ns], WORDS[None]}, brief
    if ns == "alice":  # bob's flushed decision cites his transcript: his, not alice's
        assert "goes first" not in brief
    else:
        assert "goes first" in brief
    prompt = "When does the quokkaberry, wombatine and platypoid rollout of the ledger start?"
    recalled = hook(crepo, ns, "UserPromptSubmit", session_id=f"s2-{ns}", prompt=prompt)
    assert WORDS[ns] in recalled and WORDS[None] in recalled
    assert WORDS[other] not in recalled.replace(prompt, "")


def test_a_bad_namespace_is_refused(crepo: Path) -> None:
    env = {**os.environ, namespaces.ENV: "Not A Name"}
    proc = subprocess.run(["memory", "--repo", str(crepo), "remember", "x"], env=env,
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "namespace" in proc.stderr
    assert not list((crepo / "knowledge" / "journal").glob("*.md"))


def test_view_hides_another_namespace_line_by_line(tmp_path: Path) -> None:
    rows = list(enumerate([
        "## 2026-03-05", "", "- 09:00 shared note", "### Flush: bob's session",
        "- 10:00 bob's note [ns: bob]", "### mixed", "- 11:00 alice [ns: alice]",
        "- 12:00 bob again [ns: bob]",
    ], 5))
    seen = namespaces.View(tmp_path, "alice").keep(JOURNAL, rows)
    assert [t for _, t in seen] == ["## 2026-03-05", "", "- 09:00 shared note", "### mixed",
                                    "- 11:00 alice [ns: alice]"]
    assert namespaces.View(tmp_path, None).keep(JOURNAL, rows) is rows
    # another file's lines are never judged: only journals hold namespaced lines
    assert namespaces.View(tmp_path, "alice").keep("knowledge/memory/MEMORY.md", rows) is rows
    with namespaces.scope("bob"):
        assert namespaces.current() == "bob"
        with namespaces.payload_scope({namespaces.PAYLOAD_KEY: None}):
            assert namespaces.current() is None


def test_mcp_read_refuses_another_namespace(ns_repo: Repo, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from memrepo.agents.mcp_server import Memory

    crepo, paths = ns_repo
    memory = Memory(crepo)
    monkeypatch.setenv(namespaces.ENV, "alice")
    assert "quokkaberry" in memory.read_text(paths["alice"])
    with pytest.raises(ToolError, match="another namespace"):
        memory.read_text(paths["bob"])
    journal = memory.read_text(JOURNAL)
    assert "quokkaberry" in journal and "platypoid" in journal and "wombatine" not in journal
    monkeypatch.delenv(namespaces.ENV)
    assert "wombatine" in memory.read_text(JOURNAL)


# --- memory install --namespace / memory --namespace ------------------------------------------


def test_install_with_a_namespace_isolates_the_agent(ns_repo: Repo, tmp_path: Path) -> None:
    """`memory install claude-code --namespace alice` writes hooks and a server that act
    in alice's namespace with nothing in the agent's environment: the installed prompt
    hook, run as Claude Code runs it, recalls alice's and the shared, never bob's.
    Installing again changes nothing; the doctor names the namespace."""
    crepo = ns_repo[0]
    home = tmp_path / "home"
    home.mkdir()
    out = run(crepo, None, "install", "claude-code", "--scope", "user", "--namespace",
              "alice", "--home", str(home), "--project", str(tmp_path))
    assert "--namespace alice" in out
    settings = json.loads((home / ".claude/settings.json").read_text())
    handler = settings["hooks"]["UserPromptSubmit"][-1]["hooks"][-1]
    args = handler["args"][handler["args"].index("--repo"):]  # through the hook client
    assert args[:4] == ["--repo", str(crepo), "--namespace", "alice"]
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["memrepo"]
    assert server["args"] == ["--repo", str(crepo), "--namespace", "alice", "mcp"]

    prompt = "When does the quokkaberry, wombatine and platypoid rollout of the ledger start?"
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s-installed",
               "cwd": str(tmp_path), "prompt": prompt, "transcript_path": ""}
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "MEMREPO_NOW": NOW,
           "MEMREPO_NO_RESIDENT": "1"}
    proc = subprocess.run([handler["command"], *handler["args"]], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    recalled = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert WORDS["alice"] in recalled and WORDS[None] in recalled
    assert WORDS["bob"] not in recalled.replace(prompt, "")

    again = run(crepo, None, "install", "claude-code", "--scope", "user", "--namespace",
                "alice", "--home", str(home), "--project", str(tmp_path))
    assert "nothing to install" in again
    from memrepo.agents import install as agents
    from memrepo.repo import MemoryRepo

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.chdir(tmp_path)
        [check] = agents.health_checks(MemoryRepo(crepo))
    assert check.ok and check.detail.endswith(f"{crepo} in namespace alice"), check.detail


def test_install_refuses_a_bad_namespace_and_names_the_tokens_for_http(
        ns_repo: Repo, tmp_path: Path) -> None:
    """A bad name writes nothing; with --url the hooks act in the namespace and the
    install says the server's token must be made in it (the server acts in the token's)."""
    crepo = ns_repo[0]
    common = ["--repo", str(crepo), "install", "claude-code", "--scope", "user",
              "--home", str(tmp_path)]
    proc = subprocess.run(["memory", *common, "--namespace", "Not A Name"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "lower-case" in proc.stderr, proc.stderr
    assert not list(tmp_path.iterdir())
    out = run(crepo, None, *common[2:], "--namespace", "alice", "--url",
              "https://mem.example/mcp", "--token-env", "MEM_TOKEN")
    assert "memory mcp token create NAME --namespace alice" in out
    hooks = json.loads((tmp_path / ".claude/settings.json").read_text())["hooks"]
    assert "--namespace" in hooks["Stop"][-1]["hooks"][-1]["args"]


def test_the_global_namespace_option_acts_in_it(crepo: Path) -> None:
    """`memory --namespace NAME` is $MEMREPO_NAMESPACE for the command (and what it
    starts): a note is marked as the namespace's; a bad name writes nothing."""
    run(crepo, None, "--namespace", "carol", "remember", "the kiwi audit is on Tuesday")
    text = next((crepo / "knowledge" / "journal").glob("*.md")).read_text()
    assert "kiwi audit is on Tuesday [ns: carol]" in text
    proc = subprocess.run(["memory", "--repo", str(crepo), "--namespace", "Carol", "remember",
                           "x"], capture_output=True, text=True)
    assert proc.returncode == 2 and "--namespace" in proc.stderr
    home = crepo.parent / "home"
    home.mkdir()
    run(crepo, None, "--namespace", "carol", "install", "codex", "--scope", "user",
        "--home", str(home))  # the install of an agent acting in carol
    hooks = json.loads((home / ".codex/hooks.json").read_text())["hooks"]
    assert "--namespace carol hook codex" in hooks["Stop"][-1]["hooks"][-1]["command"]


def test_an_update_keeps_the_line_in_its_namespace(crepo: Path) -> None:
    """`memory update` (MCP memory_update) of a namespace's journal line: the new line and
    the struck one stay that namespace's; another namespace cannot rewrite it."""
    run(crepo, "alice", "remember", "the quokka audit is on Tuesday")
    rel = next((crepo / "knowledge" / "journal").glob("*.md")).relative_to(crepo).as_posix()
    text = (crepo / rel).read_text()
    line = 1 + text.splitlines().index(next(ln for ln in text.splitlines() if "quokka" in ln))
    proc = subprocess.run(["memory", "--repo", str(crepo), "--namespace", "bob", "update",
                           f"{rel}:{line}", "the quokka audit is cancelled"],
                          capture_output=True, text=True, env={**os.environ, "MEMREPO_NOW": NOW})
    assert proc.returncode == 1 and "another namespace's line" in proc.stderr
    assert (crepo / rel).read_text() == text
    run(crepo, "alice", "update", f"{rel}:{line}", "the quokka audit moved to Wednesday")
    after = (crepo / rel).read_text()
    assert "moved to Wednesday [ns: alice]" in after
    struck = next(ln for ln in after.splitlines() if "~~" in ln)
    assert "[ns: alice]" in struck
    assert search(crepo, "bob", "quokka audit Wednesday") == []
    assert search(crepo, "alice", "quokka audit Wednesday")
    # a line of alice's by its source (an extraction's: no marker) stays hers when
    # superseded, though the new line drops the [src:]
    run(crepo, "alice", "capture", "start", "--session", "ses_a", "--topic", "emu plans")
    run(crepo, "alice", "capture", "append", "--session", "ses_a", "--role", "user",
        stdin="The emu census is due in June.\n")
    ref = source_ref(json.loads(run(crepo, "alice", "capture", "end", "--session", "ses_a",
                                    "--json"))["path"])
    with (crepo / rel).open("a") as f:
        f.write(f"- 11:00 Decided: the emu census is due in June [src: {ref}]\n")
    run(crepo, None, "commit")
    emu = 1 + (crepo / rel).read_text().splitlines().index(
        f"- 11:00 Decided: the emu census is due in June [src: {ref}]")
    run(crepo, "alice", "update", f"{rel}:{emu}", "the emu census moved to July")
    assert "the emu census moved to July [ns: alice]" in (crepo / rel).read_text()
