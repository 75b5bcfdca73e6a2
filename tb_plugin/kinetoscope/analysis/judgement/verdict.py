"""The verdict: what bounds this trace, how sure we are, what comes second, and one thing to change.

Every nanosecond of the judged time (steps clipped to the device window, see `breakdown`) goes to one
group, so the groups' shares add up to 100%:

    compute-bound          compute kernels, memcpy/memset, bubbles inside replayed CUDA graphs, and
                           (outside the launch regime) `launch` gaps: work queued in time that the
                           device started late
    communication-bound    communication no compute hides (exposed), and idle waiting on collectives
    dataloader-bound       idle while the DataLoader is fetched
    sync-bound             idle after a blocking synchronization drained the device
    host-bound             idle because the CPU had not launched the next work yet (or its launch is
                           not in the trace)
    launch-overhead-bound  only in the launch regime (the device queue is empty at launch and most
                           kernels run shorter than their launch call, so the launch calls themselves
                           are the cost): the `launch` gaps and the part of the host gaps the host
                           spends inside launch calls; the rest of the host gaps stays host-bound (a
                           host in Python between tiny kernels is host-bound, however short they are)

The rule: when the host-side groups (dataloader, sync, host, launch-overhead) leave the device idle less
than IDLE_BOUND of the time, the device is the limit: compute-bound or communication-bound, whichever is
larger. Otherwise the largest group other than compute wins. With MIN_STEPS steps or more each step is
judged by that rule and the steps vote; a verdict that fewer than STEP_AGREEMENT of the steps share
loses one level of confidence.

Before any of it, `sufficiency` can answer "not enough data"; without device activity the CPU itself is
judged (`cpu_verdict`).
"""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ..core import thresholds as T
from ..idle.breakdown import CATEGORIES, Breakdown

NOT_ENOUGH_DATA = "not enough data"
GROUPS = {  # bound -> the breakdown categories it owns
    "compute-bound": ("compute", "graph"),
    "communication-bound": ("exposed_comm", "comm"),
    "dataloader-bound": ("dataloader",),
    "sync-bound": ("sync",),
    "host-bound": ("host", "unlinked"),
    "launch-overhead-bound": ("launch",),
}
HOST_SIDE = ("dataloader-bound", "sync-bound", "host-bound", "launch-overhead-bound")
DEVICE_SIDE = ("compute-bound", "communication-bound")
LEVELS = ("low", "medium", "high")


class Verdict(msgspec.Struct, frozen=True):
    """What bounds the run. `shares` are fractions of the judged time per bound (empty for CPU-only)."""

    bound: str
    evidence: str
    suggestion: str
    confidence: str = "medium"
    runner_up: Optional[str] = None
    runner_up_share: Optional[float] = None
    share: Optional[float] = None
    shares: dict = msgspec.field(default_factory=dict)
    judged_ns: int = 0
    step_agreement: Optional[float] = None  # share of the steps judged the same way (None: under MIN_STEPS)
    reasons: tuple[str, ...] = ()  # not enough data: why


BOUNDS = tuple(GROUPS)
# categories x bounds: which bound owns each breakdown category
_OWNER = np.array([[c in GROUPS[b] for b in BOUNDS] for c in CATEGORIES], np.float64)
_COMPUTE, _HOST, _LAUNCH = BOUNDS.index("compute-bound"), BOUNDS.index("host-bound"), BOUNDS.index("launch-overhead-bound")
_HOST_SIDE = np.array([b in HOST_SIDE for b in BOUNDS])
_DEVICE_SIDE = np.array([b in DEVICE_SIDE for b in BOUNDS])


def group_matrix(categories_ns: np.ndarray, launch_regime: bool, host_in_launch_ns=0) -> np.ndarray:
    """Time per bound (columns in BOUNDS order) of each row of a Breakdown.

    In the launch regime (empty queue, short kernels) the host idle spent inside launch calls
    (`host_in_launch_ns`, per row) belongs to launch overhead too. Outside it nothing does: launch
    overhead needs an empty queue, so a `launch` gap (requested in time, started late) behind a queue of
    work is the device's own scheduling bubble, counted with compute.
    """
    groups = np.atleast_2d(categories_ns).astype(np.float64) @ _OWNER
    if launch_regime:
        moved = np.minimum(np.asarray(host_in_launch_ns, np.float64), groups[:, _HOST])
        groups[:, _LAUNCH] += moved
        groups[:, _HOST] -= moved
    else:
        groups[:, _COMPUTE] += groups[:, _LAUNCH]
        groups[:, _LAUNCH] = 0.0
    return groups


def group_ns(categories_ns: np.ndarray, launch_regime: bool, host_in_launch_ns=0) -> dict[str, float]:
    """Time per bound of one breakdown row (or of the sum of rows given as one)."""
    return dict(zip(BOUNDS, group_matrix(categories_ns, launch_regime, host_in_launch_ns)[0].tolist()))


def decide_rows(groups: np.ndarray) -> np.ndarray:
    """The winning bound (index into BOUNDS) of each row of group times (the module docstring's rule)."""
    total = np.maximum(groups.sum(axis=1), 1e-12)
    device_limits = groups[:, _HOST_SIDE].sum(axis=1) / total < T.IDLE_BOUND
    on_device = np.where(_DEVICE_SIDE, groups, -np.inf).argmax(axis=1)  # first maximum, as max() picks
    elsewhere = np.where(np.arange(len(BOUNDS)) != 0, groups, -np.inf).argmax(axis=1)  # anything but compute
    return np.where(device_limits, on_device, elsewhere)


def decide(groups: dict[str, float]) -> str:
    """The winning bound of one set of group times."""
    return BOUNDS[int(decide_rows(np.array([[groups.get(b, 0.0) for b in BOUNDS]]))[0])]


def runner_up(groups: dict[str, float], winner: str) -> Optional[str]:
    """The largest other group with any time; compute only comes second to a device-side winner, or when
    nothing else has any (every verdict names a runner-up unless the winner holds all the time)."""
    others = [g for g in groups if g != winner and (winner in DEVICE_SIDE or g != "compute-bound") and groups[g] > 0]
    runner = max(others, key=lambda g: groups[g], default=None)
    return "compute-bound" if runner is None and winner != "compute-bound" else runner


def confidence(groups: dict[str, float], winner: str, runner: Optional[str], agreement: Optional[float]) -> str:
    """high / medium / low from the margin over the runner-up and how many steps agree.

    A winner twice the runner-up is clear; 1.5 times is clear too when the steps agree (>= 80%).
    A device-side winner is only sure when the host-side idle is small as well.
    """
    total = sum(groups.values()) or 1.0
    top, second = groups[winner] / total, (groups[runner] / total if runner else 0.0)
    steady = agreement is None or agreement >= 0.8
    clear = top >= T.DOMINANCE_HIGH * second or (steady and agreement is not None and top >= 1.5 * second)
    if winner in DEVICE_SIDE:
        host_side = sum(groups[g] for g in HOST_SIDE) / total
        level = "high" if clear and host_side < T.IDLE_HIGH_CONFIDENCE else "medium"
    else:
        level = "high" if clear else "medium" if top >= 1.25 * second else "low"
    if agreement is not None and agreement < T.STEP_AGREEMENT:
        level = lowered(level)
    return level


def step_votes(breakdown: Breakdown, launch_regime: bool) -> dict[str, int]:
    """How many steps, each judged alone, give each bound (empty with fewer than MIN_STEPS steps: too few to vote)."""
    if not breakdown.from_steps:
        return {}
    groups = group_matrix(breakdown.ns, launch_regime, breakdown.host_in_launch_ns)
    groups = groups[groups.sum(axis=1) > 0]
    if groups.shape[0] < T.MIN_STEPS:
        return {}
    counts = np.bincount(decide_rows(groups), minlength=len(BOUNDS))
    return {b: n for b, n in zip(BOUNDS, counts.tolist()) if n}


def few_activities(judged: Verdict, activities: int) -> Verdict:
    """A verdict on fewer than MIN_DEVICE_ACTIVITIES device activities (judged because they keep the device
    busy for MIN_DEVICE_BUSY_MS): one call of a few long kernels, so at most medium, and with nothing else
    to name second, `not enough data` is the runner-up."""
    return msgspec.structs.replace(judged, confidence=LEVELS[min(LEVELS.index(judged.confidence), 1)],
                   runner_up=judged.runner_up or NOT_ENOUGH_DATA,
                   evidence=f"{judged.evidence}; only {activities} device activities: one call, no repeated steps")


def lowered(level: str) -> str:
    return LEVELS[max(LEVELS.index(level) - 1, 0)]


def device_verdict(breakdown: Breakdown, launch_regime: bool, explain) -> Verdict:
    """Judge a device trace from its breakdown; `explain(bound, shares, runner_up)` writes (evidence, suggestion).

    With MIN_STEPS steps or more, the steps vote: the bound most steps give wins (ties go to the larger
    share), so a first-step stall or an untraced tail cannot outvote the steady state.
    """
    groups = group_ns(breakdown.ns.sum(axis=0), launch_regime, int(breakdown.host_in_launch_ns.sum()))
    total = sum(groups.values()) or 1.0
    shares = {g: v / total for g, v in groups.items()}
    votes = step_votes(breakdown, launch_regime)
    if votes:
        winner = max(votes, key=lambda g: (votes[g], groups[g]))
        agreement: Optional[float] = votes[winner] / sum(votes.values())
    else:
        winner, agreement = decide(groups), None
    runner = runner_up(groups, winner)
    evidence, suggestion = explain(winner, shares, runner)
    if votes:
        evidence += f"; judged alone, {votes[winner]} of {sum(votes.values())} steps are {winner}"
    return Verdict(bound=winner, evidence=evidence, suggestion=suggestion,
                   confidence=confidence(groups, winner, runner, agreement), runner_up=runner,
                   runner_up_share=shares[runner] if runner else None, share=shares[winner], shares=shares,
                   judged_ns=int(total), step_agreement=agreement)


def winner_rule(v: Verdict) -> Optional[str]:
    """Why the verdict's bound wins when its runner-up has the larger share (None when it does not).

    Three rules let a smaller share win: the host-side causes leaving the device idle IDLE_BOUND of the
    time or more (then the largest of them wins, however large compute is); without device activity,
    waits of CPU_WAIT_DOMINANT of the step time (`explain.cpu_verdict`); and the steps' vote (the bound
    most steps give alone wins, see `device_verdict`).
    """
    if v.share is None or v.runner_up_share is None or v.runner_up_share <= v.share or v.bound == NOT_ENOUGH_DATA:
        return None
    host_idle = sum(v.shares.get(b, 0.0) for b in HOST_SIDE)
    if v.bound in HOST_SIDE and v.runner_up in DEVICE_SIDE and host_idle >= T.IDLE_BOUND:
        return (f"the host-side causes (DataLoader, sync, host, launch) leave the GPU idle {100 * host_idle:.1f}% of the "
                f"judged time, at least {100 * T.IDLE_BOUND:.0f}%: then the largest of them is the bound, "
                f"however large {v.runner_up} is")
    if v.runner_up == "cpu-only":
        return (f"without device activity, waits of {100 * T.CPU_WAIT_DOMINANT:.0f}% of the step time or more "
                f"(here {100 * v.share:.1f}%) bound the run, however much the CPU's own ops take")
    if v.step_agreement is not None:
        return (f"each step is judged alone and the steps vote: {100 * v.step_agreement:.0f}% of them are {v.bound}, "
                f"though {v.runner_up} takes more time over the whole trace")
    return None


def not_enough(reasons: tuple[str, ...], codes: tuple[str, ...], would_be: Optional[Verdict],
               device_lean: Optional[tuple[str, float]] = None) -> Verdict:
    """The `not enough data` verdict: why, how to record a better trace, and what the figures lean to.

    `device_lean` (bound, share) replaces the lean when CPU events were sampled: every host-side cause
    rests on CPU events, so only the device's own records (compute against exposed communication) lean.
    """
    advice = {
        "sampled": "record every event (no sampling, no event filters)",
        "startup": "initialise CUDA and warm up (a few steps, the allocator too) before the profiler starts",
        "empty": "make sure the profiler's active steps ran inside the training loop (prof.step() every iteration) "
                 "and that the trace handler wrote the file after they ended",
        "too-small": "profile more steps of the real training loop",
        "device-records-missing": "keep ProfilerActivity.CUDA in activities and shorten the active window if "
                                  "the device buffers overflow",
        "no-device-activity": "profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] (ROCm too)",
    }
    steps = "; ".join(dict.fromkeys(advice[c] for c in codes if c in advice))
    suggestion = (f"{steps}; then record with torch.profiler.schedule(wait=1, warmup=2, active=5)")
    which = "figures"
    if "sampled" in codes and would_be is not None and device_lean is not None:
        would_be, which = msgspec.structs.replace(would_be, bound=device_lean[0], share=device_lean[1]), "device's own figures"
    lean = (f"; the {which} lean to {would_be.bound} ({100 * would_be.share:.0f}% of the judged time)"
            if would_be is not None and would_be.share is not None else "")
    return Verdict(bound=NOT_ENOUGH_DATA, evidence="; ".join(reasons) + lean, suggestion=suggestion, confidence="high",
                   runner_up=would_be.bound if would_be else None,
                   runner_up_share=would_be.share if would_be else None, shares=would_be.shares if would_be else {},
                   judged_ns=would_be.judged_ns if would_be else 0, reasons=reasons)


def run_verdict(spans: list[Verdict]) -> Verdict:
    """One verdict over the spans of a run: their judged time pooled per bound, then the same rule.

    Spans that cannot be judged stay out (all of them out: the run cannot be judged either). Each span
    then votes like a step does; the run's confidence drops a level when fewer than STEP_AGREEMENT of
    the judged spans agree.
    """
    judged = [v for v in spans if v.bound != NOT_ENOUGH_DATA]
    if not judged:
        reasons = tuple(dict.fromkeys(r for v in spans for r in v.reasons))
        return Verdict(bound=NOT_ENOUGH_DATA, evidence=f"none of the {len(spans)} spans can be judged: " + "; ".join(reasons),
                       suggestion=spans[0].suggestion if spans else "", confidence="high", reasons=reasons)
    pooled: dict[str, float] = {}
    for v in judged:
        for bound, share in v.shares.items():
            pooled[bound] = pooled.get(bound, 0.0) + share * max(v.judged_ns, 1)
    votes = [v.bound for v in judged]
    winner = max(dict.fromkeys(votes), key=lambda b: (votes.count(b), pooled.get(b, 0.0)))
    agreement = votes.count(winner) / len(votes)
    total = sum(pooled.values()) or 1.0
    device = "compute-bound" in pooled  # device verdicts share every device group; CPU-only ones only their waits
    runner = runner_up(pooled, winner) if device and winner in GROUPS else _next_vote(judged, winner)
    level = (confidence(pooled, winner, runner, agreement if len(judged) > 1 else None) if device and winner in GROUPS
             else min((v.confidence for v in judged if v.bound == winner), key=LEVELS.index))
    share = pooled.get(winner, 0.0) / total if device else None
    example = next(v for v in judged if v.bound == winner)
    evidence = (f"{votes.count(winner)} of {len(judged)} judged spans are {winner}"
                + (f" ({100 * share:.1f}% of their pooled time)" if share is not None else "")
                + (f"; {len(spans) - len(judged)} cannot be judged" if len(judged) < len(spans) else ""))
    return Verdict(bound=winner, evidence=evidence, suggestion=example.suggestion, confidence=level, runner_up=runner,
                   runner_up_share=pooled.get(runner, 0.0) / total if device and runner else None, share=share,
                   shares={b: v / total for b, v in pooled.items()} if device else {}, judged_ns=int(total),
                   step_agreement=agreement)


def _next_vote(judged: list[Verdict], winner: str) -> Optional[str]:
    others = [v.bound for v in judged if v.bound != winner] + [v.runner_up for v in judged if v.runner_up and v.runner_up != winner]
    return max(dict.fromkeys(others), key=others.count) if others else None


def harmonized_by_worker(verdicts: list[Verdict], workers: list[str]) -> list[Verdict]:
    """Each span's verdict made consistent with the other spans of the same worker (rank).

    Spans of one worker are the same process at other times, so a close call follows their pooled
    bound. Ranks of a job are not: a straggler is compute-bound while the others wait for it, and
    neither is made to follow the other.
    """
    by_worker: dict[str, list[int]] = {}
    for i, worker in enumerate(workers):
        by_worker.setdefault(worker, []).append(i)
    out = list(verdicts)
    for members in by_worker.values():
        if len(members) > 1:
            combined = run_verdict([verdicts[i] for i in members])
            for i in members:
                out[i] = harmonized(verdicts[i], combined)
    return out


def harmonized(span: Verdict, run: Verdict) -> Verdict:
    """A span's verdict made consistent with its run's: when the span is not sure of its own bound and the
    run's bound is its runner-up, its figures support the run's bound too, so it says that."""
    if span.bound == run.bound or span.confidence == "high" or span.runner_up != run.bound or span.bound == NOT_ENOUGH_DATA:
        return span
    return msgspec.structs.replace(span, bound=run.bound, runner_up=span.bound, share=span.runner_up_share, runner_up_share=span.share,
                   evidence=f"{span.evidence} (on its own a close call for {span.bound}; {run.bound} as the other "
                            f"spans of this worker)", suggestion=run.suggestion, confidence="low")
