"""The finishing of the model (`ColumnBuilder.finish`): the complete events' rows and ns times, their
(lane, ts, -dur) order, nesting depth and launch links, and the memory columns and the document's metadata.
"""
from __future__ import annotations

from concurrent.futures import Executor, Future
from typing import Any, Callable, Optional

import numpy as np

from .decode import TraceDoc
from .extractors import MEMORY_ARGS, PH_M, PH_OTHER, PH_X, accel
from .intervals import nesting_depth
from .kinds import ACTIVITY_KINDS, LAUNCH_KINDS
from .model import union
from .rowstore import ROW_DTYPES, RowStore


def meanwhile(pool: Optional[Executor], work: Callable[..., Any], *args: Any) -> Future:
    """`work(*args)` in a thread of `pool` while the caller goes on (its error comes out of `result()`); done at once,
    here, without a pool."""
    if pool is not None:
        return pool.submit(work, *args)
    done: Future = Future()
    done.set_result(work(*args))
    return done


def int64(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int64, copy=False)


def take_column(chunks: list[dict[str, np.ndarray]], store: RowStore, key: str) -> np.ndarray:
    """One raw column over all chunks (the store's, or the chunks' parts joined); it is released there (each key is
    taken once)."""
    if key in ROW_DTYPES:
        return store.take(key)
    parts = [c.pop(key) for c in chunks]
    return np.concatenate(parts) if parts else np.zeros(0)


COLUMN_KEYS = ("ph", "name", "cat", "ts", "dur", "pid", "tid", "correlation", "external_id", "device", "stream",
               "mem_row", *(f"mem_{k}" for k in MEMORY_ARGS), "flow_row", "flow_id", "source_row")


UNSUPPORTED_PHASE = "unsupported phase (B/E/C/other)"  # the skipped reason of every event of another phase
_INT_LIMIT = 2.0**62  # ns times and durations (146 years) or byte counts beyond this are unusable, not int64 overflows


def complete_rows(doc: TraceDoc, take: Callable[[str], np.ndarray], take_rows: Callable[[str, np.ndarray], np.ndarray],
                  skipped: dict[str, int], warnings: list[str]) -> tuple:
    """The first step of `ColumnBuilder.finish`: (the base time, every row's phase, ns time and whether that time is
    usable, the `[memory]` events' rows, the complete events' rows (usable times, not memory) and their ns durations).
    What is dropped is counted in `skipped`, what is changed told in `warnings`."""
    base_ns = doc.baseTimeNanoseconds or 0
    if not -_INT_LIMIT < base_ns < _INT_LIMIT:
        warnings.append(f"ignored baseTimeNanoseconds={base_ns} (out of range)")
        base_ns = 0
    ph = take("ph").astype(np.int8, copy=False)
    ts_ns, ts_ok, _ = _to_ns(take("ts").astype(np.float64, copy=False), base_ns)  # its own buffer: consumed
    mem_row = take("mem_row").astype(np.int64, copy=False)
    is_memory = np.zeros(ph.size, bool)
    is_memory[mem_row] = True
    _count(skipped, UNSUPPORTED_PHASE, int(np.count_nonzero(ph == PH_OTHER)))
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
    return base_ns, ph, ts_ns, ts_ok, mem_row, x_rows, dur_ns


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
    if accel is not None and us.dtype == np.float64 and us.flags.c_contiguous and us.flags.writeable:
        ok = np.empty(us.size, bool)
        negatives = accel.us_to_ns(us, base_ns, ok, clamp_negative)
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


def event_columns(ts_ns, dur_ns, kind, name_id, cat_id, lane, n_lanes, correlation, external_id,
                  source_row) -> dict[str, np.ndarray]:
    """Columns of the complete events (given sorted by (lane, ts, -dur)), with their depth (`link_launches` gives the
    launch links)."""
    cols = {"ts_ns": ts_ns, "dur_ns": dur_ns, "kind": kind, "name_id": name_id, "cat_id": cat_id, "lane": lane,
            "correlation": correlation, "external_id": external_id, "source_row": source_row}
    cols["lane_ptr"] = np.searchsorted(lane, np.arange(n_lanes + 1)).astype(np.int64, copy=False)
    cols["depth"] = nesting_depth(ts_ns, dur_ns, cols["lane_ptr"])
    return cols


def lane_time_order(lane: np.ndarray, ts_ns: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
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


def memory_columns(raw: dict, mem_row: np.ndarray, keep: np.ndarray, ts_ns: np.ndarray, lane: np.ndarray) -> dict[str, np.ndarray]:
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


def meta(doc: TraceDoc, base_ns: int) -> dict[str, Any]:
    return {"base_time_ns": base_ns, "schema_version": doc.schemaVersion,
            "device_properties": doc.deviceProperties if isinstance(doc.deviceProperties, list) else [],
            "distributed_info": doc.distributedInfo if isinstance(doc.distributedInfo, dict) else None,
            "display_time_unit": doc.displayTimeUnit if isinstance(doc.displayTimeUnit, str) else None}
