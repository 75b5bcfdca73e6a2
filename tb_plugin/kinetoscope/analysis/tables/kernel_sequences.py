"""The most frequent kernel sequences: runs of kernels that recur back to back on a stream, with their total time
and the ops that launched them, to find fusion candidates (HTA's frequent CUDA kernel pattern search, done over
every stream instead of under one named op).

    seqs = kernel_sequences(model, index, min_len=3, max_len=8, top=20, window=None)   # -> list[KernelSequence]

A sequence is `length` consecutive kernels of one GPU stream (memcpys and memsets are not kernels: they break no
sequence and join none), by name. Every start position of every stream is an occurrence of the sequence that
starts there, for each length from `min_len` to `max_len`:

    stream 7:   A B C A B C A B D        length 3:  ABC x2, BCA x2, CAB x2, ABD x1
                                         length 4:  ABCA x2 (overlapping: positions 0 and 3 share an A) ...

Occurrences of one sequence may overlap (ABCABC holds ABCA twice, sharing a kernel); a sequence's `total_ns` is the
time of the kernels its occurrences cover, each kernel once, so it never exceeds the stream's kernel time.
Sequences rank by `total_ns` (then occurrences, then the longer first); one that occurs once is not a pattern
and is left out, and so is a run inside a better-ranked sequence that occurs as often as it. HTA's search differs
on purpose: it takes the shallowest ops of one given name and counts the
sequence of all the kernels each launched (operator name + kernel names).

Vectorised: the n-grams of one length are 64-bit polynomial hashes of the name ids, extended by one kernel per
length (h[L] = h[L-1] * P + id), counted with one `np.unique` per length; the candidates kept are then checked
kernel by kernel, so a hash collision never merges two sequences. O(kernels x lengths) time and memory
(bounded: `max_len` at most MAX_LEN).
"""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace.kinds import Kind
from ...trace.model import TraceModel
from .index import TableIndex, Window, clip

MAX_LEN = 16  # longest sequence searched: each length is one pass over the kernels
MAX_TOP = 100  # most sequences returned
_P = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multiplier (golden ratio): spreads consecutive ids
_CANDIDATES = 4  # candidates per returned row checked exactly (ranked first by the sum over occurrences)


class KernelSequence(msgspec.Struct, frozen=True):
    """One recurring sequence: its kernel names (ids), occurrences and time."""

    name_ids: tuple[int, ...]  # kernel name ids in order
    occurrences: int  # start positions on any stream (they may overlap)
    total_ns: int  # time of the kernels the occurrences cover, each kernel once
    mean_ns: float  # kernel time of one occurrence, on average (summed over occurrences / occurrences)
    launched_by: tuple[tuple[int, int], ...]  # (op name id or -1, occurrences whose first kernel it launched), top 3


def _kernel_streams(model: TraceModel, index: TableIndex, window: Window) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernels (positions into the index's activities) inside the window, per stream in time order, with
    their name ids, clipped durations and stream-start flags."""
    kernel = model.kind[index.act_rows] == Kind.KERNEL
    inside, dur = clip(index.act_start_ns, index.act_end_ns, window)
    pos = np.flatnonzero(kernel & inside)
    lane = model.lane[index.act_rows[pos]]
    order = np.lexsort((index.act_start_ns[pos], lane))  # activities are already in (lane, ts) order: kept stable
    pos, lane = pos[order], lane[order]
    first = np.ones(pos.size, bool)
    first[1:] = lane[1:] != lane[:-1]
    return pos, index.act_name_ids[index.act_name_ix[pos]].astype(np.int64), dur[pos], first


def kernel_sequences(model: TraceModel, index: TableIndex, min_len: int = 3, max_len: int = 8, top: int = 20,
                     window: Window = None) -> list[KernelSequence]:
    """The `top` recurring kernel sequences of `min_len` to `max_len` kernels by the time they cover.

    Raises:
        ValueError: lengths outside 2..MAX_LEN, min_len > max_len, or top outside 1..MAX_TOP.
    """
    pos, ids, dur, first = _kernel_streams(model, index, window)
    found = find_sequences(ids, dur, first, min_len, max_len, top)
    out = []
    for seq, starts, total, summed in found:
        owner = index.ops.owner[pos[starts]] if index.ops.size else np.full(starts.size, -1)
        op_name = np.where(owner >= 0, index.ops.name_ids[index.ops.name_ix[np.maximum(owner, 0)]], -1) \
            if index.ops.size else owner
        names, counts = np.unique(op_name, return_counts=True)
        order = np.lexsort((names, -counts))[:3]
        out.append(KernelSequence(seq, int(starts.size), total, summed / starts.size,
                                  tuple((int(names[k]), int(counts[k])) for k in order.tolist())))
    return out


Found = tuple[tuple[int, ...], np.ndarray, int, int]  # (name ids, occurrence starts, covered ns, summed ns)


def find_sequences(ids: np.ndarray, dur_ns: np.ndarray, stream_first: np.ndarray, min_len: int = 3, max_len: int = 8,
                   top: int = 20) -> list[Found]:
    """The search on plain arrays: kernels in stream order (`ids` name ids, `dur_ns`, `stream_first` True at
    each stream's first kernel). Returns up to `top` (name ids, occurrence starts, covered ns, summed ns), best
    first; see the module docstring.

    Raises:
        ValueError: lengths outside 2..MAX_LEN, min_len > max_len, or top outside 1..MAX_TOP.
    """
    if not (2 <= min_len <= max_len <= MAX_LEN) or not 1 <= top <= MAX_TOP:
        raise ValueError(f"need 2 <= min_len <= max_len <= {MAX_LEN} and 1 <= top <= {MAX_TOP}, "
                         f"not min_len={min_len!r}, max_len={max_len!r}, top={top!r}")
    ids = np.asarray(ids, np.int64)
    n = ids.size
    cs = np.concatenate(([0], np.cumsum(np.asarray(dur_ns, np.int64))))
    stream_no = np.cumsum(np.asarray(stream_first, bool)) - 1
    h = ids.astype(np.uint64)
    found: list[tuple[int, int, float]] = []  # (length, first start, summed ns)
    with np.errstate(over="ignore"):  # the hash wraps modulo 2^64 on purpose
        for length in range(2, max_len + 1):
            m = n - length + 1
            if m <= 0:
                break
            h = h[:m] * _P + ids[length - 1:length - 1 + m].astype(np.uint64)
            if length < min_len:
                continue
            starts = np.flatnonzero(stream_no[:m] == stream_no[length - 1:length - 1 + m])  # within one stream
            keys, first_at, inverse, counts = np.unique(h[starts], return_index=True, return_inverse=True,
                                                        return_counts=True)
            recurring = np.flatnonzero(counts > 1)
            time = np.bincount(inverse.reshape(-1), weights=cs[starts + length] - cs[starts], minlength=keys.size)
            best = recurring[np.argsort(-time[recurring], kind="stable")[:top * _CANDIDATES]]
            found += [(length, int(starts[first_at[b]]), float(time[b])) for b in best.tolist()]
    found.sort(key=lambda f: -f[2])
    rows = [_exact(ids, cs, stream_no, length, start) for length, start, _ in found[:top * _CANDIDATES]]
    rows = [r for r in rows if r is not None]
    rows.sort(key=lambda r: (-r[2], -r[1].size, -len(r[0]), r[0]))
    return _distinct(rows)[:top]


def _distinct(rows: list[Found]) -> list[Found]:
    """Rows once each (one sequence can be found from several candidates of the same hash), without the parts
    of a better-ranked sequence that occur exactly as often as it does (its prefixes and suffixes say nothing
    more: a sequence of 7 kernels seen 72 times also shows its first 5 seen 72 times)."""
    out: list[Found] = []
    for r in rows:
        if not any(r[0] == k[0] or (r[1].size == k[1].size and _inside(r[0], k[0])) for k in out):
            out.append(r)
    return out


def _inside(part: tuple[int, ...], whole: tuple[int, ...]) -> bool:
    """Whether `part` is a contiguous run of `whole`."""
    return any(whole[i:i + len(part)] == part for i in range(len(whole) - len(part) + 1))


def _exact(ids: np.ndarray, cs: np.ndarray, stream_no: np.ndarray, length: int, start: int) -> Optional[Found]:
    """The sequence of `length` kernels at `start` with its exact occurrences (every start where the same names
    follow on one stream), the time of the kernels they cover (each once) and summed over occurrences; None
    when it occurs once."""
    want = ids[start:start + length]
    m = ids.size - length + 1
    hit = (ids[:m] == want[0]) & (stream_no[:m] == stream_no[length - 1:length - 1 + m])
    for j in range(1, length):
        at = np.flatnonzero(hit)
        hit[at] = ids[at + j] == want[j]
    starts = np.flatnonzero(hit)
    if starts.size < 2:
        return None
    cover = np.zeros(ids.size + 1, np.int64)
    np.add.at(cover, starts, 1)
    np.add.at(cover, starts + length, -1)
    covered = np.cumsum(cover[:-1]) > 0
    total = int(np.diff(cs)[covered].sum())
    summed = int((cs[starts + length] - cs[starts]).sum())
    return tuple(int(i) for i in want.tolist()), starts, total, summed


class OpPattern(msgspec.Struct, frozen=True):
    """HTA's frequent CUDA kernel pattern: an op name and the GPU activities its calls launched, in order."""

    op_name_id: int
    name_ids: tuple[int, ...]  # GPU activity (kernel, memcpy, memset) name ids in launch-time order
    count: int  # calls with exactly this sequence
    gpu_ns: int  # the activities' time, summed over the calls
    cpu_ns: int  # the calls' durations, summed


def op_patterns(model: TraceModel, index: TableIndex, root: str, min_len: int = 3, top: int = 20,
                window: Window = None) -> list[OpPattern]:
    """HTA's `get_frequent_cuda_kernel_sequences(operator_name=root, min_pattern_len=min_len)`: the op calls
    whose name contains `root`, only the shallowest of them (no double counting of nested ones), each with at
    least `min_len` GPU activities launched inside it; a pattern is the op name and those activities' names in
    start order. Patterns by count (descending), then by their names; at most `top`. In a window, the calls
    overlapping it and the activities inside it (durations clipped).

    Raises:
        ValueError: an empty `root`, min_len below 1, or top outside 1..MAX_TOP.
    """
    if not root or min_len < 1 or not 1 <= top <= MAX_TOP:
        raise ValueError(f"need a root op name, min_len >= 1 and 1 <= top <= {MAX_TOP}, not {root!r}, {min_len!r}, {top!r}")
    ops = index.ops
    ids = model.name_ids_where(lambda n: root in n)
    cand = np.flatnonzero(np.isin(ops.name_ids[ops.name_ix], ids)) if ops.size else np.zeros(0, np.int64)
    inside, cpu_dur = clip(ops.start_ns[cand], ops.end_ns[cand], window)
    cand, cpu_dur = cand[inside], cpu_dur[inside]
    if cand.size == 0:
        return []
    depth = _depths(ops.parent)
    shallow = depth[cand] == depth[cand].min()
    roots, cpu_dur = cand[shallow], cpu_dur[shallow]  # equal depth: disjoint subtrees, ascending
    act_in, act_dur = clip(index.act_start_ns, index.act_end_ns, window)
    owner = ops.owner.astype(np.int64)
    at = np.searchsorted(roots, owner, side="right") - 1
    ok = act_in & (owner >= 0) & (at >= 0)
    ok[ok] = owner[ok] < ops.subtree_end[roots[at[ok]]]
    act, root_of = np.flatnonzero(ok), at[ok]
    order = np.lexsort((index.act_start_ns[act], root_of))
    act, root_of = act[order], root_of[order]
    bounds = np.searchsorted(root_of, np.arange(roots.size + 1))
    names = index.act_name_ids[index.act_name_ix[act]].tolist()
    durs = act_dur[act].tolist()
    found: dict[tuple[int, ...], list[int]] = {}
    for r in np.flatnonzero(np.diff(bounds) >= min_len).tolist():
        key = (int(ops.name_ids[ops.name_ix[roots[r]]]), *names[bounds[r]:bounds[r + 1]])
        entry = found.setdefault(key, [0, 0, 0])
        entry[0] += 1
        entry[1] += int(sum(durs[bounds[r]:bounds[r + 1]]))
        entry[2] += int(cpu_dur[r])
    text = {k: "|".join(model.names[i] for i in k) for k in found}
    best = sorted(found, key=lambda k: (-found[k][0], text[k]))[:top]
    return [OpPattern(k[0], k[1:], *found[k]) for k in best]


def _depths(parent: np.ndarray) -> np.ndarray:
    """Each node's depth (0 for a root), by pointer jumping: log2(depth) rounds."""
    depth = (parent >= 0).astype(np.int64)
    jump = parent.astype(np.int64)
    while True:
        up = np.flatnonzero(jump >= 0)
        if up.size == 0:
            return depth
        add = depth[jump[up]]
        depth[up] += add
        jump[up] = jump[jump[up]]
