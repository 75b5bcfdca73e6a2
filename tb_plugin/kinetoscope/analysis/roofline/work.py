"""The work of one op call: the floating-point operations it performs and the bytes it must move, from what
`record_shapes=True` writes on the op (`Input Dims`, `Input type`, `Concrete Inputs`), derived from each op's
definition.

- GEMM: `C[M,N] = A[M,K] @ B[K,N]` is 2·M·N·K operations (a multiply and an add per term); a bias or `beta·C`
  adds one per output element. Bytes: each operand read once and the output written once, at their dtypes (the
  least any kernel can move; tiles re-read from L2 are not counted). `mm`, `addmm`, `bmm`, `baddbmm`, `matmul`
  (with broadcast batch dims and 1-d operands), `linear` (weight `[N, K]`) and vendor GEMMs whose inputs are
  `x[M, K]` and `w[N, K]` (`aiter::gemm_a16w16`).
- Elementwise: one operation per output element; bytes: every tensor input read once (a 0-dim tensor is one
  element of its dtype; a `Scalar` argument is no tensor) and the output written once. The output's shape is the
  inputs' broadcast shape; its dtype PyTorch's promotion of the inputs (`result_dtype`: a 0-dim `double` does not
  from widening a bf16 tensor), `bool` for comparisons. In-place ops (`add_`) write their first input at its own
  dtype.
- Copies (`copy_(dst, src)`, `_to_copy`, `clone`, `contiguous`): one per element; bytes: the source read and the
  destination written, each at its own dtype.

`op_work` answers None for an op it has no model for, or whose recorded inputs do not fit the model (no shapes: a
trace without `record_shapes`); the callers count those as unmodelled.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

# bytes per element of each `Input type` spelling the profiler writes (c10 scalar types, as recorded)
DTYPE_BYTES = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4, "short int": 2,
    "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
    "c10::ComplexHalf": 4, "unsigned short": 2, "unsigned int": 4, "unsigned long": 8,
}
# PyTorch's dtype categories, in promotion order (bool < integral < floating < complex)
CATEGORY = {name: 0 if name == "bool" else 3 if "complex" in name.lower() else
            2 if name in ("double", "float", "c10::Half", "c10::BFloat16") or "Float8" in name else 1 for name in DTYPE_BYTES}

GEMM, ELEMENTWISE, COPY = "gemm", "elementwise", "copy"

BINARY = {"add", "sub", "mul", "div", "rsub", "true_divide", "floor_divide", "remainder", "fmod", "maximum", "minimum",
          "pow", "atan2", "hypot", "copysign", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
          "logical_xor", "where", "addcmul", "addcdiv", "lerp", "masked_fill", "clamp", "clamp_min", "clamp_max", "xlogy"}
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}
UNARY = {"neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sigmoid", "silu", "gelu",
         "relu", "tanh", "abs", "sin", "cos", "reciprocal", "erf", "erfc", "sign", "floor", "ceil", "round", "trunc",
         "hardtanh", "hardswish", "hardsigmoid", "leaky_relu", "elu", "softplus", "mish", "logical_not",
         "bitwise_not", "square", "relu6", "threshold", "nan_to_num", "fill", "zero"}
COPIES = {"copy", "_to_copy", "clone", "contiguous"}


@dataclass(frozen=True)
class Work:
    """One call's work: its category, floating-point operations and bytes moved (the least a kernel must move)."""

    category: str
    flops: float
    bytes: float

    @property
    def intensity(self) -> float:
        """Operations per byte moved (inf for work that moves nothing)."""
        return self.flops / self.bytes if self.bytes > 0 else math.inf


@dataclass(frozen=True)
class Tensor:
    """One tensor argument as recorded: its dims and its dtype (as the profiler spells it)."""

    dims: tuple[int, ...]
    dtype: str

    @property
    def itemsize(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def numel(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize


def base_name(name: str) -> str:
    """`add` for `aten::add`, `aten::add_` and `aten::add.Tensor`."""
    short = name.rsplit("::", 1)[-1].split(".", 1)[0]
    return short[:-1] if short.endswith("_") and not short.startswith("_") else short


def is_inplace(name: str) -> bool:
    """`add_`: the op writes its first input, at that input's dtype."""
    short = name.rsplit("::", 1)[-1].split(".", 1)[0]
    return short.endswith("_") and not short.startswith("_")


def tensors(dims: Any, types: Any) -> list[Optional[Tensor]]:
    """Each argument as a Tensor, or None where it is not a tensor (a Scalar, an absent optional, a list, a type
    the profiler names but no size is known for)."""
    out: list[Optional[Tensor]] = []
    for i, shape in enumerate(dims if isinstance(dims, list) else []):
        kind = types[i] if isinstance(types, list) and i < len(types) else None
        out.append(Tensor(tuple(shape), kind) if isinstance(kind, str) and kind in DTYPE_BYTES and is_shape(shape) else None)
    return out


def is_shape(shape: Any) -> bool:
    return isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)


def broadcast(shapes: list[tuple[int, ...]]) -> Optional[tuple[int, ...]]:
    """The broadcast shape of `shapes` (None where they do not broadcast)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        sizes = {s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def op_work(name: str, dims: Any, types: Any, concrete: Any = None) -> Optional[Work]:
    """The work of one call of op `name` with these recorded inputs, or None without a model for it."""
    del concrete  # no model here reads a concrete input yet (alpha and beta scale, they do not add work)
    if not isinstance(dims, list) or not isinstance(types, list) or \
            any(isinstance(kind, str) and kind in DTYPE_BYTES and not is_shape(shape) for shape, kind in zip(dims, types)):
        return None  # a tensor whose recorded shape is no shape: a record the model cannot read
    args = tensors(dims, types)
    base = base_name(name)
    if base in GEMMS:
        return GEMMS[base](args)
    if "gemm" in base.lower() and "::" in name and not name.startswith("aten::"):
        return _weight_nk(args, bias=None)
    if base in COPIES:
        return _copy(base, args)
    if base in BINARY or base in UNARY or base in COMPARISONS:
        return _elementwise(base, is_inplace(name), args)
    return None


def _gemm(m: int, n: int, k: int, batch: int, operands: list[Tensor], out_itemsize: int,
          bias: Optional[Tensor] = None) -> Work:
    flops = 2.0 * batch * m * n * k + (batch * m * n if bias is not None else 0)
    moved = sum(t.nbytes for t in operands) + batch * m * n * out_itemsize + (bias.nbytes if bias is not None else 0)
    return Work(GEMM, flops, float(moved))


def _mm(args: list[Optional[Tensor]]) -> Optional[Work]:
    a, b = (args + [None, None])[:2]
    if a is None or b is None or len(a.dims) != 2 or len(b.dims) != 2 or a.dims[1] != b.dims[0]:
        return None
    (m, k), n = a.dims, b.dims[1]
    return _gemm(m, n, k, 1, [a, b], a.itemsize)


def _addmm(args: list[Optional[Tensor]]) -> Optional[Work]:
    found = _mm(args[1:3])
    bias = args[0] if args else None
    if found is None or bias is None:
        return found
    a = args[1]
    return _gemm(a.dims[0], args[2].dims[1], a.dims[1], 1, [a, args[2]], a.itemsize, bias)


def _bmm(args: list[Optional[Tensor]], bias: Optional[Tensor] = None) -> Optional[Work]:
    a, b = (args + [None, None])[:2]
    if a is None or b is None or len(a.dims) != 3 or len(b.dims) != 3 or a.dims[0] != b.dims[0] or a.dims[2] != b.dims[1]:
        return None
    (batch, m, k), n = a.dims, b.dims[2]
    return _gemm(m, n, k, batch, [a, b], a.itemsize, bias)


def _baddbmm(args: list[Optional[Tensor]]) -> Optional[Work]:
    return _bmm(args[1:3], args[0] if args else None)


def _matmul(args: list[Optional[Tensor]]) -> Optional[Work]:
    """`torch.matmul`: 1-d operands are a row or a column; leading dims broadcast as batch dims."""
    a, b = (args + [None, None])[:2]
    if a is None or b is None or not a.dims or not b.dims:
        return None
    m, k = (1, a.dims[0]) if len(a.dims) == 1 else a.dims[-2:]
    k2, n = (b.dims[0], 1) if len(b.dims) == 1 else b.dims[-2:]
    batch_shape = broadcast([a.dims[:-2], b.dims[:-2]])
    if k != k2 or batch_shape is None:
        return None
    return _gemm(m, n, k, math.prod(batch_shape), [a, b], a.itemsize)


def _linear(args: list[Optional[Tensor]]) -> Optional[Work]:
    return _weight_nk(args, bias=args[2] if len(args) > 2 else None)


def _weight_nk(args: list[Optional[Tensor]], bias: Optional[Tensor]) -> Optional[Work]:
    """`y = x @ w.T (+ bias)` with `x[..., K]` and `w[N, K]` (`linear`, vendor GEMMs of that layout)."""
    x, w = (args + [None, None])[:2]
    if x is None or w is None or not x.dims or len(w.dims) != 2 or x.dims[-1] != w.dims[1]:
        return None
    m, (n, k) = math.prod(x.dims[:-1]), w.dims
    return _gemm(m, n, k, 1, [x, w], x.itemsize, bias)


GEMMS = {"mm": _mm, "addmm": _addmm, "bmm": _bmm, "baddbmm": _baddbmm, "matmul": _matmul, "linear": _linear}


def _elementwise(base: str, inplace: bool, args: list[Optional[Tensor]]) -> Optional[Work]:
    inputs = [t for t in args if t is not None]
    if not inputs:
        return None
    shape = broadcast([t.dims for t in inputs])
    if shape is None:
        return None
    out_itemsize = 1 if base in COMPARISONS else inputs[0].itemsize if inplace else DTYPE_BYTES[result_dtype(inputs)]
    numel = math.prod(shape)
    return Work(ELEMENTWISE, float(numel), float(sum(t.nbytes for t in inputs) + numel * out_itemsize))


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


def _copy(base: str, args: list[Optional[Tensor]]) -> Optional[Work]:
    """`copy_(dst, src)`: src read, dst written; `_to_copy`, `clone`, `contiguous(src)`: the same dtype out (a
    `_to_copy` to another dtype names it in its concrete inputs, which are not read here: counted at the source's)."""
    if base == "copy":
        dst, src = (args + [None, None])[:2]
        if dst is None or src is None:
            return None
        return Work(COPY, float(dst.numel), float(src.nbytes + dst.nbytes))
    src = args[0] if args else None
    if src is None:
        return None
    return Work(COPY, float(src.numel), float(2 * src.nbytes))
