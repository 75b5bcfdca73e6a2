"""The profiler tables' part of the report: the top rows of the op, kernel and module tables (times in µs)."""
from __future__ import annotations

from typing import Any, Optional

from ...trace.model import TraceModel
from ..core.selectors import NO_OP
from .index import TableIndex, Window
from .kernels import kernel_launchers, kernel_table
from .ops import module_table, op_table
from .rows import records as table_records

REPORT_TOP = 15  # rows per table in `kinetoscope report` and `summary`; `kinetoscope table` and `tables` give all


def _in_us(row: dict[str, Any]) -> dict[str, Any]:
    """A `tables.records` row with every `*_ns` field as `*_us`; the name id dropped (ids are per model)."""
    return {(k[:-3] + "_us" if k.endswith("_ns") else k): (v / 1e3 if k.endswith("_ns") else v)
            for k, v in row.items() if k != "name_id"}


def table_rows(model: TraceModel, index: TableIndex, by: str, window: Window = None,
               top: Optional[int] = None, group: str = "name", split: str = "name") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows (µs) of one table (`op`, `kernel` or `module`), in the table's order, and its totals.

    Kernel rows name the ops that launched them (`launched_by`, up to three, by GPU time); op rows grouped by
    `stack` are per (op, innermost user Python frame) and carry `frame`, by `shape` per (op, input shapes) with
    `shapes`, by `module` per (op, innermost nn.Module) with `module`. Kernel rows `split` by `launch` are per
    (kernel, grid, block, registers, shared memory), by `op_launch` also per launching op (with `op`).
    """
    if by == "kernel":
        tab = kernel_table(model, index, window, split=split)
        totals = {"rows": int(tab.name_id.size), "device_us": tab.device_ns / 1e3}
    else:
        tab = module_table(model, index, window) if by == "module" else op_table(model, index, window, group)
        totals = {"rows": int(tab.name_id.size), "linked_gpu_us": tab.linked_gpu_ns / 1e3,
                  "top_level_gpu_us": tab.top_level_gpu_ns / 1e3, "unowned_gpu_us": tab.unowned_gpu_ns / 1e3}
    records = table_records(model, tab)[:top]
    rows = [_in_us(r) for r in records]
    if by == "kernel" and rows:
        launchers = kernel_launchers(model, index, [r["name_id"] for r in records], window)
        for row, record in zip(rows, records):
            row["launched_by"] = [{"name": model.shown_names[o] if o >= 0 else NO_OP, "gpu_us": ns / 1e3, "calls": n}
                                  for o, ns, n in launchers[record["name_id"]]]
    return rows, totals


def tables_entry(model: TraceModel, index: Optional[TableIndex] = None, top: int = REPORT_TOP) -> dict[str, Any]:
    """The report's `tables`: the top rows of each table with every field, and each table's totals."""
    index = index or TableIndex.build(model)
    out: dict[str, Any] = {}
    for by, key in (("op", "ops"), ("kernel", "kernels"), ("module", "modules")):
        rows, totals = table_rows(model, index, by, top=top)
        out[key] = rows
        out[f"{key}_totals"] = totals
    return out
