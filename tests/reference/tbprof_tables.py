"""Write torch-tb-profiler 0.4.3's own Operator (by name and by input shape) and Kernel views of one trace as JSON (the reference that
tests/test_tables_tbprof.py compares Kinetoscope's tables with).

Run it with a Python that has torch-tb-profiler 0.4.3 (for example `make bench`'s .bench/venv-peers):

    python tests/reference/tbprof_tables.py ../shared/traces/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz \
        tests/reference/tbprof_resnet50_nw0.json
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

TOP_OPS = 15


def main(trace: str, out: str) -> int:
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    work = Path(tempfile.mkdtemp())
    shutil.copy(trace, work / Path(trace).name)
    data = RunProfileData.parse("worker0", 0, str(work / Path(trace).name), tempfile.mkdtemp())
    profile = RunGenerator("worker0", 0, data).generate_run_profile()
    ops = profile.operation_table_by_name["data"]  # already sorted by device self duration
    by_shape = profile.operation_table_by_name_input["data"]  # (name, Input Dims) groups, the same order
    columns = [c["name"] for c in profile.kernel_table["data"]["columns"]]
    kernels = [dict(zip(columns, row)) for row in profile.kernel_table["data"]["rows"]]
    keep = ("name", "calls", "device_self_duration", "device_total_duration", "host_self_duration", "host_total_duration")
    result = {"trace": Path(trace).name, "tool": "torch-tb-profiler 0.4.3 (RunProfileData.parse + RunGenerator)",
              "units": "us", "operators_top": [{k: op[k] for k in keep} for op in ops[:TOP_OPS]],
              "operators_count": len(ops),
              "operators_by_input_shape_top": [{**{k: op[k] for k in keep}, "input_shape": op["input_shape"]}
                                               for op in by_shape[:TOP_OPS]],
              "operators_by_input_shape_count": len(by_shape),
              "operators_by_input_shape_calls": [[op["name"], op["input_shape"], op["calls"]] for op in by_shape],
              "kernels": [{"name": k["Name"], "calls": k["Calls"], "total_us": k["Total Duration (us)"],
                           "max_us": k["Max Duration (us)"], "min_us": k["Min Duration (us)"],
                           "tensor_cores": k["Tensor Cores Used"], "mean_blocks_per_sm": k.get("Mean Blocks Per SM"),
                           "mean_occupancy_pct": k.get("Mean Est. Achieved Occupancy (%)")} for k in kernels]}
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
