"""The facade: every analysis of one trace, and its JSON report entry.

`analyze` runs each analysis once; `report_entry` turns the result into the JSON document that the CLI
prints and the `summary` route serves (times in µs relative to the trace start).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..trace.model import TraceModel
from .dataloader_stalls import Steps, step_breakdown
from .gpu_idle import CAUSE_NAMES, Cause, DeviceIdle, GpuIdle, gpu_idle
from .launch_offsets import LaunchOffsets, launch_offsets, percentiles_us
from .memory_timeline import MemorySeries, memory_timeline
from .selectors import OpIndex, names_of
from .verdict import Verdict, verdict

TOP_CULPRITS = 10


@dataclass(frozen=True)
class Analysis:
    """All analyses of one trace."""

    idle: GpuIdle
    launch: LaunchOffsets
    memory: tuple[MemorySeries, ...]
    steps: Steps
    verdict: Verdict


def analyze(model: TraceModel) -> Analysis:
    """Run every analysis on a model (pure; the model is not modified)."""
    ops = OpIndex(model)
    idle = gpu_idle(model, ops=ops)
    steps = step_breakdown(model, idle.busiest())
    launch = launch_offsets(model)
    memory = memory_timeline(model, steps.start_ns, steps.end_ns, ops=ops)
    busiest = idle.busiest()
    host = top_culprits(model, busiest, Cause.HOST, 1) if busiest else []
    return Analysis(idle=idle, launch=launch, memory=memory, steps=steps,
                    verdict=verdict(idle, steps, launch, sync_culprit=_sync_culprit(model, busiest, ops),
                                    host_culprit=host[0]["name"] if host else None))


def top_culprits(model: TraceModel, device: DeviceIdle, cause: Cause = Cause.HOST, top: int = TOP_CULPRITS) -> list[dict]:
    """CPU ops behind the most idle time of one cause, largest first."""
    sel = np.flatnonzero(device.gap_cause == cause)
    if sel.size == 0:
        return []
    rows = device.gap_culprit_row[sel]
    ids = np.where(rows >= 0, model.name_id[np.maximum(rows, 0)], -1).astype(np.int64)
    uniq, inverse = np.unique(ids, return_inverse=True)
    idle = np.bincount(inverse, weights=device.gap_end_ns[sel] - device.gap_start_ns[sel])
    order = np.argsort(-idle, kind="stable")[:top]
    return [{"name": model.names[uniq[i]] if uniq[i] >= 0 else "(no op)", "idle_us": float(idle[i]) / 1e3}
            for i in order]


def _sync_culprit(model: TraceModel, device: Optional[DeviceIdle], ops: OpIndex) -> Optional[str]:
    """`cudaStreamSynchronize in aten::item`: the sync call (and its op) behind most sync idle time."""
    if device is None:
        return None
    top = top_culprits(model, device, Cause.SYNC, 1)
    if not top:
        return None
    sel = np.flatnonzero((device.gap_cause == Cause.SYNC) & (device.gap_culprit_row >= 0))
    row = device.gap_culprit_row[sel[np.argmax(device.gap_end_ns[sel] - device.gap_start_ns[sel])]]
    op = names_of(model, ops.outermost_at(model.lane[[row]], model.ts_ns[[row]]))[0]
    return f"{top[0]['name']} in {op}"


def _us(ns, origin: int = 0) -> float:
    return (float(ns) - origin) / 1e3


def report_entry(model: TraceModel, analysis: Analysis) -> dict:
    """The JSON report of one trace (see the analyses issue for the field list)."""
    t0 = model.start_ns
    return {
        "events": model.n_events, "duration_us": _us(model.stop_ns - t0), "trace_start_ns": str(t0),
        "counts": model.count_by_kind(), "skipped": dict(model.skipped), "warnings": list(model.warnings),
        "devices": [_device_entry(model, d) for d in analysis.idle.devices],
        "steps": steps_entry(model, analysis.steps),
        "launch": {"pairs": analysis.launch.pairs, "short_kernels": int(np.count_nonzero(analysis.launch.short)),
                   "offset_us": percentiles_us(analysis.launch.offset_ns),
                   "queued_us": percentiles_us(analysis.launch.queued_ns),
                   "latency_us": percentiles_us(analysis.launch.latency_ns)},
        "memory": [{"device": s.device, "peak_allocated_bytes": s.peak_allocated_bytes,
                    "peak_reserved_bytes": s.peak_reserved_bytes, "peak_at_us": _us(s.peak_at_ns, t0),
                    "peak_op": s.peak_op, "leak_suspect": s.leak_suspect} for s in analysis.memory],
        "verdict": {"bound": analysis.verdict.bound, "evidence": analysis.verdict.evidence,
                    "suggestion": analysis.verdict.suggestion},
    }


def _device_entry(model: TraceModel, d: DeviceIdle) -> dict:
    length = d.gap_end_ns - d.gap_start_ns
    return {"device": d.device, "window_us": _us(d.window_ns), "busy_us": _us(d.busy_ns), "idle_us": _us(d.idle_ns),
            "idle_pct": d.idle_pct,
            "gaps": {"count": int(length.size), "count_ge_1us": int(np.count_nonzero(length >= 1000)),
                     "by_cause_us": {k: _us(v) for k, v in d.idle_by_cause_ns().items()},
                     "top_culprits": top_culprits(model, d)}}


def steps_entry(model: TraceModel, steps: Steps) -> list[dict]:
    """Per-step rows of the report."""
    t0 = model.start_ns
    rows = []
    for i in range(steps.count):
        dur = int(steps.end_ns[i] - steps.start_ns[i])
        rows.append({"name": model.names[steps.name_id[i]], "start_us": _us(steps.start_ns[i], t0), "dur_us": _us(dur),
                     "gpu_busy_us": _us(steps.gpu_busy_ns[i]), "gpu_idle_us": _us(steps.gpu_idle_ns[i]),
                     "dataloader_us": _us(steps.dataloader_ns[i]),
                     "dataloader_share": float(steps.dataloader_ns[i]) / dur if dur else 0.0,
                     "gpu_idle_during_dataloader_us": _us(steps.dataloader_gpu_idle_ns[i]),
                     "compute_us": _us(steps.compute_ns[i]), "comm_us": _us(steps.comm_ns[i]),
                     "memcpy_us": _us(steps.memcpy_ns[i]), "memset_us": _us(steps.memset_ns[i]),
                     "stalled": bool(steps.stalled[i])})
    return rows


__all__ = ["Analysis", "analyze", "report_entry", "steps_entry", "top_culprits", "CAUSE_NAMES"]
