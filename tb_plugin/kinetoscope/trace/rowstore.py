"""The builder's per-event raw columns (`RowStore`): each piece's rows kept, joined or copied into reserved columns,
until `ColumnBuilder.finish` takes each whole column once.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

# The raw columns with a value per event: each piece's are copied into one buffer per column as the piece is added
# (`RowStore`); the others (a memory event's args, a flow's id) stay per piece until `finish`.
_ROW_KEYS = ("ph", "name", "cat", "pid", "tid", "ts", "dur", "correlation", "external_id", "device", "stream", "shape",
             "frame", "source_row")
ROW_DTYPES = {key: np.int8 if key == "ph" else np.float64 if key in ("ts", "dur") else np.int64 for key in _ROW_KEYS}
# The interned columns hold the row where each value was first seen (-1: none): within int32 wherever the event
# budget is (default 400M events), so the store keeps them in half the bytes (`RowStore(narrow=True)`: 240 MB less
# to copy, fault in and hold at 10^7 events).
_FIRST_ROW_KEYS = ("name", "cat", "pid", "tid", "shape", "frame")
NARROW_ROWS = 1 << 31


_MIN_ROWS = 1 << 16  # the least rows the reserved columns are sized for, and the least they grow by
_PROJECTION_MARGIN = 4  # reserved: the rows projected for the whole text, and a quarter more (pages never written
# cost nothing; a projection short of the rows costs a copy of every row so far)
_PROJECTION_SAMPLE = 1 << 20  # the text read before rows per byte are projected (a trace's head is mostly metadata)


def _reserve(rows: int, dtype) -> np.ndarray:
    """An uninitialised column of `rows` (its pages are faulted in as rows are written)."""
    return np.empty(rows, dtype)


# Text from which the row columns are reserved (`RowStore`) instead of joined: a joined column is the pieces' parts,
# copied, then their concatenation, both alive at once when it is taken (1.2 GB of fresh pages and a serial 0.7 s
# at 4 GB of text); a reserved one is one copy of each piece's rows.
RESERVED_TEXT_BYTES = 2 << 30


class RowStore:
    """The per-event raw columns of the pieces added so far; `finish` takes each whole column once.

    Joined (text under RESERVED_TEXT_BYTES, or of unknown length): each piece's parts are kept, and a column is their
    concatenation when taken. Reserved: each piece's rows are copied, as it is added, into one array per column, sized
    for the rows the whole text is projected to hold (the rows so far per byte of text so far, and a margin); a piece
    that does not fit grows the columns (a copy) to a new projection, by a quarter at least. The pages past the last
    row are never touched. The arrays are numpy's, so malloc's: where the process holds freed memory
    (`heap.hold_freed`, the CLI and the decoder child), the analyses reuse their pages once the model is built instead
    of faulting in fresh ones (at 4 GB of text, 0.8 GB fewer: anonymous mappings, which these were, go back to the
    system when freed).
    """

    def __init__(self, text_bytes: Optional[int] = None, narrow: bool = False, limit: Optional[int] = None) -> None:
        """`text_bytes`: the length of the whole text, when known; `limit`: the most rows it may hold (the event
        budget: no projection reserves more)."""
        self.reserved = text_bytes is not None and text_bytes >= RESERVED_TEXT_BYTES
        self.text_bytes, self.limit = text_bytes or 0, limit
        self.dtypes = {key: np.int32 if narrow and key in _FIRST_ROW_KEYS else dtype for key, dtype in ROW_DTYPES.items()}
        self.n = self.cap = 0
        self._read = 0  # bytes of text the rows so far came from
        self._columns: dict[str, np.ndarray] = {}
        self._parts: list[dict[str, np.ndarray]] = []

    def append(self, cols: dict[str, np.ndarray], n: int, text_bytes: int = 0) -> None:
        """Add one piece's `n` rows of every row column (`cols`, keyed by `_ROW_KEYS`) after the rows so far;
        `text_bytes`: the length of the piece's text (what the projection of a reserved store reads)."""
        self._read += max(text_bytes, 0)
        if not n:
            return
        if not self.reserved:  # a view of the scan's buffer (sized for the piece's longest events) is kept as a copy
            self._parts.append({key: cols[key] if cols[key].base is None and cols[key].dtype == self.dtypes[key]
                                else cols[key].astype(self.dtypes[key]) for key in _ROW_KEYS})
            self.n += n
            return
        if self.n + n > self.cap:
            self._grow(self.n + n)
        for key in _ROW_KEYS:
            self._columns[key][self.n:self.n + n] = cols[key]
        self.n += n

    def _grow(self, need: int) -> None:
        projected = need * self.text_bytes // self._read if self._read >= _PROJECTION_SAMPLE else need
        projected += projected // _PROJECTION_MARGIN
        if self.limit is not None:
            projected = min(projected, self.limit)
        least = max(need, self.cap + self.cap // 4, _MIN_ROWS)
        for cap in dict.fromkeys((max(least, projected), least)):
            try:
                grown = {key: _reserve(cap, dtype) for key, dtype in self.dtypes.items()}
            except MemoryError:  # a projection past what can be reserved: grown as little as it may be
                continue
            break
        else:
            raise MemoryError(f"no memory for {least:,} rows")
        for key, column in self._columns.items():
            grown[key][:self.n] = column[:self.n]
        self._columns, self.cap = grown, cap

    def take(self, key: str) -> np.ndarray:
        """A whole column (its own buffer from now on: the caller may write into it); each key is taken once."""
        if not self.reserved:
            parts = [part.pop(key) for part in self._parts if key in part]
            return np.concatenate(parts) if parts else np.zeros(0, self.dtypes[key])
        column = self._columns.pop(key, None)
        return np.zeros(0, self.dtypes[key]) if column is None else column[:self.n]

    def take_rows(self, key: str, rows: np.ndarray) -> np.ndarray:
        """`take(key)[rows]` for ascending rows; joined, gathered piece by piece: no full-length copy of a column only
        some rows of which are read (each a fresh 80 MB at 10^7 events)."""
        if self.reserved:
            return self.take(key)[rows]
        parts = [part.pop(key) for part in self._parts if key in part]
        bounds = np.cumsum([0] + [p.size for p in parts])
        cut = np.searchsorted(rows, bounds).tolist()
        out = np.empty(rows.size, self.dtypes[key])
        for k, part in enumerate(parts):
            if cut[k + 1] > cut[k]:
                out[cut[k]:cut[k + 1]] = part[rows[cut[k]:cut[k + 1]] - bounds[k]]
        return out

    def columns(self) -> dict[str, np.ndarray]:
        """Every column, rows only (for another process's builder to `absorb`)."""
        return {key: self.take(key) for key in _ROW_KEYS}
