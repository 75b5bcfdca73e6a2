"""The work models of each op family (analysis/roofline/: gemm, conv, attention, norm, pointwise, reduce, movement,
triton) on small calls whose operations and bytes are derived by hand from the op's definition; each expected
figure is written as the arithmetic that gives it."""
from __future__ import annotations

import pytest
from kinetoscope.analysis.roofline.attention import scores
from kinetoscope.analysis.roofline.triton import fused_ops
from kinetoscope.analysis.roofline.work import ATTENTION, CONV, COPY, ELEMENTWISE, GEMM, NORM, REDUCE, op_work

BF16, F32, F64, I64, I32, FP8, U8 = "c10::BFloat16", "float", "double", "long int", "int", "c10::Float8_e4m3fn", \
    "unsigned char"
CONV_ARGS = ["ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]


def work_of(name, dims, types, concrete=None, strides=None):
    work = op_work(name, dims, types, strides, concrete)
    assert work is not None, name
    return work


def figures(name, dims, types, concrete=None, strides=None):
    work = work_of(name, dims, types, concrete, strides)
    return work.category, work.flops, work.bytes


@pytest.mark.parametrize("name, dims, types, concrete, strides, expected", [
    # beta = 0: C is neither read nor added
    ("aten::addmm", [[16], [8, 4], [4, 16], [], []], [BF16, BF16, BF16, "Scalar", "Scalar"], ["", "", "", "0", "1"],
     None, (GEMM, 2 * 8 * 16 * 4, 2 * (8 * 4 + 4 * 16 + 8 * 16))),
    # B a transposed view (t() of [16, 4]): the same work as a contiguous B
    ("aten::addmm", [[16], [8, 4], [4, 16], [], []], [BF16, BF16, BF16, "Scalar", "Scalar"], ["", "", "", "1", "1"],
     [[1], [4, 1], [1, 4], [], []], (GEMM, 2 * 8 * 16 * 4 + 8 * 16, 2 * (16 + 8 * 4 + 4 * 16 + 8 * 16))),
    # out= recorded as a sixth argument: written once, not read
    ("aten::addmm", [[16], [8, 4], [4, 16], [], [], [8, 16]], [BF16] * 3 + ["Scalar"] * 2 + [BF16], None, None,
     (GEMM, 2 * 8 * 16 * 4 + 8 * 16, 2 * (16 + 8 * 4 + 4 * 16 + 8 * 16))),
    # A broadcast over the batch (stride 0): its 8x4 elements read once
    ("aten::bmm", [[3, 8, 4], [3, 4, 16]], [BF16, BF16], None, [[0, 4, 1], [64, 16, 1]],
     (GEMM, 2 * 3 * 8 * 16 * 4, 2 * (8 * 4 + 3 * 4 * 16 + 3 * 8 * 16))),
    # fp8 with 0-dim float scales and a bf16 output (out_dtype 15)
    ("aten::_scaled_mm", [[16, 32], [32, 64], [], [], [], [], [], []], [FP8, FP8, F32, F32, "", "", "Scalar", "Scalar"],
     ["", "", "", "", "", "", "15", "False"], None, (GEMM, 2 * 16 * 64 * 32, 16 * 32 + 32 * 64 + 4 + 4 + 2 * 16 * 64)),
    ("vllm::rocm_unquantized_gemm", [[32, 64], [128, 64], [128]], [BF16] * 3, None, None,
     (GEMM, 2 * 32 * 128 * 64 + 32 * 128, 2 * (32 * 64 + 128 * 64 + 128 + 32 * 128))),
])
def test_gemm(name, dims, types, concrete, strides, expected):
    assert figures(name, dims, types, concrete, strides) == expected


def test_gemm_dtypes_name_the_matrix_peak():
    mm = work_of("aten::mm", [[8, 4], [4, 16]], [F32, F32])
    assert (mm.dtype, mm.matrix) == ("fp32", True)  # PyTorch's default float32 matmul precision: no TF32
    assert work_of("aten::_scaled_mm", [[16, 32], [32, 64], [], []], [FP8, FP8, F32, F32]).dtype == "fp8"


def conv_call(x, w, bias, stride, padding, dilation, transposed="False", out_pad="[0, 0]", groups="1", dtype=BF16):
    dims = [x, w, bias, [], [], [], [], [], []]
    types = [dtype, dtype, dtype if bias else "", *CONV_ARGS[:3], "Scalar", "ScalarList", "Scalar"]
    return dims, types, ["", "", "", stride, padding, dilation, transposed, out_pad, groups]


@pytest.mark.parametrize("call, products, out, bias", [
    # 3x3, padding 1: the spatial size kept; every output sums 3*3*3 products
    (conv_call([2, 3, 8, 8], [4, 3, 3, 3], [4], "[1, 1]", "[1, 1]", "[1, 1]"), 2 * 4 * 8 * 8 * 27, 2 * 4 * 8 * 8, 4),
    # stride 2, no padding: floor((7 - 3) / 2) + 1 = 3
    (conv_call([1, 3, 7, 7], [2, 3, 3, 3], [], "[2, 2]", "[0, 0]", "[1, 1]"), 2 * 3 * 3 * 27, 2 * 3 * 3, 0),
    # depthwise (groups 4): each output sums one channel's 3x3
    (conv_call([1, 4, 5, 5], [4, 1, 3, 3], [], "[1, 1]", "[1, 1]", "[1, 1]", groups="4"), 4 * 5 * 5 * 9, 4 * 5 * 5,
     0),
    # dilation 2: the 3x3 kernel spans 5, 7 - 4 = 3
    (conv_call([1, 1, 7, 7], [1, 1, 3, 3], [], "[1, 1]", "[0, 0]", "[2, 2]"), 3 * 3 * 9, 3 * 3, 0),
    # transposed, stride 2, padding 1, output_padding 1: (3 - 1) * 2 - 2 + 2 + 1 + 1 = 6; each input element
    # scatters over 2 * 3 * 3 outputs
    (conv_call([1, 4, 3, 3], [4, 2, 3, 3], [], "[2, 2]", "[1, 1]", "[1, 1]", "True", "[1, 1]"), 4 * 3 * 3 * 18,
     2 * 6 * 6, 0),
    # one value for every spatial dim
    (conv_call([1, 3, 7, 7], [2, 3, 3, 3], [], "[2]", "[0]", "[1]"), 2 * 3 * 3 * 27, 2 * 3 * 3, 0),
])
def test_convolution_forward(call, products, out, bias):
    dims, types, concrete = call
    x_numel, w_numel = dims[0][0] * dims[0][1] * dims[0][2] * dims[0][3], 1
    for d in dims[1]:
        w_numel *= d
    flops = 2 * products + (out if bias else 0)
    assert figures("aten::convolution", dims, types, concrete) == (CONV, flops, 2 * (x_numel + w_numel + bias + out))


def test_convolution_spellings_agree_and_say_their_dtype():
    x, w = [1, 2, 6, 6], [3, 2, 3, 3]
    conv1d = figures("aten::conv1d", [[2, 4, 10], [8, 4, 3], [], [], [], [], []], [BF16, BF16, ""] + CONV_ARGS[:3] +
                     ["Scalar"], ["", "", "", "[1]", "[0]", "[1]", "1"])
    assert conv1d == (CONV, 2 * 2 * 8 * 8 * 12, 2 * (2 * 4 * 10 + 8 * 4 * 3 + 2 * 8 * 8))
    same = figures("aten::conv2d", [x, w, [], [], [], [], []], [F32, F32, ""] + CONV_ARGS[:3] + ["Scalar"],
                   ["", "", "", "[1, 1]", "same", "[1, 1]", "1"])
    assert same == (CONV, 2 * 3 * 6 * 6 * 18, 4 * (72 + 54 + 108))
    cudnn = [x, w, [], [], [], [], [], [], []]
    cudnn_types = [F32, F32, "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"]
    tf32 = work_of("aten::cudnn_convolution", cudnn, cudnn_types, ["", "", "[1, 1]", "[1, 1]", "[1, 1]", "1", "False",
                                                                  "False", "True"])
    no_tf32 = work_of("aten::cudnn_convolution", cudnn, cudnn_types, ["", "", "[1, 1]", "[1, 1]", "[1, 1]", "1",
                                                                     "False", "False", "False"])
    assert tf32.flops == 2 * 3 * 6 * 6 * 18
    assert (tf32.dtype, no_tf32.dtype, tf32.matrix) == ("tf32", "fp32", True)
    miopen = work_of("aten::miopen_convolution", [x, w, [], [], [], [], [], [], []], [F32, F32, ""] + cudnn_types[2:],
                     ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1", "False", "False"])
    assert (miopen.flops, miopen.dtype) == (2 * 3 * 6 * 6 * 18, "fp32")


@pytest.mark.parametrize("mask, flops, moved", [
    # both products passes (dx reads w, writes dx; dW reads x, writes dW), grad_out read once
    ("[True, True, False]", 2 * 2 * (2 * 4 * 8 * 8) * 27, 2 * (512 + (108 + 384) + (384 + 108))),
    ("[False, True, True]", 2 * (2 * 4 * 8 * 8) * 27 + 512, 2 * (512 + (384 + 108) + 4)),
])
def test_convolution_backward_per_output_mask(mask, flops, moved):
    dims = [[2, 4, 8, 8], [2, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], [], [], [], []]
    types = [BF16] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"]
    concrete = ["", "", "", "[4]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", mask]
    assert figures("aten::convolution_backward", dims, types, concrete) == (CONV, flops, moved)


@pytest.mark.parametrize("args, expected", [
    ((4, 6, False, False), 24),
    ((5, 5, True, False), 15),  # N(N+1)/2
    ((4, 6, True, False), 1 + 2 + 3 + 4),  # top-left: query i sees keys 0..i
    ((4, 6, True, True), 3 + 4 + 5 + 6),  # bottom-right: query i sees keys 0..i+2
    ((6, 4, True, False), 1 + 2 + 3 + 4 + 4 + 4),
    ((6, 4, True, True), 0 + 0 + 1 + 2 + 3 + 4),
    ((1, 100, True, True), 100),  # a decode step sees its whole context
])
def test_causal_scores_are_the_unmasked_entries(args, expected):
    assert scores(*args) == expected


SDPA_FLASH = ["", "", "", "0.", "False", "False", "0.35"]


def test_attention_forward():
    qkv = [[2, 4, 16, 8]] * 3
    types = [BF16] * 3 + ["Scalar"] * 4
    flash = figures("aten::_scaled_dot_product_flash_attention", qkv + [[]] * 4, types, SDPA_FLASH)
    # QKᵀ and PV, 2*d each per score; Q, K, V read, O and the float log-sum-exp written
    assert flash == (ATTENTION, 2 * (2 * 4 * 16 * 16) * (8 + 8), 2 * 4 * 1024 + 2 * 4 * 16 * 4)
    causal = figures("aten::_scaled_dot_product_flash_attention", qkv + [[]] * 4, types,
                     ["", "", "", "0.", "True", "False", "0.35"])
    assert causal[1] == 2 * (2 * 4 * 16 * 17 // 2) * 16
    flash_layout = figures("aten::_flash_attention_forward", [[2, 16, 4, 8]] * 3 + [[]] * 12,
                           [BF16] * 3 + [""] * 2 + ["Scalar"] * 6 + [""] * 4,
                           ["", "", "", "", "", "16", "16", "0.", "False", "False", "0.35", "", "", "", ""])
    assert flash_layout == flash


def test_grouped_query_attention_reads_each_kv_head_once():
    dims = [[1, 8, 16, 8], [1, 2, 16, 8], [1, 2, 16, 8], [], [], [], [], []]
    types = [BF16] * 3 + ["", "Scalar", "Scalar", "", "Scalar"]
    work = work_of("aten::scaled_dot_product_attention", dims, types, ["", "", "", "", "0.", "False", "", "True"])
    assert (work.flops, work.bytes, work.dtype) == (2 * 8 * 256 * 16, 2 * (1024 + 256 + 256 + 1024), "bf16")


def test_attention_backward_is_five_products():
    dims = [[1, 2, 16, 8]] * 5 + [[1, 2, 16]] + [[]] * 9
    types = [BF16] * 5 + [F32] + ["", "", "Scalar", "Scalar", "Scalar", "Scalar", I64, I64, "Scalar"]
    concrete = [""] * 8 + ["16", "16", "0.", "False", "", "", "0.35"]
    work = work_of("aten::_scaled_dot_product_flash_attention_backward", dims, types, concrete)
    forward = 2 * (2 * 256) * (8 + 8)
    assert work.flops == 2.5 * forward
    # dO, Q, K, V, O, the float lse and the 0-dim int64 philox seed and offset read; dQ, dK, dV written
    assert work.bytes == 5 * 512 + 2 * 16 * 4 + 2 * 8 + 3 * 512


def prefill(max_q, max_k):
    dims = [[8, 4, 8], [100, 2, 8], [100, 2, 8], [3], [3], [8]] + [[]] * 6
    types = [BF16] * 3 + [I32] * 3 + ["Scalar"] * 6
    return op_work("aiter::mha_batch_prefill", dims, types, None, ["", "", "", "", "", "", max_q, max_k, "0.", "0.35",
                                                                     "0.", "False", "True"])


def test_paged_prefill_is_modelled_only_when_every_sequence_is_full():
    work = prefill("4", "4")  # 2 sequences of 4 tokens (8 = 2 * 4); keys at most 4, at least the 4 queries
    assert work.flops == 2 * (2 * 4 * 10) * 16
    assert work.bytes == 512 + 2 * 4 * (2 * 8 * 2) * 2 + (3 + 3 + 8) * 4 + 512
    assert prefill("4", "6") is None  # some sequence has cached keys: how many is not recorded


LN_TYPES = [BF16, "ScalarList", BF16, BF16, "Scalar", "Scalar"]


@pytest.mark.parametrize("name, dims, types, concrete, expected", [
    # 5 per element, 6 per channel; x read, y written, γ, β read, float mean and rstd per row written
    ("aten::layer_norm", [[2, 3, 8], [], [8], [8], [], []], LN_TYPES, ["", "[8]", "", "", "1e-05", "True"],
     (NORM, 5 * 48 + 6 * 8, 2 * 48 * 2 + 2 * 8 * 2 + 2 * 6 * 4)),
    ("aten::rms_norm", [[4, 16], [], [16], []], [F32, "ScalarList", F32, "Scalar"], ["", "[16]", "", "1e-06"],
     (NORM, 4 * 64 + 3 * 4, 2 * 64 * 4 + 16 * 4)),
    ("aiter::rmsnorm", [[4, 16], [4, 16], [16], []], [BF16] * 3 + ["Scalar"], None,
     (NORM, 4 * 64 + 3 * 4, 2 * 64 * 2 + 16 * 2)),
    # the residual added first; input and residual read, output and new residual written
    ("_C::fused_add_rms_norm", [[4, 16], [4, 16], [16], []], [BF16] * 3 + ["Scalar"], None,
     (NORM, 5 * 64 + 3 * 4, 4 * 64 * 2 + 16 * 2)),
    ("aten::group_norm", [[2, 4, 3, 3], [], [4], [4], [], []], [F32, "Scalar", F32, F32, "Scalar", "Scalar"],
     ["", "2", "", "", "1e-05", "True"], (NORM, 5 * 72 + 6 * 4, 2 * 72 * 4 + 2 * 16 + 2 * 2 * 2 * 4)),
    # training: running statistics read and updated, saved mean and invstd written
    ("aten::batch_norm", [[2, 4, 3, 3], [4], [4], [4], [4], [], [], [], []], [F32] * 5 + ["Scalar"] * 4,
     ["", "", "", "", "", "True", "0.1", "1e-05", "True"], (NORM, 5 * 72 + 6 * 4, 2 * 288 + 4 * 16 + 32 + 2 * 16)),
    # eval: y = x·a + b with the running statistics
    ("aten::batch_norm", [[2, 4, 3, 3], [4], [4], [4], [4], [], [], [], []], [F32] * 5 + ["Scalar"] * 4,
     ["", "", "", "", "", "False", "0.1", "1e-05", "True"], (NORM, 2 * 72 + 6 * 4, 2 * 288 + 4 * 16)),
    ("aten::softmax", [[4, 10], [], []], [BF16, "Scalar", ""], ["", "-1", ""], (NORM, 5 * 40, 2 * 40 * 2)),
    ("aten::_softmax", [[4, 10], [], []], [BF16, "Scalar", "Scalar"], ["", "-1", "True"], (NORM, 5 * 40, 80 + 160)),
    # x̂ again (2), dx (8), dγ (2), dβ (1) per element; dy, x, mean, rstd, γ, β read; dx, dγ, dβ written
    ("aten::native_layer_norm_backward", [[2, 3, 8], [2, 3, 8], [], [2, 3, 1], [2, 3, 1], [8], [8], []],
     [BF16, BF16, "ScalarList", F32, F32, BF16, BF16, "ScalarList"], ["", "", "[8]", "", "", "", "", "[True, True, True]"],
     (NORM, 48 * 13, (96 + 96 + 24 + 24 + 16 + 16) + (96 + 16 + 16))),
])
def test_normalization(name, dims, types, concrete, expected):
    assert figures(name, dims, types, concrete) == expected
    assert work_of(name, dims, types, concrete).matrix is False


@pytest.mark.parametrize("name, dims, types, concrete, strides, expected", [
    # cond is no operand of the promotion: a 0-dim float does not widen the bf16 tensor
    ("aten::where", [[4, 1], [4, 5], []], ["bool", BF16, F32], None, None, (ELEMENTWISE, 20, 4 + 40 + 4 + 40)),
    ("aten::div", [[4], [4]], [I32, I32], None, None, (ELEMENTWISE, 4, 16 + 16 + 4 * 4)),  # true division: float
    # an expanded row (stride 0) is read for its 5 stored elements
    ("aten::mul", [[4, 5], [4, 5]], [BF16, BF16], None, [[5, 1], [0, 1]], (ELEMENTWISE, 20, 2 * (20 + 5 + 20))),
    ("aten::max", [[4, 5], [4, 5]], [BF16, BF16], None, None, (ELEMENTWISE, 20, 2 * 60)),  # max(a, b)
    ("sgl_kernel::silu_and_mul", [[4, 8], [4, 16]], [BF16, BF16], None, None, (ELEMENTWISE, 5 * 32, 2 * (64 + 32))),
    # q: 2 heads of 8, k: 1 head; 3 per rotated element; q, k read and written, positions and cache rows read
    ("sgl_kernel::rotary_embedding", [[4], [4, 16], [4, 8], [], [100, 8], []], [I64, BF16, BF16, "Scalar", BF16, "Scalar"],
     ["", "", "", "8", "", "True"], None, (ELEMENTWISE, 3 * 96, 2 * 96 * 2 + 4 * 8 + 4 * 8 * 2)),
    # partial rotary: the cache is 4 wide, so 4 of each head's 8 elements turn
    ("_C::rotary_embedding", [[4], [4, 16], [4, 8], [], [100, 4], []], [I64, BF16, BF16, "Scalar", BF16, "Scalar"],
     ["", "", "", "8", "", "True"], None, (ELEMENTWISE, 3 * 48, 2 * 48 * 2 + 4 * 8 + 4 * 4 * 2)),
    ("aten::upsample_nearest2d", [[1, 2, 3, 3], [], []], [BF16, "", "ScalarList"], ["", "", "[2., 2.]"], None,
     (ELEMENTWISE, 72, 2 * (18 + 72))),
    ("aten::upsample_nearest2d", [[1, 2, 3, 3], [], []], [BF16, "ScalarList", ""], ["", "[5, 5]", ""], None,
     (ELEMENTWISE, 50, 2 * (18 + 50))),
])
def test_elementwise(name, dims, types, concrete, strides, expected):
    assert figures(name, dims, types, concrete, strides) == expected


REDUCE_TYPES = [BF16, "ScalarList", "Scalar", ""]


@pytest.mark.parametrize("name, dims, types, concrete, moved", [
    ("aten::sum", [[4, 5], [], [], []], [F32, "ScalarList", "Scalar", ""], ["", "[1]", "False", ""], 80 + 4 * 4),
    ("aten::mean", [[2, 3, 4], [], [], []], REDUCE_TYPES, ["", "[-1]", "True", ""], 48 + 6 * 2),
    ("aten::sum", [[4, 5], []], [I32, ""], ["", ""], 80 + 8),  # integers sum to int64
    ("aten::amax", [[4, 5], [], []], [BF16, "ScalarList", "Scalar"], ["", "[]", "False"], 40 + 2),  # [] is all
    ("aten::max", [[4, 5], [], []], [BF16, "Scalar", "Scalar"], ["", "1", "False"], 40 + 4 * 2 + 4 * 8),
    ("aten::max", [[4, 5]], [BF16], [""], 40 + 2),
    ("aten::argmax", [[4, 5], [], []], [BF16, "Scalar", "Scalar"], ["", "-1", "False"], 40 + 4 * 8),
    ("aten::cumsum", [[6], [], []], [I32, "Scalar", ""], ["", "0", ""], 24 + 6 * 8),
    ("aten::linalg_vector_norm", [[3, 4], [], [], [], []], [F32, "Scalar", "ScalarList", "Scalar", ""],
     ["", "2", "[-1]", "False", ""], 48 + 12),
])
def test_reductions_count_one_per_input_element(name, dims, types, concrete, moved):
    numel = 1
    for d in dims[0]:
        numel *= d
    assert figures(name, dims, types, concrete) == (REDUCE, numel, moved)


@pytest.mark.parametrize("name, dims, types, concrete, strides, expected", [
    # a row broadcast into dst: 5 float elements read, 20 bf16 written
    ("aten::copy_", [[4, 5], [1, 5], []], [BF16, F32, "Scalar"], ["", "", "False"], None, (COPY, 20, 20 + 40)),
    ("aten::_to_copy", [[4, 5], [], [], [], [], [], []], [BF16, "Scalar"] + [""] * 3 + ["Scalar", ""],
     ["", "6", "", "", "", "False", ""], None, (COPY, 20, 40 + 80)),
    ("aten::contiguous", [[4, 5], []], [BF16, "Scalar"], ["", "0"], [[5, 1], []], (COPY, 0, 0)),  # already row-major
    ("aten::contiguous", [[4, 5], []], [BF16, "Scalar"], ["", "0"], [[1, 4], []], (COPY, 20, 80)),  # transposed
    ("aten::fill_", [[4, 5], []], [F32, "Scalar"], ["", "0"], None, (COPY, 20, 80)),
    ("aten::constant_pad_nd", [[2, 3], [], []], [F32, "ScalarList", "Scalar"], ["", "[1, 2]", "0."], None,
     (COPY, 2 * 6, 24 + 48)),
    ("aten::constant_pad_nd", [[2, 3], [], []], [F32, "ScalarList", "Scalar"], ["", "[1, 1, 2, 0]", "0."], None,
     (COPY, 4 * 5, 24 + 80)),
    # indexed moves: indices read, one source element per output element read, the output written
    ("aten::index_select", [[10, 4], [], [3]], [BF16, "Scalar", I64], ["", "0", ""], None, (COPY, 0, 24 + 24 + 24)),
    ("aten::embedding", [[100, 8], [2, 3], [], [], []], [BF16, I64, "Scalar", "Scalar", "Scalar"], None, None,
     (COPY, 0, 48 + 96 + 96)),
    ("aten::gather", [[4, 5], [], [4, 2], []], [F32, "Scalar", I64, "Scalar"], ["", "1", "", "False"], None,
     (COPY, 0, 64 + 32 + 32)),
    ("sglang::store_cache", [[3, 16], [3, 16], [100, 16], [100, 16], [3], [], []], [BF16] * 4 + [I64, "Scalar", "Scalar"],
     None, None, (COPY, 0, 96 + 96 + 24 + 96 * 2)),
    # an fp8 cache (recorded as bytes): the new keys and values written at 1 byte each
    ("_C_cache_ops::reshape_and_cache_flash", [[3, 1, 8], [3, 1, 8], [10, 16, 1, 8], [10, 16, 1, 8], [3], [], [], []],
     [BF16, BF16, U8, U8, I64, "", F32, F32], None, None, (COPY, 0, 48 + 48 + 24 + 4 + 4 + 48)),
])
def test_data_movement(name, dims, types, concrete, strides, expected):
    assert figures(name, dims, types, concrete, strides) == expected


@pytest.mark.parametrize("name, ops", [
    ("triton_red_fused_add_mean_mul_pow_rsqrt_0", ["add", "mean", "mul", "pow", "rsqrt"]),
    ("triton_poi_fused__to_copy_add_12", ["_to_copy", "add"]),
    ("triton_poi_fused_add_gelu_backward_mul_3", ["add", "gelu_backward", "mul"]),
    ("triton_red_fused_native_layer_norm_var_mean_1", ["native_layer_norm", "var_mean"]),
    ("triton_poi_fused_0", []),
    ("triton_0", None),  # unique kernel names off: no ops in the name
    ("triton_tem_fused_mm_0", None),  # a template (GEMM)
])
def test_triton_names_list_their_fused_ops(name, ops):
    assert fused_ops(name) == ops


@pytest.mark.parametrize("name, dims, types, concrete, expected", [
    # RMSNorm: add 1 + mean 1 + mul 1 + pow 2 + rsqrt 2 per loop element; the three tensors moved once
    ("triton_red_fused_add_mean_mul_pow_rsqrt_0", [[8, 2048], [2048], [8, 2048], [], []], [BF16] * 3 + ["Scalar"] * 2,
     ["", "", "", "8", "2048"], (REDUCE, 7 * 8 * 2048, 2 * (2 * 16384 + 2048))),
    # pointwise: the in-place buffer (first) read, written again, the other input read
    ("triton_poi_fused_mul_silu_1", [[4, 8], [4, 8], []], [BF16, BF16, "Scalar"], ["", "", "32"],
     (ELEMENTWISE, 5 * 32, 3 * 64)),
    # no arithmetic op: a copy; a float tensor at its 4 bytes
    ("triton_poi_fused__to_copy_2", [[4], [4], []], [F32, BF16, "Scalar"], ["", "", "4"], (COPY, 0, 16 + 8 + 16)),
])
def test_triton_kernels(name, dims, types, concrete, expected):
    assert figures(name, dims, types, concrete) == expected


@pytest.mark.parametrize("name, dims, types, concrete", [
    ("aten::convolution", [[2, 3, 8, 8], [4, 3, 3, 3], []], [BF16, BF16, ""], None),  # stride, padding unknown
    ("aten::mean", [[4, 5], [], [], []], REDUCE_TYPES, None),  # which dim is not recorded
    ("aten::_to_copy", [[4, 5], [], [], [], [], [], []], [BF16] + ["Scalar"] * 6, None),  # to which dtype
    ("aten::scaled_dot_product_attention", [[1, 2, 4, 8]] * 3, [BF16] * 3, None),  # causal or not
    ("aten::cat", [[[2, 3], [4, 3]], []], ["TensorList", "Scalar"], ["", "0"]),  # the parts' dtype
    ("triton_poi_fused_add_0", [[4], [4], []], [BF16, BF16, "Scalar"], ["", "", ""]),  # no xnumel
    ("vllm::unified_attention_with_output", [[8, 8, 64], [8, 1, 64], [8, 1, 64], [8, 8, 64]], [BF16] * 4, None),
    ("aten::convolution", [[2, 3, 8, 8], [4, 5, 3, 3], [], [], [], [], [], [], []], [BF16] * 2 + [""] + CONV_ARGS,
     ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"]),  # channels disagree
])
def test_calls_whose_records_do_not_fix_the_work_have_none(name, dims, types, concrete):
    assert op_work(name, dims, types, None, concrete) is None
