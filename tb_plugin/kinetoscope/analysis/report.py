"""The facade: every analysis of one trace, and its JSON report entry.

`analyze` runs each analysis once; `report_entry` turns the result into the JSON document that the CLI
prints and the `summary` route serves (times in µs relative to the trace start).
"""
from __future__ import annotations

from typing import Callable, Optional

import msgspec
import numpy as np

from ..trace import intervals
from ..trace.kinds import GRAPH_LAUNCH_CALLS
from ..trace.model import TraceModel
from .core import thresholds as T
from .core.cpu_ops import hot_spots
from .core.selectors import OpIndex, activity_rows_by_device, iteration_rows, launch_call_rows
from .device.counters import counters_summary
from .device.tbprof_overview import Overview, overview, overview_entries
from .distributed.comm import Communication, communication
from .distributed.jobs import JobGroup
from .graphs.attribution import REFERENCE_ERROR_KEY, GraphAttribution
from .idle.breakdown import Breakdown, breakdown
from .idle.culprits import host_culprit, lead_culprit, sync_culprit, top_culprits
from .idle.dataloader_stalls import Steps, judged_ends, step_breakdown
from .idle.gpu_idle import CAUSE_NAMES, Cause, DeviceIdle, GpuIdle, gpu_idle
from .idle.launch_offsets import LaunchOffsets, launch_offsets, percentiles_us
from .judgement.explain import CpuFacts, Facts, cpu_verdict, explain, with_next_step
from .judgement.health import health_entries, trace_health
from .judgement.insights import Insight, insight_entries, insights, with_roofline
from .judgement.sufficiency import sufficiency
from .judgement.verdict import GROUPS, Verdict, device_verdict, few_activities, harmonized_by_worker, not_enough, run_verdict, winner_rule
from .memory.timeline import MemorySeries, memory_timeline
from .roofline.figures import Roofline, trace_roofline, whole_rows
from .roofline.precision import amp_figures
from .roofline.summary import efficiency_entry, fix_facts, verdict_fix
from .tables.index import TableIndex
from .tables.top_rows import tables_entry
from .whatif.savings import saving_entries, savings, savings_ahead, shortfall


class Analysis(msgspec.Struct, frozen=True):
    """All analyses of one trace."""

    idle: GpuIdle
    launch: LaunchOffsets
    memory: tuple[MemorySeries, ...]
    steps: Steps
    comm: Communication
    breakdown: Optional[Breakdown]  # of the busiest device; None without device activity
    verdict: Verdict
    insights: tuple = ()  # insights.Insight: suggestions beside the verdict (they never change it)
    roofline: Optional[Roofline] = None  # the op calls' work against the device's roofs (analysis/roofline)


def analyze(model: TraceModel) -> Analysis:
    """Run every analysis on a model (pure; the model is not modified). Its `roofline` needs the tables' index:
    `tables_part` makes it, `report_entry` joins it in."""
    ops, acts = OpIndex(model), activity_rows_by_device(model)
    iterations = iteration_rows(model)
    idle = gpu_idle(model, ops=ops, acts=acts, judged_from_ns=int(model.ts_ns[iterations[0]]) if iterations.size else None)
    busiest = idle.busiest()
    comm = communication(model, acts)
    steps = step_breakdown(model, busiest, acts=acts, comm=comm.of(busiest.device) if busiest else None)
    launch = launch_offsets(model)
    memory = memory_timeline(model, steps.start_ns, steps.end_ns, ops=ops)
    calls = launch_call_rows(model)
    calls = intervals.union(model.ts_ns[calls], model.end_ns[calls])
    parts = (breakdown(busiest, comm.of(busiest.device), steps.start_ns,
                       judged_ends(model, acts[busiest.device], steps.start_ns, steps.end_ns), calls) if busiest else None)
    verdict = _verdict(model, ops, idle, steps, launch, comm, parts, acts)
    analysis = Analysis(idle=idle, launch=launch, memory=memory, steps=steps, comm=comm, breakdown=parts, verdict=verdict)
    return msgspec.structs.replace(analysis, insights=insights(model, analysis, ops))


def _verdict(model, ops, idle, steps, launch, comm, parts, acts) -> Verdict:
    busiest = idle.busiest()
    judged_ms = parts.judged_ns / 1e6 if parts else None
    activities = int(acts[busiest.device].size) if busiest else 0
    busy = intervals.union(np.concatenate([d.busy_starts_ns for d in idle.devices] or [intervals.EMPTY]),
                           np.concatenate([d.busy_ends_ns for d in idle.devices] or [intervals.EMPTY]))
    lacking = sufficiency(model, steps=steps.count, judged_ms=judged_ms, device_activities=activities, cpu_ops=ops.op_count,
                          busy=busy)
    if busiest is None:
        judged = cpu_verdict(_cpu_facts(model, ops, steps, comm))
    else:
        facts = _facts(model, busiest, steps, launch, comm, parts)
        judged = device_verdict(parts, launch_regime(launch), lambda bound, shares, runner: _explained(facts, bound, shares, runner))
    if busiest is not None and activities < T.MIN_DEVICE_ACTIVITIES and judged.bound in GROUPS:
        judged = few_activities(judged, activities)
    if "empty" in lacking.codes or "no-device-activity" in lacking.codes:  # nothing to lean to (not a CPU-only run)
        return not_enough(lacking.reasons, lacking.codes, None)
    return not_enough(lacking.reasons, lacking.codes, judged, device_lean(parts)) if lacking else judged


def device_lean(parts: Optional[Breakdown]) -> Optional[tuple[str, float]]:
    """Compute against exposed communication, from the device's records alone (None without device work)."""
    if parts is None:
        return None
    cats, judged = parts.total_ns(), max(parts.judged_ns, 1)
    if cats["exposed_comm"] > cats["compute"]:
        return "communication-bound", cats["exposed_comm"] / judged
    return "compute-bound", cats["compute"] / judged


def _explained(facts: Facts, bound: str, shares: dict, runner: Optional[str]) -> tuple[str, str]:
    evidence, suggestion = explain(facts, bound, shares)
    return evidence, with_next_step(suggestion, runner, shares.get(runner) if runner else None, facts)


def busiest_activities(model: TraceModel, device: DeviceIdle) -> int:
    """Kernels, memcpys and memsets on one device."""
    return int(activity_rows_by_device(model)[device.device].size)


def queued_p50_us(launch: LaunchOffsets) -> Optional[float]:
    """The median time launches waited behind earlier work on their stream (None without launches)."""
    return float(np.percentile(launch.queued_ns, 50)) / 1e3 if launch.pairs else None


def launch_regime(launch: LaunchOffsets) -> bool:
    """Launches are the cost: the device queue is empty at launch and most kernels are shorter than their call."""
    if launch.pairs == 0:
        return False
    return queued_p50_us(launch) <= T.QUEUE_EMPTY_US and np.count_nonzero(launch.short) >= T.SHORT_KERNEL_SHARE * launch.pairs


def _facts(model, busiest, steps, launch, comm, parts) -> Facts:
    dev_comm = comm.of(busiest.device)
    graph_ids = model.name_ids_where(lambda n: n in GRAPH_LAUNCH_CALLS)
    return Facts(device=busiest.device, judged_ms=parts.judged_ns / 1e6, steps=steps.count,
                 stalled=int(np.count_nonzero(steps.stalled)), host_culprit=host_culprit(model, busiest),
                 sync_culprit=sync_culprit(model, busiest), short_kernels=int(np.count_nonzero(launch.short)),
                 launches=launch.pairs, queued_p50_us=queued_p50_us(launch),
                 uses_graphs=bool(model.name_in(graph_ids).any()), comm_ms=dev_comm.comm_ns / 1e6,
                 exposed_comm_ms=dev_comm.exposed_ns / 1e6, overlap_pct=dev_comm.overlap_pct,
                 categories={k: v / max(parts.judged_ns, 1) for k, v in parts.total_ns().items()})


def _cpu_facts(model: TraceModel, ops: OpIndex, steps: Steps, comm: Communication) -> CpuFacts:
    if steps.count:
        step_ns = float(np.sum(steps.end_ns - steps.start_ns))
        coll = float(intervals.covered(comm.cpu_starts_ns, comm.cpu_ends_ns, steps.start_ns, steps.end_ns).sum())
        exposed = float(intervals.covered(comm.cpu_exposed_starts_ns, comm.cpu_exposed_ends_ns,
                                          steps.start_ns, steps.end_ns).sum())
    else:
        step_ns = float(model.stop_ns - model.start_ns)
        coll, exposed = float(comm.cpu_collective_ns), float(comm.cpu_exposed_ns)
    step_ns = max(step_ns, 1.0)
    waits = steps.dataloader_ns >= T.CPU_WAIT_DOMINANT * (steps.end_ns - steps.start_ns)
    return CpuFacts(steps=steps.count, step_ms=step_ns / 1e6, dataloader_share=float(np.sum(steps.dataloader_ns)) / step_ns,
                    collective_share=exposed / step_ns, collective_total_share=coll / step_ns,
                    stalled_steps=int(np.count_nonzero(waits & (steps.dataloader_ns > 0))),
                    hot_spots=tuple(hot_spots(model, ops, T.HOT_SPOTS)))


def _us(ns, origin: int = 0) -> float:
    return (float(ns) - origin) / 1e3


class TablesPart(msgspec.Struct, frozen=True):
    """The parts of a report that read only the model and its TableIndex, not `analyze`'s result: computed
    beside `analyze` (`pipeline.analyze_and_report`), joined by `report_entry`. (Health and counters read only
    the model too; they are in `ReportAhead`, after `analyze`, which balances the two halves better on the x30
    ResNet trace.)"""

    tables: TableIndex
    tbprof: Overview
    amp: Optional[Insight]  # the mixed-precision suggestion, when it applies
    tables_entry: dict
    roofline: Optional[Roofline] = None  # the op calls against the device's roofs (made from the index)


def tables_part(model: TraceModel, tables: Optional[TableIndex] = None, peaks: tuple = ()) -> TablesPart:
    """`TablesPart` of a model; `tables`: its TableIndex when the caller has one (else it is built); `peaks`: device
    peak entries a user file adds (`roofline.peaks.parse_peaks`), chosen before the built-in ones. The roofline's
    whole-trace rows are made here too (the report reads them), beside `analyze`."""
    tables = tables if tables is not None else TableIndex.build(model)
    tbprof = overview(model, tables)
    roof = trace_roofline(model, tables, peaks)
    whole_rows(model, roof, kernels=False)
    return TablesPart(tables=tables, tbprof=tbprof, amp=tbprof.amp_insight(), tables_entry=tables_entry(model, tables),
                      roofline=roof)


class ReportAhead(msgspec.Struct, frozen=True):
    """The parts of a report that need no tables: computed after `analyze` while the other thread still builds
    them (`pipeline.analyze_and_report`), joined by `report_entry`. The savings' replays are here
    (`savings_ahead`): on a 6M-event trace the tables take 1.7 s longer than `analyze`, and the replays (1.8 s)
    fill that wait instead of running alone after the join; their context (a dozen arrays per GPU activity) is
    freed before the join."""

    health: list
    counters: dict
    savings: tuple


def model_parts(model: TraceModel) -> tuple[Callable[[], list], Callable[[], dict]]:
    """The parts of `ReportAhead` that read only the model (health, counters), as calls another thread may make."""
    return (lambda: health_entries(trace_health(model))), (lambda: counters_summary(model))


def report_ahead(model: TraceModel, analysis: Analysis,
                 parts: Optional[tuple[Callable[[], list], Callable[[], dict]]] = None) -> ReportAhead:
    """`ReportAhead` of a model and its analysis; `parts`: its `model_parts` (made elsewhere, maybe in another thread),
    called after the savings' replays."""
    health, counters = parts if parts is not None else model_parts(model)
    savings = savings_ahead(model, analysis)
    return ReportAhead(health(), counters(), savings)


def report_entry(model: TraceModel, analysis: Analysis, tables: Optional[TableIndex] = None,
                 part: Optional[TablesPart] = None, ahead: Optional[ReportAhead] = None) -> dict:
    """The JSON report of one trace (times in µs; field list in HTTP_API.md, `summary`); `tables`: the
    model's TableIndex when the caller has one (else it is built); `part`: its `tables_part`, likewise;
    `ahead`: its `report_ahead`, likewise."""
    t0 = model.start_ns
    launch = analysis.launch
    part = part if part is not None else tables_part(model, tables)
    if analysis.roofline is None:
        analysis = msgspec.structs.replace(analysis, roofline=part.roofline)
    ahead = ahead if ahead is not None else report_ahead(model, analysis)
    tbprof = part.tbprof
    amp = with_roofline(part.amp, amp_figures(analysis.roofline))
    saved = savings(model, analysis, amp=amp, ahead=ahead.savings)
    found = saving_entries(saved)
    return {
        "events": model.n_events, "duration_us": _us(model.stop_ns - t0), "trace_start_ns": str(t0),
        "counts": model.count_by_kind(), "skipped": dict(model.skipped), "warnings": list(model.warnings),
        "devices": [_device_entry(model, d, analysis.comm) for d in shown_devices(analysis.idle.devices)],
        "devices_total": len(analysis.idle.devices),
        "cpu_collectives_us": _us(analysis.comm.cpu_collective_ns),
        "cpu_collectives_exposed_us": _us(analysis.comm.cpu_exposed_ns),
        "steps": steps_entry(model, analysis.steps), "steps_total": analysis.steps.count,
        "steps_stalled": int(np.count_nonzero(analysis.steps.stalled)),
        "launch": {"pairs": launch.pairs, "short_kernels": int(np.count_nonzero(launch.short)),
                   "offset_us": percentiles_us(launch.offset_ns), "queued_us": percentiles_us(launch.queued_ns),
                   "latency_us": percentiles_us(launch.latency_ns),
                   "per_activity": {"pairs": int(launch.activity_offset_ns.size),
                                    "offset_us": percentiles_us(launch.activity_offset_ns)}},
        "memory": [memory_entry(s, t0) for s in analysis.memory],
        "breakdown": breakdown_entry(analysis.breakdown),
        "verdict": verdict_entry(_with_roof_fix(model, analysis, found)),
        "health": ahead.health,
        "insights": insight_entries(analysis.insights + ((amp,) if amp else ())),
        "savings": found,
        "savings_shortfall": shortfall(model, analysis, saved),
        "efficiency": efficiency_entry(model, analysis.roofline, analysis.steps.start_ns, analysis.steps.end_ns),
        "tables": part.tables_entry,
        "graph_attribution": graph_entry(model, part.tables.graphs),
        **overview_entries(model, tbprof, analysis.idle),
        "counters": ahead.counters,
    }


def graph_entry(model: TraceModel, graphs: Optional[GraphAttribution]) -> Optional[dict]:
    """The `graph_attribution` entry: how much graph-replayed kernel time was given to the ops that captured it, and
    from which reference (None: the trace replays no graph); why a named reference was not used, when it was not."""
    if graphs is None:
        return None
    error = model.meta.get(REFERENCE_ERROR_KEY)
    return {**graphs.entry(), **({"reference_error": str(error)[:500]} if error else {})}


def _with_roof_fix(model: TraceModel, analysis: Analysis, found: list[dict]) -> Verdict:
    """The verdict, its suggestion the replayed roofline fix's words where it is compute-bound and one saves time."""
    verdict = analysis.verdict
    if verdict.bound != "compute-bound":
        return verdict
    words = verdict_fix(fix_facts(model, analysis.roofline), found)
    return msgspec.structs.replace(verdict, suggestion=words) if words else verdict


def verdict_entry(v: Verdict) -> dict:
    """The verdict as JSON: bound, confidence, runner-up with its share, shares per bound, reasons."""
    return {"bound": v.bound, "confidence": v.confidence, "evidence": v.evidence, "suggestion": v.suggestion,
            "share": v.share, "runner_up": v.runner_up, "runner_up_share": v.runner_up_share,
            "shares": dict(v.shares), "judged_us": _us(v.judged_ns), "step_agreement": v.step_agreement,
            "reasons": list(v.reasons), "rule": winner_rule(v)}


def verdict_from_entry(entry: dict) -> Verdict:
    """The Verdict a `verdict_entry` dict was made from (µs back to ns)."""
    return Verdict(bound=entry["bound"], evidence=entry["evidence"], suggestion=entry["suggestion"],
                   confidence=entry["confidence"], runner_up=entry["runner_up"], runner_up_share=entry["runner_up_share"],
                   share=entry["share"], shares=dict(entry["shares"]), judged_ns=int(round(entry["judged_us"] * 1e3)),
                   step_agreement=entry["step_agreement"], reasons=tuple(entry["reasons"]))


def with_run_verdicts(entries: list[dict], groups: Optional[dict[str, list[JobGroup]]] = None) -> tuple[list[dict], list[dict]]:
    """Verdicts pooled over the spans of one job or one worker of each run, and the entries made consistent.

    Spans are pooled only where they are one program: the spans of one worker (one process at other
    times), or the ranks of one job (`jobs.job_groups`). A folder of independent profiles gets no pooled
    verdict across them: each keeps its own.

    Args:
        entries: report entries with `run`, `worker` and `verdict`.
        groups: per run, its `jobs.job_groups`; a run not in it pools per worker (entries without a
            `worker` pool over the run).

    Returns:
        (runs, entries): one `{"run", "workers", "basis", "spans", "verdict"}` per job or worker with a
        judged span, in first-seen order, and the entries with each span's verdict harmonized with the
        other spans of its worker (see `verdict.harmonized_by_worker`).
    """
    by_group: dict[tuple[str, str], list[int]] = {}
    for i, entry in enumerate(entries):
        if entry.get("verdict"):
            by_group.setdefault(_pool_key(entry, groups), []).append(i)
    runs, out = [], list(entries)
    for (run, key), members in by_group.items():
        spans = [verdict_from_entry(entries[i]["verdict"]) for i in members]
        combined = run_verdict(spans)
        workers = [str(entries[i].get("worker")) for i in members]
        for i, span in zip(members, harmonized_by_worker(spans, workers)):
            out[i] = {**entries[i], "verdict": verdict_entry(span)}
        basis = key.split(":", 1)[0] if key else "run"
        runs.append({"run": run, "workers": list(dict.fromkeys(workers)), "basis": basis, "spans": len(members),
                     "verdict": verdict_entry(combined)})
    return runs, out


def _pool_key(entry: dict, groups: Optional[dict[str, list[JobGroup]]]) -> tuple[str, str]:
    """(run, what the entry's verdict pools with): `job:<k>` for the k-th job of the run, else its worker."""
    run, worker = entry.get("run", ""), entry.get("worker")
    for k, group in enumerate((groups or {}).get(run, ())):
        if group.is_job and worker in group.workers and len(group.workers) > 1:
            return run, f"{group.basis}:{k}"
    return run, "" if worker is None else f"worker:{worker}"


def memory_entry(s: MemorySeries, t0: int) -> dict:
    return {"device": s.device, "peak_allocated_bytes": s.peak_allocated_bytes,
            "peak_reserved_bytes": s.peak_reserved_bytes, "peak_at_us": _us(s.peak_at_ns, t0), "peak_op": s.peak_op,
            "leak_suspect": s.leak_suspect, "relative": s.relative}


def breakdown_entry(parts: Optional[Breakdown]) -> Optional[dict]:
    """Judged time per category (µs), over every step, on the busiest device."""
    if parts is None:
        return None
    return {"device": parts.device, "from_steps": parts.from_steps, "judged_us": _us(parts.judged_ns),
            "units": parts.units, "by_category_us": {k: _us(v) for k, v in parts.total_ns().items()}}


MAX_DEVICES = 64  # devices a report lists (a hostile trace may name 100k): the busiest, in device order


def shown_devices(devices) -> list:
    """The devices a report lists: all of them, or the MAX_DEVICES busiest, in device order."""
    if len(devices) <= MAX_DEVICES:
        return list(devices)
    busiest = sorted(devices, key=lambda d: -d.busy_ns)[:MAX_DEVICES]
    return sorted(busiest, key=lambda d: d.device)


def _device_entry(model: TraceModel, d: DeviceIdle, comm: Communication) -> dict:
    length = d.gap_end_ns - d.gap_start_ns
    c = comm.of(d.device)
    listed = d.listed  # the culprits of its lead too
    return {"device": d.device, "window_us": _us(d.window_ns), "busy_us": _us(d.busy_ns), "idle_us": _us(d.idle_ns),
            "idle_pct": d.idle_pct,
            "comm": {"kernels": c.kernels, "comm_us": _us(c.comm_ns), "compute_us": _us(c.compute_ns),
                     "exposed_comm_us": _us(c.exposed_ns), "overlap_pct": c.overlap_pct},
            "gaps": {"count": int(length.size), "count_ge_1us": int(np.count_nonzero(length >= 1000)),
                     "by_cause_us": {k: _us(v) for k, v in d.idle_by_cause_ns().items()},
                     "top_culprits": top_culprits(model, listed),
                     "top_sync_culprits": top_culprits(model, listed, Cause.SYNC),
                     "top_comm_culprits": top_culprits(model, listed, Cause.COMM)},
            "lead": _lead_entry(model, d)}


def _lead_entry(model: TraceModel, d: DeviceIdle) -> Optional[dict]:
    """The device's lead (idle the verdict judges before its first activity) as a listed gap: where it starts (µs
    from the trace's start), how long, its cause and culprit; None without one."""
    if not d.has_lead:
        return None
    culprit = lead_culprit(model, d, Cause(d.lead_cause)) if d.lead_culprit_row >= 0 or d.lead_annotation_row >= 0 else None
    return {"start_us": _us(d.lead_start_ns - model.start_ns), "idle_us": _us(d.window_start_ns - d.lead_start_ns),
            "cause": CAUSE_NAMES[d.lead_cause], "culprit": culprit["label"] if culprit else None}


MAX_STEP_ROWS = 1000  # the report lists this many steps at most (a trace may hold a million); `stalls` pages them all


def steps_entry(model: TraceModel, steps: Steps, offset: int = 0, limit: int = MAX_STEP_ROWS) -> list[dict]:
    """Per-step rows of the report, steps [offset, offset + limit) (built from whole columns, no per-step math)."""
    t0, sel = model.start_ns, slice(offset, offset + limit)
    dur = steps.end_ns[sel] - steps.start_ns[sel]
    share = np.divide(steps.dataloader_ns[sel], dur, out=np.zeros(dur.size), where=dur > 0)
    us = {key: ((getattr(steps, src)[sel] - origin) / 1e3).tolist() for key, src, origin in (
        ("start_us", "start_ns", t0), ("gpu_busy_us", "gpu_busy_ns", 0), ("gpu_idle_us", "gpu_idle_ns", 0),
        ("dataloader_us", "dataloader_ns", 0), ("gpu_idle_during_dataloader_us", "dataloader_gpu_idle_ns", 0),
        ("compute_us", "compute_ns", 0), ("comm_us", "comm_ns", 0), ("exposed_comm_us", "exposed_comm_ns", 0),
        ("memcpy_us", "memcpy_ns", 0), ("memset_us", "memset_ns", 0))}
    names = [model.shown_names[n] for n in steps.name_id[sel].tolist()]
    dur_us, shares, stalled = (dur / 1e3).tolist(), share.tolist(), steps.stalled[sel].tolist()
    return [{"name": names[k], "start_us": us["start_us"][k], "dur_us": dur_us[k], "gpu_busy_us": us["gpu_busy_us"][k],
             "gpu_idle_us": us["gpu_idle_us"][k], "dataloader_us": us["dataloader_us"][k], "dataloader_share": shares[k],
             "gpu_idle_during_dataloader_us": us["gpu_idle_during_dataloader_us"][k], "compute_us": us["compute_us"][k],
             "comm_us": us["comm_us"][k], "exposed_comm_us": us["exposed_comm_us"][k], "memcpy_us": us["memcpy_us"][k],
             "memset_us": us["memset_us"][k], "stalled": bool(stalled[k])} for k in range(len(names))]


__all__ = ["Analysis", "analyze", "report_entry", "steps_entry", "top_culprits", "with_run_verdicts", "CAUSE_NAMES"]
