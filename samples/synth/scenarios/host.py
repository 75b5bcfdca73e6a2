"""``host``: CPU work without launches starves the GPU.

``aten::nonzero`` (1.8 ms, mid-forward) and ``## postprocess ##`` (1.8 ms, after the
backward pass) run on the CPU with no launches: two ``host`` gaps per step, each with the
op as its culprit.
"""
from __future__ import annotations

from .. import ops
from ..core import Timeline
from ..ops import CPU_POST_OPS, Loop


def build(tl: Timeline, loop: Loop) -> None:
    """``aten::nonzero`` (1.8 ms) and ``## postprocess ##`` (1.8 ms) starve the GPU."""
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 40.0, i == loop.peak)
        inp = ops.h2d(tl, batch, 60.0)
        nonzero = {1: lambda: ops.pure_cpu(tl, "aten::nonzero", 1800.0)}
        acts = ops.forward(tl, 200.0, spike=i == loop.peak, after=nonzero)
        ops.backward(tl, 200.0, acts)
        with tl.op("## postprocess ##", annotation=True, pre=5.0):
            for name, us in CPU_POST_OPS:
                ops.pure_cpu(tl, name, us)
        ops.optimizer(tl, 250.0)
        tl.free(inp)

    ops.run_steps(tl, loop, body)
    loop.expected.update(host=2 * loop.steps)
