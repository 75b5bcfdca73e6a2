"""Frame-time benchmark of the lanes view on a large trace, measured in headless Chromium.

Builds the "10x trace" (the first resnet50_num_workers_0 span of ../shared/traces repeated 10 times
in time with samples/scale_trace.py: about 757k events, 11 s) into a cache folder outside the repo
unless it exists, serves it with the real `tensorboard` CLI, and runs bench_frames.mjs: wheel
zooms, drag pans and W/S/A/D keys, timing every animation frame's work (redraw and canvas
rasterisation) and the rAF intervals. Prints the JSON and a summary line.

Usage: .venv/bin/python tests/browser/bench_frames.py [--repeat 10] [--cache DIR] [--runs 3] [--dpr 1]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tbserver import REPO, TensorBoard, ensure_node_modules, run_node

SOURCE = REPO.parent / "shared" / "traces" / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz"


def build_trace(cache: Path, repeat: int) -> Path:
    """The logdir holding the scaled trace (run `resnet50_x<repeat>`), built once."""
    logdir = cache / f"logdir-x{repeat}"
    out = logdir / f"resnet50_x{repeat}" / SOURCE.name
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name("building.tmp")
        subprocess.run([sys.executable, str(REPO / "samples" / "scale_trace.py"), str(SOURCE), str(tmp), "--repeat", str(repeat),
                        "--gzip"], check=True, stdout=subprocess.DEVNULL)
        tmp.rename(out)
    return logdir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kinetoscope-bench")
    parser.add_argument("--runs", type=int, default=3, help="benchmark passes (fresh browser each)")
    parser.add_argument("--out", type=Path, default=REPO / "test-artifacts")
    parser.add_argument("--dpr", type=float, default=1.0, help="device pixel ratio of the page (2: a HiDPI screen)")
    args = parser.parse_args()
    ensure_node_modules()
    logdir = build_trace(args.cache, args.repeat)
    run = f"resnet50_x{args.repeat}"
    args.out.mkdir(parents=True, exist_ok=True)
    with TensorBoard(logdir) as server:
        codes = server.warm([s["id"] for s in server.spans()], timeout_s=600)
        if set(codes.values()) != {200}:
            raise SystemExit(f"the trace did not load: {codes}\n{server.stderr()[-2000:]}")
        results = [run_node("bench_frames.mjs", server.base, run, str(args.out), str(args.dpr), timeout_s=600) for _ in range(args.runs)]
    for r in results:
        print(json.dumps(r))
    med = statistics.median(r["frameWorkMs"]["median"] for r in results)
    p95 = statistics.median(r["frameWorkMs"]["p95"] for r in results)
    raf = statistics.median(r["rafIntervalMs"]["median"] for r in results)
    frames = sum(r["frameWorkMs"]["n"] for r in results)
    print(f"{run} at DPR {args.dpr:g}: frame work median {med:.2f} ms, p95 {p95:.2f} ms (median of {len(results)} passes, {frames} frames); "
          f"rAF interval median {raf:.2f} ms")


if __name__ == "__main__":
    main()
