"""Hardware-counter samples: the `ph: "C"` events Kineto writes for `HARDWARE_COUNTERS` activities (CUPTI PM
sampling), as the model's `hwc_` columns.

Kineto's writer (libkineto `src/output_json.cpp`, `handleCounterEvent`, read at pytorch/kineto 114171df) writes one
counter event per sample and metric:

    {"ph": "C", "cat": "hardware_counters", "name": "<metric>", "pid": "GPU <device> Counters", "tid": <resource>,
     "ts": <sample start>, "args": {"": <value>}}

A sample's value holds from its `ts` until the next sample of the same metric (the Trace Event Format's counter
semantics; Kineto writes the sample's start, not its end). A series is one (pid, name) pair: its device is the
`<device>` of the pid text, or the pid itself when it is a number; -1 when neither.

Only counter events with a finite numeric `""` value are kept; any other `C` event (another writer's named
series, a value that is not a number) stays what it was before: counted as an unsupported phase.
"""
from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .finish import UNSUPPORTED_PHASE as UNSUPPORTED  # what `complete_rows` counted the samples it keeps under

_DEVICE_PID = re.compile(r"GPU (\d{1,9}) Counters")
MAX_SERIES = 4096  # distinct (pid, metric) series kept; samples of any further series are skipped by name
TOO_MANY = f"hardware counter beyond the first {MAX_SERIES} series"


def counter_samples(events: list, rows: np.ndarray, off: int) -> list[tuple[int, str, Any, float]]:
    """(row, metric name, pid, value) of the hardware-counter samples among `events[rows]` (the chunk's rows of an
    unsupported phase; `off`: the chunk's first row)."""
    out = []
    for i in rows.tolist():
        e = events[i]
        if e.ph != "C":
            continue
        value = _finite(e.args.counter)
        if value is not None:
            out.append((off + i, e.name, e.pid, value))
    return out


def _finite(value: Any) -> Any:
    """A JSON number as a finite float; None for anything else (bools, strings, out of float range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def device_of(pid: Any) -> int:
    """The device a series' pid names: `GPU N Counters` -> N, a number -> itself, else -1."""
    if isinstance(pid, int) and not isinstance(pid, bool):
        return pid if 0 <= pid < 1 << 31 else -1
    found = _DEVICE_PID.fullmatch(pid) if isinstance(pid, str) else None
    return int(found.group(1)) if found else -1


def counter_columns(samples: list[tuple[int, str, Any, float]], ts_ns: np.ndarray, ts_ok: np.ndarray,
                    skipped: dict[str, int]) -> dict[str, Any]:
    """The model's `hwc_` columns from the samples of the whole file: samples sorted by (series, time), series in
    first-seen order. Samples kept are taken out of `skipped`'s unsupported-phase count, which counted them."""
    rows = np.fromiter((s[0] for s in samples), np.int64, len(samples))
    keep = ts_ok[rows] if rows.size else np.zeros(0, bool)
    series: dict[tuple[Any, str], int] = {}
    sid, names, devices, too_many = [], [], [], 0
    for (_, name, pid, _), ok in zip(samples, keep.tolist()):
        key = (pid if isinstance(pid, str) else int(pid), name)
        k = series.get(key)
        if k is None and ok and len(series) < MAX_SERIES:
            k = series[key] = len(series)
            names.append(name)
            devices.append(device_of(pid))
        too_many += ok and k is None
        sid.append(-1 if k is None else k)
    sid_arr = np.array(sid, np.int64)
    keep &= sid_arr >= 0
    kept = int(np.count_nonzero(keep))
    if kept + too_many:
        skipped[UNSUPPORTED] -= kept + too_many
        if not skipped[UNSUPPORTED]:
            del skipped[UNSUPPORTED]
    if too_many:
        skipped[TOO_MANY] = skipped.get(TOO_MANY, 0) + too_many
    t = ts_ns[rows[keep]]
    s = sid_arr[keep]
    value = np.fromiter((v for (*_, v), k in zip(samples, keep.tolist()) if k), np.float64, kept)
    order = np.lexsort((t, s)) if kept else np.zeros(0, np.int64)
    return {"hwc_ts_ns": t[order].astype(np.int64), "hwc_series": s[order].astype(np.int32),
            "hwc_value": value[order], "hwc_device": np.array(devices, np.int64), "hwc_names": tuple(names)}
