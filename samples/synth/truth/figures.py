"""Per-step figures, launch units, communication and memory peaks, from the simulation model.

- Steps are occurrences: every ``ProfilerStep#N`` in start order, even when names repeat. Each has
  its DataLoader wait (the union of waits clipped to the step), the GPU idle time during that wait,
  device busy/idle, and the unions of compute kernels, NCCL kernels, NCCL time no compute covers,
  memcpys and memsets clipped to it. It is stalled when the wait is at least 5% of the step and the
  device idles through at least half of it (never without a device).
- A launch unit is one launch call with device work, measured at its first (earliest) activity, so a
  graph replay counts once: offset = start - call start, queued = max(0, end of the previous activity
  on the stream - call end), latency = start - max(call end, that end); short when a kernel runs
  shorter than its call. Every linked activity's offset is kept apart.
- Communication: comm = union of NCCL/RCCL kernels, compute = union of the other kernels, exposed =
  comm minus compute, overlap % = 100 (comm - exposed) / comm.
- Memory: the allocator totals (2024) or the running sum of byte deltas from the trace start (2021:
  ``relative``, reserved memory not recorded).
"""
from __future__ import annotations

from typing import Any, Optional

from ..core import CPU_KEY, Timeline
from .common import Merged, covered, is_comm_kernel, is_loader, is_step, require, subtract, total, union

STALL_SHARE, STALL_IDLE = 0.05, 0.5


def kind_unions(tl: Timeline) -> dict[str, Merged]:
    """Device 0's activity unions by kind: compute kernels, NCCL kernels, exposed NCCL, memcpy, memset."""
    unions = {
        "compute": union((g.start, g.end) for g in tl.gpu if g.kind == "kernel" and not is_comm_kernel(g.name)),
        "comm": union((g.start, g.end) for g in tl.gpu if g.kind == "kernel" and is_comm_kernel(g.name)),
        "memcpy": union((g.start, g.end) for g in tl.gpu if g.kind == "memcpy"),
        "memset": union((g.start, g.end) for g in tl.gpu if g.kind == "memset"),
    }
    unions["exposed_comm"] = subtract(unions["comm"], unions["compute"])
    return unions


def steps_truth(tl: Timeline, busy: Merged, kinds: dict[str, Merged]) -> list[dict[str, Any]]:
    """One row per ``ProfilerStep#N`` occurrence, in start order."""
    loader = union((s.start, s.end) for s in tl.cpu if is_loader(s.name))
    idle_loader = subtract(loader, busy)
    device = bool(tl.gpu)
    rows = []
    for step in sorted((s for s in tl.cpu if is_step(s.name)), key=lambda s: s.start):
        lo, hi = step.start, step.end
        wait, wait_idle = covered(loader, lo, hi), covered(idle_loader, lo, hi) if device else 0
        length, on = hi - lo, covered(busy, lo, hi)
        require(not 0.8 * STALL_SHARE * length < wait < 1.2 * STALL_SHARE * length, "DataLoader share of a step near 5%")
        require(not 0.9 * STALL_IDLE * wait < wait_idle < 1.1 * STALL_IDLE * wait, "GPU idle share of a wait near 50%")
        rows.append({
            "name": step.name, "start_ns": lo, "end_ns": hi, "dataloader_ns": wait, "dataloader_gpu_idle_ns": wait_idle,
            "gpu_busy_ns": on, "gpu_idle_ns": length - on if device else 0,
            **{f"{k}_ns": covered(kinds[k], lo, hi) for k in ("compute", "comm", "exposed_comm", "memcpy", "memset")},
            "stalled": device and wait > 0 and wait >= STALL_SHARE * length and wait_idle >= STALL_IDLE * wait,
        })
    return rows


def launch_truth(tl: Timeline) -> dict[str, Any]:
    """Launch units (first activity of each launch call) and every linked activity's offset."""
    launches = {r.corr: r for r in tl.runtime if not r.dropped}
    previous: dict[int, Optional[int]] = {}  # id(act) -> end of the activity before it on its stream
    last_end: dict[int, int] = {}
    firsts: dict[int, Any] = {}
    activity_offsets = []
    for act in sorted(tl.gpu, key=lambda g: (g.start, g.end)):
        previous[id(act)] = last_end.get(act.stream)
        last_end[act.stream] = act.end
        launch = launches.get(act.corr)
        if launch is None:
            continue
        activity_offsets.append(act.start - launch.start)
        if act.corr not in firsts:
            firsts[act.corr] = act
    offsets, queued, latency, short = [], [], [], 0
    for corr, act in firsts.items():
        launch, prev = launches[corr], previous[id(act)]
        offsets.append(act.start - launch.start)
        queued.append(max(0, prev - launch.end) if prev is not None else 0)
        latency.append(act.start - max(launch.end, prev if prev is not None else launch.end))
        short += act.kind == "kernel" and act.end - act.start < launch.end - launch.start
    return {
        "pairs": len(offsets), "short_kernels": short, "offset_ns": sorted(offsets), "queued_ns": sorted(queued),
        "latency_ns": sorted(latency), "activity_offset_ns": sorted(activity_offsets),
    }


def comm_truth(tl: Timeline, kinds: dict[str, Merged], collectives: Merged) -> dict[str, Any]:
    """Communication figures of device 0 and the CPU-side collectives' total."""
    devices = {}
    if tl.gpu:
        comm, exposed = total(kinds["comm"]), total(kinds["exposed_comm"])
        devices["0"] = {
            "kernels": sum(g.kind == "kernel" and is_comm_kernel(g.name) for g in tl.gpu), "comm_ns": comm,
            "compute_ns": total(kinds["compute"]), "exposed_ns": exposed,
            "overlap_pct": 100.0 * (comm - exposed) / comm if comm else None,
        }
    return {"devices": devices, "cpu_collective_ns": total(collectives)}


def memory_truth(tl: Timeline, era: str) -> dict[str, Any]:
    """Peak allocated/reserved bytes per device, when, and which op or annotation was outermost then."""
    result: dict[str, Any] = {}
    for key in sorted({m.key for m in tl.mem}):
        events = sorted((m for m in tl.mem if m.key == key), key=lambda m: m.ts)
        running, curve = 0, []
        for event in events:
            running += event.nbytes
            curve.append(event.allocated if era == "2024" else running)
        peak = max(curve)
        require(curve.count(peak) == 1, f"memory peak of {key} is not unique")
        at = events[curve.index(peak)]
        result["cpu" if key == CPU_KEY else f"cuda:{key[1]}"] = {
            "peak_allocated_bytes": peak,
            "peak_reserved_bytes": max(m.reserved for m in events) if era == "2024" else None,
            "peak_at_ns": at.ts,
            "peak_op": _outermost(tl, at.tid, at.ts),
            "relative": era == "2021",
        }
    return result


def _outermost(tl: Timeline, tid: int, at: int) -> str:
    """Outermost op or annotation (not ``ProfilerStep#N``) running on ``tid`` at ``at``."""
    running = [s for s in tl.cpu if s.tid == tid and s.start <= at < s.end and not is_step(s.name)]
    return min(running, key=lambda s: (s.start, -s.end)).name if running else "(no op)"
