"""``cpu_dataloader``: a CPU-only run whose DataLoader takes about 90% of every step.

Each step waits 9 ms for the DataLoader, then runs the model on the CPU (about 1 ms, 24 operators):
no GPU activity, and enough operators and steps to be judged. Verdict ``dataloader-bound`` (high),
runner-up ``cpu-only``.
"""
from __future__ import annotations

from .. import ops
from ..core import Timeline
from ..ops import Loop


def build(tl: Timeline, loop: Loop) -> None:
    """A 9 ms DataLoader wait and ~1 ms of CPU model per step."""
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 9000.0, i == loop.peak)
        acts = ops.forward(tl, 150.0, spike=i == loop.peak, gpu=False)
        ops.backward(tl, 150.0, acts, gpu=False)
        ops.optimizer(tl, 40.0, gpu=False)
        tl.free(batch)

    ops.run_steps(tl, loop, body)
