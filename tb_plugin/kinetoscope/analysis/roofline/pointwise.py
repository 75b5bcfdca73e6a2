"""The work of elementwise ops: one output element from the elements at the same place of their inputs.

- ATen elementwise ops (unary, binary, ternary, comparisons, activations and their backward): one operation per
  output element whatever the function, the usual count for these kernels (a transcendental's cost depends on the
  library; these ops are bound by memory, not arithmetic). Bytes: every tensor input read once (a 0-dim tensor is
  one element of its dtype; a broadcast view, stride 0, only its stored elements; a `Scalar` argument is no tensor)
  and the output written once. The output's shape is the inputs' broadcast shape; its dtype PyTorch's promotion of
  the inputs (`result_dtype`: a 0-dim `double` does not widen a bf16 tensor), `bool` for comparisons, float for true
  division and for the floating functions of integers; in-place ops (`add_`) write their first input at its own
  dtype. The arithmetic runs at float for half, bfloat16 and float (`vector_dtype`), double for double.
- Fused activation-and-multiply kernels (`silu_and_mul(out, input)` of vLLM, SGLang and aiter: `out = act(x) * y`
  with `input = [x, y]` along the last dim): the activation counted by its arithmetic, as these fused kernels
  usually are: silu `x / (1 + exp(-x))` is 4 (neg, exp, add, div), gelu (erf form `0.5·x·(1 + erf(x/√2))`) 5, gelu
  (tanh form `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`) 9, plus the multiply: 5, 6 and 10 per output element.
  Bytes: the input read, the output written.
- Rotary embedding (`rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox)`): each rotated
  pair `(x1, x2)` becomes `(x1·cos - x2·sin, x2·cos + x1·sin)`: 3 operations per element over the first `rot_dim`
  (the cache's width) of every query and key head, done in place. Bytes: those elements read and written, the
  positions and each token's cache row (`rot_dim` cos and sin values) read.
- `upsample_nearest{1,2,3}d(input, output_size, scale_factors)`: one (index) operation per output element; the
  output's size is `output_size`, or `floor(in · scale)`; bytes: the input read, the output written.
"""
from __future__ import annotations

import math
from typing import Optional

from .record import CATEGORY, DTYPE_BYTES, ELEMENTWISE, Call, Tensor, Work, as_ints, broadcast, vector_dtype

BINARY = {"add", "sub", "mul", "div", "rsub", "true_divide", "floor_divide", "remainder", "fmod", "maximum", "minimum",
          "fmax", "fmin", "pow", "atan2", "hypot", "copysign", "bitwise_and", "bitwise_or", "bitwise_xor",
          "bitwise_left_shift", "bitwise_right_shift", "logical_and", "logical_or", "logical_xor", "where", "addcmul",
          "addcdiv", "lerp", "masked_fill", "clamp", "clip", "clamp_min", "clamp_max", "xlogy", "float_power",
          "heaviside", "nextafter", "ldexp", "logaddexp", "logaddexp2"}
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge", "isclose", "isnan", "isinf", "isfinite", "isneginf", "isposinf",
               "signbit"}
UNARY = {"neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sigmoid", "silu", "gelu",
         "relu", "tanh", "abs", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
         "atanh", "reciprocal", "erf", "erfc", "erfinv", "sign", "floor", "ceil", "round", "trunc", "frac",
         "hardtanh", "hardswish", "hardsigmoid", "leaky_relu", "elu", "selu", "celu", "softplus", "softshrink",
         "hardshrink", "mish", "logit", "logical_not", "bitwise_not", "square", "relu6", "threshold", "nan_to_num",
         "digamma", "lgamma", "sinc", "sgn", "bucketize"}
# the gradient of an activation: (grad_output, input or output, ...) -> grad_input, one operation per element
ACTIVATION_BACKWARD = {"gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward", "threshold_backward",
                       "hardtanh_backward", "leaky_relu_backward", "elu_backward", "softplus_backward",
                       "hardswish_backward", "hardsigmoid_backward", "mish_backward", "log_sigmoid_backward"}
# ops whose result is floating even for integer inputs
FLOATING_RESULT = {"div", "true_divide", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                   "sigmoid", "tanh", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
                   "atanh", "reciprocal", "erf", "erfc", "erfinv", "atan2", "hypot", "logit", "float_power", "lerp",
                   "xlogy", "digamma", "lgamma", "sinc"}
ELEMENTWISE_OPS = BINARY | COMPARISONS | UNARY | ACTIVATION_BACKWARD
# per output element: the activation's arithmetic and the multiply (module docstring)
ACT_AND_MUL = {"silu_and_mul": 5.0, "gelu_and_mul": 6.0, "gelu_tanh_and_mul": 10.0, "gelu_fast_and_mul": 10.0,
               "gelu_new_and_mul": 10.0, "act_and_mul": 5.0}


def result_dtype(inputs: list[Tensor]) -> str:
    """PyTorch's type promotion of tensor operands: the dimensioned tensors decide, a 0-dim one only where its
    category (bool < integral < floating < complex) is higher; inside a category the wider dtype wins, and half
    with bfloat16 gives float."""
    with_dims = [t.dtype for t in inputs if t.dims]
    zero_dim = [t.dtype for t in inputs if not t.dims]
    chosen = _promote(with_dims) if with_dims else _promote(zero_dim)
    higher = [d for d in zero_dim if CATEGORY[d] > CATEGORY[chosen]]
    return _promote([chosen, *higher]) if higher else chosen


def _promote(dtypes: list[str]) -> str:
    top = max(CATEGORY[d] for d in dtypes)
    same = {d for d in dtypes if CATEGORY[d] == top}
    if same == {"c10::Half", "c10::BFloat16"}:
        return "float"
    return max(sorted(same), key=lambda d: DTYPE_BYTES[d])


def _out_dtype(call: Call, inputs: list[Tensor]) -> str:
    if call.base in COMPARISONS:
        return "bool"
    if call.inplace:
        return inputs[0].dtype
    operands = [t for t in inputs if t.dtype != "bool"] if call.base in ("where", "masked_fill") else inputs
    dtype = result_dtype(operands or inputs)
    return "float" if call.base in FLOATING_RESULT and CATEGORY[dtype] < 2 else dtype


def elementwise(call: Call) -> Optional[Work]:
    """An ATen elementwise op of `ELEMENTWISE_OPS`."""
    inputs = call.present()
    if not inputs:
        return None
    shape = broadcast([t.dims for t in inputs])
    if shape is None:
        return None
    numel = math.prod(shape)
    moved = sum(t.nbytes for t in inputs) + numel * DTYPE_BYTES[_out_dtype(call, inputs)]
    return Work(ELEMENTWISE, float(numel), float(moved), vector_dtype(inputs))


def act_and_mul(call: Call) -> Optional[Work]:
    """`act_and_mul(out[..., d], input[..., 2d])`: `out = act(input[..., :d]) * input[..., d:]`."""
    out, x = call.arg(0), call.arg(1)
    if out is None or x is None or not out.dims or x.dims != (*out.dims[:-1], 2 * out.dims[-1]):
        return None
    flops = ACT_AND_MUL[call.base] * out.numel
    return Work(ELEMENTWISE, flops, float(x.nbytes + out.numel * out.itemsize), vector_dtype([x]))


def rotary_embedding(call: Call) -> Optional[Work]:
    """`rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox)`, in place on query and key."""
    positions, query, key, cache = call.arg(0), call.arg(1), call.arg(2), call.arg(4)
    head_size = as_ints(call.text(3))
    if positions is None or query is None or cache is None or len(cache.dims) != 2 or not head_size or \
            head_size[0] < 1 or cache.dims[1] > head_size[0] or not positions.dims:
        return None
    rot_dim, tokens = cache.dims[1], positions.numel
    rotated = 0
    for t in (query, key):
        if t is not None:
            if t.numel % (tokens * head_size[0]):
                return None
            rotated += t.numel // head_size[0] * rot_dim
    moved = 2 * rotated * query.itemsize + positions.nbytes + tokens * rot_dim * cache.itemsize
    return Work(ELEMENTWISE, 3.0 * rotated, float(moved), vector_dtype([query]))


def upsample_nearest(call: Call) -> Optional[Work]:
    """`upsample_nearest{1,2,3}d(input, output_size, scale_factors)` on `[N, C, *spatial]`."""
    x = call.arg(0)
    rank = {"upsample_nearest1d": 1, "upsample_nearest2d": 2, "upsample_nearest3d": 3}[call.base]
    if x is None or len(x.dims) != rank + 2:
        return None
    sizes = as_ints(call.text(1))
    if sizes is None:
        scales = _floats(call.text(2))
        if scales is None or len(scales) != rank or min(scales) <= 0:
            return None
        sizes = [int(math.floor(d * s)) for d, s in zip(x.dims[2:], scales)]
    if len(sizes) != rank or min(sizes) < 0:
        return None
    out_numel = math.prod((*x.dims[:2], *sizes))
    return Work(ELEMENTWISE, float(out_numel), float(x.nbytes + out_numel * x.itemsize), vector_dtype([x]))


def _floats(text: str) -> Optional[list[float]]:
    """`[2., 2.]` (a float list as recorded) as a list of finite floats; None for anything else."""
    text = text.strip()
    if not text.startswith("[") or not text.endswith("]") or len(text) > 200:
        return None
    try:
        values = [float(part) for part in text[1:-1].split(",")]
    except ValueError:
        return None
    return values if all(math.isfinite(v) and v < 2**20 for v in values) else None


MODELS = {**{name: elementwise for name in ELEMENTWISE_OPS}, **{name: act_and_mul for name in ACT_AND_MUL},
          "rotary_embedding": rotary_embedding, "upsample_nearest1d": upsample_nearest,
          "upsample_nearest2d": upsample_nearest, "upsample_nearest3d": upsample_nearest}
