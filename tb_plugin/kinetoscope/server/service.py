"""The loading manager: which traces exist, which are loaded, and loading them in the background.

- A daemon thread rescans the logdir every `rescan_s` (and sooner when a client asks, at most every
  `min_rescan_s`); changed files are dropped and reloaded on their next request, deleted ones vanish.
- Loads run on a bounded thread pool, one future per file version, so concurrent requests share one
  load; the span whose lanes the tab asks for skips the queue, and the other loads step aside meanwhile
  (`foreground.py`). Decoding a cache miss runs in a child process (`decoder.py`), so that the JSON decoder never
  holds this process's GIL. A spare child waits, started and imported, for the next load (`children.py`).
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
import logging
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from pathlib import Path
from typing import Any, Callable, Optional

from ..pipeline import with_graph_reference
from ..trace.cache import default_cache_dir, load_cached
from ..trace.discovery import SkippedLink, TraceFile
from ..trace.loader import TraceError, load_trace
from ..trace.model import TraceModel
from ..trace.remote import redact
from ..trace.storage import StorageError, confined, identity, is_process_local, roots_for
from . import decoder
from .children import DecoderChildren
from .derived import Derived
from .errors import NotFound, TraceFailed, log_once
from .foreground import Foreground
from .scanning import index_versions, scan_listing
from .spans import LOAD_FAILED, Loaded, SpanTable, loaded_line, model_duration_us, model_nbytes, retry_is_due, span_id

log = logging.getLogger(__name__)

_DEFAULT = object()
DEFAULT_BUDGET_BYTES = 2 << 30  # ~60 ten-times-ResNet spans; a span's arrays are ~80 bytes per event
PHASE_PROGRESS = {"reading": 0.0, "decoding": 0.05, "analysing": 0.85}  # decoding advances with the bytes decoded
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


class TraceService:
    """Scans one logdir and loads its traces on demand. Thread-safe; every public method is cheap."""

    def __init__(self, logdir: str, *, cache_dir: Any = _DEFAULT, workers: int = 2,
                 memory_budget_bytes: int = DEFAULT_BUDGET_BYTES, rescan_s: float = 10.0,
                 min_rescan_s: float = 2.0, decode_in_child: bool = True,
                 prepare: Callable[[TraceModel], Any] = lambda model: None, index: Any = None,
                 preload_first: bool = False, analyses: Any = None,
                 stages: Optional[tuple[Callable[[TraceModel], Any], Callable[[TraceModel, Any], Any]]] = None) -> None:
        self.logdir = logdir
        self.roots = roots_for([logdir])  # nothing outside is read (`storage.confined`): links out are refused
        self._cache_dir = default_cache_dir() if cache_dir is _DEFAULT else cache_dir
        self._workers = max(1, workers)
        self._rescan_s, self._min_rescan_s = rescan_s, min_rescan_s
        self._use_child = decode_in_child
        self._prepare = prepare
        self._preload_first = preload_first  # load the span a tab opens by default as soon as it is found
        self._index = index  # `index.readers.SidecarIndex`: models and analyses from `kinetoscope index` sidecars
        if index is not None:
            index.refuse_keys_inside(self.roots)  # a key file inside the logdir is trusted by no reader
        # (first, rest): a load publishes first(model) for the lane routes, then stores rest(model, first's
        # result) as the span's prepared analyses; `prepare` is then unused. `analyses` (`index.readers.AnalysesCache`)
        # keeps both in the disk cache, so a trace version analysed once is served at once after a restart.
        self._stages = stages
        self._analyses = analyses if self._cache_dir is not None else None
        self._lock = threading.RLock()
        self._spans = SpanTable(self._lock, memory_budget_bytes)
        self._sniff_cache: dict = {}
        self._derived = Derived(self._lock, DERIVED_ENTRIES)  # `derived`
        self._scanned = threading.Event()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._last_scan = 0.0
        self._scans = 0  # scans completed, so a caller can wait for the one it asked for
        self._scanning = False  # a scan under way may have listed the logdir before the change a caller saw
        self._scan_done = threading.Condition()
        self._scan_lock = threading.Lock()  # one scan at a time (`scan_now`)
        self._thread: Optional[threading.Thread] = None
        self._pool: Optional[ThreadPoolExecutor] = None
        self._large_pool: Optional[ThreadPoolExecutor] = None
        self._decoders = DecoderChildren(logdir, self.roots, self._cache_dir, decode_in_child, self._lock, self._stop)
        self._foreground = Foreground()  # the span in view loads first
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
                return bool(self._spans.entries)
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
        """One scan in the caller's thread (used by the scanner and by tests). Scans run one at a time: one that
        listed the logdir earlier never applies its listing after a later one's (a file rewritten in between would
        get back the entry of its old version)."""
        with self._scan_lock:
            self._scan_once()

    def _scan_once(self) -> None:
        self._scanning = True
        try:
            files, self.scan_error, self.skipped_links = scan_listing(self.logdir, self.roots, self._sniff_cache,
                                                                      self.skipped_links)
        finally:
            self._scanning = False
        if files is not None:
            new = {span_id(f.path): f for f in files}
            indexed = index_versions(self._index, self.roots, new)  # outside the lock: an lstat each, or a listing per remote folder
            self._spans.rescanned(new, indexed)
        self._scan_finished()

    def _scan_finished(self) -> None:
        self._last_scan = time.monotonic()
        self._scanned.set()
        with self._scan_done:
            self._scans += 1
            self._scan_done.notify_all()

    def _scan_loop(self) -> None:
        self._decoders.refill()  # before the first scan: the first load finds its child started
        while not self._stop.is_set():
            try:
                self.scan_now()
                self.retry_due()
                self._preload()
                self._decoders.refill()  # after a load took it: at the next pass, not while that load analyses
            except Exception:  # noqa: BLE001 - the scanner must survive anything a filesystem does
                log_once(("scan", self.logdir), "kinetoscope: scanning %s failed", self.logdir, exc_info=True)
                self._scanned.set()
            self._wake.wait(self._rescan_s)
            self._wake.clear()

    def _preload(self) -> None:
        """Once, when the logdir first lists a trace: start loading the first one, which a tab opens unless
        its link names another, so it is decoding while TensorBoard's page and the tab start."""
        with self._lock:
            if not self._preload_first or not self._spans.entries:
                return
            self._preload_first = False
            first = next(iter(self._spans.entries))
            idle = all(entry.future is None for entry in self._spans.entries.values())
        if idle:  # nobody asked for anything yet: the default span is the best guess
            self._ensure_loading(first)

    def close(self) -> None:
        """Stop the scanner, cancel pending loads and kill decoding children."""
        self._stop.set()
        self._wake.set()
        with self._lock:
            pools, self._pool, self._large_pool = (self._pool, self._large_pool, self._foreground.take_pool()), None, None
            children, spare = self._decoders.take_all()
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
        return self._spans.states(sid)

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
            return self._spans.ready_or_raise(sid)

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
            entry = self._spans.entries.get(sid)
            if entry is not None and entry.state == "loading" and entry.lanes is not None:
                return entry.lanes
            return self._spans.ready_or_raise(sid)

    def request_lanes(self, sid: str, wait_s: float = 0.0) -> None:
        """`request_load`, but the wait ends as soon as the lanes are published (or the load ends).

        Raises:
            NotFound: unknown id.
        """
        self.start()
        if self._ensure_loading(sid, view=True) is None or wait_s <= 0:
            return
        with self._lock:
            entry = self._spans.entries.get(sid)
            event = entry.lanes_event if entry is not None else None
        if event is not None:
            event.wait(wait_s)

    def _ensure_loading(self, sid: str, view: bool = False) -> Optional[Future]:
        """The span's load, queued unless it is ready or failed; `view`: the tab waits for its lanes, so a load
        still queued starts now, on the view's own slot, and the others step aside until its lanes are out."""
        with self._lock:
            entry = self._spans.entries.get(sid)
            if entry is None:
                raise NotFound(f"unknown span {sid!r}")
            if entry.state == "ready" and sid in self._spans.ready:
                self._spans.ready.move_to_end(sid)
                return None
            if entry.state == "error" and not retry_is_due(entry):
                return None
            if entry.future is None or entry.future.done() or (view and entry.future.cancel()):
                entry.state, entry.phase, entry.progress, entry.error = "queued", None, None, None
                entry.lanes, entry.lanes_event = None, threading.Event()
                pool = self._foreground.pool() if view else self._thread_pool(entry.file.size >= LARGE_FILE_BYTES)
                entry.future = pool.submit(self._load, sid, entry.file)
                entry.future.add_done_callback(lambda _done, event=entry.lanes_event: event.set())
            if view and entry.lanes is None:
                self._foreground.begin(sid)
            return entry.future

    def retry_due(self) -> None:
        """Requeue the spans whose transient failure is due for another try (the scanner calls this)."""
        for sid in self._spans.due():
            try:
                self._ensure_loading(sid)
            except NotFound:
                continue

    def _thread_pool(self, large: bool = False) -> ThreadPoolExecutor:
        """The pool for small files (`workers` slots), or the one-slot pool of large files."""
        if large:
            if self._large_pool is None:
                self._large_pool = ThreadPoolExecutor(1, thread_name_prefix="kinetoscope-load-large")
            return self._large_pool
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="kinetoscope-load")
        return self._pool

    def _phase(self, sid: str, file: TraceFile, phase: str) -> None:
        # only the decoding measures its own work (the bytes decoded): nothing of it is done yet
        self._spans.update(sid, file, state="loading", phase=phase, progress=PHASE_PROGRESS[phase],
                           phase_progress=0.0 if phase == "decoding" else None)

    def _load(self, sid: str, file: TraceFile) -> None:
        """Load one file version; whatever happens, the entry ends `ready` or `error` with its message (a span
        never stays `loading`)."""
        self._foreground.started(sid)
        try:
            self._spans.update(sid, file, started=time.monotonic())
            self._phase(sid, file, "reading")
            with confined(self.roots):
                model, early = self._from_index(sid, file)
                if model is None:
                    model = self._read_model(sid, file)
                model = with_graph_reference(model, file.path)  # the capture trace beside it, inside the logdir
            self._phase(sid, file, "analysing")
            prepared = self._prepare(model) if self._stages is None else self._prepare_staged(sid, file, model, early)
            self._spans.update(sid, file, attempts=0, retry_at=None)
            self._spans.store(sid, Loaded(file, model, prepared, model_nbytes(model) + getattr(prepared, "nbytes", 0)))
            log.info("%s", loaded_line(self._spans.entries.get(sid), file, model, time.monotonic()))
            self._decoders.refill()  # the next pick finds a child started, not only after the next scan
        except TraceError as exc:
            self._fail(sid, file, redact(f"{file.run}/{Path(file.path).name}: {exc.message}"), transient=exc.transient)
        except Exception:  # noqa: BLE001 - a bug in one trace's analysis must not kill the worker
            if not (self._stop.is_set() or sys.is_finalizing()):  # shutting down (SIGTERM) cut the load: no bug
                log_once(("load", file.path), "kinetoscope: loading %s failed", file.path, exc_info=True)
                self._fail(sid, file, LOAD_FAILED)
        finally:
            self._foreground.finished(sid)  # in view or not: the others need not step aside for it any longer

    def _prepare_staged(self, sid: str, file: TraceFile, model: TraceModel, early: Any = None) -> Any:
        """Stage one (unless `early` or the analyses cache holds it), published for the lane routes at once; then
        stage two, the span's prepared analyses (from the cache, else computed and cached)."""
        first, rest = self._stages
        self._foreground.wait_turn(sid)  # a span in view waiting for its lanes goes first
        token, cached = self._analyses.load(self._cache_dir, file.path) if self._analyses else (None, None)
        early = cached[0] if cached else first(model) if early is None else early
        self._spans.update(sid, file, analyses="cache" if cached else "computed")
        self._publish_lanes(sid, Loaded(file, model, early, model_nbytes(model) + getattr(early, "nbytes", 0)))
        prepared = cached[1] if cached else rest(model, early)
        if self._analyses and not cached:
            self._analyses.store(self._cache_dir, token, prepared)
        return prepared

    def _publish_lanes(self, sid: str, loaded: Loaded) -> None:
        """Serve the lane routes from `loaded` while the load goes on (if the entry is still this version)."""
        with self._lock:
            if self._spans.update(sid, loaded.file, lanes=loaded, duration_us=model_duration_us(loaded.model)):
                event = self._spans.entries[sid].lanes_event
                if event is not None:
                    event.set()
        self._foreground.done(sid)

    def _fail(self, sid: str, file: TraceFile, message: str, transient: bool = False) -> None:
        with self._lock:
            entry = self._spans.entries.get(sid)
            attempts = (entry.attempts if entry is not None else 0) + 1
        retry_at = None
        if transient and attempts <= RETRY_ATTEMPTS:
            delay = min(RETRY_MAX_S, 2.0 ** (attempts - 1))
            retry_at = time.monotonic() + delay  # `status` says how long is left (`spans.entry_state`)
        self._spans.update(sid, file, state="error", phase=None, progress=None, error=message, attempts=attempts,
                           retry_at=retry_at, lanes=None)
        log_once(("failed", file.path, file.version, message), "kinetoscope: %s failed to load: %s%s", file.path, message,
                 f" (trying again in {delay:g} s)" if retry_at is not None else "")

    def _from_index(self, sid: str, file: TraceFile) -> tuple[Optional[TraceModel], Any]:
        """(model, stage one's result or None) from the trace's index sidecar when it holds for these bytes, else
        (None, None) with the reason kept for `status`. The sidecar is read (hashed, capped, checked) in a decoder
        child where decoding would be, so a hostile sidecar costs that child's memory, never this process's; the
        analyses are then computed from the checked model like those of any other load.

        The trace's sha256 is computed here (a thread reading the trace through a fixed buffer) while the child
        starts and checks the sidecar and sends the checked model and the sha256 it is bound to; stage one is built
        meanwhile and kept only when the two hashes agree; nothing is published before."""
        if self._index is None:
            return None, None
        early: list = []
        if self._use_child and not is_process_local(file.path) and self._index.present(file.path):
            # the trace's hash runs here, from now on, while the child starts and checks the sidecar
            hashing = self._index.hash_trace(file.path)
            try:
                model, reason, bound = self._decoders.run(file.path, decoder.SIDECAR_BOUND,
                                                          on_model=lambda model: self._stage_one(model, early))
                if model is not None:
                    reason = hashing.check(bound)
                    model = None if reason else model
            finally:
                hashing.cancel()
        else:
            model, reason = self._index.open_model(file.path)
        self._spans.update(sid, file, index_note=redact(reason) if reason else None,
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
                self._spans.update(sid, file, source="cache")
                return cached
        self._phase(sid, file, "decoding")
        self._spans.update(sid, file, source="decoded")
        start, end = PHASE_PROGRESS["decoding"], PHASE_PROGRESS["analysing"]

        def on_progress(share: float) -> None:
            self._spans.update(sid, file, progress=round(start + (end - start) * share, 3), phase_progress=round(share, 3))
        if not self._use_child or is_process_local(file.path):
            return load_trace(file.path, cache_dir=self._cache_dir, progress=on_progress)
        return self._decode_in_child(file.path, on_progress, sid)

    def _decode_in_child(self, path: str, on_progress: Callable[[float], None] = lambda share: None,
                         sid: Optional[str] = None) -> TraceModel:
        """The model decoded in a child, which steps aside (paused) while another span in view waits for its lanes."""
        try:
            return self._decoders.run(path, decoder.DECODE, on_progress,
                                      on_child=lambda child: self._foreground.child(sid, child))
        finally:
            self._foreground.child(sid, None)

    def digest(self, sid: str) -> Any:
        """The span's digest (what `prepare` summarised of it), which outlives the model's eviction; None
        until it has loaded once (its load is then queued: ask again).

        Raises:
            NotFound: unknown id. TraceFailed: the trace failed to load.
        """
        with self._lock:
            entry = self._spans.entries.get(sid)
            if entry is not None and entry.digest is not None:
                return entry.digest
        if entry is not None and self._index is not None:  # a sidecar's summary: no model loaded
            with confined(self.roots):
                digest, _reason = self._index.digest(entry.file.path)
            if digest is not None and self._spans.update(sid, entry.file, digest=digest):
                return digest
        self.request_load(sid)
        with self._lock:
            entry = self._spans.entries.get(sid)
            if entry is not None and entry.state == "error":
                raise TraceFailed(entry.error or LOAD_FAILED)
            return entry.digest if entry is not None else None

    def derived(self, key: Any, inputs: Sequence[Any], build: Callable[[], Any]) -> Any:
        """`build()`, kept under `key` while the same `inputs` (digests) come back (`derived.Derived.get`)."""
        return self._derived.get(key, inputs, build)

    def ready_bytes(self) -> int:
        """Bytes held by ready spans (for tests and diagnostics)."""
        return self._spans.ready_bytes()
