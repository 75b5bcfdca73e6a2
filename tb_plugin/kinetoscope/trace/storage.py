"""Reading trace bytes from local paths or any fsspec URL (`s3://`, `gs://`, `memory://`, ...)."""
from __future__ import annotations

import io
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from stat import S_ISBLK, S_ISCHR, S_ISDIR, S_ISFIFO, S_ISREG
from typing import Optional

from .budgets import inflate_budget
from .remote import describe, open_remote, options_for, redact

try:  # ISA-L inflates about 3x faster than zlib; same API
    from isal import isal_zlib as _inflate_lib
    _INFLATE_ERRORS: tuple = (zlib.error, _inflate_lib.error)
except ImportError:  # pragma: no cover - isal is a declared dependency; zlib keeps things working without it
    _inflate_lib = zlib
    _INFLATE_ERRORS = (zlib.error,)

GZIP_MAGIC = b"\x1f\x8b"
GZIP_READ_BYTES = 4 << 20  # compressed bytes read per step of inflating (one request on a remote file)


class StorageError(Exception):
    """The file could not be read or decompressed; the message says why.

    `transient` marks failures that are not about the content (an I/O error, a file still being written):
    reading again later may succeed.
    """

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class FileIdentity:
    """What identifies one version of a file: a change in size, mtime, inode or ctime means new content.

    Size and mtime alone miss a file replaced by another of the same size with its mtime kept (`cp -p`,
    `rsync -t`): the replacement has another inode, or the same inode with a new ctime (which no user
    call can set back). Object stores have neither (0).
    """

    path: str
    size: int
    mtime: float
    inode: int = 0
    ctime: float = 0.0


def split_url(path: str):
    """The fsspec filesystem serving `path` and the path within it (local paths get the local filesystem).

    fsspec is imported on first use: opening a local trace, the common case, never pays for it. A remote
    filesystem gets the storage options in force (`remote.options_for`: bounded timeouts, no listing cache,
    the explicit options); a chained URL (`simplecache::s3://...`) only those of fsspec's own config.
    """
    import fsspec

    if "://" not in path and "::" not in path:
        path = os.path.abspath(os.path.expanduser(path))
        return fsspec.core.url_to_fs(path)
    kwargs = {} if "::" in path else options_for(fsspec.core.split_protocol(path)[0] or "file")
    return fsspec.core.url_to_fs(path, **kwargs)


def is_remote(path: str) -> bool:
    """Whether `path` is an fsspec URL rather than a local path."""
    return "://" in path or "::" in path


PROCESS_LOCAL = ("memory://",)  # filesystems that live in one process: another process cannot read them


def is_process_local(path: str) -> bool:
    """Whether `path` is on a filesystem only this process sees (fsspec's memory://): a child process or a
    pool worker cannot open it, so it is decoded in this process."""
    return path.startswith(PROCESS_LOCAL)


def remote_error(exc: BaseException, path: str, action: str) -> StorageError:
    """The StorageError for a failure of a remote filesystem: what went wrong, secrets redacted (see
    `remote.describe`); transient unless it is about the setup (no backend, bad options)."""
    protocol = path.split("://", 1)[0].rsplit("::", 1)[-1] if "://" in path else ""
    message, transient = describe(exc, protocol)
    return StorageError(f"cannot {action}: {message}", transient=transient)


NOT_STORAGE_ERRORS = (MemoryError, RecursionError)  # resource failures, reported as such by the loader


def modified_time(info: dict) -> float:
    """Seconds since the epoch from an fsspec info dict, whatever the backend calls it."""
    for key in ("mtime", "LastModified", "updated", "last_modified", "created", "time_created"):
        value = info.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        try:
            return float(value)
        except (TypeError, ValueError):
            continue
    return 0.0


def identity(path: str) -> FileIdentity:
    """Size and modification time of a file (raises StorageError when it cannot be stat'ed)."""
    if "://" not in path and "::" not in path:
        stat = _regular_stat(path)
        return FileIdentity(path, stat.st_size, stat.st_mtime, stat.st_ino, stat.st_ctime)
    try:
        fs, inner = split_url(path)
        info = fs.info(inner)
    except NOT_STORAGE_ERRORS:
        raise
    except Exception as exc:  # noqa: BLE001 - every backend raises its own types (botocore, aiohttp, azure...)
        raise remote_error(exc, path, "stat") from None
    return FileIdentity(path, int(info.get("size") or 0), modified_time(info))


def _regular_stat(path: str) -> os.stat_result:
    """The stat of a local path that must be a regular file: a FIFO would block the reader forever on open,
    and a device such as /dev/zero never ends, so both are refused before any read."""
    try:
        stat = os.stat(os.path.expanduser(path))
    except OSError as exc:
        raise StorageError(f"cannot stat: {exc}", transient=True) from None
    if not S_ISREG(stat.st_mode):
        kind = "a directory" if S_ISDIR(stat.st_mode) else "a FIFO" if S_ISFIFO(stat.st_mode) else \
            "a device" if S_ISCHR(stat.st_mode) or S_ISBLK(stat.st_mode) else "not a regular file"
        raise StorageError(f"not a regular file ({kind}); only trace files are read")
    return stat


def _open(path: str, ranged: bool = False):
    """A binary handle on a local path (raw, unbuffered: reads go straight into the caller's buffer) or URL.

    A remote file streams through a bounded read-ahead, or with `ranged` (a byte range, a sniff) none:
    each read is then one ranged request for exactly its bytes (`remote.open_remote`).
    """
    if is_remote(path):
        try:
            fs, inner = split_url(path)
            return open_remote(fs, inner, ranged)
        except NOT_STORAGE_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - every backend raises its own types
            raise remote_error(exc, path, "read") from None
    try:
        _regular_stat(path)
        return open(os.path.expanduser(path), "rb", buffering=0)
    except (OSError, ValueError, ImportError) as exc:
        raise StorageError(f"cannot read: {exc}", transient=True) from None


def _is_gzip(handle) -> bool:
    """Whether the content is gzip, by magic bytes, not by name; the handle is left at the start."""
    magic = _read(handle, 2)
    handle.seek(0)
    return magic == GZIP_MAGIC


def read_bytes(path: str, limit: Optional[int] = None, max_bytes: Optional[int] = None) -> bytes:
    """The file's content, gunzipped when it is gzip.

    Args:
        path: local path or fsspec URL.
        limit: read only about this many (uncompressed) leading bytes, for sniffing.
        max_bytes: read no more than this many (uncompressed) bytes: the caller refuses longer text.

    Raises:
        StorageError: unreadable, or a truncated/corrupt gzip stream (the torch handler writes `.gz` files
            non-atomically, so a reader can see half a file).
    """
    with _open(path, ranged=limit is not None) as handle:
        gz = _is_gzip(handle)
        if limit is not None:
            head = _read(handle, limit)
            return zlib.decompressobj(wbits=31).decompress(head, limit) if gz else head
        if gz:
            return b"".join(_capped(_gunzip_blocks(handle, b"", 16 << 20), max_bytes))
        if max_bytes is None:
            return _read(handle, -1)
        parts, want = [], max_bytes
        while want > 0:  # a raw handle may return short reads
            part = _read(handle, want)
            if not part:
                break
            parts.append(part)
            want -= len(part)
        return b"".join(parts)


def _capped(blocks: Iterator[bytes], max_bytes: Optional[int]) -> Iterator[bytes]:
    """The blocks up to about `max_bytes` in all (one block past it, so the caller sees it was exceeded)."""
    total = 0
    for block in blocks:
        yield block
        total += len(block)
        if max_bytes is not None and total >= max_bytes:
            return


def read_range(path: str, start: int, end: int) -> bytes:
    """Bytes [start, end) of the file's uncompressed content (end -1: to the end).

    Plain files seek (remote ones: one ranged request); gzip has no index, so its stream is inflated from
    the start up to `end` and the bytes before `start` are dropped as they come.

    Raises:
        StorageError: unreadable, or a truncated/corrupt gzip stream.
    """
    if start < 0 or (end != -1 and end < start):
        raise StorageError(f"bad byte range [{start}, {end})")
    with _open(path, ranged=True) as handle:
        if not _is_gzip(handle):
            try:
                handle.seek(start)
            except (OSError, ValueError) as exc:
                raise _read_error(exc) from None
            if end == -1:
                return _read(handle, -1)
            parts, want = [], end - start
            while want > 0:  # a raw handle may return short reads
                part = _read(handle, want)
                if not part:
                    break
                parts.append(part)
                want -= len(part)
            return b"".join(parts)
        parts, pos = [], 0
        for block in _gunzip_blocks(handle, b"", 16 << 20):
            lo, hi = max(start - pos, 0), len(block) if end == -1 else min(end - pos, len(block))
            if lo < hi:
                parts.append(block[lo:hi])
            pos += len(block)
            if end != -1 and pos >= end:
                break
        return b"".join(parts)


def open_plain(path: str):
    """A raw (unbuffered) handle on a local file that is not gzip, else None: the decoder reads it directly."""
    if "://" in path or "::" in path:
        return None
    try:
        handle = _open(path)
    except StorageError:
        return None
    if _is_gzip(handle):
        handle.close()
        return None
    return handle


def iter_blocks(path: str, block_bytes: int = 16 << 20) -> Iterator[memoryview]:
    """The uncompressed content of a file as a stream of blocks, gunzipped on the fly.

    Plain files are read into one reused buffer (no fresh allocation, hence no page faults, per
    block): each block is valid only until the next one is requested.

    Raises:
        StorageError: unreadable, or a truncated/corrupt gzip stream.
    """
    with _open(path) as handle:
        if _is_gzip(handle):
            yield from _gunzip_blocks(handle, b"", block_bytes)
            return
        block = bytearray(block_bytes)
        while True:
            try:
                n = handle.readinto(block)
            except NOT_STORAGE_ERRORS:
                raise
            except Exception as exc:  # noqa: BLE001 - remote handles raise their backend's types
                raise _read_error(exc) from None
            if not n:
                break
            with memoryview(block) as view:
                yield view[:n]


def _read(handle, size: int) -> bytes:
    try:
        return handle.read(size)
    except NOT_STORAGE_ERRORS:
        raise
    except Exception as exc:  # noqa: BLE001 - remote handles raise their backend's types
        raise _read_error(exc) from None


def _read_error(exc: BaseException) -> StorageError:
    """A failed read: local I/O errors as they were, anything else described (and redacted) by `remote`."""
    if isinstance(exc, (OSError, ValueError)) and type(exc).__module__ == "builtins":
        return StorageError(redact(f"cannot read: {exc}"), transient=True)
    message, transient = describe(exc)
    return StorageError(f"cannot read: {message}", transient=transient)


def _compressed_size(handle) -> int:
    """The size of the file behind a handle (0 when unknown)."""
    try:
        return os.fstat(handle.fileno()).st_size
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return int(getattr(handle, "size", 0) or 0)


def _gunzip_blocks(handle, data: bytes, block_bytes: int) -> Iterator[bytes]:
    """Stream-decompress (multi-member aware); output blocks are at most `block_bytes`.

    Raises:
        StorageError: corrupt or truncated, or inflating past the file's budget (`budgets.InflateBudget`).
    """
    inflater = _inflate_lib.decompressobj(wbits=31)
    total_in, total_out = len(data), 0
    budget = inflate_budget()
    compressed = _compressed_size(handle)
    limit = budget.limit(compressed)
    while True:
        try:
            while data:
                out = inflater.decompress(data, block_bytes)
                data = inflater.unconsumed_tail
                total_out += len(out)
                if total_out > limit:
                    raise StorageError(budget.refusal(compressed))
                if out:
                    yield out
                if inflater.eof:
                    data = inflater.unused_data
                    inflater = _inflate_lib.decompressobj(wbits=31) if data else inflater
        except _INFLATE_ERRORS as exc:
            raise StorageError(f"corrupt gzip: {exc}") from None
        data = _read(handle, GZIP_READ_BYTES)
        total_in += len(data)
        if not data:
            break
    if not inflater.eof:
        raise StorageError(f"truncated gzip ({total_in} bytes; the file may still be being written)", transient=True)


def iter_gzipped(path: str, block_bytes: int = 1 << 20) -> Iterator[bytes]:
    """The whole file as a gzip stream, for a download of any size in bounded memory: a gzip file's own
    bytes as they are, a plain one compressed on the fly.

    The file is opened here, so an unreadable one raises before the first block is asked for.

    Raises:
        StorageError: the file cannot be opened (or, while streaming, read).
    """
    handle = _open(path)

    def stream() -> Iterator[bytes]:
        with handle:
            if _is_gzip(handle):
                while chunk := _read(handle, block_bytes):
                    yield chunk
                return
            packer = zlib.compressobj(3, zlib.DEFLATED, 31)  # wbits 31: a gzip member
            while chunk := _read(handle, block_bytes):
                packed = packer.compress(chunk)
                if packed:
                    yield packed
            yield packer.flush()

    return stream()
