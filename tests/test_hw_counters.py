"""Hardware-counter samples (CUPTI PM sampling, Kineto's `ph: "C"` events): decoded into the model's `hwc_`
columns, drawn as counter lanes beside the estimated ones, and measured in the GPU summary beside the estimates.

The planted trace is `samples/logs/synthetic_counters/pm_sampling` (`samples/synth/pm_sampling.py`, which follows
Kineto's writer); its truth is computed from the construction, in `samples/truth/counters/pm_sampling.json`.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO, SAMPLES, kernel, launch, op, trace_doc, write_trace
from kinetoscope.analysis.device import hw_counters as measured_counters
from kinetoscope.analysis.device.hw_counters import counter_series, unit_of, window_mean
from kinetoscope.index.validate import ModelInvalid, check_model
from kinetoscope.pipeline import analyze_and_report
from kinetoscope.trace import cache, hw_counters
from kinetoscope.trace.kinds import Kind
from kinetoscope.trace.loader import load_trace
from kinetoscope.views.counter_lanes import build_counter_index, counters_view

PLANTED = next((SAMPLES / "logs" / "synthetic_counters" / "pm_sampling").glob("*.pt.trace.json.gz"))
TRUTH = json.loads((SAMPLES / "truth" / "counters" / "pm_sampling.json").read_text())
UNSUPPORTED = "unsupported phase (B/E/C/other)"


@pytest.fixture(scope="module")
def planted():
    return load_trace(str(PLANTED), cache_dir=None)


def sample(name: str, ts: float, value, pid="GPU 0 Counters") -> dict:
    return {"ph": "C", "cat": "hardware_counters", "name": name, "pid": pid, "tid": 0, "ts": ts, "args": {"": value}}


def test_the_planted_samples_become_one_series_per_metric(planted):
    assert sorted(planted.hwc_names) == sorted(TRUTH["means"])
    assert planted.hwc_device.tolist() == [0] * len(TRUTH["means"])
    assert np.bincount(planted.hwc_series).tolist() == [TRUTH["samples_per_metric"]] * len(TRUTH["means"])
    assert UNSUPPORTED not in planted.skipped  # every counter event was kept
    check_model(planted)


def test_the_gpu_summary_measures_the_planted_values_beside_the_estimates(planted):
    entry = analyze_and_report(planted).report
    gpu = entry["gpu_summary"][0]
    m = gpu["measured"]
    for key, want in TRUTH["measured"].items():
        assert m[key] == pytest.approx(want, rel=1e-9), key
    assert m["occupancy_pct"] is None and m["tensor_active_pct"] is None  # no metric of theirs was sampled
    assert {c["counter"]: c["mean"] for c in m["counters"]} == pytest.approx(TRUTH["means"], rel=1e-9)
    assert {c["unit"] for c in m["counters"]} == {"%", "cycles"}
    # the estimate it sits beside: kernel time over the same window, which the planted GPU-active counter equals
    assert gpu["utilization_pct"] == pytest.approx(m["utilization_pct"], rel=1e-9)
    assert gpu["window_us"] == TRUTH["window_us"]


def test_the_text_report_shows_each_measured_figure_beside_its_estimate():
    out = subprocess.run([sys.executable, "-m", "kinetoscope.cli", "report", "--no-cache", "--no-index", str(PLANTED)],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Measured by hardware counters (PM sampling):" in text
    assert "SM efficiency (SM active)  55.21%    60.02%" in text
    assert "sm__cycles_active.avg" in text and "cycles" in text


def test_counter_lanes_follow_their_device_estimates(planted):
    index = build_counter_index(planted)
    assert list(index.kind[:7]) == ["utilization", "sm_efficiency"] + ["hw_counter"] * 5
    assert index.unit[2] == "fraction" and index.unit[6] == "cycles"
    first = int(planted.ts_ns[planted.kind == Kind.KERNEL].min())
    on = view_over(index, first, first + 6_000_000)  # one bucket over the first kernel
    assert on["GPU 0 utilization"] == pytest.approx(1.0)
    assert on["GPU 0 sm__cycles_active.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(0.92)
    assert on["GPU 0 dram__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(0.3425)
    assert on["GPU 0 sm__cycles_active.avg"] == pytest.approx(1_700_000.0)
    idle = view_over(index, first + 6_000_000, first + 9_000_000)  # the device idles until the next step's kernel
    assert idle["GPU 0 dram__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(0.02)
    last = int(planted.hwc_ts_ns.max())
    after = view_over(index, last + 500_000, last + 900_000)  # past the last sample's interval
    assert [v for k, v in after.items() if "__" in k] == [0.0] * 5


def view_over(index, t0: int, t1: int) -> dict[str, float]:
    """Each lane's mean over [t0, t1) as one bucket."""
    view = counters_view(index, t0, t1, 6)
    return {lane["label"]: lane["mean"][0] for lane in view["lanes"]}


def test_a_series_mean_counts_only_the_time_its_samples_cover():
    s = measured_counters.CounterSeries("m.pct_of_peak_sustained_elapsed", 0, "%", np.array([0, 10, 20]),
                                        np.array([10, 20, 30]), np.array([10.0, 40.0, 70.0]))
    assert window_mean(s, 5, 25) == (pytest.approx((5 * 10 + 10 * 40 + 5 * 70) / 20), 3)
    assert window_mean(s, 100, 200) == (None, 0)  # nothing sampled there: no figure, not 0
    assert window_mean(s, -100, 15) == (pytest.approx((10 * 10 + 5 * 40) / 15), 2)


def test_units_come_from_the_metric_name():
    assert unit_of("sm__throughput.avg.pct_of_peak_sustained_elapsed") == "%"
    assert unit_of("dram__bytes_read.sum") == "bytes"
    assert unit_of("sm__inst_executed.sum") == "instructions"
    assert unit_of("gpc__cycles_elapsed.max") == "cycles"
    assert unit_of("weird") == "count"


def test_other_counter_events_stay_skipped_as_before(tmp_path):
    events = [op("aten::mm", 10, 5), launch(11, 2, corr=1), kernel("k", 20, 30, corr=1),
              sample("sm__throughput.avg.pct_of_peak_sustained_elapsed", 20, 50.0),
              sample("sm__throughput.avg.pct_of_peak_sustained_elapsed", 40, 30.0),
              sample("x", 21, "12"), sample("x", 22, True), sample("x", 23, None), sample("x", 24, [1]),
              sample("huge", 25, 2**1100),  # beyond a float: not a value
              {"ph": "C", "name": "chrome counter", "pid": 1, "tid": 1, "ts": 26, "args": {"cats": 3}},
              {"ph": "B", "name": "begin", "pid": 1, "tid": 1, "ts": 27}]
    model = load_trace(str(write_trace(tmp_path / "t.pt.trace.json", trace_doc(events))), cache_dir=None)
    assert model.hwc_names == ("sm__throughput.avg.pct_of_peak_sustained_elapsed",)
    assert model.hwc_value.tolist() == [50.0, 30.0]
    assert model.skipped[UNSUPPORTED] == 7  # the 5 unusable samples, the other writer's counter, the B event


def test_devices_come_from_the_pid(tmp_path):
    events = [op("aten::mm", 10, 5), sample("a.pct_of_peak_sustained_elapsed", 20, 1.0, pid="GPU 3 Counters"),
              sample("a.pct_of_peak_sustained_elapsed", 20, 2.0, pid=5), sample("a.pct_of_peak_sustained_elapsed", 20, 3.0, pid="host")]
    model = load_trace(str(write_trace(tmp_path / "t.pt.trace.json", trace_doc(events))), cache_dir=None)
    assert model.hwc_device.tolist() == [3, 5, -1]
    assert [s.device for s in counter_series(model)] == [3, 5, -1]


def test_series_beyond_the_cap_are_skipped_by_name(tmp_path, monkeypatch):
    monkeypatch.setattr(hw_counters, "MAX_SERIES", 2)
    events = [op("aten::mm", 10, 5)] + [sample(f"m{k}", 20 + k, float(k)) for k in range(5)]
    model = load_trace(str(write_trace(tmp_path / "t.pt.trace.json", trace_doc(events))), cache_dir=None)
    assert model.hwc_names == ("m0", "m1")
    assert model.skipped == {hw_counters.TOO_MANY: 3}


def test_the_samples_survive_the_cache_and_forged_ones_are_refused(planted, tmp_path):
    path = tmp_path / "m.npz"
    with open(path, "wb") as handle:
        cache.write_model(handle, planted)
    again = cache.read_model(path)
    assert again.hwc_names == planted.hwc_names and np.array_equal(again.hwc_value, planted.hwc_value)
    arrays = cache.model_arrays(planted)
    for column, forged, rule in (("hwc_series", planted.hwc_series[::-1].copy(), "not sorted"),
                                 ("hwc_value", np.where(np.arange(planted.hwc_value.size) == 3, np.inf, planted.hwc_value),
                                  "not finite"),
                                 ("hwc_device", planted.hwc_device[:-1].copy(), "counter names")):
        bad = cache.model_from_arrays({**arrays, column: forged})
        with pytest.raises(ModelInvalid, match=rule):
            check_model(bad)
