"""A trace's identity as a sidecar records it, read from its stored bytes (no gunzip: checksums are of the bytes
as stored): size and mtime, the head-tail checksum (first and last EDGE_BYTES, checked on every open before
anything else) and the sha256 of every stored byte (`full_sha256`, about 0.5-1 GB/s here, several times decoding
speed). Local files are opened through the storage layer's confined open (no link out, no FIFO, no device).
"""
from __future__ import annotations

import hashlib
import io
import os
import posixpath
import threading
from typing import Any, Optional

from ..pipeline import graph_reference_for
from ..trace.storage import StorageError, identity, open_local_fd, split_url
from .header import SidecarMiss, is_local

EDGE_BYTES = 64 << 10  # head and tail checked on every open, before the full hash
HASH_BLOCK = 8 << 20


def local_handle(path: str) -> io.FileIO:
    """A handle on a local file through the storage layer's confined open (no link out, no FIFO)."""
    return io.FileIO(open_local_fd(os.path.expanduser(path)), "rb", closefd=True)


def read_range(path: str, start: int, length: int) -> bytes:
    """`length` stored bytes of a file from `start` (no gunzip: checksums are of the bytes as stored)."""
    if length <= 0:
        return b""
    if is_local(path):
        with local_handle(path) as handle:
            handle.seek(start)
            return read_exactly(handle, length)
    fs, inner = split_url(path)
    return fs.cat_file(inner, start=start, end=start + length)


def read_exactly(handle, length: int) -> bytes:
    """Up to `length` bytes (fewer only at the end of the file): a raw handle may return short reads."""
    parts, want = [], length
    while want > 0:
        part = handle.read(min(want, HASH_BLOCK))
        if not part:
            break
        parts.append(part)
        want -= len(part)
    return b"".join(parts)


def head_tail(path: str, size: int) -> str:
    """sha256 of the size and the first and last EDGE_BYTES stored bytes (the whole file when smaller)."""
    digest = hashlib.sha256(str(size).encode() + b"\0")
    try:
        if size <= 2 * EDGE_BYTES:
            digest.update(read_range(path, 0, size))
        else:
            digest.update(read_range(path, 0, EDGE_BYTES))
            digest.update(read_range(path, size - EDGE_BYTES, EDGE_BYTES))
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read: {exc}", transient=True) from None
    return digest.hexdigest()


def full_sha256(path: str, stop: Optional[threading.Event] = None) -> str:
    """sha256 of every stored byte, streamed through one reused buffer (hashlib releases the GIL meanwhile, so
    another thread of the caller goes on). `stop`, once set, ends it early (its result is then meaningless)."""
    digest = hashlib.sha256()
    try:
        if is_local(path):
            with local_handle(path) as handle:
                _hash_into(digest, handle, stop)
        else:
            fs, inner = split_url(path)
            with fs.open(inner, "rb") as handle:
                _hash_into(digest, handle, stop)
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read: {exc}", transient=True) from None
    return digest.hexdigest()


def _hash_into(digest, handle, stop: Optional[threading.Event] = None) -> None:
    if not hasattr(handle, "readinto"):
        for block in iter(lambda: handle.read(HASH_BLOCK), b""):
            digest.update(block)
            if stop is not None and stop.is_set():
                return
        return
    buffer = bytearray(HASH_BLOCK)
    view = memoryview(buffer)
    while n := handle.readinto(buffer):
        digest.update(view[:n])
        if stop is not None and stop.is_set():
            return


def trace_identity(path: str, full: bool = False) -> dict[str, Any]:
    """The trace as a sidecar records it: size, mtime, head-tail checksum (and the full sha256 with `full`).

    Raises:
        StorageError: the trace cannot be stat'ed or read.
    """
    ident = identity(path)
    out = {"name": posixpath.basename(path.rstrip("/")) if not is_local(path) else os.path.basename(path),
           "size": ident.size, "mtime": ident.mtime, "head_tail": head_tail(path, ident.size)}
    if full:
        out["sha256"] = full_sha256(path)
    return out


def reference_identity(trace_path: str) -> Optional[dict[str, Any]]:
    """The graph reference a trace's analyses are computed with (`pipeline.graph_reference_for`: the user's, or the
    capture trace beside it), as a sidecar records it: its path, size and head-tail checksum (content, not mtime: a
    copy is the same reference), `unreadable` when it cannot be read; None without one (the header's `_Reference`). A sidecar
    computed with another reference, or none, is not used (`check_reference`): a capture trace put beside the trace
    after it was indexed changes its op table."""
    path = graph_reference_for(trace_path) if is_local(trace_path) else None
    if path is None:
        return None
    here = os.path.dirname(os.path.abspath(trace_path))
    shown = os.path.relpath(os.path.abspath(path), here)  # beside the trace: as the logdir holds it, wherever it is
    shown = os.path.abspath(path) if shown.startswith(os.pardir) else shown
    try:
        ident = identity(path)
        return {"path": shown, "size": ident.size, "head_tail": head_tail(path, ident.size), "unreadable": False}
    except (StorageError, OSError):
        return {"path": shown, "size": None, "head_tail": None, "unreadable": True}


def check_reference(header: dict, trace_path: str) -> None:
    """Raise SidecarMiss unless the sidecar was computed with the graph reference the trace has now
    (`reference_identity`; a sidecar that records none was computed without one)."""
    recorded, now = header.get("graph_reference"), reference_identity(trace_path)
    if recorded != now:
        def said(ref: Any) -> str:
            return "none" if not isinstance(ref, dict) else repr(os.path.basename(str(ref.get("path")))[:80])
        what = "changed" if isinstance(recorded, dict) and isinstance(now, dict) and recorded.get("path") == now.get("path") \
            else f"{said(recorded)} -> {said(now)}"
        raise SidecarMiss(f"the trace's graph reference (the capture trace its graph replays are attributed from) {what} "
                          f"since it was indexed")
