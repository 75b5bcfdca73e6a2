"""Tensor-Core eligible ops and the share of kernel time they launch (torch-tb-profiler's definition).

An op is eligible when its name is in TC_ELIGIBLE_OPS: the convolutions and matrix multiplies that autocast
runs in fp16/bf16 (torch-tb-profiler's TC_OP_Allowlist, after ATen's autocast_mode.cpp), and their
backward nodes. Nested eligible ops count once, at the bottom: `aten::conv2d > aten::convolution >
aten::_convolution > aten::cudnn_convolution` counts `cudnn_convolution`, the one that launches. The share
is the kernel time those bottom ops launched themselves (their own launch calls, not their children's),
over the kernel time every op launched (kernels with a launch call that runs inside an op).

A large share on a GPU that ran no Tensor-Core kernel is what automatic mixed precision would speed up.
"""
from __future__ import annotations

import msgspec
import numpy as np

from ...trace.kinds import Kind
from ...trace.model import TraceModel, unique
from ..tables.index import TableIndex
from .gpu_summary import uses_tensor_cores_tbprof

TC_ELIGIBLE_OPS = frozenset({
    "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_tbc", "aten::conv_transpose1d",
    "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::convolution", "aten::cudnn_convolution",
    "aten::cudnn_convolution_transpose", "aten::prelu", "aten::addmm", "aten::addmv", "aten::addr", "aten::matmul",
    "aten::mm", "aten::mv", "aten::linear", "aten::addbmm", "aten::baddbmm", "aten::bmm", "aten::chain_matmul",
    "aten::linalg_multi_dot", "aten::_thnn_fused_lstm_cell", "aten::_thnn_fused_gru_cell", "aten::lstm_cell",
    "aten::gru_cell", "aten::rnn_tanh_cell", "aten::rnn_relu_cell",
    # backward nodes and ops, as torch-tb-profiler recorded them launching kernels
    "CudnnConvolutionBackward", "BmmBackward0", "aten::cudnn_convolution_transpose_backward",
    "CudnnConvolutionTransposeBackward", "MmBackward", "aten::cudnn_convolution_backward_weight", "aten::addmm_",
    "AddmvBackward", "MvBackward", "aten::cudnn_convolution_transpose_backward_weight",
    "aten::cudnn_convolution_transpose_backward_input", "AddmmBackward", "aten::cudnn_convolution_backward_input",
    "AddbmmBackward", "aten::cudnn_convolution_backward",
})


class TcEligibility(msgspec.Struct, frozen=True):
    """Kernel time launched by Tensor-Core eligible ops, and by every op (ns)."""

    eligible_ns: int
    launched_ns: int
    eligible_ops: int  # distinct eligible op names that launched kernels
    kernel_ns: int = 0  # every kernel's time
    tensor_core_ns: int = 0  # time of kernels whose name says Tensor Cores (torch-tb-profiler's list or `tables`')

    @property
    def tensor_core_share(self) -> float:
        """Tensor-Core kernel time over all kernel time (0 without kernels)."""
        return self.tensor_core_ns / self.kernel_ns if self.kernel_ns > 0 else 0.0

    @property
    def share(self) -> float:
        """Eligible kernel time over the kernel time ops launched (0 when ops launched none)."""
        return self.eligible_ns / self.launched_ns if self.launched_ns > 0 else 0.0


def tc_eligibility(model: TraceModel, index: TableIndex) -> TcEligibility:
    """The kernel time the bottom-most eligible ops launched, over the kernel time every op launched."""
    ops = index.ops
    kernel = model.kind[index.act_rows] == Kind.KERNEL
    owner = ops.owner.astype(np.int64)
    launched = kernel & index.act_linked & (owner >= 0)
    dur = index.act_end_ns - index.act_start_ns
    tbprof_tc = np.array([uses_tensor_cores_tbprof(model.names[i]) for i in index.act_name_ids.tolist()], bool)
    tc = kernel & (index.tensor_core | tbprof_tc)[index.act_name_ix]
    kernel_ns, tc_ns = int(dur[kernel].sum()), int(dur[tc].sum())
    if ops.size == 0 or not launched.any():
        return TcEligibility(0, 0, 0, kernel_ns, tc_ns)
    eligible_name = np.array([model.names[i] in TC_ELIGIBLE_OPS for i in ops.name_ids.tolist()], bool)
    eligible = eligible_name[ops.name_ix]
    prefix = np.concatenate(([0], np.cumsum(eligible)))
    below = prefix[ops.subtree_end.astype(np.int64)] - prefix[np.arange(ops.size) + 1]  # eligible strict descendants
    bottom = eligible & (below == 0)
    mine = launched & bottom[np.maximum(owner, 0)]
    names = unique(ops.name_ix[owner[mine]]).size if mine.any() else 0
    return TcEligibility(int(dur[mine].sum()), int(dur[launched].sum()), int(names), kernel_ns, tc_ns)
