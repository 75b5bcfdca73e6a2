"""views.extra_tables (and the kernel split) through the plugin's `tables` route: the module tree, memory per op,
user annotations and kernel sequences, with filters, sorts, pages, windows and refusals."""
from __future__ import annotations

import json

import pytest
from conftest import kernel, launch, memory, op, plugin_apps, trace_doc
from werkzeug.test import Client

PREFIX = "/data/plugin/kinetoscope"


def _module(name: str, ts: float, dur: float) -> dict:
    return op(f"nn.Module: {name}", ts, dur, cat="python_function")


def _doc():
    """Four calls of Net_0 (Linear_0 then ReLU_0), each under a `## fwd ##` annotation (CPU and GPU); aten::addmm
    launches gemm (grid 8, or 16 in the last call) and allocates 64 B on GPU0; aten::relu launches relu_k."""
    events = []
    for i in range(4):
        t, c = 1000 * i, 10 * i
        events += [op("## fwd ##", t, 300, cat="user_annotation"), _module("Net_0", t + 10, 280),
                   _module("Linear_0", t + 20, 100), op("aten::addmm", t + 30, 80), launch(t + 40, 5, c + 1),
                   memory(t + 50, 64), memory(t + 100, -64),
                   {**kernel("gemm", t + 400, 20, c + 1), "args": {"device": 0, "stream": 7, "correlation": c + 1,
                                                                  "grid": [16 if i == 3 else 8, 1, 1], "block": [128, 1, 1]}},
                   _module("ReLU_0", t + 150, 100), op("aten::relu", t + 160, 80), launch(t + 170, 5, c + 2),
                   kernel("relu_k", t + 425, 5, c + 2),
                   {"ph": "X", "cat": "gpu_user_annotation", "name": "## fwd ##", "pid": 0, "tid": 7, "ts": t + 400,
                    "dur": 30, "args": {"device": 0, "stream": 7}}]
    return trace_doc(events)


@pytest.fixture(scope="module")
def routes(tmp_path_factory):
    with plugin_apps(_doc(), tmp_path_factory.mktemp("extra")) as (apps, sid):
        def get(query):
            response = Client(apps["/tables"]).get(f"{PREFIX}/tables?span={sid}&{query}")
            assert response.headers["Content-Type"].startswith("application/json")
            assert len(response.get_data()) < 2_000_000
            return response.status_code, json.loads(response.get_data())
        yield get


def test_module_tree_route(routes):
    code, body = routes("by=module_tree")
    assert code == 200 and body["by"] == "module_tree" and body["total"] == 3
    rows = body["rows"]
    assert [(r["name"], r["parent"], r["depth"], r["occurrences"]) for r in rows] == [
        ("Net_0", -1, 0, 4), ("Linear_0", 0, 1, 4), ("ReLU_0", 0, 1, 4)]
    assert [r["device_us"] for r in rows] == [100.0, 80.0, 20.0] and rows[0]["self_device_us"] == 0.0
    assert rows[1]["host_us"] == 400.0 and rows[1]["self_host_us"] == 4 * (100 - 80)
    _, found = routes("by=module_tree&filter=relu")  # the match and its ancestors
    assert [r["name"] for r in found["rows"]] == ["Net_0", "ReLU_0"]
    _, part = routes("by=module_tree&start_us=0&end_us=500")
    assert [r["occurrences"] for r in part["rows"]] == [1, 1, 1]


def test_memory_route(routes):
    code, body = routes("by=memory")
    assert code == 200 and body["totals"]["devices"] == ["GPU0"]
    (row,) = body["rows"]
    assert (row["name"], row["device"], row["calls"], row["self_alloc_count"], row["self_alloc_bytes"],
            row["self_freed_bytes"], row["increase_bytes"], row["peak_increase_bytes"]) == ("aten::addmm", "GPU0", 4, 4, 256, 256, 0, 64)
    code, _ = routes("by=memory&sort=-peak_increase")
    assert code == 200


def test_annotation_route(routes):
    _, gpu = routes("by=annotation")
    assert [(r["name"], r["count"], r["total_us"], r["share"]) for r in gpu["rows"]] == [("## fwd ##", 4, 120.0, 1.0)]
    _, cpu = routes("by=annotation&side=cpu&scope=top&sort=-count")
    assert cpu["rows"][0]["total_us"] == 1200.0 and cpu["options"] == {"side": "cpu", "scope": "top"}


def test_sequences_route(routes):
    code, body = routes("by=sequences&min_len=2&max_len=3&top=5")
    assert code == 200
    first = body["rows"][0]
    assert first["kernels"] == ["gemm", "relu_k"] and first["occurrences"] == 4 and first["total_us"] == 100.0
    assert first["share"] == 1.0 and first["launched_by"] == [{"name": "aten::addmm", "occurrences": 4}]
    _, rooted = routes("by=sequences&root=aten::addmm&min_len=2")  # HTA's: the calls and what each launched
    assert rooted["total"] == 0  # each aten::addmm launches one kernel: fewer than min_len
    _, rooted = routes("by=sequences&root=addmm&min_len=1")
    (row,) = rooted["rows"]
    assert (row["op"], row["kernels"], row["occurrences"], row["total_us"], row["cpu_us"]) == ("aten::addmm", ["gemm"], 4, 80.0, 320.0)


def test_kernel_split_route(routes):
    _, plain = routes("by=kernel")
    _, split = routes("by=kernel&split=launch")
    assert plain["total"] == 2 and split["total"] == 3 and split["split"] == "launch"
    gemm = [r for r in split["rows"] if r["name"] == "gemm"]
    assert sorted((r["grid"], r["calls"]) for r in gemm) == [(8.0, 3), (16.0, 1)]
    _, by_op = routes("by=kernel&split=op_launch")
    assert {r["op"] for r in by_op["rows"]} == {"aten::addmm", "aten::relu"}


@pytest.mark.parametrize("query", ["by=module_tree&sort=name", "by=memory&sort=total", "by=op&split=launch",
                                   "by=memory&group=stack", "by=sequences&min_len=5&max_len=3", "by=sequences&max_len=99",
                                   "by=sequences&min_len=1",
                                   "by=annotation&side=tpu", "by=kernel&split=grid", "by=sequences&top=0",
                                   "by=sequences&root=" + "x" * 201])
def test_refusals(routes, query):
    code, body = routes(query)
    assert code == 400 and body["error"]["code"] == 400
