"""Typed events -> columnar TraceModel, one decoded chunk at a time.

`ColumnBuilder.add` turns a chunk of event structs into raw per-event columns (strings interned into
tables shared by all chunks), so the structs of a chunk can be freed before the next is decoded.
`finish` does the global work once: dense ids, lanes, the (lane, ts, -dur) order, nesting depth and
launch links. No per-event step runs Python bytecode: at 10^6 events a loop body of even 1 µs would
cost a second, more than the whole decode. The extraction from structs is one pass of `_columns.c`
(compiled at install), or, without a compiler, one C-level `map` into `np.fromiter` per column. Most middle
pieces skip the structs altogether: `_scan.c` reads their text straight into the same columns (`add_text`).
"""
from __future__ import annotations

import gc
import itertools
import json
import os
from concurrent.futures import Executor, Future
from functools import partial
from itertools import repeat
from operator import attrgetter
from typing import Any, Callable, Optional

import msgspec
import numpy as np

from . import heap
from .budgets import BudgetExceeded, fast_decode, pure_python
from .decode import WHOLE_FILE, Args, Event, NotSplittable, Piece, TraceDoc, decode_middle
from .deps import MSGSPEC_REFUSALS
from .gpu_args import FIELDS as GPU_FIELDS
from .gpu_args import GpuArgs
from .intervals import nesting_depth
from .kinds import ACTIVITY_KINDS, GPU_KINDS, LAUNCH_KINDS, Kind, is_collective_name, is_comm_kernel_name, kind_of_category
from .lanes import RawIds, assign_lanes
from .model import TraceModel, union
from .validator_args import ValidatorArgs

PH_X, PH_I, PH_S, PH_F, PH_M, PH_OTHER = 0, 1, 2, 3, 4, 5
_PHASES = {"X": PH_X, "i": PH_I, "I": PH_I, "s": PH_S, "f": PH_F, "t": PH_F, "M": PH_M}
MEMORY_NAME = "[memory]"
_MEMORY_ARGS = ("device_type", "device_id", "bytes", "total_allocated", "total_reserved", "addr")
_get = {name: attrgetter(name) for name in ("ph", "name", "cat", "pid", "tid", "ts", "dur", "args", "id", "correlation",
                                            "external_id", "external_id_2021", "device", "stream", "ev_idx", "ev_idx_legacy",
                                            "input_dims", "call_stack", *_MEMORY_ARGS)}
_NO_SHAPE = (b"", b"null")  # Input Dims absent (or null): no shape


def _first_frame(raw: Any) -> bytes:
    """The JSON text of a raw `Call stack` string's first (innermost) frame; b"" when none (not a string, empty)."""
    text = bytes(raw)
    if len(text) < 2 or text[:1] != b'"':
        return b""
    return text[1:-1].split(b";", 1)[0]


# Per-event columns, in the order both extractors produce them. Rows where a column does not apply are
# masked by `ColumnBuilder.add` (correlation and External id: complete events; device and stream: GPU
# activities; id: flow events; memory args: `[memory]` events; ev_idx: complete events), so extractors may
# leave anything there.
_EXTRACTED = ("ph", "name", "cat", "pid", "tid", "ts", "dur", "correlation", "external_id", "device", "stream", "id",
              *(f"mem_{k}" for k in _MEMORY_ARGS), "ev_idx", "shape", "frame")
_EXTRACTED_DTYPES = (np.int8, *(np.int64,) * 4, np.float64, np.float64, *(np.int64,) * 5, *(np.float64,) * len(_MEMORY_ARGS),
                     np.int64, np.int64, np.int64)
_PHASE_TABLE = bytes(_PHASES.get(chr(c), PH_OTHER) if c else PH_OTHER for c in range(256))
ID_OTHER = np.iinfo(np.int64).min  # a flow id that is not an int below 2^62 in magnitude: interned by `add`
_ID_LIMIT = 1 << 62


def _columns_py(events: list[Event], tables: tuple[dict, ...], off: int, legacy: bool) -> dict[str, np.ndarray]:
    """The reference extractor: one C-level `map` pass per column (`_columns.c` does them all in one pass).

    Args:
        events: one chunk of decoded events.
        tables: name, cat, pid, tid, input-shape and call-frame interning tables (value -> global row of its first
            occurrence; shapes are keyed by their JSON text, frames by the JSON text of a Call stack's first frame).
        off: the global row of `events[0]`.
        legacy: the chunk's text holds the 2021 key "external id" (else that column is all absent).
    """
    n = len(events)
    rows = range(off, off + n)
    cols = {"ph": np.fromiter(map(_PHASES.get, map(_get["ph"], events), repeat(PH_OTHER)), np.int8, n)}
    for table, key in zip(tables, ("name", "cat", "pid", "tid")):
        cols[key] = np.fromiter(map(table.setdefault, map(_get[key], events), rows), np.int64, n)
    cols.update((key, np.fromiter(map(_get[key], events), np.float64, n)) for key in ("ts", "dur"))
    args = list(map(_get["args"], events))
    shapes, frames = tables[4], tables[5]
    cols["shape"] = np.fromiter((-1 if text in _NO_SHAPE else shapes.setdefault(text, row)
                                 for text, row in zip(map(bytes, map(_get["input_dims"], args)), rows)), np.int64, n)
    cols["frame"] = np.fromiter((frames.setdefault(key, row) if key else -1
                                 for key, row in zip(map(_first_frame, map(_get["call_stack"], args)), rows)), np.int64, n)
    cols.update((key, _int64s(key, args)) for key in ("correlation", "external_id", "device", "stream"))
    if legacy:
        cols["external_id"] = np.where(cols["external_id"] >= 0, cols["external_id"], _int64s("external_id_2021", args))
    ev_idx = _int64s("ev_idx", args)
    cols["ev_idx"] = np.where(ev_idx >= 0, ev_idx, _int64s("ev_idx_legacy", args))
    cols["id"] = np.full(n, ID_OTHER, np.int64)
    flow = np.flatnonzero((cols["ph"] == PH_S) | (cols["ph"] == PH_F))
    cols["id"][flow] = [v if isinstance(v, int) and -_ID_LIMIT < v < _ID_LIMIT else ID_OTHER for v in (events[i].id for i in flow.tolist())]
    memory_row = tables[0].get(MEMORY_NAME, -1)
    memory = np.flatnonzero(cols["name"] == memory_row)
    picked = [args[i] for i in memory.tolist()]
    for key in _MEMORY_ARGS:
        cols[f"mem_{key}"] = np.full(n, np.nan)
        cols[f"mem_{key}"][memory] = np.fromiter(map(_get[key], picked), np.float64, memory.size)
    return cols


def _int64s(key: str, args: list[Args]) -> np.ndarray:
    """An int arg as an int64 column; values outside int64 count as absent (-1), as in the accelerator."""
    try:
        return np.fromiter(map(_get[key], args), np.int64, len(args))
    except OverflowError:
        return np.fromiter((v if -(1 << 63) <= v < (1 << 63) else -1 for v in map(_get[key], args)), np.int64, len(args))


def _columns_accel(events: list[Event], tables: tuple[dict, ...], off: int, legacy: bool) -> dict[str, np.ndarray]:
    """The same columns in one C pass over the structs (`_columns.c`); it merges both External id spellings always."""
    cols = [np.empty(len(events), dtype) for dtype in _EXTRACTED_DTYPES]
    _accel.extract(events, _PHASE_TABLE, *tables, off, tuple(cols))
    return dict(zip(_EXTRACTED, cols))


def _load_accelerator():
    """The compiled extractor bound to the struct layouts, or None (pure Python) when absent or disabled."""
    if pure_python():
        return None
    try:
        from . import _columns
        _columns.layout(Event, ("ph", "name", "cat", "pid", "tid", "ts", "dur", "id", "args"),
                        Args, ("correlation", "external_id", "external_id_2021", "device", "stream", *_MEMORY_ARGS,
                               "ev_idx", "ev_idx_legacy", "input_dims", "call_stack", *(attr for _, attr, _, _ in GPU_FIELDS)))
    except (ImportError, TypeError, AttributeError):
        return None
    return _columns


_accel = _load_accelerator()
ACCELERATED = _accel is not None
_extract = _columns_accel if ACCELERATED else _columns_py
_INTERNED = ("name", "cat", "pid", "tid", "shape", "frame")  # the interned columns, in `ColumnBuilder._tables` order


def _load_scanner():
    """The compiled text-to-columns pass, or None when absent or disabled (`budgets.fast_decode`)."""
    if not ACCELERATED or not fast_decode():
        return None
    try:
        from . import _scan
    except ImportError:
        return None
    return _scan


_scan = _load_scanner()
_STRUCTS = msgspec.json.Decoder(list[Event])


def scans_text() -> bool:
    """Whether middle pieces are scanned from their text (`ColumnBuilder.add_text`), without the GIL."""
    return _scan is not None and _extract is _columns_accel  # its columns are those of the compiled extractor


def scan_text(text, max_events: Optional[int] = None, open_end: bool = False,
              exact_rebase: Optional[int] = None, prefix: bool = False) -> Optional[tuple]:
    """The scanner's reading of a middle piece's text for `ColumnBuilder.add_scanned`; None when it cannot read it
    exactly as the typed decode would, holds more than `max_events` events, or the scanner is off. It holds no
    Python object while it reads, so threads may scan pieces at once. With `open_end` the text lacks its closing `]`
    (a piece of a mapped file, whose next byte is the next piece's `[`). `exact_rebase`: the piece belongs to a file
    with exact 16-digit times (`decode._PieceDecoder.exact_rebase`), whose times are read as `_exact_events` reads them.
    With `prefix` the text is a tail piece's (`[` events `]`, then the rest of the document) and the answer is the
    reading of its events with the offset past their `]`."""
    if not scans_text():
        return None
    return _scan.scan(text, _PHASE_TABLE, 1 << 62 if max_events is None else max(max_events, 0), open_end, exact_rebase,
                      prefix)

_SCANNED_GPU = np.dtype([("row", np.int64), ("values", np.float64, (len(GPU_FIELDS),))])  # `_scan.c`'s GPU fields
_STAND_IN = Event()  # what a consumer reads for an event the scanner kept no struct of: no args, as that event has


def _struct_events(text, n: int, special: np.ndarray) -> Optional[list[Event]]:
    """The piece's events as the consumers after extraction read them (`ColumnBuilder._add_columns`): a struct for
    each event the scanner reported (metadata, flows with a non-integer id, collective, GPU-launch and validator
    args), `_STAND_IN` for the rest; None if the reported ones do not decode (never expected: the scanner checked)."""
    events = [_STAND_IN] * n
    if not special.size:
        return events
    view = memoryview(text)
    try:
        parts = b",".join([view[start:end] for start, end in special[:, :2].tolist()])
        decoded = _STRUCTS.decode(b"[" + parts + b"]")
    except MSGSPEC_REFUSALS:
        return None
    finally:
        view.release()
    if len(decoded) != len(special):
        return None
    for row, event in zip(special[:, 2].tolist(), decoded):
        events[row] = event
    return events


_IS_GPU_KIND = np.isin(np.arange(len(Kind)), sorted(GPU_KINDS))  # by `Kind` value
_IS_COPY_KIND = np.isin(np.arange(len(Kind)), (Kind.MEMCPY, Kind.MEMSET))
_HAS_GPU_ARGS = _IS_COPY_KIND | (np.arange(len(Kind)) == Kind.KERNEL)  # the activities `GpuArgs` reads


def _kinds_of(categories) -> np.ndarray:
    """The `Kind` of each category (a lookup table by category id), int8."""
    return np.fromiter(map(kind_of_category, categories), np.int8, len(categories))


class _Interner:
    """Strings (or any hashables) -> the global row of their first occurrence, shared across chunks;
    `dense` turns those rows into ids in first-seen order."""

    def __init__(self) -> None:
        self.table: dict[Any, int] = {}

    def dense(self, first: np.ndarray) -> tuple[list, np.ndarray]:
        """The table in first-seen order and each value's index into it."""
        first_rows = np.fromiter(self.table.values(), np.int64, len(self.table))  # ascending: insertion order
        return list(self.table), dense_ids(first_rows, first)


def dense_ids(first_rows: np.ndarray, first: np.ndarray) -> np.ndarray:
    """`np.searchsorted(first_rows, first)` as int32: each first-seen row's index among the table's (ascending) first
    rows. Compiled (`_columns.dense_ids`: a table by row, 10x the binary searches' speed at 10^7 rows) where loaded."""
    if _accel is not None and first.dtype in (np.int64, np.int32):
        out = np.empty(first.size, np.int32)
        if _accel.dense_ids(first_rows, np.ascontiguousarray(first), out, first.dtype == np.int64):
            return out
    return np.searchsorted(first_rows, first).astype(np.int32)


class EventIndex:
    """How many complete events carry Kineto's event number (`Ev Idx`), and the index spaces they fill.

    Kineto numbers CPU ops and Python frames in index spaces of their own (`with_stack=True` puts the
    frames ~30 million numbers above the ops), and a file cut out of a longer profile starts at an offset.
    The summary keeps the range of the numbers and its SPACE_CUTS largest jumps (of MIN_JUMP or more) between consecutive
    numbers, so the verdict can judge coverage inside each space (`analysis.sufficiency.index_spaces`):
    sampling leaves holes everywhere, a jump between spaces leaves one. Only the summary is kept: a column
    would cost 8 bytes per event. Kineto writes the numbers in ascending file order, so sorting a chunk is
    cheap; a jump seen inside one chunk is kept only when no other chunk has numbers inside it.
    """

    SPACE_CUTS = 8  # the largest gaps kept: far more index spaces than a writer makes, far fewer than sampling's holes
    MIN_JUMP = 100  # a jump between spaces skips at least this many numbers (shorter holes are holes of one space)

    def __init__(self) -> None:
        self.count, self.low, self.high = 0, None, None
        self._chunks: list[tuple[int, int, int]] = []  # (count, min, max) per chunk with numbers
        self._gaps: list[tuple[int, int, int, int]] = []  # (chunk, before, after, numbers <= before in the chunk)

    def add(self, values: np.ndarray) -> None:
        values = values[values >= 0]
        if not values.size:
            return
        ordered = np.sort(values)
        gaps = np.diff(ordered)
        floor = self.MIN_JUMP
        if gaps.size > self.SPACE_CUTS:  # strictly above the next largest: ties never depend on the chunking
            floor = max(floor, int(np.partition(gaps, gaps.size - self.SPACE_CUTS - 1)[gaps.size - self.SPACE_CUTS - 1]) + 1)
        top = np.flatnonzero(gaps >= floor)
        chunk = len(self._chunks)
        self._gaps += [(chunk, int(ordered[i]), int(ordered[i + 1]), int(i) + 1) for i in top.tolist()]
        low, high = int(ordered[0]), int(ordered[-1])
        self._chunks.append((int(values.size), low, high))
        self.count += int(values.size)
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)

    def state(self) -> tuple:
        """What another process's index hands `absorb`."""
        return self.count, self.low, self.high, self._chunks, self._gaps

    def absorb(self, state: tuple) -> None:
        """Append another index's chunks, as if they had been added here after ours."""
        count, low, high, chunks, gaps = state
        self._gaps += [(chunk + len(self._chunks), before, after, below) for chunk, before, after, below in gaps]
        self._chunks += chunks
        if count:
            self.count += count
            self.low = low if self.low is None else min(self.low, low)
            self.high = high if self.high is None else max(self.high, high)

    def spaces(self) -> list[list[int]]:
        """`[first, last, count]` per index space, ascending: the range cut at the SPACE_CUTS largest true gaps."""
        chunks = np.array(self._chunks, np.int64).reshape(-1, 3)
        order = np.argsort(chunks[:, 1], kind="stable")
        between = [(-1, int(chunks[a, 2]), int(chunks[b, 1]), 0) for a, b in zip(order[:-1].tolist(), order[1:].tolist())
                   if chunks[b, 1] - chunks[a, 2] >= self.MIN_JUMP]
        gaps = np.array(self._gaps + between, np.int64).reshape(-1, 4)
        inside = (chunks[None, :, 1] < gaps[:, 2, None]) & (chunks[None, :, 2] > gaps[:, 1, None])
        inside[np.flatnonzero(gaps[:, 0] >= 0), gaps[gaps[:, 0] >= 0, 0]] = False  # a chunk's own gap
        gaps = gaps[~inside.any(axis=1)]
        gaps = gaps[np.argsort(gaps[:, 2] - gaps[:, 1], kind="stable")[::-1][:self.SPACE_CUTS]]
        gaps = gaps[np.argsort(gaps[:, 1], kind="stable")]
        below = [int(chunks[chunks[:, 2] <= before, 0].sum()) + int(own) for _, before, _, own in gaps.tolist()]
        firsts, lasts = [self.low] + gaps[:, 2].tolist(), gaps[:, 1].tolist() + [self.high]
        counts = np.diff([0] + below + [self.count]).tolist()
        return [[f, t, c] for f, t, c in zip(firsts, lasts, counts)]

    def meta(self) -> dict[str, Any]:
        """`{"event_index": {"count", "min", "max", "spaces"}}`, or nothing when no event is numbered."""
        if not self.count:
            return {}
        return {"event_index": {"count": self.count, "min": self.low, "max": self.high, "spaces": self.spaces()}}


class CollectiveFields:
    """The collective fields (`decode.Args.seq` ...) of the few events that carry them, read per chunk.

    Only events named like a collective (`kinds.is_collective_name`) or an NCCL/RCCL kernel are looked at:
    the names are checked once each, as they are first seen, so a trace without collectives pays nothing.
    """

    MAX_STRING = 200  # characters of a process group, collective or dtype name

    def __init__(self) -> None:
        self._checked = 0  # names of the name table checked so far
        self._first_rows: list[int] = []  # first-seen rows of collective names
        self.rows: list[int] = []
        self.values: list[tuple] = []
        self._strings: dict[str, int] = {}

    def add(self, events: list, name_first: np.ndarray, names: dict, off: int) -> None:
        if len(names) > self._checked:
            for name, first in itertools.islice(names.items(), self._checked, None):
                if isinstance(name, str) and (is_collective_name(name) or is_comm_kernel_name(name)):
                    self._first_rows.append(first)
            self._checked = len(names)
        if not self._first_rows:
            return
        for i in np.flatnonzero(np.isin(name_first, self._first_rows)).tolist():
            a = events[i].args
            fields = (a.seq, a.in_nelems, a.out_nelems, a.group_size, a.pg_name, a.coll_name, a.dtype)
            if any(v is not None for v in fields):
                self.rows.append(off + i)
                self.values.append(tuple(map(_int_field, fields[:4])) + tuple(map(self._string, fields[4:])))

    def state(self) -> tuple:
        """What another process's collector hands `absorb` (rows from its own raw row 0)."""
        return self.rows, self.values, tuple(self._strings)

    def absorb(self, state: tuple, off: int) -> None:
        """Append another collector's rows (its raw row 0 being raw row `off` here), its strings re-interned."""
        rows, values, strings = state
        ids = [self._strings.setdefault(s, len(self._strings)) for s in strings]
        self.rows += [row + off for row in rows]
        self.values += [v[:4] + tuple(-1 if s < 0 else ids[s] for s in v[4:]) for v in values]

    def _string(self, value: Any) -> int:
        if not isinstance(value, str):
            return -1
        return self._strings.setdefault(value[:self.MAX_STRING], len(self._strings))

    def columns(self, final_raw_rows: np.ndarray) -> dict[str, Any]:
        """The model's coll_ columns; `final_raw_rows[k]` is the raw row that became event row k."""
        raw = np.array(self.rows, np.int64)
        values = np.array(self.values, np.int64).reshape(-1, 7)
        if raw.size:
            where = np.full(int(raw.max()) + 1, -1, np.int64)  # raw row -> event row, for these rows only
            hit = final_raw_rows <= raw.max()
            where[final_raw_rows[hit]] = np.flatnonzero(hit)
            event_row = where[raw]
        else:
            event_row = raw
        kept = event_row >= 0  # complete events only (a malformed one was skipped)
        order = np.argsort(event_row[kept], kind="stable")
        values = values[kept][order]
        return {"coll_row": event_row[kept][order], "coll_seq": values[:, 0], "coll_in_nelems": values[:, 1],
                "coll_out_nelems": values[:, 2], "coll_group_size": values[:, 3],
                "coll_pg": values[:, 4].astype(np.int32), "coll_name": values[:, 5].astype(np.int32),
                "coll_dtype": values[:, 6].astype(np.int32), "coll_strings": tuple(self._strings)}


def _json_string(content: bytes) -> str:
    """A JSON string's content (escapes and all) as the string; undecodable bytes replaced."""
    try:
        return msgspec.json.decode(b'"' + content + b'"')
    except (msgspec.DecodeError, ValueError):
        return content.decode("utf-8", "replace")


def _canonical_json(text: bytes) -> str:
    """A JSON text as `json.dumps` spells it (`[[2, 3], []]`); the text itself when it does not decode."""
    try:
        return json.dumps(msgspec.json.decode(text), ensure_ascii=False)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return text.decode("utf-8", "replace")


def _int_field(value: Any) -> int:
    """A count or number as an int (-1 when absent or not a whole number within int64)."""
    if isinstance(value, bool):
        return -1
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and -(1 << 62) < value < (1 << 62) else -1


# The raw columns with a value per event: each piece's are copied into one buffer per column as the piece is added
# (`_RowStore`); the others (a memory event's args, a flow's id) stay per piece until `finish`.
_ROW_KEYS = ("ph", "name", "cat", "pid", "tid", "ts", "dur", "correlation", "external_id", "device", "stream", "shape",
             "frame", "source_row")
_ROW_DTYPES = {key: np.int8 if key == "ph" else np.float64 if key in ("ts", "dur") else np.int64 for key in _ROW_KEYS}
# The interned columns hold the row where each value was first seen (-1: none): within int32 wherever the event
# budget is (default 400M events), so the store keeps them in half the bytes (`_RowStore(narrow=True)`: 240 MB less
# to copy, fault in and hold at 10^7 events).
_FIRST_ROW_KEYS = ("name", "cat", "pid", "tid", "shape", "frame")
_NARROW_ROWS = 1 << 31


_MIN_ROWS = 1 << 16  # the least rows the reserved columns are sized for, and the least they grow by
_PROJECTION_MARGIN = 4  # reserved: the rows projected for the whole text, and a quarter more (pages never written
# cost nothing; a projection short of the rows costs a copy of every row so far)
_PROJECTION_SAMPLE = 1 << 20  # the text read before rows per byte are projected (a trace's head is mostly metadata)


def _reserve(rows: int, dtype) -> np.ndarray:
    """An uninitialised column of `rows` (its pages are faulted in as rows are written)."""
    return np.empty(rows, dtype)


# Text from which the row columns are reserved (`_RowStore`) instead of joined: a joined column is the pieces' parts,
# copied, then their concatenation, both alive at once when it is taken (1.2 GB of fresh pages and a serial 0.7 s
# at 4 GB of text); a reserved one is one copy of each piece's rows.
RESERVED_TEXT_BYTES = 2 << 30


class _RowStore:
    """The per-event raw columns of the pieces added so far; `finish` takes each whole column once.

    Joined (text under RESERVED_TEXT_BYTES, or of unknown length): each piece's parts are kept, and a column is their
    concatenation when taken. Reserved: each piece's rows are copied, as it is added, into one array per column, sized
    for the rows the whole text is projected to hold (the rows so far per byte of text so far, and a margin); a piece
    that does not fit grows the columns (a copy) to a new projection, by a quarter at least. The pages past the last
    row are never touched. The arrays are numpy's, so malloc's: where the process holds freed memory
    (`heap.hold_freed`, the CLI and the decoder child), the analyses reuse their pages once the model is built instead
    of faulting in fresh ones (at 4 GB of text, 0.8 GB fewer: anonymous mappings, which these were, go back to the
    system when freed).
    """

    def __init__(self, text_bytes: Optional[int] = None, narrow: bool = False, limit: Optional[int] = None) -> None:
        """`text_bytes`: the length of the whole text, when known; `limit`: the most rows it may hold (the event
        budget: no projection reserves more)."""
        self.reserved = text_bytes is not None and text_bytes >= RESERVED_TEXT_BYTES
        self.text_bytes, self.limit = text_bytes or 0, limit
        self.dtypes = {key: np.int32 if narrow and key in _FIRST_ROW_KEYS else dtype for key, dtype in _ROW_DTYPES.items()}
        self.n = self.cap = 0
        self._read = 0  # bytes of text the rows so far came from
        self._columns: dict[str, np.ndarray] = {}
        self._parts: list[dict[str, np.ndarray]] = []

    def append(self, cols: dict[str, np.ndarray], n: int, text_bytes: int = 0) -> None:
        """Add one piece's `n` rows of every row column (`cols`, keyed by `_ROW_KEYS`) after the rows so far;
        `text_bytes`: the length of the piece's text (what the projection of a reserved store reads)."""
        self._read += max(text_bytes, 0)
        if not n:
            return
        if not self.reserved:  # a view of the scan's buffer (sized for the piece's longest events) is kept as a copy
            self._parts.append({key: cols[key] if cols[key].base is None and cols[key].dtype == self.dtypes[key]
                                else cols[key].astype(self.dtypes[key]) for key in _ROW_KEYS})
            self.n += n
            return
        if self.n + n > self.cap:
            self._grow(self.n + n)
        for key in _ROW_KEYS:
            self._columns[key][self.n:self.n + n] = cols[key]
        self.n += n

    def _grow(self, need: int) -> None:
        projected = need * self.text_bytes // self._read if self._read >= _PROJECTION_SAMPLE else need
        projected += projected // _PROJECTION_MARGIN
        if self.limit is not None:
            projected = min(projected, self.limit)
        least = max(need, self.cap + self.cap // 4, _MIN_ROWS)
        for cap in dict.fromkeys((max(least, projected), least)):
            try:
                grown = {key: _reserve(cap, dtype) for key, dtype in self.dtypes.items()}
            except MemoryError:  # a projection past what can be reserved: grown as little as it may be
                continue
            break
        else:
            raise MemoryError(f"no memory for {least:,} rows")
        for key, column in self._columns.items():
            grown[key][:self.n] = column[:self.n]
        self._columns, self.cap = grown, cap

    def take(self, key: str) -> np.ndarray:
        """A whole column (its own buffer from now on: the caller may write into it); each key is taken once."""
        if not self.reserved:
            parts = [part.pop(key) for part in self._parts if key in part]
            return np.concatenate(parts) if parts else np.zeros(0, self.dtypes[key])
        column = self._columns.pop(key, None)
        return np.zeros(0, self.dtypes[key]) if column is None else column[:self.n]

    def take_rows(self, key: str, rows: np.ndarray) -> np.ndarray:
        """`take(key)[rows]` for ascending rows; joined, gathered piece by piece: no full-length copy of a column only
        some rows of which are read (each a fresh 80 MB at 10^7 events)."""
        if self.reserved:
            return self.take(key)[rows]
        parts = [part.pop(key) for part in self._parts if key in part]
        bounds = np.cumsum([0] + [p.size for p in parts])
        cut = np.searchsorted(rows, bounds).tolist()
        out = np.empty(rows.size, self.dtypes[key])
        for k, part in enumerate(parts):
            if cut[k + 1] > cut[k]:
                out[cut[k]:cut[k + 1]] = part[rows[cut[k]:cut[k + 1]] - bounds[k]]
        return out

    def columns(self) -> dict[str, np.ndarray]:
        """Every column, rows only (for another process's builder to `absorb`)."""
        return {key: self.take(key) for key in _ROW_KEYS}


class ColumnBuilder:
    """Accumulates chunks of decoded events; `finish` builds the model."""

    def __init__(self, max_events: Optional[int] = None, refusal: Optional[Callable[[], str]] = None,
                 text_bytes: Optional[int] = None) -> None:
        """`max_events`: refuse (`BudgetExceeded`, with `refusal()` as its message) a file holding more; `text_bytes`:
        the length of the text, when known (from RESERVED_TEXT_BYTES on, the row columns are reserved: `_RowStore`)."""
        self._max_events, self._refusal = max_events, refusal
        self._rows = _RowStore(text_bytes, narrow=max_events is not None and max_events < _NARROW_ROWS, limit=max_events)
        self._names, self._cats, self._pids, self._tids, self._flow_names, self._shapes, self._frames = (
            _Interner() for _ in range(7))
        self._chunks: list[dict[str, np.ndarray]] = []  # per piece: the columns not in `_rows`
        self._pieces: list[tuple[int, int, int, int]] = []  # (kind, start, end, index of its first event)
        self._meta_events: list[tuple[str, str, str, Any]] = []
        self._event_index = EventIndex()
        self.n = 0
        self._ordinal = 0  # events of the pieces so far, skipped ones included: the next piece's first ordinal
        self._collectives = CollectiveFields()
        self._validator_args = ValidatorArgs()
        self._gpu_args = GpuArgs(_accel)
        self._named_flows: list[int] = []

    def add(self, events: list[Event], legacy_external_id: bool = False, piece: Piece = WHOLE_FILE,
            source_index: Any = None, piece_events: Optional[int] = None) -> None:
        """Extract one chunk's columns; the chunk's structs may be freed afterwards.

        Args:
            events: the chunk's events, in file order.
            legacy_external_id: the chunk's text uses the 2021 key "external id".
            piece: where the chunk lies in the text (`decode.Piece`), so `trace.source` can re-read an event.
            source_index: each event's index in the piece's events when some were skipped (None: contiguous).
            piece_events: how many events the piece holds, skipped ones included (default: all were kept, or
                up to the last kept one).
        """
        self._check_budget(len(events))
        cols = _extract(events, self._tables(), self.n, legacy_external_id)
        self._add_columns(cols, events, piece, source_index, piece_events)

    def add_text(self, text, piece: Piece, exact_rebase: Optional[int] = None) -> bool:
        """Add a middle piece straight from its text (`[` events `]`), as `add` would add its decoded events, when the
        compiled scanner (`_scan.c`) reads every event of it exactly as the typed decode would; False (nothing added)
        when it does not, or is absent: the caller decodes the piece the usual way. `exact_rebase`: see `scan_text`.
        """
        scanned = scan_text(text, self._room(), exact_rebase=exact_rebase)  # past the budget: None, and `add` refuses it
        return scanned is not None and self.add_scanned(scanned, text, piece)

    def add_tail_text(self, text, piece: Piece, exact_rebase: Optional[int], rest_decodes: Callable[[int], bool],
                      merge_first: Optional[Callable[[], None]] = None) -> bool:
        """`add_text` for the tail piece (`[` events `]`, then the rest of the document: `decode.TailSink`): its events
        are added when the scanner reads them and `rest_decodes(offset past their ']')` says the rest decodes as the
        whole tail would; False (nothing added) otherwise. `merge_first` runs just before they are added (the pieces
        still in flight elsewhere come first)."""
        found = scan_text(text, self._room(), exact_rebase=exact_rebase, prefix=True)  # (less once `merge_first` ran)
        if found is None or not rest_decodes(found[1]):
            return False
        if merge_first is not None:
            merge_first()
        return self.add_scanned(found[0], text, piece)

    def add_scanned(self, scanned: tuple, text, piece: Piece) -> bool:
        """`add_text` for a piece `scan_text` has read already (elsewhere, e.g. in a thread); False as there."""
        n, raw, local_tables, special, gpu = scanned
        events = _struct_events(text, n, np.frombuffer(special, np.int64).reshape(-1, 3))
        if events is None:
            return False
        self._check_budget(n)
        cols = {key: np.frombuffer(col, dtype) for key, col, dtype in zip(_EXTRACTED, raw, _EXTRACTED_DTYPES)}
        cat_keys = local_tables[_INTERNED.index("cat")][0]  # the piece's few categories, by local id (a lookup table)
        cat_kind = _kinds_of(cat_keys)[cols["cat"]]
        for key, table, (keys, firsts) in zip(_INTERNED, self._tables(), local_tables):
            merged = np.fromiter(map(table.setdefault, keys, (np.frombuffer(firsts, np.int64) + self.n).tolist()),
                                 np.int64, len(keys))
            cols[key] = np.append(merged, -1)[cols[key]]  # local id -> first row in the file; -1 (none) stays -1
        self._add_columns(cols, events, piece, None, None, np.frombuffer(gpu, _SCANNED_GPU), cat_kind)
        return True

    def _room(self) -> Optional[int]:
        """How many more events the budget takes (None: no budget)."""
        return None if self._max_events is None else self._max_events - self.n

    def _check_budget(self, n: int) -> None:
        if self._max_events is not None and self.n + n > self._max_events:
            raise BudgetExceeded(self._refusal() if self._refusal else f"more than {self._max_events:,} events")

    def _tables(self) -> tuple[dict, ...]:
        """The interning tables, in `_INTERNED` order."""
        return (self._names.table, self._cats.table, self._pids.table, self._tids.table, self._shapes.table,
                self._frames.table)

    def _add_columns(self, cols: dict[str, np.ndarray], events: list[Event], piece: Piece, source_index: Any,
                     piece_events: Optional[int], scanned_gpu: Optional[np.ndarray] = None,
                     cat_kind: Optional[np.ndarray] = None) -> None:
        """The rest of `add`, after extraction: masks, flows, memory rows and the per-event consumers (`scanned_gpu`: the
        GPU activity fields the scanner read, `_SCANNED_GPU` records of the events with any; `cat_kind`: each row's
        `Kind` by its category, when the caller has it)."""
        n, off = len(events), self.n
        first = self._ordinal  # a piece's events are ordinals first, first + 1, ... (its skipped ones too)
        self._pieces.append((piece.kind, piece.start, piece.end, first))
        if piece_events is None:
            piece_events = n if source_index is None else (int(source_index[-1]) + 1 if len(source_index) else 0)
        self._ordinal += piece_events
        ph = cols["ph"]
        x = ph == PH_X
        for key in ("correlation", "external_id"):
            cols[key][~x] = -1
        self._event_index.add(cols.pop("ev_idx")[x])
        if cat_kind is None:
            cat_kind = self._cat_kinds(cols["cat"])
        gpu = x & _IS_GPU_KIND[cat_kind]
        for key in ("device", "stream"):
            cols[key][~gpu] = -1
        memory = np.flatnonzero(cols["name"] == self._names.table.get(MEMORY_NAME, -1))
        for key in _MEMORY_ARGS:
            cols[f"mem_{key}"] = cols[f"mem_{key}"][memory]
        cols["mem_row"] = memory + off
        flow = np.flatnonzero((ph == PH_S) | (ph == PH_F))
        self._named_flows = []
        cols["flow_row"], cols["flow_id"] = flow + off, self._flow_ids(cols.pop("id")[flow], events, flow)
        cols["flow_named"] = np.array(self._named_flows, np.int64)  # which flow ids are interned (for `absorb`)
        cols["source_row"] = np.arange(first, first + n) if source_index is None else first + np.asarray(source_index, np.int64)
        self._collectives.add(events, cols["name"], self._names.table, off)
        self._validator_args.add(events, cols["name"], self._names.table, off)
        self._gpu_args.add(events, np.flatnonzero(x & (cat_kind == Kind.KERNEL)),
                           np.flatnonzero(x & _IS_COPY_KIND[cat_kind]), off, scanned_gpu)
        for i in np.flatnonzero(ph == PH_M).tolist():
            e = events[i]
            self._meta_events.append((e.name, str(e.pid), str(e.tid), e.args.name))
        self._rows.append(cols, n, piece.end - piece.start)
        self._chunks.append({key: value for key, value in cols.items() if key not in _ROW_DTYPES})
        self.n += n

    def export(self) -> tuple:
        """What `absorb` needs of a builder that decoded some pieces elsewhere (plain, picklable values)."""
        interners = tuple(i.table for i in (self._names, self._cats, self._pids, self._tids, self._shapes, self._frames))
        return (self.n, self._ordinal, (self._chunks, self._rows.columns()), self._pieces, interners,
                self._flow_names.table, self._meta_events, self._event_index.state(), self._collectives.state(),
                self._validator_args.state(), self._gpu_args.state())

    def absorb(self, state: tuple) -> None:
        """Append the pieces another builder (started empty) decoded, as if `add` had been called with them here.

        The other builder's string ids are rows of first occurrence within its own events: each is mapped to the
        row of its first occurrence in the whole file (a value seen here first keeps its row here), so every id,
        row and table order equals a serial decode's.
        """
        n, ordinal, chunks, pieces, interners, flow_names, meta_events, index, coll, checked, gpu = state
        off, first = self.n, self._ordinal
        if self._max_events is not None and off + n > self._max_events:
            raise BudgetExceeded(self._refusal() if self._refusal else f"more than {self._max_events:,} events")
        remaps = [_remap(mine, theirs, off) for mine, theirs in zip(
            (self._names, self._cats, self._pids, self._tids, self._shapes, self._frames), interners)]
        flow_map = np.array([self._flow_names.table.setdefault(k, len(self._flow_names.table)) for k in flow_names], np.int64)
        chunks, rows = chunks
        for key, remap in zip(("name", "cat", "pid", "tid", "shape", "frame"), remaps):
            rows[key] = _apply_remap(rows[key], remap)
        rows["source_row"] = rows["source_row"] + first
        self._rows.append(rows, n, sum(end - start for _, start, end, _ in pieces))
        for cols in chunks:
            for key in ("mem_row", "flow_row"):
                cols[key] = cols[key] + off
            named = cols["flow_named"]
            if named.size:
                cols["flow_id"][named] = -1 - flow_map[-1 - cols["flow_id"][named]]
            self._chunks.append(cols)
        self._pieces += [(kind, start, end, at + first) for kind, start, end, at in pieces]
        self._meta_events += meta_events
        self._event_index.absorb(index)
        self._collectives.absorb(coll, off)
        self._validator_args.absorb(checked, off)
        self._gpu_args.absorb(gpu, off)
        self.n += n
        self._ordinal += ordinal

    def _shape_columns(self, first: np.ndarray) -> dict[str, Any]:
        """`shape_id` per event row (into `shape_strings`, -1 without Input Dims) from first-seen rows."""
        texts, ids = self._shapes.dense(first)
        canonical: dict[str, int] = {}  # one spelling per value (whitespace and indenting differ between writers)
        remap = np.array([canonical.setdefault(_canonical_json(t), len(canonical)) for t in texts] + [-1], np.int32)
        ids[first < 0] = -1
        return {"shape_id": remap[ids], "shape_strings": tuple(canonical)}

    def _frame_ids(self, first: np.ndarray, names: list) -> np.ndarray:
        """`call_frame_id` per event row: the name id of its Call stack's first frame (-1 without); frames that are
        not event names yet are appended to `names`."""
        texts, ids = self._frames.dense(first)
        known = {name: i for i, name in enumerate(names)} if texts else {}
        remap = []
        for text in texts:
            frame = _json_string(text)
            if frame not in known:
                known[frame] = len(names)
                names.append(frame)
            remap.append(known[frame])
        out = np.array(remap + [-1], np.int32)[ids]
        out[first < 0] = -1
        return out

    def _cat_kinds(self, cat_first: np.ndarray) -> np.ndarray:
        """Each row's `Kind` by its category (by first-seen row id; the table is tiny)."""
        firsts = np.fromiter(self._cats.table.values(), np.int64, len(self._cats.table))
        return _kinds_of(self._cats.table)[np.searchsorted(firsts, cat_first)]

    def _flow_ids(self, ids: np.ndarray, events: list[Event], rows: np.ndarray) -> np.ndarray:
        """Flow ids; string (or huge) ids from other writers are interned as negative numbers."""
        for i in np.flatnonzero(ids == ID_OTHER).tolist():
            self._named_flows.append(i)
            ids[i] = -1 - self._flow_names.table.setdefault(events[rows[i]].id, len(self._flow_names.table))
        return ids

    def finish(self, doc: TraceDoc, skipped: dict[str, int], warnings: list[str], source_bytes: int,
               progress: Callable[[float], None] = lambda share: None, pool: Optional[Executor] = None) -> TraceModel:
        """Build the model from every chunk added; `progress(share)` is told how far (0..1) as it goes.

        Peak memory is what bounds the events a machine can load, so each raw column is concatenated
        (freeing its chunk pieces) only when needed and dropped as soon as its last use is done.
        With a thread `pool` (the parallel decode's, idle by now), independent parts of the work run in its threads
        meanwhile (the string ids; the memory columns beside the event order; then the GPU activities' argument columns,
        the correlation, External id and source row gathers and the launch links, while this thread gathers the other
        event columns and reads the other arguments): numpy releases the GIL in them.
        """
        skipped, warnings = dict(skipped), list(warnings)
        chunks, self._chunks = self._chunks, []
        store, self._rows = self._rows, _RowStore()
        take = partial(_take_column, chunks, store)  # each key is taken by one thread only
        take_rows = store.take_rows
        dense = _meanwhile(pool, lambda: tuple(table.dense(take(key)) for table, key in (
            (self._names, "name"), (self._cats, "cat"), (self._pids, "pid"))))  # the thread ids here, below
        base_ns = doc.baseTimeNanoseconds or 0
        if not -_INT_LIMIT < base_ns < _INT_LIMIT:
            warnings.append(f"ignored baseTimeNanoseconds={base_ns} (out of range)")
            base_ns = 0
        ph = take("ph").astype(np.int8, copy=False)
        ts_ns, ts_ok, _ = _to_ns(take("ts").astype(np.float64, copy=False), base_ns)  # its own buffer: consumed
        mem_row = take("mem_row").astype(np.int64, copy=False)
        is_memory = np.zeros(ph.size, bool)
        is_memory[mem_row] = True
        _count(skipped, "unsupported phase (B/E/C/other)", int(np.count_nonzero(ph == PH_OTHER)))
        _count(skipped, "missing, non-finite or out-of-range ts", int(np.count_nonzero(~(ts_ok | (ph == PH_M)))))
        x_rows = np.flatnonzero((ph == PH_X) & ~is_memory & ts_ok)
        del is_memory
        dur_ns, dur_ok, negatives = _to_ns(take_rows("dur", x_rows).astype(np.float64, copy=False), 0, clamp_negative=True)
        _count(skipped, "complete event without a finite dur", int(np.count_nonzero(~dur_ok)))
        if not dur_ok.all():  # else no copy: two full-length compressions cost 0.4 s at 6M events (fresh pages)
            x_rows, dur_ns = x_rows[dur_ok], dur_ns[dur_ok]
        del dur_ok
        if negatives:
            warnings.append(f"{negatives} negative durations clamped to 0")
        tid_raw, tid_rid = self._tids.dense(take("tid"))  # this thread's share, while the pool's finish theirs
        (names, name_id), (cats, cat_id), (pid_raw, pid_rid) = dense.result()
        del dense
        kind = _kinds_of(cats)[cat_id[x_rows]]
        mem_keep = ts_ok[mem_row]
        flow_row = take("flow_row").astype(np.int64, copy=False)
        flow_keep = ts_ok[flow_row]
        del ts_ok
        progress(0.25)
        on_gpu = _IS_GPU_KIND[kind]
        gpu_rows = x_rows[on_gpu]
        lanes = assign_lanes(RawIds(pid_raw, pid_rid, tid_raw, tid_rid), x_rows, on_gpu,
                             _int64(take_rows("device", gpu_rows)), _int64(take_rows("stream", gpu_rows)),
                             mem_row[mem_keep], flow_row[flow_keep], self._meta_events)
        del on_gpu, gpu_rows
        del pid_rid, tid_rid
        progress(0.5)
        mem = _meanwhile(pool, _memory_columns, {k: take(k) for k in _COLUMN_KEYS if k.startswith("mem_") and k != "mem_row"},
                         mem_row, mem_keep, ts_ns, lanes.memory_lane)
        order = _lane_time_order(lanes.x_lane, ts_ns[x_rows], dur_ns)
        rows = x_rows[order]
        del x_rows
        kind = kind[order]
        gpu = _meanwhile(pool, self._gpu_args.columns, rows, np.flatnonzero(_HAS_GPU_ARGS[kind]))  # the longest of them
        progress(0.7)
        heap.give_back()  # the raw columns taken so far and the lanes' temporaries: free, before the largest step
        linked = _meanwhile(pool, lambda at: tuple(_int64(take(key))[at] for key in ("correlation", "external_id", "source_row")),
                            rows)
        ts, dur = ts_ns[rows], dur_ns[order]
        name, cat, lane = name_id[rows], cat_id[rows], lanes.x_lane[order].astype(np.int32)
        del order, dur_ns
        correlation, external_id, source_row = linked.result()
        launches = _meanwhile(pool, link_launches, kind, correlation)  # beside the depths and the memory columns
        coll, checked = self._arg_columns(rows, take, names)  # here, while the pool reads the GPU args and the links
        del rows
        ev = _event_columns(ts, dur, kind, name, cat, lane, len(lanes.kind), correlation, external_id, source_row)
        del ts, dur, kind, name, cat, lane, correlation, external_id, source_row
        pieces = np.array(self._pieces, np.int64).reshape(-1, 4)
        flows = {"flow_id": take("flow_id").astype(np.int64, copy=False)[flow_keep], "flow_cat_id": cat_id[lanes.flow_rows],
                 "flow_phase": (ph[lanes.flow_rows] == PH_F).astype(np.int8), "flow_ts_ns": ts_ns[lanes.flow_rows],
                 "flow_lane": lanes.flow_lane.astype(np.int32)}
        coll.update(gpu.result())
        return TraceModel(**ev, launch_idx=launches.result(), lane_kind=lanes.kind, lane_pid=lanes.pid,
                          lane_tid=lanes.tid, lane_label=tuple(lanes.label),
                          **mem.result(), **flows, piece_kind=pieces[:, 0].astype(np.int8), piece_start=pieces[:, 1],
                          piece_end=pieces[:, 2], piece_first=pieces[:, 3], names=tuple(names), cats=tuple(cats),
                          meta={**_meta(doc, base_ns), **self._event_index.meta(), **checked,
                                "metadata_events": len(self._meta_events)}, skipped=skipped, warnings=tuple(warnings),
                          source_bytes=source_bytes, **coll)

    def _arg_columns(self, rows: np.ndarray, take: Callable[[str], np.ndarray], names: list) -> tuple[dict, dict]:
        """The model's columns read from event args but the GPU activities' (collectives, Input Dims, call frames: new
        frame names are appended to `names`) and the validator's metadata, for the complete events `rows`."""
        coll = self._collectives.columns(rows)
        checked = self._validator_args.meta(rows)
        coll.update(self._shape_columns(take("shape")[rows]))
        coll["call_frame_id"] = self._frame_ids(take("frame")[rows], names)
        return coll, checked


def _meanwhile(pool: Optional[Executor], work: Callable[..., Any], *args: Any) -> Future:
    """`work(*args)` in a thread of `pool` while the caller goes on (its error comes out of `result()`); done at once,
    here, without a pool."""
    if pool is not None:
        return pool.submit(work, *args)
    done: Future = Future()
    done.set_result(work(*args))
    return done


def _remap(mine: _Interner, theirs: dict, off: int) -> tuple[np.ndarray, np.ndarray]:
    """Another builder's table (value -> its first row there) as (its rows, ascending; the rows in `mine`),
    adding the values `mine` has not seen, at their row plus `off`, in their first-seen order."""
    local = np.fromiter(theirs.values(), np.int64, len(theirs))
    table = mine.table
    merged = np.fromiter((table.setdefault(value, row + off) for value, row in theirs.items()), np.int64, len(theirs))
    return local, merged


def _apply_remap(column: np.ndarray, remap: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """A column of first rows (-1: none) in another builder's numbering -> in ours."""
    local, merged = remap
    if not local.size:
        return column
    present = column >= 0
    out = column.copy()
    out[present] = merged[np.searchsorted(local, column[present])]
    return out


_piece_buffer = bytearray()  # a worker's piece text, read from a plain file (`build_middle`)


def build_middle(spec: tuple) -> tuple:
    """Decode and extract one middle piece in a worker process: the unit of the parallel decode (trace.loader).

    `spec`: (the piece's text, or a plain file's path to read it from; the `decode.Piece`; the most events it may
    hold, and the refusal's message; the file's `exact_rebase`, see `scan_text`). Returns ("ok",
    `ColumnBuilder.export()`, skipped, warnings), or ("serial", why) when the piece cannot be decoded on its own (a
    look-alike cut, a piece the serial decode would read whole).
    """
    text, piece, max_events, refusal, exact_rebase = spec
    if isinstance(text, tuple):  # (path, device, inode) of a local plain file: read the piece from it
        path, device, inode = text
        size = piece.end + 1 - piece.start
        global _piece_buffer
        if len(_piece_buffer) < size:  # one buffer per worker, reused: no fresh pages to fault in per piece
            _piece_buffer = bytearray(size)
        try:
            with open(path, "rb") as handle, memoryview(_piece_buffer) as view:
                info = os.fstat(handle.fileno())
                got = os.preadv(handle.fileno(), [view[:size]], piece.start)
        except OSError as exc:
            return "serial", f"cannot reopen the file: {exc}"
        if (info.st_dev, info.st_ino) != (device, inode) or got != size:
            return "serial", "the file changed while it was read"
        _piece_buffer[0], _piece_buffer[size - 1] = ord("["), ord("]")
        text = memoryview(_piece_buffer)[:size]
    enabled = gc.isenabled()
    gc.disable()  # millions of acyclic structs: see loader._collector_paused
    try:
        builder = ColumnBuilder(max_events=max_events, refusal=lambda: refusal)
        if builder.add_text(text, piece, exact_rebase):
            return "ok", builder.export(), {}, []
        try:
            events, legacy, index, skipped, warnings = decode_middle(text, exact_rebase)
        except NotSplittable as exc:
            return "serial", str(exc)
        del text
        builder = ColumnBuilder(max_events=max_events, refusal=lambda: refusal)
        builder.add(events, legacy, piece, *(index or ()))
        del events
        return "ok", builder.export(), skipped, warnings
    finally:
        if enabled:
            gc.enable()


def _int64(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int64, copy=False)


def _take_column(chunks: list[dict[str, np.ndarray]], store: _RowStore, key: str) -> np.ndarray:
    """One raw column over all chunks (the store's, or the chunks' parts joined); it is released there (each key is
    taken once)."""
    if key in _ROW_DTYPES:
        return store.take(key)
    parts = [c.pop(key) for c in chunks]
    return np.concatenate(parts) if parts else np.zeros(0)


_COLUMN_KEYS = ("ph", "name", "cat", "ts", "dur", "pid", "tid", "correlation", "external_id", "device", "stream",
                "mem_row", *(f"mem_{k}" for k in _MEMORY_ARGS), "flow_row", "flow_id", "source_row")


_INT_LIMIT = 2.0**62  # ns times and durations (146 years) or byte counts beyond this are unusable, not int64 overflows


def _in_range(us: np.ndarray, base_ns: int) -> np.ndarray:
    """Finite µs values whose ns (plus the base) stay within ±2^62 (NaN and ±inf fail the comparison). One float
    temporary, reused in place: at 10^7 events every fresh temporary is 80 MB of pages to fault in."""
    with np.errstate(invalid="ignore", over="ignore"):
        ns = np.multiply(us, 1000.0)
        ns += float(base_ns)
        np.abs(ns, out=ns)
        return np.less(ns, _INT_LIMIT)


def _to_ns(us: np.ndarray, base_ns: int, clamp_negative: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """µs floats -> int64 ns, exact for integer µs (16-digit epoch values) and ns-precise fractions.

    Returns the ns (0 + base where unusable), whether each value was usable (`_in_range`), and, with
    `clamp_negative` (durations: Kineto clamps them too since 2022-08), how many usable values were negative (their
    ns are 0). `us` is consumed: the compiled pass (`_columns.us_to_ns`) writes the ns over its own 8 bytes per
    value, no temporaries; `_to_ns_py` otherwise.
    """
    if _accel is not None and us.dtype == np.float64 and us.flags.c_contiguous and us.flags.writeable:
        ok = np.empty(us.size, bool)
        negatives = _accel.us_to_ns(us, base_ns, ok, clamp_negative)
        return us.view(np.int64), ok, negatives
    return _to_ns_py(us, base_ns, clamp_negative)


def _to_ns_py(us: np.ndarray, base_ns: int, clamp_negative: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """`_to_ns` in array passes: two float and one int temporaries, the rest in place (the same arithmetic as
    floor, rint and a sum: exact either way)."""
    ok = _in_range(us, base_ns)
    clean = np.where(ok, us, 0.0)
    negative = clean < 0 if clamp_negative else None
    whole = np.floor(clean)
    clean -= whole  # the fraction of a µs
    clean *= 1000.0
    np.rint(clean, out=clean)
    ns = whole.astype(np.int64)
    del whole
    ns *= 1000
    ns += clean.astype(np.int64)
    ns += np.int64(base_ns)
    if negative is None:
        return ns, ok, 0
    ns[negative] = 0
    return ns, ok, int(np.count_nonzero(negative))


def _count(skipped: dict[str, int], reason: str, count: int) -> None:
    if count:
        skipped[reason] = skipped.get(reason, 0) + count


def _event_columns(ts_ns, dur_ns, kind, name_id, cat_id, lane, n_lanes, correlation, external_id,
                   source_row) -> dict[str, np.ndarray]:
    """Columns of the complete events (given sorted by (lane, ts, -dur)), with their depth (`link_launches` gives the
    launch links)."""
    cols = {"ts_ns": ts_ns, "dur_ns": dur_ns, "kind": kind, "name_id": name_id, "cat_id": cat_id, "lane": lane,
            "correlation": correlation, "external_id": external_id, "source_row": source_row}
    cols["lane_ptr"] = np.searchsorted(lane, np.arange(n_lanes + 1)).astype(np.int64, copy=False)
    cols["depth"] = nesting_depth(ts_ns, dur_ns, cols["lane_ptr"])
    return cols


def _lane_time_order(lane: np.ndarray, ts_ns: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
    """Permutation sorting by (lane, ts, -dur): parents before children that start with them.

    One sort on a packed (lane, ts) key, then only the rows that tie on it are reordered by -dur.
    """
    if ts_ns.size == 0:
        return np.zeros(0, np.int64)
    rel = ts_ns - ts_ns.min()
    if rel.max() >= (1 << 44) or lane.max() >= (1 << 18):
        return np.lexsort((-dur_ns, ts_ns, lane))
    key = (lane.astype(np.int64, copy=False) << 44) | rel
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    tie = np.flatnonzero(sorted_key[1:] == sorted_key[:-1])
    if tie.size:
        rows = union(tie, tie + 1)
        group = np.cumsum(np.concatenate(([True], sorted_key[1:] != sorted_key[:-1])))[rows]
        order[rows] = order[rows][np.lexsort((-dur_ns[order[rows]], group))]
    return order


def link_launches(kind: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    """Row of the launch call (runtime or driver event) of every GPU activity, by `correlation`.

    Correlation ids are unique per launch call within one file; one call may own many activities
    (a CUDA graph launch owns every kernel of the graph). Activities with no matching call get -1.
    """
    launch_idx = np.full(kind.size, -1, np.int64)
    launch_rows = np.flatnonzero(np.isin(kind, np.array(LAUNCH_KINDS, np.int8)) & (correlation >= 0))
    gpu_rows = np.flatnonzero(np.isin(kind, np.array(ACTIVITY_KINDS, np.int8)) & (correlation >= 0))
    if launch_rows.size == 0 or gpu_rows.size == 0:
        return launch_idx
    by_corr = launch_rows[np.argsort(correlation[launch_rows], kind="stable")]
    keys = correlation[by_corr]
    pos = np.minimum(np.searchsorted(keys, correlation[gpu_rows]), keys.size - 1)
    hit = keys[pos] == correlation[gpu_rows]
    launch_idx[gpu_rows[hit]] = by_corr[pos[hit]]
    return launch_idx


def _memory_columns(raw: dict, mem_row: np.ndarray, keep: np.ndarray, ts_ns: np.ndarray, lane: np.ndarray) -> dict[str, np.ndarray]:
    """Columns of `[memory]` events sorted by time; absent totals are -1 (2021 files have none)."""
    rows = mem_row[keep]

    def col(key: str, default: int) -> np.ndarray:
        values = raw[f"mem_{key}"].astype(np.float64)[keep]
        with np.errstate(invalid="ignore"):
            usable = np.isfinite(values) & (np.abs(values) < _INT_LIMIT)
        return np.where(usable, values, default).astype(np.int64, copy=False)

    order = np.argsort(ts_ns[rows], kind="stable")
    return {"mem_ts_ns": ts_ns[rows][order], "mem_lane": lane[order].astype(np.int32),
            "mem_device_type": col("device_type", 0)[order].astype(np.int16),
            "mem_device_id": col("device_id", -1)[order].astype(np.int16), "mem_bytes": col("bytes", 0)[order],
            "mem_total_allocated": col("total_allocated", -1)[order],
            "mem_total_reserved": col("total_reserved", -1)[order], "mem_addr": col("addr", -1)[order]}


def _meta(doc: TraceDoc, base_ns: int) -> dict[str, Any]:
    return {"base_time_ns": base_ns, "schema_version": doc.schemaVersion,
            "device_properties": doc.deviceProperties if isinstance(doc.deviceProperties, list) else [],
            "distributed_info": doc.distributedInfo if isinstance(doc.distributedInfo, dict) else None,
            "display_time_unit": doc.displayTimeUnit if isinstance(doc.displayTimeUnit, str) else None}
