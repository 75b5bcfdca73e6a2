"""Gap tables (filter, sort, page) and per-step stalls, on a trace whose gaps are known by hand."""
from __future__ import annotations

import json

import pytest
from conftest import kernel, launch, op, trace_doc
from kinetoscope.analysis.idle.gpu_idle import Cause
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.loader import decode_bytes
from kinetoscope.views.gaps_stalls import STALL_ADVICE, gaps_view, stalls_view

DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


@pytest.fixture(scope="module")
def traced():
    """Four kernels, two gaps: a 100 µs `host` gap (the next launch comes late, inside `aten::nonzero`)
    and a 300 µs `dataloader` gap (the DataLoader wait covers most of it); and the device's lead, the 20 µs
    of step 1 before its first kernel (inside `aten::mm`), listed first.

        µs   0     140    240   340          640   740
        CPU  [step 1 .............)[step 2 ...........................)
             [mm)[nonzero ...[L3])[DataLoader ....)[L4]
        GPU    [k1][k2]  gap [k3]  gap             [k4]
    """
    events = [op("ProfilerStep#1", 0, 300), op("aten::mm", 0, 30), launch(1, 5, 1), launch(7, 5, 2),
              op("aten::nonzero", 40, 210), launch(230, 5, 3),
              op("ProfilerStep#2", 300, 700), op(DATALOADER, 300, 300), launch(610, 5, 4),
              kernel("k1", 20, 50, 1), kernel("k2", 70, 70, 2), kernel("k3", 240, 100, 3), kernel("k4", 640, 100, 4)]
    model = decode_bytes(json.dumps(trace_doc(events)).encode())
    analysis = analyze(model)
    return model, analysis


def test_gaps_all(traced):
    model, analysis = traced
    (device,) = analysis.idle.devices
    page = gaps_view(model, device)
    gaps = page["gaps"]
    assert page["total"] == 3 and gaps["start_us"] == [0.0, 140.0, 340.0] and gaps["dur_us"] == [20.0, 100.0, 300.0]
    assert gaps["cause"] == ["host", "host", "dataloader"] and gaps["lead"] == [True, False, False]
    assert [page["names"][i] if i >= 0 else None for i in gaps["culprit"]] == ["aten::mm", "aten::nonzero", None]
    assert [page["names"][k] if k >= 0 else None for k in gaps["next_kernel"]] == [None, "k3", "k4"]
    assert gaps["launch_us"] == [None, 230.0, 610.0]


@pytest.mark.parametrize("kwargs, starts", [
    ({"causes": [Cause.DATALOADER]}, [340.0]),
    ({"causes": [Cause.HOST]}, [0.0, 140.0]),
    ({"min_ns": 150_000}, [340.0]),
    ({"t0_ns": 0, "t1_ns": 150_000}, [0.0, 140.0]),
    ({"t0_ns": 30_000, "t1_ns": 150_000}, [140.0]),
    ({"sort": "-dur"}, [340.0, 140.0, 0.0]),
    ({"sort": "-start"}, [340.0, 140.0, 0.0]),
    ({"sort": "dur"}, [0.0, 140.0, 340.0]),
    ({"offset": 1, "limit": 5}, [140.0, 340.0]),
    ({"limit": 1}, [0.0]),
])
def test_gaps_filtered_sorted_paged(traced, kwargs, starts):
    model, analysis = traced
    (device,) = analysis.idle.devices
    if "t0_ns" in kwargs:
        kwargs = {**kwargs, "t0_ns": model.start_ns + kwargs["t0_ns"], "t1_ns": model.start_ns + kwargs["t1_ns"]}
    assert gaps_view(model, device, **kwargs)["gaps"]["start_us"] == starts


def test_stalls(traced):
    model, analysis = traced
    result = stalls_view(model, analysis.steps, analysis.verdict)
    assert [s["name"] for s in result["steps"]] == ["ProfilerStep#1", "ProfilerStep#2"]
    second = result["steps"][1]
    assert second["dataloader_us"] == 300.0 and second["dataloader_share"] == 0.4286 and second["stalled"] is True
    assert second["gpu_idle_during_dataloader_us"] == 260.0 and result["steps"][0]["stalled"] is False
    # a two-step trace is not judged ("not enough data"), so the stall advice stands on its own
    assert analysis.verdict.bound == "not enough data"
    assert result["stalled_steps"] == 1 and result["suggestion"] == STALL_ADVICE


def test_the_lead_is_a_gap_of_the_report_too(traced):
    """The report names the lead (outside the active span, so the span's idle and causes leave it out) and counts
    its culprit among the host culprits; the text says so on a line of its own."""
    from kinetoscope.analysis.report import report_entry
    from kinetoscope.formats.report import render_entry

    model, analysis = traced
    entry = report_entry(model, analysis)
    device = entry["devices"][0]
    assert device["lead"] == {"start_us": 0.0, "idle_us": 20.0, "cause": "host", "culprit": "aten::mm"}
    assert device["gaps"]["count"] == 2 and device["gaps"]["by_cause_us"]["host"] == 100.0
    assert {"aten::mm": 20.0, "aten::nonzero": 100.0} == {c["name"]: c["idle_us"] for c in device["gaps"]["top_culprits"]}
    text = render_entry({"path": "t", "run": "r", "worker": "w", "span": "s", "error": None, **entry})
    assert "Before its first activity, inside the judged time: 20 µs idle (host; culprit: aten::mm)." in text
