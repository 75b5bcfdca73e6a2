"""`kinetoscope report PATH... [--format text|json|markdown]`: the analyses of trace files or logdirs
(from their `kinetoscope index` sidecars where those match; `kinetoscope index` itself: `index/runner.py`).

Exit status: 0 when every trace loaded, 1 when some failed (their reasons are printed), 2 for usage
errors (unknown option, a path that does not exist).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from contextlib import contextmanager
from typing import Optional

from . import __version__, table_cli
from . import diff as diff_cli
from .analysis.ranks import rank_digest, ranks_view
from .analysis.report import analyze, report_entry, with_run_verdicts
from .formats import RENDERERS, render_overview, render_ranks, render_run
from .index import runner as index_runner
from .index.readers import missing, report_from_index
from .trace.budgets import CLI_OPTIONS
from .trace.cache import default_cache_dir
from .trace.discovery import TraceFile, classify, scan_logdir_checked
from .trace.loader import TraceError, load_trace, resource_message
from .trace.remote import OPTIONS_ENV, OptionsError, options_in_env, parse_options, redact
from .trace.storage import StorageError, identity, is_remote, remote_error, split_url


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kinetoscope", description="Why does the GPU sit idle? Analyses of PyTorch profiler traces.")
    parser.add_argument("--version", action="version", version=f"kinetoscope {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    report = sub.add_parser("report", help="analyse trace files or logdirs (local paths or fsspec URLs)")
    report.add_argument("paths", nargs="+", metavar="PATH", help="a trace file or a logdir")
    report.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    budgets = report.add_argument_group("budgets (default: the environment variables, see README)")
    for option, env, metavar, bounds in CLI_OPTIONS:
        budgets.add_argument(option, type=float, metavar=metavar, help=f"{bounds} (${env})")
    cache = report.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", default=None, help=f"decoded-model cache (default {default_cache_dir()})")
    cache.add_argument("--no-cache", action="store_true", help="always decode from the files")
    report.add_argument("--no-index", action="store_true", help="ignore the sidecars of `kinetoscope index`; decode")
    index_runner.add_parser(sub)
    report.add_argument("--storage-options", type=_storage_options, default=None, metavar="JSON",
                        help=f"fsspec storage options for s3://, gs://, abfs://, hdfs:// paths: a JSON object, or @FILE "
                             f"holding one (default ${OPTIONS_ENV}; credentials also come from the environment and the "
                             f"backend's config files, and are never printed)")
    diff_budgets = diff_cli.add_parser(sub).add_argument_group("budgets (default: the environment variables, see README)")
    for option, env, metavar, bounds in CLI_OPTIONS:
        diff_budgets.add_argument(option, type=float, metavar=metavar, help=f"{bounds} (${env})")
    table_cli.add_parser(sub)
    return parser


def _storage_options(text: str) -> str:
    """argparse type of --storage-options: checked now, applied by `options_in_env` (never echoed)."""
    try:
        parse_options(text)
    except OptionsError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def resolve(path: str) -> list[TraceFile]:
    """The traces a PATH argument names: itself if it is a file, else every trace under it.

    Raises:
        FileNotFoundError: PATH does not exist.
    """
    try:
        fs, inner = split_url(path)
        exists = fs.exists(inner)
        folder = exists and fs.isdir(inner)
    except (FileNotFoundError, MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - remote backends raise their own types: name the problem
        if not is_remote(path) and isinstance(exc, (ValueError, ImportError)):
            raise
        raise remote_error(exc, path, "read") from None
    if not exists:
        raise FileNotFoundError(path)
    if folder:
        return scan_logdir_checked(path)
    name = os.path.basename(inner.rstrip("/"))
    worker, span, _ = classify(name) or (name, None, False)
    try:
        ident = identity(path)
        size, mtime = ident.size, ident.mtime
    except StorageError:
        size, mtime = 0, 0.0
    return [TraceFile(run=os.path.basename(os.path.dirname(inner.rstrip("/"))), worker=worker, span=span,
                      path=path, size=size, mtime=mtime)]


def entry_for(trace: TraceFile, cache_dir, use_index: bool = False, notes: Optional[list] = None) -> dict:
    """The report entry of one trace; load failures become `error` entries, never exceptions. With
    `use_index`, from the trace's `kinetoscope index` sidecar when it matches (else why not goes to `notes`)."""
    base = {"path": trace.path, "run": trace.run, "worker": trace.worker,
            "span": None if trace.span is None else str(trace.span), "error": None}
    if use_index:
        found, reason = report_from_index(trace.path, trace.worker)
        if found is not None:
            return {**base, **found}
        if notes is not None:
            notes.append(reason)
            if not missing(reason):
                print(f"kinetoscope: {trace.path}: index sidecar not used ({reason}); decoding", file=sys.stderr)
    try:
        model = load_trace(trace.path, cache_dir=cache_dir)
        analysis = analyze(model)
        return {**base, **report_entry(model, analysis), "_digest": rank_digest(model, analysis, worker=trace.worker)}
    except TraceError as exc:
        return {**base, "error": {"message": str(exc)}}
    except (RecursionError, MemoryError) as exc:
        return {**base, "error": {"message": f"{trace.path}: {resource_message(exc)}"}}
    except Exception as exc:  # noqa: BLE001 - one bad file never stops the report of the others
        return {**base, "error": {"message": redact(f"{trace.path}: internal error while analysing ({type(exc).__name__}: "
                                                    f"{str(exc)[:200]}); please report it with the file")}}


@contextmanager
def _budgets(args: argparse.Namespace):
    """The budget options, as the environment the storage layer reads them from, for this run only."""
    saved = {env: os.environ.get(env) for _, env, _, _ in CLI_OPTIONS}
    for option, env, _, _ in CLI_OPTIONS:
        value = getattr(args, option.lstrip("-").replace("-", "_"))
        if value is not None:
            os.environ[env] = repr(value)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def multi_rank_views(entries: list[dict]) -> dict[str, dict]:
    """The ranks view of every run with two ranks or more (workers), from the entries' digests (which are
    removed from the entries)."""
    by_run: dict[str, list] = {}
    for entry in entries:
        digest = entry.pop("_digest", None)
        if digest is not None:
            by_run.setdefault(entry["run"], []).append(digest)
    return {run: ranks_view(digests) for run, digests in by_run.items() if len({d.worker for d in digests}) > 1}


def main(argv: Optional[Iterable[str]] = None) -> int:
    """Console entry point; returns the exit status."""
    args = _parser().parse_args(list(argv) if argv is not None else None)
    if args.command == "index":
        return index_runner.main(args)
    if args.command == "table":
        return table_cli.run(args)
    with _budgets(args), options_in_env(getattr(args, "storage_options", None)):
        if args.command == "diff":
            return diff_cli.run(args, resolve)
        return _report(args)


def _report(args: argparse.Namespace) -> int:
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
    ranks = multi_rank_views(entries)
    runs, entries = with_run_verdicts(entries)
    if args.format == "json":
        json.dump({"runs": runs, "ranks": ranks, "traces": entries}, sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        markdown = args.format == "markdown"
        for name, view in ranks.items():  # a multi-rank run's summary first, then every trace on a line
            sys.stdout.write(render_ranks(name, view, markdown=markdown) + "\n")
        if len(entries) > 1:
            sys.stdout.write(render_overview(entries, markdown=markdown) + "\n")
        headed = set()
        by_run = {r["run"]: r for r in runs}
        for entry in entries:
            name = entry.get("run")
            run = by_run.get(name)
            if run is not None and name not in headed and run["spans"] > 1:
                sys.stdout.write(render_run(run, markdown=markdown) + "\n")
            headed.add(name)
            sys.stdout.write(RENDERERS[args.format](entry) + "\n")
    failed = [e for e in entries if e["error"]]
    for entry in failed:
        print(f"kinetoscope: failed: {entry['error']['message']}", file=sys.stderr)
    return 1 if failed or not traces else 0


if __name__ == "__main__":
    sys.exit(main())
