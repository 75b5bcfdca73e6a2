"""`kinetoscope table SPAN --by op|kernel|module [--window A:B] [--group name|stack|shape|module] [--format csv|json|text]`: one profiler table
of one trace file, every row, for scripts.

SPAN is a trace file (local path or fsspec URL). `--window A:B` keeps the window [A, B) in µs from the trace
start (either end may be left out: `:5000`, `1000:`). Exit status: 0, 1 when the trace does not load, 2 for
usage errors.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from ..analysis.table_report import table_rows
from ..analysis.tables import OP_GROUPS, TableIndex
from ..formats.table import write
from ..trace.cache import default_cache_dir
from ..trace.loader import TraceError, load_trace


def add_parser(sub: Any) -> None:
    """Register the `table` subcommand on the CLI's subparsers."""
    table = sub.add_parser("table", help="one profiler table (ops, kernels or modules) of a trace file, for scripts")
    table.add_argument("span", metavar="SPAN", help="a trace file (local path or fsspec URL)")
    table.add_argument("--by", choices=("op", "kernel", "module"), default="op")
    table.add_argument("--window", default=None, metavar="A:B", help="keep [A, B) µs from the trace start")
    table.add_argument("--group", choices=OP_GROUPS, default="name",
                       help="stack: one op row per (op, innermost user Python frame; with_stack traces); "
                            "shape: one op row per (op, input shapes; record_shapes traces); "
                            "module: one op row per (op, innermost nn.Module; with_modules traces)")
    table.add_argument("--format", choices=("csv", "json", "text"), default="text")
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
    if args.group != "name" and args.by != "op":
        print(f"kinetoscope table: --group {args.group} applies to --by op", file=sys.stderr)
        return 2
    rows, totals = table_rows(model, TableIndex.build(model), args.by, window, group=args.group)
    write(rows, totals, args.by, args.format, sys.stdout, group=args.group)
    return 0
