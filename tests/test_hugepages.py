"""The resident server asks for 2 MB pages under its nearest index (memrepo.resident.hugepages):
which mappings it picks, that it never fails, and that the kernel of this machine grants
them where it can."""

from __future__ import annotations

import mmap
import platform
import sys
from pathlib import Path

import pytest

from memrepo.index.embedders import HashEmbedder
from memrepo.index.indexer import rebuild
from memrepo.index.paths import db_path
from memrepo.resident import hugepages, nearest

MB = 1 << 20

MAPS = """\
55d0c0a00000-55d0c0a21000 r--p 00000000 fd:01 1311 /usr/bin/python3.11
7f0000000000-7f0008000000 rw-p 00000000 00:00 0
7f0008100000-7f0010100000 rw-p 00000000 00:00 0 [heap]
7f1000000000-7f1003000000 r--p 00000000 00:00 0
7f2000000000-7f2008000000 rw-s 00000000 00:05 77 /dev/zero (deleted)
7f3000100000-7f3008000000 rw-p 00000000 00:00 0
7f4000000000-7f4001000000 rw-p 00000000 00:00 0
7f5000000000-7f5010000000 rw-p 00001000 fd:01 99 /tmp/memory.db
not-an-address rw-p 00000000 00:00 0
"""


def test_only_large_private_anonymous_writable_mappings_are_picked() -> None:
    got = hugepages.large_anonymous(MAPS, min_bytes=64 * MB)
    assert got == [
        (0x7F0000000000, 0x7F0008000000),  # 128 MB, already on 2 MB boundaries
        (0x7F3000200000, 0x7F3008000000),  # its start rounded up to the next 2 MB
    ]
    # the heap (named), read-only, shared, small and file-backed mappings are left alone
    assert hugepages.large_anonymous(MAPS, min_bytes=256 * MB) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's /proc and madvise")
def test_collapse_never_fails_and_reports_what_the_kernel_granted() -> None:
    size = 96 * MB
    region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        region.write(b"\1" * size)  # touched: a collapse has pages to gather
        done = hugepages.collapse(min_bytes=64 * MB)
        assert done % hugepages.HUGE == 0 and done >= 0
        thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
        mode = thp.read_text() if thp.exists() else "[never]"
        major, minor = (int(x) for x in platform.release().split(".")[:2])
        if "[never]" not in mode and (major, minor) >= (6, 1):
            # this region alone is 96 MB: at least part of it is now on 2 MB pages
            assert done >= 2 * hugepages.HUGE, (mode, platform.release(), done)
    finally:
        region.close()


def test_collapse_is_nothing_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert hugepages.collapse() == 0


@pytest.mark.parametrize("ann", [True, False])
def test_the_nearest_index_asks_for_them_once_loaded_or_built(
    irepo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ann: bool
) -> None:
    if not ann:
        monkeypatch.setattr(nearest, "ann_library",
                            lambda: (None, "usearch not installed (test)"))
    elif nearest.ann_library()[0] is None:  # never import usearch before onnxruntime
        pytest.skip("usearch is not installed")
    asked: list[int] = []
    monkeypatch.setattr(hugepages, "collapse", lambda: asked.append(1) or 0)
    monkeypatch.setattr(nearest, "HUGE_PAGES_MIN", 3)
    irepo.write("memory-config.yaml", "search:\n  embedder: hash\n")
    irepo.commit("hash vectors")
    rebuild(irepo.root, "hash")
    store = tmp_path / "serve"
    store.mkdir()
    emb = HashEmbedder()
    built = nearest.NearestIndex(db_path(irepo.root), emb.id, emb.dim, store)
    assert built.refresh() > 0
    built.save(force=True)
    loaded = nearest.NearestIndex(db_path(irepo.root), emb.id, emb.dim, store)
    loaded.refresh()
    # usearch's graph is walked at random: built, then loaded, each asked once; numpy's
    # matrix is scanned in order and never asks
    assert asked == ([1, 1] if ann else [])
    assert loaded.status()["state"] == "ready"
    # a graph smaller than HUGE_PAGES_MIN fits the TLB's reach: not asked
    monkeypatch.setattr(nearest, "HUGE_PAGES_MIN", built.status()["vectors"] + 1)
    nearest.NearestIndex(db_path(irepo.root), emb.id, emb.dim, store).refresh()
    assert asked == ([1, 1] if ann else [])
