"""Nested CPU events (ops, or nn.Module regions) as a forest in preorder, with the GPU work each one launched.

The model's rows are sorted by (lane, ts, -dur), which is a preorder walk of every lane's nesting: a node's
descendants are the rows right after it, up to the first row at its depth or above. So with a node's
subtree size, "everything launched by this op or its descendants" is a contiguous range of positions, and a
per-window total is one prefix sum:

    position:   0        1          2         3        4
    node:       [aten::conv2d.............................)
                         [aten::convolution.........)
                                    [cudnn_conv)  [add_)
                                                        [aten::relu)    <- depth 1 again: sibling of 1
    subtree(0) = [0, 5)   subtree(1) = [1, 4)   gpu_total(1) = cs[4] - cs[1]

A GPU activity belongs to the node that issued its launch call: given the calls' issuers (the op with the
call's External id enclosing it, `launch_offsets.issuing_ops`, as the launch table attributes them), that
node; otherwise the innermost node running on the call's thread when the call started. Time alone misplaces
a zero-length call on the boundary between two ops, and a call inside ops that start and end together.
"""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace.intervals import compiled_innermost, compiled_subtree_ends, nesting_depth
from ...trace.model import TraceModel, freeze_arrays, unique, unique_inverse
from .nesting import parents_by_depth


class Forest(msgspec.Struct, frozen=True):
    """Nested CPU events of one role (ops, or modules) in preorder, and each GPU activity's owner among them.

    Positions index these arrays; `rows` maps them back to model rows.
    """

    rows: np.ndarray  # int64 model rows, ascending (= preorder per lane, lanes one after another)
    start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64
    name_ix: np.ndarray  # int32 index into `name_ids`
    name_ids: np.ndarray  # int32 model name ids of the distinct names, ascending
    parent: np.ndarray  # int32 position of the enclosing node, -1 for top-level ones
    subtree_end: np.ndarray  # int32 exclusive end position of each node's subtree
    owner: np.ndarray  # int32 per activity of the index (see `TableIndex.act_rows`): owning position or -1
    call_rows: np.ndarray  # int64 runtime/driver calls (cudaLaunchKernel, cudaMemcpy...) made inside a node, ascending
    call_owner: np.ndarray  # int32 the innermost node running when each call started (calls are not its self time)
    call_start_ns: np.ndarray  # int64
    call_end_ns: np.ndarray  # int64
    child: np.ndarray  # int32 positions of the nodes that have a parent

    def __post_init__(self) -> None:
        freeze_arrays(self)

    @property
    def size(self) -> int:
        return int(self.rows.size)


def build_forest(model: TraceModel, rows: np.ndarray, act_rows: np.ndarray, call_rows: np.ndarray,
                 issued: Optional[tuple[np.ndarray, np.ndarray]] = None) -> Forest:
    """The forest of `rows` (CPU-lane rows, ascending) and the owner of each of `act_rows` (GPU activities).

    Args:
        model: the trace.
        rows: the nodes: model rows on CPU lanes, ascending.
        act_rows: GPU activity rows; each is owned by the innermost node running on its launch call's
            lane at the call's start (-1 when it has no launch call or no node runs then).
        call_rows: runtime/driver calls on CPU lanes; each is owned the same way (by where it starts).
        issued: (call rows ascending, the model row of the op that issued each or -1), covering the launch
            calls of `act_rows` and `call_rows`: where that op is a node, it owns the call and its GPU work
            instead of the innermost node by time.
    """
    rows = np.asarray(rows, np.int64)
    start, end = model.ts_ns[rows], model.end_ns[rows]
    lane_ids, ptr = _lane_runs(model.lane[rows])
    depth = nesting_depth(start, end - start, ptr).astype(np.int64)
    parent = parents_by_depth(depth)  # a node's depth is at most its predecessor's + 1: parents share its lane
    subtree_end = compiled_subtree_ends(parent)
    if subtree_end is None:
        subtree_end = np.arange(rows.size, dtype=np.int64) + _subtree_sizes(depth, parent)
    name_ids, name_ix = unique_inverse(model.name_id[rows])
    launch = model.launch_idx[act_rows]
    owner = np.full(act_rows.size, -1, np.int64)
    linked = np.flatnonzero(launch >= 0)
    owner[linked] = _owners(model.lane[launch[linked]], model.ts_ns[launch[linked]], start, end, parent, lane_ids, ptr)
    call_rows = np.asarray(call_rows, np.int64)
    call_owner = _owners(model.lane[call_rows], model.ts_ns[call_rows], start, end, parent, lane_ids, ptr)
    if issued is not None:
        owner[linked] = _issued_or(owner[linked], launch[linked], rows, issued)
        call_owner = _issued_or(call_owner, call_rows, rows, issued)
    owned = call_owner >= 0
    call_rows, call_owner = call_rows[owned], call_owner[owned]
    i32 = np.int32  # positions stay far below 2^31 (the event budget) and halve the index's memory
    return Forest(rows, start, end, name_ix.astype(i32), name_ids.astype(i32), parent.astype(i32), subtree_end.astype(i32),
                  owner.astype(i32), call_rows, call_owner.astype(i32), model.ts_ns[call_rows], model.end_ns[call_rows],
                  np.flatnonzero(parent >= 0).astype(i32))


def _lane_runs(lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct lanes of rows in model order (ascending, so each lane one run) and the bounds of their runs:
    `np.unique(lanes, return_index=True)` (with the end appended) without its sort."""
    if lanes.size > 1 and not (lanes[1:] >= lanes[:-1]).all():  # not in model order: sorted the long way
        lane_ids, lane_lo = np.unique(lanes, return_index=True)
        return lane_ids, np.append(lane_lo, lanes.size).astype(np.int64)
    lo = np.flatnonzero(np.concatenate(([lanes.size > 0], lanes[1:] != lanes[:-1])))
    return lanes[lo], np.append(lo, lanes.size).astype(np.int64)


def innermost_at(model: TraceModel, forest: Forest, lane: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Position of the innermost node of `forest` running on `lane[i]` at `t[i]` (start <= t < end), or -1."""
    if forest.size == 0:
        return np.full(np.size(t), -1, np.int64)
    lane_ids, ptr = _lane_runs(model.lane[forest.rows])
    return _owners(np.asarray(lane), np.asarray(t, np.int64), forest.start_ns, forest.end_ns,
                   forest.parent.astype(np.int64), lane_ids, ptr)


def _issued_or(owner: np.ndarray, calls: np.ndarray, rows: np.ndarray, issued: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Position among `rows` of the node that issued each of `calls` (per `issued`), else its `owner`."""
    callers, issuer = issued
    if calls.size == 0 or callers.size == 0 or rows.size == 0:
        return owner
    at = np.minimum(np.searchsorted(callers, calls), callers.size - 1)
    op = np.where(callers[at] == calls, issuer[at], -1)
    node = np.minimum(np.searchsorted(rows, op), rows.size - 1)
    return np.where((op >= 0) & (rows[node] == op), node, owner)


def subtree_max(parent: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each node's maximum of `values` over its subtree (itself included), by pointer doubling: after round k
    each node holds the maximum over its descendants less than 2^k levels down, so log2(depth) rounds of
    O(nodes), not one per level (a hostile trace nests 300,000 ops)."""
    best = values.copy()
    jump = parent.astype(np.int64)
    while True:
        up = np.flatnonzero(jump >= 0)
        if up.size == 0:
            return best
        pushed = best.copy()
        np.maximum.at(pushed, jump[up], best[up])
        best = pushed
        jump[up] = jump[jump[up]]


def _subtree_sizes(depth: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Nodes in each node's subtree (itself included): in preorder a subtree is the node and the positions up
    to its last descendant, the largest position in its subtree."""
    del depth  # the parents say it all
    positions = np.arange(parent.size, dtype=np.int64)
    return subtree_max(parent, positions) - positions + 1


def _owners(lane: np.ndarray, t: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
            lane_ids: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Innermost node running on `lane[i]` at `t[i]` (start <= t < end), or -1."""
    if t.size == 0 or start.size == 0:
        return np.full(t.size, -1, np.int64)
    k = np.searchsorted(lane_ids, lane)
    on_lane = (k < lane_ids.size) & (lane_ids[np.minimum(k, lane_ids.size - 1)] == lane)
    compiled = compiled_innermost(np.where(on_lane, k, -1), t, start, end, parent, ptr)
    return compiled if compiled is not None else _owners_py(t, start, end, parent, ptr, k, on_lane)


def _owners_py(t: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray, ptr: np.ndarray, k: np.ndarray,
               on_lane: np.ndarray) -> np.ndarray:
    """`_owners` in array passes (`k`: each query's forest lane, where `on_lane`)."""
    owner = np.full(t.size, -1, np.int64)
    linked = np.arange(t.size)
    linked, t, k = linked[on_lane], t[on_lane], k[on_lane]
    lo, hi = ptr[k], ptr[k + 1]
    cand = np.empty(linked.size, np.int64)
    for j in unique(k).tolist():  # one searchsorted per lane (a few dozen lanes at most)
        sel = np.flatnonzero(k == j)
        cand[sel] = ptr[j] + np.searchsorted(start[ptr[j]:ptr[j + 1]], t[sel], side="right") - 1
    cand = np.where(cand >= lo, cand, -1)
    climbing = np.flatnonzero(cand >= 0)
    climbing = climbing[end[cand[climbing]] <= t[climbing]]
    while climbing.size:  # climb out of nodes that ended before the call started (one step per nesting level)
        up = parent[cand[climbing]]
        cand[climbing] = up
        climbing = climbing[up >= 0]
        climbing = climbing[end[cand[climbing]] <= t[climbing]]
    owner[linked] = np.where((cand >= 0) & (cand < hi), cand, -1)
    return owner
