"""Graph-replayed kernels given to the op calls that captured them (analysis/graphs): the alignment on planted
sequences, and on real replays with their references (the H200 CUDA-graph MLP against its eager twin, Flux's HIP
graphs against their capture trace), through the op table, the roofline and the report."""
from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from kinetoscope.analysis.graphs.align import WILDCARD, Keys, align
from kinetoscope.analysis.tables.index import TableIndex
from kinetoscope.analysis.tables.ops import op_table
from kinetoscope.cli.main import main
from kinetoscope.pipeline import graph_reference_for, with_graph_reference
from kinetoscope.trace.loader import load_trace

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "samples" / "logs" / "cuda_h200"
FLUX = ROOT.parent / "shared" / "traces" / "modern" / "inference" / "xdit_flux.1_aiter_sage"
NO_GRAPHS = [ROOT.parent / "shared" / "traces" / "modern" / "h100" / "qwen1.5-0.5b.json.gz", *H200.glob("launch_bound/*.json.gz")]


def _keys(names, grid=None, block=None) -> Keys:
    n = len(names)
    return Keys(np.array(names, np.int64), np.array(grid if grid else [-1.0] * n, np.float64),
                np.array(block if block else [-1.0] * n, np.float64))


def test_a_replay_aligns_past_a_launch_it_lacks_and_one_the_reference_lacks():
    reference = _keys([9, 9, 1, 2, 3, 7, 4, 5, 9])  # 7: a launch the replay lacks
    replay = _keys([1, 2, 3, 4, 8, 5])  # 8: a copy into the graph's static inputs, never launched by the reference
    found = align(replay, reference, np.arange(reference.size))
    assert found.mapping.tolist() == [2, 3, 4, 6, -1, 7] and found.matched == 5 and not found.ambiguous


def test_launch_shapes_tell_apart_kernels_of_one_name_and_wildcards_match_by_position():
    reference = _keys([1, 1, 1], grid=[8.0, 16.0, 8.0])
    found = align(_keys([1], grid=[16.0]), reference, np.arange(3))
    assert found.mapping.tolist() == [1]
    captured = _keys([WILDCARD] * 3)  # a CUDA capture: its launch calls name no kernel
    assert align(_keys([5, 6, 7]), captured, np.zeros(3, np.int64)).mapping.tolist() == [0, 1, 2]


def test_a_reference_holding_the_kernels_twice_from_different_ops_is_ambiguous_and_from_the_same_ops_is_not():
    reference = _keys([1, 2, 1, 2])
    assert align(_keys([1, 2]), reference, np.array([10, 11, 20, 21])).ambiguous
    assert not align(_keys([1, 2]), reference, np.array([10, 11, 10, 11])).ambiguous


def _attributed(model):
    index = TableIndex.build(model)
    graphs = index.graphs
    dur = index.act_end_ns - index.act_start_ns
    by_op = Counter()
    for k in np.flatnonzero(graphs.act_call >= 0).tolist():
        by_op[model.names[graphs.call_name[graphs.act_call[k]]]] += int(dur[k])
    return index, graphs, by_op


@pytest.mark.skipif(not list(H200.glob("cuda_graph/*.json.gz")), reason="the H200 samples are not here")
def test_the_h200_cuda_graph_replays_are_given_to_the_eager_twins_linear_layers(monkeypatch):
    (trace,), (eager,) = H200.glob("cuda_graph/*.json.gz"), H200.glob("launch_bound/*.json.gz")
    model = load_trace(str(trace), cache_dir=None)
    _, alone, _ = _attributed(model)
    assert alone.attributed_ns == 0 and alone.reference == "self"  # captured before the profile: nothing to align with
    monkeypatch.setenv("KINETOSCOPE_GRAPH_REFERENCE", str(eager))
    index, graphs, by_op = _attributed(with_graph_reference(model, str(trace)))
    assert graphs.reference == str(eager) and graphs.attributed_ns >= 0.95 * graphs.replayed_ns
    assert set(by_op) <= {"aten::linear", "aten::addmm", "aten::gelu"} and not graphs.replay_ambiguous.any()
    table = op_table(model := with_graph_reference(model, str(trace)), TableIndex.build(model))
    row = {model.names[i]: k for k, i in enumerate(table.name_id.tolist())}
    assert table.calls[row["aten::addmm"]] == 24 * 24  # 24 replays of 24 layers
    assert table.gpu_self_ns[row["aten::addmm"]] == by_op["aten::addmm"]
    assert table.gpu_total_ns[row["aten::linear"]] == by_op["aten::addmm"]


@pytest.mark.skipif(not FLUX.is_dir(), reason="../shared/traces is not beside the repo")
def test_flux_replays_are_attributed_from_the_capture_trace_beside_them_and_share_out_as_its_own_replay():
    trace = FLUX / "profile_trace_rank_0.json.gz"
    capture = FLUX / "capture_traces" / "capture_trace_rank_0.json.gz"
    assert graph_reference_for(str(trace)) == str(capture)
    _, graphs, measured = _attributed(with_graph_reference(load_trace(str(trace), cache_dir=None), str(trace)))
    assert graphs.reference == str(capture) and graphs.attributed_ns >= 0.9 * graphs.replayed_ns
    _, own, captured = _attributed(load_trace(str(capture), cache_dir=None))  # the capture's own replay, by position
    assert own.reference == "self" and own.attributed_ns >= 0.9 * own.replayed_ns
    top = [name for name, _ in measured.most_common(10)]  # the 8th to 12th lie within 3% of each other: ranks swap
    assert top[:7] == [name for name, _ in captured.most_common(7)]
    assert set(top) <= {name for name, _ in captured.most_common(12)}
    for name in top:
        # within one point of the graph's time (sage_quant_kernel_0: 2.07% here, 2.38% in the capture run's replay)
        assert measured[name] / graphs.attributed_ns == pytest.approx(captured[name] / own.attributed_ns, abs=0.01)


@pytest.mark.skipif(not FLUX.is_dir(), reason="../shared/traces is not beside the repo")
def test_the_report_names_the_reference_and_a_reference_out_of_reach_is_said_not_raised(tmp_path, capsys):
    assert main(["report", str(FLUX / "profile_trace_rank_0.json.gz"), "--format", "json", "--no-cache", "--no-index"]) == 0
    entry = json.loads(capsys.readouterr().out)["traces"][0]["graph_attribution"]
    assert entry["attributed_share"] >= 0.9 and entry["reference"].endswith("capture_trace_rank_0.json.gz")
    shutil.copy(FLUX / "profile_trace_rank_0.json.gz", tmp_path / "run_rank_0.json.gz")
    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    outside.mkdir()
    shutil.copy(FLUX / "capture_traces" / "capture_trace_rank_0.json.gz", outside / "capture_trace_rank_0.json.gz")
    os.symlink(outside, tmp_path / "capture_traces")  # a link out of the logdir: never followed
    assert main(["report", str(tmp_path), "--format", "json", "--no-cache", "--no-index"]) == 0
    entry = json.loads(capsys.readouterr().out)["traces"][0]["graph_attribution"]
    assert entry["attributed_us"] == 0 and "outside" in entry["reference_error"]


@pytest.mark.parametrize("trace", [t for t in NO_GRAPHS if t.is_file()], ids=lambda t: t.parent.name)
def test_a_trace_without_graph_replays_has_no_attribution(trace, capsys):
    model = load_trace(str(trace), cache_dir=None)
    assert with_graph_reference(model, str(trace)) is model and TableIndex.build(model).graphs is None
    assert main(["report", str(trace), "--format", "json", "--no-cache", "--no-index"]) == 0
    assert json.loads(capsys.readouterr().out)["traces"][0]["graph_attribution"] is None


def test_the_capture_trace_of_the_same_rank_is_chosen_and_none_when_unsure(tmp_path, monkeypatch):
    monkeypatch.delenv("KINETOSCOPE_GRAPH_REFERENCE", raising=False)
    folder = tmp_path / "capture_traces"
    folder.mkdir()
    for name in ("capture_rank_0.json.gz", "capture_rank_1.json.gz"):
        (folder / name).write_bytes(b"")
    assert graph_reference_for(str(tmp_path / "profile_rank_1.json.gz")) == str(folder / "capture_rank_1.json.gz")
    assert graph_reference_for(str(tmp_path / "profile.json.gz")) is None  # two candidates, no rank: not guessed
    assert graph_reference_for(str(tmp_path / "nested" / "profile_rank_0.json.gz")) is None


@pytest.mark.skipif(not list(H200.glob("cuda_graph/*.json.gz")), reason="the H200 samples are not here")
def test_the_event_route_names_the_ops_that_captured_a_replayed_kernel(monkeypatch):
    from kinetoscope.views.export import event_view
    (trace,), (eager,) = H200.glob("cuda_graph/*.json.gz"), H200.glob("launch_bound/*.json.gz")
    monkeypatch.setenv("KINETOSCOPE_GRAPH_REFERENCE", str(eager))
    model = with_graph_reference(load_trace(str(trace), cache_dir=None), str(trace))
    graphs = TableIndex.build(model).graphs
    gemm = next(r for r in graphs.act_rows[graphs.act_call >= 0].tolist() if "gemm" in model.names[model.name_id[r]])
    found = event_view(model, None, None, gemm, graphs)["captured_by"]
    assert found["op"] == "aten::addmm" and found["ops"][-2:] == ["aten::linear", "aten::addmm"]
    assert found["reference"] == str(eager) and found["inputs"].startswith("[[[64], [4, 64], [64, 64]")  # bias, x, W
    plain = event_view(model, None, None, gemm)  # no attribution given: the plain answer
    assert "captured_by" not in plain


@pytest.mark.skipif(not list(H200.glob("cuda_graph/*.json.gz")), reason="the H200 samples are not here")
def test_a_kernel_in_op_edit_reaches_the_kernels_a_graph_replayed_for_that_op(capsys):
    (eager,) = H200.glob("launch_bound/*.json.gz")
    args = ["whatif", str(H200 / "cuda_graph"), "--edit", "kernel:in:aten::linear*0.5", "--format", "json"]
    assert main(args) == 0
    alone = json.loads(capsys.readouterr().out)["traces"][0]["whatif"]
    assert alone["matched"] == {"kernel:in:aten::linear*0.5": 0}  # no reference: the replays have no op
    assert main([*args, "--graph-reference", str(eager)]) == 0
    edited = json.loads(capsys.readouterr().out)["traces"][0]["whatif"]
    assert edited["matched"] == {"kernel:in:aten::linear*0.5": 576} and edited["saving_us"] > 0  # 24 replays x 24 GEMMs
    assert main(["report", str(H200 / "cuda_graph"), "--graph-reference", str(H200 / "nowhere.json.gz")]) == 2


@pytest.mark.skipif(not FLUX.is_dir(), reason="../shared/traces is not beside the repo")
@pytest.mark.parametrize("content", [b"", b"{\"traceEvents\": [", b"\x1f\x8b\x08\x00garbage", b"[1, 2, 3]"],
                         ids=["empty", "truncated", "bad-gzip", "not-a-trace"])
def test_a_broken_capture_trace_is_named_and_the_trace_still_reports(tmp_path, capsys, content):
    shutil.copy(FLUX / "profile_trace_rank_0.json.gz", tmp_path / "profile_rank_0.json.gz")
    (tmp_path / "capture_traces").mkdir()
    (tmp_path / "capture_traces" / "capture_rank_0.json.gz").write_bytes(content)
    assert main(["report", str(tmp_path / "profile_rank_0.json.gz"), "--format", "json", "--no-cache", "--no-index"]) == 0
    entry = json.loads(capsys.readouterr().out)["traces"][0]
    assert entry["error"] is None and entry["graph_attribution"]["attributed_us"] == 0
    assert "capture_rank_0.json.gz" in entry["graph_attribution"]["reference_error"]


@pytest.mark.skipif(not list(H200.glob("cuda_graph/*.json.gz")), reason="the H200 samples are not here")
def test_a_sidecar_is_used_only_with_the_graph_reference_it_was_computed_with(tmp_path, capsys):
    """A capture trace put beside an indexed trace, or changed, refuses its sidecar (its op table would be stale);
    indexed again, the sidecar holds the attribution and is used."""
    (trace,), (eager,) = H200.glob("cuda_graph/*.json.gz"), H200.glob("launch_bound/*.json.gz")
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(trace, run / trace.name)

    def report() -> tuple[dict, str]:
        assert main(["report", str(run / trace.name), "--format", "json"]) == 0
        out, err = capsys.readouterr()
        return json.loads(out)["traces"][0]["graph_attribution"], err

    assert main(["index", str(tmp_path), "-q"]) == 0
    capsys.readouterr()
    graphs, err = report()
    assert graphs["reference"] == "self" and "1 of 1 traces read from their index sidecars" in err
    (run / "capture_traces").mkdir()
    shutil.copy(eager, run / "capture_traces" / eager.name)
    graphs, err = report()
    assert "index sidecar not used (the trace's graph reference" in err and f"none -> {eager.name!r}" in err
    assert graphs["reference"].endswith(eager.name) and graphs["attributed_us"] >= 0.95 * graphs["replayed_us"]
    assert main(["index", str(tmp_path), "-q"]) == 0
    capsys.readouterr()
    graphs, err = report()
    assert "1 of 1 traces read from their index sidecars" in err and graphs["attributed_us"] >= 0.95 * graphs["replayed_us"]
    with open(run / "capture_traces" / eager.name, "ab") as handle:  # the same reference, other bytes
        handle.write(b"\0")
    graphs, err = report()
    assert "graph reference (the capture trace its graph replays are attributed from) changed" in err
