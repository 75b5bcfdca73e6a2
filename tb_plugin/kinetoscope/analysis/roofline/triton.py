"""The work of the Triton kernels torch.compile (Inductor) generates, from the record of their launch: Inductor
launches each kernel inside a record_function named after it (`triton_poi_fused_add_mul_0`), whose `Input Dims` and
`Input type` are the kernel's tensor arguments (inputs and outputs) and whose `Concrete Inputs` end with its loop
sizes: `xnumel` for a pointwise kernel (`poi`), `xnumel, rnumel` for a reduction (`red`, and `per`, the persistent
one). The name lists the ATen ops fused (alphabetically, joined by `_`) and a counter.

The kernel's source is not in the trace, so the work is an estimate from the name and the sizes:

- Operations: every fused op counted once per loop element (`xnumel · rnumel`) at a per-element weight, the
  estimates TraceLens's Triton model uses (so that the figures compare): 1 for add, sub, mul, div, neg, abs, relu,
  mean, sum and the comparisons; 2 for pow, sqrt, rsqrt, reciprocal and var; 4 for exp, log, sigmoid, tanh and silu;
  8 for gelu. Any other op counts 0: views and copies (`_to_copy`, `clone`, `cat`, `view`...), which are no
  arithmetic, and the ops whose own weight is not estimated (`addmm`'s fused bias, `native_layer_norm`, `amax`,
  `cos`, `sin`): an undercount for those kernels, kept for the comparison.
- Bytes: every tensor argument read or written once (a broadcast view only for its stored elements), and for a
  pointwise kernel one more write of `xnumel` elements at the first argument's dtype: Inductor puts a buffer it
  updates in place (`in_out_ptr0`) first, and that buffer is both read and written. (A kernel whose outputs are all
  separate arguments is overcounted by that write; the launch record does not say which kind it is.)

The arithmetic runs at float (Inductor computes half and bfloat16 in float), double for double: vector work.
Kernels named without their ops (`triton_0`, when unique kernel names are off) and templates (`triton_tem_`: a GEMM
with an epilogue, whose shapes the launch does not give) have no model.
"""
from __future__ import annotations

import re
from typing import Optional

from .record import COPY, ELEMENTWISE, REDUCE, Call, Work, as_int, vector_dtype

_NAME = re.compile(r"^triton_(poi|red|per)_fused(?:_(.*?))?_(\d+)$")
WEIGHTS = {
    **dict.fromkeys(("add", "sub", "mul", "div", "neg", "abs", "relu", "mean", "sum", "eq", "ne", "lt", "gt"), 1),
    **dict.fromkeys(("pow", "sqrt", "rsqrt", "reciprocal", "var"), 2),
    **dict.fromkeys(("exp", "log", "sigmoid", "tanh", "silu"), 4),
    "gelu": 8,
}
# ATen op names of several `_`-joined words that can appear in a kernel name, so that e.g. `var_mean` or
# `gelu_backward` is not read as `var` and `mean` or `gelu`
_COMPOUND = {
    "_to_copy", "_unsafe_view", "native_layer_norm", "native_group_norm", "native_batch_norm",
    "_native_batch_norm_legit", "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
    "native_dropout", "empty_like", "zeros_like", "ones_like", "full_like", "new_zeros", "new_ones", "new_empty",
    "new_full", "empty_strided", "constant_pad_nd", "index_select", "index_add", "index_put", "index_copy",
    "scatter_add", "scatter_reduce", "masked_fill", "masked_scatter", "select_scatter", "slice_scatter",
    "as_strided", "as_strided_scatter", "var_mean", "std_mean", "log_softmax", "_log_softmax", "_softmax",
    "log_sigmoid_forward", "leaky_relu", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "logical_and",
    "logical_or", "logical_xor", "logical_not", "clamp_min", "clamp_max", "split_with_sizes", "unsafe_split",
    "nan_to_num", "scalar_tensor", "lift_fresh", "lift_fresh_copy", "_scaled_dot_product_flash_attention",
    "embedding_dense_backward", "max_pool2d_with_indices", "avg_pool2d", "_adaptive_avg_pool2d", "upsample_nearest2d",
    "upsample_bilinear2d", "unsafe_view", "float_power", "true_divide", "floor_divide", "_softmax_backward_data",
    "_log_softmax_backward_data", "moe_forward", "rms_norm", "_fused_rms_norm", "fused_moe", "all_reduce",
    "all_gather", "reduce_scatter", "all_to_all_single", "sym_size", "_local_scalar_dense", "tensor_split",
}
_LONGEST = max(len(name.split("_")) for name in _COMPOUND)


def fused_ops(name: str) -> Optional[list[str]]:
    """The ATen ops a kernel name lists (`triton_red_fused_add_mean_mul_pow_rsqrt_0`: add, mean, mul, pow,
    rsqrt), or None for a name of no fused Triton kernel. `X_backward` (and `X_backward_data`) is one op."""
    match = _NAME.match(name)
    if match is None:
        return None
    tokens = (match.group(2) or "").split("_")
    ops, i = [], 0
    while i < len(tokens):
        step = next((n for n in range(min(_LONGEST, len(tokens) - i), 1, -1)
                     if "_".join(tokens[i:i + n]) in _COMPOUND), 1)
        if i + step < len(tokens) and tokens[i + step] == "backward":
            step += 1 + (i + step + 1 < len(tokens) and tokens[i + step + 1] == "data")  # gelu_backward: one op
        op = "_".join(tokens[i:i + step])
        if op:
            ops.append(op)
        i += step
    return ops


def _loop_sizes(call: Call, reduction: bool) -> Optional[tuple[int, int]]:
    """`xnumel` (and `rnumel` for a reduction): the last integer concrete inputs."""
    sizes = [v for v in (as_int(call.text(i)) for i in range(len(call.concrete))) if v is not None]
    if reduction:
        return (sizes[-2], sizes[-1]) if len(sizes) >= 2 and min(sizes[-2:]) >= 0 else None
    return (sizes[-1], 1) if sizes and sizes[-1] >= 0 else None


def triton_kernel(call: Call) -> Optional[Work]:
    """A `triton_poi_`, `triton_red_` or `triton_per_` kernel of Inductor."""
    ops = fused_ops(call.name)
    kind = call.name[7:10]
    sizes = _loop_sizes(call, kind != "poi") if ops is not None else None
    tensors = call.present()
    if sizes is None or not tensors:
        return None
    elements = sizes[0] * sizes[1]
    flops = float(sum(WEIGHTS.get(op, 0) for op in ops) * elements)
    moved = sum(t.nbytes for t in tensors) + (sizes[0] * tensors[0].itemsize if kind == "poi" else 0)
    category = REDUCE if kind != "poi" else ELEMENTWISE if flops else COPY
    return Work(category, flops, float(moved), vector_dtype(tensors))
