"""The span in view loads first (server/foreground.py, issue 53): a span whose lanes the tab asks for skips the
queue of the other loads, their decoder children pause until its lanes are out, and their analyses wait their turn."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import one_step_doc, write_trace
from kinetoscope import pipeline
from kinetoscope.server import foreground
from kinetoscope.server import service as service_module
from kinetoscope.server.foreground import Foreground
from kinetoscope.server.service import TraceService
from kinetoscope.server.spans import span_id

needs_signals = pytest.mark.skipif(sys.platform == "win32" or not Path("/proc/self/stat").exists(),
                                   reason="pauses with SIGSTOP and reads /proc")


def _state(child: subprocess.Popen) -> str:
    """The process state letter of /proc/PID/stat: T while stopped."""
    return Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _until(check, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def children():
    made = []

    def spawn() -> subprocess.Popen:
        made.append(subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.01)"]))
        return made[-1]

    yield spawn
    for child in made:
        child.kill()
        child.wait()


@needs_signals
def test_the_other_decoders_pause_while_the_span_in_view_waits_for_its_lanes(children):
    fg = Foreground()
    other, mine, later = children(), children(), children()
    fg.child("other", other)
    fg.child("mine", mine)
    fg.begin("mine")
    time.sleep(0.1)
    assert _state(other) != "T"  # not before its load runs: it may be waiting for the slot the other holds
    fg.started("mine")
    assert _until(lambda: _state(other) == "T") and _state(mine) != "T"
    fg.child("later", later)  # a decode that starts meanwhile steps aside at once
    assert _until(lambda: _state(later) == "T")
    fg.done("someone else")  # only the span in view ends the pause
    assert _state(other) == "T"
    fg.finished("mine")
    assert _until(lambda: _state(other) != "T" and _state(later) != "T")


@needs_signals
def test_a_pause_never_outlasts_its_bound(children, monkeypatch):
    monkeypatch.setattr(foreground, "MAX_PAUSE_S", 0.2)
    fg = Foreground()
    other = children()
    fg.child("other", other)
    fg.started("mine")
    fg.begin("mine")  # and its load hangs
    assert _until(lambda: _state(other) == "T")
    assert _until(lambda: _state(other) != "T", 3.0) and fg.view is None


def test_asking_again_while_waiting_does_not_extend_the_pause(monkeypatch):
    started = []

    class Timer:
        def __init__(self, seconds, call, args=()):
            started.append(seconds)
            self.daemon = False

        def start(self):
            pass

        def cancel(self):
            pass

    monkeypatch.setattr(foreground.threading, "Timer", Timer)
    fg = Foreground()
    for _ in range(5):  # the tab polls status?until=lanes while it waits
        fg.begin("mine")
    assert started == [foreground.MAX_PAUSE_S]
    fg.done("mine")
    fg.begin("next")
    assert len(started) == 2


def test_the_analyses_of_the_others_wait_for_the_lanes_in_view(monkeypatch):
    fg = Foreground()
    fg.begin("mine")
    fg.wait_turn("other")  # its load has not started: nobody waits for it
    fg.started("mine")
    started = threading.Event()

    def other_load():
        fg.wait_turn("other")
        started.set()

    threading.Thread(target=other_load, daemon=True).start()
    fg.wait_turn("mine")  # the span in view itself never waits
    assert not started.wait(0.2)
    fg.done("mine")
    assert started.wait(2.0)


def test_a_span_picked_while_another_load_holds_the_slot_starts_at_once(tmp_path, monkeypatch):
    """Both files share the one slot of large files; the first blocks in its decode. The span the tab then asks
    lanes for does not wait behind it: its lanes come while the first still decodes; the first then ends too."""
    for name in ("a", "b"):
        write_trace(tmp_path / "logs" / name / "w.1.pt.trace.json", one_step_doc(4, spacing=100, step_us=1000))
    monkeypatch.setattr(service_module, "LARGE_FILE_BYTES", 0)  # every file on the one-slot pool of large files
    gate, real = threading.Event(), service_module.load_trace

    def decode(path, cache_dir=None, progress=None):
        if "/a/" in path:
            gate.wait(20)
        return real(path, cache_dir=cache_dir, progress=progress)

    monkeypatch.setattr(service_module, "load_trace", decode)
    service = TraceService(str(tmp_path / "logs"), cache_dir=None, decode_in_child=False, rescan_s=3600,
                           stages=pipeline.STAGES)
    try:
        service.scan_now()
        a, b = (span_id(str(tmp_path / "logs" / n / "w.1.pt.trace.json")) for n in ("a", "b"))
        service.request_load(a)
        service.request_load(b)  # queued behind a
        assert _until(lambda: service.snapshot(a)[0][2]["state"] == "loading")
        assert service.snapshot(b)[0][2]["state"] == "queued"
        service.request_lanes(b, wait_s=10)  # the tab shows b now
        assert service.snapshot(b)[0][2]["lanes_ready"] and service.snapshot(a)[0][2]["state"] == "loading"
        gate.set()
        service.get(a, wait_s=20)
        service.get(b, wait_s=20)
    finally:
        gate.set()
        service.close()


@needs_signals
def test_a_span_coming_back_into_view_goes_on_and_the_other_steps_aside(children):
    """A late ask for the span shown before (the tab's last poll for it) brings it back into view: its own paused
    child goes on, the one now out of view pauses, and its analyses waiting their turn go on (a 20 s stall once)."""
    fg = Foreground()
    first, second = children(), children()
    for sid, child in (("first", first), ("second", second)):
        fg.started(sid)
        fg.child(sid, child)
    fg.begin("second")
    assert _until(lambda: _state(first) == "T") and _state(second) != "T"
    waited = threading.Event()

    def first_analyses():
        fg.wait_turn("first")
        waited.set()

    threading.Thread(target=first_analyses, daemon=True).start()
    assert not waited.wait(0.2)
    fg.begin("first")
    assert waited.wait(2.0)
    assert _until(lambda: _state(first) != "T" and _state(second) == "T")
    fg.finished("first")
    assert _until(lambda: _state(second) != "T")
