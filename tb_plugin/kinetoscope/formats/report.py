"""Renderers of report entries (the JSON dicts of `analysis.report`) as readable text and markdown.

The markdown is the one renderer of a span's summary: `kinetoscope report --format markdown` and the
tab's "Export summary" (the `markdown` route) both come from `render_entry`. Every trace string in it
is escaped (`md`), so a kernel named `<img ...>` or `a|b` stays text inside a PR comment.
"""
from __future__ import annotations

import os
import re
import statistics
from typing import Callable, Optional

from ..analysis.idle.gpu_idle import CAUSE_ORDER
from ..analysis.judgement.health import FIGURES
from ..analysis.judgement.verdict import NOT_ENOUGH_DATA
from .tbprof import gpu_summary_lines, measured_lines, tbprof_step_lines
from .units import human_bytes, human_us, md, percent, short, table_lines
from .whatif import extra_work_lines, share_window

TRACE_SUFFIX = re.compile(r"(\.pt)?\.trace\.json(\.gz)?$|\.json(\.gz)?$")


def span_label(entry: dict) -> str:
    """How a span is named: `span N` for `worker.N.pt.trace.json`, else its file name without the
    trace suffix (`rank-1.Jan_24_...`), as the tab's span selector names it."""
    if entry.get("span") not in (None, "", "None"):
        return f"span {entry['span']}"
    name = os.path.basename(str(entry.get("path", "")).rstrip("/"))
    return TRACE_SUFFIX.sub("", name) or name or "span"


def title_of(entry: dict) -> str:
    return f"{entry.get('run', '')} / {entry.get('worker', '')} / {span_label(entry)}"


def render_entry(entry: dict, markdown: bool = False) -> str:
    """One trace as text (markdown=False) or markdown (headed sections, escaped trace strings)."""
    title = title_of(entry)
    if markdown:
        lines = [f"## {md(title)}", "", f"File: `{str(entry.get('path', '')).replace('`', chr(39))}`"]
    else:
        lines = [f"== {title} ==", f"file: {entry.get('path', '')}"]
    if entry.get("error"):
        message = entry["error"]["message"]
        return "\n".join(lines + ["", f"**Error:** {md(message)}" if markdown else f"ERROR: {message}", ""])
    if entry["events"] == 0:
        lines.append("Empty trace: it holds no timed events")
    else:
        skipped = f"; skipped: {entry['skipped']}" if entry.get("skipped") else ""
        lines.append(f"{entry['events']:,} events over {human_us(entry['duration_us'])}{md(skipped) if markdown else skipped}")
    if "verdict" not in entry:
        return "\n".join(lines + [""])
    lines += [""] + verdict_lines(entry["verdict"], markdown) + insight_lines(entry.get("insights") or [])
    lines += saving_lines(entry.get("savings") or [], markdown)
    if entry.get("savings_shortfall"):
        lines.append(f"  Why no fix recovers more: {(md if markdown else str)(entry['savings_shortfall'])}")
    lines += unreliable_lines(entry, "verdict", markdown)
    for section in (_health, _devices, gpu_summary_lines, measured_lines, _efficiency, _steps, tbprof_step_lines, _launch,
                    _memory, _tables, _warnings):
        lines += section(entry, markdown)
    return "\n".join(lines + [""])


def _heading(title: str, markdown: bool) -> list[str]:
    """A section's heading: `### title` and a blank line in markdown, `title:` in text."""
    return ["", f"### {title}", ""] if markdown else ["", f"{title}:"]


def verdict_lines(verdict: dict, markdown: bool, label: str = "Verdict") -> list[str]:
    """The verdict, its confidence and runner-up, evidence and suggestion (and why, for not enough data).

    In markdown each is a paragraph of its own, the way the tab's export reads."""
    share = f", {percent(verdict['share'])} of the judged time" if verdict.get("share") is not None else ""
    reasons = verdict.get("reasons") or []
    # not enough data says why instead of how sure (a confidence in too little data reads as one in the figures)
    head = (f"{label}: {verdict['bound']} ({reasons[0] if reasons else 'too little to judge'})" if verdict["bound"] == NOT_ENOUGH_DATA
            else f"{label}: {verdict['bound']} ({verdict['confidence']} confidence{share})")
    runner = None
    if verdict.get("runner_up"):
        runner_share = verdict.get("runner_up_share")
        runner = f"Runner-up: {verdict['runner_up']}" + (f" ({percent(runner_share)})" if runner_share is not None else "")
        if verdict.get("rule"):  # the runner-up has the larger share: say why the bound still wins
            runner += f"; {verdict['bound']} wins by the rule: {verdict['rule']}"
    if not markdown:
        return [head] + ([f"  {runner}"] if runner else []) + [f"  {verdict['evidence']}", f"  Suggestion: {verdict['suggestion']}"]
    lines = [f"**{md(head)}**", ""]
    if runner:
        lines += [md(runner), ""]
    lines += [f"Evidence: {md(verdict['evidence'])}", ""]
    if len(reasons) > 1:
        lines += ["Why there is not enough data:", ""] + [f"- {md(r)}" for r in reasons] + [""]
    return lines + [f"Suggestion: {md(verdict['suggestion'])}"]


def render_run(run: dict, markdown: bool = False) -> str:
    """The verdict pooled over the spans of one worker or one job (`with_run_verdicts`), above those spans."""
    workers, basis = run.get("workers") or [], run.get("basis", "run")
    if basis == "worker" and workers:
        title = f"run {run['run']}, worker {workers[0]} ({run['spans']} spans)"
    elif basis not in ("run", "worker"):
        title = f"run {run['run']}: job of {len(workers)} ranks ({run['spans']} spans; ranks by {basis})"
    else:
        title = f"run {run['run']} ({run['spans']} spans)"
    head = [f"# {md(title)}", ""] if markdown else [f"#### {title} ####"]
    return "\n".join(head + verdict_lines(run["verdict"], markdown, label="Run verdict") + [""])


def render_independent(run: str, groups: list[dict], markdown: bool = False) -> str:
    """Why a run's traces get no ranks view and no pooled verdict: they are independent profiles."""
    alone = [w for g in groups if g["basis"] == "independent" for w in g["workers"]]
    title = f"run {run}: {len(alone)} independent profiles, not ranks of one job"
    text = ("no distributedInfo with world_size > 1, no rank naming and no matching collectives tie them together: "
            "each trace has its own verdict; no ranks view and no verdict pooled across them")
    lone = [f"{g['workers'][0]} is one rank of a job of {g['world_size']} ({g['basis']}); the other ranks' traces are not here"
            for g in groups if g["basis"] != "independent" and len(g["workers"]) == 1 and g.get("world_size")]
    head = [f"# {md(title)}", ""] if markdown else [f"#### {title} ####"]
    return "\n".join(head + [md(line) if markdown else line for line in [text, *lone]] + [""])


def judged_idle_pct(entry: dict) -> Optional[float]:
    """The GPU's idle share of the time the verdict judged (the breakdown's device, its steps clipped to its window:
    every idle cause over the judged time), as the verdict's evidence counts it; else the first device's idle share
    of its window (no breakdown); None without a device."""
    breakdown = entry.get("breakdown") or {}
    judged = breakdown.get("judged_us") or 0.0
    if judged > 0:
        by = breakdown.get("by_category_us") or {}
        return 100.0 * sum(by.get(cause, 0.0) for cause in CAUSE_ORDER) / judged
    device = (entry.get("devices") or [None])[0]
    return device["idle_pct"] if device else None


def render_overview(entries: list[dict], markdown: bool = False) -> str:
    """One line per trace, before the details: where it is, its verdict and the figures that decided it (the GPU
    idle share is that of the judged time, as in the verdict: `judged_idle_pct`)."""
    rows = []
    for e in entries:
        v = e.get("verdict") or {}
        if e.get("error"):
            rows.append([e.get("run", ""), e.get("worker", ""), span_label(e), "ERROR", "", "", "", "", "",
                         e["error"]["message"][:120]])
            continue
        steps = e.get("steps") or []
        median = statistics.median(s["dur_us"] for s in steps) if steps else None  # as the ranks table and savings
        share = f"{100 * v['share']:.0f}%" if v.get("share") is not None else ""
        runner = v.get("runner_up") or ""
        idle = judged_idle_pct(e)
        rows.append([e.get("run", ""), e.get("worker", ""), span_label(e), str(v.get("bound", "")),
                     "-" if v.get("bound") == NOT_ENOUGH_DATA else str(v.get("confidence", "")), share or "-", runner or "-",
                     "-" if idle is None else f"{idle:.1f}%", str(e.get("steps_total", len(steps))),
                     human_us(median) if median is not None else "-"])
    title = f"{len(entries)} traces"
    head = ["run", "worker", "span", "verdict", "confidence", "share", "runner-up", "GPU idle", "steps", "median step"]
    body = table_lines(head, rows, markdown)
    return "\n".join(([f"# {title}", ""] if markdown else [f"#### {title} ####"]) + body + [""])


def render_ranks(run: str, view: dict, markdown: bool = False) -> str:
    """The ranks summary of a multi-rank run (`ranks?run=` view), shown before its spans."""
    title = f"ranks of run {run}: {view['ranks_present']} of {view['world_size']} present"
    lines = [f"# {title}" if markdown else f"#### {title} ####"]
    missing = view["missing_ranks"]
    if missing:
        shown = ", ".join(map(str, missing[:20])) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        lines.append(f"Missing ranks: {shown} (the figures below are among the ranks present)")
    if view["stragglers"]:
        for s in view["stragglers"]:
            doing = ", ".join(f"{d['name']} {human_us(d['self_us'])}" for d in s["doing"][:3]) or "nothing recorded"
            lines.append(f"Straggler: rank {s['rank']} ({s['worker']}): the others waited for it in {s['waited_for']} of "
                         f"{s['of']} collectives, {human_us(s['caused_wait_us'])} in all; last in steps "
                         f"{', '.join(map(str, s['steps_last'][:10])) or '-'}; meanwhile it ran {doing}")
        saving = view.get("straggler_whatif")
        if saving:
            lines.append(f"If the straggler were as fast as the median rank: median step "
                         f"{human_us(saving['recorded_median_step_us'])} -> {human_us(saving['median_step_us'])} "
                         f"({percent(saving['saving_share'] or 0)} saved) [straggler=median]")
            lines += [f"  {line}" for line in extra_work_lines(saving)]
    elif view["matched_instances"]:
        lines.append(f"No straggler: {view['matched_instances']} collectives matched across ranks, no rank held the others back")
    else:
        lines.append("No collectives matched across ranks")
    rows = [[str(r["rank"]), r["worker"], str(r["steps"]), human_us(r["step_median_us"]) if r["step_median_us"] is not None else "-",
             str(r["collectives"]), human_us(r["wait_us"]), str(r["waited_for"]),
             human_us(r["exposed_comm_us"]) if r["exposed_comm_us"] is not None else "-",
             f"{r['overlap_pct']:.1f}%" if r["overlap_pct"] is not None else "-", r["verdict"]]
            for r in view["ranks"][:64]]
    lines += table_lines(["rank", "worker", "steps", "median step", "collectives", "waited", "waited for", "exposed comm",
                     "overlap", "verdict"], rows, markdown)
    if len(view["ranks"]) > 64:
        lines.append(f"... and {len(view['ranks']) - 64} more ranks")
    lines += _group_lines(view, markdown) + _clock_lines(view.get("clock_offsets"))
    return "\n".join(lines + [""])


def _signed(offset_us: Optional[float]) -> str:
    """A clock offset as `+1.2 ms` / `-3 µs`, `?` when unknown."""
    return "?" if offset_us is None else ("+" if offset_us >= 0 else "-") + human_us(abs(offset_us))


def _clock_lines(clocks: Optional[dict]) -> list[str]:
    """The ranks' clock offsets (analysis/distributed/clocks.py), where some rank's clock is measurably apart."""
    if not clocks:
        return []
    rows = [c for c in clocks["ranks"] if c["rank"] != clocks["reference_rank"]]
    if not any(c["offset_us"] is not None and abs(c["offset_us"]) > max(c["spread_us"] or 0.0, 1.0) for c in rows):
        return []
    shown = ", ".join(f"rank {c['rank']} {_signed(c['offset_us'])}"
                      + (f" (\u00b1{human_us(c['spread_us'])})" if c["spread_us"] else "") for c in rows[:16])
    more = f" and {len(rows) - 16} more" if len(rows) > 16 else ""
    return [f"Clock offsets from the collectives' ends, against rank {clocks['reference_rank']}: {shown}{more}"]


def _group_lines(view: dict, markdown: bool) -> list[str]:
    """The ranks view's process groups (where the traces name them) and their health items."""
    groups = view.get("process_groups") or []
    if len(groups) < 2 and not view.get("group_health"):
        return []
    rows = [[g["desc"] or "-", g["name"], ", ".join(map(str, g["ranks"][:16])) + (" ..." if len(g["ranks"]) > 16 else ""),
             str(g["collectives"]), str(g["matched_instances"]),
             human_us(g["skew_us_median"]) if g["skew_us_median"] is not None else "-",
             f"rank {g['waited_for']['rank']} ({g['waited_for']['instances']} of {g['waited_for']['of']})" if g["waited_for"] else "-"]
            for g in groups]
    lines = [""] * markdown + ["Process groups (collectives matched by group and sequence number):"] + [""] * markdown
    lines += table_lines(["group", "name", "ranks", "collectives", "matched", "median skew", "waited for"], rows, markdown)
    for h in view.get("group_health") or []:
        lines.append(f"- [warn] {h['check']}: {md(h['found']) if markdown else h['found']}. {h['effect']}")
    return lines


def unreliable_lines(entry: dict, figure: str, markdown: bool) -> list[str]:
    """One line under a figure that a trace-health warning makes unreliable: which checks, see Trace health."""
    checks = [h["check"] for h in entry.get("health") or [] if h["severity"] == "warn" and figure in h["affects"]]
    if not checks:
        return []
    line = f"Unreliable ({', '.join(checks)}): see Trace health"
    return ["", f"*{md(line)}*", ""] if markdown else [f"  ! {line}"]


def _health(entry: dict, markdown: bool) -> list[str]:
    """Trace health: each finding, what it does to which figure."""
    items = entry.get("health") or []
    if not items:
        return []
    lines = _heading("Trace health", markdown)
    for h in items:
        figures = ", ".join(FIGURES.get(f, f) for f in h["affects"])
        text = f"[{h['severity']}] {h['check']}: {h['found']}. Affects {figures}: {h['effect']}"
        lines.append(f"- {md(text)}" if markdown else f"- {text}")
    return lines


def _judged_line(entry: dict, device: dict) -> list[str]:
    """Where the verdict judged another window than the device's active span (the steps, clipped to the device's
    window, with the idle before and after its work): that window's idle share too, so the two figures are not
    read as one."""
    breakdown = entry.get("breakdown") or {}
    judged = breakdown.get("judged_us") or 0.0
    if judged <= 0 or breakdown.get("device", device["device"]) != device["device"]:
        return []
    if abs(judged - device["window_us"]) <= 1e-6 * max(judged, 1.0):
        return []
    return [f"Of the judged time ({human_us(judged)}, the steps the verdict weighs): idle {judged_idle_pct(entry):.1f}%."]


def _lead_line(lead: Optional[dict], markdown: bool) -> list[str]:
    """The idle judged before the device's first activity, a gap of its own (its culprit is in the tables below)."""
    if not lead:
        return []
    culprit = f"; culprit: {lead['culprit']}" if lead.get("culprit") else ""
    text = f"Before its first activity, inside the judged time: {human_us(lead['idle_us'])} idle ({lead['cause']}{culprit})."
    return [md(text) if markdown else text]


def _devices(entry: dict, markdown: bool) -> list[str]:
    lines = []
    for d in entry["devices"]:
        by = d["gaps"]["by_cause_us"]
        lines += _heading(f"Device {d['device']}", markdown)
        lines += [f"Idle {d['idle_pct']:.2f}% of the device's active span ({human_us(d['window_us'])}, its first activity "
                  f"to its last; {d['gaps']['count']} gaps)."]
        lines += _judged_line(entry, d)
        lines += _lead_line(d.get("lead"), markdown)
        lines += ["Idle time of the active span by cause:"]
        lines += unreliable_lines(entry, "busy_idle", markdown)
        lines += [""] if markdown else []
        lines += table_lines(["cause", "idle", "share"], [[c, human_us(by[c]), percent(by[c] / max(d['idle_us'], 1e-9))]
                                                     for c in CAUSE_ORDER if by.get(c, 0) > 0], markdown)
        for key, what in (("top_culprits", "host gaps"), ("top_sync_culprits", "sync gaps"), ("top_comm_culprits", "comm gaps")):
            if d["gaps"].get(key):
                lines += [""] * markdown + [f"Top culprits ({what}):"] + [""] * markdown
                lines += unreliable_lines(entry, "host_gaps", markdown) if key == "top_culprits" else []
                lines += table_lines(["cpu op", "in annotation", "idle caused"],
                                [[c["name"], c["annotation"] or "", human_us(c["idle_us"])] for c in d["gaps"][key]], markdown)
        lines += _comm(d["comm"], markdown)
    return lines


def _comm(comm: dict, markdown: bool) -> list[str]:
    if not comm["kernels"]:
        return []
    overlap = f"{comm['overlap_pct']:.1f}%" if comm["overlap_pct"] is not None else "-"
    return [""] * markdown + ["Communication:"] + [""] * markdown + table_lines(
        ["kernels", "comm", "exposed comm", "compute", "overlap"],
        [[str(comm["kernels"]), human_us(comm["comm_us"]), human_us(comm["exposed_comm_us"]), human_us(comm["compute_us"]),
          overlap]], markdown)


TEXT_STEP_ROWS = 30  # readable output lists this many steps; JSON has up to MAX_STEP_ROWS, `stalls` pages all


def _steps(entry: dict, markdown: bool) -> list[str]:
    if not entry["steps"]:
        return []
    total = entry.get("steps_total", len(entry["steps"]))
    shown = entry["steps"][:TEXT_STEP_ROWS]
    stalled = entry.get("steps_stalled", sum(s["stalled"] for s in entry["steps"]))
    more = [f"... and {total - len(shown):,} more steps ({stalled:,} of all {total:,} stalled; the first "
            f"{len(entry['steps']):,} in --format json, every one through the `stalls` route)"] if total > len(shown) else []
    rows = [[s["name"], human_us(s["dur_us"]), human_us(s["gpu_busy_us"]), human_us(s["gpu_idle_us"]),
             human_us(s["compute_us"]), human_us(s["comm_us"]), human_us(s["memcpy_us"]),
             human_us(s["dataloader_us"]), percent(s['dataloader_share']), "STALLED" if s["stalled"] else ""]
            for s in shown]
    return _heading("Steps", markdown) + table_lines(["step", "duration", "gpu busy", "gpu idle", "compute", "comm", "memcpy", "dataloader",
                                    "dl share", ""], rows, markdown) + more


def _efficiency(entry: dict, markdown: bool) -> list[str]:
    """How close the op calls run to the device's roofs: the device and its roofs (or why none), the kernel time a
    work model covers, MFU, each category's share of its roof and the top op shapes (analysis/roofline)."""
    eff = entry.get("efficiency")
    if not eff or eff["kernel_us"] <= 0:
        return []
    lines = _heading("Efficiency (roofline)", markdown)
    if not eff["recorded_inputs"]:
        return lines + ["No op records its inputs: efficiency needs record_shapes=True (torch.profiler.profile("
                        "record_shapes=True)); no op's work, rate or roof share is known."]
    roofs = eff["roofs"]
    if roofs is None:
        lines.append(f"Device {eff['device'] or '?'}: {eff['reason']}; work and rates are shown without roof shares.")
    else:
        compute = ", ".join(f"{k} {v:.4g}" for k, v in roofs["compute_tflops"].items())
        lines.append(f"Device {eff['device']}: {roofs['bandwidth_tbps']:.3g} TB/s memory bandwidth"
                     + (f"; TFLOP/s {compute}" if compute else "") + f" (peaks: {eff['peak_source']})")
    judged = eff["modelled_us"] + eff["unmodelled_us"]
    lines.append(f"Of the {human_us(judged)} of kernel time the ops launched (communication apart), "
                 f"{percent(1 - eff['unmodelled_share'])} has a work model ({human_us(eff['unmodelled_us'])} has none)"
                 + (f"; {human_us(eff['unowned_us'])} more ran with no op's launch in the trace (launched before the "
                    f"profiler started, or replayed from a CUDA graph)" if eff["unowned_us"] > 0 else ""))
    if eff["mfu"]["median"] is not None:
        steps = sum(m is not None for m in eff["mfu"]["per_step"])
        lines.append(f"MFU (the steps' model FLOPs over step time x the peak): median {percent(eff['mfu']['median'])} "
                     f"over {steps} step{'s' if steps != 1 else ''}")
    cats = [c for c in eff["categories"] if c["modelled_us"] > 0 or c["category"] == "communication"]
    if cats:
        rows = [[c["category"], human_us(c["kernel_us"]), human_us(c["modelled_us"]),
                 "" if c["roof_pct"] is None else f"{c['roof_pct']:.1f}%", c["bound"] or ""] for c in cats]
        lines += [""] * markdown + table_lines(["category", "kernel time", "modelled", "share of roof", "bound"], rows,
                                               markdown)
    if eff["top"]:
        rows = [[short(r["name"], 40), short(r["input_dims"] or "", 40), r["category"], str(r["calls"]),
                 human_us(r["kernel_us"]), _rate(r["achieved_tflops"]), _rate(r["achieved_tbps"]),
                 "" if r["roof_pct"] is None else f"{r['roof_pct']:.1f}%"] for r in eff["top"]]
        lines += ["", f"Top op shapes by kernel time ({len(rows)} of {eff['rows']}):"]
        lines += table_lines(["op", "input dims", "category", "calls", "kernel", "TFLOP/s", "TB/s", "of roof"], rows,
                             markdown)
    return lines


def _rate(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.3g}"


def _launch(entry: dict, markdown: bool) -> list[str]:
    launch = entry["launch"]
    if not launch["pairs"]:
        return []
    rows = [[name, *(human_us(launch[key][p]) for p in ("p50", "p90", "p99", "max"))]
            for name, key in (("offset", "offset_us"), ("queued", "queued_us"), ("latency", "latency_us"))]
    return (_heading("Launch offsets", markdown)
            + [f"{launch['pairs']} launches with device work (a graph replay counts once), "
               f"{launch['short_kernels']} kernels shorter than their launch call"] + unreliable_lines(entry, "launch", markdown)
            + [""] * markdown
            + table_lines(["", "p50", "p90", "p99", "max"], rows, markdown))


def _memory(entry: dict, markdown: bool) -> list[str]:
    if not entry["memory"]:
        return []
    rows = [[m["device"], human_bytes(m["peak_allocated_bytes"]) + (" (relative to the trace start)" if m.get("relative") else ""),
             "not recorded" if m["peak_reserved_bytes"] is None else human_bytes(m["peak_reserved_bytes"]),
             human_us(m["peak_at_us"]), m["peak_op"], "possible leak" if m["leak_suspect"] else ""] for m in entry["memory"]]
    return _heading("Memory peaks", markdown) + table_lines(["device", "allocated", "reserved", "at", "op", ""], rows, markdown)


def _warnings(entry: dict, markdown: bool) -> list[str]:
    warnings = entry.get("warnings") or []
    if not warnings:
        return []
    return _heading("Warnings", markdown) + [f"- {md(w) if markdown else w}" for w in warnings[:50]]


def insight_lines(insights: list[dict]) -> list[str]:
    """The insights from the tables, as the verdict's "what to do next" (each: evidence, then its suggestion)."""
    if not insights:
        return []
    lines = ["  What to do next (from the tables):"]
    for i in insights:
        lines += [f"  - {i['kind']}: {i['evidence']}", f"    Suggestion: {i['suggestion']}"]
    return lines


MAX_SAVINGS_SHOWN = 6


def saving_lines(savings: list[dict], markdown: bool) -> list[str]:
    """What each suggestion would save, largest first, with the edit the replay applied (`kinetoscope whatif`)."""
    if not savings:
        return []
    text = md if markdown else str
    lines = [f"  What a fix would save (replayed from the trace; per step, the mean; {share_window(savings[0])}):"]
    for s in savings[:MAX_SAVINGS_SHOWN]:
        share = f" ({percent(s['saving_share'])})" if s.get("saving_share") is not None else ""
        edits = ", ".join(short(e, 70) for e in s["edits"])
        lines.append(f"  - {text(s['fix'])}: {human_us(s['saving_us'])}{share}, median step "
                     f"{human_us(s['recorded_median_step_us'])} -> {human_us(s['median_step_us'])} [{text(edits)}]")
    return lines


def _tables(entry: dict, markdown: bool) -> list[str]:
    """The top ops (by GPU time they launched, then CPU time) and kernels (by total time)."""
    tables = entry.get("tables")
    if not tables:
        return []
    lines: list[str] = []
    if tables["ops"]:
        rows = [[short(r["name"]), str(r["calls"]), human_us(r["cpu_total_us"]), human_us(r["cpu_self_us"]),
                 human_us(r["gpu_self_us"]), human_us(r["gpu_total_us"]), str(r["launches"])] for r in tables["ops"]]
        lines += ["", f"Top operators ({len(rows)} of {tables['ops_totals']['rows']}):"]
        lines += table_lines(["op", "calls", "cpu total", "cpu self", "gpu self", "gpu total", "launches"], rows, markdown)
    if tables["kernels"]:
        rows = [[short(r["name"]), r["kind"], str(r["calls"]), human_us(r["total_us"]), human_us(r["mean_us"]),
                 human_us(r["max_us"]), percent(r['share']), "yes" if r["tensor_core"] else "",
                 short(r["launched_by"][0]["name"], 30) if r["launched_by"] else ""] for r in tables["kernels"]]
        lines += ["", f"Top kernels ({len(rows)} of {tables['kernels_totals']['rows']}):"] + unreliable_lines(entry, "kernel_table", markdown)
        lines += table_lines(["kernel", "kind", "calls", "total", "mean", "max", "share", "tensor cores", "launched by"], rows,
                        markdown)
    return lines


RENDERERS: dict[str, Callable[[dict], str]] = {
    "text": lambda e: render_entry(e, markdown=False),
    "markdown": lambda e: render_entry(e, markdown=True),
}
