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
