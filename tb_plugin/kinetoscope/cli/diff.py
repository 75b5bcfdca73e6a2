"""`kinetoscope diff BASELINE CANDIDATE [--format text|json|markdown] [--fail-if RULE ...] [--ignore-noise]`.

Each side is a trace file or a logdir, local or an fsspec URL (all its traces form the side: its spans in
time order, one rank per worker). Exit status: 0 when no rule is broken, 1 when one is (the output names
the rule, its figures and the top changes), 2 for a bad rule, a bad path, or a side with no trace that
loads.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Optional

from ..analysis.compare.figures import Side, figures_of, side
from ..analysis.compare.gate import RuleError, check, parse_rule
from ..analysis.compare.sides import compare_sides
from ..analysis.report import analyze
from ..formats.compare import figure, pct, render
from ..formats.schema import versioned
from ..pipeline import with_graph_reference
from ..trace.cache import default_cache_dir
from ..trace.discovery import TraceFile, resolve
from ..trace.loader import TraceError, load_trace, resource_message
from ..trace.storage import is_process_local


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register the `diff` subcommand on the CLI's subparsers."""
    diff = sub.add_parser("diff", help="compare a baseline with a candidate (files or logdirs); a CI gate with --fail-if",
                          description=__doc__.split("\n\n")[0])
    diff.add_argument("baseline", help="trace file or logdir (local path or fsspec URL)")
    diff.add_argument("candidate", help="trace file or logdir (local path or fsspec URL)")
    diff.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    diff.add_argument("--fail-if", action="append", default=[], metavar="RULE",
                      help="exit 1 when the rule holds, e.g. 'step_time > +5%%' or 'exposed_comm > +2ms' (README: gate)")
    diff.add_argument("--ignore-noise", action="store_true", help="a change within the step-to-step noise can break a rule")
    diff.add_argument("--jobs", type=int, default=None, metavar="N",
                      help=f"traces read at once, each in a process of its own (default: the CPUs, at most {MAX_JOBS})")
    cache = diff.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", default=None, help=f"decoded-model cache (default {default_cache_dir()})")
    cache.add_argument("--no-cache", action="store_true", help="always decode from the files")
    return diff


MAX_JOBS = 4  # each job holds one model at a time (about 0.75x its file's size at its peak)


def _figures_job(job: tuple[str, str, Any]) -> tuple[str, Any]:
    """("ok", TraceFigures) or ("error", message) for one trace; runs in a worker process."""
    path, worker, cache_dir = job
    try:
        model = with_graph_reference(load_trace(path, cache_dir=cache_dir), path)
        return "ok", figures_of(model, analyze(model), worker)
    except TraceError as exc:
        return "error", str(exc)
    except (RecursionError, MemoryError) as exc:
        return "error", f"{path}: {resource_message(exc)}"


def _ordered(traces: list[TraceFile]) -> list[TraceFile]:
    return sorted(traces, key=lambda t: (t.worker, t.span if t.span is not None else -1, t.path))


def figures_all(jobs: list[tuple[str, str, Any]], workers: int) -> list[tuple[str, Any]]:
    """Every job's outcome, in order: several traces are read at once in worker processes (decoding
    holds one core per trace), one model per process at a time. Fork is cheap but only safe in a process
    with a single thread; otherwise the workers are spawned."""
    workers = min(workers, len(jobs))
    if workers <= 1 or any(is_process_local(path) for path, _, _ in jobs):  # a worker cannot see memory://
        return [_figures_job(job) for job in jobs]
    method = "fork" if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method)) as pool:
        return list(pool.map(_figures_job, jobs))


def load_side(label: str, traces: list[TraceFile], cache_dir: Any, workers: int = 1) -> Side:
    """Load and digest a side's traces; failures are kept with their reasons."""
    return _side_of(label, figures_all([(t.path, t.worker, cache_dir) for t in _ordered(traces)], workers))


def _side_of(label: str, outcomes: list[tuple[str, Any]]) -> Side:
    return side(label, [v for k, v in outcomes if k == "ok"], tuple(v for k, v in outcomes if k != "ok"))


def run(args: argparse.Namespace) -> int:
    """The `diff` subcommand; returns the exit status."""
    try:
        rules = [parse_rule(r) for r in args.fail_if]
    except RuleError as exc:
        print(f"kinetoscope diff: {exc}", file=sys.stderr)
        return 2
    cache_dir = None if args.no_cache else (args.cache_dir or default_cache_dir())
    found = []
    for path in (args.baseline, args.candidate):
        try:
            found.append(_ordered(resolve(path)))
        except (FileNotFoundError, ValueError, ImportError) as exc:
            print(f"kinetoscope diff: no such file or directory: {path} ({exc})", file=sys.stderr)
            return 2
    jobs = [(t.path, t.worker, cache_dir) for traces in found for t in traces]
    outcomes = figures_all(jobs, args.jobs if args.jobs is not None else min(os.cpu_count() or 1, MAX_JOBS))
    sides = [_side_of(args.baseline, outcomes[:len(found[0])]), _side_of(args.candidate, outcomes[len(found[0]):])]
    for path, loaded in zip((args.baseline, args.candidate), sides):
        if not loaded.ranks:
            why = "; ".join(loaded.failed) or "no trace files"
            print(f"kinetoscope diff: nothing to compare in {path}: {why}", file=sys.stderr)
            return 2
    result = compare_sides(*sides)
    gate = check(rules, result["metrics"], ignore_noise=args.ignore_noise) if rules else None
    _write(result, gate, args.format)
    broken = [g for g in gate or [] if g["broken"]]
    top = result["changes"]["rows"][:3]
    for g in broken:
        print(f"kinetoscope diff: rule broken: {g['rule']!r} ({_figures(g)}); top changes per step: "
              + ", ".join(f"{r['name']} {_change(r['delta_us'])}" for r in top), file=sys.stderr)
    return 1 if broken else 0


def _write(result: dict[str, Any], gate: Optional[list[dict[str, Any]]], fmt: str) -> None:
    if fmt == "json":
        json.dump(versioned({**result, "gate": gate}), sys.stdout, indent=1, allow_nan=False, default=_finite)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(result, gate, markdown=fmt == "markdown"))


def _finite(value: Any) -> Any:
    raise TypeError(f"not JSON: {type(value).__name__}")


def _change(us: float) -> str:
    return figure(us, "us", True)


def _figures(g: dict[str, Any]) -> str:
    return (f"{figure(g['base'], g['unit'])} -> {figure(g['cand'], g['unit'])}, {figure(g['delta'], g['unit'], True)} "
            f"{pct(g['delta_pct'])}")
