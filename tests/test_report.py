"""analysis.report against the independent reference figures for ../shared/traces, plus invariants."""
from __future__ import annotations

import json

import pytest
from conftest import ORACLE, SHARED_TRACES, requires_shared
from kinetoscope.analysis.report import analyze, report_entry
from kinetoscope.trace.loader import load_trace

REFERENCE = [json.loads(line) for line in ORACLE.read_text().splitlines()] if ORACLE.is_file() else []


@pytest.fixture(scope="module")
def entries():
    cache = {}

    def get(trace: str) -> dict:
        if trace not in cache:
            model = load_trace(str(SHARED_TRACES / trace), cache_dir=None)
            cache[trace] = report_entry(model, analyze(model))
        return cache[trace]
    return get


@requires_shared
@pytest.mark.parametrize("ref", REFERENCE, ids=lambda r: r["trace"].split("/")[-1][:40])
def test_matches_reference(entries, ref):
    entry = entries(ref["trace"])
    assert [d["device"] for d in entry["devices"]] == [d["device"] for d in ref["devices"]]
    for mine, theirs in zip(entry["devices"], ref["devices"]):
        assert mine["idle_pct"] == pytest.approx(theirs["idle_pct"], abs=0.05)
        assert sum(mine["gaps"]["by_cause_us"].values()) == pytest.approx(mine["idle_us"], abs=1e-6)
        assert mine["busy_us"] + mine["idle_us"] == pytest.approx(mine["window_us"], abs=1e-6)
    assert [s["name"] for s in entry["steps"]] == [s["name"] for s in ref["steps"]]
    for mine, theirs in zip(entry["steps"], ref["steps"]):
        assert mine["dataloader_us"] == pytest.approx(theirs["dataloader_us"], abs=0.01)
        idle_in_wait = theirs.get("dataloader_gpu_idle_us", 0)
        assert mine["gpu_idle_during_dataloader_us"] == pytest.approx(idle_in_wait, abs=0.01)
        stalled = bool(ref["devices"]) and theirs["dataloader_us"] > 0 and \
            theirs["dataloader_us"] >= 0.05 * theirs["dur_us"] and idle_in_wait >= 0.5 * theirs["dataloader_us"]
        assert mine["stalled"] == stalled
    if ref["launch"]:  # the reference pairs every linked activity; graph nodes are one launch in `offset_us`
        per_activity = entry["launch"]["per_activity"]
        assert per_activity["pairs"] == ref["launch"]["pairs"]
        for p in ("p50", "p90", "p99"):
            assert per_activity["offset_us"][p] == pytest.approx(ref["launch"][f"{p}_us"], rel=0.005)
        if entry["counts"] and entry["launch"]["pairs"] == per_activity["pairs"]:  # no graph replay: the same
            assert entry["launch"]["offset_us"] == per_activity["offset_us"]
    peaks = {m["device"]: m["peak_allocated_bytes"] for m in entry["memory"]}
    for m in ref["memory"]:
        label = "cpu" if m["device_type"] == 0 else f"cuda:{m['device_id']}"
        assert peaks[label] == m["peak_allocated_bytes"]


@requires_shared
@pytest.mark.parametrize("run, stalled", [("resnet50_num_workers_0", 6), ("resnet50_num_workers_4", 0)])
def test_resnet_dataloader_verdicts(entries, run, stalled):
    for path in sorted((SHARED_TRACES / run).glob("*.gz")):
        entry = entries(f"{run}/{path.name}")
        assert sum(s["stalled"] for s in entry["steps"]) == stalled
        assert (entry["verdict"]["bound"] == "dataloader-bound") == (stalled > 0)


@requires_shared
def test_graph_replays_are_one_launch_and_never_launch_gaps(entries):
    entry = entries("hta/trace_diff/test/test.json.gz")  # 12 cudaGraphLaunch replaying 339/502 kernels each
    assert entry["launch"]["pairs"] < entry["launch"]["per_activity"]["pairs"]
    assert entry["devices"][0]["gaps"]["by_cause_us"]["graph"] > 0
    assert "graph" not in entry["verdict"]["suggestion"].lower()


@requires_shared
def test_every_cause_sums_to_idle_on_every_trace(entries):
    for ref in REFERENCE:
        for d in entries(ref["trace"])["devices"]:
            assert sum(d["gaps"]["by_cause_us"].values()) == pytest.approx(d["idle_us"], abs=1e-6)


@requires_shared
def test_cpu_only_traces_get_a_cpu_only_verdict(entries):
    entry = entries("torch213_cpu/nw0/vm_13690.1795262577621679077.pt.trace.json")
    assert entry["verdict"]["bound"] == "cpu-only" and entry["devices"] == [] and entry["launch"]["pairs"] == 0
    assert "aten::mkldnn_convolution" in entry["verdict"]["evidence"]  # the CPU hot spots are named
    fragment = entries("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")  # 16 events of a sampled rank
    assert fragment["verdict"]["bound"] == "not enough data" and fragment["devices"] == []


@requires_shared
def test_report_is_plain_json(entries):
    entry = entries("resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    assert json.loads(json.dumps(entry, allow_nan=False)) == entry
    assert entry["devices"][0]["gaps"]["top_culprits"][0]["idle_us"] > 0
    assert set(entry["launch"]) == {"pairs", "short_kernels", "offset_us", "queued_us", "latency_us", "per_activity"}
    assert set(entry["verdict"]) >= {"bound", "confidence", "runner_up", "runner_up_share", "share", "evidence",
                                     "suggestion", "shares", "reasons"}
    assert sum(entry["verdict"]["shares"].values()) == pytest.approx(1.0)
