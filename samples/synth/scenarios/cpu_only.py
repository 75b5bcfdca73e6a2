"""``cpu_only``: the same model on the CPU, with CPU memory only and no GPU activity at all."""
from __future__ import annotations

from .. import ops
from ..core import Timeline
from ..ops import Loop


def build(tl: Timeline, loop: Loop) -> None:
    """The same model on the CPU: no GPU activity at all."""
    ops.run_steps(tl, loop, lambda i: ops.cpu_step(tl, loop, i, dataloader_us=150.0, model_us=1000.0, optimizer_us=300.0))
