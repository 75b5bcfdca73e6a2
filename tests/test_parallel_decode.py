"""The parallel decode (issue 29, `KINETOSCOPE_DECODE_WORKERS`) builds byte for byte the serial decode's model.

Pieces are cut small (64 KiB) and the small-file threshold is lifted, so every shared trace is decoded by worker
processes in many pieces, merged in the parent: ids interned in each worker are remapped to the serial ones.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import mmap
import os
import shutil
import threading

import numpy as np
import pytest
from conftest import kernel, launch, op, sample_trace_files, shared_trace_files, trace_doc
from hostile_corpus import CASES, write_corpus
from kinetoscope.trace import budgets, loader, offload
from kinetoscope.trace.budgets import DECODE_WORKERS_ENV, SettingError, decode_workers, parse_decode_workers
from kinetoscope.trace.decode import PIECE_MIDDLE
from kinetoscope.trace.loader import TraceError, load_trace
from kinetoscope.trace.storage import StorageError

SMALL_PIECE = 1 << 16


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(loader, "CHUNK_BYTES", SMALL_PIECE)
    monkeypatch.setattr(loader, "MIN_CHUNK_BYTES", SMALL_PIECE)
    monkeypatch.setattr(loader, "PARALLEL_MIN_BYTES", 0)


def decode(path, workers: int, monkeypatch):
    monkeypatch.setenv(DECODE_WORKERS_ENV, str(workers))
    try:
        return load_trace(str(path), cache_dir=None)
    except TraceError as exc:
        return exc


def differences(serial, parallel) -> list[str]:
    """The fields that differ (arrays: values, dtype and shape; dicts: their order too)."""
    if isinstance(serial, TraceError) or isinstance(parallel, TraceError):
        return [] if str(serial) == str(parallel) and type(serial) is type(parallel) else [f"{serial!r} != {parallel!r}"]
    out = []
    for f in dataclasses.fields(serial):
        a, b = getattr(serial, f.name), getattr(parallel, f.name)
        if isinstance(a, np.ndarray):
            if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                out.append(f.name)
        elif a != b or (isinstance(a, dict) and list(a) != list(b)):
            out.append(f.name)
    return out


def parallel_pieces(model) -> int:
    return int(np.count_nonzero(model.piece_kind == 1))  # decode.PIECE_MIDDLE: the pieces the workers decoded


@pytest.mark.parametrize("path", shared_trace_files() + sample_trace_files(), ids=str)
def test_parallel_equals_serial_on_real_traces(path, small_pieces, monkeypatch, tmp_path):
    copies = [path]
    if path.name.endswith(".gz"):  # the plain text too (read by the workers straight from the file)
        plain = tmp_path / path.name[:-3]
        with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        copies.append(plain)
    for copy in copies:
        serial, parallel = decode(copy, 1, monkeypatch), decode(copy, 2, monkeypatch)
        assert differences(serial, parallel) == [], copy
        if copy.name.endswith(".json"):  # a plain file is mapped and cut in place: the streamed read builds the same
            with monkeypatch.context() as m:
                streamed(m)
                assert differences(decode(copy, 1, m), serial) == [], copy


def streamed(monkeypatch) -> None:
    """Read plain files as a stream (the decode of a file that cannot be mapped)."""
    monkeypatch.setattr(loader, "_mapped", lambda *args, **kwargs: contextlib.nullcontext())


def mixed_trace(path, n: int = 3000) -> None:
    events = []
    for i in range(n):  # launches, kernels, flows and memory: every kind of column the pieces carry
        t = i * 10.0
        events += [op(f"aten::op{i % 97}", t, 8, tid=1 + i % 3, **{"Input Dims": [[i % 5, 3]]}),
                   launch(t + 1, 2, corr=i), kernel(f"k{i % 211}", t + 3, 4, corr=i),
                   {"ph": "i", "name": "[memory]", "pid": 100, "tid": 1, "ts": t + 2,
                    "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512, "Total Allocated": i}}]
    path.write_text(json.dumps(trace_doc(events), indent=1))


@pytest.mark.parametrize("workers", [1, 3])
def test_a_mapped_file_is_cut_in_place_scanned_where_it_lies_and_given_back(workers, small_pieces, monkeypatch, tmp_path,
                                                                           caplog):
    """Every middle piece is scanned from the mapping (none falls back: a `[` lost with a dropped page would), the
    pages before each merged piece are given back in order, never the page the next piece's `[` was written in, and
    the progress climbs to the end of the text."""
    path = tmp_path / "mapped.json"
    mixed_trace(path)
    with monkeypatch.context() as m:
        streamed(m)
        reference = decode(path, 1, m)
    scanned, dropped, shares = [], [], []
    real_scan, real_added = offload.scan_text, loader._Reached.added
    monkeypatch.setattr(offload, "scan_text", lambda text, *rest: scanned.append(type(text)) or real_scan(text, *rest))
    monkeypatch.setattr(loader._Reached, "added", lambda self, pos: dropped.append((pos, self.dropped))
                        or real_added(self, pos))
    monkeypatch.setenv(DECODE_WORKERS_ENV, str(workers))
    with caplog.at_level("INFO", logger=loader.__name__):
        mapped = load_trace(str(path), cache_dir=None, progress=shares.append)
    assert "decoding serially" not in caplog.text
    assert differences(reference, mapped) == []
    middle = parallel_pieces(mapped)
    assert middle > 20 and np.array_equal(mapped.piece_kind[1:-1], np.ones(middle))  # scanned or not, all were middle
    if workers > 1:
        assert scanned.count(memoryview) == middle  # views of the mapping, not copies
    ends = [pos for pos, _ in dropped]
    assert ends == sorted(ends) and ends[-1] >= os.path.getsize(path) - 2 * SMALL_PIECE
    starts = mapped.piece_start[1:]
    assert all(before <= pos - pos % mmap.PAGESIZE for pos, before in dropped)
    assert {pos for pos, _ in dropped} >= set(starts[:-1].tolist())  # each piece's start: its pages before are dropped
    assert shares == sorted(shares) and shares[-1] >= 0.99 and len(shares) > middle


def test_prefetched_blocks_come_in_order_with_the_error_last_and_an_early_stop_stops_the_producer():
    """A gzip file inflates in a thread of its own (`_prefetched`): its blocks arrive in order, an error the inflater
    meets is raised at its place in the stream, and a consumer that stops early leaves no thread behind."""
    def blocks(n, fail=False):
        for i in range(n):
            yield bytes([i]) * 10
        if fail:
            raise StorageError("corrupt gzip: invalid block type")

    assert list(loader._prefetched(blocks(50))) == [bytes([i]) * 10 for i in range(50)]
    got = []
    with pytest.raises(StorageError, match="invalid block type"):
        for block in loader._prefetched(blocks(5, fail=True)):
            got.append(block)
    assert len(got) == 5
    closed = []

    def endless():
        try:
            i = 0
            while True:
                i += 1
                yield b"x" * i
        finally:
            closed.append(True)
    stream = loader._prefetched(endless())
    assert next(stream) == b"x"
    stream.close()  # the consumer stops: the producer ends and the source is closed
    assert closed == [True]
    assert not [t for t in threading.enumerate() if t.name == "kinetoscope-inflate"]


def test_a_file_that_cannot_be_mapped_is_read_as_a_stream(small_pieces, monkeypatch, tmp_path):
    path = tmp_path / "plain.json"
    mixed_trace(path, 1000)
    expected = decode(path, 2, monkeypatch)

    def refuse(*args, **kwargs):
        raise OSError(19, "No such device")  # a file system without mmap
    monkeypatch.setattr(loader.mmap, "mmap", refuse)
    assert differences(expected, decode(path, 2, monkeypatch)) == []
    assert differences(expected, decode(path, 1, monkeypatch)) == []


def test_a_small_trace_of_every_kind_is_equal_and_really_parallel(small_pieces, monkeypatch, tmp_path, caplog):
    """String flow ids, skipped events, names first seen in a later piece, memory events: all remapped."""
    events = [{"ph": "M", "name": "thread_name", "pid": 100, "tid": 1, "args": {"name": "main"}}]
    for i in range(3000):
        t = i * 10.0
        events += [op(f"aten::op{i % 97}", t, 8, tid=1 + i % 3, **{"Input Dims": [[i % 5, 3]]}),
                   launch(t + 1, 2, corr=i), kernel(f"k{i % 211}" if i < 1500 else f"late{i % 13}", t + 3, 4, corr=i),
                   {"ph": "s", "cat": "ac2g", "name": "f", "pid": 100, "tid": 1, "ts": t + 1, "id": f"str{i % 7}"},
                   {"ph": "f", "cat": "ac2g", "name": "f", "pid": 0, "tid": 7, "ts": t + 3, "id": i, "bp": "e"},
                   {"ph": "i", "name": "[memory]", "pid": 100, "tid": 1, "ts": t + 2,
                    "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512, "Total Allocated": i}}]
        if i % 400 == 7:
            events.append({"ph": "X", "name": "bad", "pid": 100, "tid": 1, "ts": "soon", "dur": 1})
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(trace_doc(events)))
    serial = decode(path, 1, monkeypatch)
    with caplog.at_level("INFO", logger=loader.__name__):
        parallel = decode(path, 3, monkeypatch)
    assert not isinstance(serial, TraceError)
    assert "decoding serially" not in caplog.text  # the workers decoded the middle pieces
    assert parallel_pieces(serial) > 20
    assert serial.skipped and differences(serial, parallel) == []


HOSTILE = ("truncated_json", "nan_and_bare_na_in_a_dense_file", "whitespace_between_events", "tiny_events_past_the_event_budget",
           "exact_16_digit_times", "invalid_utf8_and_lone_surrogates", "huge_and_odd_numbers", "1m_flows_one_id")


@pytest.mark.parametrize("case", [c for c in CASES if c.name in HOSTILE], ids=lambda c: c.name)
def test_hostile_files_give_the_same_model_or_error(case, monkeypatch, tmp_path):
    """Default piece sizes (the hostile files are large enough to be decoded in parallel), threshold lifted."""
    monkeypatch.setattr(loader, "PARALLEL_MIN_BYTES", 0)
    (_, path), = write_corpus(tmp_path, [case])
    serial, parallel = decode(path, 1, monkeypatch), decode(path, 2, monkeypatch)
    assert differences(serial, parallel) == []


def test_a_look_alike_cut_falls_back_to_the_serial_decode(small_pieces, monkeypatch, tmp_path, caplog):
    """An event boundary's bytes inside a string: the worker reports it and the file is decoded serially."""
    fake = "}, {" * 20000  # 80 KB of look-alike boundaries in one name: pieces are cut inside it
    events = [op(f"aten::op{i}", i * 10.0, 5) for i in range(2000)] + [op(fake, 30000.0, 5)]
    events += [op(f"aten::op{i}", 40000.0 + i * 10, 5) for i in range(2000)]
    path = tmp_path / "lookalike.json"
    path.write_text(json.dumps(trace_doc(events)))
    serial = decode(path, 1, monkeypatch)
    with caplog.at_level("INFO", logger=loader.__name__):
        parallel = decode(path, 2, monkeypatch)
    assert "decoding serially" in caplog.text
    assert not isinstance(serial, TraceError) and fake in serial.names
    assert differences(serial, parallel) == []


def test_the_event_budget_holds_in_the_workers(small_pieces, monkeypatch, tmp_path):
    monkeypatch.setenv(budgets.MAX_EVENTS_ENV, "1000")
    monkeypatch.setattr(budgets, "EVENTS_FLOOR", 1000)
    path = tmp_path / "many.json"
    path.write_text(json.dumps(trace_doc([op("aten::add", i * 2.0, 1) for i in range(5000)])))
    serial, parallel = decode(path, 1, monkeypatch), decode(path, 2, monkeypatch)
    assert isinstance(serial, TraceError) and "budget of 1,000 events" in str(serial)
    assert differences(serial, parallel) == []


def test_a_gzip_load_that_fails_midway_leaves_no_inflate_thread(small_pieces, monkeypatch, tmp_path):
    """The refusal (here the event budget, met while the inflate thread is still ahead) closes the stream at once,
    even while the error, whose traceback holds the load's frames, is kept (as a test or a log record keeps it)."""
    monkeypatch.setenv(budgets.MAX_EVENTS_ENV, "1000")
    monkeypatch.setattr(budgets, "EVENTS_FLOOR", 1000)
    monkeypatch.setenv(DECODE_WORKERS_ENV, "2")
    path = tmp_path / "many.json.gz"
    path.write_bytes(gzip.compress(json.dumps(trace_doc([op("aten::add", i * 2.0, 1) for i in range(50_000)])).encode()))
    with pytest.raises(TraceError, match="budget of 1,000 events") as kept:
        load_trace(str(path), cache_dir=None)
    assert kept.value.__traceback__ is not None
    assert not [t for t in threading.enumerate() if t.name == "kinetoscope-inflate"]


@pytest.mark.parametrize("text, expected", [("1", 1), ("2", 2), (" 4 ", 4)])
def test_the_setting_parses_whole_numbers(text, expected):
    assert parse_decode_workers(text) == expected


def test_auto_is_the_cores_this_process_may_use():
    assert parse_decode_workers("auto") == min(len(os.sched_getaffinity(0)), budgets.AUTO_DECODE_WORKERS)


@pytest.mark.parametrize("text", ["0", "-2", "two", "1.5", "100000", ""])
def test_bad_values_are_named(text):
    with pytest.raises(SettingError, match=DECODE_WORKERS_ENV):
        parse_decode_workers(text)


def test_a_bad_value_decodes_serially_and_says_why(monkeypatch):
    monkeypatch.setenv(DECODE_WORKERS_ENV, "many")
    workers, problem = decode_workers()
    assert workers == 1 and "'many'" in problem and DECODE_WORKERS_ENV in problem
    monkeypatch.delenv(DECODE_WORKERS_ENV)
    assert decode_workers() == (parse_decode_workers("auto"), "")  # the default: the cores


_FORKED = """
import os, sys, time
from kinetoscope.trace import loader
from kinetoscope.pipeline import analyze_and_report
loader.CHUNK_BYTES = loader.MIN_CHUNK_BYTES = 1 << 16
loader.PARALLEL_MIN_BYTES = 0
os.environ["KINETOSCOPE_DECODE_WORKERS"] = "2"
parent = loader.load_trace(sys.argv[1], cache_dir=None)  # this process's pools now exist, with their threads
analyze_and_report(parent)
pid = os.fork()
if pid == 0:  # the child: decode again in parallel and analyse; a pool of the parent's would wait forever
    child = loader.load_trace(sys.argv[1], cache_dir=None)
    analyze_and_report(child)
    os._exit(0 if child.n_events == parent.n_events and (child.ts_ns == parent.ts_ns).all() else 3)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.05)
os.kill(pid, 9)
sys.exit("the forked child's parallel decode did not finish in 60 s")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_starts_its_own_decode_threads(tmp_path):
    """The pools of a parent that decoded in parallel have no threads in a forked child: the child starts its own
    (else its first parallel decode, or the table index's thread, would wait forever). In a fresh interpreter: a
    fork of this test process, with its other tests' threads, could stop on a lock one of them held."""
    import subprocess
    import sys

    path = tmp_path / "mixed.json"
    mixed_trace(path, 1000)
    done = subprocess.run([sys.executable, "-c", _FORKED, str(path)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("where", ["first", "middle"])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_mapped_file_keeps_the_one_event_budget(where, workers, small_pieces, monkeypatch, tmp_path):
    """The whole text is in memory at once, but the window still moves through it as a stream would: an event longer
    than its budget is refused by name, as when the file is read, instead of becoming one huge piece."""
    monkeypatch.setenv(budgets.EVENT_BYTES_ENV, str(256 << 10))
    events = [op(f"aten::op{i}", i * 10.0, 5) for i in range(3000)]
    events.insert(0 if where == "first" else 1500, op("x" * (1 << 20), 15000.0, 5))  # a 1 MiB name
    path = tmp_path / "huge_event.json"
    path.write_text(json.dumps(trace_doc(events)))
    with monkeypatch.context() as m:
        streamed(m)
        expected = decode(path, workers, m)
    mapped = decode(path, workers, monkeypatch)
    assert isinstance(expected, TraceError) and "budget of 262,144 bytes" in str(expected)
    assert differences(expected, mapped) == []


def test_reserved_row_columns_give_the_model_of_joined_ones(small_pieces, monkeypatch, tmp_path):
    """Reserved row columns (`RowStore` from RESERVED_TEXT_BYTES on), sized for the rows the text is projected to hold
    and grown when a piece does not fit, give the same model as joined columns, in processes or threads; a text that
    large is cut in pieces of LARGE_TEXT_CHUNKS chunks by the serial decode and the parallel one alike."""
    from kinetoscope.trace import rowstore
    path = tmp_path / "plain.json"
    mixed_trace(path, 3000)
    monkeypatch.setattr(loader, "RESERVED_TEXT_BYTES", 0)  # pieces of two chunks at any size
    expected = decode(path, 2, monkeypatch)
    monkeypatch.setattr(rowstore, "RESERVED_TEXT_BYTES", 0)  # reserved at any size
    monkeypatch.setattr(rowstore, "_MIN_ROWS", 64)  # the first pieces' projection decides
    reserve, sizes = rowstore._reserve, []

    def counted(rows, dtype):
        sizes.append(rows)
        return reserve(rows, dtype)
    monkeypatch.setattr(rowstore, "_reserve", counted)
    for workers in (1, 2):
        sizes.clear()
        model = decode(path, workers, monkeypatch)
        assert differences(expected, model) == [] and sizes  # reserved, really
        middle = (model.piece_end - model.piece_start)[model.piece_kind == PIECE_MIDDLE]
        assert middle.size > 1 and middle.max() > SMALL_PIECE


def _gzip_trailer(path, stored: int, isize: int) -> str:
    """A sparse file of `stored` bytes ending in the gzip trailer's ISIZE field."""
    with open(path, "wb") as handle:
        handle.truncate(stored - 4)
        handle.seek(stored - 4)
        handle.write(isize.to_bytes(4, "little"))
    return str(path)


def test_a_gzip_text_past_4_gib_is_not_taken_for_its_wrapped_size(tmp_path):
    """ISIZE is the text's size mod 4 GiB: a 4.2 GB text in a 210 MB file says 0.2 GB (it would decode as a short
    text, fewer buffers ahead); corrected by 4 GiBs where the file is large enough to hold one and the text would
    otherwise be under MIN_TEXT_RATIO times the file."""
    gib, mib = 1 << 30, 1 << 20
    cases = [(100, 50, 50), (16 * mib, 300 * mib, 300 * mib),  # small files, real sizes as they are
             (280 * mib, 2 * gib, 2 * gib),  # a plausible ratio: not wrapped
             (280 * mib, gib, gib + (4 << 30)), (210 * mib, 200 * mib, 200 * mib + (4 << 30)),  # past 4 GiB
             (1500 * mib, gib, gib + (8 << 30))]  # past 8 GiB: 9 GiB, at least five times the file
    for stored, isize, expected in cases:
        assert loader._gzip_text_size(_gzip_trailer(tmp_path / "t.json.gz", stored, isize)) == expected, (stored, isize)
    assert loader._long_text(loader._gzip_text_size(_gzip_trailer(tmp_path / "t.json.gz", 210 * mib, 200 * mib)))


@pytest.mark.parametrize("long_text", [False, True])
def test_a_gzip_text_keeps_fewer_copies_ahead_below_the_long_text_size_and_the_same_model(long_text, small_pieces,
                                                                                          monkeypatch, tmp_path):
    """Inflated blocks and copied pieces ahead of the merge: one of each per worker for a text below
    SHORT_AHEAD_TEXT_BYTES, two from it up (`Offloader.in_flight`, `_prefetched`'s depth); the model is the serial
    one either way."""
    path = tmp_path / "mixed.json"
    mixed_trace(path)
    gz = tmp_path / "mixed.json.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    monkeypatch.setattr(loader, "SHORT_AHEAD_TEXT_BYTES", 1 if long_text else 1 << 40)
    depths, ahead = [], []
    real_prefetched, real_merge = loader._prefetched, offload.Offloader._merge_next
    monkeypatch.setattr(loader, "_prefetched", lambda blocks, depth=2: depths.append(depth) or real_prefetched(blocks, depth))
    monkeypatch.setattr(offload.Offloader, "_merge_next",
                        lambda self: ahead.append((len(self.pending), self.in_flight)) or real_merge(self))
    serial = decode(gz, 1, monkeypatch)
    parallel = decode(gz, 3, monkeypatch)
    assert differences(serial, parallel) == [] and parallel_pieces(parallel) > 20
    per_worker = 2 if long_text else 1
    assert depths == [per_worker]
    assert ahead and {limit for _, limit in ahead} == {3 * per_worker}
    assert max(pending for pending, _ in ahead) == 3 * per_worker  # the queue filled to its bound, never past it


def test_a_small_gzip_text_decodes_in_a_window_of_its_own_size_and_a_short_trailer_costs_only_pieces(tmp_path, monkeypatch):
    """The decode window of a gzip text is sized from its trailer's hint, as a plain file's from its size (a 4 MB text
    in a 16 MiB-chunk window: 33 MiB zero-filled, most of a small trace's peak); a multi-member file whose last member
    is short (ISIZE counts only that one) is never cut finer than the file's own size, and decodes to the same model."""
    from kinetoscope.trace import pieces
    events = [e for i in range(3000) for e in (op(f"aten::op{i % 50}", 10 * i, 5), launch(10 * i + 1, 2, corr=i + 1),
                                              kernel(f"k{i % 7}", 10 * i + 3, 4, corr=i + 1))]
    text = json.dumps(trace_doc(events)).encode()
    plain = tmp_path / "p.pt.trace.json"
    plain.write_bytes(text)
    one = tmp_path / "one.pt.trace.json.gz"
    one.write_bytes(gzip.compress(text))
    cut = len(text) - 64  # two members: the last one's ISIZE says 64 bytes
    two = tmp_path / "two.pt.trace.json.gz"
    two.write_bytes(gzip.compress(text[:cut]) + gzip.compress(text[cut:]))
    windows = []
    real = pieces._Window.__init__

    def spy(self, capacity):
        windows.append(capacity)
        real(self, capacity)
    monkeypatch.setattr(pieces._Window, "__init__", spy)
    expected = decode(plain, 1, monkeypatch)
    for path, floor in ((one, len(text)), (two, two.stat().st_size)):
        windows.clear()
        found = differences(expected, decode(path, 1, monkeypatch))
        assert [f for f in found if path is one or not f.startswith("piece_")] == [], path.name  # cut finer, else equal
        assert windows and 2 * floor <= windows[0] <= 2 * len(text) + (1 << 20) < loader.CHUNK_BYTES, (path.name, windows)


def test_the_piece_size_follows_the_text_size():
    """Short texts (below SHORT_AHEAD_TEXT_BYTES) in half pieces: their in-flight pieces set the parallel decode's peak;
    longer ones whole, the longest (from RESERVED_TEXT_BYTES) double; a file of unknown size whole; a gzip hint below
    the file's own size is not believed; never below MIN_CHUNK_BYTES nor above the text."""
    chunk, mib = loader.CHUNK_BYTES, 1 << 20
    assert loader._chunk_bytes(None, None, 10 * mib) == chunk
    assert loader._chunk_bytes(300 * mib, None, 300 * mib) == chunk // loader.SHORT_TEXT_DIVISOR < chunk
    assert loader._chunk_bytes(None, 300 * mib, 16 * mib) == chunk // loader.SHORT_TEXT_DIVISOR
    assert loader._chunk_bytes(loader.SHORT_AHEAD_TEXT_BYTES, None, 0) == chunk
    assert loader._chunk_bytes(None, loader.RESERVED_TEXT_BYTES, mib) == loader.LARGE_TEXT_CHUNKS * chunk
    assert loader._chunk_bytes(4 * mib, None, 4 * mib) == 4 * mib and loader._chunk_bytes(100, None, 100) == loader.MIN_CHUNK_BYTES
    assert loader._chunk_bytes(None, 64, 3 * mib) == 3 * mib  # a multi-member file's last ISIZE: the file's size


def test_a_gzip_text_is_inflated_in_blocks_of_its_piece_size(tmp_path, monkeypatch):
    events = [op(f"aten::op{i % 50}", 10 * i, 5) for i in range(20000)]
    text = json.dumps(trace_doc(events)).encode()
    path = tmp_path / "t.pt.trace.json.gz"
    path.write_bytes(gzip.compress(text))
    sizes = []
    real = loader.iter_blocks
    monkeypatch.setattr(loader, "iter_blocks", lambda p, block_bytes: sizes.append(block_bytes) or real(p, block_bytes))
    for workers in (1, 2):
        sizes.clear()
        decode(path, workers, monkeypatch)
        assert sizes == [loader._chunk_bytes(None, len(text), path.stat().st_size)] == [len(text)], (workers, sizes)
