"""`straggler=median`: the steps of a multi-rank run if its stragglers were as fast as the median rank.

What "as fast as the median rank" removes is the straggler's extra work: in each step, for each op name on the
host (and `(untraced)` time) and each kernel name on the device, what the straggler spent beyond the median of
the other ranks (`step_work.py`), less what it spent below it on the names it was quicker at: the straggler's
work set to the median rank's, name by name. The larger of the host's and the device's sums (a rank late
because of its host leaves its device idle, one late because of its device waits for it on the host: the two
describe the same lateness), never below 0.

Why both signs: a straggler's other work is quicker than its peers' when it ran while they waited (on a shared
host its ops then had the cores to themselves; with both ranks computing, as without the straggler, they are
slower again), and noise in many small names sums to a positive excess when only the positive parts count (and
a name counted among one rank's `(other)` and named on another's cancels only when both signs do). On five real
2-rank gloo jobs (10 profiled steps each, beside their balanced reruns) the positive parts predicted a median
10% below the measured step, both signs 7%.

The ranks of a data-parallel job meet in every step's collectives, so that work lies once on every rank's step:
in each step where a straggler arrived last at one of its collectives, every rank's step loses the stragglers'
largest extra work, but no more than the others could have waited for it (the longest time one of them spent
inside that step's collectives: beyond it, another rank is the last to arrive), and no rank more than it could
have waited itself (its own time in them; a straggler's also its own extra work). The run's median step is the
median over every rank's steps, recorded and predicted alike.

Why the extra work and not the others' waits: a rank's wait (its collective's duration less the straggler's)
also holds the difference between the transfer the late rank saw, with every peer's data already there, and
the one ranks see when they arrive together, and the straggler's own work after its extra work, which the
others did before they waited. On five real 2-rank gloo jobs (samples/record_distributed.py, 40.3-40.5 ms of
planted work per step, 5 profiled steps) the waits removed 40.9-42.6 ms per step, the positive extra work
40.8-42.4; on the 4-rank sample the waits 39.7 ms, the extra work 39.9 (12.6 ms measured without the slow rank:
14.0 predicted, 14.2 by the waits).

What it cannot know: how ranks that share a host's cores slow each other once they compute and communicate at
the same time (the work set to the peers' holds the contention of computing beside the straggler's extra work,
not of every rank communicating at once), and whether a straggler slow in every step has
other causes (a slower device) that "as fast as the median" assumes away.
"""
from __future__ import annotations

from typing import Any, Optional

import msgspec
import numpy as np

from ...trace import intervals

EDIT = "straggler=median"
TOP_EXTRA = 5  # extra-work names listed per straggler


class StepWork(msgspec.Struct, frozen=True):
    """One rank's recorded step and what it worked on in it (name -> ns; `step_work.py`)."""

    ns: int
    host: dict[str, int]
    device: dict[str, int]


def straggler_at_median(matched: dict[str, Any], step_numbers: list[int], work: list[dict[int, StepWork]],
                        stragglers: list[int]) -> Optional[dict[str, Any]]:
    """The prediction, JSON-ready (µs); None without a straggler or steps.

    Args:
        matched: the ranks' matched collectives (`ranks._match`, with `last` from `_per_rank_waits`): per
            instance its step, and per rank its start (ns from the rank's origin) and duration (-1 absent).
        step_numbers: the run's step numbers.
        work: per rank (digest order), step number -> its recorded step and work.
        stragglers: digest indices of the stragglers.
    """
    n = len(work)
    if not stragglers or not step_numbers or n < 2:
        return None
    late_steps = _late_steps(matched, stragglers)
    extra = {(g, s): _extra(work, g, s, stragglers) for g in stragglers for s in late_steps}
    rooms = [_time_in_collectives(matched, i) for i in range(n)]
    removed = {s: min(max(max(sum(extra[(g, s)].values()), 0) for g in gs),
                      max((rooms[j].get(s, 0) for j in range(n) if j not in stragglers), default=0))
               for s, gs in late_steps.items()}
    predicted: dict[tuple[int, int], float] = {}
    for i in range(n):
        for s in step_numbers:
            if s not in work[i]:
                continue
            limit = rooms[i].get(s, 0) + (max(sum(extra[(i, s)].values()), 0) if (i, s) in extra else 0)
            predicted[(i, s)] = float(work[i][s].ns - min(removed.get(s, 0), limit, work[i][s].ns))
    recorded = [float(w.ns) for steps in work for w in steps.values()]
    if not predicted or not recorded:
        return None
    before, after = float(np.median(recorded)), float(np.median(list(predicted.values())))
    return {
        "edit": EDIT, "recorded_median_step_us": round(before / 1e3, 3), "median_step_us": round(after / 1e3, 3),
        "saving_us": round((before - after) / 1e3, 3), "saving_share": round((before - after) / before, 4) if before > 0 else None,
        "removed_us": round(float(np.median(list(removed.values()))) / 1e3, 3) if removed else 0.0,
        "extra_work": _extra_entry(extra, stragglers),
        "ranks": [{"index": i, "steps": [{"step": s, "recorded_us": round(work[i][s].ns / 1e3, 3),
                                          "predicted_us": round(predicted[(i, s)] / 1e3, 3)}
                                         for s in step_numbers if (i, s) in predicted]} for i in range(n)],
    }


def _late_steps(matched: dict[str, Any], stragglers: list[int]) -> dict[int, list[int]]:
    """Step -> the stragglers that arrived last at one of its collectives at least."""
    out: dict[int, list[int]] = {}
    last = matched["last"]
    for k in np.flatnonzero(np.isin(last, stragglers)).tolist() if len(last) else []:
        s, g = int(matched["step"][k]), int(last[k])
        if s >= 0 and g not in out.setdefault(s, []):
            out[s].append(g)
    return out


def _extra(work: list[dict[int, StepWork]], g: int, s: int, stragglers: list[int]) -> dict[str, int]:
    """Straggler g's work in step s less the median of the other ranks' (those not stragglers, present in the
    step), by name on its larger side (host or device): name -> ns, negative for the names it spent less on."""
    mine = work[g].get(s)
    peers = [work[j][s] for j in range(len(work)) if j not in stragglers and s in work[j]]
    if mine is None or not peers:
        return {}
    sides = [_difference(getattr(mine, side), [getattr(p, side) for p in peers]) for side in ("host", "device")]
    return max(sides, key=lambda side: sum(side.values()))


def _difference(mine: dict[str, int], peers: list[dict[str, int]]) -> dict[str, int]:
    names = sorted(set(mine).union(*peers))
    out = {name: int(mine.get(name, 0) - float(np.median([p.get(name, 0) for p in peers]))) for name in names}
    return {name: ns for name, ns in out.items() if ns}


def _time_in_collectives(matched: dict[str, Any], i: int) -> dict[int, int]:
    """Step -> rank i's time inside that step's matched collectives (the union of their extents, ns): the most
    its step can lose by not waiting."""
    k = np.flatnonzero(matched["dur"][:, i] >= 0) if len(matched["dur"]) else np.zeros(0, np.int64)
    out = {}
    for s in np.unique(matched["step"][k]).tolist():
        rows = k[matched["step"][k] == s]
        start = matched["start"][rows, i]
        out[int(s)] = int(intervals.total(*intervals.union(start, start + matched["dur"][rows, i])))
    return out


def _extra_entry(extra: dict[tuple[int, int], dict[str, int]], stragglers: list[int]) -> list[dict[str, Any]]:
    """Per straggler, the names of its extra work, the mean per step where it was late (µs), largest first."""
    out = []
    for g in stragglers:
        steps = [w for (h, _), w in extra.items() if h == g]
        totals: dict[str, int] = {}
        for w in steps:
            for name, ns in w.items():
                totals[name] = totals.get(name, 0) + ns
        top = sorted(((name, ns) for name, ns in totals.items() if ns > 0), key=lambda kv: (-kv[1], kv[0]))[:TOP_EXTRA]
        out.append({"index": g, "names": [{"name": name, "per_step_us": round(ns / len(steps) / 1e3, 3)}
                                          for name, ns in top]})
    return out
