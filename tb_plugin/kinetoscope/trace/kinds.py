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
# What the analyses call "a CPU op": the outermost of these names the culprit of a host gap.
CPU_OP_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION)

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
DATALOADER_PREFIXES = ("enumerate(DataLoader)#", "enumerate(DataPipe)#")
# Host-blocking synchronizations (cudaStreamWaitEvent is a GPU-side wait and does not block the host).
SYNC_CALLS = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpy2D",
    "cudaMemcpy3D", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol", "cudaMemset", "cudaEventQuery",
    "cudaStreamQuery", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyDtoH_v2",
    "cuMemcpyHtoD_v2", "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy",
})
NCCL_PREFIXES = ("nccl", "ncclKernel", "ncclDevKernel", "rccl")


def kind_of_category(cat: str) -> Kind:
    """Map one raw `cat` string onto its Kind (case-insensitive, as torch-tb-profiler did)."""
    return CATEGORY_ALIASES.get(cat.lower(), Kind.OTHER)


def is_dataloader_name(name: str) -> bool:
    """True for the main-process DataLoader wait annotations (`enumerate(DataLoader)#...__next__`)."""
    return name.startswith(DATALOADER_PREFIXES) and "__next__" in name

