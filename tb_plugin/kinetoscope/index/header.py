"""A sidecar's format and header: where a trace's sidecar lies, the constants of its layout, the header's shape
(`parse_header`), and whether a header describes this installation and this trace's bytes (`check_header`).
The layout and the checks a reader makes are described in `sidecar.py`.
"""
from __future__ import annotations

import hashlib
import io
import os
import posixpath
import re
import struct
from pathlib import Path
from typing import Any, Callable, Optional

import msgspec

from ..pipeline import user_peaks
from ..trace.model import FORMAT_VERSION
from . import signing

SIDECAR_FORMAT = 4  # bump when the layout of the file or of a section changes
MAGIC = b"KINETOSCOPE-SIDECAR\n"
FOLDER = ".kinetoscope"
SUFFIX = ".kidx"
MAX_HEADER_BYTES = 64 << 10  # a header is under 1 KiB
SUMMARY, MODEL = "summary", "model"
SECTIONS = (SUMMARY, MODEL)
TRACE_MEMBER = "__trace__"  # the model section's copy of the trace's sha256
# A section's largest size for a trace of S stored bytes: fixed + ratio * S. The model holds about 80 bytes per
# event and a trace at most KINETOSCOPE_MAX_EVENTS_PER_KB (250) events per KiB stored, about 20 bytes per
# stored byte; measured: 4.2x for a gzip ResNet trace, 2.8x for a modern one. The summary is kilobytes (2% of
# the trace measured). A larger claim is refused before a byte of it is read.
# A section's cap: fixed bytes plus a share of the trace's stored bytes. A summary (the report entry and the rank
# digest, whose collective calls grow with the trace) is far below an eighth of it: a section claiming more is
# refused before a byte of it is read (issue 54 N6: the cap was the trace's whole size).
SECTION_CAPS = {SUMMARY: (1 << 20, 0.125), MODEL: (8 << 20, 32)}
FINGERPRINTED = ("trace/*.py", "analysis/**/*.py", "analysis/**/*.json", "views/*.py", "pipeline.py")  # what computes a sidecar's content
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
    return fixed + int(ratio * max(0, int(trace_size)))


def analysis_fingerprint() -> str:
    """The fingerprint of this installation's code (`code_fingerprint` of the package, read once per process), and
    of the user's device peaks file where one is set (`pipeline.user_peaks`: the roofline's figures depend on it)."""
    global _analysis_fp
    if _analysis_fp is None:
        _analysis_fp = code_fingerprint(Path(__file__).resolve().parent.parent)
    peaks = user_peaks()[1]
    return _analysis_fp if not peaks else hashlib.sha256(f"{_analysis_fp}|{peaks}".encode()).hexdigest()[:16]


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


class _Reference(msgspec.Struct):
    """The graph reference the analyses were computed with (`identity.reference_identity`)."""

    path: str
    size: Optional[int] = None
    head_tail: Optional[str] = None
    unreadable: bool = False


class _Signature(msgspec.Struct):
    key: str
    hmac: str


class _Header(msgspec.Struct):
    format: int
    model_format: int
    analysis: str
    kinetoscope: str
    created_unix: float
    trace: _Trace
    sections: list[_Section]
    signature: Optional[_Signature] = None
    graph_reference: Optional[_Reference] = None


def signed_bytes(header: dict) -> bytes:
    """What a header's signature covers: the header in its canonical encoding (the header's shape, field order and
    types, unknown fields dropped) without the signature."""
    try:
        body = msgspec.convert({k: v for k, v in header.items() if k != "signature"}, _Header)
    except msgspec.ValidationError as exc:
        raise SidecarMiss(f"corrupt sidecar header ({str(exc)[:200]})") from None
    return msgspec.json.encode(body)


def encode_header(header: dict, key: Optional[bytes] = None) -> bytes:
    """The start of a sidecar up to its first section: MAGIC, the header's length, the header, signed with `key`
    (default: this process's signing key, `signing.signing_key`)."""
    body = {k: v for k, v in header.items() if k != "signature"}
    blob = msgspec.json.encode({**body, "signature": signing.sign(signed_bytes(body), key)})
    return b"".join([MAGIC, struct.pack("<Q", len(blob)), blob])


def parse_header(read: Callable[[int, int], bytes], size: int) -> tuple[dict, int]:
    """(header, offset of the first section) of a sidecar of `size` bytes read through `read(start, length)`,
    once the header has the expected shape and its sections lie back to back up to the end of the file
    (raises SidecarMiss)."""
    start = len(MAGIC) + 8
    raw = read(0, start)
    if len(raw) < len(MAGIC) or not raw.startswith(MAGIC):
        raise SidecarMiss("not a kinetoscope sidecar (bad magic)" if len(raw) >= len(MAGIC) else "truncated sidecar")
    if len(raw) < start:
        raise SidecarMiss("truncated sidecar")
    (length,) = struct.unpack("<Q", raw[len(MAGIC):])
    if length > MAX_HEADER_BYTES:
        raise SidecarMiss(f"corrupt sidecar (header of {length} bytes, at most {MAX_HEADER_BYTES})")
    blob = read(start, length)
    if len(blob) < length:
        raise SidecarMiss("truncated sidecar (header cut)")
    try:
        header = msgspec.to_builtins(msgspec.json.decode(blob, type=_Header))
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise SidecarMiss(f"corrupt sidecar header ({str(exc)[:200]})") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise SidecarMiss(f"corrupt sidecar header ({type(exc).__name__})") from None
    body = start + length
    _check_sections(header["sections"], size - body)
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


def split(raw: bytes) -> tuple[dict, int]:
    """(header, offset of the first section) of a whole sidecar's bytes (raises SidecarMiss)."""
    buffer = io.BytesIO(raw)

    def read(start: int, length: int) -> bytes:
        buffer.seek(start)
        return buffer.read(max(0, length))
    return parse_header(read, len(raw))


def check_header(header: dict, trace: dict[str, Any]) -> None:
    """Raise SidecarMiss unless the header is of this version, signed under a key this process trusts
    (`signing`), and describes this trace's bytes: size, head-tail
    checksum and, when `trace` carries it, the sha256 of every stored byte. The mtime is not compared: a copy
    of the same bytes is the same trace (`index` re-stamps the header)."""
    if header.get("format") != SIDECAR_FORMAT:
        raise SidecarMiss(f"sidecar format {header.get('format')!r}, this kinetoscope reads {SIDECAR_FORMAT}")
    if header.get("model_format") != FORMAT_VERSION:
        raise SidecarMiss(f"sidecar holds model format {header.get('model_format')!r}, this kinetoscope uses {FORMAT_VERSION}")
    unsigned = signing.unsigned_reason(header.get("signature"), signed_bytes(header))
    if unsigned is not None:
        raise SidecarMiss(unsigned)
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
