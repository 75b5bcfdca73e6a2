"""Synthetic PyTorch-profiler (Kineto) traces with planted, known truth.

Each scenario simulates a single-GPU training loop: a main CPU thread with
``ProfilerStep#N`` annotations, ops nested inside them, CUDA runtime calls nested
inside the ops, and GPU activities that a per-stream queue model places on the GPU.
The generator renders the simulation in the exact Kineto JSON format of one of two
eras and computes the truth (idle gaps and their causes, launch statistics, steps,
memory peaks, verdict) from its own model, so the numbers are known by construction.

Library use::

    sys.path.insert(0, "<repo>/samples")
    import synth
    trace, truth = synth.make_trace("mixed", era="2024", seed=0, steps=6)

Command line::

    python samples/synth.py OUTDIR --scenario mixed --spans 2 --gzip --truth truth.json
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

SCENARIOS = ("dataloader", "launch", "sync", "host", "compute", "mixed", "cpu_only", "xss")
ERAS = ("2021", "2024")

DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_QUOTE = '"quoted" & <b>bold</b>'
NO_OP = "(no op)"
SYNC_CALLS = frozenset(
    {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy"}
)
FLOW_APIS = frozenset({"cudaLaunchKernel", "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync"})
CBID = {
    "cudaLaunchKernel": 211,
    "cudaMemcpyAsync": 41,
    "cudaMemsetAsync": 51,
    "cudaStreamSynchronize": 131,
    "cudaDeviceSynchronize": 165,
    "cudaEventRecord": 135,
    "cudaGraphLaunch": 311,
}
CATEGORIES = {
    "2024": {
        "op": "cpu_op",
        "annotation": "user_annotation",
        "runtime": "cuda_runtime",
        "kernel": "kernel",
        "memcpy": "gpu_memcpy",
        "memset": "gpu_memset",
    },
    "2021": {
        "op": "Operator",
        "annotation": "Operator",
        "runtime": "Runtime",
        "kernel": "Kernel",
        "memcpy": "Memcpy",
        "memset": "Memset",
    },
}
VERDICT_BY_CAUSE = {
    "host": "host-bound",
    "launch": "launch-overhead-bound",
    "sync": "sync-bound",
    "dataloader": "dataloader-bound",
    "unlinked": "host-bound",
}

BASE_PERIOD_NS = 7_889_238 * 10**9
BASE_NS_2024 = 227 * BASE_PERIOD_NS
START_NS_2021 = 1_623_142_620_000_000_000
MIB = 1 << 20
RESERVE_BLOCK = 2 * MIB
MAIN_STREAM = 7
SIDE_STREAM = 20
CUDA_KEY = (1, 0)
CPU_KEY = (0, -1)

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
K_FOREACH = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0> >"
K_NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"

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
XSS_FORWARD: tuple[Layer, ...] = ((XSS_IMG, "aten::cudnn_convolution", XSS_IMG, 1.0),) + FORWARD[1:]
TINY_OPS = ("aten::add", "aten::mul", "aten::sigmoid", "aten::addcmul", "aten::div", "aten::sub")
CPU_POST_OPS = (("aten::sum", 500.0), ("aten::argmax", 700.0), ("aten::cat", 600.0))

V100 = {
    "id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34079637504, "computeMajor": 7,
    "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
    "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 98304, "numSms": 80,
    "sharedMemPerBlockOptin": 98304,
}
H100 = {
    "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045477376, "computeMajor": 9,
    "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
    "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472, "numSms": 132,
    "sharedMemPerBlockOptin": 232448,
}


# ----------------------------------------------------------------------------------------
# Simulation model
# ----------------------------------------------------------------------------------------


@dataclass
class CpuSpan:
    """A CPU op or annotation on one thread (absolute ns)."""

    name: str
    annotation: bool
    start: int
    tid: int
    ext: int
    end: int = 0


@dataclass
class Runtime:
    """A CUDA runtime call; ``dropped`` calls are simulated but not written."""

    name: str
    start: int
    end: int
    tid: int
    corr: int
    ext: int
    dropped: bool = False


@dataclass
class GpuAct:
    """A kernel, memcpy or memset on one stream of device 0."""

    kind: str
    name: str
    start: int
    end: int
    stream: int
    corr: int
    ext: int
    nbytes: int = 0


@dataclass
class GpuMark:
    """A ``gpu_user_annotation`` span (never GPU busy time)."""

    name: str
    start: int
    end: int
    stream: int
    ext: int


@dataclass
class MemEvent:
    """A ``[memory]`` instant event."""

    ts: int
    tid: int
    key: tuple[int, int]
    nbytes: int
    allocated: int
    reserved: int
    addr: int


@dataclass
class Carry:
    """State that one span hands to the next span of the same run."""

    t: int
    ext: int
    corr: int
    memory: dict[tuple[int, int], list[int]]


class Timeline:
    """Builds one span: a cursor on the main CPU thread and a FIFO queue per GPU stream."""

    def __init__(self, rng: random.Random, quantum: int, pid: int, carry: Carry) -> None:
        """Starts a span at ``carry.t`` with the ids and allocator state of ``carry``."""
        self.rng = rng
        self.quantum = quantum
        self.pid = pid
        self.t = carry.t
        self.begin = carry.t
        self.ext = self.first_ext = carry.ext
        self.corr = self.first_corr = carry.corr
        self.memory = {key: list(value) for key, value in carry.memory.items()}
        self.cpu: list[CpuSpan] = []
        self.runtime: list[Runtime] = []
        self.gpu: list[GpuAct] = []
        self.marks: list[GpuMark] = []
        self.mem: list[MemEvent] = []
        self.stream_free: dict[int, int] = {}
        self.side_tids: set[int] = set()
        self._stack: list[CpuSpan] = []
        self._live: dict[int, tuple[tuple[int, int], int]] = {}

    def ns(self, us: float) -> int:
        """Converts µs to ns, rounded to the era's time quantum (at least one quantum)."""
        return max(self.quantum, round(us * 1000 / self.quantum) * self.quantum)

    def jit(self, us: float, rel: float = 0.05) -> int:
        """Returns ``us`` jittered by up to ``rel`` (relative), in quantised ns."""
        return self.ns(us * self.rng.uniform(1.0 - rel, 1.0 + rel))

    def work(self, us: float, rel: float = 0.05) -> None:
        """Advances the main-thread cursor by pure CPU (or Python) time."""
        self.t += self.jit(us, rel)

    def next_ext(self) -> int:
        """Allocates the next ``External id``."""
        self.ext += 1
        return self.ext

    def next_corr(self) -> int:
        """Allocates the next correlation id (with realistic small holes)."""
        self.corr += self.rng.choice((1, 1, 2, 3))
        return self.corr

    @property
    def current_ext(self) -> int:
        """The ``External id`` of the innermost open op (0 outside any op)."""
        return self._stack[-1].ext if self._stack else 0

    @contextmanager
    def op(self, name: str, *, annotation: bool = False, pre: float = 1.0, post: float = 1.0) -> Iterator[CpuSpan]:
        """Opens a CPU op (or user annotation) on the main thread around the body."""
        span = CpuSpan(name, annotation, self.t, self.pid, self.next_ext())
        self.cpu.append(span)
        self._stack.append(span)
        self.work(pre, 0.03)
        yield span
        self.work(post, 0.03)
        span.end = self.t
        self._stack.pop()

    def launch(
        self,
        api: str,
        items: Sequence[tuple[str, float]],
        *,
        kind: str = "kernel",
        stream: int = MAIN_STREAM,
        call: float = 6.0,
        lat: float = 9.0,
        nbytes: int = 0,
        dropped: bool = False,
    ) -> list[GpuAct]:
        """Issues one launch call; its activities run back to back once the stream is free."""
        start = self.t
        self.t += self.jit(call, 0.03)
        corr, ext = self.next_corr(), self.current_ext
        self.runtime.append(Runtime(api, start, self.t, self.pid, corr, ext, dropped))
        at = max(start + self.jit(lat, 0.03), self.stream_free.get(stream, 0))
        acts = []
        for name, dur in items:
            acts.append(GpuAct(kind, name, at, at + self.jit(dur), stream, corr, ext, nbytes))
            at = acts[-1].end
        self.gpu.extend(acts)
        self.stream_free[stream] = at
        return acts

    def kernel(self, name: str, dur: float, **kwargs: Any) -> GpuAct:
        """Launches one kernel with ``cudaLaunchKernel``."""
        return self.launch("cudaLaunchKernel", [(name, dur)], **kwargs)[0]

    def call(self, api: str, us: float = 2.0) -> None:
        """A runtime call without GPU work (e.g. ``cudaEventRecord``)."""
        start = self.t
        self.t += self.jit(us)
        self.runtime.append(Runtime(api, start, self.t, self.pid, self.next_corr(), self.current_ext))

    def sync(self, api: str, *, stream: int | None = None, wake: float = 15.0) -> None:
        """Blocks the CPU until the stream (or the whole device) drains, plus a wake-up."""
        start = self.t
        if stream is None:
            drain = max(self.stream_free.values(), default=start)
        else:
            drain = self.stream_free.get(stream, start)
        self.t = max(start + self.jit(3.0), drain + self.jit(wake))
        self.runtime.append(Runtime(api, start, self.t, self.pid, self.next_corr(), self.current_ext))

    def side_sync(self, tid: int, start: int, end: int) -> None:
        """Puts ``aten::item`` + ``cudaStreamSynchronize`` on another thread (a decoy)."""
        self.side_tids.add(tid)
        self.cpu.append(CpuSpan("aten::item", False, start, tid, self.next_ext(), end))
        margin = (end - start) // 10
        self.runtime.append(Runtime("cudaStreamSynchronize", start + margin, end - margin, tid, self.next_corr(), self.ext))

    def mark(self, name: str, acts: Sequence[GpuAct]) -> None:
        """Adds a ``gpu_user_annotation`` over ``acts``, widened like Kineto (ts -1 ns, dur +2 ns)."""
        start, end = min(a.start for a in acts), max(a.end for a in acts)
        self.marks.append(GpuMark(name, start - 1, end + 1, acts[0].stream, self.current_ext))

    def alloc(self, key: tuple[int, int], nbytes: int) -> int:
        """Records an allocation of ``nbytes`` on ``key`` = (Device Type, Device Id)."""
        state = self.memory[key]
        state[0] += nbytes
        if key != CPU_KEY:
            state[1] = max(state[1], -(-state[0] // RESERVE_BLOCK) * RESERVE_BLOCK)
        addr = (0x7F3A00000000 if key != CPU_KEY else 0x55C0DE000000) + 0x100000 * (len(self.mem) + 1)
        self._live[addr] = (key, nbytes)
        self.mem.append(MemEvent(self.t, self.pid, key, nbytes, state[0], state[1], addr))
        self.work(0.2, 0.0)
        return addr

    def free(self, addr: int) -> None:
        """Records the free of a live allocation."""
        key, nbytes = self._live.pop(addr)
        state = self.memory[key]
        state[0] -= nbytes
        self.mem.append(MemEvent(self.t, self.pid, key, -nbytes, state[0], state[1], addr))
        self.work(0.2, 0.0)


# ----------------------------------------------------------------------------------------
# Training-loop building blocks
# ----------------------------------------------------------------------------------------


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


def _dataloader(tl: Timeline, us: float, peak: bool) -> int:
    """The DataLoader wait: mostly waiting, then a collate that allocates the batch."""
    with tl.op(DATALOADER, annotation=True, pre=us * 0.9, post=1.0):
        with tl.op("aten::stack", pre=2.0):
            addr = tl.alloc(CPU_KEY, _batch_bytes(tl, peak))
            tl.work(us * 0.08)
    return addr


def _h2d(tl: Timeline, batch: int, copy_us: float, spike: bool = False) -> int:
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


Hooks = dict[int, Callable[[], None]]


def _forward(tl: Timeline, scale: float, *, spike: bool = False, layers: Sequence[Layer] = FORWARD,
             after: Hooks | None = None, gpu: bool = True) -> list[int]:
    """Runs the forward layers; ``after[i]`` runs after layer ``i``. Returns activations."""
    acts = []
    for index, layer in enumerate(layers):
        addr = _layer(tl, layer, scale, act=True, free=None, spike=spike and index == 0, gpu=gpu)
        acts.append(addr)
        if after and index in after:
            after[index]()
    return [a for a in acts if a is not None]


def _backward(tl: Timeline, scale: float, acts: list[int], *, after: Hooks | None = None, gpu: bool = True) -> None:
    """Runs the backward layers; each frees one activation."""
    for index, layer in enumerate(BACKWARD):
        _layer(tl, layer, scale, act=False, free=acts.pop() if acts else None, spike=False, gpu=gpu)
        if after and index in after:
            after[index]()


def _optimizer(tl: Timeline, step_us: float, *, gpu: bool = True, mark: bool = False) -> None:
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


def _loss_item(tl: Timeline, *, device_sync: bool = False) -> None:
    """``loss.item()`` (DtoH copy + stream sync) or ``torch.cuda.synchronize()``."""
    if device_sync:
        tl.sync("cudaDeviceSynchronize")
        return
    with tl.op("aten::item"), tl.op("aten::_local_scalar_dense"):
        tl.launch("cudaMemcpyAsync", [("Memcpy DtoH (Device -> Pageable)", 2.0)], kind="memcpy", nbytes=4)
        tl.sync("cudaStreamSynchronize", stream=MAIN_STREAM)


def _pure_cpu(tl: Timeline, name: str, us: float, *, annotation: bool = False) -> None:
    """A long op that never launches GPU work (with a small CPU allocation)."""
    with tl.op(name, annotation=annotation, pre=2.0):
        addr = tl.alloc(CPU_KEY, 4096)
        tl.work(us)
        tl.free(addr)


def _tiny_ops(tl: Timeline, count: int) -> list[GpuAct]:
    """Launch-bound ops: a 2 µs kernel per 8 µs of CPU, reaching the GPU 3 µs after return."""
    acts = []
    for index in range(count):
        with tl.op(TINY_OPS[index % len(TINY_OPS)], pre=1.0, post=1.0):
            acts.append(tl.kernel(K_ELEMENTWISE, 2.0, call=6.0, lat=9.0))
    return acts


def _run_steps(tl: Timeline, loop: Loop, body: Callable[[int], None]) -> None:
    """Runs ``body(i)`` inside ``ProfilerStep#N`` for every step of the span."""
    for index in range(loop.steps):
        with tl.op(f"ProfilerStep#{loop.first_step + index}", annotation=True, pre=3.0, post=2.0):
            body(index)
        tl.work(1.0)


# ----------------------------------------------------------------------------------------
# Scenarios: each fills the span and records the gap causes it planted
# ----------------------------------------------------------------------------------------


def _scenario_dataloader(tl: Timeline, loop: Loop) -> None:
    """A 10 ms DataLoader wait per step while the GPU has ~2 ms of work."""
    def body(i: int) -> None:
        batch = _dataloader(tl, 10_000.0, i == loop.peak)
        inp = _h2d(tl, batch, 200.0)
        acts = _forward(tl, 330.0, spike=i == loop.peak)
        _backward(tl, 330.0, acts)
        _optimizer(tl, 40.0)
        tl.free(inp)

    _run_steps(tl, loop, body)
    loop.expected.update(dataloader=loop.steps - 1)


def _scenario_launch(tl: Timeline, loop: Loop, ops: int = 100) -> None:
    """100 tiny kernels per step, each shorter than its launch call."""
    def body(i: int) -> None:
        batch = _dataloader(tl, 25.0, i == loop.peak)
        inp = _h2d(tl, batch, 8.0, spike=i == loop.peak)
        _tiny_ops(tl, ops)
        tl.free(inp)

    _run_steps(tl, loop, body)
    loop.expected.update(launch=loop.steps * ops, dataloader=loop.steps - 1)


def _scenario_sync(tl: Timeline, loop: Loop) -> None:
    """``loss.item()`` / ``cuda.synchronize()`` mid-step, then 1.2 ms of CPU logging."""
    def body(i: int) -> None:
        batch = _dataloader(tl, 40.0, i == loop.peak)
        inp = _h2d(tl, batch, 60.0)
        acts = _forward(tl, 320.0, spike=i == loop.peak)
        _loss_item(tl, device_sync=i % 2 == 1)
        with tl.op("## log_metrics ##", annotation=True, pre=5.0):
            for name, us in CPU_POST_OPS:
                _pure_cpu(tl, name, us * 0.6)
        _backward(tl, 320.0, acts)
        _optimizer(tl, 250.0)
        tl.free(inp)

    _run_steps(tl, loop, body)
    loop.expected.update(sync=loop.steps)


def _scenario_host(tl: Timeline, loop: Loop) -> None:
    """``aten::nonzero`` (1.8 ms) and ``## postprocess ##`` (1.8 ms) starve the GPU."""
    def body(i: int) -> None:
        batch = _dataloader(tl, 40.0, i == loop.peak)
        inp = _h2d(tl, batch, 60.0)
        nonzero = {1: lambda: _pure_cpu(tl, "aten::nonzero", 1800.0)}
        acts = _forward(tl, 200.0, spike=i == loop.peak, after=nonzero)
        _backward(tl, 200.0, acts)
        with tl.op("## postprocess ##", annotation=True, pre=5.0):
            for name, us in CPU_POST_OPS:
                _pure_cpu(tl, name, us)
        _optimizer(tl, 250.0)
        tl.free(inp)

    _run_steps(tl, loop, body)
    loop.expected.update(host=2 * loop.steps)


def _compute_step(tl: Timeline, loop: Loop, i: int, *, xss: bool = False) -> None:
    """A compute-bound step: ~6 ms of long kernels, ``loss.item()`` at the end."""
    batch = _dataloader(tl, 30.0, i == loop.peak)
    inp = _h2d(tl, batch, 100.0)
    if xss:
        with tl.op(XSS_IMG, pre=2.0):
            if i == loop.peak:
                tl.free(tl.alloc(CUDA_KEY, 64 * MIB))
            tl.kernel(XSS_QUOTE, 80.0)
        _pure_cpu(tl, XSS_QUOTE, 400.0)
    acts = _forward(tl, 1000.0, spike=i == loop.peak and not xss, layers=XSS_FORWARD if xss else FORWARD)
    _backward(tl, 1000.0, acts)
    _optimizer(tl, 300.0)
    _loss_item(tl)
    tl.free(inp)
    tl.work(120.0)


def _scenario_compute(tl: Timeline, loop: Loop) -> None:
    """Long kernels back to back; only a short sync gap between steps."""
    _run_steps(tl, loop, lambda i: _compute_step(tl, loop, i))
    loop.expected.update(sync=loop.steps - 1)


def _scenario_xss(tl: Timeline, loop: Loop) -> None:
    """Like ``compute`` with HTML-hostile op and kernel names (and a host gap they cause)."""
    _run_steps(tl, loop, lambda i: _compute_step(tl, loop, i, xss=True))
    loop.expected.update(sync=loop.steps - 1, host=loop.steps)


def _scenario_cpu_only(tl: Timeline, loop: Loop) -> None:
    """The same model on the CPU: no GPU activity at all."""
    def body(i: int) -> None:
        batch = _dataloader(tl, 150.0, i == loop.peak)
        acts = _forward(tl, 1000.0, spike=i == loop.peak, gpu=False)
        _backward(tl, 1000.0, acts, gpu=False)
        _optimizer(tl, 300.0, gpu=False)
        tl.free(batch)

    _run_steps(tl, loop, body)


def _metrics_burst(tl: Timeline) -> None:
    """Plants host, launch and host gaps for the mixed scenario.

    0.9 ms without any op (with a decoy sync on another thread), 12 tiny kernels under
    ``## metrics ##`` (11 launch gaps), then a 2 ms ``aten::nonzero``.
    """
    drain = tl.stream_free[MAIN_STREAM]
    idle_end = tl.t + tl.jit(900.0)
    middle = (drain + idle_end) // 2
    tl.side_sync(tl.pid + 7, middle - tl.ns(150.0), middle + tl.ns(150.0))
    tl.t = idle_end
    with tl.op("## metrics ##", annotation=True):
        tl.mark("## metrics ##", _tiny_ops(tl, 12))
    _pure_cpu(tl, "aten::nonzero", 2000.0)


def _forward_plant(tl: Timeline, pattern: int, graph: bool) -> None:
    """The mixed scenario's mid-forward plant for a step with ``pattern`` = index % 6."""
    if pattern == 3:
        _metrics_burst(tl)
    elif pattern == 5:
        tl.work(500.0)
        with tl.op("aten::mul", pre=2.0):
            tl.kernel(K_ELEMENTWISE, 30.0, dropped=True)
    if graph:
        with tl.op("## graph replay ##", annotation=True):
            tl.launch("cudaGraphLaunch", [(K_GEMM, 60.0), (K_RELU, 20.0), (K_GEMM, 60.0)])


def _allreduce(tl: Timeline) -> None:
    """An NCCL all-reduce on the side stream, overlapping the main stream's backward."""
    with tl.op("nccl:all_reduce", annotation=True), tl.op("record_param_comms"):
        tl.kernel(K_NCCL, 250.0, stream=SIDE_STREAM)
        tl.call("cudaEventRecord")


def _scenario_mixed(tl: Timeline, loop: Loop) -> None:
    """Every gap cause, two streams, a CUDA graph, memcpy/memset, NCCL, GPU annotations."""
    if loop.steps < 6:
        raise ValueError("the mixed scenario needs at least 6 steps")

    def body(i: int) -> None:
        pattern = i % 6
        batch = _dataloader(tl, 1500.0 if pattern == 1 else 30.0, i == loop.peak)
        inp = _h2d(tl, batch, 40.0)
        plant = {1: lambda: _forward_plant(tl, pattern, graph=i == 2)}
        acts = _forward(tl, 200.0, spike=i == loop.peak, after=plant)
        _backward(tl, 200.0, acts, after={1: lambda: _allreduce(tl)})
        _optimizer(tl, 60.0, mark=True)
        _loss_item(tl, device_sync=pattern == 4)
        tl.free(inp)
        tl.work(150.0)

    _run_steps(tl, loop, body)
    for i in range(loop.steps):
        if i:
            loop.expected["dataloader" if i % 6 == 1 else "sync"] += 1
        if i % 6 == 3:
            loop.expected.update(host=2, launch=11)
        if i % 6 == 5:
            loop.expected["unlinked"] += 1


SCENARIO_BUILDERS: dict[str, Callable[[Timeline, Loop], None]] = {
    "dataloader": _scenario_dataloader,
    "launch": _scenario_launch,
    "sync": _scenario_sync,
    "host": _scenario_host,
    "compute": _scenario_compute,
    "mixed": _scenario_mixed,
    "cpu_only": _scenario_cpu_only,
    "xss": _scenario_xss,
}


# ----------------------------------------------------------------------------------------
# Truth, computed from the simulation model (never from the rendered JSON)
# ----------------------------------------------------------------------------------------


class AmbiguousDesign(RuntimeError):
    """A planted quantity lies too close to a threshold to be a trustworthy truth."""


def _union(intervals: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merges intervals into sorted, disjoint ones."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _overlap(merged: Sequence[tuple[int, int]], start: int, end: int) -> int:
    """Length of ``[start, end]`` covered by disjoint ``merged`` intervals."""
    return sum(max(0, min(e, end) - max(s, start)) for s, e in merged)


def _outermost(tl: Timeline, tid: int, at: int) -> str:
    """Outermost non-``ProfilerStep#`` op/annotation running on ``tid`` at ``at``."""
    running = [s for s in tl.cpu if s.tid == tid and s.start <= at < s.end and not s.name.startswith("ProfilerStep#")]
    if not running:
        return NO_OP
    return min(running, key=lambda s: (s.start, -s.end)).name


def _require(condition: bool, what: str) -> None:
    """Raises :class:`AmbiguousDesign` unless ``condition`` holds."""
    if not condition:
        raise AmbiguousDesign(what)


class _Classifier:
    """Assigns a cause (and a culprit for host gaps) to every idle gap of device 0."""

    def __init__(self, tl: Timeline) -> None:
        """Indexes the model: runtime calls by correlation, DataLoader waits, syncs."""
        self.tl = tl
        self.launch_by_corr = {r.corr: r for r in tl.runtime if not r.dropped}
        self.loader = _union([(s.start, s.end) for s in tl.cpu if _is_loader(s.name)])
        self.syncs = [r for r in tl.runtime if r.name in SYNC_CALLS and not r.dropped]
        self.margin = 1000

    def cause(self, start: int, end: int) -> dict[str, Any]:
        """Classifies the gap ``[start, end]`` following the truth definition."""
        first = [g for g in self.tl.gpu if g.start == end]
        _require(len(first) == 1, f"gap ending at {end} must end at exactly one activity")
        covered = _overlap(self.loader, start, end) / (end - start)
        _require(not 0.4 < covered < 0.6, f"DataLoader covers {covered:.2f} of a gap")
        if covered >= 0.5:
            return {"start_ns": start, "end_ns": end, "cause": "dataloader", "culprit": None}
        launch = self.launch_by_corr.get(first[0].corr)
        if launch is None:
            return {"start_ns": start, "end_ns": end, "cause": "unlinked", "culprit": None}
        cause = self._thread_cause(launch, start, end)
        culprit = self._culprit(launch.tid, start, end) if cause == "host" else None
        return {"start_ns": start, "end_ns": end, "cause": cause, "culprit": culprit}

    def _thread_cause(self, launch: Runtime, start: int, end: int) -> str:
        """``sync``, ``host`` or ``launch`` for a gap whose next activity was launched by ``launch``."""
        for call in self.syncs:
            if call.tid == launch.tid:
                near = min(abs(call.end - start), abs(call.end - end))
                _require(near >= self.margin, "a sync call ends at a gap boundary")
                if start < call.end < end:
                    return "sync"
        _require(abs(launch.start - start) >= self.margin, "a launch starts at a gap start")
        return "host" if launch.start > start else "launch"

    def _culprit(self, tid: int, start: int, end: int) -> str:
        """The op running at the gap's midpoint, checked to be stable around it."""
        middle = (start + end) // 2
        names = {_outermost(self.tl, tid, middle + d) for d in (-self.margin, 0, self.margin)}
        _require(len(names) == 1, "a host gap's midpoint is at an op boundary")
        return names.pop()


def _is_loader(name: str) -> bool:
    """True for DataLoader waits (``enumerate(DataLoader)#...__next__``)."""
    return name.startswith("enumerate(DataLoader)#") and "__next__" in name


def _device_truth(tl: Timeline) -> dict[str, Any]:
    """Window, busy, idle and classified gaps of every device that had GPU activity."""
    if not tl.gpu:
        return {}
    merged = _union([(g.start, g.end) for g in tl.gpu])
    busy = sum(e - s for s, e in merged)
    window = [merged[0][0], merged[-1][1]]
    classifier = _Classifier(tl)
    gaps = [classifier.cause(a[1], b[0]) for a, b in zip(merged, merged[1:])]
    return {"0": {"window_ns": window, "busy_ns": busy, "idle_ns": window[1] - window[0] - busy, "gaps": gaps}}


def _steps_truth(tl: Timeline) -> list[dict[str, Any]]:
    """Per ``ProfilerStep#N``: DataLoader wait, GPU idle time and the stall flag."""
    busy = _union([(g.start, g.end) for g in tl.gpu])
    loader = _union([(s.start, s.end) for s in tl.cpu if _is_loader(s.name)])
    rows = []
    for step in sorted((s for s in tl.cpu if s.name.startswith("ProfilerStep#")), key=lambda s: s.start):
        waits = [(max(s, step.start), min(e, step.end)) for s, e in loader if s < step.end and e > step.start]
        wait = sum(e - s for s, e in waits)
        idle_in_wait = wait - sum(_overlap(busy, s, e) for s, e in waits)
        length = step.end - step.start
        _require(not 0.04 * length < wait < 0.06 * length, "DataLoader share of a step near 5%")
        _require(not 0.45 * wait < idle_in_wait < 0.55 * wait, "GPU idle share of a wait near 50%")
        rows.append({
            "name": step.name,
            "start_ns": step.start,
            "end_ns": step.end,
            "dataloader_ns": wait,
            "gpu_idle_ns": length - _overlap(busy, step.start, step.end),
            "stalled": wait >= 0.05 * length and 2 * idle_in_wait >= wait,
        })
    return rows


def _launch_truth(tl: Timeline) -> dict[str, Any]:
    """Launch offsets, queueing and latencies of every linked GPU activity."""
    launches = {r.corr: r for r in tl.runtime if not r.dropped}
    offsets, queued, latency, short = [], [], [], 0
    prev_end: dict[int, int] = {}
    for act in sorted(tl.gpu, key=lambda g: (g.start, g.end)):
        launch = launches.get(act.corr)
        previous = prev_end.get(act.stream)
        prev_end[act.stream] = act.end
        if launch is None:
            continue
        offsets.append(act.start - launch.start)
        queued.append(max(0, previous - launch.end) if previous is not None else 0)
        latency.append(act.start - max(launch.end, previous or 0))
        short += act.kind == "kernel" and act.end - act.start < launch.end - launch.start
    return {
        "pairs": len(offsets),
        "short_kernels": short,
        "offset_ns": sorted(offsets),
        "queued_ns": sorted(queued),
        "latency_ns": sorted(latency),
    }


def _memory_truth(tl: Timeline, era: str) -> dict[str, Any]:
    """Peak allocated/reserved bytes per device, when, and which op was running."""
    result: dict[str, Any] = {}
    for key in sorted({m.key for m in tl.mem}):
        events = sorted((m for m in tl.mem if m.key == key), key=lambda m: m.ts)
        running, curve = 0, []
        for event in events:
            running += event.nbytes
            curve.append(event.allocated if era == "2024" else running)
        peak = max(curve)
        _require(curve.count(peak) == 1, f"memory peak of {key} is not unique")
        at = events[curve.index(peak)]
        name = "cpu" if key == CPU_KEY else f"cuda:{key[1]}"
        result[name] = {
            "peak_allocated_bytes": peak,
            "peak_reserved_bytes": max(m.reserved for m in events) if era == "2024" else None,
            "peak_at_ns": at.ts,
            "peak_op": _outermost(tl, at.tid, at.ts),
        }
    return result


def _verdict(devices: dict[str, Any], steps: list[dict[str, Any]]) -> str:
    """The headline verdict from the device and step truth."""
    if not devices:
        return "cpu-only"
    stalled = sum(s["stalled"] for s in steps)
    _require(2 * stalled != len(steps), "exactly half of the steps stalled")
    if 2 * stalled > len(steps):
        return "dataloader-bound"
    device = max(devices.values(), key=lambda d: d["busy_ns"])
    share = device["idle_ns"] / (device["window_ns"][1] - device["window_ns"][0])
    _require(not 0.18 < share < 0.22, f"idle share {share:.3f} is near 20%")
    if share < 0.2:
        return "compute-bound"
    by_cause: Counter[str] = Counter()
    for gap in device["gaps"]:
        by_cause[VERDICT_BY_CAUSE[gap["cause"]]] += gap["end_ns"] - gap["start_ns"]
    ranked = by_cause.most_common(2)
    _require(len(ranked) == 1 or ranked[0][1] > 1.2 * ranked[1][1], "two causes tie for the verdict")
    return ranked[0][0]


def _truth(tl: Timeline, scenario: str, era: str, trace_begin: int, loop: Loop) -> dict[str, Any]:
    """The full truth of one span; checks that every planted gap cause came out as planned."""
    devices = _device_truth(tl)
    got = Counter(g["cause"] for d in devices.values() for g in d["gaps"])
    _require(got == loop.expected, f"{scenario}: planted causes {dict(loop.expected)} but got {dict(got)}")
    steps = _steps_truth(tl)
    starts = [trace_begin] + [s.start for s in tl.cpu] + [r.start for r in tl.runtime if not r.dropped]
    starts += [g.start for g in tl.gpu] + ([m.start for m in tl.marks] if era == "2024" else [])
    return {
        "scenario": scenario,
        "era": era,
        "trace_start_ns": min(starts),
        "devices": devices,
        "steps": steps,
        "launch": _launch_truth(tl),
        "memory": _memory_truth(tl, era),
        "verdict": _verdict(devices, steps),
    }


# ----------------------------------------------------------------------------------------
# Rendering in the Kineto JSON format of an era
# ----------------------------------------------------------------------------------------


@dataclass
class Render:
    """Converts model objects to Kineto events of one era."""

    era: str
    pid: int
    base_ns: int
    ev_idx: int = 0

    @property
    def cats(self) -> dict[str, str]:
        """Category names of this era."""
        return CATEGORIES[self.era]

    def ts(self, ns: int) -> float | int:
        """Timestamp as written: relative float µs (2024) or absolute integer µs (2021)."""
        return (ns - self.base_ns) / 1000 if self.era == "2024" else ns // 1000

    def dur(self, ns: int) -> float | int:
        """Duration as written."""
        return ns / 1000 if self.era == "2024" else ns // 1000

    def tid(self, tid: int, complete: bool) -> int | str:
        """CPU tid: in 2021 a string on ``X`` events and an int elsewhere."""
        return str(tid) if self.era == "2021" and complete else tid

    def stream(self, stream: int) -> int | str:
        """GPU lane tid: ``"stream 7"`` in 2021, the int stream id later."""
        return f"stream {stream}" if self.era == "2021" else stream

    def complete(self, cat: str, name: str, pid: int | str, tid: int | str, start: int, end: int, args: dict[str, Any]) -> dict[str, Any]:
        """An ``X`` event."""
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                "ts": self.ts(start), "dur": self.dur(end - start), "args": args}

    def cpu(self, span: CpuSpan) -> dict[str, Any]:
        """An op or annotation."""
        cat = self.cats["annotation" if span.annotation else "op"]
        if self.era == "2021":
            args = {"Device": self.pid, "External id": span.ext, "Trace name": "PyTorch Profiler", "Trace iteration": 0}
        else:
            args = {"External id": span.ext, "Record function id": 0, "Ev Idx": self._next_idx()}
        return self.complete(cat, span.name, self.pid, self.tid(span.tid, True), span.start, span.end, args)

    def runtime(self, call: Runtime, op_start: int) -> dict[str, Any]:
        """A runtime call."""
        cbid = CBID.get(call.name, 0)
        if self.era == "2021":
            args = {"cbid": cbid, "correlation": call.corr, "external id": call.ext, "external ts": op_start // 1000}
        else:
            args = {"External id": call.ext, "cbid": cbid, "correlation": call.corr}
        return self.complete(self.cats["runtime"], call.name, self.pid, self.tid(call.tid, True), call.start, call.end, args)

    def gpu(self, act: GpuAct, linked: bool) -> dict[str, Any]:
        """A kernel, memcpy or memset."""
        args: dict[str, Any] = {"device": 0, "context": 1, "stream": act.stream, "correlation": act.corr}
        if act.kind == "kernel":
            args = {"queued": 0, **args, **_kernel_args(act)}
        else:
            bandwidth = round(act.nbytes / max(1, act.end - act.start), 3)
            args.update({"bytes": act.nbytes, "memory bandwidth (GB/s)": bandwidth})
        if self.era == "2021":
            args["external id"] = act.ext
        elif linked:
            args = {"External id": act.ext, **args}
        return self.complete(self.cats[act.kind], act.name, 0, self.stream(act.stream), act.start, act.end, args)

    def flow(self, phase: str, ident: int, pid: int, tid: int | str, ns: int) -> dict[str, Any]:
        """A CPU->GPU flow start (``s``) or end (``f``)."""
        cat, name = ("async", "launch") if self.era == "2021" else ("ac2g", "ac2g")
        event = {"ph": phase, "id": ident, "pid": pid, "tid": tid, "ts": self.ts(ns), "cat": cat, "name": name}
        if phase == "f":
            event["bp"] = "e"
        return event

    def memory(self, event: MemEvent) -> dict[str, Any]:
        """A ``[memory]`` instant."""
        args: dict[str, Any] = {"Device Type": event.key[0], "Device Id": event.key[1], "Bytes": event.nbytes}
        base = {"ph": "i", "s": "t", "name": "[memory]", "pid": self.pid, "tid": event.tid, "ts": self.ts(event.ts)}
        if self.era == "2021":
            return {**base, "args": args}
        args = {"Total Reserved": event.reserved, "Total Allocated": event.allocated, **args,
                "Addr": event.addr, "finished": False, "Ev Idx": self._next_idx()}
        return {"ph": "i", "cat": "cpu_instant_event", **base, "args": args}

    def _next_idx(self) -> int:
        """Next ``Ev Idx`` (restarts in every file)."""
        self.ev_idx += 1
        return self.ev_idx - 1


def _kernel_args(act: GpuAct) -> dict[str, Any]:
    """Launch-configuration args of a kernel (plausible, deterministic)."""
    blocks = 1 + (act.corr * 37) % 511
    return {
        "registers per thread": 32 + (act.corr % 4) * 16,
        "shared memory": 0 if act.corr % 3 else 16384,
        "blocks per SM": round(blocks / 80, 3),
        "warps per SM": round(blocks * 4 / 80, 3),
        "grid": [blocks, 1, 1],
        "block": [128, 1, 1],
        "est. achieved occupancy %": min(100, blocks % 97),
    }


def _meta_events(render: Render, tl: Timeline, begin: int) -> list[dict[str, Any]]:
    """Process/thread ``M`` events (the main thread's name is emitted twice, like 2.13)."""
    ts, pid, new = render.ts(begin), render.pid, render.era == "2024"

    def meta(name: str, p: int | str, tid: int | str, args: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "ph": "M", "ts": ts, "pid": p, "tid": tid, "args": args}

    def lane(p: int, tid: int, label: str) -> list[dict[str, Any]]:
        rows = [meta("thread_name", p, render.tid(tid, True) if p else tid, {"name": label})]
        return rows + ([meta("thread_sort_index", p, tid, {"sort_index": tid})] if new else [])

    threads = ([pid, pid] if new else [pid]) + sorted(tl.side_tids)
    events = [meta("process_name", pid, 0, {"name": "python"}), meta("process_labels", pid, 0, {"labels": "CPU"})]
    events += [meta("process_sort_index", pid, 0, {"sort_index": pid})] if new else []
    for tid in threads:
        events += lane(pid, tid, f"thread {tid} (python)")
    if not tl.gpu:
        return events
    events += [meta("process_name", 0, 0, {"name": "python"}), meta("process_labels", 0, 0, {"labels": "GPU 0"})]
    if new:
        events.append(meta("process_sort_index", 0, 0, {"sort_index": 0x1000000}))
        for stream in sorted({g.stream for g in tl.gpu}):
            events += lane(0, stream, f"stream {stream} ")
    return events


def _activity_events(render: Render, tl: Timeline) -> list[dict[str, Any]]:
    """Runtime calls with flow starts, then GPU activities with flow ends, then GPU marks."""
    events: list[dict[str, Any]] = []
    with_gpu = {g.corr for g in tl.gpu}
    op_start = {s.ext: s.start for s in tl.cpu}
    for call in sorted(tl.runtime, key=lambda r: r.start):
        if call.dropped:
            continue
        events.append(render.runtime(call, op_start.get(call.ext, call.start)))
        if call.corr in with_gpu and call.name in FLOW_APIS:
            events.append(render.flow("s", call.corr, render.pid, call.tid, call.start))
        elif render.era == "2024" and call.name not in SYNC_CALLS:
            events.append(render.flow("f", call.corr, render.pid, call.tid, call.start))
    linked = {r.corr for r in tl.runtime if not r.dropped}
    for act in sorted(tl.gpu, key=lambda g: g.start):
        events.append(render.gpu(act, act.corr in linked))
        if act.corr in linked:
            events.append(render.flow("f", act.corr, 0, render.stream(act.stream), act.start))
    for mark in tl.marks if render.era == "2024" else []:
        events.append(render.complete("gpu_user_annotation", mark.name, 0, mark.stream, mark.start, mark.end,
                                      {"External id": mark.ext}))
    return events


def _trailer_events(render: Render, begin: int, end: int) -> list[dict[str, Any]]:
    """The ``Trace`` span and the global instants that close every Kineto file."""
    spans = "Spans" if render.era == "2024" else "Traces"
    events = [render.complete("Trace", "PyTorch Profiler (0)", spans, "PyTorch Profiler", begin, end, {"Op count": 0})]
    if render.era == "2024":
        events.append({"name": "process_sort_index", "ph": "M", "ts": render.ts(begin), "pid": "Spans", "tid": 0,
                       "args": {"sort_index": 0x20000000}})
    events.append({"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
                   "tid": "Trace PyTorch Profiler", "ts": render.ts(begin)})
    events.append({"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "",
                   "ts": render.ts(end + 12_000_000)})
    return events


def _render_trace(tl: Timeline, era: str, begin: int, end: int) -> dict[str, Any]:
    """The whole trace object of one span, top-level keys in Kineto's order."""
    base = BASE_NS_2024 if era == "2024" else 0
    render = Render(era, tl.pid, base)
    events = _meta_events(render, tl, begin)
    events += [render.cpu(s) for s in sorted(tl.cpu, key=lambda s: (s.start, -s.end))]
    events += [render.memory(m) for m in tl.mem]
    events += _activity_events(render, tl)
    events += _trailer_events(render, begin, end)
    if era == "2021":
        return {"schemaVersion": 1, "deviceProperties": [dict(V100)] if tl.gpu else [], "traceEvents": events}
    top: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [dict(H100)] if tl.gpu else []}
    if tl.gpu:
        top.update(cupti_version=24, cuda_runtime_version=12080, cuda_driver_version=12080)
    top.update(trace_id=f"{tl.rng.getrandbits(128):032X}", profile_memory=1, record_shapes=1, host_name="synth")
    top.update(displayTimeUnit="ms", baseTimeNanoseconds=base, traceEvents=events)
    top["traceName"] = f"/tmp/libkineto_activities_{tl.pid}.json"
    return top


# ----------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------


def _check_args(scenario: str, era: str, steps: int) -> None:
    """Validates the public arguments."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose from {', '.join(SCENARIOS)}")
    if era not in ERAS:
        raise ValueError(f"unknown era {era!r}; choose from {', '.join(ERAS)}")
    if steps < 2:
        raise ValueError("steps must be at least 2")


def effective_steps(scenario: str, steps: int) -> int:
    """Recorded steps per span: ``cpu_only`` always records 2."""
    return 2 if scenario == "cpu_only" else steps


def _first_carry(era: str, seed: int) -> Carry:
    """Start time, ids and allocator state of a run's first span."""
    rng = random.Random(f"carry|{era}|{seed}")
    if era == "2024":
        start = BASE_NS_2024 + 3600 * 10**9 + rng.randrange(10**12)
    else:
        start = START_NS_2021 + rng.randrange(10**9) * 1000
    cuda = 48 * MIB + 512 * rng.randrange(4096)
    memory = {CUDA_KEY: [cuda, -(-cuda // RESERVE_BLOCK) * RESERVE_BLOCK + 20 * MIB], CPU_KEY: [3 * MIB, 0]}
    return Carry(start, rng.randrange(1, 50), 100_000 + rng.randrange(50_000), memory)


def _next_carry(tl: Timeline, steps: int, end: int) -> Carry:
    """Skips the two unrecorded (wait + warmup) steps of a ``schedule(repeat>1)`` cycle."""
    skipped = 2 * (end - tl.begin) // steps + 5_000_000
    ext = tl.ext + 2 * (tl.ext - tl.first_ext) // steps
    corr = tl.corr + 2 * (tl.corr - tl.first_corr) // steps
    return Carry(end + skipped // tl.quantum * tl.quantum, ext, corr, tl.memory)


def make_spans(scenario: str, *, era: str = "2024", seed: int = 0, steps: int = 6, spans: int = 1) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Generates ``spans`` consecutive profiler cycles of one synthetic run.

    Args:
        scenario: One of :data:`SCENARIOS`.
        era: ``"2024"`` (torch 2.4+ format) or ``"2021"`` (PyTorch 1.9 format).
        seed: Seed of all jitter; the same arguments always give the same traces.
        steps: Recorded steps per span (``cpu_only`` always records 2).
        spans: Number of cycles; step numbers and ids continue like ``schedule(repeat=N)``.

    Returns:
        One ``(trace_object, truth)`` pair per span.

    Raises:
        ValueError: On an unknown scenario or era, or too few steps.
        AmbiguousDesign: If jitter put a planted quantity too close to a threshold.
    """
    _check_args(scenario, era, steps)
    steps = effective_steps(scenario, steps)
    carry = _first_carry(era, seed)
    pid = 10_000 + random.Random(f"pid|{seed}").randrange(50_000)
    result = []
    for index in range(spans):
        rng = random.Random(f"{scenario}|{era}|{seed}|{index}")
        tl = Timeline(rng, 1000 if era == "2021" else 1, pid, carry)
        loop = Loop(steps, 2 + index * (steps + 2), steps // 2)
        tl.work(150.0)
        SCENARIO_BUILDERS[scenario](tl, loop)
        end = max([tl.t] + [g.end for g in tl.gpu]) + tl.ns(80.0)
        result.append((_render_trace(tl, era, tl.begin, end), _truth(tl, scenario, era, tl.begin, loop)))
        carry = _next_carry(tl, steps, end)
    return result


def make_trace(scenario: str, *, era: str = "2024", seed: int = 0, steps: int = 6) -> tuple[dict[str, Any], dict[str, Any]]:
    """Generates one synthetic span.

    Args:
        scenario: One of :data:`SCENARIOS`.
        era: ``"2024"`` or ``"2021"``.
        seed: Seed of all jitter.
        steps: Recorded steps (``cpu_only`` always records 2; ``mixed`` needs at least 6).

    Returns:
        ``(trace_object, truth)``; the truth times are absolute epoch nanoseconds.
    """
    return make_spans(scenario, era=era, seed=seed, steps=steps, spans=1)[0]


def _encode(value: Any) -> str:
    """JSON text of ``value``; floats get exactly three decimals (Kineto's ns precision)."""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_encode(v) for v in value) + "]"
    return json.dumps(value)


def dumps_trace(trace: dict[str, Any]) -> str:
    """Serialises a trace object like Kineto: one event per line, ``traceEvents`` keys in order."""
    lines = []
    for key, value in trace.items():
        if key == "traceEvents":
            body = ",\n  ".join(_encode(e) for e in value)
            lines.append(f'  "traceEvents": [\n  {body}\n  ]' if value else '  "traceEvents": []')
        else:
            lines.append(f"  {json.dumps(key)}: {_encode(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _file_ns(trace: dict[str, Any]) -> int:
    """The 19-digit ns of the file name: the trace's end plus ~40 ms of export time."""
    base = trace.get("baseTimeNanoseconds", 0)
    last = max(e["ts"] + e.get("dur", 0) for e in trace["traceEvents"] if e["ph"] == "X")
    return base + round(last * 1000) + 40_000_000


def write_run(outdir: Path, scenario: str, *, era: str = "2024", seed: int = 0, steps: int = 6, spans: int = 1,
              use_gzip: bool = False, worker: str | None = None) -> dict[str, Any]:
    """Writes ``tensorboard_trace_handler``-style files and returns the run's truth.

    Returns:
        ``{"scenario", "era", "seed", "steps", "worker", "spans": [truth + {"file"}]}``.
    """
    pairs = make_spans(scenario, era=era, seed=seed, steps=steps, spans=spans)
    worker = worker or f"synth_{pairs[0][0]['traceEvents'][0]['pid']}"
    outdir.mkdir(parents=True, exist_ok=True)
    run: dict[str, Any] = {"scenario": scenario, "era": era, "seed": seed, "steps": effective_steps(scenario, steps),
                           "worker": worker, "spans": []}
    for trace, truth in pairs:
        name = f"{worker}.{_file_ns(trace)}.pt.trace.json" + (".gz" if use_gzip else "")
        if "traceName" in trace:
            trace["traceName"] = f"/tmp/tmp{trace['trace_id'][:8].lower()}.json" if use_gzip else str(outdir / name)
        data = dumps_trace(trace).encode()
        if use_gzip:
            with gzip.GzipFile(outdir / name, "wb", mtime=0) as handle:
                handle.write(data)
        else:
            (outdir / name).write_bytes(data)
        run["spans"].append({"file": name, **truth})
    return run


def dumps_truth(value: Any, indent: int = 0) -> str:
    """Indented truth JSON in which every container of plain values stays on one line."""
    nested = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    if not any(isinstance(item, (dict, list)) for item in nested):
        return json.dumps(value, separators=(", ", ": ")) + ("\n" if indent == 0 else "")
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {dumps_truth(v, indent + 1)}" for k, v in value.items()]
        opening, closing = "{", "}"
    else:
        items = [pad + dumps_truth(v, indent + 1) for v in value]
        opening, closing = "[", "]"
    text = opening + "\n" + ",\n".join(items) + "\n" + " " * indent + closing
    return text + ("\n" if indent == 0 else "")


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line arguments."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path, help="log directory to write (a TensorBoard run)")
    parser.add_argument("--scenario", required=True, choices=SCENARIOS)
    parser.add_argument("--era", default="2024", choices=ERAS)
    parser.add_argument("--spans", type=int, default=1, help="profiler cycles (files) to write")
    parser.add_argument("--steps", type=int, default=6, help="recorded steps per span")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gzip", action="store_true", help="write .pt.trace.json.gz")
    parser.add_argument("--worker", help="worker name (default synth_<pid>)")
    parser.add_argument("--truth", type=Path, help="write the truth JSON here (not inside OUTDIR)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    args = _parse_args(argv)
    if args.truth is not None and args.outdir.resolve() in args.truth.resolve().parents:
        print("error: --truth must not be inside OUTDIR (it would be scanned as a run)", file=sys.stderr)
        return 2
    run = write_run(args.outdir, args.scenario, era=args.era, seed=args.seed, steps=args.steps,
                    spans=args.spans, use_gzip=args.gzip, worker=args.worker)
    if args.truth is not None:
        args.truth.parent.mkdir(parents=True, exist_ok=True)
        args.truth.write_text(dumps_truth(run))
    for span in run["spans"]:
        print(args.outdir / span["file"], span["verdict"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
