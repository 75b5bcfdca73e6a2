"""What the loading service keeps per trace file: the span id, the loaded span, the entry with its state (and the
state dict `snapshot` answers), and the table of them: the entries of the last scan and the ready spans, an LRU
bounded by the bytes of their arrays.
"""
from __future__ import annotations

import hashlib
import math
import os
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any, Optional

import msgspec
import numpy as np

from ..trace.discovery import TraceFile
from ..trace.model import TraceModel
from .errors import NotFound, NotReady, TraceFailed

LOAD_FAILED = "internal error while loading this trace; see the TensorBoard log"


def span_id(path: str) -> str:
    """The opaque id of a trace file."""
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def model_nbytes(model: TraceModel) -> int:
    """Bytes a loaded model holds, what the memory budget counts: its arrays, those the analyses derived and keep
    with it (`TraceModel.shared`), and its strings (a trace may carry a 1.5 GiB name; every str also costs its
    object header)."""
    arrays = sum(v.nbytes for v in vars(model).values() if isinstance(v, np.ndarray)) + model.shared_nbytes()
    strings = sum(sys.getsizeof(s) for table in (model.names, model.cats, model.lane_label) for s in table)
    return arrays + strings


def model_duration_us(model: TraceModel) -> float:
    """The model's extent in µs, as the summary's `duration_us` gives it."""
    return (float(model.stop_ns) - model.start_ns) / 1e3


class Loaded(msgspec.Struct, frozen=True):
    """A ready span: its file version, model and whatever `prepare` derived from it (or, from `get_lanes`
    while a staged load analyses, what its first stage derived)."""

    file: TraceFile
    model: TraceModel
    prepared: Any
    nbytes: int


class Entry(msgspec.Struct):
    file: TraceFile
    state: str = "unloaded"
    phase: Optional[str] = None
    progress: Optional[float] = None
    phase_progress: Optional[float] = None  # the share of the phase's own work done, where it is measured (decoding)
    error: Optional[str] = None
    events: Optional[int] = None
    started: Optional[float] = None
    future: Optional[Future] = None
    attempts: int = 0  # transient failures so far
    retry_at: Optional[float] = None  # monotonic time of the next try after a transient failure
    digest: Any = None  # `prepare`'s small per-trace summary (`.digest`), kept when the model is evicted
    source: Optional[str] = None  # where the last load came from: "sidecar", "cache" or "decoded"
    analyses: Optional[str] = None  # where its analyses came from: "cache" (`index.local_cache`) or "computed"
    index_note: Optional[str] = None  # why the trace's index sidecar was not used (None: used, or no index reader)
    lanes: Optional[Loaded] = None  # stage one of a staged load in flight: the model and what the lanes need
    lanes_event: Optional[threading.Event] = None  # set once the lanes are published or the load has ended
    duration_us: Optional[float] = None  # the model's extent, known from stage one on (kept after eviction)
    index_version: Any = None  # the identity of the trace's sidecar at the scan: a new or changed one reloads


def shown_error(entry: Entry, now: float) -> Optional[str]:
    """The entry's error as a user reads it: with the time left before a transient failure is tried again."""
    error = entry.error
    if error is not None and entry.state == "error" and entry.retry_at is not None:
        left = math.ceil(entry.retry_at - now)
        error = f"{error} (retrying in {left:d} s)" if left > 0 else f"{error} (retrying now)"
    return error


def loaded_line(entry: Optional[Entry], file: TraceFile, model: TraceModel, now: float) -> str:
    """TensorBoard's log line for a load: which trace, where its model and analyses came from, how long it took."""
    took = f" in {now - entry.started:.2f} s" if entry is not None and entry.started is not None else ""
    source, analyses = (entry.source, entry.analyses) if entry is not None else (None, None)
    return (f"kinetoscope: {file.run}/{os.path.basename(file.path)} loaded{took} ({model.n_events} events; "
            f"model: {source or 'decoded'}; analyses: {analyses or 'computed'})")


def entry_state(entry: Entry, now: float) -> dict[str, Any]:
    loading = entry.state == "loading" and entry.started is not None
    return {"state": entry.state, "phase": entry.phase, "progress": entry.progress,
            "phase_progress": entry.phase_progress if entry.state == "loading" else None, "error": shown_error(entry, now),
            "events": entry.events, "elapsed_s": round(now - entry.started, 2) if loading else None,
            "source": entry.source, "analyses": entry.analyses, "index_reason": entry.index_note,
            "lanes_ready": entry.state == "ready" or (entry.state == "loading" and entry.lanes is not None),
            "duration_us": entry.duration_us}


def retry_is_due(entry: Entry) -> bool:
    return entry.retry_at is not None and time.monotonic() >= entry.retry_at


class SpanTable:
    """The service's entries, one per trace file of the last scan in its order, and its ready spans, least recently
    used first. `lock` is the service's: every method holds it, but `ready_or_raise`, whose caller does."""

    def __init__(self, lock: threading.RLock, budget: int) -> None:
        self.lock = lock
        self.budget = budget  # the bytes ready spans may hold; beyond it the least recently used are evicted
        self.entries: dict[str, Entry] = {}
        self.ready: OrderedDict[str, Loaded] = OrderedDict()

    def rescanned(self, files: dict[str, TraceFile], indexed: dict[str, Any]) -> None:
        """Keep the entries of the scan's `files` ({span id: file}), in its order: a changed file, or a new or
        changed sidecar (`indexed`), gets a fresh entry; a file gone drops its."""
        with self.lock:
            for sid in list(self.entries):
                if sid not in files:
                    self._drop(sid)
            for sid, file in files.items():
                entry = self.entries.get(sid)
                if entry is None or entry.file.identity != file.identity or entry.index_version != indexed[sid]:
                    self._drop(sid)
                    self.entries[sid] = Entry(file, index_version=indexed[sid])
            self.entries = {sid: self.entries[sid] for sid in files}  # keep the scan's order

    def _drop(self, sid: str) -> None:
        self.entries.pop(sid, None)
        self.ready.pop(sid, None)

    def states(self, sid: Optional[str] = None) -> list[tuple[str, TraceFile, dict[str, Any]]]:
        """(id, file, state) of every trace, or of one (raises NotFound), taken atomically."""
        with self.lock:
            if sid is not None and sid not in self.entries:
                raise NotFound(f"unknown span {sid!r}")
            chosen = [sid] if sid is not None else list(self.entries)
            now = time.monotonic()
            return [(s, self.entries[s].file, entry_state(self.entries[s], now)) for s in chosen]

    def due(self) -> list[str]:
        """The spans whose transient failure is due for another try."""
        with self.lock:
            return [sid for sid, entry in self.entries.items() if entry.state == "error" and retry_is_due(entry)]

    def ready_or_raise(self, sid: str) -> Loaded:
        entry = self.entries.get(sid)
        if entry is None:
            raise NotFound(f"unknown span {sid!r}")
        if entry.state == "ready" and sid in self.ready:
            return self.ready[sid]
        if entry.state == "error":
            raise TraceFailed(shown_error(entry, time.monotonic()) or LOAD_FAILED)
        raise NotReady(sid, entry.state, entry.progress)

    def update(self, sid: str, file: TraceFile, **changes: Any) -> bool:
        """Apply changes to the entry if it still describes this file version (a rescan may replace it)."""
        with self.lock:
            entry = self.entries.get(sid)
            if entry is None or entry.file != file:
                return False
            for key, value in changes.items():
                setattr(entry, key, value)
            return True

    def store(self, sid: str, loaded: Loaded) -> None:
        """Make the span ready and evict least recently used spans beyond the budget."""
        with self.lock:
            if not self.update(sid, loaded.file, state="ready", phase=None, progress=1.0,
                               events=loaded.model.n_events, error=None, lanes=None,
                               duration_us=model_duration_us(loaded.model)):
                return
            self.ready[sid] = loaded
            self.ready.move_to_end(sid)
            self.entries[sid].digest = getattr(loaded.prepared, "digest", None)
            total = sum(item.nbytes for item in self.ready.values())
            while total > self.budget and len(self.ready) > 1:
                old_sid, old = self.ready.popitem(last=False)
                total -= old.nbytes
                entry = self.entries.get(old_sid)
                if entry is not None:
                    entry.state, entry.progress, entry.future = "unloaded", None, None

    def ready_bytes(self) -> int:
        """Bytes held by ready spans."""
        with self.lock:
            return sum(item.nbytes for item in self.ready.values())
