"""Find op and kernel occurrences by name: every event whose name contains a query, in time order.

The index keeps the searchable rows (CPU ops, annotations, kernels, memcpys, memsets) sorted by start time
and the lower-cased names once, so a query costs one scan of the distinct names plus one table lookup per
searchable row.
"""
from __future__ import annotations

import msgspec
import numpy as np

from ...trace.kinds import Kind
from ...trace.model import TraceModel, freeze_arrays, unique

SEARCH_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
MAX_QUERY_CHARS = 200


class SearchIndex(msgspec.Struct, frozen=True):
    """Searchable rows in (start, row) order and the lower-cased names."""

    rows: np.ndarray  # int64 model rows, by start time
    name_id: np.ndarray  # int32 their name ids
    lowered: tuple[str, ...]  # model.names, lower-cased

    def __post_init__(self) -> None:
        freeze_arrays(self)

    @staticmethod
    def build(model: TraceModel) -> SearchIndex:
        rows = np.flatnonzero(model.kind_in(SEARCH_KINDS))
        rows = rows[np.argsort(model.ts_ns[rows], kind="stable")]
        return SearchIndex(rows, model.name_id[rows], tuple(n.lower() for n in model.names))


class Matches(msgspec.Struct, frozen=True):
    """The occurrences of a query: `rows` (model rows, by start time) and the distinct names matched."""

    rows: np.ndarray
    name_ids: np.ndarray


def find(index: SearchIndex, query: str) -> Matches:
    """Every searchable event whose name contains `query` (case-insensitive; surrounding spaces ignored).

    An empty query matches nothing.
    """
    needle = query.strip().lower()[:MAX_QUERY_CHARS]
    if not needle:
        return Matches(np.zeros(0, np.int64), np.zeros(0, np.int32))
    ids = np.array([i for i, name in enumerate(index.lowered) if needle in name], np.int64)
    if ids.size == 0:
        return Matches(np.zeros(0, np.int64), np.zeros(0, np.int32))
    table = np.zeros(len(index.lowered), bool)
    table[ids] = True
    hit = table[index.name_id]
    return Matches(index.rows[hit], unique(index.name_id[hit]).astype(np.int32))
