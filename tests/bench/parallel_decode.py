"""Serial vs parallel decode of one trace (issue 29): wall time, CPU and peak RSS, in a fresh process per run.

Usage: .venv/bin/python tests/bench/parallel_decode.py .bench/traces/resnet50_nw0_x10.pt.trace.json --workers 1 2 --runs 3
       [--fast 0 1] [--pool threads|processes]

Each run is a fresh interpreter timing `load_trace(path, cache_dir=None)` with KINETOSCOPE_DECODE_WORKERS (and
KINETOSCOPE_FAST_DECODE, KINETOSCOPE_DECODE_POOL) set; the
worker pool is shut down before the CPU of the workers is read (RUSAGE_CHILDREN counts reaped processes only).
Runs alternate between the worker counts; the load average is printed with each run (the machine may be shared).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import json, os, resource, sys, time
from kinetoscope.trace import loader, offload
t = time.perf_counter()
model = loader.load_trace(sys.argv[1], cache_dir=None)
wall = time.perf_counter() - t
offload.shutdown_pools()
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "events": model.n_events, "cpu_parent_s": me.ru_utime + me.ru_stime,
                  "cpu_workers_s": kids.ru_utime + kids.ru_stime, "rss_parent_mib": me.ru_maxrss / 1024,
                  "rss_worker_mib": kids.ru_maxrss / 1024, "load": os.getloadavg()[0]}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("trace")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--fast", nargs="+", default=["1"], help="KINETOSCOPE_FAST_DECODE values to alternate (0: typed)")
    parser.add_argument("--pool", default="threads", help="KINETOSCOPE_DECODE_POOL (threads or processes)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO / "tb_plugin"), "KINETOSCOPE_DECODE_POOL": args.pool}
    configs = [(fast, workers) for fast in args.fast for workers in args.workers]
    walls: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    for run in range(args.runs):
        for fast, workers in configs:
            out = subprocess.run([sys.executable, "-c", CHILD, args.trace], capture_output=True, text=True, check=True,
                                 env={**env, "KINETOSCOPE_DECODE_WORKERS": str(workers), "KINETOSCOPE_FAST_DECODE": fast})
            result = json.loads(out.stdout.strip().splitlines()[-1])
            walls[(fast, workers)].append(result["wall_s"])
            print(f"run {run} fast {fast} workers {workers}: " + ", ".join(
                f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()), flush=True)
    for (fast, workers), times in walls.items():
        print(f"fast {fast} workers {workers}: min {min(times):.3f} s, median {statistics.median(times):.3f} s "
              f"over {len(times)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
