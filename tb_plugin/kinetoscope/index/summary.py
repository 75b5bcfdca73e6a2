"""Reading a sidecar's summary section (the report entry and the rank digest, what `kinetoscope report` and the
ranks view read without the model), and every section at once with one hash of the trace (`open_all`, what
`index` checks before it calls a sidecar up to date). The checks are `reader.checked`'s.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..analysis.distributed.ranks import RankDigest
from ..trace.model import TraceModel
from . import codec, validate
from .header import MODEL, SUMMARY, SidecarMiss
from .reader import SidecarFile, check_bound, checked, read_model


def _summary(header: dict, blob: bytes) -> tuple[dict, Any]:
    summary = _decode(blob)
    if not isinstance(summary, dict) or set(summary) != {"trace_sha256", "report", "digest"}:
        raise SidecarMiss("corrupt sidecar (summary section)")
    check_bound(summary["trace_sha256"], header, SUMMARY)
    try:
        validate.check_summary(summary["report"], summary["digest"], RankDigest)
    except validate.ModelInvalid as exc:
        raise SidecarMiss(f"corrupt sidecar (summary section: {exc})") from None
    return summary["report"], summary["digest"]


def open_summary(trace_path: str) -> tuple[dict, Any]:
    """(report entry, rank digest) from the trace's sidecar, reading only its header and summary section.

    Raises:
        SidecarMiss: no usable sidecar for this version of the trace (the reason says why).
    """
    return checked(trace_path, (SUMMARY,), lambda header, blobs: _summary(header, blobs[SUMMARY]))[1]


def open_all(trace_path: str, then: Optional[Callable[[SidecarFile, dict, int], None]] = None
             ) -> tuple[dict, dict, Any, TraceModel]:
    """(header, report entry, rank digest, model): every section, with one hash of the trace (what `index`
    checks before it calls a sidecar up to date: what `open_summary` and `open_model` would both accept).

    Raises:
        SidecarMiss: no usable sidecar for this version of the trace (the reason says why).

    `then`: what `reader.checked` runs on the open, checked sidecar (`index` re-stamps it there).
    """
    def use(header: dict, blobs: dict[str, bytes]) -> tuple:
        return (*_summary(header, blobs[SUMMARY]), read_model(header, blobs[MODEL]))
    header, (report, digest, model) = checked(trace_path, (SUMMARY, MODEL), use, then=then)
    return header, report, digest, model


def _decode(blob: bytes) -> Any:
    try:
        return codec.decode(blob)
    except codec.CodecError as exc:
        raise SidecarMiss(f"sidecar made by another version or corrupt: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a hostile sidecar must not take the reader down
        raise SidecarMiss(f"corrupt sidecar ({type(exc).__name__}: {str(exc)[:200]})") from None
