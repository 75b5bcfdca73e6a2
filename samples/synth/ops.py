"""Training-loop building blocks shared by the scenarios.

A small conv + linear model: the DataLoader wait, the host-to-device copy, forward and
backward layers (each an outer op, an inner op and one kernel), the optimizer, ``loss.item()``,
pure-CPU ops and bursts of tiny launch-bound ops. Every block draws its jitter from the
timeline's random generator, so the order of calls fixes the trace.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Callable

from .core import CPU_KEY, CUDA_KEY, MAIN_STREAM, MIB, GpuAct, Timeline

DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"

K_CONV = (
    "void cudnn::cnn::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false,"
    " true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params,"
    " unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)"
)
K_ELEMENTWISE = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,"
    " at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>,"
    " at::detail::Array<char*, 3>)"
)
K_RELU = "void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_kernel_cuda, at::detail::Array<char*, 2> >"
K_POOL = "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>"
K_GEMM = "ampere_sgemm_128x64_tn"
K_REDUCE = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float> > >"
K_NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
K_FOREACH = (
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)"
    "::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0> >"
)

Layer = tuple[str, str, str, float]
FORWARD: tuple[Layer, ...] = (
    ("aten::conv2d", "aten::cudnn_convolution", K_CONV, 1.0),
    ("aten::relu", "aten::clamp_min", K_RELU, 0.25),
    ("aten::max_pool2d", "aten::max_pool2d_with_indices", K_POOL, 0.3),
    ("aten::linear", "aten::addmm", K_GEMM, 0.75),
    ("aten::mse_loss", "aten::mean", K_REDUCE, 0.1),
)
BACKWARD: tuple[Layer, ...] = tuple(
    (f"autograd::engine::evaluate_function: {grad}", grad, kernel, weight)
    for grad, kernel, weight in (
        ("MseLossBackward0", K_ELEMENTWISE, 0.1),
        ("AddmmBackward0", K_GEMM, 1.2),
        ("MaxPool2DWithIndicesBackward0", K_POOL, 0.4),
        ("ReluBackward0", K_ELEMENTWISE, 0.25),
        ("ConvolutionBackward0", K_CONV, 1.6),
    )
)
TINY_OPS = ("aten::add", "aten::mul", "aten::sigmoid", "aten::addcmul", "aten::div", "aten::sub")
CPU_POST_OPS = (("aten::sum", 500.0), ("aten::argmax", 700.0), ("aten::cat", 600.0))

Hooks = dict[int, Callable[[], None]]


@dataclass
class Loop:
    """What a scenario needs to know about the span it fills."""

    steps: int
    first_step: int
    peak: int
    expected: Counter[str] = field(default_factory=Counter)


def _batch_bytes(tl: Timeline, peak: bool) -> int:
    """CPU bytes of one collated batch; the planted memory step gets twice as much."""
    size = int(1.5 * MIB * tl.rng.uniform(0.9, 1.1)) // 512 * 512
    return 2 * size if peak else size


def dataloader(tl: Timeline, us: float, peak: bool) -> int:
    """The DataLoader wait: mostly waiting, then a collate that allocates the batch."""
    with tl.op(DATALOADER, annotation=True, pre=us * 0.9, post=1.0):
        with tl.op("aten::stack", pre=2.0):
            addr = tl.alloc(CPU_KEY, _batch_bytes(tl, peak))
            tl.work(us * 0.08)
    return addr


def h2d(tl: Timeline, batch: int, copy_us: float, spike: bool = False) -> int:
    """``batch.to(device)``: one pinned HtoD memcpy; frees the CPU batch."""
    with tl.op("aten::to"), tl.op("aten::_to_copy"):
        if spike:
            tl.free(tl.alloc(CUDA_KEY, 64 * MIB))
        nbytes = 4 * MIB
        addr = tl.alloc(CUDA_KEY, nbytes)
        with tl.op("aten::copy_"):
            tl.launch(
                "cudaMemcpyAsync", [("Memcpy HtoD (Pinned -> Device)", copy_us)],
                kind="memcpy", nbytes=nbytes, call=8.0,
            )
        tl.free(batch)
    return addr


def _layer(tl: Timeline, layer: Layer, scale: float, *, act: bool, free: int | None, spike: bool, gpu: bool) -> int | None:
    """One model layer: outer op, inner op, optional workspace spike, kernel or CPU work."""
    outer, inner, kernel, weight = layer
    addr = None
    key = CUDA_KEY if gpu else CPU_KEY
    with tl.op(outer, pre=2.0), tl.op(inner, pre=1.5, post=0.5):
        if spike:
            tl.free(tl.alloc(key, 64 * MIB))
        if act:
            addr = tl.alloc(key, int(2 * MIB * weight * tl.rng.uniform(0.8, 1.2)) // 512 * 512)
        if gpu:
            tl.kernel(kernel, weight * scale)
        else:
            tl.work(weight * scale)
        if free is not None:
            tl.free(free)
    return addr


def forward(tl: Timeline, scale: float, *, spike: bool = False, layers: Sequence[Layer] = FORWARD,
            after: Hooks | None = None, gpu: bool = True) -> list[int]:
    """Runs the forward layers; ``after[i]`` runs after layer ``i``. Returns activations."""
    acts = []
    for index, layer in enumerate(layers):
        addr = _layer(tl, layer, scale, act=True, free=None, spike=spike and index == 0, gpu=gpu)
        acts.append(addr)
        if after and index in after:
            after[index]()
    return [a for a in acts if a is not None]


def backward(tl: Timeline, scale: float, acts: list[int], *, after: Hooks | None = None, gpu: bool = True) -> None:
    """Runs the backward layers; each frees one activation."""
    for index, layer in enumerate(BACKWARD):
        _layer(tl, layer, scale, act=False, free=acts.pop() if acts else None, spike=False, gpu=gpu)
        if after and index in after:
            after[index]()


def optimizer(tl: Timeline, step_us: float, *, gpu: bool = True, mark: bool = False) -> None:
    """``zero_grad`` (a memset) and ``step`` (one fused foreach kernel)."""
    with tl.op("Optimizer.zero_grad#SGD.zero_grad", annotation=True, pre=3.0):
        with tl.op("aten::zero_"), tl.op("aten::fill_"):
            if gpu:
                tl.launch("cudaMemsetAsync", [("Memset (Device)", 30.0)], kind="memset", nbytes=48 * MIB)
            else:
                tl.work(20.0)
    with tl.op("Optimizer.step#SGD.step", annotation=True, pre=3.0):
        with tl.op("aten::_foreach_add_"):
            if not gpu:
                tl.work(step_us)
                return
            acts = tl.launch("cudaLaunchKernel", [(K_FOREACH, step_us)])
        if mark:
            tl.mark("Optimizer.step#SGD.step", acts)


def loss_item(tl: Timeline, *, device_sync: bool = False) -> None:
    """``loss.item()`` (DtoH copy + stream sync) or ``torch.cuda.synchronize()``."""
    if device_sync:
        tl.sync("cudaDeviceSynchronize")
        return
    with tl.op("aten::item"), tl.op("aten::_local_scalar_dense"):
        _copy_loss(tl)
        tl.sync("cudaStreamSynchronize", stream=MAIN_STREAM)


def loss_copy(tl: Timeline) -> None:
    """``loss.item()``'s copy without its sync (the loss read later, asynchronously)."""
    with tl.op("aten::item"), tl.op("aten::_local_scalar_dense"):
        _copy_loss(tl)


def _copy_loss(tl: Timeline) -> None:
    tl.launch("cudaMemcpyAsync", [("Memcpy DtoH (Device -> Pageable)", 2.0)], kind="memcpy", nbytes=4)


def pure_cpu(tl: Timeline, name: str, us: float, *, annotation: bool = False) -> None:
    """A long op that never launches GPU work (with a small CPU allocation)."""
    with tl.op(name, annotation=annotation, pre=2.0):
        addr = tl.alloc(CPU_KEY, 4096)
        tl.work(us)
        tl.free(addr)


def tiny_ops(tl: Timeline, count: int) -> list[GpuAct]:
    """Launch-bound ops: a 2 µs kernel per 8 µs of CPU, reaching the GPU 3 µs after return."""
    acts = []
    for index in range(count):
        with tl.op(TINY_OPS[index % len(TINY_OPS)], pre=1.0, post=1.0):
            acts.append(tl.kernel(K_ELEMENTWISE, 2.0, call=6.0, lat=9.0))
    return acts


def run_steps(tl: Timeline, loop: Loop, body: Callable[[int], None]) -> None:
    """Runs ``body(i)`` inside ``ProfilerStep#N`` for every step of the span."""
    for index in range(loop.steps):
        with tl.op(f"ProfilerStep#{loop.first_step + index}", annotation=True, pre=3.0, post=2.0):
            body(index)
        tl.work(1.0)


def cpu_step(tl: Timeline, loop: Loop, i: int, *, dataloader_us: float, model_us: float, optimizer_us: float) -> None:
    """One training step of the model on the CPU (no GPU activity): fetch, forward, backward, optimizer."""
    batch = dataloader(tl, dataloader_us, i == loop.peak)
    acts = forward(tl, model_us, spike=i == loop.peak, gpu=False)
    backward(tl, model_us, acts, gpu=False)
    optimizer(tl, optimizer_us, gpu=False)
    tl.free(batch)
