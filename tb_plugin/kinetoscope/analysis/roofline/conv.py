"""The work of convolutions, forward and backward.

A convolution's weight is `[C_out, C_in/groups, k...]`; each output element sums `C_in/groups · prod(k)` products,
so the forward pass is `2 · numel(out) · prod(w.dims[1:])` operations (padding's zeros included, as every kernel
multiplies them), plus one per output element for a bias. A transposed convolution (weight `[C_in, C_out/groups,
k...]`) scatters each input element over `prod(w.dims[1:])` outputs: `2 · numel(x) · prod(w.dims[1:])`. The output's
spatial size is `floor((in + 2·pad - dil·(k-1) - 1) / stride) + 1`, or `(in-1)·stride - 2·pad + dil·(k-1) +
output_padding + 1` transposed; `padding='same'` keeps the input's size, `'valid'` is no padding. Bytes: input,
weight and bias read once, the output written once, at the input's dtype.

`convolution_backward(grad_out, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
groups, output_mask)`: each gradient the mask asks for is one pass of the forward's products: the input gradient
(reads the weight, writes `dx`) and the weight gradient (reads the input, writes `dW`) `2 · products` each, the bias
gradient one add per element of `grad_out`; `grad_out` is read once.

The arithmetic runs on matrix units at the input's dtype; float runs as TF32 where the op records
`allow_tf32=True` (`_convolution`, `cudnn_convolution`) or has no such argument and so takes PyTorch's default
(`torch.backends.cudnn.allow_tf32` is True), and as fp32 on MIOpen and oneDNN, which have no TF32 path.
Without Concrete Inputs (older profilers) stride and padding are unknown: no model.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

from .record import CONV, MATRIX_DTYPES, Call, Tensor, Work, as_bool, as_bools, as_int, as_ints


class Layout(NamedTuple):
    """Where each argument of one convolution op sits (-1: the op has none); `transposed` is an index, or -1 with
    `fixed_transposed` saying which kind the op always is."""

    bias: int
    stride: int
    padding: int
    dilation: int
    transposed: int
    output_padding: int
    groups: int
    tf32: int = -1
    fixed_transposed: bool = False
    tf32_default: bool = True


_FORWARD = Layout(2, 3, 4, 5, 6, 7, 8)
_CONV_ND = Layout(2, 3, 4, 5, -1, -1, 6)
_TRANSPOSE_ND = Layout(2, 3, 4, 7, -1, 5, 6, fixed_transposed=True)
_MIOPEN = Layout(2, 4, 3, 5, -1, -1, 6, tf32_default=False)
LAYOUTS = {
    "convolution": _FORWARD, "_convolution": _FORWARD._replace(tf32=12),
    "conv1d": _CONV_ND, "conv2d": _CONV_ND, "conv3d": _CONV_ND, "_convolution_mode": _CONV_ND,
    "conv_transpose1d": _TRANSPOSE_ND, "conv_transpose2d": _TRANSPOSE_ND, "conv_transpose3d": _TRANSPOSE_ND,
    "cudnn_convolution": Layout(-1, 3, 2, 4, -1, -1, 5, tf32=8),
    "cudnn_convolution_transpose": Layout(-1, 4, 2, 5, -1, 3, 6, tf32=9, fixed_transposed=True),
    "miopen_convolution": _MIOPEN, "miopen_depthwise_convolution": _MIOPEN,
    "miopen_convolution_transpose": Layout(2, 5, 3, 6, -1, 4, 7, fixed_transposed=True, tf32_default=False),
    "mkldnn_convolution": _MIOPEN,
}


def _spatial(call: Call, at: int, rank: int, default: int) -> Optional[list[int]]:
    """A per-spatial-dim parameter (`[2, 2]`, or one value for all dims); `default` when not recorded."""
    text = call.text(at) if at >= 0 else ""
    if not text.strip():
        return [default] * rank
    values = as_ints(text)
    if values is None or len(values) not in (1, rank):
        return None
    return values * rank if len(values) == 1 else values


def _out_dim(size: int, kernel: int, stride: int, pad: int, dil: int, out_pad: int, transposed: bool) -> int:
    if transposed:
        return (size - 1) * stride - 2 * pad + dil * (kernel - 1) + out_pad + 1
    return (size + 2 * pad - dil * (kernel - 1) - 1) // stride + 1


def _out_spatial(call: Call, lay: Layout, x: Tensor, w: Tensor, transposed: bool) -> Optional[list[int]]:
    rank = len(w.dims) - 2
    sizes, kernel = list(x.dims[-rank:]), list(w.dims[2:])
    stride, dil = _spatial(call, lay.stride, rank, 1), _spatial(call, lay.dilation, rank, 1)
    out_pad = _spatial(call, lay.output_padding, rank, 0)
    mode = call.text(lay.padding).strip().strip("'\"").lower()
    pad = [0] * rank if mode == "valid" else None if mode == "same" else _spatial(call, lay.padding, rank, 0)
    if stride is None or dil is None or out_pad is None or min(stride + dil) < 1:
        return None
    if mode == "same":
        return sizes
    if pad is None:
        return None
    out = [_out_dim(*args, transposed) for args in zip(sizes, kernel, stride, pad, dil, out_pad)]
    return out if min(out) >= 1 else None


def _shapes_fit(x: Tensor, w: Tensor, groups: int, transposed: bool) -> bool:
    """Input `[N, C_in, ...]` (or unbatched `[C_in, ...]`) against the weight's channel dims."""
    if len(w.dims) < 3 or len(x.dims) not in (len(w.dims), len(w.dims) - 1) or groups < 1:
        return False
    c_in = x.dims[1] if len(x.dims) == len(w.dims) else x.dims[0]
    return c_in == w.dims[0] if transposed else c_in == w.dims[1] * groups


def _dtype(call: Call, lay: Layout, x: Tensor) -> Optional[str]:
    if x.dtype != "float":
        return MATRIX_DTYPES.get(x.dtype)
    recorded = as_bool(call.text(lay.tf32)) if lay.tf32 >= 0 else None
    return "tf32" if (lay.tf32_default if recorded is None else recorded) else "fp32"


def _is_transposed(call: Call, lay: Layout) -> Optional[bool]:
    return lay.fixed_transposed if lay.transposed < 0 else as_bool(call.text(lay.transposed))


def forward(call: Call) -> Optional[Work]:
    """The forward convolution ops of `LAYOUTS`."""
    lay = LAYOUTS[call.base]
    x, w = call.arg(0), call.arg(1)
    bias = call.arg(lay.bias) if lay.bias >= 0 else None
    transposed = _is_transposed(call, lay)
    groups = as_int(call.text(lay.groups)) if call.text(lay.groups).strip() else 1
    if x is None or w is None or transposed is None or groups is None or not call.recorded(lay.groups) or \
            not _shapes_fit(x, w, groups, transposed):
        return None
    spatial = _out_spatial(call, lay, x, w, transposed)
    if spatial is None:
        return None
    batch = x.dims[:1] if len(x.dims) == len(w.dims) else ()
    c_out = w.dims[1] * groups if transposed else w.dims[0]
    out_numel = math.prod((*batch, c_out, *spatial))
    products = (x.numel if transposed else out_numel) * math.prod(w.dims[1:])
    flops = 2.0 * products + (out_numel if bias is not None else 0)
    moved = x.nbytes + w.nbytes + (bias.nbytes if bias is not None else 0) + out_numel * x.itemsize
    return Work(CONV, flops, float(moved), _dtype(call, lay, x), True)


def backward(call: Call) -> Optional[Work]:
    """`convolution_backward`: the gradients its `output_mask` asks for (all three where it is not recorded)."""
    dy, x, w = call.arg(0), call.arg(1), call.arg(2)
    lay = Layout(-1, 4, 5, 6, 7, 8, 9)
    transposed = _is_transposed(call, lay)
    groups = as_int(call.text(9)) if call.text(9).strip() else 1
    mask = as_bools(call.text(10)) or [True, True, True]
    if dy is None or x is None or w is None or transposed is None or groups is None or len(mask) != 3 or \
            not call.recorded(9) or \
            not _shapes_fit(x, w, groups, transposed) or len(dy.dims) != len(x.dims):
        return None
    products = (x.numel if transposed else dy.numel) * math.prod(w.dims[1:])
    c_out = dy.dims[1] if len(dy.dims) == len(w.dims) else dy.dims[0]
    flops = 2.0 * products * (mask[0] + mask[1]) + (dy.numel if mask[2] else 0)
    moved = dy.nbytes + (w.nbytes + x.numel * x.itemsize if mask[0] else 0) + \
        (x.nbytes + w.numel * w.itemsize if mask[1] else 0) + (c_out * dy.itemsize if mask[2] else 0)
    return Work(CONV, flops, float(moved), _dtype(call, lay._replace(tf32=-1), x), True)


MODELS = {**{name: forward for name in LAYOUTS}, "convolution_backward": backward}
