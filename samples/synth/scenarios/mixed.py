"""``mixed``: every gap cause and every event kind in one run.

Steps follow a pattern by index % 6: pattern 1 has a 1.5 ms DataLoader wait
(``dataloader``); pattern 3 has 0.9 ms without any op, with a decoy sync on another thread
(``host``, culprit ``(no op)``), 12 tiny kernels under ``## metrics ##`` (11 ``launch``) and a
2 ms ``aten::nonzero`` (``host``); pattern 4 syncs with ``cudaDeviceSynchronize``; pattern 5
launches a kernel whose runtime call is dropped (``unlinked``). Every other step boundary is a
``sync`` gap. Every step also has an NCCL kernel on the side stream overlapping the backward
pass, and the step with index 2 replays a CUDA graph of 3 kernels under one correlation.
"""
from __future__ import annotations

from .. import ops
from ..core import MAIN_STREAM, SIDE_STREAM, Timeline
from ..ops import K_ELEMENTWISE, K_GEMM, K_NCCL, K_RELU, Loop


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
        tl.mark("## metrics ##", ops.tiny_ops(tl, 12))
    ops.pure_cpu(tl, "aten::nonzero", 2000.0)


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


def _expect(loop: Loop) -> None:
    """Records the gap causes the steps planted."""
    for i in range(loop.steps):
        if i:
            loop.expected["dataloader" if i % 6 == 1 else "sync"] += 1
        if i % 6 == 3:
            loop.expected.update(host=2, launch=11)
        if i % 6 == 5:
            loop.expected["unlinked"] += 1


def build(tl: Timeline, loop: Loop) -> None:
    """Every gap cause, two streams, a CUDA graph, memcpy/memset, NCCL, GPU annotations."""
    if loop.steps < 6:
        raise ValueError("the mixed scenario needs at least 6 steps")

    def body(i: int) -> None:
        pattern = i % 6
        batch = ops.dataloader(tl, 1500.0 if pattern == 1 else 30.0, i == loop.peak)
        inp = ops.h2d(tl, batch, 40.0)
        plant = {1: lambda: _forward_plant(tl, pattern, graph=i == 2)}
        acts = ops.forward(tl, 200.0, spike=i == loop.peak, after=plant)
        ops.backward(tl, 200.0, acts, after={1: lambda: _allreduce(tl)})
        ops.optimizer(tl, 60.0, mark=True)
        ops.loss_item(tl, device_sync=pattern == 4)
        tl.free(inp)
        tl.work(150.0)

    ops.run_steps(tl, loop, body)
    _expect(loop)
