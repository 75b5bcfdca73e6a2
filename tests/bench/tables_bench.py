"""The profiler tables and the name search at scale: the `tables` and `search` routes on the 10x ResNet trace.

The plugin app is built in process (as TensorBoard builds it) on a logdir holding the trace, with no model
cache, and every request goes through `werkzeug.test.Client` (routing, parsing, the tables and the JSON
encoding are timed; the network is not). Once the span is ready:
- `tables` x 300: `by` op/kernel/module, the whole trace and random windows (log-uniform from the whole trace
  down to 100 µs wide), random sort keys, a name filter on a fifth of them, random pages (target p99 < 100 ms);
- `search` x 200: op and kernel name fragments, common and rare (`add`, `relu`, `conv`, `Memcpy`, ...), one
  that matches nothing, at random offsets (target p99 < 50 ms).
Parameters come from a seeded RNG, so every run sends the same requests.

Usage: .venv/bin/python tests/bench/tables_bench.py [--trace .bench/traces/resnet50_nw0_x10.pt.trace.json]
       [--out .bench/tables.md]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tb_plugin"))

from layout import link_trace  # noqa: E402
from worker_common import write_section  # noqa: E402 - tests/bench is the script's folder

PREFIX = "/data/plugin/kinetoscope"
OP_SORTS = ("-gpu_total", "-cpu_total", "-cpu_self", "calls", "name", "-launches", "-gpu_mean")
KERNEL_SORTS = ("-total", "-calls", "max", "-share", "name", "-mean")
FILTERS = ("conv", "aten::add", "batch", "elementwise", "Backward")
QUERIES = ("aten::add_", "relu", "conv", "Memcpy", "elementwise_kernel", "cudnn", "aten::copy_", "Optimizer", "x",
           "no-such-name-anywhere")


def _quantiles(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
    return {"p50": statistics.median(ordered), "p99": p99, "max": ordered[-1]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=REPO / ".bench" / "traces" / "resnet50_nw0_x10.pt.trace.json")
    parser.add_argument("--out", type=Path, default=REPO / ".bench" / "tables.md")
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--searches", type=int, default=200)
    args = parser.parse_args()
    if not args.trace.is_file():
        sys.path.insert(0, str(REPO / "tests" / "bench"))
        from make_traces import build
        args.trace = build("resnet50_nw0", 10, False, args.trace.parent)
    from kinetoscope.server.plugin import KinetoscopePlugin
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client

    scratch = Path(tempfile.mkdtemp(prefix="ks-tables-"))
    logdir = scratch / "logs" / "resnet"
    logdir.mkdir(parents=True)
    link_trace(args.trace, logdir / "worker0.1.pt.trace.json")
    os.environ["KINETOSCOPE_CACHE_DIR"] = str(scratch / "cache")
    plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=str(scratch / "logs"), multiplexer=None))
    apps = plugin.get_plugin_apps()

    def get(route: str, params: dict) -> tuple[float, int, dict]:
        start = time.perf_counter()
        response = Client(apps[f"/{route}"]).get(f"{PREFIX}/{route}?{urlencode(params)}")
        data = response.get_data()
        elapsed = (time.perf_counter() - start) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"{route} {params}: {response.status_code} {data[:300]!r}")
        return elapsed, len(data), json.loads(data)

    try:
        deadline = time.monotonic() + 600
        while True:
            runs = json.loads(Client(apps["/runs"]).get(f"{PREFIX}/runs").get_data())["runs"]
            if runs or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        sid = runs[0]["workers"][0]["spans"][0]["id"]
        start = time.perf_counter()
        while Client(apps["/summary"]).get(f"{PREFIX}/summary?span={sid}").status_code == 409:
            time.sleep(0.05)
        ready_s = time.perf_counter() - start
        duration_us = json.loads(Client(apps["/summary"]).get(f"{PREFIX}/summary?span={sid}").get_data())["duration_us"]
        rng = random.Random(16)
        table_ms, table_bytes, search_ms, search_bytes = [], [], [], []
        by_kind: dict[str, list[float]] = {}
        for i in range(args.tables):
            by = ("op", "kernel", "module")[i % 3]
            params: dict = {"span": sid, "by": by, "sort": rng.choice(KERNEL_SORTS if by == "kernel" else OP_SORTS),
                            "limit": rng.choice((20, 50, 100, 500)), "offset": rng.choice((0, 0, 0, 20))}
            if i % 10:
                width = math.exp(rng.uniform(math.log(100.0), math.log(duration_us)))
                t0 = rng.uniform(0, max(duration_us - width, 0))
                params.update(start_us=round(t0, 3), end_us=round(t0 + width, 3))
            if i % 5 == 4:
                params["filter"] = rng.choice(FILTERS)
            ms, size, _ = get("tables", params)
            by_kind.setdefault(f"{by}, {'whole trace' if 'start_us' not in params else 'window'}", []).append(ms)
            table_ms.append(ms)
            table_bytes.append(size)
        hits = {}
        for i in range(args.searches):
            query = QUERIES[i % len(QUERIES)]
            ms, size, body = get("search", {"span": sid, "q": query, "offset": rng.choice((0, 0, 100, 1000)), "limit": 100})
            hits[query] = body["total"]
            search_ms.append(ms)
            search_bytes.append(size)
    finally:
        plugin.service().close()
        shutil.rmtree(scratch, ignore_errors=True)
    t, s = _quantiles(table_ms), _quantiles(search_ms)
    text = (f"# Profiler tables and search (issue 16)\n\nCommand: `.venv/bin/python tests/bench/tables_bench.py` on "
            f"`{args.trace.name}` ({args.trace.stat().st_size / 1e6:.0f} MB, {duration_us / 1e6:.1f} s of trace), "
            f"served in process through werkzeug's test client; span ready (cold decode, analyses, table and search "
            f"indexes) in {ready_s:.1f} s.\n\n"
            "| route | requests | p50 | p99 | max | largest body | target |\n|---|---|---|---|---|---|---|\n"
            f"| `tables` (op/kernel/module, whole trace and random windows, sorts, filters, pages) | {len(table_ms)} | "
            f"{t['p50']:.1f} ms | {t['p99']:.1f} ms | {t['max']:.1f} ms | {max(table_bytes) / 1e3:.0f} kB | p99 < 100 ms |\n"
            f"| `search` ({len(QUERIES)} name fragments, random pages) | {len(search_ms)} | {s['p50']:.1f} ms | "
            f"{s['p99']:.1f} ms | {s['max']:.1f} ms | {max(search_bytes) / 1e3:.0f} kB | p99 < 50 ms |\n"
            + "".join(f"| `tables` {kind} | {len(ms)} | {_quantiles(ms)['p50']:.1f} ms | {_quantiles(ms)['p99']:.1f} ms | "
                      f"{_quantiles(ms)['max']:.1f} ms | - | - |\n" for kind, ms in sorted(by_kind.items())) + "\n"
            f"Occurrences found: {', '.join(f'`{q}` {n:,}' for q, n in hits.items())}.\n")
    return write_section(args.out, text)


if __name__ == "__main__":
    sys.exit(main())
