"""Views built from many spans' digests, kept while the same digests come back (`TraceService.derived`)."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Callable


class Derived:
    """At most `entries` values by key, the least recently used dropped, each kept with the inputs it was built from."""

    def __init__(self, lock: threading.RLock, entries: int) -> None:
        self._lock = lock
        self._entries = entries
        self._held: OrderedDict[Any, tuple[tuple, Any]] = OrderedDict()

    def get(self, key: Any, inputs: Sequence[Any], build: Callable[[], Any]) -> Any:
        """`build()`, a value made only from `inputs` (digests: a reload replaces a span's digest, never
        changes it), kept under `key` (hashable, equal for equal requests) while the same objects come back,
        so a view of many digests is built once per set of loads, not once per request (the ranks view of 64
        ranks costs ~15 ms). The value is shared between callers: they must not change it."""
        inputs = tuple(inputs)
        with self._lock:
            held = self._held.get(key)
            if held is not None and len(held[0]) == len(inputs) and all(a is b for a, b in zip(held[0], inputs)):
                self._held.move_to_end(key)
                return held[1]
        value = build()  # outside the lock: loads publishing meanwhile only make the next request build again
        with self._lock:
            self._held[key] = (inputs, value)
            self._held.move_to_end(key)
            while len(self._held) > self._entries:
                self._held.popitem(last=False)
        return value
