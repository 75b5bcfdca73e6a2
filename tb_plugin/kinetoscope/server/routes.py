"""The routes' logic as plain functions: typed arguments in, JSON-ready dicts out (no werkzeug here).

Each `*_impl` takes the TraceService and already-validated parameters; it raises the typed errors of
`errors.py` (NotFound for an unknown span or device, NotReady while loading, TraceFailed, BadRequest
for a window that is too large to export). Every route only slices what `pipeline.prepare` computed once
per loaded trace, in the background.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Optional

import msgspec
import numpy as np

try:  # ISA-L's gzip is several times faster than zlib's at the same size
    from isal.igzip import compress as gzip_compress
except ImportError:  # pragma: no cover - isal is a declared dependency
    from gzip import compress as gzip_compress

from ..analysis.device.counters import counters_summary
from ..analysis.distributed.jobs import group_of_worker, job_groups, multi_rank_jobs
from ..analysis.distributed.ranks import ranks_view
from ..analysis.idle.launch_offsets import percentiles_us
from ..analysis.judgement.verdict import harmonized_by_worker, run_verdict
from ..analysis.report import verdict_entry
from ..analysis.tables.index import TableIndex
from ..analysis.tables.search import SearchIndex
from ..formats.report import render_entry, title_of, verdict_lines
from ..formats.units import md
from ..pipeline import trace_roofline
from ..trace.budgets import setting
from ..trace.model import TraceModel
from ..trace.remote import redact
from ..trace.source import args_or_reason
from ..trace.storage import FileIdentity, StorageError, confined, identity, iter_gzipped
from ..views.counter_lanes import counters_view
from ..views.export import chrome_trace, event_view, export_records, window_rows
from ..views.extra_tables import extra_view
from ..views.gaps_stalls import gaps_view, stalls_view
from ..views.lanes import lanes_view, window_ns
from ..views.profiler_tables import MAX_LIMIT, full_name_view, search_view, tables_view
from ..views.roofline_table import roofline_view
from ..views.series import log_histogram, memory_view
from .errors import BadRequest, NotFound, NotReady, TraceFailed
from .service import TraceService
from .spans import Loaded

MAX_LINKS_SHOWN = 20  # links not followed that a runs answer names (it counts them all)
MAX_NAME_CHARS = 512  # of each
LOAD_WAIT_S = 0.25  # how long a data route (409 after it) or status?load=1 waits for a load in flight
MAX_EXPORT_EVENTS = 250_000  # about 40 MB of JSON before it is gzipped
EXPORT_EVENTS_ENV = "KINETOSCOPE_EXPORT_MAX_EVENTS"  # a lower cap for small servers (and the browser tests)


def export_max_events() -> int:
    """The most events a window export holds: MAX_EXPORT_EVENTS, or less by EXPORT_EVENTS_ENV."""
    return int(min(setting(EXPORT_EVENTS_ENV, MAX_EXPORT_EVENTS), MAX_EXPORT_EVENTS))
MAX_EXPORT_BYTES = 2_000_000  # the gzipped file, like every other answer: a window of about 150k events




def load_ready(service: TraceService, sid: str) -> Loaded:
    return service.get(sid, wait_s=LOAD_WAIT_S)


def _load_lanes(service: TraceService, sid: str) -> Loaded:
    """For the routes that need only the model and the lane index: served while the analyses still run
    (`prepared` is then a `pipeline.LanesStage`), see `pipeline.STAGES`."""
    return service.get_lanes(sid, wait_s=LOAD_WAIT_S)


def runs_impl(service: TraceService) -> dict[str, Any]:
    """Runs, their workers and spans (ids, file names, sizes, load states); asks for a rescan."""
    complete = service.wait_scanned(1.0)
    service.request_rescan(wait_s=0.5)
    runs: dict[str, dict[str, list]] = {}
    for sid, f, state in service.snapshot():
        spans = runs.setdefault(f.run, {}).setdefault(f.worker, [])
        spans.append({"id": sid, "index": len(spans) + 1, "span": f.span_text, "file": Path(f.path).name,
                      "size_bytes": f.size, "state": state["state"], "version": f.version,
                      "source": state["source"], "analyses": state["analyses"], "index_reason": state["index_reason"],
                      "lanes_ready": state["lanes_ready"], "duration_us": state["duration_us"]})
    return {"logdir": redact(service.logdir), "scan_complete": complete, "scan_error": service.scan_error,
            "skipped_links": _skipped_links(service),
            "runs": [{"name": run, "workers": [{"name": w, "spans": spans} for w, spans in workers.items()]}
                     for run, workers in runs.items()]}


def _skipped_links(service: TraceService) -> dict[str, Any]:
    """The links out of the logdir the scan did not follow: how many, and the first few as paths inside the logdir
    (never their targets: where they lead is outside the logdir, and is in TensorBoard's log for its operator)."""
    links = service.skipped_links
    return {"count": len(links), "links": [link.in_logdir[:MAX_NAME_CHARS] for link in links[:MAX_LINKS_SHOWN]],
            "option": "--kinetoscope_allow_links_to"}


def status_impl(service: TraceService, sid: Optional[str] = None, *, load: bool = False,
                wait_ms: Optional[int] = None, until: str = "ready") -> dict[str, Any]:
    """Load state of every trace, or of one (raises NotFound).

    With `load`, first queues the load of span `sid` and waits for it as a data route would (or up to
    `wait_ms`: a long poll that answers the moment the load ends, or with `until="lanes"` the moment the
    lanes can be asked), but never answers 409: a browser logs every refused request as a console error.
    """
    if load:
        if sid is None:
            raise BadRequest("load=1 needs a span: status?span=ID&load=1")
        wait_s = LOAD_WAIT_S if wait_ms is None else wait_ms / 1000
        if until == "lanes":
            service.request_lanes(sid, wait_s=wait_s)
        else:
            service.request_load(sid, wait_s=wait_s)
    traces = [{"id": s, "run": f.run, "worker": f.worker, "span": f.span_text, **state}
              for s, f, state in service.snapshot(sid)]
    return {"scan_complete": service.wait_scanned(0), "traces": traces}


def summary_impl(service: TraceService, sid: str) -> dict[str, Any]:
    """The analysis report of one span."""
    return _summary(sid, load_ready(service, sid))


def _summary(sid: str, loaded: Loaded) -> dict[str, Any]:
    f = loaded.file
    return {"id": sid, "run": f.run, "worker": f.worker, "span": f.span_text, **loaded.prepared.report}


def markdown_impl(service: TraceService, sid: str) -> dict[str, Any]:
    """The span's summary as markdown, from the one renderer the CLI uses (`formats.report.render_entry`): the
    run's verdict first when the run has several spans, then the span's, harmonized as the tab shows it."""
    loaded = load_ready(service, sid)
    f = loaded.file
    summary = _summary(sid, loaded)
    run = run_verdict_impl(service, f.run)
    path = f.path if "://" in f.path else os.path.relpath(f.path, os.path.abspath(service.logdir))
    entry = {**summary, "path": path, "error": None}
    mine = next((row["verdict"] for row in run["spans"] if row["id"] == sid and row["verdict"]), None)
    if mine is not None:
        entry["verdict"] = mine
    parts = [f"# Kinetoscope: {md(title_of(entry))}", ""]
    if len(run["spans"]) > 1 and run["verdict"] is not None:
        judged = sum(1 for row in run["spans"] if row["verdict"] is not None)
        parts += verdict_lines(run["verdict"], markdown=True, label="Run verdict")
        parts += ["", f"(over {judged} of the {len(run['spans'])} spans of run {md(summary['run'])})", ""]
    parts.append(render_entry(entry, markdown=True))
    return {"id": sid, "markdown": "\n".join(parts)}


def run_verdict_impl(service: TraceService, run: str) -> dict[str, Any]:
    """The verdicts of a run's spans that have loaded, each made consistent with the other spans of its
    worker, and a pooled verdict only over spans that are one program: the spans of one worker, or the
    ranks of one job (`jobs.job_groups`). A run of independent profiles has `verdict` null and one entry
    per job or worker in `groups`. Spans not loaded yet are queued and counted in `pending`; ask again
    until 0."""
    members = [(sid, f) for sid, f, _ in service.snapshot() if f.run == run]
    if not members:
        raise NotFound(f"unknown run {run!r}")
    ready, rows, pending, failed = [], [], 0, 0
    for sid, f in members:
        try:
            loaded = service.get(sid, wait_s=0.0)
        except NotReady:
            pending += 1
            rows.append({"id": sid, "worker": f.worker, "span": f.span_text, "state": "loading", "verdict": None})
            continue
        except TraceFailed:
            failed += 1
            rows.append({"id": sid, "worker": f.worker, "span": f.span_text, "state": "error", "verdict": None})
            continue
        ready.append((len(rows), loaded.prepared.analysis.verdict, f.worker, msgspec.structs.replace(loaded.prepared.digest, worker=f.worker)))
        rows.append({"id": sid, "worker": f.worker, "span": f.span_text, "state": "ready", "verdict": None})
    found = job_groups([d for *_, d in ready])
    group_of = group_of_worker(found)
    pooled = []
    for k, group in enumerate(found):
        mine = [(i, v, w) for i, v, w, _ in ready if group_of[w] == k]
        for (i, _, _), v in zip(mine, harmonized_by_worker([v for _, v, _ in mine], [w for _, _, w in mine])):
            rows[i]["verdict"] = verdict_entry(v)
        pooled.append({**group.entry(), "spans": len(mine), "verdict": verdict_entry(run_verdict([v for _, v, _ in mine]))})
    combined = pooled[0]["verdict"] if len(pooled) == 1 else None
    return {"run": run, "spans": rows, "pending": pending, "failed": failed, "verdict": combined, "groups": pooled,
            "independent": len(pooled) > 1}


def ranks_impl(service: TraceService, run: str) -> dict[str, Any]:
    """The ranks view of a run (`analysis/distributed/ranks.py`) over its traces that have loaded once; the others are
    queued and counted in `pending` (ask again until 0). Built from each trace's digest, never from the
    models together. Only traces that say they are ranks of one job (`jobs.job_groups`) are ranks: `view`
    is the largest such job with two ranks present, null when there is none (`groups` says what the
    traces are)."""
    members = [(sid, f) for sid, f, _ in service.snapshot() if f.run == run]
    if not members:
        raise NotFound(f"unknown run {run!r}")
    loaded, spans, pending, failed = [], [], 0, 0
    for sid, f in members:
        try:
            digest = service.digest(sid)
        except TraceFailed:
            failed += 1
            spans.append({"id": sid, "worker": f.worker, "span": f.span_text, "state": "error"})
            continue
        if digest is None:
            pending += 1
            spans.append({"id": sid, "worker": f.worker, "span": f.span_text, "state": "loading"})
            continue
        loaded.append((sid, f.worker, digest))
        spans.append({"id": sid, "worker": f.worker, "span": f.span_text, "state": "ready"})
    ids = {f.worker: sid for sid, f in members}
    key = ("ranks", run, tuple((sid, worker) for sid, worker, _ in loaded), tuple(sorted(ids.items())))
    view, groups = service.derived(key, [d for *_, d in loaded],
                                   lambda: _ranks_of([msgspec.structs.replace(d, worker=w) for _, w, d in loaded], ids))
    return {"run": run, "spans": spans, "pending": pending, "failed": failed, "view": view, "groups": groups}


def _ranks_of(digests: list[Any], ids: dict[str, str]) -> tuple[Optional[dict[str, Any]], list[dict[str, Any]]]:
    """`ranks_impl`'s view and groups of the loaded digests (each named by its worker); `ids`: worker -> span id."""
    found = job_groups(digests)
    jobs = sorted(multi_rank_jobs(found), key=lambda g: -len(g.workers))
    view = None
    if jobs:
        independent = [w for g in found if not g.is_job for w in g.workers]
        view = {**ranks_view([d for d in digests if d.worker in jobs[0].workers]), "basis": jobs[0].basis,
                "not_ranks": independent}
        for row in view["ranks"]:
            row["id"] = ids.get(row["worker"])
    return view, [g.entry() for g in found]


def gaps_impl(service: TraceService, sid: str, device: int, *, causes: Optional[Sequence[int]] = None,
              min_us: float = 0.0, start_us: Optional[float] = None, end_us: Optional[float] = None,
              sort: str = "start", offset: int = 0, limit: int = 100) -> dict[str, Any]:
    """One page of a device's idle gaps."""
    loaded = load_ready(service, sid)
    found = [d for d in loaded.prepared.analysis.idle.devices if d.device == device]
    if not found:
        raise NotFound(f"span {sid} has no GPU activity on device {device!r}")
    model = loaded.model
    t0 = None if start_us is None else model.start_ns + int(round(start_us * 1e3))
    t1 = None if end_us is None else model.start_ns + int(round(end_us * 1e3))
    return gaps_view(model, found[0], causes=causes, min_ns=int(round(min_us * 1e3)), t0_ns=t0, t1_ns=t1,
                     sort=sort, offset=offset, limit=limit)


def launches_impl(service: TraceService, sid: str, *, bins: int = 60, top: int = 50) -> dict[str, Any]:
    """Launch-offset percentiles, histogram, and the per-kernel and per-op tables."""
    loaded = load_ready(service, sid)
    launch = loaded.prepared.analysis.launch
    series = {"offset": launch.offset_ns, "queued": launch.queued_ns, "latency": launch.latency_ns}
    return {"pairs": launch.pairs, "short_kernels": int(np.count_nonzero(launch.short)),
            "percentiles": {f"{k}_us": percentiles_us(v) for k, v in series.items()},
            "histogram": log_histogram({k: v / 1e3 for k, v in series.items()}, bins),
            "by_kernel": loaded.prepared.launch_tables["kernel"][:top],
            "by_op": loaded.prepared.launch_tables["op"][:top]}


def memory_impl(service: TraceService, sid: str, *, max_points: int = 2000, device: Optional[str] = None,
                start_us: Optional[float] = None, end_us: Optional[float] = None) -> dict[str, Any]:
    """Memory curves, downsampled to `max_points` per device."""
    loaded = load_ready(service, sid)
    memory = loaded.prepared.analysis.memory
    if device is not None and all(s.device != device for s in memory):
        raise NotFound(f"span {sid} has no memory data for device {device!r}")
    model = loaded.model
    t0 = None if start_us is None else model.start_ns + int(round(start_us * 1e3))
    t1 = None if end_us is None else model.start_ns + int(round(end_us * 1e3))
    return memory_view(model, memory, max_points=max_points, device=device, t0_ns=t0, t1_ns=t1)


def stalls_impl(service: TraceService, sid: str, *, offset: int = 0, limit: int = 1000) -> dict[str, Any]:
    """Per-step DataLoader waits and stalls."""
    loaded = load_ready(service, sid)
    analysis = loaded.prepared.analysis
    return stalls_view(loaded.model, analysis.steps, analysis.verdict, offset=offset, limit=limit)


def lanes_impl(service: TraceService, sid: str, *, start_us: Optional[float] = None, end_us: Optional[float] = None,
               width_px: int = 1600, counters: bool = True) -> dict[str, Any]:
    """Everything to draw for a window at a pixel width, bounded in size (`counters`: with the counter lanes). While the analyses still run, the
    gap and step overlays are empty and `analysed` is false: ask again once the span is ready."""
    loaded = _load_lanes(service, sid)
    model, prepared = loaded.model, loaded.prepared
    t0, t1 = span_window(model, start_us, end_us)
    analysis = getattr(prepared, "analysis", None)
    idle, steps = (None, None) if analysis is None else (analysis.idle, analysis.steps)
    tables = getattr(prepared, "tables", None)  # graph replays' op calls, once the tables are built
    out = lanes_view(model, prepared.index, t0, t1, width_px, idle, steps, counters=counters,
                     graphs=tables.graphs if tables is not None else None)
    out["analysed"] = analysis is not None
    return out


def counters_impl(service: TraceService, sid: str, *, start_us: Optional[float] = None,
                  end_us: Optional[float] = None, width_px: int = 1600) -> dict[str, Any]:
    """The counter lanes of a window (as in `lanes`) and the whole span's queue-length and memcpy-bandwidth
    summaries (as in `summary`)."""
    loaded = _load_lanes(service, sid)
    model = loaded.model
    t0, t1 = span_window(model, start_us, end_us)
    return {**counters_view(loaded.prepared.index.counters, t0, t1, width_px), "summary": counters_summary(model)}


def event_impl(service: TraceService, sid: str, row: int, *, with_args: bool = False) -> dict[str, Any]:
    """Details of one event row; `with_args` adds its full `args` re-read from the file (`args_error`
    says why not). Hover boxes skip them: re-reading a gzip file can take a few hundred ms."""
    loaded = load_ready(service, sid)
    if not 0 <= row < loaded.model.n_events:
        raise NotFound(f"span {sid} has no event row {row!r}")
    tables = getattr(loaded.prepared, "tables", None)
    out = event_view(loaded.model, loaded.prepared.index, loaded.prepared.analysis.launch, row,
                     tables.graphs if tables is not None else None)
    if with_args:
        with confined(service.roots):  # re-read from the file: inside the logdir only
            out["args"], out["args_error"] = args_or_reason(FileIdentity(*loaded.file.identity), loaded.model, row)
    return out


def export_impl(service: TraceService, sid: str, *, start_us: Optional[float] = None,
                end_us: Optional[float] = None) -> tuple[dict[str, Any], str]:
    """A window as a Chrome trace, and the file name to save it under (`.json.gz`: see `gzip_export`)."""
    loaded = _load_lanes(service, sid)
    model = loaded.model
    t0, t1 = span_window(model, start_us, end_us)
    rows = window_rows(model, loaded.prepared.index, t0, t1)
    limit = export_max_events()
    records = export_records(model, rows)
    if records > limit:
        raise BadRequest(f"the window holds {rows.size} events and {records - rows.size} lane and process names, more than "
                         f"{limit} ({EXPORT_EVENTS_ENV}); export a shorter one, or the whole trace (whole=1)")
    f = loaded.file
    name = f"kinetoscope-{_safe(f.run)}-{_safe(f.span_text or f.worker)}.json.gz"
    return chrome_trace(model, rows, source=f"{f.run}/{Path(f.path).name}"), name


def export_check_impl(service: TraceService, sid: str, *, start_us: Optional[float] = None,
                      end_us: Optional[float] = None) -> dict[str, Any]:
    """Whether a window can be exported, before the user asks: its event count against the limit."""
    loaded = _load_lanes(service, sid)
    t0, t1 = span_window(loaded.model, start_us, end_us)
    rows = window_rows(loaded.model, loaded.prepared.index, t0, t1)
    limit = export_max_events()
    return {"events": int(rows.size), "max_events": limit, "fits": export_records(loaded.model, rows) <= limit}


def export_whole_impl(service: TraceService, sid: str) -> tuple[Iterator[bytes], str]:
    """The whole trace file as a gzip stream (the file as it is on disk, with every arg), and its download
    name. Only a trace that loaded (its lanes at least) is served, opened inside the logdir (`storage.confined`:
    a link out, a FIFO or a device is refused) and only while it is the version that loaded: a file swapped
    for a link to `/proc/self/environ` or `~/.aws/credentials` after the scan is refused, never streamed.

    Raises:
        NotFound: unknown span. NotReady: still loading. TraceFailed: it failed to load, or cannot be read now.
    """
    loaded = _load_lanes(service, sid)
    f = loaded.file
    try:
        with confined(service.roots):
            if FileIdentity(*f.identity) != identity(f.path):
                raise StorageError("the file changed since it loaded; open it again to export it")
            blocks = iter_gzipped(f.path)
    except StorageError as exc:
        raise TraceFailed(f"{f.run}/{Path(f.path).name}: {redact(str(exc))}") from None
    return blocks, f"kinetoscope-{_safe(f.run)}-{_safe(f.span_text or f.worker)}-whole.json.gz"


def gzip_export(text: bytes) -> bytes:
    """The export's JSON gzipped (Perfetto, chrome://tracing and Kinetoscope open `.json.gz`), within
    MAX_EXPORT_BYTES (else a `400`: export a shorter window)."""
    packed = gzip_compress(text, 3)
    if len(packed) > MAX_EXPORT_BYTES:
        raise BadRequest(f"the window's export is {len(packed):,} bytes gzipped, more than {MAX_EXPORT_BYTES:,}; "
                         "export a shorter one")
    return packed


def span_window(model: TraceModel, start_us: Optional[float], end_us: Optional[float]) -> tuple[int, int]:
    t0, t1 = window_ns(model, start_us, end_us)
    if t1 <= t0:
        raise BadRequest(f"empty window: start_us={start_us!r} end_us={end_us!r} (the trace ends at "
                         f"{(model.stop_ns - model.start_ns) / 1e3} us)")
    return t0, t1


def _safe(text: str) -> str:
    """A file-name-safe rendering of a run or span name."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "_" for c in text)
    return cleaned.strip("._") or "trace"


def tables_impl(service: TraceService, sid: str, *, by: str = "op", start_us: Optional[float] = None,
                end_us: Optional[float] = None, sort: Optional[str] = None, query: Optional[str] = None,
                offset: int = 0, limit: int = 100, group: str = "name", split: str = "name",
                **options: Any) -> dict[str, Any]:
    """One page of the operator, kernel or module table (`views/profiler_tables`), or of the module tree, memory
    per op, user annotations or kernel sequences (`views/extra_tables`; `options`: side, scope, min_len,
    max_len, top), for the whole span or a window."""
    loaded = load_ready(service, sid)
    model, prepared = loaded.model, loaded.prepared
    index = prepared.tables or TableIndex.build(model)
    window = None if start_us is None and end_us is None else span_window(model, start_us, end_us)
    try:
        if by in ("op", "kernel", "module"):
            return tables_view(model, index, by=by, window=window, sort=sort, query=query, offset=offset, limit=limit,
                               group=group, split=split)
        if group != "name" or split != "name":
            raise ValueError(f"group and split apply to the op and kernel tables, not by={by!r}")
        if by == "roofline":
            return roofline_view(model, span_roofline(model, prepared), window=window, sort=sort, query=query,
                                 offset=offset, limit=limit, max_limit=MAX_LIMIT)
        return extra_view(model, index, by=by, window=window, sort=sort, query=query, offset=offset, limit=limit,
                          max_limit=MAX_LIMIT, **options)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def span_roofline(model: TraceModel, prepared: Any) -> Any:
    """The span's Roofline as its analysis made it (with the user's peaks file), else made now."""
    found = getattr(prepared.analysis, "roofline", None)
    if found is not None:
        return found
    return trace_roofline(model)


def name_impl(service: TraceService, sid: str, key: str) -> dict[str, Any]:
    """The full text of a name the other routes cut, by its `name_key` (404 for a key no name of the trace has)."""
    found = full_name_view(load_ready(service, sid).model, key)
    if found is None:
        raise NotFound(f"no name of span {sid} has the key {key!r}")
    return found


def search_impl(service: TraceService, sid: str, query: str, *, offset: int = 0, limit: int = 100) -> dict[str, Any]:
    """The op and kernel occurrences whose name contains `query`, in time order, one page at a time."""
    loaded = load_ready(service, sid)
    index = loaded.prepared.search or SearchIndex.build(loaded.model)
    return search_view(loaded.model, index, query, offset=offset, limit=limit)
