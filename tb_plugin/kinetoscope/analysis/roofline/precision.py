"""What lower precision would buy the matrix work that runs in fp32 (or TF32): the roofline's view of mixed precision.

An op call of GEMM, convolution or attention whose arithmetic runs in fp32 or tf32 would, under autocast to bf16
(or fp16), do the same operations on the device's bf16 matrix units and move half the bytes (each fp32 operand and
result becomes a 2-byte one). Its time at the roof becomes max(operations / bf16 peak, bytes / 2 / bandwidth).
The prediction keeps each call's achieved share of the roof: its kernels take (time at the bf16 roof) / (time at
its roof now) of their recorded time. What it leaves out: kernels that get better or worse than their share at
the new shapes, the casts autocast adds, and ops autocast keeps in fp32 (norms, softmax, losses), whose time is
left as it was.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Optional

import numpy as np

from .figures import Roofline, activity_calls, call_times, roof_seconds
from .record import Work

MATRIX = ("gemm", "conv", "attention")  # the categories that run on matrix units
COVERED = 0.8  # the share of the matrix work's time a model must cover for the prediction to stand for autocast
WIDE = ("fp32", "tf32")  # the dtypes whose matrix work lower precision speeds up
LOWER = ("bf16", "fp16")


def lowered(work: Optional[Work], dtype: str) -> Optional[Work]:
    """The work in `dtype` of a matrix-unit call running in fp32 or tf32: the same operations, half the bytes."""
    if work is None or not work.matrix or work.dtype not in WIDE:
        return None
    return Work(work.category, work.flops, work.bytes / 2, dtype, True)


def group_scales(roof: Roofline, dtype: str) -> np.ndarray:
    """Per group of the Roofline: its time at the `dtype` roof over its time at its roof now (1 where lower
    precision does not apply or the device lacks the figures)."""
    out = np.ones(len(roof.works))
    for g, work in enumerate(roof.works):
        low = lowered(work, dtype)
        now = roof_seconds(work, roof.peaks) if low is not None else None
        then = roof_seconds(low, roof.peaks) if low is not None else None
        if now and then is not None and then < now:
            out[g] = then / now
    return out


def precision_scales(roof: Roofline, acts: np.ndarray, dtype: str = "bf16") -> np.ndarray:
    """Per GPU activity row of `acts`: the factor its duration takes in `dtype` (the `precision:` edit)."""
    scale = group_scales(roof, dtype)
    out = np.ones(acts.size)
    call = activity_calls(roof, acts)
    mine = call >= 0
    out[mine] = scale[roof.call_group[call[mine]]]
    return out


def amp_figures(roof: Optional[Roofline], dtype: str = "bf16") -> Optional[dict[str, Any]]:
    """The fp32/tf32 matrix work of a trace against the roofs: `wide_share` (its share of the modelled kernel
    time), `wide_us`, `wide_roof_pct` (its time at its roof now over its time), `wide_roof_tflops` (that roof:
    the tf32 or fp32 matrix peak the most of it runs against), `low_roof_tflops` (the `dtype` peak),
    `low_kernel_us` (its kernels' time predicted in `dtype`) and `matrix_modelled_share` (the share of the GEMM,
    convolution and attention calls' time that has a work model: the prediction covers that much of the matrix
    work); None without such work or peaks."""
    if roof is None or roof.peaks is None:
        return None
    with _LOCK:
        if _FIGURES.get(roof, {}).get(dtype, _NONE) is not _NONE:
            return _FIGURES[roof][dtype]
    found = _amp_figures(roof, dtype)
    with _LOCK:
        _FIGURES.setdefault(roof, {})[dtype] = found
    return found


_FIGURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # per Roofline, per dtype (the report asks twice)
_LOCK = threading.Lock()
_NONE = object()


def _amp_figures(roof: Roofline, dtype: str) -> Optional[dict[str, Any]]:
    times = call_times(roof)
    scales = group_scales(roof, dtype)
    wide = np.array([w is not None and w.matrix and w.dtype in WIDE for w in roof.works] + [False])
    modelled = np.array([w is not None for w in roof.works] + [False])
    g = roof.call_group
    matrix = np.array([c in MATRIX for c in roof.categories] + [False])
    matrix_ns = float(times.ns[matrix[g]].sum()) if g.size else 0.0
    wide_ns = float(times.ns[wide[g]].sum()) if g.size else 0.0
    modelled_ns = float(times.ns[modelled[g]].sum()) if g.size else 0.0
    if wide_ns <= 0 or modelled_ns <= 0:
        return None
    roof_s = np.array([(roof_seconds(w, roof.peaks) or 0.0) if wide[k] else 0.0 for k, w in enumerate(roof.works)])
    at_roof = float((roof_s[g[wide[g]]]).sum()) * 1e9
    group_ns = np.bincount(g[wide[g]], weights=times.ns[wide[g]], minlength=len(roof.works))
    by_dtype: dict[str, float] = {}
    for k in np.flatnonzero(group_ns).tolist():
        by_dtype[roof.works[k].dtype] = by_dtype.get(roof.works[k].dtype, 0.0) + float(group_ns[k])
    main = max(by_dtype, key=lambda d: by_dtype[d])
    wide_peak, low_peak = roof.peaks.compute_peak(main, True), roof.peaks.compute_peak(dtype, True)
    if not wide_peak or not low_peak:
        return None
    return {"wide_share": wide_ns / modelled_ns, "wide_us": wide_ns / 1e3, "wide_dtype": main,
            "wide_roof_pct": 100 * at_roof / wide_ns, "wide_roof_tflops": wide_peak / 1e12,
            "low_dtype": dtype, "low_roof_tflops": low_peak / 1e12,
            "low_kernel_us": float((times.ns[wide[g]] * scales[g[wide[g]]]).sum()) / 1e3,
            "matrix_modelled_share": float(times.ns[(matrix & modelled)[g]].sum()) / matrix_ns if matrix_ns else 0.0}
