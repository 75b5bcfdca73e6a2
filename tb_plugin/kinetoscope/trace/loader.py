"""One trace file -> TraceModel: read, decode, build, with the on-disk cache in front."""
from __future__ import annotations

import gc
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Optional, Union

from .build import ColumnBuilder
from .cache import default_cache_dir, load_cached, store
from .decode import DecodeError, NotSplittable, decode_chunks, decode_trace
from .model import TraceModel
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
MIN_CHUNK_BYTES = 1 << 16  # small files still get chunks this large (the decode window is 2-3 chunks)


def _build(blocks, path: str, source_bytes, size_hint: Optional[int] = None) -> TraceModel:
    """Chunked decode of a block stream (NotSplittable propagates: the caller decodes whole).

    `size_hint` (the text's size, when known) shrinks the chunk, and with it the decode window, for
    small files: zero-filling a window sized for 16 MB chunks would cost a small file 20 ms.
    """
    builder = ColumnBuilder()
    chunk = CHUNK_BYTES if size_hint is None else max(MIN_CHUNK_BYTES, min(CHUNK_BYTES, size_hint))
    top = decode_chunks(blocks, builder.add, chunk)
    return builder.finish(top, {}, [], source_bytes())


def _build_whole(raw, path: str) -> TraceModel:
    """The forgiving path: one decode of the whole text, lenient per event when the schema breaks."""
    try:
        decoded = decode_trace(raw)
    except DecodeError as exc:
        raise TraceError(path, str(exc), exc.transient) from None
    except (RecursionError, MemoryError) as exc:
        raise TraceError(path, resource_message(exc)) from None
    builder = ColumnBuilder()
    builder.add(decoded.doc.traceEvents, decoded.legacy_external_id, source_index=decoded.source_index)
    decoded.doc.traceEvents = []
    return builder.finish(decoded.doc, decoded.skipped, decoded.warnings, len(raw))


def decode_bytes(raw, path: str = "<bytes>") -> TraceModel:
    """Decode an uncompressed trace held in memory (no cache).

    Raises:
        TraceError: the bytes are not a usable trace.
    """
    view = memoryview(raw).cast("B")
    blocks = (view[i:i + CHUNK_BYTES] for i in range(0, len(view), CHUNK_BYTES))
    with _collector_paused():
        try:
            return _build(blocks, path, lambda: len(view), len(view))
        except NotSplittable:
            return _build_whole(raw, path)


def _load_uncached(path: str) -> TraceModel:
    plain = open_plain(path)
    size = 0

    def counted():
        nonlocal size
        for block in iter_blocks(path, CHUNK_BYTES):
            size += len(block)
            yield block

    with _collector_paused():
        try:
            if plain is not None:  # local plain file: read straight into the decoder's buffer
                with plain:
                    return _build(plain, path, plain.tell, os.fstat(plain.fileno()).st_size)
            return _build(counted(), path, lambda: size)
        except NotSplittable:
            return _build_whole(read_bytes(path), path)


def load_trace(path: str, cache_dir: Union[str, Path, None, object] = _DEFAULT) -> TraceModel:
    """Load one trace file (local path or fsspec URL, plain or gzipped) into the columnar model.

    Args:
        path: the trace file.
        cache_dir: where decoded models are cached; the user cache directory by default, None for no cache.

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
            return cached
        model = _load_uncached(path)
    except StorageError as exc:
        raise TraceError(path, str(exc), exc.transient) from None
    except (RecursionError, MemoryError) as exc:
        raise TraceError(path, resource_message(exc)) from None
    if ident is not None:
        store(Path(cache_dir), ident, model)
    return model
