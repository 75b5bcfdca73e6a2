"""The `compare` route: spans or runs of the logdir compared, memoized, bounded; its errors."""
from __future__ import annotations

import json
import sys
import time

import pytest
from conftest import SAMPLES
from kinetoscope import pipeline
from kinetoscope.server.plugin import KinetoscopePlugin
from kinetoscope.server.service import TraceService
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

sys.path.insert(0, str(SAMPLES))
from synth.output import write_run  # noqa: E402
from test_compare import scaled  # noqa: E402

PREFIX = "/data/plugin/kinetoscope"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdir")
    write_run(root / "base", "compute", era="2024", seed=1, steps=8, spans=2, use_gzip=False, worker="w")
    for path in sorted((root / "base").glob("*.json")):
        scaled(path, root / "slow" / path.name, 1.2)
    return root


@pytest.fixture(scope="module")
def apps(logdir):
    root = logdir
    plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=str(root), multiplexer=None))
    plugin._service = TraceService(str(root), cache_dir=None, rescan_s=3600, decode_in_child=False, prepare=pipeline.prepare)
    yield plugin.get_plugin_apps()
    plugin._service.close()


@pytest.fixture(scope="module")
def synth_files(logdir):
    """One span of the module's two runs: name -> path."""
    return {run: sorted((logdir / run).glob("*.json"))[0] for run in ("base", "slow")}


def get(apps, route: str, query: str = "", method: str = "GET"):
    return Client(apps["/" + route]).open(f"{PREFIX}/{route}{query}", method=method)


@pytest.fixture(scope="module")
def spans(apps):
    runs = json.loads(get(apps, "runs").get_data())["runs"]
    return {r["name"]: [s["id"] for w in r["workers"] for s in w["spans"]] for r in runs}


def answer(apps, query: str, timeout_s: float = 60.0) -> dict:
    """The route's answer once nothing is loading (409 or pending > 0 mean: ask again)."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = get(apps, "compare", query)
        doc = json.loads(response.get_data())
        if response.status_code == 200 and not doc["pending"] or time.monotonic() > deadline:
            assert response.status_code == 200, doc
            return doc
        time.sleep(0.05)


def test_two_spans(apps, spans):
    doc = answer(apps, f"?base={spans['base'][0]}&cand={spans['slow'][0]}")
    result = doc["result"]
    step = next(m for m in result["metrics"] if m["name"] == "step_time")
    assert step["delta_pct"] == pytest.approx(20.0, abs=0.5) and step["status"] == "regression"
    assert result["base"]["label"].startswith("base / w / span ") and result["steps"]["matched"] == 8
    assert result["changes"]["rows"] and result["verdict"]["base"]["bound"] == result["verdict"]["cand"]["bound"]


def test_two_runs_and_a_repeat_is_a_lookup(apps):
    doc = answer(apps, "?base_run=base&cand_run=slow")
    assert doc["failed"] == 0 and doc["result"]["steps"]["matched"] == 16 and doc["result"]["base"]["traces"] == 2
    start = time.perf_counter()
    again = json.loads(get(apps, "compare", "?base_run=base&cand_run=slow").get_data())
    assert time.perf_counter() - start < 0.1 and again == doc


def test_a_span_against_a_run(apps, spans):
    doc = answer(apps, f"?base={spans['base'][1]}&cand_run=slow")
    assert doc["result"]["steps"] == {"matched": 8, "base": 8, "cand": 16, "unmatched_base": 0, "unmatched_cand": 8}


@pytest.mark.parametrize("query, code", [
    ("", 400), ("?base=0123456789ab", 400), ("?base=zz&cand=0123456789ab", 400),
    ("?base=0123456789ab&base_run=base&cand_run=slow", 400),
    ("?base=0123456789ab&cand=0123456789ab", 404), ("?base_run=nope&cand_run=slow", 404),
    ("?base_run=" + "x" * 5000 + "&cand_run=slow", 400),
])
def test_errors(apps, query, code):
    response = get(apps, "compare", query)
    assert response.status_code == code and "error" in json.loads(response.get_data())


def test_wrong_method(apps):
    assert get(apps, "compare", "?base_run=base&cand_run=slow", method="POST").status_code == 405


def test_bounded(apps):
    response = get(apps, "compare", "?base_run=base&cand_run=slow")
    assert len(response.get_data()) < 2_000_000


def test_answers_are_bounded_whatever_the_names(tmp_path, capsys):
    from conftest import plugin_apps, write_trace
    from kinetoscope.cli.main import main
    from test_bounded_responses import BOUND, huge_doc
    with plugin_apps(huge_doc(), tmp_path / "tb") as (apps, sid):
        response = get(apps, "compare", f"?base={sid}&cand={sid}")
        assert response.status_code == 200 and len(response.get_data()) < BOUND
    path = write_trace(tmp_path / "w.1.pt.trace.json", huge_doc())
    for fmt in ("json", "text", "markdown"):
        assert main(["diff", str(path), str(path), "--format", fmt, "--no-cache"]) == 0
        assert len(capsys.readouterr().out) < BOUND


def test_diff_reads_fsspec_urls(synth_files, capsys):
    import fsspec
    from kinetoscope.cli.main import main
    fs = fsspec.filesystem("memory")
    for name, path in synth_files.items():
        fs.pipe(f"/cmp/{name}/w.1.pt.trace.json", path.read_bytes())
    assert main(["diff", "memory://cmp/base", "memory://cmp/slow", "--no-cache", "--fail-if", "step_time > +5%"]) == 1
    assert "'step_time > +5%'" in capsys.readouterr().err
    assert main(["diff", "memory://cmp/base", "memory://cmp/nothing-here", "--no-cache"]) == 2


def test_multi_rank_runs_through_the_route_name_the_straggler(tmp_path):
    from synth.multirank import write_job
    write_job(tmp_path / "logdir" / "even", ranks=4, steps=5, straggler=None)
    write_job(tmp_path / "logdir" / "slow", ranks=4, steps=5, straggler=1, straggler_ms=20.0)
    plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=str(tmp_path / "logdir"), multiplexer=None))
    plugin._service = TraceService(str(tmp_path / "logdir"), cache_dir=None, rescan_s=3600, decode_in_child=False,
                                   prepare=pipeline.prepare)
    try:
        result = answer(plugin.get_plugin_apps(), "?base_run=even&cand_run=slow")["result"]
    finally:
        plugin._service.close()
    assert result["base"]["ranks"] == [0, 1, 2, 3] and [r["rank"] for r in result["ranks"]] == [0, 1, 2, 3]
    assert result["stragglers"]["base"] == [] and [s["rank"] for s in result["stragglers"]["cand"]] == [1]
    step = next(m for m in result["metrics"] if m["name"] == "step_time")
    assert step["delta"] == pytest.approx(20_000.0, rel=0.05)


def test_a_span_whose_file_carries_no_number_is_named_by_its_file(tmp_path, synth_files):
    """`rank-1.Jan_24.pt.trace.json` has no span number: the side is named as the report and the selectors name it,
    not `span -`."""
    for run in ("base", "slow"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "rank-1.Jan_24.pt.trace.json").write_bytes(synth_files[run].read_bytes())
    plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=str(tmp_path), multiplexer=None))
    plugin._service = TraceService(str(tmp_path), cache_dir=None, rescan_s=3600, decode_in_child=False,
                                   prepare=pipeline.prepare)
    try:
        apps = plugin.get_plugin_apps()
        runs = json.loads(get(apps, "runs").get_data())["runs"]
        ids = {r["name"]: r["workers"][0]["spans"][0]["id"] for r in runs}
        result = answer(apps, f"?base={ids['base']}&cand={ids['slow']}")["result"]
    finally:
        plugin._service.close()
    assert result["base"]["label"] == "base / rank-1.Jan_24 / rank-1.Jan_24", result["base"]["label"]
    assert "span -" not in result["cand"]["label"]
