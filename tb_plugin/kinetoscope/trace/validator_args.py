"""The two `args` that torch.profiler's own trace validator checks and the model has no column for.

- `wait_on_cuda_event_record_corr_id` of the `Stream Wait Event` and `Event Sync` cuda_sync events: the
  correlation of the `cudaEventRecord` they wait on (Kineto writes -1 when it lost the link).
- `Sequence number` of the `autograd::engine::evaluate_function: ...` events: each backward node's
  autograd sequence number (one backward op per number).

Only events with those names are read (names are checked once each, as they are first seen), so a trace
without them pays nothing; the values go to `TraceModel.meta` (`sync_waits`, `backward_seq`) as
`{"rows": [...], "values": [...]}` in event-row order, at most MAX_KEPT of each (`count` says how many).
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

SYNC_WAIT_NAMES = frozenset({"Stream Wait Event", "Event Sync"})
BACKWARD_PREFIX = "autograd::engine::evaluate_function:"
MAX_KEPT = 100_000  # values kept per arg: enough for any check's counts; a bound on the metadata's size


def _wanted(name: Any) -> str:
    if not isinstance(name, str):
        return ""
    if name in SYNC_WAIT_NAMES:
        return "sync_waits"
    return "backward_seq" if name.startswith(BACKWARD_PREFIX) else ""


class ValidatorArgs:
    """Collects the two args per chunk (`add`) and maps them to event rows at the end (`meta`)."""

    def __init__(self) -> None:
        self._checked = 0
        self._first: dict[str, list[int]] = {"sync_waits": [], "backward_seq": []}
        self._rows: dict[str, list[int]] = {"sync_waits": [], "backward_seq": []}
        self._values: dict[str, list[int]] = {"sync_waits": [], "backward_seq": []}

    def add(self, events: list, name_first: np.ndarray, names: dict, off: int) -> None:
        """Read the args of this chunk's events named like one of the two (`name_first`: first-seen rows)."""
        if len(names) > self._checked:
            for name, first in itertools.islice(names.items(), self._checked, None):
                key = _wanted(name)
                if key:
                    self._first[key].append(first)
            self._checked = len(names)
        for key, attr in (("sync_waits", "wait_corr"), ("backward_seq", "seq_number")):
            if not self._first[key]:
                continue
            for i in np.flatnonzero(np.isin(name_first, self._first[key])).tolist():
                value = getattr(events[i].args, attr)
                self._rows[key].append(off + i)
                self._values[key].append(value if isinstance(value, int) and not isinstance(value, bool)
                                         and -(1 << 62) < value < (1 << 62) else -1)

    def state(self) -> tuple:
        """What another process's collector hands `absorb` (rows from its own raw row 0)."""
        return self._rows, self._values

    def absorb(self, state: tuple, off: int) -> None:
        """Append another collector's rows and values, its raw row 0 being raw row `off` here."""
        rows, values = state
        for key in self._rows:
            self._rows[key] += [row + off for row in rows[key]]
            self._values[key] += values[key]

    def meta(self, final_raw_rows: np.ndarray) -> dict[str, Any]:
        """`{"sync_waits": ..., "backward_seq": ...}` for the keys met; `final_raw_rows[k]` is the raw row of event row k."""
        out = {}
        for key, raw_list in self._rows.items():
            if not raw_list:
                continue
            raw = np.array(raw_list, np.int64)
            where = np.full(int(raw.max()) + 1, -1, np.int64)
            hit = final_raw_rows <= raw.max()
            where[final_raw_rows[hit]] = np.flatnonzero(hit)
            row = where[raw]
            kept = row >= 0
            order = np.argsort(row[kept], kind="stable")[:MAX_KEPT]
            values = np.array(self._values[key], np.int64)[kept][order]
            out[key] = {"count": int(kept.sum()), "rows": row[kept][order].tolist(), "values": values.tolist()}
        return out
