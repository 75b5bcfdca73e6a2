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
    monkeypatch.setattr(heap, "_held", False)
    assert heap.allowance() == 512 << 20
    monkeypatch.setattr(heap, "_held", True)  # a process that holds what it frees: no trim unless the user says
    assert heap.allowance() == int(heap.HELD_SLACK_MB * (1 << 20))
    monkeypatch.setenv(heap.SLACK_ENV, "64")
    assert heap.allowance() == 64 << 20
    monkeypatch.setattr(heap, "_held", False)
    monkeypatch.delenv(heap.SLACK_ENV)
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


@glibc
def test_settle_gives_every_free_page_back_unless_the_process_holds_them(monkeypatch):
    """A load done in TensorBoard's process (it lives on): everything free goes back, the allowance aside; in one that
    holds what it frees (the CLI, the decoder child: they end soon) nothing."""
    heap.give_back(slack_bytes=0)
    monkeypatch.delenv(heap.SLACK_ENV, raising=False)
    monkeypatch.setattr(heap, "_held", True)
    kept = _free_in_the_middle(128)
    free = heap.free_resident()
    assert not heap.settle() and heap.free_resident() > free - (16 << 20)
    monkeypatch.setattr(heap, "_held", False)
    assert free < heap.allowance()  # give_back alone would keep it all
    assert heap.settle() and heap.free_resident() < free - (96 << 20)
    del kept


def test_without_glibc_nothing_happens(monkeypatch):
    monkeypatch.setattr(heap, "_GLIBC", None)
    assert heap.free_resident() is None
    assert not heap.give_back(slack_bytes=0)
    assert not heap.settle()


_HOLD = """
import sys
import numpy as np
from kinetoscope.trace import heap
held = heap.hold_freed() if sys.argv[1] == "hold" else False
a = np.ones(96 << 17)  # 96 MiB: past glibc's largest automatic mmap threshold (32 MiB)
mapped = heap._GLIBC[1]().hblkhd
del a
info = heap._GLIBC[1]()
print(int(held), mapped >> 20, info.fordblks >> 20)
"""


@glibc
@pytest.mark.parametrize("user", [None, "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"])
def test_hold_freed_keeps_large_blocks_in_the_heap_unless_the_user_set_malloc(user):
    """Held, a 96 MiB array comes from the heap and its memory stays there, free for the next allocation (glibc
    alone maps it and unmaps it when freed: fresh pages each time); a user's own malloc settings stand."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in heap.HOLD_ENVS}
    if user == "MALLOC_MMAP_THRESHOLD_":
        env[user] = str(1 << 20)
    elif user == "GLIBC_TUNABLES":
        env[user] = "glibc.malloc.check=0"

    def run(mode: str) -> tuple[int, int, int]:
        out = subprocess.run([sys.executable, "-c", _HOLD, mode], env=env, capture_output=True, text=True,
                             timeout=120, check=True).stdout
        held, mapped_mb, free_mb = map(int, out.split())
        return held, mapped_mb, free_mb

    plain = run("plain")
    assert plain[0] == 0 and plain[1] >= 96 and plain[2] < 96  # the test means something: mapped, then unmapped
    held = run("hold")
    if user is None:
        assert held[0] == 1 and held[1] < 96 and held[2] >= 96
    else:
        assert held == (0, *plain[1:]) or (held[0] == 0 and held[1] >= 96 and held[2] < 96)


_WHO_HOLDS = """
import sys
from kinetoscope.trace import heap
if sys.argv[1] == "cli":
    import kinetoscope.cli
else:
    from kinetoscope.server import decoder
    decoder._send = lambda outcome: None
    assert heap._held is False  # importing the decoder holds nothing: its main does
    decoder.main([sys.argv[2], ""])
print(int(heap._held))
"""


@glibc
@pytest.mark.parametrize("who", ["cli", "decoder"])
def test_the_cli_and_the_decoder_child_hold_what_they_free(who, tmp_path):
    """Both load a trace and end: the CLI holds freed memory from its import, the decoder child from its main; a
    plain import of the package (TensorBoard's process, which lives on) does not."""
    import json
    import os
    import subprocess
    import sys

    trace = tmp_path / "t.pt.trace.json"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "op", "cat": "cpu_op", "pid": 1, "tid": 1,
                                                  "ts": 1, "dur": 2}]}))
    env = {k: v for k, v in os.environ.items() if k not in heap.HOLD_ENVS}
    out = subprocess.run([sys.executable, "-c", _WHO_HOLDS, who, str(trace)], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.split()[-1] == "1"
    plain = subprocess.run([sys.executable, "-c", "import kinetoscope.server.plugin\nfrom kinetoscope.trace import heap\n"
                            "print(int(heap._held))"], env=env, capture_output=True, text=True, timeout=120, check=True)
    assert plain.stdout.split()[-1] == "0"
