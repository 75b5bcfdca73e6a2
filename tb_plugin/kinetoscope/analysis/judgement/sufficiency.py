"""Can this trace support a verdict at all? The reasons it cannot, each with how to record a better one.

A confident wrong answer costs more trust than "not enough data". A trace cannot be judged when:
- it is empty: no timed event at all (an empty `traceEvents` list, or metadata only);
- events were sampled or dropped: Kineto numbers CPU events (`Ev Idx`) and, inside one of its index
  spaces, most numbers are missing. Kineto numbers CPU ops and Python frames in spaces of their own and
  a file cut from a longer profile starts at an offset: a jump between spaces is not sampling, holes
  spread through a space are (`index_spaces`);
- it is start-up only: one non-synchronizing runtime call (CUDA context creation, module loading, a
  first-time launch) takes a large share of the trace while the device has nothing to do. A call during
  which the device is busy, or behind which queued work waits, is waiting on the GPU (a pageable or
  blocking copy), not start-up (`waits_on_device`);
- it only records CUDA/HIP graph capture: launches recorded into a graph own no device activity, and the
  capture is one-time work; the replay is what to profile (`capture_spans`);
- it is too small: a micro-test with a handful of device activities that keep the device busy for less
  than a few milliseconds. One long step is enough: an inference profile has one step or none;
- device records are missing: most launch calls (outside graph capture) have no device activity (CUPTI
  buffers dropped, or the device activity type was not recorded);
- no device activity was recorded at all, yet GPU work was launched (runtime launch and copy calls): the profiler
  ran without ProfilerActivity.CUDA. Such a trace is not a CPU-only run, and is not judged as one.
"""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace import intervals
from ...trace.kinds import ACTIVITY_KINDS, LAUNCH_KINDS, POLL_CALLS, SYNC_CALLS
from ...trace.model import TraceModel
from ..core import thresholds as T
from ..core.selectors import capture_spans, captured_launch_mask, launch_call_rows

RECORD_ADVICE = ("record with torch.profiler.schedule(wait=1, warmup=2, active=5), after CUDA and the allocator "
                 "are warmed up, with every event kept (no sampling)")


class Insufficient(msgspec.Struct, frozen=True):
    """Why a trace cannot be judged: short reason codes and sentences saying what was seen."""

    codes: tuple[str, ...]
    reasons: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.codes)


def sufficiency(model: TraceModel, *, steps: int, judged_ms: Optional[float], device_activities: int,
                cpu_ops: int, busy: tuple[np.ndarray, np.ndarray] = (intervals.EMPTY, intervals.EMPTY)) -> Insufficient:
    """The reasons this trace cannot support a verdict (empty when it can).

    Args:
        model: the trace.
        steps: number of profiler steps.
        judged_ms: the judged time (steps clipped to the device window), None without device work.
        device_activities: kernels, memcpys and memsets on the judged device.
        cpu_ops: CPU operators (not annotations, not ProfilerStep).
        busy: the union of device busy time over every device (starts, ends), for telling a call that
            waits on the device from start-up.
    """
    del steps  # one long step is judged like many: what decides is the device work in it
    if model.n_events == 0:
        return Insufficient(("empty",), ("the trace holds no timed events (an empty traceEvents list): an empty trace",))
    unrecorded = unrecorded_launches(model) if judged_ms is None else None
    if unrecorded is not None:  # what else is wrong follows from it: too few ops of a CPU-only run, no activity
        return Insufficient(("no-device-activity",), (f"GPU work was launched ({launched_calls(model, unrecorded)}) but "
                                                      "no GPU activity was recorded: was ProfilerActivity.CUDA in the "
                                                      "activities?",))
    found = [r for r in (_sampled(model), _startup(model, busy), _capture_only(model, judged_ms), _missing_device(model)) if r]
    if judged_ms is None:
        if cpu_ops < T.MIN_CPU_OPS:
            found.append(("too-small", f"only {cpu_ops} CPU ops in the trace"))
    elif device_activities < T.MIN_DEVICE_ACTIVITIES and intervals.total(*busy) < T.MIN_DEVICE_BUSY_MS * 1e6:
        found.append(("too-small", f"only {device_activities} device activit{'y' if device_activities == 1 else 'ies'} "
                                   f"in the trace, busy {intervals.total(*busy) / 1e6:.2f} ms"))
    return Insufficient(tuple(c for c, _ in found), tuple(r for _, r in found))


def index_spaces(event_index: dict) -> np.ndarray:
    """`(first, last, count)` rows, one per index space of Kineto's event numbers (`meta["event_index"]`).

    The model keeps the spaces the numbers fall in (split at their largest jumps, see
    `trace.arg_tables.EventIndex`); a summary without them (one range) is one space.
    """
    if not event_index.get("count"):
        return np.zeros((0, 3), np.int64)
    spaces = event_index.get("spaces") or [[event_index["min"], event_index["max"], event_index["count"]]]
    return np.array(spaces, np.int64).reshape(-1, 3)


def _sampled(model: TraceModel) -> Optional[tuple[str, str]]:
    spaces = index_spaces(model.meta.get("event_index") or {})
    span = spaces[:, 1] - spaces[:, 0] + 1
    sparse = (span >= T.EV_IDX_MIN_RANGE) & (spaces[:, 2] < T.EV_IDX_MIN_COVERAGE * span)
    if not sparse.any():
        return None
    count, width = int(spaces[sparse, 2].sum()), int(span[sparse].sum())
    where = f" in {int(sparse.sum())} of its {len(spaces)} index spaces" if len(spaces) > 1 else ""
    return ("sampled", f"only {count:,} of {width:,} CPU events kept ({100 * count / width:.1f}% of the 'Ev Idx' "
                       f"range{where}): the trace was sampled or events were dropped")


def waits_on_device(model: TraceModel, rows: np.ndarray, busy: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Which host calls (rows) were waiting on the device rather than doing work of their own.

    A call waits on the device when the device is busy for at least WAIT_BUSY_SHARE of it (a pageable
    copy queued behind kernels), or when device work launched before the call began starts only after
    WAIT_BUSY_SHARE of the call has passed: that work sat queued behind something the device was doing,
    in the trace or before it (a blocking copy behind a stream wait on the previous batch).
    """
    rows = np.asarray(rows, np.int64)
    start, end = model.ts_ns[rows], model.end_ns[rows]
    length = np.maximum(end - start, 1)
    waiting = intervals.covered(*busy, start, end) >= T.WAIT_BUSY_SHARE * length
    acts = np.flatnonzero(model.activity_mask() & (model.launch_idx >= 0))
    if acts.size:
        launched_end = model.end_ns[model.launch_idx[acts]]
        began = model.ts_ns[acts]
        for k in np.flatnonzero(~waiting).tolist():
            late = start[k] + T.WAIT_BUSY_SHARE * length[k]
            waiting[k] = bool(np.any((launched_end <= start[k]) & (began >= late)))
    return waiting


def _startup(model: TraceModel, busy: tuple[np.ndarray, np.ndarray]) -> Optional[tuple[str, str]]:
    ids = model.name_ids_where(lambda n: n in SYNC_CALLS or n in POLL_CALLS)
    rows = np.flatnonzero(model.kind_in(LAUNCH_KINDS) & ~model.name_in(ids))
    span = model.stop_ns - model.start_ns
    if rows.size == 0 or span <= 0:
        return None
    rows = rows[model.dur_ns[rows] >= T.STARTUP_CALL_SHARE * span]
    rows = rows[~waits_on_device(model, rows, busy)]
    if rows.size == 0:
        return None
    longest = rows[np.argmax(model.dur_ns[rows])]
    share = float(model.dur_ns[longest]) / span
    return ("startup", f"one {model.shown_names[model.name_id[longest]]} call takes {model.dur_ns[longest] / 1e6:.1f} ms, "
                       f"{100 * share:.0f}% of the trace, with the device idle and nothing queued: start-up work "
                       "(context creation, module loading, first launch)")


def _capture_only(model: TraceModel, judged_ms: Optional[float]) -> Optional[tuple[str, str]]:
    lane, start, stop = capture_spans(model)
    if not lane.size:
        return None
    capture_ns = float(np.sum(stop - start))
    whole_ns = max(judged_ms * 1e6 if judged_ms else float(model.stop_ns - model.start_ns), 1.0)
    if capture_ns < T.CAPTURE_SHARE * whole_ns:
        return None
    launches = launch_call_rows(model)
    captured = int(np.count_nonzero(captured_launch_mask(model, launches)))
    return ("capture-only", f"{lane.size} CUDA/HIP graph capture{'s' * (lane.size != 1)} take{'s' * (lane.size == 1)} {capture_ns / 1e6:.1f} ms "
                            f"({captured:,} launches recorded, not run): the trace records graph capture, one-time "
                            "work, not the workload")


def uncaptured_launch_rows(model: TraceModel) -> np.ndarray:
    """The launch calls that were not recorded into a graph (those own no device activity of their own)."""
    launches = launch_call_rows(model)
    return launches[~captured_launch_mask(model, launches)]


def unrecorded_launches(model: TraceModel) -> Optional[np.ndarray]:
    """The calls that launch device work (outside graph capture) when no device activity at all was recorded:
    ProfilerActivity.CUDA was left out of the activities. None otherwise."""
    if np.any(model.kind_in(ACTIVITY_KINDS)):
        return None
    launches = uncaptured_launch_rows(model)
    return launches if launches.size else None


def launched_calls(model: TraceModel, launches: np.ndarray) -> str:
    """`1,204 runtime calls: cudaLaunchKernel 1,100, cudaMemcpyAsync 104`: the launch calls by name, most first."""
    names, counts = np.unique(model.name_id[launches], return_counts=True)
    order = np.argsort(-counts, kind="stable")[:3]
    named = ", ".join(f"{model.names[int(names[i])]} {int(counts[i]):,}" for i in order)
    more = ", ..." if names.size > 3 else ""
    return f"{launches.size:,} runtime call{'s' if launches.size != 1 else ''}: {named}{more}"


def _missing_device(model: TraceModel) -> Optional[tuple[str, str]]:
    launches = uncaptured_launch_rows(model)
    if launches.size < T.MIN_LAUNCHES:
        return None
    owns_work = np.zeros(model.n_events, bool)
    owns_work[model.launch_idx[model.launch_idx >= 0]] = True
    missing = launches.size - int(np.count_nonzero(owns_work[launches]))
    if missing <= T.MISSING_DEVICE_SHARE * launches.size:
        return None
    return ("device-records-missing", f"{missing:,} of {launches.size:,} launch calls have no device activity in the "
                                      "trace: device records were dropped or not recorded")
