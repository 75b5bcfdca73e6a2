"""A profiler table (`analysis.table_report.table_rows`) as CSV, JSON or an aligned text table: what
`kinetoscope table` prints."""
from __future__ import annotations

import csv
import json
from typing import Any

from .units import human_us, table_lines

TEXT_COLUMNS = {
    "op": ("name", "calls", "cpu_total_us", "cpu_self_us", "cpu_mean_us", "cpu_max_us", "gpu_self_us", "gpu_total_us",
           "gpu_mean_us", "launches"),
    "kernel": ("name", "kind", "calls", "total_us", "mean_us", "min_us", "max_us", "share", "tensor_core", "grid", "block",
               "registers", "shared_mem", "blocks_per_sm", "occupancy", "bytes", "bandwidth_gbps", "launched_by"),
}
TEXT_COLUMNS["module"] = TEXT_COLUMNS["op"]


def _cell(key: str, value: Any) -> str:
    if key == "launched_by":
        return "; ".join(f"{v['name']} ({human_us(v['gpu_us'])})" for v in value)
    if key.endswith("_us"):
        return human_us(value)
    if key == "share":
        return f"{100 * value:.2f}%"
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def write(rows: list[dict[str, Any]], totals: dict[str, Any], by: str, fmt: str, out, group: str = "name") -> None:
    """Rows as CSV (one header row, `launched_by` as `name=us;...`), JSON (rows and totals) or a text table."""
    if fmt == "json":
        json.dump({"by": by, "totals": totals, "rows": rows}, out, indent=1, allow_nan=False)
        out.write("\n")
        return
    extra = {"stack": ("frame",), "shape": ("shapes",), "module": ("module",)}.get(group, ())
    columns = ("name", *extra, *TEXT_COLUMNS[by][1:])
    if fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([";".join(f"{v['name']}={v['gpu_us']}" for v in row[c]) if c == "launched_by" else row[c]
                             for c in columns])
        return
    body = [[_cell(c, row[c]) for c in columns] for row in rows]
    out.write("\n".join(table_lines(list(columns), body, markdown=False)) + "\n")
