"""What one rank worked on in each step, by name: what `straggler=median` compares across ranks.

Per step (its `ProfilerStep#N` window), two lists of (name, ns):
- host: the self time of the CPU ops that started in the step, any thread, by op name (collective calls and
  runtime launches left out: they are waiting and issuing, not the rank's own work), and `(untraced)`, the
  part of the step that neither a CPU op nor a collective call covers (Python between ops, a sleep, a
  descheduled process);
- device: the time of the compute kernels, copies and sets that started in the step, by name (NCCL/RCCL
  kernels left out).

Each list keeps its TOP_NAMES largest names and folds the rest into `(other)`, so a digest stays kilobytes
whatever the trace, and each list's total is kept.
"""
from __future__ import annotations

import numpy as np

from ...trace import intervals
from ...trace.kinds import ACTIVITY_KINDS, CPU_OP_KINDS, LAUNCH_KINDS, is_collective_name, is_comm_kernel_name
from ...trace.model import TraceModel, unique_inverse
from ..core.cpu_ops import self_time
from ..core.selectors import OpIndex, cpu_rows

TOP_NAMES = 48  # names kept per step and side
UNTRACED = "(untraced)"
OTHER = "(other)"

Work = tuple[tuple[tuple[str, int], ...], ...]  # per step: (name, ns), largest first


def step_work(model: TraceModel, start_ns: np.ndarray, end_ns: np.ndarray, ops: OpIndex) -> tuple[Work, Work]:
    """(host, device) work per step window [start_ns[i], end_ns[i])."""
    if start_ns.size == 0:
        return (), ()
    rows, self_ns = self_time(model, ops)
    collective_ids = model.name_ids_where(is_collective_name)
    calls = cpu_rows(model)
    calls = calls[model.kind_in(CPU_OP_KINDS, calls) & model.name_in(collective_ids, calls)]  # gloo:* are annotations
    spans = np.concatenate([rows, calls])
    covered = intervals.covered(*intervals.union(model.ts_ns[spans], model.end_ns[spans]), start_ns, end_ns)
    keep = ~model.name_in(collective_ids, rows) & ~model.kind_in(LAUNCH_KINDS, rows)
    host = _by_step(model, rows[keep], self_ns[keep], start_ns, end_ns)
    host = tuple(_with(h, UNTRACED, int(w)) for h, w in zip(host, (end_ns - start_ns) - covered))
    acts = np.flatnonzero(model.kind_in(ACTIVITY_KINDS))
    acts = acts[~model.name_in(model.name_ids_where(is_comm_kernel_name), acts)]
    device = _by_step(model, acts, model.dur_ns[acts], start_ns, end_ns)
    return tuple(_top(h) for h in host), tuple(_top(d) for d in device)


def _by_step(model: TraceModel, rows: np.ndarray, ns: np.ndarray, start_ns: np.ndarray,
             end_ns: np.ndarray) -> list[dict[str, int]]:
    """Per step, the rows that started inside it, their ns summed by name."""
    out: list[dict[str, int]] = [{} for _ in range(start_ns.size)]
    if rows.size == 0:
        return out
    order = np.argsort(start_ns, kind="stable")
    ts = model.ts_ns[rows]
    step = np.searchsorted(start_ns[order], ts, side="right") - 1
    inside = step >= 0
    step = np.where(inside, order[np.maximum(step, 0)], -1)
    inside &= ts < end_ns[np.maximum(step, 0)]
    rows, ns, step = rows[inside], ns[inside], step[inside]
    if rows.size == 0:
        return out
    ids, inverse = unique_inverse(model.name_id[rows])
    pair = step.astype(np.int64) * ids.size + inverse
    keys, where = np.unique(pair, return_inverse=True)
    totals = np.bincount(where, weights=ns)
    for key, total in zip(keys.tolist(), totals.tolist()):
        if total > 0:
            out[key // ids.size][model.shown_names[ids[key % ids.size]]] = int(total)
    return out


def _with(work: dict[str, int], name: str, ns: int) -> dict[str, int]:
    if ns > 0:
        work[name] = work.get(name, 0) + ns
    return work


def _top(work: dict[str, int]) -> tuple[tuple[str, int], ...]:
    ranked = sorted(work.items(), key=lambda kv: (-kv[1], kv[0]))
    kept, rest = ranked[:TOP_NAMES], sum(v for _, v in ranked[TOP_NAMES:])
    return tuple(kept) + (((OTHER, rest),) if rest > 0 else ())
