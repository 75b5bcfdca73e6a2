"""`kinetoscope whatif PATH --edit EDIT [--edit EDIT ...] [--format text|markdown|json]`: re-time the steps of
each trace under PATH (a trace file or a folder, local or fsspec URL) after the edits, by replaying the trace's
own dependencies (analysis/whatif/replay.py), and print the recorded and predicted steps.

Exit status: 0 on success, 1 when a trace failed to load or has no steps, 2 for usage errors (an unknown edit).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..analysis.report import analyze
from ..analysis.whatif.edits import SPELLINGS, STRAGGLER, EditError, parse_edit
from ..analysis.whatif.replay import Replayer, judged_step_ns, whatif_entry
from ..formats.schema import versioned
from ..formats.whatif import render, render_runs
from ..pipeline import trace_roofline, with_graph_reference
from ..trace.cache import default_cache_dir
from ..trace.discovery import resolve
from ..trace.loader import TraceError, load_trace
from ..trace.remote import redact
from ..trace.storage import StorageError
from .report import entry_for, multi_rank_views


def add_parser(sub: Any) -> None:
    """Register the `whatif` subcommand on the CLI's subparsers."""
    parser = sub.add_parser("whatif", help="re-time the steps after an edit (remove DataLoader waits, a sync, ...)",
                            description="Re-time each trace's steps after the edits, replaying the trace's own "
                                        "dependencies. Edits: " + ", ".join(SPELLINGS) + ".")
    parser.add_argument("path", metavar="PATH", help="a trace file or a folder of traces (local path or fsspec URL)")
    parser.add_argument("--edit", action="append", default=[], metavar="EDIT",
                        help="an edit (repeat for several): " + ", ".join(SPELLINGS))
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", default=None, help=f"decoded-model cache (default {default_cache_dir()})")
    cache.add_argument("--no-cache", action="store_true", help="always decode from the file")


def run(args: argparse.Namespace) -> int:
    """The `whatif` subcommand; returns the exit status."""
    try:
        edits = tuple(parse_edit(text) for text in args.edit)
    except EditError as exc:
        print(f"kinetoscope whatif: {exc}", file=sys.stderr)
        return 2
    try:
        traces = resolve(args.path)
    except FileNotFoundError:
        print(redact(f"kinetoscope whatif: no such file or directory: {args.path}"), file=sys.stderr)
        return 2
    except (StorageError, ValueError) as exc:
        print(redact(f"kinetoscope whatif: {args.path}: {exc}"), file=sys.stderr)
        return 1
    if not traces:
        print(f"kinetoscope whatif: no trace files under {args.path}", file=sys.stderr)
        return 1
    cache_dir = None if args.no_cache else (args.cache_dir or default_cache_dir())
    if any(e.kind == "straggler" for e in edits):
        if len(edits) > 1:
            print(f"kinetoscope whatif: {STRAGGLER} cannot be combined with other edits yet", file=sys.stderr)
            return 2
        return _straggler(traces, cache_dir, args.format)
    entries, failed = [], 0
    for trace in traces:
        entry: dict[str, Any] = {"path": trace.path, "run": trace.run, "worker": trace.worker, "span": trace.span_text}
        try:
            model = with_graph_reference(load_trace(trace.path, cache_dir=cache_dir), trace.path)
            roof = trace_roofline(model) if any(e.kind in ("roofline", "precision") for e in edits) else None
            judged = judged_step_ns(analyze(model))  # the verdict's denominator, the share's too
            entry["whatif"] = whatif_entry(Replayer(model, roof).apply(edits), judged_ns=judged)
        except (TraceError, EditError) as exc:
            entry["error"] = redact(str(exc))
            failed += 1
        entries.append(entry)
    if args.format == "json":
        json.dump(versioned({"traces": entries}), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(entries, markdown=args.format == "markdown"))
    return 1 if failed else 0


def _straggler(traces: list, cache_dir, fmt: str) -> int:
    """`straggler=median` on every multi-rank job under PATH (its ranks view, `kinetoscope report`'s)."""
    entries = [entry_for(trace, cache_dir) for trace in traces]
    failed = [e for e in entries if e.get("error")]
    for entry in failed:
        print(redact(f"kinetoscope whatif: {entry['error']['message']}"), file=sys.stderr)
    views, _ = multi_rank_views(entries)
    runs = [{"run": name, "edits": [STRAGGLER], "stragglers": [s["rank"] for s in view["stragglers"]],
             "whatif": view.get("straggler_whatif"),
             "note": None if view.get("straggler_whatif") else "no straggler: no rank held the others back"}
            for name, view in views.items()]
    if not runs:
        print("kinetoscope whatif: straggler=median needs a multi-rank job (two ranks or more of one run)", file=sys.stderr)
        return 1
    if fmt == "json":
        json.dump(versioned({"runs": runs}), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_runs(runs, markdown=fmt == "markdown"))
    return 1 if failed else 0
