"""Create (once, cached) the environments the peer tools and the floor run in.

* ``<repo>/.bench/venv-peers``: a separate venv with torch-tb-profiler 0.4.3 and
  HolisticTraceAnalysis 0.5.0.  Both are installed with ``--no-deps`` and only
  what their code actually imports is added: neither imports ``torch``;
  HTA's declared ``jupyterlab``/``pytest``/``pydot`` requirements are never
  imported by the analysis path (its ``ijson`` backend is optional and off by
  default in 0.5.0), so they are left out.
* ``<repo>/.bench/floor-site``: ``pip install --target`` folder with orjson and
  pysimdjson for the floor, which runs in the project interpreter with this
  folder on ``PYTHONPATH`` (the project venv itself is never modified).

Each environment is stamped with its requirement list and the versions really
installed; a stamp whose requirements differ triggers a rebuild.

Usage::

    .venv/bin/python tests/bench/peers_env.py            # create if needed, print versions
    .venv/bin/python tests/bench/peers_env.py --force    # rebuild from scratch
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from layout import BENCH_DIR, FLOOR_SITE, FLOOR_STAMP, PEERS_STAMP, PEERS_VENV, main_python, peers_python

PEER_PACKAGES: tuple[str, ...] = ("torch-tb-profiler==0.4.3", "HolisticTraceAnalysis==0.5.0")
"""The peers themselves, installed with ``--no-deps``."""

PEER_DEPENDENCIES: tuple[str, ...] = (
    # torch-tb-profiler: pandas, numpy (utils), tensorboard (plugin base, absl, werkzeug).
    # HTA: pandas, numpy, plotly (imported at module level by the analyzers),
    # networkx (critical path module, imported by hta.trace_analysis),
    # psutil (hta.utils), PyYAML (hta.configs).
    # Pinned to the versions this harness was validated with.
    "numpy==2.4.6",
    "pandas==3.1.1",
    "tensorboard==2.21.0",
    "plotly==7.1.0",
    "networkx==3.6.1",
    "psutil==7.2.2",
    "PyYAML==6.0.3",
)

PEER_SMOKE_IMPORTS: tuple[str, ...] = (
    "torch_tb_profiler.profiler.loader",
    "torch_tb_profiler.profiler.data",
    "torch_tb_profiler.profiler.run_generator",
    "hta.trace_analysis",
)

FLOOR_PACKAGES: tuple[str, ...] = ("orjson==3.13.0", "pysimdjson==7.0.2")
"""Extra decoders for the floor (msgspec comes from the project venv)."""

VERSIONS_SNIPPET = (
    "import importlib.metadata as m, json, platform;"
    "print(json.dumps({'python': platform.python_version(),"
    " 'packages': {d.metadata['Name']: d.version for d in m.distributions()}}))"
)

LOG_DIR: Path = BENCH_DIR / "logs"


class EnvSetupError(RuntimeError):
    """Raised when an environment cannot be created; the message ends with the log tail."""


def _run_logged(cmd: list[str], log: Path) -> None:
    """Run ``cmd``, appending its output to ``log``; raise :class:`EnvSetupError` on failure."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        fh.flush()
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False).returncode
    if rc != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise EnvSetupError(f"command failed (rc={rc}): {' '.join(cmd)}\n--- {log} (tail) ---\n{tail}")


def _read_stamp(stamp: Path, requirements: list[str]) -> dict[str, Any] | None:
    """Return the stamp's content if it exists and was made for ``requirements``."""
    try:
        data = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("requirements") == requirements else None


def _query_versions(python: Path, extra_path: Path | None = None) -> dict[str, Any]:
    """Python version and installed distributions as seen by ``python``."""
    env = None if extra_path is None else {**os.environ, "PYTHONPATH": str(extra_path)}
    out = subprocess.run(
        [str(python), "-c", VERSIONS_SNIPPET], capture_output=True, text=True, check=True, env=env
    ).stdout
    return json.loads(out)


def _peer_requirements() -> list[str]:
    return [*PEER_PACKAGES, *PEER_DEPENDENCIES]


def _build_peers_venv(log: Path) -> None:
    """Create the peers venv from scratch (removing a partial one)."""
    if PEERS_VENV.exists():
        shutil.rmtree(PEERS_VENV)
    # Same base interpreter as the project venv, so interpreter start-up is comparable.
    _run_logged([str(main_python()), "-m", "venv", str(PEERS_VENV)], log)
    pip = [str(peers_python()), "-m", "pip", "install", "--disable-pip-version-check"]
    _run_logged([*pip, "--no-deps", *PEER_PACKAGES], log)
    _run_logged([*pip, *PEER_DEPENDENCIES], log)
    smoke = "; ".join(f"import {mod}" for mod in PEER_SMOKE_IMPORTS)
    # Also byte-compiles what the runs import, so the first timed run pays no compile cost.
    _run_logged([str(peers_python()), "-c", smoke], log)


def ensure_peers_env(force: bool = False) -> dict[str, Any]:
    """Create the peers venv if missing (or ``force``); return its stamp.

    The stamp holds ``requirements``, ``python`` and ``packages`` (every
    distribution installed in the venv with its version).
    """
    requirements = _peer_requirements()
    if not force:
        stamp = _read_stamp(PEERS_STAMP, requirements)
        if stamp is not None and peers_python().exists():
            return stamp
    _build_peers_venv(LOG_DIR / "peers-env.log")
    versions = _query_versions(peers_python())
    stamp = {"requirements": requirements, **versions}
    PEERS_STAMP.write_text(json.dumps(stamp, indent=2, sort_keys=True))
    return stamp


def ensure_floor_site(force: bool = False) -> dict[str, Any]:
    """Install the floor's extra decoders into :data:`FLOOR_SITE` if missing; return its stamp."""
    requirements = list(FLOOR_PACKAGES)
    if not force:
        stamp = _read_stamp(FLOOR_STAMP, requirements)
        if stamp is not None:
            return stamp
    if FLOOR_SITE.exists():
        shutil.rmtree(FLOOR_SITE)
    cmd = [str(main_python()), "-m", "pip", "install", "--disable-pip-version-check", "--target", str(FLOOR_SITE)]
    _run_logged([*cmd, *FLOOR_PACKAGES], LOG_DIR / "floor-site.log")
    versions = _query_versions(main_python(), extra_path=FLOOR_SITE)
    stamp = {"requirements": requirements, **versions}
    FLOOR_STAMP.write_text(json.dumps(stamp, indent=2, sort_keys=True))
    return stamp


def pick_versions(stamp: dict[str, Any], names: tuple[str, ...]) -> dict[str, str | None]:
    """Versions of ``names`` (case-insensitive distribution names) from a stamp."""
    lowered = {k.lower().replace("_", "-"): v for k, v in stamp.get("packages", {}).items()}
    return {name: lowered.get(name.lower().replace("_", "-")) for name in names}


PEER_REPORTED: tuple[str, ...] = (
    "torch-tb-profiler",
    "HolisticTraceAnalysis",
    "pandas",
    "numpy",
    "tensorboard",
    "plotly",
    "networkx",
)
FLOOR_REPORTED: tuple[str, ...] = ("msgspec", "orjson", "pysimdjson", "kinetoscope", "numpy")


def main(argv: list[str] | None = None) -> int:
    """CLI: create both environments and print the versions that matter."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true", help="rebuild even if a matching stamp exists")
    args = parser.parse_args(argv)
    try:
        peers = ensure_peers_env(force=args.force)
        floor = ensure_floor_site(force=args.force)
    except EnvSetupError as exc:
        print(f"peers_env: {exc}", file=sys.stderr)
        return 1
    report = {
        "peers_venv": str(PEERS_VENV),
        "peers_python": peers["python"],
        "peers": pick_versions(peers, PEER_REPORTED),
        "floor_site": str(FLOOR_SITE),
        "main_python": floor["python"],
        "main": pick_versions(floor, FLOOR_REPORTED),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
