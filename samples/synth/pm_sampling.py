"""A planted one-GPU trace with hardware-counter samples (CUPTI PM sampling), written as Kineto writes them.

Kineto's writer (pytorch/kineto 114171df, 2026-08-20, `libkineto/src/output_json.cpp`, `handleCounterEvent`)
writes each PM sample of each metric as a counter event of category `hardware_counters` on the pid
`"GPU <device> Counters"`, its value under the empty key:

    {"ph": "C", "cat": "hardware_counters", "name": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
     "pid": "GPU 0 Counters", "tid": 0, "ts": 1000.000, "args": {"": 63.5}}

`CuptiPMSamplingProfiler.cpp` gives each sample its interval's start as its time; the value holds until the next.

The job: `steps` ProfilerSteps of STEP_US, each an `aten::mm` whose kernel runs KERNEL_US from the step's start
plus LEAD_US, then the device idles. The sampler runs every SAMPLE_US over the whole profile, its intervals
aligned with the kernels, so every planted value covers whole samples:
- `gr__cycles_active.avg.pct_of_peak_sustained_elapsed` (GPU active): 100 while the kernel runs, 0 else;
- `sm__cycles_active.avg.pct_of_peak_sustained_elapsed` (SM active): SM_ACTIVE while it runs, 0 else;
- `sm__throughput.avg.pct_of_peak_sustained_elapsed`: SM_THROUGHPUT while it runs, 0 else;
- `dram__throughput.avg.pct_of_peak_sustained_elapsed`: DRAM_THROUGHPUT while it runs, 2 else (refresh);
- `sm__cycles_active.avg` (cycles per interval, not a share): CYCLES while it runs, 0 else.

The truth is each metric's time-weighted mean over the steps (the GPU summary's window, torch-tb-profiler's:
the first step's start to the last step's end), computed from this construction, not by the analysis.

Command line (from the repo root)::

    python samples/synth/pm_sampling.py OUTDIR [--steps 4] [--gzip] [--truth FILE]
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

STEP_US, LEAD_US, KERNEL_US, SAMPLE_US = 10_000, 1_000, 6_000, 500
SM_ACTIVE, SM_THROUGHPUT, DRAM_THROUGHPUT, DRAM_IDLE, CYCLES = 92.0, 61.5, 34.25, 2.0, 1_700_000.0
START_US = 1_000_000  # the first step's start (µs from the base time)
PID, TID, STREAM = 4242, 4242, 7
KERNEL = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
DEVICE = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912, "computeMajor": 9, "computeMinor": 0,
          "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
          "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132}
METRICS = {  # metric -> (value while the kernel runs, value while the device idles)
    "gr__cycles_active.avg.pct_of_peak_sustained_elapsed": (100.0, 0.0),
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed": (SM_ACTIVE, 0.0),
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": (SM_THROUGHPUT, 0.0),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": (DRAM_THROUGHPUT, DRAM_IDLE),
    "sm__cycles_active.avg": (CYCLES, 0.0),
}


def _x(cat: str, name: str, ts: float, dur: float, pid: Any = PID, tid: Any = TID, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def make_trace(steps: int = 4) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the trace, its truth)."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": PID, "tid": TID, "args": {"name": "thread 4242 (python)"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
    ]
    for k in range(steps):
        t0 = START_US + k * STEP_US
        corr = 100 + k
        events += [
            _x("user_annotation", f"ProfilerStep#{k}", t0, STEP_US - 10, **{"External id": 10 * k + 1}),
            _x("cpu_op", "aten::mm", t0 + LEAD_US - 40, 35, **{"External id": 10 * k + 2}),
            _x("cuda_runtime", "cudaLaunchKernel", t0 + LEAD_US - 30, 20, correlation=corr, **{"External id": 10 * k + 2}),
            _x("kernel", KERNEL, t0 + LEAD_US, KERNEL_US, 0, STREAM, device=0, stream=STREAM, correlation=corr,
               **{"External id": 10 * k + 2, "grid": [132, 1, 1], "block": [384, 1, 1], "blocks per SM": 1.0,
                  "est. achieved occupancy %": 19, "registers per thread": 168, "shared memory": 213504}),
        ]
    end_us = START_US + steps * STEP_US
    for metric, (busy, idle) in METRICS.items():
        for t in range(START_US - 2 * SAMPLE_US, end_us + 2 * SAMPLE_US, SAMPLE_US):
            running = (t - START_US) % STEP_US
            on = START_US <= t < end_us and LEAD_US <= running < LEAD_US + KERNEL_US
            events.append({"ph": "C", "cat": "hardware_counters", "name": metric, "pid": "GPU 0 Counters", "tid": 0,
                           "ts": float(t), "args": {"": busy if on else idle}})
    doc = {"schemaVersion": 1, "deviceProperties": [DEVICE], "traceEvents": events,
           "traceName": "pm_sampling.pt.trace.json", "displayTimeUnit": "ms", "baseTimeNanoseconds": 1_700_000_000_000_000_000}
    busy_share = KERNEL_US / STEP_US
    window_us = steps * STEP_US - 10  # the last step's annotation ends 10 µs early; its kernel ends before that
    # the samples cover the whole window, each whole sample inside it but the last (cut 10 µs short, an idle one)
    means = {m: (busy * KERNEL_US * steps + idle * (window_us - KERNEL_US * steps)) / window_us
             for m, (busy, idle) in METRICS.items()}
    truth = {"device": 0, "window_us": window_us, "busy_share": busy_share, "samples_per_metric": (
        steps * STEP_US + 4 * SAMPLE_US) // SAMPLE_US, "means": means,
        "measured": {"utilization_pct": means["gr__cycles_active.avg.pct_of_peak_sustained_elapsed"],
                     "sm_efficiency_pct": means["sm__cycles_active.avg.pct_of_peak_sustained_elapsed"],
                     "sm_throughput_pct": means["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
                     "dram_throughput_pct": means["dram__throughput.avg.pct_of_peak_sustained_elapsed"]},
        "writer": "pytorch/kineto 114171df libkineto/src/output_json.cpp handleCounterEvent"}
    return doc, truth


def write(outdir: Path, steps: int = 4, gz: bool = True) -> tuple[Path, dict[str, Any]]:
    """The trace as `outdir/pm_sampling.<n>.pt.trace.json[.gz]` (gzip without a timestamp: reproducible) and its truth."""
    doc, truth = make_trace(steps)
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / f"pm_sampling.1700000000000.pt.trace.json{'.gz' if gz else ''}"
    text = json.dumps(doc, indent=1).encode()
    path.write_bytes(gzip.compress(text, mtime=0) if gz else text)
    return path, truth


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--truth", type=Path)
    args = parser.parse_args(argv)
    _, truth = write(args.outdir, args.steps, args.gzip)
    if args.truth:
        args.truth.parent.mkdir(parents=True, exist_ok=True)
        args.truth.write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
