"""The `graph` edit (analysis/whatif/capture.py): each step's launches captured once and replayed as a CUDA graph,
checked against the H200 samples (the same MLP eager in `launch_bound`, captured in `cuda_graph`) and on planted
traces (tests/test_whatif_pairs.py has the captured pair)."""
from __future__ import annotations

import json
import sys

import pytest
from conftest import SAMPLES
from kinetoscope.analysis.whatif.edits import parse_edit
from kinetoscope.analysis.whatif.replay import whatif, whatif_entry
from kinetoscope.trace.loader import decode_bytes, load_trace

sys.path.insert(0, str(SAMPLES))
from synth.pairs import make_pair  # noqa: E402

H200 = SAMPLES / "logs" / "cuda_h200"
GRAPH = (parse_edit("graph"),)


@pytest.mark.skipif(not list(H200.glob("launch_bound/*.json.gz")), reason="the H200 samples are not here")
def test_the_eager_mlp_captured_predicts_the_captured_runs_step():
    (eager,), (captured,) = H200.glob("launch_bound/*.json.gz"), H200.glob("cuda_graph/*.json.gz")
    predicted = whatif(load_trace(str(eager), cache_dir=None), GRAPH)
    measured = whatif(load_trace(str(captured), cache_dir=None))
    assert predicted.matched["graph"] == 1152  # every launch of the 3 steps (8 forward passes of 48 kernels each)
    # the captured run records 531 µs host steps and 760 µs device steps (its device runs behind its host)
    for pace in (measured.median_recorded_ns, measured.median_replayed_ns):
        assert predicted.median_predicted_ns == pytest.approx(pace, rel=0.3)
    assert "H200 cuda_graph sample" in whatif_entry(predicted)["notes"]["graph"]


def test_a_step_launching_another_kernel_sequence_stays_eager_and_the_answer_says_so():
    (before,), _, _ = make_pair("launch_fused", 0)
    steps = [e for e in before["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    last = max(steps, key=lambda e: e["ts"])
    for e in before["traceEvents"]:  # the last step's kernels change name: a shape that changes the kernel chosen
        if e.get("cat") == "kernel" and last["ts"] <= e["ts"]:
            e["name"] = e["name"] + "_other_tile"
    result = whatif(decode_bytes(json.dumps(before).encode()), GRAPH)
    note = whatif_entry(result)["notes"]["graph"]
    assert note.startswith("1 of ") and "stay eager" in note
    assert result.edited_ns[-1] > 0.9 * result.replayed_ns[-1]  # (its start moves with the steps before it)
    assert (result.edited_ns[:-1] < 0.7 * result.replayed_ns[:-1]).all()


PAIRS = SAMPLES / "logs" / "cuda_h200_pairs"


@pytest.mark.skipif(not PAIRS.is_dir(), reason="the H200 before/after pairs are not here")
@pytest.mark.parametrize("before, after, edit, close", [
    # the MLP serving 8 requests a step, one sync at its end: eager, then the step captured whole (+4.1%)
    ("serve_sync_eager", "serve_sync_graph", "graph", 0.15),
    # the same for 8 layers of width 1024 at batch 64 (-3.2%)
    ("wide_sync_eager", "wide_sync_graph", "graph", 0.15),
    # the batch prepared on the host inside the step, then in one DataLoader worker ahead of it (-7.4%)
    ("prep_inline", "prep_worker", "prep=overlap", 0.15),
])
def test_a_measured_h200_pair_is_predicted_from_its_before_run(before, after, edit, close):
    (eager,), (fixed,) = PAIRS.glob(f"{before}/*.json.gz"), PAIRS.glob(f"{after}/*.json.gz")
    predicted = whatif(load_trace(str(eager), cache_dir=None), (parse_edit(edit),))
    measured = whatif(load_trace(str(fixed), cache_dir=None))
    assert predicted.median_predicted_ns == pytest.approx(measured.median_recorded_ns, rel=close)
    assert predicted.median_predicted_ns < 0.8 * predicted.median_recorded_ns  # the fix is worth predicting


@pytest.mark.skipif(not PAIRS.is_dir(), reason="the H200 before/after pairs are not here")
def test_a_run_already_captured_keeps_its_timing():
    """The input copy and the answer's sum launched around the replayed graph, between the same syncs, stay too."""
    (captured,) = PAIRS.glob("serve_sync_graph/*.json.gz")
    predicted = whatif(load_trace(str(captured), cache_dir=None), GRAPH)
    assert predicted.median_predicted_ns == predicted.median_recorded_ns  # nothing changed: the recorded steps
    assert "already replayed from a graph" in whatif_entry(predicted)["notes"]["graph"]
    assert "already replayed from a graph" in whatif_entry(predicted)["notes"]["graph"]
