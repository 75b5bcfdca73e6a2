"""The verdict's words: evidence built only from the figures that decided it, and one suggestion.

Each sentence quotes the share that made the bound win, so the evidence cannot contradict the verdict.
CPU-only runs are judged here too: what bounds the CPU when there is no device work.
"""
from __future__ import annotations

from typing import Optional

import msgspec

from ..core import thresholds as T
from .verdict import Verdict


class Facts(msgspec.Struct, frozen=True):
    """The figures the sentences quote, gathered once by the report facade."""

    device: int
    judged_ms: float
    steps: int
    stalled: int
    host_culprit: Optional[str]
    sync_culprit: Optional[str]
    short_kernels: int
    launches: int
    queued_p50_us: Optional[float]
    uses_graphs: bool
    comm_ms: float
    exposed_comm_ms: float
    overlap_pct: Optional[float]
    categories: dict  # breakdown category -> share of the judged time


def pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def explain(facts: Facts, bound: str, shares: dict) -> tuple[str, str]:
    """(evidence, suggestion) for a device verdict."""
    scope = f"{facts.steps} step{'s' * (facts.steps != 1)}" if facts.steps else "the device window"
    head = f"device {facts.device}, {facts.judged_ms:.1f} ms judged ({scope})"
    cat = facts.categories
    busy = cat.get("compute", 0.0) + cat.get("exposed_comm", 0.0)
    graph = f" ({pct(cat['graph'])} of the time in bubbles inside CUDA-graph replays)" if cat.get("graph", 0.0) >= 0.01 else ""
    waits = f", and the host waits on collectives {pct(cat['comm'])} more" if cat.get("comm", 0.0) >= 0.001 else ""
    text = {
        "compute-bound": f"busy {pct(busy)} of the time"
                         + (f" ({pct(cat.get('compute', 0.0))} compute, {pct(cat.get('exposed_comm', 0.0))} communication "
                            "not hidden by compute)" if facts.comm_ms else "") + f"; idle {pct(1 - busy)}{graph}",
        "communication-bound": f"communication not hidden by compute takes {pct(cat.get('exposed_comm', 0.0))} of the time"
                               f"{waits} (collectives {facts.comm_ms:.1f} ms, {_overlap(facts)} overlapped with compute), "
                               f"against {pct(shares['compute-bound'])} compute",
        "dataloader-bound": f"idle {pct(shares['dataloader-bound'])} of the time while the DataLoader is fetched; "
                            f"{facts.stalled} of {facts.steps} steps stalled",
        "sync-bound": f"idle {pct(shares['sync-bound'])} of the time after blocking synchronizations drained the device"
                      + (f" (mostly {facts.sync_culprit})" if facts.sync_culprit else ""),
        "host-bound": f"idle {pct(shares['host-bound'])} of the time waiting for the CPU to launch the next work"
                      + (f"; top culprit: {facts.host_culprit}" if facts.host_culprit else ""),
        "launch-overhead-bound": f"idle {pct(shares['launch-overhead-bound'])} of the time between launches: "
                                 f"{facts.short_kernels} of {facts.launches} kernels ran shorter than their launch call "
                                 f"and the queue was empty at launch (queued p50 {facts.queued_p50_us or 0:.1f} µs)",
    }[bound]
    return f"{head}: {text}", _suggestion(bound, facts)


def with_next_step(suggestion: str, runner_up: Optional[str], runner_share: Optional[float], facts: Facts) -> str:
    """The suggestion, followed by the runner-up's when it holds a tenth of the time or more."""
    if runner_up not in _SUGGESTS or runner_share is None or runner_share < NEXT_STEP_SHARE:
        return suggestion
    return f"{suggestion}. Next, {runner_up} ({pct(runner_share)}): {_suggestion(runner_up, facts)}"


NEXT_STEP_SHARE = 0.10  # a runner-up this large is worth its own advice


def _overlap(facts: Facts) -> str:
    return f"{facts.overlap_pct:.0f}%" if facts.overlap_pct is not None else "none"


_SUGGESTS = ("compute-bound", "communication-bound", "dataloader-bound", "sync-bound", "host-bound", "launch-overhead-bound")


def _suggestion(bound: str, facts: Facts) -> str:
    if bound == "launch-overhead-bound":
        if facts.uses_graphs:  # already replaying graphs: never advise them again
            return ("fewer, larger launches: fuse small ops with torch.compile, raise the batch size, and move "
                    "the ops still launched one by one out of the hot loop")
        return ("amortize kernel launches: capture the step with CUDA graphs (torch.cuda.graphs or "
                "torch.compile(mode='reduce-overhead')), fuse small ops, or use bigger batches")
    return {
        "compute-bound": "speed up the kernels themselves: mixed precision (torch.autocast), channels_last, "
                         "torch.compile fusion, or a larger GPU",
        "communication-bound": "hide communication under compute: issue collectives earlier and asynchronously (DDP "
                               "bucket_cap_mb, FSDP prefetch), compress or shrink what is exchanged, and check the "
                               "ranks for a straggler that the others wait for",
        "dataloader-bound": "feed the GPU faster: raise DataLoader num_workers, set pin_memory=True, prefetch_factor >= 2 "
                            "and persistent_workers=True, and move heavy transforms off the main process",
        "sync-bound": "remove the host synchronization" + (f" ({facts.sync_culprit})" if facts.sync_culprit else "")
                      + ": avoid .item(), .cpu(), print of CUDA tensors and torch.cuda.synchronize() inside the step; "
                        "use non_blocking copies",
        "host-bound": "the CPU issues work too late: move CPU-side work (indexing, Python loops, data preparation) "
                      "out of the step or overlap it with GPU work",
    }[bound]


class CpuFacts(msgspec.Struct, frozen=True):
    """What a CPU-only verdict quotes."""

    steps: int
    step_ms: float
    dataloader_share: float
    collective_share: float  # exposed: collectives no CPU operator hid
    stalled_steps: int  # steps whose DataLoader wait is at least CPU_WAIT_DOMINANT of the step
    hot_spots: tuple[tuple[str, int], ...]
    collective_total_share: float = 0.0  # the collectives' whole union, hidden or not


def cpu_verdict(facts: CpuFacts) -> Verdict:
    """What bounds a run without device activity: its DataLoader, its collectives, or its own ops."""
    scope = f"{facts.steps} steps, {facts.step_ms:.1f} ms" if facts.steps else f"{facts.step_ms:.1f} ms, no steps"
    hot = ", ".join(f"{name} {ns / 1e6:.1f} ms" for name, ns in facts.hot_spots) or "no CPU ops"
    shares = {"dataloader-bound": facts.dataloader_share, "communication-bound": facts.collective_share}
    if facts.dataloader_share >= T.CPU_WAIT_DOMINANT:
        return Verdict("dataloader-bound", f"no device activity ({scope}): DataLoader waits take "
                       f"{pct(facts.dataloader_share)} of the step time; {facts.stalled_steps} of {facts.steps} steps "
                       f"mostly wait for data", _suggestion("dataloader-bound", _NO_FACTS),
                       confidence="high" if facts.dataloader_share >= 0.75 else "medium", runner_up="cpu-only",
                       runner_up_share=1 - facts.dataloader_share, share=facts.dataloader_share, shares=shares)
    if facts.collective_share >= T.CPU_WAIT_DOMINANT:
        return Verdict("communication-bound", f"no device activity ({scope}): the host waits on collectives for "
                       f"{pct(facts.collective_share)} of the step time (they run {pct(facts.collective_total_share)} "
                       f"of it; the rest is hidden behind the host's own ops)", _suggestion("communication-bound", _NO_FACTS),
                       confidence="high" if facts.collective_share >= 0.75 else "medium", runner_up="cpu-only",
                       runner_up_share=1 - facts.collective_share, share=facts.collective_share, shares=shares)
    waits = max(facts.dataloader_share, facts.collective_share)
    runner, runner_share = _cpu_runner_up(facts)
    return Verdict("cpu-only", f"no device activity ({scope}): the CPU's own ops bound the run; most self time in "
                   f"{hot}; DataLoader waits {pct(facts.dataloader_share)} of the step time"
                   + (f"; the host waits on collectives for {pct(facts.collective_share)} of it (they run "
                      f"{pct(facts.collective_total_share)}, mostly behind its own ops)" if facts.collective_total_share else ""),
                   "speed up the hottest CPU ops (above): batch the work, torch.compile, fewer Python-level loops, "
                   "set torch.set_num_threads to the free cores; or run the model on a GPU",
                   confidence="high" if waits < 0.25 else "medium", runner_up=runner, runner_up_share=runner_share,
                   share=1 - waits, shares=shares)


def _cpu_runner_up(facts: CpuFacts) -> tuple[Optional[str], Optional[float]]:
    if facts.dataloader_share >= T.CPU_WAIT_RUNNER_UP and facts.dataloader_share >= facts.collective_share:
        return "dataloader-bound", facts.dataloader_share
    if facts.collective_share >= T.CPU_WAIT_RUNNER_UP:
        return "communication-bound", facts.collective_share
    if facts.steps < T.MIN_STEPS:
        return "not enough data", None
    return None, None


_NO_FACTS = Facts(device=-1, judged_ms=0.0, steps=0, stalled=0, host_culprit=None, sync_culprit=None, short_kernels=0,
                  launches=0, queued_p50_us=None, uses_graphs=False, comm_ms=0.0, exposed_comm_ms=0.0, overlap_pct=None,
                  categories={})
