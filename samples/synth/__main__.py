"""Runs the command line: ``python samples/synth OUTDIR ...`` or ``python -m synth OUTDIR ...`` from ``samples/``."""
from __future__ import annotations

import sys
from pathlib import Path

if not __package__:
    # Run as a directory: its parent must be on sys.path to import the package, and the directory
    # itself must not be, or its modules would shadow top-level ones of the same name.
    _HERE = Path(__file__).resolve().parent
    sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from synth.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
