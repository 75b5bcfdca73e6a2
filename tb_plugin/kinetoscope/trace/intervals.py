"""Vectorized interval arithmetic on int64 nanoseconds: unions, coverage queries, enclosing lookups, windows of
sorted runs packed in one column; and the nesting of intervals on sorted lanes (depths, parents, subtree ends,
the innermost interval at a time), which the model's builder and the analyses share.

A "union" is a pair of sorted, disjoint (starts, ends) arrays: touching or overlapping inputs merge. Each nesting
algorithm runs as one compiled pass (`_columns`) where the extension is loaded, else in numpy array passes: both
give the same answers (tests/test_columns_accel.py).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .budgets import pure_python

EMPTY = np.zeros(0, np.int64)


def _load_compiled():
    """The compiled passes (`_columns`), or None where the extension is absent or KINETOSCOPE_PURE_PYTHON is set."""
    if pure_python():
        return None
    try:
        from . import _columns
    except ImportError:
        return None
    return _columns


_accel = _load_compiled()


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals into sorted disjoint ones (HTA's shift + running-max pattern).

        in:   [----)  [--)
                 [-------)     [--)
        out:  [----------)     [--)
    """
    if starts.size == 0:
        return EMPTY, EMPTY
    if (starts[1:] >= starts[:-1]).all():  # already in order (one lane's rows): no sort, no copies
        s, e = starts, ends
    else:
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new_group = np.concatenate(([True], s[1:] > reach[:-1]))
    group_start = np.flatnonzero(new_group)
    group_end = np.concatenate((group_start[1:], [s.size])) - 1
    return s[group_start], reach[group_end]


def coded_unions(starts: np.ndarray, ends: np.ndarray, code: np.ndarray, lane_ptr: np.ndarray,
                 n_codes: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """`union` of the rows of each code `0..n_codes-1` (int8 per row; < 0: none), where the rows `lane_ptr[k]..
    lane_ptr[k+1]` of each lane start in order (a model's events): one compiled merge of the lanes, without the
    gathers and sorts of a union per code; the same unions by `union` where the extension is not loaded."""
    found = compiled_coded_unions(starts, ends, code, lane_ptr, n_codes)
    if found is not None:
        return found
    return [union(starts[code == k], ends[code == k]) for k in range(n_codes)]


def ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Every integer of the ranges [lo[k], hi[k]), range after range (none where hi <= lo)."""
    counts = np.maximum(hi - lo, 0)
    return np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(lo - (np.cumsum(counts) - counts), counts)


def packed_window(start_key: np.ndarray, end_key: np.ndarray, runs: int, stride: int, t0: int, t1: int) -> np.ndarray:
    """Positions of the items overlapping [t0, t1) in `runs` sorted runs packed in one column, run r's keys being
    r * stride + t (its items' starts in `start_key`, ends in `end_key`, both ascending): those ending after t0 and
    starting before t1, one binary search per run, in run then position order. The caller clamps t0 and t1 so that
    r * stride + t never reaches a neighbouring run's keys."""
    at = np.arange(runs, dtype=np.int64) * stride
    return ranges(np.searchsorted(end_key, at + t0, side="right"), np.searchsorted(start_key, at + t1, side="left"))


def total(u_starts: np.ndarray, u_ends: np.ndarray) -> int:
    """Total length of a union."""
    return int((u_ends - u_starts).sum())


def covered(u_starts: np.ndarray, u_ends: np.ndarray, q_starts, q_ends) -> np.ndarray:
    """Length of each query interval [q_start, q_end) covered by the union (vectorized over queries)."""
    q_starts = np.asarray(q_starts, np.int64)
    q_ends = np.asarray(q_ends, np.int64)
    return np.maximum(_cumulative(u_starts, u_ends, q_ends) - _cumulative(u_starts, u_ends, q_starts), 0)


def _cumulative(u_starts: np.ndarray, u_ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """C(t) = union length before time t."""
    if u_starts.size == 0:
        return np.zeros(np.shape(t), np.int64)
    prefix = np.concatenate(([0], np.cumsum(u_ends - u_starts)))
    k = np.searchsorted(u_starts, t, side="right")  # intervals starting at or before t
    last = np.maximum(k - 1, 0)
    inside = np.where(k > 0, np.minimum(t, u_ends[last]) - u_starts[last], 0)
    return prefix[np.maximum(k - 1, 0)] * (k > 0) + np.maximum(inside, 0)


def gaps_between(u_starts: np.ndarray, u_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The holes of a union inside its own span: (ends[:-1], starts[1:])."""
    return u_ends[:-1], u_starts[1:]


def enclosing_top(starts: np.ndarray, ends: np.ndarray, depth: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time in `t`, the index of the outermost interval containing it (start <= t < end), or -1.

    `starts` must be sorted; `depth` is each interval's nesting depth among these intervals (0 = top).
    Top-level intervals do not overlap, so one searchsorted over them answers every query.
    """
    top = np.flatnonzero(depth == 0)
    if top.size == 0 or np.size(t) == 0:
        return np.full(np.shape(t), -1, np.int64)
    k = np.searchsorted(starts[top], t, side="right") - 1
    cand = top[np.maximum(k, 0)]
    hit = (k >= 0) & (ends[cand] > t)
    return np.where(hit, cand, -1)


def subtract(a_starts: np.ndarray, a_ends: np.ndarray, b_starts: np.ndarray, b_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union A minus the union B, as a union (both inputs sorted and disjoint).

        A:  [--------)     [----)
        B:     [--)  [--------)
        out:[--)  [-)         [-)

    One sweep: A's edges count +1/-1, B's -1/+1, so a stretch is in A and not in B where the running
    count is 1. The four edge arrays are sorted runs, which a stable (merge) sort joins in linear time.
    """
    if a_starts.size == 0 or b_starts.size == 0:
        return a_starts, a_ends
    t = np.concatenate((a_starts, a_ends, b_starts, b_ends))
    na, nb = a_starts.size, b_starts.size
    step = np.concatenate((np.ones(na, np.int8), np.full(na, -1, np.int8), np.full(nb, -1, np.int8), np.ones(nb, np.int8)))
    order = np.argsort(t, kind="stable")
    t, count = t[order], np.cumsum(step[order], dtype=np.int64)
    keep = np.flatnonzero((count[:-1] == 1) & (t[1:] > t[:-1]))
    return union(t[keep], t[keep + 1])


def nesting_depth(ts_ns: np.ndarray, dur_ns: np.ndarray, lane_ptr: np.ndarray) -> np.ndarray:
    """Per lane (rows sorted by start within each), how many earlier events are still open when each starts.

    Compiled (one heap pass, `_columns.nesting_depth`) where the extension is loaded and every lane's starts
    rise and no duration is negative; else `_nesting_depth_py`. Both give the same depths, capped at 32767.
    """
    if _accel is not None and ts_ns.size:
        depth = np.empty(ts_ns.size, np.int16)
        if _accel.nesting_depth(np.ascontiguousarray(ts_ns, np.int64), np.ascontiguousarray(dur_ns, np.int64),
                                np.ascontiguousarray(lane_ptr, np.int64), depth):
            return depth
    return _nesting_depth_py(ts_ns, dur_ns, lane_ptr)


def _nesting_depth_py(ts_ns: np.ndarray, dur_ns: np.ndarray, lane_ptr: np.ndarray) -> np.ndarray:
    """`nesting_depth` in array passes, for lanes sorted by (ts, -dur).

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


def compiled_parents(depth: np.ndarray) -> Optional[np.ndarray]:
    """`analysis.nesting.parents_by_depth` in one compiled pass (`_columns.parents`): per row, the last earlier row
    one level up, or -1. None where the extension is not loaded or a depth is outside 0..32767 (the array passes then
    answer)."""
    depth = np.asarray(depth)
    if _accel is None or depth.ndim != 1 or depth.dtype.kind not in "iu":
        return None
    if depth.size and (int(depth.min()) < 0 or int(depth.max()) > np.iinfo(np.int16).max):
        return None
    out = np.empty(depth.size, np.int64)
    _accel.parents(np.ascontiguousarray(depth, np.int16), out)
    return out


def compiled_subtree_ends(parent: np.ndarray) -> Optional[np.ndarray]:
    """Per node of a forest in preorder (`parent`: each node's parent position, before it, or -1), one past the
    position of its last descendant, in one compiled backward pass (`_columns.subtree_ends`). None where the
    extension is not loaded or a parent does not come before its child (`op_forest.subtree_max` then answers)."""
    if _accel is None:
        return None
    out = np.empty(np.size(parent), np.int64)
    return out if _accel.subtree_ends(np.ascontiguousarray(parent, np.int64), out) else None


def compiled_innermost(lane: np.ndarray, t: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
                       ptr: np.ndarray) -> Optional[np.ndarray]:
    """`op_forest._owners` in one compiled pass (`_columns.innermost`): per query, the innermost node of a preorder
    forest running at `t` on forest lane `lane` (its index; -1 for none), or -1. None where the extension is not
    loaded or the forest is malformed (the array passes then answer)."""
    if _accel is None:
        return None
    out = np.empty(np.size(t), np.int64)
    arrays = (np.ascontiguousarray(a, np.int64) for a in (lane, t, start, end, parent, ptr))
    return out if _accel.innermost(*arrays, out) else None


def compiled_coded_unions(ts: np.ndarray, end: np.ndarray, code: np.ndarray, ptr: np.ndarray,
                          n_codes: int) -> Optional[list[tuple[np.ndarray, np.ndarray]]]:
    """`intervals.coded_unions` in one compiled merge of the lanes (`_columns.coded_unions`): rows `ptr[k]..ptr[k+1]`
    of lane k start in order. None where the extension is not loaded, or the rows are not in that order."""
    if _accel is None:
        return None
    code = np.ascontiguousarray(code, np.int8)
    rows = np.array([np.count_nonzero(code == k) for k in range(n_codes)], np.int64)  # room: one interval per row
    offsets = np.zeros(n_codes, np.int64)
    np.cumsum(rows[:-1], out=offsets[1:])
    starts, ends, counts = np.empty(int(rows.sum()), np.int64), np.empty(int(rows.sum()), np.int64), np.zeros(n_codes, np.int64)
    arrays = (np.ascontiguousarray(a, np.int64) for a in (ts, end))
    if not _accel.coded_unions(*arrays, code, np.ascontiguousarray(ptr, np.int64), offsets, starts, ends, counts):
        return None
    return [(starts[o:o + k].copy(), ends[o:o + k].copy()) for o, k in zip(offsets.tolist(), counts.tolist())]
