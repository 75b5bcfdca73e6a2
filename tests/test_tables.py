"""analysis.tables: the operator, kernel and module tables, on a trace small enough to check by hand, and
against ../shared/oracle/comm.jsonl (kernel calls and totals per name) on every shared real trace."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import SHARED, SHARED_TRACES, kernel, launch, op, requires_shared, trace_doc, write_trace
from kinetoscope.analysis.idle.launch_offsets import launch_offsets, launch_table
from kinetoscope.analysis.tables import index as T
from kinetoscope.analysis.tables import kernels as TK
from kinetoscope.analysis.tables import ops as TO
from kinetoscope.analysis.tables import rows as TR
from kinetoscope.trace.kinds import Kind
from kinetoscope.trace.loader import load_trace

COMM = SHARED / "oracle" / "comm.jsonl"
REFERENCE = [json.loads(line) for line in COMM.read_text().splitlines()] if COMM.is_file() else []


def _hand_trace():
    """Times in µs. Thread 1:

        [aten::linear 0-100......................................)  [aten::relu 150-170)
           [aten::addmm 10-60.......)   [aten::add_ 70-90)              launch 155 -> relu_k 200-204
             launch 20 -> gemm 100-130    launch 75 -> add_k 140-142
             launch 30 -> gemm 131-151
        launch 120 (outside every op) -> add_k 160-163
        annotation "## fwd ##" 0-200 (not an op: neither a row nor a parent)
    """
    return trace_doc([
        op("## fwd ##", 0, 200, cat="user_annotation"),
        op("aten::linear", 0, 100), op("aten::addmm", 10, 50), op("aten::add_", 70, 20), op("aten::relu", 150, 20),
        launch(20, 5, 1), launch(30, 5, 2), launch(75, 5, 3), launch(120, 5, 4), launch(155, 5, 5),
        kernel("gemm", 100, 30, 1), kernel("gemm", 131, 20, 2), kernel("add_k", 140, 2, 3), kernel("add_k", 160, 3, 4),
        kernel("relu_k", 200, 4, 5),
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 210, "dur": 10,
         "args": {"device": 0, "stream": 7}},
    ])


@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    path = write_trace(tmp_path_factory.mktemp("tables") / "hand.pt.trace.json", _hand_trace())
    model = load_trace(str(path), cache_dir=None)
    return model, T.TableIndex.build(model)


def _by_name(model, table):
    return {r["name"]: r for r in TR.records(model, table)}


def test_op_table_by_hand(hand):
    model, index = hand
    table = TO.op_table(model, index)
    rows = _by_name(model, table)
    assert list(rows) == ["aten::linear", "aten::addmm", "aten::relu", "aten::add_"]  # by GPU total, then CPU total
    linear, addmm = rows["aten::linear"], rows["aten::addmm"]
    assert (linear["calls"], linear["cpu_total_ns"], linear["cpu_self_ns"]) == (1, 100_000, 30_000)
    assert (linear["gpu_self_ns"], linear["gpu_total_ns"], linear["launches"]) == (0, 52_000, 3)
    assert (addmm["cpu_self_ns"], addmm["gpu_self_ns"], addmm["gpu_total_ns"], addmm["launches"]) == (40_000, 50_000, 50_000, 2)
    assert rows["aten::add_"]["cpu_self_ns"] == 15_000  # its launch call (5 µs) is not its own work
    assert rows["aten::add_"]["gpu_total_ns"] == 2_000 and rows["aten::relu"]["gpu_total_ns"] == 4_000
    assert "## fwd ##" not in rows
    # linked: every kernel (the memcpy has no launch call); the one launched at 120 ran outside every op
    assert table.linked_gpu_ns == 59_000 and table.unowned_gpu_ns == 3_000 and table.top_level_gpu_ns == 56_000


def test_kernel_table_by_hand(hand):
    model, index = hand
    table = TK.kernel_table(model, index)
    rows = _by_name(model, table)
    assert list(rows) == ["gemm", "Memcpy HtoD", "add_k", "relu_k"]
    gemm = rows["gemm"]
    assert (gemm["calls"], gemm["total_ns"], gemm["min_ns"], gemm["max_ns"], gemm["mean_ns"]) == (2, 50_000, 20_000, 30_000, 25_000)
    assert rows["Memcpy HtoD"]["kind"] == "memcpy" and gemm["kind"] == "kernel"
    assert table.device_ns == 69_000
    assert gemm["share"] == pytest.approx(50 / 69)
    launchers = TK.kernel_launchers(model, index, table.name_id)
    add_k = model.names.index("add_k")
    assert [(model.names[o] if o >= 0 else None, ns, n) for o, ns, n in launchers[add_k]] == [
        (None, 3_000, 1), ("aten::add_", 2_000, 1)]


def test_window_clips_and_counts_overlaps(hand):
    model, index = hand
    base = model.start_ns
    window = (base + 40_000, base + 141_000)
    ops = _by_name(model, TO.op_table(model, index, window))
    assert ops["aten::linear"]["cpu_total_ns"] == 60_000  # 40-100
    assert ops["aten::addmm"]["cpu_total_ns"] == 20_000 and ops["aten::linear"]["cpu_self_ns"] == 20_000
    # gemm 100-130 whole, gemm 131-141 of 131-151, add_k 140-141 of 140-142
    assert ops["aten::addmm"]["gpu_total_ns"] == 40_000 and ops["aten::add_"]["gpu_total_ns"] == 1_000
    assert "aten::relu" not in ops
    kernels = _by_name(model, TK.kernel_table(model, index, window))
    assert kernels["gemm"]["total_ns"] == 40_000 and kernels["gemm"]["min_ns"] == 10_000
    assert kernels["add_k"]["calls"] == 1 and "relu_k" not in kernels


def test_empty_window_and_empty_trace(hand, tmp_path):
    model, index = hand
    far = (model.stop_ns + 10, model.stop_ns + 20)
    assert TO.op_table(model, index, far).name_id.size == 0
    assert TK.kernel_table(model, index, far).device_ns == 0
    empty = load_trace(str(write_trace(tmp_path / "e.pt.trace.json", trace_doc([op("aten::x", 0, 1)]))), cache_dir=None)
    eindex = T.TableIndex.build(empty)
    assert TK.kernel_table(empty, eindex).name_id.size == 0
    assert TR.records(empty, TO.op_table(empty, eindex))[0]["calls"] == 1
    assert TO.module_table(empty, eindex).name_id.size == 0
    bare = load_trace(str(write_trace(tmp_path / "k.pt.trace.json", trace_doc([kernel("k", 0, 1, 5), kernel("k", 2, 1, 6)]))),
                      cache_dir=None)  # kernels whose launches were not recorded, and no op at all
    bindex = T.TableIndex.build(bare)
    ktable = TK.kernel_table(bare, bindex)
    assert ktable.calls.tolist() == [2]
    assert TK.kernel_launchers(bare, bindex, ktable.name_id) == {int(ktable.name_id[0]): [(-1, 2000, 2)]}  # (no op)
    assert TO.op_table(bare, bindex).linked_gpu_ns == 0


def test_modules(tmp_path):
    doc = trace_doc([
        op("nn.Module: Net_0", 0, 100, cat="python_function"), op("nn.Module: Linear_0", 10, 40, cat="python_function"),
        op("aten::linear", 12, 30), launch(15, 2, 1), kernel("gemm", 50, 8, 1),
        op("nn.Module: Linear_0", 60, 30, cat="python_function"), op("aten::linear", 62, 20), launch(65, 2, 2),
        kernel("gemm", 70, 6, 2),
    ])
    model = load_trace(str(write_trace(tmp_path / "m.pt.trace.json", doc)), cache_dir=None)
    rows = _by_name(model, TO.module_table(model, T.TableIndex.build(model)))
    assert rows["nn.Module: Linear_0"]["calls"] == 2 and rows["nn.Module: Linear_0"]["gpu_total_ns"] == 14_000
    assert rows["nn.Module: Net_0"]["gpu_total_ns"] == 14_000 and rows["nn.Module: Net_0"]["cpu_self_ns"] == 30_000


@pytest.mark.parametrize("name, expected", [
    ("volta_h884gemm_64x64_ldg8_nn", True), ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_nn", True),
    ("ampere_fp16_s16816gemm_fp16_128x64_ldg8_f2f_stages_32x6_nn", True),
    ("sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize96x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", True),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", True),
    ("void cutlass::Kernel<cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8>(Params)", True),
    ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0", True),
    ("volta_sgemm_64x64_nt", False), ("void at::native::vectorized_elementwise_kernel<4, ...>", False),
    ("void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, false, true>", False),
])
def test_tensor_core_signatures(name, expected):
    assert T.uses_tensor_cores(name) is expected


@pytest.fixture(scope="module")
def shared_models():
    cache = {}

    def get(rel):
        if rel not in cache:
            model = load_trace(str(SHARED_TRACES / rel), cache_dir=None)
            cache[rel] = (model, T.TableIndex.build(model))
        return cache[rel]
    return get


@requires_shared
@pytest.mark.parametrize("ref", REFERENCE, ids=lambda r: r["trace"].split("/")[-1][:40])
def test_kernels_match_the_reference(ref, shared_models):
    model, index = shared_models(ref["trace"])
    table = TK.kernel_table(model, index)
    kernels = {model.names[r["name_id"]]: r for r in TR.records(model, table) if r["kind"] == "kernel"}  # full names
    total = sum(r["total_ns"] for r in kernels.values())
    assert total / 1e3 == pytest.approx(ref["gpu_kernel_total_us"], rel=1e-9, abs=1e-3)
    for theirs in ref["kernels"]:
        mine = kernels[theirs["name"]]
        assert mine["calls"] == theirs["calls"]
        assert mine["total_ns"] / 1e3 == pytest.approx(theirs["total_us"], rel=1e-9, abs=1e-3)
    top = sorted(kernels.values(), key=lambda r: -r["total_ns"])[:len(ref["kernels"])]
    assert [r["total_ns"] for r in top] == sorted((round(k["total_us"] * 1e3) for k in ref["kernels"]), reverse=True)


@requires_shared
@pytest.mark.parametrize("ref", REFERENCE, ids=lambda r: r["trace"].split("/")[-1][:40])
def test_top_level_ops_hold_all_linked_gpu_time(ref, shared_models):
    """Sum over top-level op calls of their GPU total = linked GPU time (less what ran outside every op),
    for the whole trace and for windows; and windows that tile the trace add up to it."""
    model, index = shared_models(ref["trace"])
    whole = TO.op_table(model, index)
    linked = int(np.where(index.act_linked, index.act_end_ns - index.act_start_ns, 0).sum())
    assert whole.linked_gpu_ns == linked
    assert whole.top_level_gpu_ns + whole.unowned_gpu_ns == linked
    owned = index.act_linked & (index.ops.owner >= 0)
    assert whole.top_level_gpu_ns == int((index.act_end_ns - index.act_start_ns)[owned].sum())
    if model.n_events == 0:
        return
    cuts = np.linspace(model.start_ns, model.stop_ns + 1, 5).astype(np.int64)
    parts = [TO.op_table(model, index, (int(a), int(b))) for a, b in zip(cuts[:-1], cuts[1:])]
    assert sum(p.top_level_gpu_ns for p in parts) == whole.top_level_gpu_ns
    assert sum(p.linked_gpu_ns for p in parts) == linked
    kparts = [TK.kernel_table(model, index, (int(a), int(b))) for a, b in zip(cuts[:-1], cuts[1:])]
    assert sum(p.device_ns for p in kparts) == TK.kernel_table(model, index).device_ns
    for p in parts:
        assert np.all(p.cpu_self_ns <= p.cpu_total_ns) and np.all(p.gpu_self_ns <= p.gpu_total_ns)


@requires_shared
def test_memcpy_rows_are_kept(shared_models):
    model, index = shared_models("resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    kinds = {r["kind"] for r in TR.records(model, TK.kernel_table(model, index))}
    assert {"kernel", "memcpy"} <= kinds
    assert Kind.MEMCPY in set(index.act_name_kind.tolist())


def test_ops_grouped_by_their_innermost_user_frame(tmp_path):
    """with_stack: python_function frames around the ops; builtins and nn.Module regions are climbed past."""
    pf = "python_function"
    doc = trace_doc([
        op("train.py(10): step", 0, 100, cat=pf), op("nn.Module: Linear_0", 5, 40, cat=pf),
        op("torch/nn/modules/linear.py(125): forward", 6, 38, cat=pf), op("<built-in method linear>", 7, 36, cat=pf),
        op("aten::linear", 8, 30), launch(9, 2, 1), kernel("gemm", 50, 10, 1),
        op("train.py(12): loss", 60, 30, cat=pf), op("aten::linear", 61, 20), launch(62, 2, 2), kernel("gemm", 70, 5, 2),
        op("aten::linear", 120, 5),  # outside every frame
    ])
    model = load_trace(str(write_trace(tmp_path / "s.pt.trace.json", doc)), cache_dir=None)
    index = T.TableIndex.build(model)
    rows = {(r["name"], r["frame"]): r for r in TR.records(model, TO.op_table(model, index, group="stack"))}
    assert set(rows) == {("aten::linear", "torch/nn/modules/linear.py(125): forward"), ("aten::linear", "train.py(12): loss"),
                         ("aten::linear", None)}
    assert rows[("aten::linear", "torch/nn/modules/linear.py(125): forward")]["gpu_total_ns"] == 10_000
    assert rows[("aten::linear", "train.py(12): loss")]["calls"] == 1 and rows[("aten::linear", None)]["calls"] == 1
    plain = TO.op_table(model, index)
    assert plain.frame_id is None and plain.calls.tolist() == [3]
    bare_model = load_trace(str(write_trace(tmp_path / "b.pt.trace.json", trace_doc([op("aten::x", 0, 1)]))), cache_dir=None)
    bare = T.TableIndex.build(bare_model)
    assert bare.sub_groups(bare_model, "stack") is None and bare.sub_groups(bare_model, "shape") is None


def test_the_op_table_groupings_are_made_once_on_first_use(tmp_path, monkeypatch):
    """A TableIndex makes no grouping of the op table until a table asks for it (a report reads none), then keeps it;
    the server's (`with_sub_groups`) has every one from the start, counted in `Prepared.nbytes`."""
    from kinetoscope import pipeline
    pf = "python_function"
    doc = trace_doc([op("nn.Module: Net_0", 0, 100, cat=pf), op("train.py(12): loss", 1, 90, cat=pf),
                     op("aten::linear", 8, 30, args={"Input Dims": [[4, 4]]}), launch(9, 2, 1), kernel("gemm", 50, 10, 1)])
    model = load_trace(str(write_trace(tmp_path / "g.pt.trace.json", doc)), cache_dir=None)
    made = []
    for name in ("_stack_groups", "_shape_groups", "_module_groups"):
        real = getattr(T, name)
        monkeypatch.setattr(T, name, lambda *a, real=real, name=name: made.append(name) or real(*a))
    index = T.TableIndex.build(model)
    TO.op_table(model, index)
    assert made == [] and index.sub == {}
    first = TO.op_table(model, index, group="shape")
    assert made == ["_shape_groups"] and TO.op_table(model, index, group="shape").shape_id.tolist() == first.shape_id.tolist()
    assert made == ["_shape_groups"]  # kept
    before = pipeline._nbytes(index)
    index.with_sub_groups(model)
    assert sorted(made) == ["_module_groups", "_shape_groups", "_stack_groups"] and set(index.sub) == set(T.SUB_GROUPS)
    assert pipeline._nbytes(index) > before  # what the groupings hold is counted


def test_ops_grouped_by_their_innermost_module(tmp_path):
    """with_modules: one row per (op, innermost nn.Module region); ops outside every module group under None."""
    pf = "python_function"
    doc = trace_doc([
        op("nn.Module: Net_0", 0, 100, cat=pf), op("nn.Module: Linear_0", 5, 40, cat=pf),
        op("aten::linear", 8, 30), launch(9, 2, 1), kernel("gemm", 50, 10, 1),
        op("nn.Module: Linear_1", 50, 40, cat=pf), op("aten::linear", 51, 20), launch(52, 2, 2), kernel("gemm", 70, 5, 2),
        op("aten::add", 95, 2),  # in Net_0 only
        op("aten::linear", 120, 5),  # outside every module (as backward ops are)
    ])
    model = load_trace(str(write_trace(tmp_path / "m.pt.trace.json", doc)), cache_dir=None)
    index = T.TableIndex.build(model)
    rows = {(r["name"], r["module"]): r for r in TR.records(model, TO.op_table(model, index, group="module"))}
    assert set(rows) == {("aten::linear", "nn.Module: Linear_0"), ("aten::linear", "nn.Module: Linear_1"),
                         ("aten::add", "nn.Module: Net_0"), ("aten::linear", None)}
    assert rows[("aten::linear", "nn.Module: Linear_0")]["gpu_total_ns"] == 10_000
    assert rows[("aten::linear", "nn.Module: Linear_1")]["gpu_total_ns"] == 5_000
    with pytest.raises(ValueError, match="unknown op table group"):
        TO.op_table(model, index, group="nope")
    bare = load_trace(str(write_trace(tmp_path / "b.pt.trace.json", trace_doc([op("aten::x", 0, 1)]))), cache_dir=None)
    bindex = T.TableIndex.build(bare)
    assert bindex.sub_groups(bare, "module") is None and TO.op_table(bare, bindex, group="module").module_id.tolist() == [-1]


def test_a_launch_belongs_to_the_op_its_external_id_names_in_both_tables(tmp_path):
    """Thread 1 (µs; ext = External id):

        [aten::first 0-10, ext 7)[aten::second 10-20, ext 8)
                                 launch 10+0 ext 7 -> k_first 30-35  (zero-length, on the boundary: time alone
                                                                      says aten::second, its External id aten::first)
                                   launch 12-14 ext 8 -> k_second 40-47
    """
    doc = trace_doc([
        op("aten::first", 0, 10, **{"External id": 7}), op("aten::second", 10, 10, **{"External id": 8}),
        launch(10, 0, 1, **{"External id": 7}), launch(12, 2, 2, **{"External id": 8}),
        kernel("k_first", 30, 5, 1), kernel("k_second", 40, 7, 2),
    ])
    model = load_trace(str(write_trace(tmp_path / "boundary.pt.trace.json", doc)), cache_dir=None)
    index = T.TableIndex.build(model)
    rows = _by_name(model, TO.op_table(model, index))
    assert (rows["aten::first"]["gpu_self_ns"], rows["aten::first"]["launches"]) == (5_000, 1)
    assert (rows["aten::second"]["gpu_self_ns"], rows["aten::second"]["launches"]) == (7_000, 1)
    by_op = {r["name"]: r["count"] for r in launch_table(model, launch_offsets(model), by="op")}
    assert by_op == {"aten::first": 1, "aten::second": 1}
    launchers = TK.kernel_launchers(model, index, index.act_name_ids)
    first_op = model.names.index("aten::first")
    assert launchers[model.names.index("k_first")] == [(first_op, 5_000, 1)]
