"""A trace's analyses, kept in the local model cache beside its decoded model: the report entry and the rank
digest (what a sidecar's summary holds), so a second `kinetoscope report` of the same file answers without
decoding or analysing.

Where: `CACHE/KEY.summary`, KEY the model's own cache key (`trace.cache.cache_key`: the file's real path, size,
mtime, inode, ctime and the model's format), in the same folder, pruned with it. The cache is the user's own
folder, so it needs no key; it is still read as input that may be damaged or planted, and used only when all of
these hold, else the caller decodes and is told why (`CacheMiss`):
- it is a regular file (opened without following a link), whose header is small (MAX_HEADER_BYTES) and of the
  expected shape;
- its format is this one, and it was computed by this code (`header.analysis_fingerprint`: the package's analysis
  code and the user's device peaks file) with the graph reference the trace has now (`identity.reference_identity`);
- its key is the one this file version has (a file renamed onto another entry's name is refused);
- the body is no larger than a sidecar's summary of this trace may be (`header.section_cap`, checked before it is
  read), matches its sha256, decodes with `codec` (no pickle), and passes `validate.check_summary`.
"""
from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Optional

import msgspec

from ..analysis.distributed.ranks import RankDigest
from ..trace.cache import cache_key
from ..trace.storage import FileIdentity
from . import codec, validate
from .header import SUMMARY, analysis_fingerprint, section_cap
from .identity import read_exactly

MAGIC = b"KSCACHE1"
FORMAT = 1
SUFFIX = ".summary"
MAX_HEADER_BYTES = 64 << 10


class CacheMiss(Exception):
    """A cached summary that cannot be used; `reason` says why, `damaged` whether the entry itself is (not merely
    absent, or of another file version, code or reference: what a user is told about)."""

    def __init__(self, reason: str, damaged: bool = True) -> None:
        super().__init__(reason)
        self.reason, self.damaged = reason, damaged


class _Header(msgspec.Struct, forbid_unknown_fields=True):
    format: int
    key: str
    analysis: str
    graph_reference: Optional[dict[str, Any]]
    bytes: int
    sha256: str


def summary_path(cache_dir: Path, ident: FileIdentity) -> Path:
    return Path(cache_dir) / f"{cache_key(ident)}{SUFFIX}"


def store_summary(cache_dir: Path, ident: FileIdentity, reference: Optional[dict], report: dict, digest: Any) -> None:
    """Write the summary atomically (temp file + rename); raises OSError, TypeError (the caller logs them)."""
    body = codec.encode({"report": report, "digest": digest})
    header = msgspec.json.encode(_Header(FORMAT, cache_key(ident), analysis_fingerprint(), reference, len(body),
                                         hashlib.sha256(body).hexdigest()))
    target = summary_path(cache_dir, ident)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(MAGIC + len(header).to_bytes(8, "little") + header + body)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_summary(cache_dir: Path, ident: FileIdentity, reference: Optional[dict]) -> tuple[dict, Any]:
    """(report entry, rank digest) cached for this file version.

    Raises:
        CacheMiss: none, or one that cannot be used (the reason says why).
    """
    path = summary_path(cache_dir, ident)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise CacheMiss("not cached", damaged=False) from None
    except OSError as exc:
        raise CacheMiss(f"cached summary unreadable ({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CacheMiss("cached summary is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        header = _read_header(handle)
        _check_header(header, ident, reference)
        if header.bytes > section_cap(SUMMARY, ident.size):
            raise CacheMiss(f"cached summary claims {header.bytes} bytes, more than this trace's summary can be")
        body = _read(handle, header.bytes)
        if handle.read(1):
            raise CacheMiss("cached summary has bytes after its body")
    if hashlib.sha256(body).hexdigest() != header.sha256:
        raise CacheMiss("cached summary does not match its checksum")
    return _summary(body)


def _read(handle, length: int) -> bytes:
    try:
        data = read_exactly(handle, length)
    except OSError as exc:
        raise CacheMiss(f"cached summary unreadable ({exc.strerror or type(exc).__name__})") from None
    if len(data) < length:
        raise CacheMiss("cached summary is truncated")
    return data


def _read_header(handle) -> _Header:
    head = _read(handle, len(MAGIC) + 8)
    if head[:len(MAGIC)] != MAGIC:
        raise CacheMiss("not a cached summary of this format")
    length = int.from_bytes(head[len(MAGIC):], "little")
    if length > MAX_HEADER_BYTES:
        raise CacheMiss(f"cached summary header of {length} bytes (at most {MAX_HEADER_BYTES})")
    try:
        return msgspec.json.decode(_read(handle, length), type=_Header)
    except msgspec.DecodeError as exc:
        raise CacheMiss(f"corrupt cached summary header ({str(exc)[:200]})") from None


def _check_header(header: _Header, ident: FileIdentity, reference: Optional[dict]) -> None:
    if header.format != FORMAT:
        raise CacheMiss(f"cached summary of format {header.format} (this version reads {FORMAT})", damaged=False)
    if header.key != cache_key(ident):
        raise CacheMiss("cached summary of another file or file version")
    if header.analysis != analysis_fingerprint():
        raise CacheMiss("cached summary computed by other analysis code (or another peaks file)", damaged=False)
    if header.graph_reference != reference:
        raise CacheMiss("the trace's graph reference changed since its summary was cached", damaged=False)


def _summary(body: bytes) -> tuple[dict, Any]:
    try:
        summary = codec.decode(body)
    except codec.CodecError as exc:
        raise CacheMiss(f"cached summary of another version or corrupt: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a damaged entry is a miss, never a crash
        raise CacheMiss(f"corrupt cached summary ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(summary, dict) or set(summary) != {"report", "digest"}:
        raise CacheMiss("corrupt cached summary (not a report and a digest)")
    try:
        validate.check_summary(summary["report"], summary["digest"], RankDigest)
    except validate.ModelInvalid as exc:
        raise CacheMiss(f"corrupt cached summary ({exc})") from None
    return summary["report"], summary["digest"]
