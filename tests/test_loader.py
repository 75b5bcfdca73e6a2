"""trace.loader / trace.decode: every bad input yields a model with skip counts or a TraceError naming the file."""
from __future__ import annotations

import gzip
import json
import re

import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.trace.loader import TraceError, decode_bytes, load_trace

GOOD = trace_doc([op("aten::add", 10, 5), launch(11, 2, corr=1), kernel("k", 20, 3, corr=1)])
GOOD_TEXT = json.dumps(GOOD)


# (case name, file bytes, gzip?) -> the error message must contain this fragment
ERRORS = [
    ("truncated-json", GOOD_TEXT[: len(GOOD_TEXT) // 2].encode(), False, "truncated JSON"),
    ("truncated-gzip", gzip.compress(GOOD_TEXT.encode())[:-30], None, "truncated gzip"),
    ("corrupt-gzip", b"\x1f\x8b" + b"garbage" * 10, None, "gzip"),
    ("top-level-array", b'[{"name": "aten::add", "ph": "X"}]', False, "legacy autograd"),
    ("top-level-string", b'"hello"', False, "not a trace object"),
    ("no-traceEvents", b'{"schemaVersion": 1}', False, "traceEvents"),
    ("traceEvents-not-list", b'{"traceEvents": {"a": 1}}', False, "traceEvents"),
    ("not-json", b"this is not json at all", False, "invalid JSON"),
    ("empty-file", b"", False, "truncated"),
]


@pytest.mark.parametrize("case, data, gz, fragment", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_files_raise_trace_error_naming_file(tmp_path, case, data, gz, fragment):
    path = tmp_path / f"{case}.pt.trace.json{'.gz' if gz is None else ''}"
    path.write_bytes(data)
    with pytest.raises(TraceError) as info:
        load_trace(str(path), cache_dir=None)
    assert str(path) in str(info.value)
    assert fragment in str(info.value)


def _model(tmp_path, text, name="t.pt.trace.json"):
    return load_trace(str(write_trace(tmp_path / name, text)), cache_dir=None)


def test_empty_trace_events_is_an_empty_model(tmp_path):
    model = _model(tmp_path, '{"traceEvents": []}')
    assert model.n_events == 0 and model.start_ns == 0 and model.skipped == {}


def test_nan_and_infinity_tokens_are_skipped_events_not_errors(tmp_path):
    text = GOOD_TEXT[:-2] + ', {"ph": "X", "name": "bad", "pid": 1, "tid": 1, "ts": NaN, "dur": 1}]}'
    model = _model(tmp_path, text)
    assert model.n_events == 3
    assert model.skipped == {"missing, non-finite or out-of-range ts": 1}


@pytest.mark.parametrize("exact_era", [False, True], ids=["float-times", "16-digit-fraction-times"])
def test_absurd_times_and_bases_are_counted_not_overflowed(tmp_path, exact_era):
    first = "1712195495519689.047" if exact_era else "1712195495519689"
    events = ",".join(f'{{"ph": "X", "name": "{n}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}}}' for n, ts, dur in [
        ("ok", first, 1), ("huge-dur", first, "1e20"), ("inf-dur", first, "1e999999"), ("huge-ts", "1e99999999", 1),
        ("ts-beyond-int64", "123456789012345678901234567890", 1), ("ts-of-400-digits", "1" + "0" * 399, 1),
        ("dur-of-400-digits", first, "9" * 400), ("ts-far-before", "-1" + "0" * 29, 1)])  # not the rebase's second
    model = _model(tmp_path, f'{{"traceEvents": [{events}]}}')
    assert [model.names[i] for i in model.name_id] == ["ok"] and model.ts_ns[0] // 1000 == 1712195495519689
    if exact_era:  # the exact reader makes a 400-digit time absent (no 10^400 / 1000 float overflow)
        assert model.skipped == {"missing, non-finite or out-of-range ts": 4, "complete event without a finite dur": 3}
    else:  # the typed decode refuses a 400-digit float and the lenient one names the field
        assert model.skipped == {"missing, non-finite or out-of-range ts": 3, "complete event without a finite dur": 2,
                                 "ill-typed field: Number out of range - at `$.ts`": 1,
                                 "ill-typed field: Number out of range - at `$.dur`": 1}
    model = _model(tmp_path, '{"baseTimeNanoseconds": 99999999999999999999, "traceEvents": [{"ph": "X", "ts": 5, "dur": 1}]}')
    assert model.ts_ns.tolist() == [5000] and "out of range" in model.warnings[0]


def test_lone_surrogate_escapes_become_replacement_characters(tmp_path):
    # msgspec rejects `"\ud800"` (as "truncated" when it ends a string); json keeps it, and no encoder
    # downstream (HTTP bodies, the report) would take it. A proper pair stays the character it encodes.
    text = ('{"traceEvents": [{"ph": "X", "name": "a\\ud800", "pid": 1, "tid": 1, "ts": 1, "dur": 1},'
            ' {"ph": "X", "name": "\\ud83d\\ude00", "pid": 1, "tid": 1, "ts": 2, "dur": 1}]}')
    model = _model(tmp_path, text)
    assert sorted(model.names) == sorted(["a\ufffd", "\U0001F600"]) and model.skipped == {}


def test_ill_typed_field_skips_only_that_event(tmp_path):
    doc = trace_doc([op("ok", 1, 1), {"ph": "X", "name": "bad", "pid": 1, "tid": 1, "ts": 5, "dur": "long"}])
    model = _model(tmp_path, json.dumps(doc))
    assert model.n_events == 1
    (reason, count), = model.skipped.items()
    assert count == 1 and "dur" in reason


def test_ill_typed_args_are_dropped_not_the_event(tmp_path):
    doc = trace_doc([kernel("k", 1, 1, corr=None) | {"args": {"correlation": "x7", "device": None, "stream": 7}}])
    model = _model(tmp_path, json.dumps(doc))
    assert model.n_events == 1 and model.correlation[0] == -1 and model.lane_tid[model.lane[0]] == 7


def test_missing_fields_take_defaults_or_are_counted(tmp_path):
    doc = trace_doc([{"ph": "X", "ts": 1, "dur": 2}, {"ph": "X", "name": "no-dur", "ts": 1}, {"name": "no-ph", "ts": 3}])
    model = _model(tmp_path, json.dumps(doc))
    assert model.n_events == 1 and model.names[model.name_id[0]] == ""
    assert model.skipped == {"complete event without a finite dur": 1, "unsupported phase (B/E/C/other)": 1}


def test_invalid_utf8_is_replaced_with_a_warning(tmp_path):
    data = GOOD_TEXT.replace("aten::add", "aten::\udcff").encode("utf-8", "surrogateescape")
    model = _model(tmp_path, data)
    assert model.n_events == 3
    assert any("UTF-8" in w for w in model.warnings)
    assert "aten::\ufffd" in model.names


def test_control_characters_and_bare_na_are_tolerated(tmp_path):
    text = GOOD_TEXT.replace("aten::add", "aten::\\u0001add").replace('"deviceProperties": []', '"deviceProperties": N/A')
    text = text.replace("aten::\\u0001add", "aten::\x01add")
    model = _model(tmp_path, text)
    assert model.n_events == 3 and "aten::\x01add" in model.names


def test_hostile_strings_are_kept_verbatim(tmp_path):
    hostile = '<img src=x onerror=alert(1)> "q" & \\ ../../etc/passwd'
    model = _model(tmp_path, json.dumps(trace_doc([op(hostile, 1, 1)])))
    assert model.names[model.name_id[0]] == hostile


def test_negative_durations_are_clamped_with_a_warning(tmp_path):
    model = _model(tmp_path, json.dumps(trace_doc([op("neg", 10, -5)])))
    assert model.dur_ns[0] == 0 and any("negative" in w for w in model.warnings)


def test_decode_bytes_accepts_a_memory_buffer():
    model = decode_bytes(memoryview(GOOD_TEXT.encode()), "mem")
    assert model.n_events == 3


def test_unreadable_path_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match="cannot"):
        load_trace(str(tmp_path / "missing.pt.trace.json"), cache_dir=None)


def test_a_decompression_bomb_is_refused_by_its_budget(tmp_path, monkeypatch):
    import gzip

    from kinetoscope.trace import budgets
    path = tmp_path / "bomb.pt.trace.json.gz"
    with gzip.open(path, "wb") as out:
        out.write(b'{"traceEvents": [')
        out.write(b" " * (8 << 20))  # 8 MiB of whitespace in about 8 KB
        out.write(b"]}")
    monkeypatch.setattr(budgets, "INFLATE_FLOOR_BYTES", 1 << 20)  # the 256 MiB floor would let this one through
    with pytest.raises(TraceError) as info:
        load_trace(str(path), cache_dir=None)
    message = str(info.value)
    assert str(path) in message and "decompression bomb" in message and budgets.INFLATE_RATIO_ENV in message
    monkeypatch.setenv(budgets.INFLATE_RATIO_ENV, "100000")  # raised as the message says: it reads
    assert load_trace(str(path), cache_dir=None).n_events == 0


def _budget_error(path, monkeypatch, env: str, value: str, match: str) -> None:
    """Loading `path` with the budget `env` set to `value` is a named error; without it the file loads."""
    from kinetoscope.trace import budgets
    monkeypatch.setenv(env, value)
    with pytest.raises(TraceError) as info:
        load_trace(str(path), cache_dir=None)
    message = str(info.value)
    assert message.startswith(str(path)) and env in message and re.search(match, message), message
    monkeypatch.delenv(env)
    assert load_trace(str(path), cache_dir=None).n_events > 0
    assert budgets.event_budget() == budgets.EventBudget()


def test_more_events_than_the_budget_is_a_named_error(tmp_path, monkeypatch):
    from kinetoscope.trace import budgets
    events = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(500)]
    path = write_trace(tmp_path / "many.pt.trace.json", trace_doc(events))
    _budget_error(path, monkeypatch, budgets.MAX_EVENTS_ENV, "100", r"budget of 100 events")
    assert budgets.EventBudget(per_kb=250).limit(10_000_000) == 2_441_406  # 250 per KiB of a 10 MB file
    assert budgets.EventBudget(per_kb=250).limit(1000) == budgets.EVENTS_FLOOR


@pytest.mark.parametrize("pieces", [False, True], ids=["one piece", "many pieces"])
def test_more_distinct_names_than_the_budget_is_a_named_error(tmp_path, monkeypatch, pieces):
    # issue 54 N4: 1.75M `ProfilerStep#N` annotations (9.7 MB gzipped, inside the event budget) took 1.3 GB
    from kinetoscope.trace import budgets, loader
    if pieces:
        monkeypatch.setattr(loader, "CHUNK_BYTES", 1 << 14)
        monkeypatch.setattr(loader, "MIN_CHUNK_BYTES", 1 << 14)
    monkeypatch.setattr(budgets, "NAMES_FLOOR", 1000)
    events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1, "ts": 10 * i,
               "dur": 9} for i in range(3000)]
    path = write_trace(tmp_path / "steps.pt.trace.json", trace_doc(events))
    _budget_error(path, monkeypatch, budgets.NAMES_PER_KB_ENV, "1", r"names more than its budget of 1,000 distinct")
    assert budgets.EventBudget().name_limit(10_000_000) == 244_140  # 25 per KiB of a 10 MB file
    monkeypatch.undo()
    assert budgets.EventBudget().name_limit(1000) == budgets.NAMES_FLOOR == 200_000


@pytest.mark.parametrize("where", ["a-string", "whitespace-between-events", "the-first-event"])
def test_one_event_longer_than_the_budget_is_a_named_error(tmp_path, monkeypatch, where):
    from kinetoscope.trace import budgets, loader
    events = [{"ph": "X", "cat": "cpu_op", "name": f"a{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(300)]
    text = json.dumps(trace_doc(events))
    big = 2 << 20  # past the leading MiB that is read before the first cut
    if where == "a-string":
        text = text.replace('"a150"', '"' + "s" * big + '"')
    elif where == "whitespace-between-events":
        after = ', {"ph": "X", "cat": "cpu_op", "name": "a151"'
        assert after in text
        text = text.replace(after, " " * big + after)
    else:
        text = text.replace('"a0"', '"' + "s" * big + '"')
    path = write_trace(tmp_path / "long.pt.trace.json.gz", text, gz=True)
    monkeypatch.setattr(loader, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(loader, "MIN_CHUNK_BYTES", 4096)
    _budget_error(path, monkeypatch, budgets.EVENT_BYTES_ENV, "65536", r"string or whitespace run is longer than its budget")


def test_a_file_read_whole_is_bounded_too(tmp_path, monkeypatch):
    from kinetoscope.trace import budgets
    # one event and no boundary to cut at: the file can only be decoded whole
    path = write_trace(tmp_path / "one.pt.trace.json", trace_doc([{"ph": "X", "cat": "cpu_op", "name": "x" * 5000,
                                                                    "pid": 1, "tid": 1, "ts": 1, "dur": 1}]))
    _budget_error(path, monkeypatch, budgets.WHOLE_BYTES_ENV, "1000", r"cannot be cut into events")


@pytest.mark.parametrize("gz", [False, True])
def test_progress_advances_with_the_bytes_decoded(tmp_path, monkeypatch, gz):
    from kinetoscope.trace import loader
    monkeypatch.setattr(loader, "CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(loader, "MIN_CHUNK_BYTES", 1 << 16)
    events = [op(f"aten::op{i}", i * 10, 5) for i in range(100000)]
    path = write_trace(tmp_path / ("t.pt.trace.json" + (".gz" if gz else "")), trace_doc(events), gz=gz)
    seen = []
    model = load_trace(str(path), cache_dir=None, progress=seen.append)
    assert model.n_events == 100000
    assert len(seen) >= 10 and seen == sorted(seen) and 0 < seen[0] < 0.2 and seen[-1] == 0.99
    assert max(b - a for a, b in zip(seen, seen[1:])) < 0.2  # smooth: no jump from 10% to 80%
    decoding = [x for x in seen if x <= loader.DECODE_SHARE]  # the text by bytes, then the model's build steps
    assert len(decoding) >= 10 and len([x for x in seen if x > loader.DECODE_SHARE]) >= 3
