"""One trace's sidecar: its decoded model, what the tab needs first and its rank digest, in one file that
`kinetoscope index` writes and every reader (TensorBoard's plugin, `kinetoscope report`) may use.

Where: `DIR/.kinetoscope/NAME.kidx` for the trace `DIR/NAME` (local path or any fsspec URL). Beside the
trace rather than at the logdir's root, so a logdir opened at a sub-folder, a single trace given to
`kinetoscope report`, or a run copied elsewhere with its `.kinetoscope/` folder all still find it.

Layout: `MAGIC`, the header's length (8 bytes, little-endian), the header (JSON), then the sections:
- `summary`: the report entry and the rank digest (what `report` and the ranks view need; kilobytes);
- `model`: the decoded model, stored as the model cache stores it (`trace.cache.write_model`);
- `prepared`: the rest of `pipeline.prepare`'s result (analyses, lane index, launch tables; `codec`).
The header holds the sidecar's format version, the model's format version, a fingerprint of the analysis
code that computed it, the trace's identity and each section's offset, length and sha256.

A sidecar is used only when all of these hold, else the reader decodes and says why (`SidecarMiss`):
- the format versions and the analysis code are this installation's;
- the trace's size and mtime are the ones recorded;
- the trace's *head-tail checksum* is the one recorded: sha256 of its size and of its first and last
  64 KiB as stored (the whole file when smaller). Two range reads, whatever the trace's size, so opening
  stays cheap on object stores. The sha256 of every stored byte is recorded too; `kinetoscope index
  --verify` compares it (and re-stamps a sidecar whose trace only got a new mtime, e.g. after a copy);
- each section read matches its sha256 (a truncated or damaged sidecar is never half used).

Sidecars are written whole: locally to a temp name in the same folder then renamed over the old one; on
object stores as one object (a PUT is atomic). A reader therefore sees the old sidecar or the new one.
"""
from __future__ import annotations

import hashlib
import io
import os
import posixpath
import struct
import tempfile
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Optional

import msgspec

from .. import __version__
from ..pipeline import Prepared
from ..trace.cache import read_model, write_model
from ..trace.model import FORMAT_VERSION, TraceModel
from ..trace.storage import StorageError, identity, split_url
from . import codec

SIDECAR_FORMAT = 1  # bump when the layout of the file or of a section changes
MAGIC = b"KINETOSCOPE-SIDECAR\n"
FOLDER = ".kinetoscope"
SUFFIX = ".kidx"
EDGE_BYTES = 64 << 10  # head and tail checked on every open
MAX_HEADER_BYTES = 1 << 20
HASH_BLOCK = 8 << 20
STALE_TMP_S = 3600.0
# A sidecar holds about 240 bytes per event, and a trace at most KINETOSCOPE_MAX_EVENTS_PER_KB (250) events per
# KiB stored: a larger sidecar is not one `index` wrote for this trace, and is not read into memory.
MAX_SIDECAR_RATIO, MAX_SIDECAR_SLACK = 64, 64 << 20
_SUMMARY, _MODEL, _PREPARED = "summary", "model", "prepared"
_FROM_SUMMARY = ("report", "digest")  # Prepared fields stored in the summary section
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


def _read_range(path: str, start: int, length: int) -> bytes:
    """`length` stored bytes of a file from `start` (no gunzip: checksums are of the bytes as stored)."""
    if length <= 0:
        return b""
    if is_local(path):
        with open(os.path.expanduser(path), "rb") as handle:
            handle.seek(start)
            return handle.read(length)
    fs, inner = _fs(path)
    return fs.cat_file(inner, start=start, end=start + length)


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
    """sha256 of every stored byte, streamed."""
    digest = hashlib.sha256()
    try:
        if is_local(path):
            with open(os.path.expanduser(path), "rb") as handle:
                for block in iter(lambda: handle.read(HASH_BLOCK), b""):
                    digest.update(block)
        else:
            fs, inner = _fs(path)
            with fs.open(inner, "rb") as handle:
                for block in iter(lambda: handle.read(HASH_BLOCK), b""):
                    digest.update(block)
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read: {exc}", transient=True) from None
    return digest.hexdigest()


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
    """The bytes of a sidecar for `prepared` (a `pipeline.Prepared`) of `model`, of the trace `trace_identity`
    describes."""
    model_buf = io.BytesIO()
    write_model(model_buf, model)
    rest = {f.name: getattr(prepared, f.name) for f in fields(prepared) if f.name not in _FROM_SUMMARY}
    sections = [(_SUMMARY, codec.encode({f: getattr(prepared, f) for f in _FROM_SUMMARY})),
                (_MODEL, model_buf.getvalue()), (_PREPARED, codec.encode(rest))]
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
    """Write a file whole: locally to a temp name in its folder, then renamed over the old one; on other
    filesystems as one object (a PUT is atomic). A reader sees the old file or the new one, never half."""
    if is_local(target):
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(target) + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, 0o644)  # teammates read it; mkstemp makes it 0600
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return target
    fs, inner = _fs(target)
    try:
        fs.makedirs(posixpath.dirname(inner), exist_ok=True)
    except (OSError, NotImplementedError):
        pass  # object stores have no folders
    fs.pipe_file(inner, data)
    return target


def restamp(trace_path: str, trace: dict[str, Any]) -> str:
    """Rewrite a sidecar's header with a new trace identity (same content, e.g. a copy with a new mtime)."""
    path = sidecar_path(trace_path)
    with _Reader(path) as reader:
        raw = reader.read(0, reader.size)
    header, body = _split(raw)
    header["trace"] = trace
    blob = msgspec.json.encode(header)
    return write(trace_path, b"".join([MAGIC, struct.pack("<Q", len(blob)), blob, raw[body:]]))


def remove_stale_temps(trace_path: str) -> None:
    """Delete temp files of writers that died (older than STALE_TMP_S) beside a local sidecar."""
    if not is_local(trace_path):
        return
    folder = os.path.dirname(sidecar_path(trace_path))
    now = time.time()
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith(".") and name.endswith(".tmp"):
            path = os.path.join(folder, name)
            try:
                if now - os.stat(path).st_mtime > STALE_TMP_S:
                    os.unlink(path)
            except OSError:
                continue


# ---- reading -------------------------------------------------------------------------------------

class _Reader:
    """Ranges of one sidecar: one open handle locally (a rename by a writer meanwhile does not affect it),
    range requests elsewhere (a replacement meanwhile fails a section's checksum)."""

    def __init__(self, path: str) -> None:
        self.path, self._handle, self._fs = path, None, None
        try:
            if is_local(path):
                self._handle = open(path, "rb")
            else:
                self._fs, self._inner = _fs(path)
                self.size = int(self._fs.info(self._inner).get("size") or 0)
        except FileNotFoundError:
            raise SidecarMiss("not indexed (no sidecar)") from None
        except (OSError, ValueError) as exc:
            raise SidecarMiss(f"sidecar unreadable: {exc}") from None
        if self._handle is not None:
            self.size = os.fstat(self._handle.fileno()).st_size

    def read(self, start: int, length: int) -> bytes:
        if length <= 0 or start >= self.size:
            return b""
        try:
            if self._handle is not None:
                self._handle.seek(start)
                return self._handle.read(length)
            return self._fs.cat_file(self._inner, start=start, end=min(self.size, start + length))
        except (OSError, ValueError) as exc:
            raise SidecarMiss(f"sidecar unreadable: {exc}") from None

    def __enter__(self) -> _Reader:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._handle is not None:
            self._handle.close()


def _header(reader: _Reader) -> tuple[dict, int]:
    """(header, offset of the first section) of a sidecar (raises SidecarMiss)."""
    start = len(MAGIC) + 8
    raw = reader.read(0, start)
    if len(raw) < len(MAGIC) or not raw.startswith(MAGIC):
        raise SidecarMiss("not a kinetoscope sidecar (bad magic)" if len(raw) >= len(MAGIC) else "truncated sidecar")
    if len(raw) < start:
        raise SidecarMiss("truncated sidecar")
    (length,) = struct.unpack("<Q", raw[len(MAGIC):])
    if length > MAX_HEADER_BYTES:
        raise SidecarMiss(f"corrupt sidecar (header of {length} bytes)")
    blob = reader.read(start, length)
    if len(blob) < length:
        raise SidecarMiss("truncated sidecar (header cut)")
    try:
        header = msgspec.json.decode(blob)
    except msgspec.DecodeError as exc:
        raise SidecarMiss(f"corrupt sidecar header ({exc})") from None
    if not isinstance(header, dict):
        raise SidecarMiss("corrupt sidecar header")
    return header, start + length


def _split(raw: bytes) -> tuple[dict, int]:
    """(header, offset of the first section) of a whole sidecar's bytes (raises SidecarMiss)."""
    reader = _Reader.__new__(_Reader)
    reader._handle, reader._fs, reader.size = io.BytesIO(raw), None, len(raw)
    return _header(reader)


def check_header(header: dict, trace: dict[str, Any]) -> None:
    """Raise SidecarMiss unless the header is of this version and describes this trace version."""
    if header.get("format") != SIDECAR_FORMAT:
        raise SidecarMiss(f"sidecar format {header.get('format')!r}, this kinetoscope reads {SIDECAR_FORMAT}")
    if header.get("model_format") != FORMAT_VERSION:
        raise SidecarMiss(f"sidecar holds model format {header.get('model_format')!r}, this kinetoscope uses {FORMAT_VERSION}")
    if header.get("analysis") != analysis_fingerprint():
        raise SidecarMiss(f"sidecar computed by other analysis code (kinetoscope {str(header.get('kinetoscope'))[:20]}, "
                          f"code {str(header.get('analysis'))[:16]}; this is {analysis_fingerprint()})")
    recorded = header.get("trace")
    if not isinstance(recorded, dict):
        raise SidecarMiss("corrupt sidecar header (no trace identity)")
    for key, what in (("size", "size"), ("mtime", "mtime"), ("head_tail", "content (head-tail checksum)")):
        if recorded.get(key) != trace.get(key):
            raise SidecarMiss(f"trace changed since it was indexed: {what} {recorded.get(key)!r} -> {trace.get(key)!r}")


def _section(reader: _Reader, header: dict, body: int, name: str) -> bytes:
    """One section's bytes, checked against its sha256 (raises SidecarMiss)."""
    entry = next((s for s in header.get("sections") or () if isinstance(s, dict) and s.get("name") == name), None)
    try:
        offset, length = int(entry["offset"]), int(entry["bytes"])
    except (KeyError, TypeError, ValueError):
        raise SidecarMiss(f"corrupt sidecar (no {name} section)") from None
    if offset < 0 or length < 0 or body + offset + length > reader.size:
        raise SidecarMiss(f"truncated sidecar ({name} section cut)")
    blob = reader.read(body + offset, length)
    if len(blob) != length or hashlib.sha256(blob).hexdigest() != entry.get("sha256"):
        raise SidecarMiss(f"corrupt sidecar ({name} section fails its checksum)")
    return blob


def read_header(trace_path: str) -> dict:
    """The header of the trace's sidecar as stored, whatever it says, once its size is the one the header
    implies (raises SidecarMiss when unreadable or truncated)."""
    with _Reader(sidecar_path(trace_path)) as reader:
        header, body = _header(reader)
        try:
            want = body + max((int(s["offset"]) + int(s["bytes"]) for s in header.get("sections") or ()), default=0)
        except (KeyError, TypeError, ValueError):
            raise SidecarMiss("corrupt sidecar (sections)") from None
        if reader.size != want:
            raise SidecarMiss(f"truncated sidecar ({reader.size} of {want} bytes)" if reader.size < want else
                              f"corrupt sidecar ({reader.size - want} bytes past its end)")
        return header


def _current(trace_path: str) -> dict[str, Any]:
    try:
        return trace_identity(trace_path)
    except StorageError as exc:
        raise SidecarMiss(f"cannot read the trace to check its sidecar: {exc}") from None


def open_summary(trace_path: str) -> tuple[dict, Any]:
    """(report entry, rank digest) from the trace's sidecar, reading only its header and summary section.

    Raises:
        SidecarMiss: no usable sidecar for this version of the trace (the reason says why).
    """
    with _Reader(sidecar_path(trace_path)) as reader:
        header, body = _header(reader)
        check_header(header, _current(trace_path))
        summary = _decode(_section(reader, header, body, _SUMMARY))
    if not isinstance(summary, dict) or set(summary) != set(_FROM_SUMMARY):
        raise SidecarMiss("corrupt sidecar (summary section)")
    return summary["report"], summary["digest"]


def open_prepared(trace_path: str) -> tuple[TraceModel, Prepared]:
    """(model, prepared) from the trace's sidecar: the `pipeline.Prepared` rebuilt from it.

    Raises:
        SidecarMiss: no usable sidecar for this version of the trace (the reason says why).
    """
    with _Reader(sidecar_path(trace_path)) as reader:
        header, body = _header(reader)
        trace = _current(trace_path)
        check_header(header, trace)
        if reader.size > MAX_SIDECAR_RATIO * int(trace["size"]) + MAX_SIDECAR_SLACK:
            raise SidecarMiss(f"sidecar too large for its trace ({reader.size:,} bytes for {trace['size']:,})")
        summary = _decode(_section(reader, header, body, _SUMMARY))
        rest = _decode(_section(reader, header, body, _PREPARED))
        model_blob = _section(reader, header, body, _MODEL)
    if not isinstance(summary, dict) or not isinstance(rest, dict):
        raise SidecarMiss("corrupt sidecar (sections)")
    try:
        codec.check_stored(model_blob)
        model = read_model(io.BytesIO(model_blob))
    except codec.CodecError as exc:
        raise SidecarMiss(f"corrupt sidecar (model section: {exc})") from None
    except Exception as exc:  # noqa: BLE001 - whatever a damaged npz raises, the reader decodes instead
        raise SidecarMiss(f"corrupt sidecar (model section: {type(exc).__name__}: {str(exc)[:200]})") from None
    names = {f.name for f in fields(Prepared)}
    if set(rest) | set(summary) != names:
        raise SidecarMiss("sidecar made by another version (its analyses have other parts)")
    try:
        prepared = Prepared(**rest, **summary)
    except (TypeError, ValueError) as exc:
        raise SidecarMiss(f"corrupt sidecar (prepared: {exc})") from None
    return model, prepared


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
