"""Build (once, cached) the benchmark trace set under .bench/traces.

Real traces from ../shared/traces and one of the project's samples, repeated in time 1x, 10x and 30x
with samples/scale_trace.py (ids shifted so links stay unique), plain and gzipped. Prints the paths,
one per line, in the order the benchmark should run them.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from layout import BENCH_DIR, REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "samples"))
from scale_trace import scale_trace  # noqa: E402

SHARED = REPO_ROOT.parent / "shared" / "traces"
SOURCES = {
    "resnet50_nw0": SHARED / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz",
    "trace_diff_test": SHARED / "hta" / "trace_diff" / "test" / "test.json.gz",
    "synthetic_mixed": next(iter(sorted((REPO_ROOT / "samples" / "logs" / "synthetic" / "mixed").glob("*.gz"))), None),
}
# (source, repeat, gzip): the 10x and 30x ResNet traces are the headline ones (300 MB / 900 MB); the 90x one
# (about 2.7 GB of JSON) is the GB-scale one (built only with --max-repeat 90).
DEFAULT_SET = [("resnet50_nw0", 1, True), ("trace_diff_test", 1, True), ("synthetic_mixed", 1, True),
               ("resnet50_nw0", 10, False), ("resnet50_nw0", 10, True), ("resnet50_nw0", 30, False), ("resnet50_nw0", 30, True),
               ("resnet50_nw0", 90, False)]


def build(name: str, repeat: int, gz: bool, out_dir: Path) -> Path:
    """The scaled trace's path, building it if it is not there yet."""
    source = SOURCES[name]
    if source is None or not source.is_file():
        raise FileNotFoundError(f"benchmark source for {name!r} not found: {source}")
    out = out_dir / f"{name}_x{repeat}.pt.trace.json{'.gz' if gz else ''}"
    if not out.is_file():
        tmp = out.with_name(out.name + ".part")
        scale_trace(str(source), str(tmp), repeat, gzip=gz)
        tmp.rename(out)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-repeat", type=int, default=30, help="skip scaled traces above this repeat count")
    parser.add_argument("--out-dir", type=Path, default=BENCH_DIR / "traces")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, repeat, gz in DEFAULT_SET:
        if repeat <= args.max_repeat:
            print(build(name, repeat, gz, args.out_dir), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
