"""Every threshold the verdict uses, in one place, each with the reason for its value.

Shares are fractions of the judged time: the profiler steps clipped to the device's window (the whole
device window when the trace has no steps), so start-up before the first step and the tail after the
last one do not vote.
"""
from __future__ import annotations

# --- gap causes and stalls (gpu_idle, dataloader_stalls) ---------------------------------------------------
# A gap is blamed on the DataLoader (or on a collective) when those waits cover at least half of it: the
# majority of the hole, so a wait that merely touches a gap does not take it over.
GAP_COVER_SHARE = 0.5
# A step stalls on the DataLoader when the wait is at least 5% of the step (torch-tb-profiler's overview
# flags input pipelines above a few percent) and the device idles through at least half of the wait.
STALL_MIN_SHARE = 0.05
STALL_IDLE_SHARE = 0.5

# --- what bounds a device -----------------------------------------------------------------------------
# Below this idle share the device is the bottleneck (compute- or communication-bound). Steady training
# steps keep a few percent of bubbles between kernels even when the GPU limits (10-20% idle on a
# well-fed ResNet), so 20% separates "the GPU waits" from "the GPU works" with margin on both sides.
IDLE_BOUND = 0.20
# Within an idle share under this, compute-bound is said with high confidence: nothing else is big
# enough to change the step time by more than a tenth.
IDLE_HIGH_CONFIDENCE = 0.10
# A winner this many times larger than the runner-up (in share) is a high-confidence verdict.
DOMINANCE_HIGH = 2.0
# Launch overhead needs an empty device queue: a launch that waited behind earlier work (queued) had
# the GPU busy, so its cost was hidden. 10 µs is about two kernel launches on current GPUs.
QUEUE_EMPTY_US = 10.0
# ... and kernels that mostly run shorter than the call that launched them.
SHORT_KERNEL_SHARE = 0.5
# A bound must hold in this share of the steps to keep its confidence (steps of one run vote).
STEP_AGREEMENT = 2.0 / 3.0

# --- CPU-only runs --------------------------------------------------------------------------------------
# On a CPU-only run every step is CPU time; the DataLoader (or collectives) bound it when their waits
# take at least half of the step time, more than the model's own ops.
CPU_WAIT_DOMINANT = 0.5
# A DataLoader share of the steps above this is worth naming as the runner-up.
CPU_WAIT_RUNNER_UP = 0.10
# CPU hot spots named in a cpu-only verdict.
HOT_SPOTS = 3

# --- not enough data ------------------------------------------------------------------------------------
# Steps vote only from this many on (two cannot outvote a first-step stall); fewer steps are judged as
# one unit. One step is enough data: an inference profile has one forward or none, and a 4 ms forward of
# 60 kernels shows its bound as well as five do. What makes a trace too small is its device work (below).
MIN_STEPS = 3
# Fewer device activities than this is a micro-test, not a workload (a forward of the smallest model
# launches dozens) ...
MIN_DEVICE_ACTIVITIES = 20
# ... unless they keep the device busy this long: twenty launches cost the host about 2 ms at worst
# (100 µs each), so 10 ms of device work is the device's own time whatever the host does around it
# (a compiled transformer block of 12 GEMM-sized kernels is a real call; 16 toy kernels in 0.15 ms are not).
MIN_DEVICE_BUSY_MS = 10.0
# Fewer CPU ops than this is a fragment of a trace (a CPU-only rank kept 16 events).
MIN_CPU_OPS = 50
# Kineto numbers every CPU event (`Ev Idx`); when fewer than this share of the numbers in their range
# are present, events were sampled or dropped (a 1% sample keeps 2,402 of 238,287). Only ranges of at
# least EV_IDX_MIN_RANGE numbers are judged.
EV_IDX_MIN_COVERAGE = 0.5
EV_IDX_MIN_RANGE = 100
# One non-synchronizing runtime call taking this share of the trace is start-up (CUDA context creation,
# module loading, a first-time launch), not the workload ...
STARTUP_CALL_SHARE = 0.25
# ... unless it waits on the device: busy for at least half of the call, or work launched before the call
# starts only after half of it has passed (queued behind device work, shown or not). Half: the majority of
# the call is spent waiting, so what the call itself does cannot be most of it.
WAIT_BUSY_SHARE = 0.5
# An idle device starts launched work within 5-20 µs (launch->start medians of empty-queue H100, B200 and
# MI300X traces); work held this long after its launch returned, with the device idle, was queued behind
# device work the trace does not show (launched before the file, or on a stream it waited on). 1 ms is
# 50x that latency and above any host jitter.
HELD_MIN_US = 1000.0
# Graph capture covering this share of the judged time: the trace records capture (one-time work whose
# launches never run), not the workload; the majority, so a capture inside a long profile is still judged.
CAPTURE_SHARE = 0.5
# Launch calls whose device work is missing: above this share (with at least MIN_LAUNCHES calls),
# device records were dropped and idle time cannot be trusted.
MISSING_DEVICE_SHARE = 0.5
MIN_LAUNCHES = 20

# --- insights from the tables (analysis/judgement/insights.py): suggestions beside the verdict, never a verdict ------
# An elementwise kernel shorter than this moves a few MB at most: its launch and memory round trip cost as
# much as its arithmetic, which is what fusing it into its neighbours removes. 20 µs is about four launches.
FUSION_SHORT_US = 20.0
# A run of this many such kernels back to back on one stream, launched from one op region, is a candidate:
# fusing three or more saves at least two launches and two memory round trips per occurrence.
FUSION_MIN_RUN = 3
# Named only when the launch calls of all the runs take this share of the judged time: below 1% fusing
# cannot change the step time visibly.
FUSION_MIN_SHARE = 0.01
# The first step is warm-up (allocator growth, cuDNN autotuning, compilation) when it takes at least twice
# the median of the others; steady steps vary by tens of percent, not by 2x.
WARMUP_RATIO = 2.0
WARMUP_MIN_STEPS = 3
# Reserved memory at the allocated peak this many times the allocated bytes means blocks are split and
# stranded: the caching allocator's rounding (2 MiB blocks, 20 MiB segments) keeps it within ~1.2x.
FRAGMENTATION_RATIO = 1.5
# ... and at least this much is stranded: a few hundred MiB is not worth tuning the allocator for.
FRAGMENTATION_MIN_BYTES = 512 << 20
# Tiny batches: most kernels (this share of the launches, at least MIN_LAUNCHES of them) finish before the
# call that launched them returns, so the GPU does less per launch than the host needs to issue it; and
# half of the GPU time is in kernels shorter than the median launch call (the work-carrying kernels are short too).
TINY_BATCH_SHARE = 0.5
# Mixed precision: suggested when Tensor-Core eligible ops (convolutions, matrix multiplies) launch at least a
# fifth of the kernel time: autocast roughly halves their time on Tensor Cores, so the step shrinks by a tenth
# or more. torch-tb-profiler suggested it from any eligible share above 0; 20% keeps the note for runs where
# it can matter (ResNet-50 in fp32 launches 68%).
AMP_ELIGIBLE_MIN_SHARE = 0.2
# ... on a GPU whose Tensor Cores are nearly unused: under 1% of kernel time in Tensor-Core kernels (a stray
# cuBLAS heuristic pick in an fp32 run is not mixed precision).
AMP_TC_MAX_SHARE = 0.01
# Tensor Cores exist from compute capability 7.0 (Volta) on; an older NVIDIA GPU gets no suggestion.
AMP_MIN_COMPUTE_MAJOR = 7

# --- trace health (analysis/judgement/health.py): what makes a figure unreliable, never a verdict ------------------
# A kernel's first launch is a first-call stall when the host issued nothing on its thread for this long
# before it, with the device idle as long: a steady op dispatches in tens of µs, so 1 ms is ~20-50 launches'
# worth of host time spent once (module load, cuBLASLt/cuDNN handle and heuristics set-up, autotuning).
FIRST_CALL_STALL_MS = 1.0
# with_stack=True records every Python call; from one Python event per CPU op on, the recording cost
# (a few µs per event) is of the order of the op dispatch itself, so host time is noticeably inflated.
PYTHON_STACK_RATIO = 1.0

# --- trace counters (counters.py) ------------------------------------------------------------------------
# A CUDA stream holds at most 1024 launched-but-not-started operations (HTA's CUDA_MAX_LAUNCH_QUEUE_PER_STREAM);
# at that queue length the next launch call blocks the CPU until the GPU starts one, so time spent there is
# time the host waited on a full queue.
QUEUE_FULL = 1024
