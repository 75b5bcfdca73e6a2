"""trace.columns / trace.lanes / trace.model: exact values on tiny named traces, invariants on every real trace."""
from __future__ import annotations

import gzip
import json
import re
from collections import Counter

import numpy as np
import pytest
from conftest import SHARED_TRACES, kernel, launch, memory, op, requires_shared, shared_trace_files, trace_doc, write_trace
from kinetoscope.trace import intervals
from kinetoscope.trace.kinds import Kind, LaneKind, kind_of_category
from kinetoscope.trace.loader import load_trace
from kinetoscope.trace.model import PIECE_FIELDS, array_fields, stable_order, union, unique, unique_first, unique_inverse
from kinetoscope.trace.source import event_args


def _load(tmp_path, doc, name="t.pt.trace.json"):
    return load_trace(str(write_trace(tmp_path / name, doc)), cache_dir=None)


def test_relative_timestamps_add_base_time_with_ns_precision(tmp_path):
    base = 1790857026000000000
    text = (f'{{"baseTimeNanoseconds": {base}, "traceEvents": [{{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, '
            '"tid": 1, "ts": 4405551510882.250, "dur": 0.001}]}')
    model = _load(tmp_path, text)
    assert model.ts_ns[0] == base + 4405551510882250 and model.dur_ns[0] == 1


def test_integer_epoch_microseconds_are_exact(tmp_path):
    model = _load(tmp_path, trace_doc([op("a", 1623142623460111, 7)]))
    assert model.ts_ns[0] == 1623142623460111000 and model.dur_ns[0] == 7000


@pytest.mark.parametrize("padded", [True, False], ids=["padded-2024-04", "unpadded-2024-03"])
def test_sixteen_digit_fractional_times_are_ns_exact(tmp_path, monkeypatch, padded):
    # 2024-03/04 nightlies: absolute µs with `{us}.{ns}`; a double would round these to 0.25 µs. Before
    # 2024-04-03 the ns were not zero-padded: `.5` is 5 ns there. The parent ends 1 ns after the child.
    frac = (lambda ns: f"{ns:03d}") if padded else str
    text = ('{"displayTimeUnit": "ns", "traceEvents": [\n'
            f'{{"ph": "X", "cat": "cpu_op", "name": "parent", "pid": 1, "tid": 1, "ts": 1712195495519689.{frac(5)}, "dur": 10.{frac(47)}}},\n'
            f'{{"ph": "X", "cat": "cpu_op", "name": "child", "pid": 1, "tid": 1, "ts": 1712195495519690.{frac(51)}, "dur": 9.0}},\n'
            '{"ph": "X", "cat": "cpu_op", "name": "int", "pid": 1, "tid": 1, "ts": 1712195495519700, "dur": 1}]}')
    from kinetoscope.trace import loader
    monkeypatch.setattr(loader, "CHUNK_BYTES", 64)  # the chunked reader hands such files to the exact whole decode
    model = _load(tmp_path, text)
    by_name = {model.names[n]: i for i, n in enumerate(model.name_id)}
    parent, child, whole = by_name["parent"], by_name["child"], by_name["int"]
    assert model.ts_ns[parent] == 1712195495519689005 and model.dur_ns[parent] == 10047
    assert model.ts_ns[child] == 1712195495519690051 and model.dur_ns[child] == 9000
    assert model.ts_ns[whole] == 1712195495519700000
    assert model.ts_ns[child] + model.dur_ns[child] == model.ts_ns[parent] + model.dur_ns[parent] - 1
    assert model.depth[child] == 1


@requires_shared
def test_sixteen_digit_real_trace_has_no_fake_overlaps():
    from kinetoscope.analysis.core.selectors import parent_rows
    model = load_trace(str(SHARED_TRACES / "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"), cache_dir=None)
    parent = parent_rows(model)
    child = np.flatnonzero(parent >= 0)
    end = model.ts_ns + model.dur_ns
    assert child.size > 10_000 and np.count_nonzero(end[child] > end[parent[child]]) == 0  # 536 with float parsing
    assert np.count_nonzero(model.ts_ns % 250) > 0  # finer than the 0.25 µs a double holds


@pytest.mark.parametrize("cat, kind", [
    ("Operator", Kind.CPU_OP), ("cpu_op", Kind.CPU_OP), ("user_annotation", Kind.USER_ANNOTATION),
    ("Runtime", Kind.RUNTIME), ("cuda_runtime", Kind.RUNTIME), ("cuda_driver", Kind.DRIVER), ("Kernel", Kind.KERNEL),
    ("kernel", Kind.KERNEL), ("Memcpy", Kind.MEMCPY), ("gpu_memcpy", Kind.MEMCPY), ("Memset", Kind.MEMSET),
    ("gpu_memset", Kind.MEMSET), ("gpu_user_Annotation", Kind.GPU_USER_ANNOTATION), ("python_function", Kind.PYTHON_FUNCTION),
    ("Trace", Kind.TRACE_SPAN), ("cuda_sync", Kind.CUDA_SYNC), ("something_new", Kind.OTHER)])
def test_category_names_of_every_era_normalize(cat, kind):
    assert kind_of_category(cat) == kind


def test_2021_string_tids_and_stream_names_share_lanes(tmp_path):
    events = [op("aten::mm", 0, 10, tid="25738", cat="Operator"),
              {"ph": "s", "cat": "async", "name": "launch", "id": 1, "pid": 100, "tid": 25738, "ts": 2},
              op("cudaLaunchKernel", 2, 3, tid="25738", cat="Runtime", correlation=1),
              {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 20, "dur": 5,
               "args": {"correlation": 1, "external id": 9}},
              {"ph": "f", "cat": "async", "name": "launch", "id": 1, "pid": 0, "tid": "stream 7", "ts": 20, "bp": "e"}]
    model = _load(tmp_path, trace_doc(events))
    assert len(model.lane_label) == 2
    gpu_lane = model.lanes_of(LaneKind.GPU)[0]
    assert model.lane_pid[gpu_lane] == 0 and model.lane_tid[gpu_lane] == 7
    cpu_lane = model.lanes_of(LaneKind.CPU)[0]
    assert model.lane_tid[cpu_lane] == 25738
    assert set(model.flow_lane.tolist()) == {cpu_lane, gpu_lane}
    k = int(np.flatnonzero(model.kind == Kind.KERNEL)[0])
    assert model.external_id[k] == 9 and model.names[model.name_id[model.launch_idx[k]]] == "cudaLaunchKernel"


def test_gpu_lane_prefers_args_device_and_stream_over_pid_tid(tmp_path):
    event = kernel("k", 1, 1, corr=None, stream=20, device=3) | {"pid": 0, "tid": 1}
    model = _load(tmp_path, trace_doc([event]))
    assert (model.lane_pid[0], model.lane_tid[0], model.lane_kind[0]) == (3, 20, LaneKind.GPU)


def test_cuda_graph_launch_owns_every_kernel_with_its_correlation(tmp_path):
    events = [launch(0, 5, corr=42, name="cudaGraphLaunch")] + [kernel(f"k{i}", 10 + i * 2, 1, corr=42) for i in range(3)]
    events.append(kernel("orphan", 30, 1, corr=99))
    model = _load(tmp_path, trace_doc(events))
    linked = model.launch_idx[model.kind == Kind.KERNEL]
    assert (linked >= 0).sum() == 3 and len(set(linked[linked >= 0].tolist())) == 1


def test_nesting_depth_counts_open_parents_including_same_start(tmp_path):
    events = [op("child", 0, 4), op("parent", 0, 10), op("grandchild", 1, 2), op("sibling", 5, 5), op("zero", 10, 0)]
    model = _load(tmp_path, trace_doc(events))
    depth = {model.names[n]: int(d) for n, d in zip(model.name_id, model.depth)}
    assert depth == {"parent": 0, "child": 1, "grandchild": 2, "sibling": 1, "zero": 0}


def test_memory_events_instant_or_complete_and_missing_totals(tmp_path):
    x_memory = memory(3, 50, total=150) | {"ph": "X", "dur": 123456}  # torch 2.13 python exporter quirk
    model = _load(tmp_path, trace_doc([memory(1, 100, total=100, reserved=2048), x_memory, memory(2, -10, device_type=0, device_id=-1)]))
    assert model.n_events == 0 and model.mem_ts_ns.tolist() == [1000, 2000, 3000]
    assert model.mem_total_allocated.tolist() == [100, -1, 150] and model.mem_total_reserved.tolist() == [2048, -1, -1]
    assert model.mem_device_type.tolist() == [1, 0, 1]


def test_thread_names_from_metadata(tmp_path):
    meta = {"ph": "M", "name": "thread_name", "pid": 100, "tid": 1, "args": {"name": "thread 1 (python) "}}
    model = _load(tmp_path, trace_doc([meta, op("a", 0, 1)]))
    assert model.lane_label == ("thread 1 (python)",)


def test_arrays_are_read_only(tmp_path):
    model = _load(tmp_path, trace_doc([op("a", 0, 1)]))
    with pytest.raises(ValueError):
        model.ts_ns[0] = 5


def _plain_counts(path):
    raw = gzip.open(path).read() if str(path).endswith(".gz") else open(path, "rb").read()
    counts = Counter()
    for e in json.loads(raw)["traceEvents"]:
        if e.get("ph") == "X" and e.get("name") != "[memory]":
            counts[kind_of_category(e.get("cat", "")).name.lower()] += 1
    return {k: v for k, v in counts.items()}


@pytest.mark.parametrize("path", shared_trace_files(), ids=lambda p: p.name[:40])
def test_real_traces_decode_with_invariants(path):
    model = load_trace(str(path), cache_dir=None)
    assert model.n_events > 0 and not model.skipped
    assert model.count_by_kind() == _plain_counts(path)
    # rows sorted by (lane, ts) and lane_ptr partitions them
    assert np.all(np.diff(model.lane) >= 0)
    for k in range(len(model.lane_label)):
        lo, hi = model.lane_ptr[k], model.lane_ptr[k + 1]
        assert np.all(model.lane[lo:hi] == k) and np.all(np.diff(model.ts_ns[lo:hi]) >= 0)
    from kinetoscope.trace.intervals import _nesting_depth_py  # the compiled depths (where built) equal the array version's
    assert np.array_equal(model.depth, _nesting_depth_py(model.ts_ns, model.dur_ns, model.lane_ptr))
    # every GPU activity whose correlation has a launch call is linked to it
    launch_corr = set(model.correlation[np.isin(model.kind, [Kind.RUNTIME, Kind.DRIVER])].tolist())
    acts = np.flatnonzero(model.activity_mask())
    should = np.isin(model.correlation[acts], list(launch_corr)) & (model.correlation[acts] >= 0)
    assert np.array_equal(model.launch_idx[acts] >= 0, should)
    linked = acts[model.launch_idx[acts] >= 0]
    assert np.array_equal(model.correlation[model.launch_idx[linked]], model.correlation[linked])


@pytest.mark.parametrize("path", [p for p in shared_trace_files() if p.stat().st_size > 20_000][:6], ids=lambda p: p.name[:40])
def test_chunked_decode_equals_whole_decode(path, monkeypatch):
    from kinetoscope.trace import loader
    from kinetoscope.trace.storage import read_bytes
    whole = loader._build_whole(read_bytes(str(path)), str(path))
    monkeypatch.setattr(loader, "CHUNK_BYTES", 64 * 1024)  # many middle chunks
    chunked = loader.load_trace(str(path), cache_dir=None)
    _assert_same_content(whole, chunked)
    assert (whole.names, whole.cats, whole.lane_label, whole.meta) == (chunked.names, chunked.cats, chunked.lane_label, chunked.meta)


def test_events_after_other_keys_and_keys_after_events(tmp_path):
    text = ('{"schemaVersion": 1,\n "traceEvents": [\n  {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},\n'
            '  {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 1}\n ],\n'
            ' "baseTimeNanoseconds": 1000000, "traceName": "x"}')
    model = _load(tmp_path, text)
    assert model.ts_ns.tolist() == [1_001_000, 1_002_000] and model.meta["base_time_ns"] == 1_000_000


@pytest.mark.parametrize("case", ["compact-one-line", "boundary-lookalike-in-name", "pretty-nested-args",
                                  "many-lookalikes-in-one-name"])
def test_chunk_cuts_never_change_the_result(tmp_path, monkeypatch, case):
    from kinetoscope.trace import loader
    events = [kernel(f"k{i}", i * 10, 5, corr=i) for i in range(300)] + [launch(i * 10, 2, corr=i) for i in range(300)]
    if case == "boundary-lookalike-in-name":
        events[150]["name"] = 'evil"}, {"ph": "X", "name": "fake'
        events[151]["name"] = "evil}, {"
    if case == "pretty-nested-args":
        events[42]["args"]["nested"] = [{"a": 1}, {"b": 2}]
    if case == "many-lookalikes-in-one-name":  # more look-alikes than cuts tried: that file is decoded whole
        for i in range(0, 600, 7):
            events[i]["name"] = "x}, {" * 40
    text = json.dumps(trace_doc(events), separators=(",", ":")) if case == "compact-one-line" else json.dumps(trace_doc(events), indent=1)
    path = write_trace(tmp_path / "c.pt.trace.json", text)
    whole = loader._build_whole(text.encode(), str(path))
    monkeypatch.setattr(loader, "CHUNK_BYTES", 2048)
    monkeypatch.setattr(loader, "MIN_CHUNK_BYTES", 2048)
    chunked = loader.load_trace(str(path), cache_dir=None)
    assert chunked.n_events == 600 and (chunked.piece_kind.size > 10 or case == "many-lookalikes-in-one-name")
    _assert_same_content(whole, chunked)
    in_file = json.loads(text)["traceEvents"]
    for row in range(chunked.n_events):  # every event's args re-read from its piece, as the file holds them
        args = event_args(str(path), chunked, row)
        assert args == event_args(str(path), whole, row) == in_file[chunked.source_row[row]]["args"]


def _assert_same_content(a, b):
    """Equal models but for how the text was cut into pieces."""
    for name in array_fields():
        if name not in PIECE_FIELDS:
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.names, a.cats, a.lane_label, a.meta) == (b.names, b.cats, b.lane_label, b.meta)


@requires_shared
@pytest.mark.parametrize("path", sorted((SHARED_TRACES / "resnet50_num_workers_0").glob("*.json.gz")), ids=lambda p: p.name[:40])
def test_2021_traces_carry_no_event_index(path):
    assert "event_index" not in load_trace(str(path), cache_dir=None).meta


def test_event_index_is_kept_by_the_cache(tmp_path, monkeypatch):
    from kinetoscope.trace import loader
    events = [op("a", 0, 1, **{"Ev Idx": 1000}), op("b", 2, 1, **{"Profiler Event Index": 10}), op("c", 4, 1)]
    path = str(write_trace(tmp_path / "t.pt.trace.json", trace_doc(events)))
    fresh = load_trace(path, cache_dir=tmp_path / "cache")
    monkeypatch.setattr(loader, "_load_uncached", lambda *a: (_ for _ in ()).throw(AssertionError("decoded")))
    cached = load_trace(path, cache_dir=tmp_path / "cache")
    assert cached.meta["event_index"] == fresh.meta["event_index"] == {"count": 2, "min": 10, "max": 1000,
                                                                           "spaces": [[10, 10, 1], [1000, 1000, 1]]}


@pytest.mark.parametrize("case", ["nan-and-bare-na", "ill-typed-fields", "invalid-utf8", "exact-16-digit-times",
                                  "exact-and-nan"])
def test_pieces_with_trouble_are_decoded_on_their_own_like_the_whole_file(tmp_path, monkeypatch, case):
    """A file that breaks the typed schema somewhere (or needs exact times) is still decoded piece by piece,
    so its memory stays one piece's worth, and the model is the one the whole-file decode gives."""
    from kinetoscope.trace import loader
    events = [kernel(f"k{i % 7}", i * 10, 5, corr=i) for i in range(300)] + [launch(i * 10, 2, corr=i) for i in range(300)]
    text = json.dumps(trace_doc(events), separators=(",", ":"))
    if case.startswith("exact"):
        text = re.sub(r'"ts":(\d+)', lambda m: f'"ts":1712345678{int(m.group(1)):06d}.{int(m.group(1)) % 1000}', text)
    if case in ("nan-and-bare-na", "exact-and-nan"):
        text = text.replace('"dur":5,', '"dur":NaN,', 3).replace('"correlation":77}', '"correlation":N/A}')
    if case == "ill-typed-fields":
        text = text.replace('"ts":1000,', '"ts":"soon",').replace('"stream":7', '"stream":[7]', 5)
    raw = text.encode()
    if case == "invalid-utf8":
        raw = raw.replace(b'"k3"', b'"k\xff3"')
    path = write_trace(tmp_path / "c.pt.trace.json", raw)
    whole = loader._build_whole(raw, str(path))
    monkeypatch.setattr(loader, "CHUNK_BYTES", 2048)
    monkeypatch.setattr(loader, "MIN_CHUNK_BYTES", 2048)
    chunked = loader.load_trace(str(path), cache_dir=None)
    assert chunked.piece_kind.size > 10
    assert chunked.skipped == whole.skipped
    if case != "exact-and-nan":  # a lenient piece of an exact file keeps µs doubles: equal to the ns, not beyond
        _assert_same_content(whole, chunked)
    else:
        assert np.allclose(whole.ts_ns, chunked.ts_ns, atol=1_000) and whole.n_events == chunked.n_events
    for row in range(0, chunked.n_events, 37):  # args are re-read from the right event of a lenient piece too
        assert event_args(str(path), chunked, row) == event_args(str(path), whole, row)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, bool])
def test_unique_and_union_are_numpys(dtype):
    """One sort instead of numpy 2.3+'s hash-based `np.unique` (4-15x slower on id and row columns): same values,
    dtype and order, on flat and 2-d input, empty or not."""
    rng = np.random.default_rng(7)
    for shape in [(0,), (1,), (2,), (1000,), (40, 25)]:
        values = rng.integers(-50 if np.dtype(dtype).kind == "i" else 0, 100, shape).astype(dtype)
        got, want = unique(values), np.unique(values)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        other = rng.integers(0, 200, 77).astype(dtype)
        assert np.array_equal(union(values, other), np.union1d(values, other))
    floats = np.array([np.nan, 1.0, np.nan, 0.5])
    assert np.array_equal(unique(floats), np.unique(floats), equal_nan=True)  # numpy's own NaN handling


@pytest.mark.parametrize("values", [
    np.array([5, 3, 5, 0, 3, 9], np.int32), np.array([7], np.int64), np.array([], np.int64), np.array([3, 3], np.uint16),
    np.array([-1, 4, -1, 2], np.int64),  # negatives: numpy's sort
    np.array([10**12, 5, 10**12], np.int64),  # far larger than their count: numpy's sort
    np.array([2.5, 1.0, 2.5]), np.random.default_rng(1).integers(0, 50, 2000), np.random.default_rng(2).integers(0, 9000, 30)])
def test_unique_inverse_equals_numpys(values):
    distinct, inverse = unique_inverse(values)
    want, want_inverse = np.unique(values, return_inverse=True)
    assert distinct.dtype == want.dtype and np.array_equal(distinct, want)
    assert inverse.dtype == np.int64 and np.array_equal(inverse, want_inverse.reshape(-1))
    distinct, first, inverse = unique_first(values)
    want, want_first, want_inverse = np.unique(values, return_index=True, return_inverse=True)
    assert distinct.dtype == want.dtype and np.array_equal(distinct, want)
    assert first.dtype == np.int64 and np.array_equal(first, want_first)  # each value's first position
    assert np.array_equal(inverse, want_inverse.reshape(-1))


def _depth_by_definition(ts, dur, ptr):
    depth = np.zeros(ts.size, np.int64)
    for lo, hi in zip(ptr[:-1], ptr[1:]):
        for i in range(lo, hi):
            depth[i] = np.count_nonzero(ts[lo:i] + dur[lo:i] > ts[i])
    return np.minimum(depth, np.iinfo(np.int16).max)


def _random_lanes(rng, n, spread, long_share):
    lane = np.sort(rng.integers(0, 4, n))
    ts = rng.integers(0, spread, n)
    dur = np.where(rng.random(n) < long_share, rng.integers(0, spread, n), rng.integers(0, 3, n))
    order = np.lexsort((-dur, ts, lane))
    return ts[order], dur[order], np.searchsorted(lane[order], np.arange(5))


@pytest.mark.parametrize("seed", range(6))
def test_nesting_depth_compiled_and_array_versions_equal_the_definition(seed):
    rng = np.random.default_rng(seed)
    ts, dur, ptr = _random_lanes(rng, 400, [5, 50, 4000][seed % 3], [0.0, 0.3, 0.9][seed // 2 % 3])
    want = _depth_by_definition(ts, dur, ptr)
    assert np.array_equal(intervals._nesting_depth_py(ts, dur, ptr), want)
    assert np.array_equal(intervals.nesting_depth(ts, dur, ptr), want)


def test_nesting_depth_caps_and_falls_back_on_unsorted_or_negative_input():
    from kinetoscope.trace import extractors
    n = 40000
    ts, dur, ptr = np.arange(n, dtype=np.int64), np.full(n, n, np.int64), np.array([0, n])
    depth = intervals.nesting_depth(ts, dur, ptr)
    assert depth[-1] == 32767 and depth[100] == 100 and np.array_equal(depth, intervals._nesting_depth_py(ts, dur, ptr))
    unsorted = np.array([5, 1, 3], np.int64)
    assert np.array_equal(intervals.nesting_depth(unsorted, np.ones(3, np.int64), np.array([0, 3])),
                          intervals._nesting_depth_py(unsorted, np.ones(3, np.int64), np.array([0, 3])))
    if extractors.ACCELERATED:
        out = np.empty(3, np.int16)
        assert intervals._accel.nesting_depth(unsorted, np.ones(3, np.int64), np.array([0, 3], np.int64), out) is False
        assert intervals._accel.nesting_depth(np.arange(3, dtype=np.int64), np.array([1, -1, 1], np.int64),
                                          np.array([0, 3], np.int64), out) is False
        with pytest.raises(ValueError):
            intervals._accel.nesting_depth(np.arange(3, dtype=np.int64), np.ones(3, np.int64), np.array([0, 4], np.int64), out)



@pytest.mark.parametrize("values", [
    np.random.default_rng(3).integers(0, 200, 5000).astype(np.int32), np.random.default_rng(4).integers(0, 60000, 5000),
    np.random.default_rng(5).integers(0, 70000, 5000), np.random.default_rng(6).integers(-3, 9, 5000),
    np.random.default_rng(7).integers(0, 5, 5000).astype(np.int16), np.arange(100, 0, -1), np.array([], np.int64),
    np.array([3, 1, 3, 2], np.uint32), np.random.default_rng(8).random(300)])
def test_stable_order_equals_numpys_stable_argsort(values):
    assert np.array_equal(stable_order(values), np.argsort(values, kind="stable"))


@pytest.mark.parametrize("reserved", [False, True])
@pytest.mark.parametrize("narrow", [False, True])
@pytest.mark.parametrize("seed", range(20))
def test_row_columns_appended_piece_by_piece_are_the_joined_pieces(seed, reserved, narrow, monkeypatch):
    """The decode's per-event columns, kept piece by piece or copied into one reserved array per column
    (`RowStore`), are the pieces joined, whole or at some rows; each column is taken once. Narrow, the first-row
    columns are kept as int32 (their values are rows, within the event budget), the others as they come. Reserved
    for a projection of the rows that is too small or too large, the columns grow or hold more than they need."""
    from kinetoscope.trace import rowstore
    monkeypatch.setattr(rowstore, "_MIN_ROWS", 8)  # reserved: grown many times
    monkeypatch.setattr(rowstore, "RESERVED_TEXT_BYTES", 0)
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 50, int(rng.integers(0, 8))).tolist()
    pieces = [{key: rng.integers(-9, 9, n).astype(dtype) for key, dtype in rowstore.ROW_DTYPES.items()} for n in sizes]
    text = rng.integers(0, 400, len(sizes)).tolist()  # each piece's bytes of text: rows per byte vary (0 bytes too)
    for piece in pieces:  # first rows as the scan hands them over: views of its buffers, or arrays of their own
        piece["name"] = np.concatenate((piece["name"], [5]))[:-1]

    def kept(key: str):
        return np.int32 if narrow and key in rowstore._FIRST_ROW_KEYS else rowstore.ROW_DTYPES[key]

    def filled() -> rowstore.RowStore:
        store = rowstore.RowStore(int(rng.integers(1, 1000)) if reserved else None, narrow=narrow)
        assert store.reserved == reserved
        for piece, n, length in zip(pieces, sizes, text):
            store.append(piece, n, length)
        assert store.n == sum(sizes)
        return store
    store = filled()
    for key, dtype in rowstore.ROW_DTYPES.items():
        got = store.take(key)
        want = np.concatenate([p[key] for p in pieces]) if pieces else np.zeros(0, dtype)
        assert got.dtype == kept(key) and np.array_equal(got, want), key
        assert store.take(key).size == 0  # taken once: the store no longer holds it
    store = filled()
    rows = np.flatnonzero(rng.random(sum(sizes)) < rng.choice([0.0, 0.3, 1.0]))
    for key, dtype in rowstore.ROW_DTYPES.items():
        want = (np.concatenate([p[key] for p in pieces]) if pieces else np.zeros(0, dtype))[rows]
        got = store.take_rows(key, rows)
        assert got.dtype == kept(key) and np.array_equal(got, want), key


def test_reserved_row_columns_project_grow_and_fall_back_to_what_can_be_reserved(monkeypatch):
    """A reserved store sizes its columns for the rows its text is projected to hold (rows per byte so far), within
    the event budget; where the projection cannot be reserved it grows by a quarter (or to what the piece needs), and
    where not even that can, the MemoryError is the caller's."""
    from kinetoscope.trace import rowstore
    monkeypatch.setattr(rowstore, "_MIN_ROWS", 8)
    reserve, sizes = rowstore._reserve, []

    def counted(rows, dtype):
        sizes.append(rows)
        return reserve(rows, dtype)
    monkeypatch.setattr(rowstore, "_reserve", counted)

    def piece(n, start):
        return {key: np.arange(start, start + n).astype(dtype) for key, dtype in rowstore.ROW_DTYPES.items()}
    store = rowstore.RowStore(1 << 31, narrow=True)  # 2 GiB of text: reserved by default
    store.append(piece(10, 0), 10, 1 << 20)  # 10 rows per MiB: 20,480 rows projected, and a quarter more
    assert store.reserved and store.cap == 20_480 + 5_120 and set(sizes) == {25_600}
    store = rowstore.RowStore(1 << 31)
    store.append(piece(10, 0), 10, (1 << 20) - 1)  # less than a MiB read: too little to project from
    assert store.cap == 12  # the rows it needs, and a quarter more
    store = rowstore.RowStore(1 << 31, limit=1000)  # the budget bounds the projection
    store.append(piece(10, 0), 10, 1 << 20)
    assert store.cap == 1000

    def refused(rows, dtype):  # nothing past 40 rows can be reserved
        if rows > 40:
            raise MemoryError
        return counted(rows, dtype)
    monkeypatch.setattr(rowstore, "_reserve", refused)
    sizes.clear()
    store, start = rowstore.RowStore(1 << 31), 0
    for n in (10, 3, 9, 7):  # projected far past 40 rows each time: 10, then 12 (a quarter more), 22, 29
        store.append(piece(n, start), n, 1 << 20)
        start += n
    assert sizes and max(sizes) <= 40 and store.cap == 29
    for key in rowstore._ROW_KEYS:
        assert np.array_equal(store.take(key), np.arange(29)), key
    with pytest.raises(MemoryError):
        store.append(piece(20, 29), 20, 1 << 20)  # 49 rows: more than can be reserved at all


def test_the_builder_narrows_its_first_rows_only_within_int32():
    from kinetoscope.trace import columns
    assert columns.ColumnBuilder(max_events=400_000_000)._rows.dtypes["name"] == np.int32
    assert columns.ColumnBuilder(max_events=1 << 31)._rows.dtypes["name"] == np.int64  # a user's larger budget
    assert columns.ColumnBuilder()._rows.dtypes["name"] == np.int64


@requires_shared
def test_parent_rows_are_the_last_earlier_row_one_level_up_on_the_lane():
    from kinetoscope.analysis.core.selectors import parent_rows
    checked = 0
    for path in shared_trace_files()[:12]:
        model = load_trace(str(path), cache_dir=None)
        parent, depth, lane = parent_rows(model), model.depth.astype(np.int64), model.lane
        rows = np.arange(model.n_events)
        for level in range(1, int(depth.max(initial=0)) + 1):
            above = np.flatnonzero(depth == level - 1)
            here = np.flatnonzero(depth == level)
            k = np.searchsorted(above, here) - 1  # the last earlier row one level up, anywhere
            want = np.where(k >= 0, above[np.maximum(k, 0)], -1)
            want[(want >= 0) & (lane[np.maximum(want, 0)] != lane[here])] = -1  # on an earlier lane: none
            assert np.array_equal(parent[here], want), path.name
            checked += here.size
        assert np.all(parent[depth == 0] == -1) and np.all(parent < rows)
    assert checked > 100_000
