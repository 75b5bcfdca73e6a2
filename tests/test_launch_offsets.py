"""analysis.launch_offsets: offset = queued + latency on a tiny stream (derivable by hand)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.analysis.idle.launch_offsets import grouped_percentile, launch_offsets, launch_table, percentiles_us
from kinetoscope.trace.loader import load_trace

# µs   0  2   5 6      10        20   24 25 26 27  30
# CPU  [L1)   [L2)                    [---L3--------)
# GPU                  [   X     )[Y  ) [Z)
EVENTS = [op("aten::mm", 0, 3), launch(0, 2, corr=1), op("aten::add", 4, 3), launch(5, 1, corr=2),
          op("aten::relu", 23, 8), launch(24, 6, corr=3),
          kernel("X", 10, 10, corr=1), kernel("Y", 20, 5, corr=2), kernel("Z", 26, 1, corr=3)]


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    path = write_trace(tmp_path_factory.mktemp("lo") / "queued-and-latency.pt.trace.json", trace_doc(EVENTS))
    model = load_trace(str(path), cache_dir=None)
    return model, launch_offsets(model)


def test_offset_queued_latency(stream):
    _, lo = stream
    assert lo.offset_ns.tolist() == [10_000, 15_000, 2_000]
    assert lo.queued_ns.tolist() == [0, 14_000, 0]
    assert lo.latency_ns.tolist() == [8_000, 0, -4_000]  # Z starts before its launch call returns
    assert lo.short.tolist() == [False, False, True]


def test_issuing_op_by_time_containment(stream):
    model, lo = stream
    assert [model.names[model.name_id[r]] for r in lo.op_row] == ["aten::mm", "aten::add", "aten::relu"]


def test_percentiles_linear_interpolation():
    assert percentiles_us(np.array([10_000, 15_000, 2_000])) == {"p50": 10.0, "p90": 14.0, "p99": 14.9, "max": 15.0}
    assert percentiles_us(np.zeros(0, np.int64)) == {}


def test_grouped_percentile_matches_numpy():
    rng = np.random.default_rng(0)
    group, values = rng.integers(0, 5, 200), rng.integers(-100, 1000, 200)
    ids, got = grouped_percentile(group, values, 90)
    assert np.allclose(got, [np.percentile(values[group == g], 90) for g in ids])


def test_tables_by_kernel_and_op(stream):
    model, lo = stream
    by_kernel = launch_table(model, lo, "kernel")
    assert [r["name"] for r in by_kernel] == ["Y", "X", "Z"] and by_kernel[0]["queued_p50_us"] == 14.0
    by_op = launch_table(model, lo, "op", top=1)
    assert by_op == [{"name": "aten::add", "count": 1, "total_offset_us": 15.0, "offset_p50_us": 15.0,
                      "offset_p99_us": 15.0, "queued_p50_us": 14.0, "latency_p50_us": 0.0, "short": 0}]
    with pytest.raises(ValueError):
        launch_table(model, lo, "stream")
