"""Back the resident server's nearest index with 2 MB pages, where Linux allows it.

An HNSW search hops between many vectors spread over the whole index, hundreds of MB and
more. On 4 KB pages nearly every hop misses the TLB, and in a virtual machine each miss
walks two page tables. The kernel backs such memory with 2 MB pages only when asked
(``transparent_hugepage`` is ``madvise`` on most distributions), and usearch does not ask:
this module asks for it, after the index is loaded or built
(``bench/perf/bench_hugepages.py`` measures the gain).

It is an optimisation, never a requirement: off Linux, before Linux 6.1 (no
``MADV_COLLAPSE``), with transparent huge pages off, or where a range cannot be collapsed,
nothing happens and nothing fails.
"""

from __future__ import annotations

import ctypes
import sys

MADV_HUGEPAGE = 14
MADV_COLLAPSE = 25  # Linux 6.1
HUGE = 2 << 20
#: anonymous mappings smaller than this are left alone: the index's arenas are hundreds of
#: MB, and small mappings (the interpreter's, libraries' heaps) gain nothing worth a syscall
MIN_BYTES = 64 << 20


def large_anonymous(maps: str, min_bytes: int = MIN_BYTES) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges, aligned inward to 2 MB, of the writable private
    anonymous mappings of at least ``min_bytes`` in ``maps`` (``/proc/self/maps``)."""
    out = []
    for line in maps.splitlines():
        fields = line.split()
        # address perms offset dev inode [path]: an anonymous mapping has no path
        if len(fields) != 5 or fields[1] != "rw-p":
            continue
        lo, _, hi = fields[0].partition("-")
        try:
            start, end = int(lo, 16), int(hi, 16)
        except ValueError:
            continue
        start, end = -(-start // HUGE) * HUGE, end // HUGE * HUGE
        if end - start >= min_bytes:
            out.append((start, end))
    return out


def collapse(min_bytes: int = MIN_BYTES) -> int:
    """Ask the kernel to back this process's large anonymous mappings with 2 MB pages: now
    (``MADV_COLLAPSE``) and as they fill (``MADV_HUGEPAGE``). The bytes now on 2 MB pages
    (0 where the kernel cannot or will not)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        with open("/proc/self/maps") as fh:
            ranges = large_anonymous(fh.read(), min_bytes)
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
    except (OSError, AttributeError):
        return 0
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    done = 0
    for start, end in ranges:
        if madvise(start, end - start, MADV_HUGEPAGE) != 0:
            return done  # THP off or unknown to this kernel: the rest would fail alike
        # 2 MB at a time: a range that cannot be collapsed (a page pinned or shared) fails
        # alone, not the whole mapping
        for at in range(start, end, HUGE):
            if madvise(at, HUGE, MADV_COLLAPSE) == 0:
                done += HUGE
    return done
