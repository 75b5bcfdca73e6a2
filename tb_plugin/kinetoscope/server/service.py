"""The loading manager: which traces exist, which are loaded, and loading them in the background.

- A daemon thread rescans the logdir every `rescan_s` (and sooner when a client asks, at most every
  `min_rescan_s`); changed files are dropped and reloaded on their next request, deleted ones vanish.
- Loads run on a bounded thread pool, one future per file version, so concurrent requests share one
  load. Decoding a cache miss runs in a child process (`decoder.py`), so that the JSON decoder never
  holds this process's GIL. One spare child waits, started and imported, for the next load (spawned when the
  scanner starts, and again at the scan after a load took it, not while that load still analyses): a load then
  skips the 0.2-0.4 s a child takes to start. It costs one idle process of about 40 MB while TensorBoard runs.
- Ready spans live in an LRU bounded by the bytes of their arrays; the on-disk model cache makes a
  reload after eviction cheap.
- A span id is the first 12 hex digits of sha256(path): opaque, stable across restarts, never a path.
- Given an `index` reader (the plugin passes `index.readers.SidecarIndex`), a load first tries the trace's
  `kinetoscope index` sidecar (model and prepared analyses, nothing decoded); `status` says which `source`
  a load came from and, as `index_reason`, why a sidecar was not used. Reading only: no write access needed.

States: `unloaded` (never requested, or evicted) -> `queued` -> `loading` (phase reading, decoding or
analysing) -> `ready` | `error`. Given `stages` (the plugin's), a load publishes what the lane routes need
the moment the model is read (`lanes_ready` in `status`, `get_lanes`), then analyses the rest while the
state stays `loading` (phase analysing); `ready` still means everything.
An error that is not about the file's content (the decoder died or ran out of time, an I/O error, a file
still being written) is retried by itself, after 1, 2, 4 ... seconds (at most RETRY_MAX_S, at most
RETRY_ATTEMPTS times); the scanner requeues it when it is due.
"""
from __future__ import annotations

import atexit
import hashlib
import logging
import subprocess
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from ..trace.cache import default_cache_dir, load_cached
from ..trace.discovery import SkippedLink, TraceFile, noting_skipped_links, scan_logdir_checked
from ..trace.loader import TraceError, load_trace
from ..trace.model import TraceModel
from ..trace.remote import credentials_in_url, redact
from ..trace.storage import StorageError, confined, identity, is_process_local, is_remote, roots_for
from . import decoder
from .errors import NotFound, NotReady, TraceFailed, log_once

log = logging.getLogger(__name__)

_DEFAULT = object()
DEFAULT_BUDGET_BYTES = 2 << 30  # ~60 ten-times-ResNet spans; a span's arrays are ~80 bytes per event
PHASE_PROGRESS = {"reading": 0.0, "decoding": 0.05, "analysing": 0.85}  # decoding advances with the bytes decoded
LOAD_FAILED = "internal error while loading this trace; see the TensorBoard log"
RETRY_ATTEMPTS = 6  # transient failures retried this often (1+2+4+8+16+30 s), then the error stands
RETRY_MAX_S = 30.0
DERIVED_ENTRIES = 64  # views kept by `derived` (one per run asked for: a few KB to a few MB each)
# Fair loading: files this large on disk load on a pool of their own (one slot), so a few big or slow
# traces never keep a small one waiting; small files are bounded in time by the inflate budget anyway.
LARGE_FILE_BYTES = 64 << 20
_services: weakref.WeakSet[TraceService] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Kill decoding children when TensorBoard exits (SIGTERM ends it through sys.exit)."""
    for service in list(_services):
        service.close()


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


@dataclass(frozen=True)
class Loaded:
    """A ready span: its file version, model and whatever `prepare` derived from it (or, from `get_lanes`
    while a staged load analyses, what its first stage derived)."""

    file: TraceFile
    model: TraceModel
    prepared: Any
    nbytes: int


@dataclass
class _Entry:
    file: TraceFile
    state: str = "unloaded"
    phase: Optional[str] = None
    progress: Optional[float] = None
    error: Optional[str] = None
    events: Optional[int] = None
    started: Optional[float] = None
    future: Optional[Future] = None
    attempts: int = 0  # transient failures so far
    retry_at: Optional[float] = None  # monotonic time of the next try after a transient failure
    digest: Any = None  # `prepare`'s small per-trace summary (`.digest`), kept when the model is evicted
    source: Optional[str] = None  # where the last load came from: "sidecar", "cache" or "decoded"
    index_note: Optional[str] = None  # why the trace's index sidecar was not used (None: used, or no index reader)
    lanes: Optional[Loaded] = None  # stage one of a staged load in flight: the model and what the lanes need
    lanes_event: Optional[threading.Event] = None  # set once the lanes are published or the load has ended
    duration_us: Optional[float] = None  # the model's extent, known from stage one on (kept after eviction)
    index_version: Any = None  # the identity of the trace's sidecar at the scan: a new or changed one reloads


class TraceService:
    """Scans one logdir and loads its traces on demand. Thread-safe; every public method is cheap."""

    def __init__(self, logdir: str, *, cache_dir: Any = _DEFAULT, workers: int = 2,
                 memory_budget_bytes: int = DEFAULT_BUDGET_BYTES, rescan_s: float = 10.0,
                 min_rescan_s: float = 2.0, decode_in_child: bool = True,
                 prepare: Callable[[TraceModel], Any] = lambda model: None, index: Any = None,
                 preload_first: bool = False,
                 stages: Optional[tuple[Callable[[TraceModel], Any], Callable[[TraceModel, Any], Any]]] = None) -> None:
        self.logdir = logdir
        self.roots = roots_for([logdir])  # nothing outside is read (`storage.confined`): links out are refused
        self._cache_dir = default_cache_dir() if cache_dir is _DEFAULT else cache_dir
        self._workers = max(1, workers)
        self._budget = memory_budget_bytes
        self._rescan_s, self._min_rescan_s = rescan_s, min_rescan_s
        self._use_child = decode_in_child
        self._prepare = prepare
        self._preload_first = preload_first  # load the span a tab opens by default as soon as it is found
        self._index = index  # `index.readers.SidecarIndex`: models and analyses from `kinetoscope index` sidecars
        # (first, rest): a load publishes first(model) for the lane routes, then stores rest(model, first's
        # result) as the span's prepared analyses; `prepare` is then unused.
        self._stages = stages
        self._lock = threading.RLock()
        self._entries: dict[str, _Entry] = {}
        self._ready: OrderedDict[str, Loaded] = OrderedDict()
        self._sniff_cache: dict = {}
        self._derived: OrderedDict[Any, tuple[tuple, Any]] = OrderedDict()  # `derived`
        self._scanned = threading.Event()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._last_scan = 0.0
        self._scans = 0  # scans completed, so a caller can wait for the one it asked for
        self._scanning = False  # a scan under way may have listed the logdir before the change a caller saw
        self._scan_done = threading.Condition()
        self._thread: Optional[threading.Thread] = None
        self._pool: Optional[ThreadPoolExecutor] = None
        self._large_pool: Optional[ThreadPoolExecutor] = None
        self._children: set[subprocess.Popen] = set()
        self._spare: Optional[decoder.Child] = None  # a decoder child waiting for its job (`_take_child`)
        self.scan_error: Optional[str] = None  # why the last scan could not list the logdir (None: it could)
        self.skipped_links: list[SkippedLink] = []  # links out of the logdir the last scan did not follow
        _services.add(self)

    # ---- scanning -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background scanner (idempotent)."""
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._scan_loop, name="kinetoscope-scan", daemon=True)
            self._thread.start()

    def is_active(self) -> bool:
        """True once a scan found a trace. Waits a few ms for the very first scan, never raises."""
        try:
            self.start()
            self._scanned.wait(0.005)
            with self._lock:
                return bool(self._entries)
        except Exception:  # noqa: BLE001 - TensorBoard marks a raising plugin inactive; say so ourselves
            log_once("is_active", "kinetoscope: is_active failed", exc_info=True)
            return False

    def wait_scanned(self, timeout_s: float) -> bool:
        """Wait for the first scan (for routes that list); True when it has completed."""
        self.start()
        return self._scanned.wait(timeout_s)

    def request_rescan(self, wait_s: float = 0.0) -> None:
        """Ask the scanner for a rescan soon, unless one ran within `min_rescan_s`; wait up to `wait_s` for it
        (a listing then shows a file that changed since the last scan, not at the next request)."""
        if time.monotonic() - self._last_scan < self._min_rescan_s:
            return
        with self._scan_done:
            target = self._scans + (2 if self._scanning else 1)
            self._wake.set()
            if wait_s > 0:
                self._scan_done.wait_for(lambda: self._scans >= target or self._stop.is_set(), wait_s)

    def scan_now(self) -> None:
        """One scan in the caller's thread (used by the scanner and by tests)."""
        refused = credentials_in_url(self.logdir)
        if refused is not None:  # never listed, never logged as given
            self.scan_error = refused
            log_once(("scan-error", refused), "kinetoscope: %s", refused)
            self._scan_finished()
            return
        self._scanning = True
        skipped: list[SkippedLink] = []
        try:
            with confined(self.roots), noting_skipped_links(skipped.append):
                files = scan_logdir_checked(self.logdir, self._sniff_cache)
            self.scan_error = None
            for link in skipped:
                if link not in self.skipped_links:  # in TensorBoard's log once; the tab says how many, not where to
                    log.warning("kinetoscope: %s", link.remedy("start TensorBoard with --kinetoscope_allow_links_to"))
            self.skipped_links = skipped
        except StorageError as exc:  # unreachable, denied, missing: say why
            self.scan_error = redact(f"{self.logdir}: {exc}")
            log_once(("scan-error", self.logdir, str(exc)), "kinetoscope: %s", self.scan_error)
            # a remote listing that failed says nothing about which traces exist: keep those found before
            files = None if is_remote(self.logdir) else []
        finally:
            self._scanning = False
        if files is None:
            self._scan_finished()
            return
        new = {span_id(f.path): f for f in files}
        indexed = self._index_versions(new)  # outside the lock: an lstat each, or a listing per remote folder
        with self._lock:
            for sid in list(self._entries):
                if sid not in new:
                    self._drop(sid)
            for sid, file in new.items():
                entry = self._entries.get(sid)
                if entry is None or entry.file.identity != file.identity or entry.index_version != indexed[sid]:
                    self._drop(sid)
                    self._entries[sid] = _Entry(file, index_version=indexed[sid])
            self._entries = {sid: self._entries[sid] for sid in new}  # keep the scan's order
        self._scan_finished()

    def _index_versions(self, files: dict[str, TraceFile]) -> dict[str, Any]:
        """{span id: what identifies the trace's sidecar now} (None: no index reader, or no sidecar): when `index`
        writes, rewrites or removes it, locally or on an object store, the span reloads, so a running
        TensorBoard never keeps a model the sidecar no longer describes."""
        if self._index is None:
            return {sid: None for sid in files}
        try:
            with confined(self.roots):
                found = self._index.versions([f.path for f in files.values()])
            return {sid: found.get(f.path, "unreadable") for sid, f in files.items()}
        except Exception:  # noqa: BLE001 - a sidecar that cannot be stat'ed is one the load will refuse
            return {sid: "unreadable" for sid in files}

    def _scan_finished(self) -> None:
        self._last_scan = time.monotonic()
        self._scanned.set()
        with self._scan_done:
            self._scans += 1
            self._scan_done.notify_all()

    def _drop(self, sid: str) -> None:
        self._entries.pop(sid, None)
        self._ready.pop(sid, None)

    def _scan_loop(self) -> None:
        self._refill_spare()  # before the first scan: the first load finds its child started
        while not self._stop.is_set():
            try:
                self.scan_now()
                self.retry_due()
                self._preload()
                self._refill_spare()  # after a load took it: at the next pass, not while that load analyses
            except Exception:  # noqa: BLE001 - the scanner must survive anything a filesystem does
                log_once(("scan", self.logdir), "kinetoscope: scanning %s failed", self.logdir, exc_info=True)
                self._scanned.set()
            self._wake.wait(self._rescan_s)
            self._wake.clear()

    def _preload(self) -> None:
        """Once, when the logdir first lists a trace: start loading the first one, which a tab opens unless
        its link names another, so it is decoding while TensorBoard's page and the tab start."""
        with self._lock:
            if not self._preload_first or not self._entries:
                return
            self._preload_first = False
            first = next(iter(self._entries))
            idle = all(entry.future is None for entry in self._entries.values())
        if idle:  # nobody asked for anything yet: the default span is the best guess
            self._ensure_loading(first)

    def close(self) -> None:
        """Stop the scanner, cancel pending loads and kill decoding children."""
        self._stop.set()
        self._wake.set()
        with self._lock:
            pools, self._pool, self._large_pool = (self._pool, self._large_pool), None, None
            children = list(self._children)
            spare, self._spare = self._spare, None
        if spare is not None:
            spare.discard()
        for pool in pools:
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        for child in children:
            child.kill()

    # ---- listing --------------------------------------------------------------------------------

    def snapshot(self, sid: Optional[str] = None) -> list[tuple[str, TraceFile, dict[str, Any]]]:
        """(id, file, state) of every trace, or of one (raises NotFound), taken atomically.

        The state dict has `state`, `phase`, `progress`, `error`, `events` and `elapsed_s` (while loading).
        """
        self.start()
        with self._lock:
            if sid is not None and sid not in self._entries:
                raise NotFound(f"unknown span {sid!r}")
            chosen = [sid] if sid is not None else list(self._entries)
            now = time.monotonic()
            return [(s, self._entries[s].file, self._state(self._entries[s], now)) for s in chosen]

    @staticmethod
    def _state(entry: _Entry, now: float) -> dict[str, Any]:
        loading = entry.state == "loading" and entry.started is not None
        return {"state": entry.state, "phase": entry.phase, "progress": entry.progress, "error": entry.error,
                "events": entry.events, "elapsed_s": round(now - entry.started, 2) if loading else None,
                "source": entry.source, "index_reason": entry.index_note,
                "lanes_ready": entry.state == "ready" or (entry.state == "loading" and entry.lanes is not None),
                "duration_us": entry.duration_us}

    # ---- loading --------------------------------------------------------------------------------

    def get(self, sid: str, wait_s: float = 0.0) -> Loaded:
        """The loaded span, queueing its load if needed.

        Args:
            sid: span id.
            wait_s: how long to wait for a load in progress before answering NotReady.

        Raises:
            NotFound: unknown id. NotReady: queued or loading. TraceFailed: the trace failed to load.
        """
        self.request_load(sid, wait_s)
        with self._lock:
            return self._ready_or_raise(sid)

    def request_load(self, sid: str, wait_s: float = 0.0) -> None:
        """Queue the load of a span unless it is ready or failed, and wait up to `wait_s` for it.

        Unlike `get` it answers nothing: the outcome is in `snapshot`, so a client can ask for a load
        without being refused while it runs.

        Raises:
            NotFound: unknown id.
        """
        self.start()
        future = self._ensure_loading(sid)
        if future is not None and wait_s > 0:
            wait_futures([future], timeout=wait_s)

    def get_lanes(self, sid: str, wait_s: float = 0.0) -> Loaded:
        """What the lane routes need: the span once ready, or, while a staged load analyses it, its model and
        the first stage's result (`Loaded.prepared` is then that result). Queues the load if needed and waits
        up to `wait_s` for the lanes to be published.

        Raises:
            NotFound: unknown id. NotReady: queued, or loading before the lanes. TraceFailed: the load failed.
        """
        self.request_lanes(sid, wait_s)
        with self._lock:
            entry = self._entries.get(sid)
            if entry is not None and entry.state == "loading" and entry.lanes is not None:
                return entry.lanes
            return self._ready_or_raise(sid)

    def request_lanes(self, sid: str, wait_s: float = 0.0) -> None:
        """`request_load`, but the wait ends as soon as the lanes are published (or the load ends).

        Raises:
            NotFound: unknown id.
        """
        self.start()
        if self._ensure_loading(sid) is None or wait_s <= 0:
            return
        with self._lock:
            entry = self._entries.get(sid)
            event = entry.lanes_event if entry is not None else None
        if event is not None:
            event.wait(wait_s)

    def _ensure_loading(self, sid: str) -> Optional[Future]:
        with self._lock:
            entry = self._entries.get(sid)
            if entry is None:
                raise NotFound(f"unknown span {sid!r}")
            if entry.state == "ready" and sid in self._ready:
                self._ready.move_to_end(sid)
                return None
            if entry.state == "error" and not self._retry_due(entry):
                return None
            if entry.future is None or entry.future.done():
                entry.state, entry.phase, entry.progress, entry.error = "queued", None, None, None
                entry.lanes, entry.lanes_event = None, threading.Event()
                entry.future = self._thread_pool(entry.file.size >= LARGE_FILE_BYTES).submit(self._load, sid, entry.file)
                entry.future.add_done_callback(lambda _done, event=entry.lanes_event: event.set())
            return entry.future

    @staticmethod
    def _retry_due(entry: _Entry) -> bool:
        return entry.retry_at is not None and time.monotonic() >= entry.retry_at

    def retry_due(self) -> None:
        """Requeue the spans whose transient failure is due for another try (the scanner calls this)."""
        with self._lock:
            due = [sid for sid, entry in self._entries.items() if entry.state == "error" and self._retry_due(entry)]
        for sid in due:
            try:
                self._ensure_loading(sid)
            except NotFound:
                continue

    def _ready_or_raise(self, sid: str) -> Loaded:
        entry = self._entries.get(sid)
        if entry is None:
            raise NotFound(f"unknown span {sid!r}")
        if entry.state == "ready" and sid in self._ready:
            return self._ready[sid]
        if entry.state == "error":
            raise TraceFailed(entry.error or LOAD_FAILED)
        raise NotReady(sid, entry.state, entry.progress)

    def _thread_pool(self, large: bool = False) -> ThreadPoolExecutor:
        """The pool for small files (`workers` slots), or the one-slot pool of large files."""
        if large:
            if self._large_pool is None:
                self._large_pool = ThreadPoolExecutor(1, thread_name_prefix="kinetoscope-load-large")
            return self._large_pool
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="kinetoscope-load")
        return self._pool

    def _update(self, sid: str, file: TraceFile, **changes: Any) -> bool:
        """Apply changes to the entry if it still describes this file version (a rescan may replace it)."""
        with self._lock:
            entry = self._entries.get(sid)
            if entry is None or entry.file != file:
                return False
            for key, value in changes.items():
                setattr(entry, key, value)
            return True

    def _phase(self, sid: str, file: TraceFile, phase: str) -> None:
        self._update(sid, file, state="loading", phase=phase, progress=PHASE_PROGRESS[phase])

    def _load(self, sid: str, file: TraceFile) -> None:
        """Load one file version; whatever happens, the entry ends `ready` or `error` with its message (a span
        never stays `loading`)."""
        try:
            self._update(sid, file, started=time.monotonic())
            self._phase(sid, file, "reading")
            with confined(self.roots):
                model, early = self._from_index(sid, file)
                if model is None:
                    model = self._read_model(sid, file)
            self._phase(sid, file, "analysing")
            prepared = self._prepare(model) if self._stages is None else self._prepare_staged(sid, file, model, early)
            self._update(sid, file, attempts=0, retry_at=None)
            self._store(sid, Loaded(file, model, prepared, model_nbytes(model) + getattr(prepared, "nbytes", 0)))
        except TraceError as exc:
            self._fail(sid, file, redact(f"{file.run}/{Path(file.path).name}: {exc.message}"), transient=exc.transient)
        except Exception:  # noqa: BLE001 - a bug in one trace's analysis must not kill the worker
            log_once(("load", file.path), "kinetoscope: loading %s failed", file.path, exc_info=True)
            self._fail(sid, file, LOAD_FAILED)

    def _prepare_staged(self, sid: str, file: TraceFile, model: TraceModel, early: Any = None) -> Any:
        """Stage one (unless `early` holds it already), published for the lane routes at once; then stage two, the
        span's prepared analyses."""
        first, rest = self._stages
        early = first(model) if early is None else early
        self._publish_lanes(sid, Loaded(file, model, early, model_nbytes(model) + getattr(early, "nbytes", 0)))
        return rest(model, early)

    def _publish_lanes(self, sid: str, loaded: Loaded) -> None:
        """Serve the lane routes from `loaded` while the load goes on (if the entry is still this version)."""
        with self._lock:
            if self._update(sid, loaded.file, lanes=loaded, duration_us=model_duration_us(loaded.model)):
                event = self._entries[sid].lanes_event
                if event is not None:
                    event.set()

    def _fail(self, sid: str, file: TraceFile, message: str, transient: bool = False) -> None:
        with self._lock:
            entry = self._entries.get(sid)
            attempts = (entry.attempts if entry is not None else 0) + 1
        retry_at = None
        if transient and attempts <= RETRY_ATTEMPTS:
            delay = min(RETRY_MAX_S, 2.0 ** (attempts - 1))
            retry_at = time.monotonic() + delay
            message = f"{message} (retrying in {delay:g} s)"
        self._update(sid, file, state="error", phase=None, progress=None, error=message, attempts=attempts,
                     retry_at=retry_at, lanes=None)

    def _from_index(self, sid: str, file: TraceFile) -> tuple[Optional[TraceModel], Any]:
        """(model, stage one's result or None) from the trace's index sidecar when it holds for these bytes, else
        (None, None) with the reason kept for `status`. The sidecar is read (hashed, capped, checked) in a decoder
        child where decoding would be, so a hostile sidecar costs that child's memory, never this process's; the
        analyses are then computed from the checked model like those of any other load.

        The trace's sha256 is computed here (a thread reading the trace, not the sidecar, through a fixed buffer)
        from the start, while the child starts and checks the sidecar; the child sends the checked model and the
        sha256 it is bound to; stage one (the lane index) is built meanwhile and kept only when the two hashes
        agree, and nothing is published before."""
        if self._index is None:
            return None, None
        early: list = []
        if self._use_child and not is_process_local(file.path) and self._index.present(file.path):
            # the trace's hash runs here, from now on, while the child starts and checks the sidecar
            hashing = self._index.hash_trace(file.path)
            try:
                model, reason, bound = self._in_child(file.path, decoder.SIDECAR_BOUND,
                                                      on_model=lambda model: self._stage_one(model, early))
                if model is not None:
                    reason = hashing.check(bound)
                    model = None if reason else model
            finally:
                hashing.cancel()
        else:
            model, reason = self._index.open_model(file.path)
        self._update(sid, file, index_note=redact(reason) if reason else None,
                     source="sidecar" if model is not None else None)
        return model, (early[0] if model is not None and early and early[0] is not None else None)

    def _stage_one(self, model: TraceModel, out: list) -> None:
        """Stage one of a model whose sidecar's hash is being compared (None when it fails: `_prepare_staged` then
        runs it again, and its error stands)."""
        if self._stages is None:
            return
        try:
            out.append(self._stages[0](model))
        except Exception:  # noqa: BLE001 - rerun after the verdict, where its error is the load's
            out.append(None)

    def _read_model(self, sid: str, file: TraceFile) -> TraceModel:
        """From the disk cache when it holds this version, else decoded (in a worker process)."""
        if self._cache_dir is not None:
            try:
                cached = load_cached(Path(self._cache_dir), identity(file.path))
            except StorageError as exc:
                raise TraceError(file.path, str(exc)) from None
            if cached is not None:
                self._update(sid, file, source="cache")
                return cached
        self._phase(sid, file, "decoding")
        self._update(sid, file, source="decoded")
        start, end = PHASE_PROGRESS["decoding"], PHASE_PROGRESS["analysing"]

        def on_progress(share: float) -> None:
            self._update(sid, file, progress=round(start + (end - start) * share, 3))
        if not self._use_child or is_process_local(file.path):
            return load_trace(file.path, cache_dir=self._cache_dir, progress=on_progress)
        return self._decode_in_child(file.path, on_progress)

    def _decode_in_child(self, path: str, on_progress: Callable[[float], None] = lambda share: None) -> TraceModel:
        return self._in_child(path, decoder.DECODE, on_progress)

    def _in_child(self, path: str, mode: str, on_progress: Callable[[float], None] = lambda share: None,
                  on_model: Optional[Callable[[TraceModel], None]] = None) -> Any:
        """A decoder child's result: the model (DECODE), or (model or None, why not, bound sha256) for a sidecar
        (SIDECAR, SIDECAR_BOUND; `on_model` gets the model before the trace's hash is confirmed:
        `decoder.sidecar_result`)."""
        with self._lock:
            if self._stop.is_set():
                raise TraceError(path, "the plugin is shutting down")
            spare, self._spare = self._spare, None
        child = self._take_child(spare, path, mode, on_progress)
        try:
            if mode in (decoder.SIDECAR, decoder.SIDECAR_BOUND):
                return decoder.sidecar_result(child, path, on_model)
            return decoder.result(child, path)
        finally:
            with self._lock:
                self._children.discard(child)

    def _take_child(self, spare: Optional[decoder.Child], path: str, mode: str,
                    on_progress: Callable[[float], None]) -> subprocess.Popen:
        """The spare child with this job, when it is alive and was spawned with the environment a child would be
        spawned with now (roots, memory limit, budgets); else a fresh child with it."""
        if spare is not None and spare.alive() and spare.key == decoder.spawn_key(self.roots):
            try:
                child = spare.assign(path, self._cache_dir, mode, on_progress)
                with self._lock:
                    self._children.add(child)
                return child
            except OSError:
                pass  # it died meanwhile
        if spare is not None:
            with self._lock:
                self._children.discard(spare.popen)
            spare.discard()
        with self._lock:
            if self._stop.is_set():
                raise TraceError(path, "the plugin is shutting down")
            child = decoder.start(path, self._cache_dir, on_progress, self.roots, mode)
            self._children.add(child)
        return child

    def _refill_spare(self) -> None:
        """Spawn the spare child, unless there is one, children are not used, or the service is closing."""
        if not self._use_child:
            return
        with self._lock:
            if self._spare is not None or self._stop.is_set():
                return
            try:
                self._spare = decoder.spawn(self.roots)
            except OSError:
                log_once(("spare", self.logdir), "kinetoscope: could not start a decoder process", exc_info=True)
                return
            self._children.add(self._spare.popen)

    def _store(self, sid: str, loaded: Loaded) -> None:
        """Make the span ready and evict least recently used spans beyond the budget."""
        with self._lock:
            if not self._update(sid, loaded.file, state="ready", phase=None, progress=1.0,
                                events=loaded.model.n_events, error=None, lanes=None,
                                duration_us=model_duration_us(loaded.model)):
                return
            self._ready[sid] = loaded
            self._ready.move_to_end(sid)
            self._entries[sid].digest = getattr(loaded.prepared, "digest", None)
            total = sum(item.nbytes for item in self._ready.values())
            while total > self._budget and len(self._ready) > 1:
                old_sid, old = self._ready.popitem(last=False)
                total -= old.nbytes
                entry = self._entries.get(old_sid)
                if entry is not None:
                    entry.state, entry.progress, entry.future = "unloaded", None, None

    def digest(self, sid: str) -> Any:
        """The span's digest (what `prepare` summarised of it), which outlives the model's eviction; None
        until it has loaded once (its load is then queued: ask again).

        Raises:
            NotFound: unknown id. TraceFailed: the trace failed to load.
        """
        with self._lock:
            entry = self._entries.get(sid)
            if entry is not None and entry.digest is not None:
                return entry.digest
        if entry is not None and self._index is not None:  # a sidecar's summary: no model loaded
            with confined(self.roots):
                digest, _reason = self._index.digest(entry.file.path)
            if digest is not None and self._update(sid, entry.file, digest=digest):
                return digest
        self.request_load(sid)
        with self._lock:
            entry = self._entries.get(sid)
            if entry is not None and entry.state == "error":
                raise TraceFailed(entry.error or LOAD_FAILED)
            return entry.digest if entry is not None else None

    def derived(self, key: Any, inputs: Sequence[Any], build: Callable[[], Any]) -> Any:
        """`build()`, a value made only from `inputs` (digests: a reload replaces a span's digest, never
        changes it), kept under `key` (hashable, equal for equal requests) while the same objects come back,
        so a view of many digests is built once per set of loads, not once per request (the ranks view of 64
        ranks costs ~15 ms). At most DERIVED_ENTRIES keys, the least recently used dropped. The value is
        shared between callers: they must not change it."""
        inputs = tuple(inputs)
        with self._lock:
            held = self._derived.get(key)
            if held is not None and len(held[0]) == len(inputs) and all(a is b for a, b in zip(held[0], inputs)):
                self._derived.move_to_end(key)
                return held[1]
        value = build()  # outside the lock: loads publishing meanwhile only make the next request build again
        with self._lock:
            self._derived[key] = (inputs, value)
            self._derived.move_to_end(key)
            while len(self._derived) > DERIVED_ENTRIES:
                self._derived.popitem(last=False)
        return value

    def ready_bytes(self) -> int:
        """Bytes held by ready spans (for tests and diagnostics)."""
        with self._lock:
            return sum(item.nbytes for item in self._ready.values())
