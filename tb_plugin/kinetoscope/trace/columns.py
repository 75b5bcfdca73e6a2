"""Typed events -> columnar TraceModel, one decoded chunk at a time: the column builder.

`ColumnBuilder.add` turns a chunk of event structs into raw per-event columns (strings interned into
tables shared by all chunks), so the structs of a chunk can be freed before the next is decoded.
`finish` does the global work once (its steps in trace.finish): dense ids, lanes, the (lane, ts, -dur) order, nesting
depth and launch links. No per-event step runs Python bytecode: at 10^6 events a loop body of even 1 µs would
cost a second, more than the whole decode. The extraction from structs (trace.extractors) is one pass of `_columns.c`
(compiled at install), or, without a compiler, one C-level `map` into `np.fromiter` per column. Most middle
pieces skip the structs altogether: `_scan.c` reads their text straight into the same columns (`add_text`).
"""
from __future__ import annotations

import gc
import os
from concurrent.futures import Executor
from functools import partial
from typing import Any, Callable, Optional

import msgspec
import numpy as np

from . import extractors, heap
from .arg_tables import CollectiveFields, EventIndex, inputs_texts, json_string
from .budgets import BudgetExceeded
from .decode import WHOLE_FILE, Event, NotSplittable, Piece, TraceDoc, decode_middle
from .deps import MSGSPEC_REFUSALS
from .extractors import EXTRACTED, EXTRACTED_DTYPES, ID_OTHER, MEMORY_ARGS, MEMORY_NAME, PH_F, PH_M, PH_OTHER, PH_S, PH_X, accel, scan_text
from .finish import (
    COLUMN_KEYS,
    complete_rows,
    event_columns,
    int64,
    lane_time_order,
    link_launches,
    meanwhile,
    memory_columns,
    meta,
    take_column,
)
from .gpu_args import FIELDS as GPU_FIELDS
from .gpu_args import GpuArgs
from .hw_counters import counter_columns, counter_samples
from .kinds import GPU_KINDS, Kind, kind_of_category
from .lanes import RawIds, assign_lanes
from .model import TraceModel
from .rowstore import NARROW_ROWS, ROW_DTYPES, RowStore
from .validator_args import ValidatorArgs

_INTERNED = ("name", "cat", "pid", "tid", "shape", "frame")  # the interned columns, in `ColumnBuilder._tables` order
_STRUCTS = msgspec.json.Decoder(list[Event])
_SCANNED_GPU = np.dtype([("row", np.int64), ("values", np.float64, (len(GPU_FIELDS),))])  # `_scan.c`'s GPU fields
_STAND_IN = Event()  # what a consumer reads for an event the scanner kept no struct of: no args, as that event has


def _struct_events(text, n: int, special: np.ndarray) -> Optional[list[Event]]:
    """The piece's events as the consumers after extraction read them (`ColumnBuilder._add_columns`): a struct for
    each event the scanner reported (metadata, counters, flows with a non-integer id, collective, GPU-launch and validator
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
    if accel is not None and first.dtype in (np.int64, np.int32):
        out = np.empty(first.size, np.int32)
        if accel.dense_ids(first_rows, np.ascontiguousarray(first), out, first.dtype == np.int64):
            return out
    return np.searchsorted(first_rows, first).astype(np.int32)


class ColumnBuilder:
    """Accumulates chunks of decoded events; `finish` builds the model."""

    def __init__(self, max_events: Optional[int] = None, refusal: Optional[Callable[[], str]] = None,
                 text_bytes: Optional[int] = None, max_names: Optional[int] = None,
                 names_refusal: Optional[Callable[[], str]] = None) -> None:
        """`max_events`: refuse (`BudgetExceeded`, with `refusal()` as its message) a file holding more; `text_bytes`:
        the length of the text, when known (from RESERVED_TEXT_BYTES on, the row columns are reserved: `RowStore`)."""
        self._max_events, self._refusal = max_events, refusal
        self._max_names, self._names_refusal = max_names, names_refusal  # distinct event names (budgets.py)
        self._rows = RowStore(text_bytes, narrow=max_events is not None and max_events < NARROW_ROWS, limit=max_events)
        self._names, self._cats, self._pids, self._tids, self._flow_names, self._shapes, self._frames = (
            _Interner() for _ in range(7))
        self._chunks: list[dict[str, np.ndarray]] = []  # per piece: the columns not in `_rows`
        self._pieces: list[tuple[int, int, int, int]] = []  # (kind, start, end, index of its first event)
        self._meta_events: list[tuple[str, str, str, Any]] = []
        self._counters: list[tuple[int, str, Any, float]] = []  # hardware-counter samples: (row, name, pid, value)
        self._event_index = EventIndex()
        self.n = 0
        self._ordinal = 0  # events of the pieces so far, skipped ones included: the next piece's first ordinal
        self._collectives = CollectiveFields()
        self._validator_args = ValidatorArgs()
        self._gpu_args = GpuArgs(accel)
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
        cols = extractors.extract(events, self._tables(), self.n, legacy_external_id)
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
        """`add_text` for the tail piece (`[` events `]`, then the rest of the document: `pieces.TailSink`): its events
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
        cols = {key: np.frombuffer(col, dtype) for key, col, dtype in zip(EXTRACTED, raw, EXTRACTED_DTYPES)}
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
        if self._max_names is not None and len(self._names.table) > self._max_names:
            raise BudgetExceeded(self._names_refusal() if self._names_refusal else
                                 f"more than {self._max_names:,} distinct event names")

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
        for key in MEMORY_ARGS:
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
        self._counters += counter_samples(events, np.flatnonzero(ph == PH_OTHER), off)
        self._rows.append(cols, n, piece.end - piece.start)
        self._chunks.append({key: value for key, value in cols.items() if key not in ROW_DTYPES})
        self.n += n

    def export(self) -> tuple:
        """What `absorb` needs of a builder that decoded some pieces elsewhere (plain, picklable values)."""
        interners = tuple(i.table for i in (self._names, self._cats, self._pids, self._tids, self._shapes, self._frames))
        return (self.n, self._ordinal, (self._chunks, self._rows.columns()), self._pieces, interners,
                self._flow_names.table, self._meta_events, self._event_index.state(), self._collectives.state(),
                self._validator_args.state(), self._gpu_args.state(), self._counters)

    def absorb(self, state: tuple) -> None:
        """Append the pieces another builder (started empty) decoded, as if `add` had been called with them here.

        The other builder's string ids are rows of first occurrence within its own events: each is mapped to the
        row of its first occurrence in the whole file (a value seen here first keeps its row here), so every id,
        row and table order equals a serial decode's.
        """
        n, ordinal, chunks, pieces, interners, flow_names, meta_events, index, coll, checked, gpu, counters = state
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
        self._counters += [(row + off, *rest) for row, *rest in counters]
        self._event_index.absorb(index)
        self._collectives.absorb(coll, off)
        self._validator_args.absorb(checked, off)
        self._gpu_args.absorb(gpu, off)
        self.n += n
        self._ordinal += ordinal
        self._check_budget(0)  # the names it brought

    def _shape_columns(self, first: np.ndarray) -> dict[str, Any]:
        """Each event row's recorded inputs from first-seen rows: `inputs_id` (into `inputs_strings`, the JSON
        texts `[dims, types, strides, concrete]`, -1 without any) and `shape_id` (into `shape_strings`, the Input
        Dims alone, -1 without them). One spelling per value: whitespace and indenting differ between writers."""
        texts, ids = self._shapes.dense(first)
        inputs: dict[str, int] = {}
        shapes: dict[str, int] = {}
        to_inputs, to_shape = [], []
        for text in texts:
            key, dims = inputs_texts(text)
            to_inputs.append(inputs.setdefault(key, len(inputs)))
            to_shape.append(-1 if dims is None else shapes.setdefault(dims, len(shapes)))
        ids[first < 0] = -1
        inputs_remap, shape_remap = (np.array(m + [-1], np.int32) for m in (to_inputs, to_shape))
        return {"shape_id": shape_remap[ids], "shape_strings": tuple(shapes),
                "inputs_id": inputs_remap[ids], "inputs_strings": tuple(inputs)}

    def _frame_ids(self, first: np.ndarray, names: list) -> np.ndarray:
        """`call_frame_id` per event row: the name id of its Call stack's first frame (-1 without); frames that are
        not event names yet are appended to `names`."""
        texts, ids = self._frames.dense(first)
        known = {name: i for i, name in enumerate(names)} if texts else {}
        remap = []
        for text in texts:
            frame = json_string(text)
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
        self._check_budget(0)  # the last piece's names
        skipped, warnings = dict(skipped), list(warnings)
        chunks, self._chunks = self._chunks, []
        store, self._rows = self._rows, RowStore()
        take = partial(take_column, chunks, store)  # each key is taken by one thread only
        base_ns, ph, ts_ns, x_rows, dur_ns, kind, (names, name_id), (cats, cat_id), flow_keep, lanes, mem, hwc = (
            self._placed(doc, take, store.take_rows, skipped, warnings, progress, pool))
        order = lane_time_order(lanes.x_lane, ts_ns[x_rows], dur_ns)
        rows = x_rows[order]
        del x_rows
        kind = kind[order]
        gpu = meanwhile(pool, self._gpu_args.columns, rows, np.flatnonzero(np.take(_HAS_GPU_ARGS, kind)))  # the longest of them
        progress(0.7)
        heap.give_back()  # the raw columns taken so far and the lanes' temporaries: free, before the largest step
        linked = meanwhile(pool, lambda at: tuple(int64(take(key))[at] for key in ("correlation", "external_id", "source_row")),
                           rows)
        ts, dur = ts_ns[rows], dur_ns[order]
        name, cat, lane = name_id[rows], cat_id[rows], lanes.x_lane[order].astype(np.int32)
        del order, dur_ns
        correlation, external_id, source_row = linked.result()
        launches = meanwhile(pool, link_launches, kind, correlation)  # beside the depths and the memory columns
        coll, checked = self._arg_columns(rows, take, names)  # here, while the pool reads the GPU args and the links
        del rows
        ev = event_columns(ts, dur, kind, name, cat, lane, len(lanes.kind), correlation, external_id, source_row)
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
                          meta={**meta(doc, base_ns), **self._event_index.meta(), **checked,
                                "metadata_events": len(self._meta_events)}, skipped=skipped, warnings=tuple(warnings),
                          source_bytes=source_bytes, **coll, **hwc)

    def _placed(self, doc: TraceDoc, take: Callable[[str], np.ndarray], take_rows: Callable[[str, np.ndarray], np.ndarray],
                skipped: dict[str, int], warnings: list[str], progress: Callable[[float], None],
                pool: Optional[Executor]) -> tuple:
        """The first half of `finish`: the string ids (in the pool), the complete events' rows and ns times
        (`complete_rows`), their kinds, every event's lane (`assign_lanes`), and the memory columns started in the pool.
        Returns (base_ns, ph, ts_ns, x_rows, dur_ns, kind, (names, name_id), (cats, cat_id), flow_keep, lanes, the memory
        columns' future, the hardware counters' columns)."""
        dense = meanwhile(pool, lambda: tuple(table.dense(take(key)) for table, key in (
            (self._names, "name"), (self._cats, "cat"), (self._pids, "pid"))))  # the thread ids here, below
        base_ns, ph, ts_ns, ts_ok, mem_row, x_rows, dur_ns = complete_rows(doc, take, take_rows, skipped, warnings)
        hwc = counter_columns(self._counters, ts_ns, ts_ok, skipped)
        tid_raw, tid_rid = self._tids.dense(take("tid"))  # this thread's share, while the pool's finish theirs
        (names, name_id), (cats, cat_id), (pid_raw, pid_rid) = dense.result()
        del dense
        kind = np.take(_kinds_of(cats), cat_id[x_rows])  # np.take: int32 ids are not cast to intp first
        mem_keep = ts_ok[mem_row]
        flow_row = take("flow_row").astype(np.int64, copy=False)
        flow_keep = ts_ok[flow_row]
        del ts_ok
        progress(0.25)
        on_gpu = np.take(_IS_GPU_KIND, kind)
        gpu_rows = x_rows[on_gpu]
        lanes = assign_lanes(RawIds(pid_raw, pid_rid, tid_raw, tid_rid), x_rows, on_gpu,
                             int64(take_rows("device", gpu_rows)), int64(take_rows("stream", gpu_rows)),
                             mem_row[mem_keep], flow_row[flow_keep], self._meta_events)
        del on_gpu, gpu_rows
        del pid_rid, tid_rid
        progress(0.5)
        mem = meanwhile(pool, memory_columns, {k: take(k) for k in COLUMN_KEYS if k.startswith("mem_") and k != "mem_row"},
                        mem_row, mem_keep, ts_ns, lanes.memory_lane)
        return base_ns, ph, ts_ns, x_rows, dur_ns, kind, (names, name_id), (cats, cat_id), flow_keep, lanes, mem, hwc

    def _arg_columns(self, rows: np.ndarray, take: Callable[[str], np.ndarray], names: list) -> tuple[dict, dict]:
        """The model's columns read from event args but the GPU activities' (collectives, Input Dims, call frames: new
        frame names are appended to `names`) and the validator's metadata, for the complete events `rows`."""
        coll = self._collectives.columns(rows)
        checked = self._validator_args.meta(rows)
        coll.update(self._shape_columns(take("shape")[rows]))
        coll["call_frame_id"] = self._frame_ids(take("frame")[rows], names)
        return coll, checked


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
