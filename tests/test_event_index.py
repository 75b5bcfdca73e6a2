"""The model's `event_index` summary: how many complete events carry Kineto's event number and its range
(the verdict uses it to refuse sampled traces). Both extractors, both spellings, chunked and whole."""
from __future__ import annotations

import json

import pytest
from conftest import SHARED_TRACES, op, requires_shared, trace_doc, write_trace
from kinetoscope.trace import extractors, loader
from kinetoscope.trace.cache import load_cached, store
from kinetoscope.trace.storage import identity


def _events() -> list[dict]:
    events = [op(f"aten::op{i}", i * 10, 5, **{"Ev Idx": 100 + 7 * i}) for i in range(20)]
    events += [op("legacy", 300, 5, **{"Profiler Event Index": 5}),  # torch 1.12-1.13 spelling
               op("no index", 310, 5),
               op("huge", 320, 5, **{"Ev Idx": 2**70}),  # beyond int64: absent, like any other int arg
               {"ph": "i", "s": "t", "name": "instant", "pid": 100, "tid": 1, "ts": 330, "args": {"Ev Idx": 10**6}}]
    return events


@pytest.mark.parametrize("extractor", ["_columns_accel", "_columns_py"])
@pytest.mark.parametrize("chunk", [64, 1 << 20])
def test_summary_over_complete_events(tmp_path, monkeypatch, extractor, chunk):
    if extractor == "_columns_accel" and not extractors.ACCELERATED:
        pytest.skip("the C extractor is not built")
    monkeypatch.setattr(extractors, "extract", getattr(extractors, extractor))
    monkeypatch.setattr(loader, "CHUNK_BYTES", chunk)
    path = write_trace(tmp_path / "e.pt.trace.json", json.dumps(trace_doc(_events()), indent=1))
    model = loader.load_trace(str(path), cache_dir=None)
    assert model.meta["event_index"] == {"count": 21, "min": 5, "max": 100 + 7 * 19, "spaces": [[5, 233, 21]]}


def test_absent_everywhere_means_no_key(tmp_path):
    model = loader.decode_bytes(json.dumps(trace_doc([op("a", 0, 1)])).encode())
    assert "event_index" not in model.meta


def test_a_string_index_does_not_break_the_load(tmp_path):
    model = loader.decode_bytes(json.dumps(trace_doc([op("a", 0, 1, **{"Ev Idx": "7"}), op("b", 2, 1, **{"Ev Idx": 3})])).encode())
    assert model.n_events >= 1  # the lenient path skips or keeps the odd event, never fails the file


def test_survives_the_cache(tmp_path):
    path = write_trace(tmp_path / "c.pt.trace.json", trace_doc(_events()))
    model = loader.load_trace(str(path), cache_dir=None)
    store(tmp_path / "cache", identity(str(path)), model)
    cached = load_cached(tmp_path / "cache", identity(str(path)))
    assert cached is not None and cached.meta["event_index"] == model.meta["event_index"]


@requires_shared
@pytest.mark.parametrize("trace, expected", [
    ("hta/trace_filter/sampled_rank-0.json.gz", {"count": 2402, "min": 27169, "max": 265455, "spaces": [
        [27169, 37008, 405], [40055, 46419, 57], [49326, 64105, 556], [67198, 81398, 231], [178991, 193120, 462],
        [201755, 203539, 7], [213051, 236396, 561], [245031, 246815, 7], [256327, 265455, 116]]}),
    ("hta/trace_diff/test/test.json.gz", {"count": 31524, "min": 0, "max": 31523, "spaces": [[0, 31523, 31524]]}),
    # with_stack: CPU ops and Python frames in two index spaces; two single missing numbers are holes, not spaces
    ("modern/b200/eager_trace.json.gz", {"count": 20042, "min": 0, "max": 30052611,
                                         "spaces": [[0, 4811, 4812], [30037380, 30052611, 15230]]}),
    ("resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz", None),
])
def test_real_traces(trace, expected):
    model = loader.load_trace(str(SHARED_TRACES / trace), cache_dir=None)
    assert model.meta.get("event_index") == expected


def test_a_jump_between_index_spaces_is_found_whatever_the_chunking(tmp_path, monkeypatch):
    """CPU ops numbered 1000..1039 and Python frames 30,000,000..30,000,059, in one file cut in tiny chunks."""
    monkeypatch.setattr(loader, "CHUNK_BYTES", 64)
    events = [op(f"aten::op{i}", i * 10, 5, **{"Ev Idx": 1000 + i}) for i in range(40)]
    events += [op(f"frame{i}", 500 + i, 1, **{"Ev Idx": 30_000_000 + i}) for i in range(60)]
    path = write_trace(tmp_path / "s.pt.trace.json", json.dumps(trace_doc(events), indent=1))
    index = loader.load_trace(str(path), cache_dir=None).meta["event_index"]
    assert index["spaces"] == [[1000, 1039, 40], [30_000_000, 30_000_059, 60]]
