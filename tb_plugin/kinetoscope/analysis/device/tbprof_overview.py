"""torch-tb-profiler's Overview beside Kinetoscope's own figures: the report's `gpu_summary`, `tensor_cores` and
`tbprof_steps` entries, and the mixed-precision insight.

Each figure keeps torch-tb-profiler's definition (`gpu_summary`, `tbprof_steps`, `tensor_cores`), so a user
coming from it finds its numbers; Kinetoscope's own (busy %, the step breakdown) stay beside them, labelled.
"""
from __future__ import annotations

from typing import Any, Optional

import msgspec

from ...trace.model import TraceModel
from ..judgement.insights import Insight, mixed_precision
from ..tables.index import TableIndex
from .gpu_summary import GpuSummary, gpu_summaries, gpu_summary_entries
from .tbprof_steps import TbprofSteps, tbprof_steps, tbprof_steps_entry
from .tensor_cores import TcEligibility, tc_eligibility


class Overview(msgspec.Struct, frozen=True):
    """torch-tb-profiler's figures of one trace."""

    steps: TbprofSteps
    gpus: tuple[GpuSummary, ...]
    eligibility: TcEligibility

    def amp_insight(self) -> Optional[Insight]:
        """The mixed-precision suggestion, when it applies (see `insights.mixed_precision`)."""
        majors = [int(g.compute_capability.split(".")[0]) for g in self.gpus if g.compute_capability]
        return mixed_precision(self.eligibility.share, self.eligibility.eligible_ops,
                               self.eligibility.tensor_core_share, majors)


def overview(model: TraceModel, tables: TableIndex) -> Overview:
    """torch-tb-profiler's steps, GPU summaries and Tensor-Core eligibility of a trace."""
    steps = tbprof_steps(model)
    return Overview(steps, gpu_summaries(model, steps), tc_eligibility(model, tables))


def overview_entries(model: TraceModel, view: Overview, idle: Any) -> dict[str, Any]:
    """The report's `gpu_summary`, `tensor_cores` and `tbprof_steps` (see HTTP_API.md, `summary`).

    Args:
        idle: the trace's `gpu_idle.GpuIdle`, whose busy share per device goes beside the utilization.
    """
    busy = {d.device: 100.0 * d.busy_ns / d.window_ns for d in idle.devices if d.window_ns > 0}
    e = view.eligibility
    return {"gpu_summary": gpu_summary_entries(view.gpus, busy),
            "tensor_cores": {"eligible_kernel_pct": 100 * e.share, "eligible_kernel_us": e.eligible_ns / 1e3,
                             "op_kernel_us": e.launched_ns / 1e3, "eligible_ops": e.eligible_ops,
                             "tensor_core_kernel_pct": 100 * e.tensor_core_share, "kernel_us": e.kernel_ns / 1e3},
            "tbprof_steps": tbprof_steps_entry(model, view.steps)}
