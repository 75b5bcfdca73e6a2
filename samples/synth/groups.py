"""A synthetic 2-D parallel NCCL job with planted truth: tensor-parallel groups inside data-parallel ones, whose
collectives interleave differently on different ranks.

Four ranks on a 2 x 2 mesh: `tp` groups {0, 1} and {2, 3} (process group names "1" and "2"), `dp` groups {0, 2}
and {1, 3} ("3" and "4"), as `torch.distributed.device_mesh` numbers them after the default group ("0"). Every step
each rank all-gathers its parameter shard over `dp` (FSDP's unshard), all-reduces twice over `tp` (the row- and
column-parallel layers), and all-reduces its gradients over `dp` (HSDP's replicate). Ranks 0 and 1 reduce their
gradients after the `tp` calls, ranks 2 and 3 before them (their backward reaches that bucket first): so the k-th
all_reduce of a step is a `tp` call on one rank and a `dp` call on another. Matched by (step, type, ordinal), as
the ranks view did before the 2026 fields, those calls pair across groups; matched by (group, `Seq`), none do.

Every collective is `record_param_comms` > `nccl:<kind>` > `cudaLaunchKernel`, carrying what Kineto's
`output_json.cpp` writes (libkineto at 114171df, 2026-08-20: `appendCollectiveArgs`): `Collective name`, `In msg
nelems`, `Out msg nelems`, `Group size`, `dtype`, `Process Group Name`, `Process Group Description`, `Process
Group Ranks` (a quoted string), `Seq` (per group, from 0). The kernel of a call starts when its rank arrives and
ends when the group's last rank has arrived plus the transfer time, so an early rank waits on its device.
Rank 0 is slow in its `tp` calls (`tp_late_ms` of extra compute before each), so its `tp` partner waits and the
`dp` groups do not. Each rank writes on its own clock (an offset per rank).

The truth is computed from this construction, not by the analysis; `tests/test_synthetic_multirank.py` compares.

Command line (from the repo root)::

    python samples/synth/groups.py OUTDIR [--steps 3] [--tp-late-ms 2] [--gzip] [--truth FILE]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

try:
    from .multirank import write_traces
except ImportError:  # run as a script: python samples/synth/groups.py
    from multirank import write_traces

STEP_US = 30_000.0
CALL_GAP_US = 4_000.0  # compute between one rank's calls
TRANSFER_US = {"all_gather": 900.0, "all_reduce": 600.0}
NELEMS = 1 << 22
PID_CPU, TID_MAIN, STREAM_COMPUTE, STREAM_NCCL = 1000, 1000, 7, 20
TP = {0: ("1", "[0, 1]"), 1: ("1", "[0, 1]"), 2: ("2", "[2, 3]"), 3: ("2", "[2, 3]")}
DP = {0: ("3", "[0, 2]"), 1: ("4", "[1, 3]"), 2: ("3", "[0, 2]"), 3: ("4", "[1, 3]")}
KERNELS = {"all_gather": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
           "all_reduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"}


def _plan(rank: int) -> list[tuple[str, str]]:
    """A rank's calls of one step, in its order: (mesh dimension, collective)."""
    tp = [("tp", "all_reduce"), ("tp", "all_reduce")]
    grads = [("dp", "all_reduce")]
    return [("dp", "all_gather")] + (tp + grads if rank < 2 else grads + tp)


def make_job(steps: int = 3, tp_late_ms: float = 2.0) -> tuple[dict[int, dict], dict[str, Any]]:
    """(traces by rank, truth)."""
    late = tp_late_ms * 1000.0
    seq = {name: 0 for name in ("1", "2", "3", "4")}
    arrive: dict[tuple, dict[int, float]] = {}  # (group, seq) -> rank -> arrival (kernel start, job time)
    order: dict[int, list[tuple]] = {r: [] for r in range(4)}  # per rank: (step, dim, kind, group, seq, ordinal)
    for s in range(steps):
        for r in range(4):
            t, ordinals = s * STEP_US + 500.0, {}
            for dim, kind in _plan(r):
                t += CALL_GAP_US + (late if dim == "tp" and r == 0 else 0.0)
                group = (TP if dim == "tp" else DP)[r][0]
                ordinal = ordinals.get(kind, 0)
                ordinals[kind] = ordinal + 1
                order[r].append((s, dim, kind, group, ordinal))
                arrive.setdefault((group, kind, s, dim, ordinal if dim == "tp" else 0), {})[r] = t
    # sequence numbers: each group numbers its calls in the order its ranks make them (the same on its ranks)
    numbered: dict[tuple, int] = {}
    for key in sorted(arrive, key=lambda k: (k[2], min(arrive[k].values()))):
        group = key[0]
        numbered[key] = seq[group]
        seq[group] += 1
    ends = {key: max(by_rank.values()) + TRANSFER_US[key[1]] for key, by_rank in arrive.items()}
    traces = {}
    for r in range(4):
        events, corr = [], 0
        for s in range(steps):
            events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}", "pid": PID_CPU,
                           "tid": TID_MAIN, "ts": s * STEP_US, "dur": STEP_US - 10})
        for s, dim, kind, group, ordinal in order[r]:
            key = (group, kind, s, dim, ordinal if dim == "tp" else 0)
            at, end = arrive[key][r], ends[key]
            desc, members = dim, (TP if dim == "tp" else DP)[r][1]
            fields = {"Collective name": kind.replace("_", ""), "In msg nelems": NELEMS,
                      "Out msg nelems": NELEMS * (2 if kind == "all_gather" else 1), "Group size": 2, "dtype": "BFloat16",
                      "Process Group Name": group, "Process Group Description": desc, "Process Group Ranks": members,
                      "Seq": numbered[key]}
            corr += 1
            events += [{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": PID_CPU, "tid": TID_MAIN,
                        "ts": at - 60, "dur": 50.0, "args": fields},
                       {"ph": "X", "cat": "user_annotation", "name": f"nccl:{kind}", "pid": PID_CPU, "tid": TID_MAIN,
                        "ts": at - 55, "dur": 40.0},
                       {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID_CPU, "tid": TID_MAIN,
                        "ts": at - 50, "dur": 5.0, "args": {"correlation": corr}},
                       {"ph": "X", "cat": "kernel", "name": KERNELS[kind], "pid": 0, "tid": STREAM_NCCL, "ts": at,
                        "dur": end - at, "args": {"device": 0, "stream": STREAM_NCCL, "correlation": corr}}]
        shift = 1_700_000_000_000_000.0 + r * 2_900.0  # each rank's own clock
        for e in events:
            e["ts"] += shift
        traces[r] = {"schemaVersion": 1, "deviceProperties": [],
                     "distributedInfo": {"backend": "nccl", "rank": r, "world_size": 4},
                     "traceEvents": sorted(events, key=lambda e: e["ts"])}
    return traces, _truth(order, arrive, ends, numbered)


def _truth(order: dict[int, list[tuple]], arrive: dict, ends: dict, numbered: dict) -> dict[str, Any]:
    """Per group: its description, ranks, instances and each rank's wait (its kernel's duration less the group's
    shortest); how many (step, type, ordinal) instances pair calls of two groups."""
    groups: dict[str, Any] = {}
    for key, by_rank in arrive.items():
        group, kind, _s, dim, _o = key
        entry = groups.setdefault(group, {"desc": dim, "ranks": sorted(by_rank), "instances": 0,
                                          "wait_us": {str(r): 0.0 for r in sorted(by_rank)}, "seqs": []})
        durations = {r: ends[key] - t for r, t in by_rank.items()}
        shortest = min(durations.values())
        entry["instances"] += 1
        entry["seqs"].append(numbered[key])
        for r, d in durations.items():
            entry["wait_us"][str(r)] += d - shortest
    for entry in groups.values():
        entry["seqs"].sort()
    by_ordinal: dict[tuple, set] = {}
    for calls in order.values():
        counts: dict[tuple, int] = {}
        for s, dim, kind, _group, _o in calls:
            k = counts.get((s, kind), 0)
            counts[(s, kind)] = k + 1
            by_ordinal.setdefault((s, kind, k), set()).add(dim)  # a pairing across mesh dimensions is wrong
    return {"world_size": 4, "groups": groups,
            "ordinal_instances_mixing_groups": sum(len(dims) > 1 for dims in by_ordinal.values())}


def write_job(outdir: Path, gz: bool = True, **kwargs: Any) -> tuple[list[Path], dict[str, Any]]:
    """Write one trace per rank (`rank{r}.<n>.pt.trace.json[.gz]`) into `outdir`; returns the paths and the truth."""
    traces, truth = make_job(**kwargs)
    return write_traces(outdir, traces, gz), truth


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--tp-late-ms", type=float, default=2.0)
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--truth", type=Path, default=None)
    args = parser.parse_args(argv)
    paths, truth = write_job(args.outdir, gz=args.gzip, steps=args.steps, tp_late_ms=args.tp_late_ms)
    if args.truth is not None:
        args.truth.parent.mkdir(parents=True, exist_ok=True)
        job = {"steps": args.steps, "tp_late_ms": args.tp_late_ms}
        args.truth.write_text(json.dumps({**truth, "job": job}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(paths)} ranks to {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
