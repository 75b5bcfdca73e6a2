"""One trace file -> TraceModel: read, decode, build, with the on-disk cache in front."""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Union

from .build import build_model
from .cache import default_cache_dir, load_cached, store
from .decode import DecodeError, decode_trace
from .model import TraceModel
from .storage import StorageError, identity, trace_buffer

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

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def decode_bytes(raw, path: str = "<bytes>") -> TraceModel:
    """Decode an uncompressed trace held in memory (no cache).

    Raises:
        TraceError: the bytes are not a usable trace.
    """
    with _collector_paused():
        try:
            decoded = decode_trace(raw)
        except DecodeError as exc:
            raise TraceError(path, str(exc)) from None
        except (RecursionError, MemoryError) as exc:
            raise TraceError(path, f"cannot decode: {type(exc).__name__}") from None
        return build_model(decoded, source_bytes=len(raw))


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
        with trace_buffer(path) as raw:
            model = decode_bytes(raw, path)
    except StorageError as exc:
        raise TraceError(path, str(exc)) from None
    if ident is not None:
        store(Path(cache_dir), ident, model)
    return model
