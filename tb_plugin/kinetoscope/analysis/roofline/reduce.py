"""The work of reductions and scans: `sum`, `mean`, `prod`, `amax`, `max`, `argmax`, `all`, `norm`, `var`, `std`,
`logsumexp`, `cumsum` and their kin.

Operations: one per input element, the reduction's combining step (an add, a max, ...); the elementwise step some
reductions take first (a norm's or a variance's square, a log-sum-exp's exp) is not counted, so that every
reduction counts alike (these kernels are bound by memory, not arithmetic). Bytes: the input read once (a broadcast
view only for its stored elements) and the output written once: the input's shape without the reduced dims (`dim`
from Concrete Inputs; `None` or `[]` reduces them all), every element for a scan (`cumsum`). The output's
dtype is PyTorch's: `sum`, `prod` and `cumsum` of integers or bools give int64 unless a `dtype` is given; `argmax`
int64; `all`, `any` bool; `max(x, dim)` and `min(x, dim)` also write int64 indices. `max(a, b)` and `min(a, b)` of
two tensors are elementwise (see pointwise). A record without Concrete Inputs (older profilers) does not say the dim:
no model.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

from .record import CATEGORY, DTYPE_BYTES, REDUCE, Call, Tensor, Work, as_ints, scalar_type, vector_dtype


class Spec(NamedTuple):
    """Where a reduction keeps its `dim` and `dtype` arguments (-1: none) and how its output's dtype is chosen:
    `sum` (integers widen to int64), `same`, `index` (int64), `bool`, `indices` (values and int64 indices), `pair`
    (two outputs), `scan` (every element out)."""

    dim: int
    dtype: int
    kind: str


SPECS = {
    "sum": Spec(1, 3, "sum"), "nansum": Spec(1, 3, "sum"), "prod": Spec(1, 3, "sum"), "mean": Spec(1, 3, "same"),
    "nanmean": Spec(1, 3, "same"), "amax": Spec(1, -1, "same"), "amin": Spec(1, -1, "same"),
    "aminmax": Spec(1, -1, "pair"), "max": Spec(1, -1, "indices"), "min": Spec(1, -1, "indices"),
    "argmax": Spec(1, -1, "index"), "argmin": Spec(1, -1, "index"), "logsumexp": Spec(1, -1, "same"),
    "all": Spec(1, -1, "bool"), "any": Spec(1, -1, "bool"), "count_nonzero": Spec(1, -1, "index"),
    "norm": Spec(2, 4, "same"), "linalg_vector_norm": Spec(2, 4, "same"), "linalg_norm": Spec(2, 4, "same"),
    "var": Spec(1, -1, "same"), "std": Spec(1, -1, "same"), "var_mean": Spec(1, -1, "pair"),
    "std_mean": Spec(1, -1, "pair"), "cumsum": Spec(1, 2, "scan"), "cumprod": Spec(1, 2, "scan"),
    "logcumsumexp": Spec(1, -1, "scan"), "cummax": Spec(1, -1, "scan"), "cummin": Spec(1, -1, "scan"),
}
# reductions whose two-argument form names a dtype, not a dim (`sum(x, dtype=...)`)
_DTYPE_SECOND = {"sum", "nansum", "prod", "mean", "nanmean"}


def _reduced(call: Call, spec: Spec, x: Tensor) -> Optional[set[int]]:
    """The dims reduced (all of them where no dim is recorded)."""
    rank = len(x.dims)
    every = set(range(rank))
    if spec.dim >= len(call.dims) or (call.base in _DTYPE_SECOND and len(call.dims) <= 2):
        return every
    if not call.recorded(spec.dim):
        return None  # a dim argument, but no concrete inputs to say which
    text = call.text(spec.dim).strip()
    if not text or text == "None" or text.lower() in ("true", "false"):  # `var(x, unbiased)`: no dim
        return every
    dims = as_ints(text)
    if dims is None:
        return None
    if not dims:
        return every
    if rank == 0:
        return every if all(d in (0, -1) for d in dims) else None
    if not all(-rank <= d < rank for d in dims):
        return None
    return {d % rank for d in dims}


def _out_dtype(call: Call, spec: Spec, x: Tensor) -> str:
    if spec.kind == "index":
        return "long int"
    if spec.kind == "bool":
        return "bool"
    asked = scalar_type(call.text(spec.dtype)) if spec.dtype >= 0 and spec.dtype < len(call.dims) else None
    if call.base in _DTYPE_SECOND and len(call.dims) == 2:
        asked = scalar_type(call.text(1))
    if asked:
        return asked
    widens = call.base in ("sum", "nansum", "prod", "cumsum", "cumprod")
    return "long int" if widens and CATEGORY[x.dtype] < 2 else x.dtype


def reduction(call: Call) -> Optional[Work]:
    """A reduction or scan of `SPECS` over argument 0."""
    spec, x = SPECS[call.base], call.arg(0)
    if x is None:
        return None
    if spec.kind == "scan":
        out_numel = x.numel
    else:
        reduced = _reduced(call, spec, x)
        if reduced is None:
            return None
        out_numel = math.prod(d for i, d in enumerate(x.dims) if i not in reduced)
    out_bytes = out_numel * DTYPE_BYTES[_out_dtype(call, spec, x)]
    if spec.kind == "pair":
        out_bytes *= 2
    elif spec.kind == "indices" and spec.dim < len(call.dims) and call.text(spec.dim).strip():
        out_bytes += out_numel * 8  # the int64 indices of max(x, dim)
    return Work(REDUCE, float(x.numel), float(x.nbytes + out_bytes), vector_dtype([x]))


MODELS = {name: reduction for name in SPECS}
