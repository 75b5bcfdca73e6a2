"""Insights from the tables: patterns worth a suggestion beside the verdict, each with its evidence.

They add to the verdict's "what to do next"; they never change the verdict. Every threshold is in
`thresholds.py` with its reason.

- fusion: runs of short elementwise kernels back to back on one stream, launched from one op region
  (the innermost `record_function` annotation around the launch, else the outermost op), and the launch
  calls they cost;
- warm-up: the first step much slower than the median of the others;
- fragmentation: reserved memory far above allocated at the allocated peak;
- tiny-batch: most kernels shorter than the call that launched them, the ones that carry the GPU time included;
- mixed-precision: Tensor-Core eligible ops (fp32 convolutions, matrix multiplies) launch much of the kernel
  time while almost none of it runs on Tensor Cores (`mixed_precision`, from the tables: the report adds it).
"""
from __future__ import annotations

import re
from typing import Any, Optional

import msgspec
import numpy as np

from ...trace.kinds import Kind, LaneKind
from ...trace.model import TraceModel, unique
from ..core import thresholds as T
from ..core.selectors import OpIndex, graph_launch_mask

ELEMENTWISE = re.compile(r"elementwise_kernel")  # at::native's vectorized_/unrolled_/plain elementwise kernels


class Insight(msgspec.Struct, frozen=True):
    """One pattern found: what it is, the figures that show it, and one suggestion."""

    kind: str  # fusion, warm-up, fragmentation, tiny-batch, mixed-precision
    evidence: str
    suggestion: str
    figures: dict[str, Any] = msgspec.field(default_factory=dict)


def insights(model: TraceModel, analysis: Any, ops: Optional[OpIndex] = None) -> tuple[Insight, ...]:
    """Every insight that applies to a trace (see the module docstring), in a fixed order."""
    found = [fusion_candidates(model, analysis.verdict.judged_ns, ops or OpIndex(model)),
             warm_up(model, analysis.steps), fragmentation(analysis.memory), tiny_batch(model, analysis.launch)]
    return tuple(f for f in found if f is not None)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def fusion_candidates(model: TraceModel, judged_ns: int, ops: OpIndex) -> Optional[Insight]:
    """Runs of FUSION_MIN_RUN or more short elementwise kernels, back to back on a stream, from one region."""
    act = np.flatnonzero((model.kind == Kind.KERNEL) & model.on_lanes(LaneKind.GPU))  # (lane, ts)
    ids = model.name_ids_where(lambda n: ELEMENTWISE.search(n) is not None)
    launch = model.launch_idx[act]
    ok = model.name_in(ids, act) & (model.dur_ns[act] <= T.FUSION_SHORT_US * 1e3) & (launch >= 0) & ~graph_launch_mask(model, launch)
    if np.count_nonzero(ok) < T.FUSION_MIN_RUN:
        return None
    region = np.full(act.size, -1, np.int64)
    sel = np.flatnonzero(ok)
    lane, t = model.lane[launch[sel]], model.ts_ns[launch[sel]]
    _, annotation, _ = ops.culprit_at(lane, t)
    region[sel] = np.where(annotation >= 0, annotation, ops.outermost_at(lane, t))
    ok &= region >= 0
    same = np.concatenate(([False], ok[1:] & ok[:-1] & (region[1:] == region[:-1]) &
                           (model.lane[act[1:]] == model.lane[act[:-1]])))
    run_id = np.cumsum(~same) - 1
    size = np.bincount(run_id[ok], minlength=int(run_id[-1]) + 1)
    in_run = ok & (size[run_id] >= T.FUSION_MIN_RUN)
    if not in_run.any():
        return None
    runs = unique(run_id[in_run])
    kernels = int(np.count_nonzero(in_run))
    # A launch call blocked behind a full queue takes milliseconds and costs nothing when the GPU is saturated:
    # an unblocked call (the fastest tenth of all the trace's launch calls) is what each saved launch costs.
    call_ns = float(np.percentile(model.dur_ns[unique(model.launch_idx[model.launch_idx >= 0])], 10))
    saved_ns = (kernels - runs.size) * call_ns
    if saved_ns < T.FUSION_MIN_SHARE * max(judged_ns, 1):
        return None
    names, per_name = np.unique(model.name_id[region[in_run]], return_counts=True)
    top = model.shown_names[int(names[np.argmax(per_name)])]
    kernel_ns = int(model.dur_ns[act[in_run]].sum())
    return Insight("fusion", f"{runs.size} runs of short elementwise kernels ({kernels} kernels, {_ms(kernel_ns)} of GPU "
                             f"time) ran back to back from one op region, most in {top!r}; one kernel per run would save "
                             f"{kernels - runs.size} launch calls, about {_ms(saved_ns)} at {call_ns / 1e3:.1f} µs per "
                             f"unblocked call",
                   "fuse them: torch.compile the region (or use fused/foreach variants such as "
                   "torch.optim's foreach=True/fused=True and fused activations) so one kernel replaces each run",
                   {"runs": int(runs.size), "kernels": kernels, "kernel_us": kernel_ns / 1e3,
                    "launch_call_us": call_ns / 1e3, "saved_launch_us": saved_ns / 1e3, "top_region": top})


def warm_up(model: TraceModel, steps: Any) -> Optional[Insight]:
    """The first step takes WARMUP_RATIO times the median of the others or more."""
    if steps.count < T.WARMUP_MIN_STEPS:
        return None
    dur = steps.end_ns - steps.start_ns
    median = float(np.median(dur[1:]))
    if median <= 0 or dur[0] < T.WARMUP_RATIO * median:
        return None
    name = model.shown_names[int(steps.name_id[0])]
    return Insight("warm-up", f"the first step ({name}) took {_ms(dur[0])}, {dur[0] / median:.1f}x the median "
                              f"{_ms(median)} of the other {steps.count - 1} steps",
                   "profile after warm-up: torch.profiler.schedule(wait=1, warmup=1, active=3) (and run torch.compile's "
                   "first iterations before profiling), so one-time costs do not count as step time",
                   {"first_us": int(dur[0]) / 1e3, "median_us": median / 1e3, "ratio": round(float(dur[0] / median), 3)})


def fragmentation(memory: tuple) -> Optional[Insight]:
    """Reserved bytes at the allocated peak FRAGMENTATION_RATIO times the allocated bytes or more (GPU devices)."""
    worst = None
    for series in memory:
        if series.device == "cpu" or series.peak_reserved_bytes is None or series.relative or series.ts_ns.size == 0:
            continue
        at = int(np.argmax(series.allocated_bytes))
        allocated, reserved = int(series.allocated_bytes[at]), int(series.reserved_bytes[at])
        if allocated > 0 and reserved >= T.FRAGMENTATION_RATIO * allocated and \
                reserved - allocated >= T.FRAGMENTATION_MIN_BYTES:
            if worst is None or reserved - allocated > worst[2] - worst[1]:
                worst = (series.device, allocated, reserved)
    if worst is None:
        return None
    device, allocated, reserved = worst
    gib = 1 << 30
    return Insight("fragmentation", f"{device}: at the allocated peak ({allocated / gib:.2f} GiB) the caching allocator "
                                    f"held {reserved / gib:.2f} GiB reserved, {reserved / allocated:.1f}x",
                   "reduce fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or max_split_size_mb), "
                   f"and keep tensor shapes stable between steps; it saves memory, not time: up to "
                   f"{(reserved - allocated) / gib:.2f} GiB of the device freed at the peak",
                   {"device": device, "allocated_bytes": allocated, "reserved_bytes": reserved,
                    "frees_bytes": reserved - allocated})


def tiny_batch(model: TraceModel, launch: Any) -> Optional[Insight]:
    """Most kernels (TINY_BATCH_SHARE of at least MIN_LAUNCHES launches) run shorter than their launch call."""
    if launch.pairs < T.MIN_LAUNCHES:
        return None
    short = int(np.count_nonzero(launch.short))
    if short < T.TINY_BATCH_SHARE * launch.pairs:
        return None
    kernel_ns = np.sort(model.dur_ns[launch.gpu_row])
    call_us = float(np.median(model.dur_ns[launch.launch_row])) / 1e3
    # Half of the GPU time is in kernels at most this long: with a healthy batch the big kernels carry the time
    # (a ResNet's optimizer adds thousands of tiny ones that do not), with a tiny one they are short too.
    cumulative = np.cumsum(kernel_ns)
    weighted_us = float(kernel_ns[np.searchsorted(cumulative, cumulative[-1] / 2)]) / 1e3 if cumulative[-1] else 0.0
    if weighted_us >= call_us:
        return None
    kernel_us = float(np.median(kernel_ns)) / 1e3
    return Insight("tiny-batch", f"{short} of {launch.pairs} kernels ({100 * short / launch.pairs:.0f}%) ran shorter than "
                                 f"the call that launched them, and half of the GPU time is in kernels of "
                                 f"{weighted_us:.1f} µs or less (median launch call {call_us:.1f} µs)",
                   "give each kernel more work: raise the batch size (gradient accumulation keeps the optimizer "
                   "batch), or replay the step with CUDA graphs so launches stop costing host time",
                   {"short_kernels": short, "launches": launch.pairs, "median_kernel_us": kernel_us,
                    "time_weighted_median_kernel_us": weighted_us,
                    "median_launch_call_us": call_us})


def mixed_precision(eligible_share: float, eligible_ops: int, tensor_core_share: float,
                    compute_majors: list[int]) -> Optional[Insight]:
    """Eligible ops launch AMP_ELIGIBLE_MIN_SHARE of the kernel time or more, Tensor-Core kernels under
    AMP_TC_MAX_SHARE of it, on a GPU with Tensor Cores (compute capability 7.0 or later, when the trace says).

    Args:
        eligible_share: kernel time launched by Tensor-Core eligible ops over the kernel time ops launched
            (`tensor_cores.TcEligibility.share`).
        eligible_ops: distinct eligible op names that launched kernels.
        tensor_core_share: Tensor-Core kernel time over all kernel time.
        compute_majors: the compute capability majors `deviceProperties` gives (empty: unknown).
    """
    if eligible_share < T.AMP_ELIGIBLE_MIN_SHARE or tensor_core_share > T.AMP_TC_MAX_SHARE:
        return None
    if compute_majors and max(compute_majors) < T.AMP_MIN_COMPUTE_MAJOR:
        return None
    return Insight("mixed-precision", f"kernels with {100 * eligible_share:.0f}% of the ops' kernel time are launched by "
                                      f"Tensor-Core eligible ops ({eligible_ops} kinds of convolution or matrix multiply), "
                                      f"but {100 * tensor_core_share:.1f}% of the kernel time ran on Tensor Cores",
                   AUTOCAST,
                   {"eligible_kernel_pct": 100 * eligible_share, "eligible_ops": eligible_ops,
                    "tensor_core_kernel_pct": 100 * tensor_core_share})


AUTOCAST = ("enable automatic mixed precision: run the forward pass and loss under "
            "torch.autocast(device_type='cuda', dtype=torch.bfloat16) (or float16 with torch.amp.GradScaler), "
            "so convolutions and matrix multiplies run on Tensor Cores")


def with_roofline(amp: Optional[Insight], figures: Optional[dict[str, Any]]) -> Optional[Insight]:
    """The mixed-precision insight with the roofline's figures (`roofline.precision.amp_figures`): the fp32/tf32
    matrix work's share of the kernel time and of its roof, and the bf16 roof it would run against. Where the
    tables' rule found nothing (TF32 already runs fp32 work on Tensor Cores, at half the bf16 rate), the roofline's
    own finding is the insight, when that work holds AMP_ELIGIBLE_MIN_SHARE of the modelled kernel time."""
    if figures is None:
        return amp
    words = (f"fp32 GEMMs, convolutions and attention ({figures['wide_dtype']}) take "
             f"{100 * figures['wide_share']:.0f}% of the modelled kernel time and run at "
             f"{figures['wide_roof_pct']:.0f}% of their {figures['wide_dtype']} roof "
             f"({figures['wide_roof_tflops']:.4g} TFLOP/s); in {figures['low_dtype']} the roof is "
             f"{figures['low_roof_tflops']:.4g} TFLOP/s and they move half the bytes")
    if amp is not None:
        return Insight(amp.kind, f"{amp.evidence}; {words}", amp.suggestion, {**amp.figures, **figures})
    if figures["wide_share"] < T.AMP_ELIGIBLE_MIN_SHARE or figures["low_roof_tflops"] <= figures["wide_roof_tflops"]:
        return None
    return Insight("mixed-precision", words, AUTOCAST, dict(figures))


def insight_entries(found: tuple[Insight, ...]) -> list[dict[str, Any]]:
    """Insights as JSON."""
    return [{"kind": i.kind, "evidence": i.evidence, "suggestion": i.suggestion, "figures": dict(i.figures)} for i in found]
