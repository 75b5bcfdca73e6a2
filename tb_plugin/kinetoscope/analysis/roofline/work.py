"""The work of one op call: the floating-point operations it performs and the bytes it must move, from what
`record_shapes=True` writes on the op (`Input Dims`, `Input type`, `Input Strides`, `Concrete Inputs`), derived from
each op's definition. One module per family says how:

- `gemm`: mm, addmm, bmm, baddbmm, matmul, linear, `_scaled_mm` (fp8), `_int_mm` and vendor GEMMs;
- `conv`: convolution forward (every ATen, cuDNN, MIOpen and oneDNN spelling) and `convolution_backward`;
- `attention`: scaled-dot-product attention (math, flash, efficient, cuDNN; causal; grouped-query), the flash
  library's ops, their backward, and the varlen/paged inference forms where the arguments fix the sequence lengths;
- `norm`: layer, group, batch and RMS norm (ATen and the fused kernels of vLLM, SGLang, aiter), softmax, backward;
- `pointwise`: elementwise ops with broadcasting and PyTorch's type promotion, fused activation-and-multiply, RoPE,
  nearest upsampling;
- `reduce`: reductions and scans; `movement`: copies, fills, padding, cat, indexing, embedding, KV-cache writes;
- `triton`: the Triton kernels of torch.compile, from their launch records.

`op_work` answers None for an op it has no model for, or whose recorded inputs do not fit the model (no shapes: a
trace without `record_shapes`; a malformed record); the callers count those as unmodelled. `category_of` names the
family of any op name, modelled or not.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

from . import attention, conv, gemm, movement, norm, pointwise, reduce, triton
from .pointwise import result_dtype
from .record import (
    ATTENTION,
    CATEGORIES,
    COMMUNICATION,
    CONV,
    COPY,
    DTYPE_BYTES,
    ELEMENTWISE,
    GEMM,
    NORM,
    OTHER,
    REDUCE,
    Call,
    Tensor,
    Work,
    base_name,
    read_call,
    tensors,
)

__all__ = ["ATTENTION", "CATEGORIES", "COMMUNICATION", "CONV", "COPY", "DTYPE_BYTES", "ELEMENTWISE", "GEMM", "NORM",
           "OTHER", "REDUCE", "Tensor", "Work", "category_of", "has_model", "op_work", "result_dtype", "tensors"]

Model = Callable[[Call], Optional[Work]]
FAMILIES: tuple[tuple[str, dict[str, Model]], ...] = (
    (GEMM, {**gemm.MODELS, "_addmm_activation": gemm.addmm}), (CONV, conv.MODELS), (ATTENTION, attention.MODELS),
    (NORM, norm.MODELS), (ELEMENTWISE, pointwise.MODELS), (REDUCE, reduce.MODELS), (COPY, movement.MODELS),
)
MODELS: dict[str, Model] = {name: model for _, models in FAMILIES for name, model in models.items()}
FAMILY_OF: dict[str, str] = {name: family for family, models in FAMILIES for name in models}
# ATen op names without a model whose family is still plain
CATEGORY_ONLY = {
    **dict.fromkeys(("full", "zeros", "ones", "arange", "linspace", "full_like", "zeros_like", "ones_like",
                     "scalar_tensor", "new_zeros", "new_ones", "new_full", "masked_select", "masked_scatter", "index",
                     "index_put", "_index_put_impl", "index_add", "index_copy", "index_fill", "scatter", "scatter_add",
                     "scatter_reduce", "_cat", "repeat_interleave", "take", "put", "tril", "triu", "unfold_copy"),
                    COPY),
    **dict.fromkeys(("random", "normal", "uniform", "bernoulli", "exponential", "randn", "rand", "randint",
                     "randperm", "multinomial", "native_dropout", "dropout", "_fused_adam", "_fused_adamw",
                     "_fused_sgd", "bucketize"), ELEMENTWISE),
    **dict.fromkeys(("nonzero", "topk", "sort", "argsort", "unique", "_unique2", "kthvalue", "median", "mode",
                     "searchsorted", "bincount", "histc", "max_pool1d", "max_pool2d", "max_pool3d",
                     "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d",
                     "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "_adaptive_avg_pool2d",
                     "adaptive_max_pool2d", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss",
                     "nll_loss_nd", "nll_loss_forward", "nll_loss2d_forward", "cross_entropy_loss",
                     "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"), REDUCE),
    **dict.fromkeys(("einsum", "addmv", "mv", "dot", "vdot", "addbmm", "addr", "outer", "tensordot", "bilinear"),
                    GEMM),
}
# words of a custom op's name (`namespace::op`, not ATen), tried in this order
KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (COMMUNICATION, ("nccl", "rccl", "gloo", "c10d", "all_reduce", "allreduce", "all_gather", "allgather",
                     "reduce_scatter", "all_to_all", "alltoall", "multimem")),
    (ATTENTION, ("attention", "attn", "mha_", "fmha", "sdpa", "flash")),
    (CONV, ("conv1d", "conv2d", "conv3d", "convolution", "conv_")),
    (NORM, ("rmsnorm", "rms_norm", "layernorm", "layer_norm", "groupnorm", "group_norm", "batch_norm", "batchnorm",
            "instance_norm", "softmax")),
    (ELEMENTWISE, ("upsample", "interpolate", "grid_sampler", "rotary", "rope")),
    (GEMM, ("gemm", "matmul", "_mm", "moe", "bmm", "_linear")),
    (ELEMENTWISE, ("_and_mul", "quant", "dropout", "activation", "silu", "gelu")),
    (COPY, ("cache", "kv_buffer", "copy", "index", "gather", "scatter", "embedding", "pad", "cat", "fill")),
    (REDUCE, ("sum", "topk", "sort", "argmax", "argmin", "cumsum", "reduce", "pool1d", "pool2d", "pool3d")),
)
_COMMUNICATION_NAMES = ("nccl", "rccl", "gloo", "record_param_comms")
# errors a malformed record can still raise deep in a model (a huge value, a mismatched list): answered None
_RECORD_ERRORS = (ValueError, TypeError, IndexError, KeyError, OverflowError, ZeroDivisionError)


def op_work(name: str, dims: Any, types: Any, strides: Any = None, concrete: Any = None) -> Optional[Work]:
    """The work of one call of op `name` with these recorded inputs, or None without a model for it.

    Args:
        name: the op's name as recorded (`aten::addmm`, `aiter::rmsnorm`, `triton_poi_fused_add_0`).
        dims: `Input Dims`, decoded JSON: a list per argument (`[]` for a non-tensor).
        types: `Input type`: a dtype spelling per argument (`c10::BFloat16`, `float`, `Scalar`, `''`...).
        strides: `Input Strides`, shaped like `dims`, or None.
        concrete: `Concrete Inputs`: a string per argument (`'[1, 1]'`, `'True'`, `''`), or None.

    Returns:
        The call's Work, or None for an op without a model or a record that does not fit it. Never raises.
    """
    call = read_call(name, dims, types, strides, concrete)
    if call is None:
        return None
    model = _model_for(call)
    try:
        work = model(call) if model is not None else None
    except _RECORD_ERRORS:
        return None
    if work is None or not (math.isfinite(work.flops) and math.isfinite(work.bytes)):
        return None
    return work


def has_model(name: str) -> bool:
    """Whether a model covers op `name` at all (its recorded inputs may still not fit it): a test by name alone,
    for the callers that look at many ops a kernel may count under."""
    if not isinstance(name, str):
        return False
    base = base_name(name)
    if name.startswith("triton_") or base in MODELS or base in ("max", "min"):
        return True
    return _vendor_gemm(name, base.lower())


def _vendor_gemm(name: str, lowered: str) -> bool:
    return "gemm" in lowered and "::" in name and not name.startswith("aten::") and \
        not any(word in lowered for word in ("grouped", "moe", "batched"))


def _model_for(call: Call) -> Optional[Model]:
    if call.name.startswith("triton_"):
        return triton.triton_kernel
    if call.base in ("max", "min") and call.arg(1) is not None:
        return pointwise.elementwise  # max(a, b): elementwise maximum
    model = MODELS.get(call.base)
    if model is not None:
        return model
    return gemm.vendor_gemm if _vendor_gemm(call.name, call.base.lower()) else None


def category_of(name: str) -> str:
    """The family an op name belongs to, whether or not its inputs fit a model: "aten::conv2d" is "conv" without
    shapes; NCCL, c10d and Gloo collectives are "communication"; an unknown name is "other"."""
    if not isinstance(name, str):
        return OTHER
    lowered = name.lower()
    if lowered.startswith("triton_"):
        return {"poi_": ELEMENTWISE, "red_": REDUCE, "per_": REDUCE, "tem_": GEMM}.get(lowered[7:11], OTHER)
    if any(word in lowered for word in _COMMUNICATION_NAMES):
        return COMMUNICATION
    base = base_name(name)
    if name.startswith("aten::"):
        return _aten_category(base)
    if base in FAMILY_OF:  # a modelled custom op: sglang::store_cache, sgl_kernel::rotary_embedding
        return FAMILY_OF[base]
    if "::" in name:
        words = base.lower()
        for category, needles in KEYWORDS:
            if any(needle in words for needle in needles):
                return category
    return OTHER


def _aten_category(base: str) -> str:
    """An ATen op's family by its name: a model's, a listed one's, a backward op's forward's."""
    stem = base.rstrip("_")
    family = FAMILY_OF.get(base) or FAMILY_OF.get(stem) or CATEGORY_ONLY.get(stem)
    if family is not None:
        return family
    if stem.startswith("_foreach_"):  # the optimizer's multi-tensor kernels
        return COPY if "copy" in stem else ELEMENTWISE
    if "conv" in stem and "convert" not in stem:  # cudnn_convolution_backward_input, slow_conv2d_forward, ...
        return CONV
    if "_backward" in stem:  # gather_backward: the family of gather
        return _aten_category(stem.split("_backward", 1)[0])
    return OTHER
