"""What each suggestion would save: the verdict's fix, the runner-up's, and each top culprit's, each re-timed by
the what-if replay (analysis/whatif/replay.py) with the edit that stands for it, ordered by the median step time saved.

The edit behind each suggestion (the estimate's assumption, shown with it):

    dataloader-bound        dataloader=0 (the DataLoader never makes the step wait), and
                            dataloader-workers=4 (four workers loading in parallel)
    sync-bound              sync:OP=0 for the top sync culprits (the op that made the sync, else the call)
    host-bound              graph (each step's launches captured and replayed: analysis/whatif/capture.py) and
                            prep=overlap (the host work before each step's first launch run ahead) for the
                            verdict (not a runner-up), and
                            host:NAME*0 for the lead's culprit (the op or Python frame before the device's first
                            activity) and the top host culprits (their host time gone)
    launch-overhead-bound   graph (for the verdict), and host:CALL*0 for the launch calls in the trace (launching costs the host
                            nothing: what CUDA graphs or fusion aim at)
    compute-bound           roofline:CATEGORY>=60% for the categories whose op calls run furthest below their
                            roof (analysis/roofline/summary.py: elementwise and copy, GEMM, attention...: their
                            kernels at 60% of the roof), and kernel:NAME*0.5 for the kernel with the most
                            device time (it runs twice as fast)

    communication-bound     comm=hidden (communication runs under compute)
    the fusion insight      fuse:REGION for its top region (its kernels one per stream and occurrence)
    the warm-up insight     warmup=median (the first step as fast as the median of the others: what profiling
                            after warm-up takes off the measured mean step)
    the tiny-batch insight  host:CALL*0 for the launch calls (CUDA graphs; listed once when the verdict gives
                            the same edits)
    the fragmentation insight saves memory, not time: its figures give the bytes it would free
    mixed precision         precision:bf16 where the roofline knows the device and the fp32/tf32 matrix work (each
                            GEMM, convolution and attention call at its share of the bf16 roof:
                            analysis/roofline/precision.py), else kernel:in:OP1|OP2|...*0.5 over the Tensor-Core
                            eligible ops in the trace (their kernels twice as fast: a conservative Tensor-Core
                            speed-up; a kernel counts once however many of these ops nest around its launch)

Top culprits get their own entries under any verdict (host and sync culprits, three of each at most); an edit
already listed is not repeated. A run's straggler carries its own saving in its ranks view (`straggler=median`,
analysis/distributed/straggler.py).
"""
from __future__ import annotations

from typing import Any, Optional

import msgspec
import numpy as np

from ...trace.kinds import LAUNCH_CALLS, Kind
from ...trace.model import TraceModel, shown, unique
from ..device.tensor_cores import TC_ELIGIBLE_OPS
from ..idle.culprits import culprit_targets, lead_culprit
from ..idle.gpu_idle import Cause
from ..judgement.verdict import NOT_ENOUGH_DATA
from ..roofline.precision import COVERED, amp_figures
from ..roofline.summary import fix_candidates
from .edits import GRAPH, OP_SEP, PREP, WARMUP, Edit, EditError, parse_edit
from .replay import Replayer, judged_step_ns

TOP_CULPRITS = 3  # culprits of each cause that get their own saving
PREP_FIX = "data preparation run ahead"  # prep=overlap: in the DataLoader's workers, or a prefetch thread
GRAPH_FIX = "CUDA graphs"  # each step captured once: torch.cuda.graph, or torch.compile(mode="reduce-overhead")
TOP_ROOF_FIXES = 3  # roofline fixes replayed under a compute-bound verdict
WORKERS = 4  # the DataLoader workers the second dataloader estimate assumes
KERNEL_SPEEDUP = 0.5  # the top kernel's new time as a share of the old one, for compute-bound
AMP_SOURCE = "insight:mixed-precision"
_AMP_UNKNOWN = object()  # the mixed-precision insight not known yet (`savings_ahead`): replayed as if it applied


class Saving(msgspec.Struct, frozen=True):
    """One suggestion's estimate: the median step before and after its edits, and the saving summed over the
    steps (ns). Its saving per step is the mean: removing a wait can move work from one step into the next,
    so a median can rise while the whole run gets shorter."""

    source: str  # "verdict", "runner-up", "culprit" or "insight:KIND"
    fix: str  # the change, in words
    edits: tuple[str, ...]
    recorded_ns: float  # median recorded step (the replay's where the device runs behind the host)
    predicted_ns: float  # median predicted step
    total_ns: float  # the saving summed over the steps
    steps: int
    base_ns: float  # the step the share is of (`WhatIf.share_base`): the verdict's judged one where it has one
    share_of: str  # its name: "judged", "recorded" or "replayed"

    @property
    def saving_ns(self) -> float:
        """Mean saving per step."""
        return self.total_ns / self.steps if self.steps else 0.0

    @property
    def share(self) -> Optional[float]:
        """Mean saving per step as a share of `base_ns` (never over the whole step)."""
        return min(self.saving_ns / self.base_ns, 1.0) if self.base_ns > 0 else None


def _edit(text: str, kind: str, target: str = "", factor: float = 0.0) -> Edit:
    """An edit built from a trace's own names (they may be longer than a user's edit may be: not parsed)."""
    return Edit(kind, target, factor, text)


def _host_targets(model: TraceModel, device: Any) -> list[str]:
    """The host culprits an edit can name: the top host-gap culprits, and first the lead's (what ran before the
    device's first activity: data preparation, a Python frame) where it holds more idle time than any of them (the
    verdict's top culprit then: `culprits.host_culprit`) and is an event."""
    targets = culprit_targets(model, device, Cause.HOST, TOP_CULPRITS)
    names = [name for name, _ in targets]
    lead = lead_culprit(model, device)
    if lead is not None and device.lead_culprit_row >= 0 and lead["idle_us"] * 1e3 >= max((i for _, i in targets), default=0.0):
        name = model.names[model.name_id[device.lead_culprit_row]]
        names = [name] + [n for n in names if n != name]
    return names


def _compute_fixes(model: TraceModel, analysis: Any, source: str) -> list[tuple[str, str, tuple[Edit, ...]]]:
    """A compute-bound verdict's fixes: the roofline's (`roofline.summary.fix_candidates`), then the top kernel
    twice as fast."""
    out = [(source, fix, tuple(parse_edit(t) for t in texts))
           for fix, texts in fix_candidates(model, getattr(analysis, "roofline", None))[:TOP_ROOF_FIXES]]
    top = _top_kernel(model)
    if top is not None:
        out.append((source, f"the top kernel twice as fast ({short_name(top)})",
                    (_edit(f"kernel:{shown(top)}*{KERNEL_SPEEDUP:g}", "kernel", top, KERNEL_SPEEDUP),)))
    return out


def _candidates(model: TraceModel, analysis: Any, amp: Any = None) -> list[tuple[str, str, tuple[Edit, ...]]]:
    verdict, busiest = analysis.verdict, analysis.idle.busiest()
    out: list[tuple[str, str, tuple[Edit, ...]]] = []
    for source, bound in (("verdict", verdict.bound), ("runner-up", verdict.runner_up)):
        if bound == "dataloader-bound":
            out.append((source, "no DataLoader wait", (_edit("dataloader=0", "dataloader"),)))
            out.append((source, f"{WORKERS} DataLoader workers",
                        (_edit(f"dataloader-workers={WORKERS}", "dataloader-workers", factor=float(WORKERS)),)))
        elif bound == "sync-bound" and busiest is not None:
            for name, _ in culprit_targets(model, busiest, Cause.SYNC, TOP_CULPRITS):
                out.append((source, f"remove the syncs of {shown(name)}", (_edit(f"sync:{shown(name)}=0", "sync", name),)))
        elif bound == "host-bound" and busiest is not None:
            if source == "verdict":  # the verdict's own remedies (a runner-up's culprits are listed, not these)
                out += [(source, GRAPH_FIX, (_edit(GRAPH, "graph"),)), (source, PREP_FIX, (_edit(PREP, "prep"),))]
            out.extend((source, f"{shown(n)} costs no host time", (_edit(f"host:{shown(n)}*0", "host", n),))
                       for n in _host_targets(model, busiest))
        elif bound == "launch-overhead-bound":
            out += [(source, GRAPH_FIX, (_edit(GRAPH, "graph"),))] if source == "verdict" else []
            edits = _launch_edits(model)
            if edits:
                out.append((source, "launches cost the host nothing (CUDA graphs, fusion)", edits))
        elif bound == "communication-bound":
            out.append((source, "communication hidden under compute", (_edit("comm=hidden", "comm"),)))
        elif bound == "compute-bound":
            out.extend(_compute_fixes(model, analysis, source))
    figures = amp_figures(getattr(analysis, "roofline", None)) if amp is not None else None
    if figures is not None and figures["matrix_modelled_share"] >= COVERED:
        # the mixed-precision insight, from the roofline: the fp32/tf32 matrix work at its share of the bf16 roof
        out.append((AMP_SOURCE, "the fp32 GEMMs, convolutions and attention in bf16 (autocast), at their share of "
                                "the bf16 roof", (_edit("precision:bf16", "precision", "bf16"),)))
    elif amp is not None:  # the mixed-precision insight: the eligible ops' kernels twice as fast on Tensor Cores
        present = set(model.names)
        ops = OP_SEP.join(sorted(n for n in TC_ELIGIBLE_OPS if n in present))
        if ops:
            out.append((AMP_SOURCE, "the Tensor-Core eligible ops' kernels twice as fast (autocast)",
                        (_edit(f"kernel:in:{ops}*{KERNEL_SPEEDUP:g}", "kernel-in", ops, KERNEL_SPEEDUP),)))
    for insight in getattr(analysis, "insights", ()):
        if insight.kind == "warm-up":
            out.append(("insight:warm-up", "the first step as fast as the others (profile after warm-up)",
                        (_edit(WARMUP, "warmup"),)))
        elif insight.kind == "tiny-batch":
            edits = _launch_edits(model)
            if edits:
                out.append(("insight:tiny-batch", "launches cost the host nothing (CUDA graphs)", edits))
        elif insight.kind == "fusion" and insight.figures.get("top_region"):
            shown_name = insight.figures["top_region"]
            raw = next((n for n in model.names if shown(n) == shown_name), None)
            if raw is not None:
                out.append(("insight:fusion", f"fuse the kernels of {shown_name} (one per stream and occurrence)",
                            (_edit(f"fuse:{shown_name}", "fuse", raw),)))
    if busiest is not None:
        for cause, verb in ((Cause.SYNC, "remove the syncs of {}"), (Cause.HOST, "{} costs no host time")):
            for name, _ in culprit_targets(model, busiest, cause, TOP_CULPRITS):
                edit = _edit(f"sync:{shown(name)}=0", "sync", name) if cause == Cause.SYNC else \
                    _edit(f"host:{shown(name)}*0", "host", name)
                out.append(("culprit", verb.format(shown(name)), (edit,)))
    return out


def _launch_edits(model: TraceModel) -> tuple[Edit, ...]:
    """`host:CALL*0` for the launch calls in the trace (eight at most: an edit list's length is bounded)."""
    ids = unique(model.name_id[model.kind_in((Kind.RUNTIME, Kind.DRIVER))])
    calls = sorted({model.names[i] for i in ids if model.names[i] in LAUNCH_CALLS})[:8]
    return tuple(_edit(f"host:{c}*0", "host", c) for c in calls)


FIX_NAME_CHARS = 60  # a kernel's name in a fix's words (its edit keeps the whole name)


def short_name(name: str) -> str:
    """A name cut to FIX_NAME_CHARS characters for a fix's words."""
    return name if len(name) <= FIX_NAME_CHARS else name[:FIX_NAME_CHARS - 1] + "\u2026"


def _top_kernel(model: TraceModel) -> Optional[str]:
    rows = np.flatnonzero(model.kind == Kind.KERNEL)
    if not rows.size:
        return None
    total = np.bincount(model.name_id[rows], weights=model.dur_ns[rows], minlength=len(model.names))
    return model.names[int(total.argmax())]


def savings(model: TraceModel, analysis: Any, replayer: Optional[Replayer] = None, amp: Any = None,
            ahead: Optional[tuple[Saving, ...]] = None) -> tuple[Saving, ...]:
    """Every suggestion's saving, largest first (module docstring); a trace without steps is replayed over its
    launching thread's span (`model._window_step`), one that cannot be judged ("not enough data") gets none. `amp`: the
    mixed-precision insight when the report found one. `ahead`: `savings_ahead`'s result for this model and
    analysis, replayed before the insight and the roofline were known (its mixed-precision entry is dropped unless
    `amp` is given); the candidates that need the roofline (`analysis.roofline`, made beside `analyze`) are
    replayed now, and where the roofline's mixed-precision edit applies it replaces the one replayed ahead."""
    if ahead is None:
        return _replayed(model, analysis, replayer, amp)
    kept = [s for s in ahead if amp is not None or s.source != AMP_SOURCE]
    if not _roof_candidates_possible(model, analysis, amp):
        return tuple(kept)
    candidates = _candidates(model, analysis, amp)
    have = {s.edits for s in kept}
    late = [c for c in candidates if _texts(c[2]) not in have and any(e.kind in ROOF_KINDS for e in c[2])]
    if any(e.kind == "precision" for _, _, edits in late for e in edits):
        kept = [s for s in kept if s.source != AMP_SOURCE]
    found = kept + _replay(model, analysis, replayer, late)
    order = {_texts(edits): i for i, (_, _, edits) in enumerate(candidates)}
    return tuple(sorted(found, key=lambda s: (-s.saving_ns, order.get(s.edits, len(order)))))


ROOF_KINDS = ("roofline", "precision")  # the edits that need the roofline


def _roof_candidates_possible(model: TraceModel, analysis: Any, amp: Any) -> bool:
    """Whether any candidate needs the roofline: a compute-bound verdict or runner-up with a fix, or the
    mixed-precision insight where the roofline covers the matrix work (the other candidates are not made)."""
    roof = getattr(analysis, "roofline", None)
    if roof is None:
        return False
    verdict = analysis.verdict
    if "compute-bound" in (verdict.bound, verdict.runner_up) and fix_candidates(model, roof):
        return True
    figures = amp_figures(roof) if amp is not None else None
    return figures is not None and figures["matrix_modelled_share"] >= COVERED


def _texts(edits: tuple[Edit, ...]) -> tuple[str, ...]:
    return tuple(e.text for e in edits)


def savings_ahead(model: TraceModel, analysis: Any) -> tuple[Saving, ...]:
    """`savings` before the mixed-precision insight is known (it needs the kernel tables): its candidate is replayed
    as if it applied, for `savings(..., ahead=)` to keep or drop; the other entries and their order are those
    `savings` gives either way. The replays' context is freed when this returns."""
    return _replayed(model, analysis, None, _AMP_UNKNOWN)


def _replayed(model: TraceModel, analysis: Any, replayer: Optional[Replayer], amp: Any) -> tuple[Saving, ...]:
    return tuple(sorted(_replay(model, analysis, replayer, _candidates(model, analysis, amp)), key=lambda s: -s.saving_ns))


def _replay(model: TraceModel, analysis: Any, replayer: Optional[Replayer],
            candidates: list[tuple[str, str, tuple[Edit, ...]]]) -> list[Saving]:
    """Each candidate's saving, in their order (an edit list seen before, or one that matches nothing, left out)."""
    if not candidates or analysis.verdict.bound == NOT_ENOUGH_DATA:  # a trace that cannot be judged gets no saving
        return []
    try:
        replayer = replayer or Replayer(model, getattr(analysis, "roofline", None))
    except EditError:  # a trace too long to replay (centuries of timestamps): no saving, the report names the span
        return []
    if not replayer.ctx.step_start.size:  # no thread launches device work: nothing to re-time
        return []
    judged = judged_step_ns(analysis)  # the verdict's denominator, the shares' too
    seen: set[tuple[Edit, ...]] = set()
    found: list[Saving] = []
    loader_saving = None
    for source, fix, edits in candidates:
        if edits in seen:
            continue
        seen.add(edits)
        if edits[0].kind == "dataloader-workers" and loader_saving is not None and loader_saving <= 0:
            continue  # workers cannot save more than no wait at all
        result = replayer.apply(edits)
        if not any(result.matched.values()):
            continue
        found.append(Saving(source, fix, result.edits, result.base_ns, result.median_predicted_ns,
                            float((result.replayed_ns - result.edited_ns).sum()), int(result.edited_ns.size),
                            *result.share_base(judged)))
        if edits[0].kind == "dataloader":
            loader_saving = found[-1].saving_ns
    return found


JUDGED_BOUNDS = ("host-bound", "launch-overhead-bound", "dataloader-bound", "sync-bound", "communication-bound")
_WHY = {
    "dataloader-bound": "the device work the step still needs after the wait",
    "sync-bound": "the device work the syncs waited for, which the step still needs",
    "communication-bound": "the compute the communication would hide under is shorter than it",
    "launch-overhead-bound": "the kernels' own time, once their launches cost nothing",
}


def shortfall(model: TraceModel, analysis: Any, found: tuple[Saving, ...]) -> Optional[str]:
    """One line on why no listed fix recovers half of what the verdict says is lost (None when one does, or the
    verdict judges no idle time): what still bounds the step once the largest fix is applied."""
    verdict = analysis.verdict
    if verdict.bound not in JUDGED_BOUNDS or not verdict.share:
        return None
    best = max((s.share or 0.0 for s in found), default=0.0)
    if best >= 0.5 * verdict.share:
        return None
    head = f"no listed fix recovers half of the {verdict.share:.0%} the verdict says is lost (the largest: {best:.0%})"
    busiest = analysis.idle.busiest()
    if verdict.bound == "host-bound" and busiest is not None:
        spread = culprit_targets(model, busiest, Cause.HOST, 1000)
        total = sum(i for _, i in spread)
        if spread and total > 0:
            return (f"{head}: the host time the device waits on is spread over {len(spread)} ops, the largest "
                    f"({shown(spread[0][0])[:80]}) {spread[0][1] / total:.0%} of it")
    return f"{head}: what bounds the step then is {_WHY.get(verdict.bound, 'the work around it')}"


def saving_entries(found: tuple[Saving, ...]) -> list[dict[str, Any]]:
    """The savings as JSON (µs), largest first."""
    return [{"source": s.source, "fix": s.fix, "edits": list(s.edits), "saving_us": round(s.saving_ns / 1e3, 3),
             "steps": s.steps,
             "saving_share": None if s.share is None else round(s.share, 4), "share_of": s.share_of,
             "share_base_us": round(s.base_ns / 1e3, 3) if s.base_ns > 0 else None,
             "median_step_us": round(s.predicted_ns / 1e3, 3), "recorded_median_step_us": round(s.recorded_ns / 1e3, 3),
             "total_saving_us": round(s.total_ns / 1e3, 3)} for s in found]
