"""`kinetoscope index LOGDIR`: bring every trace's sidecar up to date, on a local process pool (default),
on a Dask cluster (`--scheduler tcp://HOST:PORT`) or on a local Dask cluster (`--dask-local N`).

Each trace is one task (`tasks.index_trace`) that reads the trace from the logdir and writes its sidecar
there, so the workers need the logdir at the same path or URL (a shared folder, or object storage) and
kinetoscope installed. Only small outcomes come back: the ranks view of a multi-rank run is combined here
from the ranks' digests (`analysis.ranks.ranks_view`), never from their models, and written to the run's
`.kinetoscope/ranks.json`. Progress is printed as traces complete; a failed trace is named with its reason
and the others go on; the exit status is 1 when any failed.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import posixpath
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Optional

import msgspec

from ..analysis.distributed.jobs import job_groups, multi_rank_jobs
from ..analysis.distributed.ranks import ranks_view
from ..trace.discovery import TraceFile, scan_logdir
from ..trace.storage import StorageError, confined, is_process_local, roots_for
from . import sidecar, signing
from .tasks import CHANGED, FAILED, FRESH, NEW, RESTAMPED, Outcome, index_trace

POOL_RESTARTS = 3  # a worker process that dies breaks the pool: restart it this often, then go one by one
DIED = "the worker process died while indexing it (out of memory?)"


class Summary(msgspec.Struct):
    """What one `index` run did."""

    logdir: str
    executor: str
    outcomes: list[Outcome] = msgspec.field(default_factory=list)
    wall_s: float = 0.0
    startup_s: float = 0.0  # until the executor could take tasks (a Dask cluster started or reached)
    ranks: dict[str, dict] = msgspec.field(default_factory=dict)  # run -> ranks view (multi-rank runs)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == FAILED]


def run_index(logdir: str, *, jobs: Optional[int] = None, scheduler: Optional[str] = None,
              dask_local: Optional[int] = None, force: bool = False, verify: bool = False,
              progress: Callable[[str], None] = lambda line: None) -> Summary:
    """Index every trace under `logdir`; `progress` gets one line per trace as it completes.

    Raises:
        ImportError: Dask asked for but not installed. OSError/TimeoutError: the scheduler is unreachable.
        signing.SigningKeyError: no signing key and none could be made.
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}
    roots = roots_for([logdir])  # nothing outside the logdir is read or written (`storage.confined`)
    signing.refuse_inside(roots)  # a key file inside the logdir signs nothing
    key = signing.signing_key()  # every sidecar of this run signed alike, wherever its task runs: by its id elsewhere
    with confined(roots):
        traces = scan_logdir(logdir)  # never lists `.kinetoscope/` folders, nor links out of the logdir
    by_path = {t.path: t for t in traces}
    paths = list(by_path)
    if is_process_local(logdir) or (not (scheduler or dask_local) and ((jobs or os.cpu_count() or 1) == 1
                                                                                or len(paths) <= 1)):
        executor = "this process" + (" (no worker sees this filesystem)" if is_process_local(logdir) else "")
        results = (index_trace(p, force, verify, roots, key) for p in paths)
    elif scheduler or dask_local:
        executor = f"dask {scheduler}" if scheduler else f"local dask cluster of {dask_local} workers"
        results = _on_dask(paths, force, verify, scheduler, dask_local, timings, roots, signing.key_id(key))
    else:
        n = min(jobs or os.cpu_count() or 1, len(paths))
        executor = f"{n} local processes"
        results = _on_pool(paths, force, verify, n, roots, signing.key_id(key))
    summary = Summary(logdir=logdir, executor=executor)
    width = len(str(len(paths)))
    for outcome in results:
        summary.outcomes.append(outcome)
        trace = by_path.get(outcome.path)
        name = _shown(trace) if trace else outcome.path
        note = f": {outcome.reason}" if outcome.reason and outcome.status != NEW else ""
        progress(f"[{len(summary.outcomes):>{width}}/{len(paths)}] {outcome.status:<11} {name} "
                 f"({outcome.seconds:.2f} s){note}")
    summary.ranks = _ranks(traces, summary.outcomes, roots)
    summary.wall_s = time.perf_counter() - started
    summary.startup_s = timings.get("startup_s", 0.0)
    return summary


def _shown(trace: TraceFile) -> str:
    return f"{trace.run}/{posixpath.basename(trace.path)}"


def summary_lines(summary: Summary) -> list[str]:
    """The closing lines: counts, time, and each multi-rank run's ranks in one line."""
    n = len(summary.outcomes)
    lines = [f"kinetoscope index: {n} traces in {summary.wall_s:.1f} s on {summary.executor}: "
             f"{summary.count(NEW)} indexed, {summary.count(CHANGED)} re-indexed, {summary.count(RESTAMPED)} re-stamped, "
             f"{summary.count(FRESH)} up to date, {summary.count(FAILED)} failed"
             + (f" (cluster ready after {summary.startup_s:.1f} s)" if summary.startup_s else "")]
    for run, view in summary.ranks.items():
        stragglers = ", ".join(f"rank {s['rank']} ({s['worker']})" for s in view["stragglers"]) or "none"
        missing = view["missing_ranks"]
        lines.append(f"ranks of run {run}: {view['ranks_present']} of {view['world_size']} present"
                     f"{'; missing ' + ', '.join(map(str, missing[:20])) if missing else ''}; stragglers: {stragglers}")
    return lines


def _ranks(traces: list[TraceFile], outcomes: list[Outcome], roots: tuple[str, ...] = ()) -> dict[str, dict]:
    """The ranks view of every run holding a job of two ranks or more (its largest; `jobs.job_groups`), from
    the digests the tasks sent back, written to the run's `.kinetoscope/ranks.json` (failures to write are
    reported in the view, never raised)."""
    digests = {o.path: o.digest for o in outcomes if o.digest is not None}
    by_run: dict[str, list[TraceFile]] = {}
    for t in traces:
        if t.path in digests:
            by_run.setdefault(t.run, []).append(t)
    views = {}
    for run, members in by_run.items():
        mine = [sidecar.with_worker(digests[t.path], t.worker) for t in members]
        jobs = sorted(multi_rank_jobs(job_groups(mine)), key=lambda g: -len(g.workers))
        if not jobs:
            continue  # one worker, or independent profiles: not ranks of one job
        view = ranks_view([d for d in mine if d.worker in jobs[0].workers])
        folder = sidecar.sidecar_path(members[0].path).rsplit("/", 1)[0]
        target = folder + "/ranks.json"
        try:
            with confined(roots):
                sidecar.write_file(target, json.dumps({"run": run, "view": view}, default=_json_default).encode())
        except (OSError, ValueError, TypeError, StorageError) as exc:
            view = {**view, "write_error": str(exc)}
        views[run] = view
    return views


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON: {type(value).__name__}")


# ---- executors -----------------------------------------------------------------------------------

def _on_pool(paths: list[str], force: bool, verify: bool, jobs: int, roots: tuple[str, ...],
             kid: Optional[str] = None) -> Iterator[Outcome]:
    """The tasks on a local process pool (spawned: no fork of a process holding threads). A worker that
    dies breaks the pool: the unfinished tasks go to a new one, and after POOL_RESTARTS breaks each runs in
    a pool of its own, so the trace that kills its worker is the one reported."""
    context = multiprocessing.get_context("spawn")
    pending, restarts = list(paths), 0
    while pending:
        solo = restarts >= POOL_RESTARTS
        batches = [[p] for p in pending] if solo else [pending]
        pending = []
        for batch in batches:
            with ProcessPoolExecutor(1 if solo else min(jobs, len(batch)), mp_context=context) as pool:
                futures = {pool.submit(index_trace, p, force, verify, roots, None, kid): p for p in batch}
                for future in as_completed(futures):
                    try:
                        yield future.result()
                    except BrokenProcessPool:
                        if solo:
                            yield Outcome(futures[future], FAILED, DIED, None, 0.0)
                        else:
                            pending.append(futures[future])
        restarts += 1


def _on_dask(paths: list[str], force: bool, verify: bool, scheduler: Optional[str],
             local: Optional[int], timings: Optional[dict] = None, roots: tuple[str, ...] = (),
             kid: Optional[str] = None) -> Iterator[Outcome]:
    """The tasks on a Dask cluster: Dask schedules them, moves them off a worker that dies, and hands back
    each outcome as it completes. A task that Dask gives up on (`KilledWorker`) is reported as failed."""
    import dask
    from distributed import Client, LocalCluster
    from distributed import as_completed as dask_completed

    started = time.perf_counter()
    cluster = LocalCluster(n_workers=local, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None) if local else None
    try:
        client = Client(cluster if cluster is not None else scheduler,
                        timeout=dask.config.get("distributed.comm.timeouts.connect"))
        if timings is not None:
            timings["startup_s"] = time.perf_counter() - started
        try:
            futures = client.map(index_trace, paths, force=force, verify=verify, roots=roots, key_id=kid, pure=False,
                                 key=[f"kinetoscope-index-{i}-{posixpath.basename(p)[:80]}" for i, p in enumerate(paths)])
            where = {f.key: p for f, p in zip(futures, paths)}
            for future in dask_completed(futures):
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - KilledWorker, a lost scheduler...: name the trace
                    yield Outcome(where[future.key], FAILED, f"{type(exc).__name__}: {str(exc)[:300]}", None, 0.0)
                future.release()
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()
