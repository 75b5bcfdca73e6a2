"""Every analysis against the planted truth of the samples generator, for every scenario and both eras."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from conftest import SAMPLES, write_trace
from kinetoscope.analysis.gpu_idle import CAUSE_NAMES
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.loader import load_trace

sys.path.insert(0, str(SAMPLES))
import synth  # noqa: E402

CASES = [(s, e) for s in ("dataloader", "launch", "sync", "host", "compute", "mixed", "cpu_only", "xss") for e in ("2024", "2021")]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def case(request, tmp_path_factory):
    scenario, era = request.param
    doc, truth = synth.make_trace(scenario, era=era, seed=3)
    path = write_trace(tmp_path_factory.mktemp("synth") / f"{scenario}.pt.trace.json", json.dumps(doc))
    model = load_trace(str(path), cache_dir=None)
    return model, analyze(model), truth


def test_every_planted_gap_with_cause_duration_and_culprit(case):
    model, analysis, truth = case
    assert {str(d.device) for d in analysis.idle.devices} == set(truth["devices"])
    for dev in analysis.idle.devices:
        want = truth["devices"][str(dev.device)]
        assert [dev.window_start_ns, dev.window_end_ns] == want["window_ns"]
        assert (dev.busy_ns, dev.idle_ns) == (want["busy_ns"], want["idle_ns"])
        got = list(zip(dev.gap_start_ns.tolist(), dev.gap_end_ns.tolist(), [CAUSE_NAMES[c] for c in dev.gap_cause]))
        assert got == [(g["start_ns"], g["end_ns"], g["cause"]) for g in want["gaps"]]
        host = dev.gap_cause == CAUSE_NAMES.index("host")
        culprits = [model.names[model.name_id[r]] if r >= 0 else "(no op)" for r in dev.gap_culprit_row[host]]
        assert culprits == [g["culprit"] for g in want["gaps"] if g["cause"] == "host"]


def test_every_planted_stall(case):
    model, analysis, truth = case
    steps = analysis.steps
    assert [model.names[i] for i in steps.name_id] == [s["name"] for s in truth["steps"]]
    assert steps.start_ns.tolist() == [s["start_ns"] for s in truth["steps"]]
    assert steps.dataloader_ns.tolist() == [s["dataloader_ns"] for s in truth["steps"]]
    assert steps.stalled.tolist() == [s["stalled"] for s in truth["steps"]]
    if truth["devices"]:
        assert steps.gpu_idle_ns.tolist() == [s["gpu_idle_ns"] for s in truth["steps"]]


def test_launch_offsets_exact(case):
    _, analysis, truth = case
    launch = analysis.launch
    assert launch.pairs == truth["launch"]["pairs"]
    assert int(launch.short.sum()) == truth["launch"]["short_kernels"]
    for name in ("offset_ns", "queued_ns", "latency_ns"):
        assert np.sort(getattr(launch, name)).tolist() == truth["launch"][name]


def test_memory_peaks_exact(case):
    _, analysis, truth = case
    got = {s.device: s for s in analysis.memory}
    assert set(got) == set(truth["memory"])
    for device, want in truth["memory"].items():
        s = got[device]
        assert (s.peak_allocated_bytes, s.peak_at_ns, s.peak_op) == (want["peak_allocated_bytes"], want["peak_at_ns"], want["peak_op"])
        if want["peak_reserved_bytes"] is not None:
            assert s.peak_reserved_bytes == want["peak_reserved_bytes"]


def test_verdict(case):
    _, analysis, truth = case
    assert analysis.verdict.bound == truth["verdict"]
