"""The `kinetoscope` command: `report`, `index`, `diff`, `table` and `whatif`, one module each in this folder.

Exit status: 0 on success, 1 when a trace failed (or, for `diff`, a rule broke), 2 for usage errors.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from functools import partial
from typing import Optional

from .. import __version__
from ..analysis.roofline.peaks import PeaksError
from ..index.header import FOLDER as SIDECAR_FOLDER
from ..index.signing import refuse_inside as refuse_keys_inside
from ..pipeline import CAPTURE_FOLDER, GRAPH_REFERENCE_ENV, PEAKS_ENV, read_peaks
from ..trace.budgets import CLI_OPTIONS, in_environment
from ..trace.discovery import SkippedLink, noting_skipped_links
from ..trace.remote import OptionsError, credentials_in_url, options_in_env, parse_options
from ..trace.storage import LINKED_ROOTS_ENV, confined, linked_roots_with, roots_for
from . import diff, index, report, table, whatif


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kinetoscope", description="Why does the GPU sit idle? Analyses of PyTorch profiler traces.")
    parser.add_argument("--version", action="version", version=f"kinetoscope {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    report.add_parser(sub, _storage_options)
    index.add_parser(sub)
    report.add_budgets(diff.add_parser(sub))
    table.add_parser(sub)
    whatif.add_parser(sub)
    for command in sub.choices.values():
        command.add_argument("--allow-links-to", action="append", default=[], metavar="DIR",
                             help=f"follow links in the logdir that lead into DIR (repeatable; also "
                                  f"${LINKED_ROOTS_ENV}). Links out of a logdir are not followed by default, so "
                                  f"a shared logdir cannot point the tool at files elsewhere on this machine")
        command.add_argument("--peaks", default=None, metavar="FILE",
                             help=f"device peak figures (JSON, analysis/roofline/peaks.py) that add to or override "
                                  f"the built-in ones for the roofline (also ${PEAKS_ENV})")
        command.add_argument("--graph-reference", default=None, metavar="PATH",
                             help=f"a trace whose ops launched what the traces' CUDA/HIP graphs replay (their capture "
                                  f"trace, or an eager run of the same model): replayed kernels are given to those ops "
                                  f"(also ${GRAPH_REFERENCE_ENV}; default: the trace of the same rank in a "
                                  f"capture_traces/ folder beside each trace)")
    return parser


def _say_skipped(command: str, said: set[str], link: SkippedLink) -> None:
    """A sink for `noting_skipped_links`: one stderr line per link not followed (each once), remembered in `said`."""
    if link.link not in said:
        said.add(link.link)
        print(f"kinetoscope {command}: {link.remedy()}", file=sys.stderr)


def _storage_options(text: str) -> str:
    """argparse type of --storage-options: checked now, applied by `options_in_env` (never echoed)."""
    try:
        parse_options(text)
    except OptionsError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _budgets(args: argparse.Namespace):
    """The budget options, as the environment the storage layer reads them from, for this run only."""
    given = ((env, getattr(args, option.lstrip("-").replace("-", "_"))) for option, env, _, _ in CLI_OPTIONS)
    return in_environment({env: repr(value) for env, value in given if value is not None})


def _named_paths(args: argparse.Namespace) -> list[str]:
    """The paths the user named: what a command may read inside (`storage.confined`), links out refused."""
    named = {"report": lambda: args.paths, "diff": lambda: [args.baseline, args.candidate],
             "table": lambda: [args.span], "index": lambda: [args.logdir], "whatif": lambda: [args.path]}
    return list(named[args.command]())


def _companion_folders(paths: list[str]) -> list[str]:
    """The folders beside each named trace file that belong to it, when they are real folders there (not links
    out): `capture_traces/` (its graph replays' capture trace: `pipeline.graph_reference_for`) and `.kinetoscope/`
    (its `kinetoscope index` sidecar: a named file's sidecar was refused as lying outside what was named)."""
    found = []
    for path in paths:
        if "://" in path or not os.path.isfile(path):
            continue
        here = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        for name in (CAPTURE_FOLDER, SIDECAR_FOLDER):
            folder = os.path.join(here, name)
            if os.path.isdir(folder) and not os.path.islink(folder) and os.path.dirname(os.path.realpath(folder)) == here:
                found.append(folder)
    return found


def main(argv: Optional[Iterable[str]] = None) -> int:
    """Console entry point; returns the exit status."""
    args = _parser().parse_args(list(argv) if argv is not None else None)
    paths = _named_paths(args)
    for path in paths:
        refused = credentials_in_url(path)
        if refused is not None:
            print(f"kinetoscope {args.command}: {refused}", file=sys.stderr)
            return 2
    args.skipped_links = set()  # links not followed, for an exit status (`index`)
    paths = [*paths, *_companion_folders(paths)]
    allowed = {LINKED_ROOTS_ENV: linked_roots_with(args.allow_links_to)} if args.allow_links_to else {}
    peaks = args.peaks or os.environ.get(PEAKS_ENV, "").strip()
    if peaks:
        try:
            read_peaks(peaks)
        except (OSError, PeaksError) as exc:
            print(f"kinetoscope {args.command}: --peaks {peaks}: {exc}", file=sys.stderr)
            return 2
        allowed[PEAKS_ENV] = os.path.abspath(peaks)
    reference = args.graph_reference or os.environ.get(GRAPH_REFERENCE_ENV, "").strip()
    if reference:  # the user named it: read it wherever it lies, as a named trace is
        if not os.path.isfile(reference):
            print(f"kinetoscope {args.command}: --graph-reference {reference}: no such file", file=sys.stderr)
            return 2
        allowed[GRAPH_REFERENCE_ENV] = reference
        paths = [*paths, reference]
    refuse_keys_inside(roots_for(paths))  # a sidecar key file inside a logdir read here signs and trusts nothing
    with in_environment(allowed), confined(roots_for(paths)), \
            noting_skipped_links(partial(_say_skipped, args.command, args.skipped_links)):
        if args.command == "index":
            return index.run(args)
        if args.command == "table":
            return table.run(args)
        if args.command == "whatif":
            return whatif.run(args)
        with _budgets(args), options_in_env(getattr(args, "storage_options", None)):
            if args.command == "diff":
                return diff.run(args)
            return report.run(args)


def run() -> None:
    """The `kinetoscope` command: `main`, its output flushed, then the process ends without the interpreter freeing
    every object one by one (a GB trace's model and tables: about 0.05 s of a 2 s report). Nothing is left to do by
    then: the decode's and the analyses' threads are idle, every file written is closed. Output to a pipe closed
    early (`kinetoscope report ... | head`) ends the command with status 1 and no traceback."""
    try:
        code = main()
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        code = 1
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)
