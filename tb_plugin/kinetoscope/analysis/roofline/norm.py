"""The work of normalizations and softmax: `layer_norm`, `group_norm`, `batch_norm`, RMSNorm (ATen's and the fused
kernels of vLLM, SGLang and aiter), `softmax`, `log_softmax`, and the backward of the first three.

Mean-and-variance norms (layer, group, batch norm in training): 5 operations per element, 3 for the statistics
(`Σx`, and `Σx²` as a multiply and an add: the one-pass form) and 2 for the output as one multiply-add `y = x·a + b`
with the scale `a = γ·rstd` and shift `b = β - μ·a`, plus 6 per channel to form them (`rstd = 1/sqrt(var + eps)`:
3; `a`: 1; `b`: 2). Batch norm in eval uses its running statistics: 2 per element and 6 per channel. The channels
are the normalized shape's elements for layer norm and `C` (dim 1) for group and batch norm. (Where γ and β act
per element of a row, as in layer norm, a kernel cannot fold them into one multiply-add with the row's statistics:
it does 2 more per element. The count here keeps the one form for every norm, which TraceLens uses too, so that the
figures compare; these ops are bound by memory, where the count does not place them.)

RMSNorm: `y = x · rsqrt(mean(x²) + eps) · w`: 4 per element (the square and add of `Σx²`, the two multiplies; 3
without a weight) and 3 per row (the mean's scale, the eps, the rsqrt); the fused residual forms (`fused_add_rms_norm`,
`add_rmsnorm`, `rmsnorm2d_fwd_with_add`) add `x + residual` first: 5 per element.

Softmax: 5 per element (the max, the subtract and exp, the sum, the scale by `1/sum`); its backward `dx = y·(dy -
Σ dy·y)` 4 (log-softmax's `dx = dy - exp(y)·Σdy` likewise). Norm backward (`native_layer_norm_backward`,
`native_group_norm_backward`, `native_batch_norm_backward`, per their `output_mask`): `x̂ = (x - μ)·rstd` again (2 per
element), the input gradient `dx = rstd·(g - mean(g) - x̂·mean(g·x̂))` with `g = dy·γ` (8), the weight gradient
`Σ dy·x̂` (2), the bias gradient `Σ dy` (1).

Bytes: the input read and the output written at the input's dtype (softmax at its `dtype`, or float for
`half_to_float`), every weight, bias and statistics tensor read once, and the statistics a norm returns written (the
float mean and rstd per row or group; batch norm's saved mean and invstd and its updated running statistics per
channel); RMSNorm's fused residual forms read `x` and the residual and write both the output and the new residual.
The arithmetic runs at float (double for double): vector work.
"""
from __future__ import annotations

import math
from typing import Optional

from .record import DTYPE_BYTES, NORM, Call, Tensor, Work, as_bool, as_bools, as_int, as_ints, scalar_type, vector_dtype

_PER_CHANNEL = 6  # rstd 3, scale 1, shift 2 (module docstring)


def _acc_itemsize(x: Tensor) -> int:
    """The statistics' dtype: float, or double for double input."""
    return 8 if x.dtype == "double" else 4


def _work(x: Tensor, flops: float, read: list[Optional[Tensor]], written: int) -> Work:
    moved = x.nbytes + sum(t.nbytes for t in read if t is not None) + x.numel * x.itemsize + written
    return Work(NORM, flops, float(moved), vector_dtype([x]))


def _normalized(call: Call, x: Tensor, at: int, weight: Optional[Tensor]) -> Optional[int]:
    """The elements of the normalized shape (the trailing dims of x), from `normalized_shape` or the weight."""
    shape = as_ints(call.text(at)) or (list(weight.dims) if weight is not None else None)
    if not shape or len(shape) > len(x.dims) or tuple(shape) != x.dims[len(x.dims) - len(shape):]:
        return None
    return math.prod(shape)


def layer_norm(call: Call) -> Optional[Work]:
    """`layer_norm(x, normalized_shape, weight, bias, eps, ...)`, `native_layer_norm` (same leading arguments)."""
    x, weight, bias = call.arg(0), call.arg(2), call.arg(3)
    channels = _normalized(call, x, 1, weight) if x is not None else None
    if not channels:
        return None
    rows = x.numel // channels
    flops = 5.0 * x.numel + _PER_CHANNEL * channels
    return _work(x, flops, [weight, bias], 2 * rows * _acc_itemsize(x))


def group_norm(call: Call) -> Optional[Work]:
    """`group_norm(x, num_groups, weight, bias, eps, ...)` (and aiter's `_groupnorm_run` alike),
    `native_group_norm(x, weight, bias, N, C, HxW, group, eps)`."""
    x = call.arg(0)
    native = call.base == "native_group_norm"
    weight, bias = (call.arg(1), call.arg(2)) if native else (call.arg(2), call.arg(3))
    groups = as_int(call.text(6 if native else 1))
    if x is None or len(x.dims) < 2 or not groups or groups < 1 or x.dims[1] % groups:
        return None
    flops = 5.0 * x.numel + _PER_CHANNEL * x.dims[1]
    return _work(x, flops, [weight, bias], 2 * x.dims[0] * groups * _acc_itemsize(x))


def batch_norm(call: Call) -> Optional[Work]:
    """`batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps, ...)` and its native,
    cudnn, miopen and `_native_batch_norm_legit[_no_training]` forms (same leading arguments)."""
    x, weight, bias, mean, var = (call.arg(i) for i in range(5))
    training = False if call.base.endswith("_no_training") else as_bool(call.text(5))
    if x is None or len(x.dims) < 2 or training is None:
        return None
    channels = x.dims[1]
    if not training:
        return _work(x, 2.0 * x.numel + _PER_CHANNEL * channels, [weight, bias, mean, var], 0)
    running = sum(t.nbytes for t in (mean, var) if t is not None)  # read, then updated
    saved = 2 * channels * _acc_itemsize(x)
    return _work(x, 5.0 * x.numel + _PER_CHANNEL * channels, [weight, bias, mean, var], running + saved)


def rms_norm(call: Call) -> Optional[Work]:
    """`rms_norm(x, normalized_shape, weight, eps)` (ATen), or a fused kernel: its weight the last 1-d tensor, its
    data the tensors shaped like x (`(out, input, weight, eps)`, `(input, weight, eps)`, in place `(input,
    residual, weight, eps)`, `(out, input, residual_in, residual_out, weight, eps)`)."""
    if call.base in ("rms_norm", "_fused_rms_norm") and call.name.startswith("aten::"):
        x, weight = call.arg(0), call.arg(2)
        channels = _normalized(call, x, 1, weight) if x is not None else None
        data = [x] if channels else []
    else:
        weight = next((t for t in reversed(call.present()) if len(t.dims) == 1), None)
        channels = weight.dims[0] if weight is not None else None
        data = [t for t in call.present() if t is not weight and t.dims and t.dims[-1] == channels]
    if not data or not channels or any(t.dims != data[0].dims for t in data):
        return None
    x, residual = data[0], "add" in call.base
    rows = x.numel // channels
    flops = (4.0 + residual - (weight is None)) * x.numel + 3.0 * rows
    moved = x.nbytes * (4 if residual else 2) + (weight.nbytes if weight is not None else 0)
    return Work(NORM, flops, float(moved), vector_dtype([x]))


def softmax(call: Call) -> Optional[Work]:
    """`softmax(x, dim, dtype)`, `_softmax(x, dim, half_to_float)` and the log forms."""
    x, dim = call.arg(0), as_int(call.text(1))
    if x is None or dim is None or not -max(len(x.dims), 1) <= dim < max(len(x.dims), 1):
        return None
    if call.base.startswith("_"):
        out = "float" if as_bool(call.text(2)) else x.dtype
    else:
        out = scalar_type(call.text(2)) or x.dtype
    moved = x.nbytes + x.numel * DTYPE_BYTES[out]
    return Work(NORM, 5.0 * x.numel, float(moved), vector_dtype([x]))


def softmax_backward(call: Call) -> Optional[Work]:
    """`_softmax_backward_data(grad_output, output, dim, input_dtype)` and the log form."""
    grad, out = call.arg(0), call.arg(1)
    if grad is None or out is None or grad.dims != out.dims:
        return None
    written = grad.numel * DTYPE_BYTES[scalar_type(call.text(3)) or grad.dtype]
    return Work(NORM, 4.0 * grad.numel, float(grad.nbytes + out.nbytes + written), vector_dtype([grad]))


# mask, weight and channels of each norm backward: (index of output_mask, of weight, of normalized_shape or -1)
_BACKWARD = {"native_layer_norm_backward": (7, 5, 2), "native_group_norm_backward": (9, 4, -1),
             "native_batch_norm_backward": (9, 2, -1)}


def norm_backward(call: Call) -> Optional[Work]:
    """The input, weight and bias gradients of a norm, as its `output_mask` asks (all, where not recorded)."""
    mask_at, weight_at, shape_at = _BACKWARD[call.base]
    grad, x, weight = call.arg(0), call.arg(1), call.arg(weight_at)
    mask = as_bools(call.text(mask_at)) or [True, True, True]
    if grad is None or x is None or grad.dims != x.dims or len(mask) != 3 or len(x.dims) < 2:
        return None
    channels = _normalized(call, x, shape_at, weight) if shape_at >= 0 else x.dims[1]
    if not channels:
        return None
    flops = x.numel * (2.0 + 8 * mask[0] + 2 * mask[1] + mask[2])
    read = sum(t.nbytes for t in call.present())
    param_itemsize = weight.itemsize if weight is not None else x.itemsize
    written = x.numel * x.itemsize * mask[0] + channels * param_itemsize * (mask[1] + mask[2])
    return Work(NORM, flops, float(read + written), vector_dtype([x]))


MODELS = {
    "layer_norm": layer_norm, "native_layer_norm": layer_norm, "group_norm": group_norm,
    "native_group_norm": group_norm, "_groupnorm_run": group_norm, "batch_norm": batch_norm,
    "native_batch_norm": batch_norm, "cudnn_batch_norm": batch_norm, "miopen_batch_norm": batch_norm,
    "_native_batch_norm_legit": batch_norm, "_native_batch_norm_legit_no_training": batch_norm,
    "_batch_norm_impl_index": batch_norm, "softmax": softmax, "_softmax": softmax, "log_softmax": softmax,
    "_log_softmax": softmax, "_softmax_backward_data": softmax_backward,
    "_log_softmax_backward_data": softmax_backward, **{name: norm_backward for name in _BACKWARD},
}
RMS_NORMS = {"rms_norm", "_fused_rms_norm", "rmsnorm", "rmsnorm2d_fwd", "rmsnorm2d_fwd_with_add",
             "rmsnorm2d_fwd_with_add_ck", "add_rmsnorm", "fused_add_rms_norm", "fused_add_rmsnorm",
             "rocm_aiter_rms_norm", "rocm_aiter_rmsnorm2d_fwd_with_add", "gemma_rmsnorm", "gemma_fused_add_rmsnorm"}
MODELS.update({name: rms_norm for name in RMS_NORMS})
