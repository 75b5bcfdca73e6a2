"""``sync``: a synchronisation mid-step leaves the GPU idle during CPU logging.

In every step ``loss.item()`` (``cudaStreamSynchronize``; on odd steps
``cudaDeviceSynchronize``) drains the GPU, then 1.2 ms of CPU logging runs before the
backward pass is launched: one ``sync`` gap per step.
"""
from __future__ import annotations

from .. import ops
from ..core import Timeline
from ..ops import CPU_POST_OPS, Loop


def build(tl: Timeline, loop: Loop, synced: bool = True) -> None:
    """``loss.item()`` / ``cuda.synchronize()`` mid-step, then 1.2 ms of CPU logging. ``synced=False`` is the
    same loop fixed (``synth/pairs.py``): the loss is copied asynchronously and nothing waits."""
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 40.0, i == loop.peak)
        inp = ops.h2d(tl, batch, 60.0)
        acts = ops.forward(tl, 320.0, spike=i == loop.peak)
        if synced:
            ops.loss_item(tl, device_sync=i % 2 == 1)
        elif i % 2 == 0:
            ops.loss_copy(tl)
        with tl.op("## log_metrics ##", annotation=True, pre=5.0):
            for name, us in CPU_POST_OPS:
                ops.pure_cpu(tl, name, us * 0.6)
        ops.backward(tl, 320.0, acts)
        ops.optimizer(tl, 250.0)
        tl.free(inp)

    ops.run_steps(tl, loop, body)
    if synced:
        loop.expected.update(sync=loop.steps)
