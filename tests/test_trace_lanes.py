"""Lane assignment (`trace.lanes.assign_lanes`): the per-pair pass equals the per-row one it stands in for, two
spellings of one pid or tid (2021 files) included."""
from __future__ import annotations

import numpy as np
import pytest
from kinetoscope.trace import lanes
from kinetoscope.trace.lanes import RawIds

SPELLINGS = [0, 1, 7, 25738, -5, 2**40, 2**63 - 1, "25738", " 7", "Spans", "stream 7", "stream 3", "名前", "1" * 25, True]


def _case(rng: np.random.Generator, spellings: list, n: int):
    pid_raw = list(rng.choice(np.array(spellings, dtype=object), rng.integers(1, min(6, len(spellings) + 1)), replace=False))
    tid_raw = list(rng.choice(np.array(spellings, dtype=object), rng.integers(1, min(8, len(spellings) + 1)), replace=False))
    n_raw = n + 20
    ids = RawIds(pid_raw, rng.integers(0, len(pid_raw), n_raw).astype(np.int32),
                 tid_raw, rng.integers(0, len(tid_raw), n_raw).astype(np.int32))
    rows = rng.permutation(n_raw)[:n]
    nx, nm = int(rng.integers(0, n + 1)), 0
    nm = int(rng.integers(0, n - nx + 1))
    x_rows, memory_rows, flow_rows = np.sort(rows[:nx]), np.sort(rows[nx:nx + nm]), np.sort(rows[nx + nm:])
    x_on_gpu = rng.random(nx) < rng.choice([0.0, 0.3, 1.0])
    device = np.where(rng.random(n_raw) < 0.7, rng.integers(0, 3, n_raw), -1).astype(np.int64)
    stream = np.where(rng.random(n_raw) < 0.7, rng.choice([7, 13, 20, 2**40], n_raw), -1).astype(np.int64)
    meta = [("thread_name", str(p), str(t), f"name {k}") for k, (p, t) in enumerate(zip(pid_raw, tid_raw))]
    gpu_rows = x_rows[x_on_gpu]
    return ids, x_rows, x_on_gpu, device[gpu_rows], stream[gpu_rows], memory_rows, flow_rows, meta


def _same(a: lanes.Lanes, b: lanes.Lanes) -> None:
    for name in lanes.Lanes.__struct_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), name
        else:
            assert x == y, name


@pytest.mark.parametrize("seed", range(300))
def test_pairs_give_the_rows_lanes(seed):
    rng = np.random.default_rng(seed)
    spellings = SPELLINGS if seed % 3 else [0, 1, 7, 25738, "Spans", "名前"]  # a third without two spellings of one value
    case = _case(rng, spellings, int(rng.integers(1, 400)))
    by_pairs = lanes._by_pairs(*case)
    by_rows = lanes._by_rows(*case)
    assert by_pairs is not None  # two spellings of one value too: only far more pairs than rows go row by row
    _same(by_pairs, by_rows)
    _same(lanes.assign_lanes(*case), by_rows)


def test_pairs_settle_the_usual_trace():
    rng = np.random.default_rng(1)
    case = _case(rng, [0, 1, 7, 25738, 2**40], 5000)
    assert lanes._by_pairs(*case) is not None


def test_too_many_pairs_go_row_by_row():
    n = 10
    ids = RawIds(list(range(300)), np.arange(n, dtype=np.int32), list(range(300)), np.arange(n, dtype=np.int32))
    case = (ids, np.arange(n), np.zeros(n, bool), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
            np.zeros(0, np.int64), [])
    assert lanes._by_pairs(*case) is None
    assert lanes.assign_lanes(*case).x_lane.tolist() == list(range(n))



def test_many_spellings_of_one_pid_go_row_by_row():
    """A hostile file spelling one pid many ways (" 1", "  1", ...): one pass per spelling would be quadratic."""
    n_spellings, n = 200, 2000
    rng = np.random.default_rng(5)
    pid_raw = [" " * k + "1" for k in range(n_spellings)]
    ids = RawIds(pid_raw, rng.integers(0, n_spellings, n).astype(np.int32), [7], np.zeros(n, np.int32))
    case = (ids, np.arange(n), np.zeros(n, bool), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
            np.zeros(0, np.int64), [])
    assert lanes._by_pairs(*case) is None
    got = lanes.assign_lanes(*case)
    assert got.kind.size == 1 and got.x_lane.tolist() == [0] * n and got.label == ["thread 7"]
