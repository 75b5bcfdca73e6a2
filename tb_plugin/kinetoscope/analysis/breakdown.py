"""Where the judged time went, per step: compute, exposed communication, and idle by cause.

The judged time of a step is the step clipped to the device's window (the first to the last device
activity): outside it nothing says what the device could have done. Every nanosecond of it falls in
exactly one category, so each row adds up to the clipped step length:

    step      [ProfilerStep#7 ...........................................)
    device    [compute.....)[comm only)      [compute....)    (idle: cause)
              |  compute   | exposed  | host |  compute   |   dataloader |

A trace without steps is judged as one unit: the device window.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import intervals
from .comm import DeviceComm
from .gpu_idle import CAUSE_NAMES, DeviceIdle

CATEGORIES = ("compute", "exposed_comm", *CAUSE_NAMES)


@dataclass(frozen=True)
class Breakdown:
    """`ns[i, c]`: time of unit i (a step, or the window) in category CATEGORIES[c]."""

    device: int
    start_ns: np.ndarray
    end_ns: np.ndarray
    ns: np.ndarray  # int64 (units, categories)
    from_steps: bool

    @property
    def units(self) -> int:
        return int(self.start_ns.size)

    def total_ns(self) -> dict[str, int]:
        """Time per category over every unit."""
        return {name: int(v) for name, v in zip(CATEGORIES, self.ns.sum(axis=0))}

    @property
    def judged_ns(self) -> int:
        return int(self.ns.sum())


def breakdown(device: DeviceIdle, comm: DeviceComm, step_start_ns: np.ndarray, step_end_ns: np.ndarray) -> Breakdown:
    """Split every step (clipped to the device window) into CATEGORIES.

    Args:
        device: the idle analysis of the judged device.
        comm: its communication figures.
        step_start_ns, step_end_ns: the steps (empty: the device window is the one unit).
    """
    from_steps = bool(np.size(step_start_ns))
    if from_steps:
        start = np.clip(step_start_ns, device.window_start_ns, device.window_end_ns)
        end = np.clip(step_end_ns, device.window_start_ns, device.window_end_ns)
    else:
        start, end = np.array([device.window_start_ns]), np.array([device.window_end_ns])
    exposed = intervals.covered(comm.exposed_starts_ns, comm.exposed_ends_ns, start, end)
    busy = intervals.covered(device.busy_starts_ns, device.busy_ends_ns, start, end)
    columns = [busy - exposed, exposed]
    for cause in range(len(CAUSE_NAMES)):
        sel = device.gap_cause == cause
        columns.append(intervals.covered(device.gap_start_ns[sel], device.gap_end_ns[sel], start, end))
    return Breakdown(device=device.device, start_ns=start, end_ns=end, ns=np.stack(columns, axis=1).astype(np.int64),
                     from_steps=from_steps)
