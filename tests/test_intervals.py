"""analysis.intervals: unions against a merge written out interval by interval, sorted input (one lane's rows,
taken without a sort) and shuffled alike."""
from __future__ import annotations

import numpy as np
from kinetoscope.analysis import intervals


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
