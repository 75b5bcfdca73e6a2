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
    ops.run_steps(tl, loop, lambda i: ops.cpu_step(tl, loop, i, dataloader_us=9000.0, model_us=150.0, optimizer_us=40.0))
