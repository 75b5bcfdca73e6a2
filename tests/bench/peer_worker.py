"""Subprocess entry point for the peer tools and the floor.

Run by the harness in a *fresh* interpreter, once per measurement::

    <venv-peers>/bin/python peer_worker.py tbprof TRACE --scratch DIR --result-json OUT
    <venv-peers>/bin/python peer_worker.py tbprof_plugin TRACE --scratch DIR --result-json OUT
    <venv-peers>/bin/python peer_worker.py hta TRACE --scratch DIR --result-json OUT
    <project>/.venv/bin/python peer_worker.py floor TRACE --decoder orjson --result-json OUT

Only the standard library is imported at module level; each tool is imported
inside its runner so that ``import_s`` measures it.  The result JSON holds
``ok``, ``error``, ``timings`` (seconds, measured inside the process) and
``info`` (a few counts proving the tool did the work).  The process leaves
with ``os._exit`` right after writing it, so interpreter teardown (freeing
millions of objects) is not part of any tool's wall time.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Callable

from worker_common import exit_now, keep_alive, new_result, record, stage

T0 = time.perf_counter()

Timings = dict[str, float]
Info = dict[str, Any]

TBPROF_WORKER_SUFFIX = ".pt.trace.json"


def _since(start: float) -> float:
    return time.perf_counter() - start


def _link_into(directory: Path, trace: Path, name: str) -> Path:
    """Symlink ``trace`` as ``directory/name`` and return the link."""
    directory.mkdir(parents=True, exist_ok=True)
    link = directory / name
    link.symlink_to(trace.resolve())
    return link


def _tbprof_name(trace: Path) -> str:
    """A file name torch-tb-profiler's ``WORKER_PATTERN`` accepts (keeps the original if it does)."""
    gz = trace.name.endswith(".gz")
    bare = trace.name[:-3] if gz else trace.name
    if bare.endswith(TBPROF_WORKER_SUFFIX):
        return trace.name
    return "worker0" + TBPROF_WORKER_SUFFIX + (".gz" if gz else "")


def _tbprof_workers(run_dir: Path) -> list[tuple[str, int | None, str]]:
    """(worker, span index, file name) for a run dir, exactly as ``RunLoader.load`` derives them."""
    import bisect
    from collections import defaultdict

    from torch_tb_profiler import consts

    workers: list[tuple[str, str | None, str]] = []
    spans_by_worker: dict[str, list[str]] = defaultdict(list)
    for name in sorted(os.listdir(run_dir)):
        match = consts.WORKER_PATTERN.match(name)
        if not match:
            continue
        worker, span = match.group(1), match.group(2)
        if span is not None:
            span = span[1:]
            bisect.insort(spans_by_worker[worker], span)
        workers.append((worker, span, name))
    index = {(w, s): i for w, spans in spans_by_worker.items() for i, s in enumerate(spans, 1)}
    return [(w, None if s is None else index[(w, s)], name) for w, s, name in workers]


def run_tbprof(trace: Path, scratch: Path, **_: Any) -> tuple[Timings, Info]:
    """torch-tb-profiler 0.4.3: what the plugin does to load a run, in one process.

    Replicates ``RunLoader.load`` + ``RunLoader._process_data`` without the
    spawned worker process and the ``mp.Queue`` round trip:
    ``RunProfileData.parse`` -> ``RunGenerator.generate_run_profile`` ->
    ``DistributedRunProfileData`` for every worker file, then the loader's own
    ``_process_spans`` to add the distributed profiles to the ``Run``.
    """
    stage("import")
    t = time.perf_counter()
    from torch_tb_profiler.profiler.data import DistributedRunProfileData, RunProfileData
    from torch_tb_profiler.profiler.loader import RunLoader
    from torch_tb_profiler.profiler.run_generator import RunGenerator
    from torch_tb_profiler.run import Run

    timings: Timings = {"import_s": _since(t)}
    run_dir = scratch / "logdir" / "run0"
    _link_into(run_dir, trace, _tbprof_name(trace))
    cache_dir = scratch / "cache"
    cache_dir.mkdir()

    t = time.perf_counter()
    run, distributed_run = Run("run0", str(run_dir)), Run("run0", str(run_dir))
    parse_s = generate_s = 0.0
    n_events = 0
    for worker, span, name in _tbprof_workers(run_dir):
        tp = time.perf_counter()
        stage(f"RunProfileData.parse({name})")
        data = RunProfileData.parse(worker, span, str(run_dir / name), str(cache_dir))
        parse_s += _since(tp)
        tg = time.perf_counter()
        stage(f"RunGenerator.generate_run_profile({name})")
        run.add_profile(RunGenerator(worker, span, data).generate_run_profile())
        distributed_run.add_profile(DistributedRunProfileData(data))
        generate_s += _since(tg)
        n_events += len(data.events)
    stage("RunLoader._process_spans")
    loader = RunLoader.__new__(RunLoader)  # only _process_spans is used: no Queue, no Cache manager
    loader.run_name = "run0"
    for profile in loader._process_spans(distributed_run):
        if profile is not None:
            run.add_profile(profile)
    timings.update(parse_s=parse_s, generate_s=generate_s, load_s=_since(t))
    keep_alive(run, distributed_run)
    views = sorted({v.name for p in run.get_profiles() for v in getattr(p, "views", [])})
    return timings, {"events": n_events, "profiles": len(run.get_profiles()), "views": views}


def run_tbprof_plugin(trace: Path, scratch: Path, **_: Any) -> tuple[Timings, Info]:
    """torch-tb-profiler 0.4.3: the plugin's real ``RunLoader(...).load()``.

    Same work as :func:`run_tbprof` but through the plugin's own code path:
    one spawned process per worker file, a ``multiprocessing.Manager`` for the
    cache, the profile pickled back over an ``mp.Queue``.
    """
    stage("import")
    t = time.perf_counter()
    from torch_tb_profiler import io as tb_io
    from torch_tb_profiler.profiler.loader import RunLoader

    timings: Timings = {"import_s": _since(t)}
    run_dir = scratch / "logdir" / "run0"
    _link_into(run_dir, trace, _tbprof_name(trace))
    cache_dir = scratch / "cache"
    cache_dir.mkdir()
    t = time.perf_counter()
    stage("RunLoader.load")
    with tb_io.Cache(str(cache_dir)) as cache:
        run = RunLoader("run0", str(run_dir), cache).load()
        timings["load_s"] = _since(t)
    keep_alive(run)
    profiles = run.get_profiles()
    if not profiles:
        raise RuntimeError("RunLoader produced no profile (the worker process failed: see its log)")
    return timings, {"profiles": len(profiles)}


def run_hta(trace: Path, scratch: Path, **_: Any) -> tuple[Timings, Info]:
    """HolisticTraceAnalysis 0.5.0: ``TraceAnalysis`` + idle-time breakdown + kernel launch stats.

    HTA wants a directory of rank files: it gets a scratch dir holding a
    symlink to the trace.  Figures are not rendered (``visualize=False``).
    """
    stage("import")
    t = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis

    timings: Timings = {"import_s": _since(t)}
    trace_dir = scratch / "hta"
    _link_into(trace_dir, trace, trace.name)
    t = time.perf_counter()
    stage("TraceAnalysis()")
    analyzer = TraceAnalysis(trace_dir=str(trace_dir))
    timings["load_s"] = _since(t)
    ranks = sorted(analyzer.t.traces)  # HTA defaults to rank 0, which a single file may not be
    t = time.perf_counter()
    stage("get_idle_time_breakdown")
    idle, _stats = analyzer.get_idle_time_breakdown(ranks=ranks, visualize=False)
    timings["idle_breakdown_s"] = _since(t)
    t = time.perf_counter()
    stage("get_cuda_kernel_launch_stats")
    launch = analyzer.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    timings["launch_stats_s"] = _since(t)
    timings["analysis_s"] = timings["idle_breakdown_s"] + timings["launch_stats_s"]
    keep_alive(analyzer, idle, launch)
    info = {
        "ranks": ranks,
        "events": int(sum(len(df) for df in analyzer.t.traces.values())),
        "idle_rows": int(len(idle)),
        "launch_rows": int(sum(len(df) for df in launch.values())),
    }
    return timings, info


def _decoder(name: str) -> Callable[[bytes], Any]:
    """The untyped bytes -> Python objects decoder called ``name``."""
    if name == "msgspec":
        import msgspec

        return msgspec.json.decode
    if name == "orjson":
        import orjson

        return orjson.loads
    if name == "simdjson":
        import simdjson

        return simdjson.loads  # full materialisation (not the lazy Parser proxy)
    if name == "json":
        import json as stdlib_json

        return stdlib_json.loads
    raise ValueError(f"unknown decoder {name!r}")


def run_floor(trace: Path, decoder: str = "orjson", **_: Any) -> tuple[Timings, Info]:
    """The physical reference: read the bytes, gunzip if needed, decode to Python objects.

    The cyclic GC is disabled for the whole run: decoders allocate millions of
    acyclic containers and the collections they trigger would otherwise cost
    up to 3x the decode itself; the floor is the best a plain decode can do.
    """
    import gc

    gc.disable()
    t = time.perf_counter()
    decode = _decoder(decoder)
    import gzip

    timings: Timings = {"import_s": _since(t)}
    t = time.perf_counter()
    stage(f"floor {decoder}")
    data = trace.read_bytes()
    timings["read_s"] = _since(t)
    compressed = len(data)
    if trace.name.endswith(".gz"):
        t = time.perf_counter()
        data = gzip.decompress(data)
        timings["gunzip_s"] = _since(t)
    t = time.perf_counter()
    obj = decode(data)
    timings["decode_s"] = _since(t)
    keep_alive(obj)
    timings["load_s"] = sum(v for k, v in timings.items() if k != "import_s")
    events = obj.get("traceEvents", []) if isinstance(obj, dict) else obj
    info = {"decoder": decoder, "gc": "disabled", "bytes_read": compressed, "bytes_json": len(data)}
    return timings, {**info, "events": len(events)}


RUNNERS: dict[str, Callable[..., tuple[Timings, Info]]] = {
    "tbprof": run_tbprof,
    "tbprof_plugin": run_tbprof_plugin,
    "hta": run_hta,
    "floor": run_floor,
}


def main(argv: list[str] | None = None) -> int:
    """Run one tool on one trace and write the result JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tool", choices=sorted(RUNNERS))
    parser.add_argument("trace", type=Path)
    parser.add_argument("--result-json", type=Path, required=True)
    parser.add_argument("--scratch", type=Path, help="empty scratch directory (required by tbprof/hta)")
    parser.add_argument("--decoder", default="orjson", help="floor only: msgspec | orjson | simdjson | json")
    args = parser.parse_args(argv)
    result = new_result(args.tool)
    return record(args.result_json, result,
                  lambda: RUNNERS[args.tool](args.trace, scratch=args.scratch, decoder=args.decoder), T0)

if __name__ == "__main__":
    exit_now(main())
