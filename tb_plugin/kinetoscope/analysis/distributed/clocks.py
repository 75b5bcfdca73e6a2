"""How far apart the ranks' clocks are, from the collectives they ran together.

Every rank writes times on its own host's clock, so the ranks view compares durations, never raw times across
ranks (`ranks._per_rank_waits`). A collective ends at about the same moment on every rank of its group: the last
rank's arrival, plus the transfer, lets all of them go. So the ends of one matched instance, each on its rank's
own clock, differ by the clocks' offsets plus the little the group's ranks do not finish together. With E[k, i]
the end of instance k on rank i (its trace's start plus the call's start and length there), the offsets x and the
instances' true ends T solve E[k, i] = T[k] + x[i] + noise, which this estimates robustly by alternating medians:
T[k] = median over i of (E[k, i] - x[i]), then x[i] = median over k of (E[k, i] - T[k]), from x = 0, until nothing
moves by a nanosecond (a few rounds); x is then given from the reference rank (the lowest one with instances).
Groups chain the ranks together: in a 2 x 2 mesh, rank 3 shares no group with rank 0, but its tp and dp partners
do. A rank whose groups never meet the reference rank's has no offset (`null`).

Each offset carries its spread: 1.4826 times the median absolute residual of its instances (the standard deviation
of one instance's estimate for normal noise), so a figure compared across ranks, such as when a rank arrived, is
known to within about that much. Only instances matched by (process group, `Seq`) are used: the ordinal match may
pair calls of two groups (`groups.py`), whose ends are not one moment.

The same residuals bound the ranks view's waits: a rank's wait in an instance is its duration less the instance's
shortest (clock-free), which is exact when the instance's ranks end together; a rank's residual is how far from
together it ends. Its waits summed over n instances are known to within about its spread times the square root of
n (`wait_uncertainties`); each instance's waits within the range of its ranks' residuals (`instance_uncertainty`:
how far apart they ended once the clocks are aligned).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

MAX_ROUNDS = 50
INSTANCE_SPREAD = "instance_spread_ns"  # clock_offsets' per-instance spreads (by matched instance), for the view's instances
MAD_TO_SIGMA = 1.4826


def clock_offsets(digests: list, ranks: list[int], matched: dict[str, Any]) -> Optional[dict[str, Any]]:
    """`{"reference_rank", "ranks": [{"rank", "offset_us", "spread_us", "instances"}]}` (offsets: how far each rank's
    clock reads ahead of the reference rank's), or None without two ranks in an instance matched by sequence number."""
    numbered = np.flatnonzero(np.array([s >= 0 for s in matched["seq"]], bool)) if matched["seq"] else np.zeros(0, np.int64)
    if not numbered.size:
        return None
    dur, start = matched["dur"][numbered], matched["start"][numbered]
    present = dur >= 0
    origin = np.array([d.origin_ns for d in digests], np.float64)
    ends = np.where(present, origin[None, :] + start + dur, np.nan)
    counts = present.sum(axis=0)
    if np.count_nonzero(counts) < 2:
        return None
    offsets = _alternating_medians(ends, present)
    reference = int(np.flatnonzero(counts)[np.argmin([ranks[i] for i in np.flatnonzero(counts)])])
    linked = _linked(present, reference)
    offsets = offsets - offsets[reference]
    truth_ends = np.nanmedian(ends - offsets[None, :], axis=1)
    residual = ends - offsets[None, :] - truth_ends[:, None]
    rows = []
    for i in np.argsort(ranks, kind="stable").tolist():
        if not counts[i]:
            continue
        mine = residual[present[:, i], i]
        spread = MAD_TO_SIGMA * float(np.median(np.abs(mine - np.median(mine)))) if mine.size > 1 else None
        rows.append({"rank": ranks[i], "offset_us": round(float(offsets[i]) / 1e3, 3) if linked[i] else None,
                     "spread_us": round(spread / 1e3, 3) if spread is not None and linked[i] else None,
                     "instances": int(counts[i])})
    spread = np.where(present & linked[None, :], residual, np.nan)
    with np.errstate(invalid="ignore"):
        within = np.nanmax(spread, axis=1) - np.nanmin(spread, axis=1)
    instance_spread = {int(k): float(w) for k, w, n in zip(numbered.tolist(), within.tolist(),
                                                          (present & linked[None, :]).sum(axis=1).tolist()) if n >= 2}
    return {"reference_rank": ranks[reference], "ranks": rows, INSTANCE_SPREAD: instance_spread}


def instance_uncertainty(clocks: Optional[dict[str, Any]], k: int) -> Optional[float]:
    """How far apart instance k's ranks ended once their clocks are aligned (µs): each of its waits is known to within
    about that much (module docstring); None for an instance not matched by sequence number or without offsets."""
    if clocks is None:
        return None
    ns = clocks[INSTANCE_SPREAD].get(k)
    return None if ns is None else round(ns / 1e3, 3)


def public(clocks: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The clock offsets as the ranks view shows them (without the per-instance spreads, which its instances carry)."""
    return None if clocks is None else {k: v for k, v in clocks.items() if k != INSTANCE_SPREAD}


def _alternating_medians(ends: np.ndarray, present: np.ndarray) -> np.ndarray:
    """The clock offsets x (ns, one per rank, up to a common constant) of E = T + x + noise (module docstring)."""
    offsets = np.zeros(ends.shape[1])
    for _ in range(MAX_ROUNDS):
        instance = np.nanmedian(ends - offsets[None, :], axis=1)
        fresh = np.zeros_like(offsets)
        for i in np.flatnonzero(present.any(axis=0)).tolist():
            fresh[i] = float(np.median(ends[present[:, i], i] - instance[present[:, i]]))
        moved = float(np.max(np.abs(fresh - offsets))) if fresh.size else 0.0
        offsets = fresh
        if moved < 1.0:
            break
    return offsets


def _linked(present: np.ndarray, reference: int) -> np.ndarray:
    """Which ranks share instances with the reference rank, directly or through other ranks."""
    n = present.shape[1]
    seen = np.zeros(n, bool)
    seen[reference] = True
    while True:
        touching = present[present[:, seen].any(axis=1)].any(axis=0)
        if not (touching & ~seen).any():
            return seen
        seen |= touching


def wait_uncertainties(clocks: Optional[dict[str, Any]], ranks: list[int]) -> list[dict[str, Any]]:
    """Per rank of `ranks`, `{"wait_uncertainty_us": ...}` for its row of the ranks view (module docstring), or
    nothing without clock offsets (the rows are as they were)."""
    if clocks is None:
        return [{} for _ in ranks]
    rows = {c["rank"]: c for c in clocks["ranks"]}

    def one(row: Optional[dict[str, Any]]) -> Optional[float]:
        return None if row is None or row["spread_us"] is None else round(row["spread_us"] * float(np.sqrt(row["instances"])), 3)
    return [{"wait_uncertainty_us": one(rows.get(r))} for r in ranks]
