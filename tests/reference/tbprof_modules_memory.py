"""Write torch-tb-profiler 0.4.3's own Module view (the nn.Module tree with its host and device times) and memory
statistics table (per device and op) of one trace as JSON: the references tests/test_tables_peers.py compares
Kinetoscope's module tree and memory-per-op table with.

Run it with a Python that has torch-tb-profiler 0.4.3 and pandas (a venv beside the project's, with its
site-packages on PYTHONPATH for tensorboard):

    python tests/reference/tbprof_modules_memory.py TRACE OUT.json
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path


def _modules(stats, path=()) -> list[dict]:
    out = []
    for s in stats:
        here = path + (s.name,)
        out.append({"path": list(here), "occurrences": s.occurences, "operators": s.operators,
                    "host_us": s.host_duration, "self_host_us": s.self_host_duration,
                    "device_us": s.device_duration, "self_device_us": s.self_device_duration})
        out += _modules(s.children, here)
    return out


def main(trace: str, out: str) -> int:
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    work = Path(tempfile.mkdtemp())
    name = Path(trace).name if ".pt.trace.json" in Path(trace).name else "worker0.1.pt.trace.json.gz"
    shutil.copy(trace, work / name)
    data = RunProfileData.parse("worker0", 0, str(work / name), tempfile.mkdtemp())
    profile = RunGenerator("worker0", 0, data).generate_run_profile()
    memory = {}
    if data.memory_snapshot is not None:
        stats = data.memory_snapshot.get_memory_statistics(data.tid2tree)
        memory = {device: {op: list(values) for op, values in ops.items()} for device, ops in stats.items()}
    result = {"trace": Path(trace).name, "tool": "torch-tb-profiler 0.4.3 (RunProfileData.parse + RunGenerator)",
              "units": "us (times), bytes",
              "modules": _modules(profile.module_stats or []),
              "memory_columns": ["self_increase", "self_alloc_size", "self_alloc_count", "increase", "alloc_size",
                                 "alloc_count", "calls"],
              "memory": memory}
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
