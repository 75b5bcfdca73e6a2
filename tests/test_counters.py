"""analysis/device/counters.py: HTA's queue length and memcpy bandwidth, on hand-built traces and against HTA's algorithm
re-done in plain Python on the raw JSON of the shared traces (and HTA's own expectations where its test trace is
present)."""
from __future__ import annotations

import gzip
import json
import statistics
from collections import defaultdict
from decimal import Decimal

import numpy as np
import pytest
from conftest import SHARED_TRACES, kernel, launch, op, requires_shared, trace_doc
from kinetoscope.analysis.device.counters import (
    QUEUE_LAUNCH_NAMES,
    counters_summary,
    describe,
    memory_bandwidth,
    memory_bandwidth_summary,
    memory_type,
    queue_length,
    queue_length_summary,
    time_weighted_mean,
)
from kinetoscope.trace.loader import decode_bytes, load_trace


def model_of(events):
    return decode_bytes(json.dumps(trace_doc(events)).encode())


def memcpy(name, ts, dur, corr, nbytes=None, stream=7, device=0, cat="gpu_memcpy"):
    event = kernel(name, ts, dur, corr, stream=stream, device=device, cat=cat)
    if nbytes is not None:
        event["args"]["bytes"] = nbytes
    return event


def queue_rows(q, k):
    rows = q.series.rows(k)
    return q.series.t_ns[rows].tolist(), q.series.value[rows].tolist()


def test_three_launches_then_three_kernels_queue_up_to_three():
    events = [op("step", 0, 100)]
    events += [launch(10 * i, 2, corr=i + 1) for i in range(3)]
    events += [kernel(f"k{i}", 30 + 10 * i, 5, corr=i + 1) for i in range(3)]
    q = queue_length(model_of(events))
    assert len(q.series) == 1 and q.stream.tolist() == [7] and q.device.tolist() == [0]
    t, v = queue_rows(q, 0)
    assert v == [1, 2, 3, 2, 1, 0]
    assert [x - t[0] for x in t] == [0, 10_000, 20_000, 30_000, 40_000, 50_000]
    s = queue_length_summary(q, 100_000)[0]
    assert s["hta"] == {"count": 6, "mean": 1.5, "std": pytest.approx(statistics.stdev(v), abs=1e-6), "min": 0.0,
                        "25%": 1.0, "50%": 1.5, "75%": 2.0, "max": 3.0}
    assert s["time_weighted_mean"] == pytest.approx((1 + 2 + 3 + 2 + 1) * 10 / 50)
    assert s["full_queue_us"] == 0.0  # far below CUDA's 1024
    at_two = queue_length_summary(q, 100_000, full=2)[0]
    assert at_two["full_queue_us"] == 30.0 and at_two["full_queue_share"] == 0.3  # 2, 3, 2: [10, 40) µs


@pytest.mark.parametrize("case, extra", [
    ("launch before the window (its kernel's correlation has no call)", [kernel("early", 5, 1, corr=99)]),
    ("activity without a correlation", [kernel("orphan", 6, 1, corr=None)]),
    ("launch call without an activity", [launch(4, 1, corr=50)]),
    ("a launch HTA does not count (graph launch)", [launch(3, 1, corr=60, name="cudaGraphLaunch"), kernel("g", 8, 1, 60)]),
    ("a synchronous cudaMemcpy", [launch(3, 1, corr=61, name="cudaMemcpy"), memcpy("Memcpy HtoD (Pinned -> Device)", 8, 1, 61)]),
])
def test_unpaired_or_uncounted_operations_are_left_out_on_both_sides(case, extra):
    base = [op("step", 0, 100), launch(1, 1, corr=1), kernel("k", 20, 5, corr=1)]
    t, v = queue_rows(queue_length(model_of(base + extra)), 0)
    assert v == [1, 0], case


def test_every_launch_name_hta_counts_is_counted():
    events = [op("step", 0, 1000)]
    for i, name in enumerate(sorted(QUEUE_LAUNCH_NAMES)):
        events += [launch(10 * i, 1, corr=i + 1, name=name), kernel(f"k{i}", 500 + 10 * i, 1, corr=i + 1)]
    t, v = queue_rows(queue_length(model_of(events)), 0)
    assert max(v) == len(QUEUE_LAUNCH_NAMES) and v[-1] == 0


def test_several_streams_and_devices_get_one_series_each():
    events = [op("step", 0, 100), launch(1, 1, corr=1), launch(2, 1, corr=2), launch(3, 1, corr=3),
              kernel("a", 10, 5, corr=1, stream=7), kernel("b", 11, 5, corr=2, stream=13),
              kernel("c", 12, 5, corr=3, stream=7, device=1)]
    q = queue_length(model_of(events))
    assert sorted(zip(q.device.tolist(), q.stream.tolist())) == [(0, 7), (0, 13), (1, 7)]
    for k in range(len(q.series)):
        assert queue_rows(q, k)[1] == [1, 0]


def test_a_launch_and_its_kernel_at_the_same_instant_never_count_below_zero():
    events = [op("step", 0, 100), launch(10, 0, corr=1), kernel("k", 10, 5, corr=1)]
    assert queue_rows(queue_length(model_of(events)), 0)[1] == [1, 0]


def test_no_gpu_work_gives_no_series():
    q, bw = queue_length(model_of([op("a", 0, 10)])), memory_bandwidth(model_of([op("a", 0, 10)]))
    assert len(q.series) == 0 and len(bw.series) == 0
    assert counters_summary(model_of([op("a", 0, 10)])) == {"queue_length": [], "queue_streams": 0,
                                                           "memory_bandwidth": [], "memory_types": 0}


@pytest.mark.parametrize("name, expected", [
    ("Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD"), ("Memcpy DtoH (Device -> Pinned)", "Memcpy DtoH"),
    ("Memcpy DtoD (Device -> Device)", "Memcpy DtoD"), ("Memcpy PtoP (Device -> Device)", "Memcpy PtoP"),
    ("Memset (Device)", "Memset"), ("dma_copy", "Memcpy Unknown"), ("Memcpy", "Memcpy")])
def test_memory_type_is_htas_name_prefix(name, expected):
    assert memory_type(name) == expected


@pytest.mark.parametrize("name, cat, counted", [
    ("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", True), ("Memset (Device)", "gpu_memset", True),
    ("dma_request", "mtia_ccp_events", True),  # MTIA's copies: HTA's "Memcpy Unknown"
    ("hipMemcpyKernel", "kernel", False),  # HTA tests communication first, and `^hip` is communication
    ("sgemm", "kernel", False), ("my_memcpy", "gpu_memcpy", False)])
def test_the_operations_are_htas_memory_kernels_by_name(name, cat, counted):
    bw = memory_bandwidth(model_of([op("s", 0, 10), memcpy(name, 1, 1, None, nbytes=10, cat=cat)]))
    assert (int(bw.count.sum()) == 1) == counted


def test_bandwidth_is_bytes_over_duration_summed_while_copies_overlap():
    events = [op("step", 0, 100),
              memcpy("Memcpy HtoD (Pageable -> Device)", 10, 2, None, nbytes=4000),  # 2 GB/s over [10, 12)
              memcpy("Memcpy HtoD (Pinned -> Device)", 11, 4, None, nbytes=4000),  # 1 GB/s over [11, 15)
              memcpy("Memcpy DtoH (Device -> Pinned)", 20, 1, None, nbytes=500),  # 0.5 GB/s
              memcpy("Memset (Device)", 30, 1, None, nbytes=None, cat="gpu_memset"),  # no bytes arg: 0 GB/s
              memcpy("Memcpy DtoD (Device -> Device)", 40, 0, None, nbytes=64)]  # 0 ns: no time, 0 GB/s, 1 µs long
    bw = memory_bandwidth(model_of(events))
    assert bw.names == ("Memcpy DtoD", "Memcpy DtoH", "Memcpy HtoD", "Memset")
    h2d = bw.series.value[bw.series.rows(2)]
    assert h2d.tolist() == pytest.approx([2.0, 3.0, 1.0, 0.0])
    by_type = {s["type"]: s for s in memory_bandwidth_summary(bw)}
    assert by_type["Memcpy HtoD"]["hta"]["count"] == 3 and by_type["Memcpy HtoD"]["hta"]["max"] == pytest.approx(3.0)
    assert by_type["Memcpy HtoD"]["bytes"] == 8000 and by_type["Memcpy HtoD"]["time_us"] == 6.0
    assert by_type["Memcpy HtoD"]["average_gbps"] == pytest.approx(8000 / 6000, abs=1e-6)
    assert by_type["Memcpy DtoH"]["average_gbps"] == pytest.approx(0.5)
    assert by_type["Memset"]["hta"] == {"count": 0} and by_type["Memset"]["bytes"] == 0
    dtod = bw.series.t_ns[bw.series.rows(0)]
    assert dtod[1] - dtod[0] == 1_000 and by_type["Memcpy DtoD"]["average_gbps"] is None


@pytest.mark.parametrize("nbytes", [-5, "lots", 1e300, None])
def test_hostile_byte_counts_never_give_a_negative_or_infinite_bandwidth(nbytes):
    bw = memory_bandwidth(model_of([op("s", 0, 10), memcpy("Memcpy HtoD (x)", 1, 1, None, nbytes=nbytes)]))
    assert np.isfinite(bw.series.value).all() and (bw.series.value >= 0).all()
    json.dumps(memory_bandwidth_summary(bw), allow_nan=False)


def test_describe_is_pandas_describe():
    assert describe(np.array([1.0, 2.0, 3.0, 4.0])) == {"count": 4, "mean": 2.5, "std": pytest.approx(1.2909944),
                                                        "min": 1.0, "25%": 1.75, "50%": 2.5, "75%": 3.25, "max": 4.0}
    assert describe(np.array([5.0]))["std"] is None
    assert time_weighted_mean(np.array([0, 10, 40]), np.array([3.0, 1.0, 0.0])) == pytest.approx((30 + 30) / 40)


# --- HTA's algorithm in plain Python on the raw JSON: an independent reference for the shared traces ---

def _raw_events(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=Decimal)  # exact µs: a float64 keeps 0.25 µs at epoch-µs magnitudes
        return [e for e in doc.get("traceEvents", []) if isinstance(e, dict) and e.get("ph") == "X"]


def _hta_reference(events):
    """HTA's TraceCounters, re-done with dicts and sorted lists: queue rows per stream, bandwidth rows per type."""
    gpu = [e for e in events if str(e.get("cat", "")).lower() in ("kernel", "gpu_memcpy", "gpu_memset", "memcpy",
                                                                    "memset", "mtia_ccp_events")]
    calls = {e["args"]["correlation"]: e for e in events if e.get("name") in QUEUE_LAUNCH_NAMES
             and isinstance(e.get("args", {}).get("correlation"), int)}
    per_stream = defaultdict(list)
    for e in gpu:
        call = calls.get(e.get("args", {}).get("correlation"))
        if call is not None:
            per_stream[e["args"]["stream"]] += [(call["ts"], 0, 1), (e["ts"], 1, -1)]
    queues = {}
    for stream, rows in per_stream.items():
        total, values = 0, []
        for _, _, d in sorted(rows):
            total += d
            values.append(total)
        queues[stream] = values
    per_type = defaultdict(list)
    for e in gpu:
        if not str(e.get("name", "")).startswith(("Memcpy", "Memset", "dma")):  # HTA's memory kernels
            continue
        nbytes, dur_ns = e["args"].get("bytes"), e["dur"] * 1000
        gbps = float(nbytes / dur_ns) if isinstance(nbytes, int) and nbytes > 0 and dur_ns > 0 else 0.0
        end = e["ts"] + (e["dur"] if e["dur"] > 0 else 1)
        per_type[memory_type(e["name"])] += [(e["ts"], 0, gbps), (end, 1, -gbps)]
    bandwidths = {}
    for name, rows in per_type.items():
        total, values = 0.0, []
        for _, _, d in sorted(rows):
            total += d
            values.append(total)
        bandwidths[name] = [v for v in values if v > 1e-9]
    return queues, bandwidths


GPU_TRACES = ["hta/ns_resolution_trace", "hta/critical_path/alexnet", "hta/amd_trace", "hta/trace_diff/test",
              "resnet50_num_workers_0"]


@requires_shared
@pytest.mark.parametrize("folder", GPU_TRACES)
def test_queue_length_and_bandwidth_match_htas_algorithm_on_shared_traces(folder):
    path = sorted(p for p in (SHARED_TRACES / folder).iterdir() if p.name.endswith((".json", ".json.gz")))[0]
    queues, bandwidths = _hta_reference(_raw_events(path))
    model = load_trace(str(path))
    q = queue_length(model)
    ours = {s["stream"]: s["hta"] for s in queue_length_summary(q, model.stop_ns - model.start_ns)}
    assert set(ours) == set(queues) and queues
    for stream, values in queues.items():
        assert ours[stream]["count"] == len(values)
        assert ours[stream]["mean"] == pytest.approx(statistics.fmean(values), abs=1e-6)
        assert ours[stream]["max"] == max(values) and ours[stream]["min"] == min(values)
        assert ours[stream]["50%"] == pytest.approx(statistics.median(values))
    mine = {s["type"]: s["hta"] for s in memory_bandwidth_summary(memory_bandwidth(model))}
    assert set(mine) >= {t for t, v in bandwidths.items() if v}
    for name, values in bandwidths.items():
        assert mine[name]["count"] == len(values)
        if not values:
            continue  # copies without byte counts (ROCm writes none): HTA's summary drops 0 GB/s rows
        assert mine[name]["mean"] == pytest.approx(statistics.fmean(values), rel=1e-6)
        assert mine[name]["max"] == pytest.approx(max(values), rel=1e-6)


@requires_shared
@pytest.mark.parametrize("folder", GPU_TRACES)
def test_kinetos_bandwidth_arg_lies_within_the_recorded_durations_rounding(folder):
    """HTA reads Kineto's `memory bandwidth (GB/s)` (bytes over the copy's unrounded ns); Kinetoscope divides the
    bytes by the duration the trace records. Where the writer printed whole µs (2021-2022 files) the true duration
    is within [recorded, recorded + 1 µs), so Kineto's figure lies between bytes/(dur + 1 µs) and bytes/dur."""
    path = sorted(p for p in (SHARED_TRACES / folder).iterdir() if p.name.endswith((".json", ".json.gz")))[0]
    copies = [e for e in _raw_events(path) if "memory bandwidth (GB/s)" in e.get("args", {})
              and isinstance(e["args"].get("bytes"), int) and e["dur"] > 0]
    for e in copies:
        kineto, nbytes, dur_ns = float(e["args"]["memory bandwidth (GB/s)"]), e["args"]["bytes"], float(e["dur"]) * 1e3
        assert nbytes / (dur_ns + 1e3) * (1 - 1e-6) <= kineto <= nbytes / dur_ns * (1 + 1e-3) + 1e-9, e


HTA_MTIA = SHARED_TRACES / "hta" / "mtia_trace_single_rank" / "mtia_rank_0.json.gz"


@pytest.mark.skipif(not HTA_MTIA.is_file(), reason="HTA's tests/data/mtia_trace_single_rank is not under shared/traces/hta")
def test_htas_own_expectation_on_its_mtia_trace():
    """HTA tests/test_trace_analysis.py::test_get_mtia_queue_length_stats."""
    model = load_trace(str(HTA_MTIA))
    rows = {s["stream"]: s for s in queue_length_summary(queue_length(model), model.stop_ns - model.start_ns, full=1)}
    assert sorted(rows) == [1, 102]
    expected = {"count": 6.0, "mean": 0.5, "std": 0.547723, "min": 0.0, "25%": 0.0, "50%": 0.5, "75%": 1.0, "max": 1.0}
    for key, value in expected.items():
        assert rows[102]["hta"][key] == pytest.approx(value, abs=5e-3), key
    # get_time_spent_blocked_on_full_queue(max_queue_length=1): 1060 µs, 0.000079 of the trace (HTA's
    # timestamps are whole µs: 1059.557 µs here)
    assert rows[102]["full_queue_us"] == pytest.approx(1060.0, abs=1.0)
    assert rows[102]["full_queue_share"] == pytest.approx(0.000079, abs=5e-6)


HTA_NEGATIVE = SHARED_TRACES / "hta" / "negative_queue_length_values_check" / "rank0.json.gz"


@pytest.mark.skipif(not HTA_NEGATIVE.is_file(),
                    reason="HTA's tests/data/negative_queue_length_values_check is not under shared/traces/hta")
def test_htas_own_expectation_on_its_trace_with_unattributed_kernels():
    """HTA tests/test_trace_analysis.py::test_generate_trace_with_counters: 6 streams, 4 memory types, no
    negative queue length or bandwidth."""
    model = load_trace(str(HTA_NEGATIVE))
    q, bw = queue_length(model), memory_bandwidth(model)
    assert len(q.series) == 6 and (q.series.value >= 0).all()
    assert len(memory_bandwidth_summary(bw)) == 4 and (bw.series.value >= -1e-9).all()
