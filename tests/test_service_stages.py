"""Lanes first: a staged load publishes the model and its lane index before the analyses (issue 18).

Stage two is held back on an Event (never a sleep): while it is held, `status` says `lanes_ready`, the lane
routes answer, the others wait as before; a failing stage two ends in `error` with its message; a file replaced
mid-load, eviction, the decoder child and the index sidecar keep working.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from conftest import one_step_doc, write_trace
from kinetoscope import pipeline
from kinetoscope.index.readers import SidecarIndex
from kinetoscope.index.runner import run_index
from kinetoscope.index.tasks import NEW
from kinetoscope.server import routes
from kinetoscope.server.errors import NotReady, TraceFailed
from kinetoscope.server.plugin import KinetoscopePlugin
from kinetoscope.server.service import TraceService
from kinetoscope.trace.loader import TraceError
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

PREFIX = "/data/plugin/kinetoscope"


def step_doc(kernels: int = 3) -> dict:
    return one_step_doc(kernels, spacing=300, step_us=2000)


class Held:
    """A stage two that waits for `release` (and says when it started), then runs `pipeline.prepare_rest` or
    raises `error`."""

    def __init__(self, error: Exception | None = None) -> None:
        self.started, self.release, self.error = threading.Event(), threading.Event(), error

    def __call__(self, model, early):
        self.started.set()
        assert self.release.wait(30), "stage two was never released"
        if self.error is not None:
            raise self.error
        return pipeline.prepare_rest(model, early)


@pytest.fixture
def make(tmp_path):
    made = []

    def build(rest=pipeline.prepare_rest, **kwargs) -> tuple[TraceService, str]:
        kwargs.setdefault("cache_dir", None)
        kwargs.setdefault("decode_in_child", False)
        service = TraceService(str(tmp_path / "logs"), rescan_s=3600, stages=(pipeline.prepare_lanes, rest), **kwargs)
        made.append(service)
        service.scan_now()
        (sid, _, _), *_ = service.snapshot()
        return service, sid

    yield build
    for service in made:
        service.close()


def state_of(service: TraceService, sid: str) -> dict:
    return routes.status_impl(service, sid)["traces"][0]


def test_the_lane_routes_answer_while_stage_two_is_held(tmp_path, make):
    write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", step_doc())
    held = Held()
    service, sid = make(held)
    try:
        # the long poll for the lanes answers once they are published, with stage two still held
        trace = routes.status_impl(service, sid, load=True, wait_ms=30_000, until="lanes")["traces"][0]
        assert held.started.wait(30) and not held.release.is_set()  # stage two starts right after the publication
        assert trace["state"] == "loading" and trace["phase"] == "analysing" and trace["lanes_ready"] is True
        assert trace["duration_us"] == 2000.0
        lanes = routes.lanes_impl(service, sid, width_px=400)
        assert lanes["analysed"] is False and lanes["gaps"]["start_us"] == [] and lanes["steps"]["name"] == []
        gpu = [lane for lane in lanes["lanes"] if lane["kind"] == "gpu"]
        assert gpu and len(gpu[0]["events"]["row"]) == 3
        assert routes.export_check_impl(service, sid)["events"] == 10
        document, _ = routes.export_impl(service, sid)
        assert sum(e["ph"] == "X" for e in document["traceEvents"]) == 10
        # the routes that need the analyses wait as before: 409 (NotReady), and `ready` still means everything
        for route in (routes.summary_impl, routes.stalls_impl, routes.launches_impl):
            with pytest.raises(NotReady):
                route(service, sid)
        with pytest.raises(NotReady):
            routes.event_impl(service, sid, 1)
        assert routes.status_impl(service, sid, load=True, wait_ms=50)["traces"][0]["state"] == "loading"
    finally:
        held.release.set()
    service.get(sid, wait_s=30)
    trace = state_of(service, sid)
    assert trace["state"] == "ready" and trace["lanes_ready"] is True and trace["duration_us"] == 2000.0
    summary = routes.summary_impl(service, sid)
    assert summary["duration_us"] == trace["duration_us"]
    lanes = routes.lanes_impl(service, sid, width_px=400)
    assert lanes["analysed"] is True and len(lanes["gaps"]["start_us"]) >= 2 and lanes["steps"]["name"] == ["ProfilerStep#1"]
    # the early lanes were the same lanes
    assert lanes["lanes"] == routes.lanes_impl(service, sid, width_px=400)["lanes"]


def test_a_failing_stage_two_ends_in_error_with_its_message(tmp_path, make):
    write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", step_doc())
    held = Held(TraceError("<trace>", "the analysis found something it cannot handle"))
    service, sid = make(held)
    try:
        assert routes.status_impl(service, sid, load=True, wait_ms=30_000, until="lanes")["traces"][0]["lanes_ready"]
        assert routes.lanes_impl(service, sid)["analysed"] is False  # lanes served before the failure are fine
    finally:
        held.release.set()
    trace = routes.status_impl(service, sid, load=True, wait_ms=30_000)["traces"][0]
    message = "run/w.1.pt.trace.json: the analysis found something it cannot handle"
    assert trace["state"] == "error" and trace["error"] == message and trace["lanes_ready"] is False
    for route in (routes.lanes_impl, routes.summary_impl):
        with pytest.raises(TraceFailed) as info:
            route(service, sid)
        assert info.value.message == message
    # the lanes long poll ends at the failure too, with the same state
    assert routes.status_impl(service, sid, load=True, wait_ms=30_000, until="lanes")["traces"][0]["state"] == "error"


def test_an_analysis_bug_in_stage_two_is_the_generic_error(tmp_path, make):
    write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", step_doc())
    held = Held(KeyError("secret internals"))
    held.release.set()
    service, sid = make(held)
    with pytest.raises(TraceFailed) as info:
        service.get_lanes(sid, wait_s=30)  # the lanes, or the failure if it came first
        service.get(sid, wait_s=30)
    assert "secret" not in info.value.message and "internal error" in info.value.message
    assert state_of(service, sid)["state"] == "error"


def test_a_file_replaced_during_stage_two_is_loaded_again(tmp_path, make):
    path = write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", step_doc(kernels=3))
    held = Held()
    service, sid = make(held)
    try:
        assert service.get_lanes(sid, wait_s=30).model.n_events == 10
        write_trace(path, step_doc(kernels=4))
        os.utime(path, (time.time() + 5, time.time() + 5))
        service.scan_now()
        trace = state_of(service, sid)
        assert trace["state"] == "unloaded" and trace["lanes_ready"] is False and trace["duration_us"] is None
        first = held.started
        held.started = threading.Event()
    finally:
        held.release.set()  # the old load finishes for a version that is gone: nothing is stored
    assert first.is_set()
    assert service.get(sid, wait_s=30).model.n_events == 13
    assert routes.lanes_impl(service, sid)["analysed"] is True


def test_a_file_replaced_before_its_lanes_are_published_drops_them(tmp_path):
    path = write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", step_doc(kernels=3))
    entered, release, again = threading.Event(), threading.Event(), threading.Event()
    calls: list[int] = []

    def held_first(model):
        calls.append(model.n_events)
        if len(calls) == 1:  # the first version's load
            entered.set()
            assert release.wait(30)
        else:  # the new version's, held until the old lanes are known not to be served (else it may win the race)
            assert again.wait(30)
        return pipeline.prepare_lanes(model)

    rested = threading.Event()

    def rest(model, early):
        rested.set()  # the old version's lanes were offered (stage two follows their publication in its thread)
        return pipeline.prepare_rest(model, early)

    service = TraceService(str(tmp_path / "logs"), cache_dir=None, decode_in_child=False, rescan_s=3600,
                           stages=(held_first, rest))
    try:
        service.scan_now()
        (sid, _, _), = service.snapshot()
        service.request_lanes(sid)
        assert entered.wait(30)
        write_trace(path, step_doc(kernels=4))
        os.utime(path, (time.time() + 5, time.time() + 5))
        service.scan_now()
        release.set()
        assert rested.wait(30)
        with pytest.raises(NotReady):  # the new version is not loaded yet: the old lanes were not published
            service.get_lanes(sid)
        again.set()
        assert service.get_lanes(sid, wait_s=30).model.n_events == 13
        assert len(calls) == 2 and calls[0] != 13  # the old version's stage ran, and the new one's
    finally:
        release.set()
        again.set()
        service.close()


def test_eviction_and_the_decoder_child_keep_working(tmp_path, make):
    for i in (1, 2):
        write_trace(tmp_path / "logs" / "run" / f"w.{i}.pt.trace.json", step_doc(kernels=2 + i))
    service, first = make(decode_in_child=True, memory_budget_bytes=1)
    second = service.snapshot()[1][0]
    full = service.get(first, wait_s=60)
    assert service.get_lanes(first) is full  # once ready: the full span
    service.get(second, wait_s=60)  # evicts the first (budget of 1 byte keeps one span)
    trace = state_of(service, first)
    assert trace["state"] == "unloaded" and trace["lanes_ready"] is False and trace["duration_us"] == 2000.0
    assert service.get_lanes(first, wait_s=60).model.n_events == 10  # reloads (its lanes at least)
    assert service.get(first, wait_s=60).prepared.analysis is not None


def test_a_sidecar_gives_both_stages_at_once(tmp_path):
    write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", step_doc())
    assert [o.status for o in run_index(str(tmp_path / "logs"), jobs=1).outcomes] == [NEW]

    def no_decode(*args, **kwargs):
        raise AssertionError("decoded although the sidecar holds")

    # the sidecar gives the checked model; the stages compute the analyses from it (issue 26: a sidecar's
    # analyses are never believed), the lanes first as for any load
    service = TraceService(str(tmp_path / "logs"), cache_dir=None, decode_in_child=False, rescan_s=3600,
                           stages=pipeline.STAGES, index=SidecarIndex())
    service._read_model = no_decode
    try:
        service.scan_now()
        (sid, _, _), = service.snapshot()
        trace = routes.status_impl(service, sid, load=True, wait_ms=30_000, until="lanes")["traces"][0]
        assert trace["source"] == "sidecar" and trace["lanes_ready"] is True
        service.get(sid, wait_s=30)
        trace = routes.status_impl(service, sid)["traces"][0]
        assert trace["state"] == "ready" and trace["source"] == "sidecar"
        assert trace["duration_us"] == 2000.0
        assert routes.lanes_impl(service, sid)["analysed"] is True
    finally:
        service.close()


def test_the_plugin_runs_staged_and_status_checks_until(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", step_doc())
    plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=str(tmp_path / "logs")))
    try:
        assert plugin.service()._stages == pipeline.STAGES
        apps = plugin.get_plugin_apps()
        runs = json.loads(Client(apps["/runs"]).get(f"{PREFIX}/runs").get_data())
        sid = runs["runs"][0]["workers"][0]["spans"][0]["id"]
        status = Client(apps["/status"])
        bad = status.get(f"{PREFIX}/status?span={sid}&load=1&until=soon")
        assert bad.status_code == 400 and "until must be one of ready, lanes" in bad.get_data(as_text=True)
        deadline = time.monotonic() + 60
        trace = {"state": "queued", "lanes_ready": False}
        while not trace["lanes_ready"] and trace["state"] != "error" and time.monotonic() < deadline:
            answer = status.get(f"{PREFIX}/status?span={sid}&load=1&wait_ms=3000&until=lanes")
            assert answer.status_code == 200
            (trace,) = json.loads(answer.get_data())["traces"]
        assert trace["lanes_ready"] is True
        while trace["state"] not in ("ready", "error") and time.monotonic() < deadline:
            trace = json.loads(status.get(f"{PREFIX}/status?span={sid}&load=1&wait_ms=3000").get_data())["traces"][0]
        assert trace["state"] == "ready" and trace["lanes_ready"] is True
        lanes = json.loads(Client(apps["/lanes"]).get(f"{PREFIX}/lanes?span={sid}").get_data())
        assert lanes["analysed"] is True
    finally:
        if plugin._service is not None:
            plugin._service.close()


def test_the_status_fields_are_documented():
    doc = (Path(routes.__file__).parent / "HTTP_API.md").read_text()
    for needle in ('"lanes_ready"', '"duration_us": null', "until=lanes", "`analysed`"):
        assert needle in doc, needle


def test_a_scan_that_listed_earlier_never_applies_after_a_later_one(tmp_path, monkeypatch):
    """The scanner thread lists the logdir, then is held; the file is rewritten and scanned again from this thread.
    Scans run one at a time, so the held one applies first and the later listing last: the entry is the new
    version's (applied the other way round, the span got back the entry of its old version: a flaky failure of
    the stage-two test under load)."""
    from kinetoscope.server import scanning
    path = write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", step_doc(kernels=3))
    listed, release = threading.Event(), threading.Event()
    real = scanning.list_traces

    def held_listing(*args):
        found = real(*args)
        if threading.current_thread().name != threading.main_thread().name and not listed.is_set():
            listed.set()
            assert release.wait(30)
        return found

    monkeypatch.setattr(scanning, "list_traces", held_listing)
    service = TraceService(str(tmp_path / "logs"), rescan_s=3600, cache_dir=None, decode_in_child=False)
    try:
        service.start()  # the scanner thread's first scan lists the file as it is now, and is held
        assert listed.wait(30)
        write_trace(path, step_doc(kernels=4))
        os.utime(path, (time.time() + 5, time.time() + 5))
        threading.Timer(0.3, release.set).start()  # this thread's scan waits for the held one
        service.scan_now()
        deadline = time.monotonic() + 30
        while service._scans < 2 and time.monotonic() < deadline:  # both scans applied, in whichever order they ran
            time.sleep(0.01)
        (sid, file, _), = service.snapshot()
        assert file.size == path.stat().st_size and file.mtime == path.stat().st_mtime
        assert service.get(sid, wait_s=30).model.n_events == 13
    finally:
        release.set()
        service.close()
