"""The whole `kinetoscope report` process, as a user times it: cold, warm, and HTA beside it.

For each trace, rounds of fresh processes, in turn (so a machine that drifts weighs on each alike), each after the
trace was read through once untimed (every run starts from the page cache):
- **cold**: `kinetoscope report --no-cache --format json TRACE` with a fresh, empty HOME: the interpreter's start,
  the imports, the decode, the analyses, the JSON and the exit;
- **warm**: `kinetoscope report --format json TRACE` with one HOME whose cache a first, untimed run filled: the model
  and the analyses come from the local cache (`index/local_cache.py`);
- **in process**: the bench worker's cold open (`bench_kinetoscope.py cold`: `load_trace` + `analyze` timed inside
  the process, the interpreter's start, imports and exit left out), the figure the stages report;
- **HTA** (with `--hta`, on the traces named there): HTA's cold open in a fresh process (`peer_worker.py hta`).
Wall seconds are spawn to exit; peak RSS is the whole process tree's (`peers.measure`). Medians, min-max.

`--scaled N OUT` makes a trace with the shared tool (once) and times it first:
`python3 ../shared/tools/scale_trace.py --copies N ../shared/traces/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz OUT`,
pretty-printed with 2-space indentation as real Kineto files are (N=30: issue 53's 1.33 GB file, 1,334,511,557
bytes; N=10: 444 MB), and with `--gzip` its gzip beside it (level 6) too.

Usage: .venv/bin/python tests/bench/whole_command.py [TRACE...] [--scaled N OUT]... [--gzip] [--runs 5]
    [--hta TRACE...] [--out FILE.md]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_kinetoscope import run_kinetoscope_cold
from layout import REPO_ROOT, main_python
from peers import measure, run_hta
from worker_common import read_through, write_section

SCALE_TOOL = REPO_ROOT.parent / "shared" / "tools" / "scale_trace.py"
X30_SOURCE = REPO_ROOT.parent / "shared" / "traces" / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz"
TIMEOUT_S = 900.0
# the shared tool needs orjson, which the system's python3 has and the project's venv need not
SCALE_PYTHON = shutil.which("python3") or sys.executable


def make_scaled(copies: int, out: Path, gzip: bool) -> list[Path]:
    """The shared tool's scaled trace, and its gzip with `gzip` (made once)."""
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([SCALE_PYTHON, str(SCALE_TOOL), "--copies", str(copies), str(X30_SOURCE), str(out)], check=True)
    gz = out.with_name(out.name + ".gz")
    if not gzip:
        return [out]
    if not gz.is_file():
        subprocess.run(["sh", "-c", f"gzip -6 -c '{out}' > '{gz}.part' && mv '{gz}.part' '{gz}'"], check=True)
    return [out, gz]


def _env(home: Path) -> dict[str, str]:
    """A user's environment: this HOME, no cache location of ours, bytecode written as usual."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE",
                                                             "KINETOSCOPE_CACHE_DIR", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    return env


def _cli() -> str:
    return str(Path(main_python()).parent / "kinetoscope")


def _report(trace: Path, home: Path, cold: bool) -> tuple[float, int]:
    cmd = [_cli(), "report", *(["--no-cache"] if cold else []), "--format", "json", str(trace)]
    m = measure(cmd, TIMEOUT_S, env=_env(home))
    if m["rc"] != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {m['rc']}: {m['stderr_tail'][-500:]}")
    return m["wall_s"], m["peak_rss_bytes"]


def time_trace(trace: Path, runs: int, hta: bool) -> dict[str, list[tuple[float, int]]]:
    """{kind: [(wall s, peak bytes)] per run} for cold, warm, in-process and (with `hta`) HTA."""
    out: dict[str, list[tuple[float, int]]] = {"cold": [], "warm": [], "in process": [], **({"HTA": []} if hta else {})}
    with tempfile.TemporaryDirectory(prefix="kinetoscope-whole-") as scratch:
        warm_home = Path(scratch) / "warm"
        warm_home.mkdir()
        read_through(trace)
        _report(trace, warm_home, cold=False)  # fills the cache: the model and the analyses
        for i in range(runs):
            cold_home = Path(scratch) / f"cold{i}"
            cold_home.mkdir()
            read_through(trace)
            out["cold"].append(_report(trace, cold_home, cold=True))
            read_through(trace)
            out["warm"].append(_report(trace, warm_home, cold=False))
            read_through(trace)
            inproc = run_kinetoscope_cold(trace, TIMEOUT_S)
            t = inproc.timings
            out["in process"].append((t.get("load_s", 0.0) + t.get("analysis_s", 0.0), inproc.peak_rss_bytes or 0))
            if hta:
                read_through(trace)
                r = run_hta(trace, TIMEOUT_S)
                out["HTA"].append((r.time_s if r.time_s is not None else float("nan"), r.peak_rss_bytes or 0))
            print(f"{trace.name} round {i + 1}: " + ", ".join(f"{k} {v[-1][0]:.3f} s" for k, v in out.items()), flush=True)
    return out


def _fmt(values: list[float], unit: str) -> str:
    if not values:
        return "-"
    scale, digits = (1.0, 3) if unit == "s" else (1 / 2**20, 0)
    med, lo, hi = statistics.median(values) * scale, min(values) * scale, max(values) * scale
    return f"**{med:.{digits}f}** ({lo:.{digits}f}-{hi:.{digits}f})"


def render(results: dict[Path, dict[str, list[tuple[float, int]]]], runs: int) -> str:
    lines = ["Command: `.venv/bin/python tests/bench/whole_command.py " + " ".join(str(p) for p in results)
             + f" --runs {runs}` (tests/bench/whole_command.py says how each row is timed). Wall seconds spawn to exit "
             "and the whole process tree's peak RSS, median (min-max) of the runs.", "",
             "| trace | bytes | run | wall s | peak MiB | / cold |", "|---|---:|---|---:|---:|---:|"]
    for trace, kinds in results.items():
        cold = statistics.median(w for w, _ in kinds["cold"])
        for kind, rows in kinds.items():
            walls = [w for w, _ in rows]
            ratio = f"{statistics.median(walls) / cold:.2f}x" if kind != "cold" else ""
            lines.append(f"| `{trace.name}` | {trace.stat().st_size:,} | {kind} | {_fmt(walls, 's')} | "
                         f"{_fmt([float(p) for _, p in rows], 'MiB')} | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hta", nargs="*", type=Path, default=[], help="the traces HTA also opens, beside them")
    parser.add_argument("--scaled", nargs=2, action="append", default=[], metavar=("N", "OUT"),
                        help="the shared tool's trace of N copies, made at OUT if absent (repeatable)")
    parser.add_argument("--gzip", action="store_true", help="time the scaled traces' gzips too")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    made = [p for n, out in args.scaled for p in make_scaled(int(n), Path(out), args.gzip)]
    traces = [*made, *args.traces]
    hta = {p.resolve() for p in args.hta}
    results = {t: time_trace(t, args.runs, t.resolve() in hta) for t in traces}
    return write_section(args.out, render(results, args.runs))


if __name__ == "__main__":
    sys.exit(main())
