"""Trace health: what in a trace makes one of its figures unreliable, found per trace, said next to that figure.

One small pure function per check; each returns a `HealthItem` (or None when the trace is clean of it)
that says what it found, how many, which figures it affects (`FIGURES`) and what it does to them. The
checks (issue 25, item 3):

- cropped: no `Trace` span and no process metadata: the file was cut out of a longer profile; Ev Idx
  starting above 0 says where.
- pre_window: device activities launched before the file's first event (no launch call in the file,
  a correlation id below every launch call's): prior work that runs inside the window.
- same_stream_overlap: activities on one stream that overlap; with `*LaunchKernelEx` launches on a GPU of
  compute capability 9 or more this is programmatic dependent launch (PDL), not corruption.
- lazy_loading, first_call_stall: CUPTI `Lazy Function Loading` overhead events; a kernel's first launch
  after the host sat inside its op for milliseconds with the device idle (module load, library set-up).
- python_stack: `python_function` events (with_stack=True): each Python call is recorded, which
  lengthens host time.
- no_device_activity: calls that launch device work (cudaLaunchKernel, cudaMemcpyAsync, hipLaunchKernel...) and
  no device activity at all: ProfilerActivity.CUDA was not among the profiler's activities.
- device_id_mismatch: GPU pids that no `deviceProperties` id names (ROCm writes pid 9 for device 0);
  empty_device_name: `deviceProperties` entries with an empty name.
- no_record_shapes: ops that launched device work and none records its inputs (`Input Dims`, `Input type`):
  the profiler ran without record_shapes=True, so no op's work (operations, bytes) can be known.
- partial_job: one rank of a job of several (distributedInfo): collective time includes waits for ranks
  that are not in the file.
- The checks torch.profiler's own trace validator makes (torch/profiler/_trace_validator.py, torch 2.13),
  on the model's columns: kernel_causality (a kernel starting before its launch call), stream_wait_link
  (Stream Wait Event / Event Sync without, or with a later, cudaEventRecord), sync_overlap (a Stream Sync
  while a kernel on its stream still runs), nccl_metadata (record_param_comms without its collective
  fields), backward_seq (one autograd sequence number on two backward ops).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import msgspec
import numpy as np

from ...trace.kinds import ACTIVITY_KINDS, LAUNCH_KINDS, Kind, LaneKind
from ...trace.model import TraceModel, unique, unique_first
from ..core import thresholds as T
from ..core.selectors import activity_rows_by_device
from ..idle.gpu_idle import first_launch_correlation, launched_before_trace
from .sufficiency import launched_calls, unrecorded_launches

# The figures a health item can affect: the key, and where the tab and the report show it.
FIGURES = {
    "busy_idle": "device busy and idle time, idle by cause",
    "verdict": "the verdict",
    "host_gaps": "host gaps and their culprits",
    "launch": "launch offsets (queued, latency)",
    "kernel_table": "kernel and operator GPU time tables",
    "devices": "device names and properties",
    "comm": "communication figures and the ranks view",
    "op_table": "forward/backward operator attribution",
    "efficiency": "each op's work, achieved TFLOP/s and TB/s against the device's roofs (roofline), MFU",
}
WARN, INFO = "warn", "info"
PDL_MIN_MAJOR = 9  # programmatic dependent launch exists from compute capability 9.0 (Hopper) on
EX_LAUNCHES = ("cuLaunchKernelEx", "cudaLaunchKernelExC", "cudaLaunchKernelEx")
EVENT_RECORD_PREFIXES = ("cudaEventRecord", "hipEventRecord", "cuEventRecord")
NCCL_FIELDS = ("coll_name", "coll_dtype", "coll_in_nelems", "coll_out_nelems", "coll_group_size")


class HealthItem(msgspec.Struct, frozen=True):
    """One finding: which check, how bad, what was found, which figures it affects and how."""

    check: str
    severity: str  # WARN: a figure is unreliable; INFO: worth knowing, figures hold
    found: str
    affects: tuple[str, ...]  # keys of FIGURES
    effect: str
    count: int = 0

    def entry(self) -> dict[str, Any]:
        return {"check": self.check, "severity": self.severity, "found": self.found, "affects": list(self.affects),
                "effect": self.effect, "count": self.count}


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms" if ns >= 1e5 else f"{ns / 1e3:.1f} µs"


def cropped(model: TraceModel) -> Optional[HealthItem]:
    """No `Trace` span and no metadata events: cut out of a longer profile (by annotation or by hand)."""
    if not model.n_events or "metadata_events" not in model.meta:
        return None
    spans = int(np.count_nonzero(model.kind == Kind.TRACE_SPAN))
    if spans or model.meta["metadata_events"]:
        return None
    low = (model.meta.get("event_index") or {}).get("min")
    where = f"; Ev Idx starts at {low:,}" if isinstance(low, int) and low > 0 else ""
    return HealthItem("cropped", WARN, f"no 'Trace' span and no process or thread metadata: the file was cut out of a longer "
                      f"profile{where}", ("busy_idle", "verdict"),
                      "device work of the profile that ran before the cut is not in the file: idle time at the start of "
                      "the window may be an artifact and busy % understated")


def pre_window(model: TraceModel) -> Optional[HealthItem]:
    """Device activities launched before the file begins (`gpu_idle.launched_before_trace`, as the gap causes
    read them: no launch call in the file, and they run before the device's first activity that has one or
    carry a correlation id below every launch call's)."""
    first = first_launch_correlation(model)
    rows = [r[launched_before_trace(model, r, first)] for r in activity_rows_by_device(model).values()]
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    if not rows.size:
        return None
    total = int(np.count_nonzero(model.activity_mask()))
    last_end = int(model.end_ns[rows].max()) - model.start_ns
    return HealthItem("pre_window", WARN, f"{rows.size:,} of {total:,} device activities were launched before the file "
                      f"begins (no launch call in it); they run in the first {_ms(last_end)}",
                      ("busy_idle", "launch", "verdict"),
                      "busy time in the window includes work launched before it, and the host waits on it at the start "
                      "(a sync or copy there waits on prior work, not start-up); these have no launch offsets",
                      int(rows.size))


def stream_overlaps(model: TraceModel) -> np.ndarray:
    """Rows of the GPU activities that start before an earlier activity on their stream has ended.

    One pass over every stream at once (a trace may have 100k of them): rows are in (lane, ts) order, so a
    running maximum of (lane, rank of end) keys is each lane's running maximum end, never a lane before it.
    """
    rows = np.flatnonzero(model.kind_in(ACTIVITY_KINDS) & model.on_lanes(LaneKind.GPU))
    if rows.size < 2:
        return rows[:0]
    ends, end_rank = np.unique(model.end_ns[rows], return_inverse=True)
    lane = model.lane[rows].astype(np.int64)
    running = np.maximum.accumulate(lane * (ends.size + 1) + end_rank)
    prev_end = ends[running[:-1] - lane[:-1] * (ends.size + 1)]
    later = rows[1:]
    return later[(lane[1:] == lane[:-1]) & (model.ts_ns[later] < prev_end)]


def same_stream_overlap(model: TraceModel) -> Optional[HealthItem]:
    """Activities that overlap on one stream; programmatic dependent launch when every one of them whose launch
    call is in the file was launched by an `*Ex` call (at least one was), on a GPU of compute capability 9 or more.
    Activities launched before the window have no launch call and count neither way: on a busy Hopper GPU the
    window opens with PDL kernels whose launches the profiler did not see (real H200 recordings show it)."""
    rows = stream_overlaps(model)
    if not rows.size:
        return None
    launch = model.launch_idx[rows]
    ex_ids = model.name_ids_where(lambda n: n.startswith(EX_LAUNCHES))
    linked = launch >= 0  # an activity launched before the window has no launch call: it neither shows nor rules out PDL
    ex = model.name_in(ex_ids, launch[linked])
    majors = [d.get("computeMajor") for d in _device_ids(model)[1]]
    pdl_gpu = any(isinstance(m, int) and m >= PDL_MIN_MAJOR for m in majors)
    pdl = bool(ex.size) and bool(ex.all()) and pdl_gpu
    cause = ("every one with a launch call in the file launched with cuLaunchKernelEx/cudaLaunchKernelExC on a compute "
             "capability >= 9 GPU: consistent with programmatic dependent launch (PDL), not corruption") if pdl \
        else "not explained by PDL: records may be damaged"
    return HealthItem("same_stream_overlap", INFO if pdl else WARN,
                      f"{rows.size:,} device activities overlap an earlier one on the same stream; {cause}",
                      ("kernel_table", "busy_idle"),
                      "busy time is the union of activities and holds; per-kernel GPU times summed over a stream "
                      "count the overlap twice", int(rows.size))


def lazy_loading(model: TraceModel) -> Optional[HealthItem]:
    """CUPTI `Lazy Function Loading` overhead events: modules loaded on first use inside the window."""
    ids = model.name_ids_where(lambda n: n == "Lazy Function Loading")
    rows = np.flatnonzero(model.name_in(ids)) if ids.size else np.zeros(0, np.int64)
    if not rows.size:
        return None
    return HealthItem("lazy_loading", WARN, f"{rows.size} 'Lazy Function Loading' events ({_ms(model.dur_ns[rows].sum())}): "
                      "kernels were loaded on first use inside the window", ("host_gaps", "verdict"),
                      "the window is not fully warm: one-time loading counts as host time", int(rows.size))


def first_call_stalls(model: TraceModel) -> Optional[HealthItem]:
    """First launches of a kernel that came after the host sat FIRST_CALL_STALL_MS inside the launching op (since
    the op began or the thread's previous launch, whichever is later) while the device idled just as long:
    one-time set-up (module load, library handles, autotuning)."""
    acts = np.flatnonzero(model.kind_in((Kind.KERNEL,)) & (model.launch_idx >= 0))
    if acts.size < 2:
        return None
    acts = acts[np.argsort(model.ts_ns[acts], kind="stable")]
    device_gap = model.ts_ns[acts] - np.concatenate([[model.ts_ns[acts[0]]], np.maximum.accumulate(model.end_ns[acts])[:-1]])
    _, first, _ = unique_first(model.name_id[acts])
    first = np.sort(first)[1:] if first.size else first  # the very first kernel has nothing before it
    launch = model.launch_idx[acts[first]]
    calls = np.flatnonzero(model.kind_in(LAUNCH_KINDS))
    prev = np.searchsorted(calls, launch) - 1  # the thread's previous launch call (calls are lane-sorted rows)
    ok = prev >= 0
    same_lane = np.zeros(launch.size, bool)
    same_lane[ok] = model.lane[calls[prev[ok]]] == model.lane[launch[ok]]
    since = np.where(same_lane, model.end_ns[calls[np.maximum(prev, 0)]], model.ts_ns[launch])
    host_gap = model.ts_ns[launch] - np.maximum(since, _enclosing_op_start(model, launch))
    limit = T.FIRST_CALL_STALL_MS * 1e6
    stalled = (host_gap >= limit) & (device_gap[first] >= limit)
    if not stalled.any():
        return None
    gaps = np.sort(device_gap[first][stalled])[::-1]
    shown = "/".join(f"{g / 1e6:.1f}" for g in gaps[:4])
    names = ", ".join(dict.fromkeys(model.shown_names[model.name_id[r]][:40] for r in acts[first][stalled][:3].tolist()))
    return HealthItem("first_call_stall", WARN, f"{int(stalled.sum())} kernels' first launches came after the host sat "
                      f"in the launching op for a millisecond or more while the device idled {shown} ms (first-call "
                      f"set-up; {names})",
                      ("host_gaps", "verdict"), "one-time set-up counts as host-bound idle: the window is not steady state",
                      int(stalled.sum()))


def _enclosing_op_start(model: TraceModel, launch: np.ndarray) -> np.ndarray:
    """Start of the CPU op that encloses each launch call (the last op started before it on its thread, when it
    is still running); the launch's own start where none does, so only time inside the op counts."""
    ops = np.flatnonzero(model.kind == Kind.CPU_OP)
    at = np.searchsorted(ops, launch) - 1
    op = ops[np.maximum(at, 0)] if ops.size else launch
    inside = (at >= 0) & (model.lane[op] == model.lane[launch]) & (model.end_ns[op] >= model.end_ns[launch])
    return np.where(inside, model.ts_ns[op], model.ts_ns[launch])


def python_stack(model: TraceModel) -> Optional[HealthItem]:
    """`python_function` events: recorded with with_stack=True, which adds work to every Python call. A bias
    toward host-bound, said beside the host figures; not a reason to distrust them (INFO)."""
    python = int(np.count_nonzero(model.kind == Kind.PYTHON_FUNCTION))
    if not python:
        return None
    ops = max(int(np.count_nonzero(model.kind == Kind.CPU_OP)), 1)
    heavy = python >= T.PYTHON_STACK_RATIO * ops
    return HealthItem("python_stack", INFO, f"{python:,} python_function events ({python / ops:.1f} per "
                      "CPU op): recorded with with_stack=True", ("host_gaps", "verdict"),
                      "profiling every Python call lengthens host time: host-bound shares are overstated"
                      + (" noticeably" if heavy else " slightly"), python)


def _device_ids(model: TraceModel) -> tuple[set, list]:
    props = [d for d in model.meta.get("device_properties") or [] if isinstance(d, dict)]
    return {d["id"] for d in props if isinstance(d.get("id"), int)}, props


def no_record_shapes(model: TraceModel) -> Optional[HealthItem]:
    """Ops launched device work, and no op in the trace records its inputs: record_shapes was off."""
    if model.inputs_strings or not (model.kind == Kind.KERNEL).any():
        return None
    ops = np.flatnonzero(model.kind == Kind.CPU_OP)
    if not ops.size:
        return None
    return HealthItem("no_record_shapes", INFO, f"none of the {ops.size} op calls records its inputs (Input Dims, "
                      "Input type): efficiency needs record_shapes=True", ("efficiency",),
                      "no op's work (operations, bytes moved) is known, so the roofline, achieved TFLOP/s and TB/s "
                      "and MFU are not computed: profile with torch.profiler.profile(record_shapes=True)", int(ops.size))


def device_id_mismatch(model: TraceModel) -> Optional[HealthItem]:
    """GPU pids that no `deviceProperties` id names (ROCm traces put device 0's work on pid 9, say)."""
    ids, props = _device_ids(model)
    pids = sorted(set(model.lane_pid[model.lanes_of(LaneKind.GPU)].tolist()) - ids)
    if not props or not pids:
        return None
    return HealthItem("device_id_mismatch", INFO, f"device pid {', '.join(map(str, pids[:8]))} is not among the "
                      f"deviceProperties ids ({', '.join(str(i) for i in sorted(ids, key=str)[:8])})", ("devices",),
                      "device names and properties cannot be matched to the device's lane by id", len(pids))


def empty_device_name(model: TraceModel) -> Optional[HealthItem]:
    """`deviceProperties` entries whose name is empty."""
    _, props = _device_ids(model)
    empty = [d for d in props if not str(d.get("name") or "").strip()]
    if not empty:
        return None
    return HealthItem("empty_device_name", INFO, f"{len(empty)} of {len(props)} deviceProperties entries have an empty "
                      "name", ("devices",), "the GPU model is unknown: shown as '?'", len(empty))


def partial_job(model: TraceModel) -> Optional[HealthItem]:
    """One rank of a job of several: its collectives wait for ranks that are not in this file."""
    world = model.world_size
    if world is None or world <= 1:
        return None
    return HealthItem("partial_job", INFO, f"rank {model.rank} of a job of {world} (distributedInfo); the other ranks are "
                      "judged from their own traces", ("comm",),
                      "collective time includes waiting for other ranks, which one trace cannot tell apart from transfer")


def kernel_causality(model: TraceModel) -> Optional[HealthItem]:
    """Device activities that start before the call that launched them (torch validator: kernel causality)."""
    acts = np.flatnonzero(model.kind_in(ACTIVITY_KINDS) & (model.launch_idx >= 0))
    early = acts[model.ts_ns[acts] < model.ts_ns[model.launch_idx[acts]]]
    if not early.size:
        return None
    worst = int((model.ts_ns[model.launch_idx[early]] - model.ts_ns[early]).max())
    return HealthItem("kernel_causality", WARN, f"{early.size:,} device activities start before their launch call "
                      f"(up to {_ms(worst)} early): the CPU and GPU clocks disagree", ("launch", "busy_idle"),
                      "launch offsets are wrong by the skew, and idle gaps may be blamed on the wrong host work", int(early.size))


def stream_wait_link(model: TraceModel) -> Optional[HealthItem]:
    """Stream Wait Event / Event Sync without the cudaEventRecord they wait on, or with a later one (torch
    validator: stream-wait correlation populated, and in the past)."""
    waits = model.meta.get("sync_waits") or {}
    rows, corr = np.asarray(waits.get("rows", []), np.int64), np.asarray(waits.get("values", []), np.int64)
    if not rows.size:
        return None
    records = np.flatnonzero(model.name_in(model.name_ids_where(lambda n: n.startswith(EVENT_RECORD_PREFIXES)))
                             & (model.correlation >= 0))
    order = np.argsort(model.correlation[records], kind="stable")
    rec_corr, rec_ts = model.correlation[records][order], model.ts_ns[records][order]
    bad = corr < 0
    if rec_corr.size:
        at = np.minimum(np.searchsorted(rec_corr, corr), rec_corr.size - 1)
        bad |= (rec_corr[at] != corr) | (rec_ts[at] > model.ts_ns[rows])
    else:
        bad[:] = True
    if not np.any(bad):
        return None
    n = int(np.count_nonzero(bad))
    return HealthItem("stream_wait_link", WARN, f"{n} of {rows.size} stream waits / event syncs have no earlier "
                      f"cudaEventRecord to link to ({int(np.count_nonzero(corr < 0))} with no id)", ("host_gaps",),
                      "cross-stream waits cannot be followed to the work they wait on: sync culprits are less certain", n)


def sync_overlap(model: TraceModel) -> Optional[HealthItem]:
    """A `Stream Sync` that starts while a kernel on its stream still runs (torch validator: sync overlap)."""
    sync_ids = model.name_ids_where(lambda n: n == "Stream Sync")
    syncs = np.flatnonzero(model.name_in(sync_ids) & (model.kind == Kind.CUDA_SYNC)) if sync_ids.size else np.zeros(0, np.int64)
    bad = 0
    for lane in unique(model.lane[syncs]).tolist():
        lo, hi = int(model.lane_ptr[lane]), int(model.lane_ptr[lane + 1])
        kernels = lo + np.flatnonzero(model.kind[lo:hi] == Kind.KERNEL)
        mine = syncs[model.lane[syncs] == lane]
        if not kernels.size:
            continue
        before = np.searchsorted(model.ts_ns[kernels], model.ts_ns[mine], side="left") - 1  # last kernel started earlier
        running = np.maximum.accumulate(model.end_ns[kernels])
        bad += int(np.count_nonzero((before >= 0) & (running[np.maximum(before, 0)] > model.ts_ns[mine])))
    if not bad:
        return None
    return HealthItem("sync_overlap", WARN, f"{bad} Stream Syncs start while a kernel on their stream still runs",
                      ("host_gaps", "busy_idle"), "the sync records are misplaced: sync time and what it waited on are uncertain", bad)


def nccl_metadata(model: TraceModel) -> Optional[HealthItem]:
    """record_param_comms events without Collective name, dtype, In/Out msg nelems or Group size (torch
    validator: NCCL metadata)."""
    ids = model.name_ids_where(lambda n: n == "record_param_comms")
    rows = np.flatnonzero(model.name_in(ids)) if ids.size else np.zeros(0, np.int64)
    if not rows.size:
        return None
    at = np.clip(np.searchsorted(model.coll_row, rows), 0, max(model.coll_row.size - 1, 0))
    has = (model.coll_row[at] == rows) if model.coll_row.size else np.zeros(rows.size, bool)
    complete = has.copy()
    for name in NCCL_FIELDS:
        column = getattr(model, name)
        complete[has] &= column[at[has]] >= 0
    n = int(np.count_nonzero(~complete))
    if not n:
        return None
    return HealthItem("nccl_metadata", WARN, f"{n} of {rows.size} record_param_comms events lack collective fields "
                      "(Collective name, dtype, In/Out msg nelems, Group size)", ("comm",),
                      "message sizes and bandwidth cannot be given for them, and ranks match them by order only", n)


def backward_seq(model: TraceModel) -> Optional[HealthItem]:
    """One autograd sequence number on two different backward ops (torch validator: backward sequence ids)."""
    found = model.meta.get("backward_seq") or {}
    rows, seq = np.asarray(found.get("rows", []), np.int64), np.asarray(found.get("values", []), np.int64)
    keep = seq >= 0
    if not np.any(keep):
        return None
    pairs = np.unique(np.stack([seq[keep], model.name_id[rows[keep]].astype(np.int64)]), axis=1)
    numbers, counts = np.unique(pairs[0], return_counts=True)
    shared = int(np.count_nonzero(counts > 1))
    if not shared:
        return None
    return HealthItem("backward_seq", WARN, f"{shared} autograd sequence numbers are each shared by two or more backward "
                      "ops", ("op_table",), "backward ops cannot be matched to their forward op by sequence number", shared)


def device_not_recorded(model: TraceModel) -> Optional[HealthItem]:
    """Calls that launch device work, and no device activity at all: the profiler ran without ProfilerActivity.CUDA."""
    launches = unrecorded_launches(model)
    if launches is None:
        return None
    return HealthItem("no_device_activity", WARN, f"GPU work was launched ({launched_calls(model, launches)}) but no "
                      "GPU activity was recorded, as if ProfilerActivity.CUDA was not among the activities",
                      ("busy_idle", "verdict", "launch", "kernel_table"),
                      "no device time, idle gap or kernel can be measured, and the trace is not a CPU-only run: "
                      "record it again with ProfilerActivity.CUDA in the activities",
                      count=int(launches.size))


CHECKS: tuple[Callable[[TraceModel], Optional[HealthItem]], ...] = (
    device_not_recorded, cropped, pre_window, same_stream_overlap, lazy_loading, first_call_stalls, python_stack, device_id_mismatch,
    empty_device_name, no_record_shapes, partial_job, kernel_causality, stream_wait_link, sync_overlap, nccl_metadata, backward_seq)


def trace_health(model: TraceModel) -> tuple[HealthItem, ...]:
    """Every check's finding on one trace, warnings first."""
    items = [item for check in CHECKS if (item := check(model)) is not None]
    return tuple(sorted(items, key=lambda i: i.severity != WARN))


def health_entries(items: tuple[HealthItem, ...]) -> list[dict[str, Any]]:
    """The `health` list of the report entry."""
    return [i.entry() for i in items]
