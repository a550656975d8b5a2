"""Keeping freed memory in the process, for XLA:CPU training loops (glibc malloc settings).

XLA:CPU allocates each execution's temporary buffer (all intermediates of a train step, tens of MB
for the multi-conv pcDEQ) with malloc and frees it at the end. glibc serves allocations above its
mmap threshold (at most 32 MiB) with a fresh `mmap` and returns them with `munmap`, so every step
touches new pages: measured 14,070 minor page faults per multi-conv training step (batch 64), about
25 ms of kernel time in a step of about 65 ms of computation (one pinned CPU thread). With
`retain_freed_memory()` the heap keeps the freed pages and the next step reuses them: 0 faults.

It is a process-wide setting (like choosing an allocator), so `scripts/bench_pcdeq.py` applies it
before both sides start (jaxml and the PyTorch port run in the same process) and says so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

# mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
M_ARENA_MAX = -8
TRIM_THRESHOLD = 1 << 30


def retain_freed_memory() -> bool:
    """glibc: serve large allocations from the heap (`M_MMAP_MAX` 0), never trim freed memory below
    1 GiB (`M_TRIM_THRESHOLD`), one arena for all threads (`M_ARENA_MAX` 1; XLA allocates on its
    own threads). True when applied; False (nothing changed) off Linux/glibc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all(mallopt(p, v) == 1 for p, v in ((M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, TRIM_THRESHOLD),
                                               (M_ARENA_MAX, 1)))
