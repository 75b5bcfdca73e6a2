"""The command line: writes one synthetic run as a TensorBoard logdir and, optionally, its truth.

Invoked as ``python samples/synth OUTDIR ...`` or, from ``samples/``, ``python -m synth OUTDIR ...``.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .output import dumps_truth, write_run
from .render import ERAS
from .scenarios import SCENARIOS

DESCRIPTION = "Synthetic PyTorch-profiler (Kineto) traces with planted, known truth."


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line arguments."""
    parser = argparse.ArgumentParser(prog="synth", description=DESCRIPTION)
    parser.add_argument("outdir", type=Path, help="log directory to write (a TensorBoard run)")
    parser.add_argument("--scenario", required=True, choices=SCENARIOS)
    parser.add_argument("--era", default="2024", choices=ERAS)
    parser.add_argument("--spans", type=int, default=1, help="profiler cycles (files) to write")
    parser.add_argument("--steps", type=int, default=6, help="recorded steps per span")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gzip", action="store_true", help="write .pt.trace.json.gz")
    parser.add_argument("--worker", help="worker name (default synth_<pid>)")
    parser.add_argument("--truth", type=Path, help="write the truth JSON here (not inside OUTDIR)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    args = _parse_args(argv)
    if args.truth is not None and args.outdir.resolve() in args.truth.resolve().parents:
        print("error: --truth must not be inside OUTDIR (it would be scanned as a run)", file=sys.stderr)
        return 2
    run = write_run(args.outdir, args.scenario, era=args.era, seed=args.seed, steps=args.steps,
                    spans=args.spans, use_gzip=args.gzip, worker=args.worker)
    if args.truth is not None:
        args.truth.parent.mkdir(parents=True, exist_ok=True)
        args.truth.write_text(dumps_truth(run))
    for span in run["spans"]:
        print(args.outdir / span["file"], span["verdict"]["bound"])
    return 0
