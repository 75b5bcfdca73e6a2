"""Reading trace bytes from local paths or any fsspec URL (`s3://`, `gs://`, `memory://`, ...)."""
from __future__ import annotations

import io
import os
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from stat import S_ISBLK, S_ISCHR, S_ISDIR, S_ISFIFO, S_ISREG
from typing import Optional

import msgspec

from .budgets import inflate_budget
from .deps import INFLATE_ERRORS
from .deps import inflate_lib as _inflate_lib
from .remote import describe, open_remote, options_for, redact

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


class FileIdentity(msgspec.Struct, frozen=True):
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


# ---- confinement: no local file outside the logdir (or what the user named) is opened ---------------
#
# The doors say which folders (or files) a run may read: the plugin its logdir, the CLI the paths it was given
# (`confined`). Every local open then resolves the real path, refuses one outside those roots, opens it with
# O_NOFOLLOW (a link put in its place after the check is refused, not followed) and O_NONBLOCK (a FIFO put in
# its place does not block the open), checks with fstat that it is a regular file, and, where /proc shows what
# the descriptor really is, checks that again: a folder on the way swapped for a link between the check and
# the open is caught too. Without roots (library use) the same opens run, without the containment check.
ROOTS_ENV = "KINETOSCOPE_CONFINE_ROOTS"  # how a decoder process learns its parent's roots (os.pathsep-joined)
_ROOTS: ContextVar[tuple[str, ...]] = ContextVar("kinetoscope_roots", default=())
_PROC_FD = "/proc/self/fd"


def real_root(path: str) -> str:
    """The real path of a local root (a logdir, a named file): what containment is checked against."""
    return os.path.realpath(os.path.abspath(os.path.expanduser(path)))


LINKED_ROOTS_ENV = "KINETOSCOPE_ALLOW_LINKS_TO"  # folders outside a logdir its links may lead to (os.pathsep-joined)


def linked_roots_with(folders: Sequence[str]) -> str:
    """KINETOSCOPE_ALLOW_LINKS_TO's value with `folders` (--allow-links-to, --kinetoscope_allow_links_to) before the
    folders it names already."""
    before = os.environ.get(LINKED_ROOTS_ENV)
    return os.pathsep.join([*folders, *([before] if before else [])])


def roots_for(paths: Sequence[str]) -> tuple[str, ...]:
    """The roots a run over `paths` (a logdir, or the CLI's arguments) reads inside: their real paths, plus the
    folders KINETOSCOPE_ALLOW_LINKS_TO names (runs linked in from elsewhere, trusted by whoever set it)."""
    extra = [p for p in os.environ.get(LINKED_ROOTS_ENV, "").split(os.pathsep) if p.strip()]
    return tuple(dict.fromkeys(real_root(p) for p in [*paths, *extra] if p and not is_remote(p)))


@contextmanager
def confined(roots: Sequence[str]):
    """Local reads in this block (this thread) stay inside `roots` (local paths; remote ones are ignored)."""
    token = _ROOTS.set(tuple(real_root(r) for r in roots if r and not is_remote(r)))
    try:
        yield
    finally:
        _ROOTS.reset(token)


def confinement_roots() -> tuple[str, ...]:
    """The roots in force in this thread (empty: no containment check)."""
    return _ROOTS.get()


def contained(real: str, roots: Sequence[str]) -> bool:
    """Whether the real path `real` is one of `roots` or lies below one."""
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def confined_real_path(path: str, roots: Optional[Sequence[str]] = None) -> str:
    """The real path of a local file, checked against the roots in force (or `roots`).

    Raises:
        StorageError: it resolves outside them (a link out of the logdir): not transient.
    """
    real = os.path.realpath(os.path.abspath(os.path.expanduser(path)))
    roots = confinement_roots() if roots is None else tuple(roots)
    if roots and not contained(real, roots):
        raise StorageError("refused: it resolves outside the logdir (a link out of it); only files inside are read")
    return real


def _kind(mode: int) -> str:
    return "a directory" if S_ISDIR(mode) else "a FIFO" if S_ISFIFO(mode) else \
        "a device" if S_ISCHR(mode) or S_ISBLK(mode) else "not a regular file"


def open_local_fd(path: str, roots: Optional[Sequence[str]] = None) -> int:
    """A read-only descriptor on a confined, regular local file (see the section's comment).

    Raises:
        StorageError: outside the roots, not a regular file, or not openable.
    """
    real = confined_real_path(path, roots)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise StorageError(f"cannot read: {exc.strerror or exc} (the file changed or is a link)", transient=True) from None
    try:
        mode = os.fstat(fd).st_mode
        if not S_ISREG(mode):
            raise StorageError(f"not a regular file ({_kind(mode)}); only trace files are read")
        roots = confinement_roots() if roots is None else tuple(roots)
        if roots and os.path.isdir(_PROC_FD):
            where = os.readlink(f"{_PROC_FD}/{fd}")
            if not contained(where, roots):
                raise StorageError("refused: it resolves outside the logdir (a link out of it); only files inside are read")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_local(path: str, roots: Optional[Sequence[str]] = None):
    """A raw binary handle on a confined, regular local file (`open_local_fd`)."""
    return io.FileIO(open_local_fd(path, roots), "rb", closefd=True)


def _regular_stat(path: str) -> os.stat_result:
    """The stat of a local path that must be a regular file inside the roots in force: a FIFO would block the
    reader forever on open, and a device such as /dev/zero never ends, so both are refused before any read."""
    real = confined_real_path(path)
    try:
        stat = os.stat(real)
    except OSError as exc:
        raise StorageError(f"cannot stat: {exc.strerror or exc}", transient=True) from None
    if not S_ISREG(stat.st_mode):
        raise StorageError(f"not a regular file ({_kind(stat.st_mode)}); only trace files are read")
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
        return open_local(path)
    except (OSError, ValueError) as exc:
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
        except INFLATE_ERRORS as exc:
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
