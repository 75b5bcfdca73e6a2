"""``nccl_exposed``: data-parallel training whose all-reduces are mostly not hidden by compute.

Compute runs on stream 7 and NCCL all-reduces (``ncclDevKernel_AllReduce_Sum_f32_RING_LL``) on stream
20, each under ``nccl:all_reduce`` / ``record_param_comms`` on the CPU and ordered after the gradients
with ``cudaStreamWaitEvent``. A 1 ms bucket after ``AddmmBackward0`` overlaps the rest of the backward
pass (about 0.45 ms); a 3 ms bucket after the last layer runs alone, and the optimizer waits for it.
Every step also starts with a 0.5 ms blocking all-reduce of metrics over a CPU (gloo) group
(``gloo:all_reduce`` / ``record_param_comms``) while the GPU is idle: a ``comm`` gap between steps
(the ``loss.item()`` sync before it ends inside the gap too, but comm comes first). Exposed
communication dominates: verdict ``communication-bound``, runner-up ``compute-bound``.
"""
from __future__ import annotations

from .. import ops
from ..core import MAIN_STREAM, SIDE_STREAM, Timeline
from ..ops import K_NCCL, Loop


def _bucket(tl: Timeline, us: float) -> None:
    """One gradient bucket's all-reduce on the NCCL stream, after the gradients on the main stream."""
    with tl.op("nccl:all_reduce", annotation=True), tl.op("record_param_comms"):
        tl.wait_stream(SIDE_STREAM, MAIN_STREAM)
        tl.kernel(K_NCCL, us, stream=SIDE_STREAM)
        tl.call("cudaEventRecord")


def _metrics_allreduce(tl: Timeline) -> None:
    """A blocking CPU-side all-reduce of metrics over a gloo group (no GPU work)."""
    with tl.op("gloo:all_reduce", annotation=True), tl.op("record_param_comms"):
        tl.work(500.0)


def build(tl: Timeline, loop: Loop) -> None:
    """Two all-reduce buckets per step, one overlapped, one exposed; a CPU collective between steps."""
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 30.0, i == loop.peak)
        _metrics_allreduce(tl)
        inp = ops.h2d(tl, batch, 40.0)
        acts = ops.forward(tl, 200.0, spike=i == loop.peak)
        ops.backward(tl, 200.0, acts, after={1: lambda: _bucket(tl, 1000.0), 4: lambda: _bucket(tl, 3000.0)})
        tl.wait_stream(MAIN_STREAM, SIDE_STREAM)
        ops.optimizer(tl, 100.0)
        ops.loss_item(tl)
        tl.free(inp)
        tl.work(120.0)

    ops.run_steps(tl, loop, body)
    loop.expected.update(comm=loop.steps - 1)
