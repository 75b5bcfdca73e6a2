"""Rendering of a simulated span in the exact Kineto JSON format of one era.

- ``"2024"`` (torch 2.4+): ``cpu_op``/``user_annotation``/``cuda_runtime``/``kernel``
  categories, float µs relative to ``baseTimeNanoseconds``, int stream tids, ``ac2g`` flows,
  ``gpu_user_annotation`` spans, ``[memory]`` events with allocator totals and ``Ev Idx``.
- ``"2021"`` (PyTorch 1.9): ``Operator``/``Runtime``/``Kernel`` categories, absolute integer
  µs, ``"stream 7"`` tids, ``async``/``launch`` flows, no GPU annotations, ``[memory]`` with
  only ``Bytes``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .core import SYNC_CALLS, CpuSpan, GpuAct, MemEvent, Runtime, Timeline

ERAS = ("2021", "2024")
FLOW_APIS = frozenset({"cudaLaunchKernel", "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync"})
CBID = {
    "cudaLaunchKernel": 211,
    "cudaMemcpyAsync": 41,
    "cudaMemsetAsync": 51,
    "cudaStreamSynchronize": 131,
    "cudaDeviceSynchronize": 165,
    "cudaEventRecord": 135,
    "cudaGraphLaunch": 311,
    "cudaStreamQuery": 132,
    "cudaEventQuery": 138,
    "cudaStreamWaitEvent": 147,
}
CATEGORIES = {
    "2024": {
        "op": "cpu_op",
        "annotation": "user_annotation",
        "runtime": "cuda_runtime",
        "kernel": "kernel",
        "memcpy": "gpu_memcpy",
        "memset": "gpu_memset",
    },
    "2021": {
        "op": "Operator",
        "annotation": "Operator",
        "runtime": "Runtime",
        "kernel": "Kernel",
        "memcpy": "Memcpy",
        "memset": "Memset",
    },
}

BASE_PERIOD_NS = 7_889_238 * 10**9
BASE_NS_2024 = 227 * BASE_PERIOD_NS
START_NS_2021 = 1_623_142_620_000_000_000

V100 = {
    "id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34079637504, "computeMajor": 7,
    "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
    "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 98304, "numSms": 80,
    "sharedMemPerBlockOptin": 98304,
}
H100 = {
    "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045477376, "computeMajor": 9,
    "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
    "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472, "numSms": 132,
    "sharedMemPerBlockOptin": 232448,
}


@dataclass
class Render:
    """Converts model objects to Kineto events of one era."""

    era: str
    pid: int
    base_ns: int
    ev_idx: int = 0

    @property
    def cats(self) -> dict[str, str]:
        """Category names of this era."""
        return CATEGORIES[self.era]

    def ts(self, ns: int) -> float | int:
        """Timestamp as written: relative float µs (2024) or absolute integer µs (2021)."""
        return (ns - self.base_ns) / 1000 if self.era == "2024" else ns // 1000

    def dur(self, ns: int) -> float | int:
        """Duration as written."""
        return ns / 1000 if self.era == "2024" else ns // 1000

    def tid(self, tid: int, complete: bool) -> int | str:
        """CPU tid: in 2021 a string on ``X`` events and an int elsewhere."""
        return str(tid) if self.era == "2021" and complete else tid

    def stream(self, stream: int) -> int | str:
        """GPU lane tid: ``"stream 7"`` in 2021, the int stream id later."""
        return f"stream {stream}" if self.era == "2021" else stream

    def complete(self, cat: str, name: str, pid: int | str, tid: int | str, start: int, end: int, args: dict[str, Any]) -> dict[str, Any]:
        """An ``X`` event."""
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                "ts": self.ts(start), "dur": self.dur(end - start), "args": args}

    def cpu(self, span: CpuSpan) -> dict[str, Any]:
        """An op or annotation."""
        cat = self.cats["annotation" if span.annotation else "op"]
        if self.era == "2021":
            args = {"Device": self.pid, "External id": span.ext, "Trace name": "PyTorch Profiler", "Trace iteration": 0}
        else:
            args = {"External id": span.ext, "Record function id": 0, "Ev Idx": self._next_idx()}
        return self.complete(cat, span.name, self.pid, self.tid(span.tid, True), span.start, span.end, args)

    def runtime(self, call: Runtime, op_start: int) -> dict[str, Any]:
        """A runtime call."""
        cbid = CBID.get(call.name, 0)
        if self.era == "2021":
            args = {"cbid": cbid, "correlation": call.corr, "external id": call.ext, "external ts": op_start // 1000}
        else:
            args = {"External id": call.ext, "cbid": cbid, "correlation": call.corr}
        return self.complete(self.cats["runtime"], call.name, self.pid, self.tid(call.tid, True), call.start, call.end, args)

    def gpu(self, act: GpuAct, linked: bool) -> dict[str, Any]:
        """A kernel, memcpy or memset."""
        args: dict[str, Any] = {"device": 0, "context": 1, "stream": act.stream, "correlation": act.corr}
        if act.kind == "kernel":
            args = {"queued": 0, **args, **_kernel_args(act)}
        else:
            bandwidth = round(act.nbytes / max(1, act.end - act.start), 3)
            args.update({"bytes": act.nbytes, "memory bandwidth (GB/s)": bandwidth})
        if self.era == "2021":
            args["external id"] = act.ext
        elif linked:
            args = {"External id": act.ext, **args}
        return self.complete(self.cats[act.kind], act.name, 0, self.stream(act.stream), act.start, act.end, args)

    def flow(self, phase: str, ident: int, pid: int, tid: int | str, ns: int) -> dict[str, Any]:
        """A CPU->GPU flow start (``s``) or end (``f``)."""
        cat, name = ("async", "launch") if self.era == "2021" else ("ac2g", "ac2g")
        event = {"ph": phase, "id": ident, "pid": pid, "tid": tid, "ts": self.ts(ns), "cat": cat, "name": name}
        if phase == "f":
            event["bp"] = "e"
        return event

    def memory(self, event: MemEvent) -> dict[str, Any]:
        """A ``[memory]`` instant."""
        args: dict[str, Any] = {"Device Type": event.key[0], "Device Id": event.key[1], "Bytes": event.nbytes}
        base = {"ph": "i", "s": "t", "name": "[memory]", "pid": self.pid, "tid": event.tid, "ts": self.ts(event.ts)}
        if self.era == "2021":
            return {**base, "args": args}
        args = {"Total Reserved": event.reserved, "Total Allocated": event.allocated, **args,
                "Addr": event.addr, "finished": False, "Ev Idx": self._next_idx()}
        return {"ph": "i", "cat": "cpu_instant_event", **base, "args": args}

    def _next_idx(self) -> int:
        """Next ``Ev Idx`` (restarts in every file)."""
        self.ev_idx += 1
        return self.ev_idx - 1


def _kernel_args(act: GpuAct) -> dict[str, Any]:
    """Launch-configuration args of a kernel (plausible, deterministic)."""
    blocks = 1 + (act.corr * 37) % 511
    return {
        "registers per thread": 32 + (act.corr % 4) * 16,
        "shared memory": 0 if act.corr % 3 else 16384,
        "blocks per SM": round(blocks / 80, 3),
        "warps per SM": round(blocks * 4 / 80, 3),
        "grid": [blocks, 1, 1],
        "block": [128, 1, 1],
        "est. achieved occupancy %": min(100, blocks % 97),
    }


def _meta_events(render: Render, tl: Timeline, begin: int) -> list[dict[str, Any]]:
    """Process/thread ``M`` events (the main thread's name is emitted twice, like 2.13)."""
    ts, pid, new = render.ts(begin), render.pid, render.era == "2024"

    def meta(name: str, p: int | str, tid: int | str, args: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "ph": "M", "ts": ts, "pid": p, "tid": tid, "args": args}

    def lane(p: int, tid: int, label: str) -> list[dict[str, Any]]:
        rows = [meta("thread_name", p, render.tid(tid, True) if p else tid, {"name": label})]
        return rows + ([meta("thread_sort_index", p, tid, {"sort_index": tid})] if new else [])

    threads = ([pid, pid] if new else [pid]) + sorted(tl.side_tids)
    events = [meta("process_name", pid, 0, {"name": "python"}), meta("process_labels", pid, 0, {"labels": "CPU"})]
    events += [meta("process_sort_index", pid, 0, {"sort_index": pid})] if new else []
    for tid in threads:
        events += lane(pid, tid, f"thread {tid} (python)")
    if not tl.gpu:
        return events
    events += [meta("process_name", 0, 0, {"name": "python"}), meta("process_labels", 0, 0, {"labels": "GPU 0"})]
    if new:
        events.append(meta("process_sort_index", 0, 0, {"sort_index": 0x1000000}))
        for stream in sorted({g.stream for g in tl.gpu}):
            events += lane(0, stream, f"stream {stream} ")
    return events


def _activity_events(render: Render, tl: Timeline) -> list[dict[str, Any]]:
    """Runtime calls with flow starts, then GPU activities with flow ends, then GPU marks."""
    events: list[dict[str, Any]] = []
    with_gpu = {g.corr for g in tl.gpu}
    op_start = {s.ext: s.start for s in tl.cpu}
    for call in sorted(tl.runtime, key=lambda r: r.start):
        if call.dropped:
            continue
        events.append(render.runtime(call, op_start.get(call.ext, call.start)))
        if call.corr in with_gpu and call.name in FLOW_APIS:
            events.append(render.flow("s", call.corr, render.pid, call.tid, call.start))
        elif render.era == "2024" and call.name not in SYNC_CALLS:
            events.append(render.flow("f", call.corr, render.pid, call.tid, call.start))
    linked = {r.corr for r in tl.runtime if not r.dropped}
    for act in sorted(tl.gpu, key=lambda g: g.start):
        events.append(render.gpu(act, act.corr in linked))
        if act.corr in linked:
            events.append(render.flow("f", act.corr, 0, render.stream(act.stream), act.start))
    for mark in tl.marks if render.era == "2024" else []:
        events.append(render.complete("gpu_user_annotation", mark.name, 0, mark.stream, mark.start, mark.end,
                                      {"External id": mark.ext}))
    return events


def _trailer_events(render: Render, begin: int, end: int) -> list[dict[str, Any]]:
    """The ``Trace`` span and the global instants that close every Kineto file."""
    spans = "Spans" if render.era == "2024" else "Traces"
    events = [render.complete("Trace", "PyTorch Profiler (0)", spans, "PyTorch Profiler", begin, end, {"Op count": 0})]
    if render.era == "2024":
        events.append({"name": "process_sort_index", "ph": "M", "ts": render.ts(begin), "pid": "Spans", "tid": 0,
                       "args": {"sort_index": 0x20000000}})
    events.append({"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
                   "tid": "Trace PyTorch Profiler", "ts": render.ts(begin)})
    events.append({"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "",
                   "ts": render.ts(end + 12_000_000)})
    return events


def render_trace(tl: Timeline, era: str, begin: int, end: int) -> dict[str, Any]:
    """The whole trace object of one span, top-level keys in Kineto's order."""
    base = BASE_NS_2024 if era == "2024" else 0
    render = Render(era, tl.pid, base)
    events = _meta_events(render, tl, begin)
    events += [render.cpu(s) for s in sorted(tl.cpu, key=lambda s: (s.start, -s.end))]
    events += [render.memory(m) for m in tl.mem]
    events += _activity_events(render, tl)
    events += _trailer_events(render, begin, end)
    if era == "2021":
        return {"schemaVersion": 1, "deviceProperties": [dict(V100)] if tl.gpu else [], "traceEvents": events}
    top: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [dict(H100)] if tl.gpu else []}
    if tl.gpu:
        top.update(cupti_version=24, cuda_runtime_version=12080, cuda_driver_version=12080)
    top.update(trace_id=f"{tl.rng.getrandbits(128):032X}", profile_memory=1, record_shapes=1, host_name="synth")
    top.update(displayTimeUnit="ms", baseTimeNanoseconds=base, traceEvents=events)
    top["traceName"] = f"/tmp/libkineto_activities_{tl.pid}.json"
    return top
