"""``compute``: long kernels back to back, the GPU is almost never idle.

Each step has about 6 ms of kernels and ends with ``loss.item()``, so the only gaps are
short ``sync`` gaps between steps (about 2% idle). :func:`compute_step` is shared with
scenarios that add to this step (``xss``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Callable

from .. import ops
from ..core import Timeline
from ..ops import FORWARD, Layer, Loop

Prelude = Callable[[Timeline, bool], None]


def compute_step(tl: Timeline, loop: Loop, i: int, *, layers: Sequence[Layer] = FORWARD,
                 prelude: Prelude | None = None) -> None:
    """A compute-bound step: ~6 ms of long kernels, ``loss.item()`` at the end.

    ``prelude(tl, peak)`` runs between the input copy and the forward pass; when given, it
    owns the memory spike of the peak step (the forward pass then has none).
    """
    batch = ops.dataloader(tl, 30.0, i == loop.peak)
    inp = ops.h2d(tl, batch, 100.0)
    if prelude is not None:
        prelude(tl, i == loop.peak)
    acts = ops.forward(tl, 1000.0, spike=i == loop.peak and prelude is None, layers=layers)
    ops.backward(tl, 1000.0, acts)
    ops.optimizer(tl, 300.0)
    ops.loss_item(tl)
    tl.free(inp)
    tl.work(120.0)


def build(tl: Timeline, loop: Loop) -> None:
    """Long kernels back to back; only a short sync gap between steps."""
    ops.run_steps(tl, loop, lambda i: compute_step(tl, loop, i))
    loop.expected.update(sync=loop.steps - 1)
