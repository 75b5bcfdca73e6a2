"""Filesystem layout of the benchmark harness, derived from the repository root.

Nothing here is hard-coded to a particular checkout: every path is computed
from the location of this file (``<repo>/tests/bench/layout.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

BENCH_SRC_DIR: Path = Path(__file__).resolve().parent
"""``<repo>/tests/bench``: the harness sources."""

REPO_ROOT: Path = BENCH_SRC_DIR.parents[1]
"""The repository root (two levels above this file)."""

BENCH_DIR: Path = REPO_ROOT / ".bench"
"""Git-ignored working area: venvs, traces, results."""

PEERS_VENV: Path = BENCH_DIR / "venv-peers"
"""Separate venv holding torch-tb-profiler and HolisticTraceAnalysis."""

PEERS_STAMP: Path = PEERS_VENV / "bench-env.json"
"""Written once the peers venv is complete: requirements and installed versions."""

FLOOR_SITE: Path = BENCH_DIR / "floor-site"
"""``pip install --target`` folder with the extra JSON decoders used by the floor
(orjson, pysimdjson).  Put on ``PYTHONPATH`` of the main interpreter only for the
floor runs, so the project's own venv is never modified."""

FLOOR_STAMP: Path = FLOOR_SITE / "bench-floor.json"
"""Written once the floor decoders are installed."""

DEFAULT_RESULTS: Path = BENCH_DIR / "results.json"
"""Where :mod:`run_bench` writes its results by default."""

PEER_WORKER: Path = BENCH_SRC_DIR / "peer_worker.py"
"""Script executed in a fresh subprocess for tbprof / HTA / floor runs."""

KINETOSCOPE_WORKER: Path = BENCH_SRC_DIR / "bench_kinetoscope.py"
"""Script executed in a fresh subprocess for the Kinetoscope runs."""


def main_python() -> Path:
    """Interpreter of the project venv (``<repo>/.venv/bin/python``).

    ``KINETOSCOPE_BENCH_PYTHON`` overrides it; when the project venv does not
    exist (e.g. a CI that installs into the system interpreter) the interpreter
    running the harness is used.
    """
    override = os.environ.get("KINETOSCOPE_BENCH_PYTHON")
    if override:
        return Path(override)
    candidate = REPO_ROOT / ".venv" / "bin" / "python"
    return candidate if candidate.exists() else Path(sys.executable)


def peers_python() -> Path:
    """Interpreter of the peers venv (may not exist yet: see :mod:`peers_env`)."""
    return PEERS_VENV / "bin" / "python"


def link_trace(trace: Path, target: Path) -> None:
    """Put a benchmark trace into a logdir without copying it: a hard link, so the logdir holds a regular file
    of its own (Kinetoscope does not follow a symlink out of its logdir, see KINETOSCOPE_ALLOW_LINKS_TO)."""
    os.link(Path(trace).resolve(), target)
