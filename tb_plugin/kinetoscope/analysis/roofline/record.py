"""What `record_shapes=True` writes on one op call, read for the work models: its tensor arguments (`Input Dims`,
`Input type`, `Input Strides`), its other arguments as text (`Concrete Inputs`), and the `Work` a model answers.

Everything here is forgiving: a recorded value of the wrong kind reads as absent (a `None` tensor, an empty concrete
input) rather than raising, because the files are anybody's and a model answers None where its inputs do not fit.
"""
from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import msgspec

GEMM, ATTENTION, CONV, ELEMENTWISE, NORM = "gemm", "attention", "conv", "elementwise", "norm"
REDUCE, COPY, COMMUNICATION, OTHER = "reduce", "copy", "communication", "other"
CATEGORIES = (GEMM, ATTENTION, CONV, ELEMENTWISE, NORM, REDUCE, COPY, COMMUNICATION, OTHER)

# bytes per element of each `Input type` spelling the profiler writes (c10 scalar types, as recorded)
DTYPE_BYTES = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4, "short int": 2,
    "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
    "c10::ComplexHalf": 4, "unsigned short": 2, "unsigned int": 4, "unsigned long": 8,
    "long": 8, "short": 2,  # older profilers' spellings of int64 and int16
}
FLOATING = frozenset({"double", "float", "c10::Half", "c10::BFloat16"} | {d for d in DTYPE_BYTES if "Float8" in d})
COMPLEX = frozenset(d for d in DTYPE_BYTES if "omplex" in d)
# PyTorch's dtype categories, in promotion order (bool < integral < floating < complex)
CATEGORY = {name: 0 if name == "bool" else 3 if name in COMPLEX else 2 if name in FLOATING else 1 for name in DTYPE_BYTES}
# c10::ScalarType codes, as a `dtype=` argument appears in `Concrete Inputs` (c10/core/ScalarType.h order)
SCALAR_TYPES = {
    0: "unsigned char", 1: "signed char", 2: "short int", 3: "int", 4: "long int", 5: "c10::Half", 6: "float",
    7: "double", 8: "c10::ComplexHalf", 9: "c10::complex<float>", 10: "c10::complex<double>", 11: "bool",
    15: "c10::BFloat16", 23: "c10::Float8_e5m2", 24: "c10::Float8_e4m3fn", 25: "c10::Float8_e5m2fnuz",
    26: "c10::Float8_e4m3fnuz", 27: "unsigned short", 28: "unsigned int", 29: "unsigned long",
}
# the name a matrix unit's peak goes by, per operand dtype
MATRIX_DTYPES = {
    "double": "fp64", "float": "fp32", "c10::Half": "fp16", "c10::BFloat16": "bf16", "signed char": "int8",
    "unsigned char": "int8", **{d: "fp8" for d in DTYPE_BYTES if "Float8" in d},
}
# a dimension beyond 2**48 elements is no real tensor; the bound keeps every product of a few of them a finite float
MAX_DIM, MAX_RANK = 2**48, 12


class Work(msgspec.Struct, frozen=True):
    """One call's work: its category, floating-point operations, bytes moved (the least a kernel must move: each
    operand read once and each result written once), the dtype its arithmetic runs at (None without float
    arithmetic) and whether it runs on matrix units (tensor cores / MFMA) or on vector units."""

    category: str
    flops: float
    bytes: float
    dtype: Optional[str] = None
    matrix: bool = False

    @property
    def intensity(self) -> float:
        """Operations per byte moved (inf for work that moves nothing)."""
        return self.flops / self.bytes if self.bytes > 0 else math.inf


class Tensor(NamedTuple):
    """One tensor argument as recorded: its dims, its dtype (as the profiler spells it) and its strides (None when
    not recorded). A named tuple: thousands are made per trace, and a frozen dataclass costs 5x more to make."""

    dims: tuple[int, ...]
    dtype: str
    strides: Optional[tuple[int, ...]] = None

    @property
    def itemsize(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def numel(self) -> int:
        return math.prod(self.dims)

    @property
    def stored(self) -> int:
        """The distinct elements the tensor spans in memory: fewer than `numel` for a broadcast view (a stride of 0,
        as `expand` makes) or windows that overlap (`unfold`); a kernel reads each of them once."""
        if self.strides is None or len(self.strides) != len(self.dims) or self.numel == 0:
            return self.numel
        distinct = math.prod(d for d, s in zip(self.dims, self.strides) if s != 0)
        span = 1 + sum((d - 1) * abs(s) for d, s in zip(self.dims, self.strides))
        return min(distinct, span)

    @property
    def nbytes(self) -> int:
        """The bytes a kernel reads to see every element once."""
        return self.stored * self.itemsize


class Call(NamedTuple):
    """One op call as the models read it: its name (`aten::add_`), the name without namespace, overload and
    in-place mark (`add`), whether it is in place, its arguments as tensors (None where an argument is none), the
    raw records (for list arguments) and its concrete inputs."""

    name: str
    base: str
    inplace: bool
    args: tuple[Optional[Tensor], ...]
    dims: list
    types: list
    concrete: list

    def arg(self, i: int) -> Optional[Tensor]:
        """Argument `i` as a tensor (None when it is not one, or is absent)."""
        return self.args[i] if 0 <= i < len(self.args) else None

    def text(self, i: int) -> str:
        """Concrete input `i` ('' when not recorded)."""
        return concrete_at(self.concrete, i)

    def recorded(self, i: int) -> bool:
        """Whether concrete inputs were recorded up to argument `i` ('' then means the argument's default or None;
        older profilers record none, and then a default cannot be assumed)."""
        return 0 <= i < len(self.concrete)

    def present(self) -> list[Tensor]:
        """The tensor arguments, in order."""
        return [t for t in self.args if t is not None]


def read_call(name: str, dims: Any, types: Any, strides: Any = None, concrete: Any = None) -> Optional[Call]:
    """The call as the models read it, or None where the record is no record (not lists; a tensor whose recorded
    shape is no shape)."""
    if not isinstance(name, str) or not isinstance(dims, list) or not isinstance(types, list):
        return None
    if any(isinstance(kind, str) and kind in DTYPE_BYTES and not is_shape(shape) for shape, kind in zip(dims, types)):
        return None
    return Call(name, base_name(name), is_inplace(name), tuple(tensors(dims, types, strides)), dims, types,
                concrete if isinstance(concrete, list) else [])


def is_shape(shape: Any) -> bool:
    """A list of at most MAX_RANK sizes, each an int (not a bool) in [0, MAX_DIM]."""
    if type(shape) is not list or len(shape) > MAX_RANK:
        return False
    for d in shape:
        if type(d) is not int or d < 0 or d > MAX_DIM:  # type, not isinstance: a bool is no size
            return False
    return True


def _strides(strides: Any, i: int, rank: int) -> Optional[tuple[int, ...]]:
    entry = strides[i] if isinstance(strides, list) and i < len(strides) else None
    if isinstance(entry, list) and len(entry) == rank and \
            all(isinstance(s, int) and not isinstance(s, bool) and abs(s) <= MAX_DIM for s in entry):
        return tuple(entry)
    return None


def tensors(dims: Any, types: Any, strides: Any = None) -> list[Optional[Tensor]]:
    """Each argument as a Tensor, or None where it is not a tensor (a Scalar, an absent optional, a list, a type
    the profiler names but no size is known for)."""
    out: list[Optional[Tensor]] = []
    for i, shape in enumerate(dims if isinstance(dims, list) else []):
        kind = types[i] if isinstance(types, list) and i < len(types) else None
        if isinstance(kind, str) and kind in DTYPE_BYTES and is_shape(shape):
            out.append(Tensor(tuple(shape), kind, _strides(strides, i, len(shape))))
        else:
            out.append(None)
    return out


def tensor_list(dims: Any, types: Any, i: int) -> Optional[list[Tensor]]:
    """Argument `i` as a list of tensors (`cat`'s input), where its element dtypes are known: the profiler records
    a TensorList's dims per element but its type only as 'TensorList', so this answers None unless the type entry
    is itself a list of dtypes."""
    shapes = dims[i] if isinstance(dims, list) and i < len(dims) else None
    kinds = types[i] if isinstance(types, list) and i < len(types) else None
    if not isinstance(shapes, list) or not isinstance(kinds, list) or len(kinds) != len(shapes) or not shapes:
        return None
    if not all(is_shape(s) and isinstance(k, str) and k in DTYPE_BYTES for s, k in zip(shapes, kinds)):
        return None
    return [Tensor(tuple(s), k) for s, k in zip(shapes, kinds)]


def broadcast(shapes: Sequence[tuple[int, ...]]) -> Optional[tuple[int, ...]]:
    """The broadcast shape of `shapes` (None where they do not broadcast)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        sizes = {s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def base_name(name: str) -> str:
    """`add` for `aten::add`, `aten::add_` and `aten::add.Tensor`."""
    short = name.rsplit("::", 1)[-1].split(".", 1)[0]
    return short[:-1] if short.endswith("_") and not short.startswith("_") else short


def is_inplace(name: str) -> bool:
    """`add_`: the op writes its first input, at that input's dtype."""
    short = name.rsplit("::", 1)[-1].split(".", 1)[0]
    return short.endswith("_") and not short.startswith("_")


def vector_dtype(operands: Sequence[Tensor]) -> Optional[str]:
    """The dtype vector arithmetic on these operands runs at: PyTorch computes half, bfloat16 and float8 in float
    (its `opmath` type), double in double; None without a floating operand (integer or bool work)."""
    kinds = {t.dtype for t in operands}
    if kinds & {"double", "c10::complex<double>"}:
        return "fp64"
    return "fp32" if kinds & (FLOATING | COMPLEX) else None


def concrete_at(concrete: Any, i: int) -> str:
    """Concrete input `i` as recorded ('' when absent or not text)."""
    value = concrete[i] if isinstance(concrete, list) and 0 <= i < len(concrete) else ""
    return value if isinstance(value, str) else ""


def as_bool(text: str) -> Optional[bool]:
    return {"true": True, "false": False, "1": True, "0": False}.get(text.strip().lower())


def as_int(text: str) -> Optional[int]:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if abs(value) <= MAX_DIM else None


def as_float(text: str) -> Optional[float]:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def as_ints(text: str) -> Optional[list[int]]:
    """`[16, 16]` (an int list as recorded) or `16` (one int) as a list; None for anything else."""
    text = text.strip()
    if not text or len(text) > 200:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    value = [value] if isinstance(value, int) else value
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) and
                                                abs(v) <= MAX_DIM for v in value):
        return list(value)
    return None


def scalar_type(text: str) -> Optional[str]:
    """The dtype a `dtype=` concrete input names (its c10::ScalarType code), or None."""
    code = as_int(text)
    return SCALAR_TYPES.get(code) if code is not None else None


def as_bools(text: str) -> Optional[list[bool]]:
    """`[True, False, True]` (a bool list as recorded, `output_mask`) as a list; None for anything else."""
    parts = [p.strip() for p in text.strip().strip("[]").split(",")] if text.strip().startswith("[") else []
    flags = [as_bool(p) for p in parts]
    return flags if flags and all(f is not None for f in flags) else None
