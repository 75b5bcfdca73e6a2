"""A time window as a Chrome trace (Perfetto, chrome://tracing), and one event's details.

The export keeps Kineto's conventions so Kinetoscope can reopen it: `ts`/`dur` in µs relative to
`baseTimeNanoseconds` (float µs of an epoch time would lose the nanoseconds), GPU lanes as
pid = device and tid = stream, launch -> activity links as `ac2g` flow pairs keyed by correlation.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..analysis.tables.rows import with_name_keys
from ..trace.kinds import ACTIVITY_KINDS, LAUNCH_KINDS, LaneKind
from ..trace.model import TraceModel, shown, unique
from .lane_index import LaneIndex, owned_activities, window_positions
from .lanes import KIND_NAMES

MARKER_PID_BASE = 1 << 30  # marker rows ("Spans") have string pids; give them ints clear of real pids
MAX_OWNED = 100


def window_rows(model: TraceModel, index: LaneIndex, t0_ns: int, t1_ns: int) -> np.ndarray:
    """Model rows of the events overlapping [t0, t1), in (lane, ts) order."""
    raw = index.levels[0]
    rows = np.sort(raw.first_row[window_positions(index, raw, t0_ns, t1_ns)])
    return rows[model.ts_ns[rows] + model.dur_ns[rows] > t0_ns]


def export_records(model: TraceModel, rows: np.ndarray) -> int:
    """How many events `chrome_trace` writes for `rows` before its flows: the rows, and a name per lane and per process
    they lie on (a trace of 200,000 one-event processes is 600,000 records, not 200,000)."""
    lanes = unique(model.lane[rows])
    pid, _ = _lane_ids(model)
    return int(rows.size) + int(lanes.size) + int(unique(pid[lanes]).size)


def _lane_ids(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    marker = model.lane_kind == LaneKind.MARKER
    pid = np.where(marker, MARKER_PID_BASE + np.arange(model.lane_kind.size), model.lane_pid)
    return pid, model.lane_tid


def chrome_trace(model: TraceModel, rows: np.ndarray, source: str) -> dict[str, Any]:
    """The Chrome-trace document of these rows (complete events, lane names and launch flows)."""
    base = model.start_ns
    pid, tid = _lane_ids(model)
    lane = model.lane[rows]
    ts = np.round((model.ts_ns[rows] - base) / 1e3, 3).tolist()
    dur = np.round(model.dur_ns[rows] / 1e3, 3).tolist()
    events = [{"ph": "X", "name": model.shown_names[n], "cat": shown(model.cats[c]), "pid": p, "tid": t, "ts": s, "dur": d,
               "args": _args(corr, ext)}
              for n, c, p, t, s, d, corr, ext in zip(
                  model.name_id[rows].tolist(), model.cat_id[rows].tolist(), pid[lane].tolist(), tid[lane].tolist(),
                  ts, dur, model.correlation[rows].tolist(), model.external_id[rows].tolist())]
    return {"schemaVersion": 1, "baseTimeNanoseconds": base, "displayTimeUnit": "ms",
            "traceEvents": _lane_metadata(model, unique(lane), pid, tid) + events + _flow_events(model, rows, pid, tid),
            "otherData": {"exported_by": "kinetoscope", "source": source, "events": int(rows.size)}}


def _args(correlation: int, external_id: int) -> dict[str, int]:
    args = {}
    if correlation >= 0:
        args["correlation"] = correlation
    if external_id >= 0:
        args["External id"] = external_id
    return args


def _lane_metadata(model: TraceModel, lanes: np.ndarray, pid: np.ndarray, tid: np.ndarray) -> list[dict[str, Any]]:
    out, named = [], set()
    gpu, marker = int(LaneKind.GPU), int(LaneKind.MARKER)  # plain ints: a numpy scalar against an enum member is slow
    for k, p, t, kind in zip(lanes.tolist(), pid[lanes].tolist(), tid[lanes].tolist(), model.lane_kind[lanes].tolist()):
        label = shown(model.lane_label[k])
        if p not in named:
            named.add(p)
            process = f"GPU {p}" if kind == gpu else (label if kind == marker else f"process {p}")
            out.append({"ph": "M", "name": "process_name", "pid": p, "tid": 0, "args": {"name": process}})
        out.append({"ph": "M", "name": "thread_name", "pid": p, "tid": t, "args": {"name": label}})
    return out


def _flow_events(model: TraceModel, rows: np.ndarray, pid: np.ndarray, tid: np.ndarray) -> list[dict[str, Any]]:
    """`s` at the launch call, `f` (binding to the enclosing slice) at the activity, both exported."""
    gpu = rows[np.isin(model.kind[rows], np.array(ACTIVITY_KINDS, np.int8)) & (model.launch_idx[rows] >= 0)]
    gpu = gpu[np.isin(model.launch_idx[gpu], rows)]
    launch = model.launch_idx[gpu]
    base = model.start_ns
    out = []
    for flow_id, (g, lr) in enumerate(zip(gpu.tolist(), launch.tolist())):
        for ph, row in (("s", lr), ("f", g)):
            k = int(model.lane[row])
            event = {"ph": ph, "id": flow_id, "name": "ac2g", "cat": "ac2g", "pid": int(pid[k]), "tid": int(tid[k]),
                     "ts": round((int(model.ts_ns[row]) - base) / 1e3, 3)}
            if ph == "f":
                event["bp"] = "e"
            out.append(event)
    return out


def event_view(model: TraceModel, index: LaneIndex, launch: Any, row: int, graphs: Any = None) -> dict[str, Any]:
    """Details of one event: where it is, its ids, and its launch relations with their offsets; for a kernel a
    graph replayed, the ops of the reference that captured it (`graphs`: the tables' GraphAttribution)."""
    base = model.start_ns
    lane = int(model.lane[row])
    out: dict[str, Any] = {
        "row": row, "name": model.shown_names[model.name_id[row]], "cat": shown(model.cats[model.cat_id[row]]),
        "kind": KIND_NAMES[model.kind[row]], "lane": lane, "lane_label": shown(model.lane_label[lane]),
        "depth": int(model.depth[row]), "start_us": round((int(model.ts_ns[row]) - base) / 1e3, 3),
        "dur_us": int(model.dur_ns[row]) / 1e3, "correlation": _opt(model.correlation[row]),
        "external_id": _opt(model.external_id[row]), "launch": None, "activities": None}
    with_name_keys([out], [model.names[model.name_id[row]]])  # a cut name's key, for the `name` route
    if model.kind[row] in ACTIVITY_KINDS and model.launch_idx[row] >= 0:
        out["launch"] = _launch_of(model, launch, row)
        captured = captured_by(model, graphs, row) if graphs is not None else None
        if captured is not None:
            out["captured_by"] = captured
    if model.kind[row] in LAUNCH_KINDS:
        _, owned = owned_activities(index, np.array([row], np.int64))
        out["activities"] = [_brief(model, r) for r in owned[:MAX_OWNED].tolist()]
        out["activities_total"] = int(owned.size)
    return out


MAX_CHAIN = 8  # ops named around a replayed kernel, innermost last


def captured_by(model: TraceModel, graphs: Any, row: int) -> Optional[dict[str, Any]]:
    """The replayed call that issued a graph-replayed activity (`analysis/graphs`): its op and the ops around it
    (outermost first, the innermost MAX_CHAIN), its recorded inputs, and the reference it was matched in; None
    for an activity no replay attribution covers."""
    acts = graphs.act_rows
    at = int(np.searchsorted(acts, row))
    if at >= acts.size or acts[at] != row or graphs.act_call[at] < 0:
        return None
    chain, call = [], int(graphs.act_call[at])
    while call >= 0:
        chain.append(model.shown_names[int(graphs.call_name[call])])
        call = int(graphs.call_parent[call])
    first = int(graphs.act_call[at])
    inputs = int(graphs.call_inputs[first])
    return {"op": chain[0], "ops": chain[::-1][-MAX_CHAIN:], "reference": shown(graphs.reference),
            "inputs": shown(model.inputs_strings[inputs]) if inputs >= 0 else None}


def _opt(value: Any) -> Any:
    return int(value) if value >= 0 else None


def _brief(model: TraceModel, row: int) -> dict[str, Any]:
    return {"row": row, "name": model.shown_names[model.name_id[row]], "lane": int(model.lane[row]),
            "start_us": round((int(model.ts_ns[row]) - model.start_ns) / 1e3, 3), "dur_us": int(model.dur_ns[row]) / 1e3}


def _launch_of(model: TraceModel, launch: Any, row: int) -> dict[str, Any]:
    out = _brief(model, int(model.launch_idx[row]))
    hit = np.flatnonzero(launch.gpu_row == row) if launch is not None else np.zeros(0, np.int64)
    if hit.size:
        i = int(hit[0])
        op = int(launch.op_row[i])
        out.update({"offset_us": int(launch.offset_ns[i]) / 1e3, "queued_us": int(launch.queued_ns[i]) / 1e3,
                    "latency_us": int(launch.latency_ns[i]) / 1e3, "short": bool(launch.short[i]),
                    "op": _brief(model, op) if op >= 0 else None})
    return out
