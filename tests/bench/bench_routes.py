"""Route latencies of the Kinetoscope plugin: ``summary``, ``gaps`` and ``lanes``, served in process.

As a script, run by the harness in a fresh project interpreter::

    .venv/bin/python tests/bench/bench_routes.py TRACE --result-json OUT --scratch DIR

The plugin app is built in process, as TensorBoard builds it
(``KinetoscopePlugin(TBContext(logdir=...)).get_plugin_apps()``), on a logdir
under ``DIR`` holding the trace, with an empty cache directory under ``DIR``
(``KINETOSCOPE_CACHE_DIR``), and every request goes through
``werkzeug.test.Client``: routing, parameter parsing, the view and the JSON
encoding are all in the timed wall time, the network is not.

1. ``runs`` until the span is listed; then the first ``summary`` request
   queues the load and ``status?span=`` is polled until ``ready``.
   ``ready_s`` = first data request -> ready (cold decode in the plugin's
   child process + analysis; the cache is empty).
2. ``summary`` x 200 (the span is in memory: a cached span).
3. ``gaps`` x 200 with random device / sort / cause / min_us / window /
   offset / limit.
4. ``lanes`` x 300: the full trace, then random windows log-uniform from the
   whole trace down to 1 ms wide, at random widths 800..2560 px.

Parameters come from seeded RNGs (one per route), so every run sends the
same requests.  Each request's wall time (``time.perf_counter`` around
``Client.get`` + ``get_data``) and body size (uncompressed: no
``Accept-Encoding``) are recorded; a non-200 answer fails the run.  The
result JSON has the shape of :mod:`bench_kinetoscope`'s: ``timings`` holds
``ready_s`` and, per route, ``<route>_p50_s``, ``_p99_s``, ``_max_s``,
``_mean_s``, ``_body_p50_bytes`` and ``_body_max_bytes``.

As a module, :func:`run_routes` is the harness-side runner (see :mod:`peers`);
its ``time_s`` is ``ready_s``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from worker_common import exit_now, new_result, record, stage

if TYPE_CHECKING:
    from peers import RunResult

T0 = time.perf_counter()

PREFIX = "/data/plugin/kinetoscope"
ROUTES: tuple[str, ...] = ("summary", "gaps", "lanes")
REQUESTS: dict[str, int] = {"summary": 200, "gaps": 200, "lanes": 300}
SEEDS: dict[str, int] = {"gaps": 1, "lanes": 2}
POLL_S = 0.05
"""Period of the ``status`` polling while the span loads."""

MIN_WINDOW_US = 1000.0
"""Narrowest random window: 1 ms."""

WIDTHS_PX = (800, 2560)
GAP_SORTS = ("start", "-start", "dur", "-dur")
GAP_CAUSES = ("dataloader", "sync", "host", "launch", "unlinked")
GAP_LIMITS = (50, 100, 100, 200, 500, 1000, 5000)
GAP_MIN_US = (1.0, 10.0, 100.0, 1000.0)

TARGETS: dict[str, str] = {
    "summary": "p99 < 20 ms (cached span)",
    "gaps": "-",
    "lanes": "p99 < 50 ms, body < 1 MB",
}
"""The targets the report states, per route."""

TARGET_LIMITS: dict[str, dict[str, float]] = {
    "summary": {"p99_s": 0.020},
    "lanes": {"p99_s": 0.050, "body_max_bytes": 1_000_000},
}
"""The same targets as numbers (1 MB = 10^6 bytes)."""


# --------------------------------------------------------------------------- the plugin, in process


class RouteError(RuntimeError):
    """A route answered something other than 200."""


class Plugin:
    """The plugin's WSGI apps behind ``werkzeug.test.Client``, one client per route."""

    def __init__(self, logdir: Path) -> None:
        from kinetoscope.server.plugin import KinetoscopePlugin
        from tensorboard.plugins import base_plugin
        from werkzeug.test import Client

        self.plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=str(logdir), multiplexer=None))
        self.clients = {name.lstrip("/"): Client(app) for name, app in self.plugin.get_plugin_apps().items()}

    def get(self, route: str, params: dict[str, Any] | None = None) -> tuple[int, bytes, float]:
        """(status code, body, wall seconds) of one GET, the body fully read."""
        url = f"{PREFIX}/{route}" + (f"?{urlencode(params)}" if params else "")
        start = time.perf_counter()
        response = self.clients[route].get(url)
        body = response.get_data()
        return response.status_code, body, time.perf_counter() - start

    def get_json(self, route: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        code, body, _ = self.get(route, params)
        if code != 200:
            raise RouteError(f"{route} {params or ''}: HTTP {code}: {body[:500].decode('utf-8', 'replace')}")
        return json.loads(body)

    def close(self) -> None:
        if self.plugin._service is not None:
            self.plugin._service.close()


def make_logdir(trace: Path, scratch: Path) -> tuple[Path, str]:
    """``scratch/logdir/bench/<name>.pt.trace.json[.gz]`` pointing at ``trace``; (logdir, how it was linked).

    The plugin's scan does not list symbolic links (fsspec reports them as
    ``other``), so the entry is a hard link, or a copy when the trace is on
    another file system.
    """
    run_dir = scratch / "logdir" / "bench"
    run_dir.mkdir(parents=True)
    name = trace.name
    if not (name.endswith(".pt.trace.json") or name.endswith(".pt.trace.json.gz")):
        name = "trace.pt.trace.json" + (".gz" if name.endswith(".gz") else "")
    target = run_dir / name
    try:
        os.link(trace.resolve(), target)
        how = "hardlink"
    except OSError:
        shutil.copyfile(trace, target)
        how = "copy"
    return scratch / "logdir", how


# --------------------------------------------------------------------------- measuring


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), ``q`` in 0..100."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def time_requests(plugin: Plugin, route: str, param_list: list[dict[str, Any]]) -> dict[str, float]:
    """Send every request; the route's latency percentiles and body sizes (raises RouteError on non-200)."""
    times: list[float] = []
    sizes: list[float] = []
    for params in param_list:
        code, body, wall = plugin.get(route, params)
        if code != 200:
            raise RouteError(f"{route} {params}: HTTP {code}: {body[:500].decode('utf-8', 'replace')}")
        times.append(wall)
        sizes.append(float(len(body)))
    return {
        f"{route}_p50_s": percentile(times, 50),
        f"{route}_p99_s": percentile(times, 99),
        f"{route}_max_s": max(times),
        f"{route}_mean_s": sum(times) / len(times),
        f"{route}_body_p50_bytes": percentile(sizes, 50),
        f"{route}_body_max_bytes": max(sizes),
    }


def wait_listed(plugin: Plugin, timeout_s: float = 60.0) -> str:
    """The span id of the only trace in the logdir, once the scan lists it."""
    deadline = time.monotonic() + timeout_s
    while True:
        runs = plugin.get_json("runs")
        spans = [s["id"] for r in runs["runs"] for w in r["workers"] for s in w["spans"]]
        if spans:
            return spans[0]
        if runs["scan_complete"] or time.monotonic() > deadline:
            raise RouteError(f"the trace is not listed by `runs`: {runs}")
        time.sleep(POLL_S)


def wait_ready(plugin: Plugin, sid: str) -> tuple[float, dict[str, Any], dict[str, float]]:
    """Queue the load with a first ``summary`` request, poll ``status`` until ready.

    Returns the seconds from that first request to ready, the final status
    entry and, per load phase, when it was first seen (seconds after the
    first request).
    """
    start = time.perf_counter()
    code, body, _ = plugin.get("summary", {"span": sid})
    if code not in (200, 409):
        raise RouteError(f"summary (first request): HTTP {code}: {body[:500].decode('utf-8', 'replace')}")
    phases: dict[str, float] = {}
    while True:
        entry = plugin.get_json("status", {"span": sid})["traces"][0]
        now = time.perf_counter() - start
        if entry.get("phase") and entry["phase"] not in phases:
            phases[entry["phase"]] = round(now, 3)
        if entry["state"] == "ready":
            return now, entry, phases
        if entry["state"] == "error":
            raise RouteError(f"the trace failed to load: {entry.get('error')}")
        time.sleep(POLL_S)


def random_window(rng: random.Random, duration_us: float) -> tuple[float, float]:
    """A window log-uniform in width from 1 ms (or the whole trace if shorter) to the whole trace."""
    narrowest = min(MIN_WINDOW_US, duration_us)
    width = 10 ** rng.uniform(math.log10(narrowest), math.log10(duration_us)) if duration_us > narrowest else duration_us
    start = rng.uniform(0.0, duration_us - width)
    return round(start, 3), round(start + width, 3)


def gaps_params(sid: str, devices: list[dict[str, Any]], duration_us: float, n: int) -> list[dict[str, Any]]:
    """``n`` random pages of the gaps table: device, sort, cause subset, min_us, window, offset, limit."""
    rng = random.Random(SEEDS["gaps"])
    out = []
    for _ in range(n):
        device = rng.choice(devices)
        limit = rng.choice(GAP_LIMITS)
        params: dict[str, Any] = {"span": sid, "device": device["device"], "sort": rng.choice(GAP_SORTS), "limit": limit}
        if rng.random() < 0.5:
            params["cause"] = ",".join(rng.sample(GAP_CAUSES, rng.randint(1, len(GAP_CAUSES))))
        if rng.random() < 0.5:
            params["min_us"] = rng.choice(GAP_MIN_US)
        if rng.random() < 0.5:
            params["start_us"], params["end_us"] = random_window(rng, duration_us)
        if rng.random() < 0.5:
            total = int(device.get("gaps", {}).get("count") or 0)
            params["offset"] = rng.randrange(0, max(1, total))
        out.append(params)
    return out


def lanes_params(sid: str, duration_us: float, n: int) -> list[dict[str, Any]]:
    """The full trace at 1600 px, then ``n - 1`` random windows at random widths."""
    rng = random.Random(SEEDS["lanes"])
    out: list[dict[str, Any]] = [{"span": sid, "width_px": 1600}]
    for _ in range(n - 1):
        start, end = random_window(rng, duration_us)
        out.append({"span": sid, "start_us": start, "end_us": end, "width_px": rng.randint(*WIDTHS_PX)})
    return out


def measure_routes(trace: Path, scratch: Path) -> tuple[dict[str, float], dict[str, Any]]:
    """The whole protocol on one trace (see the module docstring)."""
    stage("logdir")
    logdir, how = make_logdir(trace, scratch)
    os.environ["KINETOSCOPE_CACHE_DIR"] = str(scratch / "cache")  # read when the plugin's service is created
    stage("import")
    t = time.perf_counter()
    plugin = Plugin(logdir)
    timings: dict[str, float] = {"import_s": time.perf_counter() - t}
    try:
        stage("runs (scan)")
        t = time.perf_counter()
        sid = wait_listed(plugin)
        timings["scan_s"] = time.perf_counter() - t
        stage("first request -> ready")
        timings["ready_s"], entry, phases = wait_ready(plugin, sid)
        stage("summary")
        summary = plugin.get_json("summary", {"span": sid})
        duration_us = float(summary["duration_us"])
        devices = [d for d in summary.get("devices", []) if d.get("gaps", {}).get("count") is not None]
        timings.update(time_requests(plugin, "summary", [{"span": sid}] * REQUESTS["summary"]))
        if devices:
            stage("gaps")
            timings.update(time_requests(plugin, "gaps", gaps_params(sid, devices, duration_us, REQUESTS["gaps"])))
        stage("lanes")
        timings.update(time_requests(plugin, "lanes", lanes_params(sid, duration_us, REQUESTS["lanes"])))
    finally:
        plugin.close()
    info = {
        "events": entry.get("events"),
        "duration_us": duration_us,
        "devices": [d["device"] for d in devices],
        "requests": {r: (REQUESTS[r] if r != "gaps" or devices else 0) for r in ROUTES},
        "load_phases_first_seen_s": phases,
        "logdir_entry": how,
        "cache_bytes": sum(p.stat().st_size for p in (scratch / "cache").rglob("*") if p.is_file()),
    }
    return timings, info


# --------------------------------------------------------------------------- harness side


def run_routes(trace: Path, timeout_s: float, mem_cap_bytes: int | None = None) -> RunResult:
    """Harness runner: a fresh project interpreter serving the routes; ``time_s`` is first request -> ready."""
    from layout import main_python
    from peers import run_worker

    result = run_worker("routes", trace, main_python(), Path(__file__).resolve(), [str(trace)], timeout_s, mem_cap_bytes)
    if result.finished:
        result.time_s = result.timings.get("ready_s")
    return result


# --------------------------------------------------------------------------- script side


def main(argv: list[str] | None = None) -> int:
    """Measure the routes on one trace and write the result JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", type=Path)
    parser.add_argument("--result-json", type=Path, required=True)
    parser.add_argument("--scratch", type=Path, required=True, help="empty scratch directory (logdir and cache)")
    args = parser.parse_args(argv)
    result = new_result("kinetoscope:routes")
    return record(args.result_json, result, lambda: measure_routes(args.trace, args.scratch), T0)

if __name__ == "__main__":
    exit_now(main())
