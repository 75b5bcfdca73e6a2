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
    if ref["launch"]:
        assert entry["launch"]["pairs"] == ref["launch"]["pairs"]
        for p in ("p50", "p90", "p99"):
            assert entry["launch"]["offset_us"][p] == pytest.approx(ref["launch"][f"{p}_us"], rel=0.005)
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
def test_cpu_only_traces_get_a_cpu_only_verdict(entries):
    for trace in ("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
                  "torch213_cpu/nw0/vm_13690.1795262577621679077.pt.trace.json"):
        entry = entries(trace)
        assert entry["verdict"]["bound"] == "cpu-only" and entry["devices"] == [] and entry["launch"]["pairs"] == 0


@requires_shared
def test_report_is_plain_json(entries):
    entry = entries("resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    assert json.loads(json.dumps(entry, allow_nan=False)) == entry
    assert entry["devices"][0]["gaps"]["top_culprits"][0]["idle_us"] > 0
    assert set(entry["launch"]) == {"pairs", "short_kernels", "offset_us", "queued_us", "latency_us"}
