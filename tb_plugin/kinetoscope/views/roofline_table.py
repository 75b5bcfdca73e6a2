"""The roofline table (`analysis/roofline/figures.py`: one row per op name, input dims and input types) as a route
answer: filtered, sorted, paged, bounded, in the envelope of the other extra tables (`extra_tables.extra_view`)."""
from __future__ import annotations

from typing import Any, Optional

from ..analysis.roofline.figures import Roofline, roofline_rows, whole_rows
from ..analysis.tables.index import Window
from ..trace.model import TraceModel
from .extra_tables import table_page

# sort key -> row field (`-` first: descending; None sorts last either way)
ROOFLINE_SORT_KEYS = {"name": "name", "category": "category", "calls": "calls", "kernel": "kernel_us",
                      "flops": "flops", "bytes": "bytes", "tflops": "achieved_tflops", "tbps": "achieved_tbps",
                      "intensity": "intensity", "roof_pct": "roof_pct", "roof": "roof_us"}
ROOFLINE_SORTS = tuple(k for key in ROOFLINE_SORT_KEYS for k in (key, f"-{key}"))
DEFAULT_ROOFLINE_SORT = "-kernel"


def roofline_view(model: TraceModel, roof: Roofline, *, window: Window = None, sort: Optional[str] = None,
                  query: Optional[str] = None, offset: int = 0, limit: int = 100, max_limit: int = 500) -> dict[str, Any]:
    """One page of the roofline table: `by`, `sort`, `filter`, `total`, `rows_in_window`, `offset`, `limit`,
    `window`, `totals`, `options` and `rows` (a filter matches the op name, its category or its kernels' names).

    Raises:
        ValueError: a sort key that does not apply.
    """
    rows, totals = whole_rows(model, roof) if window is None else roofline_rows(model, roof, window)
    sort = sort or DEFAULT_ROOFLINE_SORT
    key = sort.lstrip("-")
    if key not in ROOFLINE_SORT_KEYS:
        raise ValueError(f"sort {sort!r} does not apply to the roofline table (one of {', '.join(ROOFLINE_SORTS)})")
    kept = list(range(len(rows)))
    if query:
        needle = query.strip().lower()[:200]
        kept = [i for i in kept if needle in rows[i]["name"].lower() or needle == rows[i]["category"]
                or any(needle in k["name"].lower() for k in rows[i]["kernels"])]
    field, descending = ROOFLINE_SORT_KEYS[key], sort.startswith("-")
    present = [i for i in kept if rows[i][field] is not None]
    absent = [i for i in kept if rows[i][field] is None]
    present.sort(key=lambda i: rows[i][field].lower() if isinstance(rows[i][field], str) else rows[i][field],
                 reverse=descending)
    return table_page(model, "roofline", sort, query, rows, present + absent, totals, window, offset, limit, max_limit, {})
