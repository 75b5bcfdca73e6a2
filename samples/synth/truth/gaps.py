"""Device 0's busy time, its idle gaps, and the cause and culprit of every gap.

Busy time is the union of all GPU activities (``gpu_user_annotation`` marks never count); the window
runs from the first activity's start to the last one's end, and every hole in the union is a gap.
With ``k`` the activity that ends the gap, ``L`` its launch call and ``T`` the thread of ``L``, the
cause is the first that holds:

- ``graph``: ``L`` is a ``cudaGraphLaunch`` and ``k`` is not its first (earliest) activity;
- ``dataloader``: DataLoader waits cover at least half the gap;
- ``comm``: CPU-side collectives (``nccl:*``, ``gloo:*``, ``c10d::*``, ``record_param_comms``) on
  any thread cover at least half the gap;
- ``unlinked``: ``k`` has no launch call in the trace, unless ``k`` starts before the first activity
  that has one: then it was launched before the trace began, before the gap too: ``launch``;
- ``sync``: a host-blocking call (:data:`..core.SYNC_CALLS`; never a poll) on ``T`` ended inside
  the gap (after its start, at or before its end);
- ``host`` if ``L`` started after the gap began, else ``launch``.

Culprits: for ``host`` and ``comm`` gaps, what ``T`` ran at the midpoint ``start + (end - start) // 2``:
the innermost operator (or, when none runs, the one that ended last before, flagged ``after``) and
the innermost annotation. For ``sync`` gaps, the call that ended last inside the gap; its ``caller``
is the innermost operator running at the call's start (None when none runs) and ``annotation`` the
innermost annotation there. Every other gap has none of these.

The lead (:func:`lead_truth`): from the first step's start to the window's start when the step starts
first, with a cause by the same rules except ``sync`` (no device work before it for a sync to drain).
"""
from __future__ import annotations

from typing import Any, Optional

from ..core import SYNC_CALLS, GpuAct, Runtime, Timeline
from .common import GRAPH_CALLS, MARGIN_NS, Merged, Threads, covered, is_collective, is_loader, require, union


class Classifier:
    """Assigns a cause and a culprit to every idle gap of device 0."""

    def __init__(self, tl: Timeline, threads: Threads) -> None:
        """Indexes the model: launch calls by correlation, first activity per call, waits, syncs."""
        self.tl, self.threads = tl, threads
        self.launch_by_corr = {r.corr: r for r in tl.runtime if not r.dropped}
        firsts: dict[int, GpuAct] = {}
        for act in tl.gpu:
            if act.corr not in firsts or act.start < firsts[act.corr].start:
                firsts[act.corr] = act
        self.first_of_corr = firsts
        self.loader = union((s.start, s.end) for s in tl.cpu if is_loader(s.name))
        self.collectives = union((s.start, s.end) for s in tl.cpu if is_collective(s.name))
        self.syncs = [r for r in tl.runtime if r.name in SYNC_CALLS and not r.dropped]

    def gap(self, start: int, end: int, lead: bool = False) -> dict[str, Any]:
        """Cause and culprit of the gap ``[start, end)``, checked to be clear of every boundary
        (``lead``: the idle before the window, where no sync counts)."""
        nxt = [g for g in self.tl.gpu if g.start == end]
        require(len(nxt) == 1, f"gap ending at {end} must end at exactly one activity")
        act = nxt[0]
        launch = self.launch_by_corr.get(act.corr)
        row: dict[str, Any] = {"start_ns": start, "end_ns": end, "cause": "", "culprit": None, "after": False,
                               "annotation": None, "caller": None}
        if launch is not None and launch.name in GRAPH_CALLS and self.first_of_corr[act.corr] is not act:
            return {**row, "cause": "graph"}
        length = end - start
        loader, comm = covered(self.loader, start, end) / length, covered(self.collectives, start, end) / length
        require(not 0.4 < loader < 0.6, f"DataLoader covers {loader:.2f} of a gap")
        require(not 0.4 < comm < 0.6, f"collectives cover {comm:.2f} of a gap")
        if loader >= 0.5:
            return {**row, "cause": "dataloader"}
        if comm >= 0.5:
            require(launch is not None, "a comm gap needs a launching thread")
            return {**row, "cause": "comm", **self._culprit(launch.tid, start, end)}
        if launch is None:
            linked = [g.start for g in self.tl.gpu if g.corr in self.launch_by_corr]
            return {**row, "cause": "launch" if linked and act.start < min(linked) else "unlinked"}
        call = None if lead else self._sync_inside(launch.tid, start, end)
        if call is not None:
            caller, annotation = self.threads.op_at(call.tid, call.start)
            return {**row, "cause": "sync", "culprit": call.name, "caller": caller, "annotation": annotation}
        require(abs(launch.start - start) >= MARGIN_NS, "a launch starts at a gap start")
        if launch.start > start:
            return {**row, "cause": "host", **self._culprit(launch.tid, start, end)}
        return {**row, "cause": "launch"}

    def _sync_inside(self, tid: int, start: int, end: int) -> Optional[Runtime]:
        """The blocking call on ``tid`` that ended last inside ``(start, end]``, or None."""
        inside = []
        for call in self.syncs:
            if call.tid == tid:
                require(min(abs(call.end - start), abs(call.end - end)) >= MARGIN_NS, "a sync call ends at a gap boundary")
                if start < call.end <= end:
                    inside.append(call)
        return max(inside, key=lambda c: c.end, default=None)

    def _culprit(self, tid: int, start: int, end: int) -> dict[str, Any]:
        """Culprit, ``after`` and annotation at the gap's midpoint, checked to be stable around it."""
        middle = start + (end - start) // 2
        found = {self.threads.culprit(tid, middle + d) for d in (-MARGIN_NS, 0, MARGIN_NS)}
        require(len(found) == 1, "a gap's midpoint is at an op boundary")
        culprit, after, annotation = found.pop()
        return {"culprit": culprit, "after": after, "annotation": annotation}


def busy_union(tl: Timeline) -> Merged:
    """Device 0's busy time: the union of every GPU activity."""
    return union((g.start, g.end) for g in tl.gpu)


def lead_truth(tl: Timeline, threads: Threads, window_start: int, first_step: int) -> Optional[dict[str, Any]]:
    """The lead gap ``[first_step, window_start)`` with its cause, or None when the step starts later."""
    if first_step >= window_start:
        return None
    return Classifier(tl, threads).gap(first_step, window_start, lead=True)


def device_truth(tl: Timeline, threads: Threads) -> dict[str, Any]:
    """Window, busy, idle and classified gaps of device 0 (empty without GPU activity)."""
    if not tl.gpu:
        return {}
    merged = busy_union(tl)
    busy = sum(e - s for s, e in merged)
    window = [merged[0][0], merged[-1][1]]
    classifier = Classifier(tl, threads)
    gaps = [classifier.gap(a[1], b[0]) for a, b in zip(merged, merged[1:])]
    return {"0": {"window_ns": window, "busy_ns": busy, "idle_ns": window[1] - window[0] - busy, "gaps": gaps}}
