"""Chrome-trace export of a window, and one event's details."""
from __future__ import annotations

import json

import msgspec
import numpy as np
from conftest import kernel, launch, op, trace_doc
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.loader import decode_bytes
from kinetoscope.views.export import chrome_trace, event_view, window_rows
from kinetoscope.views.lane_index import build_lane_index
from kinetoscope.views.lanes import window_ns


def model_with_graph():
    """A step, an op launching one kernel, and a graph launch owning two kernels (one correlation)."""
    events = [op("ProfilerStep#1", 0, 1000), op("aten::mm", 10, 20), launch(12, 5, corr=1),
              op("aten::add", 110, 30), launch(112, 5, corr=2, name="cudaGraphLaunch"),
              kernel("k1", 40, 10, corr=1), kernel("g1", 140, 10, corr=2), kernel("g2", 150, 10, corr=2)]
    doc = trace_doc(events, baseTimeNanoseconds=1_700_000_000_000_000_000)
    return decode_bytes(json.dumps(doc).encode())


def rows_named(model, name):
    return [int(r) for r in np.flatnonzero(model.name_id == model.names.index(name))]


def test_export_window_round_trips_through_the_loader():
    model = model_with_graph()
    index = build_lane_index(model)
    t0, t1 = window_ns(model, 100, 200)
    rows = window_rows(model, index, t0, t1)
    assert sorted(model.names[model.name_id[r]] for r in rows) == sorted(
        ["ProfilerStep#1", "aten::add", "cudaGraphLaunch", "g1", "g2"])
    doc = chrome_trace(model, rows, source="run/file.json")
    again = decode_bytes(msgspec.json.encode(doc))
    assert again.n_events == rows.size
    assert np.array_equal(np.sort(again.ts_ns), np.sort(model.ts_ns[rows]))
    assert np.array_equal(np.sort(again.dur_ns), np.sort(model.dur_ns[rows]))
    assert sorted(again.lane_label) == sorted(model.lane_label[k] for k in np.unique(model.lane[rows]))
    assert np.count_nonzero(again.launch_idx >= 0) == 2  # the graph launch still owns both kernels


def test_export_flows_pair_launches_with_activities():
    model = model_with_graph()
    rows = np.arange(model.n_events)
    events = chrome_trace(model, rows, source="s")["traceEvents"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(finishes) and len(starts) == 3
    assert all(f["bp"] == "e" and f["ts"] >= starts[i]["ts"] for i, f in finishes.items())
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert "GPU 0" in names and "GPU 0 stream 7" in names


def test_event_details_of_kernel_launch_and_op():
    model = model_with_graph()
    index = build_lane_index(model)
    launch_info = analyze(model).launch
    (k1,) = rows_named(model, "k1")
    details = event_view(model, index, launch_info, k1)
    assert details["kind"] == "kernel" and details["start_us"] == 40.0 and details["dur_us"] == 10.0
    assert details["launch"]["name"] == "cudaLaunchKernel" and details["launch"]["offset_us"] == 28.0
    assert details["launch"]["op"]["name"] == "aten::mm" and details["activities"] is None
    (graph,) = rows_named(model, "cudaGraphLaunch")
    details = event_view(model, index, launch_info, graph)
    assert [a["name"] for a in details["activities"]] == ["g1", "g2"] and details["activities_total"] == 2
    (step,) = rows_named(model, "ProfilerStep#1")
    details = event_view(model, index, launch_info, step)
    assert details["launch"] is None and details["activities"] is None and details["correlation"] is None
