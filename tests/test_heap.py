"""`trace.heap.give_back`: freed C-heap pages go back to the system past the allowance, and only then."""
from __future__ import annotations

import numpy as np
import pytest
from kinetoscope.trace import heap

glibc = pytest.mark.skipif(heap._GLIBC is None, reason="needs glibc's malloc_trim and mallinfo2")


def _resident_anon() -> int:
    with open("/proc/self/statm", "rb") as statm:
        fields = statm.read().split()
    return (int(fields[1]) - int(fields[2])) * heap._PAGE


def _free_in_the_middle(mb: int) -> list:
    """Fill a heap with 64 KiB blocks (below the mmap threshold), keep every 16th, free the rest: most of the memory
    is free but held, the kept blocks pinning the heap so its top cannot shrink."""
    blocks = [np.ones(8192) for _ in range(mb * 16)]  # 64 KiB each
    return blocks[::16]


@glibc
def test_free_pages_go_back_past_the_allowance():
    heap.give_back(slack_bytes=0)  # what earlier tests in this process freed
    baseline = heap.free_resident()  # Python's own arenas count as free too
    kept = _free_in_the_middle(256)
    free = heap.free_resident()
    assert free > baseline + (128 << 20)
    before = _resident_anon()
    assert not heap.give_back(slack_bytes=free + (64 << 20))  # within the allowance: kept for the next allocations
    assert _resident_anon() > before - (16 << 20)
    assert heap.give_back(slack_bytes=baseline + (16 << 20))
    assert _resident_anon() < before - (128 << 20)
    assert heap.free_resident() < free - (128 << 20)
    assert all(block[0] == 1.0 for block in kept)  # what is in use stays


def test_the_allowance_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(heap.SLACK_ENV, raising=False)
    assert heap.allowance() == 512 << 20
    for text, mb in (("64", 64), ("0.5", 0.5), ("not a number", 512), ("-3", 512), ("0", 512)):
        monkeypatch.setenv(heap.SLACK_ENV, text)
        assert heap.allowance() == int(mb * (1 << 20)), text


@glibc
def test_give_back_reads_the_allowance(monkeypatch):
    heap.give_back(slack_bytes=0)
    kept = _free_in_the_middle(96)
    monkeypatch.setenv(heap.SLACK_ENV, str((heap.free_resident() >> 20) + 64))
    assert not heap.give_back()
    monkeypatch.setenv(heap.SLACK_ENV, str(max(1, (heap.free_resident() >> 20) - 64)))
    assert heap.give_back()
    del kept


def test_without_glibc_nothing_happens(monkeypatch):
    monkeypatch.setattr(heap, "_GLIBC", None)
    assert heap.free_resident() is None
    assert not heap.give_back(slack_bytes=0)
