"""The launch-offset histogram and server-side memory downsampling."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from kinetoscope.analysis.memory.timeline import MemorySeries as Series
from kinetoscope.views.series import log_histogram, memory_view


def test_histogram_shares_log_edges_and_keeps_every_value():
    result = log_histogram({"a": np.array([1.0, 10.0, 100.0, 1000.0]), "b": np.array([-5.0, 0.0, 10.0])}, bins=3)
    assert result["scale"] == "log10" and result["edges_us"] == [1.0, 10.0, 100.0, 1000.0]
    assert result["a"] == [1, 1, 2] and result["b"] == [2, 1, 0]  # <= 0 count in bin 0, max in the last


def test_histogram_of_a_single_value_and_of_nothing():
    one = log_histogram({"a": np.array([5.0, 5.0])}, bins=4)
    assert len(one["edges_us"]) == 5 and sum(one["a"]) == 2
    assert log_histogram({"a": np.zeros(0), "b": np.array([-1.0])}, bins=4) == {
        "scale": "log10", "edges_us": [], "a": [], "b": []}




@dataclass(frozen=True)
class Model:
    start_ns: int = 0


def series(n: int = 10_000, device: str = "cuda:0") -> Series:
    rng = np.random.default_rng(0)
    alloc = rng.integers(0, 1000, n)
    alloc[1234 % n] = 10**9  # a one-sample spike
    reserved = np.maximum.accumulate(alloc) + 5
    return Series(device, np.arange(n, dtype=np.int64) * 1000, alloc, reserved, 10**9, int(reserved[-1]),
                  1234 * 1000, "aten::empty", np.array([1, -1]), False, False)


@pytest.mark.parametrize("max_points", [16, 100, 2000])
def test_memory_downsampling_keeps_peaks_within_budget(max_points):
    (entry,) = memory_view(Model(), [series()], max_points=max_points)["devices"]
    assert entry["downsampled"] and entry["points"] <= max_points and entry["source_points"] == 10_000
    assert 10**9 in entry["allocated_bytes"] and entry["ts_us"][entry["allocated_bytes"].index(10**9)] == 1234.0
    assert max(entry["reserved_bytes"]) == 10**9 + 5
    assert entry["ts_us"] == sorted(entry["ts_us"]) and entry["peak_at_us"] == 1234.0


def test_memory_window_and_device_filter():
    result = memory_view(Model(), [series(100), series(10, "cpu")],
                         max_points=1000, device="cuda:0", t0_ns=10_500, t1_ns=20_000)
    (entry,) = result["devices"]
    assert entry["device"] == "cuda:0" and not entry["downsampled"]
    assert entry["ts_us"][0] == 10.0 and entry["ts_us"][-1] == 19.0  # the sample before the window starts it
