"""The truth of a span, computed from the simulation model (never from the rendered JSON).

Modules: :mod:`.common` (intervals, name rules, what each thread ran), :mod:`.gaps` (busy time,
gaps, causes and culprits), :mod:`.figures` (steps, launch units, communication, memory) and
:mod:`.verdict` (judged time, the verdict, "not enough data", CPU-only runs). Each module's
docstring gives its definitions.

Every planted quantity must lie clearly away from its threshold, or :class:`AmbiguousDesign` is
raised instead of a fragile truth.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..core import Timeline
from ..ops import Loop
from .common import NO_OP, AmbiguousDesign, Threads, is_collective, require, union
from .figures import comm_truth, kind_unions, launch_truth, memory_truth, steps_truth
from .gaps import busy_union, device_truth, lead_truth
from .verdict import CATEGORIES, Facts, breakdown_units, cpu_figures, sufficiency_figures, verdict_truth

__all__ = ["NO_OP", "AmbiguousDesign", "span_truth"]


def span_truth(tl: Timeline, scenario: str, era: str, trace_begin: int, trace_end: int, loop: Loop) -> dict[str, Any]:
    """The full truth of one span; checks that every planted gap cause came out as planned."""
    threads = Threads(tl, era)
    devices = device_truth(tl, threads)
    got = Counter(g["cause"] for d in devices.values() for g in d["gaps"])
    require(got == loop.expected, f"{scenario}: planted causes {dict(loop.expected)} but got {dict(got)}")
    busy, kinds = busy_union(tl), kind_unions(tl)
    collectives = union((s.start, s.end) for s in tl.cpu if is_collective(s.name))
    steps = steps_truth(tl, busy, kinds)
    launch = launch_truth(tl)
    lead = lead_truth(tl, threads, devices["0"]["window_ns"][0], steps[0]["start_ns"]) if devices and steps else None
    units, from_steps, in_launch = (breakdown_units(tl, devices, busy, kinds["exposed_comm"], steps, lead) if devices
                                    else ((), False, ()))
    sufficiency = sufficiency_figures(tl, era, trace_end - trace_begin, threads.op_count(), len(steps), busy)
    facts = Facts(units=units, from_steps=from_steps, steps=len(steps), launch=launch, sufficiency=sufficiency,
                  cpu=None if devices else cpu_figures(steps, collectives, trace_end - trace_begin), host_in_launch=in_launch)
    starts = [trace_begin] + [s.start for s in tl.cpu] + [r.start for r in tl.runtime if not r.dropped]
    starts += [g.start for g in tl.gpu] + ([m.start for m in tl.marks] if era == "2024" else [])
    breakdown = {
        "device": 0, "units": len(units), "from_steps": from_steps, "judged_ns": sum(sum(u.values()) for u in units),
        "by_category_ns": {c: sum(u[c] for u in units) for c in CATEGORIES},
    } if units else None
    return {
        "scenario": scenario,
        "era": era,
        "trace_start_ns": min(starts),
        "devices": devices,
        "steps": steps,
        "launch": launch,
        "comm": comm_truth(tl, kinds, collectives),
        "memory": memory_truth(tl, era),
        "breakdown": breakdown,
        "sufficiency": sufficiency,
        "verdict": verdict_truth(facts),
    }
