"""A profiler table (`analysis.table_report.table_rows`) as CSV, JSON or an aligned text table: what
`kinetoscope table` prints."""
from __future__ import annotations

import csv
import json
from typing import Any

from .schema import versioned
from .units import human_bytes, human_us, table_lines

TEXT_COLUMNS = {
    "op": ("name", "calls", "cpu_total_us", "cpu_self_us", "cpu_mean_us", "cpu_max_us", "gpu_self_us", "gpu_total_us",
           "gpu_mean_us", "launches"),
    "kernel": ("name", "kind", "calls", "total_us", "mean_us", "min_us", "max_us", "share", "tensor_core", "grid", "block",
               "registers", "shared_mem", "blocks_per_sm", "occupancy", "bytes", "bandwidth_gbps", "launched_by"),
}
TEXT_COLUMNS["module"] = TEXT_COLUMNS["op"]
TEXT_COLUMNS["module_tree"] = ("name", "occurrences", "operators", "host_us", "self_host_us", "device_us", "self_device_us")
TEXT_COLUMNS["memory"] = ("name", "device", "calls", "self_alloc_count", "self_alloc_bytes", "self_freed_bytes",
                          "self_increase_bytes", "alloc_count", "alloc_bytes", "freed_bytes", "increase_bytes",
                          "peak_increase_bytes")
TEXT_COLUMNS["annotation"] = ("name", "count", "total_us", "mean_us", "min_us", "max_us", "std_us", "share")
TEXT_COLUMNS["sequences"] = ("name", "length", "occurrences", "total_us", "mean_us", "share", "launched_by")
TEXT_COLUMNS["roofline"] = ("name", "input_dims", "input_types", "category", "calls", "kernel_us", "flops", "bytes",
                            "achieved_tflops", "achieved_tbps", "intensity", "bound", "roof_pct", "roof_us", "dtype",
                            "kernels")
SCRIPT_DROPS = {"roofline": ("kernel_rows",)}  # route-only fields (the chart's click-to-select rows)
TREE_INDENT = "  "  # per module-tree level in the text table


def _cell(key: str, value: Any) -> str:
    if value is None:
        return ""
    if key == "kernels" and isinstance(value, list):
        return "; ".join(f"{v['name']} ({human_us(v['kernel_us'])})" for v in value[:3])
    if key == "flops":
        return f"{value / 1e9:.4g} G"
    if key == "bytes":
        return human_bytes(value)
    if key == "roof_pct":
        return f"{value:.1f}%"
    if key == "launched_by":
        return "; ".join(f"{v['name']} ({human_us(v['gpu_us']) if 'gpu_us' in v else v['occurrences']})" for v in value)
    if key.endswith("_us"):
        return human_us(value)
    if key.endswith("_bytes") and key.startswith(("self_", "alloc", "freed", "increase", "peak")):
        return human_bytes(value) if value >= 0 else "-" + human_bytes(-value)
    if key == "share":
        return f"{100 * value:.2f}%"
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _csv_cell(key: str, value: Any) -> Any:
    if key == "launched_by":
        return ";".join(f"{v['name']}={v['gpu_us'] if 'gpu_us' in v else v['occurrences']}" for v in value)
    if key == "kernels":
        return ";".join(v if isinstance(v, str) else f"{v['name']}={v['kernel_us']}" for v in value)
    return value


def write(rows: list[dict[str, Any]], totals: dict[str, Any], by: str, fmt: str, out, group: str = "name",
          split: str = "name") -> None:
    """Rows as CSV (one header row, `launched_by` as `name=us;...` or `name=occurrences;...`), JSON (rows and
    totals), a markdown table or a text table (the module tree's names indented by depth)."""
    drops = SCRIPT_DROPS.get(by, ())
    rows = [{k: v for k, v in row.items() if k not in drops} for row in rows] if drops else rows
    if fmt == "json":
        json.dump(versioned({"by": by, "totals": totals, "rows": rows}), out, indent=1, allow_nan=False)
        out.write("\n")
        return
    extra = {"stack": ("frame",), "shape": ("shapes",), "module": ("module",)}.get(group, ())
    if by == "kernel" and split == "op_launch":
        extra = ("op",)
    if by == "module_tree" and fmt == "csv":
        extra = ("index", "parent", "depth")
    if by == "sequences" and fmt == "csv":
        extra = ("kernels",)
    columns = ("name", *extra, *TEXT_COLUMNS[by][1:])
    if by == "module_tree" and "replayed_device_us" in totals:  # the trace replays graphs: their share per node
        columns = (*columns, "replayed_device_us")
    if by == "roofline" and fmt == "csv":
        columns = (*columns[:-1], "peak_source", "kernel_count", "kernels")
    if fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_csv_cell(c, row[c]) for c in columns])
        return
    body = [[_cell(c, row[c]) for c in columns] for row in rows]
    if by == "module_tree":
        for cells, row in zip(body, rows):
            cells[0] = TREE_INDENT * row["depth"] + cells[0]
    out.write("\n".join(table_lines(list(columns), body, markdown=fmt == "markdown")) + "\n")
