"""A trace's analyses, kept in the local model cache beside its decoded model, so a second `kinetoscope report` of
the same file, or a restarted TensorBoard, answers without decoding or analysing. Two entries per trace:
- `CACHE/KEY.summary`: the report entry and the rank digest (what a sidecar's summary holds; what `report` reads);
- `CACHE/KEY.prepared`: all that `pipeline.prepare` computes (`Prepared`: the lane index, the analyses, the
  tables' and the search's indexes; what TensorBoard serves a span from).

KEY is the model's own cache key (`trace.cache.cache_key`: the file's real path, size,
mtime, inode, ctime and the model's format), in the same folder, pruned with it. The cache is the user's own
folder, so it needs no key; it is still read as input that may be damaged or planted, and used only when all of
these hold, else the caller decodes and is told why (`CacheMiss`):
- it is a regular file (opened without following a link), whose header is small (MAX_HEADER_BYTES) and of the
  expected shape, and of the kind asked for;
- its format is this one, and it was computed by this code (`header.analysis_fingerprint`: the package's analysis
  code and the user's device peaks file) with the graph reference the trace has now (`identity.reference_identity`);
- its key is the one this file version has (a file renamed onto another entry's name is refused);
- the body is no larger than such an entry of this trace may be (a summary: a sidecar's summary section cap,
  `header.section_cap`; the prepared: PREPARED_CAP), checked before it is read, matches its sha256, and decodes
  with `codec` (no pickle, only this package's records through their constructors); a summary also passes
  `validate.check_summary`, the prepared must be a `Prepared`.
What is left: the prepared's arrays are not checked one by one as a sidecar's model is (a sidecar comes from
whoever can write the logdir; this folder is the user's own, so an entry consistent with its checksum was
written by this code, or by someone who already writes as the user).
"""
from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional

import msgspec

from ..analysis.distributed.ranks import RankDigest
from ..pipeline import Prepared
from ..trace.cache import cache_key
from ..trace.storage import FileIdentity
from . import codec, validate
from .header import SUMMARY, analysis_fingerprint, section_cap
from .identity import HASH_BLOCK, read_exactly

MAGIC = b"KSCACHE1"
FORMAT = 1
SUMMARY_KIND, PREPARED_KIND = "summary", "prepared"  # each entry's kind is its file suffix
MAX_HEADER_BYTES = 64 << 10
HEADER_ROOM = 16 << 10  # bytes before the body that a written entry's header (padded) takes
PREPARED_CAP = (16 << 20, 64)  # fixed bytes + ratio * the trace's stored bytes (measured: 0.25x a plain trace)


class CacheMiss(Exception):
    """A cache entry that cannot be used; `reason` says why, `damaged` whether the entry itself is (not merely
    absent, or of another file version, code or reference: what a user is told about)."""

    def __init__(self, reason: str, damaged: bool = True) -> None:
        super().__init__(reason)
        self.reason, self.damaged = reason, damaged


class _Header(msgspec.Struct, forbid_unknown_fields=True):
    format: int
    kind: str
    key: str
    analysis: str
    graph_reference: Optional[dict[str, Any]]
    bytes: int
    sha256: str


def entry_path(cache_dir: Path, ident: FileIdentity, kind: str) -> Path:
    return Path(cache_dir) / f"{cache_key(ident)}.{kind}"


def store_summary(cache_dir: Path, ident: FileIdentity, reference: Optional[dict], report: dict, digest: Any) -> None:
    """Write the summary atomically (temp file + rename); raises OSError, TypeError (the caller logs them)."""
    _store(cache_dir, ident, reference, SUMMARY_KIND, {"report": report, "digest": digest})


def store_prepared(cache_dir: Path, ident: FileIdentity, reference: Optional[dict], prepared: Prepared) -> None:
    """Write what `pipeline.prepare` computed, atomically; raises OSError, TypeError."""
    _store(cache_dir, ident, reference, PREPARED_KIND, prepared)


def load_summary(cache_dir: Path, ident: FileIdentity, reference: Optional[dict]) -> tuple[dict, Any]:
    """(report entry, rank digest) cached for this file version.

    Raises:
        CacheMiss: none, or one that cannot be used (the reason says why).
    """
    return _summary(_load(cache_dir, ident, reference, SUMMARY_KIND, section_cap(SUMMARY, ident.size)))


def load_prepared(cache_dir: Path, ident: FileIdentity, reference: Optional[dict]) -> Prepared:
    """What `pipeline.prepare` computed for this file version (raises CacheMiss)."""
    found = _load(cache_dir, ident, reference, PREPARED_KIND, PREPARED_CAP[0] + PREPARED_CAP[1] * ident.size)
    if type(found) is not Prepared:
        raise CacheMiss(f"corrupt cached analyses (a {type(found).__name__})")
    return found


def _store(cache_dir: Path, ident: FileIdentity, reference: Optional[dict], kind: str, obj: Any) -> None:
    """The entry written to a temp file in the cache folder, then renamed over the old one: the body streamed
    after the header's room (`codec.encode_into`: no copy of it in memory), hashed back from the file, then the
    header written into its room."""
    target = entry_path(cache_dir, ident, kind)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w+b") as handle:
            handle.write(bytes(HEADER_ROOM))
            codec.encode_into(obj, _Body(handle, HEADER_ROOM))
            size = handle.tell() - HEADER_ROOM
            handle.seek(HEADER_ROOM)
            digest = hashlib.sha256()
            while block := handle.read(HASH_BLOCK):
                digest.update(block)
            header = msgspec.json.encode(_Header(FORMAT, kind, cache_key(ident), analysis_fingerprint(), reference, size,
                                                 digest.hexdigest()))
            room = HEADER_ROOM - len(MAGIC) - 8
            if len(header) > room:
                raise ValueError(f"a cache entry's header of {len(header)} bytes (room for {room})")
            handle.seek(0)
            handle.write(MAGIC + room.to_bytes(8, "little") + header.ljust(room))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Body:
    """The temp file as seen from the body's start, the header's room before it (what `np.savez` writes through: a
    zip's offsets are then the body's own)."""

    def __init__(self, handle: Any, base: int) -> None:
        self._handle, self._base = handle, base

    def write(self, data: Any) -> int:
        return self._handle.write(data)

    def read(self, n: int = -1) -> bytes:
        return self._handle.read(n)

    def tell(self) -> int:
        return self._handle.tell() - self._base

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._handle.seek(offset + (self._base if whence == 0 else 0), whence) - self._base

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        self._handle.flush()


def _load(cache_dir: Path, ident: FileIdentity, reference: Optional[dict], kind: str, cap: int) -> Any:
    """The decoded body of the entry of `kind`, checked (see the module docstring; raises CacheMiss)."""
    path = entry_path(cache_dir, ident, kind)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise CacheMiss("not cached", damaged=False) from None
    except OSError as exc:
        raise CacheMiss(f"cached analyses unreadable ({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CacheMiss("cached analyses are not a regular file")
    with os.fdopen(fd, "rb", buffering=0) as handle:
        header = _read_header(handle)
        _check_header(header, ident, reference, kind)
        if header.bytes > cap:
            raise CacheMiss(f"cached {kind} claims {header.bytes} bytes, more than this trace's can be")
        body = _read_into(handle, header.bytes)
        if handle.read(1):
            raise CacheMiss(f"cached {kind} has bytes after its body")
    return _checked_decode(body, header.sha256, kind)


def _read_into(handle, length: int) -> bytearray:
    """`length` bytes in one buffer (one copy: the arrays decoded from it are views of it)."""
    body, got = bytearray(length), 0
    view = memoryview(body)
    try:
        while got < length:
            n = handle.readinto(view[got:])
            if not n:
                raise CacheMiss("cached analyses are truncated")
            got += n
    except OSError as exc:
        raise CacheMiss(f"cached analyses unreadable ({exc.strerror or type(exc).__name__})") from None
    return body


def _checked_decode(body: bytearray, sha256: str, kind: str) -> Any:
    """`codec.decode(body)` once the body matches its sha256, hashed in a second thread meanwhile (hashlib releases
    the GIL; the decode is built for hostile bytes: it reads a damaged body safely, and its result is dropped)."""
    digest: list[str] = []
    hashing = threading.Thread(target=lambda: digest.append(hashlib.sha256(body).hexdigest()), daemon=True)
    hashing.start()
    try:
        found = _decode(body)
    except CacheMiss:
        hashing.join()
        if digest != [sha256]:
            raise CacheMiss(f"cached {kind} does not match its checksum") from None
        raise
    hashing.join()
    if digest != [sha256]:
        raise CacheMiss(f"cached {kind} does not match its checksum")
    return found


def _read(handle, length: int) -> bytes:
    try:
        data = read_exactly(handle, length)
    except OSError as exc:
        raise CacheMiss(f"cached analyses unreadable ({exc.strerror or type(exc).__name__})") from None
    if len(data) < length:
        raise CacheMiss("cached analyses are truncated")
    return data


def _read_header(handle) -> _Header:
    head = _read(handle, len(MAGIC) + 8)
    if head[:len(MAGIC)] != MAGIC:
        raise CacheMiss("not a cache entry of this format")
    length = int.from_bytes(head[len(MAGIC):], "little")
    if length > MAX_HEADER_BYTES:
        raise CacheMiss(f"cached analyses header of {length} bytes (at most {MAX_HEADER_BYTES})")
    try:
        return msgspec.json.decode(_read(handle, length), type=_Header)
    except msgspec.DecodeError as exc:
        raise CacheMiss(f"corrupt cached analyses header ({str(exc)[:200]})") from None


def _check_header(header: _Header, ident: FileIdentity, reference: Optional[dict], kind: str) -> None:
    if header.kind != kind:
        raise CacheMiss(f"cached {header.kind[:40]!r} entry where the {kind} belongs")
    if header.format != FORMAT:
        raise CacheMiss(f"cached analyses of format {header.format} (this version reads {FORMAT})", damaged=False)
    if header.key != cache_key(ident):
        raise CacheMiss("cached analyses of another file or file version")
    if header.analysis != analysis_fingerprint():
        raise CacheMiss("cached analyses computed by other analysis code (or another peaks file)", damaged=False)
    if header.graph_reference != reference:
        raise CacheMiss("the trace's graph reference changed since its analyses were cached", damaged=False)


def _decode(body: bytes) -> Any:
    try:
        return codec.decode(body)
    except codec.CodecError as exc:
        raise CacheMiss(f"cached entry of another version or corrupt: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a damaged entry is a miss, never a crash
        raise CacheMiss(f"corrupt cached entry ({type(exc).__name__}: {str(exc)[:200]})") from None


def _summary(summary: Any) -> tuple[dict, Any]:
    if not isinstance(summary, dict) or set(summary) != {"report", "digest"}:
        raise CacheMiss("corrupt cached summary (not a report and a digest)")
    try:
        validate.check_summary(summary["report"], summary["digest"], RankDigest)
    except validate.ModelInvalid as exc:
        raise CacheMiss(f"corrupt cached summary ({exc})") from None
    return summary["report"], summary["digest"]
