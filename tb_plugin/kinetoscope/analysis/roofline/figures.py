"""How close each op runs to what the device can do: the roofline of the op calls that launched GPU work.

Each GPU activity (kernel, memcpy, memset) counts under one op call: the op table's issuing op of its launch call
(the op with the call's External id enclosing it, else the innermost op running when the call started), or the
outermost op around that one whose work model covers it (`attribution.owners`: `aten::convolution` over the
`aten::cudnn_convolution` that launched the kernel). A call's work per call is `work.op_work` of what the trace
records of its inputs (`record_shapes=True`). Per call, the achieved rate is the call's work over its GPU time (the
sum of its activities' durations); a row's `achieved_tflops` and `achieved_tbps` are the means over its calls of
those per-call rates, as TraceLens reports them.

The roof of a call is the device's (`peaks.Peaks`): its compute peak for the call's dtype (matrix units for GEMM,
convolution and attention, the vector peak otherwise) and its memory bandwidth. At arithmetic intensity I
(operations per byte moved) the roof is min(peak, I x bandwidth); the call is compute-bound when I is past the
ridge point peak / bandwidth, else memory-bound. Its time at the roof is max(operations / peak, bytes /
bandwidth), the least the kernels could take; its share of the roof is that time over its GPU time (the achieved
rate over the roof at its intensity).

    roof = roofline_of(model, index, choice)                 # once per trace (index: the tables' TableIndex)
    rows, totals = roofline_rows(model, roof, window=None)   # one row per (op, input dims, input types)
    shares = activity_shares(roof, acts)                     # per activity: its call's category and roof share
    mfu = step_mfu(roof, step_start_ns, step_end_ns)         # model FLOPs per step over step time x peak

Calls without a model (an op no model covers, or one recorded without shapes) keep their time in the totals as
unmodelled; activities launched outside every op have no call and are unmodelled too. Communication kernels are
counted apart: no work model applies to them, and they are not counted in the unmodelled share.
"""
from __future__ import annotations

import json
import threading
import weakref
from typing import Any, Optional

import msgspec
import numpy as np

from ...trace.kinds import LaneKind
from ...trace.model import TraceModel, freeze_arrays, unique_inverse
from ..core.selectors import comm_mask
from ..graphs.attribution import GraphAttribution
from ..tables.index import TableIndex, Window, clip
from .attribution import Works, owners, replayed_owners
from .peaks import Choice, Peaks, builtin_peaks, choose
from .work import CATEGORIES, COMMUNICATION, Work, category_of

MAX_KERNEL_ROWS = 500  # kernel rows a roofline row lists (earliest first), for the chart's click-to-select
MAX_KERNEL_NAMES = 8  # kernels a row names, by time
MAX_INPUT_TEXT = 2000  # characters of a row's input dims or types text


class Roofline(msgspec.Struct, frozen=True, eq=False, weakref=True):  # compared and hashed by identity: a cache key for its whole-trace rows
    """The op calls of one trace that launched GPU work, each with its group and the group's work per call."""

    act_rows: np.ndarray  # int64 GPU activity rows (kernels, memcpys, memsets on GPU lanes), ascending
    act_start_ns: np.ndarray  # int64
    act_end_ns: np.ndarray  # int64
    act_call: np.ndarray  # int64 per activity: the call it counts under (into call_rows), -1 when no op launched it
    call_rows: np.ndarray  # int64 op rows of the calls GPU work counts under, ascending; then the replayed calls'
    # (graphs.attribution: the ops that captured graph-replayed kernels), each the row of its replay's graph launch
    call_group: np.ndarray  # int64 per call: its (op name, inputs) group (int64, as these two index arrays: numpy
    # casts int32 indices to intp on every gather)
    group_name: np.ndarray  # int32 model name id per group
    group_inputs: np.ndarray  # int32 model inputs id per group (-1: none recorded)
    works: tuple[Optional[Work], ...]  # per group: the work of one call, None without a model
    categories: tuple[str, ...]  # per group
    peaks: Optional[Peaks]
    reason: str  # why these peaks, or why none
    recorded_inputs: bool  # any op call of the trace records its inputs (record_shapes=True)

    def __post_init__(self) -> None:
        freeze_arrays(self)


def roofline_of(model: TraceModel, index: TableIndex, choice: Choice) -> Roofline:
    """The calls that launched GPU work (`index`: the profiler tables' index, whose op forest names the op that
    issued each activity's launch call), each activity given to the op call whose work it does
    (`attribution.owners`), grouped by (op name, recorded inputs), with each group's work and the device's peaks."""
    ops, acts, graphs = index.ops, index.act_rows, index.graphs
    works = Works(model, ops.name_ids if graphs is None else np.union1d(ops.name_ids, graphs.call_name))
    owned = np.flatnonzero(ops.owner >= 0) if ops.size else np.zeros(0, np.int64)
    if graphs is not None:  # replayed kernels count under their replayed calls, not the graph launch's op
        owned = owned[graphs.act_call[owned] < 0]
    # the issuing calls as op positions (denser than rows), each once; then the call each one's work counts under
    positions, inverse = unique_inverse(ops.owner[owned]) if owned.size else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    owner = owners(model, works, ops, positions)
    call_rows, call_of = np.unique(owner, return_inverse=True)
    act_to_call = np.full(acts.size, -1, np.int64)
    act_to_call[owned] = call_of.reshape(-1)[inverse]
    call_keys = works.key(call_rows)
    if graphs is not None:
        call_rows, call_keys = _replayed_calls(model, works, graphs, act_to_call, call_rows, call_keys)
    keys, group = unique_inverse(call_keys)
    names = works.name_ids[keys // works.width].astype(np.int32)
    inputs = (keys % works.width - 1).astype(np.int32)
    found = [works.of(k) for k in keys.tolist()]
    categories = tuple(w.category if w is not None else category_of(model.names[n]) for w, n in zip(found, names.tolist()))
    recorded = bool((inputs >= 0).any()) if call_rows.size else bool(model.inputs_strings)
    return Roofline(acts, index.act_start_ns, index.act_end_ns, act_to_call, call_rows.astype(np.int64),
                    group.astype(np.int64), names, inputs, tuple(found), categories, choice.peaks, choice.reason,
                    recorded)


def _replayed_calls(model: TraceModel, works: Works, graphs: GraphAttribution, act_to_call: np.ndarray,
                    call_rows: np.ndarray, call_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The replayed calls replayed kernels count under (`attribution.replayed_owners`), appended to the calls (their
    row: the replay's graph launch call), with `act_to_call` set for those kernels; the calls' keys likewise."""
    mine = np.flatnonzero(graphs.act_call >= 0)
    issuing, inverse = unique_inverse(graphs.act_call[mine].astype(np.int64))
    chosen = replayed_owners(model, works, graphs, issuing)
    calls, of = np.unique(chosen, return_inverse=True)
    act_to_call[mine] = call_rows.size + of.reshape(-1)[inverse]
    rows = graphs.replay_launch[graphs.call_replay[calls]]
    keys = works.key_of(graphs.call_name[calls].astype(np.int64), graphs.call_inputs[calls])
    return np.concatenate([call_rows, rows]), np.concatenate([call_keys, keys])


def trace_roofline(model: TraceModel, index: TableIndex, user: tuple = ()) -> Roofline:
    """The trace's Roofline against its busiest device's peaks: `user` entries (a peaks file's,
    `peaks.parse_peaks`) before the built-in ones."""
    return roofline_of(model, index, device_peaks(model, (*user, *builtin_peaks())))


def device_peaks(model: TraceModel, entries: Optional[tuple] = None) -> Choice:
    """The peaks of the trace's busiest GPU (the one with the most activity time) from its `deviceProperties`
    entry (`peaks.choose`; `entries`: the candidates, None: the built-in ones), else of its first device where no
    entry has that id (ROCm traces put device 0 on pid 9)."""
    props = model.meta.get("device_properties")
    acts = np.flatnonzero(model.activity_mask() & model.on_lanes(LaneKind.GPU))
    device = None
    if acts.size:
        time_by_lane = np.bincount(model.lane[acts], weights=model.dur_ns[acts], minlength=model.lane_pid.size)
        device = int(model.lane_pid[int(time_by_lane.argmax())])
    choice = choose(props, entries, device_id=device)
    if choice.peaks is None and device is not None:
        first = choose(props, entries)
        choice = first if first.peaks is not None else choice
    return choice


def roof_seconds(work: Work, peaks: Optional[Peaks]) -> Optional[float]:
    """The least time one call with this work takes on the device: max(operations / peak, bytes / bandwidth);
    None when the device or its peak for the dtype is unknown."""
    if peaks is None:
        return None
    peak = _peak(work, peaks)
    if work.flops > 0 and not peak:
        return None
    compute = work.flops / peak if peak else 0.0
    memory = work.bytes / peaks.bandwidth if peaks.bandwidth > 0 else 0.0
    return max(compute, memory)


def bound_of(work: Work, peaks: Optional[Peaks]) -> Optional[str]:
    """"compute" where the work's intensity is past the device's ridge point for its dtype, else "memory"."""
    if peaks is None:
        return None
    peak = _peak(work, peaks)
    if work.flops > 0 and not peak:
        return None
    if not peak or peaks.bandwidth <= 0:
        return "memory" if work.bytes > 0 else "compute"
    return "compute" if work.flops / peak >= work.bytes / peaks.bandwidth else "memory"


def _peak(work: Work, peaks: Peaks) -> Optional[float]:
    """The compute peak the work runs against: its dtype's on matrix units, else the vector one (integer and
    boolean vector work at the fp32 vector rate: one ALU operation per element)."""
    if work.flops <= 0:
        return None
    if work.dtype is None and not work.matrix:
        return peaks.compute_peak("fp32", False)
    return peaks.compute_peak(work.dtype, work.matrix)


class CallTimes(msgspec.Struct, frozen=True):
    """Per call of a Roofline: its GPU time in a window (ns, float64) and whether it counts there."""

    ns: np.ndarray
    counted: np.ndarray


def call_times(roof: Roofline, window: Window = None) -> CallTimes:
    """Each call's GPU time inside the window (its activities' durations clipped to it)."""
    inside, dur = clip(roof.act_start_ns, roof.act_end_ns, window)
    mine = (roof.act_call >= 0) & inside
    ns = np.bincount(roof.act_call[mine], weights=dur[mine], minlength=roof.call_rows.size).astype(np.float64)
    counted = np.bincount(roof.act_call[mine], minlength=roof.call_rows.size) > 0
    return CallTimes(ns, counted)


def activity_shares(roof: Roofline, acts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of `acts` (GPU activity rows): the category index (into CATEGORIES; -1: no modelled call) of the
    call that launched it, and that call's share of the roof (time at the roof over its GPU time; NaN where
    unknown). What `roofline:CATEGORY>=P%` re-times."""
    times, gw = call_times(roof), group_work(roof)
    cat_ix = np.array([CATEGORIES.index(c) if c in CATEGORIES else -1 for c in roof.categories], np.int32)
    g = roof.call_group
    ok = ~np.isnan(gw.roof_s[g]) & (times.ns > 0)
    share = np.where(ok, gw.roof_s[g] * 1e9 / np.where(ok, times.ns, 1.0), np.nan)
    category = np.where(ok, cat_ix[g], -1)
    call = activity_calls(roof, acts)
    mine = call >= 0
    out_cat, out_share = np.full(acts.size, -1, np.int32), np.full(acts.size, np.nan)
    out_cat[mine], out_share[mine] = category[call[mine]], share[call[mine]]
    return out_cat, out_share


def activity_calls(roof: Roofline, acts: np.ndarray) -> np.ndarray:
    """For each of `acts` (GPU activity rows): the call it counts under (into `roof.call_rows`), -1 for none."""
    pos = np.searchsorted(roof.act_rows, acts)
    hit = pos < roof.act_rows.size
    hit[hit] = roof.act_rows[pos[hit]] == acts[hit]
    call = np.full(acts.size, -1, np.int64)
    call[hit] = roof.act_call[pos[hit]]
    return call


def roofline_rows(model: TraceModel, roof: Roofline, window: Window = None,
                  kernels: bool = True) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One row per (op name, input dims, input types) whose calls launched GPU work in the window, by kernel time
    (the module docstring defines each figure), and the totals (kernel time, modelled and unmodelled time, the
    device and its roofs, per-category figures). Without `kernels`, the rows name no kernels (`kernels`,
    `kernel_rows` and `kernel_count` left out: what the report reads)."""
    times = call_times(roof, window)
    inside, dur = clip(roof.act_start_ns, roof.act_end_ns, window)
    rows = _rows(model, roof, times, inside, dur, kernels)
    rows.sort(key=lambda r: (-r["kernel_us"], r["name"], r["input_dims"] or ""))
    return rows, _totals(model, roof, rows, inside, dur)


_WHOLE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_WHOLE_LOCK = threading.Lock()


def whole_rows(model: TraceModel, roof: Roofline, kernels: bool = True) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """`roofline_rows` of the whole trace, computed once per (Roofline, `kernels`): the report and the savings share
    the one without kernels, the route the other; callers must not change what it returns."""
    with _WHOLE_LOCK:
        found = _WHOLE.get(roof, {}).get(kernels)
    if found is None:
        found = roofline_rows(model, roof, kernels=kernels)
        with _WHOLE_LOCK:
            found = _WHOLE.setdefault(roof, {}).setdefault(kernels, found)
    return found


def _row_keys(model: TraceModel, roof: Roofline) -> tuple[np.ndarray, list[tuple[str, Optional[str], Optional[str]]]]:
    """Per group, its row (groups that differ only in strides or concrete inputs share one), and each row's
    (name, input dims text, input types text)."""
    keys: dict[tuple[str, Optional[str], Optional[str]], int] = {}
    row_of = []
    for name_id, inputs_id in zip(roof.group_name.tolist(), roof.group_inputs.tolist()):
        dims = types = None
        if inputs_id >= 0:
            try:
                parts = json.loads(model.inputs_strings[inputs_id])  # json.dumps spacing, as the op table's shapes
                dims, types = (None if p is None else json.dumps(p, ensure_ascii=False)[:MAX_INPUT_TEXT]
                               for p in parts[:2])
            except (ValueError, RecursionError, TypeError):
                pass
        row_of.append(keys.setdefault((model.shown_names[name_id], dims, types), len(keys)))
    return np.array(row_of, np.int32), list(keys)


class GroupWork(msgspec.Struct, frozen=True):
    """Per group of a Roofline: its work per call as arrays (NaN without a model), and its time at the roof."""

    flops: np.ndarray
    bytes: np.ndarray
    roof_s: np.ndarray  # NaN where the device or its peak for the dtype is unknown


def group_work(roof: Roofline) -> GroupWork:
    flops = np.array([w.flops if w is not None else np.nan for w in roof.works], np.float64)
    moved = np.array([w.bytes if w is not None else np.nan for w in roof.works], np.float64)
    seconds = [roof_seconds(w, roof.peaks) if w is not None else None for w in roof.works]
    return GroupWork(flops, moved, np.array([np.nan if t is None else t for t in seconds], np.float64))


def _rows(model: TraceModel, roof: Roofline, times: CallTimes, inside: np.ndarray, dur: np.ndarray,
          with_kernels: bool) -> list[dict[str, Any]]:
    """The rows' figures, summed per group first (a group's calls share their work, so a sum over its calls of
    work / time is its work times the sum of 1 / time), then per row (the groups of one op name, dims and types)."""
    row_of_group, keys = _row_keys(model, roof)
    calls = np.flatnonzero(times.counted)
    if not calls.size:
        return []
    gw, n, n_groups = group_work(roof), len(keys), len(roof.works)
    group = roof.call_group[calls]
    seconds = times.ns[calls] * 1e-9
    timed = seconds > 0
    per_group = {"calls": np.bincount(group, minlength=n_groups).astype(np.float64),
                 "timed": np.bincount(group[timed], minlength=n_groups).astype(np.float64),
                 "inverse": np.bincount(group[timed], weights=1.0 / seconds[timed], minlength=n_groups),
                 "ns": np.bincount(group, weights=times.ns[calls], minlength=n_groups)}
    present = per_group["calls"] > 0
    by_row = lambda values: np.bincount(row_of_group, weights=np.where(present, values, 0.0), minlength=n)  # noqa: E731
    unknown = lambda values: np.bincount(row_of_group, weights=present & np.isnan(values), minlength=n) > 0  # noqa: E731
    sums = {"calls": by_row(per_group["calls"]), "timed": by_row(per_group["timed"]), "ns": by_row(per_group["ns"]),
            **{k: by_row(np.nan_to_num(v * per_group[w])) for k, v, w in (
                ("flops", gw.flops, "calls"), ("bytes", gw.bytes, "calls"), ("roof_s", gw.roof_s, "calls"),
                ("tflops", gw.flops, "inverse"), ("tbps", gw.bytes, "inverse"), ("roof", gw.roof_s, "inverse"))}}
    missing = {"flops": unknown(gw.flops), "roof_s": unknown(gw.roof_s)}
    first_call = np.full(n_groups, calls.size, np.int64)
    np.minimum.at(first_call, group, np.arange(calls.size))
    first_group = np.full(n, -1, np.int64)
    for g in np.argsort(first_call, kind="stable")[::-1].tolist():  # each row: its group with the earliest call
        if present[g]:
            first_group[row_of_group[g]] = g
    kernels = _kernels(model, roof, row_of_group, inside, dur, n) if with_kernels else [{}] * n
    return [_row(roof, keys[r], r, sums, missing, roof.works[int(first_group[r])], roof.categories[int(first_group[r])],
                 kernels[r]) for r in np.flatnonzero(sums["calls"]).tolist()]


def _row(roof: Roofline, key: tuple, r: int, sums: dict[str, np.ndarray], missing: dict[str, np.ndarray],
         work: Optional[Work], category: str, kernels: dict[str, Any]) -> dict[str, Any]:
    """Row r of the table from its sums (module docstring: rates are means over the calls with GPU time)."""
    name, dims, types = key
    calls, timed = sums["calls"][r], sums["timed"][r]
    modelled = not missing["flops"][r] and timed > 0 and work is not None
    known = modelled and not missing["roof_s"][r]
    flops, moved = (sums["flops"][r] / calls, sums["bytes"][r] / calls) if modelled else (None, None)
    return {"name": name, "input_dims": dims, "input_types": types, "category": category, "calls": int(calls),
            "flops": float(flops) if modelled else None, "bytes": float(moved) if modelled else None,
            "kernel_us": float(sums["ns"][r]) / 1e3,
            "achieved_tflops": float(sums["tflops"][r] / timed) / 1e12 if modelled else None,
            "achieved_tbps": float(sums["tbps"][r] / timed) / 1e12 if modelled else None,
            "intensity": float(flops / moved) if modelled and moved > 0 else None,
            "bound": bound_of(work, roof.peaks) if modelled else None,
            "roof_pct": 100 * float(sums["roof"][r] / timed) if known else None,
            "roof_us": float(sums["roof_s"][r]) * 1e6 if known else None,
            "dtype": work.dtype if modelled else None,
            "peak_source": roof.peaks.source if roof.peaks is not None else None, **kernels}


def _kernels(model: TraceModel, roof: Roofline, row_of_group: np.ndarray, inside: np.ndarray, dur: np.ndarray,
             n: int) -> list[dict[str, Any]]:
    """Per row, the GPU activities its calls launched in the window: the top names by time, up to MAX_KERNEL_ROWS
    event rows (earliest first) and how many there are."""
    acts = np.flatnonzero((roof.act_call >= 0) & inside)
    row = row_of_group[roof.call_group[roof.act_call[acts]]].astype(np.int64) if acts.size else np.zeros(0, np.int64)
    order = np.lexsort((roof.act_start_ns[acts], row))
    acts, row = acts[order], row[order]
    bounds = np.searchsorted(row, np.arange(n + 1))
    names = model.name_id[roof.act_rows[acts]].astype(np.int64)
    pairs, pair_ix = unique_inverse(row * (len(model.names) + 1) + names)  # (row, kernel name), by row
    ns = np.bincount(pair_ix, weights=dur[acts], minlength=pairs.size)
    count = np.bincount(pair_ix, minlength=pairs.size)
    pair_row = pairs // (len(model.names) + 1)
    by_time = np.lexsort((-ns, pair_row))
    pair_bounds = np.searchsorted(pair_row[by_time], np.arange(n + 1))
    out = []
    for r in range(n):
        top = by_time[pair_bounds[r]:pair_bounds[r + 1]][:MAX_KERNEL_NAMES].tolist()
        out.append({"kernels": [{"name": model.shown_names[int(pairs[k] % (len(model.names) + 1))],
                                 "count": int(count[k]), "kernel_us": float(ns[k]) / 1e3} for k in top],
                    "kernel_rows": roof.act_rows[acts[bounds[r]:min(bounds[r + 1], bounds[r] + MAX_KERNEL_ROWS)]].tolist(),
                    "kernel_count": int(bounds[r + 1] - bounds[r])})
    return out


def _totals(model: TraceModel, roof: Roofline, rows: list[dict[str, Any]], inside: np.ndarray,
            dur: np.ndarray) -> dict[str, Any]:
    """The window's kernel time, its modelled and unmodelled parts, the device and its roofs, per category. The
    unmodelled share is of the time the op calls launched (communication apart): activities no op launched (no
    launch call in the file, work launched before the profiler started) have no op whose work could be known, and
    are counted apart (`unowned_us`)."""
    comm = comm_mask(model, roof.act_rows) & inside
    owned = inside & (roof.act_call >= 0) & ~comm
    modelled_us = sum(r["kernel_us"] for r in rows if r["flops"] is not None)
    kernel_us, comm_us = float(dur[inside].sum()) / 1e3, float(dur[comm].sum()) / 1e3
    judged_us = float(dur[owned].sum()) / 1e3
    unmodelled_us = max(judged_us - modelled_us, 0.0)
    peaks = roof.peaks
    return {"rows": len(rows), "kernel_us": kernel_us, "modelled_us": modelled_us, "unmodelled_us": unmodelled_us,
            "unmodelled_share": unmodelled_us / judged_us if judged_us > 0 else 0.0, "communication_us": comm_us,
            "unowned_us": float(dur[inside & (roof.act_call < 0) & ~comm].sum()) / 1e3,
            "device": peaks.device if peaks is not None else _device_name(model), "peak_source":
            peaks.source if peaks is not None else None, "reason": None if peaks is not None else roof.reason,
            "recorded_inputs": roof.recorded_inputs, "roofs": _roofs(peaks, rows),
            "categories": category_totals(rows, comm_us)}


def _device_name(model: TraceModel) -> Optional[str]:
    props = model.meta.get("device_properties")
    if isinstance(props, list) and props and isinstance(props[0], dict) and isinstance(props[0].get("name"), str):
        return props[0]["name"][:200]
    return None


def _roofs(peaks: Optional[Peaks], rows: list[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The roofs to draw: the bandwidth, and the compute peak of each dtype the rows run at (matrix peaks for the
    matrix categories, the vector one for the others)."""
    if peaks is None:
        return None
    compute: dict[str, float] = {}
    for r in rows:
        if r["dtype"] is None or r["flops"] is None:
            continue
        matrix = r["category"] in MATRIX_CATEGORIES
        label = r["dtype"] if matrix else f"vector {'fp64' if r['dtype'] == 'fp64' else 'fp32'}"
        peak = peaks.compute_peak(r["dtype"], matrix)
        if peak and peak / 1e12 not in compute.values():  # one line per roof (fp32 matrix work may run at the vector one)
            compute[label] = peak / 1e12
    return {"bandwidth_tbps": peaks.bandwidth / 1e12, "compute_tflops": compute}


MATRIX_CATEGORIES = ("gemm", "attention", "conv")


def category_totals(rows: list[dict[str, Any]], comm_us: float = 0.0) -> list[dict[str, Any]]:
    """Per category, by kernel time: `category`, `kernel_us`, `modelled_us`, `roof_us` (the time at the roof of the
    modelled calls whose roof is known; None when none is: an unknown device), `roof_pct` (roof_us over those
    calls' time), `bound` (the bound of most of its modelled time), `rows`."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        t = out.setdefault(r["category"], {"category": r["category"], "kernel_us": 0.0, "modelled_us": 0.0,
                                           "roof_us": 0.0, "rows": 0, "roofed_us": 0.0, "compute_us": 0.0})
        t["kernel_us"] += r["kernel_us"]
        t["rows"] += 1
        if r["flops"] is not None:
            t["modelled_us"] += r["kernel_us"]
            t["compute_us"] += r["kernel_us"] if r["bound"] == "compute" else 0.0
            if r["roof_us"] is not None:
                t["roof_us"] += r["roof_us"]
                t["roofed_us"] += r["kernel_us"]
    if comm_us > 0:
        t = out.setdefault(COMMUNICATION, {"category": COMMUNICATION, "kernel_us": 0.0, "modelled_us": 0.0,
                                           "roof_us": 0.0, "rows": 0, "roofed_us": 0.0, "compute_us": 0.0})
        t["kernel_us"] = max(t["kernel_us"], comm_us)
    result = []
    for t in sorted(out.values(), key=lambda t: -t["kernel_us"]):
        roofed, compute_us = t.pop("roofed_us"), t.pop("compute_us")
        t["roof_us"] = t["roof_us"] if roofed > 0 else None
        t["roof_pct"] = 100 * t["roof_us"] / roofed if roofed > 0 else None
        t["bound"] = None if t["modelled_us"] <= 0 else "compute" if compute_us * 2 > t["modelled_us"] else "memory"
        result.append(t)
    return result


def step_mfu(roof: Roofline, step_start_ns: np.ndarray, step_end_ns: np.ndarray) -> list[Optional[float]]:
    """Per step: the model FLOPs its op calls did (every modelled call whose GPU work started in the step) over the
    step's time x the device's peak for the dtype most of those FLOPs ran at (matrix units); None for a step
    without modelled work or on an unknown device."""
    peaks = roof.peaks
    if peaks is None or not step_start_ns.size:
        return [None] * int(step_start_ns.size)
    flops = np.array([w.flops if w is not None else 0.0 for w in roof.works] + [0.0])
    dtypes = sorted({w.dtype for w in roof.works if w is not None and w.dtype is not None})
    dtype_of = np.array([dtypes.index(w.dtype) if w is not None and w.dtype is not None else len(dtypes)
                         for w in roof.works] + [len(dtypes)], np.int64)
    call_start = np.full(roof.call_rows.size, np.iinfo(np.int64).max, np.int64)
    owned = roof.act_call >= 0
    np.minimum.at(call_start, roof.act_call[owned], roof.act_start_ns[owned])
    step = np.searchsorted(step_start_ns, call_start, side="right") - 1
    ok = (step >= 0) & (call_start < step_end_ns[np.maximum(step, 0)])
    n, width = int(step_start_ns.size), len(dtypes) + 1
    g = roof.call_group[ok]
    done = np.bincount(step[ok], weights=flops[g], minlength=n)
    by_dtype = np.bincount(step[ok] * width + dtype_of[g], weights=flops[g], minlength=n * width).reshape(n, width)
    main = by_dtype[:, :-1].argmax(axis=1) if dtypes else np.zeros(n, np.int64)
    seconds = (step_end_ns - step_start_ns).astype(np.float64) * 1e-9
    out: list[Optional[float]] = []
    for k in range(n):
        peak = peaks.compute_peak(dtypes[int(main[k])], True) if dtypes and by_dtype[k, :-1].any() else None
        out.append(float(done[k] / (seconds[k] * peak)) if done[k] > 0 and peak and seconds[k] > 0 else None)
    return out
