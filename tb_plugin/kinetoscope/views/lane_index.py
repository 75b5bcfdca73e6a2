"""A per-model index that finds what to draw in any time window with a few binary searches.

Rows are regrouped by (lane, depth). Within one group, properly nested events never overlap, so
both their starts and their ends are sorted; a window [t0, t1) is then the items from the first end
> t0 to the first start >= t1. Two packed keys make that one vectorized `searchsorted` for all groups:

    start_key = group * stride + (start - base)        sorted: groups ascend, starts ascend within one
    end_key   = running max of group * stride + (end - base)

`stride` exceeds the trace's span, so a group's keys never reach the next group's. The running max
keeps `end_key` sorted even where a writer produced overlapping events at one depth; such items are
then filtered by their own end.

Level of detail is precomputed as a pyramid (a mipmap): level 0 holds every event, level L >= 1 the
same groups with everything narrower than `threshold_ns` merged across gaps narrower than it. A
query at `ns_per_px` reads the coarsest level with threshold <= ns_per_px, so a full view of 450k
events reads a few thousand items instead of every event, and merging them further gives the same
picture as merging the raw events (what a level merged is below the query's own threshold).
"""
from __future__ import annotations

import msgspec
import numpy as np

from ..trace.intervals import packed_window, ranges
from ..trace.kinds import ACTIVITY_KINDS, LaneKind
from ..trace.model import TraceModel, freeze_arrays, record_values, stable_order
from .counter_lanes import CounterIndex, build_counter_index

_KEY_LIMIT = 1 << 62
FINEST_LEVEL_NS = 1_000  # level 1 merges below 1 µs; narrower windows read the raw events
LEVEL_FACTOR = 4
MIN_SHRINK = 0.75  # a level is kept only when it holds at most this share of the previous one's items


class _Frozen:
    def __post_init__(self) -> None:
        freeze_arrays(self)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return sum(v.nbytes for v in record_values(self) if isinstance(v, np.ndarray))


class Level(_Frozen, msgspec.Struct, frozen=True):
    """Items (events, or blocks of merged events) sorted by (group, start); parallel arrays."""

    threshold_ns: float  # what this level merged below (0: nothing, the raw events)
    group: np.ndarray  # int64 (lane, depth) group of each item
    start_key: np.ndarray  # int64, see the module docstring
    end_key: np.ndarray  # int64
    start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64 (the block's furthest end)
    count: np.ndarray  # int64 events in the item
    busy_ns: np.ndarray  # int64 summed durations of its events (fill = busy / extent)
    first_row: np.ndarray  # int64 model row of its first event
    m_ns: np.ndarray  # float64 max(extent, previous extent, gap before): see lanes.py; inf opens a group

    @property
    def size(self) -> int:
        return int(self.start_ns.size)


class LaneIndex(_Frozen, msgspec.Struct, frozen=True):
    """Window search structure of one model (read-only, shared between requests)."""

    levels: tuple[Level, ...]
    group_lane: np.ndarray  # int64 lane of each group
    group_depth: np.ndarray  # int64 depth of each group
    base_ns: int
    stride: int
    lane_max_depth: np.ndarray  # int64 per lane (-1 for a lane without events)
    owned_rows: np.ndarray  # int64 GPU activity rows sorted by their launch row (reverse of launch_idx)
    owned_keys: np.ndarray  # int64 launch row of each entry of owned_rows
    shown_lanes: np.ndarray  # int64 ascending: the lanes `lanes` answers carry (at most MAX_LANES)
    counters: CounterIndex  # the counter lanes' step functions (counter_lanes.py)

    @property
    def nbytes(self) -> int:
        return super().nbytes + sum(level.nbytes for level in self.levels) + self.counters.nbytes

    @property
    def n_groups(self) -> int:
        return int(self.group_lane.size)

    def level_for(self, ns_per_px: float) -> Level:
        """The coarsest level whose merging stays below one pixel at this scale."""
        chosen = self.levels[0]
        for level in self.levels[1:]:
            if level.threshold_ns <= ns_per_px:
                chosen = level
        return chosen


class TraceTooLong(ValueError):
    """The trace's time span times its lane rows does not fit the index's int64 keys."""


def build_lane_index(model: TraceModel) -> LaneIndex:
    """Index a model for window queries (tens of ms per 450k events)."""
    n = model.n_events
    n_depths = int(model.depth.max()) + 1 if n else 1
    lane_max_depth = np.full(model.lane_kind.size, -1, np.int64)
    np.maximum.at(lane_max_depth, model.lane, model.depth.astype(np.int64))
    code = model.lane.astype(np.int64)  # (lane, depth) as one integer, built in place: every temporary here is a
    code *= n_depths  # column of every event, and on a host that backs memory lazily each is fresh pages to fault in
    code += model.depth
    order = stable_order(code)  # rows are (lane, ts)-sorted: ts order survives
    code_sorted = code[order]
    del code
    opens = np.ones(n, bool)
    opens[1:] = code_sorted[1:] != code_sorted[:-1]
    group = np.cumsum(opens)
    group -= 1
    base, span = model.start_ns, model.stop_ns - model.start_ns
    stride = span + 2
    if int(opens.sum()) * stride >= _KEY_LIMIT:
        raise TraceTooLong(f"its events span {span / 3.15576e16:.3g} years ({span:,} ns over {int(opens.sum()):,} rows "
                           "of lanes): timestamps from unrelated clocks, or corrupt; the timeline cannot index it")
    start, busy = model.ts_ns[order], model.dur_ns[order]
    raw = _level(0.0, group, start, start + busy, np.ones(n, np.int64), busy, order, base, stride)
    owned = np.flatnonzero(np.isin(model.kind, np.array(ACTIVITY_KINDS, np.int8)) & (model.launch_idx >= 0))
    owned = owned[np.argsort(model.launch_idx[owned], kind="stable")]
    return LaneIndex(levels=_pyramid(raw, span, base, stride), group_lane=code_sorted[opens] // n_depths,
                     group_depth=code_sorted[opens] % n_depths, base_ns=base, stride=stride,
                     lane_max_depth=lane_max_depth, owned_rows=owned, owned_keys=model.launch_idx[owned],
                     shown_lanes=shown_lanes(model), counters=build_counter_index(model))


MAX_LANES = 2_000  # lanes a `lanes` answer carries: a trace with 200,000 threads must not answer 43 MB


def shown_lanes(model: TraceModel) -> np.ndarray:
    """Every lane when there are at most MAX_LANES; else every device and marker lane, then the CPU threads
    with the most events. Chosen once per trace, so the layout stays put while panning."""
    n = model.lane_kind.size
    if n <= MAX_LANES:
        return np.arange(n, dtype=np.int64)
    events = np.diff(model.lane_ptr)
    cpu = model.lane_kind == LaneKind.CPU
    keep = np.flatnonzero(~cpu)[:MAX_LANES]
    busiest = np.flatnonzero(cpu)[np.argsort(-events[cpu], kind="stable")][:MAX_LANES - keep.size]
    return np.sort(np.concatenate((keep, busiest))).astype(np.int64)


def _level(threshold, group, start, end, count, busy, first_row, base, stride) -> Level:
    offset = group * stride  # in place from here on, as in build_lane_index
    offset -= base
    end_key = end + offset
    np.maximum.accumulate(end_key, out=end_key)
    m = np.full(start.size, np.inf)
    if start.size > 1:
        extent = (end - start).astype(np.float64)
        gap = end_key[:-1] - offset[1:]
        np.subtract(start[1:], gap, out=gap)
        np.maximum(gap, 0, out=gap)
        np.maximum(extent[1:], extent[:-1], out=m[1:])
        del extent
        np.maximum(m[1:], gap, out=m[1:])
        m[1:][group[1:] != group[:-1]] = np.inf
    offset += start  # the start keys
    return Level(threshold_ns=float(threshold), group=group, start_key=offset, end_key=end_key,
                 start_ns=start, end_ns=end, count=count, busy_ns=busy, first_row=first_row, m_ns=m)


def _pyramid(raw: Level, span: int, base: int, stride: int) -> tuple[Level, ...]:
    """Level 0 and the coarser levels worth keeping, up to a 64-pixel view of the whole trace."""
    levels, below = [raw], raw
    threshold = FINEST_LEVEL_NS
    while threshold <= span / 64 and below.size > 1:
        keep = np.flatnonzero(below.m_ns >= threshold)
        if keep.size <= MIN_SHRINK * levels[-1].size:
            below = _level(threshold, below.group[keep], below.start_ns[keep], np.maximum.reduceat(below.end_ns, keep),
                           np.add.reduceat(below.count, keep), np.add.reduceat(below.busy_ns, keep),
                           below.first_row[keep], base, stride)
            levels.append(below)
        threshold *= LEVEL_FACTOR
    return tuple(levels)


def window_positions(index: LaneIndex, level: Level, t0_ns: int, t1_ns: int) -> np.ndarray:
    """Positions (into the level's arrays) of the items overlapping [t0, t1) or nearly: an item
    inside a group's range may still end before t0 where one depth holds overlapping events."""
    if index.n_groups == 0:
        return np.zeros(0, np.int64)
    span = index.stride - 2
    rel0 = min(max(t0_ns - index.base_ns, 0), span)
    rel1 = min(max(t1_ns - index.base_ns, 0), span + 1)
    return packed_window(level.start_key, level.end_key, index.n_groups, index.stride, rel0, rel1)


def owned_activities(index: LaneIndex, launch_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GPU activities launched by each of `launch_rows`: (launch row, activity row) pairs."""
    lo = np.searchsorted(index.owned_keys, launch_rows, side="left")
    hi = np.searchsorted(index.owned_keys, launch_rows, side="right")
    return np.repeat(launch_rows, hi - lo), index.owned_rows[ranges(lo, hi)]
