"""Can this trace support a verdict at all? The reasons it cannot, each with how to record a better one.

A confident wrong answer costs more trust than "not enough data". A trace cannot be judged when:
- it is empty: no timed event at all (an empty `traceEvents` list, or metadata only);
- events were sampled or dropped: Kineto numbers CPU events (`Ev Idx`) and most numbers are missing;
- it is start-up only: one non-synchronizing runtime call (CUDA context creation, module loading, a
  first-time launch) takes a large share of the trace;
- it is too small: a micro-test with a handful of device activities, or fewer steps than noise can be
  told from, in a window of a few milliseconds;
- device records are missing: most launch calls have no device activity (CUPTI buffers dropped, or
  the device activity type was not recorded).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..trace.kinds import LAUNCH_CALLS, LAUNCH_KINDS, POLL_CALLS, SYNC_CALLS
from ..trace.model import TraceModel
from . import thresholds as T

RECORD_ADVICE = ("record with torch.profiler.schedule(wait=1, warmup=2, active=5), after CUDA and the allocator "
                 "are warmed up, with every event kept (no sampling)")


@dataclass(frozen=True)
class Insufficient:
    """Why a trace cannot be judged: short reason codes and sentences saying what was seen."""

    codes: tuple[str, ...]
    reasons: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.codes)


def sufficiency(model: TraceModel, *, steps: int, judged_ms: Optional[float], device_activities: int,
                cpu_ops: int) -> Insufficient:
    """The reasons this trace cannot support a verdict (empty when it can).

    Args:
        model: the trace.
        steps: number of profiler steps.
        judged_ms: the judged time (steps clipped to the device window), None without device work.
        device_activities: kernels, memcpys and memsets on the judged device.
        cpu_ops: CPU operators (not annotations, not ProfilerStep).
    """
    if model.n_events == 0:
        return Insufficient(("empty",), ("the trace holds no timed events (an empty traceEvents list): an empty trace",))
    found = [r for r in (_sampled(model), _startup(model), _missing_device(model)) if r]
    if judged_ms is None:
        if cpu_ops < T.MIN_CPU_OPS:
            found.append(("too-small", f"only {cpu_ops} CPU ops in the trace"))
    elif device_activities < T.MIN_DEVICE_ACTIVITIES:
        found.append(("too-small", f"only {device_activities} device activit{'y' if device_activities == 1 else 'ies'} "
                                   "in the trace"))
    elif steps < T.MIN_STEPS and judged_ms < T.MIN_WINDOW_MS:
        found.append(("too-small", f"{steps} step{'s' * (steps != 1)} in a {judged_ms:.1f} ms window"))
    return Insufficient(tuple(c for c, _ in found), tuple(r for _, r in found))


def _sampled(model: TraceModel) -> Optional[tuple[str, str]]:
    index = model.meta.get("event_index") or {}
    count, low, high = index.get("count", 0), index.get("min", 0), index.get("max", -1)
    span = high - low + 1
    if count and span >= T.EV_IDX_MIN_RANGE and count < T.EV_IDX_MIN_COVERAGE * span:
        return ("sampled", f"only {count:,} of {span:,} CPU events kept ({100 * count / span:.1f}% of the 'Ev Idx' "
                           "range): the trace was sampled or events were dropped")
    return None


def _startup(model: TraceModel) -> Optional[tuple[str, str]]:
    ids = model.name_ids_where(lambda n: n in SYNC_CALLS or n in POLL_CALLS)
    rows = np.flatnonzero(model.kind_in(LAUNCH_KINDS) & ~model.name_in(ids))
    span = model.stop_ns - model.start_ns
    if rows.size == 0 or span <= 0:
        return None
    longest = rows[np.argmax(model.dur_ns[rows])]
    share = float(model.dur_ns[longest]) / span
    if share < T.STARTUP_CALL_SHARE:
        return None
    return ("startup", f"one {model.shown_names[model.name_id[longest]]} call takes {model.dur_ns[longest] / 1e6:.1f} ms, "
                       f"{100 * share:.0f}% of the trace: start-up work (context creation, module loading, first launch)")


def _missing_device(model: TraceModel) -> Optional[tuple[str, str]]:
    ids = model.name_ids_where(lambda n: n in LAUNCH_CALLS)
    launches = np.flatnonzero(model.name_in(ids) & model.kind_in(LAUNCH_KINDS))
    if launches.size < T.MIN_LAUNCHES:
        return None
    owns_work = np.zeros(model.n_events, bool)
    owns_work[model.launch_idx[model.launch_idx >= 0]] = True
    missing = launches.size - int(np.count_nonzero(owns_work[launches]))
    if missing <= T.MISSING_DEVICE_SHARE * launches.size:
        return None
    return ("device-records-missing", f"{missing:,} of {launches.size:,} launch calls have no device activity in the "
                                      "trace: device records were dropped or not recorded")
