"""Side-by-side benchmark: Kinetoscope vs torch-tb-profiler 0.4.3 vs HTA 0.5.0 vs a decode floor.

For each trace file given on the command line, every tool is run ``--runs``
times in a fresh process, alternating tool by tool (kinetoscope, warm,
tbprof, hta, floor decoders, kinetoscope, ...), each under a timeout and a
memory cap.  Medians and spreads (min-max) are printed as a table with the
ratios to Kinetoscope and to the floor, and everything is written to a JSON
results file (``<repo>/.bench/results.json`` by default).

Usage::

    .venv/bin/python tests/bench/run_bench.py TRACE [TRACE ...] [--runs 3] [--timeout 600]
        [--tools kinetoscope,kinetoscope_warm,tbprof,hta,floor,routes] [--floor-decoders msgspec,orjson,simdjson]
        [--mem-cap-gib 20] [--out .bench/results.json] [--markdown FILE] [--no-setup]
    .venv/bin/python tests/bench/run_bench.py --render .bench/results.json     # markdown to stdout

Tools: ``kinetoscope`` (cold open + analyze), ``kinetoscope_warm`` (reopen
from the cache), ``tbprof`` (torch-tb-profiler loader, single process),
``tbprof_plugin`` (its real multi-process ``RunLoader.load``, not run by
default), ``hta``, ``floor`` (one entry per decoder; the fastest is the floor),
``routes`` (the plugin's ``summary``/``gaps``/``lanes`` latencies, in process:
see :mod:`bench_routes`; its compared time is the cold load through the plugin).
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import gzip
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from bench_kinetoscope import run_kinetoscope_cold, run_kinetoscope_cold_w1, run_kinetoscope_cold_w2, run_kinetoscope_warm
from bench_routes import REQUESTS, ROUTES, TARGET_LIMITS, TARGETS, run_routes
from layout import DEFAULT_RESULTS, FLOOR_STAMP, PEERS_STAMP, REPO_ROOT
from peers import FLOOR_DECODERS, RunResult, run_floor, run_hta, run_tbprof, run_tbprof_plugin
from peers_env import (
    FLOOR_REPORTED,
    PEER_REPORTED,
    EnvSetupError,
    ensure_floor_site,
    ensure_peers_env,
    pick_versions,
)
from worker_common import read_through

Runner = Callable[[Path, float, Optional[int]], RunResult]

RESULTS_SCHEMA = 1
KINETOSCOPE = "kinetoscope"
DEFAULT_TOOLS: tuple[str, ...] = ("kinetoscope", "kinetoscope_w1", "kinetoscope_warm", "tbprof", "hta", "floor", "routes")
PEER_TOOLS = frozenset({"tbprof", "tbprof_plugin", "hta"})

TOOL_RUNNERS: dict[str, Runner] = {
    "kinetoscope": run_kinetoscope_cold,
    "kinetoscope_w1": run_kinetoscope_cold_w1,
    "kinetoscope_w2": run_kinetoscope_cold_w2,
    "kinetoscope_warm": run_kinetoscope_warm,
    "tbprof": run_tbprof,
    "tbprof_plugin": run_tbprof_plugin,
    "hta": run_hta,
    "routes": run_routes,
}

TOOL_DESCRIPTIONS: dict[str, str] = {
    "kinetoscope": "Kinetoscope cold: fresh process, `load_trace(cache_dir=None)` + `analyze()`, the decode on the cores "
    "this process may use (the default, KINETOSCOPE_DECODE_WORKERS=auto)",
    "kinetoscope_w1": "Kinetoscope cold decoded serially (KINETOSCOPE_DECODE_WORKERS=1)",
    "kinetoscope_w2": "Kinetoscope cold with two decode workers (KINETOSCOPE_DECODE_WORKERS=2): peak RSS of the process "
    "tree",
    "kinetoscope_warm": "Kinetoscope warm reopen: second `load_trace(cache_dir=DIR)` (in-process time)",
    "tbprof": "torch-tb-profiler: fresh process, `RunProfileData.parse` + `RunGenerator` (single process)",
    "tbprof_plugin": "torch-tb-profiler: fresh process, the plugin's `RunLoader.load()` (spawned worker)",
    "hta": "HTA: fresh process, `TraceAnalysis()` + idle time breakdown + kernel launch stats",
    "floor": "floor: fresh process, read + gunzip + decode to Python objects (GC off)",
    "routes": "Kinetoscope plugin in process (werkzeug test client), empty cache: first data request to `status` "
    "ready (cold decode + analysis through the plugin); route latencies in the section below",
}


# --------------------------------------------------------------------------- machine, versions


def _proc_field(path: str, key: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.split(":", 1)[0].strip() == key:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine_info() -> dict[str, Any]:
    """nproc, memory, CPU model, kernel, Python, load average."""
    mem_kib = _proc_field("/proc/meminfo", "MemTotal")
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_count": os.cpu_count(),
        "mem_total_bytes": int(mem_kib.split()[0]) * 1024 if mem_kib else None,
        "cpu_model": _proc_field("/proc/cpuinfo", "model name"),
        "kernel": platform.release(),
        "platform": platform.platform(),
        "loadavg_at_start": list(os.getloadavg()),
    }


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def collect_versions(peers_stamp: dict[str, Any] | None, floor_stamp: dict[str, Any] | None) -> dict[str, Any]:
    """Versions of the peers, their main dependencies, the decoders, Kinetoscope and the repo commit."""
    return {
        "peers_python": (peers_stamp or {}).get("python"),
        "peers": pick_versions(peers_stamp, PEER_REPORTED) if peers_stamp else {},
        "main_python": (floor_stamp or {}).get("python"),
        "main": pick_versions(floor_stamp, FLOOR_REPORTED) if floor_stamp else {},
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain")),
    }


# --------------------------------------------------------------------------- traces


def trace_facts(path: Path) -> dict[str, Any]:
    """Sizes of a trace (reading it also warms the page cache for every tool alike)."""
    facts: dict[str, Any] = {"path": str(path), "name": path.name, "size_bytes": path.stat().st_size}
    if path.name.endswith(".gz"):
        total = 0
        with gzip.open(path, "rb") as fh:
            while chunk := fh.read(1 << 24):
                total += len(chunk)
        facts["json_bytes"] = total
    else:
        with path.open("rb") as fh:
            while fh.read(1 << 24):
                pass
        facts["json_bytes"] = facts["size_bytes"]
    return facts


# --------------------------------------------------------------------------- running


def expand_tools(tools: list[str], floor_decoders: list[str]) -> dict[str, Runner]:
    """Tool names -> runners, ``floor`` becoming one ``floor:<decoder>`` entry per decoder."""
    slots: dict[str, Runner] = {}
    for tool in tools:
        if tool == "floor":
            for decoder in floor_decoders:
                slots[f"floor:{decoder}"] = functools.partial(run_floor, decoder=decoder)
        elif tool in TOOL_RUNNERS:
            slots[tool] = TOOL_RUNNERS[tool]
        else:
            raise SystemExit(f"unknown tool {tool!r}; known: {', '.join([*TOOL_RUNNERS, 'floor'])}")
    return slots


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _describe(result: RunResult) -> str:
    rss = f"{result.peak_rss_bytes / 2**20:7.0f} MiB" if result.peak_rss_bytes else "      - MiB"
    time_s = f"{result.time_s:8.3f} s" if result.time_s is not None else "       - s"
    return f"{time_s} {rss}  {result.status}" + (f": {result.error}" if result.error else "")


def run_trace(
    trace: Path,
    slots: dict[str, Runner],
    runs: int,
    timeout_s: float,
    mem_cap_bytes: int | None,
    unavailable: dict[str, str],
) -> list[RunResult]:
    """All runs of all tools on one trace, alternated tool by tool.

    A tool that failed, timed out or hit the memory cap is not run again on
    this trace (its remaining runs are recorded as ``skipped``).
    """
    results: list[RunResult] = []
    given_up: dict[str, str] = dict(unavailable)
    for round_no in range(1, runs + 1):
        for name, runner in slots.items():
            if name in given_up:
                results.append(RunResult(tool=name, trace=str(trace), status="skipped", error=given_up[name]))
                continue
            read_through(trace)
            result = runner(trace, timeout_s, mem_cap_bytes)
            results.append(result)
            _progress(f"  [{round_no}/{runs}] {name:<17} {_describe(result)}")
            if not result.finished:
                given_up[name] = f"not rerun after run {round_no}: {result.error}"
    return results


# --------------------------------------------------------------------------- statistics


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize_tool(results: list[RunResult]) -> dict[str, Any]:
    """Median / min / max of ``time_s`` and peak RSS over the finished runs of one tool."""
    ok = [r for r in results if r.finished and r.time_s is not None]
    times = [r.time_s for r in ok if r.time_s is not None]
    rss = [r.peak_rss_bytes for r in ok if r.peak_rss_bytes is not None]
    failure = next((r for r in results if r.status not in ("ok", "skipped")), None)
    keys = sorted({k for r in ok for k in r.timings})
    return {
        "runs": len([r for r in results if r.status != "skipped"]),
        "ok": len(ok),
        "status": "ok" if failure is None and ok else (failure.status if failure else "skipped"),
        "error": failure.error if failure else (results[0].error if results and not ok else None),
        "median_s": _median(times),
        "min_s": min(times) if times else None,
        "max_s": max(times) if times else None,
        "peak_rss_median_bytes": _median([float(x) for x in rss]),
        "peak_rss_max_bytes": max(rss) if rss else None,
        "timings_median": {k: _median([r.timings[k] for r in ok if k in r.timings]) for k in keys},
        "info": ok[0].info if ok else {},
    }


def summarize_trace(facts: dict[str, Any], results: list[RunResult]) -> dict[str, Any]:
    """Per-tool summaries, the best floor decoder and the ratios to Kinetoscope and to the floor."""
    tools = list(dict.fromkeys(r.tool for r in results))
    summary = {tool: summarize_tool([r for r in results if r.tool == tool]) for tool in tools}
    floors = {t: s for t, s in summary.items() if t.startswith("floor:") and s["median_s"] is not None}
    best_floor = min(floors, key=lambda t: floors[t]["median_s"]) if floors else None
    base = summary.get(KINETOSCOPE, {}).get("median_s")
    floor_s = floors[best_floor]["median_s"] if best_floor else None
    ratios = {}
    for tool, s in summary.items():
        m = s["median_s"]
        ratios[tool] = {
            "vs_kinetoscope": m / base if m is not None and base else None,
            "vs_floor": m / floor_s if m is not None and floor_s else None,
        }
    return {**facts, "summary": summary, "floor": best_floor, "ratios": ratios, "runs": [r.to_dict() for r in results]}


# --------------------------------------------------------------------------- rendering


def _fmt_s(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _fmt_mib(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.0f}"


def _fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _fmt_mb(value: int | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.1f} MB"


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _row(tool: str, trace: dict[str, Any], max_error: int = 100) -> list[str]:
    """One table row; a tool without a finished run shows its failure instead of numbers."""
    s = trace["summary"][tool]
    r = trace["ratios"][tool]
    label = tool + (" (floor)" if tool == trace["floor"] else "")
    if s["median_s"] is None:
        return [label, f"{s['ok']}/{s['runs']}", _shorten(s["error"] or s["status"], max_error), "", "", "", ""]
    spread = f"{_fmt_s(s['min_s'])}-{_fmt_s(s['max_s'])}"
    return [
        label,
        f"{s['ok']}/{s['runs']}",
        _fmt_s(s["median_s"]),
        spread,
        _fmt_mib(s["peak_rss_max_bytes"]),
        _fmt_ratio(r["vs_kinetoscope"]),
        _fmt_ratio(r["vs_floor"]),
    ]


TABLE_HEADER = ["tool", "ok", "median s", "min-max s", "peak RSS MiB", "x kinetoscope", "x floor"]


def _trace_title(trace: dict[str, Any]) -> str:
    events = next(
        (
            s["info"].get("events")
            for t, s in sorted(trace["summary"].items(), key=lambda item: not item[0].startswith("floor:"))
            if s["info"].get("events")
        ),
        None,
    )
    size = _fmt_mb(trace["size_bytes"]) + (
        f" gz, {_fmt_mb(trace['json_bytes'])} JSON" if trace["json_bytes"] != trace["size_bytes"] else " JSON"
    )
    return f"{trace['name']} ({size}" + (f", {events:,} events)" if events else ")")


def _text_line(row: list[str], widths: list[int]) -> str:
    if not row[3]:  # a tool without a finished run: its failure fills the rest of the line
        return f"  {row[0].ljust(widths[0])}  {row[1].rjust(widths[1])}  {row[2]}"
    cells = [cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))]
    return "  " + "  ".join(cells).rstrip()


def render_table(results: dict[str, Any]) -> str:
    """Plain-text tables, one per trace."""
    out: list[str] = []
    for trace in results["traces"]:
        rows = [TABLE_HEADER] + [_row(tool, trace) for tool in trace["summary"]]
        sized = [row for row in rows if row[3]] + [[row[0], row[1]] + [""] * 5 for row in rows if not row[3]]
        widths = [max(len(row[i]) for row in sized) for i in range(len(TABLE_HEADER))]
        out.append(_trace_title(trace))
        out.extend(_text_line(row, widths) for row in rows)
        out.append("")
    return "\n".join(out)


def _md_versions(v: dict[str, Any]) -> str:
    parts = [f"{name} {ver}" for name, ver in {**v.get("main", {}), **v.get("peers", {})}.items() if ver]
    commit = v.get("git_commit")
    if commit:
        parts.append(f"repo commit {commit[:12]}" + (" (+ uncommitted changes)" if v.get("git_dirty") else ""))
    return ", ".join(parts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _md_setup(results: dict[str, Any]) -> list[str]:
    """Command, machine, versions and protocol."""
    m, v, c = results["machine"], results["versions"], results["config"]
    mem = f"{m['mem_total_bytes'] / 2**30:.1f} GiB" if m.get("mem_total_bytes") else "unknown"
    load = ", ".join(f"{x:.2f}" for x in m["loadavg_at_start"])
    cap = f"; memory cap {c['mem_cap_bytes'] / 2**30:.1f} GiB (whole process tree)" if c.get("mem_cap_bytes") else ""
    return [
        f"Measured {results['created']} with:",
        "",
        f"    {results['command']}",
        "",
        f"- Machine: {m.get('cpu_model') or 'unknown CPU'}, {m['nproc']} cores (nproc), {mem} RAM, "
        f"Linux {m['kernel']}; load average at start {load}.",
        f"- Python {v.get('main_python')} (Kinetoscope, floor), {v.get('peers_python')} (peers venv).",
        f"- Versions: {_md_versions(v)}.",
        f"- {_plural(c['runs'], 'run')} per tool, alternated tool by tool; timeout {c['timeout_s']:g} s per run{cap}.",
    ] + ([f"- Measured now: {', '.join(c['tools'])}; the other tools' runs are those of `{results['reused']['from']}` "
          f"(measured {results['reused']['created']})."] if results.get("reused") else [])


def _md_method(tools: list[str]) -> list[str]:
    """What each tool's number means."""
    lines = [
        "What is timed (every run is a fresh interpreter; wall time from spawn to the result, "
        "interpreter teardown excluded):",
        "",
    ]
    lines += [f"- `{tool}`: {TOOL_DESCRIPTIONS[tool]}" for tool in tools if tool in TOOL_DESCRIPTIONS]
    lines += [
        "",
        "Median and spread (min-max) over the finished runs; peak RSS is the largest summed RSS of the "
        "process tree (sampled every 20 ms, and at least the main process's own high-water mark). "
        "Each run starts with the trace in the page cache (read through once, untimed, before it). "
        "`x kinetoscope` = median / Kinetoscope cold median (above 1: slower than Kinetoscope); "
        "`x floor` = median / the fastest floor decoder's median.",
    ]
    return lines


def _md_trace(trace: dict[str, Any]) -> list[str]:
    """One trace's table."""
    lines = [f"## {_trace_title(trace)}", "", "| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
    for tool in trace["summary"]:
        cells = [cell.replace("|", "\\|") for cell in _row(tool, trace, max_error=240)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _fmt_ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.2f}" if ms < 10 else f"{ms:.1f}"


def _fmt_kb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e3:,.1f}"


def _route_target(route: str, timings: dict[str, float]) -> str:
    """The route's target and whether the medians meet it."""
    limits = TARGET_LIMITS.get(route)
    if not limits:
        return TARGETS.get(route, "-")
    met = all(timings.get(f"{route}_{key}") is not None and timings[f"{route}_{key}"] < limit for key, limit in limits.items())
    return f"{TARGETS[route]}: {'met' if met else '**missed**'}"


ROUTES_HEADER = ["route", "requests", "p50 ms", "p99 ms", "max ms", "body p50 KB", "body max KB", "target"]


def _md_routes(results: dict[str, Any]) -> list[str]:
    """The ``routes`` tool's section: per trace, latency percentiles and body sizes per route."""
    traces = [t for t in results["traces"] if "routes" in t["summary"]]
    if not traces:
        return []
    lines = [
        "## Route latencies through the plugin",
        "",
        "Each `routes` run (a fresh interpreter, `tests/bench/bench_routes.py`) builds the plugin app in process "
        "as TensorBoard does (`KinetoscopePlugin(TBContext(logdir=...)).get_plugin_apps()`) on a logdir holding "
        "the trace and an empty cache directory, and sends every request through `werkzeug.test.Client`: the wall "
        "time of each request covers routing, parameter parsing, the view and the JSON encoding, not the network "
        "or gzip; body sizes are uncompressed. *Ready* is the time from the first data request to `status` "
        "reporting the span ready (cold decode in the plugin's child process + analysis). Then, with seeded "
        f"random parameters (the same requests in every run): `summary` x{REQUESTS['summary']} of the loaded span; "
        f"`gaps` x{REQUESTS['gaps']} with random device, sort, cause subset, min_us, window, offset and limit "
        f"(50..5000); `lanes` x{REQUESTS['lanes']}: the whole trace, then windows log-uniform in width from the "
        "whole trace down to 1 ms, at 800..2560 px.",
        "",
        "Targets: `lanes` p99 < 50 ms and body < 1 MB; `summary` of a cached span < 20 ms (checked on its p99). "
        "With several runs every figure is the median over the runs of that run's figure. 1 KB = 1000 bytes, "
        "1 MB = 10^6 bytes.",
        "",
    ]
    for trace in traces:
        s = trace["summary"]["routes"]
        lines += [f"### {_trace_title(trace)}", ""]
        if s["median_s"] is None:
            lines += [f"No finished run ({s['ok']}/{s['runs']}): {_shorten(s['error'] or s['status'], 240)}", ""]
            continue
        t = s["timings_median"]
        lines += [
            f"Ready {_fmt_s(s['median_s'])} s after the first data request "
            f"(min-max {_fmt_s(s['min_s'])}-{_fmt_s(s['max_s'])} s over {_plural(s['ok'], 'run')}), "
            f"peak RSS {_fmt_mib(s['peak_rss_max_bytes'])} MiB (process tree).",
            "",
            "| " + " | ".join(ROUTES_HEADER) + " |",
            "|" + "---|" * len(ROUTES_HEADER),
        ]
        requests = s["info"].get("requests", {})
        for route in ROUTES:
            if f"{route}_p50_s" not in t:
                lines.append(f"| {route} | 0 | not measured (no GPU device) | | | | | |")
                continue
            cells = [
                route,
                str(requests.get(route, "-")),
                _fmt_ms(t[f"{route}_p50_s"]),
                _fmt_ms(t[f"{route}_p99_s"]),
                _fmt_ms(t[f"{route}_max_s"]),
                _fmt_kb(t[f"{route}_body_p50_bytes"]),
                _fmt_kb(t[f"{route}_body_max_bytes"]),
                _route_target(route, t),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def render_markdown(results: dict[str, Any]) -> str:
    """BENCHMARKS.md body from a results dict (as written to ``results.json``)."""
    lines = ["# Benchmarks: Kinetoscope vs torch-tb-profiler vs HTA", ""]
    lines += _md_setup(results) + [""] + _md_method(results["config"]["tools"]) + [""]
    for trace in results["traces"]:
        lines += _md_trace(trace) + [""]
    lines += _md_routes(results)
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def _default_mem_cap_gib() -> float:
    total = machine_info()["mem_total_bytes"]
    return round(0.85 * total / 2**30, 1) if total else 20.0


def _reused(earlier: dict[str, Any] | None, trace: Path, measured: set[str]) -> list[RunResult]:
    """The runs of `trace` in an earlier results file's contents, but those of the tools measured now."""
    if earlier is None:
        return []
    for item in earlier["traces"]:
        if Path(item["path"]) == trace:
            fields = RunResult.__dataclass_fields__
            return [RunResult(**{k: v for k, v in run.items() if k in fields}) for run in item["runs"]
                    if run["tool"] not in measured]
    raise SystemExit(f"the --reuse results have no runs of {trace}")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="*", type=Path, help="trace files (.json or .json.gz)")
    parser.add_argument("--runs", type=int, default=3, help="runs per tool and trace (default 3)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run before it is killed")
    parser.add_argument("--tools", default=",".join(DEFAULT_TOOLS), help="comma-separated tool list")
    parser.add_argument("--floor-decoders", default=",".join(FLOOR_DECODERS), help="decoders tried for the floor")
    parser.add_argument(
        "--mem-cap-gib",
        type=float,
        default=None,
        help="kill a run whose process tree exceeds this RSS (default: 85%% of RAM)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_RESULTS, help="results JSON (default .bench/results.json)")
    parser.add_argument("--markdown", type=Path, help="also write render_markdown() to this file")
    parser.add_argument("--no-setup", action="store_true", help="do not create the peers venv / floor decoders")
    parser.add_argument("--label", help="command to record instead of this script's argv (e.g. 'make bench')")
    parser.add_argument("--render", type=Path, metavar="RESULTS_JSON", help="only print the markdown of a results file")
    parser.add_argument("--reuse", type=Path, metavar="RESULTS_JSON",
                        help="an earlier results file of the same traces: the runs of its tools not in --tools are "
                        "kept (listed after them), so some tools of a stage can be measured again without the others")
    args = parser.parse_args(argv)
    if not args.render and not args.traces:
        parser.error("give trace files (or --render RESULTS_JSON)")
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    return args


def _stamp_on_disk(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _setup(tools: list[str], no_setup: bool) -> tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, str]]:
    """Create (or, with ``no_setup``, only read) both environments' stamps.

    Returns the peers stamp, the floor stamp and the tools made unavailable (with why).
    """
    if no_setup:
        return _stamp_on_disk(PEERS_STAMP), _stamp_on_disk(FLOOR_STAMP), {}
    peers_stamp = floor_stamp = None
    unavailable: dict[str, str] = {}
    if PEER_TOOLS & set(tools):
        try:
            peers_stamp = ensure_peers_env()
        except EnvSetupError as exc:
            unavailable.update({t: f"peers venv unavailable: {exc}"[:2000] for t in PEER_TOOLS})
    try:
        floor_stamp = ensure_floor_site()
    except EnvSetupError as exc:
        _progress(f"floor decoders unavailable ({exc}); floor:orjson and floor:simdjson will fail")
    return peers_stamp, floor_stamp, unavailable


def _command_line() -> str:
    """This invocation, paths inside the repo written relative to it."""

    def rel(arg: str) -> str:
        path = Path(arg)
        if path.is_absolute() and path.is_relative_to(REPO_ROOT):
            return str(path.relative_to(REPO_ROOT))
        return arg

    return shlex.join([rel(sys.executable), *(rel(a) for a in sys.argv)])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or render a results file)."""
    args = _parse_args(argv)
    if args.render:
        print(render_markdown(json.loads(args.render.read_text())))
        return 0
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    decoders = [d.strip() for d in args.floor_decoders.split(",") if d.strip()]
    slots = expand_tools(tools, decoders)
    mem_cap_gib = args.mem_cap_gib if args.mem_cap_gib is not None else _default_mem_cap_gib()
    mem_cap_bytes = int(mem_cap_gib * 2**30)
    peers_stamp, floor_stamp, unavailable = _setup(tools, args.no_setup)
    earlier = json.loads(args.reuse.read_text()) if args.reuse else None
    results: dict[str, Any] = {
        "schema": RESULTS_SCHEMA,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": args.label or _command_line(),
        "machine": machine_info(),
        "versions": collect_versions(peers_stamp, floor_stamp),
        "config": {
            "runs": args.runs,
            "timeout_s": args.timeout,
            "mem_cap_bytes": mem_cap_bytes,
            "tools": tools,
            "floor_decoders": decoders,
        },
        "traces": [],
    }
    for trace in args.traces:
        _progress(f"{trace}:")
        facts = trace_facts(trace)
        runs = run_trace(
            trace,
            slots,
            args.runs,
            args.timeout,
            mem_cap_bytes,
            {s: why for s, why in unavailable.items() if s in slots},
        )
        results["traces"].append(summarize_trace(facts, runs + _reused(earlier, trace, set(slots))))
    if earlier is not None:
        results["reused"] = {"from": str(args.reuse), "created": earlier.get("created")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(render_table(results))
    print(f"results: {args.out}")
    if args.markdown:
        args.markdown.write_text(render_markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
