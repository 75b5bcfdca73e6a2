"""Time to first lanes of one large trace: from an S3-compatible server on 127.0.0.1 versus from local disk.

For each trace and each place (local disk, `s3://` on moto's server started here), a fresh TraceService
(decoding in its child process, as in TensorBoard, with no model cache: a cold open) is created on a logdir
holding only that trace; the clock runs from the first scan until the `lanes` answer of the whole trace is
built: scan + read + decode + analyse + lanes, what a person waits for after picking the span. The moto
server's request recorder gives the bytes the S3 runs asked for (each byte once: streamed, not staged).
"Reading alone" streams the same file through the storage layer without decoding it: the transfer that a
load overlaps with its decoding.

    .venv/bin/python tests/bench/remote_bench.py .bench/traces/resnet50_nw0_x10.pt.trace.json.gz \
        .bench/traces/resnet50_nw0_x10.pt.trace.json --runs 3

Prints a markdown table (median of the runs, and the min..max).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/: the S3 server helper
sys.path.insert(0, str(HERE.parents[1] / "tb_plugin"))

from layout import link_trace  # noqa: E402
from s3_server import bytes_requested, moto_server, s3_env, upload  # noqa: E402

BUCKET = "bench"


def first_lanes_s(logdir: str) -> tuple[float, float]:
    """(seconds from a cold service's first scan to the whole trace's lanes answer, of which the scan)."""
    from kinetoscope import pipeline
    from kinetoscope.server import routes
    from kinetoscope.server.service import TraceService
    service = TraceService(logdir, cache_dir=None, rescan_s=3600, prepare=pipeline.prepare)
    try:
        started = time.perf_counter()
        service.scan_now()
        scanned = time.perf_counter()
        (sid, _, _), = service.snapshot()
        service.request_load(sid, wait_s=900)
        lanes = routes.lanes_impl(service, sid, start_us=None, end_us=None, width_px=1600)
        done = time.perf_counter()
        assert lanes["lanes"], "no lanes"
        return done - started, scanned - started
    finally:
        service.close()


def read_alone_s(path: str) -> float:
    """Seconds to stream the file's (uncompressed) content through the storage layer, decoding nothing:
    the transfer alone, which a load overlaps with decoding."""
    from kinetoscope.trace.storage import iter_blocks
    started = time.perf_counter()
    for _block in iter_blocks(path):
        pass
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kinetoscope-remote-bench-") as tmp_dir:
        tmp = Path(tmp_dir)
        with moto_server(tmp / "server") as server:
            os.environ.update(s3_env(server.endpoint, tmp / "home"))
            for trace in args.traces:
                key = f"logs/{trace.stem}/{trace.name}"
                upload(server.endpoint, BUCKET, {key: trace})
                local_dir = tmp / "local" / trace.stem
                local_dir.mkdir(parents=True)
                link_trace(trace, local_dir / trace.name)
                places = (("local disk", str(local_dir)), ("S3 (moto, 127.0.0.1)", f"s3://{BUCKET}/logs/{trace.stem}"))
                results = {place: ([], [], [], []) for place, _ in places}
                for _ in range(args.runs):  # local and S3 in turn, so a change of load on the machine hits both
                    for place, logdir in places:
                        times, scans, requested, reads = results[place]
                        reads.append(read_alone_s(logdir + "/" + trace.name))
                        server.record()
                        total, scan = first_lanes_s(logdir)
                        server.stop_recording()
                        times.append(total)
                        scans.append(scan)
                        requested.append(bytes_requested(server.gets(key), trace.stat().st_size))
                for place, _ in places:
                    rows.append((trace.name, trace.stat().st_size, place, *results[place]))
                    print(f"{trace.name} {place}: {[round(t, 2) for t in results[place][0]]} s", file=sys.stderr)
    print(f"| trace | size | from | time to first lanes (median of {args.runs}) | min..max | scan | reading alone | "
          f"bytes requested from S3 |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for name, size, place, times, scans, requested, reads in rows:
        got = f"{max(requested):,} ({max(requested) / size:.2f}x the file)" if place.startswith("S3") else "-"
        print(f"| {name} | {size / 2**20:.1f} MiB | {place} | {statistics.median(times):.2f} s | {min(times):.2f}..{max(times):.2f} s "
              f"| {statistics.median(scans) * 1000:.0f} ms | {statistics.median(reads):.2f} s | {got} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
