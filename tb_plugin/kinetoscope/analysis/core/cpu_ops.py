"""CPU hot spots: the operators with the most self time (their duration minus their child operators').

Self time is measured among operators only: a `record_function` annotation neither takes time from the
ops inside it nor counts as an op itself.
"""
from __future__ import annotations

import numpy as np

from ...trace.model import TraceModel, unique_inverse
from .selectors import OpIndex


def self_time(model: TraceModel, ops: OpIndex) -> tuple[np.ndarray, np.ndarray]:
    """Every CPU op row and its self time in ns (duration minus the durations of its direct child ops)."""
    all_rows, all_self = [], []
    for lane in ops.lanes:
        rows, index = ops.nested(lane, annotation=False)
        if rows.size == 0:
            continue
        dur = index.ends_ns - index.starts_ns
        has_parent = index.parent >= 0
        children = np.bincount(index.parent[has_parent], weights=dur[has_parent], minlength=rows.size)
        all_rows.append(rows)
        all_self.append(np.maximum(dur - children.astype(np.int64), 0))
    if not all_rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(all_rows), np.concatenate(all_self)


def hot_spots(model: TraceModel, ops: OpIndex, top: int) -> list[tuple[str, int]]:
    """The `top` op names by total self time, largest first, as (name, self ns)."""
    rows, self_ns = self_time(model, ops)
    if rows.size == 0:
        return []
    ids, inverse = unique_inverse(model.name_id[rows])
    total = np.bincount(inverse, weights=self_ns)
    order = np.argsort(-total, kind="stable")[:top]
    return [(model.shown_names[ids[i]], int(total[i])) for i in order if total[i] > 0]
