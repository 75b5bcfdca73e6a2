"""Figures of `kinetoscope index` (BENCHMARKS.md, "Shareable index and Dask scale-out").

1. A 32-rank logdir (samples/synth/multirank.py, `--ops-per-step` bulk) indexed from scratch by
   `kinetoscope index --dask-local N` for N = 1, 2, 4 (fresh CLI processes; wall time of the whole command,
   cluster start included, and the time the command reports once its cluster is up), and by `--jobs 1`.
2. The per-trace cost on the 300 MB trace (tests/bench/make_traces.py: ResNet-50 repeated 10x, plain JSON):
   one `index_trace(..., force=True)` in a fresh process: decode + analyses + full sha256 + sidecar write.
3. The projection for 1,000 ranks of 300 MB on M machines from that measured cost (printed with its arithmetic).
4. A teammate opening the indexed 300 MB logdir cold: a fresh `tensorboard` process, time from the first
   `runs` request to the first `lanes` answer (after the tab's long poll `status?load=1&until=lanes` says
   `lanes_ready`), and to `ready`, with the sidecar and, for contrast, without it (decoding; empty model
   cache). `--only-cold` measures this figure alone.

Usage (repo root, PYTHONPATH=tb_plugin): python tests/bench/index_bench.py [--repeat 3] [--ops-per-step 2500]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from layout import BENCH_DIR, REPO_ROOT, link_trace

sys.path.insert(0, str(REPO_ROOT / "samples"))
sys.path.insert(0, str(REPO_ROOT / "tests" / "bench"))
from synth.multirank import write_job  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "tb_plugin"), os.environ.get("PYTHONPATH", "")])}
TENSORBOARD = Path(sys.executable).parent / "tensorboard"
PLUGIN = "/data/plugin/kinetoscope"
TASK_RE = re.compile(r"^\[\s*\d+/\d+\] .*? \(([\d.]+) s\)", re.M)
SUMMARY_RE = re.compile(r"kinetoscope index: (\d+) traces in ([\d.]+) s.*?(?:\(cluster ready after ([\d.]+) s\))?$", re.M)


def clear_index(root: Path) -> None:
    for folder in root.rglob(".kinetoscope"):
        shutil.rmtree(folder)


def run_index(root: Path, *args: str) -> tuple[float, float, float, float]:
    """(wall s of the command, s it reports itself, s until its cluster was ready, sum of the per-trace
    seconds its progress lines give) of one `kinetoscope index` from scratch."""
    clear_index(root)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kinetoscope.cli", "index", str(root), *args], env=ENV,
                          capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"index {args} failed: {done.stderr[-2000:]}")
    match = SUMMARY_RE.search(done.stdout)
    tasks = sum(float(m.group(1)) for m in TASK_RE.finditer(done.stdout))
    return wall, float(match.group(2)), float(match.group(3) or 0.0), tasks


def per_trace_300mb(trace: Path) -> dict:
    """One trace's indexing cost, in a fresh process, and its parts."""
    code = f"""
import json, time
from kinetoscope.index import sidecar
from kinetoscope.index.tasks import index_trace
path = {str(trace)!r}
t = time.perf_counter(); sha = sidecar.full_sha256(path); sha_s = time.perf_counter() - t
o = index_trace(path, force=True)
print(json.dumps({{"seconds": o.seconds, "status": o.status, "sha256_s": sha_s, "trace_bytes": o.trace_bytes,
                  "sidecar_bytes": o.sidecar_bytes}}))
"""
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def fetch(url: str):
    with urllib.request.urlopen(url, timeout=120) as response:
        return json.loads(response.read())


def open_cold(logdir: Path, cache: Path) -> dict:
    """A fresh TensorBoard on `logdir`: seconds from the first `runs` request to the first `lanes` answer (after the
    tab's long poll, `status?load=1&wait_ms=1500&until=lanes`, says `lanes_ready`), and to `ready` (every analysis
    done; the plain long poll)."""
    log = cache.parent / f"tb-{time.monotonic_ns()}.err"
    env = {**ENV, "KINETOSCOPE_CACHE_DIR": str(cache)}
    with open(log, "w") as err:
        proc = subprocess.Popen([str(TENSORBOARD), "--logdir", str(logdir), "--host", "127.0.0.1", "--port", "0",
                                 "--load_fast", "false"], stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        deadline = time.monotonic() + 120
        port = None
        while port is None and time.monotonic() < deadline:
            match = re.search(r"http://127\.0\.0\.1:(\d+)/", log.read_text(errors="replace"))
            port = int(match.group(1)) if match else None
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port}{PLUGIN}"
        t0 = time.perf_counter()
        runs = fetch(f"{base}/runs")
        sid = runs["runs"][0]["workers"][0]["spans"][0]["id"]
        while True:  # the tab's long poll for its Lanes panel: answered the moment the lanes are published
            state = fetch(f"{base}/status?span={sid}&load=1&wait_ms=1500&until=lanes")["traces"][0]
            if state["lanes_ready"] or state["state"] in ("ready", "error"):
                break
        lanes = fetch(f"{base}/lanes?span={sid}&width_px=1600")
        lanes_s = time.perf_counter() - t0
        assert state["state"] != "error" and lanes["lanes"], state
        while state["state"] not in ("ready", "error"):  # the plain long poll, answered the moment the load ends
            state = fetch(f"{base}/status?span={sid}&load=1&wait_ms=1500")["traces"][0]
        ready_s = time.perf_counter() - t0
        assert state["state"] == "ready", state
        return {"seconds": lanes_s, "ready_s": ready_s, "source": state["source"],
                "index_reason": state["index_reason"], "events": state["events"]}
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each figure (the median is shown)")
    parser.add_argument("--ops-per-step", type=int, default=2500)
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2, 4])
    parser.add_argument("--skip-300mb", action="store_true")
    parser.add_argument("--only-cold", action="store_true",
                        help="only figure 4 (a fresh TensorBoard opening the indexed 300 MB logdir, and decoding it)")
    parser.add_argument("--skip-decoding", action="store_true", help="in figure 4, only the indexed logdir")
    parser.add_argument("--cores", type=int, default=16, help="workers per machine in the projection")
    parser.add_argument("--bandwidth-gbps", type=float, default=10.0, help="network per machine in the projection")
    parser.add_argument("--markdown", type=Path, help="also write the figures as a markdown section (make bench)")
    args = parser.parse_args()
    out: dict = {"load_average_at_start": os.getloadavg(), "cpus": os.cpu_count()}

    root = BENCH_DIR / "index32"
    if not args.only_cold:
        if not (root / "job").is_dir():
            write_job(root / "job", ranks=32, steps=4, straggler=5, ops_per_step=args.ops_per_step)
        sizes = [p.stat().st_size for p in (root / "job").glob("*.gz")]
        out["logdir"] = {"traces": len(sizes), "gz_bytes": sum(sizes)}
        rows = {}
        for label, flags in [("--jobs 1", ["--jobs", "1"])] + [(f"--dask-local {n}", ["--dask-local", str(n)]) for n in args.workers]:
            runs = [run_index(root, *flags) for _ in range(args.repeat)]
            rows[label] = {"wall_s": statistics.median(r[0] for r in runs), "reported_s": statistics.median(r[1] for r in runs),
                           "indexing_s": statistics.median(r[1] - r[2] for r in runs),
                           "task_s": statistics.median(r[3] for r in runs), "runs": runs}
            print(label, rows[label], flush=True)
        out["index32"] = rows
        sidecars = list(root.rglob("*.kidx"))
        out["index32_sidecar_bytes"] = sum(p.stat().st_size for p in sidecars)

    if not args.skip_300mb:
        trace = BENCH_DIR / "traces" / "resnet50_nw0_x10.pt.trace.json"
        if not trace.is_file():
            subprocess.run([sys.executable, str(REPO_ROOT / "tests" / "bench" / "make_traces.py"), "--max-repeat", "10"],
                           env=ENV, check=True, stdout=subprocess.DEVNULL)
        logdir = BENCH_DIR / "index300" / "run"
        logdir.mkdir(parents=True, exist_ok=True)
        linked = logdir / trace.name
        if not linked.exists():
            link_trace(trace, linked)
        if args.only_cold:  # index it once if it is not (or no longer) up to date; not timed
            subprocess.run([sys.executable, "-m", "kinetoscope.cli", "index", str(logdir)], env=ENV, check=True,
                           stdout=subprocess.DEVNULL)
        else:
            costs = [per_trace_300mb(linked) for _ in range(args.repeat)]
            out["per_trace_300mb"] = {"median_s": statistics.median(c["seconds"] for c in costs), "runs": costs}
            print("per trace 300 MB", out["per_trace_300mb"], flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            cold = [open_cold(logdir.parent, Path(tmp) / f"cache{i}") for i in range(args.repeat)]
            bare = BENCH_DIR / "index300-bare" / "run"
            bare.mkdir(parents=True, exist_ok=True)
            if not (bare / trace.name).exists():
                link_trace(trace, bare / trace.name)
            decoded = [] if args.skip_decoding else [open_cold(bare.parent, Path(tmp) / f"cache-bare{i}")
                                                     for i in range(args.repeat)]
        for key, runs in [("open_cold_indexed", cold)] + ([("open_cold_decoding", decoded)] if decoded else []):
            out[key] = {"median_s": statistics.median(c["seconds"] for c in runs),
                        "ready_median_s": statistics.median(c["ready_s"] for c in runs), "runs": runs}
            print(key.replace("_", " "), out[key], flush=True)
        if args.only_cold:
            out["load_average_at_end"] = os.getloadavg()
            print(json.dumps(out, indent=1))
            return 0
        c = out["per_trace_300mb"]["median_s"]
        side = statistics.median(r["sidecar_bytes"] for r in costs) / 1e9
        per_machine_gbs = args.bandwidth_gbps / 8
        print(f"\nProjection, 1,000 ranks of 300 MB: per-trace cost c = {c:.2f} s on one core (measured), "
              f"{args.cores} workers per machine, {args.bandwidth_gbps:g} Gbit/s per machine "
              f"({per_machine_gbs:.2f} GB/s) for 0.30 GB read + {side:.3f} GB written per trace:")
        out["projection"] = []
        for machines in (1, 4, 16, 64):
            compute = 1000 * c / (machines * args.cores)
            io = 1000 * (0.3008 + side) / (machines * per_machine_gbs)
            out["projection"].append({"machines": machines, "compute_s": compute, "io_s": io})
            print(f"  {machines:>2} machines: compute 1000 x {c:.2f} s / ({machines} x {args.cores}) = {compute:.0f} s; "
                  f"network 1000 x {0.3008 + side:.3f} GB / ({machines} x {per_machine_gbs:.2f} GB/s) = {io:.0f} s; "
                  f"bound {max(compute, io):.0f} s ({max(compute, io) / 60:.1f} min)")
    out["load_average_at_end"] = os.getloadavg()
    target = BENCH_DIR / "index_bench.json"
    target.write_text(json.dumps(out, indent=1))
    print(f"\nwritten {target}")
    if args.markdown:
        args.markdown.write_text(markdown(out, args))
    return 0


def markdown(out: dict, args: argparse.Namespace) -> str:
    """The figures as BENCHMARKS.md shows them, with the command and the machine's load."""
    lines = [f"Command: `PYTHONPATH=tb_plugin .venv/bin/python tests/bench/index_bench.py --repeat {args.repeat}`; medians of "
             f"{args.repeat}; {out['cpus']} cores, load average {out['load_average_at_start'][0]:.1f} at the start and "
             f"{out['load_average_at_end'][0]:.1f} at the end.", "",
             f"**{out['logdir']['traces']}-rank logdir** ({out['logdir']['gz_bytes'] / 1e6:.1f} MB gzipped), indexed from scratch:", "",
             "| executor | wall s | indexing s (after the cluster is up) | summed per-trace s |", "|---|---|---|---|"]
    for label, row in out["index32"].items():
        lines.append(f"| `{label}` | {row['wall_s']:.1f} | {row['indexing_s']:.1f} | {row['task_s']:.1f} |")
    if "per_trace_300mb" in out:
        lines += ["", f"**One 300 MB trace**: indexed in {out['per_trace_300mb']['median_s']:.2f} s (decode, analyses, sha256, "
                      "sidecar write). A fresh TensorBoard, first `runs` request to first `lanes` answer: "
                      f"**{out['open_cold_indexed']['median_s']:.2f} s** from the sidecar, "
                      f"{out['open_cold_decoding']['median_s']:.2f} s decoding.", "",
                  f"**Projection, 1,000 ranks of 300 MB** ({args.cores} workers per machine, {args.bandwidth_gbps:g} Gbit/s "
                  "each): the larger of 1000 x c / (M x workers) and 1000 x bytes / (M x bandwidth).", "",
                  "| machines | compute s | network s | projected s |", "|---|---|---|---|"]
        for p in out["projection"]:
            lines.append(f"| {p['machines']} | {p['compute_s']:.0f} | {p['io_s']:.0f} | {max(p['compute_s'], p['io_s']):.0f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
