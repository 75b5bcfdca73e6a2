"""A trace whose events span most of int64 ns (issue 54 N8): no C pass wraps a time, every door answers by name.

The decode keeps times within +-2^62 ns, so two events may lie 2^63 ns apart: the what-if replay's times, relative
to the trace's start, would pass int64. The replay refuses such a trace by name (`Context.of`), the savings list is
empty, the critical path has no step, and the compiled pass checks its additions as a second line.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO, kernel, launch, op, trace_doc, write_trace
from kinetoscope.analysis.whatif import replay as replay_module
from kinetoscope.analysis.whatif.critical_path import critical_paths
from kinetoscope.analysis.whatif.edits import EditError
from kinetoscope.analysis.whatif.replay import Replayer
from kinetoscope.trace.loader import load_trace

FAR = 4.0e15  # µs: 4e18 ns, inside the decode's +-2^62 ns


def _doc() -> dict:
    events = []
    for base in (-FAR, FAR):
        events += [op("ProfilerStep#1" if base < 0 else "ProfilerStep#2", base, 100, cat="user_annotation"),
                   op("aten::mm", base + 1, 20), launch(base + 2, 5, corr=int(base > 0) + 1),
                   kernel("gemm", base + 10, 50, corr=int(base > 0) + 1)]
    return trace_doc(events)


def test_the_replay_refuses_a_trace_spanning_centuries_by_name(tmp_path):
    model = load_trace(str(write_trace(tmp_path / "w.1.pt.trace.json", _doc())), cache_dir=None)
    assert model.stop_ns - model.start_ns > 1 << 62
    with pytest.raises(EditError, match="years: too long to replay"):
        Replayer(model)
    assert critical_paths(model) == []


def test_every_door_answers_a_trace_spanning_centuries(tmp_path):
    path = write_trace(tmp_path / "w.1.pt.trace.json", _doc())
    run = [sys.executable, "-m", "kinetoscope.cli"]
    report = subprocess.run(run + ["report", "--format", "json", "--no-cache", "--no-index", str(path)],
                            capture_output=True, text=True, cwd=REPO, timeout=120)
    assert "Traceback" not in report.stderr and "internal error" not in report.stdout + report.stderr
    entry = json.loads(report.stdout)["traces"][0]
    assert "error" in entry or entry.get("savings") in ([], None)
    whatif = subprocess.run(run + ["whatif", str(path), "--edit", "graph"], capture_output=True, text=True, cwd=REPO,
                            timeout=120)
    assert "Traceback" not in whatif.stderr and "too long to replay" in whatif.stdout + whatif.stderr


@pytest.mark.skipif(not replay_module.ACCELERATED, reason="the compiled replay is not built")
def test_the_compiled_pass_refuses_an_addition_past_int64():
    big = np.iinfo(np.int64).max - 5
    one = np.array([0], np.int64)
    with pytest.raises(OverflowError, match="passes int64"):
        replay_module._accel.replay(one, np.array([0, 1], np.int64), one, np.array([big], np.int64), one,
                                    np.array([10], np.int64), np.zeros(0, np.int64), np.array([0, 0], np.int64),
                                    np.zeros(0), np.zeros(0), np.zeros(0, np.uint8), np.zeros(0), np.zeros(0), None,
                                    np.zeros(1, np.int64), np.zeros(1), np.full(1, -(1 << 62), np.int64))
