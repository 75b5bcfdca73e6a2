"""What a decoded model read from a sidecar must satisfy before anything uses it: what the model builder
(`trace/columns.py`, `trace/finish.py`) always produces and what the analyses, views and routes assume without
checking (they index with these columns).

A hand-made sidecar with valid checksums can hold any arrays; without these checks a wrong dtype, an index
past a table or columns of unequal length surface as a generic 500 on some route, or a span that never
loads. `check_model` names the first broken rule (`ModelInvalid`), and the reader decodes the trace instead.
Vectorised: a pass over each column, well under the cost of reading it.
"""
from __future__ import annotations

import typing
from typing import Any

import msgspec
import numpy as np

from ..trace.kinds import Kind, LaneKind
from ..trace.model import TraceModel, array_fields, record_values

# Column -> (table it belongs to, dtype as the builder makes it). Tables: events (n rows), lanes, mem, flow,
# piece, coll, gpu_arg; lane_ptr is the lanes' CSR offsets (lanes + 1).
COLUMNS: dict[str, tuple[str, str]] = {
    "ts_ns": ("events", "<i8"), "dur_ns": ("events", "<i8"), "kind": ("events", "|i1"),
    "name_id": ("events", "<i4"), "cat_id": ("events", "<i4"), "lane": ("events", "<i4"),
    "depth": ("events", "<i2"), "correlation": ("events", "<i8"), "external_id": ("events", "<i8"),
    "launch_idx": ("events", "<i8"), "source_row": ("events", "<i8"), "shape_id": ("events", "<i4"),
    "inputs_id": ("events", "<i4"),
    "call_frame_id": ("events", "<i4"), "lane_ptr": ("lane_ptr", "<i8"),
    "lane_kind": ("lanes", "|i1"), "lane_pid": ("lanes", "<i8"), "lane_tid": ("lanes", "<i8"),
    "mem_ts_ns": ("mem", "<i8"), "mem_lane": ("mem", "<i4"), "mem_device_type": ("mem", "<i2"),
    "mem_device_id": ("mem", "<i2"), "mem_bytes": ("mem", "<i8"), "mem_total_allocated": ("mem", "<i8"),
    "mem_total_reserved": ("mem", "<i8"), "mem_addr": ("mem", "<i8"),
    "flow_id": ("flow", "<i8"), "flow_cat_id": ("flow", "<i4"), "flow_phase": ("flow", "|i1"),
    "flow_ts_ns": ("flow", "<i8"), "flow_lane": ("flow", "<i4"),
    "piece_kind": ("piece", "|i1"), "piece_start": ("piece", "<i8"), "piece_end": ("piece", "<i8"),
    "piece_first": ("piece", "<i8"),
    "coll_row": ("coll", "<i8"), "coll_seq": ("coll", "<i8"), "coll_in_nelems": ("coll", "<i8"),
    "coll_out_nelems": ("coll", "<i8"), "coll_group_size": ("coll", "<i8"), "coll_comms_id": ("coll", "<i8"),
    "coll_src_rank": ("coll", "<i8"), "coll_dst_rank": ("coll", "<i8"),
    "coll_pg": ("coll", "<i4"),
    "coll_name": ("coll", "<i4"), "coll_dtype": ("coll", "<i4"), "coll_pg_desc": ("coll", "<i4"),
    "coll_pg_ranks": ("coll", "<i4"),
    "gpu_arg_row": ("gpu_arg", "<i8"), "gpu_arg_bytes": ("gpu_arg", "<f8"), "gpu_arg_grid": ("gpu_arg", "<f8"),
    "gpu_arg_block": ("gpu_arg", "<f8"), "gpu_arg_registers": ("gpu_arg", "<f8"),
    "gpu_arg_shared_mem": ("gpu_arg", "<f8"), "gpu_arg_blocks_per_sm": ("gpu_arg", "<f8"),
    "gpu_arg_occupancy": ("gpu_arg", "<f8"),
    "hwc_ts_ns": ("hwc", "<i8"), "hwc_series": ("hwc", "<i4"), "hwc_value": ("hwc", "<f8"),
    "hwc_device": ("hwc_series", "<i8"),
}
MAX_NS = 1 << 62  # times and durations are int64 ns; sums of two must not overflow


class ModelInvalid(ValueError):
    """A stored model that breaks a rule the code relies on; the message names the column and the rule."""


def check_model(model: TraceModel) -> None:
    """Raise ModelInvalid unless every column has its dtype, its table's length, indices inside the tables
    they point into, and the orders the analyses assume (events by lane then time, memory by time)."""
    _check_dtypes_and_lengths(model)
    n, lanes = model.n_events, model.lane_kind.size
    _in_range(model, "name_id", 0, len(model.names))
    _in_range(model, "cat_id", 0, len(model.cats))
    _in_range(model, "lane", 0, lanes)
    _in_range(model, "kind", 0, len(Kind))
    _in_range(model, "lane_kind", 0, len(LaneKind))
    _in_range(model, "depth", 0, 1 << 15)
    _in_range(model, "launch_idx", -1, n)
    _in_range(model, "source_row", 0, MAX_NS)
    _in_range(model, "shape_id", -1, len(model.shape_strings))
    _in_range(model, "inputs_id", -1, len(model.inputs_strings))
    _in_range(model, "call_frame_id", -1, len(model.names))
    _in_range(model, "mem_lane", 0, lanes)
    _in_range(model, "flow_lane", 0, lanes)
    _in_range(model, "flow_cat_id", 0, len(model.cats))
    _in_range(model, "flow_phase", 0, 2)
    for column in ("coll_pg", "coll_name", "coll_dtype", "coll_pg_desc", "coll_pg_ranks"):
        _in_range(model, column, -1, len(model.coll_strings))
    _in_range(model, "coll_row", 0, n)
    _in_range(model, "gpu_arg_row", 0, n)
    _in_range(model, "hwc_series", 0, len(model.hwc_names))
    _in_range(model, "hwc_device", -1, 1 << 31)
    for column in ("ts_ns", "mem_ts_ns", "flow_ts_ns", "hwc_ts_ns"):
        _in_range(model, column, -MAX_NS, MAX_NS)
    _in_range(model, "dur_ns", 0, MAX_NS)
    _check_orders(model)
    _check_tables(model)


def _check_dtypes_and_lengths(model: TraceModel) -> None:
    stored = set(array_fields())
    if stored != set(COLUMNS):
        raise ModelInvalid(f"columns {sorted(stored ^ set(COLUMNS))[:5]} are not this version's")
    sizes: dict[str, int] = {}
    for name, (table, dtype) in COLUMNS.items():
        column = getattr(model, name)
        if not isinstance(column, np.ndarray) or column.ndim != 1:
            raise ModelInvalid(f"column {name} is not a 1-D array")
        if column.dtype.str != dtype:
            raise ModelInvalid(f"column {name} is {column.dtype}, not {np.dtype(dtype)}")
        if sizes.setdefault(table, column.size) != column.size:
            raise ModelInvalid(f"column {name} has {column.size} rows, its table {table} {sizes[table]}")
    if sizes["lane_ptr"] != sizes["lanes"] + 1:
        raise ModelInvalid(f"lane_ptr has {sizes['lane_ptr']} offsets for {sizes['lanes']} lanes")
    if len(model.lane_label) != sizes["lanes"]:
        raise ModelInvalid(f"{len(model.lane_label)} lane labels for {sizes['lanes']} lanes")
    if len(model.hwc_names) != sizes["hwc_series"]:
        raise ModelInvalid(f"{len(model.hwc_names)} counter names for {sizes['hwc_series']} counter series")


def _in_range(model: TraceModel, name: str, lo: int, hi: int) -> None:
    """Every value of the column in [lo, hi)."""
    column = getattr(model, name)
    if column.size and (int(column.min()) < lo or int(column.max()) >= hi):
        raise ModelInvalid(f"column {name} holds {int(column.min())}..{int(column.max())}, outside [{lo}, {hi})")


def _check_orders(model: TraceModel) -> None:
    """Events sorted by (lane, ts) and owned by lanes as lane_ptr says; memory, coll and gpu_arg rows sorted."""
    ptr = model.lane_ptr
    if ptr[0] != 0 or ptr[-1] != model.n_events or np.any(np.diff(ptr) < 0):
        raise ModelInvalid("lane_ptr is not a sorted offset table from 0 to the number of events")
    owner = np.repeat(np.arange(model.lane_kind.size, dtype=np.int64), np.diff(ptr))
    if not np.array_equal(owner, model.lane):
        raise ModelInvalid("events are not grouped by lane as lane_ptr says")
    same_lane = model.lane[1:] == model.lane[:-1]
    if np.any(same_lane & (np.diff(model.ts_ns) < 0)):
        raise ModelInvalid("events are not sorted by time within their lane")
    for name in ("mem_ts_ns", "coll_row", "gpu_arg_row", "hwc_series"):
        if np.any(np.diff(getattr(model, name)) < 0):
            raise ModelInvalid(f"column {name} is not sorted")
    same_series = model.hwc_series[1:] == model.hwc_series[:-1]
    if np.any(same_series & (np.diff(model.hwc_ts_ns) < 0)):
        raise ModelInvalid("hardware-counter samples are not sorted by time within their series")
    if not np.isfinite(model.hwc_value).all():
        raise ModelInvalid("column hwc_value holds a value that is not finite")


def _check_tables(model: TraceModel) -> None:
    """The string tables and metadata have the types the code reads them as."""
    for name in ("names", "cats", "lane_label", "warnings", "coll_strings", "shape_strings", "inputs_strings",
                 "hwc_names"):
        table: Any = getattr(model, name)
        if not isinstance(table, tuple) or not all(isinstance(s, str) for s in table):
            raise ModelInvalid(f"{name} is not a table of strings")
    if not isinstance(model.meta, dict) or not isinstance(model.skipped, dict):
        raise ModelInvalid("meta or skipped is not an object")
    if not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in model.skipped.items()):
        raise ModelInvalid("skipped is not a table of counts")
    if not isinstance(model.source_bytes, int) or isinstance(model.source_bytes, bool) or model.source_bytes < 0:
        raise ModelInvalid("source_bytes is not a size")


# ---- the summary section: the report entry and the rank digest --------------------------------------

JSON_LEAVES = (str, int, float, bool, type(None))
MAX_SUMMARY_DEPTH = 16


def check_summary(report: Any, digest: Any, digest_type: type) -> None:
    """Raise ModelInvalid unless the report entry is a tree of JSON values under string keys and the digest is
    a `digest_type` whose fields have their declared types, numeric 1-D arrays and equal-length step columns."""
    if not isinstance(report, dict) or not _json_like(report, 0):
        raise ModelInvalid("the report entry is not a JSON object")
    if type(digest) is not digest_type:
        raise ModelInvalid(f"the rank digest is a {type(digest).__name__}")
    _conforms(digest, digest_type.__name__)
    steps = {digest.step_numbers.size, digest.step_dur_ns.size, digest.step_comm_ns.size, digest.step_exposed_ns.size}
    if len(steps) != 1:
        raise ModelInvalid("the digest's step columns have unequal lengths")
    if any(len(w) not in (0, digest.step_numbers.size) for w in (digest.step_host_work, digest.step_device_work)):
        raise ModelInvalid("the digest's step work is not one entry per step")
    if not all(_named_ns(step) for w in (digest.step_host_work, digest.step_device_work) for step in w):
        raise ModelInvalid("the digest's step work is not (name, ns) pairs")
    calls = {v.size if isinstance(v, np.ndarray) else len(v) for v in record_values(digest.calls)
             if isinstance(v, (np.ndarray, tuple))}  # the per-call tuples (kind, group, before, ...) as well
    if len(calls) > 1:
        raise ModelInvalid("the digest's collective call columns have unequal lengths")


def _named_ns(step: Any) -> bool:
    """One step's work: (name, ns) pairs, ns a non-negative int (what `straggler._difference` sums)."""
    return isinstance(step, tuple) and all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and type(p[1]) is int and p[1] >= 0 for p in step)


def _json_like(value: Any, depth: int) -> bool:
    if depth > MAX_SUMMARY_DEPTH:
        return False
    if isinstance(value, JSON_LEAVES):
        return True
    if isinstance(value, (list, tuple)):
        return all(_json_like(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_like(v, depth + 1) for k, v in value.items())
    return False


def _conforms(obj: Any, where: str) -> None:
    """Each field of a record (a msgspec Struct) against its annotation: arrays numeric and 1-D, scalars of their
    type, nested records likewise (what the ranks view and `report` read without checking)."""
    hints = typing.get_type_hints(type(obj))
    for field in obj.__struct_fields__:
        value, hint = getattr(obj, field), hints[field]
        name = f"{where}.{field}"
        if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
            if type(value) is not hint:
                raise ModelInvalid(f"{name} is a {type(value).__name__}, not a {hint.__name__}")
            _conforms(value, name)
        elif not _matches(value, hint):
            raise ModelInvalid(f"{name} is a {type(value).__name__}, not {hint}")


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if hint is Any:
        return _json_like(value, 0) or isinstance(value, np.ndarray)
    if origin is typing.Union:
        return any(_matches(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is np.ndarray:
        return isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "biuf"
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is dict:
        return isinstance(value, dict) and _json_like(value, 0)
    if origin in (tuple, list):
        return isinstance(value, origin) and _json_like(list(value), 0)
    return isinstance(value, hint) if isinstance(hint, type) else False
