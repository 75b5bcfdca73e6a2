"""The compiled column extractor (`trace/_columns.c`) against the pure-Python reference (`extractors._columns_py`).

Both turn a chunk of decoded event structs into raw columns; every model built with one must equal the
model built with the other, on real traces and on hostile hand-made ones.
"""
from __future__ import annotations

import json
import os

import msgspec
import numpy as np
import pytest
from conftest import kernel, launch, memory, op, sample_trace_files, shared_trace_files, trace_doc, write_trace
from kinetoscope.trace import columns, extractors, finish, intervals, loader
from kinetoscope.trace.decode import Args, Event
from kinetoscope.trace.deps import MSGSPEC_REFUSALS
from kinetoscope.trace.model import array_fields

SAMPLE_TRACES = sample_trace_files()


@pytest.mark.skipif(bool(os.environ.get("KINETOSCOPE_PURE_PYTHON")), reason="the pure-Python extractor was asked for")
def test_the_accelerator_is_built():
    # The package builds it with the machine's C compiler; CI has one. Without it everything still works
    # (this test aside), about 2x slower to decode.
    assert extractors.ACCELERATED, "kinetoscope.trace._columns is missing: `make install` compiles it (needs gcc and Python headers)"


@pytest.mark.skipif(bool(os.environ.get("KINETOSCOPE_PURE_PYTHON")) or os.environ.get("KINETOSCOPE_FAST_DECODE", "1") == "0",
                    reason="the pure-Python extractor or the typed decode was asked for")
def test_the_text_scanner_is_built():
    # Compiled with `_columns` (setup.py); without it every piece takes the typed decode (tests/test_fast_decode.py).
    assert extractors.scans_text(), "kinetoscope.trace._scan is missing: `make install` compiles it"


def _both(monkeypatch, load):
    if extractors.accel is None:  # not built, or KINETOSCOPE_PURE_PYTHON asked for the Python extractor alone
        pytest.skip("compiled extractor not built")
    models = {}
    for name, extractor in (("c", extractors._columns_accel), ("py", extractors._columns_py)):
        monkeypatch.setattr(extractors, "extract", extractor)
        models[name] = load()
    return models["c"], models["py"]


def _assert_same(a, b):
    for name in array_fields():
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    assert (a.names, a.cats, a.lane_label, a.meta, a.skipped, a.warnings, a.shape_strings, a.inputs_strings, a.hwc_names) == \
        (b.names, b.cats, b.lane_label, b.meta, b.skipped, b.warnings, b.shape_strings, b.inputs_strings, b.hwc_names)


@pytest.mark.parametrize("path", shared_trace_files() + SAMPLE_TRACES, ids=lambda p: f"{p.parent.name}/{p.name[:40]}")
def test_real_traces_give_the_same_model(path, monkeypatch):
    monkeypatch.setattr(loader, "CHUNK_BYTES", 256 * 1024)  # several chunks: tables shared across chunks
    c, py = _both(monkeypatch, lambda: loader.load_trace(str(path), cache_dir=None))
    _assert_same(c, py)


def _hostile_events() -> list[dict]:
    events = [op("aten::mm", 10, 5), launch(11, 2, corr=1), kernel("k", 20, 3, corr=1),
              memory(12, 64, total=64, reserved=128), memory(13, -64)]
    events[0]["args"] = {"External id": 7, "correlation": 2**70, "device": 3}  # huge int: absent; CPU device: masked
    events += [
        {"ph": "X", "cat": "Operator", "name": "legacy", "pid": "Spans", "tid": "stream 7", "ts": 30, "dur": 1,
         "args": {"external id": 9}},  # 2021 spelling, string pid/tid
        {"ph": "X", "cat": "Kernel", "name": "k2021", "pid": 0, "tid": "stream 7", "ts": 31, "dur": 1,
         "args": {"correlation": 3, "device": 0, "stream": 2**64}},  # stream beyond int64: absent
        {"ph": "XX", "name": "two-char phase", "ts": 40, "pid": 1, "tid": 1},
        {"ph": "é", "name": "non-ASCII phase", "ts": 41, "pid": 1, "tid": 1},
        {"ph": "", "name": "empty phase", "ts": 42, "pid": 1, "tid": 1},
        {"ph": "B", "name": "begin", "ts": 43, "pid": 1, "tid": 1},
        {"name": "no phase, no ts"},
        {"ph": "X", "cat": "cpu_op", "name": "名前 \u2028 <script>", "pid": -5, "tid": 2**40, "ts": 50.123456, "dur": 0.5},
        {"ph": "s", "id": "flow-a", "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 11},
        {"ph": "f", "id": 2**62, "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 20, "bp": "e"},
        {"ph": "s", "id": 5, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 12},
        {"ph": "t", "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 21},  # no id
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
        {"ph": "X", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 60, "dur": -1,
         "args": {"Bytes": 32, "Device Type": 0, "Addr": 123}},
        # Input Dims in every shape a writer could give (record_shapes): kept as their JSON text, null is none
        *({"ph": "X", "cat": "cpu_op", "name": "shaped", "pid": 1, "tid": 1, "ts": 70 + i, "dur": 0.5, "args": {"Input Dims": dims}}
          for i, dims in enumerate([[[2, 3], []], [[2, 3], []], None, "x" * 5000, {"a": [1]}, [], [[1e300]], "名前"])),
        # ... and the rest of what an op records of its inputs, in every presence: one key of all of them
        *({"ph": "X", "cat": "cpu_op", "name": "typed", "pid": 1, "tid": 1, "ts": 75 + i * 0.1, "dur": 0.05, "args": args}
          for i, args in enumerate([{"Input Dims": [[2]], "Input type": ["float"], "Input Strides": [[1]],
                                     "Concrete Inputs": [""]}, {"Input type": ["c10::Half"]}, {"Concrete Inputs": None},
                                    {"Input Dims": [[2]], "Input type": None, "Concrete Inputs": ["", "名前" * 900]},
                                    {"Input Dims": [[2]], "Input type": ["float"], "Input Strides": [[1]],
                                     "Concrete Inputs": [""]}])),
        # Call stack (<= 1.13-era files): its first frame is kept, as an event name
        *({"ph": "X", "cat": "cpu_op", "name": "stacked", "pid": 1, "tid": 1, "ts": 80 + i, "dur": 0.5, "args": {"Call stack": stack}}
          for i, stack in enumerate(["a.py(1): f;b.py(2): g", "a.py(1): f", "", ";b.py(2): g", 5, None, "名前 \"q\";z",
                                     ["a.py(1): f"], "aten::mm"])),
    ]
    return events


@pytest.mark.parametrize("chunk", [64, 1 << 20])
def test_hostile_values_give_the_same_model(tmp_path, monkeypatch, chunk):
    path = write_trace(tmp_path / "h.pt.trace.json", json.dumps(trace_doc(_hostile_events()), indent=1))
    monkeypatch.setattr(loader, "CHUNK_BYTES", chunk)
    c, py = _both(monkeypatch, lambda: loader.load_trace(str(path), cache_dir=None))
    _assert_same(c, py)
    assert c.correlation[c.names.index("aten::mm") == c.name_id].tolist() == [-1]
    assert sorted(c.flow_id.tolist()) == [-3, -2, -1, 5]
    assert c.skipped.get("unsupported phase (B/E/C/other)") == 5  # XX, é, empty, B, absent
    stacked = c.call_frame_id[c.name_id == c.names.index("stacked")]
    assert [c.names[i] if i >= 0 else None for i in stacked.tolist()] == \
        ["a.py(1): f", "a.py(1): f", None, None, None, None, '名前 "q"', None, "aten::mm"]
    shaped = c.shape_id[c.name_id == c.names.index("shaped")]
    assert [c.shape_strings[i] if i >= 0 else None for i in shaped.tolist()] == \
        ['[[2, 3], []]', '[[2, 3], []]', None, json.dumps("x" * 5000), '{"a": [1]}', '[]', '[[1e+300]]', '"名前"']
    typed = c.inputs_id[c.name_id == c.names.index("typed")]
    assert [json.loads(c.inputs_strings[i]) if i >= 0 else None for i in typed.tolist()] == \
        [[[[2]], ["float"], [[1]], [""]], [None, ["c10::Half"], None, None], None,
         [[[2]], None, None, ["", "名前" * 900]], [[[2]], ["float"], [[1]], [""]]]
    assert [c.shape_strings[i] if i >= 0 else None for i in c.shape_id[c.name_id == c.names.index("typed")].tolist()] == \
        ["[[2]]", None, None, "[[2]]", "[[2]]"]


def test_flow_ids_outside_2_62_and_strings_are_interned_negative(tmp_path):
    events = [{"ph": "s", "id": v, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 1 + i}
              for i, v in enumerate(["a", 2**62, 2**62 - 1, "a", None, -3])]
    model = loader.load_trace(str(write_trace(tmp_path / "f.pt.trace.json", trace_doc(events))), cache_dir=None)
    assert model.flow_id.tolist() == [-1, -2, 2**62 - 1, -1, -3, -3]


def test_extract_rejects_foreign_objects_and_wrong_buffers():
    if not extractors.ACCELERATED:
        pytest.skip("the accelerator is not built")
    tables = ({}, {}, {}, {}, {}, {})
    good = [Event(ph="X", name="a", cat="cpu_op", pid=1, tid=1, ts=1.0, dur=1.0)]
    with pytest.raises(TypeError, match="event 0"):
        extractors._columns_accel([{"ph": "X"}], tables, 0, False)
    with pytest.raises(TypeError, match="args"):
        extractors._columns_accel([Event(args=None)], tables, 0, False)
    with pytest.raises(ValueError, match="output"):
        extractors.accel.extract(good, extractors._PHASE_TABLE, *tables, 0, tuple(np.empty(0, d) for d in extractors.EXTRACTED_DTYPES))
    with pytest.raises(ValueError, match="256-byte"):
        extractors.accel.extract(good, b"x", *tables, 0, ())
    assert extractors._columns_accel(good, tables, 0, False)["name"].tolist() == [0]


def test_layout_refuses_fields_that_are_not_object_slots():
    if not extractors.ACCELERATED:
        pytest.skip("the accelerator is not built")
    with pytest.raises(AttributeError):
        extractors.accel.layout(Event, ("nope",) * 9, Args, ("correlation",) * 11)
    with pytest.raises(TypeError, match="not an object slot"):
        extractors.accel.layout(Event, ("ph",) * 8 + ("__doc__",), Args, ("correlation",) * 11)
    # a refused layout leaves the bound one in place
    assert extractors._columns_accel([Event(ph="X", name="a", ts=1.0)], ({}, {}, {}, {}, {}, {}), 0, False)["ts"].tolist() == [1.0]


# Kineto's event number, `Ev Idx` (torch >= 2.0) or `Profiler Event Index` (1.12-1.13): only its summary
# over complete events is kept (`meta["event_index"]`); both extractors and every decode path must agree.
_ODD_INDEX = {"float": 7.5, "integral float": 7.0, "bool": True, "numeric string": "7", "string": "x", "null": None,
              "object": {"a": 1}, "negative": -3, "2^63": 2**63, "2^64": 2**64, "-2^70": -2**70, "1e999": "RAW:1e999"}


def _numbered(odd) -> str:
    events = [op(f"n{i}", i * 10, 5, **{"Ev Idx": 40 + i}) for i in range(10)]
    events += [op("legacy", 200, 5, **{"Profiler Event Index": 12}),
               op("both spellings: Ev Idx wins", 210, 5, **{"Ev Idx": 60, "Profiler Event Index": 1}),
               op("odd", 220, 5, **{"Ev Idx": odd}),
               op("odd, legacy fallback", 230, 5, **{"Ev Idx": odd, "Profiler Event Index": 3}),
               op("no index", 240, 5),
               op("k", 250, 5, cat="kernel", tid=7, pid=0, **{"Ev Idx": 2**62}),  # a complete GPU event counts too
               {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "instant", "pid": 100, "tid": 1, "ts": 260,
                "args": {"Ev Idx": 0}},  # not a complete event: not counted
               {"ph": "s", "id": 1, "cat": "ac2g", "name": "ac2g", "pid": 100, "tid": 1, "ts": 261, "args": {"Ev Idx": 10**6}}]
    return json.dumps(trace_doc(events), indent=1).replace('"RAW:1e999"', "1e999")


@pytest.mark.parametrize("odd", list(_ODD_INDEX.values()), ids=list(_ODD_INDEX))
def test_event_index_summary_on_every_path(tmp_path, monkeypatch, odd):
    if not extractors.ACCELERATED:
        pytest.skip("the accelerator is not built")
    text = _numbered(odd)
    path = write_trace(tmp_path / "n.pt.trace.json", text)
    # a numeric string is read as its int by the forgiving decode, as for every int arg; other odd values are absent
    expected = ({"count": 15, "min": 7, "max": 2**62, "spaces": [[7, 60, 14], [2**62, 2**62, 1]]} if odd == "7" else
                {"count": 14, "min": 3, "max": 2**62, "spaces": [[3, 60, 13], [2**62, 2**62, 1]]})  # the GPU event's jump
    for chunk in (64, 1 << 20):
        monkeypatch.setattr(loader, "CHUNK_BYTES", chunk)
        monkeypatch.setattr(loader, "MIN_CHUNK_BYTES", chunk)
        c, py = _both(monkeypatch, lambda: loader.load_trace(str(path), cache_dir=None))
        _assert_same(c, py)
        assert c.meta["event_index"] == expected
    whole = _both(monkeypatch, lambda: loader._build_whole(text.encode(), str(path)))
    _assert_same(*whole)
    assert whole[0].meta["event_index"] == expected


def test_event_index_survives_the_lenient_and_exact_decodes(tmp_path, monkeypatch):
    if not extractors.ACCELERATED:
        pytest.skip("the accelerator is not built")
    lenient = '{"traceEvents": [' + ", ".join(
        f'{{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": {ts}, "dur": 1, "args": {{"Ev Idx": {i}}}}}'
        for i, ts in ((5, "NaN"), (6, "2"), (7, "3"))) + "]}"  # NaN: the forgiving decode, event 5 skipped later
    exact = ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1712195495519689.5, '
             '"dur": 1, "args": {"Profiler Event Index": 9}}]}')  # 16-digit fractional times: the exact decode
    for text, expected in ((lenient, {"count": 3, "min": 5, "max": 7, "spaces": [[5, 7, 3]]}),
                           (exact, {"count": 1, "min": 9, "max": 9, "spaces": [[9, 9, 1]]})):
        c, py = _both(monkeypatch, lambda text=text: loader.decode_bytes(text.encode()))
        _assert_same(c, py)
        assert c.meta["event_index"] == expected


_US = [0.0, -0.0, 1.0, 0.5, 0.0005, 0.0015, 0.0025, 1.9995, -1.0, -0.0005, -2.5e-4, 1623142623460072.0,
       1623142623460072.123, 1623142623460072.999, 1_700_000_000_000_000.5, 4.6e15, 4.6116e15, 4.62e15, -4.62e15,
       9.2e15, 1e300, -1e300, np.inf, -np.inf, np.nan, 2.0**52 + 0.5, 123.4565, 7e-7, 5e-324]


@pytest.mark.skipif(extractors.accel is None, reason="compiled extractor not built")
@pytest.mark.parametrize("base", [0, 1, -7, 1_700_000_000_000_000_000, -(2**62) + 1, 2**62 - 1])
@pytest.mark.parametrize("clamp", [False, True])
def test_compiled_us_to_ns_equals_the_array_passes(base, clamp):
    rng = np.random.default_rng(base & 0xFFFF)
    values = np.concatenate([np.array(_US), rng.uniform(-1e7, 1e7, 2000), np.round(rng.uniform(0, 1e16, 2000), 3),
                             rng.integers(0, 2**53, 2000).astype(np.float64) / 1000])
    want_ns, want_ok, want_neg = finish._to_ns_py(values.copy(), base, clamp)
    mine = values.copy()
    ns, ok, neg = finish._to_ns(mine, base, clamp)
    assert np.shares_memory(ns, mine)  # consumed in place: no temporaries
    assert ns.dtype == np.int64 and np.array_equal(ns, want_ns) and np.array_equal(ok, want_ok) and neg == want_neg
    # the consumed-in-place path is only taken for arrays the caller can give away
    view = values[::2]
    ns2, ok2, neg2 = finish._to_ns(view, base, clamp)
    want2 = finish._to_ns_py(values[::2].copy(), base, clamp)
    assert np.array_equal(ns2, want2[0]) and np.array_equal(ok2, want2[1]) and neg2 == want2[2]


@pytest.mark.skipif(extractors.accel is None, reason="compiled extractor not built")
def test_us_to_ns_refuses_wrong_buffers():
    with pytest.raises(ValueError):
        extractors.accel.us_to_ns(np.zeros(3), 0, np.zeros(2, bool), False)
    with pytest.raises((ValueError, TypeError, BufferError)):
        extractors.accel.us_to_ns(b"\0" * 24, 0, np.zeros(3, bool), False)


def _depth_sequences():
    """Depth columns as lanes make them (each row at most one level below the row before it), lanes run together,
    and arbitrary ones (jumps down several levels, levels no earlier row opened)."""
    rng = np.random.default_rng(29)
    nested = [0]
    for _ in range(5000):
        nested.append(max(0, nested[-1] + int(rng.choice([-3, -2, -1, 0, 1, 1]))))
    yield np.array(nested, np.int16)
    yield np.concatenate([np.array(nested[:700], np.int16), np.array(nested[:1300], np.int16)])
    yield rng.integers(0, 12, 4000).astype(np.int16)
    yield rng.integers(0, 40, 4000).astype(np.int64)
    yield np.array([], np.int16)
    yield np.array([0, 32767, 32766, 5, 4, 0, 1, 2, 32767], np.int16)
    yield np.arange(300, dtype=np.int32)


@pytest.mark.skipif(extractors.accel is None, reason="compiled extractor not built")
def test_compiled_parents_equal_the_array_passes():
    from kinetoscope.analysis.core import nesting
    for depth in _depth_sequences():
        fast = intervals.compiled_parents(depth)
        assert fast is not None and fast.dtype == np.int64
        assert np.array_equal(fast, nesting._parents_by_depth_py(depth)), depth[:20]
        assert np.array_equal(nesting.parents_by_depth(depth), fast)
    # depths the compiled pass does not take: the array passes answer
    assert intervals.compiled_parents(np.array([0, 40000, 1], np.int64)) is None
    assert intervals.compiled_parents(np.array([0, -1, 1], np.int16)) is None
    with pytest.raises(ValueError):
        intervals._accel.parents(np.zeros(3, np.int16), np.zeros(2, np.int64))


@pytest.mark.skipif(extractors.accel is None, reason="compiled extractor not built")
def test_compiled_subtree_ends_equal_the_pointer_doubling():
    from kinetoscope.analysis.core import nesting
    from kinetoscope.analysis.core.op_forest import _subtree_sizes
    for depth in _depth_sequences():
        parent = nesting.parents_by_depth(depth)
        fast = intervals.compiled_subtree_ends(parent)
        assert fast is not None and fast.dtype == np.int64
        assert np.array_equal(fast, np.arange(parent.size) + _subtree_sizes(depth, parent)), depth[:20]
    # a parent after its child is no preorder: the caller's array passes answer
    assert intervals.compiled_subtree_ends(np.array([-1, 2, 0], np.int64)) is None
    assert intervals.compiled_subtree_ends(np.array([0], np.int64)) is None  # its own parent
    with pytest.raises(ValueError):
        intervals._accel.subtree_ends(np.zeros(3, np.int64), np.zeros(2, np.int64))


@pytest.mark.skipif(extractors.accel is None, reason="compiled extractor not built")
def test_compiled_dense_ids_equal_searchsorted():
    """The interned columns' first-seen rows -> dense ids: the table by row answers the table's own rows, the binary
    search anything else (none, -1; values between, before or past the rows), exactly as numpy's searchsorted."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        first_rows = np.unique(rng.integers(0, 5000, int(rng.integers(0, 60)))).astype(np.int64)
        values = np.concatenate((first_rows, rng.integers(-3, 5200, 20), [-1, -(2**62), 2**62])).astype(np.int64)
        first = rng.choice(values, int(rng.integers(0, 400))).astype(np.int64)
        ids = columns.dense_ids(first_rows, first)
        assert ids.dtype == np.int32
        assert np.array_equal(ids, np.searchsorted(first_rows, first)), (first_rows, first)
        narrow = first[np.abs(first) < 2**31].astype(np.int32)  # a narrow store's column (`_RowStore(narrow=True)`)
        assert np.array_equal(columns.dense_ids(first_rows, narrow), np.searchsorted(first_rows, narrow))
    # rows not strictly ascending (never a table's): nothing written, the caller searches
    out = np.full(3, 7, np.int32)
    assert not extractors.accel.dense_ids(np.array([5, 3], np.int64), np.array([3, 5, 4], np.int64), out, True)
    assert not extractors.accel.dense_ids(np.array([3, 3], np.int64), np.array([3, 5, 4], np.int32), out, False)
    assert out.tolist() == [7, 7, 7]
    assert np.array_equal(columns.dense_ids(np.array([5, 3], np.int64), np.array([3, 5, 4], np.int64)),
                          np.searchsorted(np.array([5, 3], np.int64), np.array([3, 5, 4], np.int64)))
    with pytest.raises(ValueError):
        extractors.accel.dense_ids(np.zeros(3, np.int64), np.zeros(2, np.int64), np.zeros(3, np.int32), True)
    with pytest.raises(ValueError):  # int32 values read as int64: the sizes disagree
        extractors.accel.dense_ids(np.zeros(3, np.int64), np.zeros(3, np.int32), np.zeros(3, np.int32), True)


def _forest(rng, lanes: int, nodes: int):
    """A preorder forest over several lanes (each lane's nodes by start, children inside their parents, some of
    zero length or ending with their parent), as op_forest builds it: (start, end, parent, lane bounds)."""
    from kinetoscope.analysis.core import nesting
    start, end, ptr = [], [], [0]
    for _ in range(lanes):
        t, open_ends = 0, []
        for _ in range(int(rng.integers(0, nodes))):
            t += int(rng.integers(0, 4))
            while open_ends and open_ends[-1] <= t:
                open_ends.pop()
            limit = open_ends[-1] if open_ends else t + 50
            stop = int(rng.integers(t, limit + 1))
            start.append(t)
            end.append(stop)
            open_ends.append(stop)
        ptr.append(len(start))
    start, end, ptr = np.array(start, np.int64), np.array(end, np.int64), np.array(ptr, np.int64)
    depth = intervals.nesting_depth(start, end - start, ptr).astype(np.int64)
    return start, end, nesting.parents_by_depth(depth), ptr


@pytest.mark.skipif(extractors.accel is None, reason="compiled extractor not built")
def test_compiled_innermost_equals_the_climbing_passes():
    from kinetoscope.analysis.core import op_forest
    rng = np.random.default_rng(5)
    for _ in range(150):
        lanes = int(rng.integers(1, 5))
        start, end, parent, ptr = _forest(rng, lanes, 80)
        lane_ids = np.sort(rng.choice(1000, lanes, replace=False)).astype(np.int64)
        queries = int(rng.integers(0, 300))
        lane = np.where(rng.random(queries) < 0.1, 5000, lane_ids[rng.integers(0, lanes, queries)])  # some off-forest
        t = rng.integers(-5, int(end.max(initial=0)) + 10, queries).astype(np.int64)
        on_lane = np.isin(lane, lane_ids)
        k = np.searchsorted(lane_ids, lane)
        fast = intervals.compiled_innermost(np.where(on_lane, k, -1), t, start, end, parent, ptr)
        assert fast is not None
        slow = op_forest._owners_py(t, start, end, parent, ptr, k, on_lane)
        assert np.array_equal(fast, slow)
        assert np.array_equal(op_forest._owners(lane, t, start, end, parent, lane_ids, ptr), slow)
    # a parent after its node, or bounds out of order: the array passes answer
    one = np.zeros(1, np.int64)
    assert intervals.compiled_innermost(one, one, one, one + 1, np.array([1]), np.array([0, 1])) is None
    assert intervals.compiled_innermost(one, one, one, one + 1, np.array([-1]), np.array([1, 0])) is None


def test_lane_runs_are_the_unique_lanes_and_their_first_rows():
    """`op_forest._lane_runs`: the lanes of rows in model order by their runs, as `np.unique(return_index=True)` gives
    them (the end appended); rows out of lane order go to `np.unique` itself."""
    from kinetoscope.analysis.core import op_forest
    rng = np.random.default_rng(23)
    for trial in range(400):
        lanes = rng.integers(0, 6, int(rng.integers(0, 40))).astype(rng.choice([np.int32, np.int64]))
        if trial % 3:
            lanes = np.sort(lanes)
        ids, ptr = op_forest._lane_runs(lanes)
        want, first = np.unique(lanes, return_index=True)
        assert ids.dtype == lanes.dtype and ids.tolist() == want.tolist(), lanes
        assert ptr.dtype == np.int64 and ptr.tolist() == [*first.tolist(), lanes.size], lanes


def _is_json(text: str) -> bool:
    """Whether a decoder can hand this text over as a Raw value (`NaN`, `Infinity` are not JSON)."""
    try:
        msgspec.json.decode(text)
    except msgspec.DecodeError:
        return False
    return True


def _exact_values() -> list:
    """What the exact decoder can hand `exact_times.ns_of`: the raw JSON text of times of every spelling (Kineto's, longer
    fractions, exponents, ints of every size, null, strings, objects), the absent time (empty), and values no decoder
    yields (which the reference decides)."""
    import random
    rng = random.Random(7)
    texts = ["1700000000000123.5", "1700000000000123.05", "1700000000000123.005", "1700000000000123.0005",
             "1700000000000123.0015", "1700000000000123.00050000001", "1700000000000123.0004999", "-1700000000000123.0005",
             "-1700000000000123.0015", "-1712195495519703.772", "0.5", "-0.5", "-0", "-0.0", "0.000", "0.0000", "5e0",
             "5E+2", "1.5e3", "1e-7", "NaN", "Infinity", "9223372036854775.807", "9223372036854775.808",
             "-9223372036854775.808", "9223372036854774.8075", "99999999999999999999.5", "1" * 40 + ".5", "0.0001",
             "12.3400", "-12.340", "1" * 18 + "." + "1" * 10, "1" * 18 + "." + "1" * 11, "0." + "0" * 20 + "1" * 28,
             "0." + "0" * 20 + "1" * 29, "1e999999", "null", "true", '"12.5"', "[1]", '{"a": 1}', "0", "-1",
             "1700000000000123", "9223372036854775", "9223372036854776", "-9223372036854776", "1" + "0" * 30]
    for _ in range(3000):
        whole = str(rng.randrange(10 ** rng.randrange(1, 20)))
        sign = rng.choice(["", "", "-"])
        texts.append(f"{sign}{whole}.{rng.randrange(10 ** (k := rng.randrange(1, 14))):0{k}d}"
                     + rng.choice(["", "", "", f"e{rng.randrange(-5, 5)}"]))
    texts += [str(rng.randrange(-(10 ** 19), 10 ** 19)) for _ in range(2000)]
    texts += [f"{rng.randrange(10 ** 16)}.{rng.randrange(10000):04d}{rng.choice(['5', '50', '500', '5001', ''])}"
              for _ in range(2000)]  # ties and near-ties of the rounding to the ns
    values = [msgspec.Raw(text.encode()) for text in texts if _is_json(text)] + [msgspec.Raw(), msgspec.Raw(b"")]
    values += [1.5, None, 12, b"1", "12.5", [1]]
    rng.shuffle(values)
    return values


@pytest.mark.skipif(bool(os.environ.get("KINETOSCOPE_PURE_PYTHON")), reason="the pure-Python extractor was asked for")
def test_the_exact_time_reader_agrees_with_the_reference_on_every_spelling():
    from kinetoscope.trace import _columns, exact_times
    values = _exact_values()
    want = [exact_times._raw_ns(v) for v in values]
    got = _columns.kineto_ns(values, msgspec.Raw, exact_times._raw_ns)
    assert len(got) == len(want)
    for value, g, w in zip(values, got, want):
        assert type(g) is type(w) and g == w, (value, g, w)
    assert exact_times.ns_of(values) == want
    bad = [msgspec.Raw(b"1.5"), msgspec.Raw(b'"\xed\xa0\xbd"')]  # a string of invalid UTF-8: what the typed decode refuses
    for reader in (exact_times.ns_of, lambda values: list(map(exact_times._raw_ns, values))):
        with pytest.raises(MSGSPEC_REFUSALS):  # UnicodeDecodeError before msgspec 0.23, DecodeError since
            reader(bad)


@pytest.mark.parametrize("chunk", [64 * 1024, 1 << 26])
def test_a_trace_with_exact_times_gives_the_same_model_with_either_time_reader(tmp_path, monkeypatch, chunk):
    from kinetoscope.trace import decode, exact_times
    base = 1712195495519703
    events = [op(f"aten::op{i}", 0, 1) for i in range(4000)]
    spellings = [".772", ".5", ".05", ".005", ".0", ""]
    for i, e in enumerate(events):
        e["ts"], e["dur"] = f"@{base + 3 * i}{spellings[i % 6]}@", f"@{i % 7}{spellings[(i + 1) % 6]}@"
    text = json.dumps(trace_doc(events)).replace('"@', "").replace('@"', "")
    path = write_trace(tmp_path / "w.pt.trace.json", text)
    monkeypatch.setattr(loader, "CHUNK_BYTES", chunk)
    assert exact_times.needs_exact_times(text.encode(), 0, len(text))
    fast = loader.load_trace(str(path), cache_dir=None)
    monkeypatch.setattr(decode, "ns_of", lambda values: list(map(exact_times._raw_ns, values)))
    monkeypatch.setattr(extractors, "_scan", None)  # the scanner reads a piece's times itself (`_kineto_time.h`)
    _assert_same(fast, loader.load_trace(str(path), cache_dir=None))
    starts = sorted(fast.ts_ns.tolist())[:3]  # `.5` and `.05` are 5 ns (the unpadded writer)
    assert [s - starts[0] for s in starts] == [0, 3000 + 5 - 772, 6000 + 5 - 772]
