"""memrepo's own processes start in an agent's project: a module there named like one of
the standard library's must not be imported in its place (``python -m`` puts the current
folder first on ``sys.path``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from memrepo.spawn import module_argv

SHADOW = 'open({marker!r}, "w").write("imported")\nraise SystemExit("shadowed")\n'
MEMORY = shutil.which("memory", path=str(Path(sys.executable).parent))


def _hostile(folder: Path) -> Path:
    folder.mkdir()
    marker = folder / "IMPORTED"
    for name in ("json.py", "http.py", "socket.py", "runpy.py"):
        (folder / name).write_text(SHADOW.format(marker=str(marker)))
    return marker


def test_a_module_runs_without_the_current_folder(tmp_path: Path) -> None:
    marker = _hostile(tmp_path / "project")
    proc = subprocess.run(module_argv("memrepo.agents.resident", "--help"), cwd=marker.parent,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "usage:" in proc.stdout, proc.stderr
    assert not marker.exists()
    plain = subprocess.run([sys.executable, "-m", "memrepo.agents.resident", "--help"],
                           cwd=marker.parent, capture_output=True, text=True)
    assert plain.returncode != 0 and marker.exists(), "the folder does shadow `python -m`"


def test_the_hooks_worker_runs_in_a_project_that_shadows_the_stdlib(
        crepo: Path, tmp_path: Path) -> None:
    marker = _hostile(tmp_path / "project")
    payload = {"session_id": "s", "hook_event_name": "Stop", "cwd": str(marker.parent),
               "transcript_path": str(tmp_path / "none.jsonl")}
    assert MEMORY
    log = crepo / ".memrepo/agents.log"
    before = len(log.read_text().splitlines()) if log.exists() else 0
    proc = subprocess.run([MEMORY, "--repo", str(crepo), "hook", "claude-code", "Stop"],
                          input=json.dumps(payload), cwd=marker.parent, capture_output=True,
                          text=True)
    assert (proc.returncode, proc.stdout) == (0, "")
    end = time.monotonic() + 30
    while time.monotonic() < end and len(log.read_text().splitlines()) < before + 2:
        time.sleep(0.1)
    lines = [json.loads(x) for x in log.read_text().splitlines()[before:]]
    assert len(lines) == 2, "the detached worker logged its outcome"
    err = crepo / ".memrepo/agents/worker.err"
    assert not err.exists() or "shadowed" not in err.read_text()
    assert not marker.exists()
