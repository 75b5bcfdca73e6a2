"""analysis.tables against torch-tb-profiler 0.4.3's own Operator and Kernel views of resnet50_num_workers_0
(tests/reference/tbprof_resnet50_nw0.json, written by tests/reference/tbprof_tables.py from the old plugin's
RunGenerator). Its figures are whole µs."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_TRACES, requires_shared
from kinetoscope.analysis.tables import index as T
from kinetoscope.analysis.tables import kernels as TK
from kinetoscope.analysis.tables import ops as TO
from kinetoscope.analysis.tables import rows as TR
from kinetoscope.trace.loader import load_trace

REFERENCE = json.loads((Path(__file__).parent / "reference" / "tbprof_resnet50_nw0.json").read_text())
TRACE = SHARED_TRACES / "resnet50_num_workers_0" / REFERENCE["trace"]


@pytest.fixture(scope="module")
def model_index():
    model = load_trace(str(TRACE), cache_dir=None)
    return model, T.TableIndex.build(model)


def _us(ns: int) -> int:
    return int(round(ns / 1e3))


@requires_shared
def test_top_operators_match_torch_tb_profiler(model_index):
    """The 15 ops with the most device self time, with calls, device self/total and host self/total."""
    model, index = model_index
    table = TO.op_table(model, index)
    order = np.lexsort((-table.cpu_total_ns, -table.gpu_self_ns))[:len(REFERENCE["operators_top"])]
    mine = [(model.names[table.name_id[i]], int(table.calls[i]), _us(table.gpu_self_ns[i]), _us(table.gpu_total_ns[i]),
             _us(table.cpu_self_ns[i]), _us(table.cpu_total_ns[i])) for i in order.tolist()]
    theirs = [(op["name"], op["calls"], op["device_self_duration"], op["device_total_duration"],
               op["host_self_duration"], op["host_total_duration"]) for op in REFERENCE["operators_top"]]
    assert mine == theirs


@requires_shared
def test_operators_by_input_shape_match_torch_tb_profiler(model_index):
    """Its Operator view grouped by input shape: the 15 (op, Input Dims) groups with the most device self time,
    each with the same figures, and the same number of groups."""
    model, index = model_index
    table = TO.op_table(model, index, group="shape")
    mine = {(model.names[n], model.shape_strings[s]): c for n, s, c in zip(*(a.tolist() for a in (table.name_id, table.shape_id, table.calls)))}
    theirs = {(n, s): c for n, s, c in REFERENCE["operators_by_input_shape_calls"]}
    # the same groups: 2021 `Operator` events without a namespace (`detach_`) are ops, not annotations
    assert len(theirs) == REFERENCE["operators_by_input_shape_count"] and set(mine) == set(theirs)
    assert any("::" not in name for name, _ in mine)
    # More calls here only where an op runs directly inside an op of the same name: torch-tb-profiler merges such a
    # sole child into its parent (op_tree.remove_dup_nodes); torch.profiler, and this table, count both.
    for key in (k for k in mine if mine[k] != theirs[k]):
        rows = np.flatnonzero((model.name_id == model.names.index(key[0])) & (model.shape_id == model.shape_strings.index(key[1])))
        nested = [r for r in rows.tolist() if model.depth[r] > 0 and r - 1 in rows.tolist() and model.end_ns[r - 1] >= model.end_ns[r]]
        assert mine[key] - theirs[key] == len(nested) > 0, key
    order = np.lexsort((-table.cpu_total_ns, -table.gpu_self_ns))[:len(REFERENCE["operators_by_input_shape_top"])]
    top = [(model.names[table.name_id[i]], model.shape_strings[table.shape_id[i]], int(table.calls[i]), _us(table.gpu_self_ns[i]),
             _us(table.gpu_total_ns[i]), _us(table.cpu_self_ns[i]), _us(table.cpu_total_ns[i])) for i in order.tolist()]
    theirs = [(op["name"], op["input_shape"], op["calls"], op["device_self_duration"], op["device_total_duration"],
               op["host_self_duration"], op["host_total_duration"]) for op in REFERENCE["operators_by_input_shape_top"]]
    assert top == theirs
    plain = TO.op_table(model, index)  # the groups of a name add up to its row
    for field in ("calls", "cpu_total_ns", "cpu_self_ns", "gpu_total_ns", "launches"):
        grouped = np.bincount(table.name_id, weights=getattr(table, field), minlength=len(model.names))
        np.testing.assert_array_equal(grouped[plain.name_id], getattr(plain, field), err_msg=field)


@requires_shared
def test_every_kernel_matches_torch_tb_profiler(model_index):
    model, index = model_index
    table = TK.kernel_table(model, index)
    mine = {model.names[r["name_id"]]: r for r in TR.records(model, table) if r["kind"] == "kernel"}
    assert len(mine) == len(REFERENCE["kernels"])
    for theirs in REFERENCE["kernels"]:
        row = mine[theirs["name"]]
        assert (row["calls"], _us(row["total_ns"]), _us(row["max_ns"]), _us(row["min_ns"])) == (
            theirs["calls"], theirs["total_us"], theirs["max_us"], theirs["min_us"])
        assert row["tensor_core"] == (theirs["tensor_cores"] == "Yes")
        # both weight each call by its duration; theirs are rounded to 2 decimals
        assert row["blocks_per_sm"] == pytest.approx(theirs["mean_blocks_per_sm"], abs=0.006)
        assert row["occupancy"] == pytest.approx(theirs["mean_occupancy_pct"], abs=0.006)
    top = [model.names[i] for i in table.name_id[:10].tolist()]
    assert top == [k["name"] for k in REFERENCE["kernels"][:10]]


@requires_shared
def test_memcpy_rows_carry_bytes_and_bandwidth(model_index):
    model, index = model_index
    rows = {r["name"]: r for r in TR.records(model, TK.kernel_table(model, index))}
    copy = rows["Memcpy HtoD (Pageable -> Device)"]
    assert copy["kind"] == "memcpy" and copy["bytes"] == 115607040.0  # 6 batches: 32x3x224x224 float32 images + 32 int64 labels
    assert copy["bandwidth_gbps"] == pytest.approx(copy["bytes"] / copy["total_ns"])
    assert copy["grid"] is None and rows[REFERENCE["kernels"][0]["name"]]["bytes"] is None


@requires_shared
def test_a_2021_trace_groups_ops_by_the_first_frame_of_their_call_stack(model_index):
    """No python_function events in 2021 files: the ops' own `Call stack` args give the frame; every group of a
    name adds up to the name's row, and the forward convolutions run in torch's conv.py."""
    model, index = model_index
    table = TO.op_table(model, index, group="stack")
    frames = {model.names[f] for f in table.frame_id.tolist() if f >= 0}
    assert frames and all(re.search(r"\.py\(\d+\): ", f) for f in frames)
    rows = {(model.names[n], model.names[f] if f >= 0 else None) for n, f in zip(table.name_id.tolist(), table.frame_id.tolist())}
    assert any(name == "aten::conv2d" and frame and frame.endswith("_conv_forward") for name, frame in rows)
    plain = TO.op_table(model, index)
    for field in ("calls", "cpu_total_ns", "gpu_total_ns"):
        grouped = np.bincount(table.name_id, weights=getattr(table, field), minlength=len(model.names))
        np.testing.assert_array_equal(grouped[plain.name_id], getattr(plain, field), err_msg=field)
