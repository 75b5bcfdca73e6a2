"""Server side of "lanes first" (issue 18): how soon a load can serve the lanes, with and without the split.

For each trace, per run, on a TraceService as the plugin makes it (decoding in a child process):
- one stage (`prepare=pipeline.prepare`, the behaviour before the split): the lanes can be asked once everything
  is prepared;
- two stages (`stages=pipeline.STAGES`): the lanes can be asked once the lane index is built (`request_lanes`
  returns), the span is `ready` when the analyses are done.
Both from a fresh model cache (decoded) and from a filled one (the model read from the cache, as on a reload
after eviction or a restart). The runs alternate between the two services, so a busy machine weighs on both.

Usage: PYTHONPATH=tb_plugin .venv/bin/python tests/bench/stage_split.py TRACE... [--runs 5] [--out FILE.md]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kinetoscope import pipeline
from kinetoscope.server.service import TraceService
from layout import link_trace
from worker_common import write_section


def load_once(trace: Path, cache_dir: Path, staged: bool) -> tuple[float, float]:
    """(seconds until the lanes can be asked, seconds until ready) for one load of `trace`."""
    with tempfile.TemporaryDirectory(prefix="kinetoscope-stages-") as scratch:
        logdir = Path(scratch) / "run"
        logdir.mkdir()
        link_trace(trace, logdir / trace.name)
        service = TraceService(scratch, cache_dir=cache_dir, rescan_s=3600, prepare=pipeline.prepare,
                               stages=pipeline.STAGES if staged else None)
        try:
            service.scan_now()
            (sid, _, _), = service.snapshot()
            started = time.perf_counter()
            service.request_lanes(sid, wait_s=600)  # one stage: the event is set when the load ends
            lanes = time.perf_counter() - started
            service.get(sid, wait_s=600)
            return lanes, time.perf_counter() - started
        finally:
            service.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    lines = ["| trace | model from | one stage: lanes (= ready) | two stages: lanes | two stages: ready | lanes sooner by |",
             "|---|---|---|---|---|---|"]
    for trace in args.traces:
        with tempfile.TemporaryDirectory(prefix="kinetoscope-stages-cache-") as filled:
            load_once(trace, Path(filled), staged=False)  # fills the cache for the "cache" rows
            for source in ("decoded", "cache"):
                one, two_lanes, two_ready = [], [], []
                for _ in range(args.runs):
                    for staged in (False, True):
                        if source == "decoded":
                            with tempfile.TemporaryDirectory(prefix="kinetoscope-stages-cold-") as cold:
                                lanes, ready = load_once(trace, Path(cold), staged)
                        else:
                            lanes, ready = load_once(trace, Path(filled), staged)
                        if staged:
                            two_lanes.append(lanes)
                            two_ready.append(ready)
                        else:
                            one.append(ready)
                    print(f"{trace.name} ({source}): one stage {one[-1]:.2f} s; two stages: lanes {two_lanes[-1]:.2f} s, "
                          f"ready {two_ready[-1]:.2f} s", file=sys.stderr)
                a, b, c = (statistics.median(v) for v in (one, two_lanes, two_ready))
                lines.append(f"| {trace.name} | {source} | {a:.2f} s | {b:.2f} s | {c:.2f} s | {a - b:.2f} s |")
    table = "\n".join(lines) + f"\n\nMedians of {args.runs} runs each (decoding in a child process, as the plugin does); " \
        f"command: `PYTHONPATH=tb_plugin .venv/bin/python tests/bench/stage_split.py " \
        f"{' '.join(map(str, args.traces))} --runs {args.runs}` ({os.cpu_count()} CPUs)\n"
    return write_section(args.out, table)


if __name__ == "__main__":
    sys.exit(main())
