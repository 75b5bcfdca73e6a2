"""Renderers of report entries (the JSON dicts of `analysis.report`) as readable text and markdown."""
from __future__ import annotations

from typing import Callable

CAUSES = ("dataloader", "comm", "sync", "host", "launch", "graph", "unlinked")


def human_us(us: float) -> str:
    """1234567.0 -> '1.23 s'; 1234.0 -> '1.23 ms'; 12.5 -> '12.5 µs'."""
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3g} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"


def human_bytes(n: float) -> str:
    """2791636480 -> '2.6 GiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        return lines + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [fmt(header)] + [fmt(r) for r in rows]


def render_entry(entry: dict, markdown: bool = False) -> str:
    """One trace as text (markdown=False) or markdown."""
    title = f"{entry.get('run', '')} / {entry.get('worker', '')} / span {entry.get('span')}"
    lines = [f"## {title}" if markdown else f"== {title} ==", f"file: {entry.get('path', '')}"]
    if entry.get("error"):
        return "\n".join(lines + [f"ERROR: {entry['error']['message']}", ""])
    lines.append(f"{entry['events']} events over {human_us(entry['duration_us'])}"
                 + (f"; skipped: {entry['skipped']}" if entry.get("skipped") else ""))
    if "verdict" not in entry:
        return "\n".join(lines + [""])
    lines += [""] + verdict_lines(entry["verdict"], markdown) + insight_lines(entry.get("insights") or [])
    for section in (_devices, _steps, _launch, _memory, _tables):
        lines += section(entry, markdown)
    return "\n".join(lines + [""])


def verdict_lines(verdict: dict, markdown: bool, label: str = "Verdict") -> list[str]:
    """The verdict, its confidence and runner-up, evidence and suggestion (and why, for not enough data)."""
    share = f", {100 * verdict['share']:.0f}% of the judged time" if verdict.get("share") is not None else ""
    head = f"{label}: {verdict['bound']} ({verdict['confidence']} confidence{share})"
    lines = [f"**{head}**" if markdown else head]
    if verdict.get("runner_up"):
        runner = verdict["runner_up_share"]
        lines.append(f"  Runner-up: {verdict['runner_up']}" + (f" ({100 * runner:.0f}%)" if runner is not None else ""))
    return lines + [f"  {verdict['evidence']}", f"  Suggestion: {verdict['suggestion']}"]


def render_run(run: dict, markdown: bool = False) -> str:
    """The run-level verdict, shown above the run's spans."""
    title = f"run {run['run']} ({run['spans']} spans)"
    return "\n".join([f"# {title}" if markdown else f"#### {title} ####"]
                      + verdict_lines(run["verdict"], markdown, label="Run verdict") + [""])


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
    elif view["matched_instances"]:
        lines.append(f"No straggler: {view['matched_instances']} collectives matched across ranks, no rank held the others back")
    else:
        lines.append("No collectives matched across ranks")
    rows = [[str(r["rank"]), r["worker"], str(r["steps"]), human_us(r["step_median_us"]) if r["step_median_us"] is not None else "-",
             str(r["collectives"]), human_us(r["wait_us"]), str(r["waited_for"]),
             human_us(r["exposed_comm_us"]) if r["exposed_comm_us"] is not None else "-",
             f"{r['overlap_pct']:.1f}%" if r["overlap_pct"] is not None else "-", r["verdict"]]
            for r in view["ranks"][:64]]
    lines += _table(["rank", "worker", "steps", "median step", "collectives", "waited", "waited for", "exposed comm",
                     "overlap", "verdict"], rows, markdown)
    if len(view["ranks"]) > 64:
        lines.append(f"... and {len(view['ranks']) - 64} more ranks")
    return "\n".join(lines + [""])


def _devices(entry: dict, markdown: bool) -> list[str]:
    lines = []
    for d in entry["devices"]:
        by = d["gaps"]["by_cause_us"]
        lines += ["", f"Device {d['device']}: idle {d['idle_pct']:.2f}% of {human_us(d['window_us'])} "
                      f"({d['gaps']['count']} gaps)", "Idle time by cause:"]
        lines += _table(["cause", "idle", "share"], [[c, human_us(by[c]), f"{100 * by[c] / max(d['idle_us'], 1e-9):.1f}%"]
                                                     for c in CAUSES if by.get(c, 0) > 0], markdown)
        for key, what in (("top_culprits", "host gaps"), ("top_sync_culprits", "sync gaps"), ("top_comm_culprits", "comm gaps")):
            if d["gaps"].get(key):
                lines += [f"Top culprits ({what}):"]
                lines += _table(["cpu op", "in annotation", "idle caused"],
                                [[c["name"], c["annotation"] or "", human_us(c["idle_us"])] for c in d["gaps"][key]], markdown)
        lines += _comm(d["comm"], markdown)
    return lines


def _comm(comm: dict, markdown: bool) -> list[str]:
    if not comm["kernels"]:
        return []
    overlap = f"{comm['overlap_pct']:.1f}%" if comm["overlap_pct"] is not None else "-"
    return ["Communication:"] + _table(
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
             human_us(s["dataloader_us"]), f"{100 * s['dataloader_share']:.1f}%", "STALLED" if s["stalled"] else ""]
            for s in shown]
    return ["", "Steps:"] + _table(["step", "duration", "gpu busy", "gpu idle", "compute", "comm", "memcpy", "dataloader",
                                    "dl share", ""], rows, markdown) + more


def _launch(entry: dict, markdown: bool) -> list[str]:
    launch = entry["launch"]
    if not launch["pairs"]:
        return []
    rows = [[name, *(human_us(launch[key][p]) for p in ("p50", "p90", "p99", "max"))]
            for name, key in (("offset", "offset_us"), ("queued", "queued_us"), ("latency", "latency_us"))]
    return (["", f"Launches: {launch['pairs']} launches with device work (a graph replay counts once), "
                 f"{launch['short_kernels']} kernels shorter than their launch call"]
            + _table(["", "p50", "p90", "p99", "max"], rows, markdown))


def _memory(entry: dict, markdown: bool) -> list[str]:
    if not entry["memory"]:
        return []
    rows = [[m["device"], human_bytes(m["peak_allocated_bytes"]) + (" (relative to the trace start)" if m.get("relative") else ""),
             "not recorded" if m["peak_reserved_bytes"] is None else human_bytes(m["peak_reserved_bytes"]),
             human_us(m["peak_at_us"]), m["peak_op"], "possible leak" if m["leak_suspect"] else ""] for m in entry["memory"]]
    return ["", "Memory peaks:"] + _table(["device", "allocated", "reserved", "at", "op", ""], rows, markdown)


def insight_lines(insights: list[dict]) -> list[str]:
    """The insights from the tables, as the verdict's "what to do next" (each: evidence, then its suggestion)."""
    if not insights:
        return []
    lines = ["  What to do next (from the tables):"]
    for i in insights:
        lines += [f"  - {i['kind']}: {i['evidence']}", f"    Suggestion: {i['suggestion']}"]
    return lines


def _short(name: str, chars: int = 60) -> str:
    return name if len(name) <= chars else name[:chars - 1] + "\u2026"


def _tables(entry: dict, markdown: bool) -> list[str]:
    """The top ops (by GPU time they launched, then CPU time) and kernels (by total time)."""
    tables = entry.get("tables")
    if not tables:
        return []
    lines: list[str] = []
    if tables["ops"]:
        rows = [[_short(r["name"]), str(r["calls"]), human_us(r["cpu_total_us"]), human_us(r["cpu_self_us"]),
                 human_us(r["gpu_self_us"]), human_us(r["gpu_total_us"]), str(r["launches"])] for r in tables["ops"]]
        lines += ["", f"Top operators ({len(rows)} of {tables['ops_totals']['rows']}):"]
        lines += _table(["op", "calls", "cpu total", "cpu self", "gpu self", "gpu total", "launches"], rows, markdown)
    if tables["kernels"]:
        rows = [[_short(r["name"]), r["kind"], str(r["calls"]), human_us(r["total_us"]), human_us(r["mean_us"]),
                 human_us(r["max_us"]), f"{100 * r['share']:.1f}%", "yes" if r["tensor_core"] else "",
                 _short(r["launched_by"][0]["name"], 30) if r["launched_by"] else ""] for r in tables["kernels"]]
        lines += ["", f"Top kernels ({len(rows)} of {tables['kernels_totals']['rows']}):"]
        lines += _table(["kernel", "kind", "calls", "total", "mean", "max", "share", "tensor cores", "launched by"], rows,
                        markdown)
    return lines


RENDERERS: dict[str, Callable[[dict], str]] = {
    "text": lambda e: render_entry(e, markdown=False),
    "markdown": lambda e: render_entry(e, markdown=True),
}
