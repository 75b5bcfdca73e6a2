"""trace.source: an event's full args re-read from its file, for every way a file gets decoded
(chunked plain, chunked gzip, whole, lenient), bounded for a response, and refused once the file changed."""
from __future__ import annotations

import json
import os

import pytest
from conftest import SHARED_TRACES, kernel, launch, op, requires_shared, trace_doc, write_trace
from kinetoscope.trace import loader
from kinetoscope.trace.decode import PIECE_MIDDLE, PIECE_WHOLE
from kinetoscope.trace.source import MAX_ITEMS, MAX_STRING_CHARS, SourceError, args_or_reason, bounded, event_args
from kinetoscope.trace.storage import StorageError, identity, read_range


def _events(n=200):
    """Launches and kernels with args the model does not keep as columns (grid, shapes, a stack)."""
    events = []
    for i in range(n):
        events.append(launch(i * 10, 2, corr=i, cbid=211, stack=[f"train.py({i}): step", "torch/nn/module.py(1): f"]))
        k = kernel(f"k{i}", i * 10 + 3, 5, corr=i)
        k["args"].update({"grid": [i, 1, 1], "block": [128, 1, 1], "registers per thread": 32})
        events.append(k)
    return events


def _expected(text: str, model, row: int) -> dict:
    return json.loads(text)["traceEvents"][int(model.source_row[row])]["args"]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_chunked_file_args_come_back_exactly(tmp_path, monkeypatch, gz):
    text = json.dumps(trace_doc(_events()), indent=1)
    path = write_trace(tmp_path / ("t.pt.trace.json.gz" if gz else "t.pt.trace.json"), text, gz=gz)
    monkeypatch.setattr(loader, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(loader, "MIN_CHUNK_BYTES", 4096)
    model = loader.load_trace(str(path), cache_dir=None)
    assert (model.piece_kind == PIECE_MIDDLE).sum() > 5  # really chunked: many middle pieces
    for row in range(model.n_events):
        assert event_args(str(path), model, row) == _expected(text, model, row)


def test_whole_decoded_file_args_come_back(tmp_path):
    # 16-digit fractional times take the exact, whole-file path
    text = ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
            '"ts": 1712195495519689.005, "dur": 1.5, "args": {"correlation": 3, "grid": [4, 2, 1]}}]}')
    path = write_trace(tmp_path / "t.pt.trace.json", text)
    model = loader.load_trace(str(path), cache_dir=None)
    assert list(model.piece_kind) == [PIECE_WHOLE]
    assert event_args(str(path), model, 0) == {"correlation": 3, "grid": [4, 2, 1]}


def test_lenient_file_maps_rows_past_skipped_events(tmp_path):
    # NaN is not strict JSON (forgiving path); the ill-typed event is skipped, so row 1 is file event 2
    text = ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"v": NaN}},'
            '{"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": "soon", "dur": 1},'
            '{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 3, "dur": 1, "args": {"Input Dims": [[2, 3]]}}]}')
    path = write_trace(tmp_path / "t.pt.trace.json", text)
    model = loader.load_trace(str(path), cache_dir=None)
    rows = {model.names[model.name_id[r]]: r for r in range(model.n_events)}
    assert set(rows) == {"a", "c"}
    assert event_args(str(path), model, rows["a"]) == {"v": None}
    assert event_args(str(path), model, rows["c"]) == {"Input Dims": [[2, 3]]}


def test_event_without_args_gives_an_empty_object(tmp_path):
    path = write_trace(tmp_path / "t.pt.trace.json", trace_doc([{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1,
                                                                  "tid": 1, "ts": 1, "dur": 1}]))
    model = loader.load_trace(str(path), cache_dir=None)
    assert event_args(str(path), model, 0) == {}


def test_cached_model_still_finds_its_args(tmp_path):
    text = json.dumps(trace_doc([op("aten::mm", 0, 5, **{"Input Dims": [[8, 8], [8, 8]]})]))
    path = write_trace(tmp_path / "t.pt.trace.json", text)
    loader.load_trace(str(path), cache_dir=tmp_path / "cache")
    reopened = loader.load_trace(str(path), cache_dir=tmp_path / "cache")
    assert event_args(str(path), reopened, 0) == {"Input Dims": [[8, 8], [8, 8]]}


def test_changed_file_is_refused_with_a_reason(tmp_path):
    path = write_trace(tmp_path / "t.pt.trace.json", trace_doc([op("a", 0, 5, x=1)]))
    model = loader.load_trace(str(path), cache_dir=None)
    before = identity(str(path))
    assert args_or_reason(before, model, 0) == ({"x": 1}, None)
    write_trace(path, trace_doc([op("a", 0, 5, x=1), op("b", 9, 1)]))
    os.utime(path, (before.mtime + 5, before.mtime + 5))  # a later mtime even on coarse clocks
    args, reason = args_or_reason(before, model, 0)
    assert args is None and "changed" in reason


def test_truncated_piece_raises_source_error(tmp_path):
    path = write_trace(tmp_path / "t.pt.trace.json", json.dumps(trace_doc([op("a", 0, 5, x=1)])))
    model = loader.load_trace(str(path), cache_dir=None)
    path.write_text('{"traceEvents": [')
    with pytest.raises(SourceError):
        event_args(str(path), model, 0)


def test_bounded_cuts_what_a_response_cannot_carry():
    value = {"s": "x" * (MAX_STRING_CHARS + 5), "l": list(range(MAX_ITEMS + 3)), "nan": float("nan"),
             "big": 1 << 70, "deep": [[[[[[["bottom"]]]]]]], "ok": [1, 2.5, True, None, "t"]}
    out = bounded(value)
    assert out["s"].startswith("x" * MAX_STRING_CHARS) and out["s"].endswith(f"({MAX_STRING_CHARS + 5} chars)")
    assert len(out["l"]) == MAX_ITEMS + 1 and out["l"][-1] == "\u2026 3 more"
    assert out["nan"] is None and out["big"] == str(1 << 70) and out["ok"] == [1, 2.5, True, None, "t"]
    assert "bottom" not in json.dumps(out["deep"])
    many = bounded({str(i): i for i in range(MAX_ITEMS + 2)})
    assert len(many) == MAX_ITEMS + 1 and many["\u2026"] == "2 more keys"
    json.dumps(out, allow_nan=False)  # always encodable


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_read_range_gives_uncompressed_bytes(tmp_path, gz):
    data = bytes(range(256)) * 1000
    path = write_trace(tmp_path / ("f.gz" if gz else "f.bin"), data, gz=gz)
    assert read_range(str(path), 1000, 5000) == data[1000:5000]
    assert read_range(str(path), 255_000, -1) == data[255_000:]
    assert read_range(str(path), 10, 10) == b""
    with pytest.raises(StorageError):
        read_range(str(path), 10, 5)


@requires_shared
def test_real_traces_args_match_a_plain_json_read():
    """Sample rows of every real trace: args re-read from the piece equal the plain json.loads of the file."""
    import gzip
    checked = 0
    for path in sorted(SHARED_TRACES.rglob("*.json*"))[:12]:
        try:
            model = loader.load_trace(str(path), cache_dir=None)
        except loader.TraceError:
            continue
        raw = path.read_bytes()
        doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        events = doc["traceEvents"] if isinstance(doc, dict) else []
        for row in range(0, model.n_events, max(1, model.n_events // 8)):
            want = events[int(model.source_row[row])].get("args", {})
            if json.dumps(want, allow_nan=True).count("NaN") or len(json.dumps(want)) > MAX_STRING_CHARS:
                continue  # bounded differs on purpose
            assert event_args(str(path), model, row) == want, (path.name, row)
            checked += 1
    assert checked > 30


def test_neighbouring_events_reuse_the_piece_read(tmp_path, monkeypatch):
    from kinetoscope.trace import source
    text = json.dumps(trace_doc(_events(50)), indent=1)
    path = write_trace(tmp_path / "t.pt.trace.json.gz", text, gz=True)
    model = loader.load_trace(str(path), cache_dir=None)
    reads = []
    monkeypatch.setattr(source, "read_range", lambda *a: reads.append(a) or read_range(*a))
    source._cached_events.cache_clear()
    ident = identity(str(path))
    for row in range(model.n_events):
        assert source.event_args(ident, model, row) == _expected(text, model, row)
    assert len(reads) == model.piece_kind.size  # one read per piece, not per event
