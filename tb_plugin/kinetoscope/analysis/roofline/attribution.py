"""Which op call a GPU activity is counted under in the roofline: the op whose work covers it (`owners`), and the
work of each (op name, recorded inputs) of a trace, computed once per key (`Works`)."""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace.model import TraceModel, unique_inverse
from ..core.op_forest import Forest
from ..graphs.attribution import GraphAttribution
from .work import Work, base_name, has_model, op_work

# Ops that choose a backend and hand it their whole work: a call of one of these is never the op a kernel is
# counted under while the op it dispatched to (addmm under linear, convolution under conv2d, the flash attention op
# under scaled_dot_product_attention, copy_ under _to_copy) has a model.
DISPATCHERS = frozenset({"linear", "matmul", "einsum", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                         "conv_transpose2d", "conv_transpose3d", "scaled_dot_product_attention", "to", "_to_copy",
                         "clone", "contiguous", "type_as"})


class Works:
    """The work of each (op name, recorded inputs) key of one trace, computed once per key."""

    def __init__(self, model: TraceModel, name_ids: Optional[np.ndarray] = None) -> None:
        """`name_ids`: the distinct name ids of the ops asked about (ascending), when known (else every name): the
        keys are then dense (a few times the calls at most), which numpy groups by counting instead of sorting."""
        self.model, self.width = model, len(model.inputs_strings) + 1
        self.name_ids = np.arange(len(model.names), dtype=np.int64) if name_ids is None else name_ids.astype(np.int64)
        self._dense = np.full(len(model.names) + 1, -1, np.int64)
        self._dense[self.name_ids] = np.arange(self.name_ids.size)
        self._found: dict[int, Optional[Work]] = {}
        self._named = np.zeros(len(model.names) + 1, bool)  # per name id: some model covers the name
        self._named[self.name_ids] = [has_model(model.names[i]) for i in self.name_ids.tolist()]

    def key(self, rows: np.ndarray) -> np.ndarray:
        """Per row, its (op name, recorded inputs) key: the name's place among `name_ids`, then the inputs id."""
        return self.key_of(self.model.name_id[rows], self.model.inputs_id[rows])

    def key_of(self, name_id: np.ndarray, inputs_id: np.ndarray) -> np.ndarray:
        """The key of each (name id among `name_ids`, inputs id or -1)."""
        return np.take(self._dense, name_id) * self.width + (inputs_id.astype(np.int64) + 1)  # (np.take: int32 ids uncast)

    def name_of(self, key: int) -> int:
        """The name id of a key."""
        return int(self.name_ids[key // self.width])

    def of(self, key: int) -> Optional[Work]:
        if key not in self._found:
            name, inputs = self.model.names[self.name_of(key)], key % self.width - 1
            self._found[key] = _work(name, self.model.inputs_strings[inputs] if inputs >= 0 else None)
        return self._found[key]

    def named(self, name_ids: np.ndarray) -> np.ndarray:
        """Per name id (among `name_ids`): some model covers the name (`work.has_model`)."""
        return np.take(self._named, name_ids)

    def candidates(self, rows: np.ndarray) -> np.ndarray:
        """Which rows may have a model: a name some model covers and inputs recorded (their work not computed)."""
        return self.named(self.model.name_id[rows]) & (self.model.inputs_id[rows] >= 0)

    def modelled(self, rows: np.ndarray) -> np.ndarray:
        """Which rows' calls have a work model for their recorded inputs (the inputs of an op whose name no model
        covers are not read)."""
        out = np.zeros(rows.size, bool)
        named = np.flatnonzero(self.named(self.model.name_id[rows])) if rows.size else np.zeros(0, np.int64)
        if named.size:
            keys, inverse = unique_inverse(self.key(rows[named]))
            out[named] = np.array([self.of(k) is not None for k in keys.tolist()], bool)[inverse]
        return out


def owners(model: TraceModel, works: Works, forest: Forest, nodes: np.ndarray) -> np.ndarray:
    """For each issuing op call (`nodes`: positions in the op forest), the row of the call its GPU work is counted
    under: among it and the ops around it (its ancestors in `forest`, the profiler tables' op nesting), the
    outermost one with a work model that is not a dispatcher (`aten::layer_norm` over `aten::native_layer_norm`,
    `aten::convolution` over `aten::cudnn_convolution`: the op a user called, whose work covers what its
    implementation launched), else the innermost one with a model, else the issuing call itself.

    The ops around are judged by name and recorded inputs (`Works.candidates`): only the call chosen so has its work
    computed, and where its inputs do not fit its model (a convolution recorded without its concrete inputs) the
    work counts under the issuing call itself (the ops between are the same op's layers, recorded alike: they do
    not fit either)."""
    issuing = forest.rows[nodes]
    if not nodes.size or not model.inputs_strings:
        return issuing
    hit = works.candidates(forest.rows)
    plain = hit & ~np.take(_dispatchers(model, forest.name_ids), model.name_id[forest.rows])
    chosen = forest.rows[_climb(nodes, forest.parent.astype(np.int64), hit, plain)]
    moved = np.flatnonzero(chosen != issuing)
    wrong = moved[~works.modelled(chosen[moved])] if moved.size else moved
    chosen[wrong] = issuing[wrong]
    return chosen


def replayed_owners(model: TraceModel, works: Works, graphs: GraphAttribution, calls: np.ndarray) -> np.ndarray:
    """`owners` for replayed calls (`graphs.attribution`; `calls`: those that issued kernels): among each one and the
    replayed calls around it, the outermost modelled non-dispatcher, else the innermost modelled, else itself; the
    same rule on the reference's nesting, which the replay repeats."""
    if not calls.size:
        return calls
    name, inputs = graphs.call_name.astype(np.int64), graphs.call_inputs.astype(np.int64)
    hit = works.named(name) & (inputs >= 0)
    plain = hit & ~_dispatchers(model, np.unique(name))[name]
    chosen = _climb(calls, graphs.call_parent.astype(np.int64), hit, plain)
    moved = np.flatnonzero(chosen != calls)
    if moved.size:
        keys = works.key_of(name[chosen[moved]], inputs[chosen[moved]])
        fits = np.array([works.of(k) is not None for k in keys.tolist()], bool)
        chosen[moved[~fits]] = calls[moved[~fits]]
    return chosen


def _dispatchers(model: TraceModel, name_ids: np.ndarray) -> np.ndarray:
    """Per name id (and one more, for -1): the name is a DISPATCHERS op (only `name_ids` are looked at)."""
    out = np.zeros(len(model.names) + 1, bool)
    out[[i for i in name_ids.tolist() if base_name(model.names[i]) in DISPATCHERS]] = True
    return out


def _climb(start: np.ndarray, parent: np.ndarray, hit: np.ndarray, plain: np.ndarray) -> np.ndarray:
    """For each start node, up its chain of parents: the outermost `plain` node, else the innermost `hit` one,
    else itself (node ids; -1 parents end a chain)."""
    outer = np.full(start.size, -1, np.int64)
    inner = np.full(start.size, -1, np.int64)
    pending, cur = np.arange(start.size), start.copy()
    while pending.size:
        found = hit[cur]
        fresh = found & (inner[pending] < 0)
        inner[pending[fresh]] = cur[fresh]
        mine = plain[cur]
        outer[pending[mine]] = cur[mine]
        cur = parent[cur]
        alive = cur >= 0
        pending, cur = pending[alive], cur[alive]
    return np.where(outer >= 0, outer, np.where(inner >= 0, inner, start))


def _work(name: str, inputs: Optional[str]) -> Optional[Work]:
    """The work of one call of `name` with these recorded inputs (the model's `[dims, types, strides, concrete]`
    text), None without a model or a record."""
    if inputs is None:
        return None
    try:
        parts = msgspec.json.decode(inputs)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return None
    if not isinstance(parts, list) or len(parts) != 4:
        return None
    return op_work(name, parts[0], parts[1], parts[2], parts[3])
