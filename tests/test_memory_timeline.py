"""analysis.memory_timeline: curves from totals or running sums, peaks and their ops, growth, downsampling."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import memory, op, trace_doc, write_trace
from kinetoscope.analysis.memory.timeline import device_label, downsample_minmax, memory_timeline
from kinetoscope.trace.loader import load_trace


def _series(tmp_path, events, **kw):
    model = load_trace(str(write_trace(tmp_path / "m.pt.trace.json", trace_doc(events))), cache_dir=None)
    return model, memory_timeline(model, **kw)


def test_free_before_alloc_running_sum_2021_style(tmp_path):
    events = [op("outer", 0, 50), op("aten::empty", 2, 3), memory(1, -100), memory(2, 300), memory(3, 200),
              memory(60, -250)]
    _, (cuda,) = _series(tmp_path, events)
    assert cuda.device == "cuda:0" and cuda.allocated_bytes.tolist() == [-100, 200, 400, 150]
    assert (cuda.peak_allocated_bytes, cuda.peak_at_ns, cuda.peak_op) == (400, 3000, "outer")
    # byte deltas only: relative to the start of the trace, and reserved memory is not recorded (not 0)
    assert cuda.relative is True and cuda.peak_reserved_bytes is None


def test_totals_win_when_present_and_cpu_comes_first(tmp_path):
    events = [memory(1, 10, total=1010, reserved=4096), memory(2, -10, total=1000, reserved=4096),
              memory(3, 8, total=8, device_type=0, device_id=-1)]
    _, (cpu, cuda) = _series(tmp_path, events)
    assert cpu.device == "cpu" and cpu.peak_allocated_bytes == 8 and cpu.peak_op == "(no op)"
    assert cuda.allocated_bytes.tolist() == [1010, 1000] and cuda.peak_reserved_bytes == 4096
    assert cuda.relative is False and cpu.peak_reserved_bytes is None


def test_steady_growth_over_steps_is_a_leak_suspect(tmp_path):
    events = [memory(10 * i + 5, 100) for i in range(4)]
    starts, ends = np.array([0, 10_000, 20_000, 30_000]), np.array([10_000, 20_000, 30_000, 40_000])
    _, (s,) = _series(tmp_path, events, step_start_ns=starts, step_end_ns=ends)
    assert s.step_growth_bytes.tolist() == [100, 100, 100, 100] and s.leak_suspect
    _, (flat,) = _series(tmp_path, events + [memory(36, -400)], step_start_ns=starts, step_end_ns=ends)
    assert not flat.leak_suspect


def test_no_memory_events(tmp_path):
    assert _series(tmp_path, [op("a", 0, 1)])[1] == ()


@pytest.mark.parametrize("dtype, did, label", [(0, -1, "cpu"), (1, 0, "cuda:0"), (1, 3, "cuda:3"), (12, 1, "xpu:1"), (99, 2, "device99:2")])
def test_device_labels(dtype, did, label):
    assert device_label(dtype, did) == label


def test_downsampling_keeps_every_bucket_extreme():
    rng = np.random.default_rng(1)
    ts = np.cumsum(rng.integers(1, 100, 100_000))
    values = rng.integers(0, 1000, ts.size)
    values[54_321] = 10_000
    keep = downsample_minmax(ts, values, 400)
    assert keep.size <= 400 and 54_321 in keep and keep[0] == 0 and keep[-1] == ts.size - 1
    assert np.all(np.diff(keep) > 0)
    assert downsample_minmax(ts[:10], values[:10], 400).tolist() == list(range(10))
