"""torch-tb-profiler's Overview figures of a report entry (`gpu_summary`, `tbprof_steps`) as text and markdown.

Each figure says what it measures, on torch-tb-profiler's definition, beside Kinetoscope's own.
"""
from __future__ import annotations

from typing import Optional

from .units import human_bytes, human_us, table_lines

TEXT_STEP_ROWS = 30  # as the Steps section: JSON lists up to the report's MAX_STEP_ROWS
CATEGORY_HEADS = {"kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset", "communication": "Communication",
                  "runtime": "Runtime", "dataloader": "DataLoader", "cpu_exec": "CPU Exec", "other": "Other"}


def _head(title: str, markdown: bool) -> list[str]:
    return ["", f"### {title}", ""] if markdown else ["", f"{title}:"]


def _pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}%"


def gpu_summary_lines(entry: dict, markdown: bool) -> list[str]:
    """One table row per device: what it is and its torch-tb-profiler figures, with Kinetoscope's busy % beside."""
    gpus = entry.get("gpu_summary") or []
    if not gpus:
        return []
    rows = [[str(g["device"]), g.get("name") or "-", "-" if g.get("memory_bytes") is None else human_bytes(g["memory_bytes"]),
             g.get("compute_capability") or "-", _pct(g.get("utilization_pct")), _pct(g.get("kinetoscope_busy_pct")),
             _pct(g.get("sm_efficiency_pct")), _pct(g.get("occupancy_pct")), _pct(g.get("tensor_cores_pct")),
             _pct(g.get("kinetoscope_tensor_cores_pct"))] for g in gpus]
    notes = ["utilization: time a kernel runs over all steps' time (steps reaching to the end of their GPU work), "
             "torch-tb-profiler's; busy: kernels, memcpys and memsets over the device's judged window, Kinetoscope's; "
             "SM efficiency: blocks per SM (capped at 1) over all steps' time; occupancy: achieved occupancy weighted "
             "by kernel time; Tensor Cores: share of kernel time in Tensor-Core kernels, by torch-tb-profiler's name list "
             "(written for Volta to Ampere) and by Kinetoscope's (Hopper wgmma/xmma, bf16 and tf32 kernels, AMD matrix cores)"]
    return (_head("GPU summary (torch-tb-profiler's definitions)", markdown) + notes + [""] * markdown
            + table_lines(["device", "name", "memory", "compute", "utilization", "busy (kinetoscope)", "est. SM efficiency",
                           "est. occupancy", "tensor cores", "tensor cores (kinetoscope)"], rows, markdown))


# measured field (analysis/device/hw_counters.py MEASURED) -> (what it is, the estimate it sits beside, in the entry)
MEASURED_HEADS = (("utilization_pct", "utilization (GPU active)", "utilization_pct"),
                  ("sm_efficiency_pct", "SM efficiency (SM active)", "sm_efficiency_pct"),
                  ("occupancy_pct", "occupancy (warps active)", "occupancy_pct"),
                  ("sm_throughput_pct", "SM throughput", None), ("dram_throughput_pct", "DRAM throughput", None),
                  ("tensor_active_pct", "Tensor pipes active", None))


def measured_lines(entry: dict, markdown: bool) -> list[str]:
    """The devices' hardware-counter figures (PM sampling): each measured figure beside its estimate, then every
    counter's mean over the same window."""
    gpus = [g for g in entry.get("gpu_summary") or [] if g.get("measured")]
    if not gpus:
        return []
    pairs, counters = [], []
    for g in gpus:
        m = g["measured"]
        pairs += [[str(g["device"]), head, _pct(m.get(key)), "-" if est is None else _pct(g.get(est))]
                  for key, head, est in MEASURED_HEADS if m.get(key) is not None]
        counters += [[str(g["device"]), c["counter"], _value(c["mean"], c["unit"]), str(c["samples"])] for c in m["counters"]]
        if m["counters_total"] > len(m["counters"]):
            counters.append([str(g["device"]), f"... {m['counters_total'] - len(m['counters'])} more", "", ""])
    note = ("each counter's time-weighted mean over the same steps window, over the time its samples cover "
            "(a sample holds until the next one)")
    lines = _head("Measured by hardware counters (PM sampling)", markdown) + [note] + [""] * markdown
    if pairs:
        lines += table_lines(["device", "figure", "measured", "estimated"], pairs, markdown) + [""]
    return lines + table_lines(["device", "counter", "mean", "samples"], counters, markdown)


def _value(mean: Optional[float], unit: str) -> str:
    if mean is None:
        return "- (no sample in the window)"
    return _pct(mean) if unit == "%" else f"{mean:,.6g} {unit}"


def tbprof_step_lines(entry: dict, markdown: bool) -> list[str]:
    """Step time in torch-tb-profiler's categories, per step and on average (the share of the average step)."""
    tb = entry.get("tbprof_steps") or {}
    steps = tb.get("steps") or {}
    if not steps.get("name"):
        return []
    cats = [c for c in tb["categories"] if c != "communication" or any(steps["communication_us"])]
    rows = [[name, human_us(steps["dur_us"][k]), *(human_us(steps[f"{c}_us"][k]) for c in cats)]
            for k, name in enumerate(steps["name"][:TEXT_STEP_ROWS])]
    avg, pct = tb["average_us"], tb["average_pct"]
    rows.append(["average", human_us(avg["total"]), *(f"{human_us(avg[c])} ({pct[c]:.1f}%)" for c in cats)])
    note = ("each moment of a step counts once, for the first of these categories that covers it (left to right); "
            "steps reach to the end of the GPU work they launched")
    return (_head("Step time by torch-tb-profiler's categories", markdown) + [note] + [""] * markdown
            + table_lines(["step", "duration", *(CATEGORY_HEADS[c] for c in cats)], rows, markdown))
