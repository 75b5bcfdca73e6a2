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

from ..trace.storage import StorageError, identity, open_local_fd, split_url
from .header import is_local

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
