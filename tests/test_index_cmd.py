"""`memory index` and the doctor checks of the index."""

from __future__ import annotations

import json

from conftest import IRepo, invoke_memory

from memrepo.index.health import checks
from memrepo.repo import MemoryRepo


def test_index_builds_then_updates_then_noop(irepo: IRepo) -> None:
    proc = invoke_memory(irepo.root, "index", "--json")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["mode"] == "rebuild" and res["files"] == 3
    irepo.write("knowledge/people/a.md", "---\ntype: person\nname: A\n---\nA.\n")
    irepo.commit("a")
    res = json.loads(invoke_memory(irepo.root, "index", "--json").stdout)
    assert (res["mode"], res["added"]) == ("incremental", 1)
    proc = invoke_memory(irepo.root, "index")
    assert "up to date" in proc.stdout
    proc = invoke_memory(irepo.root, "index", "--rebuild")
    assert proc.returncode == 0 and "rebuilt" in proc.stdout


def test_doctor_checks_report_drift_and_repair(irepo: IRepo) -> None:
    repo = MemoryRepo(irepo.root)
    by_name = {c.name: c for c in checks(repo)}
    assert not by_name["index"].ok and by_name["index"].fix == "memory index"
    invoke_memory(irepo.root, "index")
    irepo.write("knowledge/people/b.md", "---\ntype: person\nname: B\n---\nB.\n")
    irepo.commit("b")  # --no-verify: no hook ran, the index is behind
    by_name = {c.name: c for c in checks(repo)}
    assert not by_name["index commit"].ok and "1 commit(s) behind" in by_name["index commit"].detail
    assert by_name["vector mode"].ok
    invoke_memory(irepo.root, "index")
    by_name = {c.name: c for c in checks(repo)}
    assert all(c.ok for c in by_name.values()), by_name


def test_config_embedder_change_is_reported(irepo: IRepo) -> None:
    invoke_memory(irepo.root, "index")
    irepo.write("memory-config.yaml", "search:\n  embedder: hash\n")
    by_name = {c.name: c for c in checks(MemoryRepo(irepo.root))}
    assert not by_name["index embedder"].ok
    proc = invoke_memory(irepo.root, "index", "--json")
    assert json.loads(proc.stdout)["mode"] == "rebuild"
    by_name = {c.name: c for c in checks(MemoryRepo(irepo.root))}
    assert by_name["index embedder"].ok


def test_memory_doctor_shows_the_index_and_fix_repairs_it(memrepo_root) -> None:
    from conftest import run_git

    proc = invoke_memory(memrepo_root, "doctor", "--json")
    names = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert names["index commit"]["ok"] and names["vector mode"]["ok"], names  # init built it
    (memrepo_root / "knowledge/reference/x.md").write_text("---\ntype: reference\n---\nx\n")
    run_git(memrepo_root, "add", "-A")
    run_git(memrepo_root, "commit", "-q", "--no-verify", "-m", "memory: x")
    (memrepo_root / "memory.db").unlink()
    proc = invoke_memory(memrepo_root, "doctor")
    assert proc.returncode == 1 and "memory.db is missing" in proc.stdout
    proc = invoke_memory(memrepo_root, "doctor", "--fix")
    assert proc.returncode == 0, proc.stdout
    assert "fixed: index rebuild at" in proc.stdout


def test_index_rebuild_waits_for_a_running_indexer_and_rebuilds(irepo_indexed: IRepo) -> None:
    """The holder's loop takes whatever pending mark it finds: the waiting `memory index
    --rebuild` must still rebuild and say so, not exit 0 silently."""
    import subprocess
    import time

    from memrepo.index.lock import IndexLock
    from memrepo.index.paths import state_dir

    lock = IndexLock(state_dir(irepo_indexed.root / ".git"))
    lock.acquire()
    try:
        waiting = subprocess.Popen(
            ["memory", "index", "--rebuild"],
            cwd=irepo_indexed.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 1.5
        while not lock.pending.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        lock.take_pending()  # what a holder's loop does before it lets go
    finally:
        lock.release()
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0 and "Traceback" not in err, err
    assert "rebuilt the index" in out
