"""One trace's sidecar: its decoded model and its summary (report entry and rank digest), in one file that
`kinetoscope index` writes and every reader (TensorBoard's plugin, `kinetoscope report`) may use.

Where: `DIR/.kinetoscope/NAME.kidx` for the trace `DIR/NAME` (local path or any fsspec URL). Beside the
trace rather than at the logdir's root, so a logdir opened at a sub-folder, a single trace given to
`kinetoscope report`, or a run copied elsewhere with its `.kinetoscope/` folder all still find it.

Layout: `MAGIC`, the header's length (8 bytes, little-endian), the header (JSON), then the sections:
- `summary`: the report entry and the rank digest (what `report` and the ranks view need; kilobytes);
- `model`: the decoded model's columns (`trace.cache.model_arrays`), one uncompressed `.npz`.
The header holds the sidecar's format version, the model's format version, a fingerprint of the code that
computed it, the trace's identity (size, mtime, head-tail checksum, sha256 of every stored byte) and each
section's offset, length and sha256. Each section also holds the trace's sha256 itself, so a section copied
from another trace's sidecar is refused even when the copier recomputed the checksums.

A sidecar is input from whoever can write the logdir, like a trace, and is used only when all of these hold,
else the reader decodes and says why (`SidecarMiss`):
- it is a regular file inside the logdir (no link out, no FIFO, no device), and its header is small and of
  the expected shape (versions, identity, exactly these sections, back to back, ending the file);
- the format versions and the code fingerprint are this installation's;
- the trace's bytes are the ones it was built from: size, then the head-tail checksum (first and last
  64 KiB), then the sha256 of every stored byte, computed at open and compared before any section is read
  (about 0.5 GB/s here, several times decoding speed; a gzip trace hashes its compressed bytes);
- each section is no larger than a sidecar of this trace can be (`section_cap`, checked before reading),
  matches its sha256 before it is decoded, and holds this trace's sha256;
- the `.npz` is one `index.npz` accepts (no overlapping, repeated, compressed or mis-sized members) and the
  model's columns pass `index.validate.check_model` (dtypes, lengths, index ranges, orders).
The analyses are not stored beyond the summary: TensorBoard computes them from the checked model
(`pipeline.prepare`), so nothing a sidecar holds reaches a route without being derived from columns that were
checked; the summary (for `report` and the ranks view) is checked for its types (`validate.check_summary`).
What no check can catch: a sidecar forged with this code's own encoder for the trace's exact bytes. Whoever
can write that can write the trace too; a shared logdir is as trustworthy as its writers.

Sidecars are written whole: locally to a temp name in the same folder then renamed over the old one; on
object stores as one object (a PUT is atomic). A reader therefore sees the old sidecar or the new one.
Locally the `.kinetoscope` folder must be a real folder inside the logdir (never a link), and only temp
files of Kinetoscope's own naming, in that folder, are ever removed.
"""
from __future__ import annotations

import hashlib
import io
import os
import posixpath
import re
import secrets
import struct
import time
from dataclasses import replace
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import Any, Optional

import msgspec
import numpy as np

from .. import __version__
from ..analysis.ranks import RankDigest
from ..pipeline import Prepared, prepare
from ..trace.cache import model_arrays, model_from_arrays
from ..trace.model import FORMAT_VERSION, TraceModel
from ..trace.storage import StorageError, confined_real_path, identity, open_local_fd, split_url
from . import codec, npz, validate

SIDECAR_FORMAT = 2  # bump when the layout of the file or of a section changes
MAGIC = b"KINETOSCOPE-SIDECAR\n"
FOLDER = ".kinetoscope"
SUFFIX = ".kidx"
EDGE_BYTES = 64 << 10  # head and tail checked on every open, before the full hash
MAX_HEADER_BYTES = 64 << 10  # a header is under 1 KiB
HASH_BLOCK = 8 << 20
STALE_TMP_S = 3600.0
TMP_SUFFIX = ".kinetoscope-tmp"
TMP_RE = re.compile(r"^\..+\.[0-9a-f]{16}" + re.escape(TMP_SUFFIX) + "$")  # what `write_file` names its temp files
_SUMMARY, _MODEL = "summary", "model"
SECTIONS = (_SUMMARY, _MODEL)
_TRACE_MEMBER = "__trace__"  # the model section's copy of the trace's sha256
# A section's largest size for a trace of S stored bytes: fixed + ratio * S. The model holds about 80 bytes per
# event and a trace at most KINETOSCOPE_MAX_EVENTS_PER_KB (250) events per KiB stored, about 20 bytes per
# stored byte; measured: 4.2x for a gzip ResNet trace, 2.8x for a modern one. The summary is kilobytes (2% of
# the trace measured). A larger claim is refused before a byte of it is read.
SECTION_CAPS = {_SUMMARY: (1 << 20, 1), _MODEL: (8 << 20, 32)}
_analysis_fp: Optional[str] = None


class SidecarMiss(Exception):
    """A sidecar that cannot be used for this trace; `reason` says why (shown to users)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def is_local(path: str) -> bool:
    return "://" not in path and "::" not in path


def sidecar_path(trace_path: str) -> str:
    """Where the sidecar of a trace lies: `DIR/.kinetoscope/NAME.kidx` (same scheme as the trace)."""
    if is_local(trace_path):
        head, name = os.path.split(os.path.abspath(os.path.expanduser(trace_path)))
        return os.path.join(head, FOLDER, name + SUFFIX)
    head, name = posixpath.split(trace_path)
    return posixpath.join(head, FOLDER, name + SUFFIX)


def section_cap(name: str, trace_size: int) -> int:
    """The most bytes section `name` of a sidecar may hold for a trace of `trace_size` stored bytes."""
    fixed, ratio = SECTION_CAPS[name]
    return fixed + ratio * max(0, int(trace_size))


FINGERPRINTED = ("trace/*.py", "analysis/*.py", "views/*.py", "pipeline.py")  # what computes a sidecar's content


def analysis_fingerprint() -> str:
    """The fingerprint of this installation's code (`code_fingerprint` of the package), read once per process."""
    global _analysis_fp
    if _analysis_fp is None:
        _analysis_fp = code_fingerprint(Path(__file__).resolve().parent.parent)
    return _analysis_fp


def code_fingerprint(root: Path) -> str:
    """sha256 of the code under package folder `root` that computes what a sidecar holds (FINGERPRINTED: the
    model's builder, the analyses, the views and `pipeline.py`; the Python sources, which every install ships,
    not the optional C twin of the extractor, which a wheel does not and which must give the same columns): a
    sidecar computed by other code is not used. The doors (routes, CLI, renderers) only read what a sidecar
    holds, so a change there keeps every sidecar valid."""
    digest = hashlib.sha256(f"{FORMAT_VERSION}|{SIDECAR_FORMAT}".encode())
    for path in sorted(p for pattern in FINGERPRINTED for p in root.glob(pattern)):
        digest.update(str(path.relative_to(root).as_posix()).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


# ---- the trace's identity ------------------------------------------------------------------------

def _fs(path: str):
    fs, inner = split_url(path)
    return fs, inner


def _local_handle(path: str):
    """A handle on a local file through the storage layer's confined open (no link out, no FIFO)."""
    return io.FileIO(open_local_fd(os.path.expanduser(path)), "rb", closefd=True)


def _read_range(path: str, start: int, length: int) -> bytes:
    """`length` stored bytes of a file from `start` (no gunzip: checksums are of the bytes as stored)."""
    if length <= 0:
        return b""
    if is_local(path):
        with _local_handle(path) as handle:
            handle.seek(start)
            return _read_exactly(handle, length)
    fs, inner = _fs(path)
    return fs.cat_file(inner, start=start, end=start + length)


def _read_exactly(handle, length: int) -> bytes:
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
            digest.update(_read_range(path, 0, size))
        else:
            digest.update(_read_range(path, 0, EDGE_BYTES))
            digest.update(_read_range(path, size - EDGE_BYTES, EDGE_BYTES))
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read: {exc}", transient=True) from None
    return digest.hexdigest()


def full_sha256(path: str) -> str:
    """sha256 of every stored byte, streamed through one reused buffer."""
    digest = hashlib.sha256()
    try:
        if is_local(path):
            with _local_handle(path) as handle:
                _hash_into(digest, handle)
        else:
            fs, inner = _fs(path)
            with fs.open(inner, "rb") as handle:
                _hash_into(digest, handle)
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read: {exc}", transient=True) from None
    return digest.hexdigest()


def _hash_into(digest, handle) -> None:
    if not hasattr(handle, "readinto"):
        for block in iter(lambda: handle.read(HASH_BLOCK), b""):
            digest.update(block)
        return
    buffer = bytearray(HASH_BLOCK)
    view = memoryview(buffer)
    while n := handle.readinto(buffer):
        digest.update(view[:n])


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


# ---- writing -------------------------------------------------------------------------------------

def build(trace: dict[str, Any], model: TraceModel, prepared: Any) -> bytes:
    """The bytes of a sidecar for `model` and the summary of `prepared` (a `pipeline.Prepared`), of the trace
    `trace_identity(path, full=True)` describes."""
    bound = trace["sha256"]
    model_buf = io.BytesIO()
    np.savez(model_buf, **model_arrays(model), **{_TRACE_MEMBER: np.frombuffer(bound.encode(), np.uint8)})
    summary = codec.encode({"trace_sha256": bound, "report": prepared.report, "digest": prepared.digest})
    sections = [(_SUMMARY, summary), (_MODEL, model_buf.getvalue())]
    table, offset = [], 0
    for name, blob in sections:
        table.append({"name": name, "offset": offset, "bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()})
        offset += len(blob)
    header = msgspec.json.encode({"format": SIDECAR_FORMAT, "model_format": FORMAT_VERSION,
                                  "analysis": analysis_fingerprint(), "kinetoscope": __version__,
                                  "created_unix": round(time.time(), 3), "trace": trace, "sections": table})
    return b"".join([MAGIC, struct.pack("<Q", len(header)), header, *(blob for _, blob in sections)])


def write(trace_path: str, data: bytes) -> str:
    """Write a trace's sidecar whole (`write_file`); returns its path."""
    return write_file(sidecar_path(trace_path), data)


def write_file(target: str, data: bytes) -> str:
    """Write a file of the `.kinetoscope` folder whole: locally to a temp name in that folder, then renamed over
    the old one (`_write_local`); on other filesystems as one object (a PUT is atomic). A reader sees the old
    file or the new one, never half."""
    if is_local(target):
        _write_local(target, data)
        return target
    fs, inner = _fs(target)
    try:
        fs.makedirs(posixpath.dirname(inner), exist_ok=True)
    except (OSError, NotImplementedError):
        pass  # object stores have no folders
    fs.pipe_file(inner, data)
    return target


def _folder_fd(folder: str) -> int:
    """A descriptor on a local `.kinetoscope` folder, made if missing: its parent must lie inside the roots in
    force, and the folder itself must be a real folder (a link there is refused, never followed).

    Raises:
        StorageError: a link, not a folder, or outside the logdir.
    """
    parent = confined_real_path(os.path.dirname(folder))
    name = os.path.basename(folder)
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    parent_fd = os.open(parent, flags)
    try:
        try:
            os.mkdir(name, 0o755, dir_fd=parent_fd)
        except FileExistsError:
            pass
        try:
            fd = os.open(name, flags | getattr(os, "O_NOFOLLOW", 0), dir_fd=parent_fd)
        except OSError as exc:
            raise StorageError(f"{folder} is not a folder of its own ({exc.strerror}; a link there is not "
                               "followed)") from None
        if not S_ISDIR(os.fstat(fd).st_mode):
            os.close(fd)
            raise StorageError(f"{folder} is not a folder")
        return fd
    finally:
        os.close(parent_fd)


def _write_local(target: str, data: bytes) -> None:
    folder, base = os.path.split(target)
    folder_fd = _folder_fd(folder)
    tmp = f".{base}.{secrets.token_hex(8)}{TMP_SUFFIX}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                     0o644, dir_fd=folder_fd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                os.fchmod(handle.fileno(), 0o644)  # teammates read it, whatever the umask
            os.replace(tmp, base, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)  # replaces a link, never follows it
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder_fd)
            except OSError:
                pass
            raise
    finally:
        os.close(folder_fd)


def restamp(trace_path: str, trace: dict[str, Any]) -> str:
    """Rewrite a sidecar's header with a new trace identity (same content, e.g. a copy with a new mtime)."""
    with _Reader(sidecar_path(trace_path)) as reader:
        header, body = _header(reader)
        raw = reader.read(body, reader.size - body)
    header["trace"] = trace
    blob = msgspec.json.encode(header)
    return write(trace_path, b"".join([MAGIC, struct.pack("<Q", len(blob)), blob, raw]))


def remove_stale_temps(trace_path: str) -> None:
    """Delete temp files of writers that died (older than STALE_TMP_S) beside a local sidecar: only regular
    files named as `write_file` names them, owned by this user, in a `.kinetoscope` folder that is no link."""
    if not is_local(trace_path):
        return
    folder = os.path.dirname(sidecar_path(trace_path))
    try:
        parent = confined_real_path(os.path.dirname(folder))
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        folder_fd = os.open(os.path.join(parent, FOLDER), flags)
    except (OSError, StorageError):
        return
    try:
        _remove_stale(folder_fd)
    finally:
        os.close(folder_fd)


def _remove_stale(folder_fd: int) -> None:
    now = time.time()
    for name in os.listdir(folder_fd):
        if not TMP_RE.match(name):
            continue
        try:
            stat = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
            if S_ISREG(stat.st_mode) and stat.st_uid == os.getuid() and now - stat.st_mtime > STALE_TMP_S:
                os.unlink(name, dir_fd=folder_fd)
        except OSError:
            continue


# ---- reading -------------------------------------------------------------------------------------

class _Reader:
    """Ranges of one sidecar: one open handle locally (a rename by a writer meanwhile does not affect it; the
    storage layer's confined open: no link out, no FIFO, no device), range requests elsewhere (a replacement
    meanwhile fails a section's checksum)."""

    def __init__(self, path: str) -> None:
        self.path, self._handle, self._fs = path, None, None
        try:
            if is_local(path):
                if not os.path.lexists(path):
                    raise FileNotFoundError(path)
                self._handle = _local_handle(path)
                self.size = os.fstat(self._handle.fileno()).st_size
            else:
                self._fs, self._inner = _fs(path)
                self.size = int(self._fs.info(self._inner).get("size") or 0)
        except FileNotFoundError:
            raise SidecarMiss("not indexed (no sidecar)") from None
        except StorageError as exc:
            raise SidecarMiss(f"sidecar refused: {exc}") from None
        except (OSError, ValueError) as exc:
            raise SidecarMiss(f"sidecar unreadable: {exc}") from None

    def read(self, start: int, length: int) -> bytes:
        if length <= 0 or start >= self.size:
            return b""
        try:
            if self._handle is not None:
                self._handle.seek(start)
                return _read_exactly(self._handle, length)
            return self._fs.cat_file(self._inner, start=start, end=min(self.size, start + length))
        except (OSError, ValueError) as exc:
            raise SidecarMiss(f"sidecar unreadable: {exc}") from None

    def __enter__(self) -> _Reader:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._handle is not None:
            self._handle.close()


class _Section(msgspec.Struct):
    name: str
    offset: int
    bytes: int
    sha256: str


class _Trace(msgspec.Struct):
    name: str
    size: int
    mtime: float
    head_tail: str
    sha256: Optional[str] = None


class _Header(msgspec.Struct):
    format: int
    model_format: int
    analysis: str
    kinetoscope: str
    created_unix: float
    trace: _Trace
    sections: list[_Section]


def _header(reader: _Reader) -> tuple[dict, int]:
    """(header, offset of the first section) of a sidecar, once the header has the expected shape and its
    sections lie back to back up to the end of the file (raises SidecarMiss)."""
    start = len(MAGIC) + 8
    raw = reader.read(0, start)
    if len(raw) < len(MAGIC) or not raw.startswith(MAGIC):
        raise SidecarMiss("not a kinetoscope sidecar (bad magic)" if len(raw) >= len(MAGIC) else "truncated sidecar")
    if len(raw) < start:
        raise SidecarMiss("truncated sidecar")
    (length,) = struct.unpack("<Q", raw[len(MAGIC):])
    if length > MAX_HEADER_BYTES:
        raise SidecarMiss(f"corrupt sidecar (header of {length} bytes, at most {MAX_HEADER_BYTES})")
    blob = reader.read(start, length)
    if len(blob) < length:
        raise SidecarMiss("truncated sidecar (header cut)")
    try:
        header = msgspec.to_builtins(msgspec.json.decode(blob, type=_Header))
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise SidecarMiss(f"corrupt sidecar header ({str(exc)[:200]})") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise SidecarMiss(f"corrupt sidecar header ({type(exc).__name__})") from None
    body = start + length
    _check_sections(header["sections"], reader.size - body)
    return header, body


def _check_sections(sections: list[dict], body_bytes: int) -> None:
    """The section table: exactly SECTIONS, in order, back to back from offset 0 to the end of the file."""
    names = [s["name"] for s in sections]
    if names != list(SECTIONS):
        raise SidecarMiss(f"sidecar of another layout (sections {names[:5]}, this kinetoscope writes {list(SECTIONS)})")
    offset = 0
    for s in sections:
        if s["offset"] != offset or s["bytes"] < 0 or not re.fullmatch(r"[0-9a-f]{64}", s["sha256"]):
            raise SidecarMiss(f"corrupt sidecar ({s['name']} section: offset, size or checksum malformed)")
        offset += s["bytes"]
    if offset != body_bytes:
        raise SidecarMiss(f"truncated sidecar ({body_bytes:,} of {offset:,} section bytes)" if body_bytes < offset else
                          f"corrupt sidecar ({body_bytes - offset:,} bytes past its end)")


def _split(raw: bytes) -> tuple[dict, int]:
    """(header, offset of the first section) of a whole sidecar's bytes (raises SidecarMiss)."""
    reader = _Reader.__new__(_Reader)
    reader._handle, reader._fs, reader.size = io.BytesIO(raw), None, len(raw)
    return _header(reader)


def check_header(header: dict, trace: dict[str, Any]) -> None:
    """Raise SidecarMiss unless the header is of this version and describes this trace's bytes: size, head-tail
    checksum and, when `trace` carries it, the sha256 of every stored byte. The mtime is not compared: a copy
    of the same bytes is the same trace (`index` re-stamps the header)."""
    if header.get("format") != SIDECAR_FORMAT:
        raise SidecarMiss(f"sidecar format {header.get('format')!r}, this kinetoscope reads {SIDECAR_FORMAT}")
    if header.get("model_format") != FORMAT_VERSION:
        raise SidecarMiss(f"sidecar holds model format {header.get('model_format')!r}, this kinetoscope uses {FORMAT_VERSION}")
    if header.get("analysis") != analysis_fingerprint():
        raise SidecarMiss(f"sidecar computed by other analysis code (kinetoscope {str(header.get('kinetoscope'))[:20]}, "
                          f"code {str(header.get('analysis'))[:16]}; this is {analysis_fingerprint()})")
    recorded = header.get("trace") or {}
    if not recorded.get("sha256"):
        raise SidecarMiss("corrupt sidecar header (no sha256 of the trace)")
    for key, what in (("size", "size"), ("head_tail", "content (head-tail checksum)"), ("sha256", "content (sha256)")):
        if key in trace and recorded.get(key) != trace.get(key):
            raise SidecarMiss(f"trace changed since it was indexed: {what} {_short(recorded.get(key))} -> "
                              f"{_short(trace.get(key))}")


def _short(value: Any) -> str:
    return repr(value[:16] + "...") if isinstance(value, str) and len(value) > 16 else repr(value)


def verified_identity(trace_path: str, header: dict) -> dict[str, Any]:
    """The trace's identity once its bytes are those the header records: the cheap checks first (size, head and
    tail), then the sha256 of every stored byte (raises SidecarMiss)."""
    try:
        trace = trace_identity(trace_path)
        check_header(header, trace)
        trace["sha256"] = full_sha256(trace_path)
    except StorageError as exc:
        raise SidecarMiss(f"cannot read the trace to check its sidecar: {exc}") from None
    check_header(header, trace)
    return trace


def _section(reader: _Reader, header: dict, body: int, name: str) -> bytes:
    """One section's bytes: its size checked against the trace's before any is read, its sha256 before it is
    returned (raises SidecarMiss)."""
    entry = next(s for s in header["sections"] if s["name"] == name)
    offset, length = entry["offset"], entry["bytes"]
    cap = section_cap(name, header["trace"]["size"])
    if length > cap:
        raise SidecarMiss(f"sidecar refused: its {name} section claims {length:,} bytes, more than a sidecar of "
                          f"this {header['trace']['size']:,}-byte trace can hold ({cap:,})")
    blob = reader.read(body + offset, length)
    if len(blob) != length or hashlib.sha256(blob).hexdigest() != entry["sha256"]:
        raise SidecarMiss(f"corrupt sidecar ({name} section fails its checksum)")
    return blob


def present(trace_path: str) -> bool:
    """Whether anything lies at the trace's sidecar path (a link, a FIFO: whatever it is, reading decides)."""
    path = sidecar_path(trace_path)
    if is_local(path):
        return os.path.lexists(path)
    try:
        fs, inner = _fs(path)
        return bool(fs.exists(inner))
    except Exception:  # noqa: BLE001 - unreachable: the read says why
        return True


def version(trace_path: str) -> Any:
    """What identifies the trace's sidecar now, without reading it: (size, mtime, inode, ctime) of what lies at
    its path (never followed), None when nothing does."""
    path = sidecar_path(trace_path)
    if not is_local(path):
        return None
    try:
        stat = os.lstat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns


def read_header(trace_path: str) -> dict:
    """The header of the trace's sidecar as stored, once it has the expected shape and the file the size it
    implies (raises SidecarMiss when unreadable, malformed or truncated)."""
    with _Reader(sidecar_path(trace_path)) as reader:
        return _header(reader)[0]


def _bound(value: Any, trace: dict[str, Any], name: str) -> None:
    if value != trace["sha256"]:
        raise SidecarMiss(f"sidecar refused: its {name} section was computed from other bytes than this trace's "
                          "(copied from another sidecar?)")


def open_summary(trace_path: str) -> tuple[dict, Any]:
    """(report entry, rank digest) from the trace's sidecar, reading only its header and summary section.

    Raises:
        SidecarMiss: no usable sidecar for this version of the trace (the reason says why).
    """
    with _Reader(sidecar_path(trace_path)) as reader:
        header, body = _header(reader)
        trace = verified_identity(trace_path, header)
        summary = _decode(_section(reader, header, body, _SUMMARY))
    if not isinstance(summary, dict) or set(summary) != {"trace_sha256", "report", "digest"}:
        raise SidecarMiss("corrupt sidecar (summary section)")
    _bound(summary["trace_sha256"], trace, _SUMMARY)
    try:
        validate.check_summary(summary["report"], summary["digest"], RankDigest)
    except validate.ModelInvalid as exc:
        raise SidecarMiss(f"corrupt sidecar (summary section: {exc})") from None
    return summary["report"], summary["digest"]


def open_model(trace_path: str) -> TraceModel:
    """The decoded model from the trace's sidecar, checked column by column (`validate.check_model`).

    Raises:
        SidecarMiss: no usable sidecar for this version of the trace (the reason says why).
    """
    with _Reader(sidecar_path(trace_path)) as reader:
        header, body = _header(reader)
        trace = verified_identity(trace_path, header)
        blob = _section(reader, header, body, _MODEL)
    try:
        arrays = npz.read(blob)
        bound = arrays.pop(_TRACE_MEMBER, np.zeros(0, np.uint8))
        _bound(bound.tobytes().decode("ascii", "replace"), trace, _MODEL)
        model = model_from_arrays(arrays)
        validate.check_model(model)
    except (npz.NpzError, validate.ModelInvalid) as exc:
        raise SidecarMiss(f"corrupt sidecar (model section: {exc})") from None
    except SidecarMiss:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a damaged section raises, the reader decodes instead
        raise SidecarMiss(f"corrupt sidecar (model section: {type(exc).__name__}: {str(exc)[:200]})") from None
    return model


def open_prepared(trace_path: str) -> tuple[TraceModel, Prepared]:
    """(model, prepared): the checked model from the trace's sidecar and the analyses computed from it.

    Raises:
        SidecarMiss: no usable sidecar for this version of the trace (the reason says why).
    """
    model = open_model(trace_path)
    return model, prepare(model)


def _decode(blob: bytes) -> Any:
    try:
        return codec.decode(blob)
    except codec.CodecError as exc:
        raise SidecarMiss(f"sidecar made by another version or corrupt: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a hostile sidecar must not take the reader down
        raise SidecarMiss(f"corrupt sidecar ({type(exc).__name__}: {str(exc)[:200]})") from None


def with_worker(digest: Any, worker: str) -> Any:
    """The digest as the ranks view wants it: named by the trace's worker."""
    return replace(digest, worker=worker)
