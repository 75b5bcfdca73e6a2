"""The ranks view at scale: a synthetic 64-rank NCCL job (samples/synth/multirank.py).

Measures, each in a fresh process started by a small launcher (so ru_maxrss is the measured process's own):
- `kinetoscope report LOGDIR` (all 64 ranks: one model at a time, a digest each, then the ranks view) against
  `kinetoscope report` of the largest single rank: the peak memory of the whole job should stay within 2x;
- the `ranks` route once every rank has loaded: median and max over 50 calls (target under 100 ms), and the first
  answer with every rank, which builds the view the later ones reuse.

Usage: .venv/bin/python tests/bench/ranks_bench.py [--ranks 64] [--steps 8] [--out .bench/ranks.md]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "samples"))
sys.path.insert(0, str(REPO / "tb_plugin"))

from worker_common import write_section  # noqa: E402 - tests/bench is the script's folder

LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-m", "kinetoscope.cli", *sys.argv[2:]])
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss * 1024))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def cli_peak(target: Path, scratch: Path) -> tuple[int, float]:
    peak = scratch / "peak"
    env = {**os.environ, "PYTHONPATH": str(REPO / "tb_plugin")}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", LAUNCHER, str(peak), "report", str(target), "--no-cache", "--format", "json"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    return int(peak.read_text()), time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--ops-per-step", type=int, default=500, help="bulk per rank (500: about 30k events a rank)")
    parser.add_argument("--out", type=Path, default=REPO / ".bench" / "ranks.md")
    args = parser.parse_args()
    from kinetoscope import pipeline
    from kinetoscope.server import routes
    from kinetoscope.server.service import TraceService
    from synth.multirank import write_job
    scratch = Path(tempfile.mkdtemp(prefix="ks-ranks-"))
    logdir = scratch / "logs" / "job"
    paths, truth = write_job(logdir, gz=True, ranks=args.ranks, steps=args.steps, straggler=args.ranks // 3,
                             ops_per_step=args.ops_per_step)
    largest = max(paths, key=lambda p: p.stat().st_size)
    job_peak, job_s = cli_peak(logdir, scratch)
    one_peak, one_s = cli_peak(largest, scratch)
    service = TraceService(str(scratch / "logs"), cache_dir=None, rescan_s=3600, decode_in_child=False, prepare=pipeline.prepare)
    try:
        service.scan_now()
        start = time.perf_counter()
        while True:
            t = time.perf_counter()
            pending = routes.ranks_impl(service, "job")["pending"]
            built_ms = (time.perf_counter() - t) * 1000  # the answer with every rank builds the view
            if not pending:
                break
            time.sleep(0.02)
        loaded_s = time.perf_counter() - start
        times, answer = [], None
        for _ in range(50):
            t = time.perf_counter()
            answer = routes.ranks_impl(service, "job")
            times.append((time.perf_counter() - t) * 1000)
    finally:
        service.close()
    view = answer["view"]
    assert [s["rank"] for s in view["stragglers"]] == truth["stragglers"], view["stragglers"]
    size = sum(p.stat().st_size for p in paths)
    text = (f"# Ranks view at scale\n\nCommand: `.venv/bin/python tests/bench/ranks_bench.py --ranks {args.ranks} "
            f"--steps {args.steps} --ops-per-step {args.ops_per_step}` (a synthetic {args.ranks}-rank NCCL job from "
            "`samples/synth/multirank.py`, "
            f"{size / 1e6:.1f} MB gzipped in all, {largest.stat().st_size / 1e6:.2f} MB for its largest rank, "
            f"{view['matched_instances']} collectives matched, straggler "
            f"{truth['stragglers']} found).\n\n"
            "| measure | value | target |\n|---|---|---|\n"
            f"| `kinetoscope report` of the whole job: peak RSS, time | {job_peak / 2**20:.0f} MiB, {job_s:.1f} s | - |\n"
            f"| `kinetoscope report` of its largest rank: peak RSS, time | {one_peak / 2**20:.0f} MiB, {one_s:.1f} s | - |\n"
            f"| whole job / one rank, peak RSS | {job_peak / one_peak:.2f}x | at most 2x |\n"
            f"| `ranks` route once loaded ({args.ranks} ranks, 50 calls): median, max | "
            f"{statistics.median(times):.2f} ms, {max(times):.2f} ms | under 100 ms |\n"
            f"| its first answer with every rank loaded (builds the view, kept until a rank reloads) | "
            f"{built_ms:.1f} ms | under 100 ms |\n"
            f"| loading every rank in the service (in-process decode) | {loaded_s:.1f} s | - |\n")
    return write_section(args.out, text)


if __name__ == "__main__":
    sys.exit(main())
