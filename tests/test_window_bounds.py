"""Window routes bounded by what they hold, not only by their events: a window export counts the lane and process
names it writes (a trace of one-event processes), and the lanes' gap overlay reads every device's gaps together (a
trace of one-kernel devices) with the same answer as device by device."""
from __future__ import annotations

import msgspec
import numpy as np
import pytest
from conftest import op, trace_doc, write_trace
from kinetoscope import pipeline
from kinetoscope.analysis.idle.gpu_idle import CAUSE_NAMES, DeviceIdle, GpuIdle
from kinetoscope.server import routes
from kinetoscope.server.errors import BadRequest
from kinetoscope.server.service import TraceService
from kinetoscope.views import overlays


@pytest.fixture
def one_event_processes(tmp_path):
    events = [op("aten::mm", 10.0 * i, 5.0, pid=1000 + i, tid=1) for i in range(3000)]
    write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", trace_doc(events))
    service = TraceService(str(tmp_path / "logs"), cache_dir=None, rescan_s=3600, decode_in_child=False,
                           prepare=pipeline.prepare)
    service.scan_now()
    (sid, _, _), *_ = service.snapshot()
    service.get(sid, wait_s=60)
    yield service, sid
    service.close()


def test_a_window_export_counts_its_lane_and_process_names(one_event_processes, monkeypatch):
    service, sid = one_event_processes
    monkeypatch.setenv(routes.EXPORT_EVENTS_ENV, "5000")  # 3,000 events, 3,000 thread names, 3,000 process names
    check = routes.export_check_impl(service, sid)
    assert check == {"events": 3000, "max_events": 5000, "fits": False}
    with pytest.raises(BadRequest, match="3000 events and 6000 lane and process names, more than 5000"):
        routes.export_impl(service, sid)
    # a shorter window fits, and holds what the check counted
    assert routes.export_check_impl(service, sid, start_us=0, end_us=9995)["fits"] is True
    document, _ = routes.export_impl(service, sid, start_us=0, end_us=9995)
    assert sum(e["ph"] == "X" for e in document["traceEvents"]) == 1000
    assert sum(e["ph"] == "M" for e in document["traceEvents"]) == 2000


def _device_by_device(idle, t0_ns, t1_ns, ns_per_px, base):
    """The overlay as it was computed before, one device at a time: the reference."""
    parts, overlapping = [], 0
    for d in idle.devices:
        sel = overlays.in_window(d.gap_start_ns, d.gap_end_ns, t0_ns, t1_ns)
        overlapping += int(sel.size)
        shown = overlays._visible(d.gap_start_ns, d.gap_end_ns, sel, ns_per_px, overlays.MAX_GAPS)
        parts.append((np.full(shown.size, d.device), d.gap_start_ns[shown], d.gap_end_ns[shown], d.gap_cause[shown]))
    device, start, end, cause = (np.concatenate(cols) for cols in zip(*parts))
    if start.size > overlays.MAX_GAPS:
        keep = np.sort(np.argsort(start - end, kind="stable")[:overlays.MAX_GAPS])
        device, start, end, cause = device[keep], start[keep], end[keep], cause[keep]
    return {"device": device.tolist(), "start_us": overlays._us(start, base), "end_us": overlays._us(end, base),
            "cause": [CAUSE_NAMES[c] for c in cause.tolist()], "hidden": overlapping - int(start.size)}


def _device(device: int, starts: np.ndarray, lengths: np.ndarray, rng) -> DeviceIdle:
    """A device of these gaps (the fields without a default None: the overlay reads only the gaps; no lead)."""
    fields = {f.name: None for f in msgspec.structs.fields(DeviceIdle) if f.required}
    fields.update(device=device, gap_start_ns=starts, gap_end_ns=starts + lengths,
                  gap_cause=rng.integers(0, len(CAUSE_NAMES), starts.size).astype(np.int8))
    return DeviceIdle(**fields)


def test_the_gap_overlay_reads_every_device_at_once_as_device_by_device():
    rng = np.random.default_rng(29)
    devices = []
    for device, count in enumerate([0, 3, 0, 5000, 40, 1700, 0, 1]):  # one device past MAX_GAPS, some without gaps
        lengths = rng.integers(1, 5000, count)
        starts = np.cumsum(lengths + rng.integers(1, 3000, count)) - lengths  # sorted, disjoint
        devices.append(_device(device, starts.astype(np.int64), lengths.astype(np.int64), rng))
    devices += [_device(100 + k, np.array([k * 7], np.int64), np.array([3], np.int64), rng) for k in range(2000)]
    idle = GpuIdle(**{**{name: None for name in GpuIdle.__struct_fields__}, "devices": tuple(devices)})
    assert idle.all_gaps.start_key is not None  # one binary search per device
    far = GpuIdle(devices=(*devices[:6], _device(7, np.array([-4 * 10**18, 4 * 10**18], np.int64),
                                                  np.array([10, 10**9], np.int64), rng)))
    assert far.all_gaps.start_key is None  # times too far apart for the packed keys: a pass over every gap
    windows = [(0, 10**12), (1000, 50_000), (2_000_000, 9_000_000), (10**11, 10**12), (5, 6), (-10**19, 10**19),
               (-10**19, -10**18), (10**19, 2 * 10**19), (1, 2), (0, 1), (4 * 10**18, 4 * 10**18 + 1)]
    busy = devices[3]  # windows whose ends touch gaps exactly: a gap ending at t0 or starting at t1 is outside
    windows += [(int(busy.gap_end_ns[10]), int(busy.gap_start_ns[20])), (int(busy.gap_end_ns[10]), int(busy.gap_start_ns[11])),
                (int(busy.gap_start_ns[10]), int(busy.gap_end_ns[10])), (int(busy.gap_end_ns[-1]), 10**12)]
    one = GpuIdle(devices=(devices[3],))  # one device: its own columns are the keys
    assert one.all_gaps.start_key is devices[3].gap_start_ns
    for gaps in (idle, far, one):
        for t0, t1 in windows:
            for ns_per_px in (0, 1, 800, 4000):
                assert overlays.gaps_overlay(gaps, t0, t1, ns_per_px, 0) == _device_by_device(gaps, t0, t1, ns_per_px, 0)
    assert overlays.gaps_overlay(None, 0, 1, 1, 0)["hidden"] == 0
    assert overlays.gaps_overlay(GpuIdle(devices=()), 0, 1, 1, 0)["hidden"] == 0
