"""The columnar trace model: one frozen bundle of equal-length numpy arrays per table.

Tables (each column an array; units in the names):
- events: every complete (`X`) event except `[memory]`, sorted by (lane, ts, -dur). `lane_ptr` is the
  CSR offset array of lanes: lane `k` owns rows `lane_ptr[k]:lane_ptr[k+1]`.
- lanes: one row per CPU thread (pid, tid), GPU stream (device, stream) or marker row.
- memory: `[memory]` events (instant or `X` with a bogus dur), sorted by ts.
- flows: `s`/`f` flow events, kept for rendering; linking uses `correlation`.
- pieces: the byte ranges the decoder read its events from; with `source_row` they let one event be
  re-read (its full `args`) without keeping every event's args in memory.
Launch calls are linked to their GPU activities once: `launch_idx[i]` is the row of the runtime or
driver call that launched GPU activity `i` (-1 when none); one launch may own many activities
(CUDA graphs). Strings are interned: `names[name_id[i]]`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from functools import cached_property
from typing import Any, Callable, Optional

import msgspec
import numpy as np

from .kinds import ACTIVITY_KINDS, Kind, LaneKind

FORMAT_VERSION = 16  # bump when the model's layout or its decoding semantics change (invalidates caches)
FEW_NAMES = 4  # `name_in` compares the ids one by one up to this many names, else reads a lookup table
MAX_SHOWN_CHARS = 1000  # trace strings longer than this are cut wherever they are shown (`event?args=1` re-reads them)


def shown(text: str) -> str:
    """A trace string as routes and reports show it: at most MAX_SHOWN_CHARS characters, cut with an ellipsis.

    A writer may put a 50 MB kernel or thread name in a trace; no answer may grow with it.
    """
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 1] + "\u2026"


@dataclass(frozen=True)
class TraceModel:
    """A decoded trace. Arrays are read-only; cached models are shared between threads."""

    # events
    ts_ns: np.ndarray  # int64, absolute (baseTimeNanoseconds applied)
    dur_ns: np.ndarray  # int64, >= 0
    kind: np.ndarray  # int8, Kind
    name_id: np.ndarray  # int32 into `names`
    cat_id: np.ndarray  # int32 into `cats` (raw category, for export)
    lane: np.ndarray  # int32 into the lanes table
    depth: np.ndarray  # int16 nesting depth within the lane (open enclosing events)
    correlation: np.ndarray  # int64, -1 when absent
    external_id: np.ndarray  # int64, -1 when absent
    launch_idx: np.ndarray  # int64 row of the launch call of a GPU activity, -1 when none
    source_row: np.ndarray  # int64 index of the event in the file's `traceEvents` (trace.source re-reads it)
    lane_ptr: np.ndarray  # int64 CSR offsets, len(lanes) + 1
    # lanes
    lane_kind: np.ndarray  # int8, LaneKind
    lane_pid: np.ndarray  # int64 pid (CPU) or device (GPU); -1 for string pids
    lane_tid: np.ndarray  # int64 tid (CPU) or stream (GPU)
    lane_label: tuple[str, ...]  # thread/stream names from metadata, or a synthesized one
    # memory
    mem_ts_ns: np.ndarray  # int64
    mem_lane: np.ndarray  # int32 CPU lane of the allocating thread
    mem_device_type: np.ndarray  # int16 (c10 DeviceType: 0 CPU, 1 CUDA, ...)
    mem_device_id: np.ndarray  # int16 (-1 for CPU)
    mem_bytes: np.ndarray  # int64, negative = free
    mem_total_allocated: np.ndarray  # int64, -1 when absent
    mem_total_reserved: np.ndarray  # int64, -1 when absent
    mem_addr: np.ndarray  # int64, -1 when absent
    # flows
    flow_id: np.ndarray  # int64
    flow_cat_id: np.ndarray  # int32 into `cats`
    flow_phase: np.ndarray  # int8: 0 start (s), 1 finish (f)
    flow_ts_ns: np.ndarray  # int64
    flow_lane: np.ndarray  # int32
    # where the decoded pieces of text lie in the file (decode.Piece), for re-reading one event's args
    piece_kind: np.ndarray  # int8: decode.PIECE_HEAD / MIDDLE / TAIL / WHOLE
    piece_start: np.ndarray  # int64 byte offset in the uncompressed text
    piece_end: np.ndarray  # int64 byte offset (exclusive); -1 for WHOLE
    piece_first: np.ndarray  # int64 `source_row` of the piece's first event
    # collective fields (`decode.Args`: Seq, Process Group Name, message sizes...) of the events that carry them
    coll_row: np.ndarray  # int64 event row (record_param_comms, nccl:*/gloo:* annotations, NCCL kernels), ascending
    coll_seq: np.ndarray  # int64, -1 when absent
    coll_in_nelems: np.ndarray  # int64, -1 when absent
    coll_out_nelems: np.ndarray  # int64, -1 when absent
    coll_group_size: np.ndarray  # int64, -1 when absent
    coll_comms_id: np.ndarray  # int64 `Comms Id` (the call's and its NCCL kernel's alike), -1 when absent
    coll_src_rank: np.ndarray  # int64 a point-to-point call's `Src Rank` (global), -1 when absent
    coll_dst_rank: np.ndarray  # int64 its `Dst Rank`, -1 when absent
    coll_pg: np.ndarray  # int32 into `coll_strings` (process group name), -1 when absent
    coll_name: np.ndarray  # int32 into `coll_strings` (collective name), -1 when absent
    coll_dtype: np.ndarray  # int32 into `coll_strings`, -1 when absent
    coll_pg_desc: np.ndarray  # int32 into `coll_strings` (the process group's description: default_pg, tp), -1 absent
    coll_pg_ranks: np.ndarray  # int32 into `coll_strings` (its ranks as written, `[0, 2]`), -1 when absent
    # GPU activity args (trace/gpu_args.py) of the activities that carry any: float64, -1 when absent
    gpu_arg_row: np.ndarray  # int64 event row, ascending
    gpu_arg_bytes: np.ndarray  # memcpy/memset bytes
    gpu_arg_grid: np.ndarray  # kernel grid size (blocks: x*y*z)
    gpu_arg_block: np.ndarray  # kernel block size (threads: x*y*z)
    gpu_arg_registers: np.ndarray  # registers per thread
    gpu_arg_shared_mem: np.ndarray  # shared memory bytes per block
    gpu_arg_blocks_per_sm: np.ndarray  # blocks per SM (as Kineto reports it)
    gpu_arg_occupancy: np.ndarray  # estimated achieved occupancy, %
    shape_id: np.ndarray  # int32 per event into `shape_strings`: its Input Dims (record_shapes), -1 when absent
    inputs_id: np.ndarray  # int32 per event into `inputs_strings`: all it records of its inputs, -1 when nothing
    call_frame_id: np.ndarray  # int32 per event into `names`: the first frame of its `Call stack` arg (<= 1.13 era), -1 without
    # hardware-counter samples (`ph: "C"`, CUPTI PM sampling; trace/hw_counters.py), sorted by (series, time): each value
    # holds from its time until the series' next sample
    hwc_ts_ns: np.ndarray  # int64
    hwc_series: np.ndarray  # int32 into the series: `hwc_names`, `hwc_device`
    hwc_value: np.ndarray  # float64, finite
    hwc_device: np.ndarray  # int64 per series: the device its pid names (`GPU N Counters`), -1 when none
    # strings and metadata
    names: tuple[str, ...]
    cats: tuple[str, ...]
    # deviceProperties, distributedInfo, base time, event_index, metadata_events (count of `M` events), sync_waits and
    # backward_seq (trace/validator_args.py)
    meta: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count of events not in the model
    warnings: tuple[str, ...] = ()
    source_bytes: int = 0  # uncompressed size of the file it came from
    coll_strings: tuple[str, ...] = ()  # process group, collective and dtype names of the coll_ columns
    shape_strings: tuple[str, ...] = ()  # Input Dims JSON texts, as the file spells them
    # an op's recorded inputs: the JSON texts `[Input Dims, Input type, Input Strides, Concrete Inputs]` (null: absent)
    inputs_strings: tuple[str, ...] = ()
    hwc_names: tuple[str, ...] = ()  # per hardware-counter series: its metric, as written (`sm__throughput.avg...`)

    def __post_init__(self) -> None:
        freeze_arrays(self)

    @property
    def n_events(self) -> int:
        """Number of complete events (memory, flow and metadata events not counted)."""
        return int(self.ts_ns.size)

    @cached_property
    def end_ns(self) -> np.ndarray:
        """End time of every event (int64 ns), computed once per model."""
        end = self.ts_ns + self.dur_ns
        end.flags.writeable = False
        return end

    @cached_property
    def shown_names(self) -> tuple[str, ...]:
        """`names` as routes and reports show them (see `shown`); matching always uses `names`."""
        return tuple(map(shown, self.names))

    @property
    def distributed(self) -> dict[str, Any]:
        """The trace's `distributedInfo` object (rank, world_size, backend, ...), {} when it has none."""
        info = self.meta.get("distributed_info")
        return info if isinstance(info, dict) else {}

    @property
    def rank(self) -> Optional[int]:
        """The trace's `distributedInfo.rank`, when it is an integer."""
        return whole(self.distributed.get("rank"))

    @property
    def world_size(self) -> Optional[int]:
        """The trace's `distributedInfo.world_size`, when it is an integer."""
        return whole(self.distributed.get("world_size"))

    @property
    def start_ns(self) -> int:
        """Trace start: the earliest complete event (0 for an empty trace)."""
        return int(self.ts_ns.min()) if self.ts_ns.size else 0

    @property
    def stop_ns(self) -> int:
        """Trace end: the latest end of a complete event."""
        return int(self.end_ns.max()) if self.ts_ns.size else 0

    def activity_mask(self) -> np.ndarray:
        """Rows that are GPU activities (kernel, memcpy, memset): what counts as GPU busy time."""
        return self.kind_in(ACTIVITY_KINDS)

    def kind_in(self, kinds, rows: Optional[np.ndarray] = None) -> np.ndarray:
        """Whether each event's (or each of `rows`') kind is one of `kinds` (a lookup table: no sort, unlike np.isin).

        Over all events the mask is computed once per set of kinds and shared, read-only: the analyses of one
        trace ask for the same few sets (GPU activities, launch calls) some thirty times."""
        wanted = frozenset(int(k) for k in kinds)
        if rows is not None:
            return np.take(self._kind_table(wanted), self.kind[rows])
        return self.shared(wanted, lambda: np.take(self._kind_table(wanted), self.kind))

    @staticmethod
    def _kind_table(wanted: frozenset) -> np.ndarray:
        table = np.zeros(len(Kind), bool)
        table[np.fromiter(wanted, np.int64, len(wanted))] = True
        return table

    def on_lanes(self, lane_kind: LaneKind) -> np.ndarray:
        """Whether each event sits on a lane of `lane_kind` (CPU threads, GPU streams): computed once, read-only."""
        return self.shared(("mask", int(lane_kind)), lambda: np.take(self.lane_kind, self.lane) == lane_kind)

    def rows_on(self, lane_kind: LaneKind) -> np.ndarray:
        """Rows of the events on lanes of `lane_kind`, ascending: computed once, read-only."""
        return self.shared(("rows", int(lane_kind)), lambda: np.flatnonzero(self.on_lanes(lane_kind)))

    def shared(self, key, make: Callable[[], Any]) -> Any:
        """The array (or tuple of arrays) cached under `key` (made by `make` on the first call), read-only: the
        analyses share it, from two threads at once too (both may make it; both get the one stored first)."""
        cached = self._shared_arrays.get(key)
        if cached is None:
            cached = make()
            for array in _arrays_of(cached):
                array.flags.writeable = False
            cached = self._shared_arrays.setdefault(key, cached)
        return cached

    def shared_nbytes(self) -> int:
        """Bytes of the arrays `shared` holds so far (what the analyses derived and keep with the model)."""
        cached = self.__dict__.get("_shared_arrays", {})
        return sum(array.nbytes for value in list(cached.values()) for array in _arrays_of(value))

    @cached_property
    def _shared_arrays(self) -> dict:  # frozenset of kinds, ("mask" | "rows", lane kind), a selector's key -> arrays
        return {}

    def name_in(self, name_ids: np.ndarray, rows: Optional[np.ndarray] = None) -> np.ndarray:
        """Whether each event's (or each of `rows`') name id is among `name_ids`: one comparison per id for a few
        ids (most callers ask for one name), else a lookup table read by `np.take` (indexing with the int32 ids
        themselves casts them to intp first: 2-20x slower at 10^6 events)."""
        name_ids = np.asarray(name_ids, np.int64)
        if not name_ids.size:  # no such name in the trace: nothing to gather
            return np.zeros(self.name_id.size if rows is None else _selected(rows), bool)
        ids = self.name_id if rows is None else self.name_id[rows]
        if name_ids.size <= FEW_NAMES:
            found = ids == int(name_ids[0])
            for name_id in name_ids[1:].tolist():
                found |= ids == name_id
            return found
        table = np.zeros(len(self.names), bool)
        table[name_ids] = True
        return np.take(table, ids)

    def device_of_row(self) -> np.ndarray:
        """Device index of every row's lane (meaningful on GPU lanes only)."""
        return np.take(self.lane_pid, self.lane)  # (np.take: the int32 lanes are not cast to intp first)

    def lanes_of(self, lane_kind: LaneKind) -> np.ndarray:
        """Indices of the lanes of one kind."""
        return np.flatnonzero(self.lane_kind == lane_kind)

    def name_ids_where(self, predicate) -> np.ndarray:
        """Interned ids of the names that satisfy `predicate` (a str -> bool function)."""
        return np.array([i for i, n in enumerate(self.names) if predicate(n)], dtype=np.int32)

    def count_by_kind(self) -> dict[str, int]:
        """Number of complete events per normalized kind (zeros omitted)."""
        counts = np.bincount(self.kind.astype(np.int64), minlength=len(Kind))
        return {Kind(k).name.lower(): int(c) for k, c in enumerate(counts) if c}


def _arrays_of(value: Any) -> tuple:
    """The arrays of one `TraceModel.shared` value: it, or the members of its tuple."""
    return value if isinstance(value, tuple) else (value,)


def _selected(rows: Any) -> int:
    """How many rows an index (or a boolean mask) selects."""
    rows = np.asarray(rows)
    return int(np.count_nonzero(rows)) if rows.dtype == bool else int(rows.size)


def whole(value: Any) -> Optional[int]:
    """`value` when it is a JSON integer (not a bool), else None: how metadata numbers are read."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def freeze_arrays(obj) -> None:
    """Make every numpy field of a record (a msgspec Struct, or this module's dataclass) read-only: cached results
    are shared between threads."""
    for name in field_names(obj):
        value = getattr(obj, name)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False


def field_names(obj: Any) -> tuple[str, ...]:
    """The fields of a record: a msgspec Struct, or this module's dataclass (empty for anything else)."""
    if isinstance(obj, msgspec.Struct):
        return obj.__struct_fields__
    return tuple(f.name for f in fields(obj)) if is_dataclass(obj) else ()


def record_values(obj: msgspec.Struct) -> list:
    """What a record holds: its fields' values, then what its cached properties keep (a Struct with `dict=True`)."""
    return [getattr(obj, name) for name in obj.__struct_fields__] + list(getattr(obj, "__dict__", {}).values())


def unique(values: Any) -> np.ndarray:
    """`np.unique(values)` (sorted distinct values) by one bincount (small non-negative integers) or one sort: numpy
    2.3+'s hash-based `np.unique` without return arrays is 4-15x slower on the id and row columns of a trace. Other
    dtypes go to `np.unique` itself (its NaN handling)."""
    values = np.asarray(values)
    if values.dtype.kind not in "biu":
        return np.unique(values)
    if values.dtype.kind != "b" and _counted(values):
        return np.flatnonzero(np.bincount(values.ravel().astype(np.int64, copy=False))).astype(values.dtype, copy=False)
    flat = np.sort(values, axis=None)
    if flat.size < 2:
        return flat
    keep = np.empty(flat.size, bool)
    keep[0] = True
    np.not_equal(flat[1:], flat[:-1], out=keep[1:])
    return flat[keep]


def unique_inverse(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(values, return_inverse=True)` of a flat array (the inverse flat, int64): for non-negative integers
    at most a few times as large as their count (name ids, lanes, devices, rows) by one bincount instead of a sort,
    else numpy's own."""
    values = np.ravel(np.asarray(values))
    if values.dtype.kind in "iu" and _counted(values):
        present = np.bincount(values.astype(np.int64, copy=False)) > 0
        rank = np.cumsum(present, dtype=np.int64) - 1
        return np.flatnonzero(present).astype(values.dtype, copy=False), rank[values]
    distinct, inverse = np.unique(values, return_inverse=True)
    return distinct, inverse.reshape(-1).astype(np.int64, copy=False)


def unique_first(values: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`np.unique(values, return_index=True, return_inverse=True)` of a flat array (the inverse flat, int64): the
    distinct values and inverse by `unique_inverse`, each value's first position by one unbuffered minimum (14x
    faster than numpy's sort at 1.2M name ids)."""
    distinct, inverse = unique_inverse(values)
    first = np.full(distinct.size, inverse.size, np.int64)
    np.minimum.at(first, inverse, np.arange(inverse.size))
    return distinct, first, inverse


def stable_order(keys: Any) -> np.ndarray:
    """`np.argsort(keys, kind="stable")` of a flat array; integers from 0 to 65535 (name positions, depths, lane
    codes) sorted as uint8/uint16, which numpy's stable sort orders by radix in one O(n) pass instead of a timsort
    (3-4x faster at 1M keys). The same permutation either way."""
    keys = np.ravel(np.asarray(keys))
    if keys.dtype.kind in "iu" and keys.dtype.itemsize > 2 and keys.size > 64:
        low, high = int(keys.min()), int(keys.max())
        if low >= 0 and high < 65536:
            keys = keys.astype(np.uint8 if high < 256 else np.uint16)
    return np.argsort(keys, kind="stable")


def _counted(values: np.ndarray) -> bool:
    """Whether integers are better ranked by a bincount than by a sort: non-negative, and at most a few times as
    large as their count (so the counts take no more memory than a sort's copies)."""
    return bool(values.size) and int(values.min()) >= 0 and int(values.max()) <= 4 * values.size + 4096


def union(*arrays: np.ndarray) -> np.ndarray:
    """`np.union1d` of integer arrays, by `unique`."""
    return unique(np.concatenate([np.ravel(a) for a in arrays]))


PIECE_FIELDS = ("piece_kind", "piece_start", "piece_end", "piece_first")  # how the text was cut, not what it holds


def array_fields() -> list[str]:
    """Names of the model's numpy columns, in declaration order (the cache stores exactly these)."""
    return [f.name for f in fields(TraceModel) if f.type == "np.ndarray"]
