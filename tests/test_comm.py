"""analysis.comm: communication, exposed communication and overlap per device, against ../shared/oracle/comm.jsonl
(an independent implementation of ../shared/docs/distributed.md), and on a trace small enough to check by hand."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import SHARED, SHARED_TRACES, kernel, launch, op, requires_shared, trace_doc, write_trace
from kinetoscope.analysis.distributed.comm import communication
from kinetoscope.trace import intervals
from kinetoscope.trace.loader import load_trace

COMM = SHARED / "oracle" / "comm.jsonl"
REFERENCE = [json.loads(line) for line in COMM.read_text().splitlines()] if COMM.is_file() else []


@requires_shared
@pytest.mark.parametrize("ref", REFERENCE, ids=lambda r: r["trace"].split("/")[-1][:40])
def test_matches_the_reference(ref):
    comm = communication(load_trace(str(SHARED_TRACES / ref["trace"]), cache_dir=None))
    for theirs in ref["devices"]:
        mine = comm.of(theirs["device"])
        assert mine is not None
        for key, value in (("comm_ns", theirs["comm_us"]), ("exposed_ns", theirs["exposed_comm_us"]),
                           ("compute_ns", theirs["compute_us"])):
            assert getattr(mine, key) / 1e3 == pytest.approx(value, rel=0.005, abs=0.01)
        if theirs["overlap_pct"] is None:
            assert mine.overlap_pct is None
        else:
            assert mine.overlap_pct == pytest.approx(theirs["overlap_pct"], rel=0.005)


#  µs:     0    10   20   30   40   50   60
#  compute [=========)       [====)
#  nccl         [==========)         [=====)
#  exposed           [-----)         [=====)   = 10 + 10 = 20 µs of 35 µs comm
def test_by_hand(tmp_path):
    events = [kernel("gemm", 0, 20, corr=None), kernel("gemm", 35, 10, corr=None),
              kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 10, 20, corr=None, stream=20),
              kernel("ncclDevKernel_SendRecv", 45, 15, corr=None, stream=21),
              op("record_param_comms", 0, 5), op("gloo:all_reduce", 100, 50, cat="user_annotation"), launch(1, 1, corr=5)]
    comm = communication(load_trace(str(write_trace(tmp_path / "c.pt.trace.json", trace_doc(events))), cache_dir=None))
    dev = comm.of(0)
    assert (dev.kernels, dev.comm_ns, dev.compute_ns, dev.exposed_ns) == (2, 35_000, 30_000, 25_000)
    assert dev.overlap_pct == pytest.approx(100 * 10 / 35)
    assert comm.cpu_collective_ns == 55_000


def test_subtract():
    a = (np.array([0, 50]), np.array([40, 60]))
    b = (np.array([10, 30]), np.array([20, 55]))
    s, e = intervals.subtract(*a, *b)
    assert list(zip(s.tolist(), e.tolist())) == [(0, 10), (20, 30), (55, 60)]


def test_subtract_matches_a_pointwise_check():
    rng = np.random.default_rng(1)

    def rand_union(n):
        s = np.sort(rng.integers(0, 200, n))
        return intervals.union(s, s + rng.integers(0, 20, n))

    def inside(u, t):
        return intervals.covered(*u, t, t + 1) > 0

    grid = np.arange(0, 260)
    for _ in range(300):
        a, b = rand_union(rng.integers(0, 15)), rand_union(rng.integers(0, 15))
        got = intervals.subtract(*a, *b)
        assert (inside(got, grid) == (inside(a, grid) & ~inside(b, grid))).all()
        assert np.all(got[0][1:] > got[1][:-1])  # disjoint and not touching: a proper union
