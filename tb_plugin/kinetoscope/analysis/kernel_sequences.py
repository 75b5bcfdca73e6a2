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
and is left out, and so is a run inside a better-ranked sequence that occurs as often as it. HTA's search differs on purpose: it takes the shallowest ops of one given name and counts the
sequence of all the kernels each launched (operator name + kernel names).

Vectorised: the n-grams of one length are 64-bit polynomial hashes of the name ids, extended by one kernel per
length (h[L] = h[L-1] * P + id), counted with one `np.unique` per length; the candidates kept are then checked
kernel by kernel, so a hash collision never merges two sequences. O(kernels x lengths) time and memory
(bounded: `max_len` at most MAX_LEN).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..trace.kinds import Kind
from ..trace.model import TraceModel
from .tables import TableIndex, Window, clip

MAX_LEN = 16  # longest sequence searched: each length is one pass over the kernels
MAX_TOP = 100  # most sequences returned
_P = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multiplier (golden ratio): spreads consecutive ids
_CANDIDATES = 4  # candidates per returned row checked exactly (ranked first by the sum over occurrences)


@dataclass(frozen=True)
class KernelSequence:
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
