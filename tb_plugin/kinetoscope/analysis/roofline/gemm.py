"""The work of matrix multiplications.

`C[M,N] = A[M,K] @ B[K,N]` is 2·M·N·K operations (a multiply and an add per term); a bias or `beta·C` adds one per
output element. Bytes: each operand read once (a broadcast operand, stride 0, only for the elements it stores) and
the output written once, at their dtypes: the least any kernel can move (tiles re-read from L2 are not counted).
Transposed operands (`Input Strides` of a `t()` view) change neither count. The arithmetic runs on matrix units at
the operands' dtype: bf16, fp16, fp8, int8, fp64, and fp32 for float (PyTorch's default float32 matmul precision is
"highest": no TF32 unless a program asks for it).

- `mm`, `addmm` (with `out=` recorded as a further argument), `bmm`, `baddbmm`, `matmul` (1-d operands are a row or
  a column; leading dims broadcast as batch dims) and `linear` (weight `[N, K]`). `beta = 0` (`addmm`, `baddbmm`)
  skips reading `C`, as PyTorch does.
- `_scaled_mm(A, B, scale_a, scale_b, bias, scale_result, out_dtype, ...)`: the fp8 GEMM; its scales are read
  (a scalar, a row or a column of them) and its output is at `out_dtype` (the c10 ScalarType code of Concrete
  Inputs), or at A's dtype where none is given. `_int_mm`: int8 in, int32 out.
- Vendor GEMMs whose first inputs are `x[M, K]` and `w[N, K]` (`aiter::gemm_a16w16`, `vllm::rocm_unquantized_gemm`,
  the fp8 GEMMs of aiter with their scale tensors): `y = x @ w.T`, a third argument of shape `[N]` being the bias,
  one shaped like `y` the preallocated output; other tensor inputs (scales) are read once. Their output dtype is not
  recorded: x's, or bf16 (2 bytes) when x is 8-bit, the usual output of a quantised GEMM. Grouped, batched and MoE
  GEMMs have other layouts: no model.
"""
from __future__ import annotations

import math
from typing import Optional

from .record import DTYPE_BYTES, GEMM, MATRIX_DTYPES, Call, Tensor, Work, as_float, broadcast, scalar_type


def _gemm(m: int, n: int, k: int, batch: int, operands: list[Tensor], out_itemsize: int,
          bias: Optional[Tensor] = None) -> Work:
    flops = 2.0 * batch * m * n * k + (batch * m * n if bias is not None else 0)
    moved = sum(t.nbytes for t in operands) + batch * m * n * out_itemsize + (bias.nbytes if bias is not None else 0)
    return Work(GEMM, flops, float(moved), MATRIX_DTYPES.get(operands[0].dtype), True)


def _read_c(call: Call, beta_at: int) -> Optional[Tensor]:
    """Argument 0 (`C` of `beta·C + A@B`), unless `beta` is recorded as 0 (then PyTorch does not read it)."""
    beta = as_float(call.text(beta_at))
    return None if beta == 0.0 else call.arg(0)


def _mm_shape(a: Optional[Tensor], b: Optional[Tensor]) -> Optional[tuple[int, int, int]]:
    if a is None or b is None or len(a.dims) != 2 or len(b.dims) != 2 or a.dims[1] != b.dims[0]:
        return None
    return a.dims[0], b.dims[1], a.dims[1]


def mm(call: Call) -> Optional[Work]:
    a, b = call.arg(0), call.arg(1)
    shape = _mm_shape(a, b)
    return _gemm(*shape, 1, [a, b], a.itemsize) if shape else None


def addmm(call: Call) -> Optional[Work]:
    a, b = call.arg(1), call.arg(2)
    shape = _mm_shape(a, b)
    return _gemm(*shape, 1, [a, b], a.itemsize, _read_c(call, 3)) if shape else None


def _bmm_shape(a: Optional[Tensor], b: Optional[Tensor]) -> Optional[tuple[int, int, int, int]]:
    if a is None or b is None or len(a.dims) != 3 or len(b.dims) != 3 or a.dims[0] != b.dims[0] or \
            a.dims[2] != b.dims[1]:
        return None
    return a.dims[1], b.dims[2], a.dims[2], a.dims[0]


def bmm(call: Call) -> Optional[Work]:
    a, b = call.arg(0), call.arg(1)
    shape = _bmm_shape(a, b)
    return _gemm(*shape, [a, b], a.itemsize) if shape else None


def baddbmm(call: Call) -> Optional[Work]:
    a, b = call.arg(1), call.arg(2)
    shape = _bmm_shape(a, b)
    return _gemm(*shape, [a, b], a.itemsize, _read_c(call, 3)) if shape else None


def matmul(call: Call) -> Optional[Work]:
    """`torch.matmul`: 1-d operands are a row or a column; leading dims broadcast as batch dims."""
    a, b = call.arg(0), call.arg(1)
    if a is None or b is None or not a.dims or not b.dims:
        return None
    m, k = (1, a.dims[0]) if len(a.dims) == 1 else a.dims[-2:]
    k2, n = (b.dims[0], 1) if len(b.dims) == 1 else b.dims[-2:]
    batch_shape = broadcast([a.dims[:-2], b.dims[:-2]])
    if k != k2 or batch_shape is None:
        return None
    return _gemm(m, n, k, math.prod(batch_shape), [a, b], a.itemsize)


def _weight_nk(x: Optional[Tensor], w: Optional[Tensor], bias: Optional[Tensor], out_itemsize: int,
               extra: list[Tensor]) -> Optional[Work]:
    """`y = x @ w.T (+ bias)` with `x[..., K]` and `w[N, K]`; `extra` tensors (scales) are read once."""
    if x is None or w is None or not x.dims or len(w.dims) != 2 or x.dims[-1] != w.dims[1]:
        return None
    m, (n, k) = math.prod(x.dims[:-1]), w.dims
    return _gemm(m, n, k, 1, [x, w, *extra], out_itemsize, bias)


def linear(call: Call) -> Optional[Work]:
    x = call.arg(0)
    return _weight_nk(x, call.arg(1), call.arg(2), x.itemsize if x else 0, [])


def vendor_gemm(call: Call) -> Optional[Work]:
    """A GEMM of another library whose inputs are `x[M, K]`, `w[N, K]`, then perhaps a bias `[N]` and scales."""
    x, w = call.arg(0), call.arg(1)
    if x is None or w is None or len(w.dims) != 2:
        return None
    third = call.arg(2)
    bias = third if third is not None and third.dims == (w.dims[0],) else None
    out_dims = (*x.dims[:-1], w.dims[0])  # a preallocated output argument is written, not read
    scales = [t for t in call.args[2:] if t is not None and t is not bias and t.dims != out_dims]
    out_itemsize = x.itemsize if x.itemsize >= 2 else 2
    return _weight_nk(x, w, bias, out_itemsize, scales)


def scaled_mm(call: Call) -> Optional[Work]:
    """`_scaled_mm(A, B, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False)`."""
    a, b = call.arg(0), call.arg(1)
    shape = _mm_shape(a, b)
    if shape is None:
        return None
    scales = [t for t in (call.arg(2), call.arg(3), call.arg(5)) if t is not None]
    out_dtype = scalar_type(call.text(6)) or a.dtype
    return _gemm(*shape, 1, [a, b, *scales], DTYPE_BYTES[out_dtype], call.arg(4))


def int_mm(call: Call) -> Optional[Work]:
    """`_int_mm(A int8, B int8)`: an int32 result."""
    a, b = call.arg(0), call.arg(1)
    shape = _mm_shape(a, b)
    return _gemm(*shape, 1, [a, b], 4) if shape else None


MODELS = {"mm": mm, "addmm": addmm, "bmm": bmm, "baddbmm": baddbmm, "matmul": matmul, "linear": linear,
          "_scaled_mm": scaled_mm, "_int_mm": int_mm}
