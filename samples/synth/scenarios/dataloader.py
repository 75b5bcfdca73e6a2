"""``dataloader``: the GPU waits on a slow DataLoader in every step.

Each step starts with a 10 ms DataLoader wait while the GPU has about 2 ms of work, so
every step is stalled and every gap between steps is a ``dataloader`` gap.
"""
from __future__ import annotations

from .. import ops
from ..core import Timeline
from ..ops import Loop


def build(tl: Timeline, loop: Loop) -> None:
    """A 10 ms DataLoader wait per step while the GPU has ~2 ms of work."""
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 10_000.0, i == loop.peak)
        inp = ops.h2d(tl, batch, 200.0)
        acts = ops.forward(tl, 330.0, spike=i == loop.peak)
        ops.backward(tl, 330.0, acts)
        ops.optimizer(tl, 40.0)
        tl.free(inp)

    ops.run_steps(tl, loop, body)
    loop.expected.update(dataloader=loop.steps - 1)
