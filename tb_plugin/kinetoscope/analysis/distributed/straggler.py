"""`straggler=median`: the steps of a multi-rank run if its stragglers were as fast as the median rank.

The others stop waiting for a straggler: each other rank's step loses its waits in the collectives of that step
where a straggler arrived last (the union of those waits: a rank can wait in two overlapping collectives at
once, DDP's gradient buckets). A straggler's own step becomes the median of the others' predicted steps. The
run's median step is the median over every rank's steps, recorded and predicted alike.

What it cannot know: on a shared CPU (gloo ranks on one machine), a straggler's extra work also slows the
others' own work, so the run without it is faster than this predicts; and a straggler that is slow in every
step may have other causes (a slower device) that making it "as fast as the median" assumes away.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ...trace import intervals

EDIT = "straggler=median"


def straggler_at_median(matched: dict[str, Any], step_numbers: list[int], step_ns: list[dict[int, int]],
                        stragglers: list[int]) -> Optional[dict[str, Any]]:
    """The prediction, JSON-ready (µs); None without a straggler or steps.

    Args:
        matched: the ranks' matched collectives (`ranks._match`, with `wait` and `last` from `_per_rank_waits`):
            per instance its step, and per rank its start (ns from the rank's origin) and wait (-1/0 absent).
        step_numbers: the run's step numbers.
        step_ns: per rank (digest order), step number -> recorded step length (ns).
        stragglers: digest indices of the stragglers.
    """
    n = len(step_ns)
    if not stragglers or not step_numbers or n < 2:
        return None
    late = np.isin(matched["last"], stragglers) if len(matched["last"]) else np.zeros(0, bool)
    predicted: dict[tuple[int, int], float] = {}
    for i in range(n):
        if i in stragglers:
            continue
        lost = _lost_by_step(matched, late, i)
        for s in step_numbers:
            if s in step_ns[i]:
                predicted[(i, s)] = float(step_ns[i][s] - lost.get(s, 0))
    for i in stragglers:
        for s in step_numbers:
            others = [predicted[(j, s)] for j in range(n) if (j, s) in predicted]
            if s in step_ns[i] and others:
                predicted[(i, s)] = float(np.median(others))
    recorded = [float(v) for steps in step_ns for v in steps.values()]
    if not predicted or not recorded:
        return None
    before, after = float(np.median(recorded)), float(np.median(list(predicted.values())))
    return {
        "edit": EDIT, "recorded_median_step_us": round(before / 1e3, 3), "median_step_us": round(after / 1e3, 3),
        "saving_us": round((before - after) / 1e3, 3), "saving_share": round((before - after) / before, 4) if before > 0 else None,
        "ranks": [{"index": i, "steps": [{"step": s, "recorded_us": round(step_ns[i][s] / 1e3, 3),
                                          "predicted_us": round(predicted[(i, s)] / 1e3, 3)}
                                         for s in step_numbers if (i, s) in predicted]} for i in range(n)],
    }


def _lost_by_step(matched: dict[str, Any], late: np.ndarray, i: int) -> dict[int, int]:
    """Rank i's waits for a straggler, step -> the length of their union (ns): its instances where a straggler
    arrived last, rank i took part and was not last, grouped by step once (one mask per rank, not per step)."""
    if not late.size:
        return {}
    k = np.flatnonzero(late & (matched["dur"][:, i] >= 0) & (matched["last"] != i))
    if not k.size:
        return {}
    steps = matched["step"][k]
    order = np.argsort(steps, kind="stable")  # instance order within a step, as the union has always seen it
    k, steps = k[order], steps[order]
    edges = [0, *(np.flatnonzero(np.diff(steps)) + 1).tolist(), k.size]
    lost = {}
    for lo, hi in zip(edges, edges[1:]):
        rows = k[lo:hi]
        start = matched["start"][rows, i]
        end = start + matched["wait"][rows, i]
        # one wait: its union is itself
        lost[int(steps[lo])] = int(end[0] - start[0]) if rows.size == 1 else int(intervals.total(*intervals.union(start, end)))
    return lost
