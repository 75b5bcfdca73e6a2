"""The text-to-columns scanner (`trace/_scan.c`, issue 29) builds byte for byte the model of the typed decode.

Middle pieces the scanner reads go straight from JSON text to columns; any piece it cannot read exactly as msgspec's
typed decode plus `_columns.c` would is left to that path. Compared here: whole loads with and without the scanner on
every shared trace and sample (pieces cut small, so most of each file is scanned), and single pieces of hand-made
events, each case named after what it probes, with whether the scanner must take the piece or leave it.
"""
from __future__ import annotations

import gzip
import json
import shutil

import msgspec
import numpy as np
import pytest
from conftest import kernel, launch, op, sample_trace_files, shared_trace_files
from hostile_corpus import CASES, write_corpus
from kinetoscope.trace import exact_times, extractors, loader, offload
from kinetoscope.trace.budgets import DECODE_POOL_ENV, DECODE_WORKERS_ENV, FAST_DECODE_ENV
from kinetoscope.trace.columns import ColumnBuilder
from kinetoscope.trace.decode import PIECE_MIDDLE, Event, Piece, TraceDoc, decode_middle
from kinetoscope.trace.loader import TraceError, decode_bytes, load_trace
from test_parallel_decode import differences

pytestmark = pytest.mark.skipif(extractors._scan is None, reason="the scanner is not built (or KINETOSCOPE_FAST_DECODE=0)")

SCANNER = extractors._scan  # the tests switch it off and on
SMALL_PIECE = 1 << 16
PIECE = Piece(PIECE_MIDDLE, 0, 0)
_TYPED = msgspec.json.Decoder(list[Event])


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(loader, "CHUNK_BYTES", SMALL_PIECE)
    monkeypatch.setattr(loader, "MIN_CHUNK_BYTES", SMALL_PIECE)


@pytest.fixture
def taken(monkeypatch):
    """Counts of the pieces the scanner took and left during the test."""
    counts = {True: 0, False: 0}
    add_text = ColumnBuilder.add_text

    def counted(self, text, piece, *rest):
        took = add_text(self, text, piece, *rest)
        counts[took] += 1
        return took
    monkeypatch.setattr(ColumnBuilder, "add_text", counted)
    return counts


def load_both(path, monkeypatch):
    """(the model with the scanner, the model without it), or the TraceErrors."""
    models = []
    for scan in (SCANNER, None):
        monkeypatch.setattr(extractors, "_scan", scan)
        try:
            models.append(load_trace(str(path), cache_dir=None))
        except TraceError as exc:
            models.append(exc)
    return models


HOSTILE = ("truncated_json", "nan_and_bare_na_in_a_dense_file", "whitespace_between_events", "tiny_events_past_the_event_budget",
           "exact_16_digit_times", "invalid_utf8_and_lone_surrogates", "huge_and_odd_numbers", "1m_flows_one_id",
           "200k_processes")


@pytest.mark.parametrize("case", [c for c in CASES if c.name in HOSTILE], ids=lambda c: c.name)
def test_hostile_files_give_the_same_model_or_error(case, monkeypatch, tmp_path):
    (_, path), = write_corpus(tmp_path, [case])
    fast, typed = load_both(path, monkeypatch)
    assert differences(typed, fast) == []


@pytest.mark.parametrize("path", shared_trace_files(), ids=lambda p: p.name[:60])
def test_real_traces_give_the_same_model(path, small_pieces, taken, monkeypatch):
    fast, typed = load_both(path, monkeypatch)
    assert differences(typed, fast) == []


@pytest.mark.parametrize("path", sample_trace_files(), ids=lambda p: p.name[:60])
def test_samples_plain_and_gzipped_give_the_same_model(path, small_pieces, monkeypatch, tmp_path):
    other = tmp_path / (path.name[:-3] if path.name.endswith(".gz") else path.name + ".gz")
    with (gzip.open(path) if path.name.endswith(".gz") else open(path, "rb")) as src, \
            (open(other, "wb") if path.name.endswith(".gz") else gzip.open(other, "wb")) as dst:
        shutil.copyfileobj(src, dst)
    for form in (path, other):
        fast, typed = load_both(form, monkeypatch)
        assert differences(typed, fast) == [], form.name


def test_the_2021_and_modern_traces_are_really_scanned(small_pieces, taken, monkeypatch):
    traces = [p for p in shared_trace_files() if "resnet50_num_workers_0" in str(p) or "/modern/h100/" in str(p)]
    if not traces:
        pytest.skip("no shared traces here")
    for path in traces:
        load_trace(str(path), cache_dir=None)
    assert taken[True] > 1000 and taken[True] > 20 * taken[False]


def _model(text: bytes, scanned: bool, exact_rebase=None):
    """The model of one middle piece's events; None when that path refuses the piece (`add_text` False, or the
    typed decode fails: today's loader then decodes the piece leniently). With `exact_rebase`, a piece of a file with
    exact 16-digit times, decoded as the loader decodes one (`decode_middle`) when not scanned."""
    builder = ColumnBuilder()
    if scanned:
        if not builder.add_text(memoryview(bytearray(text)), PIECE, exact_rebase):
            return None
    elif exact_rebase is not None:
        events, legacy, index, _, _ = decode_middle(bytearray(text), exact_rebase)
        builder.add(events, legacy, PIECE, *(index or ()))
    else:
        try:
            events = _TYPED.decode(text)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
            return None
        builder.add(events, b'"external id"' in text, PIECE)
    return builder.finish(TraceDoc(traceEvents=[]), {}, [], len(text))


def gpu(name: str, ts: float, dur: float, corr: int, **args) -> dict:
    """A kernel with more args (grid, block, ...)."""
    event = kernel(name, ts, dur, corr)
    event["args"].update(args)
    return event


def _piece(*events) -> bytes:
    return b"[" + b",".join(e if isinstance(e, bytes) else json.dumps(e, ensure_ascii=False).encode() for e in events) + b"]"


_OP = op("aten::mm", 10, 5, Sequence_number=1)
_NEST = b'{"ph":"X","name":"n","cat":"cpu_op","pid":1,"tid":1,"ts":1,"dur":1,"args":{"x":%s}}'
TAKEN, LEFT = True, False
PIECES = {
    # name: (the piece's text, whether the scanner takes it)
    "plain_ops_and_kernels": (_piece(op("aten::mm", 10, 5, **{"Input Dims": [[2, 3], []], "Call stack": "a.py(1): f;b"}),
                                     launch(12, 2, 7), gpu("k", 20, 3, 7, grid=[1, 2, 3], block=[4, 1, 1],
                                                              **{"registers per thread": 32, "shared memory": 0,
                                                                 "blocks per SM": 6.5, "est. achieved occupancy %": 25})),
                              TAKEN),
    "unicode_names": (_piece(op("café 日本 \U0001f600", 1, 2), op("ü", 3, 1, tid="thread ü")), TAKEN),
    "escape_in_a_name": (_piece(op('say "hi"', 1, 2)), LEFT),
    "escape_in_an_unread_value": (_piece(op("a", 1, 2, note='tab\there "q" \\u00e9 \u00e9')), TAKEN),
    "surrogate_escape_in_an_unread_value": (_piece(b'{"ph":"X","name":"a","ts":1,"dur":1,"args":{"x":"\\ud83d\\ude00"}}'),
                                            LEFT),
    "invalid_utf8_in_a_name": (_piece(b'{"ph":"X","name":"a\xff","ts":1,"dur":1}'), LEFT),
    "invalid_utf8_in_an_unread_value": (_piece(b'{"ph":"X","name":"a","ts":1,"dur":1,"args":{"x":"\xc3("}}'), LEFT),
    "encoded_surrogate": (_piece(b'{"ph":"X","name":"\xed\xa0\x80","ts":1,"dur":1}'), LEFT),
    "control_character_in_a_string": (_piece(b'{"ph":"X","name":"a\x01b","ts":1,"dur":1}'), LEFT),
    "huge_ts": (_piece(op("a", 10**20, 1)), LEFT),
    "huge_external_id": (_piece(op("a", 1, 1, **{"External id": 2**64})), LEFT),
    "huge_unread_int": (_piece(op("a", 1, 1, other=2**70)), TAKEN),
    "huge_flow_id": (_piece({"ph": "s", "id": 2**63, "ts": 1, "pid": 1, "tid": 1, "name": "f", "cat": "ac2g"}), LEFT),
    "int_times_up_to_18_digits": (_piece(op("a", 123456789012345678, 1), op("b", -5, 0)), TAKEN),
    "float_times_with_exponents": (_piece(b'{"ph":"X","name":"a","ts":1.5e3,"dur":2E-2}',
                                          b'{"ph":"X","name":"b","ts":1e+22,"dur":12345.678e-3}'), TAKEN),
    # past one exact operation (a power of ten past 22, more than 2^53 in the mantissa): rounded by the C library
    "float_time_beyond_one_exact_step": (_piece(b'{"ph":"X","name":"a","ts":1e23,"dur":1}'), TAKEN),
    "float_time_of_many_digits": (_piece(b'{"ph":"X","name":"a","ts":1623142623460147.123456,"dur":1}'), TAKEN),
    "float_reprs_of_17_digits": (_piece(b'{"ph":"X","name":"a","ts":100000000100.0,"dur":0.49166666666666664}',
                                        b'{"ph":"X","name":"b","ts":9007199254740993.0,"dur":1.00000000000000011102230246251565404}'),
                                 TAKEN),
    "float_time_with_a_3_digit_exponent": (_piece(b'{"ph":"X","name":"a","ts":1e100,"dur":1}'), LEFT),
    "float_time_of_more_than_64_characters": (_piece(b'{"ph":"X","name":"a","ts":1.' + b"1" * 70 + b',"dur":1}'), LEFT),
    "negative_zero_times": (_piece(b'{"ph":"X","name":"a","ts":-0,"dur":-0.0}'), TAKEN),
    "negative_durations_and_ids": (_piece(op("a", 5, -3, pid=-4, tid=-2, correlation=-1)), TAKEN),
    "missing_fields": (_piece({}, {"ph": "X"}, {"name": "x", "ts": 1}, {"ph": "X", "ts": 1, "dur": 1, "args": {}}), TAKEN),
    "duplicate_known_key": (_piece(b'{"ph":"X","name":"a","ts":1,"ts":2,"dur":1}'), LEFT),
    "duplicate_known_arg": (_piece(b'{"ph":"X","name":"a","ts":1,"dur":1,"args":{"device":1,"device":2}}'), LEFT),
    "duplicate_unknown_key": (_piece(b'{"ph":"X","name":"a","ts":1,"dur":1,"x":1,"x":[2]}'), TAKEN),
    "nested_args": (_piece(_NEST % b'{"a":[1,{"b":[[],{}]},null,true,false,"s",-1.5e-3]}'), TAKEN),
    "nesting_beyond_the_scanner": (_piece(_NEST % (b"[" * 70 + b"]" * 70)), LEFT),
    "whitespace_everywhere": (b' \n[ \t{ "ph" :\r\n"X" , "name"\t: "a" ,"ts" : 1 , "dur":2 ,"args" : { "device" : 0 } }'
                              b' ,\n\n{"ph":"i","name":"b","ts":3} \r\n] \n', TAKEN),
    # runs of whitespace longer than the scanner's 16-byte step, mixed, ending a piece, and Kineto's indentation
    "long_whitespace_runs": (b"[" + b" " * 17 + b'{"ph"' + b" \t" * 20 + b':"X",\r\n' + b" " * 31 + b'"name":"a",'
                             + b"\n" * 40 + b'"ts":1,"dur":2' + b" " * 15 + b"}" + b" \n\t\r" * 9 + b"]" + b" " * 33,
                             TAKEN),
    "indented_like_kineto": (json.dumps([op("aten::mm", 10, 5, **{"Input Dims": [[2, 3], []]}),
                                         gpu("k", 12, 3, 1, grid=[1, 2, 3])], indent=2).encode(), TAKEN),
    "deeply_indented": (json.dumps([op("a", 1, 2, nest={"b": {"c": {"d": [1, {"e": 2}]}}})], indent=12).encode(), TAKEN),
    "truncated_piece": (_piece(op("a", 1, 2))[:-5] + b"]", LEFT),
    "cut_inside_a_string": (b'[{"ph":"X","name":"a}, {"]', LEFT),
    "text_after_the_piece": (_piece(op("a", 1, 2)) + b"x", LEFT),
    "ts_as_a_string": (_piece(op("a", "1", 2)), LEFT),
    "pid_as_a_float": (_piece(op("a", 1, 2, pid=1.5)), LEFT),
    "pid_as_a_bool": (_piece(op("a", 1, 2, pid=True)), LEFT),
    "args_null": (_piece({"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": None}), LEFT),
    "ph_null": (_piece({"ph": None, "name": "a", "ts": 1, "dur": 1}), LEFT),
    "int_arg_as_a_float": (_piece(op("a", 1, 2, correlation=3.0)), LEFT),
    "nan_literal": (_piece(b'{"ph":"X","name":"a","ts":NaN,"dur":1}'), LEFT),
    "bare_event_that_is_not_an_object": (_piece(op("a", 1, 2), 5), LEFT),
    "flows_with_int_string_and_null_ids": (_piece(*({"ph": ph, "id": i, "ts": 1, "pid": 1, "tid": 1, "name": "f", "cat": "ac2g",
                                                    **({"bp": "e"} if ph == "f" else {})}
                                                   for ph in ("s", "f") for i in (7, "x7", None))), TAKEN),
    "metadata_events": (_piece({"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
                               {"ph": "M", "name": "thread_name", "pid": 1, "tid": "t", "args": {"name": None}},
                               {"ph": "M", "name": "process_labels", "pid": 1, "args": {"labels": "GPU 0"}}), TAKEN),
    "memory_events": (_piece({"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5, "args": {
        "Device Type": 1, "Device Id": 0, "Bytes": -512, "Total Allocated": 1.5e9, "Total Reserved": 10**17,
        "Addr": 140234567890123}}), TAKEN),
    "memory_arg_of_19_digits": (_piece({"ph": "i", "name": "[memory]", "ts": 5, "args": {"Addr": 2**62}}), LEFT),
    "unicode_escape_in_a_name": (_piece(op("caf\u00e9", 1, 2)).replace("\u00e9".encode(), b"\\u00e9"), LEFT),
    "gpu_args_in_odd_spellings": (_piece(gpu("k", 1, 2, 3, grid=[1.0, 2, 3], block=[1, 2]),
                                         gpu("k", 4, 2, 4, grid="[1,1,1]", block=[0, 1, 1], **{"registers per thread": -1}),
                                         gpu("k", 7, 2, 5, grid=None, **{"shared memory": 2**70, "blocks per SM": "6"}),
                                         {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy", "ts": 9, "dur": 1,
                                          "args": {"bytes": 1.0000000000000000001e5}}), TAKEN),
    # 18 digits fit int64, 19 do not (signed overflow in C, issue 54 N8): those the scanner asks Python to read
    "grid_of_18_digits": (_piece(gpu("k", 1, 2, 3, grid=[10**17 + 3, 1, 1], block=[999999999999999999, 1, 1])), TAKEN),
    "grid_of_19_digits": (_piece(gpu("k", 1, 2, 3, grid=[9999999999999999999, 1, 1], block=[1, 1, 1])), TAKEN),
    "collective_args": (_piece(op("record_param_comms", 1, 2, Seq=3, **{"Process Group Name": "0", "Collective name": "allreduce",
                                                                       "In msg nelems": 10, "dtype": "Float"}),
                               gpu("ncclDevKernel_AllReduce", 3, 1, 9, Seq="4")), TAKEN),
    "p2p_args": (_piece(op("record_param_comms", 1, 2, Seq=1, **{"Collective name": "send", "Dst Rank": 3, "Src Rank": 2}),
                        op("nccl:recv", 4, 2, **{"Src Rank": "1"}), op("record_param_comms", 5, 1, **{"Dst Rank": 2**70})),
                 TAKEN),
    "validator_args": (_piece({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "ts": 1, "dur": 0,
                               "args": {"wait_on_cuda_event_record_corr_id": 12}},
                              op("autograd::engine::evaluate_function: MmBackward0", 2, 1, **{"Sequence number": 5}),
                              op("aten::mm", 3, 1, **{"Sequence number": 6})), TAKEN),
    "legacy_external_id": (_piece(op("a", 1, 2, **{"external id": 8}), op("b", 1, 2, **{"External id": 9, "external id": 8})),
                           TAKEN),
    "input_dims_and_call_stacks": (_piece(*(op("a", t, 1, **{"Input Dims": d, "Call stack": c}) for t, (d, c) in enumerate(
        [([[1, 2]], "x.py(1): f;y"), ([[1, 2]], "x.py(1): f"), (None, ""), ([], ";z"), ([[3]], 5), ("s", "w\u00e9;v")]))),
        TAKEN),
    # what an op records of its inputs (the roofline's work models): all, some, none, null, odd values
    "input_types_strides_and_concrete_inputs": (_piece(*(op("a", t, 1, **args) for t, args in enumerate([
        {"Input Dims": [[4, 5], []], "Input type": ["c10::BFloat16", "Scalar"], "Input Strides": [[5, 1], []],
         "Concrete Inputs": ["", "2"]},
        {"Input type": ["float"], "Concrete Inputs": [""]},
        {"Input Dims": [[4, 5]], "Input type": None, "Concrete Inputs": ["", "x" * 3000]},
        {"Input Strides": [[1]]}, {"Concrete Inputs": None}, {}, {"Input type": "caf\u00e9"},
        {"Input Dims": [[4, 5], []], "Input type": ["c10::BFloat16", "Scalar"], "Input Strides": [[5, 1], []],
         "Concrete Inputs": ["", "2"]}]))), TAKEN),
    # hardware counters as Kineto writes CUPTI PM samples (trace/hw_counters.py), beside counter events it must not keep
    "hardware_counter_samples": (_piece(*({"ph": "C", "cat": "hardware_counters", "name": m, "pid": "GPU 0 Counters", "tid": 0,
                                           "ts": t, "args": {"": v}} for t, (m, v) in enumerate(
        [("sm__throughput.avg.pct_of_peak_sustained_elapsed", 61.5), ("sm__throughput.avg.pct_of_peak_sustained_elapsed", 0),
         ("dram__bytes_read.sum", 2**70), ("dram__bytes_read.sum", "12"), ("x", True), ("x", None), ("x", [1]),
         ("x", -0.0)])),
        {"ph": "C", "name": "ctr", "pid": 1, "tid": 1, "ts": 3, "args": {"cats": 3}}, {"ph": "C", "name": "no args", "ts": 4},
        {"ph": "C", "name": "no ts", "pid": "GPU 1 Counters", "args": {"": 1}}), TAKEN),
}


@pytest.mark.parametrize("name", list(PIECES))
def test_a_piece_is_scanned_exactly_or_left_to_the_typed_decode(name):
    text, expected = PIECES[name]
    fast = _model(text, scanned=True)
    assert (fast is not None) == expected
    if fast is not None:
        typed = _model(text, scanned=False)
        assert typed is not None, "the scanner took a piece the typed decode rejects"
        assert differences(typed, fast) == []


_FILLER = [json.dumps(e).encode() for t in range(400)  # many small middle pieces around the case
           for e in (op("aten::add", 10 * t, 5, **{"External id": t}), launch(10 * t + 1, 2, t), kernel("k", 10 * t + 4, 3, t))]


_IN_A_FILE = [n for n in PIECES if n not in ("truncated_piece", "cut_inside_a_string", "text_after_the_piece")]


def _decoded_both(raw: bytes, monkeypatch) -> list:
    """The model (or the TraceError) of a whole text with the scanner, then without it."""
    models = []
    for scan in (SCANNER, None):
        monkeypatch.setattr(extractors, "_scan", scan)
        try:
            models.append(decode_bytes(raw))
        except TraceError as exc:
            models.append(exc)
    return models


@pytest.mark.parametrize("name", _IN_A_FILE)
def test_every_case_inside_a_file_gives_the_same_model(name, monkeypatch):
    body = PIECES[name][0].strip()[1:-1].strip()
    half = len(_FILLER) // 2
    raw = b'{"traceEvents": [' + b", ".join(_FILLER[:half] + [body] + _FILLER[half:]) + b'], "displayTimeUnit": "ms"}'
    monkeypatch.setattr(loader, "CHUNK_BYTES", 4096)
    fast, typed = _decoded_both(raw, monkeypatch)
    assert differences(typed, fast) == []


def test_the_setting_turns_the_scanner_off(monkeypatch):
    monkeypatch.setenv(FAST_DECODE_ENV, "0")
    assert extractors._load_scanner() is None
    monkeypatch.setenv(FAST_DECODE_ENV, "1")
    assert extractors._load_scanner() is extractors._scan


def test_the_scan_refuses_foreign_arguments():
    with pytest.raises(TypeError):
        extractors._scan.scan("text", extractors._PHASE_TABLE)
    with pytest.raises(ValueError):
        extractors._scan.scan(b"[]", b"short")
    n, cols, tables, special, gpu = extractors._scan.scan(b"[]", extractors._PHASE_TABLE)
    assert n == 0 and all(len(c) == 0 for c in cols) and all(keys == [] for keys, _ in tables) and len(special) == len(gpu) == 0
    n, cols, *_ = extractors._scan.scan(b'[{"ph": "X", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1}]', extractors._PHASE_TABLE)
    ts = np.frombuffer(cols[extractors.EXTRACTED.index("ts")], np.float64)  # a writable column
    del cols
    ts[0] += 1  # writable, and alive while an array holds it
    assert n == 1 and ts.tolist() == [6.0]
    assert np.frombuffer(special, np.int64).size == 0


def test_numbers_convert_as_the_typed_decode_converts_them():
    rng = np.random.default_rng(29)
    spellings = []
    for _ in range(6000):  # up to 19 digits: one exact operation where it can; up to 45: the C library's rounding
        digits = "".join(map(str, rng.integers(0, 10, rng.integers(1, 20 if len(spellings) % 2 else 46))))
        point = int(rng.integers(0, len(digits) + 1))
        mantissa = (digits[:point] or "0").lstrip("0") or "0"
        text = mantissa + ("." + digits[point:] if point < len(digits) else "")
        if rng.random() < 0.4:
            text += "eE"[int(rng.integers(0, 2))] + ("", "+", "-")[int(rng.integers(0, 3))] + str(int(rng.integers(0, 40)))
        spellings.append(("-" if rng.random() < 0.3 else "") + text)
    taken = 0
    for text in spellings:
        piece = b'[{"ph":"X","name":"a","ts":%s,"dur":1}]' % text.encode()
        scanned = extractors._scan.scan(piece, extractors._PHASE_TABLE)
        expected = _TYPED.decode(piece)[0].ts
        if scanned is not None:
            taken += 1
            ts = np.frombuffer(scanned[1][5], np.float64)[0]
            assert ts == expected and np.signbit(ts) == np.signbit(expected), text
    assert taken > 4000
    # halfway and near-halfway cases between two doubles: ties go to the even one, as in msgspec
    for text in ("9007199254740993.0", "9007199254740995.0", "1.00000000000000011102230246251565404236316680908203125",
                 "1.00000000000000011102230246251565404236316680908203126", "0.1000000000000000055511151231257827",
                 "123456789012345678901234567890.5", "4.9406564584124654e-50", "1.7976931348623157e+99"):
        for sign in ("", "-"):
            piece = b'[{"ph":"X","name":"a","ts":%s,"dur":1}]' % (sign + text).encode()
            scanned = extractors._scan.scan(piece, extractors._PHASE_TABLE)
            assert scanned is not None, text
            assert np.frombuffer(scanned[1][5], np.float64)[0] == _TYPED.decode(piece)[0].ts == float(sign + text), text


@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_the_parallel_decode_builds_the_serial_model_in_threads_and_in_processes(pool, small_pieces, monkeypatch, tmp_path):
    """Threads only scan (this thread adds what they read, and decodes the pieces they leave); processes decode."""
    monkeypatch.setattr(loader, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv(DECODE_POOL_ENV, pool)
    scanned = []
    monkeypatch.setattr(offload, "scan_text",
                        lambda text, limit, *rest: scanned.append(len(text)) or extractors.scan_text(text, limit, *rest))
    events = []
    for i in range(3000):  # every 400th event breaks the schema (a piece decoded leniently), every 300th escapes a name
        events += [op('say "hi"' if i % 300 == 7 else f"aten::op{i % 97}", i * 10.0, 8, **{"Input Dims": [[i % 5]]}),
                   launch(i * 10.0 + 1, 2, i), gpu(f"k{i % 211}", i * 10.0 + 3, 4, i, grid=[1, 1, i % 3 + 1])]
        if i % 400 == 7:
            events.append({"ph": "X", "name": "bad", "pid": 100, "tid": 1, "ts": "soon", "dur": 1})
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps({"traceEvents": events}))
    paths = [mixed] + [p for p in shared_trace_files() if "resnet50_num_workers_0" in str(p)][:1]
    for path in paths:
        models = []
        for workers in ("1", "2"):
            monkeypatch.setenv(DECODE_WORKERS_ENV, workers)
            models.append(load_trace(str(path), cache_dir=None))
        assert differences(*models) == [], path.name
        assert int(np.count_nonzero(models[1].piece_kind == PIECE_MIDDLE)) >= 20
    assert bool(scanned) == (pool == "threads")


_MUTATION_BYTES = b'{}[],:"\\ \t\n0123456789.eE+-tfnulx\x00\x1f\x7f\xc3\xa9\xff\xed'


def test_mutated_pieces_are_scanned_exactly_or_left():
    """Random byte edits of a clean piece: whatever the scanner takes, the typed decode takes and builds alike."""
    rng = np.random.default_rng(2029)
    base = PIECES["plain_ops_and_kernels"][0][:-1] + b"," + PIECES["metadata_events"][0][1:-1] + b"," + \
        PIECES["memory_events"][0][1:-1] + b"," + PIECES["flows_with_int_string_and_null_ids"][0][1:]
    assert _model(base, scanned=True) is not None
    taken = 0
    for _ in range(6000):
        text = bytearray(base)
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(1, len(text) - 1))
            edit = int(rng.integers(0, 3))
            byte = _MUTATION_BYTES[int(rng.integers(0, len(_MUTATION_BYTES)))]
            if edit == 0:
                text[at] = byte
            elif edit == 1:
                text.insert(at, byte)
            else:
                del text[at]
        fast = _model(bytes(text), scanned=True)
        if fast is not None:
            taken += 1
            typed = _model(bytes(text), scanned=False)
            assert typed is not None and differences(typed, fast) == [], bytes(text)
    assert taken > 1000, taken


def test_many_distinct_keys_are_interned_in_the_scan():
    """200,000 distinct names, pids and tids, sequential and scattered: no probe run reaches the cap (`MAX_PROBES`,
    which only keys made to collide reach), so the scanner takes the piece."""
    rng = np.random.default_rng(7)
    scattered = rng.integers(-(10**17), 10**17, 100_000)
    events = [b'{"ph":"X","name":"op%d","pid":%d,"tid":"t%d","ts":1,"dur":1}' % (i, i, i * 7919) for i in range(100_000)]
    events += [b'{"ph":"X","name":"n%d","pid":%d,"tid":%d,"ts":1,"dur":1}' % (v, v, v // 3) for v in scattered.tolist()]
    scanned = extractors._scan.scan(b"[" + b",".join(events) + b"]", extractors._PHASE_TABLE)
    assert scanned is not None
    n, _, tables, _, _ = scanned
    assert n == 200_000 and len(tables[0][0]) == len(set(tables[0][0])) > 199_000


@pytest.mark.parametrize("pad", [0, 400])
def test_short_and_long_events_scan_past_the_first_sizing_of_the_columns(pad):
    """The scan sizes a piece's columns once for its length (an event per 128 bytes), then grows them: 30,000 events of
    about 50 bytes (more than twice that sizing) and of about 450 bytes give the typed decode's model."""
    events = [b'{"ph":"X","name":"op%d","pid":1,"tid":%d,"ts":%d,"dur":2%s}' % (i % 7, i % 3, i, b" " * pad)
              for i in range(30_000)]
    text = _piece(*events)
    assert len(text) > 1 << 20  # large enough to be sized up front
    fast = _model(text, scanned=True)
    assert fast is not None and fast.n_events == 30_000
    assert differences(_model(text, scanned=False), fast) == []


REBASE = 1712195495000000000  # the whole second `decode.PieceDecoder` rebases an exact file of this era to
_EXACT_OP = b'{"ph":"X","cat":"cpu_op","name":"%s","pid":1,"tid":1,"ts":%s,"dur":%s}'


EXACT_PIECES = {
    # Kineto's spellings: 3 padded digits, and the unpadded writer of 2024-03 (`.5` and `.05` are 5 ns), ints
    "kineto_spellings": (_piece(*(_EXACT_OP % (b"op", ts, dur) for ts, dur in (
        (b"1712195495519689.047", b"0.950"), (b"1712195495519689.5", b"4.928"), (b"1712195495519690.05", b"12"),
        (b"1712195495519690.005", b"0.5"), (b"1712195495519691", b"0"), (b"1712195495000000.000", b"-1.5")))), TAKEN),
    # past 3 digits the fraction is µs, rounded to the ns half to even (`.0005` -> 0, `.0015` -> 2)
    "longer_fractions": (_piece(*(_EXACT_OP % (b"op", ts, dur) for ts, dur in (
        (b"1712195495519689.0475", b"0.0005"), (b"1712195495519689.0015", b"0.00150"), (b"1712195495519689.123456789",
                                                                                        b"2.0004999"),
        (b"1712195495519689.00050000001", b"7.9995")))), TAKEN),
    "gpu_args_with_fractions": (_piece(b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1712195495505582.988,"dur":4.928,'
        b'"args":{"device":0,"stream":7,"correlation":7,"registers per thread":30,"blocks per SM":5.300000,'
        b'"warps per SM":21.200001,"grid":[4,106,1],"block":[128,1,1],"est. achieved occupancy %":33.5}}'), TAKEN),
    "time_far_from_the_rebase": (_piece(_EXACT_OP % (b"op", b"0.5", b"1")), LEFT),  # 2^53 ns and more before it
    "time_with_an_exponent": (_piece(_EXACT_OP % (b"op", b"1.712195495519689e15", b"1")), LEFT),
    "null_time": (_piece(_EXACT_OP % (b"op", b"null", b"1")), LEFT),
    "time_as_a_string": (_piece(_EXACT_OP % (b"op", b'"1712195495519689.5"', b"1")), LEFT),
    "more_digits_than_decimal_keeps": (_piece(_EXACT_OP % (b"op", b"1712195495519689.047000000000000000001", b"1")), LEFT),
}


@pytest.mark.parametrize("name", list(EXACT_PIECES))
def test_a_piece_with_exact_times_is_scanned_as_the_exact_decode_reads_it(name):
    text, expected = EXACT_PIECES[name]
    fast = _model(text, True, REBASE)
    assert (fast is not None) == expected
    if fast is not None:
        assert differences(_model(text, False, REBASE), fast) == []
        assert not np.array_equal(fast.ts_ns, _model(text, scanned=True).ts_ns)  # a double of epoch µs loses the ns


def test_exact_times_of_every_spelling_scan_to_the_reference_value():
    """Random time texts in a file with exact times: whatever the scanner takes is the reference's (ns - rebase) / 1000,
    bit for bit; a rebase beyond int64 leaves the piece."""
    rng = np.random.default_rng(1712)
    taken = 0
    for _ in range(4000):
        whole = str(REBASE // 1000 + int(rng.integers(-(10**9), 10**11)))
        digits = int(rng.integers(0, 12))
        text = whole + ("." + "".join(map(str, rng.integers(0, 10, digits))) if digits else "")
        if rng.random() < 0.1:
            text += "e0"
        dur = ("-" if rng.random() < 0.2 else "") + str(int(rng.integers(0, 10**6))) + "." + str(int(rng.integers(0, 10**4)))
        piece = b'[{"ph":"X","name":"a","ts":%s,"dur":%s}]' % (text.encode(), dur.encode())
        scanned = extractors._scan.scan(piece, extractors._PHASE_TABLE, 1 << 62, False, REBASE)
        if scanned is None:
            assert "e" in text or digits > 12, text
            continue
        taken += 1
        ts, got_dur = (np.frombuffer(scanned[1][extractors.EXTRACTED.index(k)], np.float64)[0] for k in ("ts", "dur"))
        assert ts == (exact_times._raw_ns(msgspec.Raw(text.encode())) - REBASE) / 1000, text
        assert got_dur == exact_times._raw_ns(msgspec.Raw(dur.encode())) / 1000, dur
    assert taken > 3000
    assert extractors._scan.scan(b'[{"ts":1.5}]', extractors._PHASE_TABLE, 1 << 62, False, 2**70) is None


@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_a_file_with_exact_times_is_scanned_in_parallel_into_the_serial_model(pool, small_pieces, taken, monkeypatch,
                                                                             tmp_path):
    """Its pieces go to the scanner and the workers once a piece holding a time has set the file's rebase; the first
    pieces here hold none (metadata only), so the rebase comes from a middle piece decoded here."""
    monkeypatch.setattr(loader, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv(DECODE_POOL_ENV, pool)
    scanned = []  # the pieces the threads scanned, by whether the scanner read them
    monkeypatch.setattr(offload, "scan_text", lambda *args: scanned.append((result := extractors.scan_text(*args)) is not None) or result)
    events = [b'{"ph":"M","name":"thread_name","pid":1,"tid":%d,"args":{"name":"worker %d"}}' % (i, i) for i in range(3000)]
    spellings = [b".772", b".5", b".05", b".005", b"", b".0004", b".12345"]
    for i in range(6000):
        ts = b"%d%s" % (1712195495519703 + 3 * i, spellings[i % 7])
        events.append(_EXACT_OP % (b"aten::op%d" % (i % 13), ts, b"%d%s" % (i % 5, spellings[(i + 3) % 7])))
        events.append(b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":%s,"dur":1.25,"args":{"correlation":%d,'
                      b'"device":0,"stream":7,"blocks per SM":0.6625}}' % (ts, i))
    path = tmp_path / "exact.pt.trace.json"
    path.write_bytes(b'{"schemaVersion": 1, "traceEvents": [' + b",\n".join(events) + b"]}")
    assert exact_times.needs_exact_times(path.read_bytes(), 0, 1 << 20)
    models = []
    for workers in ("1", "2"):
        monkeypatch.setenv(DECODE_WORKERS_ENV, workers)
        models += load_both(path, monkeypatch)
    assert all(differences(models[0], m) == [] for m in models[1:])
    assert taken[True] >= 15 and int(np.count_nonzero(models[2].piece_kind == PIECE_MIDDLE)) >= 15
    assert (scanned.count(True) >= 10 and all(scanned)) if pool == "threads" else not scanned
    kernels = models[0].gpu_arg_blocks_per_sm
    assert kernels.size == 6000 and np.all(kernels == 0.6625)  # a fraction in args decodes as in any other file


RESTS = {  # what may follow the events' `]` in a tail piece: (the text, whether the scanner may take the events)
    "end_of_document": (b"}", True),
    "keys_after_the_events": (b', "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000, '
                              b'"deviceProperties": [{"id": 0, "name": "H100", "x": 1.5}]}', True),
    "whitespace_around": (b" \n } \n\n", True),
    "a_second_event_array": (b', "traceEvents": [{"ph":"X","name":"z","pid":1,"tid":1,"ts":1,"dur":1}]}', False),
    "a_second_empty_array_spelled_with_an_escape": (b', "traceEvent\\u0073": []}', False),  # the last key wins
    "a_second_null_array": (b', "traceEvents": null}', False),
    "an_ill_typed_key": (b', "baseTimeNanoseconds": "soon"}', False),
    "text_after_the_document": (b"} x", False),
    "truncated_document": (b', "displayTimeUnit": "m', False),
}


@pytest.mark.parametrize("rest", list(RESTS))
@pytest.mark.parametrize("name", _IN_A_FILE)
def test_every_case_in_the_tail_gives_the_same_model(name, rest, monkeypatch):
    """A file of one piece: its first event is the head, every other event the tail, which the scanner reads when it
    can (`add_tail_text`) and the typed decode otherwise; the document after the events decides nothing else."""
    body = PIECES[name][0].strip()[1:-1].strip()
    text, may_take = RESTS[rest]
    raw = b'{"schemaVersion": 1, "traceEvents": [' + b", ".join(_FILLER[:30] + [body]) + b"]" + text
    took = []
    add_tail_text = ColumnBuilder.add_tail_text
    monkeypatch.setattr(ColumnBuilder, "add_tail_text", lambda self, *args, **kw: took.append(
        add_tail_text(self, *args, **kw)) or took[-1])
    fast, typed = _decoded_both(raw, monkeypatch)
    assert differences(typed, fast) == []
    if not exact_times.needs_exact_times(raw, 0, len(raw)):  # (a 16-digit time far from the rebase is left, rightly)
        assert took.count(True) == (1 if may_take and PIECES[name][1] else 0)  # only with the scanner on, of course
