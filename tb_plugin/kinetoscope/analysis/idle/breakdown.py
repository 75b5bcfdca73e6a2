"""Where the judged time went, per step: compute, exposed communication, and idle by cause.

The judged time of a step is the step clipped to the device's window (the first to the last device
activity): outside it nothing says what the device could have done. Every nanosecond of it falls in
exactly one category, so each row adds up to the clipped step length:

    step      [ProfilerStep#7 ...........................................)
    device    [compute.....)[comm only)      [compute....)    (idle: cause)
              |  compute   | exposed  | host |  compute   |   dataloader |

A step that begins before the device's first activity keeps that lead (idle, with the cause
`gpu_idle` gives it): the host's own work at the start of the step is part of the step. Its tail after
the device's last activity is not judged: the next launch is not in the file.

Time in which the device held work launched earlier but not shown (`gpu_idle.unseen_work`: work from
before the file) is not judged either: the device was busy, with what the trace cannot say.

A trace without steps is judged as one unit: the device window.
"""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace import intervals
from ..distributed.comm import DeviceComm
from .gpu_idle import CAUSE_NAMES, Cause, DeviceIdle

CATEGORIES = ("compute", "exposed_comm", *CAUSE_NAMES)


class Breakdown(msgspec.Struct, frozen=True):
    """`ns[i, c]`: time of unit i (a step, or the window) in category CATEGORIES[c]."""

    device: int
    start_ns: np.ndarray
    end_ns: np.ndarray
    ns: np.ndarray  # int64 (units, categories)
    from_steps: bool
    host_in_launch_ns: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(1, np.int64))  # per unit: host idle inside launch calls

    @property
    def units(self) -> int:
        return int(self.start_ns.size)

    def total_ns(self) -> dict[str, int]:
        """Time per category over every unit."""
        return {name: int(v) for name, v in zip(CATEGORIES, self.ns.sum(axis=0))}

    @property
    def judged_ns(self) -> int:
        return int(self.ns.sum())


def breakdown(device: DeviceIdle, comm: DeviceComm, step_start_ns: np.ndarray, step_end_ns: np.ndarray,
              launch_calls: Optional[tuple[np.ndarray, np.ndarray]] = None) -> Breakdown:
    """Split every step (clipped to the device window) into CATEGORIES.

    Args:
        device: the idle analysis of the judged device.
        comm: its communication figures.
        step_start_ns, step_end_ns: the steps (empty: the device window is the one unit).
        launch_calls: the union of the host's launch calls (starts, ends), to tell how much of the host
            idle the launch calls themselves take (`host_in_launch_ns`); None: none of it.
    """
    from_steps = bool(np.size(step_start_ns))
    first = min(device.lead_start_ns, device.window_start_ns)
    if from_steps:
        start = np.clip(step_start_ns, first, device.window_end_ns)
        end = np.clip(step_end_ns, first, device.window_end_ns)
    else:
        start, end = np.array([device.window_start_ns]), np.array([device.window_end_ns])
    exposed = intervals.covered(comm.exposed_starts_ns, comm.exposed_ends_ns, start, end)
    busy = intervals.covered(device.busy_starts_ns, device.busy_ends_ns, start, end)
    columns = [busy - exposed, exposed]
    for cause in range(len(CAUSE_NAMES)):
        sel = device.gap_cause == cause
        gap_s, gap_e = device.gap_start_ns[sel], device.gap_end_ns[sel]
        if cause == device.lead_cause:
            gap_s, gap_e = np.append(device.lead_start_ns, gap_s), np.append(device.window_start_ns, gap_e)
        gap_s, gap_e = intervals.subtract(gap_s, gap_e, device.unseen_starts_ns, device.unseen_ends_ns)
        columns.append(intervals.covered(gap_s, gap_e, start, end))
        if cause == Cause.HOST:
            in_launch = _inside(gap_s, gap_e, launch_calls, start, end)
    return Breakdown(device=device.device, start_ns=start, end_ns=end, ns=np.stack(columns, axis=1).astype(np.int64),
                     from_steps=from_steps, host_in_launch_ns=in_launch.astype(np.int64))


def _inside(gap_s: np.ndarray, gap_e: np.ndarray, calls: Optional[tuple[np.ndarray, np.ndarray]], start: np.ndarray,
            end: np.ndarray) -> np.ndarray:
    """Per unit, the part of the gaps (a sorted union) that the calls' union covers."""
    if calls is None or calls[0].size == 0 or gap_s.size == 0:
        return np.zeros(start.size, np.int64)
    outside = intervals.subtract(gap_s, gap_e, *calls)
    return intervals.covered(gap_s, gap_e, start, end) - intervals.covered(*outside, start, end)
