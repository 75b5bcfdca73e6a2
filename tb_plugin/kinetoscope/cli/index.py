"""`kinetoscope index LOGDIR`: bring every trace's sidecar up to date (the work itself: `index/runner.py`).

Exit status: 0 when every trace is indexed, 1 when some failed (each named with its reason), 2 for usage errors.
"""
from __future__ import annotations

import argparse
import sys

from ..index import runner, signing
from ..trace.storage import split_url


def add_parser(sub) -> None:
    """Register `index` on the CLI's subparsers."""
    p = sub.add_parser("index", help="write a sidecar per trace (decoded model, analyses, rank summary) so "
                                     "TensorBoard and report open the logdir without decoding",
                       description=runner.__doc__.split("\n\n")[0])
    p.add_argument("logdir", metavar="LOGDIR", help="a logdir (local path or fsspec URL)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                       help="local worker processes (default: the number of CPUs)")
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask cluster (kinetoscope[dask])")
    where.add_argument("--dask-local", type=int, metavar="N", help="run on a local Dask cluster of N worker processes")
    p.add_argument("--force", action="store_true", help="re-index every trace, even up-to-date ones")
    p.add_argument("--verify", action="store_true",
                   help="also compare each trace's full sha256 with its sidecar's (reads every byte)")
    p.add_argument("--quiet", "-q", action="store_true", help="print failures and the summary only")


def run(args: argparse.Namespace) -> int:
    """The `index` command; returns the exit status (0 all indexed, 1 some failed, 2 usage)."""
    for name in ("jobs", "dask_local"):
        value = getattr(args, name)
        if value is not None and value < 1:
            print(f"kinetoscope index: --{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    try:
        fs, inner = split_url(args.logdir)
        if not fs.isdir(inner):
            print(f"kinetoscope index: not a directory: {args.logdir}", file=sys.stderr)
            return 2
    except (OSError, ValueError, ImportError) as exc:
        print(f"kinetoscope index: cannot open {args.logdir}: {exc}", file=sys.stderr)
        return 2
    out = (lambda line: None) if args.quiet else (lambda line: print(line, flush=True))
    try:
        summary = runner.run_index(args.logdir, jobs=args.jobs, scheduler=args.scheduler, dask_local=args.dask_local,
                            force=args.force, verify=args.verify, progress=out)
    except signing.SigningKeyError as exc:
        print(f"kinetoscope index: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"kinetoscope index: Dask is not installed ({exc}); pip install 'kinetoscope[dask]'", file=sys.stderr)
        return 2
    except (OSError, TimeoutError) as exc:
        print(f"kinetoscope index: cannot reach the Dask scheduler {args.scheduler}: {exc}", file=sys.stderr)
        return 2
    if not summary.outcomes and getattr(args, "skipped_links", None):
        print(f"kinetoscope index: no trace files under {args.logdir} (links not followed above)", file=sys.stderr)
        return 1
    for o in summary.failed:
        print(f"kinetoscope index: failed: {o.path}: {o.reason}", file=sys.stderr)
    for line in runner.summary_lines(summary):
        print(line, flush=True)
    return 1 if summary.failed else 0
