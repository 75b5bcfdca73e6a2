"""What is computed once per trace, whoever asks: the lane index, the analyses, the tables and the indexes.

The server runs it in the background when a trace loads (in two stages, `STAGES`: the lanes are served the
moment their index exists, the rest fills in after), `kinetoscope index` runs it to write a sidecar, and the
sidecar reader rebuilds a `Prepared` from what was stored. The sidecar's fingerprint covers this module, so
what a sidecar holds is always what this code computes; the routes that slice it are not part of it.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any, Callable, Optional

import msgspec
import numpy as np

from .analysis.distributed.ranks import RankDigest, rank_digest
from .analysis.graphs.attribution import REFERENCE_ERROR_KEY, with_reference
from .analysis.graphs.reference import ReferenceCalls, captured_launch_rows, reference_calls
from .analysis.idle.launch_offsets import launch_table
from .analysis.report import Analysis, TablesPart, analyze, model_parts, report_ahead, report_entry, tables_part
from .analysis.roofline import figures
from .analysis.roofline.figures import Roofline
from .analysis.roofline.peaks import PeaksError, parse_peaks
from .analysis.tables.index import TableIndex, launch_shapes
from .analysis.tables.search import SearchIndex
from .trace import heap
from .trace.gpu_args import shape_size
from .trace.kinds import GRAPH_LAUNCH_CALLS
from .trace.loader import TraceError, load_trace
from .trace.model import TraceModel, record_values
from .trace.source import SourceError, events_args
from .views.lane_index import LaneIndex, TraceTooLong, build_lane_index

MAX_TOP = 1000  # launch-table rows kept per table; the most a request may ask for
PEAKS_ENV = "KINETOSCOPE_PEAKS"  # a user's device peaks file (analysis/roofline/peaks.py); the CLI's --peaks sets it
MAX_PEAKS_BYTES = 1 << 20  # the most of a peaks file read
GRAPH_REFERENCE_ENV = "KINETOSCOPE_GRAPH_REFERENCE"  # the trace graph replays were captured from (--graph-reference)
CAPTURE_FOLDER = "capture_traces"  # where capture traces lie beside the measured one
MAX_CAPTURED = 1_000_000  # captured launch calls of a reference whose args are re-read
_TRACE_NAME = re.compile(r"\.json(\.gz)?$")
_RANK = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
_references: dict[tuple, ReferenceCalls] = {}
log = logging.getLogger(__name__)
_peaks_cache: dict[tuple, tuple[tuple, str]] = {}


class Prepared(msgspec.Struct, frozen=True):
    """Everything derived from one model, computed once when it loads."""

    analysis: Analysis
    index: LaneIndex
    report: dict[str, Any]
    launch_tables: dict[str, list[dict[str, Any]]]  # "kernel"/"op" -> rows (MAX_TOP), sliced per request
    digest: RankDigest  # what the ranks view needs; the service keeps it after the model is evicted
    tables: Optional[TableIndex] = None  # the profiler tables' index (analysis/tables/index.py)
    search: Optional[SearchIndex] = None  # the name search's index (analysis/tables/search.py)

    @property
    def nbytes(self) -> int:
        return self.index.nbytes + _nbytes(self.tables) + _nbytes(self.search)


def _nbytes(obj: Any) -> int:
    """Bytes held by the numpy arrays of a record (nested ones included)."""
    if obj is None:
        return 0
    total = 0
    for value in record_values(obj):
        for item in (list(value.values()) if isinstance(value, dict) else (value,)):  # a dict: what it caches
            if isinstance(item, np.ndarray):
                total += item.nbytes
            elif isinstance(item, msgspec.Struct):
                total += _nbytes(item)
    return total


class LanesStage(msgspec.Struct, frozen=True):
    """What the lane routes (`lanes`, `export`) need, published by the service before the analyses."""

    index: LaneIndex

    @property
    def nbytes(self) -> int:
        return self.index.nbytes


def prepare(model: TraceModel) -> Prepared:
    """Analyse a freshly loaded model and index it for window queries.

    Raises:
        TraceError: the timeline cannot index the trace (its events span centuries: corrupt timestamps).
    """
    return prepare_rest(model, prepare_lanes(model))


def prepare_lanes(model: TraceModel) -> LanesStage:
    """Stage one of `prepare`: the lane index.

    Raises:
        TraceError: the timeline cannot index the trace (its events span centuries: corrupt timestamps).
    """
    try:
        return LanesStage(build_lane_index(model))
    except TraceTooLong as exc:
        raise TraceError("<trace>", str(exc)) from None


class Analysed(msgspec.Struct, frozen=True):
    """`analyze`'s result, the model's TableIndex and its report entry (`analyze_and_report`)."""

    analysis: Analysis
    tables: TableIndex
    report: dict[str, Any]
    search: Optional[SearchIndex] = None


def analyze_and_report(model: TraceModel, search: bool = False) -> Analysed:
    """`analyze(model)` and its `report_entry`, with what reads only the model (the TableIndex, the report's
    `tables_part` and, with `search`, the name search's index) computed in a second thread meanwhile, and the
    report's parts that need no tables (`ReportAhead`: health, counters, the savings' replays) after
    `analyze` in this one. Health and counters read only the model: whichever thread is free first computes them
    (`_Once`), so the two threads end together whichever half is longer on a trace. Both halves are mostly numpy
    sorts, searches and gathers on the event columns, which release the GIL, so on two cores they overlap (about
    0.7 s each on the x30 ResNet trace). The model is read-only; what it caches (`end_ns`, kind and lane masks,
    shared selections) is the same whoever computes it first."""
    global _side
    either = tuple(_Once(part) for part in model_parts(model))
    with _side_lock:
        if _side is None:
            _side = ThreadPoolExecutor(1, thread_name_prefix="kinetoscope-tables")
        future = _side.submit(_model_half, model, search, either[::-1], user_peaks()[0])
    try:
        analysis = analyze(model)
        heap.give_back()  # what `analyze` freed, before the replays' context is built beside the tables
        ahead = report_ahead(model, analysis, tuple(task.result for task in either))  # while the tables are built
    except BaseException:
        if not future.cancel():
            wait([future])  # the thread reads the model until it is done
        raise
    part, index = future.result()
    analysis = msgspec.structs.replace(analysis, roofline=part.roofline)
    return Analysed(analysis, part.tables, report_entry(model, analysis, part=part, ahead=ahead), index)


def user_peaks() -> tuple[tuple, str]:
    """The device peak entries of the user's file (`KINETOSCOPE_PEAKS`, set by the CLI's `--peaks FILE`) and a
    digest of them ("" without a file), read again when the file changes. A file that cannot be used is logged
    and left out (the built-in peaks apply); the CLI checks it first, to refuse it by name."""
    path = os.environ.get(PEAKS_ENV, "").strip()
    if not path:
        return (), ""
    try:
        st = os.stat(path)
        key = (path, st.st_size, st.st_mtime_ns)
        if key not in _peaks_cache:
            _peaks_cache.clear()
            _peaks_cache[key] = read_peaks(path)
        return _peaks_cache[key]
    except (OSError, PeaksError) as exc:
        log.warning("ignoring the peaks file %s: %s", path, exc)
        return (), ""


def read_peaks(path: str) -> tuple[tuple, str]:
    """A peaks file's entries and their digest (raises OSError, PeaksError naming the file and the problem)."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_PEAKS_BYTES + 1)
    if len(data) > MAX_PEAKS_BYTES:
        raise PeaksError(f"{path}: a peaks file holds at most {MAX_PEAKS_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PeaksError(f"{path}: not UTF-8 text") from None
    entries = parse_peaks(text, path)
    return entries, hashlib.sha256(data).hexdigest()[:16]


def trace_roofline(model: TraceModel, index: Optional[TableIndex] = None) -> Roofline:
    """The trace's Roofline with the user's peaks file, as the pipeline makes it (for doors that have no analysis);
    `index`: the model's TableIndex when the caller has one."""
    return figures.trace_roofline(model, index if index is not None else TableIndex.build(model), user_peaks()[0])


def graph_reference_for(trace_path: str) -> Optional[str]:
    """The trace that holds what a trace's graph replays were captured from: the user's (`--graph-reference PATH`,
    `KINETOSCOPE_GRAPH_REFERENCE`), else the capture trace beside it, as xDiT, vLLM and TraceLens's patches write
    them: in a `capture_traces/` folder next to the trace, the one of the same rank (`rank_N`), or the only one."""
    named = os.environ.get(GRAPH_REFERENCE_ENV, "").strip()
    if named:
        return named
    folder = os.path.join(os.path.dirname(trace_path), CAPTURE_FOLDER)
    try:
        found = sorted(f for f in os.listdir(folder) if _TRACE_NAME.search(f) and os.path.isfile(os.path.join(folder, f)))
    except OSError:
        return None
    rank = _RANK.search(os.path.basename(trace_path))
    same = [f for f in found if rank and (m := _RANK.search(f)) and m.group(1) == rank.group(1)]
    chosen = same if same else found
    return os.path.join(folder, chosen[0]) if len(chosen) == 1 else None


def with_graph_reference(model: TraceModel, trace_path: str) -> TraceModel:
    """The model with its graph replays' reference attached (`graph_reference_for`), when it replays graphs and one
    is found; a reference that cannot be read is named in the model's meta (the report says why), never raised."""
    if not any(name in GRAPH_LAUNCH_CALLS for name in model.names):
        return model
    path = graph_reference_for(trace_path)
    if path is None or os.path.abspath(path) == os.path.abspath(trace_path):
        return model
    try:
        ref = _reference_cached(path)
    except (TraceError, SourceError, OSError) as exc:
        return replace(model, meta={**model.meta, REFERENCE_ERROR_KEY: f"{path}: {exc}"})
    except (RecursionError, MemoryError, ValueError, TypeError, KeyError, IndexError) as exc:  # a hostile reference
        log.warning("graph reference %s not used", path, exc_info=True)  # is never the trace's failure
        return replace(model, meta={**model.meta, REFERENCE_ERROR_KEY: f"{path}: cannot be used ({type(exc).__name__})"})
    return with_reference(model, ref)


def _reference_cached(path: str) -> ReferenceCalls:
    """`graph_reference(path)`, kept for the last few files (one capture trace serves every rank's replays)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    with _side_lock:
        found = _references.get(key)
    if found is None:
        found = graph_reference(path)
        with _side_lock:
            _references[key] = found
            while len(_references) > 4:
                _references.pop(next(iter(_references)))
    return found


def graph_reference(path: str) -> ReferenceCalls:
    """A trace's launches as a graph reference (`graphs.reference`): its eager launches, and its captured ones
    with the kernel, grid and block their calls' args name (re-read from the file: the model keeps no call args).

    Raises:
        TraceError, SourceError, OSError: the file cannot be read.
    """
    model = load_trace(path, cache_dir=None)
    index = TableIndex.build(model)
    grid, block = launch_shapes(index.act_values, index.act_present)
    captured = captured_launch_rows(model)[:MAX_CAPTURED]
    keys = {}
    for row, args in events_args(path, model, captured, ("kernel", "grid", "block")).items():
        if isinstance(args.get("kernel"), str):
            keys[row] = (args["kernel"], shape_size(args.get("grid")), shape_size(args.get("block")))
    return reference_calls(model, index.act_rows, grid, block, index.ops, index.modules, source=path, launch_keys=keys)


class _Once:
    """A task run once, by the first thread to `claim` it (a claim never waits: a task another thread runs is left
    to it); `result` claims it too, then waits for whoever runs it. An exception is the result's."""

    def __init__(self, task: Callable[[], Any]) -> None:
        self._task, self._claimed, self._done = task, threading.Lock(), threading.Event()
        self._value: Any = None
        self._error: Optional[BaseException] = None

    def claim(self) -> None:
        if not self._claimed.acquire(blocking=False):
            return
        try:
            self._value = self._task()
        except BaseException as exc:  # noqa: BLE001 - raised again by `result`, in the thread that needs it
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> Any:
        self.claim()
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


def _model_half(model: TraceModel, search: bool, either: tuple[_Once, ...] = (),
                peaks: tuple = ()) -> tuple[TablesPart, Optional[SearchIndex]]:
    """The tables' part and, with `search` (the server), the name search's index and every grouping of the op table
    the routes may ask for (a report reads none: `TableIndex.sub_groups` makes them on first use elsewhere)."""
    part, index = tables_part(model, peaks=peaks), None
    if search:
        part.tables.with_sub_groups(model)
        index = SearchIndex.build(model)
    for task in either:  # the other thread's model-only parts, where it has not begun them yet
        task.claim()
    return part, index


_side: Optional[ThreadPoolExecutor] = None  # one thread for every trace: the index of one at a time
_side_lock = threading.Lock()


def _forget_side() -> None:
    """In a forked child: the parent's thread is not there (a task sent to it would wait forever)."""
    global _side, _side_lock
    _side, _side_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_side)


def prepare_rest(model: TraceModel, early: LanesStage) -> Prepared:
    """Stage two of `prepare`: the analyses, tables and indexes, around stage one's lane index."""
    done = analyze_and_report(model, search=True)
    analysis = done.analysis
    tables = {by: launch_table(model, analysis.launch, by=by, top=MAX_TOP) for by in ("kernel", "op")}
    heap.settle()  # the server lives on: what the load freed goes back
    return Prepared(analysis=analysis, index=early.index, report=done.report, launch_tables=tables,
                    digest=rank_digest(model, analysis, worker=""), tables=done.tables, search=done.search)


# `TraceService(stages=STAGES)`: the lanes are served the moment the lane index exists, the rest fills in after.
STAGES = (prepare_lanes, prepare_rest)
