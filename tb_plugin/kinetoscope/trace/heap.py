"""Freed C-heap memory, given back to the system between the stages of a load and its analyses.

glibc's malloc keeps the memory a program frees for its next allocations, and only the top of a heap shrinks on its
own. A decode frees a great deal in the middle of its heaps (each piece's raw columns, the finish's temporaries: at
10^7 events about twice the model, 1.4 GB), and the analyses would start from that high-water mark and add their
own temporaries on top of it. `malloc_trim(0)` hands every free page back (inside the heaps too, since glibc 2.8) at
about 0.1 s per GB, and the pages given back cost a fault each when they are used again. So `give_back` trims only
when the free resident memory passes an allowance (`KINETOSCOPE_HEAP_SLACK_MB`, default 512): a trace up to about a
GB keeps its pages for the next stage, a larger one stops holding two models' worth of free memory.

`one_arena` makes every thread of the process allocate from one heap, where glibc gives each new thread an arena of
its own (up to 8 per core): the decode's threads free their pieces' raw columns into their own
arenas, and the analyses' threads allocate theirs from others, so the freed memory of one is never the next
allocation of another. At 0.9 GB of trace on 2 cores that was 150 MiB more peak memory, a fifth, and every such
page is one more fault (issue 29). The threads allocate little else from the C heap (Python's small objects have
their own arenas; the scan's columns are sized once per piece).

`hold_freed` keeps what the program frees for its next allocations, large blocks too: glibc maps every block past
its mmap threshold (at most 32 MiB: a column of 4 million int64s) on its own and unmaps it when freed, and trims the
top of its heap past 128 KiB free, so at 10^7 events every column and temporary of a load and its analyses is fresh
memory the kernel zeroes on first touch (a 4 GB trace on 2 cores faulted 4.7 GB of huge pages for 2.1 GB of peak
memory; a fifth of its CPU time was the kernel clearing pages). Held, they come from the heap and go back to it: half
the faults, 3-7% of the report's time (more on a busy host), 40-100 MiB more peak. `give_back` then trims only past
an allowance the user sets: the next stage reuses what the last one freed. For processes that load and analyse a
trace and end (the CLI, the decoder child), not for TensorBoard's, which lives on: there `give_back` trims past
the default allowance during a load, and `settle` everything free once the load is done.

Free resident memory is measured as the process's anonymous resident pages less the bytes malloc has handed out
(`mallinfo2`: in use in the heaps and in mapped chunks); Python's own small-object arenas count as free here, a few
tens of MB. Without glibc (musl, macOS, Windows) there is no such call, and this does nothing.
"""
from __future__ import annotations

import ctypes
import os
from typing import Any, Optional

from .budgets import setting

SLACK_ENV = "KINETOSCOPE_HEAP_SLACK_MB"
DEFAULT_SLACK_MB = 512


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]


def _glibc() -> Optional[tuple[Any, Any, Any]]:
    try:
        libc = ctypes.CDLL(None)
        trim, info, option = libc.malloc_trim, libc.mallinfo2, libc.mallopt
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    info.argtypes, info.restype = [], _MallInfo2
    option.argtypes, option.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return trim, info, option


_GLIBC = _glibc()
ARENA_ENV = "MALLOC_ARENA_MAX"  # glibc's own setting, read when the process starts
_M_ARENA_MAX = -8  # malloc.h
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def free_resident() -> Optional[int]:
    """Bytes of anonymous resident memory malloc is not using (None without glibc or /proc)."""
    if _GLIBC is None:
        return None
    try:
        with open("/proc/self/statm", "rb") as statm:
            fields = statm.read().split()
        resident, shared = int(fields[1]), int(fields[2])
    except (OSError, ValueError, IndexError):
        return None
    used = _GLIBC[1]()
    return (resident - shared) * _PAGE - (used.uordblks + used.hblkhd)


def allowance() -> int:
    """The free resident bytes `give_back` keeps, from the environment (invalid or unset: the default; in a process
    that holds freed memory, `hold_freed`, all of them)."""
    return int(setting(SLACK_ENV, HELD_SLACK_MB if _held else DEFAULT_SLACK_MB) * (1 << 20))


def give_back(slack_bytes: Optional[int] = None) -> bool:
    """Return the C heap's free pages to the system when more than `slack_bytes` (default: `allowance()`) are held;
    whether it trimmed."""
    if slack_bytes is None:
        slack_bytes = allowance()
    free = free_resident()
    if free is None or free <= slack_bytes:
        return False
    _GLIBC[0](0)
    return True


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # malloc.h
_HOLD_BYTES = (1 << 31) - 1  # mallopt takes an int: blocks up to 2 GiB from the heap, trimmed past 2 GiB free at its top
HOLD_ENVS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")  # the user's own malloc settings
HELD_SLACK_MB = float(1 << 40)  # `give_back`'s default allowance in a process that holds freed memory: no trim
_held = False


def hold_freed() -> bool:
    """Large blocks from the heap and freed memory kept for the next allocations from now on (see above), unless
    the user set glibc's own malloc settings (they rule then); whether it was set. Without glibc this does
    nothing."""
    global _held
    if _GLIBC is None or any(name in os.environ for name in HOLD_ENVS):
        return False
    _held = _GLIBC[2](_M_MMAP_THRESHOLD, _HOLD_BYTES) == 1 and _GLIBC[2](_M_TRIM_THRESHOLD, _HOLD_BYTES) == 1
    return _held


def settle() -> bool:
    """A load is done: in a process that lives on (TensorBoard's), every free page of the C heap goes back to the
    system, not only those past the allowance (the x30 trace's span left 100 MB free in the heap: 673 -> 573 MB
    resident, the same peak and time); none in a process that holds freed memory (it ends soon). Whether it
    trimmed."""
    return False if _held else give_back(0)


def one_arena() -> bool:
    """Every thread of this process allocates from one malloc arena from now on, unless the user set
    `MALLOC_ARENA_MAX` (glibc then obeys theirs); whether it was set. Call it before the process starts threads:
    an arena a thread already has stays its own. Without glibc this does nothing."""
    if _GLIBC is None or ARENA_ENV in os.environ:
        return False
    return _GLIBC[2](_M_ARENA_MAX, 1) == 1
