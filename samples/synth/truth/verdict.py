"""The verdict: judged time, its categories and groups, the rule, step votes, runner-up, confidence,
"not enough data" and the CPU-only verdict.

- Judged time: each step from its start (a first step that starts before device 0's window keeps that
  lead, with the lead's cause) to the later of its end and the end of the device work launched inside
  it (never past the next step's start), clipped to the window's end; the window itself without steps.
  Each unit splits into compute (busy minus exposed NCCL), exposed communication and idle per gap
  cause, less the unseen parts of gaps: from the later of the gap's start and the return of the next
  activity's launch call (first activity of its call) to the gap's end, when at least 1 ms.
- Groups: compute-bound (compute, graph), communication-bound (exposed, comm), dataloader-bound,
  sync-bound, host-bound (host, unlinked), launch-overhead-bound (launch, and the host gaps' time
  inside launch calls, only when the launch regime holds: queued p50 <= 10 µs and at least half the
  launch units are short kernels; outside it launch gaps count with compute).
- Rule: host-side groups under 20% of the unit: compute- or communication-bound, the larger; else the
  largest group other than compute. With 3 or more units with time, each votes; most votes win (ties:
  the larger group over all units).
- Runner-up: the largest other group of at least 1%; compute only after a device-side winner or
  when nothing else reaches 1%.
- Confidence: clear when the winner is twice the runner-up, or 1.5 times with >= 80% of the steps
  agreeing; a device-side winner is high when clear and host-side idle is under 10% (else medium);
  another winner is high when clear, medium at 1.25 times, else low; one level less when under 2/3
  of the steps agree.
- Not enough data (then the judged verdict is the runner-up, confidence high): sampled ``Ev Idx``
  (under half of a range of >= 100 in one of its index spaces), one non-blocking runtime call >= 25%
  of the trace that does not wait on the device, graph capture over half the judged time, >= 20 launch
  calls outside capture of which over half have no device work, or too small: without a device under
  50 operators; with one under 20 device activities busy under 10 ms. Under 20 device activities
  judged: confidence at most medium, runner-up "not enough data" when there is none.
- CPU only: DataLoader waits >= 50% of the step time: dataloader-bound (high at 75%), runner-up
  cpu-only; collectives likewise communication-bound; else cpu-only (high when both are under 25%),
  runner-up the DataLoader or collectives at 10% or more, else "not enough data" under 3 steps.

The verdict is recomputed with every threshold moved by a few percent either way; if any answer
changes, or two candidates come within 10% of each other where one must be picked, the design is
ambiguous.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional

from ..core import SYNC_CALLS, Timeline
from .common import LAUNCH_CALLS, POLL_CALLS, Merged, covered, require, subtract, total, union

NOT_ENOUGH = "not enough data"
CATEGORIES = ("compute", "exposed_comm", "dataloader", "sync", "host", "launch", "unlinked", "comm", "graph")
GROUPS = {
    "compute-bound": ("compute", "graph"),
    "communication-bound": ("exposed_comm", "comm"),
    "dataloader-bound": ("dataloader",),
    "sync-bound": ("sync",),
    "host-bound": ("host", "unlinked"),
    "launch-overhead-bound": ("launch",),
}
HOST_SIDE = ("dataloader-bound", "sync-bound", "host-bound", "launch-overhead-bound")
DEVICE_SIDE = ("compute-bound", "communication-bound")
LEVELS = ("low", "medium", "high")
PICK_MARGIN = 1.1


@dataclass(frozen=True)
class Thresholds:
    """The verdict's thresholds; :data:`NOMINAL` holds the definitions' values."""

    idle_bound: float = 0.20
    idle_high: float = 0.10
    dominance: float = 2.0
    steady_dominance: float = 1.5
    medium: float = 1.25
    runner_min: float = 0.0
    queue_empty_ns: float = 10_000.0
    short_share: float = 0.5
    min_busy_ns: float = 10e6
    cpu_dominant: float = 0.5
    cpu_high: float = 0.75
    cpu_runner: float = 0.10
    cpu_mixed: float = 0.25
    startup_share: float = 0.25
    missing_share: float = 0.5
    ev_coverage: float = 0.5


NOMINAL = Thresholds()
PERTURB = {name: 0.05 if name in ("dominance", "steady_dominance", "medium") else 0.1 for name in NOMINAL.__dataclass_fields__}
MIN_STEPS, STEP_AGREEMENT, STEADY_AGREEMENT = 3, 2.0 / 3.0, 0.8
MIN_DEVICE_ACTIVITIES, MIN_CPU_OPS, MIN_LAUNCHES, EV_MIN_RANGE = 20, 50, 20, 100
HELD_MIN_NS = 1_000_000


@dataclass(frozen=True)
class Facts:
    """Everything the verdict reads, computed once from the model."""

    units: tuple[dict[str, int], ...]  # categories per judged unit (empty without a device)
    from_steps: bool
    steps: int
    launch: dict[str, Any]
    sufficiency: dict[str, Any]
    cpu: Optional[dict[str, int]]  # step_ns, dataloader_ns, collective_ns (None with a device)
    host_in_launch: tuple[int, ...] = ()  # per unit: host-gap time inside launch calls


def judged_spans(tl: Timeline, devices: dict[str, Any], steps: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """The judged units: steps extended to the device work they launched, from the lead, to the window's end."""
    lo_w, hi_w = devices["0"]["window_ns"]
    if not steps:
        return [(lo_w, hi_w)]
    first = min(steps[0]["start_ns"], lo_w)
    launches = {r.corr: r.start for r in tl.runtime if not r.dropped}
    spans = []
    for i, s in enumerate(steps):
        nxt = steps[i + 1]["start_ns"] if i + 1 < len(steps) else None
        work = [g.end for g in tl.gpu if g.corr in launches and s["start_ns"] <= launches[g.corr] < s["end_ns"]]
        end = max([s["end_ns"], *work])
        end = max(s["end_ns"], min(end, nxt)) if nxt is not None else end
        spans.append((min(max(s["start_ns"], first), hi_w), min(max(end, first), hi_w)))
    return spans


def unseen_parts(tl: Timeline, gaps: Sequence[dict[str, Any]]) -> Merged:
    """Parts of gaps where the next activity's launch had returned at least HELD_MIN_NS before it started."""
    launches = {r.corr: r for r in tl.runtime if not r.dropped}
    firsts: dict[int, int] = {}
    for g in tl.gpu:
        firsts[g.corr] = min(firsts.get(g.corr, g.start), g.start)
    parts = []
    for gap in gaps:
        act = next(g for g in tl.gpu if g.start == gap["end_ns"])
        call = launches.get(act.corr)
        if call is None or firsts[act.corr] != act.start:
            continue
        begin = max(gap["start_ns"], call.end)
        if gap["end_ns"] - begin >= HELD_MIN_NS:
            parts.append((begin, gap["end_ns"]))
    return parts


def breakdown_units(tl: Timeline, devices: dict[str, Any], busy: Merged, exposed: Merged, steps: Sequence[dict[str, Any]],
                    lead: Optional[dict[str, Any]]) -> tuple[tuple[dict[str, int], ...], bool, tuple[int, ...]]:
    """Categories per judged unit (see the module docstring), and the host-gap time inside launch calls per unit."""
    device = devices["0"]
    unseen = unseen_parts(tl, device["gaps"])
    gaps = ([lead] if lead else []) + list(device["gaps"])
    calls = union((r.start, r.end) for r in tl.runtime if not r.dropped and r.name in LAUNCH_CALLS)
    units, in_launch = [], []
    for lo, hi in judged_spans(tl, devices, steps):
        on, hidden = covered(busy, lo, hi), covered(exposed, lo, hi)
        row = {"compute": on - hidden, "exposed_comm": hidden}
        for cause in CATEGORIES[2:]:
            mine = subtract(union((g["start_ns"], g["end_ns"]) for g in gaps if g["cause"] == cause), unseen)
            row[cause] = covered(mine, lo, hi)
            if cause == "host":
                in_launch.append(covered(mine, lo, hi) - covered(subtract(mine, calls), lo, hi))
        units.append(row)
    return tuple(units), bool(steps), tuple(in_launch)


def waits_on_device(tl: Timeline, call: Any, busy: Merged) -> bool:
    """The call waits on the device: busy for half of it, or work launched before it starts after half of it."""
    half = call.start + (call.end - call.start) / 2
    if 2 * covered(busy, call.start, call.end) >= call.end - call.start:
        return True
    ends = {r.corr: r.end for r in tl.runtime if not r.dropped}
    return any(g.corr in ends and ends[g.corr] <= call.start and g.start >= half for g in tl.gpu)


def sufficiency_figures(tl: Timeline, era: str, trace_ns: int, op_count: int, steps: int, busy: Merged = ()) -> dict[str, Any]:
    """The figures "not enough data" is decided from."""
    calls = [r for r in tl.runtime if not r.dropped]
    longest = max((r.end - r.start for r in calls if r.name not in SYNC_CALLS | POLL_CALLS
                   and not waits_on_device(tl, r, list(busy))), default=0)
    launched = {g.corr for g in tl.gpu}
    launch_calls = [r for r in calls if r.name in LAUNCH_CALLS]
    numbered = len(tl.cpu) if era == "2024" else 0  # Kineto numbers the CPU events, written first, from 0
    return {
        "ev_idx": {"count": numbered, "min": 0, "max": numbered - 1} if numbered else None,
        "trace_ns": trace_ns, "longest_call_ns": longest, "launch_calls": len(launch_calls),
        "launch_calls_without_activity": sum(r.corr not in launched for r in launch_calls),
        "device_activities": len(tl.gpu), "cpu_ops": op_count, "steps": steps, "busy_ns": total(list(busy)),
    }


def cpu_figures(steps: Sequence[dict[str, Any]], collectives: Merged, trace_ns: int) -> dict[str, int]:
    """Step time, DataLoader waits and collectives inside the steps (the whole trace without steps)."""
    if steps:
        step_ns = sum(s["end_ns"] - s["start_ns"] for s in steps)
        coll = sum(covered(collectives, s["start_ns"], s["end_ns"]) for s in steps)
    else:
        step_ns, coll = trace_ns, total(collectives)
    return {"step_ns": step_ns, "dataloader_ns": sum(s["dataloader_ns"] for s in steps), "collective_ns": coll}


def _pick(candidates: Sequence[str], values: dict[str, float], what: str) -> str:
    """The largest candidate (first on ties), required to lead the next one by :data:`PICK_MARGIN`."""
    ranked = sorted(candidates, key=lambda g: -values[g])
    if len(ranked) > 1:
        first, second = values[ranked[0]], values[ranked[1]]
        require(first > 0 and first >= PICK_MARGIN * second, f"{what}: {ranked[0]} and {ranked[1]} are close")
    return ranked[0]


def groups_of(row: dict[str, int], regime: bool, host_in_launch: int = 0) -> dict[str, int]:
    """Time per bound of one unit (or the sum of units): host-gap time inside launch calls counts as launch
    overhead in the regime, and outside it launch gaps are the device's own bubbles (compute)."""
    groups = {bound: sum(row[c] for c in cats) for bound, cats in GROUPS.items()}
    if regime:
        moved = min(host_in_launch, row["host"])
        groups["launch-overhead-bound"] += moved
        groups["host-bound"] -= moved
    else:
        groups["compute-bound"] += groups["launch-overhead-bound"]
        groups["launch-overhead-bound"] = 0
    return groups


def decide(groups: dict[str, int], th: Thresholds) -> str:
    """The rule: the device limits below the idle bound, else the largest host-side (or comm) group."""
    whole = sum(groups.values()) or 1
    if sum(groups[g] for g in HOST_SIDE) / whole < th.idle_bound:
        return _pick(DEVICE_SIDE, groups, "device-side groups")
    return _pick([g for g in groups if g != "compute-bound"], groups, "idle groups")


def runner_up(groups: dict[str, int], winner: str, th: Thresholds) -> Optional[str]:
    """The largest other group above ``runner_min`` (any time at all); compute only where the definition allows."""
    whole = sum(groups.values()) or 1
    others = [g for g in groups if g != winner and (winner in DEVICE_SIDE or g != "compute-bound")
              and groups[g] > th.runner_min * whole]
    runner = _pick(others, groups, "runner-up") if others else None
    return "compute-bound" if runner is None and winner != "compute-bound" else runner


def confidence(groups: dict[str, int], winner: str, runner: Optional[str], agreement: Optional[float], th: Thresholds) -> str:
    """high / medium / low from the margin over the runner-up and the step agreement."""
    whole = sum(groups.values()) or 1
    top, second = groups[winner] / whole, (groups[runner] / whole if runner else 0.0)
    steady = agreement is None or agreement >= STEADY_AGREEMENT
    clear = top >= th.dominance * second or (steady and agreement is not None and top >= th.steady_dominance * second)
    if winner in DEVICE_SIDE:
        host_side = sum(groups[g] for g in HOST_SIDE) / whole
        level = "high" if clear and host_side < th.idle_high else "medium"
    else:
        level = "high" if clear else "medium" if top >= th.medium * second else "low"
    if agreement is not None and agreement < STEP_AGREEMENT:
        level = LEVELS[max(LEVELS.index(level) - 1, 0)]
    return level


def launch_regime(launch: dict[str, Any], th: Thresholds) -> bool:
    """The device queue is empty at launch (queued p50) and most launch units are short kernels."""
    queued, pairs = launch["queued_ns"], launch["pairs"]
    if not pairs:
        return False
    pos = (pairs - 1) * 0.5
    lo = math.floor(pos)
    p50 = queued[lo] + (queued[min(lo + 1, pairs - 1)] - queued[lo]) * (pos - lo)
    return p50 <= th.queue_empty_ns and launch["short_kernels"] >= th.short_share * pairs


def insufficient(facts: Facts, th: Thresholds) -> list[str]:
    """Reason codes why the trace cannot be judged (empty when it can)."""
    fig, codes = facts.sufficiency, []
    ev = fig["ev_idx"]
    if ev and ev["max"] - ev["min"] + 1 >= EV_MIN_RANGE and ev["count"] < th.ev_coverage * (ev["max"] - ev["min"] + 1):
        codes.append("sampled")
    if fig["longest_call_ns"] and fig["longest_call_ns"] >= th.startup_share * fig["trace_ns"]:
        codes.append("startup")
    if fig["launch_calls"] >= MIN_LAUNCHES and fig["launch_calls_without_activity"] > th.missing_share * fig["launch_calls"]:
        codes.append("device-records-missing")
    if not facts.units:
        small = fig["cpu_ops"] < MIN_CPU_OPS
    else:
        small = fig["device_activities"] < MIN_DEVICE_ACTIVITIES and fig["busy_ns"] < th.min_busy_ns
    return codes + ["too-small"] * small


def cpu_verdict(cpu: dict[str, int], steps: int, th: Thresholds) -> dict[str, Any]:
    """What bounds a run without device work."""
    whole = max(cpu["step_ns"], 1)
    loader, coll = cpu["dataloader_ns"] / whole, cpu["collective_ns"] / whole
    if loader >= th.cpu_dominant:
        return {"bound": "dataloader-bound", "runner_up": "cpu-only", "confidence": "high" if loader >= th.cpu_high else "medium"}
    if coll >= th.cpu_dominant:
        return {"bound": "communication-bound", "runner_up": "cpu-only", "confidence": "high" if coll >= th.cpu_high else "medium"}
    if loader >= th.cpu_runner and loader >= coll:
        runner: Optional[str] = "dataloader-bound"
    elif coll >= th.cpu_runner:
        runner = "communication-bound"
    else:
        runner = NOT_ENOUGH if steps < MIN_STEPS else None
    return {"bound": "cpu-only", "runner_up": runner, "confidence": "high" if max(loader, coll) < th.cpu_mixed else "medium"}


def device_verdict(facts: Facts, th: Thresholds) -> dict[str, Any]:
    """The rule over the judged units, the step vote, runner-up and confidence."""
    regime = launch_regime(facts.launch, th)
    summed = {c: sum(u[c] for u in facts.units) for c in CATEGORIES}
    in_launch = facts.host_in_launch or (0,) * len(facts.units)
    groups = groups_of(summed, regime, sum(in_launch))
    rows = [(u, k) for u, k in zip(facts.units, in_launch) if facts.from_steps and sum(u.values()) > 0]
    votes = [decide(groups_of(u, regime, k), th) for u, k in rows] if len(rows) >= MIN_STEPS else []
    if votes:
        counts = {v: votes.count(v) for v in votes}
        best = max(counts.values())
        winner = _pick([v for v in counts if counts[v] == best], groups, "tied votes")
        agreement: Optional[float] = counts[winner] / len(votes)
    else:
        winner, agreement = decide(groups, th), None
    runner = runner_up(groups, winner, th)
    return {"bound": winner, "runner_up": runner, "confidence": confidence(groups, winner, runner, agreement, th),
            "launch_regime": regime, "votes": votes, "groups_ns": groups}


def judge(facts: Facts, th: Thresholds) -> dict[str, Any]:
    """The whole verdict under one set of thresholds."""
    if facts.units:
        judged = device_verdict(facts, th)
        if facts.sufficiency["device_activities"] < MIN_DEVICE_ACTIVITIES:
            judged = {**judged, "confidence": "medium" if judged["confidence"] == "high" else judged["confidence"],
                      "runner_up": judged["runner_up"] or NOT_ENOUGH}
    else:
        judged = {**cpu_verdict(facts.cpu or {}, facts.steps, th), "launch_regime": None, "votes": [], "groups_ns": None}
    reasons = insufficient(facts, th)
    if reasons:
        return {**judged, "bound": NOT_ENOUGH, "runner_up": judged["bound"], "confidence": "high", "reasons": reasons}
    return {**judged, "reasons": []}


def verdict_truth(facts: Facts) -> dict[str, Any]:
    """The verdict, required to hold with every threshold moved a little either way.

    The bound, runner-up, reasons and launch regime must hold; the step votes and the confidence are
    part of the truth only where they hold too, else None (not planted: a step or a ratio sits near
    a threshold).
    """
    verdict = judge(facts, NOMINAL)
    moved = [judge(facts, replace(NOMINAL, **{name: getattr(NOMINAL, name) * (1 + sign * rel)}))
             for name, rel in PERTURB.items() for sign in (-1, 1)]
    for again in moved:
        for key in ("bound", "runner_up", "reasons", "launch_regime", "groups_ns"):
            require(again[key] == verdict[key], f"the verdict's {key} changes when a threshold moves: {verdict} vs {again}")
    for key in ("confidence", "votes"):
        if any(again[key] != verdict[key] for again in moved):
            verdict[key] = None
    return {k: verdict[k] for k in ("bound", "runner_up", "confidence", "reasons", "launch_regime", "votes", "groups_ns")}
