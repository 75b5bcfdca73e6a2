"""The module tree of a trace that replays graphs: the replayed kernels sit in the module paths their reference ran
them in (analysis/tables/module_tree.py, `_grafted`), on the real H200 graph sample and the Flux serving trace."""
from __future__ import annotations

from pathlib import Path

import pytest
from kinetoscope.analysis.tables.extra import module_tree_rows
from kinetoscope.analysis.tables.index import TableIndex
from kinetoscope.pipeline import with_graph_reference
from kinetoscope.trace.loader import load_trace

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "samples" / "logs" / "cuda_h200"
FLUX = ROOT.parent / "shared" / "traces" / "modern" / "inference" / "xdit_flux.1_aiter_sage"


def _tree(model):
    index = TableIndex.build(model)
    rows, totals = module_tree_rows(model, index)
    return index, rows, totals


@pytest.mark.skipif(not list(H200.glob("cuda_graph/*.json.gz")), reason="the H200 samples are not here")
def test_graph_replays_take_the_module_tree_of_their_eager_twin(monkeypatch):
    (trace,), (eager,) = H200.glob("cuda_graph/*.json.gz"), H200.glob("launch_bound/*.json.gz")
    bare = load_trace(str(trace), cache_dir=None)
    _, rows, _ = _tree(bare)
    assert rows == []  # the graph trace records no module: without a reference there is no tree
    monkeypatch.setenv("KINETOSCOPE_GRAPH_REFERENCE", str(eager))
    index, rows, totals = _tree(with_graph_reference(bare, str(trace)))
    _, twin, _ = _tree(load_trace(str(eager), cache_dir=None))
    assert [(r["name"], r["depth"], r["operators"]) for r in rows] == [(r["name"], r["depth"], r["operators"]) for r in twin]
    assert [r["occurrences"] for r in rows] == [24] * len(rows)  # 24 replays, each module once per replay
    assert totals["attributed_from"] == str(eager)
    assert totals["device_us"] == totals["replayed_device_us"] == pytest.approx(index.graphs.attributed_ns / 1e3, abs=0.01)
    for row in rows:
        assert row["host_us"] == row["self_host_us"] == 0  # a replay spends no host time in its modules
        assert row["replayed_device_us"] == row["device_us"]
        if row["depth"] == 1:  # Linear_i, GELU_i: their ops' kernels are their own
            assert row["self_device_us"] == row["device_us"] > 0
    children = sum(r["device_us"] for r in rows if r["depth"] == 1)
    assert children == pytest.approx(rows[0]["device_us"], abs=0.01)


@pytest.mark.skipif(not FLUX.is_dir(), reason="../shared/traces is not beside the repo")
def test_a_capture_that_ran_in_the_replays_own_modules_continues_them():
    # Flux replays its transformer inside OptimizedModule_0 / xFuserFlux1Transformer2DWrapper_0, the modules its
    # capture trace ran in too: the tree keeps one such path, which holds the replayed kernels, and moves nothing
    trace = FLUX / "profile_trace_rank_0.json.gz"
    plain = load_trace(str(trace), cache_dir=None)
    index, rows, totals = _tree(with_graph_reference(plain, str(trace)))
    assert totals["attributed_from"].endswith("capture_trace_rank_0.json.gz")
    assert totals["replayed_device_us"] == pytest.approx(index.graphs.attributed_ns / 1e3, abs=0.01)
    replayed = [r for r in rows if r["replayed_device_us"] > 0]
    assert [(r["name"], r["depth"]) for r in replayed] == [("OptimizedModule_0", 0), ("xFuserFlux1Transformer2DWrapper_0", 1)]
    for row in rows:
        assert row["self_device_us"] >= 0
        assert row["parent"] < 0 or rows[row["parent"]]["name"] != row["name"]
    _, alone, alone_totals = _tree(plain)  # no reference attached: the same modules and device time
    assert alone_totals["device_us"] == pytest.approx(totals["device_us"], abs=0.01)
    assert [r["name"] for r in alone] == [r["name"] for r in rows]


@pytest.mark.skipif(not list(H200.glob("cuda_graph/*.json.gz")), reason="the H200 samples are not here")
def test_the_op_table_groups_replayed_calls_by_the_references_modules_and_shapes(monkeypatch):
    from kinetoscope.analysis.tables.ops import op_table
    (trace,), (eager,) = H200.glob("cuda_graph/*.json.gz"), H200.glob("launch_bound/*.json.gz")
    monkeypatch.setenv("KINETOSCOPE_GRAPH_REFERENCE", str(eager))
    model = with_graph_reference(load_trace(str(trace), cache_dir=None), str(trace))
    index = TableIndex.build(model)
    plain = op_table(model, index)
    by_module, by_shape = op_table(model, index, group="module"), op_table(model, index, group="shape")
    by_stack = op_table(model, index, group="stack")
    for grouped in (by_module, by_shape, by_stack):  # the groupings split the name rows, they add or lose nothing
        for column in ("calls", "gpu_self_ns", "gpu_total_ns", "cpu_total_ns"):
            assert int(getattr(grouped, column).sum()) == int(getattr(plain, column).sum()), column
    addmm = [i for i, n in enumerate(by_module.name_id.tolist()) if model.names[n] == "aten::addmm"]
    modules = {model.names[by_module.module_id[i]] for i in addmm}
    assert modules == {f"nn.Module: Linear_{k}" for k in range(24)}  # the recording itself has no module
    assert {int(by_module.calls[i]) for i in addmm} == {24}
    gelu = [i for i, n in enumerate(by_shape.name_id.tolist()) if model.names[n] == "aten::gelu"]
    assert [(model.shape_strings[by_shape.shape_id[i]], int(by_shape.calls[i])) for i in gelu] == [("[[4, 64], []]", 576)]
    # the stack grouping: each replayed call under the Python frame its eager twin ran it in
    frames = {(model.names[n], model.names[f]): int(c) for n, f, c in
              zip(by_stack.name_id.tolist(), by_stack.frame_id.tolist(), by_stack.calls.tolist()) if f >= 0}
    assert frames[("aten::addmm", "torch/nn/modules/linear.py(130): forward")] == 576
    assert frames[("aten::gelu", "torch/nn/modules/activation.py(812): forward")] == 576


@pytest.mark.skipif(not list(H200.glob("cuda_graph/*.json.gz")), reason="the H200 samples are not here")
def test_the_module_table_counts_the_replays_in_the_references_modules(monkeypatch):
    from kinetoscope.analysis.tables.ops import module_table
    (trace,), (eager,) = H200.glob("cuda_graph/*.json.gz"), H200.glob("launch_bound/*.json.gz")
    bare = load_trace(str(trace), cache_dir=None)
    assert module_table(bare, TableIndex.build(bare)).name_id.size == 0  # the recording itself has no module
    monkeypatch.setenv("KINETOSCOPE_GRAPH_REFERENCE", str(eager))
    model = with_graph_reference(bare, str(trace))
    index = TableIndex.build(model)
    table, twin_model = module_table(model, index), load_trace(str(eager), cache_dir=None)
    twin = module_table(twin_model, TableIndex.build(twin_model))
    assert sorted(model.names[n] for n in table.name_id) == sorted(twin_model.names[n] for n in twin.name_id)
    assert set(table.calls.tolist()) == {24}  # each module once per replay, as the eager twin ran it once a step
    assert int(table.cpu_total_ns.sum()) == 0  # a replay spends no host time
    top = [i for i, n in enumerate(table.name_id.tolist()) if model.names[n] == "nn.Module: Sequential_0"]
    assert int(table.gpu_total_ns[top[0]]) == index.graphs.attributed_ns
    assert int(table.gpu_self_ns.sum()) == index.graphs.attributed_ns  # every attributed kernel in one module


@pytest.mark.skipif(not FLUX.is_dir(), reason="../shared/traces is not beside the repo")
def test_the_module_table_does_not_count_a_continued_module_twice():
    from kinetoscope.analysis.tables.ops import module_table
    trace = FLUX / "profile_trace_rank_0.json.gz"
    plain = load_trace(str(trace), cache_dir=None)
    model = with_graph_reference(plain, str(trace))
    alone, table = module_table(plain, TableIndex.build(plain)), module_table(model, TableIndex.build(model))
    for column in ("calls", "gpu_self_ns", "gpu_total_ns", "cpu_total_ns"):
        assert getattr(table, column).tolist() == getattr(alone, column).tolist(), column
