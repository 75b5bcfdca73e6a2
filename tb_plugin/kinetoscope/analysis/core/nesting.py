"""Point queries on one lane's nested intervals: what was running at time t, innermost first.

The intervals of one CPU thread nest (a `cpu_op` inside a `user_annotation` inside `ProfilerStep#N`).
Sorted by (start, -length), the innermost interval containing t is found by taking the last one that
started at or before t and climbing to its enclosing parents until one still runs at t:

    t:                         |
    [## forward ##.............|..........)      <- parent of the parent: contains t
       [aten::linear)          |                 <- last started before t: ended, climb
          [aten::addmm)        |                 <- (a child that ended too)
                       [aten::relu ...)          <- starts after t: not a candidate

Every query costs one searchsorted plus one vectorized step per nesting level.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...trace.intervals import compiled_parents, nesting_depth
from ...trace.model import stable_order


class NestedIndex:
    """Innermost-at and last-ended-before queries over intervals sorted by (start, -length)."""

    def __init__(self, starts_ns: np.ndarray, ends_ns: np.ndarray) -> None:
        self.starts_ns = np.asarray(starts_ns, np.int64)
        self.ends_ns = np.asarray(ends_ns, np.int64)
        depth = nesting_depth(self.starts_ns, self.ends_ns - self.starts_ns, np.array([0, self.starts_ns.size]))
        self.parent = parents_by_depth(depth)
        self.max_depth = int(depth.max(initial=0))
        self._by_end: Optional[np.ndarray] = None  # sorted on the first last_ended_before

    def innermost_at(self, t_ns: np.ndarray) -> np.ndarray:
        """Index of the innermost interval with start <= t < end, or -1, for each t."""
        t_ns = np.asarray(t_ns, np.int64)
        cand = np.searchsorted(self.starts_ns, t_ns, side="right") - 1
        for _ in range(self.max_depth + 1):
            ended = (cand >= 0) & (self.ends_ns[np.maximum(cand, 0)] <= t_ns)
            if not ended.any():
                break
            cand = np.where(ended, self.parent[np.maximum(cand, 0)], cand)
        return np.where((cand >= 0) & (self.ends_ns[np.maximum(cand, 0)] > t_ns), cand, -1)

    def last_ended_before(self, t_ns: np.ndarray) -> np.ndarray:
        """Index of the interval that ended last at or before t (ties: the one that started last), or -1."""
        if self._by_end is None:
            self._by_end = np.argsort(self.ends_ns, kind="stable")
        k = np.searchsorted(self.ends_ns[self._by_end], np.asarray(t_ns, np.int64), side="right") - 1
        return np.where(k >= 0, self._by_end[np.maximum(k, 0)], -1)


def parents_by_depth(depth: np.ndarray) -> np.ndarray:
    """Per interval, the last earlier interval one level up (its parent), or -1: one compiled pass where the
    extension is built, else one pass of array operations per level (`_parents_by_depth_py`)."""
    parent = compiled_parents(depth)
    return parent if parent is not None else _parents_by_depth_py(depth)


def _parents_by_depth_py(depth: np.ndarray) -> np.ndarray:
    """`parents_by_depth` in array operations, one pass per level."""
    parent = np.full(depth.size, -1, np.int64)
    by_level = stable_order(depth)  # within a level, still in start order
    bounds = np.searchsorted(depth[by_level], np.arange(int(depth.max(initial=0)) + 2))
    for level in range(1, bounds.size - 1):
        above, here = by_level[bounds[level - 1]:bounds[level]], by_level[bounds[level]:bounds[level + 1]]
        if here.size and above.size:
            k = np.searchsorted(above, here) - 1
            parent[here[k >= 0]] = above[k[k >= 0]]
    return parent
