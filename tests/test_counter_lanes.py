"""views/counter_lanes.py: per-bucket means and maxima of the counter step functions, on hand-built traces and
against the analyses' own totals on real traces."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import SHARED_TRACES, kernel, launch, op, requires_shared, trace_doc
from kinetoscope.analysis.device.counters import memory_bandwidth
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.loader import decode_bytes, load_trace
from kinetoscope.views import counter_lanes
from kinetoscope.views.counter_lanes import (
    ACCELERATED,
    COUNTER_PX,
    MAX_BUCKETS,
    MAX_COUNTER_LANES,
    bucket_stats,
    bucket_stats_np,
    build_counter_index,
    counter_index,
    counters_view,
    range_max,
)
from kinetoscope.views.lane_index import build_lane_index
from kinetoscope.views.lanes import lanes_view


def model_of(events):
    return decode_bytes(json.dumps(trace_doc(events)).encode())


def with_bps(event, bps):
    event["args"]["blocks per SM"] = bps
    return event


def by_label(view):
    return {lane["label"]: lane for lane in view["lanes"]}


@pytest.mark.parametrize("stats", [bucket_stats, bucket_stats_np], ids=["compiled", "numpy"])
def test_bucket_mean_and_max_of_step_functions_side_by_side(stats):
    # counter 0: 2 on [10, 20), 5 on [20, 30), 1 on [30, 40), 0 after; counter 1: 4 from 35 on
    index = counter_index([("queue_length", "a", 0, 7, np.array([10, 20, 30, 40]), np.array([2.0, 5.0, 1.0, 0.0])),
                    ("queue_length", "b", 0, 8, np.array([35]), np.array([4.0]))], base_ns=0)
    mean, peak = stats(index, np.array([-20, 0, 10, 25, 40, 50, 10_000]))
    assert mean[0].tolist() == pytest.approx([0.0, 0.0, (20 + 25) / 15, (25 + 10) / 15, 0.0, 0.0])
    assert peak[0].tolist() == [0.0, 0.0, 5.0, 5.0, 0.0, 0.0]
    assert mean[1].tolist() == pytest.approx([0.0, 0.0, 0.0, 4 * 5 / 15, 4.0, 4.0]), "beyond its keys it holds"
    assert peak[1].tolist() == [0.0, 0.0, 0.0, 4.0, 4.0, 4.0]


def hand_trace():
    # device 0 stream 7: kernels [100, 200) and [150, 250) (blocks per SM 0.5 and 0.75), memcpy [400, 500) 1000 B
    return model_of([
        op("step", 0, 1000), launch(10, 5, corr=1), launch(20, 5, corr=2), launch(30, 5, corr=3, name="cudaMemcpyAsync"),
        with_bps(kernel("a", 100, 100, corr=1), 0.5), with_bps(kernel("b", 150, 100, corr=2, stream=8), 0.75),
        {**kernel("Memcpy HtoD (Pinned -> Device)", 400, 100, corr=3, cat="gpu_memcpy"),
         "args": {"device": 0, "stream": 7, "correlation": 3, "bytes": 100_000}}])


def test_counters_of_a_hand_built_trace_per_bucket():
    model = hand_trace()
    base = model.start_ns  # the first event starts at 0 µs
    view = counters_view(build_counter_index(model), base, base + 1_000_000, 10 * COUNTER_PX)  # 10 buckets of 100 µs
    assert view["buckets"] == 10 and view["bucket_us"] == 100.0 and view["lanes_total"] == 5
    lanes = by_label(view)
    assert lanes["GPU 0 utilization"]["mean"] == [0, 1, 0.5, 0, 1, 0, 0, 0, 0, 0]
    # [100, 150): 0.5; [150, 200): 1.25 capped at 1; [200, 250): 0.75
    assert lanes["GPU 0 est. SM efficiency"]["mean"] == [0, 0.75, 0.375, 0, 0, 0, 0, 0, 0, 0]
    assert lanes["GPU 0 est. SM efficiency"]["max"][1] == 1.0
    assert lanes["GPU 0 stream 7 queue"]["max"][:5] == [2, 1, 1, 1, 0]
    assert lanes["GPU 0 stream 7 queue"]["mean"][0] == pytest.approx((20 * 1 + 70 * 2) / 100)
    assert lanes["GPU 0 stream 8 queue"]["max"][:3] == [1, 1, 0]
    assert lanes["Memcpy HtoD GB/s"]["mean"][4] == 1.0 and lanes["Memcpy HtoD GB/s"]["unit"] == "GB/s"
    assert {lane["kind"] for lane in view["lanes"]} == {"utilization", "sm_efficiency", "queue_length",
                                                          "memory_bandwidth"}


@pytest.mark.parametrize("span_ns", [10**16, 34_674_330_965_620_000, 10**18])
def test_a_window_of_years_has_ascending_buckets_that_hold_the_whole_trace(span_ns):
    # span x buckets is past int64 (the fuzzed `lanes?end_us=34674330965620.0` answered 500): the buckets must not wrap
    model = hand_trace()
    view = counters_view(build_counter_index(model), model.start_ns, model.start_ns + span_ns, 2400)
    width_ns = span_ns / view["buckets"]
    assert view["bucket_us"] == pytest.approx(width_ns / 1e3)
    util = by_label(view)["GPU 0 utilization"]
    assert util["max"][0] == 1.0 and not any(util["max"][1:])  # all the work (the first 500 ns) in the first bucket
    assert not any(util["mean"])  # 250 ns busy of a bucket of months: below the 5 decimals kept


def test_a_window_finer_than_the_changes_reads_the_value_in_force():
    model = hand_trace()
    base = model.start_ns
    view = counters_view(build_counter_index(model), base + 120_000, base + 121_000, 4000)
    util = by_label(view)["GPU 0 utilization"]
    assert len(util["mean"]) == MAX_BUCKETS and set(util["mean"]) == {1.0} and set(util["max"]) == {1.0}


def test_a_trace_without_gpu_work_has_no_counters_and_a_lanes_answer_says_so():
    model = model_of([op("a", 0, 10)])
    payload = lanes_view(model, build_lane_index(model), model.start_ns, model.stop_ns, 800)
    assert payload["counters"]["lanes"] == [] and payload["counters"]["lanes_total"] == 0


def test_many_streams_are_capped():
    events = [op("step", 0, 10_000)]
    for s in range(MAX_COUNTER_LANES + 10):
        events += [launch(s, 0.5, corr=s + 1), kernel(f"k{s}", 100 + s, 1, corr=s + 1, stream=s + 1)]
    model = model_of(events)
    view = counters_view(build_counter_index(model), model.start_ns, model.stop_ns, 100_000)
    assert len(view["lanes"]) == MAX_COUNTER_LANES and view["lanes_hidden"] == view["lanes_total"] - MAX_COUNTER_LANES
    assert view["buckets"] == MAX_BUCKETS


@requires_shared
@pytest.mark.parametrize("path", ["resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
                                  "hta/trace_diff/test/test.json.gz"])
def test_bucket_means_integrate_to_the_analyses_totals(path):
    model = load_trace(str(SHARED_TRACES / path))
    t0, t1 = model.start_ns, model.stop_ns
    view = counters_view(build_counter_index(model), t0, t1, 1600)
    width_ns = (t1 - t0) / view["buckets"]
    lanes = by_label(view)
    for device in analyze(model).idle.devices:
        util = lanes[f"GPU {device.device} utilization"]["mean"]
        assert sum(util) * width_ns == pytest.approx(device.busy_ns, rel=1e-3)  # values rounded to 1e-5 of the lane's max
    bw = memory_bandwidth(model)
    for k, name in enumerate(bw.names):
        moved = sum(lanes[f"{name} GB/s"]["mean"]) * width_ns  # GB/s x ns = bytes
        assert moved == pytest.approx(bw.bytes[k], rel=3e-3)  # small copies beside big ones: rounded
    json.dumps(view, allow_nan=False)


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000, 5000])
def test_range_max_matches_a_plain_max_over_every_range(n):
    rng = np.random.default_rng(n)
    values = rng.random(n) * 100
    index = counter_index([("queue_length", "a", 0, 7, np.arange(n) * 10, values)], base_ns=0)
    lo = rng.integers(0, n + 1, 400)
    hi = np.minimum(lo + rng.integers(0, 300, 400), n)
    expected = [values[a:b].max() if b > a else -np.inf for a, b in zip(lo.tolist(), hi.tolist())]
    assert range_max(index, lo, hi).tolist() == expected


def test_a_lanes_answer_without_counters_when_asked():
    model = hand_trace()
    payload = lanes_view(model, build_lane_index(model), model.start_ns, model.stop_ns, 800, counters=False)
    assert payload["counters"] is None


def test_the_counter_statistics_are_compiled():
    assert ACCELERATED, "kinetoscope.views._counters is missing: `make install` compiles it (needs gcc and Python headers)"


def random_counters(rng, n_counters):
    """Step functions with repeated times (changes at one instant), runs of equal values, empty counters, and
    lengths around the range-maximum table's block sizes."""
    parts = []
    for k in range(n_counters):
        n = int(rng.choice([0, 1, 2, 15, 16, 17, 33, 200, 3000]))
        t = np.sort(rng.integers(0, 5000, n))
        v = rng.choice([0.0, 1.0, 2.5, 7.0], n) if k % 2 else rng.random(n) * 10.0 ** rng.integers(-3, 4)
        parts.append(("queue_length", str(k), 0, k, t, v))
    return counter_index(parts, base_ns=int(rng.integers(-100, 1)))  # the model's start: at or before every change


@pytest.mark.skipif(not ACCELERATED, reason="kinetoscope.views._counters is not built")
@pytest.mark.parametrize("seed", range(40))
def test_compiled_statistics_equal_numpys_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    index = random_counters(rng, int(rng.integers(1, 8)))
    for _ in range(25):
        buckets = int(rng.choice([1, 2, 3, 16, 100, 500]))
        t0 = int(rng.integers(-6000, 6000))
        span = int(rng.choice([1, 7, 100, 5000, 20_000]))  # fewer ns than buckets: zero-width buckets
        edges = t0 + (np.arange(buckets + 1, dtype=np.int64) * span) // buckets
        if rng.random() < 0.3 and index.key.size:  # edges on change times exactly (key = counter x stride + time)
            edges = np.sort(rng.choice(index.key % index.stride, buckets + 1)).astype(np.int64)
        mean, peak = bucket_stats(index, edges)
        ref_mean, ref_peak = bucket_stats_np(index, edges)
        assert mean.tobytes() == ref_mean.tobytes() and peak.tobytes() == ref_peak.tobytes()


@requires_shared
@pytest.mark.skipif(not ACCELERATED, reason="kinetoscope.views._counters is not built")
@pytest.mark.parametrize("path", ["resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
                                  "hta/trace_diff/test/test.json.gz"])
def test_compiled_statistics_equal_numpys_on_real_counters(path):
    model = load_trace(str(SHARED_TRACES / path))
    index = build_counter_index(model)
    rng = np.random.default_rng(7)
    duration = model.stop_ns - model.start_ns
    for _ in range(60):
        width = max(1, int(duration * 10 ** rng.uniform(-5, 0)))
        t0 = int(rng.integers(0, duration))
        buckets = int(rng.integers(1, 501))
        edges = t0 + (np.arange(buckets + 1, dtype=np.int64) * width) // buckets
        assert all(a.tobytes() == b.tobytes() for a, b in zip(bucket_stats(index, edges), bucket_stats_np(index, edges)))


@pytest.mark.skipif(not ACCELERATED, reason="kinetoscope.views._counters is not built")
def test_the_compiled_pass_refuses_inconsistent_arrays():
    index = counter_index([("queue_length", "a", 0, 7, np.arange(40) * 10, np.arange(40) % 7 * 1.5)], base_ns=0)
    edges = np.array([0, 15, 400], np.int64)
    out = np.empty((1, 2))
    accel = counter_lanes._accel
    args = [index.key, index.value, index.integral_ns, index.ptr, index.sparse, index.sparse_ptr, edges, index.stride,
            out, np.empty((1, 2))]
    for position, bad in [(3, np.array([0, 41], np.int64)), (1, index.value[:2].copy()), (6, np.array([40, 0, 15], np.int64)),
                          (8, np.empty((1, 3))), (0, index.key.astype(np.int32)), (4, index.sparse[:-1].copy()),
                          (5, np.array([0, 2, 3], np.int64)), (5, np.array([0], np.int64))]:
        with pytest.raises(ValueError):
            accel.bucket_stats(*args[:position], bad, *args[position + 1:])
    accel.bucket_stats(*args)
    assert out.tolist() == bucket_stats_np(index, edges)[0].tolist()
