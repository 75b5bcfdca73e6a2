"""Typed events -> columnar TraceModel.

Every per-event step is a C-level `map` feeding `np.fromiter` or a numpy operation: at 10^6 events
a Python-level loop body of even 1 µs would cost a second, more than the whole decode.
"""
from __future__ import annotations

from itertools import repeat
from operator import attrgetter
from typing import Any

import numpy as np

from .decode import Decoded, Event
from .kinds import ACTIVITY_KINDS, LAUNCH_KINDS, kind_of_category
from .lanes import assign_lanes
from .model import TraceModel

PH_X, PH_I, PH_S, PH_F, PH_M, PH_OTHER = 0, 1, 2, 3, 4, 5
_PHASES = {"X": PH_X, "i": PH_I, "I": PH_I, "s": PH_S, "f": PH_F, "t": PH_F, "M": PH_M}
_MEMORY_NAME = "[memory]"


def build_model(decoded: Decoded, source_bytes: int = 0) -> TraceModel:
    """Turn decoded events into the columnar model.

    Args:
        decoded: the decoder's output (events plus skip counts).
        source_bytes: uncompressed size of the source, for statistics.

    Returns:
        The model, with every event it could not place counted in `skipped`.
    """
    doc = decoded.doc
    events = doc.traceEvents
    skipped = dict(decoded.skipped)
    warnings = list(decoded.warnings)
    n = len(events)
    base_ns = doc.baseTimeNanoseconds or 0

    ph = np.fromiter(map(_PHASES.get, map(attrgetter("ph"), events), repeat(PH_OTHER)), np.int8, n)
    names, name_id = _intern(map(attrgetter("name"), events), n)
    cats, cat_id = _intern(map(attrgetter("cat"), events), n)
    ts_ns, ts_ok = _to_ns(np.fromiter(map(attrgetter("ts"), events), np.float64, n), base_ns)

    is_memory = name_id == names.index(_MEMORY_NAME) if _MEMORY_NAME in names else np.zeros(n, bool)
    complete = (ph == PH_X) & ~is_memory
    _count(skipped, "unsupported phase (B/E/C/other)", int(np.count_nonzero(ph == PH_OTHER)))
    timed = ts_ok | (ph == PH_M)
    _count(skipped, "missing or non-finite ts", int(np.count_nonzero(~timed)))

    dur_us = np.fromiter(map(attrgetter("dur"), events), np.float64, n)
    x_rows = np.flatnonzero(complete & ts_ok)
    dur_ok = np.isfinite(dur_us[x_rows])
    _count(skipped, "complete event without a finite dur", int(np.count_nonzero(~dur_ok)))
    x_rows = x_rows[dur_ok]
    dur_ns, negatives = _dur_to_ns(dur_us[x_rows])
    if negatives:
        warnings.append(f"{negatives} negative durations clamped to 0")

    lanes = assign_lanes(events, ph, x_rows, cats, cat_id, memory_rows=np.flatnonzero(is_memory & ts_ok),
                         flow_rows=np.flatnonzero(((ph == PH_S) | (ph == PH_F)) & ts_ok))
    kind = _kinds(cats)[cat_id[x_rows]]
    ev = _event_columns(events, decoded.legacy_external_id, x_rows, ts_ns[x_rows], dur_ns, kind, name_id[x_rows], cat_id[x_rows], lanes.x_lane,
                        len(lanes.kind))
    mem = _memory_columns(events, lanes.memory_rows, ts_ns, lanes.memory_lane)
    flows = _flow_columns(events, lanes.flow_rows, ph, ts_ns, cat_id, lanes.flow_lane)
    meta = _meta(doc, base_ns)
    return TraceModel(
        **ev, lane_kind=lanes.kind, lane_pid=lanes.pid, lane_tid=lanes.tid, lane_label=tuple(lanes.label),
        **mem, **flows, names=tuple(names), cats=tuple(cats), meta=meta, skipped=skipped,
        warnings=tuple(warnings), source_bytes=source_bytes,
    )


def _intern(values, n: int) -> tuple[list[str], np.ndarray]:
    """Intern strings in first-seen order; returns the table and an int32 id per value."""
    table: dict[str, int] = {}
    first = np.fromiter(map(table.setdefault, values, range(n)), np.int64, n)
    first_rows = np.fromiter(table.values(), np.int64, len(table))  # ascending: insertion order
    return list(table), np.searchsorted(first_rows, first).astype(np.int32)


def _to_ns(ts_us: np.ndarray, base_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """µs floats -> int64 ns, exact for integer µs (16-digit epoch values) and ns-precise fractions."""
    ok = np.isfinite(ts_us)
    clean = np.where(ok, ts_us, 0.0)
    whole = np.floor(clean)
    ns = whole.astype(np.int64) * 1000 + np.rint((clean - whole) * 1000).astype(np.int64)
    return ns + np.int64(base_ns), ok


def _dur_to_ns(dur_us: np.ndarray) -> tuple[np.ndarray, int]:
    """Durations to int64 ns, negatives clamped to 0 (Kineto does the same since 2022-08)."""
    negative = dur_us < 0
    whole = np.floor(np.abs(dur_us))
    ns = whole.astype(np.int64) * 1000 + np.rint((np.abs(dur_us) - whole) * 1000).astype(np.int64)
    ns[negative] = 0
    return ns, int(np.count_nonzero(negative))


def _kinds(cats: list[str]) -> np.ndarray:
    return np.array([kind_of_category(c) for c in cats], dtype=np.int8)


def _count(skipped: dict[str, int], reason: str, count: int) -> None:
    if count:
        skipped[reason] = skipped.get(reason, 0) + count


def _args_column(args: list, attr: str, dtype, default) -> np.ndarray:
    return np.fromiter(map(attrgetter(attr), args), dtype, len(args)) if args else np.full(0, default, dtype)


def _pick(events: list[Event], rows: np.ndarray) -> list[Event]:
    if rows.size == len(events):
        return events
    return [events[i] for i in rows.tolist()]


def _event_columns(events, legacy, rows, ts_ns, dur_ns, kind, name_id, cat_id, lane, n_lanes) -> dict[str, np.ndarray]:
    """Columns of the complete events, sorted by (lane, ts, -dur), with depth and launch links."""
    args = list(map(attrgetter("args"), _pick(events, rows)))
    correlation = _args_column(args, "correlation", np.int64, -1)
    external_id = _args_column(args, "external_id", np.int64, -1)
    if legacy:
        older = _args_column(args, "external_id_2021", np.int64, -1)
        external_id = np.where(external_id >= 0, external_id, older)
    order = _lane_time_order(lane, ts_ns, dur_ns)
    cols = {"ts_ns": ts_ns[order], "dur_ns": dur_ns[order], "kind": kind[order], "name_id": name_id[order],
            "cat_id": cat_id[order], "lane": lane[order].astype(np.int32), "correlation": correlation[order],
            "external_id": external_id[order]}
    cols["lane_ptr"] = np.searchsorted(cols["lane"], np.arange(n_lanes + 1)).astype(np.int64)
    cols["depth"] = nesting_depth(cols["ts_ns"], cols["dur_ns"], cols["lane_ptr"])
    cols["launch_idx"] = link_launches(cols["kind"], cols["correlation"])
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
    key = (lane.astype(np.int64) << 44) | rel
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    tie = np.flatnonzero(sorted_key[1:] == sorted_key[:-1])
    if tie.size:
        rows = np.union1d(tie, tie + 1)
        group = np.cumsum(np.concatenate(([True], sorted_key[1:] != sorted_key[:-1])))[rows]
        order[rows] = order[rows][np.lexsort((-dur_ns[order[rows]], group))]
    return order


def nesting_depth(ts_ns: np.ndarray, dur_ns: np.ndarray, lane_ptr: np.ndarray) -> np.ndarray:
    """Per lane, how many earlier events are still open when each event starts.

    With rows sorted by (ts, -dur), event i's depth is the number of rows j < i with end_j > ts_i.
    Rows j < i with end_j <= ts_i are counted with one searchsorted over sorted ends; the only rows
    j >= i that also satisfy end_j <= ts_i are zero-length ones starting exactly at ts_i, which the
    (ts, -dur) order puts at the tail of the tie group: subtract those.
    """
    depth = np.zeros(ts_ns.size, np.int16)
    for k in range(lane_ptr.size - 1):
        lo, hi = int(lane_ptr[k]), int(lane_ptr[k + 1])
        if hi - lo < 2:
            continue
        start = ts_ns[lo:hi]
        zero = dur_ns[lo:hi] == 0
        ends_le = np.searchsorted(np.sort(start + dur_ns[lo:hi]), start, side="right")
        group_end = np.searchsorted(start, start, side="right")
        zero_cum = np.concatenate(([0], np.cumsum(zero)))
        index = np.arange(hi - lo)
        zero_after = zero_cum[group_end] - zero_cum[index + 1]
        closed_before = ends_le - zero - zero_after
        depth[lo:hi] = np.minimum(index - closed_before, np.iinfo(np.int16).max)
    return depth


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


def _memory_columns(events, rows, ts_ns, lane) -> dict[str, np.ndarray]:
    """Columns of `[memory]` events sorted by time; absent totals are -1 (2021 files have none)."""
    args = list(map(attrgetter("args"), _pick(events, rows)))

    def col(attr: str, default: int) -> np.ndarray:
        values = _args_column(args, attr, np.float64, np.nan)
        return np.where(np.isfinite(values), values, default).astype(np.int64)

    order = np.argsort(ts_ns[rows], kind="stable")
    return {"mem_ts_ns": ts_ns[rows][order], "mem_lane": lane[order].astype(np.int32),
            "mem_device_type": col("device_type", 0)[order].astype(np.int16),
            "mem_device_id": col("device_id", -1)[order].astype(np.int16), "mem_bytes": col("bytes", 0)[order],
            "mem_total_allocated": col("total_allocated", -1)[order],
            "mem_total_reserved": col("total_reserved", -1)[order], "mem_addr": col("addr", -1)[order]}


def _flow_columns(events, rows, ph, ts_ns, cat_id, lane) -> dict[str, np.ndarray]:
    picked = _pick(events, rows)
    ids, _ = _flow_ids(list(map(attrgetter("id"), picked)))
    return {"flow_id": ids, "flow_cat_id": cat_id[rows].astype(np.int32),
            "flow_phase": (ph[rows] == PH_F).astype(np.int8), "flow_ts_ns": ts_ns[rows],
            "flow_lane": lane.astype(np.int32)}


def _flow_ids(raw: list) -> tuple[np.ndarray, int]:
    """Flow ids are ints in Kineto files; strings from other writers are interned to negative ids."""
    try:
        return np.fromiter(raw, np.int64, len(raw)), 0
    except (TypeError, ValueError, OverflowError):
        pass
    table: dict[Any, int] = {}
    out = np.empty(len(raw), np.int64)
    for i, value in enumerate(raw):
        out[i] = value if isinstance(value, int) and abs(value) < (1 << 62) else -1 - table.setdefault(value, len(table))
    return out, len(table)


def _meta(doc, base_ns: int) -> dict[str, Any]:
    return {"base_time_ns": base_ns, "schema_version": doc.schemaVersion,
            "device_properties": doc.deviceProperties if isinstance(doc.deviceProperties, list) else [],
            "distributed_info": doc.distributedInfo if isinstance(doc.distributedInfo, dict) else None,
            "display_time_unit": doc.displayTimeUnit if isinstance(doc.displayTimeUnit, str) else None}
