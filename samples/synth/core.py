"""The simulation model: one span of a training loop on a CPU thread and a GPU.

A :class:`Timeline` keeps a cursor on the main CPU thread and advances it by the
CPU time of every op, runtime call and pure-Python pause; all times are absolute
nanoseconds, rounded to the era's time quantum. Ops nest like ``record_function``
scopes, and CUDA runtime calls belong to the innermost open op.

GPU work follows a FIFO queue model per stream: an activity launched at CPU time
``t`` reaches the GPU a small latency later, but never before the previous
activity of its stream has finished; a synchronising call blocks the CPU cursor
until its stream (or the whole device) drains. Allocations and frees update a
per-device allocator state whose running totals become ``[memory]`` events.
"""
from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

MIB = 1 << 20
RESERVE_BLOCK = 2 * MIB
MAIN_STREAM = 7
SIDE_STREAM = 20
CUDA_KEY = (1, 0)
CPU_KEY = (0, -1)
SYNC_CALLS = frozenset(
    {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy"}
)


@dataclass
class CpuSpan:
    """A CPU op or annotation on one thread (absolute ns)."""

    name: str
    annotation: bool
    start: int
    tid: int
    ext: int
    end: int = 0


@dataclass
class Runtime:
    """A CUDA runtime call; ``dropped`` calls are simulated but not written."""

    name: str
    start: int
    end: int
    tid: int
    corr: int
    ext: int
    dropped: bool = False


@dataclass
class GpuAct:
    """A kernel, memcpy or memset on one stream of device 0."""

    kind: str
    name: str
    start: int
    end: int
    stream: int
    corr: int
    ext: int
    nbytes: int = 0


@dataclass
class GpuMark:
    """A ``gpu_user_annotation`` span (never GPU busy time)."""

    name: str
    start: int
    end: int
    stream: int
    ext: int


@dataclass
class MemEvent:
    """A ``[memory]`` instant event."""

    ts: int
    tid: int
    key: tuple[int, int]
    nbytes: int
    allocated: int
    reserved: int
    addr: int


@dataclass
class Carry:
    """State that one span hands to the next span of the same run."""

    t: int
    ext: int
    corr: int
    memory: dict[tuple[int, int], list[int]]


class Timeline:
    """Builds one span: a cursor on the main CPU thread and a FIFO queue per GPU stream."""

    def __init__(self, rng: random.Random, quantum: int, pid: int, carry: Carry) -> None:
        """Starts a span at ``carry.t`` with the ids and allocator state of ``carry``."""
        self.rng = rng
        self.quantum = quantum
        self.pid = pid
        self.t = carry.t
        self.begin = carry.t
        self.ext = self.first_ext = carry.ext
        self.corr = self.first_corr = carry.corr
        self.memory = {key: list(value) for key, value in carry.memory.items()}
        self.cpu: list[CpuSpan] = []
        self.runtime: list[Runtime] = []
        self.gpu: list[GpuAct] = []
        self.marks: list[GpuMark] = []
        self.mem: list[MemEvent] = []
        self.stream_free: dict[int, int] = {}
        self.side_tids: set[int] = set()
        self._stack: list[CpuSpan] = []
        self._live: dict[int, tuple[tuple[int, int], int]] = {}

    def ns(self, us: float) -> int:
        """Converts µs to ns, rounded to the era's time quantum (at least one quantum)."""
        return max(self.quantum, round(us * 1000 / self.quantum) * self.quantum)

    def jit(self, us: float, rel: float = 0.05) -> int:
        """Returns ``us`` jittered by up to ``rel`` (relative), in quantised ns."""
        return self.ns(us * self.rng.uniform(1.0 - rel, 1.0 + rel))

    def work(self, us: float, rel: float = 0.05) -> None:
        """Advances the main-thread cursor by pure CPU (or Python) time."""
        self.t += self.jit(us, rel)

    def next_ext(self) -> int:
        """Allocates the next ``External id``."""
        self.ext += 1
        return self.ext

    def next_corr(self) -> int:
        """Allocates the next correlation id (with realistic small holes)."""
        self.corr += self.rng.choice((1, 1, 2, 3))
        return self.corr

    @property
    def current_ext(self) -> int:
        """The ``External id`` of the innermost open op (0 outside any op)."""
        return self._stack[-1].ext if self._stack else 0

    @contextmanager
    def op(self, name: str, *, annotation: bool = False, pre: float = 1.0, post: float = 1.0) -> Iterator[CpuSpan]:
        """Opens a CPU op (or user annotation) on the main thread around the body."""
        span = CpuSpan(name, annotation, self.t, self.pid, self.next_ext())
        self.cpu.append(span)
        self._stack.append(span)
        self.work(pre, 0.03)
        yield span
        self.work(post, 0.03)
        span.end = self.t
        self._stack.pop()

    def launch(
        self,
        api: str,
        items: Sequence[tuple[str, float]],
        *,
        kind: str = "kernel",
        stream: int = MAIN_STREAM,
        call: float = 6.0,
        lat: float = 9.0,
        nbytes: int = 0,
        dropped: bool = False,
    ) -> list[GpuAct]:
        """Issues one launch call; its activities run back to back once the stream is free."""
        start = self.t
        self.t += self.jit(call, 0.03)
        corr, ext = self.next_corr(), self.current_ext
        self.runtime.append(Runtime(api, start, self.t, self.pid, corr, ext, dropped))
        at = max(start + self.jit(lat, 0.03), self.stream_free.get(stream, 0))
        acts = []
        for name, dur in items:
            acts.append(GpuAct(kind, name, at, at + self.jit(dur), stream, corr, ext, nbytes))
            at = acts[-1].end
        self.gpu.extend(acts)
        self.stream_free[stream] = at
        return acts

    def graph_launch(self, nodes: Sequence[tuple[str, float, float]], *, stream: int = MAIN_STREAM,
                     call: float = 14.0, lat: float = 9.0) -> list[GpuAct]:
        """Replays a CUDA graph with one ``cudaGraphLaunch``: ``(kernel, µs, wait µs)`` per node.

        Each node waits ``wait`` µs after the previous one (the graph's own dependencies), so the
        device idles inside the replay; the first node's wait is ignored.
        """
        start = self.t
        self.t += self.jit(call, 0.03)
        corr, ext = self.next_corr(), self.current_ext
        self.runtime.append(Runtime("cudaGraphLaunch", start, self.t, self.pid, corr, ext))
        at = max(start + self.jit(lat, 0.03), self.stream_free.get(stream, 0))
        acts: list[GpuAct] = []
        for name, dur, wait in nodes:
            if acts:
                at += self.jit(wait)
            acts.append(GpuAct("kernel", name, at, at + self.jit(dur), stream, corr, ext))
            at = acts[-1].end
        self.gpu.extend(acts)
        self.stream_free[stream] = at
        return acts

    def wait_stream(self, waiter: int, producer: int) -> None:
        """``cudaStreamWaitEvent``: later work on ``waiter`` starts after the work queued on ``producer``."""
        self.call("cudaStreamWaitEvent", 2.0)
        self.stream_free[waiter] = max(self.stream_free.get(waiter, 0), self.stream_free.get(producer, 0))

    def kernel(self, name: str, dur: float, **kwargs: Any) -> GpuAct:
        """Launches one kernel with ``cudaLaunchKernel``."""
        return self.launch("cudaLaunchKernel", [(name, dur)], **kwargs)[0]

    def call(self, api: str, us: float = 2.0) -> None:
        """A runtime call without GPU work (e.g. ``cudaEventRecord``)."""
        start = self.t
        self.t += self.jit(us)
        self.runtime.append(Runtime(api, start, self.t, self.pid, self.next_corr(), self.current_ext))

    def sync(self, api: str, *, stream: int | None = None, wake: float = 15.0) -> None:
        """Blocks the CPU until the stream (or the whole device) drains, plus a wake-up."""
        start = self.t
        if stream is None:
            drain = max(self.stream_free.values(), default=start)
        else:
            drain = self.stream_free.get(stream, start)
        self.t = max(start + self.jit(3.0), drain + self.jit(wake))
        self.runtime.append(Runtime(api, start, self.t, self.pid, self.next_corr(), self.current_ext))

    def side_sync(self, tid: int, start: int, end: int) -> None:
        """Puts ``aten::item`` + ``cudaStreamSynchronize`` on another thread (a decoy)."""
        self.side_tids.add(tid)
        self.cpu.append(CpuSpan("aten::item", False, start, tid, self.next_ext(), end))
        margin = (end - start) // 10
        self.runtime.append(Runtime("cudaStreamSynchronize", start + margin, end - margin, tid, self.next_corr(), self.ext))

    def mark(self, name: str, acts: Sequence[GpuAct]) -> None:
        """Adds a ``gpu_user_annotation`` over ``acts``, widened like Kineto (ts -1 ns, dur +2 ns)."""
        start, end = min(a.start for a in acts), max(a.end for a in acts)
        self.marks.append(GpuMark(name, start - 1, end + 1, acts[0].stream, self.current_ext))

    def alloc(self, key: tuple[int, int], nbytes: int) -> int:
        """Records an allocation of ``nbytes`` on ``key`` = (Device Type, Device Id)."""
        state = self.memory[key]
        state[0] += nbytes
        if key != CPU_KEY:
            state[1] = max(state[1], -(-state[0] // RESERVE_BLOCK) * RESERVE_BLOCK)
        addr = (0x7F3A00000000 if key != CPU_KEY else 0x55C0DE000000) + 0x100000 * (len(self.mem) + 1)
        self._live[addr] = (key, nbytes)
        self.mem.append(MemEvent(self.t, self.pid, key, nbytes, state[0], state[1], addr))
        self.work(0.2, 0.0)
        return addr

    def free(self, addr: int) -> None:
        """Records the free of a live allocation."""
        key, nbytes = self._live.pop(addr)
        state = self.memory[key]
        state[0] -= nbytes
        self.mem.append(MemEvent(self.t, self.pid, key, -nbytes, state[0], state[1], addr))
        self.work(0.2, 0.0)
