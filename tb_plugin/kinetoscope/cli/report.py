"""`kinetoscope report PATH... [--format text|json|markdown]`: the analyses of trace files or logdirs
(from their `kinetoscope index` sidecars where those match).

Exit status: 0 when every trace loaded, 1 when some failed (their reasons are printed), 2 for usage
errors (unknown option, a path that does not exist).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, Optional

from ..analysis.distributed.jobs import JobGroup, job_groups, multi_rank_jobs
from ..analysis.distributed.ranks import rank_digest, ranks_view
from ..analysis.report import with_run_verdicts
from ..formats.report import RENDERERS, render_independent, render_overview, render_ranks, render_run
from ..formats.schema import versioned
from ..index.readers import cache_report, missing, report_from_cache, report_from_index
from ..pipeline import analyze_and_report, with_graph_reference
from ..trace.budgets import CLI_OPTIONS
from ..trace.cache import default_cache_dir
from ..trace.discovery import TraceFile, resolve
from ..trace.loader import TraceError, load_trace, resource_message
from ..trace.remote import OPTIONS_ENV, redact
from ..trace.storage import StorageError


def add_parser(sub: Any, storage_options: Callable[[str], str]) -> None:
    """Register the `report` subcommand on the CLI's subparsers."""
    report = sub.add_parser("report", help="analyse trace files or logdirs (local paths or fsspec URLs)")
    report.add_argument("paths", nargs="+", metavar="PATH", help="a trace file or a logdir")
    report.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    add_budgets(report)
    cache = report.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", default=None, help=f"decoded-model cache (default {default_cache_dir()})")
    cache.add_argument("--no-cache", action="store_true", help="always decode from the files")
    report.add_argument("--no-index", action="store_true", help="ignore the sidecars of `kinetoscope index`; decode")
    report.add_argument("--storage-options", type=storage_options, default=None, metavar="JSON",
                        help=f"fsspec storage options for s3://, gs://, abfs://, hdfs:// paths: a JSON object, or @FILE "
                             f"holding one (default ${OPTIONS_ENV}; credentials also come from the environment and the "
                             f"backend's config files, and are never printed)")


def add_budgets(parser: argparse.ArgumentParser) -> None:
    """The budget options (--max-... of `trace.budgets.CLI_OPTIONS`), defaulting to their environment variables."""
    budgets = parser.add_argument_group("budgets (default: the environment variables, see README)")
    for option, env, metavar, bounds in CLI_OPTIONS:
        budgets.add_argument(option, type=float, metavar=metavar, help=f"{bounds} (${env})")


def entry_for(trace: TraceFile, cache_dir, use_index: bool = False, notes: Optional[list] = None) -> dict:
    """The report entry of one trace; load failures become `error` entries, never exceptions. With
    `use_index`, from the trace's `kinetoscope index` sidecar when it matches (else why not goes to `notes`)."""
    base = {"path": trace.path, "run": trace.run, "worker": trace.worker,
            "span": trace.span_text, "error": None}
    if use_index:
        found, reason = report_from_index(trace.path, trace.worker)
        if found is not None:
            return {**base, **found}
        if notes is not None:
            notes.append(reason)
            if not missing(reason):
                print(f"kinetoscope: {trace.path}: index sidecar not used ({reason}); decoding", file=sys.stderr)
    if cache_dir is not None:
        found, damaged = report_from_cache(trace.path, trace.worker, cache_dir)
        if found is not None:
            return {**base, **found}
        if damaged:
            print(f"kinetoscope: {trace.path}: cached analyses not used ({damaged}); decoding", file=sys.stderr)
    try:
        model = with_graph_reference(load_trace(trace.path, cache_dir=cache_dir), trace.path)
        done = analyze_and_report(model)
        digest = rank_digest(model, done.analysis, worker=trace.worker)
        if cache_dir is not None:
            cache_report(trace.path, cache_dir, done.report, digest)
        return {**base, **done.report, "_digest": digest}
    except TraceError as exc:
        return {**base, "error": {"message": str(exc)}}
    except (RecursionError, MemoryError) as exc:
        return {**base, "error": {"message": f"{trace.path}: {resource_message(exc)}"}}
    except Exception as exc:  # noqa: BLE001 - one bad file never stops the report of the others
        return {**base, "error": {"message": redact(f"{trace.path}: internal error while analysing ({type(exc).__name__}: "
                                                    f"{str(exc)[:200]}); please report it with the file")}}


def multi_rank_views(entries: list[dict]) -> tuple[dict[str, dict], dict[str, list[JobGroup]]]:
    """The ranks view of every job with two ranks or more present, and every run's jobs and independent
    workers (`jobs.job_groups`), from the entries' digests (which are removed from the entries).

    A folder of independent profiles has no ranks view. A run holding one job is keyed by its name; a run
    holding several, by `RUN [job K]`.
    """
    by_run: dict[str, list] = {}
    for entry in entries:
        digest = entry.pop("_digest", None)
        if digest is not None:
            by_run.setdefault(entry["run"], []).append(digest)
    views, groups = {}, {}
    for run, digests in by_run.items():
        groups[run] = job_groups(digests)
        jobs = multi_rank_jobs(groups[run])
        independent = [w for g in groups[run] if not g.is_job for w in g.workers]
        for k, job in enumerate(jobs):
            members = [d for d in digests if d.worker in job.workers]
            name = run if len(jobs) == 1 else f"{run} [job {k + 1}]"
            views[name] = {**ranks_view(members), "basis": job.basis, "not_ranks": independent}
    return views, groups


def run(args: argparse.Namespace) -> int:
    """The `report` subcommand; returns the exit status."""
    traces: list[TraceFile] = []
    for path in args.paths:
        try:
            found = resolve(path)
        except (FileNotFoundError, ValueError, ImportError) as exc:
            print(redact(f"kinetoscope: no such file or directory: {path} ({exc})"), file=sys.stderr)
            return 2
        except StorageError as exc:  # a remote path that cannot be reached or read: the problem, redacted
            print(redact(f"kinetoscope: {path}: {exc}"), file=sys.stderr)
            return 1
        if not found:
            print(f"kinetoscope: no trace files under {path}", file=sys.stderr)
        traces.extend(found)
    cache_dir = None if args.no_cache else (args.cache_dir or default_cache_dir())
    notes: list = []  # why sidecars were not used
    entries = [entry_for(t, cache_dir, not args.no_index, notes) for t in traces]  # one model at a time
    if not args.no_index and (any(not missing(n) for n in notes) or len(notes) < len(traces)):
        print(f"kinetoscope: {len(traces) - len(notes)} of {len(traces)} traces read from their index sidecars",
              file=sys.stderr)
    ranks, groups = multi_rank_views(entries)
    runs, entries = with_run_verdicts(entries, groups)
    if args.format == "json":
        jobs = {run: [g.entry() for g in found] for run, found in groups.items() if len(found) > 1}
        json.dump(versioned({"runs": runs, "ranks": ranks, "jobs": jobs, "traces": entries}), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        markdown = args.format == "markdown"
        for name, view in ranks.items():  # a multi-rank run's summary first, then every trace on a line
            sys.stdout.write(render_ranks(name, view, markdown=markdown) + "\n")
        for run, found in groups.items():
            if len(found) > 1 and not any(g.is_job and len(g.workers) > 1 for g in found):
                sys.stdout.write(render_independent(run, [g.entry() for g in found], markdown=markdown) + "\n")
        if len(entries) > 1:
            sys.stdout.write(render_overview(entries, markdown=markdown) + "\n")
        headed = set()
        for entry in entries:
            pooled = next((r for r in runs if r["run"] == entry.get("run") and str(entry.get("worker")) in r["workers"]), None)
            if pooled is not None and id(pooled) not in headed and pooled["spans"] > 1:
                sys.stdout.write(render_run(pooled, markdown=markdown) + "\n")
                headed.add(id(pooled))
            sys.stdout.write(RENDERERS[args.format](entry) + "\n")
    failed = [e for e in entries if e["error"]]
    for entry in failed:
        print(redact(f"kinetoscope: failed: {entry['error']['message']}"), file=sys.stderr)
    return 1 if failed or not traces else 0
