"""Freed C-heap memory, given back to the system between the stages of a load and its analyses.

glibc's malloc keeps the memory a program frees for its next allocations, and only the top of a heap shrinks on its
own. A decode frees a great deal in the middle of its heaps (each piece's raw columns, the finish's temporaries: at
10^7 events about twice the model, 1.4 GB), and the analyses would start from that high-water mark and add their
own temporaries on top of it. `malloc_trim(0)` hands every free page back (inside the heaps too, since glibc 2.8) at
about 0.1 s per GB, and the pages given back cost a fault each when they are used again. So `give_back` trims only
when the free resident memory passes an allowance (`KINETOSCOPE_HEAP_SLACK_MB`, default 512): a trace up to about a
GB keeps its pages for the next stage, a larger one stops holding two models' worth of free memory.

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


def _glibc() -> Optional[tuple[Any, Any]]:
    try:
        libc = ctypes.CDLL(None)
        trim, info = libc.malloc_trim, libc.mallinfo2
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    info.argtypes, info.restype = [], _MallInfo2
    return trim, info


_GLIBC = _glibc()
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
    """The free resident bytes `give_back` keeps, from the environment (invalid or unset: the default)."""
    return int(setting(SLACK_ENV, DEFAULT_SLACK_MB) * (1 << 20))


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
