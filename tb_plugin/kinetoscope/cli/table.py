"""`kinetoscope table SPAN --by op|kernel|module|module-tree|memory|annotation|sequences|roofline [--window A:B]
[--group name|stack|shape|module] [--split name|launch|op-launch] [--side gpu|cpu] [--scope all|top]
[--min-len N] [--max-len N] [--top N] [--format csv|json|markdown|text]`: one profiler table of one trace file,
every row, for scripts.

`--by roofline`: one row per (op name, input dims, input types) that launched GPU work: its work per call, kernel
time, achieved TFLOP/s and TB/s, arithmetic intensity, bound and share of the device's roof
(analysis/roofline/figures.py; the device's peaks from the built-in table, or `--peaks FILE`).

SPAN is a trace file (local path or fsspec URL). `--window A:B` keeps the window [A, B) in µs from the trace
start (either end may be left out: `:5000`, `1000:`). Exit status: 0, 1 when the trace does not load, 2 for
usage errors.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from ..analysis.roofline.figures import roofline_rows
from ..analysis.tables.annotations import SCOPES, SIDES
from ..analysis.tables.extra import EXTRA_KINDS, extra_rows
from ..analysis.tables.index import OP_GROUPS, TableIndex
from ..analysis.tables.kernel_sequences import MAX_LEN, MAX_TOP
from ..analysis.tables.kernels import KERNEL_SPLITS
from ..analysis.tables.top_rows import table_rows
from ..formats.table import write
from ..pipeline import trace_roofline, with_graph_reference
from ..trace.cache import default_cache_dir
from ..trace.loader import TraceError, load_trace


def add_parser(sub: Any) -> None:
    """Register the `table` subcommand on the CLI's subparsers."""
    table = sub.add_parser("table", help="one profiler table (ops, kernels, modules, the module tree, memory per op, "
                                         "user annotations or frequent kernel sequences) of a trace file, for scripts")
    table.add_argument("span", metavar="SPAN", help="a trace file (local path or fsspec URL)")
    table.add_argument("--by", choices=("op", "kernel", "module", *(k.replace("_", "-") for k in EXTRA_KINDS),
                                        "roofline"),
                       default="op", help="module-tree: the nn.Module hierarchy (torch-tb-profiler's Module view); "
                       "memory: allocations per op and device (its memory statistics); annotation: time per user "
                       "annotation (HTA's breakdown); sequences: the most frequent kernel sequences by time; "
                       "roofline: each op shape's work, achieved TFLOP/s and TB/s and share of the device's roof "
                       "(record_shapes=True traces)")
    table.add_argument("--window", default=None, metavar="A:B", help="keep [A, B) µs from the trace start")
    table.add_argument("--group", choices=OP_GROUPS, default="name",
                       help="stack: one op row per (op, innermost user Python frame; with_stack traces); "
                            "shape: one op row per (op, input shapes; record_shapes traces); "
                            "module: one op row per (op, innermost nn.Module; with_modules traces)")
    table.add_argument("--split", choices=("name", *(k.replace("_", "-") for k in KERNEL_SPLITS)), default="name",
                       help="--by kernel: launch: one row per (kernel, grid, block, registers, shared memory); "
                            "op-launch: ... and launching op (torch-tb-profiler's kernel grouping)")
    table.add_argument("--side", choices=SIDES, default="gpu", help="--by annotation: GPU ranges or CPU ranges")
    table.add_argument("--scope", choices=SCOPES, default="all",
                       help="--by annotation: all (nested ones too, as HTA) or top (outermost, no ProfilerStep)")
    table.add_argument("--min-len", type=int, default=3, help="--by sequences: fewest kernels in a sequence")
    table.add_argument("--max-len", type=int, default=8, help=f"--by sequences: most kernels (at most {MAX_LEN})")
    table.add_argument("--top", type=int, default=20, help=f"--by sequences: sequences shown (at most {MAX_TOP})")
    table.add_argument("--root", default="", metavar="OP",
                       help="--by sequences: HTA's patterns instead: the shallowest ops whose name contains OP, "
                            "each with the GPU work it launched (at least --min-len), by count")
    table.add_argument("--format", choices=("csv", "json", "markdown", "text"), default="text")
    cache = table.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", default=None, help=f"decoded-model cache (default {default_cache_dir()})")
    cache.add_argument("--no-cache", action="store_true", help="always decode from the file")


def parse_window(text: Optional[str]) -> Optional[tuple[Optional[float], Optional[float]]]:
    """`A:B` (µs, either side optional) -> (A, B); None for no window.

    Raises:
        ValueError: not two numbers around one colon, or B <= A.
    """
    if text is None:
        return None
    parts = text.split(":")
    if len(parts) != 2:
        raise ValueError(f"--window must be A:B (µs from the trace start), not {text!r}")
    try:
        start, end = (float(p) if p.strip() else None for p in parts)
    except ValueError:
        raise ValueError(f"--window must be A:B with numbers (µs), not {text!r}") from None
    if start is not None and end is not None and end <= start:
        raise ValueError(f"--window end must be after its start, not {text!r}")
    return start, end


def run(args: argparse.Namespace) -> int:
    """The `table` subcommand; returns the exit status."""
    try:
        window_us = parse_window(args.window)
    except ValueError as exc:
        print(f"kinetoscope table: {exc}", file=sys.stderr)
        return 2
    try:
        model = load_trace(args.span, cache_dir=None if args.no_cache else (args.cache_dir or default_cache_dir()))
        model = with_graph_reference(model, args.span)
    except TraceError as exc:
        print(f"kinetoscope table: {exc}", file=sys.stderr)
        return 1
    except FileNotFoundError:
        print(f"kinetoscope table: no such file: {args.span}", file=sys.stderr)
        return 2
    window = None
    if window_us is not None:
        start, end = window_us
        base = model.start_ns
        window = (base + int(round((start or 0.0) * 1e3)),
                  max(model.stop_ns, base + 1) if end is None else base + int(round(end * 1e3)))
    by, split = args.by.replace("-", "_"), args.split.replace("-", "_")
    if args.group != "name" and by != "op":
        print(f"kinetoscope table: --group {args.group} applies to --by op", file=sys.stderr)
        return 2
    if split != "name" and by != "kernel":
        print(f"kinetoscope table: --split {args.split} applies to --by kernel", file=sys.stderr)
        return 2
    index = TableIndex.build(model)
    try:
        if by == "roofline":
            rows, totals = roofline_rows(model, trace_roofline(model, index), window)
        elif by in EXTRA_KINDS:
            rows, totals = extra_rows(model, index, by, window, side=args.side, scope=args.scope, min_len=args.min_len,
                                      max_len=args.max_len, top=args.top, root=args.root)
        else:
            rows, totals = table_rows(model, index, by, window, group=args.group, split=split)
    except ValueError as exc:
        print(f"kinetoscope table: {exc}", file=sys.stderr)
        return 2
    write(rows, totals, by, args.format, sys.stdout, group=args.group, split=split)
    return 0
