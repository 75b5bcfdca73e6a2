"""A table's rows as plain dicts (`records`), and the stable keys of names cut for showing (`name_key`)."""
from __future__ import annotations

import hashlib
from typing import Any, Optional

import numpy as np

from ...trace.kinds import Kind
from ...trace.model import MAX_SHOWN_CHARS, TraceModel, shown
from .index import ARG_FIELDS
from .ops import OpTable


def records(model: TraceModel, table: Any) -> list[dict[str, Any]]:
    """A table's rows as plain dicts: `name` (the shown name) and every per-row field, in row order."""
    per_row = [name for name in table.__struct_fields__ if isinstance(getattr(table, name), np.ndarray)]
    extra = ["cpu_mean_ns", "gpu_mean_ns"] if isinstance(table, OpTable) else ["mean_ns"]
    columns = {key: getattr(table, key).tolist() for key in per_row + extra}
    if "kind" in columns:
        columns["kind"] = [Kind(k).name.lower() for k in columns["kind"]]
    for key in ("bytes", "bandwidth_gbps", *ARG_FIELDS):  # NaN (not recorded) as None: JSON has no NaN
        if key in columns:
            columns[key] = [None if v != v else v for v in columns[key]]
    if "frame_id" in columns:
        columns["frame"] = [model.shown_names[i] if i >= 0 else None for i in columns.pop("frame_id")]
    if "op_id" in columns:
        columns["op"] = [model.shown_names[i] if i >= 0 else None for i in columns.pop("op_id")]
    if "module_id" in columns:
        columns["module"] = [model.shown_names[i] if i >= 0 else None for i in columns.pop("module_id")]
    if "shape_id" in columns:
        columns["shapes"] = [shown(model.shape_strings[i]) if i >= 0 else None for i in columns.pop("shape_id")]
    names = [model.shown_names[i] for i in columns["name_id"]]
    rows = [{"name": name, **{key: values[i] for key, values in columns.items()}} for i, name in enumerate(names)]
    return with_name_keys(rows, [model.names[i] for i in columns["name_id"]])


def name_key(name: str) -> Optional[str]:
    """A stable id of a name cut for showing (over MAX_SHOWN_CHARS characters), None for one shown whole.

    16 hex digits of the full name's SHA-1: the same in every file, run and route, so two rows whose shown
    names are the same first 999 characters stay apart, in bounded space (a writer may put a 50 MB name in
    a trace; no answer may grow with it).
    """
    if len(name) <= MAX_SHOWN_CHARS:
        return None
    return hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def with_name_keys(rows: list[dict[str, Any]], full_names: list[str]) -> list[dict[str, Any]]:
    """`rows` (modified in place and returned) with `name_key` and `name_chars` on each row whose name was cut."""
    for row, full in zip(rows, full_names):
        key = name_key(full)
        if key is not None:
            row["name_key"], row["name_chars"] = key, len(full)
    return rows
