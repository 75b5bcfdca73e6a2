"""Decode rate, peak memory and analysis time of Kinetoscope alone, in process (issues' per-stage targets).

Each run is a fresh interpreter that times `load_trace(path, cache_dir=None)` (decode into the columnar
model) and then `analyze(model)`, and reports its peak RSS (ru_maxrss), in a process set up as `kinetoscope report`
sets its own (`kinetoscope.cli` imported first: one OpenBLAS thread, one malloc arena, freed memory held). Prints a
markdown section.
`--also-pure` adds a row per trace for the pure-Python extractor (KINETOSCOPE_PURE_PYTHON=1), the path
taken where the C extractor could not be compiled.
Usage: .venv/bin/python tests/bench/decode_rate.py TRACE... [--runs 3] [--also-pure]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from layout import main_python

CHILD = """
import json, resource, sys, time
import kinetoscope.cli  # the process set up as `kinetoscope report` and the server's decoder child set theirs
from kinetoscope.trace.loader import load_trace
from kinetoscope.trace.offload import shutdown_pools
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.extractors import ACCELERATED
def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
c = cpu(); t = time.perf_counter(); model = load_trace(sys.argv[1], cache_dir=None); decode = time.perf_counter() - t
shutdown_pools(); decode_cpu = cpu() - c  # the decode workers' CPU counts once they are reaped
t = time.perf_counter(); analyze(model); analysis = time.perf_counter() - t
print(json.dumps({"accelerated": ACCELERATED, "decode_s": decode, "decode_cpu_s": decode_cpu, "analysis_s": analysis,
                  "bytes": model.source_bytes, "events": model.n_events,
                  "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "workers_peak_rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""


PURE_MAX_BYTES = 1 << 30  # --also-pure rows only for files under this


def measure(path: Path, runs: int, pure: bool = False, workers: int = 1) -> dict:
    env = {**os.environ, "KINETOSCOPE_PURE_PYTHON": "1"} if pure else {k: v for k, v in os.environ.items() if k != "KINETOSCOPE_PURE_PYTHON"}
    env["KINETOSCOPE_DECODE_WORKERS"] = str(workers)
    results = [json.loads(subprocess.run([str(main_python()), "-c", CHILD, str(path)], check=True, capture_output=True,
                                         text=True, env=env).stdout) for _ in range(runs)]
    med = {k: statistics.median(r[k] for r in results) for k in ("decode_s", "decode_cpu_s", "analysis_s", "peak_rss",
                                                                   "workers_peak_rss")}
    return {**results[0], **med, "runs": runs, "decode_min_s": min(r["decode_s"] for r in results),
            "decode_max_s": max(r["decode_s"] for r in results)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--also-pure", action="store_true", help="add rows for the pure-Python extractor")
    parser.add_argument("--workers", default="1", help="comma-separated KINETOSCOPE_DECODE_WORKERS values (default 1)")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",") if w.strip()]
    print("# Decode rate and analysis time (Kinetoscope alone)\n")
    flags = f" --runs {args.runs}" + (" --also-pure" if args.also_pure else "") + (f" --workers {args.workers}" if counts != [1] else "")
    print(f"Command: `.venv/bin/python tests/bench/decode_rate.py {' '.join(str(t) for t in args.traces)}{flags}`; "
          "medians over fresh interpreters. Targets: decode >= 200 MB/s of uncompressed JSON, peak RSS <= 2.5x the "
          "uncompressed size, all analyses < 2 s after decoding.\n")
    print("MB/s: uncompressed JSON per second of wall time (all cores); per core: per second of CPU time, the decode "
          "workers' included. Peak RSS: the decoding process; each worker's peak beside it.\n")
    print("| trace | extractor | workers | JSON MB | events | decode s (min-max) | MB/s | MB/s per core | analyses s |"
          " peak RSS MiB (+ per worker) | RSS / JSON size |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in args.traces:
        # the pure-Python extractor on a GB-scale file takes minutes per run: its rate is the same on the smaller ones
        for pure in (False, True) if args.also_pure and path.stat().st_size < PURE_MAX_BYTES else (False,):
            for workers in counts if not pure else [1]:
                r = measure(path, args.runs, pure, workers)
                mb = r["bytes"] / 1e6
                extractor = "C (`_columns.c`)" if r["accelerated"] else "pure Python"
                spread = f"{r['decode_min_s']:.3f}-{r['decode_max_s']:.3f}"
                extra = f" + {r['workers_peak_rss'] / 2**20:.0f}" if workers > 1 else ""
                print(f"| {path.name} | {extractor} | {workers} | {mb:.1f} | {r['events']:,} | {r['decode_s']:.3f} ({spread}) |"
                      f" {mb / r['decode_s']:.0f} | {mb / max(r['decode_cpu_s'], 1e-9):.0f} | {r['analysis_s']:.3f} |"
                      f" {r['peak_rss'] / 2**20:.0f}{extra} | {r['peak_rss'] / r['bytes']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
