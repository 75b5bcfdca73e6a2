"""The plain verdict: what bounds this trace, the figures that show it, and one thing to change."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .dataloader_stalls import Steps
from .gpu_idle import CAUSE_NAMES, GpuIdle
from .launch_offsets import LaunchOffsets

IDLE_BOUND_PCT = 20.0  # below this much idle time on the busiest device, the GPU is the bottleneck
SHORT_KERNEL_SHARE = 0.5  # host-bound with mostly sub-launch-time kernels is launch overhead

BOUND_OF_CAUSE = {"dataloader": "dataloader-bound", "sync": "sync-bound", "host": "host-bound",
                  "launch": "launch-overhead-bound", "unlinked": "host-bound"}


@dataclass(frozen=True)
class Verdict:
    """`bound` is one of cpu-only, dataloader-bound, host-bound, launch-overhead-bound, sync-bound, compute-bound."""

    bound: str
    evidence: str
    suggestion: str


def verdict(idle: GpuIdle, steps: Steps, launch: LaunchOffsets, sync_culprit: Optional[str] = None,
            host_culprit: Optional[str] = None) -> Verdict:
    """Decide what bounds the run, in the order the definitions give.

    Args:
        idle: per-device idle analysis.
        steps: per-step breakdown.
        launch: launch offsets.
        sync_culprit: "call in op" of the synchronization behind most sync idle time, if any.
        host_culprit: the CPU op behind most host idle time, if any.
    """
    device = idle.busiest()
    if device is None:
        return Verdict("cpu-only", "no GPU kernel, memcpy or memset in the trace",
                       "nothing to do on the GPU side; profile with ProfilerActivity.CUDA to see GPU work")
    stalled = int(np.count_nonzero(steps.stalled))
    if steps.count and 2 * stalled >= steps.count:
        return _dataloader(steps, stalled)
    by_cause = device.idle_by_cause_ns()
    head = f"GPU {device.device} idle {device.idle_pct:.1f}% of its {device.window_ns / 1e6:.1f} ms window"
    if device.idle_pct < IDLE_BOUND_PCT:
        return Verdict("compute-bound", f"{head}; the GPU is busy most of the time",
                       "speed up the kernels themselves: mixed precision (torch.autocast), channels_last, "
                       "torch.compile fusion, or a larger GPU")
    cause = max(CAUSE_NAMES, key=lambda c: by_cause[c])
    share = 100.0 * by_cause[cause] / max(device.idle_ns, 1)
    evidence = f"{head}; {share:.0f}% of the idle time is '{cause}' gaps"
    kernels = int(np.count_nonzero(launch.short))
    if cause in ("host", "unlinked") and launch.pairs and kernels >= SHORT_KERNEL_SHARE * launch.pairs:
        return _launch_overhead(f"{evidence}; {kernels} of {launch.pairs} kernels ran shorter than their launch call")
    if cause == "launch":
        return _launch_overhead(evidence)
    if cause == "dataloader":
        return _dataloader(steps, stalled, evidence)
    if cause == "sync":
        where = f" ({sync_culprit})" if sync_culprit else ""
        return Verdict("sync-bound", evidence, f"remove the host synchronization{where}: avoid .item(), .cpu(), "
                       "print of CUDA tensors and torch.cuda.synchronize() inside the step; use non_blocking copies")
    where = f"; the top culprit is {host_culprit}" if host_culprit else ""
    return Verdict(BOUND_OF_CAUSE[cause], evidence + where,
                   "the CPU issues work too late: move CPU-side work (indexing, Python loops, data preparation) "
                   "out of the step or overlap it with GPU work")


def _dataloader(steps: Steps, stalled: int, evidence: str = "") -> Verdict:
    share = float(np.sum(steps.dataloader_ns)) / max(float(np.sum(steps.end_ns - steps.start_ns)), 1.0)
    text = evidence or f"{stalled} of {steps.count} steps stalled waiting for the DataLoader"
    return Verdict("dataloader-bound", f"{text}; DataLoader waits take {100 * share:.1f}% of step time",
                   "feed the GPU faster: raise DataLoader num_workers, set pin_memory=True, prefetch_factor >= 2 "
                   "and persistent_workers=True, and move heavy transforms off the main process")


def _launch_overhead(evidence: str) -> Verdict:
    return Verdict("launch-overhead-bound", evidence,
                   "amortize kernel launches: capture the step with CUDA graphs (torch.cuda.graphs or "
                   "torch.compile(mode='reduce-overhead')), fuse small ops, or use bigger batches")
