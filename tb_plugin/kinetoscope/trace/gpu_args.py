"""The args of GPU activities the kernel table shows, read per chunk: bytes moved (memcpy, memset), and the
launch shape of kernels (grid and block sizes, registers per thread, shared memory, blocks per SM,
estimated achieved occupancy; trace-format.md §kernel args).

Only GPU-category events are looked at (a tenth to a fifth of a trace), once each, as their chunk is
built; the values become sparse model columns (`gpu_arg_*`: one row per activity that has any of them, -1 where
a field is absent or unusable: every one of them is a count, a size or a share, never negative).

A number counts when it is a JSON number (not a string, not a bool) in [0, 2^62); a grid or block when it is
a list of three whole numbers >= 1 (its size is their product). The compiled reader (`_columns.gpu_fields`)
reads the plain spellings every Kineto writer uses and hands any other back to the reference readers here,
so both paths give the same values.
"""
from __future__ import annotations

import math
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any, Optional

import msgspec
import numpy as np

from .deps import MSGSPEC_REFUSALS

_LIMIT = float(1 << 62)
_NAN = math.nan


def _numbers(values: list) -> np.ndarray:
    """JSON numbers (ints, not bools, and floats) within [0, 2^62) as float64, NaN elsewhere."""
    out = np.fromiter([v if type(v) is float or (type(v) is int and -_LIMIT < v < _LIMIT) else _NAN for v in values],
                      np.float64, len(values))
    out[~((out >= 0) & (out < _LIMIT))] = np.nan  # negative, NaN, inf and huge values: none of these fields can be
    return out


def _raw_products(values: list) -> np.ndarray:
    """`_products` of Raw JSON texts (an empty one is absent)."""
    if not values:
        return np.zeros(0)
    texts = [bytes(v) or b"null" for v in values]
    try:
        return _products(msgspec.json.decode(b"[" + b",".join(texts) + b"]"))
    except MSGSPEC_REFUSALS:  # Raw skips a value unchecked: a number beyond a double (1e999) fails only here
        return _products([_json_or_none(text) for text in texts])


def _json_or_none(text: bytes) -> Any:
    try:
        return msgspec.json.decode(text)
    except MSGSPEC_REFUSALS:
        return None


def shape_size(value: Any) -> float:
    """One grid or block arg's size (x*y*z) as the model reads it (`_products`), -1 when it is not three whole
    numbers >= 1: for args re-read outside a chunk (a captured launch call's, `pipeline.graph_reference`)."""
    size = float(_products([value])[0])
    return size if size == size else -1.0


def _products(values: list) -> np.ndarray:
    """x*y*z of `[x, y, z]` grids or blocks (whole numbers >= 1), NaN for anything else."""
    out = np.full(len(values), np.nan)
    try:  # every kernel of a Kineto trace has both: one C-level conversion of the flattened lists
        picked = np.arange(len(values)) if set(map(len, values)) == {3} else None
        dims = np.fromiter(chain.from_iterable(values), np.float64, 3 * len(values)).reshape(-1, 3) if picked is not None else None
    except (TypeError, ValueError, OverflowError):
        picked = None
    if picked is None:  # some absent or malformed: keep the 3-number lists, read one by one
        picked = np.array([i for i, v in enumerate(values) if type(v) is list and len(v) == 3], np.int64)
        if picked.size == 0:
            return out
        dims = np.array([[d if type(d) in (int, float) and -_LIMIT < d < _LIMIT else _NAN for d in values[i]]
                         for i in picked.tolist()], np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.all((dims >= 1) & (dims == np.floor(dims)) & (dims < _LIMIT), axis=1)
        product = np.prod(dims, axis=1)
    out[picked[ok]] = product[ok]
    out[~(out < _LIMIT)] = np.nan
    return out


# (model column suffix, Args attribute, reader of a list of values, read on kernels (else on memcpys/memsets))
FIELDS = (("bytes", "copy_bytes", _numbers, False), ("grid", "grid", _raw_products, True), ("block", "block", _raw_products, True),
          ("registers", "registers", _numbers, True), ("shared_mem", "shared_memory", _numbers, True),
          ("blocks_per_sm", "blocks_per_sm", _numbers, True), ("occupancy", "occupancy", _numbers, True))
_GET = {attr: attrgetter(attr) for _, attr, _, _ in FIELDS}
_ARGS = attrgetter("args")


ASK_PYTHON = -2.0  # what the compiled reader writes for a spelling it leaves to the reference readers


class GpuArgs:
    """Collects the fields of GPU activities chunk by chunk; `columns` lays them out by final event row.

    `accel`: the compiled `_columns` module (bound to the struct layout), or None for the reference readers.
    """

    def __init__(self, accel: Any = None) -> None:
        self._accel = accel
        self._rows: list[np.ndarray] = []
        self._values: list[np.ndarray] = []

    def add(self, events: list, kernel_rows: np.ndarray, copy_rows: np.ndarray, off: int,
            scanned: Optional[np.ndarray] = None) -> None:
        """Read the fields of the chunk's kernels and copies (chunk indices; the chunk starts at raw row `off`).

        `scanned`: the fields as read from the text (`_scan.c`): records of ("row" in the chunk, ascending; "values", one
        per field, ASK_PYTHON where the event's struct in `events` has to be read instead) of the events with any.
        """
        for rows, on_kernels in ((kernel_rows, True), (copy_rows, False)):
            if rows.size == 0:
                continue
            values = self._read(events, rows, on_kernels) if scanned is None else self._pick(events, rows, on_kernels, scanned)
            present = ~np.isnan(values).all(axis=1)
            self._rows.append(rows[present] + off)
            self._values.append(values[present])

    def state(self) -> tuple:
        """What another process's collector hands `absorb` (rows from its own raw row 0)."""
        return self._rows, self._values

    def absorb(self, state: tuple, off: int) -> None:
        """Append another collector's rows and values, its raw row 0 being raw row `off` here."""
        rows, values = state
        self._rows += [r + off for r in rows]
        self._values += values

    def _read(self, events: list, rows: np.ndarray, on_kernels: bool) -> np.ndarray:
        """(rows, len(FIELDS)) values, NaN where absent or unusable."""
        if self._accel is not None:
            values = np.empty((rows.size, len(FIELDS)))
            self._accel.gpu_fields(events, rows.astype(np.int64), on_kernels, values)
            odd = np.flatnonzero((values == ASK_PYTHON).any(axis=1))
            if odd.size:
                values[odd] = self._reference(events, rows[odd], on_kernels)
            return values
        return self._reference(events, rows, on_kernels)

    def _pick(self, events: list, rows: np.ndarray, on_kernels: bool, scanned: np.ndarray) -> np.ndarray:
        """`_read`'s values from the scanned fields (those of the other kind of activity blanked)."""
        values = np.full((rows.size, len(FIELDS)), np.nan)
        if scanned.size:
            at = np.minimum(np.searchsorted(scanned["row"], rows), scanned.size - 1)
            hit = scanned["row"][at] == rows
            values[hit] = scanned["values"][at[hit]]
        for k, (_, _, _, kernel_field) in enumerate(FIELDS):
            if kernel_field != on_kernels:
                values[:, k] = np.nan
        odd = np.flatnonzero((values == ASK_PYTHON).any(axis=1))
        if odd.size:
            values[odd] = self._reference(events, rows[odd], on_kernels)
        return values

    @staticmethod
    def _reference(events: list, rows: np.ndarray, on_kernels: bool) -> np.ndarray:
        picked = itemgetter(*rows.tolist())(events)
        args = list(map(_ARGS, picked if rows.size > 1 else (picked,)))
        values = np.full((len(args), len(FIELDS)), np.nan)
        for k, (_, attr, read, kernel_field) in enumerate(FIELDS):
            if kernel_field == on_kernels:
                values[:, k] = read(list(map(_GET[attr], args)))
        return values

    def columns(self, final_raw_rows: np.ndarray, candidates: Optional[np.ndarray] = None) -> dict[str, np.ndarray]:
        """The model's `gpu_arg_*` columns; `final_raw_rows[k]` is the raw row that became event row k (distinct).
        `candidates`: the event rows that may be activities read here (the kernels and copies, ascending; default:
        every event row). Their raw rows are sorted and searched, not every event row inverted (at 10^7 events an
        80 MB table and as many scattered writes: 0.7 s)."""
        raw = np.concatenate(self._rows) if self._rows else np.zeros(0, np.int64)
        values = np.concatenate(self._values) if self._values else np.zeros((0, len(FIELDS)))
        if candidates is None:
            candidates = np.arange(final_raw_rows.size)
        known = final_raw_rows[candidates]
        by_raw = np.argsort(known, kind="stable")
        known = known[by_raw]
        event_row = np.full(raw.size, -1, np.int64)
        if known.size and raw.size:
            at = np.minimum(np.searchsorted(known, raw), known.size - 1)
            found = np.flatnonzero(known[at] == raw)
            event_row[found] = candidates[by_raw[at[found]]]
        kept = np.flatnonzero(event_row >= 0)
        kept = kept[np.argsort(event_row[kept], kind="stable")]  # kernels and copies of a chunk interleave
        values = values.take(kept, axis=0)  # whole rows: a third of a mask and a gather's time on (n, 7)
        return {"gpu_arg_row": event_row[kept].astype(np.int64),
                **{f"gpu_arg_{name}": np.where(np.isnan(values[:, k]), -1.0, values[:, k]) for k, (name, _, _, _) in enumerate(FIELDS)}}
