"""A restarted TensorBoard's first answer for a trace it analysed before: TraceService (as the plugin builds it,
decoder children and the analyses cache) on a one-trace logdir, timed from the span's request to its lanes and to
`ready`, cold (empty cache), then with the model and the analyses cached (`index/local_cache.py`).

Usage: python tests/bench/restart_bench.py TRACE [--runs 3]   (prints one markdown table)
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tb_plugin"))

from kinetoscope import pipeline  # noqa: E402
from kinetoscope.index.readers import AnalysesCache, SidecarIndex  # noqa: E402
from kinetoscope.server import routes  # noqa: E402
from kinetoscope.server.service import TraceService  # noqa: E402


def one_load(logdir: Path, cache: Path) -> tuple[float, float, str]:
    """(seconds to the lanes, seconds to ready, where the analyses came from) of one service's first load."""
    service = TraceService(str(logdir), cache_dir=cache, analyses=AnalysesCache(), index=SidecarIndex(),
                           stages=pipeline.STAGES, rescan_s=3600)
    try:
        service.scan_now()
        (sid, _, _), = service.snapshot()
        start = time.perf_counter()
        routes.status_impl(service, sid, load=True, wait_ms=1, until="lanes")
        while not routes.status_impl(service, sid)["traces"][0]["lanes_ready"]:
            time.sleep(0.002)
        lanes = time.perf_counter() - start
        service.get(sid, wait_s=600)
        ready = time.perf_counter() - start
        analyses = routes.status_impl(service, sid)["traces"][0]["analyses"]
        deadline = time.monotonic() + 60
        while analyses == "computed" and not list(cache.glob("*.prepared")) and time.monotonic() < deadline:
            time.sleep(0.05)  # the analyses are written in the background: the next run reads them
        return lanes, ready, analyses
    finally:
        service.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kinetoscope-restart-") as tmp:
        logdir, cache = Path(tmp) / "logs", Path(tmp) / "cache"
        (logdir / "run").mkdir(parents=True)
        shutil.copy(args.trace, logdir / "run" / args.trace.name)
        for case in ("cold", "restart"):
            runs = []
            for _ in range(args.runs):
                if case == "cold":
                    shutil.rmtree(cache, ignore_errors=True)
                runs.append(one_load(logdir, cache))
            rows.append((case, statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[-1][2]))
    print(f"Command: `.venv/bin/python tests/bench/restart_bench.py {args.trace} --runs {args.runs}` (a TraceService as "
          "the plugin builds it, on a one-trace logdir: `cold` with an empty cache, `restart` a new service on the cache "
          "the last one filled; seconds from the span's request).\n")
    print(f"| `{args.trace.name}` ({args.trace.stat().st_size / 1e6:.1f} MB) | to lanes s | to ready s | analyses |")
    print("|---|---|---|---|")
    for case, lanes, ready, analyses in rows:
        print(f"| {case} (median of {args.runs}) | {lanes:.2f} | {ready:.2f} | {analyses} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
