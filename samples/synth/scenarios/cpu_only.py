"""``cpu_only``: the same model on the CPU, with CPU memory only and no GPU activity at all."""
from __future__ import annotations

from .. import ops
from ..core import Timeline
from ..ops import Loop


def build(tl: Timeline, loop: Loop) -> None:
    """The same model on the CPU: no GPU activity at all."""
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 150.0, i == loop.peak)
        acts = ops.forward(tl, 1000.0, spike=i == loop.peak, gpu=False)
        ops.backward(tl, 1000.0, acts, gpu=False)
        ops.optimizer(tl, 300.0, gpu=False)
        tl.free(batch)

    ops.run_steps(tl, loop, body)
