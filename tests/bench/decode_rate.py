"""Decode rate, peak memory and analysis time of Kinetoscope alone, in process (issues' per-stage targets).

Each run is a fresh interpreter that times `load_trace(path, cache_dir=None)` (decode into the columnar
model) and then `analyze(model)`, and reports its peak RSS (ru_maxrss). Prints a markdown section.
Usage: .venv/bin/python tests/bench/decode_rate.py TRACE... [--runs 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from layout import main_python

CHILD = """
import json, resource, sys, time
from kinetoscope.trace.loader import load_trace
from kinetoscope.analysis.report import analyze
t = time.perf_counter(); model = load_trace(sys.argv[1], cache_dir=None); decode = time.perf_counter() - t
t = time.perf_counter(); analyze(model); analysis = time.perf_counter() - t
print(json.dumps({"decode_s": decode, "analysis_s": analysis, "bytes": model.source_bytes, "events": model.n_events,
                  "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def measure(path: Path, runs: int) -> dict:
    results = [json.loads(subprocess.run([str(main_python()), "-c", CHILD, str(path)], check=True, capture_output=True,
                                         text=True).stdout) for _ in range(runs)]
    med = {k: statistics.median(r[k] for r in results) for k in ("decode_s", "analysis_s", "peak_rss")}
    return {**results[0], **med, "runs": runs, "decode_min_s": min(r["decode_s"] for r in results),
            "decode_max_s": max(r["decode_s"] for r in results)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print("# Decode rate and analysis time (Kinetoscope alone, one core)\n")
    print(f"Command: `.venv/bin/python tests/bench/decode_rate.py {' '.join(str(t) for t in args.traces)} --runs {args.runs}`; "
          "medians over fresh interpreters. Targets: decode >= 200 MB/s of uncompressed JSON, peak RSS <= 2.5x the "
          "uncompressed size, all analyses < 2 s after decoding.\n")
    print("| trace | JSON MB | events | decode s (min-max) | MB/s | analyses s | peak RSS MiB | RSS / JSON size |")
    print("|---|---|---|---|---|---|---|---|")
    for path in args.traces:
        r = measure(path, args.runs)
        mb = r["bytes"] / 1e6
        print(f"| {path.name} | {mb:.1f} | {r['events']:,} | {r['decode_s']:.3f} ({r['decode_min_s']:.3f}-{r['decode_max_s']:.3f}) | "
              f"{mb / r['decode_s']:.0f} | {r['analysis_s']:.3f} | {r['peak_rss'] / 2**20:.0f} | {r['peak_rss'] / r['bytes']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
