"""Event structs, or a middle piece's text, -> the raw per-event columns of one chunk: the pure-Python and the
compiled extractor (`_columns.c`), the compiled text scanner (`_scan.c`), and the loading of both accelerators.
"""
from __future__ import annotations

from itertools import repeat
from operator import attrgetter
from typing import Any, Optional

import numpy as np

from .budgets import fast_decode, pure_python
from .decode import Args, Event
from .gpu_args import FIELDS as GPU_FIELDS

PH_X, PH_I, PH_S, PH_F, PH_M, PH_OTHER = 0, 1, 2, 3, 4, 5
_PHASES = {"X": PH_X, "i": PH_I, "I": PH_I, "s": PH_S, "f": PH_F, "t": PH_F, "M": PH_M}
MEMORY_NAME = "[memory]"
MEMORY_ARGS = ("device_type", "device_id", "bytes", "total_allocated", "total_reserved", "addr")
_get = {name: attrgetter(name) for name in ("ph", "name", "cat", "pid", "tid", "ts", "dur", "args", "id", "correlation",
                                            "external_id", "external_id_2021", "device", "stream", "ev_idx", "ev_idx_legacy",
                                            "input_dims", "input_types", "input_strides", "concrete_inputs",
                                            "call_stack", *MEMORY_ARGS)}
_NO_VALUE = (b"", b"null")  # an arg absent (or null)
_INPUTS = tuple(_get[key] for key in ("input_dims", "input_types", "input_strides", "concrete_inputs"))


def inputs_key(args: Any) -> bytes:
    """The key of an op's recorded inputs: the JSON text `[dims, types, strides, concrete]` of its `Input Dims`,
    `Input type`, `Input Strides` and `Concrete Inputs` as the file spells them (`null` when absent), as the
    compiled passes compose it; b"" when none is there."""
    parts = [bytes(get(args)) for get in _INPUTS]
    if all(part in _NO_VALUE for part in parts):
        return b""
    return b"[" + b",".join(part or b"null" for part in parts) + b"]"


def _first_frame(raw: Any) -> bytes:
    """The JSON text of a raw `Call stack` string's first (innermost) frame; b"" when none (not a string, empty)."""
    text = bytes(raw)
    if len(text) < 2 or text[:1] != b'"':
        return b""
    return text[1:-1].split(b";", 1)[0]


# Per-event columns, in the order both extractors produce them. Rows where a column does not apply are
# masked by `ColumnBuilder.add` (correlation and External id: complete events; device and stream: GPU
# activities; id: flow events; memory args: `[memory]` events; ev_idx: complete events), so extractors may
# leave anything there.
EXTRACTED = ("ph", "name", "cat", "pid", "tid", "ts", "dur", "correlation", "external_id", "device", "stream", "id",
             *(f"mem_{k}" for k in MEMORY_ARGS), "ev_idx", "shape", "frame")
EXTRACTED_DTYPES = (np.int8, *(np.int64,) * 4, np.float64, np.float64, *(np.int64,) * 5, *(np.float64,) * len(MEMORY_ARGS),
                    np.int64, np.int64, np.int64)
_PHASE_TABLE = bytes(_PHASES.get(chr(c), PH_OTHER) if c else PH_OTHER for c in range(256))
ID_OTHER = np.iinfo(np.int64).min  # a flow id that is not an int below 2^62 in magnitude: interned by `add`
_ID_LIMIT = 1 << 62


def _columns_py(events: list[Event], tables: tuple[dict, ...], off: int, legacy: bool) -> dict[str, np.ndarray]:
    """The reference extractor: one C-level `map` pass per column (`_columns.c` does them all in one pass).

    Args:
        events: one chunk of decoded events.
        tables: name, cat, pid, tid, input-shape and call-frame interning tables (value -> global row of its first
            occurrence; shapes are keyed by their JSON text, frames by the JSON text of a Call stack's first frame).
        off: the global row of `events[0]`.
        legacy: the chunk's text holds the 2021 key "external id" (else that column is all absent).
    """
    n = len(events)
    rows = range(off, off + n)
    cols = {"ph": np.fromiter(map(_PHASES.get, map(_get["ph"], events), repeat(PH_OTHER)), np.int8, n)}
    for table, key in zip(tables, ("name", "cat", "pid", "tid")):
        cols[key] = np.fromiter(map(table.setdefault, map(_get[key], events), rows), np.int64, n)
    cols.update((key, np.fromiter(map(_get[key], events), np.float64, n)) for key in ("ts", "dur"))
    args = list(map(_get["args"], events))
    shapes, frames = tables[4], tables[5]
    cols["shape"] = np.fromiter((shapes.setdefault(key, row) if key else -1
                                 for key, row in zip(map(inputs_key, args), rows)), np.int64, n)
    cols["frame"] = np.fromiter((frames.setdefault(key, row) if key else -1
                                 for key, row in zip(map(_first_frame, map(_get["call_stack"], args)), rows)), np.int64, n)
    cols.update((key, _int64s(key, args)) for key in ("correlation", "external_id", "device", "stream"))
    if legacy:
        cols["external_id"] = np.where(cols["external_id"] >= 0, cols["external_id"], _int64s("external_id_2021", args))
    ev_idx = _int64s("ev_idx", args)
    cols["ev_idx"] = np.where(ev_idx >= 0, ev_idx, _int64s("ev_idx_legacy", args))
    cols["id"] = np.full(n, ID_OTHER, np.int64)
    flow = np.flatnonzero((cols["ph"] == PH_S) | (cols["ph"] == PH_F))
    cols["id"][flow] = [v if isinstance(v, int) and -_ID_LIMIT < v < _ID_LIMIT else ID_OTHER for v in (events[i].id for i in flow.tolist())]
    memory_row = tables[0].get(MEMORY_NAME, -1)
    memory = np.flatnonzero(cols["name"] == memory_row)
    picked = [args[i] for i in memory.tolist()]
    for key in MEMORY_ARGS:
        cols[f"mem_{key}"] = np.full(n, np.nan)
        cols[f"mem_{key}"][memory] = np.fromiter(map(_get[key], picked), np.float64, memory.size)
    return cols


def _int64s(key: str, args: list[Args]) -> np.ndarray:
    """An int arg as an int64 column; values outside int64 count as absent (-1), as in the accelerator."""
    try:
        return np.fromiter(map(_get[key], args), np.int64, len(args))
    except OverflowError:
        return np.fromiter((v if -(1 << 63) <= v < (1 << 63) else -1 for v in map(_get[key], args)), np.int64, len(args))


def _columns_accel(events: list[Event], tables: tuple[dict, ...], off: int, legacy: bool) -> dict[str, np.ndarray]:
    """The same columns in one C pass over the structs (`_columns.c`); it merges both External id spellings always."""
    cols = [np.empty(len(events), dtype) for dtype in EXTRACTED_DTYPES]
    accel.extract(events, _PHASE_TABLE, *tables, off, tuple(cols))
    return dict(zip(EXTRACTED, cols))


def _load_accelerator():
    """The compiled extractor bound to the struct layouts, or None (pure Python) when absent or disabled."""
    if pure_python():
        return None
    try:
        from . import _columns
        _columns.layout(Event, ("ph", "name", "cat", "pid", "tid", "ts", "dur", "id", "args"),
                        Args, ("correlation", "external_id", "external_id_2021", "device", "stream", *MEMORY_ARGS,
                               "ev_idx", "ev_idx_legacy", "input_dims", "call_stack", "input_types", "input_strides",
                               "concrete_inputs", *(attr for _, attr, _, _ in GPU_FIELDS)))
    except (ImportError, TypeError, AttributeError):
        return None
    return _columns


accel = _load_accelerator()
ACCELERATED = accel is not None
extract = _columns_accel if ACCELERATED else _columns_py


def _load_scanner():
    """The compiled text-to-columns pass, or None when absent or disabled (`budgets.fast_decode`)."""
    if not ACCELERATED or not fast_decode():
        return None
    try:
        from . import _scan
    except ImportError:
        return None
    return _scan


_scan = _load_scanner()


def scans_text() -> bool:
    """Whether middle pieces are scanned from their text (`ColumnBuilder.add_text`), without the GIL."""
    return _scan is not None and extract is _columns_accel  # its columns are those of the compiled extractor


def scan_text(text, max_events: Optional[int] = None, open_end: bool = False,
              exact_rebase: Optional[int] = None, prefix: bool = False) -> Optional[tuple]:
    """The scanner's reading of a middle piece's text for `ColumnBuilder.add_scanned`; None when it cannot read it
    exactly as the typed decode would, holds more than `max_events` events, or the scanner is off. It holds no
    Python object while it reads, so threads may scan pieces at once. With `open_end` the text lacks its closing `]`
    (a piece of a mapped file, whose next byte is the next piece's `[`). `exact_rebase`: the piece belongs to a file
    with exact 16-digit times (`decode.PieceDecoder.exact_rebase`), whose times are read as `_exact_events` reads them.
    With `prefix` the text is a tail piece's (`[` events `]`, then the rest of the document) and the answer is the
    reading of its events with the offset past their `]`."""
    if not scans_text():
        return None
    return _scan.scan(text, _PHASE_TABLE, 1 << 62 if max_events is None else max(max_events, 0), open_end, exact_rebase,
                      prefix)
