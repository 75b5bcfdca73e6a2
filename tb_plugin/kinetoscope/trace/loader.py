"""One trace file -> TraceModel: read, decode, build, with the on-disk cache in front."""
from __future__ import annotations

import functools
import gc
import logging
import mmap
import os
import queue
import threading
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Optional, Union

from . import heap
from .budgets import PARALLEL_MIN_BYTES, BudgetExceeded, EventBudget, decode_in_threads, decode_workers, event_budget
from .cache import default_cache_dir, load_cached, store
from .columns import ColumnBuilder
from .decode import Decoded, NotSplittable, Piece, decode_trace
from .extractors import scans_text
from .forgiving import DecodeError
from .model import TraceModel
from .offload import Offloader, Serial, file_identity, pool
from .pieces import EventTooLarge, MappedText, decode_chunks
from .rowstore import RESERVED_TEXT_BYTES
from .storage import StorageError, identity, iter_blocks, open_plain, read_bytes

_DEFAULT = object()
_gc_lock = threading.Lock()
_gc_holders = 0


@contextmanager
def _collector_paused():
    """Pause the cyclic GC while decoding: the decoder allocates millions of acyclic objects, and the
    collections they would trigger cost a third of the decode time on large files."""
    global _gc_holders
    with _gc_lock:
        _gc_holders += 1
        was_enabled = gc.isenabled() if _gc_holders == 1 else True
        gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and was_enabled:
                gc.enable()


class TraceError(Exception):
    """A trace that yields no model. `str()` names the file and the problem."""

    def __init__(self, path: str, message: str, transient: bool = False) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message
        self.transient = transient  # not about the content (I/O, still being written, a dead decoder): retry later


def resource_message(exc: BaseException) -> str:
    """The named error for a decode that ran out of stack or memory."""
    if isinstance(exc, RecursionError):
        return "nested too deeply: JSON nesting goes beyond what the decoder follows (a hostile or corrupt file?)"
    return "out of memory while decoding"


CHUNK_BYTES = 16 << 20  # event structs of one chunk are alive at a time
# Pieces of a text from RESERVED_TEXT_BYTES on (its size known, or a gzip trailer's hint) are this many chunks: half as
# many pieces cost the thread merging them half the per-piece work (x135: the load 0.94x, its peak +1%, far below the
# analyses'). Smaller texts keep one chunk: there the larger buffers in flight would raise the report's peak. The
# pieces are part of the model, so every decode of a text (serial, parallel, streamed) cuts it the same way.
LARGE_TEXT_CHUNKS = 2
# Texts below SHORT_AHEAD_TEXT_BYTES are cut in pieces this many times smaller than CHUNK_BYTES: the parallel decode
# keeps 2 per worker in flight (their text, mapped or copied, and what the workers read from it), which set the
# report's peak there (x10 ResNet, 300 MB: 291 -> 207 MiB plain, the serial decode's, and 315 -> 219 MiB gzip, in the
# same or less time). Larger texts keep CHUNK_BYTES: there the analyses set the peak and halved pieces raised it (x30:
# +44 MiB; gzip 6% slower).
SHORT_TEXT_DIVISOR = 2
MIN_CHUNK_BYTES = 1 << 16  # small files still get chunks this large (the decode window is 2-3 chunks)
# A text that is not mapped (gzip) is copied into buffers ahead of the thread that merges it: inflated blocks waiting to
# be cut, and each worker thread's piece. Below this many bytes of text one of each per worker: two of each (7 buffers
# of 16 MiB with the window) would be as large as the model, and they set the report's peak (x10 ResNet gzip, 300 MB
# of text: peak 395 -> 315 MiB, time 0.97x). From it up, two, so no worker waits for the merge: there the analyses set
# the peak (x30 gzip, 904 MB: one of each took 14 MiB off it and cost 8% of the time).
SHORT_AHEAD_TEXT_BYTES = 512 << 20


Progress = Callable[[float], None]  # how far the load is, 0..1: the text decoded, then the model built
DECODE_SHARE = 0.8  # of the progress: the text decoded (by bytes); the rest is building the model (ColumnBuilder.finish,
# about a fifth of a large load: lanes, the event order, nesting and launch links over every event)


def _gzip_text_size(path: str) -> Optional[int]:
    """A local gzip file's text size from its trailer, as a hint (progress, whether to decode in parallel, how many
    buffers ahead): ISIZE is the size mod 4 GiB, so a text past 4 GiB reads short (a 5 GB text in a 280 MB file says
    1 GB). From the size a wrap becomes possible (4 GiB / MAX_DEFLATE_RATIO of file) 4 GiBs are added until the text
    is at least MIN_TEXT_RATIO times the file, which a trace's JSON is (13-30 times in ../shared/traces)."""
    if "://" in path or "::" in path:
        return None
    try:
        with open(os.path.expanduser(path), "rb") as handle:
            stored = handle.seek(0, os.SEEK_END)
            handle.seek(-4, os.SEEK_END)
            text = int.from_bytes(handle.read(4), "little")
    except OSError:
        return None
    if stored >= (1 << 32) // MAX_DEFLATE_RATIO:
        text += -(-max(MIN_TEXT_RATIO * stored - text, 0) // (1 << 32)) << 32
    return text or None


MAX_DEFLATE_RATIO = 1032  # deflate's best: a smaller file cannot hold 4 GiB of text
MIN_TEXT_RATIO = 5  # the shared traces: 13-30


def _reporting(add, source_bytes, total: Optional[int], progress: Optional[Progress]):
    """`add` that also reports, after each chunk, how much of the text `source_bytes()` has consumed."""
    if progress is None or not total:
        return add

    def add_and_report(*args, **kwargs):
        result = add(*args, **kwargs)
        progress(DECODE_SHARE * min(source_bytes() / total, 1.0))
        return result
    return add_and_report


class _Reached:
    """How far the decode of a mapped text has got (called as `source_bytes`): the end of the last piece added here
    or merged from the workers (`added`)."""

    def __init__(self, mapping=None) -> None:
        self.at = 0
        self.mapping = mapping if hasattr(mapping, "madvise") and hasattr(mmap, "MADV_DONTNEED") else None
        self.dropped = 0  # the mapping's pages before this offset are given back

    def __call__(self) -> int:
        return self.at

    def tracking(self, add):
        """`add` (a sink or text sink, called with the piece's `Piece` among its arguments) that records the piece's end
        once the piece is taken (a text sink may refuse it: False)."""
        def taken(*args):
            result = add(*args)
            if result is not False:
                for arg in args:
                    if isinstance(arg, Piece):
                        self.added(arg.end)
            return result
        return taken

    def added(self, end: int) -> None:
        """Every piece before `end` is added. The mapped pages wholly before it are given back: the text is read once,
        so the file's pages never pile up in the process's memory. The page holding `end` stays: the next piece's `[`
        is written there, and a dropped private page would read as the file's comma again."""
        self.at = max(self.at, end)
        page = self.at // mmap.PAGESIZE * mmap.PAGESIZE
        if self.mapping is None or page <= self.dropped:
            return
        self.mapping.madvise(mmap.MADV_DONTNEED, self.dropped, page - self.dropped)
        self.dropped = page


_log = logging.getLogger(__name__)


def _chunk_bytes(size_hint: Optional[int], text_bytes: Optional[int], stored_bytes: int) -> int:
    """The piece size `_build` cuts a text into (and a gzip text is inflated by), from its size when known: the file's
    (`size_hint`), else a gzip trailer's hint (`text_bytes`), which a multi-member file or a forged trailer makes too
    small, so never below the file's own size then (a short hint costs more pieces, never a wrong model)."""
    known = size_hint if size_hint is not None else (max(text_bytes, stored_bytes) if text_bytes else None)
    if known is None:
        return CHUNK_BYTES
    if (text_bytes or size_hint or 0) >= RESERVED_TEXT_BYTES:  # by the text's size only: the serial decode's pieces too
        return LARGE_TEXT_CHUNKS * CHUNK_BYTES
    return max(MIN_CHUNK_BYTES, min(CHUNK_BYTES if known >= SHORT_AHEAD_TEXT_BYTES else CHUNK_BYTES // SHORT_TEXT_DIVISOR,
                                    known))


def _build(blocks, path: str, source_bytes, size_hint: Optional[int], stored_bytes: int, budget: EventBudget,
           progress: Optional[Progress] = None, text_bytes: Optional[int] = None, workers: int = 1,
           plain_file: Optional[tuple[str, int, int]] = None) -> TraceModel:
    """Chunked decode of a block stream (NotSplittable propagates: the caller decodes whole).

    `size_hint` (the text's size, when known) shrinks the chunk, and with it the decode window, for
    small files: zero-filling a window sized for 16 MB chunks would cost a small file 20 ms.
    `stored_bytes` (the file's size as stored, gzip or not) sets how many events it may hold.
    """
    builder = ColumnBuilder(max_events=budget.limit(stored_bytes), refusal=lambda: budget.too_many(stored_bytes),
                            max_names=budget.name_limit(stored_bytes), names_refusal=lambda: budget.too_many_names(stored_bytes),
                            text_bytes=text_bytes or size_hint)
    chunk = _chunk_bytes(size_hint, text_bytes, stored_bytes)
    offloader = helpers = None
    mapped = memoryview(blocks.buf) if isinstance(blocks, MappedText) else None
    reached = _Reached(blocks.buf if mapped is not None else None)
    if mapped is not None:  # nothing is read: the progress is the end of the last piece added
        source_bytes = reached

    def tracked(add):  # a sink that records how far the pieces it takes reach, and reports the progress after each
        return _reporting(reached.tracking(add), source_bytes, text_bytes or size_hint, progress)
    try:
        if workers > 1:  # `workers` processes decode the middle pieces; this one reads, cuts, merges
            report = _reporting(lambda: None, source_bytes, text_bytes or size_hint, progress)
            offloader = Offloader(pool(workers, scans_text() and decode_in_threads()), workers, builder, plain_file,
                                  budget.limit(stored_bytes),
                                  budget.too_many(stored_bytes), report if progress is not None else None, mapped,
                                  _long_text(text_bytes or size_hint))
            helpers = offloader.pool if offloader.threads else None  # its threads are idle during `finish`
            offloader.merged = reached.added
            try:
                decoded = decode_chunks(blocks, tracked(offloader.sink), chunk, budget.event_bytes, offloader.middle,
                                        tail_sink=tracked(functools.partial(builder.add_tail_text,
                                                                            merge_first=offloader.finish)))
            except (NotSplittable, DecodeError):
                offloader.finish()  # an error in an earlier piece (a budget) comes first, as in the serial decode
                raise
            offloader.finish()
        else:
            decoded = decode_chunks(blocks, tracked(builder.add), chunk, budget.event_bytes,
                                    text_sink=tracked(builder.add_text), tail_sink=tracked(builder.add_tail_text))
    except EventTooLarge as exc:
        raise TraceError(path, f"{budget.too_large_event()} ({exc})") from None
    except DecodeError as exc:
        raise TraceError(path, str(exc), exc.transient) from None
    finally:
        if offloader is not None:
            offloader.cancel()
        if mapped is not None:
            mapped.release()
        if isinstance(blocks, types.GeneratorType):  # a stream left early (an error): its inflate thread stops now,
            blocks.close()  # not whenever the error's traceback lets the generator go
    if mapped is not None:
        reached.at = stored_bytes
    model = _finish_model(builder, decoded, source_bytes, progress, helpers)
    del builder, decoded
    heap.give_back()  # what the decode freed: the analyses need not start from its high-water mark
    return model


def _finish_model(builder: ColumnBuilder, decoded: Decoded, source_bytes, progress: Optional[Progress], helpers) -> TraceModel:
    """The model of a chunked decode (`ColumnBuilder.finish`, with `helpers`, the idle decode threads, if any), the
    progress told as it is built: from DECODE_SHARE to 0.99."""
    if progress is None:
        return builder.finish(decoded.doc, decoded.skipped, decoded.warnings, source_bytes(), pool=helpers)
    progress(DECODE_SHARE)
    model = builder.finish(decoded.doc, decoded.skipped, decoded.warnings, source_bytes(),
                           lambda share: progress(DECODE_SHARE + (0.99 - DECODE_SHARE) * share), pool=helpers)
    progress(0.99)
    return model


def _build_whole(raw, path: str, stored_bytes: Optional[int] = None, budget: Optional[EventBudget] = None) -> TraceModel:
    """The forgiving path: one decode of the whole text, lenient per event when the schema breaks.

    Several times the text in memory, so only for text within `budget.whole_bytes`."""
    budget = budget or event_budget()
    stored_bytes = len(raw) if stored_bytes is None else stored_bytes
    if len(raw) > budget.whole_bytes:
        raise TraceError(path, budget.too_large_whole(len(raw)))
    try:
        decoded = decode_trace(raw)
    except DecodeError as exc:
        raise TraceError(path, str(exc), exc.transient) from None
    except (RecursionError, MemoryError) as exc:
        raise TraceError(path, resource_message(exc)) from None
    builder = ColumnBuilder(max_events=budget.limit(stored_bytes), refusal=lambda: budget.too_many(stored_bytes),
                            max_names=budget.name_limit(stored_bytes), names_refusal=lambda: budget.too_many_names(stored_bytes))
    builder.add(decoded.doc.traceEvents, decoded.legacy_external_id, source_index=decoded.source_index,
                piece_events=decoded.total or None)
    decoded.doc.traceEvents = []
    return builder.finish(decoded.doc, decoded.skipped, decoded.warnings, len(raw))


def decode_bytes(raw, path: str = "<bytes>") -> TraceModel:
    """Decode an uncompressed trace held in memory (no cache).

    Raises:
        TraceError: the bytes are not a usable trace, or go past a budget (`budgets.EventBudget`).
    """
    view = memoryview(raw).cast("B")
    step = _chunk_bytes(len(view), None, len(view))
    blocks = (view[i:i + step] for i in range(0, len(view), step))
    budget = event_budget()
    with _collector_paused():
        try:
            return _build(blocks, path, lambda: len(view), len(view), len(view), budget)
        except NotSplittable:
            return _build_whole(raw, path, len(view), budget)
        except BudgetExceeded as exc:
            raise TraceError(path, str(exc)) from None


def _long_text(text_bytes: Optional[int]) -> bool:
    """Whether a text not mapped gets two buffers of each kind ahead of its merge per worker (SHORT_AHEAD_TEXT_BYTES);
    a text of unknown size does."""
    return text_bytes is None or text_bytes >= SHORT_AHEAD_TEXT_BYTES


def _prefetched(blocks, depth: int = 2):
    """The blocks of an iterator produced by a thread of their own, `depth` ahead of the caller: a gzip file inflates
    (isal and zlib release the GIL) while this thread cuts and merges the text before. Blocks must be fresh objects
    (`iter_blocks` gives a gzip file's so; a plain file's share one buffer). The producer's error is raised here, in
    order; a caller that stops early stops the producer."""
    slots: queue.Queue = queue.Queue(depth)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for block in blocks:
                while not stop.is_set():
                    try:
                        slots.put((block, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            outcome = (done, None)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            outcome = (done, exc)
        while not stop.is_set():
            try:
                slots.put(outcome, timeout=0.1)
                return
            except queue.Full:
                continue

    producer = threading.Thread(target=produce, name="kinetoscope-inflate", daemon=True)
    producer.start()
    try:
        while True:
            block, error = slots.get()
            if block is done:
                if error is not None:
                    raise error
                return
            yield block
    finally:
        stop.set()
        producer.join()
        close = getattr(blocks, "close", None)
        if close is not None:
            close()


@contextmanager
def _mapped(handle, size: int, threads: bool = True):
    """A large local plain file as a private copy-on-write mapping (`MappedText`: cut in place, scanned where it lies,
    never copied: reading 1 GB into the decoder's window costs 0.4 s of one core, mapping it 0.01 s), else None (a
    small file, worker processes that read their own pieces, or a file that cannot be mapped: it is read as a stream).

    A file truncated by someone else while it is mapped faults the process (SIGBUS) where a read would come up short;
    TensorBoard decodes in a child process, so there it is reported as a failed decode, not a crash.
    """
    if size < PARALLEL_MIN_BYTES or not threads or not hasattr(mmap, "ACCESS_COPY"):
        yield None
        return
    try:
        mapping = mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_COPY)
    except (OSError, ValueError, OverflowError):
        yield None
        return
    try:
        if hasattr(mapping, "madvise") and hasattr(mmap, "MADV_SEQUENTIAL"):
            mapping.madvise(mmap.MADV_SEQUENTIAL)
        yield MappedText(mapping)
    finally:
        try:
            mapping.close()
        except BufferError:  # a view is still held (an error path): the mapping goes with its last view
            pass


def _load_uncached(path: str, progress: Optional[Progress] = None) -> TraceModel:
    plain = open_plain(path)
    size = stored = 0
    budget = event_budget()

    def counted(block_bytes: int, ahead: int = 0):  # `ahead`: blocks inflated by a thread ahead of the cutter (0: none)
        nonlocal size
        blocks = iter_blocks(path, block_bytes)
        for block in _prefetched(blocks, ahead) if ahead else blocks:
            size += len(block)
            yield block

    workers, problem = decode_workers()
    if problem:
        _log.warning("%s; decoding serially", problem)
    with _collector_paused():
        try:
            if plain is not None:  # local plain file: read straight into the decoder's buffer
                with plain:
                    stored = os.fstat(plain.fileno()).st_size
                    if workers > 1 and stored >= PARALLEL_MIN_BYTES:
                        try:
                            with _mapped(plain, stored, threads=scans_text() and decode_in_threads()) as text:
                                return _build(text or plain, path, plain.tell, stored, stored, budget, progress,
                                              workers=workers, plain_file=file_identity(plain))
                        except Serial as exc:
                            _log.info("%s: decoding serially (%s)", path, exc)
                            plain.seek(0)
                    with _mapped(plain, stored) as text:
                        return _build(text or plain, path, plain.tell, stored, stored, budget, progress)
            stored = identity(path).size
            text = _gzip_text_size(path)
            block_bytes = _chunk_bytes(None, text, stored)  # inflated by pieces: the window never grows
            if workers > 1 and text is not None and text >= PARALLEL_MIN_BYTES:
                try:
                    return _build(counted(block_bytes, ahead=2 if _long_text(text) else 1), path, lambda: size, None,
                                  stored, budget, progress, text, workers)
                except Serial as exc:
                    _log.info("%s: decoding serially (%s)", path, exc)
                    size = 0
            return _build(counted(block_bytes), path, lambda: size, None, stored, budget, progress, text)  # as the parallel decode
        except NotSplittable:
            return _build_whole(read_bytes(path, max_bytes=budget.whole_bytes + 1), path, stored, budget)
        except BudgetExceeded as exc:
            raise TraceError(path, str(exc)) from None


def _usable(model: TraceModel, path: str) -> TraceModel:
    """The model, unless the file held events and the decode refused every one: that is a content error naming
    why (the most common reasons first), not an empty trace, which is one whose traceEvents list is empty."""
    refused = sum(model.skipped.values())
    if model.n_events or model.mem_ts_ns.size or not refused:
        return model
    reasons = sorted(model.skipped.items(), key=lambda item: (-item[1], item[0]))
    named = "; ".join(f"{count} x {reason[:160]}" for reason, count in reasons[:3])
    more = f"; and {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
    which = f"all {refused} events" if refused > 1 else "the one event"
    raise TraceError(path, f"no usable event: the decode refused {which} of the file ({named}{more})")


def load_trace(path: str, cache_dir: Union[str, Path, None, object] = _DEFAULT,
               progress: Optional[Progress] = None,
               before_store: Optional[Callable[[TraceModel], None]] = None) -> TraceModel:
    """Load one trace file (local path or fsspec URL, plain or gzipped) into the columnar model.

    Args:
        path: the trace file.
        cache_dir: where decoded models are cached; the user cache directory by default, None for no cache.
        progress: called as a chunked decode goes: with DECODE_SHARE times the share of the text decoded after each
            chunk, then a few times while the model is built, 0.99 last.
        before_store: called with a decoded model before it is written to the cache (not for a cached one): the
            decoder child hands the model over first, and writes its cache while TensorBoard goes on.

    Returns:
        The model; events it could not use are counted in `model.skipped` by reason.

    Raises:
        TraceError: the file is unreadable, truncated, not JSON, or not a Kineto/Chrome trace.
    """
    if cache_dir is _DEFAULT:
        cache_dir = default_cache_dir()
    try:
        ident = identity(path) if cache_dir is not None else None
        cached = load_cached(Path(cache_dir), ident) if ident is not None else None
        if cached is not None:
            return _usable(cached, path)
        model = _usable(_load_uncached(path, progress), path)
    except StorageError as exc:
        raise TraceError(path, str(exc), exc.transient) from None
    except (RecursionError, MemoryError) as exc:
        raise TraceError(path, resource_message(exc)) from None
    if before_store is not None:
        before_store(model)
    if ident is not None:
        store(Path(cache_dir), ident, model)
    return model
