"""Every route through werkzeug's test client: 200 with shape, 400 per bad parameter, 404, 405, 409,
422, a generic 500, and a table of path-traversal attempts on the static route."""
from __future__ import annotations

import gzip
import json
import logging
import threading
import time
from pathlib import Path

import pytest
from conftest import kernel, launch, memory, op, trace_doc, write_trace
from kinetoscope import pipeline
from kinetoscope.server import plugin as plugin_module
from kinetoscope.server import routes
from kinetoscope.server.plugin import KinetoscopePlugin
from kinetoscope.server.service import TraceService
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

PREFIX = "/data/plugin/kinetoscope"
XSS = "<img src=x onerror=alert(1)>"
DATA_ROUTES = ("summary", "markdown", "gaps", "launches", "memory", "stalls", "lanes", "event", "export")
DATA_ROUTES += ("tables", "search")  # the profiler tables and the name search (issue 16)
DATA_ROUTES += ("whatif", "critical_path")  # the what-if replay and the critical path (issue 28)
DATA_ROUTES += ("counters",)  # counter lanes, queue length and memcpy bandwidth (issue 27)


def gpu_doc() -> dict:
    """Two steps: a DataLoader wait, ops launching kernels (one named like markup), memory samples."""
    events = [op("ProfilerStep#1", 0, 400), op("aten::mm", 10, 30), launch(12, 5, 1), op(XSS, 60, 100),
              launch(150, 5, 2), op("ProfilerStep#2", 400, 400),
              op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 400, 300), launch(710, 5, 3),
              kernel("k1", 30, 20, 1), kernel(XSS, 160, 40, 2), kernel("k3", 720, 50, 3),
              memory(11, 1024, total=1024, reserved=2048), memory(61, 4096, total=5120, reserved=8192),
              memory(701, -4096, total=1024, reserved=8192)]
    return trace_doc(events)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("logs")
    write_trace(root / "gpu" / "worker0.1.pt.trace.json", gpu_doc())
    write_trace(root / "gpu" / "worker0.2.pt.trace.json.gz", gpu_doc(), gz=True)
    write_trace(root / "cpu" / "host.7.pt.trace.json",
                trace_doc([op("ProfilerStep#1", 0, 1000)] + [op("aten::add", 1 + 10 * i, 5) for i in range(60)]))
    write_trace(root / "broken" / "bad.3.pt.trace.json", '{"traceEvents": [{"ph": "X"')
    write_trace(root / "empty" / "none.4.pt.trace.json", trace_doc([]))
    return root


@pytest.fixture(scope="module")
def plugin(logdir, tmp_path_factory):
    instance = KinetoscopePlugin(base_plugin.TBContext(logdir=str(logdir), multiplexer=None))
    instance._service = TraceService(str(logdir), cache_dir=tmp_path_factory.mktemp("cache"), rescan_s=3600,
                                     decode_in_child=False, prepare=pipeline.prepare)
    yield instance
    instance._service.close()


@pytest.fixture(scope="module")
def apps(plugin):
    return plugin.get_plugin_apps()


def get(apps, route: str, query: str = "", method: str = "GET"):
    response = Client(apps["/" + route.split("/")[0] if "/" not in route else "/static/*"]).open(
        f"{PREFIX}/{route}{query}", method=method)
    return response


def body(response):
    data = response.get_data()
    return json.loads(gzip.decompress(data) if response.mimetype == "application/gzip" else data)


@pytest.fixture(scope="module")
def ids(apps):
    runs = body(get(apps, "runs"))["runs"]
    found = {f"{r['name']}/{s['file']}": s["id"] for r in runs for w in r["workers"] for s in w["spans"]}
    for sid in found.values():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and get(apps, "summary", f"?span={sid}").status_code == 409:
            time.sleep(0.05)
    return {"gpu": found["gpu/worker0.1.pt.trace.json"], "gz": found["gpu/worker0.2.pt.trace.json.gz"],
            "cpu": found["cpu/host.7.pt.trace.json"], "broken": found["broken/bad.3.pt.trace.json"],
            "empty": found["empty/none.4.pt.trace.json"]}


def test_plugin_metadata_and_literal_route_table(logdir):
    instance = KinetoscopePlugin(base_plugin.TBContext(logdir=str(logdir)))
    assert instance.plugin_name == "kinetoscope" and instance._service is None  # the constructor only stores
    meta = instance.frontend_metadata()
    assert meta.es_module_path == "/index.js" and meta.tab_name == "Kinetoscope"
    try:
        routes = set(instance.get_plugin_apps())
        assert instance.service().wait_scanned(5)  # get_plugin_apps starts the background scan
    finally:
        instance.service().close()
    assert routes == {"/index.js", "/static/bundle.js", "/static/*", "/runs", "/status", "/verdict", "/ranks", *(f"/{r}" for r in DATA_ROUTES),
                      "/compare", "/name"}  # name: a cut name whole by its key (tests/test_views_profiler_tables.py)


@pytest.mark.parametrize("make_logdir, active", [
    (lambda root: str(root), True),
    (lambda root: str(root / "no-traces"), False),
    (lambda root: "", False),
    (lambda root: str(root / "missing" / "dir"), False),
])
def test_is_active(logdir, make_logdir, active):
    (logdir / "no-traces").mkdir(exist_ok=True)
    instance = KinetoscopePlugin(base_plugin.TBContext(logdir=make_logdir(logdir), multiplexer=None))
    try:
        deadline = time.monotonic() + 5
        while instance.is_active() != active and time.monotonic() < deadline:
            time.sleep(0.01)
        assert instance.is_active() is active
    finally:
        if instance._service is not None:
            instance._service.close()


def test_runs(apps, ids):
    response = get(apps, "runs")
    assert response.status_code == 200 and response.mimetype == "application/json"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    payload = body(response)
    assert payload["scan_complete"] is True and [r["name"] for r in payload["runs"]] == ["broken", "cpu", "empty", "gpu"]
    gpu = payload["runs"][3]["workers"][0]
    assert gpu["name"] == "worker0" and [s["index"] for s in gpu["spans"]] == [1, 2]
    assert [s["span"] for s in gpu["spans"]] == ["1", "2"] and "/" not in gpu["spans"][0]["file"]
    assert all(len(s["id"]) == 12 and s["state"] in ("ready", "unloaded") for s in gpu["spans"])
    # as in `status`: a tab opening on a span whose lanes are published places it without asking `status`
    statuses = {t["id"]: t for t in body(get(apps, "status"))["traces"]}
    for s in gpu["spans"]:
        assert s["lanes_ready"] == (s["state"] == "ready") and s["duration_us"] == statuses[s["id"]]["duration_us"]
    assert any(s["lanes_ready"] and s["duration_us"] > 0 for s in gpu["spans"])


def test_status(apps, ids):
    all_traces = body(get(apps, "status"))["traces"]
    assert {t["id"] for t in all_traces} == set(ids.values())
    (one,) = body(get(apps, "status", f"?span={ids['broken']}"))["traces"]
    assert one["state"] == "error" and one["error"].startswith("broken/bad.3.pt.trace.json: ")
    (ready,) = body(get(apps, "status", f"?span={ids['gpu']}"))["traces"]
    assert ready["state"] == "ready" and ready["events"] == 11 and ready["progress"] == 1.0


SHAPES = {
    "summary": ("", {"id", "run", "worker", "span", "trace_start_ns", "duration_us", "events", "devices", "steps",
                     "launch", "memory", "verdict", "skipped", "warnings"}),
    "markdown": ("", {"id", "markdown"}),
    "gaps": ("&device=0", {"device", "total", "offset", "limit", "names", "gaps"}),
    "launches": ("", {"pairs", "short_kernels", "percentiles", "histogram", "by_kernel", "by_op"}),
    "memory": ("", {"devices"}),
    "stalls": ("", {"stalled_steps", "steps", "suggestion"}),
    "lanes": ("&width_px=800", {"start_us", "end_us", "width_px", "us_per_px", "names", "lanes", "gaps", "steps",
                                "flows", "merged", "rects"}),
    "event": ("&row=0", {"row", "name", "kind", "lane", "start_us", "dur_us", "launch", "activities"}),
    "export": ("", {"traceEvents", "baseTimeNanoseconds", "displayTimeUnit", "otherData"}),
    "tables": ("&by=kernel&start_us=0&end_us=500", {"by", "sort", "filter", "total", "offset", "limit", "window", "rows"}),
    "search": ("&q=aten", {"query", "total", "offset", "limit", "names", "hits"}),
    "critical_path": ("", {"steps", "total"}),
    "whatif": ("&edit=dataloader=0&edit=kernel:k*0.5", {"edits", "matched", "steps", "median_step_us", "recorded_median_step_us",
                                                        "saving_us", "saving_share", "replay_median_step_us"}),
    "counters": ("&width_px=800", {"start_us", "bucket_us", "buckets", "lanes", "lanes_total", "lanes_hidden", "summary"}),
}


@pytest.mark.parametrize("route", DATA_ROUTES)
@pytest.mark.parametrize("which", ["gpu", "gz"])
def test_data_routes_answer_json(apps, ids, route, which):
    query, keys = SHAPES[route]
    response = get(apps, route, f"?span={ids[which]}{query}")
    assert response.status_code == 200, response.get_data()
    expected = "application/gzip" if route == "export" else "application/json"  # the export is a .json.gz file
    assert response.mimetype == expected and response.headers["X-Content-Type-Options"] == "nosniff"
    assert keys <= set(body(response))


def test_lanes_carry_counter_lanes_unless_asked_not_to(apps, ids):
    sid = ids["gpu"]
    with_counters = body(get(apps, "lanes", f"?span={sid}&width_px=600"))["counters"]
    assert [lane["kind"] for lane in with_counters["lanes"]] == ["utilization", "queue_length"]
    assert body(get(apps, "lanes", f"?span={sid}&width_px=600&counters=0"))["counters"] is None
    assert get(apps, "lanes", f"?span={sid}&counters=2").status_code == 400
    counters = body(get(apps, "counters", f"?span={sid}&width_px=600"))
    assert counters["lanes"] == with_counters["lanes"] and counters["summary"]["queue_streams"] == 1


def test_route_contents(apps, ids):
    sid = ids["gpu"]
    summary = body(get(apps, "summary", f"?span={sid}"))
    assert summary["run"] == "gpu" and summary["span"] == "1" and summary["events"] == 11
    gaps = body(get(apps, "gaps", f"?span={sid}&device=0&cause=dataloader,host&sort=-dur&limit=1"))
    assert gaps["limit"] == 1 and len(gaps["gaps"]["start_us"]) == 1
    assert set(gaps["gaps"]["cause"]) <= {"dataloader", "host"}
    memory_body = body(get(apps, "memory", f"?span={sid}&device=cuda:0&max_points=16"))
    (series,) = memory_body["devices"]
    assert series["allocated_bytes"] == [1024, 5120, 1024] and series["peak_allocated_bytes"] == 5120
    launches = body(get(apps, "launches", f"?span={sid}&bins=5&top=1"))
    assert launches["pairs"] == 3 and len(launches["by_kernel"]) == 1 and len(launches["histogram"]["offset"]) == 5
    lanes = body(get(apps, "lanes", f"?span={sid}&start_us=0&end_us=800&width_px=8000"))
    assert XSS in lanes["names"]  # markup-like names are plain JSON strings
    beyond = body(get(apps, "lanes", f"?span={sid}&start_us=5000&end_us=6000"))  # panned past the end
    assert beyond["rects"] == 0 and len(beyond["lanes"]) == len(lanes["lanes"])
    export = get(apps, "export", f"?span={sid}&start_us=0&end_us=100")
    assert export.headers["Content-Disposition"] == 'attachment; filename="kinetoscope-gpu-1.json.gz"'


def test_run_verdict(apps, ids):
    deadline = time.monotonic() + 30
    run = body(get(apps, "verdict", "?run=gpu"))
    while run["pending"] and time.monotonic() < deadline:
        time.sleep(0.05)
        run = body(get(apps, "verdict", "?run=gpu"))
    assert run["run"] == "gpu" and run["pending"] == 0 and run["failed"] == 0 and len(run["spans"]) == 2
    assert run["verdict"]["bound"] == "not enough data"  # two tiny spans: nothing to judge
    assert {s["id"] for s in run["spans"]} == {ids["gpu"], ids["gz"]}
    assert all(s["verdict"]["bound"] == "not enough data" for s in run["spans"])
    broken = body(get(apps, "verdict", "?run=broken"))
    assert broken["failed"] == 1 and broken["verdict"] is None
    assert get(apps, "verdict", "?run=nope").status_code == 404
    assert get(apps, "verdict", "").status_code == 400
    huge = get(apps, "verdict", "?run=" + "x" * 100_000)
    assert huge.status_code == 400 and len(huge.get_data()) < 1000


@pytest.mark.parametrize("which", ["gpu", "gz"])
def test_event_carries_its_full_args_from_the_file(apps, ids, which):
    rows = [body(get(apps, "event", f"?span={ids[which]}&row={row}&args=1")) for row in range(11)]
    by_name = {r["name"]: r for r in rows}
    assert by_name["k1"]["args"] == {"device": 0, "stream": 7, "correlation": 1} and by_name["k1"]["args_error"] is None
    assert by_name["ProfilerStep#1"]["args"] == {}
    assert all(r["args_error"] is None for r in rows)
    assert "args" not in body(get(apps, "event", f"?span={ids[which]}&row=0"))  # hover boxes do not pay for them


@pytest.mark.parametrize("route", DATA_ROUTES)
def test_empty_trace_answers_every_route(apps, ids, route):
    expected = 404 if route in ("gaps", "event") else 200  # no device 0, no row 0
    assert get(apps, route, f"?span={ids['empty']}{SHAPES[route][0]}").status_code == expected


def test_cpu_only_trace_answers_without_gpu_or_memory(apps, ids):
    sid = ids["cpu"]
    assert body(get(apps, "memory", f"?span={sid}"))["devices"] == []
    assert body(get(apps, "launches", f"?span={sid}"))["pairs"] == 0
    verdict = body(get(apps, "summary", f"?span={sid}"))["verdict"]
    assert verdict["bound"] == "cpu-only" and "aten::add" in verdict["evidence"]
    assert get(apps, "gaps", f"?span={sid}&device=0").status_code == 404


BAD = [
    ("summary", ""), ("summary", "?span="), ("summary", "?span=xyz"), ("summary", "?span=../../etc/passwd"),
    ("summary", "?span=ABCDEF012345"), ("status", "?span=/etc/passwd"), ("status", "?span={gpu}&load=2"),
    ("status", "?span={gpu}&load=true"), ("status", "?span={gpu}&load=01"), ("status", "?load=1"),
    ("gaps", "?span={gpu}"), ("gaps", "?span={gpu}&device=a"), ("gaps", "?span={gpu}&device=-1"),
    ("gaps", "?span={gpu}&device=0&cause=foo"), ("gaps", "?span={gpu}&device=0&cause=host,"),
    ("gaps", "?span={gpu}&device=0&min_us=-1"), ("gaps", "?span={gpu}&device=0&min_us=nan"),
    ("gaps", "?span={gpu}&device=0&start_us=inf"), ("gaps", "?span={gpu}&device=0&start_us=5&end_us=5"),
    ("gaps", "?span={gpu}&device=0&sort=size"), ("gaps", "?span={gpu}&device=0&offset=-1"),
    ("gaps", "?span={gpu}&device=0&limit=0"), ("gaps", "?span={gpu}&device=0&limit=5001"),
    ("launches", "?span={gpu}&bins=0"), ("launches", "?span={gpu}&bins=501"), ("launches", "?span={gpu}&top=0"),
    ("launches", "?span={gpu}&top=x"), ("memory", "?span={gpu}&max_points=15"),
    ("memory", "?span={gpu}&max_points=100001"), ("memory", "?span={gpu}&start_us=9&end_us=1"),
    ("stalls", "?span=12"), ("lanes", "?span={gpu}&width_px=0"), ("lanes", "?span={gpu}&width_px=10001"),
    ("lanes", "?span={gpu}&width_px=1.5"), ("lanes", "?span={gpu}&start_us=abc"),
    ("lanes", "?span={gpu}&start_us=10&end_us=-10"), ("lanes", "?span={gpu}&start_us=1e300"),
    ("lanes", "?span={gpu}&end_us=-1e16"), ("memory", "?span={gpu}&end_us=1e20"),
    ("event", "?span={gpu}"), ("event", "?span={gpu}&row=x"), ("event", "?span={gpu}&row=-1"), ("event", "?span={gpu}&row=0&args=yes"),
    ("export", "?span={gpu}&start_us=2&end_us=1"), ("export", "?span={gpu}&end_us=-inf"),
    ("tables", "?span={gpu}&by=stack"), ("tables", "?span={gpu}&sort=size"), ("tables", "?span={gpu}&by=kernel&sort=cpu_self"),
    ("tables", "?span={gpu}&limit=501"), ("tables", "?span={gpu}&start_us=5&end_us=1"), ("tables", "?span={gpu}&filter=" + "x" * 201),
    ("tables", "?span={gpu}&group=shapes"),
    ("search", "?span={gpu}"), ("search", "?span={gpu}&q=" + "x" * 201), ("search", "?span={gpu}&q=a&limit=0"),
    ("critical_path", "?span={gpu}&step=-1"), ("critical_path", "?span={gpu}&step=x"),
    ("whatif", "?span={gpu}&edit=nonsense"), ("whatif", "?span={gpu}&edit=comm=exposed"),
    ("whatif", "?span={gpu}&edit=straggler=median"), ("whatif", "?span={gpu}&edit=host:x*-1"),
    ("whatif", "?span={gpu}" + "&edit=dataloader=0" * 17), ("whatif", "?span={gpu}&edit=" + "x" * 100_000),
]


@pytest.mark.parametrize("route, query", BAD)
def test_bad_parameters_are_400(apps, ids, route, query):
    response = get(apps, route, query.format(**ids))
    assert response.status_code == 400 and response.mimetype == "application/json"
    error = body(response)["error"]
    assert error["code"] == 400 and error["message"]


@pytest.mark.parametrize("route, query", [
    *((route, f"?span=0123456789ab{SHAPES[route][0]}") for route in DATA_ROUTES),
    ("status", "?span=0123456789ab"), ("status", "?span=0123456789ab&load=1"), ("gaps", "?span={gpu}&device=7"),
    ("memory", "?span={gpu}&device=cuda:9"), ("event", "?span={gpu}&row=1000000000"),
])
def test_unknown_ids_are_404(apps, ids, route, query):
    response = get(apps, route, query.format(**ids))
    assert response.status_code == 404 and body(response)["error"]["code"] == 404


@pytest.mark.parametrize("route", ["runs", "status", *DATA_ROUTES, "index.js", "static/index.js"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_wrong_method_is_405(apps, ids, route, method):
    response = get(apps, route, f"?span={ids['gpu']}", method=method)
    assert response.status_code == 405 and response.headers["Allow"] == "GET"
    assert body(response)["error"]["code"] == 405


@pytest.mark.parametrize("route", DATA_ROUTES)
def test_failed_trace_is_422_with_its_message(apps, ids, route):
    response = get(apps, route, f"?span={ids['broken']}{SHAPES[route][0]}")
    assert response.status_code == 422
    message = body(response)["error"]["message"]
    assert message.startswith("broken/bad.3.pt.trace.json: ") and "/tmp" not in message


def test_loading_trace_is_409_with_its_state(logdir, tmp_path):
    gate = threading.Event()

    def slow_prepare(model):
        gate.wait(10)
        return pipeline.prepare(model)

    instance = KinetoscopePlugin(base_plugin.TBContext(logdir=str(logdir)))
    instance._service = TraceService(str(logdir), cache_dir=None, decode_in_child=False, rescan_s=3600,
                                     prepare=slow_prepare)
    try:
        apps = instance.get_plugin_apps()
        sid = next(s["id"] for r in body(get(apps, "runs"))["runs"] if r["name"] == "cpu"
                   for w in r["workers"] for s in w["spans"])
        response = get(apps, "summary", f"?span={sid}")
        assert response.status_code == 409
        payload = body(response)
        assert payload["error"]["code"] == 409 and payload["state"] in ("queued", "loading")
        gate.set()
        deadline = time.monotonic() + 10
        while get(apps, "summary", f"?span={sid}").status_code == 409 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert get(apps, "summary", f"?span={sid}").status_code == 200
    finally:
        gate.set()
        instance._service.close()


def test_status_load_queues_and_reports_ready_without_409(logdir):
    gate = threading.Event()

    def slow_prepare(model):
        gate.wait(10)
        return pipeline.prepare(model)

    instance = KinetoscopePlugin(base_plugin.TBContext(logdir=str(logdir)))
    instance._service = TraceService(str(logdir), cache_dir=None, decode_in_child=False, rescan_s=3600,
                                     prepare=slow_prepare)
    try:
        apps = instance.get_plugin_apps()
        spans = {r["name"]: s["id"] for r in body(get(apps, "runs"))["runs"] for w in r["workers"] for s in w["spans"]}
        sid = spans["cpu"]
        assert body(get(apps, "status", f"?span={sid}&load=0"))["traces"][0]["state"] == "unloaded"  # 0: only looks
        response = get(apps, "status", f"?span={sid}&load=1")
        assert response.status_code == 200 and response.mimetype == "application/json"
        (trace,) = body(response)["traces"]
        assert trace["id"] == sid and trace["state"] in ("queued", "loading")
        gate.set()
        deadline = time.monotonic() + 10
        states = []
        while time.monotonic() < deadline and (not states or states[-1] != "ready"):
            response = get(apps, "status", f"?span={sid}&load=1")
            assert response.status_code == 200
            states.append(body(response)["traces"][0]["state"])
        assert states[-1] == "ready" and get(apps, "summary", f"?span={sid}").status_code == 200
        (broken,) = body(get(apps, "status", f"?span={spans['broken']}&load=1"))["traces"]
        deadline = time.monotonic() + 10
        while broken["state"] != "error" and time.monotonic() < deadline:
            (broken,) = body(get(apps, "status", f"?span={spans['broken']}&load=1"))["traces"]
        assert broken["state"] == "error" and broken["error"].startswith("broken/bad.3.pt.trace.json: ")
    finally:
        gate.set()
        instance._service.close()


def test_bad_load_parameter_names_it(apps, ids):
    error = body(get(apps, "status", f"?span={ids['gpu']}&load=yes"))["error"]
    assert error["code"] == 400 and "load" in error["message"] and "'yes'" in error["message"]


def test_unexpected_exception_is_a_generic_500_logged_once(apps, ids, monkeypatch, caplog):
    def boom(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(plugin_module.routes, "stalls_impl", boom)
    with caplog.at_level(logging.DEBUG, logger="kinetoscope"):
        first = get(apps, "stalls", f"?span={ids['gpu']}")
        second = get(apps, "stalls", f"?span={ids['gpu']}")
    for response in (first, second):
        assert response.status_code == 500 and b"secret" not in response.get_data()
        assert body(response)["error"] == {"code": 500, "message": "internal error; see the TensorBoard log"}
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "Traceback" in errors[0].getMessage()  # the traceback, redacted, in the line


def test_no_logdir_runs_is_404_not_a_crash():
    instance = KinetoscopePlugin(base_plugin.TBContext(logdir=""))
    response = get(instance.get_plugin_apps(), "runs")
    assert response.status_code == 404 and "--logdir" in body(response)["error"]["message"]


def test_new_file_appears_after_rescan(plugin, apps, logdir, ids):
    write_trace(logdir / "cpu" / "host.8.pt.trace.json", trace_doc([op("aten::add", 1, 5)]))
    try:
        plugin.service().scan_now()
        files = [s["file"] for r in body(get(apps, "runs"))["runs"] for w in r["workers"] for s in w["spans"]]
        assert "host.8.pt.trace.json" in files
    finally:
        (logdir / "cpu" / "host.8.pt.trace.json").unlink()
        plugin.service().scan_now()


def test_index_js_and_static_files(apps):
    index = get(apps, "index.js")
    assert index.status_code == 200 and index.mimetype == "text/javascript"
    assert b"export" in index.get_data() and index.headers["X-Content-Type-Options"] == "nosniff"
    static = get(apps, "static/index.js")
    assert static.status_code == 200 and static.get_data() == index.get_data()


TRAVERSALS = [
    "static/../plugin.py", "static/%2e%2e/plugin.py", "static/..%2fplugin.py", "static/%2e%2e%2f%2e%2e%2fsetup.py",
    "static/..%2f..%2f..%2fetc%2fpasswd", "static//etc/passwd", "static/%2fetc%2fpasswd", "static/..\\plugin.py",
    "static/model/../../plugin.py", "static/./index.js", "static/.hidden.js", "static/index.py", "static/",
    "static/C:/windows/x.js", "static/index.js%00.js", "static/..", "static/%2e%2e", "static/__init__.py",
    "static/nope.js", "static/model", "static/%5c..%5cplugin.py", "static/" + "a" * 60_000 + ".js",
    "static/" + "/".join(["x" * 250] * 4) + ".js", "static/" + "y" * 253 + ".js",  # a name the filesystem refuses
    "static/test/api.test.js", "static/test/counters.test.js", "static/model/x/y.js",  # the checkout's tests: not shipped
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_static_refuses_traversal_and_unknown_files(apps, path):
    response = get(apps, path)
    assert response.status_code == 404 and response.mimetype == "application/json" and len(response.get_data()) < 1000
    assert b"import" not in response.get_data() and b"root:" not in response.get_data()


def test_markdown_is_the_cli_renderer_with_the_run_verdict_first_and_strings_escaped(apps, ids):
    answer = body(get(apps, "markdown", f"?span={ids['gpu']}"))
    text = answer["markdown"]
    assert text.startswith("# Kinetoscope: gpu / worker0 / span 1\n")
    assert text.index("**Run verdict:") < text.index("**Verdict:")  # the run has two spans
    assert "### Steps" in text and "Suggestion: " in text and "Evidence: " in text
    assert XSS not in text and "\\<img src=x onerror=alert(1)\\>" in text
    assert "File: `gpu/worker0.1.pt.trace.json`" in text  # relative to the logdir, never the server's path
    empty = body(get(apps, "markdown", f"?span={ids['empty']}"))["markdown"]
    assert "Empty trace" in empty and "an empty trace" in empty


def test_export_check_says_whether_a_window_fits_before_the_export(apps, ids):
    answer = body(get(apps, "export", f"?span={ids['gpu']}&check=1"))
    assert answer == {"events": answer["events"], "max_events": routes.MAX_EXPORT_EVENTS, "fits": True} and answer["events"] > 5
    small = body(get(apps, "export", f"?span={ids['gpu']}&check=1&start_us=0&end_us=20"))
    assert small["events"] < answer["events"]


@pytest.mark.parametrize("which, name", [("gpu", "worker0.1.pt.trace.json"), ("gz", "worker0.2.pt.trace.json.gz")])
def test_whole_export_streams_the_file_gzipped(apps, ids, logdir, which, name):
    response = get(apps, "export", f"?span={ids[which]}&whole=1")
    assert response.status_code == 200 and response.mimetype == "application/gzip"
    assert response.is_streamed and "-whole.json.gz" in response.headers["Content-Disposition"]
    raw = (logdir / "gpu" / name).read_bytes()
    plain = gzip.decompress(raw) if name.endswith(".gz") else raw
    assert gzip.decompress(response.get_data()) == plain


def test_whole_export_of_a_broken_or_unknown_span(apps, ids):
    assert get(apps, "export", "?span=0123456789ab&whole=1").status_code == 404
    assert get(apps, "export", f"?span={ids['broken']}&whole=1").status_code == 422  # only a trace that loaded
