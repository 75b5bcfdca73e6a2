"""The work of an op call (analysis/roofline/work.py): operations and bytes moved from its recorded shapes, derived
by hand on small cases (here and, per family, in test_roofline_work_families.py), never raising on hostile records,
and held against TraceLens's own per-op figures on the shared modern traces.

The comparison takes every row of each trace's `unified_perf_summary.csv` that TraceLens models (`has_perf_model`)
and gives a figure for: per trace, at least 95% of them must agree on GFLOPS per call within 1% and 90% on data moved
within 2%. Where the figures differ, they differ on purpose, and the test checks that each row that differs is one of
these cases and no other:

- Promotion and in-place semantics: TraceLens writes the output of `bf16 += float` (`add_`) at float's 4 bytes, of
  `bf16 * int32` and `0-dim float * bf16` at 4, of `float + int64` at 8, and reads a 0-dim `double` copied into a
  bf16 at 2 bytes. PyTorch stores an in-place result at its first input's dtype, promotes a floating tensor with an
  integral one to the floating dtype, lets a 0-dim tensor of the same category not widen a dimensioned one, and a
  copy reads its source at the source's dtype: those are the bytes a kernel must move.
- Broadcast views: an input with a stride of 0 (`expand`) is read for the elements it stores, not for its logical
  size (owlv2 `mul` and `copy_` rows, a SGLang `copy_`).
- Layer norm statistics: the mean and rstd are one float per row; TraceLens moves six vectors of the normalized size
  (its batch-norm count), which is far off for few rows (owlv2 `[1, 5, 768]`, `[1, 1024]`; Flux `[1, 77, 768]`).
- Causal attention: the unmasked scores are `N(N+1)/2`, not `N²/2`; 1.3% more for Flux's `N = 77`.
- Triton kernels: TraceLens's table of dtype sizes has no `float` or `int` (the profiler's spellings of float32 and
  int32), so it counts those tensors as 0 bytes; here they are 4 bytes an element.
- Reductions: the output of `mean(x, [1], keepdim)` has every non-reduced element, not one (timesformer).
- `cumsum` of int32 writes int64, as PyTorch promotes it; `min(a, b)` of two tensors is elementwise (both read).
- SGLang's paged decode attention (`attention_paged_attention_ragged`): its context lengths live in device tensors,
  not in the recorded arguments; TraceLens takes them from an enclosing annotation. No model here.
"""
from __future__ import annotations

import ast
import csv
import math
import random
from collections import defaultdict

import pytest
from conftest import SHARED
from kinetoscope.analysis.roofline.work import (
    ATTENTION,
    CATEGORIES,
    COMMUNICATION,
    CONV,
    COPY,
    ELEMENTWISE,
    GEMM,
    MODELS,
    NORM,
    OTHER,
    REDUCE,
    category_of,
    op_work,
    result_dtype,
    tensors,
)

BF16, F32, F64, I64, I32 = "c10::BFloat16", "float", "double", "long int", "int"
TRACELENS = SHARED / "oracle" / "tracelens_perf"


@pytest.mark.parametrize("name, dims, types, category, flops, moved", [
    ("aten::mm", [[8, 4], [4, 16]], [BF16, BF16], GEMM, 2 * 8 * 16 * 4, 2 * (8 * 4 + 4 * 16 + 8 * 16)),
    ("aten::addmm", [[16], [8, 4], [4, 16], [], []], [BF16, BF16, BF16, "Scalar", "Scalar"], GEMM,
     2 * 8 * 16 * 4 + 8 * 16, 2 * (16 + 8 * 4 + 4 * 16 + 8 * 16)),
    ("aten::bmm", [[3, 8, 4], [3, 4, 16]], [F32, F32], GEMM, 2 * 3 * 8 * 16 * 4, 4 * 3 * (8 * 4 + 4 * 16 + 8 * 16)),
    ("aten::baddbmm", [[3, 8, 16], [3, 8, 4], [3, 4, 16], [], []], [F32, F32, F32, "Scalar", "Scalar"], GEMM,
     2 * 3 * 8 * 16 * 4 + 3 * 8 * 16, 4 * (3 * 8 * 16 + 3 * (8 * 4 + 4 * 16 + 8 * 16))),
    ("aten::matmul", [[2, 3, 8, 4], [4, 16]], [BF16, BF16], GEMM, 2 * 6 * 8 * 16 * 4, 2 * (6 * 32 + 64 + 6 * 128)),
    ("aten::matmul", [[4], [4, 16]], [BF16, BF16], GEMM, 2 * 16 * 4, 2 * (4 + 64 + 16)),
    ("aten::linear", [[2, 8, 4], [16, 4], [16]], [BF16, BF16, BF16], GEMM, 2 * 16 * 16 * 4 + 16 * 16,
     2 * (64 + 64 + 16 + 256)),
    ("aten::linear", [[2, 8, 4], [16, 4], []], [BF16, BF16, ""], GEMM, 2 * 16 * 16 * 4, 2 * (64 + 64 + 256)),
    ("aiter::gemm_a16w16", [[32, 64], [128, 64], [], []], [BF16, BF16, "", "Scalar"], GEMM, 2 * 32 * 128 * 64,
     2 * (32 * 64 + 128 * 64 + 32 * 128)),
    ("aten::add", [[4, 5], [1, 5], []], [BF16, BF16, "Scalar"], ELEMENTWISE, 20, 2 * (20 + 5 + 20)),
    ("aten::add_", [[4, 5], [4, 5], []], [BF16, F32, "Scalar"], ELEMENTWISE, 20, 20 * 2 + 20 * 4 + 20 * 2),
    ("aten::add", [[4, 5], [4, 5], []], [BF16, F32, "Scalar"], ELEMENTWISE, 20, 20 * 2 + 20 * 4 + 20 * 4),
    ("aten::mul", [[4, 5], []], [BF16, F64], ELEMENTWISE, 20, 20 * 2 + 8 + 20 * 2),
    ("aten::mul", [[4, 5], [5]], [F32, I64], ELEMENTWISE, 20, 20 * 4 + 5 * 8 + 20 * 4),
    ("aten::lt", [[4, 5], []], [F32, "Scalar"], ELEMENTWISE, 20, 20 * 4 + 20),
    ("aten::pow", [[4, 5], []], [F32, "Scalar"], ELEMENTWISE, 20, 2 * 20 * 4),
    ("aten::silu", [[4, 5]], [BF16], ELEMENTWISE, 20, 2 * 20 * 2),
    ("aten::copy_", [[4, 5], [4, 5], []], [F32, BF16, "Scalar"], COPY, 20, 20 * 4 + 20 * 2),
    ("aten::clone", [[4, 5], []], [BF16, ""], COPY, 20, 2 * 20 * 2),
])
def test_the_work_of_small_calls_as_derived_by_hand(name, dims, types, category, flops, moved):
    work = op_work(name, dims, types)
    assert (work.category, work.flops, work.bytes) == (category, flops, moved)
    assert work.intensity == pytest.approx(flops / moved)
    assert work.matrix is (category == GEMM)


@pytest.mark.parametrize("name, dims, types", [
    ("aten::mm", [], []),  # recorded without record_shapes
    ("aten::mm", [[8, 4], [5, 16]], [BF16, BF16]),  # inner dims disagree
    ("aten::add", [[4, 5], [3, 5]], [BF16, BF16]),  # do not broadcast
    ("aten::conv2d", [[1, 3, 8, 8], [4, 3, 3, 3]], [F32, F32]),  # no concrete inputs: stride and padding unknown
    ("aten::add", [[4, -1], [4, 1]], [BF16, BF16]),  # not a shape
    ("aten::copy_", [[4, 5], [4, 5]], [BF16, "c10::NewType"]),  # a dtype of unknown size
    ("aten::view", [[4, 5], []], [BF16, "ScalarList"]),  # a view launches no kernel: no model
])
def test_calls_without_a_model_or_a_fitting_record_have_no_work(name, dims, types):
    assert op_work(name, dims, types) is None


def test_type_promotion_follows_pytorch():
    t = lambda dims, dtype: tensors([dims], [dtype])[0]  # noqa: E731
    assert result_dtype([t([3], BF16), t([], F64)]) == BF16  # a 0-dim tensor of the same category does not widen
    assert result_dtype([t([3], I64), t([], F32)]) == F32  # ... one of a higher category does
    assert result_dtype([t([3], BF16), t([3], "c10::Half")]) == F32
    assert result_dtype([t([3], I32), t([3], I64)]) == I64
    assert result_dtype([t([3], "bool"), t([3], I32)]) == I32


def test_vector_work_runs_at_float_and_integer_work_at_no_float_dtype():
    assert op_work("aten::add", [[4], [4]], [BF16, BF16]).dtype == "fp32"  # PyTorch's opmath for bf16
    assert op_work("aten::add", [[4], [4]], [F64, F64]).dtype == "fp64"
    assert op_work("aten::copy_", [[4], [4]], [I64, I32]).dtype is None


@pytest.mark.parametrize("name, category", [
    ("aten::conv2d", CONV), ("aten::cudnn_convolution_backward_weight", CONV), ("aten::mm", GEMM),
    ("aten::einsum", GEMM), ("vllm::rocm_unquantized_gemm", GEMM), ("aten::_scaled_dot_product_flash_attention", ATTENTION),
    ("vllm::unified_attention_with_output", ATTENTION), ("aten::native_layer_norm_backward", NORM),
    ("aiter::add_rmsnorm", NORM), ("aten::softmax", NORM), ("aten::gelu_backward", ELEMENTWISE),
    ("sgl_kernel::rotary_embedding", ELEMENTWISE), ("aten::amax", REDUCE), ("aten::topk", REDUCE),
    ("aten::copy_", COPY), ("aten::index_put_", COPY), ("_C_cache_ops::reshape_and_cache_flash", COPY),
    ("nccl:all_reduce", COMMUNICATION), ("c10d::allreduce_", COMMUNICATION), ("gloo:all_reduce", COMMUNICATION),
    ("record_param_comms", COMMUNICATION), ("vllm::all_gather", COMMUNICATION),
    ("triton_poi_fused_add_0", ELEMENTWISE), ("triton_red_fused_sum_1", REDUCE), ("triton_tem_fused_mm_2", GEMM),
    ("aten::view", OTHER), ("aten::broadcast_to", OTHER), ("aten::is_nonzero", OTHER), ("ProfilerStep#3", OTHER),
    ("TorchDynamo Cache Lookup", OTHER), ("", OTHER), (None, OTHER),
])
def test_every_op_name_has_a_category(name, category):
    assert category_of(name) == category


def test_categories_are_the_published_tuple():
    assert CATEGORIES == (GEMM, ATTENTION, CONV, ELEMENTWISE, NORM, REDUCE, COPY, COMMUNICATION, OTHER)
    assert all(category_of("aten::" + base) in CATEGORIES for base in MODELS)


HOSTILE = [
    ("not a list", ["float"]), ([[4, 5]], "float"), (None, None), ([[4, 5]], [5]), ([[-3, 2]], [F32]),
    ([["a", 2]], [F32]), ([[2.5, 2]], [F32]), ([[True, 2]], [F32]), ([[2**60, 2]], [F32]),
    ([[2**48] * 12, [2**48] * 12, [2**48] * 12], [F32] * 3), ([[4, 5], [4, 5]], [F32]),
    ([[4, 5]], [F32, F32, F32]), ([[[4, 5], [4, 5]]], ["TensorList"]), ([{"x": 1}], [F32]), ([[4, 5], None], [F32, F32]),
]
HOSTILE_CONCRETE = [None, [], ["", "[1, 1]", "-1", "True"], [1, 2, 3], ["[" * 500], ["9" * 400] * 12,
                    ["[0, 0]", "[0, 0]", "[0, 0]", "[0, 0]", "[0, 0]", "[0, 0]", "[0, 0]", "[0, 0]", "0", "0", "0"]]


def _finite_or_none(work) -> bool:
    return work is None or (math.isfinite(work.flops) and math.isfinite(work.bytes) and work.flops >= 0 and
                            work.bytes >= 0)


@pytest.mark.parametrize("base", sorted(MODELS))
def test_hostile_records_answer_none_or_finite_work_for_every_model(base):
    for name in ("aten::" + base, "vendor::" + base):
        for dims, types in HOSTILE:
            for concrete in HOSTILE_CONCRETE:
                assert _finite_or_none(op_work(name, dims, types, dims, concrete)), (name, dims, types, concrete)


def test_random_records_never_raise():
    rng = random.Random(50)
    names = ["aten::" + b for b in MODELS] + ["triton_poi_fused_add_mul_0", "triton_red_fused_mean_1",
                                             "aiter::gemm_x", "x::y"]
    kinds = [BF16, F32, I64, "bool", "Scalar", "", "ScalarList", "c10::Float8_e4m3fn", "TensorList"]
    texts = ["", "0", "1", "-1", "2", "True", "False", "[1, 1]", "[-1]", "[]", "same", "[2., 2.]", "15", "nan", "x"]
    for _ in range(3000):
        n = rng.randint(0, 9)
        dims = [[rng.choice([0, 1, 2, 3, 8, 2**47]) for _ in range(rng.randint(0, 5))] for _ in range(n)]
        types = [rng.choice(kinds) for _ in range(rng.randint(0, n + 1))]
        strides = [[rng.choice([0, 1, 4, -1]) for _ in d] for d in dims] if rng.random() < 0.5 else None
        concrete = [rng.choice(texts) for _ in range(rng.randint(0, n + 2))]
        work = op_work(rng.choice(names), dims, types, strides, concrete)
        assert _finite_or_none(work)


def _literal(text: str):
    """A CSV cell as the trace recorded it (tuples as lists), or None."""
    try:
        value = ast.literal_eval(text) if text else None
    except (ValueError, SyntaxError):
        return None
    return _lists(value)


def _lists(value):
    return [_lists(v) for v in value] if isinstance(value, (list, tuple)) else value


PROMOTION = {("aten::add_", (BF16, F32)), ("aten::mul", (BF16, I32)), ("aten::mul", (F32, BF16)),
             ("aten::add", (F32, I64)), ("aten::copy_", (BF16, F64)), ("aten::copy_", (F32, F64))}


def _why_bytes_differ(name: str, dims, types, strides) -> str:
    """The documented reason (module docstring) a row's bytes differ from TraceLens's, or '' for none."""
    pairs = [(d, s) for d, s in zip(dims, strides or []) if isinstance(d, list) and isinstance(s, list)]
    if (name, tuple(types[:2])) in PROMOTION:
        return "promotion"
    if any(size > 1 and stride == 0 for d, s in pairs for size, stride in zip(d, s)):
        return "broadcast view"
    if name.endswith("layer_norm"):
        return "layer norm statistics"
    if name.startswith("triton_") and {F32, I32} & set(types):
        return "triton 32-bit dtypes"
    if name in ("aten::mean", "aten::sum", "aten::amax") or (name == "aten::cumsum" and types[0] in (I32, I64)):
        return "reduction output"
    if name in ("aten::min", "aten::max") and len([d for d in dims if d]) == 2:
        return "binary min/max"
    return ""


def _why_flops_differ(name: str, concrete) -> str:
    if "scaled_dot_product" in name and concrete and "True" in concrete[3:6]:
        return "exact causal count"
    return ""


def tracelens_rows() -> dict[str, list[dict]]:
    rows = defaultdict(list)
    for path in sorted(TRACELENS.rglob("unified_perf_summary.csv")):
        for row in csv.DictReader(path.open(encoding="utf-8")):
            if row["has_perf_model"] == "True":
                rows[path.parent.relative_to(TRACELENS).as_posix()].append(row)
    return rows


def agreement(rows: list[dict]) -> tuple[int, int, int, list[tuple[str, str]]]:
    """(rows with figures, flops within 1%, bytes within 2%, [(name, reason)] of the rows that differ)."""
    checked = flops_ok = bytes_ok = 0
    unexplained = []
    for row in rows:
        if not row["GFLOPS"] or not row["Data Moved (MB)"]:
            continue  # TraceLens has a model but gave no figure (upsample with scale factors)
        checked += 1
        dims, types = _literal(row["Input Dims"]), _literal(row["Input type"])
        strides, concrete = _literal(row["Input Strides"]), _literal(row["Concrete Inputs"])
        work = op_work(row["name"], dims, types, strides, concrete)
        if work is None:
            if "paged_attention" not in row["name"]:
                unexplained.append((row["name"], "no model"))
            continue
        flops, moved = float(row["GFLOPS"]) * 1e9, float(row["Data Moved (MB)"]) * 2**20
        f_ok = math.isclose(work.flops, flops, rel_tol=0.01, abs_tol=0.5)
        b_ok = math.isclose(work.bytes, moved, rel_tol=0.02, abs_tol=0.5)
        flops_ok, bytes_ok = flops_ok + f_ok, bytes_ok + b_ok
        if not f_ok and not _why_flops_differ(row["name"], concrete):
            unexplained.append((row["name"], "flops"))
        if not b_ok and not _why_bytes_differ(row["name"], dims, types, strides):
            unexplained.append((row["name"], "bytes"))
    return checked, flops_ok, bytes_ok, unexplained


@pytest.mark.skipif(not TRACELENS.is_dir(), reason="../shared/oracle/tracelens_perf is not beside the repo")
def test_the_work_agrees_with_tracelens_on_every_shared_trace():
    per_trace = tracelens_rows()
    assert len(per_trace) == 9
    for trace, rows in per_trace.items():
        checked, flops_ok, bytes_ok, unexplained = agreement(rows)
        assert checked >= 8, trace
        assert flops_ok >= 0.95 * checked, (trace, flops_ok, checked)
        assert bytes_ok >= 0.90 * checked, (trace, bytes_ok, checked)
        assert not unexplained, (trace, unexplained)  # every row that differs is a case of the module docstring
