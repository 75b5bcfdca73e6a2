"""The profiler tables and the name search as route answers: sorted, filtered, paged, bounded, times in µs."""
from __future__ import annotations

import threading
import weakref
from typing import Any, Optional

import numpy as np

from ..analysis.core.selectors import NO_OP
from ..analysis.tables import index as T
from ..analysis.tables import kernels as TK
from ..analysis.tables import ops as TO
from ..analysis.tables import rows as TR
from ..analysis.tables.extra import EXTRA_KINDS
from ..analysis.tables.search import SearchIndex, find
from ..trace.kinds import Kind
from ..trace.model import TraceModel, shown, unique_inverse
from .extra_tables import EXTRA_SORTS
from .roofline_table import ROOFLINE_SORTS

TABLE_KINDS = ("op", "kernel", "module", *EXTRA_KINDS, "roofline")
TABLE_GROUPS = T.OP_GROUPS
TABLE_SPLITS = ("name", *TK.KERNEL_SPLITS)
_OP_KEYS = {"name": None, "calls": "calls", "cpu_total": "cpu_total_ns", "cpu_self": "cpu_self_ns",
            "cpu_mean": "cpu_mean_ns", "cpu_max": "cpu_max_ns", "gpu_self": "gpu_self_ns", "gpu_total": "gpu_total_ns",
            "gpu_mean": "gpu_mean_ns", "launches": "launches"}
_KERNEL_KEYS = {"name": None, "calls": "calls", "total": "total_ns", "mean": "mean_ns", "min": "min_ns", "max": "max_ns",
                "share": "share"}
OP_SORTS = tuple(k for key in _OP_KEYS for k in (key, f"-{key}"))
KERNEL_SORTS = tuple(k for key in _KERNEL_KEYS for k in (key, f"-{key}"))
TABLE_SORTS = tuple(dict.fromkeys(OP_SORTS + KERNEL_SORTS + EXTRA_SORTS + ROOFLINE_SORTS))
DEFAULT_SORT = {"op": "-gpu_total", "module": "-gpu_total", "kernel": "-total"}
MAX_LIMIT = 500  # rows per page: 500 rows of 1,000-character names (and 3 launchers each) stay under 2 MB
MAX_FILTER_CHARS = 200
LAUNCHERS = 3  # ops named per kernel row


_WHOLE: weakref.WeakKeyDictionary[T.TableIndex, dict] = weakref.WeakKeyDictionary()  # index -> by -> whole-trace table
_WHOLE_LOCK = threading.Lock()


def table(model: TraceModel, index: T.TableIndex, by: str, window: T.Window, group: str = "name", split: str = "name"):
    """The full table of one kind (`op`, `kernel` or `module`) for a window (None: the whole trace, computed once
    per index: the tables are immutable, and the whole trace is what the panel opens on)."""
    key = (by, group, split)
    if window is None:
        with _WHOLE_LOCK:
            cached = _WHOLE.get(index, {}).get(key)
        if cached is None:
            cached = _compute(model, index, by, None, group, split)
            with _WHOLE_LOCK:
                _WHOLE.setdefault(index, {})[key] = cached
        return cached
    return _compute(model, index, by, window, group, split)


def _compute(model: TraceModel, index: T.TableIndex, by: str, window: T.Window, group: str, split: str = "name"):
    if by == "kernel":
        return TK.kernel_table(model, index, window, split=split)
    if by == "module":
        return TO.module_table(model, index, window)
    return TO.op_table(model, index, window, group=group)


def _us(values: np.ndarray) -> list[float]:
    return (np.asarray(values, np.int64) / 1e3).tolist()


def _order(model: TraceModel, tab: Any, by: str, sort: str, query: Optional[str]) -> np.ndarray:
    """Row positions kept by the name filter, in the requested order (ties keep the table's own order)."""
    keep = np.arange(tab.name_id.size)
    if query:
        needle = query.strip().lower()[:MAX_FILTER_CHARS]
        frames = tab.frame_id.tolist() if getattr(tab, "frame_id", None) is not None else [-1] * tab.name_id.size
        if getattr(tab, "module_id", None) is not None:  # a module's name is a name, as a frame's is
            frames = tab.module_id.tolist()
        shapes = tab.shape_id.tolist() if getattr(tab, "shape_id", None) is not None else [-1] * tab.name_id.size
        keep = np.array([i for i, (n, f, sh) in enumerate(zip(tab.name_id.tolist(), frames, shapes))
                         if needle in model.names[n].lower() or (f >= 0 and needle in model.names[f].lower())
                         or (sh >= 0 and needle in model.shape_strings[sh].lower())], np.int64)
    key = sort.lstrip("-")
    keys = _KERNEL_KEYS if by == "kernel" else _OP_KEYS
    if key not in keys:
        raise ValueError(f"sort {sort!r} does not apply to the {by} table")
    if keys[key] is None:
        names = [model.names[n].lower() for n in tab.name_id[keep].tolist()]
        order = np.array(sorted(range(len(names)), key=names.__getitem__), np.int64)
        order = order[::-1] if sort.startswith("-") else order
    else:
        values = getattr(tab, keys[key])[keep]
        order = np.argsort(-values if sort.startswith("-") else values, kind="stable")
    return keep[order]


def tables_view(model: TraceModel, index: T.TableIndex, *, by: str = "op", window: T.Window = None,
                sort: Optional[str] = None, query: Optional[str] = None, offset: int = 0,
                limit: int = 100, group: str = "name", split: str = "name") -> dict[str, Any]:
    """One page of a profiler table (the op, kernel and module tables; the others: `extra_tables.extra_view`).

    Args:
        model: the trace; index: its `TableIndex`.
        by: `op`, `kernel` or `module`.
        window: absolute (start_ns, end_ns), or None for the whole trace.
        sort: a key of OP_SORTS / KERNEL_SORTS (`-` first: descending); None: the table's default.
        query: keep names (or, grouped, frames, shapes or modules) containing this (case-insensitive).
        offset, limit: the page (limit at most MAX_LIMIT).
        group: `name`; op table only: `stack` (one row per (op, innermost user Python frame)), `shape` (one
            row per (op, input shapes)) or `module` (one row per (op, innermost nn.Module)).
        split: `name`; kernel table only: `launch` (one row per (kernel, grid, block, registers, shared memory))
            or `op_launch` (also per launching op: rows carry `op`).

    Raises:
        ValueError: a sort key that does not apply to this table, or `group=stack|shape` on another table.
    """
    if group != "name" and by != "op":
        raise ValueError(f"group={group} applies to the op table, not by={by!r}")
    if split != "name" and by != "kernel":
        raise ValueError(f"split={split} applies to the kernel table, not by={by!r}")
    tab = table(model, index, by, window, group, split)
    sort = sort or DEFAULT_SORT[by]
    kept = _order(model, tab, by, sort, query)
    page = kept[offset: offset + min(limit, MAX_LIMIT)]
    base = model.start_ns
    out: dict[str, Any] = {
        "by": by, "group": group, "split": split, "sort": sort, "filter": query or "", "total": int(kept.size),
        "rows_in_window": int(tab.name_id.size),
        "offset": offset, "limit": limit,
        "window": None if window is None else {"start_us": (window[0] - base) / 1e3, "end_us": (window[1] - base) / 1e3}}
    names = [model.shown_names[i] for i in tab.name_id[page].tolist()]
    if by == "kernel":
        out["device_us"] = tab.device_ns / 1e3
        out["rows"] = _kernel_rows(model, index, tab, page, names, window)
    else:
        out.update(linked_gpu_us=tab.linked_gpu_ns / 1e3, top_level_gpu_us=tab.top_level_gpu_ns / 1e3,
                   unowned_gpu_us=tab.unowned_gpu_ns / 1e3)
        columns = {"calls": tab.calls[page].tolist(), **{f"{k}_us": _us(getattr(tab, f"{k}_ns")[page]) for k in (
            "cpu_total", "cpu_self", "cpu_mean", "cpu_max", "gpu_self", "gpu_total", "gpu_mean")},
            "launches": tab.launches[page].tolist()}
        if tab.frame_id is not None:
            columns["frame"] = [model.shown_names[f] if f >= 0 else None for f in tab.frame_id[page].tolist()]
        if tab.module_id is not None:
            columns["module"] = [model.shown_names[m] if m >= 0 else None for m in tab.module_id[page].tolist()]
        if tab.shape_id is not None:
            columns["shapes"] = [shown(model.shape_strings[i]) if i >= 0 else None for i in tab.shape_id[page].tolist()]
        out["rows"] = [{"name": name, **{k: v[i] for k, v in columns.items()}} for i, name in enumerate(names)]
    TR.with_name_keys(out["rows"], [model.names[i] for i in tab.name_id[page].tolist()])
    return out


def _kernel_rows(model: TraceModel, index: T.TableIndex, tab: TK.KernelTable, page: np.ndarray, names: list[str],
                 window: T.Window) -> list[dict[str, Any]]:
    launchers = TK.kernel_launchers(model, index, tab.name_id[page], window, top=LAUNCHERS)
    columns = {"calls": tab.calls[page].tolist(), "total_us": _us(tab.total_ns[page]), "mean_us": _us(tab.mean_ns[page]),
               "min_us": _us(tab.min_ns[page]), "max_us": _us(tab.max_ns[page]),
               "share": np.round(tab.share[page], 6).tolist(), "tensor_core": tab.tensor_core[page].tolist(),
               **{key: [None if v != v else round(v, 3) for v in getattr(tab, key)[page].tolist()]
                  for key in ("bytes", "bandwidth_gbps", *T.ARG_FIELDS[1:])}}
    if tab.op_id is not None:
        columns["op"] = [model.shown_names[o] if o >= 0 else NO_OP for o in tab.op_id[page].tolist()]
    rows = []
    for i, (name, name_id, kind) in enumerate(zip(names, tab.name_id[page].tolist(), tab.kind[page].tolist())):
        by_op = [{"name": model.shown_names[o] if o >= 0 else NO_OP, "gpu_us": ns / 1e3, "calls": n}
                 for o, ns, n in launchers.get(name_id, [])]
        rows.append({"name": name, "kind": Kind(kind).name.lower(), **{k: v[i] for k, v in columns.items()},
                     "launched_by": by_op})
    return rows


MAX_SEARCH_LIMIT = 1000
MAX_FULL_NAME_CHARS = 200_000  # a `name` answer stays under 1 MB however long the trace's name (UTF-8: 4 bytes a character at most)


def full_name_view(model: TraceModel, key: str) -> Optional[dict[str, Any]]:
    """The full text of a name that routes cut (`name_key` of a table row), up to MAX_FULL_NAME_CHARS characters.

    Returns `{"key", "name", "chars", "cut"}` (`cut`: the answer holds the first MAX_FULL_NAME_CHARS characters
    only), or None when no name of the trace has that key.
    """
    for name in model.names:
        if TR.name_key(name) == key:
            return {"key": key, "name": name[:MAX_FULL_NAME_CHARS], "chars": len(name), "cut": len(name) > MAX_FULL_NAME_CHARS}
    return None


def search_view(model: TraceModel, index: SearchIndex, query: str, *, offset: int = 0, limit: int = 100) -> dict[str, Any]:
    """The occurrences of a name query, in time order: `total` (the m of "n of m") and one page of them.

    Each occurrence: its event `row`, `lane` (the lanes view's lane index), `start_us`, `dur_us` and `name`
    (an index into the page's `names`).
    """
    matches = find(index, query)
    page = matches.rows[offset: offset + min(limit, MAX_SEARCH_LIMIT)]
    ids, name_ix = unique_inverse(model.name_id[page])
    base = model.start_ns
    return {"query": query, "total": int(matches.rows.size), "names_matched": int(matches.name_ids.size),
            "offset": offset, "limit": limit, "names": [model.shown_names[i] for i in ids.tolist()],
            "hits": {"row": page.tolist(), "lane": model.lane[page].tolist(),
                     "start_us": ((model.ts_ns[page] - base) / 1e3).tolist(), "dur_us": _us(model.dur_ns[page]),
                     "name": name_ix.reshape(-1).tolist()}}
