"""Decode rate, peak memory and analysis time of Kinetoscope alone, in process (issues' per-stage targets).

Each run is a fresh interpreter that times `load_trace(path, cache_dir=None)` (decode into the columnar
model) and then `analyze(model)`, and reports its peak RSS (ru_maxrss). Prints a markdown section.
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
from kinetoscope.trace.loader import load_trace
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.build import ACCELERATED
t = time.perf_counter(); model = load_trace(sys.argv[1], cache_dir=None); decode = time.perf_counter() - t
t = time.perf_counter(); analyze(model); analysis = time.perf_counter() - t
print(json.dumps({"accelerated": ACCELERATED, "decode_s": decode, "analysis_s": analysis, "bytes": model.source_bytes, "events": model.n_events,
                  "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def measure(path: Path, runs: int, pure: bool = False) -> dict:
    env = {**os.environ, "KINETOSCOPE_PURE_PYTHON": "1"} if pure else {k: v for k, v in os.environ.items() if k != "KINETOSCOPE_PURE_PYTHON"}
    results = [json.loads(subprocess.run([str(main_python()), "-c", CHILD, str(path)], check=True, capture_output=True,
                                         text=True, env=env).stdout) for _ in range(runs)]
    med = {k: statistics.median(r[k] for r in results) for k in ("decode_s", "analysis_s", "peak_rss")}
    return {**results[0], **med, "runs": runs, "decode_min_s": min(r["decode_s"] for r in results),
            "decode_max_s": max(r["decode_s"] for r in results)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--also-pure", action="store_true", help="add rows for the pure-Python extractor")
    args = parser.parse_args()
    print("# Decode rate and analysis time (Kinetoscope alone, one core)\n")
    flags = f" --runs {args.runs}" + (" --also-pure" if args.also_pure else "")
    print(f"Command: `.venv/bin/python tests/bench/decode_rate.py {' '.join(str(t) for t in args.traces)}{flags}`; "
          "medians over fresh interpreters. Targets: decode >= 200 MB/s of uncompressed JSON, peak RSS <= 2.5x the "
          "uncompressed size, all analyses < 2 s after decoding.\n")
    print("| trace | extractor | JSON MB | events | decode s (min-max) | MB/s | analyses s | peak RSS MiB | RSS / JSON size |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in args.traces:
        for pure in (False, True) if args.also_pure else (False,):
            r = measure(path, args.runs, pure)
            mb = r["bytes"] / 1e6
            extractor = "C (`_columns.c`)" if r["accelerated"] else "pure Python"
            spread = f"{r['decode_min_s']:.3f}-{r['decode_max_s']:.3f}"
            print(f"| {path.name} | {extractor} | {mb:.1f} | {r['events']:,} | {r['decode_s']:.3f} ({spread}) | {mb / r['decode_s']:.0f} |"
                  f" {r['analysis_s']:.3f} | {r['peak_rss'] / 2**20:.0f} | {r['peak_rss'] / r['bytes']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
