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

from .decode import PIECE_HEAD, PIECE_MIDDLE, PIECE_TAIL, PIECE_WHOLE
from .deps import MSGSPEC_REFUSALS
from .forgiving import DecodeError, forgiving_json
from .model import TraceModel
from .storage import FileIdentity, StorageError, identity, read_range

MAX_STRING_CHARS = 2000  # a call stack or a concrete-inputs list longer than this is cut (the UI shows a line)
MAX_ITEMS = 200  # keys of one object, or items of one list, kept
MAX_DEPTH = 6
MAX_CACHED_PIECE = 32 << 20  # the last two pieces read stay in memory (about 1.5x their size) when no larger


class SourceError(Exception):
    """The event cannot be re-read: the message says why, for a person."""


class _RawDoc(msgspec.Struct):
    traceEvents: list[msgspec.Raw]


_RAW_DOC = msgspec.json.Decoder(_RawDoc)


def event_args(source: Union[str, FileIdentity], model: TraceModel, row: int) -> dict[str, Any]:
    """The `args` object of event `row` as the file holds it, bounded (see `bounded`).

    Args:
        source: the trace file the model was decoded from (the caller checks it is unchanged); given
            as a `FileIdentity`, the last two pieces read are kept (split into undecoded events),
            so the events near one already shown cost no re-read.
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
    index = ordinal - int(model.piece_first[piece])
    path = source.path if isinstance(source, FileIdentity) else source
    try:
        if kind == PIECE_WHOLE:
            event = _nth_of_whole(read_range(path, start, end), index)
        else:
            if isinstance(source, FileIdentity) and end - start <= MAX_CACHED_PIECE:
                events = _cached_events(source, kind, start, end)
            else:
                events = _raw_events(read_range(path, start, end), kind)
            event = _value(events[index])
    except StorageError as exc:
        raise SourceError(str(exc)) from None
    except (*MSGSPEC_REFUSALS, IndexError):
        raise SourceError(_CHANGED) from None
    if not isinstance(event, dict):
        raise SourceError(f"event {ordinal} of the file is not an object")
    args = event.get("args")
    return bounded(args) if isinstance(args, dict) else {}


def events_args(path: str, model: TraceModel, rows: np.ndarray, keys: tuple[str, ...]) -> dict[int, dict[str, Any]]:
    """For many events at once (`rows`, the model's): the `keys` of their `args` that the file holds, bounded, each
    piece of text read and split once (`event_args` reads one event). Rows whose piece cannot be re-read are left
    out.

    Raises:
        SourceError: the file cannot be read.
    """
    ordinal = model.source_row[rows]
    piece = np.searchsorted(model.piece_first, ordinal, side="right") - 1
    out: dict[int, dict[str, Any]] = {}
    for k in np.unique(piece[piece >= 0]).tolist():
        kind, start, end = int(model.piece_kind[k]), int(model.piece_start[k]), int(model.piece_end[k])
        try:
            text = read_range(path, start, end)
            events = _RAW_DOC.decode(text).traceEvents if kind == PIECE_WHOLE else _raw_events(text, kind)
        except StorageError as exc:
            raise SourceError(str(exc)) from None
        except MSGSPEC_REFUSALS:
            continue  # not strict JSON: one event at a time, the forgiving way, is `event_args`'s
        first = int(model.piece_first[k])
        for row, at in zip(rows[piece == k].tolist(), (ordinal[piece == k] - first).tolist()):
            try:
                event = _value(events[at])
            except (SourceError, IndexError):
                continue
            args = event.get("args") if isinstance(event, dict) else None
            if isinstance(args, dict):
                out[row] = {key: bounded(args[key]) for key in keys if key in args}
    return out


def _value(event: Any) -> Any:
    """An event left undecoded (msgspec.Raw) decoded, the forgiving way when it is not strict JSON."""
    if not isinstance(event, msgspec.Raw):
        return event
    try:
        return msgspec.json.decode(event)
    except MSGSPEC_REFUSALS as exc:
        try:
            return forgiving_json(bytes(event), exc)[0]
        except DecodeError:
            raise SourceError(_CHANGED) from None


_CHANGED = "the file no longer matches its decoded model (changed since it was loaded?)"


@lru_cache(maxsize=2)  # a changed file has another identity, so never a stale piece
def _cached_events(source: FileIdentity, kind: int, start: int, end: int) -> list:
    return _raw_events(read_range(source.path, start, end), kind)


def _raw_events(text: bytes, kind: int) -> list:
    """The events of a piece of text, each left undecoded (msgspec.Raw views of the text) when the piece is
    strict JSON; decoded the forgiving way (NaN, bare N/A, bad UTF-8), as the loader did, when it is not."""
    if kind == PIECE_MIDDLE:
        doc = b'{"traceEvents":[' + text[1:] + b"]}"
    elif kind == PIECE_HEAD:
        doc = text + b"]}"
    elif kind == PIECE_TAIL:
        doc = b'{"traceEvents":[' + text[1:]
    else:
        raise SourceError(f"unknown piece kind {kind}")
    try:
        return _RAW_DOC.decode(doc).traceEvents
    except MSGSPEC_REFUSALS:
        pass
    try:
        obj, _ = forgiving_json(doc, ValueError("not strict JSON"))
    except DecodeError:
        raise SourceError(_CHANGED) from None
    events = obj.get("traceEvents") if isinstance(obj, dict) else None
    if not isinstance(events, list):
        raise SourceError(_CHANGED)
    return events


def _nth_of_whole(text: bytes, index: int) -> Any:
    """Event `index` of a file that was decoded whole: typed when it is clean, else the forgiving way."""
    try:
        return msgspec.json.decode(_RAW_DOC.decode(text).traceEvents[index])
    except MSGSPEC_REFUSALS:
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
