"""The committed real DDP recordings (samples/record_distributed.py: 4 gloo ranks on CPU, torch 2.13): the slow
rank, and only it, is the straggler; the same job without a slow rank names none."""
from __future__ import annotations

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
