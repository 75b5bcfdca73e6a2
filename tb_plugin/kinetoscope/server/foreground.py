"""The span in view loads first: while the tab waits for a span's lanes, the other loads step aside.

The tab asks for the lanes of the span it shows (`TraceService.request_lanes`); other loads are the server's own
guesses (the default span preloaded at start-up) or a panel's (a run's ranks, a run verdict, a baseline). On two
cores a guess that is decoding or analysing takes half the machine from the span the user is looking at, which then
decodes about 2.3 times slower (issue 53). So a span in view that is still queued starts at once on a pool of its
own (`pool`), and, while its load runs and until it has its lanes (or its load ends):
- the decoder children of the other loads are paused (SIGSTOP) and continue afterwards (SIGCONT): a child is a
  separate process holding nothing of the server's, so a pause costs it only the time;
- the other loads wait before their analyses start (`wait_turn`).
Nothing steps aside for a span in view that has not started (it may be waiting for a slot one of them holds), and
never for longer than `MAX_PAUSE_S`: a span in view whose load hangs does not stall the others for long.
Where signals do not exist (Windows) nothing is paused; the analyses still wait their turn.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

MAX_PAUSE_S = 20.0  # the longest the other loads step aside for one span in view
VIEW_SLOTS = 2  # loads of spans in view that run at once beside the service's own pools


class Foreground:
    """Which span is in view and waiting for its lanes, and the decoder children paused meanwhile. One rule, applied
    after every change (`_sync`): while the load of the span in view runs (for at most MAX_PAUSE_S since it came into
    view), exactly the other spans' children are paused; otherwise none is."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._view: Optional[str] = None  # the span in view whose lanes are not out yet
        self._since = 0.0  # when it came into view (monotonic)
        self._children: dict[str, subprocess.Popen] = {}  # span -> the decoder child decoding it now
        self._running: set[str] = set()  # spans whose load runs now
        self._paused: set[subprocess.Popen] = set()
        self._timer: Optional[threading.Timer] = None
        self._pool: Optional[ThreadPoolExecutor] = None

    def pool(self) -> ThreadPoolExecutor:
        """The pool of the loads the tab waits for, beside the service's queues: a span in view that was still
        queued starts here at once. Two slots: a span picked while the last one picked still loads starts too (the
        earlier one steps aside), at the cost of at most two more loads in memory."""
        with self._changed:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(VIEW_SLOTS, thread_name_prefix="kinetoscope-load-view")
            return self._pool

    def take_pool(self) -> Optional[ThreadPoolExecutor]:
        """The pool, which the caller (a service closing) now shuts down; every paused child goes on first."""
        with self._changed:
            pool, self._pool = self._pool, None
            self._set_view(None)
        return pool

    @property
    def view(self) -> Optional[str]:
        return self._view

    def begin(self, sid: str) -> None:
        """`sid` is in view and has no lanes yet: while its load runs, the others step aside until `done(sid)` (or
        `MAX_PAUSE_S` from the first ask: the tab asking again while it waits does not extend the pause)."""
        with self._changed:
            if self._view != sid:
                self._set_view(sid)

    def started(self, sid: str) -> None:
        """`sid`'s load runs from now on: if it is the span in view, the others step aside now."""
        with self._changed:
            self._running.add(sid)
            self._sync()

    def finished(self, sid: str) -> None:
        """`sid`'s load ended (ready or failed): the others no longer step aside for it."""
        with self._changed:
            self._running.discard(sid)
            if self._view == sid:
                self._set_view(None)
            self._sync()

    def done(self, sid: str) -> None:
        """`sid` has its lanes, or its load ended: the others go on (nothing happens if another span is in view now)."""
        with self._changed:
            if self._view == sid:
                self._set_view(None)

    def child(self, sid: Optional[str], child: Optional[subprocess.Popen]) -> None:
        """`child` decodes `sid` from now on (None: no longer); paused at once if another span is in view. A decode
        for no span (sid None) is not followed."""
        if sid is None:
            return
        with self._changed:
            if child is None:
                self._children.pop(sid, None)
            else:
                self._children[sid] = child
            self._sync()

    def wait_turn(self, sid: str) -> None:
        """Before a load's analyses: wait while the load of another span in view runs towards its lanes (at most
        MAX_PAUSE_S; it ends the moment that changes, `sid` coming into view itself included)."""
        deadline = time.monotonic() + MAX_PAUSE_S
        with self._changed:
            while self._stepping_aside() and self._view != sid:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)

    def _set_view(self, sid: Optional[str]) -> None:
        """(Under the lock.) `sid` in view from now (None: no span), its bound timed from now."""
        self._view, self._since = sid, time.monotonic()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if sid is not None:
            self._timer = threading.Timer(MAX_PAUSE_S, self.done, args=(sid,))
            self._timer.daemon = True
            self._timer.start()
        self._sync()

    def _stepping_aside(self) -> bool:
        return (self._view is not None and self._view in self._running
                and time.monotonic() - self._since < MAX_PAUSE_S)

    def _sync(self) -> None:
        """(Under the lock.) Pause exactly the children of the spans not in view while they step aside, none else."""
        want = {c for s, c in self._children.items() if s != self._view} if self._stepping_aside() else set()
        for child in want - self._paused:
            if _signal(child, getattr(signal, "SIGSTOP", None)):
                self._paused.add(child)
        for child in self._paused - want:
            _signal(child, getattr(signal, "SIGCONT", None))
            self._paused.discard(child)
        self._changed.notify_all()


def _signal(child: subprocess.Popen, sig: Optional[int]) -> bool:
    """Send `sig` to a child still running; False where it cannot be (no such signal, the child is gone)."""
    if sig is None or child.poll() is not None:
        return False
    try:
        os.kill(child.pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        return False
    return True
