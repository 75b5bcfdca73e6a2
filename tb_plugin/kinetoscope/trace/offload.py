"""The parallel decode's workers: their pools (started once per process, count and kind), and the offloader that hands
a trace's middle pieces to them and merges what they read in file order."""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import threading
from collections import deque
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Optional

from .columns import ColumnBuilder, build_middle
from .decode import PIECE_TAIL, NotSplittable, Piece, decode_middle
from .extractors import scan_text


class Serial(Exception):
    """The parallel decode met something only the serial one handles (a look-alike cut, a piece to read whole, a
    worker that died): decode the file again, serially."""


_pools: dict[tuple[int, bool], Executor] = {}
_pools_lock = threading.Lock()


def _forget_pools() -> None:
    """In a forked child: the parent's pools have no threads or processes here (a task sent to one would wait
    forever), and their lock may have been held by a parent's thread at the fork."""
    global _pools_lock
    _pools.clear()
    _pools_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


def pool(workers: int, threads: bool = False) -> Executor:
    """The workers of the parallel decode, started once per process, count and kind. Threads when the pieces are
    scanned from text (`extractors.scans_text`: the scan runs without the GIL). Processes otherwise: forked while this
    process runs one thread (cheap: the modules are loaded); a forkserver otherwise (a fork of a threaded server may
    inherit a held lock)."""
    with _pools_lock:
        pool = _pools.get((workers, threads))
        if pool is None:
            if threads:
                pool = ThreadPoolExecutor(workers, thread_name_prefix="kinetoscope-decode")
            else:
                method = "fork" if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods() \
                    else "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
                pool = ProcessPoolExecutor(workers, multiprocessing.get_context(method))
            _pools[(workers, threads)] = pool
        return pool


def _drop_pool(workers: int, threads: bool = False) -> None:
    with _pools_lock:
        pool = _pools.pop((workers, threads), None)
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


def shutdown_pools() -> None:
    """Stop the decode workers of this process (they are started on the first parallel decode and kept)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.shutdown(wait=True)


class Offloader:
    """Hands a trace's middle pieces to workers and merges their columns in file order.

    Worker processes decode and extract a piece each (`build_middle`), merged by `ColumnBuilder.absorb`. Worker threads
    only scan a piece's text (`scan_text`, without the GIL); this thread adds what they read (`add_scanned`), and
    decodes the pieces the scanner leaves the usual way. The head is added by the decoder's sink as it comes; the tail
    waits until every middle piece is merged. The skipped counts and warnings of the pieces are merged in file order
    too, so the model equals the serial one.
    """

    def __init__(self, pool: Executor, workers: int, builder: ColumnBuilder,
                 plain_file: Optional[tuple[str, int, int]], max_events: int, refusal: str, reported=None,
                 mapped: Optional[memoryview] = None, long_text: bool = True) -> None:
        self.pool, self.workers, self.builder, self.plain_file = pool, workers, builder, plain_file
        self.threads = isinstance(pool, ThreadPoolExecutor)  # a thread gets the piece's text (no file of its own)
        self.mapped = mapped if self.threads else None  # the whole text in place: threads scan views of it, no copies
        self.merged: Optional[Callable[[int], None]] = None  # told where the merged text ends (a mapped decode)
        self.max_events, self.refusal, self.reported = max_events, refusal, reported
        self.in_flight = 2 * workers  # pieces decoded or waiting at once: each worker's next piece is ready
        if self.threads and mapped is None and not long_text:  # copies: one each (SHORT_AHEAD_TEXT_BYTES)
            self.in_flight = workers
        self.pending: deque[tuple[Future, bytes, Piece]] = deque()  # (the work, the piece's text for threads, where)
        self.pieces = None  # the file's decoder (its head's skipped counts and warnings are taken on the first piece)
        self.exact_rebase: Optional[int] = None  # the decoder's `exact_rebase`, taken on the first piece
        self.head_skipped: dict[str, int] = {}
        self.head_warnings: list[str] = []
        self.skipped: dict[str, int] = {}
        self.warnings: list[str] = []

    def middle(self, view, piece: Piece, pieces) -> None:
        if self.pieces is None:
            self.pieces = pieces
            self.head_skipped, self.head_warnings = dict(pieces.skipped), list(pieces.warnings)
            self.skipped, self.warnings = dict(self.head_skipped), list(self.head_warnings)
            self.exact_rebase = pieces.exact_rebase()  # set before the first piece comes here, and never changed
        while len(self.pending) >= self.in_flight:
            self._merge_next()
        if self.mapped is not None:  # the piece without its `]` (that byte becomes the next piece's `[`)
            text = self.mapped[piece.start:piece.end]
            self.pending.append((self.pool.submit(scan_text, text, self.max_events, True, self.exact_rebase), text, piece))
            return
        if self.threads:
            text = bytes(view)
            self.pending.append((self.pool.submit(scan_text, text, self.max_events, False, self.exact_rebase), text, piece))
            return
        text = self.plain_file if self.plain_file is not None else bytes(view)  # processes read a local file themselves
        try:
            self.pending.append((self.pool.submit(build_middle, (text, piece, self.max_events, self.refusal,
                                                                 self.exact_rebase)), b"", piece))
        except BrokenProcessPool:
            self._broken()

    def sink(self, events, legacy: bool, piece: Piece, *index) -> None:
        if piece.kind == PIECE_TAIL:
            self.finish()
        self.builder.add(events, legacy, piece, *index)

    def finish(self) -> None:
        """Merge every piece still in flight, then the pieces' skipped counts and warnings into the decoder's."""
        while self.pending:
            self._merge_next()
        if self.pieces is None:
            return
        tail = {reason: count - self.head_skipped.get(reason, 0) for reason, count in self.pieces.skipped.items()}
        _add_counts(self.skipped, tail)
        self.warnings += [w for w in self.pieces.warnings[len(self.head_warnings):] if w not in self.warnings]
        self.pieces.skipped.clear()
        self.pieces.skipped.update(self.skipped)
        self.pieces.warnings[:] = self.warnings
        self.pieces = None

    def _merge_next(self) -> None:
        future, text, piece = self.pending.popleft()
        try:
            result = future.result()
        except BrokenProcessPool:
            self._broken()
        if self.threads:
            try:
                if result is None or not self.builder.add_scanned(result, text, piece):
                    self._decode_here(bytes(text) + b"]" if self.mapped is not None else text, piece)
            finally:
                if self.mapped is not None:
                    text.release()
        elif result[0] != "ok":
            raise Serial(result[1])
        else:
            _, state, skipped, warnings = result
            self.builder.absorb(state)
            self._merge_problems(skipped, warnings)
        if self.merged is not None:
            self.merged(piece.end)
        if self.reported is not None:
            self.reported()

    def _decode_here(self, text: bytes, piece: Piece) -> None:
        """A piece the scanner left: decoded the usual way, as a worker process would."""
        try:
            events, legacy, index, skipped, warnings = decode_middle(text, self.exact_rebase)
        except NotSplittable as exc:
            raise Serial(str(exc)) from None
        self.builder.add(events, legacy, piece, *(index or ()))
        self._merge_problems(skipped, warnings)

    def _merge_problems(self, skipped: dict[str, int], warnings: list[str]) -> None:
        _add_counts(self.skipped, skipped)
        self.warnings += [w for w in warnings if w not in self.warnings]

    def _broken(self) -> None:
        _drop_pool(self.workers, self.threads)  # the next load starts fresh workers
        raise Serial("a decode worker died")

    def cancel(self) -> None:
        for future, _, _ in self.pending:
            future.cancel()
        for future, text, _ in self.pending:
            if isinstance(text, memoryview):
                concurrent.futures.wait([future])  # a running scan still reads the view
                text.release()
        self.pending.clear()


def file_identity(handle) -> tuple[str, int, int]:
    """The path a worker reopens an open local file by, with the device and inode it must find there."""
    info = os.fstat(handle.fileno())
    return os.readlink(f"/proc/self/fd/{handle.fileno()}") if os.path.exists("/proc/self/fd") else handle.name, \
        info.st_dev, info.st_ino


def _add_counts(into: dict[str, int], counts: dict[str, int]) -> None:
    for reason, count in counts.items():
        if count:
            into[reason] = into.get(reason, 0) + count
