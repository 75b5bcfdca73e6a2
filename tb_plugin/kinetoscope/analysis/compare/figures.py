"""What a comparison needs of one trace, and of one side (a span, a run, a logdir): kilobytes per trace.

Every step's time splits into additive parts, so a change of the step time splits into the changes of
its parts (`compare.ranked_changes`):

    step      [ProfilerStep#7 .............................................................)
    device          [compute....)[exposed)   [compute....)  (idle: cause)  |
              |no device|compute |exposed | host | compute  |  dataloader  | outside (after)
              ^ before the first device activity: the DataLoader wait there counts as `dataloader`

    compute, exposed_comm, and idle by cause: `breakdown` (the step clipped to the device window, run on to
    the end of the device work it launched);
    dataloader also takes the DataLoader wait outside that window; `outside` is the rest of the step
    outside the device window (a CPU-only trace: everything but the DataLoader wait).

`compute` is split further into kernels in proportion to each kernel's time (`kernel_time_ns`): with
several streams the kernels overlap, so only shares of the compute union can add up to it.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Union

import msgspec
import numpy as np

from ...trace import intervals
from ...trace.kinds import is_comm_kernel_name
from ...trace.model import TraceModel
from ..distributed.ranks import RankDigest, rank_digest
from ..idle.gpu_idle import CAUSE_NAMES
from ..judgement.verdict import Verdict
from ..report import Analysis, verdict_entry
from ..tables.index import TableIndex
from ..tables.kernels import kernel_table
from ..tables.ops import op_table
from ..tables.rows import name_key

PARTS = ("compute", "exposed_comm", *CAUSE_NAMES, "outside")
PART_LABELS = {
    "compute": "compute", "exposed_comm": "exposed communication", "dataloader": "DataLoader wait (device idle)",
    "comm": "idle: waiting on collectives", "sync": "idle: synchronization", "host": "idle: host not launching",
    "launch": "idle: launch latency", "graph": "idle: inside CUDA graphs", "unlinked": "idle: next work unlinked",
    "outside": "outside device activity",
}
# Kernels and ops kept per trace, by time (a hostile trace may name a million): the rest add up in one row, so
# shares stay exact and a comparison's figures stay a few hundred kB per trace at most.
MAX_NAMES = 2000
OTHER_KERNELS, OTHER_OPS = "(other kernels)", "(other ops)"
QUANTILES = np.linspace(0.0, 100.0, 1001)  # launch offsets kept as this quantile grid (0.1 percentile apart)


class CutName(NamedTuple):
    """A kernel's or op's name that was cut for showing, as a comparison joins it: the shown text, the full name's
    `tables.name_key` and its length. Two names cut to the same text stay two rows; the same full name in two
    traces is one."""

    shown: str
    key: str
    chars: int


JoinName = Union[str, CutName]  # a name shown whole is its own key


def join_name(shown: str, full: str) -> JoinName:
    """What a comparison joins a kernel or op row by (`CutName` where `shown` was cut from `full`)."""
    key = name_key(full)
    return shown if key is None else CutName(shown, key, len(full))


class TraceFigures(msgspec.Struct, frozen=True):
    """One trace's per-step figures (ns) and summary figures."""

    worker: str
    rank: Optional[int]
    step_ns: np.ndarray  # per step (or one unit: the device window, else the trace, when it has no steps)
    parts_ns: np.ndarray  # (steps, PARTS), each row adds up to step_ns
    dataloader_ns: np.ndarray  # per step, the CPU-side DataLoader wait
    comm_ns: np.ndarray  # per step, device communication (union)
    launch_grid_us: np.ndarray  # launch offsets at QUANTILES (empty without launches)
    launches: int
    memory_peak_bytes: Optional[int]  # allocated, the largest over devices (not the CPU)
    verdict: Verdict
    kernels: dict[JoinName, tuple[float, int]] = msgspec.field(default_factory=dict)  # compute kernel -> (time ns, calls)
    ops: dict[JoinName, tuple[float, int, float]] = msgspec.field(default_factory=dict)  # CPU op -> (CPU ns, calls, GPU ns)
    tables: bool = False  # kernels and ops were filled from the op/kernel tables
    digest: Any = None  # the trace's `ranks.RankDigest` (multi-rank sides: stragglers)
    from_steps: bool = True  # False: no ProfilerStep, the one unit is the device window (else the trace)


def trace_figures(model: TraceModel, analysis: Analysis, worker: str = "", rank: Optional[int] = None) -> TraceFigures:
    """The figures of one analysed trace."""
    steps, parts = analysis.steps, analysis.breakdown
    if steps.count:  # a step runs on to the end of the device work it launched, as the breakdown judges it
        start = steps.start_ns
        end = np.maximum(steps.end_ns, parts.end_ns) if parts is not None and parts.from_steps else steps.end_ns
    elif parts is not None:
        start, end = parts.start_ns, parts.end_ns
    else:
        start, end = np.array([model.start_ns]), np.array([model.stop_ns])
    dur = (end - start).astype(np.int64)
    dl = intervals.covered(steps.dl_start_ns, steps.dl_end_ns, start, end).astype(np.int64)
    table = np.zeros((dur.size, len(PARTS)), np.int64)
    if parts is not None:
        table[:, :parts.ns.shape[1]] = parts.ns
        inside_dl = intervals.covered(steps.dl_start_ns, steps.dl_end_ns, parts.start_ns, parts.end_ns)
        table[:, PARTS.index("dataloader")] += np.maximum(dl - inside_dl, 0)
    else:
        table[:, PARTS.index("dataloader")] = dl
    table[:, PARTS.index("outside")] = dur - table.sum(axis=1)
    busiest = analysis.idle.busiest()
    comm = analysis.comm.of(busiest.device) if busiest is not None else None
    comm_steps = (intervals.covered(comm.comm_starts_ns, comm.comm_ends_ns, start, end) if comm is not None
                  else np.zeros(dur.size, np.int64))
    offsets = analysis.launch.offset_ns
    grid = np.percentile(offsets, QUANTILES) / 1e3 if offsets.size else np.zeros(0)
    peak = max((s.peak_allocated_bytes for s in analysis.memory if s.device != "cpu"), default=None)
    return TraceFigures(worker=worker, rank=rank, step_ns=dur, parts_ns=table, dataloader_ns=dl,
                        comm_ns=np.asarray(comm_steps, np.int64), launch_grid_us=grid, launches=int(offsets.size),
                        memory_peak_bytes=peak, verdict=analysis.verdict, from_steps=bool(steps.count))


def with_tables(model: TraceModel, figures: TraceFigures, analysis: Analysis,
                index: Optional[TableIndex] = None) -> TraceFigures:
    """The figures with the trace's kernel and op tables (`analysis.tables`) over its steps (the whole
    trace without steps), by name: kernels (memcpys and memsets too) -> (time, calls), ops -> (CPU time,
    calls, GPU time). Communication kernels are left out of the kernels: their time is the
    `exposed_comm` part, or hidden under compute."""
    steps = analysis.steps
    window = (int(steps.start_ns[0]), int(steps.end_ns.max())) if steps.count else None
    index = index if index is not None else TableIndex.build(model)
    shown, full = model.shown_names, model.names
    k = kernel_table(model, index, window)
    kernels: dict[JoinName, tuple[float, int]] = {}
    for name_id, total, calls in zip(k.name_id.tolist(), k.total_ns.tolist(), k.calls.tolist()):
        if not is_comm_kernel_name(shown[name_id]):
            name = join_name(shown[name_id], full[name_id])
            before = kernels.get(name, (0.0, 0))
            kernels[name] = (before[0] + total, before[1] + calls)
    o = op_table(model, index, window)
    ops: dict[JoinName, tuple[float, int, float]] = {}
    for name_id, cpu, calls, gpu in zip(o.name_id.tolist(), o.cpu_total_ns.tolist(), o.calls.tolist(), o.gpu_total_ns.tolist()):
        name = join_name(shown[name_id], full[name_id])
        before = ops.get(name, (0.0, 0, 0.0))
        ops[name] = (before[0] + cpu, before[1] + calls, before[2] + gpu)
    return msgspec.structs.replace(figures, kernels=_top(kernels, OTHER_KERNELS), ops=_top(ops, OTHER_OPS), tables=True)


def figures_of(model: TraceModel, analysis: Analysis, worker: str, index: Optional[TableIndex] = None,
               digest: Optional[RankDigest] = None) -> TraceFigures:
    """What a comparison needs of one analysed trace: its figures, its op and kernel tables and its rank
    digest, named by `worker`. `index` and `digest` are the trace's own when the caller has them already
    (the server's prepared ones); else they are built here."""
    figures = with_tables(model, trace_figures(model, analysis, worker=worker, rank=model.rank), analysis, index)
    digest = rank_digest(model, analysis, worker=worker) if digest is None else msgspec.structs.replace(digest, worker=worker)
    return msgspec.structs.replace(figures, digest=digest)


def _top(rows: dict[JoinName, tuple], other: str) -> dict[JoinName, tuple]:
    """The MAX_NAMES rows with the most time, the others summed into one row named `other`."""
    if len(rows) <= MAX_NAMES:
        return rows
    ranked = sorted(rows, key=lambda name: -rows[name][0])
    kept = {name: rows[name] for name in ranked[:MAX_NAMES]}
    kept[other] = tuple(sum(values) for values in zip(*(rows[name] for name in ranked[MAX_NAMES:])))
    return kept


class Series(msgspec.Struct, frozen=True):
    """One rank's figures over a side's spans, in time order (steps concatenated)."""

    worker: str
    rank: Optional[int]
    spans: tuple[TraceFigures, ...]

    @property
    def step_ns(self) -> np.ndarray:
        return np.concatenate([s.step_ns for s in self.spans])

    @property
    def parts_ns(self) -> np.ndarray:
        return np.concatenate([s.parts_ns for s in self.spans])

    def per_step(self, name: str) -> np.ndarray:
        return np.concatenate([getattr(s, name) for s in self.spans])


class Side(msgspec.Struct, frozen=True):
    """A baseline or a candidate: its label and its ranks (one Series per worker), rank order."""

    label: str
    ranks: tuple[Series, ...]
    failed: tuple[str, ...] = ()  # traces that could not be loaded, with the reason

    @property
    def traces(self) -> tuple[TraceFigures, ...]:
        return tuple(t for r in self.ranks for t in r.spans)


def side(label: str, traces: list[TraceFigures], failed: tuple[str, ...] = ()) -> Side:
    """Group a side's traces (given in time order per worker) into ranks: by `rank`, else worker name."""
    by_worker: dict[str, list[TraceFigures]] = {}
    for t in traces:
        by_worker.setdefault(t.worker, []).append(t)
    series = [Series(worker=w, rank=spans[0].rank, spans=tuple(spans)) for w, spans in by_worker.items()]
    series.sort(key=lambda s: (s.rank is None, s.rank if s.rank is not None else 0, s.worker))
    return Side(label=label, ranks=tuple(series), failed=failed)


def pooled_percentile(traces: tuple[TraceFigures, ...], q: float) -> Optional[float]:
    """A launch-offset percentile over several traces, from their quantile grids weighted by launches."""
    grids = [(t.launch_grid_us, t.launches) for t in traces if t.launches]
    if not grids:
        return None
    values = np.concatenate([g for g, _ in grids])
    weights = np.concatenate([np.full(g.size, n / g.size) for g, n in grids])
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    at = np.searchsorted(cum, q / 100.0 * cum[-1], side="left")
    return float(values[order][min(at, values.size - 1)])


def totals(traces: tuple[TraceFigures, ...], which: str) -> dict[JoinName, tuple]:
    """Kernel or op totals (name -> (time ns, calls[, GPU ns])) summed over traces."""
    out: dict[JoinName, list] = {}
    for t in traces:
        for name, values in getattr(t, which).items():
            row = out.setdefault(name, [0] * len(values))
            for i, v in enumerate(values):
                row[i] += v
    return {k: tuple(v) for k, v in out.items()}


def verdict_summary(v: Verdict) -> dict[str, Any]:
    """The verdict fields a comparison shows."""
    e = verdict_entry(v)
    return {k: e[k] for k in ("bound", "confidence", "share", "runner_up", "runner_up_share", "evidence", "suggestion")}
