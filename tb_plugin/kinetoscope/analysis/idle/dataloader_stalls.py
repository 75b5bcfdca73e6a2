"""Per-step breakdown and data-loader stalls.

A step is a CPU `ProfilerStep#N` event; a trace without any (an inference or serving profile) takes
its steps from the iteration annotations of its serving framework (`selectors.iteration_rows`). Its
DataLoader wait is the union of the main process's `enumerate(DataLoader)#...__next__` intervals
clipped to the step. A step is stalled when that wait is at least 5% of the step and the GPU
(the busiest device) sat idle for at least half of it:

    CPU   [ProfilerStep#7 ......................................................)
          [DataLoader __next__ )[forward ... backward ... optimizer)
    GPU                          [k][k][k]  [k][k][k][k]
          |<-- wait, GPU idle ->|          => stalled
"""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace import intervals
from ...trace.kinds import Kind
from ...trace.model import TraceModel
from ..core import thresholds as T
from ..core.selectors import activity_rows_by_device, dataloader_union, iteration_rows
from ..distributed.comm import DeviceComm, communication
from .gpu_idle import DeviceIdle


def judged_ends(model: TraceModel, rows: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray) -> np.ndarray:
    """Where each step's judged time ends: at the later of its end and the end of the device work (on
    `rows`, one device's activities) launched inside it, but never after the next step begins.

    A serving iteration (`execute_...`) ends when the host has issued it, while its GPU work runs on for
    hundreds of milliseconds; the last ProfilerStep's GPU work spills past it the same way. Steps of a
    loop that follow each other end where the next begins, as before.
    """
    ends = end_ns.copy()
    if not start_ns.size:
        return ends
    launch = model.launch_idx[rows]
    rows, launch = rows[launch >= 0], launch[launch >= 0]
    step = np.searchsorted(start_ns, model.ts_ns[launch], side="right") - 1
    inside = (step >= 0) & (model.ts_ns[launch] < end_ns[np.maximum(step, 0)])
    np.maximum.at(ends, step[inside], model.end_ns[rows[inside]])
    following = np.append(start_ns[1:], np.iinfo(np.int64).max)
    return np.maximum(end_ns, np.minimum(ends, following))


class Steps(msgspec.Struct, frozen=True):
    """Parallel per-step arrays, sorted by start."""

    name_id: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    dataloader_ns: np.ndarray
    dataloader_gpu_idle_ns: np.ndarray
    gpu_busy_ns: np.ndarray
    gpu_idle_ns: np.ndarray
    compute_ns: np.ndarray  # union of non-communication kernels inside the step
    comm_ns: np.ndarray  # union of NCCL/RCCL kernels
    exposed_comm_ns: np.ndarray  # the part of comm_ns no compute kernel covers
    memcpy_ns: np.ndarray
    memset_ns: np.ndarray
    stalled: np.ndarray  # bool
    dl_start_ns: np.ndarray  # the DataLoader wait union, for drawing
    dl_end_ns: np.ndarray

    @property
    def count(self) -> int:
        return int(self.start_ns.size)


def step_breakdown(model: TraceModel, busiest: Optional[DeviceIdle], *, min_share: float = T.STALL_MIN_SHARE,
                   idle_share: float = T.STALL_IDLE_SHARE, acts: Optional[dict[int, np.ndarray]] = None,
                   comm: Optional[DeviceComm] = None) -> Steps:
    """Per step: DataLoader wait, GPU busy/idle (busiest device), time by activity kind, stall flag.

    Args:
        model: the trace.
        busiest: the device whose idleness decides stalls (None: no GPU, nothing stalls).
        min_share: smallest DataLoader share of the step that can make a stall.
        idle_share: fraction of the wait the GPU must be idle for.
        acts: the model's `activity_rows_by_device` (computed here when not given).
        comm: the busiest device's communication figures, whose unions give compute, comm and exposed
            comm per step (computed here when not given).
    """
    steps = iteration_rows(model)
    start, end = model.ts_ns[steps], model.end_ns[steps]
    dl_s, dl_e = dataloader_union(model)
    wait = intervals.covered(dl_s, dl_e, start, end)
    busy_u = (busiest.busy_starts_ns, busiest.busy_ends_ns) if busiest else (intervals.EMPTY, intervals.EMPTY)
    wait_idle = intervals.covered(*intervals.subtract(dl_s, dl_e, *busy_u), start, end)
    busy = intervals.covered(*busy_u, start, end)
    if busiest is None:  # no GPU: nothing to be idle
        wait_idle = np.zeros_like(wait)
    acts = acts if acts is not None else activity_rows_by_device(model)
    if busiest is not None and comm is None:
        comm = communication(model, acts).of(busiest.device)
    kinds = _copy_unions(model, busiest, acts)
    per_step = {name: intervals.covered(*_unions(comm, name), start, end) for name in ("compute", "comm", "exposed")}
    stalled = (busiest is not None) & (wait > 0) & (wait >= min_share * (end - start)) & (wait_idle >= idle_share * wait)
    return Steps(
        name_id=model.name_id[steps], start_ns=start, end_ns=end, dataloader_ns=wait, dataloader_gpu_idle_ns=wait_idle,
        gpu_busy_ns=busy, gpu_idle_ns=((end - start) - busy) * (busiest is not None),
        compute_ns=per_step["compute"], comm_ns=per_step["comm"], exposed_comm_ns=per_step["exposed"],
        memcpy_ns=intervals.covered(*kinds["memcpy"], start, end), memset_ns=intervals.covered(*kinds["memset"], start, end),
        stalled=np.asarray(stalled, bool), dl_start_ns=dl_s, dl_end_ns=dl_e)


def _unions(comm: Optional[DeviceComm], which: str) -> tuple[np.ndarray, np.ndarray]:
    if comm is None:
        return intervals.EMPTY, intervals.EMPTY
    return getattr(comm, f"{which}_starts_ns"), getattr(comm, f"{which}_ends_ns")


def _copy_unions(model: TraceModel, busiest: Optional[DeviceIdle], acts) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Unions of the busiest device's memcpys and memsets (its kernels' unions come from `comm`)."""
    empty = (intervals.EMPTY, intervals.EMPTY)
    if busiest is None:
        return {"memcpy": empty, "memset": empty}
    rows = acts[busiest.device]
    kind = model.kind[rows]
    return {k: intervals.union(model.ts_ns[rows[kind == want]], model.end_ns[rows[kind == want]])
            for k, want in (("memcpy", Kind.MEMCPY), ("memset", Kind.MEMSET))}
