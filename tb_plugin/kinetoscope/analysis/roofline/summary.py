"""What the roofline says of a whole trace, for the report and the verdict: the efficiency entry (per category, the
top op shapes, MFU per step) and the fixes whose `roofline:` edits the savings replay.

A category's share of the roof is the time its modelled calls would take at the roof over the time they took
(time-weighted over its calls). Kernels tuned for their hardware reach 60-80% of the roof; TARGET_SHARE is the
share the fixes aim at, a reachable one: the saving replayed is what running every call below it at it gives.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ...trace.model import TraceModel
from .figures import Roofline, step_mfu, whole_rows

TARGET_SHARE = 0.6  # the share of the roof the fixes aim at
TOP_SHAPES = 10  # op shapes the report lists
VERDICT_FIXES = 2  # the replayed fixes a compute-bound verdict names, largest first
MIN_FIX_SHARE = 0.01  # a fix is offered when reaching the target would save at least this share of the kernel time
# The fixes, each over categories whose kernels one change speeds up: (categories, what to do)
FIXES = (
    (("elementwise", "copy"), "fuse them with torch.compile"),
    (("norm", "reduce"), "fuse them (torch.compile, or fused LayerNorm/RMSNorm and softmax kernels)"),
    (("gemm",), "fewer, larger GEMMs with dims in multiples of 64 (larger batches, fused projections), bf16 or fp16 "
                "on Tensor Cores, or torch.compile(mode=\"max-autotune\")"),
    (("attention",), "use a fused attention kernel (scaled_dot_product_attention's flash or cuDNN backend, "
                     "FlashAttention)"),
    (("conv",), "use channels_last and bf16 so cuDNN picks Tensor-Core kernels"),
    (("other",), "fuse or replace them (torch.compile)"),
)
LABELS = {"elementwise": "elementwise", "copy": "copy", "norm": "normalization", "reduce": "reduction",
          "gemm": "GEMM", "attention": "attention", "conv": "convolution", "other": "other"}


def fix_candidates(model: TraceModel, roof: Optional[Roofline]) -> list[tuple[str, tuple[str, ...]]]:
    """The fixes worth replaying, largest potential first: (their words, their `roofline:` edits)."""
    return [(f["fix"], f["edits"]) for f in fix_facts(model, roof)]


def fix_facts(model: TraceModel, roof: Optional[Roofline]) -> list[dict[str, Any]]:
    """The fixes worth replaying, largest potential first, each `{"label", "advice", "share" (of the roof its
    categories run at, time-weighted), "roof" (what bounds them: "HBM bandwidth" or "the compute peak"), "fix"
    (its words in the savings list), "edits"}`. A fix's potential is what its calls would save at TARGET_SHARE
    of their roof; fixes under MIN_FIX_SHARE of the kernel time are left out."""
    if roof is None or roof.peaks is None:
        return []
    rows, totals = whole_rows(model, roof, kernels=False)
    by_category = {c["category"]: c for c in totals["categories"]}
    found = []
    for categories, advice in FIXES:
        parts = [by_category[c] for c in categories if c in by_category and by_category[c]["roof_us"] is not None]
        label = " and ".join(LABELS[p["category"]] for p in parts)
        modelled = sum(p["modelled_us"] for p in parts)
        below = _below_target_us(rows, categories)
        if modelled <= 0 or below < MIN_FIX_SHARE * max(totals["kernel_us"], 1e-9):
            continue
        share = sum(p["roof_us"] for p in parts) / modelled
        bound = _roof_words(parts)
        fix = (f"{label} kernels at {TARGET_SHARE:.0%} of their roof: {advice} (they run at {share:.0%} of "
               f"{bound})")
        edits = tuple(f"roofline:{p['category']}>={TARGET_SHARE * 100:g}%" for p in parts)
        found.append((below, {"label": label, "advice": advice, "share": share, "roof": bound, "fix": fix,
                              "edits": edits, "kernel_us_saved": below,
                              "kernel_share_saved": below / totals["kernel_us"] if totals["kernel_us"] > 0 else 0.0}))
    found.sort(key=lambda f: -f[0])
    return [facts for _, facts in found]


def verdict_fix(facts: list[dict[str, Any]], savings: list[dict[str, Any]]) -> Optional[str]:
    """The compute-bound verdict's fix in words, from the replayed saving of the largest roofline fix: "elementwise
    and copy kernels run at 58% of HBM bandwidth; at 60% they would save 2.23 ms per step (5%): fuse them with
    torch.compile". Without a replayed saving (a trace without steps has none), the largest fix's kernel time
    instead: "... at 60% their kernels would take 9.1 ms less (19% of the kernel time)". None without a fix."""
    if facts and not any(tuple(s["edits"]) == f["edits"] for f in facts for s in savings):
        f = facts[0]
        return (f"{f['label']} kernels run at {f['share']:.0%} of {f['roof']}; at {TARGET_SHARE:.0%} their kernels "
                f"would take {_ms(f['kernel_us_saved'])} less ({f['kernel_share_saved']:.0%} of the kernel time): "
                f"{f['advice']}")
    replayed = []
    for f in facts:
        saved = next((s for s in savings if tuple(s["edits"]) == f["edits"] and s["saving_us"] > 0), None)
        if saved is not None:
            replayed.append((f, saved))
    replayed.sort(key=lambda pair: -pair[1]["saving_us"])
    return "; ".join(_fix_words(f, saved) for f, saved in replayed[:VERDICT_FIXES]) or None


def _fix_words(f: dict[str, Any], saved: dict[str, Any]) -> str:
    share = f" ({saved['saving_share']:.0%})" if saved.get("saving_share") is not None else ""
    return (f"{f['label']} kernels run at {f['share']:.0%} of {f['roof']}; at {TARGET_SHARE:.0%} they would save "
            f"{_ms(saved['saving_us'])} per step{share}: {f['advice']}")


def _ms(us: float) -> str:
    return f"{us / 1e3:.3g} ms" if us >= 100 else f"{us:.3g} µs"


def _below_target_us(rows: list[dict[str, Any]], categories: tuple[str, ...]) -> float:
    """What the categories' calls would save at TARGET_SHARE of their roof, summed over rows (each row's calls at
    their mean share: an estimate for choosing which fixes to replay, not the saving)."""
    saved = 0.0
    for r in rows:
        if r["category"] in categories and r["roof_pct"] is not None and r["roof_pct"] < 100 * TARGET_SHARE:
            saved += r["kernel_us"] * (1 - r["roof_pct"] / (100 * TARGET_SHARE))
    return saved


def _roof_words(parts: list[dict[str, Any]]) -> str:
    """Which roof bounds most of the categories' time: memory bandwidth or the compute peak."""
    memory = sum(p["modelled_us"] for p in parts if p["bound"] == "memory")
    total = sum(p["modelled_us"] for p in parts)
    return "HBM bandwidth" if memory * 2 >= total else "the compute peak"


def efficiency_entry(model: TraceModel, roof: Optional[Roofline], step_start_ns: np.ndarray,
                     step_end_ns: np.ndarray) -> Optional[dict[str, Any]]:
    """The report's efficiency section: the device and its roofs (or why none), kernel time modelled and not, per
    category, the top op shapes by kernel time, MFU per step; None for a trace without GPU work."""
    if roof is None or not roof.act_rows.size:
        return None
    rows, totals = whole_rows(model, roof, kernels=False)
    mfu = step_mfu(roof, step_start_ns, step_end_ns)
    known = [m for m in mfu if m is not None]
    keep = ("name", "input_dims", "input_types", "category", "calls", "kernel_us", "flops", "bytes", "achieved_tflops",
            "achieved_tbps", "intensity", "bound", "roof_pct", "roof_us", "dtype")
    return {**{k: totals[k] for k in ("device", "peak_source", "reason", "recorded_inputs", "kernel_us", "modelled_us",
                                      "unmodelled_us", "unmodelled_share", "communication_us", "unowned_us", "roofs",
                                      "categories")},
            "target_share": TARGET_SHARE, "rows": totals["rows"],
            "top": [{k: r[k] for k in keep} for r in rows[:TOP_SHAPES]],
            "mfu": {"per_step": mfu, "median": float(np.median(known)) if known else None}}
