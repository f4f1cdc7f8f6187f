"""``memory_read`` opens what it checked: a symlink swapped in after the path's check, a
folder on the way swapped for a link, or a hard link to a file outside the repo is never
read (the file is opened component by component with O_NOFOLLOW, and the opened file is
checked, not the path)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import IRepo
from mcp import Client

from memrepo import worktree
from memrepo.agents.mcp_server import build_server

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="symlinks and hard links"),
]
SECRET = "OUTSIDE-THE-REPO-aws_secret"
INSIDE = "---\ntype: reference\n---\n- an ordinary note inside the repo\n"
READS = 1500


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    away = tmp_path / "away"
    away.mkdir()
    f = away / "swap.md"
    f.write_text(f"---\ntype: reference\n---\n- {SECRET}\n")
    return f


@pytest.fixture
def server(irepo: IRepo) -> Iterator[object]:
    srv = build_server(irepo.root)
    yield srv
    srv.memrepo.close()  # type: ignore[attr-defined]


def _swapper(target: Path, make_other: object, stop: threading.Event) -> None:
    """Swap ``target`` between the real thing and a link out, atomically, until stopped."""
    tmp = target.with_name(".swap-tmp")
    while not stop.is_set():
        for make in (make_other, None):
            tmp.unlink(missing_ok=True)
            if make is None:
                tmp.write_text(INSIDE)
            else:
                make(tmp)  # type: ignore[operator]
            os.replace(tmp, target)


async def _race(server: object, ref: str, swap: threading.Thread, stop: threading.Event
                ) -> list[str]:
    leaked: list[str] = []
    swap.start()
    try:
        async with Client(server) as client:  # type: ignore[arg-type]
            for _ in range(READS):
                r = await client.call_tool("memory_read", {"ref": ref})
                text = r.content[0].text
                if SECRET in text:
                    leaked.append(text)
    finally:
        stop.set()
        swap.join()
    return leaked


async def test_a_symlink_swapped_in_after_the_check_is_never_read(
    server: object, irepo: IRepo, outside: Path
) -> None:
    target = irepo.root / "knowledge/reference/swap.md"
    target.write_text(INSIDE)
    stop = threading.Event()
    swap = threading.Thread(target=_swapper, daemon=True,
                            args=(target, lambda p: p.symlink_to(outside), stop))
    leaked = await _race(server, "knowledge/reference/swap.md", swap, stop)
    assert leaked == [], f"{len(leaked)} of {READS} reads returned the outside file"


async def test_a_folder_swapped_for_a_link_is_never_read_through(
    irepo: IRepo, outside: Path
) -> None:
    """The folders on the way too: ``knowledge/box`` swapped between a folder holding an
    ordinary note and a link to the folder holding the outside file."""
    box = irepo.root / "knowledge/box"
    real = irepo.root / "knowledge/.box-real"
    real.mkdir()
    (real / "swap.md").write_text(INSIDE)
    link = irepo.root / "knowledge/.box-link"
    link.symlink_to(outside.parent, target_is_directory=True)
    os.rename(real, box)
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            os.rename(box, real)  # the folder leaves, the link takes its name
            os.rename(link, box)
            os.rename(box, link)
            os.rename(real, box)

    t = threading.Thread(target=swap, daemon=True)
    t.start()
    leaked = 0
    try:
        for _ in range(READS * 20):
            try:
                data = worktree.read_file(irepo.root, "knowledge/box/swap.md")
            except OSError:
                continue
            leaked += SECRET.encode() in data
    finally:
        stop.set()
        t.join()
    assert leaked == 0, f"{leaked} reads went through the swapped-in link"


async def test_a_hard_link_is_refused(server: object, irepo: IRepo, outside: Path) -> None:
    """A hard link to a file outside the repo is that file: git never makes one in a work
    tree, so a file with more than one name is refused, whatever the other name is."""
    os.link(outside, irepo.root / "knowledge/reference/hard.md")
    async with Client(server) as client:  # type: ignore[arg-type]
        r = await client.call_tool("memory_read", {"ref": "knowledge/reference/hard.md"})
    text = r.content[0].text
    assert r.is_error and SECRET not in text, text
    assert "hard link" in text, text
    with pytest.raises(OSError, match="hard link"):
        worktree.read_file(irepo.root, "knowledge/reference/hard.md")
