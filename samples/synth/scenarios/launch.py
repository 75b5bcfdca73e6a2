"""``launch``: launch overhead dominates.

100 tiny kernels per step, each a 2 µs kernel behind a 6 µs launch call that reaches the
GPU 3 µs after the call returns, with an empty queue: every kernel follows a ``launch`` gap.
"""
from __future__ import annotations

from .. import ops
from ..core import Timeline
from ..ops import Loop


def build(tl: Timeline, loop: Loop, ops_per_step: int = 100) -> None:
    """100 tiny kernels per step, each shorter than its launch call."""
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 25.0, i == loop.peak)
        inp = ops.h2d(tl, batch, 8.0, spike=i == loop.peak)
        ops.tiny_ops(tl, ops_per_step)
        tl.free(inp)

    ops.run_steps(tl, loop, body)
    loop.expected.update(launch=loop.steps * ops_per_step, dataloader=loop.steps - 1)
