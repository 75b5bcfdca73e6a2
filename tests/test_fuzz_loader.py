"""Seeded mutation fuzzing of decode -> model -> analyses -> JSON report.

Every mutated trace must give a model (odd events counted in `skipped`) or a TraceError naming the
problem: never another exception, never a numpy overflow warning, never a string the JSON report cannot
encode. Every tenth case is also built with the pure-Python extractor and must give the same model.
Found so far: `1e999999` escaping the lenient path, lone `\\ud800` escapes in msgspec.convert, int64
overflows of absurd times, bases and byte counts.
"""
from __future__ import annotations

import json
import random
import warnings

import numpy as np
import pytest
from conftest import kernel, launch, memory, op, trace_doc
from kinetoscope.analysis.report import analyze, report_entry
from kinetoscope.trace import extractors
from kinetoscope.trace.loader import TraceError, decode_bytes
from kinetoscope.trace.model import array_fields

SEED_EVENTS = [
    op("ProfilerStep#1", 0, 100), op("aten::mm", 10, 5, **{"External id": 3}), launch(11, 2, corr=1),
    kernel("k", 20, 3, corr=1), memory(12, 64, total=64, reserved=128),
    {"ph": "s", "id": 1, "cat": "ac2g", "name": "ac2g", "pid": 100, "tid": 1, "ts": 11},
    {"ph": "f", "id": 1, "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 20, "bp": "e"},
    {"ph": "M", "name": "thread_name", "pid": 100, "tid": 1, "args": {"name": "main"}},
    op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1, 8, cat="user_annotation"),
]
KEYS = ["ph", "ts", "dur", "pid", "tid", "id", "name", "cat", "args", "correlation", "device", "stream", "Bytes",
        "Total Allocated", "Total Reserved", "Device Id", "Device Type", "External id", "external id", "Addr"]
# JSON texts spliced in as values (some are not valid JSON: NaN, 1e999999, lone surrogates)
VALUES = ['"x"', "-1", "0", "1e999999", "-1e999999", "NaN", "null", "true", "[]", "{}", "18446744073709551616",
          '"stream 7"', "1712195495519689.047", "99999999999999999999999", '""', '"\\ud800"', "1.5", "-0", '"X"',
          '"i"', '"s"', '"M"', "1e300", "-9223372036854775809", '"N/A"', "N/A", '"</script><img src=x>"']
SPLICES = [b"NaN", b"1e999", b",", b"}", b"\xff", b"", b"]", b'"']


def _mutant(rng: random.Random) -> bytes:
    doc = trace_doc(json.loads(json.dumps(SEED_EVENTS)), baseTimeNanoseconds=1790857026000000000)
    placeholders = {}
    for _ in range(rng.randint(1, 4)):
        event = rng.choice(doc["traceEvents"])
        target = event["args"] if isinstance(event.get("args"), dict) and rng.random() < 0.4 else event
        token = f"@@{len(placeholders)}@@"
        placeholders[token] = rng.choice(VALUES)
        target[rng.choice(KEYS)] = token
    raw = json.dumps(doc, indent=rng.choice([None, 1]))
    for token, value in placeholders.items():
        raw = raw.replace(f'"{token}"', value)
    data = raw.encode("utf-8")
    if rng.random() < 0.25:
        at = rng.randrange(len(data))
        data = data[:at] + rng.choice(SPLICES) + data[at:]
    if rng.random() < 0.05:
        data = data[:rng.randrange(len(data))]  # truncated
    return data


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, n), getattr(b, n), equal_nan=True) for n in array_fields()) and \
        (a.names, a.cats, a.skipped) == (b.names, b.cats, b.skipped)


@pytest.mark.parametrize("seed", range(4))
def test_mutated_traces_give_a_model_or_a_trace_error(seed, monkeypatch):
    rng = random.Random(seed)
    outcomes = {"model": 0, "error": 0}
    for case in range(150):
        data = _mutant(rng)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            try:
                model = decode_bytes(data, "fuzz.json")
            except TraceError as exc:
                assert str(exc).startswith("fuzz.json: ") and exc.message
                outcomes["error"] += 1
                continue
            entry = report_entry(model, analyze(model))
        json.dumps(entry, allow_nan=False).encode("utf-8")  # strings stay encodable, numbers finite
        "".join(model.names + model.lane_label).encode("utf-8")  # no lone surrogates
        assert model.ts_ns.size == model.dur_ns.size and (model.dur_ns >= 0).all()
        outcomes["model"] += 1
        if case % 10 == 0 and extractors.ACCELERATED:
            monkeypatch.setattr(extractors, "extract", extractors._columns_py)
            assert _same(model, decode_bytes(data, "fuzz.json")), data[:300]
            monkeypatch.setattr(extractors, "extract", extractors._columns_accel)
    assert outcomes["model"] > 50 and outcomes["error"] > 0, outcomes
