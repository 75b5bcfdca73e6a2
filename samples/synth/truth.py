"""The truth of a span, computed from the simulation model (never from the rendered JSON).

Definitions, for device 0:

- Busy time is the union of all GPU activities (``gpu_user_annotation`` marks never count);
  the window runs from the first activity's start to the last one's end, and every hole in
  the union is an idle gap.
- A gap's cause: ``dataloader`` if DataLoader waits cover at least half of it; else
  ``unlinked`` if the activity that ends it has no runtime call; else ``sync`` if a
  synchronising call on the launching thread ends inside it; else ``host`` if that launch
  started after the gap began (``culprit``: the outermost op other than ``ProfilerStep#N``
  running on that thread at the gap's midpoint), or ``launch`` if it started before.
- A step is stalled if its DataLoader wait is at least 5% of the step and the GPU is idle
  for at least half of that wait.
- The verdict: ``cpu-only`` without GPU work; ``dataloader-bound`` if most steps stalled;
  ``compute-bound`` if under 20% of the window is idle; else the verdict whose gap causes
  (:data:`VERDICT_BY_CAUSE`) add up to the most idle time.

Every planted quantity must lie clearly away from its threshold, or
:class:`AmbiguousDesign` is raised instead of a fragile truth.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from .core import CPU_KEY, SYNC_CALLS, Runtime, Timeline
from .ops import Loop

NO_OP = "(no op)"
VERDICT_BY_CAUSE = {
    "host": "host-bound",
    "launch": "launch-overhead-bound",
    "sync": "sync-bound",
    "dataloader": "dataloader-bound",
    "unlinked": "host-bound",
}


class AmbiguousDesign(RuntimeError):
    """A planted quantity lies too close to a threshold to be a trustworthy truth."""


def _union(intervals: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merges intervals into sorted, disjoint ones."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _overlap(merged: Sequence[tuple[int, int]], start: int, end: int) -> int:
    """Length of ``[start, end]`` covered by disjoint ``merged`` intervals."""
    return sum(max(0, min(e, end) - max(s, start)) for s, e in merged)


def _outermost(tl: Timeline, tid: int, at: int) -> str:
    """Outermost non-``ProfilerStep#`` op/annotation running on ``tid`` at ``at``."""
    running = [s for s in tl.cpu if s.tid == tid and s.start <= at < s.end and not s.name.startswith("ProfilerStep#")]
    if not running:
        return NO_OP
    return min(running, key=lambda s: (s.start, -s.end)).name


def _require(condition: bool, what: str) -> None:
    """Raises :class:`AmbiguousDesign` unless ``condition`` holds."""
    if not condition:
        raise AmbiguousDesign(what)


class _Classifier:
    """Assigns a cause (and a culprit for host gaps) to every idle gap of device 0."""

    def __init__(self, tl: Timeline) -> None:
        """Indexes the model: runtime calls by correlation, DataLoader waits, syncs."""
        self.tl = tl
        self.launch_by_corr = {r.corr: r for r in tl.runtime if not r.dropped}
        self.loader = _union([(s.start, s.end) for s in tl.cpu if _is_loader(s.name)])
        self.syncs = [r for r in tl.runtime if r.name in SYNC_CALLS and not r.dropped]
        self.margin = 1000

    def cause(self, start: int, end: int) -> dict[str, Any]:
        """Classifies the gap ``[start, end]`` following the truth definition."""
        first = [g for g in self.tl.gpu if g.start == end]
        _require(len(first) == 1, f"gap ending at {end} must end at exactly one activity")
        covered = _overlap(self.loader, start, end) / (end - start)
        _require(not 0.4 < covered < 0.6, f"DataLoader covers {covered:.2f} of a gap")
        if covered >= 0.5:
            return {"start_ns": start, "end_ns": end, "cause": "dataloader", "culprit": None}
        launch = self.launch_by_corr.get(first[0].corr)
        if launch is None:
            return {"start_ns": start, "end_ns": end, "cause": "unlinked", "culprit": None}
        cause = self._thread_cause(launch, start, end)
        culprit = self._culprit(launch.tid, start, end) if cause == "host" else None
        return {"start_ns": start, "end_ns": end, "cause": cause, "culprit": culprit}

    def _thread_cause(self, launch: Runtime, start: int, end: int) -> str:
        """``sync``, ``host`` or ``launch`` for a gap whose next activity was launched by ``launch``."""
        for call in self.syncs:
            if call.tid == launch.tid:
                near = min(abs(call.end - start), abs(call.end - end))
                _require(near >= self.margin, "a sync call ends at a gap boundary")
                if start < call.end < end:
                    return "sync"
        _require(abs(launch.start - start) >= self.margin, "a launch starts at a gap start")
        return "host" if launch.start > start else "launch"

    def _culprit(self, tid: int, start: int, end: int) -> str:
        """The op running at the gap's midpoint, checked to be stable around it."""
        middle = (start + end) // 2
        names = {_outermost(self.tl, tid, middle + d) for d in (-self.margin, 0, self.margin)}
        _require(len(names) == 1, "a host gap's midpoint is at an op boundary")
        return names.pop()


def _is_loader(name: str) -> bool:
    """True for DataLoader waits (``enumerate(DataLoader)#...__next__``)."""
    return name.startswith("enumerate(DataLoader)#") and "__next__" in name


def _device_truth(tl: Timeline) -> dict[str, Any]:
    """Window, busy, idle and classified gaps of every device that had GPU activity."""
    if not tl.gpu:
        return {}
    merged = _union([(g.start, g.end) for g in tl.gpu])
    busy = sum(e - s for s, e in merged)
    window = [merged[0][0], merged[-1][1]]
    classifier = _Classifier(tl)
    gaps = [classifier.cause(a[1], b[0]) for a, b in zip(merged, merged[1:])]
    return {"0": {"window_ns": window, "busy_ns": busy, "idle_ns": window[1] - window[0] - busy, "gaps": gaps}}


def _steps_truth(tl: Timeline) -> list[dict[str, Any]]:
    """Per ``ProfilerStep#N``: DataLoader wait, GPU idle time and the stall flag."""
    busy = _union([(g.start, g.end) for g in tl.gpu])
    loader = _union([(s.start, s.end) for s in tl.cpu if _is_loader(s.name)])
    rows = []
    for step in sorted((s for s in tl.cpu if s.name.startswith("ProfilerStep#")), key=lambda s: s.start):
        waits = [(max(s, step.start), min(e, step.end)) for s, e in loader if s < step.end and e > step.start]
        wait = sum(e - s for s, e in waits)
        idle_in_wait = wait - sum(_overlap(busy, s, e) for s, e in waits)
        length = step.end - step.start
        _require(not 0.04 * length < wait < 0.06 * length, "DataLoader share of a step near 5%")
        _require(not 0.45 * wait < idle_in_wait < 0.55 * wait, "GPU idle share of a wait near 50%")
        rows.append({
            "name": step.name,
            "start_ns": step.start,
            "end_ns": step.end,
            "dataloader_ns": wait,
            "gpu_idle_ns": length - _overlap(busy, step.start, step.end),
            "stalled": wait >= 0.05 * length and 2 * idle_in_wait >= wait,
        })
    return rows


def _launch_truth(tl: Timeline) -> dict[str, Any]:
    """Launch offsets, queueing and latencies of every linked GPU activity."""
    launches = {r.corr: r for r in tl.runtime if not r.dropped}
    offsets, queued, latency, short = [], [], [], 0
    prev_end: dict[int, int] = {}
    for act in sorted(tl.gpu, key=lambda g: (g.start, g.end)):
        launch = launches.get(act.corr)
        previous = prev_end.get(act.stream)
        prev_end[act.stream] = act.end
        if launch is None:
            continue
        offsets.append(act.start - launch.start)
        queued.append(max(0, previous - launch.end) if previous is not None else 0)
        latency.append(act.start - max(launch.end, previous or 0))
        short += act.kind == "kernel" and act.end - act.start < launch.end - launch.start
    return {
        "pairs": len(offsets),
        "short_kernels": short,
        "offset_ns": sorted(offsets),
        "queued_ns": sorted(queued),
        "latency_ns": sorted(latency),
    }


def _memory_truth(tl: Timeline, era: str) -> dict[str, Any]:
    """Peak allocated/reserved bytes per device, when, and which op was running."""
    result: dict[str, Any] = {}
    for key in sorted({m.key for m in tl.mem}):
        events = sorted((m for m in tl.mem if m.key == key), key=lambda m: m.ts)
        running, curve = 0, []
        for event in events:
            running += event.nbytes
            curve.append(event.allocated if era == "2024" else running)
        peak = max(curve)
        _require(curve.count(peak) == 1, f"memory peak of {key} is not unique")
        at = events[curve.index(peak)]
        name = "cpu" if key == CPU_KEY else f"cuda:{key[1]}"
        result[name] = {
            "peak_allocated_bytes": peak,
            "peak_reserved_bytes": max(m.reserved for m in events) if era == "2024" else None,
            "peak_at_ns": at.ts,
            "peak_op": _outermost(tl, at.tid, at.ts),
        }
    return result


def _verdict(devices: dict[str, Any], steps: list[dict[str, Any]]) -> str:
    """The headline verdict from the device and step truth."""
    if not devices:
        return "cpu-only"
    stalled = sum(s["stalled"] for s in steps)
    _require(2 * stalled != len(steps), "exactly half of the steps stalled")
    if 2 * stalled > len(steps):
        return "dataloader-bound"
    device = max(devices.values(), key=lambda d: d["busy_ns"])
    share = device["idle_ns"] / (device["window_ns"][1] - device["window_ns"][0])
    _require(not 0.18 < share < 0.22, f"idle share {share:.3f} is near 20%")
    if share < 0.2:
        return "compute-bound"
    by_cause: Counter[str] = Counter()
    for gap in device["gaps"]:
        by_cause[VERDICT_BY_CAUSE[gap["cause"]]] += gap["end_ns"] - gap["start_ns"]
    ranked = by_cause.most_common(2)
    _require(len(ranked) == 1 or ranked[0][1] > 1.2 * ranked[1][1], "two causes tie for the verdict")
    return ranked[0][0]


def span_truth(tl: Timeline, scenario: str, era: str, trace_begin: int, loop: Loop) -> dict[str, Any]:
    """The full truth of one span; checks that every planted gap cause came out as planned."""
    devices = _device_truth(tl)
    got = Counter(g["cause"] for d in devices.values() for g in d["gaps"])
    _require(got == loop.expected, f"{scenario}: planted causes {dict(loop.expected)} but got {dict(got)}")
    steps = _steps_truth(tl)
    starts = [trace_begin] + [s.start for s in tl.cpu] + [r.start for r in tl.runtime if not r.dropped]
    starts += [g.start for g in tl.gpu] + ([m.start for m in tl.marks] if era == "2024" else [])
    return {
        "scenario": scenario,
        "era": era,
        "trace_start_ns": min(starts),
        "devices": devices,
        "steps": steps,
        "launch": _launch_truth(tl),
        "memory": _memory_truth(tl, era),
        "verdict": _verdict(devices, steps),
    }
