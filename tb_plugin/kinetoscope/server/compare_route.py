"""The `compare` route's logic: a baseline and a candidate (spans or runs of the logdir) compared.

Each trace's figures (`analysis.compare_figures`, kilobytes) are taken once per file version and kept
when its model is evicted; a comparison is kept per pair of versions, so asking again is a lookup.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Optional

from ..analysis.compare.figures import Side, TraceFigures, figures_of, side
from ..analysis.compare.sides import compare_sides
from ..formats.report import title_of
from .errors import BadRequest, NotFound, NotReady, TraceFailed
from .routes import LOAD_WAIT_S
from .service import TraceService

MAX_FIGURES = 256  # traces whose figures are kept: two 64-rank runs twice (33 kB pickled for the 10x ResNet-50, 70 kB for HTA test; at most
# 2,000 kernel and 2,000 op names of up to 1,000 characters, so a few MB for a hostile trace)
MAX_RESULTS = 32  # comparisons kept
MAX_LABEL = 200  # characters of a side's label
_lock = threading.Lock()
_figures: OrderedDict[tuple, TraceFigures] = OrderedDict()
_results: OrderedDict[tuple, dict[str, Any]] = OrderedDict()


def _remember(cache: OrderedDict, key: tuple, value: Any, cap: int) -> Any:
    with _lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > cap:
            cache.popitem(last=False)
    return value


def _recall(cache: OrderedDict, key: tuple) -> Any:
    with _lock:
        value = cache.get(key)
        if value is not None:
            cache.move_to_end(key)
        return value


def figures(service: TraceService, sid: str, wait_s: float) -> TraceFigures:
    """The figures of one span, from the memo or from its loaded model.

    Raises:
        NotFound, NotReady, TraceFailed: as `TraceService.get`.
    """
    file = service.snapshot(sid)[0][1]
    key = (service.logdir, sid, file.version)
    known = _recall(_figures, key)
    if known is not None:
        return known
    loaded = service.get(sid, wait_s=wait_s)
    prepared = loaded.prepared  # the table index and digest built at load
    made = figures_of(loaded.model, prepared.analysis, loaded.file.worker, prepared.tables, prepared.digest)
    return _remember(_figures, key, made, MAX_FIGURES)


def _members(service: TraceService, span: Optional[str], run: Optional[str]) -> tuple[str, list[str]]:
    """A side's label and span ids (a run's spans in the scan's order)."""
    if span is not None:
        f = service.snapshot(span)[0][1]
        # named as the report and the tab's selectors name it: `span N`, else the file's name without its suffix
        return title_of({"run": f.run, "worker": f.worker, "span": f.span_text, "path": f.path}), [span]
    members = [sid for sid, f, _ in service.snapshot() if f.run == run]
    if not members:
        raise NotFound(f"unknown run {run!r}")
    return f"run {run}", members


def _side(service: TraceService, span: Optional[str], run: Optional[str]) -> tuple[Optional[Side], dict[str, int], tuple]:
    """(side or None while spans load, {pending, failed}, its cache key)."""
    label, sids = _members(service, span, run)
    got, failed, pending, key = [], [], 0, []
    for sid in sids:
        try:
            got.append(figures(service, sid, LOAD_WAIT_S if span is not None else 0.0))
            key.append((sid, service.snapshot(sid)[0][1].version))
        except NotReady:
            if span is not None:
                raise
            pending += 1
        except TraceFailed as exc:
            if span is not None:
                raise
            failed.append(exc.message[:1000])
    counts = {"pending": pending, "failed": len(failed)}
    if pending or not got:
        return None, counts, tuple(key)
    order = sorted(range(len(got)), key=lambda i: (got[i].worker, i))
    return side(label[:MAX_LABEL], [got[i] for i in order], tuple(failed[:20])), counts, tuple(key)


def compare_impl(service: TraceService, *, base: Optional[str] = None, cand: Optional[str] = None,
                 base_run: Optional[str] = None, cand_run: Optional[str] = None) -> dict[str, Any]:
    """Compare a baseline with a candidate, each a span (`base`/`cand`) or a run (`base_run`/`cand_run`).

    A span side answers `409` while it loads, as the other data routes do; a run side queues its spans'
    loads and answers `pending` (ask again until 0) with `result: null`.

    Raises:
        BadRequest: a side given twice or not at all. NotFound: an unknown span or run.
    """
    for which, span, run in (("base", base, base_run), ("cand", cand, cand_run)):
        if (span is None) == (run is None):
            raise BadRequest(f"give the {which} side once: {which}=SPAN or {which}_run=RUN")
    b, b_counts, b_key = _side(service, base, base_run)
    c, c_counts, c_key = _side(service, cand, cand_run)
    out = {"pending": b_counts["pending"] + c_counts["pending"], "failed": b_counts["failed"] + c_counts["failed"]}
    if b is None or c is None:
        unloadable = (b is None and not b_counts["pending"]) or (c is None and not c_counts["pending"])
        if unloadable:
            raise TraceFailed("no trace of that side could be loaded")
        return {**out, "result": None}
    key = (service.logdir, b_key, c_key)
    result = _recall(_results, key)
    if result is None:
        result = _remember(_results, key, compare_sides(b, c), MAX_RESULTS)
    return {**out, "result": result}
