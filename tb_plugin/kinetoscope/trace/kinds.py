"""Normalized event kinds and the one table that maps raw Kineto categories onto them.

Kineto renamed its categories in 2021-06 and 2022-04 (see trace-format.md §6.1); every era maps onto
`Kind`. Names that decide a role (steps, DataLoader waits, synchronizations) also live here.
"""
from __future__ import annotations

import enum
import re


class Kind(enum.IntEnum):
    """What a complete (`X`) event is, whatever era wrote it."""

    CPU_OP = 0
    USER_ANNOTATION = 1
    PYTHON_FUNCTION = 2
    RUNTIME = 3
    DRIVER = 4
    KERNEL = 5
    MEMCPY = 6
    MEMSET = 7
    GPU_USER_ANNOTATION = 8
    CUDA_SYNC = 9
    TRACE_SPAN = 10
    OTHER = 11


class LaneKind(enum.IntEnum):
    """Where a lane lives: a host thread, a GPU stream, or a marker row (`"Spans"`, `"Traces"`)."""

    CPU = 0
    GPU = 1
    MARKER = 2


# Lower-cased raw `cat` -> Kind. Unknown categories become OTHER and stay on their pid/tid lane.
CATEGORY_ALIASES: dict[str, Kind] = {
    "operator": Kind.CPU_OP,
    "cpu_op": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "python_function": Kind.PYTHON_FUNCTION,
    "runtime": Kind.RUNTIME,
    "cuda_runtime": Kind.RUNTIME,
    "xpu_runtime": Kind.RUNTIME,
    "mtia_runtime": Kind.RUNTIME,
    "privateuse1_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.DRIVER,
    "xpu_driver": Kind.DRIVER,
    "privateuse1_driver": Kind.DRIVER,
    "kernel": Kind.KERNEL,
    "mtia_ccp_events": Kind.KERNEL,  # MTIA's on-device work (Kineto aliases MTIA_CCP_EVENTS to CONCURRENT_KERNEL)
    "hpu_op": Kind.RUNTIME,  # Kineto aliases HPU_OP to RUNTIME (host side)
    "glow_runtime": Kind.RUNTIME,
    "memcpy": Kind.MEMCPY,
    "gpu_memcpy": Kind.MEMCPY,
    "memset": Kind.MEMSET,
    "gpu_memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_USER_ANNOTATION,
    "cuda_sync": Kind.CUDA_SYNC,
    "xpu_sync": Kind.CUDA_SYNC,
    "trace": Kind.TRACE_SPAN,
}

GPU_KINDS = frozenset({Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_USER_ANNOTATION, Kind.CUDA_SYNC})
# GPU activities count as busy time; gpu_user_annotation is shifted on purpose by Kineto and cuda_sync is a wait.
ACTIVITY_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
LAUNCH_KINDS = (Kind.RUNTIME, Kind.DRIVER)
# 2021 files (Kineto <= 2021-06) write ops and user annotations alike under this category.
LEGACY_OP_CATEGORY = "Operator"
# What the analyses call "a CPU op": the outermost of these names the culprit of a host gap.
CPU_OP_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION)

_AUTOGRAD_NODE = re.compile(r"Backward\d*$")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
# Serving frameworks mark each engine iteration with a user annotation instead of ProfilerStep: vLLM and
# SGLang `execute_<tokens>_context_...` / xDiT `execute_diffusion_...`, SGLang's scheduler `step[DECODE bs=32]`.
ITERATION_ANNOTATION_RE = re.compile(r"^(execute_|step\[)")
# The main process waiting for the next batch. DataPipe iteration (`enumerate(DataPipe)#...`) runs inside the
# DataLoader's own fetch (or in a worker), so it is never DataLoader time of its own (torch-tb-profiler agrees).
DATALOADER_PREFIXES = ("enumerate(DataLoader)#",)
# Stream capture of a CUDA/HIP graph: launches between these calls are recorded, not run (no device activity).
CAPTURE_BEGIN_RE = re.compile(r"^(cuda|cu|hip)StreamBeginCapture")
CAPTURE_END_RE = re.compile(r"^(cuda|cu|hip)StreamEndCapture")
# Calls that block the host until device work finishes. Polls (cudaEventQuery, cudaStreamQuery and their
# cu*/hip* twins) return at once whatever the device state, so they are never syncs, however often they
# run; cudaStreamWaitEvent is a device-side wait and does not block the host either.
SYNC_CALLS = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpy2D",
    "cudaMemcpy3D", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol", "cudaMemset", "cudaThreadSynchronize",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH", "cuMemcpyHtoD", "cuMemcpy", "cuMemcpy_v2",
    "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy", "hipMemcpyDtoH",
    "hipMemcpyHtoD", "hipMemset", "hipCtxSynchronize",
})
# Calls that send work to a device (trace-format.md §7): each should own device activity in the trace.
LAUNCH_CALLS = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchCooperativeKernel",
    "cudaLaunchCooperativeKernelMultiDevice", "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync",
    "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyAsync",
    "hipMemcpyWithStream", "hipMemsetAsync", "hipGraphLaunch", "runFunction - job_prep_and_submit_for_execution",
})
POLL_CALLS = frozenset({"cudaEventQuery", "cudaStreamQuery", "cuEventQuery", "cuStreamQuery", "hipEventQuery",
                        "hipStreamQuery"})
# A graph launch replays every node of a captured graph under one correlation id (one launch, many activities).
GRAPH_LAUNCH_CALLS = frozenset({"cudaGraphLaunch", "cudaGraphLaunch_v10000", "cuGraphLaunch", "hipGraphLaunch",
                                "cudaGraphLaunch_ptsz", "cuGraphLaunch_ptsz"})
# Communication kernels: every NCCL/RCCL naming era (ncclKernel_*, ncclDevKernel_*, rccl*) contains one of these.
COMM_KERNEL_MARKERS = ("nccl", "rccl")
# CPU-side collectives: record_param_comms ops, `nccl:*`/`gloo:*` annotations and `c10d::*` ops.
COLLECTIVE_PREFIXES = ("nccl:", "gloo:", "c10d::", "record_param_comms")


def kind_of_category(cat: str) -> Kind:
    """Map one raw `cat` string onto its Kind (case-insensitive, as torch-tb-profiler did)."""
    return CATEGORY_ALIASES.get(cat.lower(), Kind.OTHER)


def is_dataloader_name(name: str) -> bool:
    """True for the main-process DataLoader wait annotations (`enumerate(DataLoader)#...__next__`)."""
    return name.startswith(DATALOADER_PREFIXES) and "__next__" in name



def is_comm_kernel_name(name: str) -> bool:
    """True for NCCL/RCCL kernels, whatever the naming era (case-insensitive `nccl` / `rccl`)."""
    lowered = name.lower()
    return any(marker in lowered for marker in COMM_KERNEL_MARKERS)


def is_collective_name(name: str) -> bool:
    """True for CPU-side collective ops and annotations (`record_param_comms`, `nccl:*`, `gloo:*`, `c10d::*`)."""
    return name.startswith(COLLECTIVE_PREFIXES)


def is_annotation_name(name: str) -> bool:
    """True for names that label a region rather than an operator: `## forward ##`, `Optimizer.step#SGD.step`.

    Operators are namespaced (`aten::`, `c10d::`, `autograd::engine::...`), autograd nodes
    (`AddmmBackward`, `MseLossBackward0`) or bare identifiers: 2021 files write ops without a namespace
    (`detach_`, `Broadcast`, `ReduceAddCoalesced`), and user annotations under the same `Operator` category.
    A record_function label is told apart by what an identifier never holds: a space, `#`, parentheses.
    """
    return "::" not in name and _AUTOGRAD_NODE.search(name) is None and _IDENTIFIER.fullmatch(name) is None
