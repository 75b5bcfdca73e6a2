"""analysis.intervals: unions against a merge written out interval by interval, sorted input (one lane's rows,
taken without a sort) and shuffled alike."""
from __future__ import annotations

import numpy as np
from kinetoscope.trace import intervals


def _merged(starts: list[int], ends: list[int]) -> tuple[list[int], list[int]]:
    out_s: list[int] = []
    out_e: list[int] = []
    for s, e in sorted(zip(starts, ends), key=lambda pair: pair[0]):
        if out_s and s <= out_e[-1]:  # overlapping or touching: one interval
            out_e[-1] = max(out_e[-1], e)
        else:
            out_s.append(s)
            out_e.append(e)
    return out_s, out_e


def test_union_of_sorted_and_shuffled_intervals_equals_the_merge():
    rng = np.random.default_rng(17)
    for _ in range(300):
        n = int(rng.integers(0, 60))
        starts = np.sort(rng.integers(0, 200, n)).astype(np.int64)
        ends = starts + rng.integers(0, 30, n)  # zero-length ones too
        for s, e in ((starts, ends), *((starts[p], ends[p]) for p in [rng.permutation(n)])):
            got_s, got_e = intervals.union(s, e)
            want_s, want_e = _merged(s.tolist(), e.tolist())
            assert got_s.tolist() == want_s and got_e.tolist() == want_e, (s, e)
    s, e = intervals.union(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert s.size == e.size == 0


def _lanes(rng, n_lanes: int, n_codes: int, negative: bool):
    """Rows of `n_lanes` lanes, each by start (ties within and across lanes), with a code per row (-1: none)."""
    sizes = rng.integers(0, 40, n_lanes)
    starts = np.concatenate([np.sort(rng.integers(0, 120, k)) for k in sizes] + [np.zeros(0, np.int64)]).astype(np.int64)
    ends = starts + rng.integers(-6 if negative else 0, 25, starts.size)  # an end before its start, in hostile files
    code = rng.integers(-1, n_codes, starts.size).astype(np.int8)
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return starts, ends, code, ptr


def test_coded_unions_are_the_union_of_each_codes_rows():
    """One merge of the lanes gives each code's union exactly as `union` of its rows (the running reach included, where
    an end comes before its start), with and without the compiled pass."""
    from kinetoscope.trace import extractors
    rng = np.random.default_rng(5)
    for trial in range(400):
        n_codes = int(rng.integers(1, 6))
        starts, ends, code, ptr = _lanes(rng, int(rng.integers(0, 7)), n_codes, negative=trial % 3 == 0)
        want = [intervals.union(starts[code == k], ends[code == k]) for k in range(n_codes)]
        compiled = intervals.compiled_coded_unions(starts, ends, code, ptr, n_codes)
        assert compiled is not None or extractors.accel is None
        for got in ([compiled] if compiled is not None else []) + [intervals.coded_unions(starts, ends, code, ptr, n_codes)]:
            assert len(got) == n_codes
            for (gs, ge), (ws, we) in zip(got, want):
                assert gs.dtype == np.int64 and gs.tolist() == ws.tolist() and ge.tolist() == we.tolist(), trial


def test_coded_unions_out_of_order_or_malformed_fall_back_to_the_unions():
    """Rows out of start order on a lane, a code past the ones counted, or lane bounds out of order: the compiled pass
    declines (None) and `coded_unions` answers with `union` of each code's rows."""
    from kinetoscope.trace import extractors
    starts = np.array([5, 3, 9, 1], np.int64)  # lane 0: 5 then 3 (out of order)
    ends = starts + 2
    code = np.array([0, 0, 1, 1], np.int8)
    ptr = np.array([0, 2, 4], np.int64)
    if extractors.accel is not None:
        assert intervals.compiled_coded_unions(starts, ends, code, ptr, 2) is None
        assert intervals.compiled_coded_unions(np.sort(starts), np.sort(starts) + 2, np.array([0, 0, 2, 1], np.int8), ptr, 2) is None
        assert intervals.compiled_coded_unions(starts[[1, 0, 3, 2]], ends, code, np.array([0, 3, 2], np.int64), 2) is None
    got = intervals.coded_unions(starts, ends, code, ptr, 2)
    assert [(s.tolist(), e.tolist()) for s, e in got] == [([3], [7]), ([1, 9], [3, 11])]


def test_ranges_and_packed_window_are_the_loops_they_replace():
    rng = np.random.default_rng(7)
    for _ in range(50):
        lo = rng.integers(0, 100, rng.integers(0, 20))
        hi = lo + rng.integers(-3, 10, lo.size)  # some empty, some reversed
        assert intervals.ranges(lo, hi).tolist() == [x for a, b in zip(lo.tolist(), hi.tolist()) for x in range(a, b)]
        runs, stride = int(rng.integers(1, 6)), 1000
        starts = [np.sort(rng.integers(0, 990, rng.integers(0, 30))) for _ in range(runs)]
        ends = [s + rng.integers(0, 8, s.size) for s in starts]
        ends = [np.maximum.accumulate(e) if e.size else e for e in ends]  # ends sorted within a run, as the callers keep
        start_key = np.concatenate([s + r * stride for r, s in enumerate(starts)])
        end_key = np.concatenate([e + r * stride for r, e in enumerate(ends)])
        t0 = int(rng.integers(0, 990))
        t1 = min(t0 + int(rng.integers(0, 200)), stride - 1)  # clamped, as the callers do: never a neighbour's keys
        expected = [k for k, (s, e) in enumerate(zip(start_key.tolist(), end_key.tolist()))
                    if e % stride > t0 and s % stride < t1]
        assert intervals.packed_window(start_key, end_key, runs, stride, t0, t1).tolist() == expected
