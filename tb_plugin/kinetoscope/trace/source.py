"""One event's full `args`, re-read from its trace file on demand.

The model keeps a dozen args per event as columns; the rest (kernel grid, block, registers and
occupancy, op input shapes and types, concrete inputs, call stacks) can be 30% of a file, so it is
not kept. Instead the model remembers where each event came from (`source_row`, and the byte range
of the piece of text its chunk was decoded from), and this module re-reads that piece only: at most
one chunk (16 MB) for plain files; gzip has no index, so it inflates the stream up to the piece.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Optional, Union

import msgspec
import numpy as np

from .decode import PIECE_HEAD, PIECE_MIDDLE, PIECE_TAIL, PIECE_WHOLE, DecodeError, forgiving_json
from .model import TraceModel
from .storage import FileIdentity, StorageError, identity, read_range

MAX_STRING_CHARS = 2000  # a call stack or a concrete-inputs list longer than this is cut (the UI shows a line)
MAX_ITEMS = 200  # keys of one object, or items of one list, kept
MAX_DEPTH = 6
MAX_CACHED_PIECE = 32 << 20  # the last two pieces read stay in memory when no larger than this


class SourceError(Exception):
    """The event cannot be re-read: the message says why, for a person."""


class _RawDoc(msgspec.Struct):
    traceEvents: list[msgspec.Raw]


_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_RAW_DOC = msgspec.json.Decoder(_RawDoc)


def event_args(source: Union[str, FileIdentity], model: TraceModel, row: int) -> dict[str, Any]:
    """The `args` object of event `row` as the file holds it, bounded (see `bounded`).

    Args:
        source: the trace file the model was decoded from (the caller checks it is unchanged); given
            as a `FileIdentity`, the last pieces read are kept, so neighbouring events cost no re-read.
        model: its model.
        row: an event row of the model.

    Raises:
        SourceError: the file cannot be read, or no longer holds the event where the model says.
    """
    ordinal = int(model.source_row[row])
    piece = int(np.searchsorted(model.piece_first, ordinal, side="right")) - 1
    if piece < 0:
        raise SourceError("the model records no source for this event")
    kind, start, end = int(model.piece_kind[piece]), int(model.piece_start[piece]), int(model.piece_end[piece])
    try:
        if isinstance(source, FileIdentity) and end != -1 and end - start <= MAX_CACHED_PIECE:
            text = _cached_piece(source, start, end)
        else:
            text = read_range(source.path if isinstance(source, FileIdentity) else source, start, end)
    except StorageError as exc:
        raise SourceError(str(exc)) from None
    event = _nth_event(text, kind, ordinal - int(model.piece_first[piece]))
    if not isinstance(event, dict):
        raise SourceError(f"event {ordinal} of the file is not an object")
    args = event.get("args")
    return bounded(args) if isinstance(args, dict) else {}


@lru_cache(maxsize=2)  # a changed file has another identity, so never a stale piece
def _cached_piece(source: FileIdentity, start: int, end: int) -> bytes:
    return read_range(source.path, start, end)


def _nth_event(text: bytes, kind: int, index: int) -> Any:
    """Event `index` of a piece of text, decoded generically (only that one event is parsed in full)."""
    try:
        if kind == PIECE_MIDDLE:
            events = _RAW_LIST.decode(b"[" + text[1:] + b"]")
        elif kind == PIECE_HEAD:
            events = _RAW_DOC.decode(text + b"]}").traceEvents
        elif kind == PIECE_TAIL:
            events = _RAW_DOC.decode(b'{"traceEvents":[' + text[1:]).traceEvents
        elif kind == PIECE_WHOLE:
            return _nth_of_whole(text, index)
        else:
            raise SourceError(f"unknown piece kind {kind}")
        return msgspec.json.decode(events[index])
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, IndexError):
        raise SourceError("the file no longer matches its decoded model (changed since it was loaded?)") from None


def _nth_of_whole(text: bytes, index: int) -> Any:
    """Event `index` of a file that was decoded whole: typed when it is clean, else the forgiving way."""
    try:
        return msgspec.json.decode(_RAW_DOC.decode(text).traceEvents[index])
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
        pass
    try:
        doc, _ = forgiving_json(text, ValueError("not strict JSON"))
    except DecodeError as exc:
        raise SourceError(str(exc)) from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise SourceError("no 'traceEvents' list")
    return events[index]


def bounded(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy small enough for one response: long strings cut, long lists and objects cut,
    non-finite floats as None, integers beyond 64 bits as strings (JSON encoders reject them)."""
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING_CHARS else value[:MAX_STRING_CHARS] + f"\u2026 ({len(value)} chars)"
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 63) else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= MAX_DEPTH:
        return "\u2026"
    if isinstance(value, list):
        items = [bounded(v, depth + 1) for v in value[:MAX_ITEMS]]
        return items + [f"\u2026 {len(value) - MAX_ITEMS} more"] if len(value) > MAX_ITEMS else items
    if isinstance(value, dict):
        out = {str(k): bounded(v, depth + 1) for k, v in list(value.items())[:MAX_ITEMS]}
        if len(value) > MAX_ITEMS:
            out["\u2026"] = f"{len(value) - MAX_ITEMS} more keys"
        return out
    return str(value)


def args_or_reason(loaded_from: FileIdentity, model: TraceModel, row: int) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """`event_args` when the file is still the version the model was decoded from, else None and the
    reason (a response that carries it still answers with everything else)."""
    try:
        if identity(loaded_from.path) != loaded_from:
            return None, "the file changed since it was loaded; its args will show once it is reloaded"
        return event_args(loaded_from, model, row), None
    except (SourceError, StorageError) as exc:
        return None, str(exc)
