"""Measured GPU figures from hardware-counter samples (CUPTI PM sampling, the model's `hwc_` columns).

Each series is one metric of one device, sampled at intervals: a sample's value holds from its time until the
series' next sample; the last sample holds for the series' median sampling interval (Kineto writes a sample's
start only). A metric whose name carries `pct_of_peak` (Perfworks' `.pct_of_peak_sustained_elapsed` and
`_active` rollups) is a percentage of the device's peak; any other is in the metric's own unit (its name says
which: cycles, bytes, instructions), per sample interval.

Over a window (the GPU summary's: torch-tb-profiler's steps), a series' figure is its time-weighted mean over the
part of the window its samples cover: time the sampler did not cover is not counted as 0, since nothing was
measured there. The figures that answer the GPU summary's estimates (`MEASURED`) are picked by the metric's
Perfworks name: GPU active (`gr__cycles_active`), SM active (`sm__cycles_active`, torch-tb-profiler's "SM
efficiency" measured), achieved occupancy (`sm__warps_active`), SM and DRAM throughput, Tensor-pipe activity.
"""
from __future__ import annotations

import re
from typing import Any, Optional

import msgspec
import numpy as np

from ...trace.model import TraceModel

PCT = re.compile(r"\.pct_of_peak")
# GPU summary field -> the Perfworks metric bases (the name before its first '.') that measure it, first found wins.
MEASURED = {
    "utilization_pct": ("gr__cycles_active", "gpu__time_active"),
    "sm_efficiency_pct": ("sm__cycles_active",),
    "occupancy_pct": ("sm__warps_active",),
    "sm_throughput_pct": ("sm__throughput",),
    "dram_throughput_pct": ("dram__throughput", "gpu__dram_throughput"),
    "tensor_active_pct": ("sm__pipe_tensor_op_hmma_cycles_active", "sm__pipe_tensor_cycles_active",
                          "sm__inst_executed_pipe_tensor"),
}
MAX_LISTED = 32  # series a device's summary lists (a hostile trace may name 4,096)
_UNITS = (("bytes", "bytes"), ("cycles", "cycles"), ("inst", "instructions"), ("warps", "warps"))


def unit_of(name: str) -> str:
    """The unit of a metric's values: '%' for shares of a peak, else what its name counts ('count' when unsaid)."""
    if PCT.search(name):
        return "%"
    return next((unit for word, unit in _UNITS if word in name), "count")


class CounterSeries(msgspec.Struct, frozen=True):
    """One metric of one device: its samples' start and end times (ns) and values."""

    name: str
    device: int
    unit: str
    start_ns: np.ndarray
    end_ns: np.ndarray
    value: np.ndarray


def counter_series(model: TraceModel) -> tuple[CounterSeries, ...]:
    """Every series of the model, in its first-seen order; each sample ends where the next begins, the last after
    the series' median interval (a lone sample: 0 ns long, it covers nothing)."""
    bounds = np.searchsorted(model.hwc_series, np.arange(len(model.hwc_names) + 1))
    out = []
    for k, name in enumerate(model.hwc_names):
        a, b = int(bounds[k]), int(bounds[k + 1])
        t = model.hwc_ts_ns[a:b]
        step = np.diff(t)
        last = int(np.median(step)) if step.size else 0
        end = np.append(t[1:], t[-1] + last) if t.size else t
        out.append(CounterSeries(name, int(model.hwc_device[k]), unit_of(name), t, end, model.hwc_value[a:b]))
    return tuple(out)


def window_mean(series: CounterSeries, lo: int, hi: int) -> tuple[Optional[float], int]:
    """(time-weighted mean over the part of [lo, hi) the samples cover, None when they cover none of it; the
    samples overlapping it)."""
    covered = np.clip(np.minimum(series.end_ns, hi) - np.maximum(series.start_ns, lo), 0, None).astype(np.float64)
    total = float(covered.sum())
    count = int(np.count_nonzero(covered > 0))
    return (float(np.dot(covered, series.value)) / total if total > 0 else None), count


def measured_entry(series: tuple[CounterSeries, ...], device: int, lo: int, hi: int) -> Optional[dict[str, Any]]:
    """A device's measured figures over [lo, hi): `counters` (each series' mean, unit and samples, at most
    MAX_LISTED) and the `MEASURED` fields the metrics answer (None when no metric answers one); None when the
    device has no series."""
    mine = [s for s in series if s.device == device]
    if not mine:
        return None
    means = {}
    rows = []
    for s in mine:
        mean, count = window_mean(s, lo, hi)
        means.setdefault(s.name, mean)
        rows.append({"counter": s.name, "unit": s.unit, "mean": mean, "samples": count})
    fields = {key: _answer(means, bases) for key, bases in MEASURED.items()}
    return {**fields, "counters": rows[:MAX_LISTED], "counters_total": len(rows)}


def _answer(means: dict[str, Optional[float]], bases: tuple[str, ...]) -> Optional[float]:
    """The mean of the first percentage metric whose base is one of `bases` (by the order of `bases`)."""
    for base in bases:
        for name, mean in means.items():
            if mean is not None and name.split(".", 1)[0] == base and PCT.search(name):
                return mean
    return None
