"""Time in each user annotation (`record_function` ranges), HTA's user-annotation breakdown
(`get_gpu_user_annotation_breakdown`): per annotation name, its count and the sum, min, max, mean and standard
deviation of its durations, on the GPU (`gpu_user_annotation` ranges, HTA's default) or on the CPU
(`user_annotation` ranges; `use_gpu_annotation=False` there).

    table = annotation_table(model, side="gpu", scope="all", window=None)   # -> AnnotationTable

`scope`:
- `all`: every annotation of the side, nested ones included, as HTA counts (`ProfilerStep#N` too, where the
  trace writes steps as annotations): an outer and an inner annotation both count their time.
- `top`: only the outermost annotations of each thread (CPU) or stream (GPU), not counting `ProfilerStep#N`
  (the step table has those): their times never overlap on one lane, so they add up to the annotated time.

HTA keeps, per rank, the events its iteration filter keeps (it drops the CPU events that start in the last
ProfilerStep); Kinetoscope counts the whole trace or a window: in a window, each range counts by its part
inside [start, end) (`tables.clip`), as every table does. `std_ns` is the sample standard deviation (pandas'
default, which HTA reports), 0 for a name with one range. 2021 files write CPU annotations as `Operator`
events; their names tell them apart (`selectors.legacy_annotation_mask`).
"""
from __future__ import annotations

import msgspec
import numpy as np

from ...trace.kinds import STEP_RE, Kind, LaneKind
from ...trace.model import TraceModel, freeze_arrays, union, unique_inverse
from ..core.op_forest import build_forest
from ..core.selectors import legacy_annotation_mask
from .index import Window, clip

SIDES = ("gpu", "cpu")
SCOPES = ("all", "top")


class AnnotationTable(msgspec.Struct, frozen=True):
    """Per annotation name, sorted by total time (descending), then name id."""

    name_id: np.ndarray  # int32
    count: np.ndarray  # ranges overlapping the window
    total_ns: np.ndarray  # their (clipped) durations
    min_ns: np.ndarray
    max_ns: np.ndarray
    mean_ns: np.ndarray  # float64 total / count
    std_ns: np.ndarray  # float64 sample standard deviation (ddof 1), 0 for one range
    side: str
    scope: str
    window: Window

    def __post_init__(self) -> None:
        freeze_arrays(self)


def annotation_rows(model: TraceModel, side: str) -> np.ndarray:
    """Rows of the side's annotation ranges (GPU: `gpu_user_annotation` on GPU lanes; CPU: `user_annotation`,
    and 2021 `Operator` annotations, on CPU lanes), ascending."""
    if side == "gpu":
        return np.flatnonzero((model.kind == Kind.GPU_USER_ANNOTATION) & model.on_lanes(LaneKind.GPU))
    cpu = model.rows_on(LaneKind.CPU)
    ann = cpu[model.kind[cpu] == Kind.USER_ANNOTATION]
    ops = cpu[model.kind[cpu] == Kind.CPU_OP]
    return union(ann, ops[legacy_annotation_mask(model, ops)])


def annotation_table(model: TraceModel, side: str = "gpu", scope: str = "all", window: Window = None) -> AnnotationTable:
    """HTA's user-annotation breakdown for one side; see the module docstring.

    Raises:
        ValueError: an unknown side or scope.
    """
    if side not in SIDES or scope not in SCOPES:
        raise ValueError(f"annotation side must be one of {SIDES} and scope one of {SCOPES}, not {side!r}, {scope!r}")
    rows = annotation_rows(model, side)
    if scope == "top" and rows.size:
        steps = model.name_ids_where(lambda n: STEP_RE.match(n) is not None)
        rows = rows[~model.name_in(steps, rows)]
        forest = build_forest(model, rows, np.zeros(0, np.int64), np.zeros(0, np.int64))
        rows = forest.rows[forest.parent < 0]
    inside, dur = clip(model.ts_ns[rows], model.end_ns[rows], window)
    rows, dur = rows[inside], dur[inside]
    ids, ix = unique_inverse(model.name_id[rows])
    n = ids.size
    count = np.bincount(ix, minlength=n).astype(np.int64)
    total = np.bincount(ix, weights=dur, minlength=n).astype(np.int64)
    mean = total / np.maximum(count, 1)
    square = np.bincount(ix, weights=(dur - mean[ix]) ** 2, minlength=n)
    std = np.sqrt(np.divide(square, count - 1, out=np.zeros(n), where=count > 1))
    low, high = np.full(n, np.iinfo(np.int64).max), np.zeros(n, np.int64)
    np.minimum.at(low, ix, dur)
    np.maximum.at(high, ix, dur)
    order = np.lexsort((ids, -total))
    return AnnotationTable(ids[order].astype(np.int32), count[order], total[order], low[order], high[order],
                           mean[order], std[order], side, scope, window)
