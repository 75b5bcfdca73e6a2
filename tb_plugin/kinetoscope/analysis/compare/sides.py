"""Compare a baseline with a candidate (two spans, two runs, two logdirs): what changed, and why.

Steps are matched by position: the first n steps of each side, n the smaller count (a side's spans in
time order, their steps concatenated). Step figures are per matched step; the other figures come from
each side's traces as a whole.

Noise: a figure's step-to-step spread is the robust standard deviation of its per-step values, 1.4826
times their median absolute deviation (a normal distribution's sigma; one slow first step does not
inflate it, as it would a plain standard deviation), and at least 1 µs (NOISE_FLOOR_US). A change no
larger than the spread of either side is `within noise`, neither a regression nor a gain. Figures without per-step values (launch offsets,
memory peak) have no spread; a change under RESOLUTION of the baseline is `unchanged` for them.

What changed the most: the mean step time is the sum of its parts (`compare_figures.PARTS`: compute,
exposed communication, idle by cause, outside the device's activity), so its change is the sum of the
parts' changes; `ranked_changes` lists the fewest parts, largest change first, whose changes add up to
the step-time change within COVERAGE (the rest is given as one figure). Compute splits further into
kernels by their share of kernel time on each side, and the compute row names the kernels whose changes
add up to its own the same way.

Multi-rank sides are compared rank by rank (ranks matched by rank number, else position) and as a whole:
the whole job's step at position i is the mean over ranks of their step i, and so is each part.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..distributed.ranks import ranks_view
from ..judgement.verdict import run_verdict
from .figures import PART_LABELS, PARTS, CutName, JoinName, Series, Side, pooled_percentile, totals, verdict_summary

MAD_SIGMA = 1.4826  # median absolute deviation -> standard deviation of a normal distribution
COVERAGE = 0.05  # the ranked rows explain the step-time change to within 5% of it
MAX_RANKED = 10  # rows in the ranked list at most
MAX_KERNEL_ROWS = 8  # kernels named under the compute row (by |change|); the others form one row
MAX_TABLE_ROWS = 200  # rows of each joined table
MAX_SERIES_STEPS = 400  # matched steps whose parts the answer lists (for the tab's step strip), about 90 kB
MAX_RANK_ROWS = 256  # ranks compared one by one (about 1 kB each); the whole job's figures count them all
# Figures without a spread: the caching allocator rounds blocks (512 B to 2 MiB) and launch percentiles move
# with the host's scheduling, so identical runs differ by a fraction of a percent; 1% is beyond that.
RESOLUTION = 0.01
# Per-step figures: Kineto writes whole microseconds in most eras, so a figure's change under 1 µs per step is
# below what the traces resolve; it is the least noise there is, even when most steps have the same value
# (their median absolute deviation is then 0).
NOISE_FLOOR_US = 1.0


def spread(values: np.ndarray) -> Optional[float]:
    """The robust step-to-step spread (1.4826 x MAD) of per-step values; None under two steps."""
    if values.size < 2:
        return None
    return float(MAD_SIGMA * np.median(np.abs(values - np.median(values))))


def status(delta: float, noise: Optional[float], base: float = 0.0) -> str:
    """`unchanged`, `within noise`, `regression` (more time or memory) or `gain`."""
    if delta == 0 or (noise is None and abs(delta) < RESOLUTION * abs(base)):
        return "unchanged"
    if noise is not None and abs(delta) <= noise:
        return "within noise"
    return "regression" if delta > 0 else "gain"


def metric(name: str, label: str, unit: str, base: Optional[float], cand: Optional[float],
           noise: Optional[float] = None) -> dict[str, Any]:
    """One compared figure: both values, the change (absolute and % of the baseline), noise and status."""
    if base is None or cand is None:
        return {"name": name, "label": label, "unit": unit, "base": base, "cand": cand, "delta": None,
                "delta_pct": None, "noise": noise, "status": "n/a"}
    delta = cand - base
    pct = 100.0 * delta / base if base else None
    return {"name": name, "label": label, "unit": unit, "base": base, "cand": cand, "delta": delta, "delta_pct": pct,
            "noise": noise, "status": status(delta, noise, base)}


def _noise(a: np.ndarray, b: np.ndarray) -> Optional[float]:
    """The larger spread of two sides' per-step values (µs), at least NOISE_FLOOR_US; None under two steps."""
    spreads = [s for s in (spread(a), spread(b)) if s is not None]
    return max(*spreads, NOISE_FLOOR_US) if spreads else None


def step_metrics(base: dict[str, np.ndarray], cand: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """Figures of the matched steps (µs): step time median/p90/mean, and per-step means of the parts."""
    us = {k: v / 1e3 for k, v in base.items()}, {k: v / 1e3 for k, v in cand.items()}
    b, c = us
    step_noise = _noise(b["step"], c["step"])
    out = [metric("step_time", "step time (median)", "us", _stat(b["step"], np.median), _stat(c["step"], np.median), step_noise),
           metric("step_time_p90", "step time (p90)", "us", _stat(b["step"], _p90), _stat(c["step"], _p90), step_noise),
           metric("step_time_mean", "step time (mean)", "us", _stat(b["step"], np.mean), _stat(c["step"], np.mean), step_noise)]
    # every label says its statistic: the step time's median headline and these means read apart
    for key, name, label in (("dataloader", "dataloader_wait", "DataLoader wait per step (mean)"),
                             ("comm", "comm", "communication per step (mean)"),
                             ("part:exposed_comm", "exposed_comm", "exposed communication per step (mean)"),
                             ("part:compute", "compute", "compute per step (mean)"),
                             ("idle", "idle", "device idle per step (mean)")):
        out.append(metric(name, label, "us", _stat(b[key], np.mean), _stat(c[key], np.mean), _noise(b[key], c[key])))
    for part in PARTS[2:]:
        name = f"idle_{part}" if part != "outside" else "outside"
        key = f"part:{part}"
        out.append(metric(name, PART_LABELS[part] + " per step (mean)", "us", _stat(b[key], np.mean), _stat(c[key], np.mean),
                          _noise(b[key], c[key])))
    return out


def _p90(x: np.ndarray) -> float:
    return float(np.percentile(x, 90))


def _stat(x: np.ndarray, fn) -> Optional[float]:
    return float(fn(x)) if x.size else None


def matched(series: list[Series], n: int) -> dict[str, np.ndarray]:
    """Per-step arrays of the first n steps, averaged over the ranks given (one rank: its own)."""
    step = np.mean([s.step_ns[:n] for s in series], axis=0)
    parts = np.mean([s.parts_ns[:n] for s in series], axis=0).reshape(n, len(PARTS))
    out = {"step": step.reshape(n), "parts": parts, "dataloader": np.mean([s.per_step("dataloader_ns")[:n] for s in series], axis=0),
           "comm": np.mean([s.per_step("comm_ns")[:n] for s in series], axis=0)}
    out.update({f"part:{p}": parts[:, i] for i, p in enumerate(PARTS)})  # "comm", "dataloader" are causes too
    out["idle"] = parts[:, 2:len(PARTS) - 1].sum(axis=1)
    return out


def ranked_changes(base: dict[str, np.ndarray], cand: dict[str, np.ndarray], base_kernels: Optional[dict],
                   cand_kernels: Optional[dict]) -> dict[str, Any]:
    """The parts whose changes add up to the mean step-time change, largest first (module docstring); the
    compute row carries `kernels`, the kernels whose changes explain its own (when both sides have tables)."""
    delta_us = float(np.mean(cand["step"]) - np.mean(base["step"])) / 1e3 if base["step"].size else 0.0
    rows = []
    for i, part in enumerate(PARTS):
        b, c = float(np.mean(base["parts"][:, i])) / 1e3, float(np.mean(cand["parts"][:, i])) / 1e3
        if b or c:
            row = {"name": PART_LABELS[part], "part": part, "base_us": b, "cand_us": c, "delta_us": c - b, "kernels": None}
            if part == "compute" and base_kernels and cand_kernels:
                row["kernels"] = kernel_changes(b, c, base_kernels, cand_kernels)
            rows.append(row)
    chosen, total = _explaining(rows, delta_us, MAX_RANKED)
    for row in chosen:
        row["share_of_change"] = row["delta_us"] / delta_us if delta_us else None
    return {"delta_us": delta_us, "rows": chosen, "explained_us": total, "rest_us": delta_us - total,
            "rest_rows": len(rows) - len(chosen)}


def _explaining(rows: list[dict[str, Any]], delta_us: float, most: int) -> tuple[list[dict[str, Any]], float]:
    """The fewest rows, largest |change| first, whose changes add up to `delta_us` within COVERAGE."""
    chosen, total = [], 0.0
    for row in sorted(rows, key=lambda r: -abs(r["delta_us"])):
        if len(chosen) >= most or (chosen and abs(delta_us - total) <= COVERAGE * abs(delta_us)):
            break
        chosen.append(row)
        total += row["delta_us"]
    return chosen, total


def kernel_changes(base_us: float, cand_us: float, bk: dict, ck: dict) -> list[dict[str, Any]]:
    """The compute part of each side split over kernels by their share of kernel time: the kernels that
    explain the compute change (at most MAX_KERNEL_ROWS), then the others as one row (`kernel` None)."""
    b_total, c_total = sum(v[0] for v in bk.values()) or 1.0, sum(v[0] for v in ck.values()) or 1.0
    rows = []
    for name in set(bk) | set(ck):
        b = base_us * bk.get(name, (0.0, 0))[0] / b_total
        c = cand_us * ck.get(name, (0.0, 0))[0] / c_total
        named = _named(name)
        rows.append({**named, "kernel": named["name"], "base_us": b, "cand_us": c, "delta_us": c - b})
    rows.sort(key=_by_change)
    top, _ = _explaining(rows, cand_us - base_us, MAX_KERNEL_ROWS)
    rest = rows[len(top):]
    if rest:
        b, c = sum(r["base_us"] for r in rest), sum(r["cand_us"] for r in rest)
        top.append({"name": f"{len(rest)} other kernels", "kernel": None, "base_us": b, "cand_us": c, "delta_us": c - b})
    return top


def joined_table(base: dict, cand: dict, base_steps: int, cand_steps: int, limit: int = MAX_TABLE_ROWS) -> dict[str, Any]:
    """Kernel or op totals (name -> (time ns, calls[, GPU ns])) joined by name, per step (µs), largest
    |change| of time first; `rows_total` counts them all. Ops carry their GPU time too (`*_gpu_us`)."""
    rows = []
    per_b, per_c = 1e3 * max(base_steps, 1), 1e3 * max(cand_steps, 1)
    for name in set(base) | set(cand):
        b, c = base.get(name), cand.get(name)
        zero = (0.0,) * len(b if b is not None else c)
        b, c = b or zero, c or zero
        row = {**_named(name), "base_us": b[0] / per_b, "cand_us": c[0] / per_c}
        row["delta_us"] = row["cand_us"] - row["base_us"]
        row["delta_pct"] = 100.0 * row["delta_us"] / row["base_us"] if row["base_us"] else None
        row.update(base_count=b[1] * 1e3 / per_b, cand_count=c[1] * 1e3 / per_c,
                   only_in="base" if name not in cand else "cand" if name not in base else None)
        if len(b) > 2:
            row.update(base_gpu_us=b[2] / per_b, cand_gpu_us=c[2] / per_c)
        rows.append(row)
    rows.sort(key=_by_change)
    return {"rows": rows[:limit], "rows_total": len(rows)}


def _named(name: JoinName) -> dict[str, Any]:
    """A joined row's name fields: the shown text, and for a name cut for showing its `name_key` and length (as
    the tables' rows carry them), so that rows cut to the same text are told apart."""
    if isinstance(name, CutName):
        return {"name": name.shown, "name_key": name.key, "name_chars": name.chars}
    return {"name": name}


def _by_change(row: dict[str, Any]) -> tuple:
    """Largest |change| first; then by name (and a cut name's key: the order never depends on a set's)."""
    return -abs(row["delta_us"]), row["name"], row.get("name_key", "")


def compare_sides(base: Side, cand: Side) -> dict[str, Any]:
    """The comparison of two sides (JSON-ready; times in µs, memory in bytes). Field list: HTTP_API.md, `compare`."""
    out = _compare_series(list(base.ranks), list(cand.ranks), base.traces, cand.traces)
    out["base"], out["cand"] = _side_entry(base), _side_entry(cand)
    out["verdict"] = {"base": verdict_summary(run_verdict([t.verdict for t in base.traces])),
                      "cand": verdict_summary(run_verdict([t.verdict for t in cand.traces]))}
    out["verdict"]["changed"] = out["verdict"]["base"]["bound"] != out["verdict"]["cand"]["bound"]
    out["warnings"] = [f"the {name} has no ProfilerStep in {sum(not t.from_steps for t in s.traces)} of its {len(s.traces)} "
                       "traces: each of those is compared as one step (its device window, else the whole trace)"
                       for name, s in (("baseline", base), ("candidate", cand)) if any(not t.from_steps for t in s.traces)]
    multi = len(base.ranks) > 1 or len(cand.ranks) > 1
    out["ranks"] = _by_rank(base, cand) if multi else []
    out["stragglers"] = {"base": _stragglers(base), "cand": _stragglers(cand)} if multi else None
    return out


def _stragglers(s: Side) -> Optional[list[dict[str, Any]]]:
    """The side's stragglers (`ranks.ranks_view`): rank, worker, caused wait, collectives waited for; None
    when its traces carry no digests."""
    digests = [t.digest for t in s.traces]
    if len(s.ranks) < 2 or any(d is None for d in digests):
        return None
    view = ranks_view(digests)
    return [{k: x[k] for k in ("rank", "worker", "caused_wait_us", "waited_for", "of")} for x in view["stragglers"]]


def _compare_series(base: list[Series], cand: list[Series], base_traces: tuple, cand_traces: tuple,
                    detail: bool = True) -> dict[str, Any]:
    """Steps, metrics and ranked changes of two sets of ranks; with `detail`, the kernels under compute, the
    joined tables and the per-step series too."""
    nb, nc = min(s.step_ns.size for s in base), min(s.step_ns.size for s in cand)
    n = min(nb, nc)
    b, c = matched(base, n), matched(cand, n)
    metrics = step_metrics(b, c)
    metrics += [metric("launch_p50", "launch offset p50", "us", pooled_percentile(base_traces, 50),
                       pooled_percentile(cand_traces, 50)),
                metric("launch_p99", "launch offset p99", "us", pooled_percentile(base_traces, 99),
                       pooled_percentile(cand_traces, 99)),
                metric("memory_peak", "memory peak (allocated)", "bytes", _peak(base_traces), _peak(cand_traces))]
    tables = detail and all(t.tables for t in base_traces + cand_traces)
    bk, ck = (totals(base_traces, "kernels"), totals(cand_traces, "kernels")) if tables else (None, None)
    steps_b, steps_c = sum(s.step_ns.size for s in base), sum(s.step_ns.size for s in cand)
    return {"steps": {"matched": n, "base": nb, "cand": nc, "unmatched_base": nb - n, "unmatched_cand": nc - n},
            "metrics": metrics, "changes": ranked_changes(b, c, bk, ck),
            "series": {"parts": list(PARTS), "base": _series(b), "cand": _series(c)} if detail else None,
            "kernels": joined_table(bk, ck, steps_b, steps_c) if tables else None,
            "ops": joined_table(totals(base_traces, "ops"), totals(cand_traces, "ops"), steps_b, steps_c) if tables else None}


def _series(steps: dict[str, np.ndarray]) -> dict[str, list]:
    """The first MAX_SERIES_STEPS matched steps: duration and parts (µs, PARTS order), rounded to 0.1 µs."""
    cut = slice(0, MAX_SERIES_STEPS)
    return {"step_us": np.round(steps["step"][cut] / 1e3, 1).tolist(),
            "parts_us": np.round(steps["parts"][cut] / 1e3, 1).tolist()}


def _peak(traces: tuple) -> Optional[float]:
    peaks = [t.memory_peak_bytes for t in traces if t.memory_peak_bytes is not None]
    return float(max(peaks)) if peaks else None


def _side_entry(s: Side) -> dict[str, Any]:
    return {"label": s.label, "traces": len(s.traces), "ranks": [r.rank if r.rank is not None else r.worker for r in s.ranks],
            "steps": int(sum(r.step_ns.size for r in s.ranks)), "failed": list(s.failed)}


def _by_rank(base: Side, cand: Side) -> list[dict[str, Any]]:
    """Rank by rank: ranks with the same number, else the same position; the figures without the tables."""
    def key(s: Series, i: int):
        return s.rank if s.rank is not None else f"#{i}"
    bk = {key(s, i): s for i, s in enumerate(base.ranks)}
    ck = {key(s, i): s for i, s in enumerate(cand.ranks)}
    rows = []
    for k in [k for k in bk if k in ck][:MAX_RANK_ROWS]:
        b, c = bk[k], ck[k]
        one = _compare_series([b], [c], b.spans, c.spans, detail=False)
        rows.append({"rank": k, "base_worker": b.worker, "cand_worker": c.worker, "steps": one["steps"],
                     "metrics": [m for m in one["metrics"] if m["name"] in RANK_METRICS],
                     "top_change": one["changes"]["rows"][0] if one["changes"]["rows"] else None,
                     "verdict": {"base": run_verdict([t.verdict for t in b.spans]).bound,
                                 "cand": run_verdict([t.verdict for t in c.spans]).bound}})
    only = [f"base rank {k}" for k in bk if k not in ck] + [f"candidate rank {k}" for k in ck if k not in bk]
    return rows + ([{"rank": None, "unmatched": only[:MAX_RANK_ROWS]}] if only else [])


RANK_METRICS = ("step_time", "step_time_p90", "dataloader_wait", "comm", "exposed_comm", "idle", "memory_peak")
