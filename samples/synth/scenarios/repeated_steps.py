"""``repeated_steps``: two loops that both number their steps from the same ``ProfilerStep#N``.

The first ``steps - steps // 2`` steps (a training loop with an 8 ms DataLoader wait) and the last
``steps // 2`` (a second loop with a 5 ms wait) are named ``ProfilerStep#<first>``, ``#<first + 1>``,
...: the names repeat, and every occurrence is a step of its own. The GPU has about 2 ms of work per
step, so every step is stalled and every gap between steps is a ``dataloader`` gap. Verdict
``dataloader-bound``.
"""
from __future__ import annotations

from .. import ops
from ..core import Timeline
from ..ops import Loop


def build(tl: Timeline, loop: Loop) -> None:
    """Two loops of DataLoader-stalled steps whose step names repeat."""
    first = loop.steps - loop.steps // 2

    def body(i: int) -> None:
        batch = ops.dataloader(tl, 8000.0 if i < first else 5000.0, i == loop.peak)
        inp = ops.h2d(tl, batch, 200.0)
        acts = ops.forward(tl, 330.0, spike=i == loop.peak)
        ops.backward(tl, 330.0, acts)
        ops.optimizer(tl, 40.0)
        tl.free(inp)

    for index in range(loop.steps):
        number = loop.first_step + (index if index < first else index - first)
        with tl.op(f"ProfilerStep#{number}", annotation=True, pre=3.0, post=2.0):
            body(index)
        tl.work(1.0)
    loop.expected.update(dataloader=loop.steps - 1)
