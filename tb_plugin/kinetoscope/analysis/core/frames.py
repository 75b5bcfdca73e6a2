"""The innermost user Python frame around each op call: what the op table's `stack` grouping keys on, and what a
graph reference carries for each call it replays.

A frame is a `with_stack=True` python_function event (torch >= 1.10) that is code (`file.py(123): func`), not a
builtin call nor an `nn.Module: ...` region (both are climbed past to the frame that called them). Older files
(<= 1.13 era) record no python_function events; an op's own `Call stack` arg then gives its first frame.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...trace.kinds import Kind, LaneKind
from ...trace.model import TraceModel
from .op_forest import Forest, build_forest, innermost_at

MODULE_PREFIX = "nn.Module: "


def is_user_frame(name: str) -> bool:
    """A `with_stack` frame of code (`file.py(123): func`), not a builtin call nor an `nn.Module: ...` region."""
    return not name.startswith(("<built-in", MODULE_PREFIX))


def innermost_frames(model: TraceModel, ops: Forest, positions: np.ndarray) -> Optional[np.ndarray]:
    """Per op position of `ops` in `positions`: the name id (model.names) of the innermost user frame around the
    call, -1 where none runs; None when the trace records no frame at all."""
    frames = np.flatnonzero((model.kind == Kind.PYTHON_FUNCTION) & model.on_lanes(LaneKind.CPU))
    rows = ops.rows[positions]
    if frames.size == 0:
        own = model.call_frame_id[rows]
        return own.astype(np.int64) if (own >= 0).any() else None
    frames = frames[model.name_in(model.name_ids_where(is_user_frame), frames)]
    forest = build_forest(model, frames, np.zeros(0, np.int64), np.zeros(0, np.int64))
    if forest.size == 0:
        return np.full(positions.size, -1, np.int64)
    pos = innermost_at(model, forest, model.lane[rows], ops.start_ns[positions])
    return np.where(pos >= 0, forest.name_ids[forest.name_ix[np.maximum(pos, 0)]], -1).astype(np.int64)
