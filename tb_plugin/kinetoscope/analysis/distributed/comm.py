"""Communication per device: how long collectives ran, and how much of that no compute hid.

Communication kernels are NCCL/RCCL kernels (every naming era: `ncclKernel_*`, `ncclDevKernel_*`,
`rccl*`); compute is every other kernel (`../docs/distributed.md`). Per device:

    compute   [=====)   [======)        [==)
    comm         [=========)  [====)
    exposed            [-)    [-)          comm with no compute under it

    comm      = length of the union of communication kernels
    exposed   = the part of that union no compute kernel covers
    overlap % = 100 * (comm - exposed) / comm

Per step the same figures are clipped to the step. CPU-side collectives (`record_param_comms`,
`nccl:*`, `gloo:*`, `c10d::*`) are measured apart: on CPU-only (gloo) jobs they are all there is. There
the host's own operators play the part of compute: the exposed CPU collective time is the part of the
collectives' union that no CPU operator covers (DDP runs gloo's all-reduce on a thread of its own while
backward goes on; only the time the host did nothing else was spent waiting for it).
"""
from __future__ import annotations

from functools import cached_property
from typing import Optional

import msgspec
import numpy as np

from ...trace import intervals
from ...trace.kinds import Kind
from ...trace.model import TraceModel
from ..core.selectors import activity_rows_by_device, collective_union, comm_mask, cpu_compute_union


class DeviceComm(msgspec.Struct, frozen=True):
    """One device's communication figures, with the unions they come from (for per-step clipping)."""

    device: int
    kernels: int  # communication kernels
    comm_ns: int
    compute_ns: int
    exposed_ns: int
    comm_starts_ns: np.ndarray
    comm_ends_ns: np.ndarray
    compute_starts_ns: np.ndarray
    compute_ends_ns: np.ndarray
    exposed_starts_ns: np.ndarray
    exposed_ends_ns: np.ndarray

    @property
    def overlap_pct(self) -> Optional[float]:
        """Share of communication hidden under compute (None without communication)."""
        return 100.0 * (self.comm_ns - self.exposed_ns) / self.comm_ns if self.comm_ns else None


class Communication(msgspec.Struct, frozen=True, dict=True):  # dict: its cached property
    """Per-device figures, and the CPU-side collectives' union."""

    devices: tuple[DeviceComm, ...]
    cpu_starts_ns: np.ndarray
    cpu_ends_ns: np.ndarray
    cpu_exposed_starts_ns: np.ndarray  # the collectives no CPU operator hid
    cpu_exposed_ends_ns: np.ndarray

    @property
    def cpu_collective_ns(self) -> int:
        return intervals.total(self.cpu_starts_ns, self.cpu_ends_ns)

    @property
    def cpu_exposed_ns(self) -> int:
        return intervals.total(self.cpu_exposed_starts_ns, self.cpu_exposed_ends_ns)

    def of(self, device: int) -> Optional[DeviceComm]:
        return self._by_device.get(device)

    @cached_property
    def _by_device(self) -> dict[int, DeviceComm]:  # a trace may name 100k devices: no scan per lookup
        return {d.device: d for d in self.devices}


def communication(model: TraceModel, acts: Optional[dict[int, np.ndarray]] = None) -> Communication:
    """Communication, compute and exposed communication of every device with activity.

    Args:
        model: the trace.
        acts: the model's `activity_rows_by_device` (computed here when not given).
    """
    devices = []
    for dev, rows in sorted((acts or activity_rows_by_device(model)).items()):
        kernels = rows[model.kind[rows] == Kind.KERNEL]
        is_comm = comm_mask(model, kernels)
        comm = intervals.union(model.ts_ns[kernels[is_comm]], model.end_ns[kernels[is_comm]])
        compute = intervals.union(model.ts_ns[kernels[~is_comm]], model.end_ns[kernels[~is_comm]])
        exposed = intervals.subtract(*comm, *compute)
        devices.append(DeviceComm(device=dev, kernels=int(np.count_nonzero(is_comm)), comm_ns=intervals.total(*comm),
                                  compute_ns=intervals.total(*compute), exposed_ns=intervals.total(*exposed),
                                  comm_starts_ns=comm[0], comm_ends_ns=comm[1],
                                  compute_starts_ns=compute[0], compute_ends_ns=compute[1],
                                  exposed_starts_ns=exposed[0], exposed_ends_ns=exposed[1]))
    cpu = collective_union(model)
    exposed = intervals.subtract(*cpu, *cpu_compute_union(model)) if cpu[0].size else cpu
    return Communication(devices=tuple(devices), cpu_starts_ns=cpu[0], cpu_ends_ns=cpu[1],
                         cpu_exposed_starts_ns=exposed[0], cpu_exposed_ends_ns=exposed[1])
