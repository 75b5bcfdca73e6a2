"""The decoder children of a loading service: the spare child kept started for the next load, the children
running a job, and handing a job to one (`decoder.py` is the child itself and its protocol).
"""
from __future__ import annotations

import subprocess
import threading
from typing import Any, Callable, Optional

from ..trace.loader import TraceError
from ..trace.model import TraceModel
from . import decoder, handover
from .errors import log_once


class DecoderChildren:
    """A service's decoder children. `lock` and `stop` are the service's: its lock guards them as it guards its
    entries, and once `stop` is set no child starts."""

    def __init__(self, logdir: str, roots: tuple[str, ...], cache_dir: Any, enabled: bool, lock: threading.RLock,
                 stop: threading.Event) -> None:
        self.logdir = logdir
        self.roots = roots
        self.cache_dir = cache_dir
        self.enabled = enabled  # decoder children are used (`decode_in_child`)
        self.lock = lock
        self.stop = stop
        self.popens: set[subprocess.Popen] = set()  # every child started and not yet done with, the spare's included
        self.spare: Optional[decoder.Child] = None  # a decoder child waiting for its job (`take`)
        if enabled:
            handover.sweep()  # what the children of a server that was killed left in shared memory

    def run(self, path: str, mode: str, on_progress: Callable[[float], None] = lambda share: None,
            on_model: Optional[Callable[[TraceModel], None]] = None,
            on_child: Callable[[subprocess.Popen], None] = lambda child: None) -> Any:
        """A decoder child's result: the model (DECODE), or (model or None, why not, bound sha256) for a sidecar
        (SIDECAR, SIDECAR_BOUND; `on_model` gets the model before the trace's hash is confirmed:
        `decoder.sidecar_result`). `on_child` is told the child once it has the job."""
        with self.lock:
            if self.stop.is_set():
                raise TraceError(path, "the plugin is shutting down")
            spare, self.spare = self.spare, None
        child = self.take(spare, path, mode, on_progress)
        on_child(child)
        try:
            if mode in (decoder.SIDECAR, decoder.SIDECAR_BOUND):
                return decoder.sidecar_result(child, path, on_model)
            return decoder.result(child, path)
        finally:
            with self.lock:
                self.popens.discard(child)

    def take(self, spare: Optional[decoder.Child], path: str, mode: str,
             on_progress: Callable[[float], None]) -> subprocess.Popen:
        """The spare child with this job, when it is alive and was spawned with the environment a child would be
        spawned with now (roots, memory limit, budgets); else a fresh child with it."""
        if spare is not None and spare.alive() and spare.key == decoder.spawn_key(self.roots):
            try:
                child = spare.assign(path, self.cache_dir, mode, on_progress)
                with self.lock:
                    self.popens.add(child)
                return child
            except OSError:
                pass  # it died meanwhile
        if spare is not None:
            with self.lock:
                self.popens.discard(spare.popen)
            spare.discard()
        with self.lock:
            if self.stop.is_set():
                raise TraceError(path, "the plugin is shutting down")
            child = decoder.start(path, self.cache_dir, on_progress, self.roots, mode)
            self.popens.add(child)
        return child

    def refill(self) -> None:
        """Spawn the spare child, unless there is one, children are not used, or the service is closing."""
        if not self.enabled:
            return
        with self.lock:
            if self.spare is not None or self.stop.is_set():
                return
            try:
                self.spare = decoder.spawn(self.roots)
            except OSError:
                log_once(("spare", self.logdir), "kinetoscope: could not start a decoder process", exc_info=True)
                return
            self.popens.add(self.spare.popen)

    def take_all(self) -> tuple[list[subprocess.Popen], Optional[decoder.Child]]:
        """(the children, the spare among them), which the service no longer keeps: `close` kills them."""
        with self.lock:
            children = list(self.popens)
            spare, self.spare = self.spare, None
        return children, spare
