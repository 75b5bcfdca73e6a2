"""The module tree, memory per op, user-annotation and kernel-sequence tables as route answers: filtered, sorted,
paged, bounded (`analysis/tables/extra.py` computes the rows; the whole-trace ones once per index)."""
from __future__ import annotations

import threading
import weakref
from typing import Any, Optional

import numpy as np

from ..analysis.tables.extra import EXTRA_KINDS, MEMORY_FIELDS, extra_rows
from ..analysis.tables.index import TableIndex, Window
from ..trace.model import TraceModel

# sort keys per table (`-` first: descending); `name` sorts by name. The module tree keeps its preorder.
EXTRA_SORT_KEYS = {
    "memory": ("name", "device", *(f[:-6] if f.endswith("_bytes") else f for f in MEMORY_FIELDS)),
    "annotation": ("name", "count", "total", "mean", "min", "max", "std"),
    "sequences": ("name", "length", "occurrences", "total", "mean"),
    "module_tree": (),
}
EXTRA_SORTS = tuple(dict.fromkeys(k for keys in EXTRA_SORT_KEYS.values() for key in keys for k in (key, f"-{key}")))
DEFAULT_EXTRA_SORT = {"memory": None, "annotation": "-total", "sequences": "-total", "module_tree": None}
MAX_TREE_NAME = 200  # characters of a module name in the tree (paths stay short)

_WHOLE: weakref.WeakKeyDictionary[TableIndex, dict] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _rows(model: TraceModel, index: TableIndex, by: str, window: Window, options: dict[str, Any]):
    """The table's rows and totals; the whole trace's computed once per (index, kind, options)."""
    if window is not None:
        return extra_rows(model, index, by, window, **options)
    key = (by, tuple(sorted(options.items())))
    with _LOCK:
        cached = _WHOLE.get(index, {}).get(key)
    if cached is None:
        cached = extra_rows(model, index, by, None, **options)
        with _LOCK:
            _WHOLE.setdefault(index, {})[key] = cached
    return cached


def _field(by: str, key: str) -> str:
    if by == "memory" and key not in ("name", "device", "calls") and not key.endswith("count"):
        return f"{key}_bytes"
    if by in ("annotation", "sequences") and key in ("total", "mean", "min", "max", "std"):
        return f"{key}_us"
    return key


def extra_view(model: TraceModel, index: TableIndex, *, by: str, window: Window = None, sort: Optional[str] = None,
               query: Optional[str] = None, offset: int = 0, limit: int = 100, max_limit: int = 500,
               **options: Any) -> dict[str, Any]:
    """One page of one of EXTRA_KINDS (options: `side`, `scope` for annotations; `min_len`, `max_len`, `top`,
    `root` (HTA's op-rooted patterns) for sequences). The module tree's page is a slice of its preorder (`index`, `parent` and `depth` place
    each row); a filter keeps the nodes whose name matches and, for the tree, their ancestors.

    Raises:
        ValueError: a kind, sort key or option that does not apply.
    """
    if by not in EXTRA_KINDS:
        raise ValueError(f"unknown table {by!r}")
    wanted = {"annotation": ("side", "scope"), "sequences": ("min_len", "max_len", "top", "root")}.get(by, ())
    rows, totals = _rows(model, index, by, window, {k: v for k, v in options.items() if k in wanted})
    sort = sort or DEFAULT_EXTRA_SORT[by]
    kept = list(range(len(rows)))
    if query:
        needle = query.strip().lower()[:200]
        kept = [i for i in kept if needle in rows[i]["name"].lower()]
        if by == "module_tree":
            kept = _with_ancestors(rows, kept)
    if sort:
        key = sort.lstrip("-")
        if key not in EXTRA_SORT_KEYS[by]:
            raise ValueError(f"sort {sort!r} does not apply to the {by} table")
        field = _field(by, key)
        values = [rows[i][field].lower() if isinstance(rows[i][field], str) else rows[i][field] for i in kept]
        order = sorted(range(len(kept)), key=values.__getitem__, reverse=sort.startswith("-"))
        kept = [kept[j] for j in order]
    answer = table_page(model, by, sort or "", query, rows, kept, totals, window, offset, limit, max_limit,
                        {k: options[k] for k in wanted if k in options})
    if by == "module_tree":
        for row in answer["rows"]:
            row["name"] = row["name"][:MAX_TREE_NAME]
    return answer


def table_page(model: TraceModel, by: str, sort: str, query: Optional[str], rows: list[dict[str, Any]], kept: list[int],
               totals: dict[str, Any], window: Window, offset: int, limit: int, max_limit: int,
               options: dict[str, Any]) -> dict[str, Any]:
    """The route's answer for one page of a table: the rows `kept` (filtered, in order) from `offset`, at most
    `min(limit, max_limit)` of them (copies), with the table's envelope."""
    base = model.start_ns
    return {"by": by, "sort": sort, "filter": query or "", "total": len(kept), "rows_in_window": len(rows),
            "offset": offset, "limit": limit, "totals": totals, "options": options,
            "window": None if window is None else {"start_us": (window[0] - base) / 1e3, "end_us": (window[1] - base) / 1e3},
            "rows": [dict(rows[i]) for i in kept[offset: offset + min(limit, max_limit)]]}


def _with_ancestors(rows: list[dict[str, Any]], kept: list[int]) -> list[int]:
    """The kept tree rows and every ancestor of them, in preorder."""
    keep = np.zeros(len(rows), bool)
    for i in kept:
        while i >= 0 and not keep[i]:
            keep[i] = True
            i = rows[i]["parent"]
    return np.flatnonzero(keep).tolist()
