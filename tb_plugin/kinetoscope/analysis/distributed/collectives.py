"""The collective calls of one rank: what the ranks view matches across the ranks of a job.

One call is the outermost CPU-side collective event on its thread (`../shared/docs/distributed.md`): the
`nccl:<op>` / `gloo:<op>` annotations where the trace has them (one per collective), else the `c10d::<op>_`
ops, else `record_param_comms`. Its duration is that of the NCCL/RCCL kernels it launched (first start to
last end on the device) when it launched any, else its CPU duration: on gloo the annotation covers the
wait for the slowest rank, as the kernel does on NCCL.

Each call also carries the step it started in (by `ProfilerStep#N` number, so steps align across ranks),
its ordinal among the calls of its type within that step (collectives of different process groups, which
the trace rarely names, may interleave differently on each rank; one type's calls keep their order), and
the CPU ops that ran most on its rank just before it (from the previous call's end, or the step start):
what a rank the others waited for was doing meanwhile.
"""
from __future__ import annotations

import re
from typing import Optional

import msgspec
import numpy as np

from ...trace.kinds import ACTIVITY_KINDS, CPU_OP_KINDS, LAUNCH_KINDS, STEP_RE, Kind, is_collective_name, is_comm_kernel_name
from ...trace.model import TraceModel, unique, unique_inverse
from ..core.cpu_ops import self_time
from ..core.selectors import OpIndex, cpu_rows, step_rows

FAMILIES = (("nccl:", "gloo:"), ("c10d::",), ("record_param_comms",))  # which events are the calls, by preference
TOP_BEFORE = 3  # op names kept per call
P2P_KINDS = frozenset({"send", "recv"})  # point-to-point: matched by their ends (`Src Rank`, `Dst Rank`), never by Seq
_KERNEL_OP = re.compile(r"(?:ncclDevKernel|ncclKernel|rcclKernel)_([A-Za-z]+?)(?:_|\(|$)", re.I)
# c10d / annotation / kernel spellings -> one name per collective type
_ALIASES = {
    "allreduce": "all_reduce", "allreducecoalesced": "all_reduce", "allgather": "all_gather",
    "allgatherbase": "all_gather", "allgatherintotensor": "all_gather", "allgathercoalesced": "all_gather",
    "allgatherintotensorcoalesced": "all_gather", "reducescatter": "reduce_scatter",
    "reducescatterbase": "reduce_scatter", "reducescattertensor": "reduce_scatter",
    "reducescattertensorcoalesced": "reduce_scatter", "alltoall": "all_to_all", "alltoallbase": "all_to_all",
    "broadcast": "broadcast", "reduce": "reduce", "send": "send", "recv": "recv", "sendrecv": "send_recv",
    "barrier": "barrier", "gather": "gather", "scatter": "scatter", "recvanysource": "recv",
}


def collective_type(name: str) -> str:
    """One spelling per collective type (`all_reduce`, `all_gather`, ...) from a call or kernel name;
    `collective` when the name does not say (a bare `record_param_comms`)."""
    kernel = _KERNEL_OP.search(name)
    text = kernel.group(1) if kernel else name.split(":")[-1]
    key = re.sub(r"[^a-z]", "", text.lower())
    return _ALIASES.get(key, "collective")


class CollectiveCalls(msgspec.Struct, frozen=True):
    """Parallel arrays, one entry per call, in start order (times in ns)."""

    kind: tuple[str, ...]  # collective type
    step: np.ndarray  # ProfilerStep number the call started in, -1 outside steps
    ordinal: np.ndarray  # the call's index among the calls of its type in its step (or outside steps)
    start_ns: np.ndarray  # device start when it launched kernels, else CPU start
    dur_ns: np.ndarray  # device extent of its kernels, else CPU duration
    on_device: np.ndarray  # bool: the duration is the kernels'
    cpu_start_ns: np.ndarray
    cpu_dur_ns: np.ndarray
    seq: np.ndarray  # `Seq` in its process group, -1 when the trace does not number it
    group: tuple[str, ...]  # `Process Group Name` ("" when the trace does not say)
    nbytes: np.ndarray  # message size S (distributed.md), -1 when unknown
    group_size: np.ndarray  # ranks in its group, -1 when unknown
    before: tuple[tuple[tuple[str, int], ...], ...]  # per call: top (op, self ns) before it
    group_desc: tuple[str, ...] = ()  # `Process Group Description` (default_pg, tp, dp; "" when not said)
    group_ranks: tuple[str, ...] = ()  # `Process Group Ranks` as written (`[0, 2]`; "" when not said)
    src_rank: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0, np.int64))  # a p2p call's `Src Rank`, else -1
    dst_rank: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0, np.int64))  # its `Dst Rank`, else -1

    @property
    def count(self) -> int:
        return len(self.kind)


def collective_calls(model: TraceModel, ops: Optional[OpIndex] = None) -> CollectiveCalls:
    """The collective calls of one trace (see the module docstring)."""
    rows = collective_call_rows(model)
    if rows.size == 0:
        empty = np.zeros(0, np.int64)
        return CollectiveCalls(kind=(), step=empty, ordinal=empty, start_ns=empty, dur_ns=empty,
                               on_device=np.zeros(0, bool), cpu_start_ns=empty, cpu_dur_ns=empty, before=(),
                               seq=empty, group=(), nbytes=empty, group_size=empty, group_desc=(), group_ranks=())
    order = np.argsort(model.ts_ns[rows], kind="stable")
    rows = rows[order]
    start, dur, on_device = _device_extent(model, rows)
    first_kernel = _first_kernel(model, rows)
    paired = _paired_field_rows(model, rows)
    fields = [_fields_of(model, r, k, p) for r, k, p in zip(rows.tolist(), first_kernel.tolist(), paired.tolist())]
    _by_comms_id(model, fields, start, dur, on_device, first_kernel)
    kinds = tuple(collective_type(f["name"]) if f["name"] and collective_type(f["name"]) != "collective"
                  else _call_type(model, r, k) for f, r, k in zip(fields, rows.tolist(), first_kernel.tolist()))
    step, step_start = _steps_of(model, model.ts_ns[rows])
    ordinal = np.zeros(rows.size, np.int64)
    seen: dict[tuple[int, str], int] = {}
    for i, key in enumerate(zip(step.tolist(), kinds)):
        ordinal[i] = seen.get(key, 0)
        seen[key] = ordinal[i] + 1
    before = _ops_before(model, rows, step_start, ops or OpIndex(model))
    if on_device.any():
        before = tuple(_top(dict(b) | dict(k)) for b, k in zip(before, _kernels_before(model, start, dur, on_device, step_start)))
    return CollectiveCalls(kind=kinds, step=step, ordinal=ordinal, start_ns=start, dur_ns=dur, on_device=on_device,
                           cpu_start_ns=model.ts_ns[rows].copy(), cpu_dur_ns=model.dur_ns[rows].copy(), before=before,
                           seq=np.array([f["seq"] for f in fields], np.int64), group=tuple(f["group"] for f in fields),
                           nbytes=np.array([message_bytes(kind, f) for kind, f in zip(kinds, fields)], np.int64),
                           group_size=np.array([f["group_size"] for f in fields], np.int64),
                           group_desc=tuple(f["desc"] for f in fields), group_ranks=tuple(f["ranks"] for f in fields),
                           src_rank=np.array([f["src"] for f in fields], np.int64),
                           dst_rank=np.array([f["dst"] for f in fields], np.int64))


# Bytes per element of the dtype spellings of `record_param_comms` (c10 ScalarType names) and of numpy/torch.
DTYPE_BYTES = {"float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8,
               "long": 8, "int64": 8, "int": 4, "int32": 4, "short": 2, "int16": 2, "char": 1, "int8": 1, "byte": 1,
               "uint8": 1, "bool": 1, "complexhalf": 4, "complexfloat": 8, "complexdouble": 16, "uint16": 2,
               "uint32": 4, "uint64": 8}


def message_bytes(kind: str, fields: dict) -> int:
    """S of distributed.md: the output size for all_gather, the input size otherwise (-1 when unknown)."""
    nelems = fields["out_nelems"] if kind == "all_gather" else fields["in_nelems"]
    if nelems < 0:
        nelems = fields["in_nelems"] if nelems == fields["out_nelems"] else fields["out_nelems"]
    dtype = (fields["dtype"] or "").lower().replace("torch.", "")
    size = DTYPE_BYTES.get(dtype, 1 if dtype.startswith("float8") else -1)
    return nelems * size if nelems >= 0 and size > 0 else -1


def _paired_field_rows(model: TraceModel, rows: np.ndarray) -> np.ndarray:
    """Per call (rows in start order), the CPU event carrying its fields on another thread, or -1.

    On gloo the `gloo:*` annotation runs on a worker thread while the `record_param_comms` that holds the
    fields stays on the calling thread: with one such event per call, the k-th pairs with the k-th call.
    """
    paired = np.full(rows.size, -1, np.int64)
    if model.coll_row.size == 0:
        return paired
    cpu = model.coll_row[model.kind_in(CPU_OP_KINDS, model.coll_row)]
    holders = cpu[~np.isin(cpu, rows)]
    if holders.size == rows.size:
        paired[:] = holders[np.argsort(model.ts_ns[holders], kind="stable")]
    return paired


def _fields_of(model: TraceModel, row: int, kernel: int, paired: int = -1) -> dict:
    """The collective fields of a call: its own, else its enclosing collective's on the same thread (the
    `record_param_comms` around an `nccl:*` annotation), else its paired event's on another thread
    (`_paired_field_rows`), else its first kernel's."""
    out = {"seq": -1, "in_nelems": -1, "out_nelems": -1, "group_size": -1, "comms_id": -1, "src": -1, "dst": -1, "group": "",
           "name": "", "dtype": "", "desc": "", "ranks": ""}
    if model.coll_row.size == 0:
        return out
    candidates = [row]
    lane, start = model.lane[row], model.ts_ns[row]
    hi = int(np.searchsorted(model.coll_row, row, side="right"))
    for k in range(hi - 1, max(hi - 8, 0) - 1, -1):  # the enclosing one is a few rows before (same lane, sorted)
        other = int(model.coll_row[k])
        if other != row and model.lane[other] == lane and model.ts_ns[other] <= start <= model.end_ns[other]:
            candidates.append(other)
    if paired >= 0:
        candidates.append(paired)
    if kernel >= 0:
        candidates.append(kernel)
    strings = model.coll_strings
    for r in candidates:
        k = int(np.searchsorted(model.coll_row, r))
        if k >= model.coll_row.size or model.coll_row[k] != r:
            continue
        for key, column in (("seq", model.coll_seq), ("in_nelems", model.coll_in_nelems),
                            ("out_nelems", model.coll_out_nelems), ("group_size", model.coll_group_size),
                            ("comms_id", model.coll_comms_id), ("src", model.coll_src_rank), ("dst", model.coll_dst_rank)):
            if out[key] < 0 and column[k] >= 0:
                out[key] = int(column[k])
        for key, column in (("group", model.coll_pg), ("name", model.coll_name), ("dtype", model.coll_dtype),
                            ("desc", model.coll_pg_desc), ("ranks", model.coll_pg_ranks)):
            if not out[key] and column[k] >= 0:
                out[key] = strings[column[k]]
    return out


def collective_call_rows(model: TraceModel) -> np.ndarray:
    """The outermost collective events of the first family the trace has (see FAMILIES)."""
    cpu = cpu_rows(model)
    cpu = cpu[model.kind_in(CPU_OP_KINDS, cpu)]
    for prefixes in FAMILIES:
        ids = model.name_ids_where(lambda n, p=prefixes: n.startswith(p))  # noqa: B023 - bound by the default
        rows = cpu[model.name_in(ids, cpu)]
        if rows.size:
            return _outermost(model, rows)
    return np.zeros(0, np.int64)


def _outermost(model: TraceModel, rows: np.ndarray) -> np.ndarray:
    """The rows not inside an earlier row of the set on the same lane (rows are in (lane, ts, -dur) order)."""
    if rows.size == 0:
        return rows
    lane, start, end = model.lane[rows], model.ts_ns[rows], model.end_ns[rows]
    keep = np.ones(rows.size, bool)
    open_end, open_lane = np.int64(-2**62), -1
    for i in range(rows.size):  # calls are few (hundreds per trace): a plain scan is clear and fast enough
        if lane[i] == open_lane and start[i] < open_end:
            keep[i] = False
            continue
        open_lane, open_end = lane[i], end[i]
    return rows[keep]


def _launches_within(model: TraceModel, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(call index, kernel row) for every communication kernel launched from inside a call, on its thread."""
    kernels = np.flatnonzero(model.kind == Kind.KERNEL)
    kernels = kernels[model.launch_idx[kernels] >= 0]
    comm_ids = model.name_ids_where(is_comm_kernel_name)
    kernels = kernels[model.name_in(comm_ids, kernels)]
    if kernels.size == 0 or rows.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    launch = model.launch_idx[kernels]
    launch_ts, launch_lane = model.ts_ns[launch], model.lane[launch]
    call_of = np.full(kernels.size, -1, np.int64)
    for lane in unique(model.lane[rows]).tolist():
        calls = np.flatnonzero(model.lane[rows] == lane)
        starts = model.ts_ns[rows[calls]]
        ends = model.end_ns[rows[calls]]
        here = np.flatnonzero(launch_lane == lane)
        k = np.searchsorted(starts, launch_ts[here], side="right") - 1
        inside = (k >= 0) & (launch_ts[here] <= ends[np.maximum(k, 0)])
        call_of[here[inside]] = calls[k[inside]]
    linked = call_of >= 0
    return call_of[linked], kernels[linked]


def _device_extent(model: TraceModel, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per call: start and duration of its kernels (first start to last end), else of the call itself."""
    start, end = model.ts_ns[rows].copy(), model.end_ns[rows].copy()
    call, kernel = _launches_within(model, rows)
    on_device = np.zeros(rows.size, bool)
    if call.size:
        k_start, k_end = model.ts_ns[kernel], model.end_ns[kernel]
        first = np.full(rows.size, np.iinfo(np.int64).max)
        last = np.full(rows.size, np.iinfo(np.int64).min)
        np.minimum.at(first, call, k_start)
        np.maximum.at(last, call, k_end)
        on_device[call] = True
        start[on_device], end[on_device] = first[on_device], last[on_device]
    return start, end - start, on_device


def _by_comms_id(model: TraceModel, fields: list[dict], start: np.ndarray, dur: np.ndarray, on_device: np.ndarray,
                 first_kernel: np.ndarray) -> None:
    """Calls no launch links to a kernel (a collective captured in a CUDA graph: its kernel's correlation is the
    replay's) take the kernel that carries their `Comms Id` and `Seq` (Kineto copies the call's collective fields
    onto its NCCL kernel), in place: its start, duration and row."""
    wanted = [i for i, f in enumerate(fields) if not on_device[i] and f["comms_id"] >= 0 and f["seq"] >= 0]
    if not wanted:
        return
    kernels = model.coll_row[model.kind_in(ACTIVITY_KINDS, model.coll_row)]
    if not kernels.size:
        return
    at = np.searchsorted(model.coll_row, kernels)
    by_key: dict[tuple[int, int], int] = {}
    for row, comms, seq in zip(kernels.tolist(), model.coll_comms_id[at].tolist(), model.coll_seq[at].tolist()):
        if comms >= 0 and seq >= 0:
            by_key.setdefault((comms, seq), row)  # the first kernel of that call
    for i in wanted:
        row = by_key.get((fields[i]["comms_id"], fields[i]["seq"]))
        if row is not None:
            start[i], dur[i], on_device[i], first_kernel[i] = model.ts_ns[row], model.dur_ns[row], True, row


def _first_kernel(model: TraceModel, rows: np.ndarray) -> np.ndarray:
    """Per call, the first communication kernel it launched (-1 when none)."""
    call, kernel = _launches_within(model, rows)
    first = np.full(rows.size, -1, np.int64)
    for c, k in sorted(zip(call.tolist(), kernel.tolist()), key=lambda ck: (ck[0], model.ts_ns[ck[1]]), reverse=True):
        first[c] = k
    return first


def _call_type(model: TraceModel, row: int, kernel: int) -> str:
    kind = collective_type(model.names[model.name_id[row]])
    if kind == "collective" and kernel >= 0:
        kind = collective_type(model.names[model.name_id[kernel]])
    return kind


def _steps_of(model: TraceModel, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per call start: the number of the step holding it (-1) and the step's start."""
    steps = step_rows(model)
    numbers = np.array([int(STEP_RE.match(model.names[model.name_id[r]]).group(1)) for r in steps.tolist()], np.int64)
    s_start, s_end = model.ts_ns[steps], model.end_ns[steps]
    k = np.searchsorted(s_start, starts, side="right") - 1
    inside = (k >= 0) & (starts < s_end[np.maximum(k, 0)]) if steps.size else np.zeros(starts.size, bool)
    step = np.where(inside, numbers[np.maximum(k, 0)] if steps.size else -1, -1)
    step_start = np.where(inside, s_start[np.maximum(k, 0)] if steps.size else 0, np.iinfo(np.int64).min)
    return step.astype(np.int64), step_start


def _top(totals: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(((n, v) for n, v in totals.items() if v > 0), key=lambda nv: -nv[1])[:TOP_BEFORE])


def _kernels_before(model: TraceModel, start: np.ndarray, dur: np.ndarray, on_device: np.ndarray,
                    step_start: np.ndarray) -> list[tuple[tuple[str, int], ...]]:
    """Per call run on the device, the compute kernels that started between the previous call's end (or the
    step start) and the call's start, by their time in that window: what a late rank's GPU was busy with."""
    kernels = np.flatnonzero(model.kind == Kind.KERNEL)
    kernels = kernels[~model.name_in(model.name_ids_where(is_comm_kernel_name), kernels)]
    kernels = kernels[np.argsort(model.ts_ns[kernels], kind="stable")]
    k_start, k_end = model.ts_ns[kernels], model.end_ns[kernels]
    ends = np.where(on_device, start + dur, np.iinfo(np.int64).min)
    prev_end = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(ends)[:-1]))
    out = []
    for i in range(start.size):
        if not on_device[i]:
            out.append(())
            continue
        lo_t, hi_t = max(int(prev_end[i]), int(step_start[i])), int(start[i])
        sel = np.arange(int(np.searchsorted(k_start, lo_t)), int(np.searchsorted(k_start, hi_t)))  # started in it
        clipped = np.minimum(k_end[sel], hi_t) - k_start[sel]
        totals: dict[str, int] = {}
        for row, ns in zip(kernels[sel].tolist(), clipped.tolist()):
            name = model.shown_names[model.name_id[row]]
            totals[name] = totals.get(name, 0) + int(ns)
        out.append(_top(totals))
    return out


def _ops_before(model: TraceModel, rows: np.ndarray, step_start: np.ndarray,
                ops: OpIndex) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Per call, the ops with the most self time that started between the previous call's end (or its step's
    start, whichever is later) and the call's start, on any CPU thread of the rank."""
    if rows.size == 0:
        return ()
    op_rows, op_self = self_time(model, ops)
    coll_ids = model.name_ids_where(is_collective_name)
    keep = ~model.name_in(coll_ids, op_rows) & ~model.kind_in(LAUNCH_KINDS, op_rows)
    op_rows, op_self = op_rows[keep], op_self[keep]
    order = np.argsort(model.ts_ns[op_rows], kind="stable")
    op_rows, op_self = op_rows[order], op_self[order]
    op_start = model.ts_ns[op_rows]
    starts, ends = model.ts_ns[rows], model.end_ns[rows]
    prev_end = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(ends)[:-1]))
    lo = np.searchsorted(op_start, np.maximum(prev_end, step_start))
    hi = np.searchsorted(op_start, starts)
    out = []
    for a, b in zip(lo.tolist(), hi.tolist()):
        if b <= a:
            out.append(())
            continue
        ids, inverse = unique_inverse(model.name_id[op_rows[a:b]])
        total = np.bincount(inverse, weights=op_self[a:b])
        top = np.argsort(-total, kind="stable")[:TOP_BEFORE]
        out.append(tuple((model.shown_names[ids[i]], int(total[i])) for i in top.tolist() if total[i] > 0))
    return tuple(out)
