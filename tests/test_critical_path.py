"""The critical path of each step (analysis/whatif/critical_path.py): it adds up to the step, and the planted causes
of the synthetic samples show on it with their size."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import SAMPLES
from kinetoscope.analysis.whatif.critical_path import critical_paths
from kinetoscope.trace.discovery import scan_logdir
from kinetoscope.trace.loader import load_trace

LOGS = SAMPLES / "logs"


def paths_and_truth(run: str):
    truth = json.loads((SAMPLES / "truth" / f"{run}.json").read_text())
    for trace, span in zip(scan_logdir(str(LOGS / "synthetic" / run)), truth["spans"]):
        yield critical_paths(load_trace(trace.path, cache_dir=None)), span


@pytest.mark.parametrize("run", ["dataloader", "sync", "host", "compute", "mixed", "nccl_exposed", "graph_replay"])
def test_the_shares_add_up_to_the_step(run):
    for paths, span in paths_and_truth(run):
        assert len(paths) == len(span["steps"])
        for path in paths:
            assert sum(path["shares_us"].values()) == pytest.approx(path["length_us"], abs=0.01)
            assert path["length_us"] == pytest.approx(path["end_us"] - path["start_us"], abs=1.0)


def test_the_dataloader_wait_is_on_the_path():
    # the path of a step starts where the previous one was done: after the previous step's GPU work (about 2 ms),
    # which runs during the first part of this step's wait
    for paths, span in paths_and_truth("dataloader"):
        for path, step in zip(paths, span["steps"]):
            wait = step["dataloader_ns"] / 1e3
            assert wait - 2500 < path["shares_us"]["dataloader"] <= wait + 0.01
            assert max(path["shares_us"], key=path["shares_us"].get) == "dataloader"


def test_exposed_communication_is_on_the_path():
    for paths, span in paths_and_truth("nccl_exposed"):
        for path, step in zip(paths, span["steps"]):
            assert path["shares_us"]["comm"] == pytest.approx(step["exposed_comm_ns"] / 1e3, rel=0.05)


def test_host_work_without_launches_is_on_the_path():
    for paths, _ in paths_and_truth("host"):
        for path in paths:
            assert max(path["shares_us"], key=path["shares_us"].get) == "host"


def test_work_launched_before_the_window_is_backlog():
    (trace,) = scan_logdir(str(LOGS / "cuda_h200" / "fp32_convnet"))
    first = critical_paths(load_trace(trace.path, cache_dir=None), step_indices=[0], with_segments=True)[0]
    assert first["shares_us"]["backlog"] > 1000 and first["segments"][0]["kind"] == "backlog"
    kinds = {s["kind"] for s in first["segments"]}
    assert any(k.startswith("stream ") for k in kinds)
    assert first["segments_total"] == len(first["segments"]) and np.all(np.diff([s["start_us"] for s in first["segments"]]) >= 0)


@pytest.mark.parametrize("run", ["cpu_only", "cpu_dataloader"])
def test_a_trace_without_device_work_has_a_host_path(run):
    # steps but no GPU activity: the whole path is the host's (and the DataLoader's)
    for paths, span in paths_and_truth(run):
        assert len(paths) == len(span["steps"])
        for path in paths:
            assert set(path["shares_us"]) <= {"host", "dataloader"}
            assert path["length_us"] == pytest.approx(path["end_us"] - path["start_us"], abs=1.0)


@pytest.mark.parametrize("run", ["dataloader", "sync", "compute", "nccl_exposed"])
def test_each_segment_names_the_lane_it_lies_on(run):
    """Host time, DataLoader waits and syncs lie on the thread that holds the steps; device work, launches, waits
    and backlog on the stream of the activity they lead to: the overlay draws each on its own lane."""
    from kinetoscope.trace.kinds import LaneKind
    for trace in scan_logdir(str(LOGS / "synthetic" / run)):
        model = load_trace(trace.path, cache_dir=None)
        step_lane = int(np.bincount(model.lane[model.name_in(model.name_ids_where(lambda n: n.startswith("ProfilerStep#")))]).argmax())
        for path in critical_paths(model, step_indices=[1], with_segments=True):
            assert path["segments"]
            for seg in path["segments"]:
                lane = seg["lane"]
                if seg["kind"] in ("host", "dataloader", "sync"):
                    assert lane == step_lane, seg
                else:
                    assert model.lane_kind[lane] == LaneKind.GPU, seg
                    if seg["kind"].startswith("stream "):
                        assert seg["kind"] == f"stream {model.lane_label[lane]}"
