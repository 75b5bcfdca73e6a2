"""views.profiler_tables through the plugin's routes: sort, filter, paging, windows, search "n of m"."""
from __future__ import annotations

import json

import pytest
from conftest import kernel, launch, op, plugin_apps, trace_doc
from werkzeug.test import Client

PREFIX = "/data/plugin/kinetoscope"


def _doc():
    events = []
    for i in range(6):  # aten::relu launches relu_k at 100 i + 20; aten::mm launches gemm at 100 i + 60
        t = 100 * i
        events += [op("aten::relu", t, 30, **{"Input Dims": [[8 << (i % 2), 4]]}), launch(t + 5, 5, 2 * i + 1),
                   kernel("relu_k", t + 20, 4, 2 * i + 1),
                   op("aten::mm", t + 40, 40), launch(t + 45, 5, 2 * i + 2), kernel("gemm", t + 60, 20, 2 * i + 2)]
    return trace_doc(events)


@pytest.fixture(scope="module")
def routes(tmp_path_factory):
    with plugin_apps(_doc(), tmp_path_factory.mktemp("pt")) as (apps, sid):
        def get(route, query):
            response = Client(apps[f"/{route}"]).get(f"{PREFIX}/{route}?span={sid}&{query}")
            return response.status_code, json.loads(response.get_data())
        yield get


def test_sort_filter_and_page(routes):
    code, body = routes("tables", "by=op&sort=name")
    assert code == 200 and [r["name"] for r in body["rows"]] == ["aten::mm", "aten::relu"]
    _, body = routes("tables", "by=op")  # default: GPU total, descending
    assert [(r["name"], r["gpu_total_us"], r["calls"], r["launches"]) for r in body["rows"]] == [
        ("aten::mm", 120.0, 6, 6), ("aten::relu", 24.0, 6, 6)]
    _, body = routes("tables", "by=op&filter=RELU")
    assert body["total"] == 1 and body["rows"][0]["name"] == "aten::relu"
    _, body = routes("tables", "by=kernel&sort=calls&offset=1&limit=1")
    assert body["total"] == 2 and len(body["rows"]) == 1 and body["offset"] == 1


def test_window_changes_the_tables(routes):
    _, whole = routes("tables", "by=kernel")
    _, part = routes("tables", "by=kernel&start_us=0&end_us=150")
    assert {r["name"]: r["calls"] for r in whole["rows"]} == {"gemm": 6, "relu_k": 6}
    assert {r["name"]: r["calls"] for r in part["rows"]} == {"gemm": 1, "relu_k": 2}
    assert part["window"] == {"start_us": 0.0, "end_us": 150.0} and whole["window"] is None
    assert part["rows"][0]["launched_by"] == [{"name": "aten::mm", "gpu_us": 20.0, "calls": 1}]


def test_search_n_of_m(routes):
    code, body = routes("search", "q=relu")
    assert code == 200 and body["total"] == 12 and body["names_matched"] == 2  # 6 ops + 6 kernels
    starts = body["hits"]["start_us"]
    assert starts == sorted(starts) and starts[:2] == [0.0, 20.0]
    assert [body["names"][i] for i in body["hits"]["name"][:2]] == ["aten::relu", "relu_k"]
    _, page = routes("search", "q=relu&offset=10&limit=5")
    assert page["hits"]["start_us"] == starts[10:] and page["total"] == 12
    _, none = routes("search", "q=%20%20")
    assert none["total"] == 0 and none["hits"]["row"] == []


def test_group_by_stack_without_frames_is_the_plain_table(routes):
    code, body = routes("tables", "by=op&group=stack")
    assert code == 200 and body["group"] == "stack" and [r["frame"] for r in body["rows"]] == [None, None]
    code, body = routes("tables", "by=kernel&group=stack")
    assert code == 400 and "group=stack" in body["error"]["message"]


def test_group_by_input_shape(routes):
    """record_shapes: one op row per (name, Input Dims); ops without shapes keep a row of their own."""
    code, body = routes("tables", "by=op&group=shape&sort=name")
    assert code == 200 and body["group"] == "shape"
    assert [(r["name"], r["shapes"], r["calls"], r["gpu_total_us"]) for r in body["rows"]] == [
        ("aten::mm", None, 6, 120.0), ("aten::relu", "[[8, 4]]", 3, 12.0), ("aten::relu", "[[16, 4]]", 3, 12.0)]
    _, found = routes("tables", "by=op&group=shape&filter=16,%204")
    assert [(r["name"], r["shapes"]) for r in found["rows"]] == [("aten::relu", "[[16, 4]]")]
    _, part = routes("tables", "by=op&group=shape&start_us=0&end_us=150")  # a window: the calls inside it
    assert {(r["name"], r["shapes"]): r["calls"] for r in part["rows"]} == {("aten::relu", "[[8, 4]]"): 1, ("aten::mm", None): 2,
                                                                        ("aten::relu", "[[16, 4]]"): 1}
    code, body = routes("tables", "by=module&group=shape")
    assert code == 400 and "group=shape" in body["error"]["message"]


def test_the_tables_route_keeps_rows_with_the_same_cut_name_apart(tmp_path):
    """Two ops whose names differ only after character 1,000: the `tables` route shows the same cut name on both
    rows and a different `name_key` (with `name_chars`) on each, so the tab and scripts tell them apart."""
    stem = "aten::" + "y" * 1200
    events = [op(stem + "_a", 0, 30), launch(5, 5, 1), kernel("k1", 20, 4, 1), op(stem + "_b", 50, 30), launch(55, 5, 2),
              kernel("k2", 70, 4, 2)]
    with plugin_apps(trace_doc(events), tmp_path) as (apps, sid):
        body = json.loads(Client(apps["/tables"]).get(f"{PREFIX}/tables?span={sid}&by=op").get_data())
    names = {r["name"] for r in body["rows"]}
    assert len(body["rows"]) == 2 and len(names) == 1 and len(next(iter(names))) == 1000
    assert len({r["name_key"] for r in body["rows"]}) == 2 and {r["name_chars"] for r in body["rows"]} == {len(stem) + 2}


def test_the_name_route_gives_a_cut_name_whole_by_its_key(tmp_path):
    """`name?span=&key=` answers the full text of a name cut in the tables (by the row's `name_key`); a key no name
    has is a 404, a malformed or missing one a 400."""
    stem = "aten::" + "z" * 1500
    events = [op(stem + "_a", 0, 30), launch(5, 5, 1), kernel("k1", 20, 4, 1), op(stem + "_b", 50, 30), launch(55, 5, 2),
              kernel("k2", 70, 4, 2)]
    with plugin_apps(trace_doc(events), tmp_path) as (apps, sid):
        client = Client(apps["/name"])
        rows = json.loads(Client(apps["/tables"]).get(f"{PREFIX}/tables?span={sid}&by=op").get_data())["rows"]
        answers = {}
        for row in rows:
            response = client.get(f"{PREFIX}/name?span={sid}&key={row['name_key']}")
            assert response.status_code == 200 and response.content_type.startswith("application/json")
            answers[row["name_key"]] = json.loads(response.get_data())
        assert sorted(a["name"] for a in answers.values()) == [stem + "_a", stem + "_b"]
        assert all(a["chars"] == len(stem) + 2 and a["cut"] is False and a["key"] == k for k, a in answers.items())
        assert client.get(f"{PREFIX}/name?span={sid}&key=0000000000000000").status_code == 404
        assert client.get(f"{PREFIX}/name?span={sid}&key=nothex").status_code == 400
        assert client.get(f"{PREFIX}/name?span={sid}").status_code == 400
        assert client.post(f"{PREFIX}/name?span={sid}&key=0000000000000000").status_code == 405
        assert client.get(f"{PREFIX}/name?span=0123456789ab&key=0000000000000000").status_code == 404  # unknown span
