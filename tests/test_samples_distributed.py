"""The committed real DDP recordings (samples/record_distributed.py: 4 gloo ranks on CPU, torch 2.13): the slow
rank, and only it, is the straggler; the same job without a slow rank names none."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import SAMPLES
from kinetoscope.analysis.distributed.ranks import rank_digest, ranks_view
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.discovery import scan_logdir
from kinetoscope.trace.loader import load_trace

LOGS = SAMPLES / "logs"


def view_of(run: str) -> dict:
    folder = LOGS / run
    if not folder.is_dir():
        pytest.skip(f"{folder} is missing")
    digests = []
    for trace in scan_logdir(str(folder)):
        model = load_trace(trace.path, cache_dir=None)
        digests.append(rank_digest(model, analyze(model), worker=trace.worker))
    return ranks_view(digests)


@pytest.mark.parametrize("run, stragglers", [("ddp_gloo_4", []), ("ddp_gloo_4_straggler", [2])])
def test_the_slow_rank_and_only_it_is_named(run, stragglers):
    view = view_of(run)
    assert (view["world_size"], view["ranks_present"], view["missing_ranks"], view["backend"]) == (4, 4, [], "gloo")
    assert [r["worker"] for r in view["ranks"]] == ["rank0", "rank1", "rank2", "rank3"]
    assert view["matched_instances"] == 10  # 2 gradient buckets x 5 profiled steps
    assert [s["rank"] for s in view["stragglers"]] == stragglers
    if stragglers:
        (s,) = view["stragglers"]
        assert s["waited_for"] == 10 and s["steps_last"] == view["steps"]
        assert s["doing"][0]["name"] == "aten::mm"  # the slow rank's extra products (slow_rank_work)


def _slow_work_per_step(folder, worker: str) -> dict[int, float]:
    """The planted extra work of the slow rank, from its own trace: `slow_rank_work`'s duration per step (µs)."""
    import gzip
    import json
    (path,) = folder.glob(f"{worker}.*.pt.trace.json.gz")
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    out = {}
    for s in steps:
        inside = [e["dur"] for e in events if e["name"] == "slow_rank_work" and s["ts"] <= e["ts"] < s["ts"] + s["dur"]]
        out[int(s["name"].split("#")[1])] = float(sum(inside))
    return out


def test_the_straggler_edit_removes_the_slow_ranks_extra_work():
    # 2 gloo ranks, rank 1 with 40 ms of extra products per step (samples/record_distributed.py --ranks 2
    # --slow-rank 1): every rank's step loses that work, found by name in the slow rank's own trace
    view = view_of("ddp_gloo_2_straggler")
    planted = _slow_work_per_step(LOGS / "ddp_gloo_2_straggler", "rank1")
    whatif = view["straggler_whatif"]
    assert [s["rank"] for s in view["stragglers"]] == [1]
    # the planted work, plus what the slow rank's own backward spent beyond rank 0's (a few % of noise; 4 ms in a
    # step where that backward stalled): every rank's step loses it
    typical = float(np.median(list(planted.values())))
    assert typical <= whatif["removed_us"] <= 1.08 * typical
    (extra,) = whatif["extra_work"]
    assert extra["rank"] == 1 and [n["name"] for n in extra["names"][:2]] == ["aten::mm", "aten::tanh"]
    for rank in whatif["ranks"]:
        for row in rank["steps"]:
            assert row["recorded_us"] - row["predicted_us"] >= 0.97 * planted[row["step"]]
