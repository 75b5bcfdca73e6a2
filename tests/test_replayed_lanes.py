"""The lanes draw the op calls graph replays ran (views/replayed_lanes.py): on the real H200 graph sample with its
eager twin as reference, one lane of op bars before the stream, nested as the reference ran them, bounded in size."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from kinetoscope.analysis.tables.index import TableIndex
from kinetoscope.pipeline import with_graph_reference
from kinetoscope.trace.loader import load_trace
from kinetoscope.views import replayed_lanes
from kinetoscope.views.lane_index import build_lane_index
from kinetoscope.views.lanes import lanes_view

H200 = Path(__file__).resolve().parents[1] / "samples" / "logs" / "cuda_h200"
pytestmark = pytest.mark.skipif(not list(H200.glob("cuda_graph/*.json.gz")), reason="the H200 samples are not here")


@pytest.fixture(scope="module")
def graph_trace():
    (trace,), (eager,) = H200.glob("cuda_graph/*.json.gz"), H200.glob("launch_bound/*.json.gz")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KINETOSCOPE_GRAPH_REFERENCE", str(eager))
        model = with_graph_reference(load_trace(str(trace), cache_dir=None), str(trace))
    return model, TableIndex.build(model).graphs, build_lane_index(model)


def test_one_replay_is_drawn_as_its_reference_ran_it(graph_trace):
    model, graphs, index = graph_trace
    top = np.flatnonzero((graphs.call_replay == 0) & (graphs.call_parent < 0))
    t0, t1 = int(graphs.call_start_ns[top].min()), int(graphs.call_end_ns[top].max())
    out = lanes_view(model, index, t0, t1, 1600, graphs=graphs)
    ids = [lane["id"] for lane in out["lanes"]]
    (at,) = [k for k, lane in enumerate(out["lanes"]) if lane.get("replayed_ops")]
    lane, stream = out["lanes"][at], out["lanes"][at + 1]
    assert stream["kind"] == "gpu" and (lane["device"], lane["stream"]) == (stream["device"], stream["stream"])
    assert lane["id"] == model.lane_kind.size + stream["id"] and len(set(ids)) == len(ids)
    assert "launch_bound" in lane["label"]
    ev = lane["events"]
    named = [(out["names"][n], d) for n, d, c in zip(ev["name"], ev["depth"], ev["count"]) if c == 1 and n >= 0]
    assert [n for n, d in named if d == 0] == ["aten::linear", "aten::gelu"] * 24  # the 24 layers of one replay
    assert {n for n, d in named if d == 1} == {"aten::addmm"}  # under each linear, as captured
    assert set(ev["kind"]) == {"replayed_op"} and set(ev["row"]) == {-1}
    lo, hi = (t0 - model.start_ns) / 1e3, (t1 - model.start_ns) / 1e3
    assert min(ev["start_us"]) >= lo - 1e-3 and max(s + d for s, d in zip(ev["start_us"], ev["dur_us"])) <= hi + 2e-3


def test_the_whole_trace_stays_bounded_and_a_trace_without_replays_has_no_such_lane(graph_trace, monkeypatch):
    model, graphs, index = graph_trace
    end = int((model.ts_ns + model.dur_ns).max())
    monkeypatch.setattr(replayed_lanes, "MAX_REPLAYED_RECTS", 100)
    out = lanes_view(model, index, model.start_ns, end, 10_000, graphs=graphs)
    (lane,) = [lane for lane in out["lanes"] if lane.get("replayed_ops")]
    assert len(lane["events"]["start_us"]) <= 100 and sum(lane["events"]["count"]) == int((graphs.call_end_ns > 0).sum())
    assert lanes_view(model, index, model.start_ns, end, 1600, graphs=None) == lanes_view(model, index, model.start_ns, end, 1600)
    plain = lanes_view(model, index, model.start_ns, end, 1600)
    assert not any(lane.get("replayed_ops") for lane in plain["lanes"])
    assert len(json.dumps(out)) < 1_000_000


def _forked_graph_trace() -> bytes:
    """An eager step whose two ops launch on streams 7 and 8, then one replay of the same two kernels (a graph
    that forks onto both streams): the trace's own launches are the reference."""
    def op(name, ts, dur):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}

    def call(name, ts, corr):
        return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 2,
                "args": {"correlation": corr}}

    def kernel(name, ts, dur, stream, corr):
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                "args": {"correlation": corr, "stream": stream, "device": 0}}

    events = [op("aten::mm", 10, 20), call("cudaLaunchKernel", 12, 1), kernel("gemm_a", 40, 10, 7, 1),
              op("aten::add", 32, 10), call("cudaLaunchKernel", 34, 2), kernel("add_b", 52, 5, 8, 2),
              call("cudaGraphLaunch", 100, 3), kernel("gemm_a", 110, 10, 7, 3), kernel("add_b", 112, 5, 8, 3)]
    return json.dumps({"schemaVersion": 1, "traceEvents": events}).encode()


def test_a_graph_that_forks_onto_two_streams_draws_each_call_above_its_own_stream():
    from kinetoscope.trace.loader import decode_bytes
    model = decode_bytes(_forked_graph_trace())
    graphs = TableIndex.build(model).graphs
    assert graphs.attributed_ns == graphs.replayed_ns == 15_000
    out = lanes_view(model, build_lane_index(model), model.start_ns, model.start_ns + 200_000, 1000, graphs=graphs)
    drawn = {}
    for k, lane in enumerate(out["lanes"]):
        if lane.get("replayed_ops"):
            below = out["lanes"][k + 1]
            assert (below["kind"], below["stream"]) == ("gpu", lane["stream"])
            ev = lane["events"]
            drawn[lane["stream"]] = [(out["names"][n], d, s) for n, d, s in zip(ev["name"], ev["depth"], ev["start_us"])]
    assert drawn == {7: [("aten::mm", 0, 100.0)], 8: [("aten::add", 0, 102.0)]}  # µs from the trace's start
