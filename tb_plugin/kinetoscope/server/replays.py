"""The routes that replay a trace (`analysis/whatif`): `whatif` and `critical_path`, their answers kept with the
loaded span and their concurrency bounded (issue 54 N2: the critical path was walked again on every request, and
32 clients held every server thread for 30 s).

What they compute is kept per span (`service.derived`): the span's Replayer (its dependencies read once per load),
its whole-trace critical paths, and each what-if answer by its edits and page. At most COSTLY_SLOTS run at once; a
request that waits longer than COSTLY_WAIT_S for a slot is a 503 (`Busy`), so a burst never holds every thread.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

from ..analysis.whatif.critical_path import critical_paths
from ..analysis.whatif.edits import EditError, parse_edit
from ..analysis.whatif.replay import MAX_WHATIF_STEPS, Replayer, judged_step_ns, whatif_entry
from ..trace.model import TraceModel
from .errors import BadRequest, Busy, NotFound, TraceFailed
from .routes import load_ready, span_roofline, span_window
from .service import TraceService
from .spans import Loaded

MAX_PATH_STEPS = 1000  # steps a critical_path answer lists
MAX_PATH_SEGMENTS = 4000  # segments one windowed answer holds, shared by its steps
MIN_STEP_SEGMENTS = 4  # the least share of a step (1,000 steps in view: 4 each)
COSTLY_SLOTS = 2  # replays computing at once
COSTLY_WAIT_S = 10.0  # how long a request waits for a slot before its 503
_costly = threading.BoundedSemaphore(COSTLY_SLOTS)


def whatif_impl(service: TraceService, sid: str, edits: Sequence[str], offset: int = 0,
                limit: int = MAX_WHATIF_STEPS) -> dict[str, Any]:
    """The steps re-timed after `edits` (analysis/whatif/replay.py): recorded and predicted per step (steps `offset`
    on, at most `limit`), their medians."""
    try:
        parsed = tuple(parse_edit(text) for text in edits)
    except EditError as exc:
        raise BadRequest(str(exc)) from None
    loaded = load_ready(service, sid)
    replayer = _replayer(service, sid, loaded)

    def answer() -> dict[str, Any]:
        with _costly_slot("whatif"):
            if any(e.kind in ("roofline", "precision") for e in parsed):
                replayer.ctx.cache.setdefault("roofline", span_roofline(loaded.model, loaded.prepared))
            try:
                judged = judged_step_ns(loaded.prepared.analysis)  # the verdict's denominator, the shares' too
                return whatif_entry(replayer.apply(parsed), offset, limit, judged)
            except EditError as exc:
                raise BadRequest(str(exc)) from None
    return service.derived(("whatif", sid, parsed, offset, limit), [loaded.model], answer)  # a kept one: no slot


def _within(segments: list[dict], lo: float, hi: float, share: int) -> dict[str, Any]:
    """A step's path segments inside [lo, hi) µs, at most `share` of them: neighbours of one kind on one lane
    joined first, then the shortest left out (`segments_omitted`, their `omitted_us`), so a step is never empty
    while another holds thousands."""
    inside = [dict(s) for s in segments if s["end_us"] > lo and s["start_us"] < hi]
    joined: list[dict] = []
    for seg in inside:
        last = joined[-1] if joined else None
        if len(inside) > share and last and (last["kind"], last.get("lane")) == (seg["kind"], seg.get("lane")) \
                and seg["start_us"] - last["end_us"] <= 1e-3:
            last["end_us"] = seg["end_us"]
        else:
            joined.append(seg)
    if len(joined) <= share:
        return {"segments": joined}
    longest = sorted(range(len(joined)), key=lambda k: joined[k]["start_us"] - joined[k]["end_us"])[:share]
    kept = [joined[k] for k in sorted(longest)]
    left = [joined[k] for k in set(range(len(joined))) - set(longest)]
    return {"segments": kept, "segments_omitted": len(left),
            "omitted_us": round(sum(s["end_us"] - s["start_us"] for s in left), 3)}


@contextmanager
def _costly_slot(route: str):
    if not _costly.acquire(timeout=COSTLY_WAIT_S):
        raise Busy(f"{route}: {COSTLY_SLOTS} replays are running and none ended within {COSTLY_WAIT_S:g} s; retry")
    try:
        yield
    finally:
        _costly.release()


def _replayer(service: TraceService, sid: str, loaded: Loaded) -> Replayer:
    """The span's Replayer (its dependencies read once per load), kept while the span's model is the same; a
    trace too long to replay is a 422 naming it."""
    def build() -> Replayer:
        with _costly_slot("replay"):
            try:
                return Replayer(loaded.model, None, loaded.prepared.tables)
            except EditError as exc:
                raise TraceFailed(f"{loaded.file.run}/{Path(loaded.file.path).name}: {exc}") from None
    return service.derived(("replayer", sid), [loaded.model], build)


def critical_path_impl(service: TraceService, sid: str, step: Optional[int] = None, start_us: Optional[float] = None,
                       end_us: Optional[float] = None) -> dict[str, Any]:
    """Each step's critical path and its shares (analysis/whatif/critical_path.py); with `step` (an index), that step's
    path segments too; with a window (`start_us`/`end_us`), the steps whose path meets it, with their segments
    (the lane overlay)."""
    loaded = load_ready(service, sid)
    model = loaded.model
    replayer = _replayer(service, sid, loaded)  # each part in a slot of its own while it is computed, none when kept

    def walk() -> list:
        with _costly_slot("critical_path"):
            return critical_paths(model, replayer)
    every = service.derived(("critical_paths", sid), [model], walk)
    if step is None and start_us is None and end_us is None:
        return {"steps": every[:MAX_PATH_STEPS], "total": len(every)}
    with _costly_slot("critical_path"):
        return _paths_answer(sid, model, replayer, every, step, start_us, end_us)


def _paths_answer(sid: str, model: TraceModel, replayer: Replayer, every: list, step: Optional[int],
                  start_us: Optional[float], end_us: Optional[float]) -> dict[str, Any]:
    """A windowed answer (the steps whose path meets it, their segments inside it) or one step's, with segments."""
    if step is None:
        t0, t1 = span_window(model, start_us, end_us)
        lo, hi = (t0 - model.start_ns) / 1e3, (t1 - model.start_ns) / 1e3
        inside = [p["index"] for p in every if p["end_us"] > lo and p["start_us"] < hi]
        paths = critical_paths(model, replayer, step_indices=inside[:MAX_PATH_STEPS], with_segments=True)
        share = max(MIN_STEP_SEGMENTS, MAX_PATH_SEGMENTS // max(len(paths), 1))  # every step in view gets its share
        for p in paths:
            p.update(_within(p["segments"], lo, hi, share))
        return {"steps": paths, "total": len(inside)}
    paths = critical_paths(model, replayer, step_indices=[step], with_segments=True)
    if not paths:
        raise NotFound(f"span {sid} has no step {step}")
    return {"steps": paths, "total": 1}
