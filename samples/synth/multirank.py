"""Synthetic multi-rank NCCL jobs with planted truth: a straggler, overlapped or exposed communication, a
missing rank, and as many ranks as wanted (64 for the benchmark).

Every rank runs the same steps on one GPU. Per step it launches its forward compute (stream 7), then one
NCCL all-reduce (stream 20) under `record_param_comms` > `nccl:all_reduce` > `cudaLaunchKernel`, with the
torch >= 2.1 fields (`Seq`, `Process Group Name`, `In msg nelems`, `dtype`, `Group size`). The job's true
time is one timeline: every rank's all-reduce kernel ends when the last rank has arrived plus the transfer
time, so a rank that arrives early waits on the device. The straggler arrives `straggler_ms` late (extra
compute first). Each rank writes its events on its own clock (an offset per rank), so nothing may compare
raw timestamps across ranks. With `overlap`, a backward kernel on stream 7 runs from the rank's all-reduce
start for half the transfer time: its own work, the same on every rank however long the rank then waits.

The truth is computed from this construction (durations by arrival, unions of the kernel intervals), not by
the analysis; `tests/test_synthetic_multirank.py` compares the two.

Command line (from the repo root)::

    python samples/synth/multirank.py OUTDIR [--ranks 4] [--steps 4] [--straggler R] [--straggler-ms 20]
        [--missing R ...] [--no-overlap] [--gzip] [--truth FILE]
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

US = 1.0  # trace times are µs
STEP_US = 40_000.0
FORWARD_US = 12_000.0
TRANSFER_US = 2_000.0
NELEMS = 25_000_000  # float32: 100 MB per all-reduce
PID_CPU, TID_MAIN, STREAM_COMPUTE, STREAM_NCCL = 1000, 1000, 7, 20
NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def make_job(ranks: int = 4, steps: int = 4, straggler: Optional[int] = None, straggler_ms: float = 20.0,
             missing: Sequence[int] = (), overlap: bool = True, ops_per_step: int = 0) -> tuple[dict[int, dict], dict[str, Any]]:
    """(traces by rank for the ranks present, truth). `ops_per_step` adds that many small ops, each launching a
    kernel inside the forward kernel's interval (bulk for benchmarks; the truth is unchanged)."""
    present = [r for r in range(ranks) if r not in set(missing)]
    late = straggler_ms * 1000 * US if straggler is not None else 0.0
    events: dict[int, list] = {r: [] for r in present}
    corr = {r: 0 for r in present}
    durations: list[dict[int, float]] = []
    arrivals: list[dict[int, float]] = []  # each rank's all-reduce kernel start, from its trace's start

    def launch(r: int, at: float, kernel_start: float, kernel_dur: float, name: str, stream: int) -> None:
        corr[r] += 1
        events[r].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID_CPU, "tid": TID_MAIN,
                          "ts": at, "dur": 5.0, "args": {"correlation": corr[r]}})
        events[r].append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": kernel_start,
                          "dur": kernel_dur, "args": {"device": 0, "stream": stream, "correlation": corr[r]}})

    for s in range(steps):
        t0 = s * (STEP_US + late)
        arrive = {r: t0 + FORWARD_US + 100 + (late if r == straggler else 0.0) for r in range(ranks)}
        end = max(arrive.values()) + TRANSFER_US  # a missing rank still takes part in the job
        durations.append({r: end - arrive[r] for r in present})
        arrivals.append({r: arrive[r] for r in present})
        for r in present:
            ev = events[r]
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}", "pid": PID_CPU,
                       "tid": TID_MAIN, "ts": t0, "dur": STEP_US + late})
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": PID_CPU, "tid": TID_MAIN, "ts": t0 + 10,
                       "dur": 50.0})
            launch(r, t0 + 20, t0 + 40, FORWARD_US, "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n", STREAM_COMPUTE)
            gap = (FORWARD_US - 200) / max(ops_per_step, 1)
            for k in range(ops_per_step):
                at = t0 + 100 + k * gap
                ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": PID_CPU, "tid": TID_MAIN, "ts": at,
                           "dur": gap / 2})
                launch(r, at + 1, at + 50, gap / 4, "elementwise_kernel", STREAM_COMPUTE)
            if r == straggler:
                ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": PID_CPU, "tid": TID_MAIN,
                           "ts": t0 + FORWARD_US + 60, "dur": 30.0})
                launch(r, t0 + FORWARD_US + 70, t0 + FORWARD_US + 90, late, "straggler_extra_gemm", STREAM_COMPUTE)
            call = arrive[r] - 60
            fields = {"Seq": s, "Process Group Name": "0", "Collective name": "allreduce", "In msg nelems": NELEMS,
                      "Out msg nelems": NELEMS, "Group size": ranks, "dtype": "Float"}
            ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": PID_CPU, "tid": TID_MAIN,
                       "ts": call, "dur": 50.0, "args": fields})
            ev.append({"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": PID_CPU, "tid": TID_MAIN,
                       "ts": call + 5, "dur": 40.0})
            launch(r, call + 10, arrive[r], durations[-1][r], NCCL_KERNEL, STREAM_NCCL)
            if overlap:  # backward work inside the all-reduce, as long on every rank
                launch(r, call + 30, arrive[r], TRANSFER_US / 2, "backward_gemm", STREAM_COMPUTE)
    traces = {}
    for r in present:
        shift = 1_700_000_000_000_000.0 + r * 3_700.0  # each rank's own clock
        for e in events[r]:
            e["ts"] += shift
        traces[r] = {"schemaVersion": 1, "deviceProperties": [],
                     "distributedInfo": {"backend": "nccl", "rank": r, "world_size": ranks},
                     "traceEvents": sorted(events[r], key=lambda e: e["ts"])}
    return traces, _truth(ranks, present, steps, straggler, durations, arrivals, overlap, late)


def _truth(ranks: int, present: list[int], steps: int, straggler: Optional[int], durations: list[dict[int, float]],
           arrivals: list[dict[int, float]], overlap: bool, late: float) -> dict[str, Any]:
    nbytes = NELEMS * 4
    instances, wait, last_count = [], {r: 0.0 for r in present}, {r: 0 for r in present}
    for s, (by_rank, arrived) in enumerate(zip(durations, arrivals)):
        transfer = min(by_rank.values())
        shortest = [r for r, d in by_rank.items() if d == transfer]
        last = shortest[0] if len(shortest) == 1 else None
        if last is not None:
            last_count[last] += 1
        for r, d in by_rank.items():
            wait[r] += d - transfer
        instances.append({"step": s + 1, "kind": "all_reduce", "seq": s, "transfer_us": transfer, "last_rank": last,
                          "start_us": [arrived[r] for r in present], "dur_us": [by_rank[r] for r in present], "wait_us": [by_rank[r] - transfer for r in present],
                          "bytes": nbytes, "algbw_gbps": nbytes / (transfer * 1000),
                          "busbw_gbps": nbytes / (transfer * 1000) * 2 * (ranks - 1) / ranks})
    per_rank = []
    for r in present:
        comm = sum(d[r] for d in durations)
        compute = steps * FORWARD_US + (steps * late if r == straggler else 0.0)
        overlapped = steps * TRANSFER_US / 2 if overlap else 0.0
        per_rank.append({"rank": r, "comm_us": comm, "compute_us": compute + overlapped,
                         "exposed_comm_us": comm - overlapped, "overlap_pct": 100 * overlapped / comm if comm else None,
                         "wait_us": wait[r], "waited_for": last_count[r]})
    flagged = [straggler] if straggler in present and len(present) > 1 else []
    return {"world_size": ranks, "missing_ranks": [r for r in range(ranks) if r not in present],
            "stragglers": flagged, "instances": instances, "ranks": per_rank}


def write_job(outdir: Path, gz: bool = True, **kwargs: Any) -> tuple[list[Path], dict[str, Any]]:
    """Write one trace per present rank (`rank{r}.<n>.pt.trace.json[.gz]`) into `outdir`; returns the paths."""
    traces, truth = make_job(**kwargs)
    return write_traces(outdir, traces, gz), truth


def write_traces(outdir: Path, traces: dict[int, dict], gz: bool = True) -> list[Path]:
    """Each rank's trace as `rank{r}.<n>.pt.trace.json[.gz]` in `outdir` (gzip without a timestamp: reproducible)."""
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for r, doc in traces.items():
        path = outdir / f"rank{r}.{1_700_000_000_000 + r}.pt.trace.json{'.gz' if gz else ''}"
        text = json.dumps(doc, separators=(",", ":")).encode()
        path.write_bytes(gzip.compress(text, mtime=0) if gz else text)
        paths.append(path)
    return paths


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--straggler", type=int, default=None)
    parser.add_argument("--straggler-ms", type=float, default=20.0)
    parser.add_argument("--missing", type=int, nargs="*", default=[])
    parser.add_argument("--no-overlap", action="store_true")
    parser.add_argument("--ops-per-step", type=int, default=0, help="bulk: small ops and kernels per step")
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--truth", type=Path)
    args = parser.parse_args(argv)
    _, truth = write_job(args.outdir, gz=args.gzip, ranks=args.ranks, steps=args.steps, straggler=args.straggler,
                         straggler_ms=args.straggler_ms, missing=args.missing, overlap=not args.no_overlap,
                         ops_per_step=args.ops_per_step)
    if args.truth:
        job = {"ranks": args.ranks, "steps": args.steps, "straggler": args.straggler, "straggler_ms": args.straggler_ms,
               "missing": args.missing, "overlap": not args.no_overlap, "ops_per_step": args.ops_per_step}
        args.truth.parent.mkdir(parents=True, exist_ok=True)
        args.truth.write_text(json.dumps({"job": job, **truth}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
