"""`straggler=median` removes the straggler's extra work, found by name in each step (analysis/distributed/
step_work.py, straggler.py), on planted gloo-style jobs: CPU ranks meeting in one all-reduce per step."""
from __future__ import annotations

import json

import pytest
from kinetoscope.analysis.distributed import step_work
from kinetoscope.analysis.distributed.ranks import rank_digest, ranks_view
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.loader import decode_bytes

STEP_US = 20_000.0
WORK_US = 4_000.0  # every rank's own work before the all-reduce
TRANSFER_US = 1_000.0


def _x(name: str, ts: float, dur: float, cat: str = "cpu_op") -> dict:
    return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": 1, "ts": ts, "dur": dur}


def gloo_job(ranks: int, steps: int, extra) -> dict[int, dict]:
    """Per rank, its trace: each step runs `aten::mm` for WORK_US, then what `extra(rank)` lists ((name, µs)
    ops, or (None, µs) for untraced time), then a gloo all-reduce that ends when the last rank arrives plus
    TRANSFER_US, then the step ends."""
    arrive = {r: WORK_US + sum(us for _, us in extra(r)) for r in range(ranks)}
    end = max(arrive.values()) + TRANSFER_US
    traces = {}
    for r in range(ranks):
        events = []
        for s in range(steps):
            t0 = s * (end + 10)
            events += [_x(f"ProfilerStep#{s + 1}", t0, end, "user_annotation"), _x("aten::mm", t0, WORK_US)]
            t = t0 + WORK_US
            for name, us in extra(r):
                if name is not None:
                    events.append(_x(name, t, us))
                t += us
            events.append(_x("gloo:all_reduce", t0 + arrive[r], end - arrive[r], "user_annotation"))
        traces[r] = {"schemaVersion": 1, "distributedInfo": {"backend": "gloo", "rank": r, "world_size": ranks},
                     "traceEvents": events}
    return traces


def view_of(traces: dict[int, dict]) -> dict:
    digests = []
    for r, doc in traces.items():
        model = decode_bytes(json.dumps(doc).encode())
        digests.append(rank_digest(model, analyze(model), worker=f"rank{r}"))
    return ranks_view(digests)


@pytest.mark.parametrize("extra, removed_us", [
    ([("slow_kernel_prep", 10_000.0)], 10_000.0),  # one extra op
    ([(None, 10_000.0)], 10_000.0),  # an untraced pause (a sleep, a descheduled process)
    ([(f"aten::op{k}", 100.0) for k in range(100)], 10_000.0),  # 100 names, more than a step keeps: (other)
])
def test_every_rank_loses_the_stragglers_extra_work(extra, removed_us):
    view = view_of(gloo_job(4, 8, lambda r: extra if r == 2 else []))
    assert [s["rank"] for s in view["stragglers"]] == [2]
    whatif = view["straggler_whatif"]
    assert whatif["removed_us"] == pytest.approx(removed_us, abs=1)
    for rank in whatif["ranks"]:
        for row in rank["steps"]:
            assert row["recorded_us"] - row["predicted_us"] == pytest.approx(removed_us, abs=1)
    names = [n["name"] for n in whatif["extra_work"][0]["names"]]
    assert names[0] == {None: step_work.UNTRACED, "aten::op0": step_work.OTHER}.get(extra[0][0], extra[0][0])


def test_work_every_rank_does_is_not_extra():
    # rank 2 does 10 ms extra; every rank also does 3 ms of `aten::add`: only rank 2's `slow` is removed
    view = view_of(gloo_job(3, 8, lambda r: [("aten::add", 3_000.0)] + ([("slow", 10_000.0)] if r == 2 else [])))
    whatif = view["straggler_whatif"]
    assert [n["name"] for n in whatif["extra_work"][0]["names"]] == ["slow"]
    assert whatif["median_step_us"] == pytest.approx(WORK_US + 3_000.0 + TRANSFER_US, abs=1)


def test_the_straggler_becomes_the_median_rank_not_faster():
    # rank 1 of 2 does 10 ms of `slow`, rank 0 8 ms of its own `other`: rank 1 is the last by 2 ms. Made the median
    # rank (rank 0's work, `other` instead of `slow`), it arrives with rank 0: every step loses the 2 ms rank 0
    # waited, not the 10 ms of `slow` (rank 0 would then be the last) nor the transfer both ranks still see
    view = view_of(gloo_job(2, 8, lambda r: [("slow", 10_000.0)] if r == 1 else [("other", 8_000.0)]))
    assert [s["rank"] for s in view["stragglers"]] == [1]
    whatif = view["straggler_whatif"]
    assert whatif["removed_us"] == pytest.approx(2_000.0, abs=1)
    assert [n["name"] for n in whatif["extra_work"][0]["names"]] == ["slow"]  # what it spent less on is not listed
    for rank in whatif["ranks"]:
        for row in rank["steps"]:
            assert row["recorded_us"] - row["predicted_us"] == pytest.approx(2_000.0, abs=1)


def test_a_straggler_quicker_at_its_other_work_keeps_its_lateness_only():
    # rank 2 of 4 does 10 ms of `slow` but its `aten::add` took 1 ms where its peers' took 3 ms (it ran while they
    # waited): it arrived 8 ms late, and the step loses those 8 ms
    view = view_of(gloo_job(4, 8, lambda r: [("aten::add", 1_000.0), ("slow", 10_000.0)] if r == 2
                            else [("aten::add", 3_000.0)]))
    whatif = view["straggler_whatif"]
    assert whatif["removed_us"] == pytest.approx(8_000.0, abs=1)
    assert whatif["median_step_us"] == pytest.approx(WORK_US + 3_000.0 + TRANSFER_US, abs=1)


def test_a_digest_keeps_each_steps_work_in_a_bounded_list():
    traces = gloo_job(2, 8, lambda r: [(f"aten::op{k}", 10.0) for k in range(500)] if r == 1 else [])
    model = decode_bytes(json.dumps(traces[1]).encode())
    digest = rank_digest(model, analyze(model), worker="rank1")
    assert len(digest.step_host_work) == 8
    for step in digest.step_host_work:
        assert len(step) <= step_work.TOP_NAMES + 1 and dict(step)[step_work.OTHER] > 0
        assert sum(ns for _, ns in step) == pytest.approx((WORK_US + 5_000.0) * 1e3, abs=1e3)
