"""How fast two large traces are compared: `kinetoscope diff` in fresh processes, and the `compare` route.

Builds (once, under .bench/traces) a baseline and a candidate of about 300 MB each: the ResNet-50 run
with 0 DataLoader workers repeated 10x (300.8 MB) and the one with 4 workers repeated 12x (312.8 MB).
Then measures, medians of --runs:

- `diff_nocache_s`: `kinetoscope diff A B --no-cache` in a fresh process (decode, analyses, tables, compare);
- `diff_cached_s`: the same with the decoded-model cache filled (a second CI run, say);
- `route_cold_s`: the plugin's `compare?base=&cand=` on a TensorBoard whose two spans have loaded, asked
  for the first time (each trace's figures and tables, then the comparison);
- `route_warm_ms`: the same request again (median of 20).

Prints one JSON document. Usage: PYTHONPATH=tb_plugin python tests/bench/compare_bench.py [--runs 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from layout import BENCH_DIR, REPO_ROOT, link_trace

sys.path.insert(0, str(REPO_ROOT / "samples"))
from scale_trace import scale_trace  # noqa: E402

SHARED = REPO_ROOT.parent / "shared" / "traces"
PAIR = [("resnet50_nw0_x10", SHARED / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz", 10),
        ("resnet50_nw4_x12", SHARED / "resnet50_num_workers_4" / "worker0.1623212756351.pt.trace.json.gz", 12)]


def traces(out_dir: Path) -> list[Path]:
    """The baseline and candidate, built if missing."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, source, repeat in PAIR:
        out = out_dir / f"{name}.pt.trace.json"
        if not out.is_file():
            part = out.with_name(out.name + ".part")
            scale_trace(str(source), str(part), repeat, gzip=False)
            part.rename(out)
        paths.append(out)
    return paths


def cli_seconds(a: Path, b: Path, *extra: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kinetoscope.cli", "diff", str(a), str(b), "--format", "json", *extra],
                          capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return elapsed


def route_figures(a: Path, b: Path, cache_dir: str) -> dict[str, float]:
    """The compare route on a logdir holding the two traces (as runs `a` and `b`), once both have loaded."""
    from kinetoscope import pipeline
    from kinetoscope.server.plugin import KinetoscopePlugin
    from kinetoscope.server.service import TraceService
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client
    with tempfile.TemporaryDirectory() as root:
        for run, path in (("a", a), ("b", b)):
            os.makedirs(f"{root}/{run}")
            link_trace(path, Path(f"{root}/{run}/worker0.1.pt.trace.json"))
        plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=root, multiplexer=None))
        plugin._service = TraceService(root, cache_dir=cache_dir, rescan_s=3600, prepare=pipeline.prepare)
        try:
            apps = plugin.get_plugin_apps()
            runs = json.loads(Client(apps["/runs"]).get("/data/plugin/kinetoscope/runs").get_data())["runs"]
            ids = {r["name"]: r["workers"][0]["spans"][0]["id"] for r in runs}
            for sid in ids.values():
                plugin._service.request_load(sid, wait_s=600)
            url = f"/data/plugin/kinetoscope/compare?base={ids['a']}&cand={ids['b']}"
            start = time.perf_counter()
            response = Client(apps["/compare"]).get(url)
            cold = time.perf_counter() - start
            assert response.status_code == 200, response.get_data()[:500]
            warm = []
            for _ in range(20):
                start = time.perf_counter()
                Client(apps["/compare"]).get(url)
                warm.append(time.perf_counter() - start)
            return {"route_cold_s": round(cold, 3), "route_warm_ms": round(1e3 * statistics.median(warm), 2),
                    "route_bytes": len(response.get_data())}
        finally:
            plugin._service.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--markdown", type=Path, help="also write the figures as a markdown section (make bench)")
    args = parser.parse_args()
    a, b = traces(BENCH_DIR / "traces")
    with tempfile.TemporaryDirectory() as cache:
        nocache = [cli_seconds(a, b, "--no-cache") for _ in range(args.runs)]
        cli_seconds(a, b, "--cache-dir", cache)  # fills the cache
        cached = [cli_seconds(a, b, "--cache-dir", cache) for _ in range(args.runs)]
        route = route_figures(a, b, cache)
    out = {"baseline_mb": round(a.stat().st_size / 1e6, 1), "candidate_mb": round(b.stat().st_size / 1e6, 1),
           "diff_nocache_s": round(statistics.median(nocache), 3), "diff_nocache_runs_s": [round(x, 3) for x in nocache],
           "diff_cached_s": round(statistics.median(cached), 3), "diff_cached_runs_s": [round(x, 3) for x in cached],
           **route, "cpus": os.cpu_count(), "load_average": os.getloadavg()}
    print(json.dumps(out, indent=1))
    if args.markdown:
        args.markdown.write_text(
            f"Command: `PYTHONPATH=tb_plugin .venv/bin/python tests/bench/compare_bench.py --runs {args.runs}`; baseline "
            f"{a.name} ({out['baseline_mb']} MB), candidate {b.name} ({out['candidate_mb']} MB); load average "
            f"{out['load_average'][0]:.1f} at the end.\n\n| what | time | target |\n|---|---|---|\n"
            f"| `compare` route, both spans loaded, first request | {out['route_cold_s']:.3f} s | under 2 s |\n"
            f"| the same request again (median of 20) | {out['route_warm_ms']:.2f} ms | under 100 ms |\n"
            f"| `kinetoscope diff A B`, fresh process, model cache filled | {out['diff_cached_s']:.2f} s | - |\n"
            f"| `kinetoscope diff A B --no-cache` (both decoded) | {out['diff_nocache_s']:.2f} s | - |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
