"""Level-of-detail lanes: exact answers on a hand-made trace, invariants and bounds on real ones,
and the latency budget on a synthetic 450k-event trace."""
from __future__ import annotations

import json
import random
import time

import msgspec
import numpy as np
import pytest
from conftest import SHARED_TRACES, kernel, launch, op, requires_shared, trace_doc
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.loader import decode_bytes, load_trace
from kinetoscope.views.lane_index import build_lane_index
from kinetoscope.views.lanes import MAX_RECTS, RECTS_PER_PX, lanes_view, window_ns

US = 1000


def tiny_model():
    """Main thread: a 1000 µs step with two 20 µs ops (each launching a kernel); GPU: two kernels.

        CPU  [ProfilerStep#1 ..................................................)
               [mm)            [add)
                 [L1]            [L2]
        GPU          [k1]            [k2]
    """
    events = [op("ProfilerStep#1", 0, 1000), op("aten::mm", 10, 20), launch(12, 5, corr=1),
              op("aten::add", 110, 20), launch(112, 5, corr=2),
              kernel("k1", 40, 10, corr=1), kernel("k2", 140, 10, corr=2)]
    return decode_bytes(json.dumps(trace_doc(events)).encode())


def view(model, start_us=None, end_us=None, width_px=1600, analysis=None):
    t0, t1 = window_ns(model, start_us, end_us)
    index = build_lane_index(model)
    return lanes_view(model, index, t0, t1, width_px, analysis.idle if analysis else None,
                      analysis.steps if analysis else None)


def events_of(payload, kind):
    (lane,) = [lane for lane in payload["lanes"] if lane["kind"] == kind]
    return lane["events"]


def test_wide_view_draws_every_event_itself():
    model = tiny_model()
    payload = view(model, width_px=10_000, analysis=analyze(model))
    cpu, gpu = events_of(payload, "cpu"), events_of(payload, "gpu")
    assert cpu["depth"] == [0, 1, 1, 2, 2] and set(cpu["count"]) == {1} and set(cpu["fill"]) == {1.0}
    assert [payload["names"][i] for i in cpu["name"]] == ["ProfilerStep#1", "aten::mm", "aten::add",
                                                          "cudaLaunchKernel", "cudaLaunchKernel"]
    assert cpu["kind"] == ["cpu_op", "cpu_op", "cpu_op", "runtime", "runtime"]
    assert gpu["start_us"] == [40.0, 140.0] and gpu["dur_us"] == [10.0, 10.0]
    flows = payload["flows"]
    assert flows["gpu_row"] == gpu["row"]
    assert flows["launch_row"] == [int(model.launch_idx[r]) for r in gpu["row"]]
    assert flows["launch_us"] == [12.0, 112.0] and flows["gpu_us"] == [40.0, 140.0]
    # the step's 40 µs before the first kernel (the device's lead, judged host) is shaded as a gap too
    assert payload["gaps"]["start_us"] == [0.0, 50.0] and payload["gaps"]["cause"] == ["host", "host"]
    assert payload["steps"]["name"] == ["ProfilerStep#1"] and payload["merged"] is False


def test_one_pixel_merges_sub_pixel_events_into_coverage_blocks():
    payload = view(tiny_model(), width_px=10)  # 100 µs per pixel
    cpu = events_of(payload, "cpu")
    assert cpu["count"] == [1, 2, 2] and cpu["row"][1:] == [-1, -1] and cpu["name"][1:] == [-1, -1]
    assert cpu["start_us"][1:] == [10.0, 12.0] and cpu["dur_us"][1:] == [120.0, 105.0]
    assert cpu["fill"][1] == pytest.approx(40 / 120, abs=0.01)
    assert payload["merged"] is True and payload["flows"]["gpu_row"] == []


def test_window_selects_overlapping_events_only():
    payload = view(tiny_model(), start_us=100, end_us=135, width_px=100)
    cpu, gpu = events_of(payload, "cpu"), events_of(payload, "gpu")
    assert cpu["start_us"] == [0.0, 110.0, 112.0]  # the step (started before), add, its launch
    assert gpu["start_us"] == [] and payload["flows"]["gpu_us"] == [140.0]  # flow to a kernel off-window


def test_every_lane_is_listed_even_when_empty():
    model = tiny_model()
    payload = view(model, start_us=500, end_us=600)
    assert [lane["id"] for lane in payload["lanes"]] == list(range(model.lane_kind.size))
    assert events_of(payload, "gpu")["row"] == []


def _covered(model, payload, t0, t1) -> bool:
    """Every event overlapping [t0, t1) lies inside a rectangle of its own (lane, depth)."""
    end = model.ts_ns + model.dur_ns
    rows = np.flatnonzero((model.ts_ns < t1) & (end > t0))
    big = 1 << 10  # depth < 2^10 and lane < 2^10: keys stay below 2^62
    keys, ends = [], []
    for lane in payload["lanes"]:
        ev = lane["events"]
        start = np.rint(np.array(ev["start_us"]) * US).astype(np.int64) + model.start_ns
        keys.append((lane["id"] * big + np.array(ev["depth"], np.int64)) * (1 << 42) + (start - model.start_ns))
        ends.append(start + np.rint(np.array(ev["dur_us"]) * US).astype(np.int64))
    keys, ends = np.concatenate(keys), np.concatenate(ends)
    order = np.argsort(keys)
    keys, ends = keys[order], ends[order]
    group = model.lane[rows].astype(np.int64) * big + model.depth[rows]
    ev_keys = group * (1 << 42) + (model.ts_ns[rows] - model.start_ns)
    at = np.searchsorted(keys, ev_keys, side="right") - 1
    same_group = (at >= 0) & (keys[np.maximum(at, 0)] >> 42 == group)
    return bool(np.all(same_group & (ends[np.maximum(at, 0)] >= end[rows])))


@pytest.fixture(scope="module")
def resnet():
    if not SHARED_TRACES.is_dir():
        pytest.skip("../shared/traces is not beside the repo")
    model = load_trace(str(SHARED_TRACES / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz"),
                       cache_dir=None)
    analysis = analyze(model)
    return model, build_lane_index(model), analysis


@requires_shared
@pytest.mark.parametrize("seed", range(6))
def test_real_trace_invariants(resnet, seed):
    model, index, analysis = resnet
    rng = random.Random(seed)
    span_us = (model.stop_ns - model.start_ns) / US
    for _ in range(10):
        width_us = 10 ** rng.uniform(0, np.log10(span_us))
        start_us = rng.uniform(-10, span_us - width_us)
        width_px = rng.choice([1, 7, 300, 1600, 4000])
        t0, t1 = window_ns(model, start_us, start_us + width_us)
        payload = lanes_view(model, index, t0, t1, width_px, analysis.idle, analysis.steps)
        assert _covered(model, payload, t0, t1)
        depths_per_lane = index.lane_max_depth + 1
        for lane in payload["lanes"]:
            assert len(lane["events"]["row"]) <= RECTS_PER_PX * width_px + depths_per_lane[lane["id"]]
        assert payload["rects"] <= MAX_RECTS + index.n_groups
        for lane in payload["lanes"]:
            ev = lane["events"]
            single = [i for i, r in enumerate(ev["row"]) if r >= 0]
            rows = np.array([ev["row"][i] for i in single], np.int64)
            assert np.array_equal(np.rint(np.array([ev["dur_us"][i] for i in single]) * US), model.dur_ns[rows])
            assert all(ev["count"][i] == 1 for i in single)
            assert all(0.0 <= f <= 1.0 for f in ev["fill"])
        assert len(msgspec.json.encode(payload)) < 1_000_000


def synthetic_trace(steps: int = 100, ops: int = 1500) -> bytes:
    """~450k complete events: per step, `ops` ops each with a launch call and a kernel (6 µs apart)."""
    events = []
    for s in range(steps):
        base = s * (ops * 6 + 100)
        events.append(op(f"ProfilerStep#{s}", base, ops * 6 + 50))
        for i in range(ops):
            t = base + 10 + i * 6
            corr = s * ops + i + 1
            events += [op(f"aten::op{i % 50}", t, 4), launch(t + 1, 2, corr=corr),
                       kernel(f"kernel{i % 30}", t + 3, 2 + (i % 3), corr=corr)]
    return msgspec.json.encode(trace_doc(events))


@pytest.fixture(scope="module")
def big():
    model = decode_bytes(synthetic_trace())
    return model, build_lane_index(model), analyze(model)


def test_lanes_answer_fast_and_small_on_450k_events(big):
    model, index, analysis = big
    assert model.n_events >= 450_000
    span_us = (model.stop_ns - model.start_ns) / US
    rng = random.Random(1)
    latencies, sizes = [], []
    for i in range(200):
        width_us = span_us if i == 0 else 10 ** rng.uniform(3, np.log10(span_us))  # full view .. 1 ms
        start_us = rng.uniform(0, span_us - width_us)
        t0, t1 = window_ns(model, start_us, start_us + width_us)
        started = time.perf_counter()
        body = msgspec.json.encode(lanes_view(model, index, t0, t1, rng.choice([800, 1600, 2560]),
                                              analysis.idle, analysis.steps))
        latencies.append(time.perf_counter() - started)
        sizes.append(len(body))
    assert np.percentile(latencies, 99) < 0.050
    assert max(sizes) < 1_000_000


def test_every_cap_at_once_keeps_the_body_under_1mb():
    """8 GPUs full of visible gaps, 500-character distinct names, deep stacks, 10000 px."""
    events, corr = [], 0
    for i in range(3000):
        t = i * 40
        events.append(op(f"python_function_{i}_" + "x" * 500, t, 30, cat="python_function"))
        events.append(op(f"inner_{i}", t + 1, 20, cat="python_function"))
        for device in range(8):
            corr += 1
            events += [launch(t + 2 + device, 1, corr), kernel(f"k{i}_{device}_" + "y" * 300, t + 10, 10, corr, device=device)]
    model = decode_bytes(msgspec.json.encode(trace_doc(events)))
    analysis = analyze(model)
    index = build_lane_index(model)
    for start_us, end_us in ((None, None), (0, 30_000), (50_000, 51_000)):
        t0, t1 = window_ns(model, start_us, end_us)
        payload = lanes_view(model, index, t0, t1, 10_000, analysis.idle, analysis.steps)
        assert len(msgspec.json.encode(payload)) < 1_000_000
        assert payload["rects"] <= MAX_RECTS + index.n_groups
