"""A bounded, derandomized property-based fuzz of the decoder (hypothesis).

Generated documents mix well- and ill-typed events (wrong types, NaN, huge numbers, strings holding the
byte sequences the chunker cuts at, deep args, odd phases), laid out compact or pretty, and sometimes cut
short or spoiled. Properties:
- loading gives a model or a `TraceError`, never anything else;
- decoding in many small pieces gives the same model as decoding the text in one (but for files with
  16-digit fractional times that also break the schema, whose lenient pieces keep µs doubles).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import write_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kinetoscope.trace import loader
from kinetoscope.trace.exact_times import needs_exact_times
from kinetoscope.trace.loader import TraceError, load_trace
from kinetoscope.trace.model import PIECE_FIELDS, array_fields

LOOKALIKES = ["}, {", "},{", '"}, {"ph": "X"', "]}", "{", "}", ",", '"', "\\", "\u2603", "\ud83d\ude00"]
names = st.one_of(st.sampled_from(["aten::mm", "k", "ProfilerStep#1", "cudaLaunchKernel", "[memory]", ""]),
                  st.text(alphabet=st.sampled_from(list("ab }{,[]\"\\:") + ["\u00e9"]), max_size=12),
                  st.lists(st.sampled_from(LOOKALIKES), max_size=4).map("".join))
numbers = st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=False, allow_infinity=False, width=64),
                    st.sampled_from([2**62, -2**62, 2**70, 1e300, 0.5]))
odd = st.one_of(st.none(), st.booleans(), names, st.lists(st.integers(), max_size=3), st.just({"a": [1, {"b": 2}]}))
args = st.dictionaries(st.sampled_from(["correlation", "External id", "external id", "device", "stream", "Bytes",
                                        "Total Allocated", "Device Type", "Device Id", "Ev Idx", "name", "Input Dims"]),
                       st.one_of(numbers, odd), max_size=5)
events = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "X", "X", "i", "s", "f", "M", "B", "C", ""]),
     "name": names, "ts": st.one_of(numbers, odd), "dur": st.one_of(numbers, odd)},
    optional={"cat": st.sampled_from(["kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "ac2g", "user_annotation"]),
              "pid": st.one_of(st.integers(-1, 5), st.sampled_from(["Spans", "25738", "stream 7"]), odd),
              "tid": st.one_of(st.integers(-1, 9), st.sampled_from(["stream 7", "1"]), odd),
              "id": st.one_of(st.integers(0, 9), names), "args": args})


@st.composite
def documents(draw) -> bytes:
    evs = draw(st.lists(events, min_size=0, max_size=60))
    doc = {"schemaVersion": 1, "traceEvents": evs}
    if draw(st.booleans()):
        doc["baseTimeNanoseconds"] = draw(st.one_of(st.integers(0, 2**63), odd))
    text = json.dumps(doc, indent=draw(st.sampled_from([None, 1])), ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):  # a NaN or bare N/A where a number was
        text = text.replace("0.5", draw(st.sampled_from(["NaN", "N/A", "Infinity"])), 1)
    raw = text.encode("utf-8", "surrogatepass")
    spoil = draw(st.sampled_from(["none", "none", "none", "cut", "byte"]))
    if spoil == "cut" and raw:
        raw = raw[:draw(st.integers(0, len(raw) - 1))]
    elif spoil == "byte" and raw:
        at = draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at + 1:]
    return raw


def _load(path, monkeypatch, chunk: int):
    monkeypatch.setattr(loader, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(loader, "MIN_CHUNK_BYTES", chunk)
    try:
        return load_trace(str(path), cache_dir=None)
    except TraceError as exc:
        return exc


@settings(max_examples=500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(raw=documents())
def test_any_document_gives_a_model_or_a_named_error_and_pieces_change_nothing(raw, tmp_path, monkeypatch):
    path = write_trace(tmp_path / "f.pt.trace.json", raw)
    whole = _load(path, monkeypatch, 1 << 16)  # one piece (the documents are smaller)
    pieces = _load(path, monkeypatch, 256)  # many
    for result in (whole, pieces):
        assert isinstance(result, (TraceError, loader.TraceModel)), result
        if isinstance(result, TraceError):
            assert str(result).startswith(str(path)) and result.message
    if needs_exact_times(raw, 0, len(raw)):
        return  # exact-time pieces that also break the schema keep µs doubles: test_model checks clean ones
    if isinstance(whole, TraceError) or isinstance(pieces, TraceError):
        # a truncated file can look whole to one reading and cut short to the other only at its very end
        assert type(whole) is type(pieces), (whole, pieces)
        return
    for name in array_fields():
        if name not in PIECE_FIELDS:
            assert np.array_equal(getattr(whole, name), getattr(pieces, name)), name
    assert (whole.names, whole.cats, whole.lane_label) == (pieces.names, pieces.cats, pieces.lane_label)
    assert whole.skipped == pieces.skipped


def test_the_fuzz_reaches_both_outcomes():
    """The strategy is not degenerate: it yields loadable files and broken ones."""
    outcomes = set()

    @settings(max_examples=60, deadline=None, derandomize=True, database=None)
    @given(raw=documents())
    def probe(raw):
        try:
            loader.decode_bytes(raw)
            outcomes.add("model")
        except TraceError:
            outcomes.add("error")

    probe()
    assert outcomes == {"model", "error"}


pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
