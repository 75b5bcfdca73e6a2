"""The work of attention: `O = softmax(Q Kᵀ · scale + mask) V`, per batch and query head.

With `S` the score entries a kernel must compute (`N_q · N_kv` per batch and head; under a causal mask only the
unmasked ones), the forward pass is two matrix products: `Q Kᵀ` (2·d_qk per score) and `P V` (2·d_v per score),
`2·S·(d_qk + d_v)` in all. The softmax (a few operations per score, against 2·d in the products) is left out, as
FlashAttention's own accounting does. Causal masks follow PyTorch for its ops (top-left: query `i` sees keys `j <=
i`, `N(N+1)/2` of `N²` when square) and the flash-attention library for its ops (bottom-right: query `i` sees `j <= i
+ N_kv - N_q`). Grouped-query attention (fewer K/V heads than Q heads) computes per query head and reads each K/V
head once. A sliding window (`window_size_left/right`) is not read: such a kernel is counted as full (or causal).

Bytes: Q, K, V (and a mask or bias tensor) read once, the output written once at Q's dtype, and the float32
log-sum-exp per query row written where the op returns it (the flash and, when asked, efficient and cudnn kernels).

The backward pass recomputes `P = softmax(Q Kᵀ)` (2·d_qk per score) and forms `dV = Pᵀ dO` (2·d_v), `dP = dO Vᵀ`
(2·d_v), `dQ = dS K` (2·d_qk) and `dK = dSᵀ Q` (2·d_qk): `2·S·(3·d_qk + 2·d_v)`, which for `d_qk = d_v` is the
2.5x of the forward that FlashAttention's papers quote. Bytes: `dO`, Q, K, V, O and the log-sum-exp read, `dQ`, `dK`,
`dV` written.

Inference attention (varlen or paged) records only its packed Q (`[tokens, heads, d]`), the KV cache and the longest
sequence lengths, not each sequence's length; its work is known exactly only when every sequence has the longest
length (tokens = batch · max_q; keys likewise, or for a paged cache `max_k = max_q`, each sequence's keys being at
least its queries): then it is the batched case. Otherwise, and for decode kernels whose context lengths live in
device tensors (`vllm::unified_attention_with_output`, paged decode), there is no model.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

from .record import ATTENTION, MATRIX_DTYPES, Call, Tensor, Work, as_bool, as_int


class Layout(NamedTuple):
    """Where one attention op keeps its arguments (-1: none): the layout of Q/K/V (`bhnd`: batch, heads, tokens,
    dim; `bnhd`: batch, tokens, heads, dim, the flash-attention library's), the causal flag, a mask or bias, whether
    it writes a log-sum-exp (`lse`: -1 never, -2 always, else the index of its flag), the causal alignment and, for a
    backward op, how many leading arguments it reads (the rest are preallocated outputs)."""

    layout: str
    causal: int
    mask: int = -1
    lse: int = -1
    bottom_right: bool = False
    reads: int = 64


FORWARD = {
    "scaled_dot_product_attention": Layout("bhnd", 5, mask=3),
    "_scaled_dot_product_flash_attention": Layout("bhnd", 4, lse=-2),
    "_scaled_dot_product_flash_attention_for_cpu": Layout("bhnd", 4, mask=5, lse=-2),
    "_scaled_dot_product_efficient_attention": Layout("bhnd", 6, mask=3, lse=4),
    "_scaled_dot_product_cudnn_attention": Layout("bhnd", 6, mask=3, lse=4),
    "_scaled_dot_product_fused_attention_overrideable": Layout("bhnd", 5, mask=3, lse=-2),
    "_flash_attention_forward": Layout("bnhd", 8, lse=-2),
    "_efficient_attention_forward": Layout("bnhd", -1, mask=3, lse=10),
    "_flash_attn_forward": Layout("bnhd", 5, lse=-2, bottom_right=True),
    "mha_fwd": Layout("bnhd", 5, lse=8, bottom_right=True),
}
BACKWARD = {
    "_scaled_dot_product_flash_attention_backward": Layout("bhnd", 11),
    "_scaled_dot_product_efficient_attention_backward": Layout("bhnd", 11),
    "_scaled_dot_product_cudnn_attention_backward": Layout("bhnd", 14),
    "_flash_attention_backward": Layout("bnhd", 11),
    "_efficient_attention_backward": Layout("bnhd", -1),
    "_flash_attn_backward": Layout("bnhd", 11, bottom_right=True, reads=6),
}
# varlen / paged forms: (index of max_seqlen_q, of max_seqlen_k, of the causal flag, whether K is a paged cache)
VARLEN = {"_flash_attn_varlen_forward": (5, 6, 9, False), "mha_batch_prefill": (6, 7, 12, True)}


class Shape(NamedTuple):
    """Attention's sizes: batch·query heads (`bh`), query and key tokens per sequence, head dims."""

    bh: int
    n_q: int
    n_kv: int
    d_qk: int
    d_v: int


def _shape(q: Tensor, k: Tensor, v: Tensor, layout: str) -> Optional[Shape]:
    """Q `[..., H_q, N_q, d]` and K, V `[..., H_kv, N_kv, d]` (`bhnd`), or with tokens before heads (`bnhd`)."""
    if not len(q.dims) == len(k.dims) == len(v.dims) >= 3:
        return None
    h_at, n_at = (-3, -2) if layout == "bhnd" else (-2, -3)
    h_q, h_kv = q.dims[h_at], k.dims[h_at]
    if q.dims[:-3] != k.dims[:-3] or k.dims[:-1] != v.dims[:-1] or q.dims[-1] != k.dims[-1] or \
            h_kv == 0 or h_q % h_kv or v.dims[h_at] != h_kv:
        return None
    return Shape(math.prod(q.dims[:-3]) * h_q, q.dims[n_at], k.dims[n_at], q.dims[-1], v.dims[-1])


def scores(n_q: int, n_kv: int, causal: bool, bottom_right: bool) -> int:
    """The score entries of one head: all `n_q · n_kv`, or the unmasked ones of a causal mask, where query `i` sees
    `clamp(i + shift + 1, 0, n_kv)` keys (shift 0 top-left, `n_kv - n_q` bottom-right)."""
    if not causal:
        return n_q * n_kv
    shift = n_kv - n_q if bottom_right else 0
    first, last = max(0, -shift), min(n_q - 1, n_kv - shift - 2)  # the queries that see some keys but not all
    partial = sum_range(first + shift + 1, last + shift + 1) if last >= first else 0
    full = max(0, n_q - max(0, n_kv - shift - 1))  # the queries that see every key
    return partial + full * n_kv


def sum_range(first: int, last: int) -> int:
    """first + (first+1) + ... + last."""
    return (first + last) * (last - first + 1) // 2 if last >= first else 0


def _causal(call: Call, lay: Layout) -> Optional[bool]:
    """The causal flag (None when it is not recorded: older profilers record no concrete inputs)."""
    if call.base in ("_efficient_attention_forward", "_efficient_attention_backward"):
        mask_type = as_int(call.text(9 if call.base.endswith("forward") else 14))
        return None if mask_type is None else mask_type > 0
    if not call.recorded(lay.causal):
        return None
    text = call.text(lay.causal)
    return as_bool(text) if text.strip() else False


def _writes_lse(call: Call, lay: Layout) -> bool:
    return lay.lse == -2 or (lay.lse >= 0 and as_bool(call.text(lay.lse)) is True)


def _forward_work(q: Tensor, k: Tensor, v: Tensor, shape: Shape, n_scores: int, extra_read: int,
                  lse: bool) -> Work:
    flops = 2.0 * n_scores * (shape.d_qk + shape.d_v)
    out = shape.bh * shape.n_q * shape.d_v * q.itemsize + (shape.bh * shape.n_q * 4 if lse else 0)
    moved = q.nbytes + k.nbytes + v.nbytes + extra_read + out
    return Work(ATTENTION, flops, float(moved), MATRIX_DTYPES.get(q.dtype), True)


def forward(call: Call) -> Optional[Work]:
    """The batched forward ops of `FORWARD`."""
    lay = FORWARD[call.base]
    q, k, v = call.arg(0), call.arg(1), call.arg(2)
    causal = _causal(call, lay)
    shape = _shape(q, k, v, lay.layout) if q and k and v else None
    if shape is None or causal is None:
        return None
    mask = call.arg(lay.mask) if lay.mask >= 0 else None
    n_scores = shape.bh * scores(shape.n_q, shape.n_kv, causal, lay.bottom_right)
    return _forward_work(q, k, v, shape, n_scores, mask.nbytes if mask else 0, _writes_lse(call, lay))


def backward(call: Call) -> Optional[Work]:
    """The backward ops of `BACKWARD`: `(grad_out, q, k, v, ...)`; every tensor input (the forward's output, its
    log-sum-exp, a bias) is read once and `dQ`, `dK`, `dV` are written at Q's, K's and V's sizes."""
    lay = BACKWARD[call.base]
    d_out, q, k, v = call.arg(0), call.arg(1), call.arg(2), call.arg(3)
    causal = _causal(call, lay)
    shape = _shape(q, k, v, lay.layout) if d_out and q and k and v else None
    if shape is None or causal is None:
        return None
    n_scores = shape.bh * scores(shape.n_q, shape.n_kv, causal, lay.bottom_right)
    flops = 2.0 * n_scores * (3 * shape.d_qk + 2 * shape.d_v)
    read = sum(t.nbytes for t in call.args[:lay.reads] if t is not None)
    written = sum(t.numel * t.itemsize for t in (q, k, v))
    return Work(ATTENTION, flops, float(read + written), MATRIX_DTYPES.get(q.dtype), True)


def varlen(call: Call) -> Optional[Work]:
    """Packed forms: Q `[tokens, H_q, d]`, `cu_seqlens_q` `[batch + 1]`; exact only when all sequences are full."""
    max_q_at, max_k_at, causal_at, paged = VARLEN[call.base]
    q, k, v, cu_q = call.arg(0), call.arg(1), call.arg(2), call.arg(3)
    max_q, max_k, causal = as_int(call.text(max_q_at)), as_int(call.text(max_k_at)), as_bool(call.text(causal_at))
    if q is None or k is None or v is None or cu_q is None or len(cu_q.dims) != 1 or cu_q.dims[0] < 2 or \
            max_q is None or max_k is None or causal is None or len(q.dims) != 3 or len(k.dims) != 3:
        return None
    batch = cu_q.dims[0] - 1
    full_keys = max_k == max_q if paged else k.dims[0] == batch * max_k
    shape = _shape(Tensor((1, *q.dims), q.dtype), Tensor((1, *k.dims), k.dtype), Tensor((1, *v.dims), v.dtype),
                   "bnhd")
    if q.dims[0] != batch * max_q or not full_keys or shape is None:
        return None
    heads = shape.bh
    n_scores = batch * heads * scores(max_q, max_k, causal, True)  # square when full: both alignments agree
    kv_read = batch * max_k * (k.dims[1] * k.dims[2] * k.itemsize + v.dims[1] * v.dims[2] * v.itemsize)
    small = sum(t.nbytes for t in call.args[3:] if t is not None)  # sequence offsets and page tables
    flops = 2.0 * n_scores * (shape.d_qk + shape.d_v)
    moved = q.nbytes + kv_read + small + q.dims[0] * heads * shape.d_v * q.itemsize
    return Work(ATTENTION, flops, float(moved), MATRIX_DTYPES.get(q.dtype), True)


MODELS = {**{name: forward for name in FORWARD}, **{name: backward for name in BACKWARD},
          **{name: varlen for name in VARLEN}}
