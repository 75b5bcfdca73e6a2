"""TraceService: scanning, states, one load per file version, LRU budget, reloads, child decoding."""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import fsspec
import numpy as np
import pytest
from conftest import one_step_doc, op, trace_doc, write_trace
from kinetoscope.server.errors import NotFound, NotReady, TraceFailed
from kinetoscope.server.service import TraceService
from kinetoscope.server.spans import span_id


def tiny_doc(kernels: int = 2) -> dict:
    return one_step_doc(kernels, spacing=100, step_us=1000)


def write_run(root: Path, name: str = "w.1.pt.trace.json", run: str = "run", kernels: int = 2) -> Path:
    return write_trace(root / run / name, tiny_doc(kernels))


@pytest.fixture
def service_factory(tmp_path):
    made = []

    def make(**kwargs) -> TraceService:
        kwargs.setdefault("cache_dir", None)
        kwargs.setdefault("decode_in_child", False)
        kwargs.setdefault("rescan_s", 3600)
        service = TraceService(str(tmp_path / "logs"), **kwargs)
        made.append(service)
        return service

    yield make
    for service in made:
        service.close()


def only_id(service: TraceService) -> str:
    (sid, _, _), = service.snapshot()
    return sid


def test_span_id_is_opaque_and_stable():
    sid = span_id("/logs/run/w.1.pt.trace.json")
    assert len(sid) == 12 and int(sid, 16) >= 0
    assert sid == span_id("/logs/run/w.1.pt.trace.json") != span_id("/logs/run/w.2.pt.trace.json")


def test_scan_lists_traces_unloaded(tmp_path, service_factory):
    write_run(tmp_path / "logs", "w.2.pt.trace.json")
    write_run(tmp_path / "logs", "w.10.pt.trace.json")
    service = service_factory()
    service.scan_now()
    snapshot = service.snapshot()
    assert [f.span for _, f, _ in snapshot] == [2, 10]
    assert {state["state"] for _, _, state in snapshot} == {"unloaded"}
    assert all(sid == span_id(f.path) for sid, f, _ in snapshot)


def test_get_loads_and_answers_ready(tmp_path, service_factory):
    write_run(tmp_path / "logs")
    service = service_factory()
    service.scan_now()
    sid = only_id(service)
    loaded = service.get(sid, wait_s=10)
    assert loaded.model.n_events == 7
    (_, _, state), = service.snapshot(sid)
    assert state["state"] == "ready" and state["events"] == 7 and state["progress"] == 1.0


def test_concurrent_requests_share_one_load(tmp_path, service_factory):
    write_run(tmp_path / "logs")
    calls, gate = [], threading.Event()

    def prepare(model):
        calls.append(model)
        gate.wait(10)
        return "prepared"

    service = service_factory(prepare=prepare)
    service.scan_now()
    sid = only_id(service)
    results, errors = [], []

    def ask():
        try:
            results.append(service.get(sid, wait_s=10))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in threads:
        t.join(10)
    assert not errors and len(results) == 8
    assert len(calls) == 1 and len({id(r) for r in results}) == 1


def test_loading_state_reports_phase_and_progress(tmp_path, service_factory):
    write_run(tmp_path / "logs")
    gate = threading.Event()
    service = service_factory(prepare=lambda model: gate.wait(10))
    service.scan_now()
    sid = only_id(service)
    with pytest.raises(NotReady) as info:
        service.get(sid, wait_s=0.2)
    assert info.value.http_code == 409 and info.value.state in ("queued", "loading")
    (_, _, state), = service.snapshot(sid)
    assert state["state"] == "loading" and state["phase"] == "analysing" and state["progress"] == 0.85
    assert state["elapsed_s"] >= 0
    gate.set()
    assert service.get(sid, wait_s=10).prepared is True


def test_decoding_reports_its_own_share_done_never_a_share_of_nothing(tmp_path, service_factory, monkeypatch):
    """`phase_progress` is the share of the file decoded: 0 until the decoder has read any, then what it reports;
    `progress` is the whole load's (decoding runs from 0.05 to 0.85); the other phases measure none."""
    from kinetoscope.server import service as service_module
    write_run(tmp_path / "logs")
    started, go, half, finish = (threading.Event() for _ in range(4))
    real = service_module.load_trace

    def slow_decode(path, cache_dir=None, progress=None):
        started.set()
        go.wait(10)
        progress(0.5)
        half.set()
        finish.wait(10)
        return real(path, cache_dir=cache_dir, progress=progress)

    monkeypatch.setattr(service_module, "load_trace", slow_decode)
    service = service_factory()
    service.scan_now()
    sid = only_id(service)
    service.request_load(sid)
    assert started.wait(10)
    (_, _, state), = service.snapshot(sid)
    assert (state["phase"], state["progress"], state["phase_progress"]) == ("decoding", 0.05, 0.0)
    go.set()
    assert half.wait(10)
    (_, _, state), = service.snapshot(sid)
    assert (state["phase"], state["progress"], state["phase_progress"]) == ("decoding", 0.45, 0.5)
    finish.set()
    service.get(sid, wait_s=10)
    (_, _, state), = service.snapshot(sid)
    assert state["state"] == "ready" and state["phase_progress"] is None


def test_request_load_queues_without_refusing(tmp_path, service_factory):
    write_run(tmp_path / "logs", "w.1.pt.trace.json")
    write_trace(tmp_path / "logs" / "run" / "bad.2.pt.trace.json", "{not json")
    gate = threading.Event()
    service = service_factory(prepare=lambda model: gate.wait(10))
    service.scan_now()
    ids = {f.worker: sid for sid, f, _ in service.snapshot()}
    good, bad = ids["w"], ids["bad"]
    service.request_load(good, wait_s=0.05)  # still loading: no NotReady
    assert service.snapshot(good)[0][2]["state"] in ("queued", "loading")
    gate.set()
    service.request_load(bad, wait_s=10)  # failed: no TraceFailed, the state says so
    assert service.snapshot(bad)[0][2]["state"] == "error"
    deadline = time.monotonic() + 10
    while service.snapshot(good)[0][2]["state"] != "ready" and time.monotonic() < deadline:
        service.request_load(good, wait_s=0.05)
    assert service.snapshot(good)[0][2]["state"] == "ready"
    with pytest.raises(NotFound):
        service.request_load("0123456789ab")


def test_broken_trace_is_an_error_state_with_its_message(tmp_path, service_factory):
    write_trace(tmp_path / "logs" / "run" / "bad.1.pt.trace.json", "{not json")
    service = service_factory()
    service.scan_now()
    sid = only_id(service)
    with pytest.raises(TraceFailed) as info:
        service.get(sid, wait_s=10)
    message = info.value.message
    assert message.startswith("run/bad.1.pt.trace.json: ") and str(tmp_path) not in message
    (_, _, state), = service.snapshot(sid)
    assert state["state"] == "error" and state["error"] == message
    with pytest.raises(TraceFailed):  # sticky for this file version: no reload loop
        service.get(sid)


def test_analysis_bug_is_an_error_state_without_internals(tmp_path, service_factory):
    write_run(tmp_path / "logs")

    def prepare(model):
        raise KeyError("secret internals")

    service = service_factory(prepare=prepare)
    service.scan_now()
    with pytest.raises(TraceFailed) as info:
        service.get(only_id(service), wait_s=10)
    assert "secret" not in info.value.message and "internal error" in info.value.message


def test_changed_file_is_reloaded(tmp_path, service_factory):
    path = write_run(tmp_path / "logs", kernels=2)
    service = service_factory()
    service.scan_now()
    sid = only_id(service)
    assert service.get(sid, wait_s=10).model.n_events == 7
    write_trace(path, tiny_doc(kernels=3))
    os.utime(path, (time.time() + 5, time.time() + 5))
    service.scan_now()
    (_, _, state), = service.snapshot(sid)
    assert state["state"] == "unloaded"
    assert service.get(sid, wait_s=10).model.n_events == 10


def test_new_and_deleted_files(tmp_path, service_factory):
    first = write_run(tmp_path / "logs", "w.1.pt.trace.json")
    service = service_factory()
    service.scan_now()
    write_run(tmp_path / "logs", "w.2.pt.trace.json")
    first.unlink()
    service.scan_now()
    (sid, f, _), = service.snapshot()
    assert f.span == 2
    with pytest.raises(NotFound):
        service.get(span_id(str(first)))


def test_background_scanner_picks_up_new_files(tmp_path, service_factory):
    (tmp_path / "logs").mkdir()
    service = service_factory(rescan_s=0.05)
    assert service.wait_scanned(5) and service.snapshot() == []
    write_run(tmp_path / "logs")
    deadline = time.monotonic() + 5
    while not service.snapshot() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(service.snapshot()) == 1


def test_lru_evicts_beyond_the_budget(tmp_path, service_factory):
    write_run(tmp_path / "logs", "w.1.pt.trace.json")
    write_run(tmp_path / "logs", "w.2.pt.trace.json")
    service = service_factory(memory_budget_bytes=1)
    service.scan_now()
    (a, _, _), (b, _, _) = service.snapshot()
    first = service.get(a, wait_s=10)
    service.get(b, wait_s=10)
    states = {sid: state["state"] for sid, _, state in service.snapshot()}
    assert states == {a: "unloaded", b: "ready"}
    assert 0 < service.ready_bytes() <= first.nbytes * 2
    assert service.get(a, wait_s=10).model.n_events == 7  # reloads on demand


def test_is_active_is_cheap_and_never_raises(tmp_path, service_factory):
    (tmp_path / "logs").mkdir()
    service = service_factory()
    started = time.perf_counter()
    assert service.is_active() is False
    assert time.perf_counter() - started < 0.5
    write_run(tmp_path / "logs")
    service.scan_now()
    assert service.is_active() is True
    broken = TraceService("/nonexistent/kinetoscope/logdir", cache_dir=None)
    try:
        assert broken.is_active() is False
    finally:
        broken.close()


def test_decoding_in_a_child_process_matches_and_freezes(tmp_path, service_factory):
    write_run(tmp_path / "logs")
    service = service_factory(decode_in_child=True, cache_dir=tmp_path / "cache")
    service.scan_now()
    model = service.get(only_id(service), wait_s=30).model
    assert model.n_events == 7 and not model.ts_ns.flags.writeable
    # the child hands the model over first, then fills the disk cache while the service goes on
    deadline = time.monotonic() + 30
    while not list(Path(tmp_path / "cache").glob("*.npz")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(Path(tmp_path / "cache").glob("*.npz"))


def test_child_decode_error_keeps_the_loader_message(tmp_path, service_factory):
    write_trace(tmp_path / "logs" / "run" / "bad.1.pt.trace.json", '{"traceEvents": [')
    service = service_factory(decode_in_child=True)
    service.scan_now()
    with pytest.raises(TraceFailed) as info:
        service.get(only_id(service), wait_s=30)
    assert info.value.message.startswith("run/bad.1.pt.trace.json: ")


def test_disk_cache_is_read_on_reload(tmp_path, service_factory):
    write_run(tmp_path / "logs")
    cache = tmp_path / "cache"
    first = service_factory(cache_dir=cache)
    first.scan_now()
    sid = only_id(first)
    first.get(sid, wait_s=10)
    second = service_factory(cache_dir=cache)
    second.scan_now()
    model = second.get(sid, wait_s=10).model
    assert np.array_equal(model.ts_ns, first.get(sid).model.ts_ns)


def test_fsspec_memory_logdir():
    fs = fsspec.filesystem("memory")
    root = "memory://kinetoscope-test-logs"
    import json
    with fs.open(f"{root}/run/w.1.pt.trace.json", "wb") as handle:
        handle.write(json.dumps(tiny_doc()).encode())
    service = TraceService(root, cache_dir=None, rescan_s=3600)
    try:
        service.scan_now()
        (sid, f, _), = service.snapshot()
        assert f.run == "run" and service.get(sid, wait_s=10).model.n_events == 7
    finally:
        service.close()
        fs.rm(root, recursive=True)


def test_close_stops_everything(tmp_path, service_factory):
    write_run(tmp_path / "logs")
    service = service_factory()
    service.start()
    service.close()
    service.start()  # no restart after close
    assert service._thread is None or not service._thread.is_alive() or service._stop.is_set()


def _wait_state(service: TraceService, sid: str, state: str, timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        (_, _, now), = service.snapshot(sid)
        if now["state"] == state:
            return now
        time.sleep(0.05)
    raise AssertionError(f"never {state}: {now}")


def test_a_dead_decoder_heals_by_itself(tmp_path, service_factory, monkeypatch):
    """The decoder child dies (here: an address-space limit no interpreter fits in, as the OOM killer would
    end it); the failure is not about the file, so the span is retried and loads once the child can run."""
    write_run(tmp_path / "logs")
    monkeypatch.setenv("KINETOSCOPE_DECODER_MEMORY_BYTES", str(16 << 20))
    service = service_factory(decode_in_child=True)
    service.scan_now()
    sid = only_id(service)
    service.request_load(sid)
    failed = _wait_state(service, sid, "error")
    assert "decoder process failed" in failed["error"] and "retrying in 1 s" in failed["error"]
    monkeypatch.delenv("KINETOSCOPE_DECODER_MEMORY_BYTES")
    time.sleep(1.1)
    service.retry_due()  # what the scanner does on its next pass
    _wait_state(service, sid, "ready")


def test_content_errors_are_not_retried_but_io_errors_are(tmp_path, service_factory):
    write_trace(tmp_path / "logs" / "run" / "bad.1.pt.trace.json", '{"traceEvents": 7}')
    write_trace(tmp_path / "logs" / "run" / "half.2.pt.trace.json.gz", b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"\x01\x02")
    service = service_factory()
    service.scan_now()
    states = {}
    for sid, file, _ in service.snapshot():
        service.request_load(sid)
        states[Path(file.path).name] = _wait_state(service, sid, "error")["error"]
    assert "retrying" not in states["bad.1.pt.trace.json"]
    assert "retrying in 1 s" in states["half.2.pt.trace.json.gz"]  # a half-written gzip may still complete


def test_a_replaced_file_with_the_same_size_and_mtime_is_reloaded(tmp_path, service_factory):
    path = write_run(tmp_path / "logs")
    stamp = os.stat(path).st_mtime_ns
    service = service_factory(cache_dir=tmp_path / "cache")
    service.scan_now()
    sid = only_id(service)
    assert "k0" in service.get(sid, wait_s=30).model.names
    text = path.read_text().replace('"k0"', '"z0"')
    replacement = tmp_path / "replacement.json"
    replacement.write_text(text)
    os.utime(replacement, ns=(stamp, stamp))
    os.replace(replacement, path)
    service.scan_now()
    assert "z0" in service.get(sid, wait_s=30).model.names


def test_the_memory_budget_counts_strings_too(tmp_path):
    from kinetoscope.server.spans import model_nbytes
    from kinetoscope.trace.loader import decode_bytes
    small = decode_bytes(json.dumps(trace_doc([op("a", 0, 1)])).encode())
    huge = decode_bytes(json.dumps(trace_doc([op("a" * 5_000_000, 0, 1)])).encode())
    assert model_nbytes(huge) - model_nbytes(small) >= 4_999_999  # the one name, 5,000,000 characters against 1


def test_the_memory_budget_counts_what_the_analyses_keep_with_the_model():
    """Selections the analyses share (`TraceModel.shared`: kind masks, per-model selections) live as long as the
    model: the budget counts them."""
    from kinetoscope.analysis.report import analyze
    from kinetoscope.server.spans import model_nbytes
    from kinetoscope.trace.loader import decode_bytes
    events = [op(f"op{i}", 10 * i, 5) for i in range(2000)]
    model = decode_bytes(json.dumps(trace_doc(events)).encode())
    before = model_nbytes(model)
    assert model.shared_nbytes() == 0
    analyze(model)
    kept = model.shared_nbytes()
    assert kept >= model.n_events  # at least one mask of a byte per event
    assert model_nbytes(model) >= before + kept


def test_timestamps_centuries_apart_are_a_named_error(tmp_path, service_factory):
    from kinetoscope import pipeline
    write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json",
                trace_doc([op("aten::a", 4.6e15, 5), op("aten::b", -4.6e15, 5), op("aten::c", 0, 5, tid=2)]))
    service = service_factory(prepare=pipeline.prepare)
    service.scan_now()
    with pytest.raises(TraceFailed) as info:
        service.get(only_id(service), wait_s=30)
    assert info.value.message.startswith("run/w.1.pt.trace.json: its events span 292 years")


def test_large_files_never_keep_small_ones_waiting(tmp_path, service_factory, monkeypatch):
    """Both small-file slots would be busy with slow large traces; a small trace still loads at once."""
    from kinetoscope.server import service as service_module
    monkeypatch.setattr(service_module, "LARGE_FILE_BYTES", 2_000)
    for k in range(3):
        write_trace(tmp_path / "logs" / "big" / f"w.{k}.pt.trace.json", tiny_doc(kernels=40))  # over 2,000 bytes
    write_run(tmp_path / "logs", run="small", kernels=1)
    release = threading.Event()
    real_read = TraceService._read_model

    def slow_for_big(self, sid, file):
        if "/big/" in file.path:
            release.wait(30)
        return real_read(self, sid, file)
    monkeypatch.setattr(TraceService, "_read_model", slow_for_big)
    service = service_factory()
    service.scan_now()
    ids = {f.run: sid for sid, f, _ in service.snapshot()}
    for sid, f, _ in service.snapshot():
        if f.run == "big":
            service.request_load(sid)
    try:
        assert service.get(ids["small"], wait_s=10).model.n_events == 4
    finally:
        release.set()


def test_the_decoder_child_reports_its_progress(tmp_path):
    path = write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", trace_doc([op(f"a{i}", i, 1) for i in range(2000)]))
    service = TraceService(str(tmp_path / "logs"), cache_dir=None, rescan_s=3600)
    try:
        seen: list[float] = []
        model = service._decode_in_child(str(path), seen.append)
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:  # the reader thread may lag the child's exit a little
            time.sleep(0.01)
        assert model.n_events == 2000 and seen and seen[-1] == pytest.approx(0.99)
    finally:
        service.close()


def test_the_first_trace_preloads_once_when_nothing_was_asked(tmp_path, service_factory):
    write_run(tmp_path / "logs", "w.1.pt.trace.json")
    write_run(tmp_path / "logs", "w.2.pt.trace.json")
    service = service_factory(preload_first=True)
    service.start()
    first = service.snapshot()[0][0] if service.wait_scanned(5) else None
    deadline = time.monotonic() + 10
    while service.snapshot(first)[0][2]["state"] != "ready" and time.monotonic() < deadline:
        time.sleep(0.02)
    states = [state["state"] for _, _, state in service.snapshot()]
    assert states == ["ready", "unloaded"]  # the default span only, and without any request
    idle = service_factory()
    idle.start()
    assert idle.wait_scanned(5)
    time.sleep(0.2)
    assert [state["state"] for _, _, state in idle.snapshot()] == ["unloaded", "unloaded"]


def _address_space_limit(pid: int) -> str:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max address space"):
            return line.split()[3]
    raise AssertionError("no address-space line")


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="reads /proc/PID/limits")
def test_the_decoder_child_sets_its_own_memory_limit_and_the_spare_obeys_the_environment_of_now(
        tmp_path, service_factory, monkeypatch):
    """No preexec_fn (forking TensorBoard's threads into Python code can deadlock): the child caps its own
    address space first thing. The spare child the scanner keeps is handed a job only while it was spawned
    with the environment a child would get now; else a fresh child runs it."""
    from kinetoscope.server import decoder
    write_run(tmp_path / "logs")
    monkeypatch.setenv("KINETOSCOPE_DECODER_MEMORY_BYTES", str(3 << 30))
    service = service_factory(decode_in_child=True)
    service.start()
    deadline = time.monotonic() + 30
    while service._decoders.spare is None and time.monotonic() < deadline:
        time.sleep(0.02)
    spare = service._decoders.spare
    assert spare is not None and spare.alive()
    while _address_space_limit(spare.popen.pid) != str(3 << 30) and time.monotonic() < deadline:
        time.sleep(0.02)  # the limit is set by the child's first lines, a few ms after it starts
    assert _address_space_limit(spare.popen.pid) == str(3 << 30)
    sid = only_id(service)
    assert service.get(sid, wait_s=30).model.n_events == 7
    assert spare.popen.wait(timeout=30) == 0  # the spare ran the load, and exits (its cache written after the handover)
    # a changed environment: the next spare is not used, a fresh child is
    monkeypatch.setenv("KINETOSCOPE_DECODER_MEMORY_BYTES", str(16 << 20))
    service._decoders.refill()
    stale, service._decoders.spare = service._decoders.spare, None  # taken, as a load takes it
    monkeypatch.setenv("KINETOSCOPE_DECODER_MEMORY_BYTES", str(2 << 30))
    assert stale.key != decoder.spawn_key(service.roots)
    child = service._decoders.take(stale, str(tmp_path / "logs" / "run" / "w.1.pt.trace.json"), decoder.DECODE,
                                   lambda share: None)
    assert child is not stale.popen and stale.popen.wait(10) is not None
    assert decoder.result(child, "w").n_events == 7


def test_each_load_is_one_line_in_the_log_and_a_retry_says_the_time_left(tmp_path, service_factory, caplog):
    """Issue 55: TensorBoard's log names each load (which trace, where its model came from, how long) and each
    failure once; `status` says how long is left before a transient failure is tried again, as of each answer."""
    import logging
    write_run(tmp_path / "logs")
    write_trace(tmp_path / "logs" / "run" / "half.2.pt.trace.json.gz", b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"\x01\x02")
    service = service_factory()
    service.scan_now()
    with caplog.at_level(logging.INFO, logger="kinetoscope"):
        states = {}
        for sid, file, _ in service.snapshot():
            service.request_load(sid)
            for _ in range(600):
                (_, _, now), = service.snapshot(sid)
                if now["state"] in ("ready", "error"):
                    break
                time.sleep(0.05)
            states[Path(file.path).name] = now
    loaded = [r.getMessage() for r in caplog.records if " loaded in " in r.getMessage()]
    assert len(loaded) == 1 and "events; model: decoded; analyses:" in loaded[0]
    failed = [r.getMessage() for r in caplog.records if "failed to load" in r.getMessage()]
    assert len(failed) == 1 and "half.2.pt.trace.json.gz" in failed[0] and "trying again in 1 s" in failed[0]
    (sid, _, _), = [(s, f, st) for s, f, st in service.snapshot() if f.path.endswith("half.2.pt.trace.json.gz")]
    assert "(retrying in 1 s)" in states["half.2.pt.trace.json.gz"]["error"]
    time.sleep(1.05)
    (_, _, later), = service.snapshot(sid)
    assert later["error"].endswith("(retrying now)")  # due: not "in 1 s" any more


def test_a_load_that_took_the_spare_child_leaves_a_new_one_when_it_is_ready(tmp_path, service_factory):
    """Issue 53: the next pick finds a decoder child started, not only after the next scan (seconds later)."""
    write_run(tmp_path / "logs")
    service = service_factory(decode_in_child=True)  # rescan_s 3600: no second scan here
    service.start()
    deadline = time.monotonic() + 30
    while service._decoders.spare is None and time.monotonic() < deadline:
        time.sleep(0.02)
    first = service._decoders.spare
    assert first is not None
    assert service.get(only_id(service), wait_s=30).model.n_events == 7
    while service._decoders.spare in (None, first) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert service._decoders.spare is not None and service._decoders.spare is not first and service._decoders.spare.alive()
    assert service._scans == 1
