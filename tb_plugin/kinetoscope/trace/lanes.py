"""Which lane every event belongs to: a CPU thread (pid, tid), a GPU (device, stream), or a marker row.

pid/tid arrive as ints or strings (`"25738"` on 2021 `X` events, `"stream 7"` for 2021 GPU streams,
`"Spans"` for the profiler span row). GPU events take device and stream from `args` when present:
those survive Kineto's 2024 tid sanitisation, pid/tid do not.
"""
from __future__ import annotations

import re
from functools import partial
from typing import Optional

import msgspec
import numpy as np

from .kinds import LaneKind
from .model import unique, unique_inverse

_STREAM_RE = re.compile(r"^\s*stream\s+(-?\d+)\s*$")
_STRING = np.iinfo(np.int64).min  # canonical value of a pid/tid that is not a number
MAX_SPELLINGS = 64  # raw (pid, tid) pairs sharing lanes that `_by_pairs` orders (2021 files have a few)


class RawIds(msgspec.Struct):
    """Distinct raw pid/tid values (as written) and each event's index into them."""

    pid_raw: list
    pid_rid: np.ndarray
    tid_raw: list
    tid_rid: np.ndarray


class Lanes(msgspec.Struct):
    """The lane table and the lane of every placed event."""

    kind: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    label: list[str]
    x_lane: np.ndarray
    memory_rows: np.ndarray
    memory_lane: np.ndarray
    flow_rows: np.ndarray
    flow_lane: np.ndarray


def _canonical(raw_values: list) -> tuple[np.ndarray, list[str]]:
    """Per distinct raw pid/tid: its integer value (or _STRING) and its display text."""
    ints = np.empty(len(raw_values), np.int64)
    texts = []
    for i, value in enumerate(raw_values):
        text = str(value)
        match = _STREAM_RE.match(text) if isinstance(value, str) else None
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) < (1 << 62):
            ints[i] = value
        elif isinstance(value, str) and text.strip().lstrip("-").isdigit() and len(text.strip()) < 19:
            ints[i] = int(text)
        elif match:
            ints[i] = int(match.group(1))
        else:
            ints[i] = _STRING
        texts.append(text)
    return ints, texts


def _canonical_ranks(ints: np.ndarray, texts: list[str]) -> np.ndarray:
    """Dense id per distinct raw value such that `"25738"` and `25738` (2021 quirk) share one id."""
    table: dict[str, int] = {}
    keys = [str(v) if v != _STRING else "\0" + t for v, t in zip(ints.tolist(), texts)]
    return np.array([table.setdefault(k, len(table)) for k in keys], np.int64).reshape(-1)


def assign_lanes(ids: RawIds, x_rows: np.ndarray, x_on_gpu: np.ndarray, device: np.ndarray, stream: np.ndarray,
                 memory_rows: np.ndarray, flow_rows: np.ndarray, meta_events: list) -> Lanes:
    """Assign lanes to complete, memory and flow events (rows index the raw event columns; `device` and `stream`:
    the args of the complete events on the GPU, `x_rows[x_on_gpu]`, -1 where absent).

    A host or marker lane is a canonical (pid, tid); a GPU lane a (device, stream); lanes are numbered host and
    marker lanes first, by canonical pid then tid rank, then GPU lanes by device then stream. `_by_pairs` decides
    everything but the GPU rows' lanes per distinct raw (pid, tid) pair (a trace has tens), in a few passes over the
    rows; `_by_rows` decides it per row, in about fifteen, where pairs would cost more: far more pairs than rows, or
    more than MAX_SPELLINGS spellings sharing lanes (each costs a pass to find which comes first). Both give the
    same lanes.
    """
    lanes = _by_pairs(ids, x_rows, x_on_gpu, device, stream, memory_rows, flow_rows, meta_events)
    if lanes is None:
        lanes = _by_rows(ids, x_rows, x_on_gpu, device, stream, memory_rows, flow_rows, meta_events)
    return lanes


def _by_pairs(ids: RawIds, x_rows: np.ndarray, x_on_gpu: np.ndarray, device: np.ndarray, stream: np.ndarray,
              memory_rows: np.ndarray, flow_rows: np.ndarray, meta_events: list) -> Optional[Lanes]:
    """`assign_lanes` by distinct raw (pid, tid) pairs; None (`_by_rows` then) for far more pairs than rows, or more
    than MAX_SPELLINGS pairs sharing lanes. Two spellings of one canonical (pid, tid) (`"25738"` and 25738 in 2021
    files) share its lane, named as the one that comes first (`_first_host_row`)."""
    n_tids, nx, nm = len(ids.tid_raw), x_rows.size, memory_rows.size
    n_pairs = len(ids.pid_raw) * n_tids
    pair = _pair_codes(ids, np.concatenate((x_rows, memory_rows, flow_rows)))
    if pair is None:
        return None
    gpu = np.flatnonzero(x_on_gpu)
    count = partial(np.bincount, minlength=n_pairs)
    gpu_pair = pair[gpu]
    host_x = count(pair[:nx]) - count(gpu_pair) > 0  # pairs of complete events off the GPU
    in_flows = count(pair[nx + nm:]) > 0
    pid_int, pid_text = _canonical(ids.pid_raw)
    tid_int, tid_text = _canonical(ids.tid_raw)
    pair_pid, pair_tid = np.divmod(np.arange(n_pairs), n_tids)
    a, b = pid_int[pair_pid], tid_int[pair_tid]
    cls = np.where(a == _STRING, LaneKind.MARKER, LaneKind.CPU).astype(np.int8)
    # GPU rows: device and stream from args where present, else the pid and tid
    gpu_a = np.where(device >= 0, device, a[gpu_pair])
    gpu_b = np.where(stream >= 0, stream, b[gpu_pair])
    # a flow end on a pid that only GPU events use sits on that GPU's stream lane (as `_flows_on_gpu`)
    flow_on_gpu = np.zeros(n_pairs, bool)
    if gpu.size:
        cpu_pids = unique(a[host_x & (cls == LaneKind.CPU)])
        flow_on_gpu = in_flows & np.isin(a, np.setdiff1d(unique(gpu_a), cpu_pids))
    on_host = host_x | (count(pair[nx:nx + nm]) > 0) | (in_flows & ~flow_on_gpu)
    host_pairs = np.flatnonzero(on_host)
    host_code = _canonical_ranks(pid_int, pid_text)[pair_pid[host_pairs]] * n_tids + \
        _canonical_ranks(tid_int, tid_text)[pair_tid[host_pairs]]
    host = _host_lanes(host_pairs, host_code, pair, x_on_gpu, nx, nm, flow_on_gpu)
    if host is None:
        return None
    host_lane, first = host
    flow_pairs = np.flatnonzero(flow_on_gpu)
    gpu_lane_a, gpu_lane_b, gpu_lane = _gpu_lanes(gpu_a, gpu_b, a[flow_pairs], b[flow_pairs], first.size)
    lane_of = np.full(n_pairs, -1, np.int64)
    lane_of[host_pairs] = host_lane
    x_lane = lane_of[pair[:nx]]
    x_lane[gpu] = gpu_lane[:gpu.size]
    memory_lane = lane_of[pair[nx:nx + nm]]
    lane_of[flow_pairs] = gpu_lane[gpu.size:]
    flow_lane = lane_of[pair[nx + nm:]]
    n_gpu = gpu_lane_a.size
    lane_kind = np.concatenate((cls[first], np.full(n_gpu, LaneKind.GPU, np.int8)))
    lane_a = np.concatenate((a[first], gpu_lane_a))
    lane_b = np.concatenate((b[first], gpu_lane_b))
    first_pid = np.concatenate((pair_pid[first], np.zeros(n_gpu, np.int64)))
    first_tid = np.concatenate((pair_tid[first], np.zeros(n_gpu, np.int64)))
    labels = _labels(meta_events, lane_kind, lane_a, lane_b, pid_text, tid_text, first_pid, first_tid)
    return Lanes(kind=lane_kind, pid=np.where(lane_a == _STRING, -1, lane_a),
                 tid=np.where(lane_b == _STRING, -1, lane_b), label=labels, x_lane=x_lane,
                 memory_rows=memory_rows, memory_lane=memory_lane, flow_rows=flow_rows, flow_lane=flow_lane)


def _pair_codes(ids: RawIds, rows: np.ndarray) -> Optional[np.ndarray]:
    """Each row's raw (pid, tid) pair, as pid rank * tids + tid rank; None for no rows, or far more pairs than rows."""
    n_tids = len(ids.tid_raw)
    if rows.size == 0 or len(ids.pid_raw) * n_tids > rows.size + 65536:
        return None
    pair = ids.pid_rid[rows].astype(np.int64)  # pid rank * tids + tid rank, in place
    pair *= n_tids
    pair += ids.tid_rid[rows]
    return pair


def _host_lanes(host_pairs: np.ndarray, host_code: np.ndarray, pair: np.ndarray, x_on_gpu: np.ndarray, nx: int, nm: int,
                flow_on_gpu: np.ndarray) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """The host and marker lanes of the pairs `host_pairs`, one per canonical `host_code`, in code order: each pair's
    lane and each lane's pair that comes first (its spelling names the lane); None for more than MAX_SPELLINGS pairs
    sharing lanes."""
    host_lanes, host_lane = np.unique(host_code, return_inverse=True)
    n_host = host_lanes.size
    first = np.empty(n_host, np.int64)  # the lane's pair that comes first: its spelling names the lane
    first[host_lane] = host_pairs
    shared = np.flatnonzero(np.bincount(host_lane, minlength=n_host) > 1)
    if np.count_nonzero(np.isin(host_lane, shared)) > MAX_SPELLINGS:
        return None  # a pass over the rows per spelling: a file of many spellings of one pid goes row by row
    for lane in shared.tolist():
        spellings = host_pairs[host_lane == lane]
        first[lane] = spellings[np.argmin([_first_host_row(pair, j, x_on_gpu, nx, nm, flow_on_gpu[j]) for j in spellings])]
    return host_lane, first


def _gpu_lanes(gpu_a: np.ndarray, gpu_b: np.ndarray, flow_a: np.ndarray, flow_b: np.ndarray,
               n_host: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GPU lanes: the distinct (a, b) of the GPU rows and of the flows moved onto them, in (a, b) order. Returns each
    lane's device and stream, and the lane of each GPU row, then of each flow pair moved (numbered after the `n_host`
    host and marker lanes)."""
    dev, dev_rank = unique_inverse(np.concatenate((gpu_a, flow_a)))
    streams, stream_rank = unique_inverse(np.concatenate((gpu_b, flow_b)))
    n_streams = max(streams.size, 1)
    dev_rank *= n_streams
    dev_rank += stream_rank
    lane_code, gpu_lane = unique_inverse(dev_rank)
    gpu_lane += n_host
    return dev[lane_code // n_streams], streams[lane_code % n_streams], gpu_lane


def _first_host_row(pair: np.ndarray, j: int, x_on_gpu: np.ndarray, nx: int, nm: int, flow_on_gpu: bool) -> int:
    """Where pair `j` first places a row on a host lane, in the order complete (not GPU), memory, flow rows."""
    hit = pair[:nx] == j
    hit &= ~x_on_gpu
    if hit.any():
        return int(np.argmax(hit))
    for lo, hi in ((nx, nx + nm), (nx + nm, pair.size)):
        if lo == nx + nm and flow_on_gpu:
            break
        hit = pair[lo:hi] == j
        if hit.any():
            return lo + int(np.argmax(hit))
    return pair.size


def _by_rows(ids: RawIds, x_rows: np.ndarray, x_on_gpu: np.ndarray, device: np.ndarray, stream: np.ndarray,
             memory_rows: np.ndarray, flow_rows: np.ndarray, meta_events: list) -> Lanes:
    """`assign_lanes` row by row: every row's host key, overridden by the GPU key on GPU rows, ranked."""
    rows = np.concatenate((x_rows, memory_rows, flow_rows))
    pid_rid, tid_rid = ids.pid_rid[rows], ids.tid_rid[rows]
    del rows
    pid_int, pid_text = _canonical(ids.pid_raw)
    tid_int, tid_text = _canonical(ids.tid_raw)
    a, b = pid_int[pid_rid], tid_int[tid_rid]
    cls = np.full(a.size, LaneKind.CPU, np.int8)
    cls[a == _STRING] = LaneKind.MARKER
    nx = x_rows.size
    gpu = np.flatnonzero(x_on_gpu)
    if gpu.size:
        a[gpu] = np.where(device >= 0, device, a[gpu])
        b[gpu] = np.where(stream >= 0, stream, b[gpu])
        cls[gpu] = LaneKind.GPU
        _flows_on_gpu(cls, a, nx, memory_rows.size, gpu)

    code = _canonical_ranks(pid_int, pid_text)[pid_rid]  # the host key, made in place: one column at a time
    code *= len(ids.tid_raw)
    code += _canonical_ranks(tid_int, tid_text)[tid_rid]
    code = _lane_codes(cls, code, a, b)
    distinct, inverse = unique_inverse(code)  # a sort only for many pids times many tids (or devices times streams)
    first = np.full(distinct.size, -1, np.int64)
    first[inverse[::-1]] = np.arange(code.size - 1, -1, -1)
    lane_kind, lane_a, lane_b = cls[first], a[first], b[first]
    labels = _labels(meta_events, lane_kind, lane_a, lane_b, pid_text, tid_text, pid_rid[first], tid_rid[first])
    m0, m1 = nx, nx + memory_rows.size
    return Lanes(kind=lane_kind, pid=np.where(lane_a == _STRING, -1, lane_a),
                 tid=np.where(lane_b == _STRING, -1, lane_b), label=labels, x_lane=inverse[:nx],
                 memory_rows=memory_rows, memory_lane=inverse[m0:m1], flow_rows=flow_rows, flow_lane=inverse[m1:])


def _flows_on_gpu(cls: np.ndarray, a: np.ndarray, nx: int, n_memory: int, gpu: np.ndarray) -> None:
    """A flow end on a pid that only GPU events use sits on that GPU's stream lane."""
    cpu_pids = unique(a[:nx][cls[:nx] == LaneKind.CPU])
    gpu_pids = np.setdiff1d(unique(a[gpu]), cpu_pids)
    flows = np.arange(nx + n_memory, a.size)
    cls[flows[np.isin(a[flows], gpu_pids)]] = LaneKind.GPU


def _lane_codes(cls: np.ndarray, raw_code: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A small non-negative int per distinct lane, so lanes are found by bincount instead of a sort
    (`raw_code` is overwritten).

    Host and marker rows are keyed by their interned raw (pid, tid) pair. GPU rows take their key from
    the device and stream, which may come from `args`, ranked among the (few) distinct GPU values.
    """
    code = raw_code.astype(np.int64, copy=False)  # updated in place
    on_gpu = np.flatnonzero(cls == LaneKind.GPU)
    if on_gpu.size:
        n_devices, dev_rank = _dense_rank(a[on_gpu])
        n_streams, stream_rank = _dense_rank(b[on_gpu])
        dev_rank *= n_streams
        dev_rank += stream_rank + (int(raw_code.max(initial=0)) + 1)
        code[on_gpu] = dev_rank
    return code


def _dense_rank(values: np.ndarray) -> tuple[int, np.ndarray]:
    """How many distinct values, and each one's rank among them (int64): device and stream numbers are small, so
    `unique_inverse` ranks them by a bincount, without sorting millions of rows."""
    distinct, rank = unique_inverse(values)
    return distinct.size, rank


def _labels(meta_events, kind, a, b, pid_text, tid_text, pid_rid, tid_rid) -> list[str]:
    """Readable lane names: thread names from `M` metadata where present, else synthesized."""
    thread_names: dict[tuple[str, str], str] = {}
    for name, pid, tid, value in meta_events:
        if name == "thread_name" and isinstance(value, str):
            thread_names.setdefault((pid, tid), value.strip())
    labels = []
    for k in range(kind.size):
        pid, tid = pid_text[pid_rid[k]], tid_text[tid_rid[k]]
        if kind[k] == LaneKind.GPU:
            labels.append(f"GPU {a[k]} stream {b[k]}")
        elif kind[k] == LaneKind.MARKER:
            labels.append(f"{pid} {tid}".strip())
        else:
            labels.append(thread_names.get((pid, tid)) or f"thread {tid}")
    return labels
