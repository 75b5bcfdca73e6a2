"""The Kinetoscope side of the benchmark.

As a script, run by the harness in a fresh project interpreter::

    .venv/bin/python tests/bench/bench_kinetoscope.py cold TRACE --result-json OUT [--scratch DIR]
    .venv/bin/python tests/bench/bench_kinetoscope.py warm TRACE --result-json OUT --scratch DIR

* ``cold``: ``load_trace(path, cache_dir=None)`` then ``analyze(model)``.
* ``warm``: ``load_trace(path, cache_dir=DIR)`` twice in the same process; the
  first call builds the cache, the second (timed: ``warm_load_s``) is the
  reopen served from it.

Before either, ``kinetoscope.cli`` is imported: it sets the process up as the CLI and the server's decoder child
run (one OpenBLAS thread, one malloc arena, freed memory held for the next allocations), so the figures are those
a user's ``kinetoscope report`` or TensorBoard tab gets, not those of a bare interpreter.

The API used is exactly ``kinetoscope.trace.loader.load_trace`` and
``kinetoscope.analysis.report.analyze``; if either is missing the run fails
with a message saying so.  The result JSON has the same shape as
:mod:`peer_worker`'s, and the process leaves with ``os._exit`` as it does.

As a module, :func:`run_kinetoscope_cold` / :func:`run_kinetoscope_warm`
are the harness-side runners (see :mod:`peers`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from worker_common import exit_now, keep_alive, new_result, record, stage

if TYPE_CHECKING:
    from peers import RunResult

T0 = time.perf_counter()

Timings = dict[str, float]
Info = dict[str, Any]

LOADER_MODULE = "kinetoscope.trace.loader"
REPORT_MODULE = "kinetoscope.analysis.report"
PROCESS_MODULE = "kinetoscope.cli"  # its import sets the process up as the CLI and the decoder child run


class KinetoscopeMissing(RuntimeError):
    """The Kinetoscope API the benchmark drives is not importable (yet)."""


def _since(start: float) -> float:
    return time.perf_counter() - start


def _import_api(need_analyze: bool) -> tuple[Callable[..., Any], Callable[..., Any] | None]:
    """Import ``load_trace`` (and ``analyze``), raising :class:`KinetoscopeMissing` with a clear message."""
    import importlib

    try:  # the process set up as `kinetoscope report` and the server's decoder child set theirs (kinetoscope/cli)
        importlib.import_module(PROCESS_MODULE)
    except ImportError:
        pass
    wanted = [(LOADER_MODULE, "load_trace")] + ([(REPORT_MODULE, "analyze")] if need_analyze else [])
    found: list[Callable[..., Any]] = []
    for module_name, attr in wanted:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise KinetoscopeMissing(
                f"Kinetoscope API missing: cannot import {module_name} ({exc}); "
                f"the benchmark needs {module_name}.{attr}"
            ) from None
        if not hasattr(module, attr):
            raise KinetoscopeMissing(f"Kinetoscope API missing: {module_name} has no {attr}()")
        found.append(getattr(module, attr))
    return found[0], (found[1] if need_analyze else None)


def _model_info(model: Any) -> Info:
    """A few facts about the model, whatever its exact class offers."""
    info: Info = {"model": type(model).__name__}
    n_events = getattr(model, "n_events", None)
    if isinstance(n_events, int):
        info["events"] = n_events
    return info


def run_cold(trace: Path, **_: Any) -> tuple[Timings, Info]:
    """Cold open: no cache, then the analysis report."""
    stage("import")
    t = time.perf_counter()
    load_trace, analyze = _import_api(need_analyze=True)
    timings: Timings = {"import_s": _since(t)}
    t = time.perf_counter()
    stage("load_trace(cache_dir=None)")
    model = load_trace(str(trace), cache_dir=None)
    timings["load_s"] = _since(t)
    t = time.perf_counter()
    stage("analyze")
    report = analyze(model)  # type: ignore[misc]
    timings["analysis_s"] = _since(t)
    keep_alive(model, report)
    return timings, {**_model_info(model), "report": type(report).__name__}


def run_warm(trace: Path, scratch: Path | None = None, **_: Any) -> tuple[Timings, Info]:
    """Warm reopen: build the cache in ``scratch``, then load again from it (timed)."""
    if scratch is None:
        raise ValueError("warm mode needs --scratch (the cache directory)")
    stage("import")
    t = time.perf_counter()
    load_trace, _ = _import_api(need_analyze=False)
    timings: Timings = {"import_s": _since(t)}
    cache_dir = scratch / "cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    stage("load_trace(cache_dir=DIR), first (builds the cache)")
    first = load_trace(str(trace), cache_dir=str(cache_dir))
    timings["first_load_s"] = _since(t)
    del first
    t = time.perf_counter()
    stage("load_trace(cache_dir=DIR), second (warm)")
    model = load_trace(str(trace), cache_dir=str(cache_dir))
    timings["warm_load_s"] = _since(t)
    keep_alive(model)
    cache_bytes = sum(p.stat().st_size for p in cache_dir.rglob("*") if p.is_file())
    return timings, {**_model_info(model), "cache_bytes": cache_bytes}


MODES: dict[str, Callable[..., tuple[Timings, Info]]] = {"cold": run_cold, "warm": run_warm}


# --------------------------------------------------------------------------- harness side


def run_kinetoscope_cold(trace: Path, timeout_s: float, mem_cap_bytes: int | None = None) -> RunResult:
    """Harness runner: a fresh project interpreter doing the cold open + analysis."""
    from layout import KINETOSCOPE_WORKER, main_python
    from peers import run_worker

    return run_worker(
        "kinetoscope", trace, main_python(), KINETOSCOPE_WORKER, ["cold", str(trace)], timeout_s, mem_cap_bytes
    )


def run_kinetoscope_cold_w1(trace: Path, timeout_s: float, mem_cap_bytes: int | None = None) -> RunResult:
    """Harness runner: the cold open decoded serially (KINETOSCOPE_DECODE_WORKERS=1; the default uses the cores)."""
    from layout import KINETOSCOPE_WORKER, main_python
    from peers import run_worker

    return run_worker("kinetoscope_w1", trace, main_python(), KINETOSCOPE_WORKER, ["cold", str(trace)], timeout_s,
                      mem_cap_bytes, env_extra={"KINETOSCOPE_DECODE_WORKERS": "1"})


def run_kinetoscope_cold_w2(trace: Path, timeout_s: float, mem_cap_bytes: int | None = None) -> RunResult:
    """Harness runner: the cold open with two decode workers (KINETOSCOPE_DECODE_WORKERS=2)."""
    from layout import KINETOSCOPE_WORKER, main_python
    from peers import run_worker

    return run_worker("kinetoscope_w2", trace, main_python(), KINETOSCOPE_WORKER, ["cold", str(trace)], timeout_s,
                      mem_cap_bytes, env_extra={"KINETOSCOPE_DECODE_WORKERS": "2"})


def run_kinetoscope_warm(trace: Path, timeout_s: float, mem_cap_bytes: int | None = None) -> RunResult:
    """Harness runner: warm reopen; the compared time is the second load's, measured in-process."""
    from layout import KINETOSCOPE_WORKER, main_python
    from peers import run_worker

    result = run_worker(
        "kinetoscope_warm", trace, main_python(), KINETOSCOPE_WORKER, ["warm", str(trace)], timeout_s, mem_cap_bytes
    )
    if result.finished:
        result.time_s = result.timings.get("warm_load_s")
    return result


# --------------------------------------------------------------------------- script side


def main(argv: list[str] | None = None) -> int:
    """Run one mode on one trace and write the result JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=sorted(MODES))
    parser.add_argument("trace", type=Path)
    parser.add_argument("--result-json", type=Path, required=True)
    parser.add_argument("--scratch", type=Path, help="empty scratch directory (warm: holds the cache)")
    args = parser.parse_args(argv)
    result = new_result(f"kinetoscope:{args.mode}")
    return record(args.result_json, result, lambda: MODES[args.mode](args.trace, scratch=args.scratch), T0,
                  quiet=(KinetoscopeMissing,))

if __name__ == "__main__":
    exit_now(main())
