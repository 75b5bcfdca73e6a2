"""The summaries and tables the builder reads from event args chunk by chunk: Kineto's event numbers (`EventIndex`)
and the collective fields (`CollectiveFields`), and the reading of args' JSON text (Input Dims, Call stack frames).
"""
from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any, Optional

import msgspec
import numpy as np

from .kinds import is_collective_name, is_comm_kernel_name


class EventIndex:
    """How many complete events carry Kineto's event number (`Ev Idx`), and the index spaces they fill.

    Kineto numbers CPU ops and Python frames in index spaces of their own (`with_stack=True` puts the
    frames ~30 million numbers above the ops), and a file cut out of a longer profile starts at an offset.
    The summary keeps the range of the numbers and its SPACE_CUTS largest jumps (of MIN_JUMP or more) between consecutive
    numbers, so the verdict can judge coverage inside each space (`analysis.sufficiency.index_spaces`):
    sampling leaves holes everywhere, a jump between spaces leaves one. Only the summary is kept: a column
    would cost 8 bytes per event. Kineto writes the numbers in ascending file order, so sorting a chunk is
    cheap; a jump seen inside one chunk is kept only when no other chunk has numbers inside it.
    """

    SPACE_CUTS = 8  # the largest gaps kept: far more index spaces than a writer makes, far fewer than sampling's holes
    MIN_JUMP = 100  # a jump between spaces skips at least this many numbers (shorter holes are holes of one space)

    def __init__(self) -> None:
        self.count, self.low, self.high = 0, None, None
        self._chunks: list[tuple[int, int, int]] = []  # (count, min, max) per chunk with numbers
        self._gaps: list[tuple[int, int, int, int]] = []  # (chunk, before, after, numbers <= before in the chunk)

    def add(self, values: np.ndarray) -> None:
        values = values[values >= 0]
        if not values.size:
            return
        ordered = np.sort(values)
        gaps = np.diff(ordered)
        floor = self.MIN_JUMP
        if gaps.size > self.SPACE_CUTS:  # strictly above the next largest: ties never depend on the chunking
            floor = max(floor, int(np.partition(gaps, gaps.size - self.SPACE_CUTS - 1)[gaps.size - self.SPACE_CUTS - 1]) + 1)
        top = np.flatnonzero(gaps >= floor)
        chunk = len(self._chunks)
        self._gaps += [(chunk, int(ordered[i]), int(ordered[i + 1]), int(i) + 1) for i in top.tolist()]
        low, high = int(ordered[0]), int(ordered[-1])
        self._chunks.append((int(values.size), low, high))
        self.count += int(values.size)
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)

    def state(self) -> tuple:
        """What another process's index hands `absorb`."""
        return self.count, self.low, self.high, self._chunks, self._gaps

    def absorb(self, state: tuple) -> None:
        """Append another index's chunks, as if they had been added here after ours."""
        count, low, high, chunks, gaps = state
        self._gaps += [(chunk + len(self._chunks), before, after, below) for chunk, before, after, below in gaps]
        self._chunks += chunks
        if count:
            self.count += count
            self.low = low if self.low is None else min(self.low, low)
            self.high = high if self.high is None else max(self.high, high)

    def spaces(self) -> list[list[int]]:
        """`[first, last, count]` per index space, ascending: the range cut at the SPACE_CUTS largest true gaps."""
        chunks = np.array(self._chunks, np.int64).reshape(-1, 3)
        order = np.argsort(chunks[:, 1], kind="stable")
        between = [(-1, int(chunks[a, 2]), int(chunks[b, 1]), 0) for a, b in zip(order[:-1].tolist(), order[1:].tolist())
                   if chunks[b, 1] - chunks[a, 2] >= self.MIN_JUMP]
        gaps = np.array(self._gaps + between, np.int64).reshape(-1, 4)
        inside = (chunks[None, :, 1] < gaps[:, 2, None]) & (chunks[None, :, 2] > gaps[:, 1, None])
        inside[np.flatnonzero(gaps[:, 0] >= 0), gaps[gaps[:, 0] >= 0, 0]] = False  # a chunk's own gap
        gaps = gaps[~inside.any(axis=1)]
        gaps = gaps[np.argsort(gaps[:, 2] - gaps[:, 1], kind="stable")[::-1][:self.SPACE_CUTS]]
        gaps = gaps[np.argsort(gaps[:, 1], kind="stable")]
        below = [int(chunks[chunks[:, 2] <= before, 0].sum()) + int(own) for _, before, _, own in gaps.tolist()]
        firsts, lasts = [self.low] + gaps[:, 2].tolist(), gaps[:, 1].tolist() + [self.high]
        counts = np.diff([0] + below + [self.count]).tolist()
        return [[f, t, c] for f, t, c in zip(firsts, lasts, counts)]

    def meta(self) -> dict[str, Any]:
        """`{"event_index": {"count", "min", "max", "spaces"}}`, or nothing when no event is numbered."""
        if not self.count:
            return {}
        return {"event_index": {"count": self.count, "min": self.low, "max": self.high, "spaces": self.spaces()}}


class CollectiveFields:
    """The collective fields (`decode.Args.seq` ...) of the few events that carry them, read per chunk.

    Only events named like a collective (`kinds.is_collective_name`) or an NCCL/RCCL kernel are looked at:
    the names are checked once each, as they are first seen, so a trace without collectives pays nothing.
    """

    MAX_STRING = 200  # characters of a process group, collective or dtype name

    def __init__(self) -> None:
        self._checked = 0  # names of the name table checked so far
        self._first_rows: list[int] = []  # first-seen rows of collective names
        self.rows: list[int] = []
        self.values: list[tuple] = []
        self._strings: dict[str, int] = {}

    def add(self, events: list, name_first: np.ndarray, names: dict, off: int) -> None:
        if len(names) > self._checked:
            for name, first in itertools.islice(names.items(), self._checked, None):
                if isinstance(name, str) and (is_collective_name(name) or is_comm_kernel_name(name)):
                    self._first_rows.append(first)
            self._checked = len(names)
        if not self._first_rows:
            return
        for i in np.flatnonzero(np.isin(name_first, self._first_rows)).tolist():
            a = events[i].args
            fields = (a.seq, a.in_nelems, a.out_nelems, a.group_size, a.comms_id, a.src_rank, a.dst_rank, a.pg_name,
                      a.coll_name, a.dtype, a.pg_desc, a.pg_ranks)
            if any(v is not None for v in fields):
                self.rows.append(off + i)
                self.values.append(tuple(map(_int_field, fields[:_INTS])) + tuple(map(self._string, fields[_INTS:-1]))
                                   + (self._string(_ranks_text(fields[-1])),))

    def state(self) -> tuple:
        """What another process's collector hands `absorb` (rows from its own raw row 0)."""
        return self.rows, self.values, tuple(self._strings)

    def absorb(self, state: tuple, off: int) -> None:
        """Append another collector's rows (its raw row 0 being raw row `off` here), its strings re-interned."""
        rows, values, strings = state
        ids = [self._strings.setdefault(s, len(self._strings)) for s in strings]
        self.rows += [row + off for row in rows]
        self.values += [v[:_INTS] + tuple(-1 if s < 0 else ids[s] for s in v[_INTS:]) for v in values]

    def _string(self, value: Any) -> int:
        if not isinstance(value, str):
            return -1
        return self._strings.setdefault(value[:self.MAX_STRING], len(self._strings))

    def columns(self, final_raw_rows: np.ndarray) -> dict[str, Any]:
        """The model's coll_ columns; `final_raw_rows[k]` is the raw row that became event row k."""
        raw = np.array(self.rows, np.int64)
        values = np.array(self.values, np.int64).reshape(-1, _INTS + 5)
        if raw.size:
            where = np.full(int(raw.max()) + 1, -1, np.int64)  # raw row -> event row, for these rows only
            hit = final_raw_rows <= raw.max()
            where[final_raw_rows[hit]] = np.flatnonzero(hit)
            event_row = where[raw]
        else:
            event_row = raw
        kept = event_row >= 0  # complete events only (a malformed one was skipped)
        order = np.argsort(event_row[kept], kind="stable")
        values = values[kept][order]
        return {"coll_row": event_row[kept][order], "coll_seq": values[:, 0], "coll_in_nelems": values[:, 1],
                "coll_out_nelems": values[:, 2], "coll_group_size": values[:, 3], "coll_comms_id": values[:, 4],
                "coll_src_rank": values[:, 5], "coll_dst_rank": values[:, 6],
                "coll_pg": values[:, 7].astype(np.int32), "coll_name": values[:, 8].astype(np.int32),
                "coll_dtype": values[:, 9].astype(np.int32), "coll_pg_desc": values[:, 10].astype(np.int32),
                "coll_pg_ranks": values[:, 11].astype(np.int32), "coll_strings": tuple(self._strings)}


_INTS = 7  # the int fields of a collective's values (Seq ... Dst Rank), then its five strings


def _ranks_text(value: Any) -> Any:
    """A process group's ranks as text: Kineto writes a string (`"[0, 2]"`), another writer may write the list; a
    long one is cut with the digest of the whole, so two groups that differ past the cut still differ."""
    if isinstance(value, list) and len(value) <= 1 << 16 and all(type(v) is int for v in value):
        value = json.dumps(value)
    if not isinstance(value, str):
        return None
    if len(value) > CollectiveFields.MAX_STRING:
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        value = f"{value[:CollectiveFields.MAX_STRING - 40]}... sha256:{digest}"
    return value


def json_string(content: bytes) -> str:
    """A JSON string's content (escapes and all) as the string; undecodable bytes replaced."""
    try:
        return msgspec.json.decode(b'"' + content + b'"')
    except (msgspec.DecodeError, ValueError):
        return content.decode("utf-8", "replace")


def inputs_texts(text: bytes) -> tuple[str, Optional[str]]:
    """An op's inputs key (`extractors.inputs_key`: the JSON array of its Input Dims, Input type, Input Strides and
    Concrete Inputs) as `json.dumps` spells it, and its Input Dims likewise (None when absent, or when the key does
    not decode as four values: then the first text is the key itself)."""
    try:
        parts = msgspec.json.decode(text)
        if isinstance(parts, list) and len(parts) == 4:
            return json.dumps(parts, ensure_ascii=False), None if parts[0] is None else json.dumps(parts[0], ensure_ascii=False)
    except (msgspec.DecodeError, ValueError, RecursionError):
        pass
    return text.decode("utf-8", "replace"), None


def _int_field(value: Any) -> int:
    """A count or number as an int (-1 when absent or not a whole number within int64)."""
    if isinstance(value, bool):
        return -1
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and -(1 << 62) < value < (1 << 62) else -1
