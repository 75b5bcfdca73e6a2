"""analysis.insights: each insight on a trace built to show it (and not the others), its figures by hand,
and the shared real traces: insights never change a verdict."""
from __future__ import annotations

import pytest
from conftest import SHARED_TRACES, kernel, launch, memory, op, requires_shared, trace_doc, write_trace
from kinetoscope.analysis.core import thresholds as T
from kinetoscope.analysis.core.selectors import OpIndex
from kinetoscope.analysis.judgement.insights import fusion_candidates, insights
from kinetoscope.analysis.report import analyze, report_entry
from kinetoscope.trace.loader import load_trace

EW = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, float*)"
GIB = 1 << 30


def _load(tmp_path, events, name="t"):
    return load_trace(str(write_trace(tmp_path / f"{name}.pt.trace.json", trace_doc(events))), cache_dir=None)


def _optimizer_step(t0: float, n: int, corr0: int) -> list[dict]:
    """An `Optimizer.step` annotation whose n add_ ops each launch one 3 µs elementwise kernel (launch call 8 µs)."""
    events = [op("Optimizer.step#SGD.step", t0, 20 * n + 10, cat="user_annotation")]
    for i in range(n):
        t = t0 + 5 + 20 * i
        events += [op("aten::add_", t, 12), launch(t + 2, 8, corr0 + i), kernel(EW, t + 12, 3, corr0 + i)]
    return events


def test_fusion_run_by_hand(tmp_path):
    model = _load(tmp_path, _optimizer_step(0, 5, 1) + [op("aten::mm", 200, 10), launch(201, 8, 99),
                                                        kernel("volta_sgemm_128x64_nn", 215, 300, 99)])
    found = fusion_candidates(model, judged_ns=1_000_000, ops=OpIndex(model))
    assert found is not None and found.kind == "fusion"
    # one run of 5 kernels: 4 launches saved at the fastest tenth of the 6 launch calls (all 8 µs)
    assert found.figures["runs"] == 1 and found.figures["kernels"] == 5 and found.figures["kernel_us"] == 15.0
    assert found.figures["saved_launch_us"] == 32.0 and found.figures["top_region"] == "Optimizer.step#SGD.step"
    assert fusion_candidates(model, judged_ns=int(32_000 / T.FUSION_MIN_SHARE) + 1, ops=OpIndex(model)) is None


def test_short_runs_and_long_kernels_are_not_candidates(tmp_path):
    two = _load(tmp_path, _optimizer_step(0, 2, 1), "two")
    assert fusion_candidates(two, judged_ns=1, ops=OpIndex(two)) is None  # below FUSION_MIN_RUN
    events = [e if e.get("cat") != "kernel" else {**e, "dur": 50} for e in _optimizer_step(0, 5, 1)]
    long = _load(tmp_path, events, "long")
    assert fusion_candidates(long, judged_ns=1, ops=OpIndex(long)) is None  # 50 µs > FUSION_SHORT_US


def _steps(durations_ms: list[float], kernel_us: float = 500.0, call_us: float = 5.0) -> list[dict]:
    """One step per duration, each launching 10 kernels of kernel_us through calls of call_us."""
    events, t, corr = [], 0.0, 1
    for d in durations_ms:
        events.append(op(f"ProfilerStep#{corr}", t, d * 1000))
        for k in range(10):
            ts = t + 10 + k * (call_us + 1)
            events += [launch(ts, call_us, corr), kernel("volta_sgemm_128x64_nn", ts + call_us + 1 + k * kernel_us, kernel_us, corr)]
            corr += 1
        t += d * 1000
    return events


def test_warm_up_by_hand(tmp_path):
    model = _load(tmp_path, _steps([100, 30, 30, 32, 30]))
    kinds = {i.kind: i for i in insights(model, analyze(model))}
    assert "warm-up" in kinds and kinds["warm-up"].figures["ratio"] == pytest.approx(100 / 30, abs=1e-3)
    steady = _load(tmp_path, _steps([50, 30, 30, 30]), "b")  # 1.7x: not warm-up
    assert "warm-up" not in {i.kind for i in insights(steady, analyze(steady))}


def test_tiny_batch_by_hand(tmp_path):
    tiny = _load(tmp_path, _steps([1, 1, 1, 1], kernel_us=2.0, call_us=6.0))
    found = {i.kind: i for i in insights(tiny, analyze(tiny))}
    assert found["tiny-batch"].figures["short_kernels"] == 40 and found["tiny-batch"].figures["median_kernel_us"] == 2.0
    big = _load(tmp_path, _steps([30, 30, 30, 30]), "big")
    assert "tiny-batch" not in {i.kind for i in insights(big, analyze(big))}


def test_fragmentation_by_hand(tmp_path):
    events = _steps([30, 30, 30]) + [memory(5, GIB, total=GIB, reserved=3 * GIB),
                                      memory(40_000, -GIB // 2, total=GIB // 2, reserved=3 * GIB)]
    model = _load(tmp_path, events)
    found = {i.kind: i for i in insights(model, analyze(model))}
    assert found["fragmentation"].figures == {"device": "cuda:0", "allocated_bytes": GIB, "reserved_bytes": 3 * GIB,
                                              "frees_bytes": 2 * GIB}
    assert "3.0x" in found["fragmentation"].evidence and "up to 2.00 GiB" in found["fragmentation"].suggestion
    tight = _load(tmp_path, _steps([30, 30, 30]) + [memory(5, GIB, total=GIB, reserved=GIB + (100 << 20))], "tight")
    assert "fragmentation" not in {i.kind for i in insights(tight, analyze(tight))}


@requires_shared
@pytest.mark.parametrize("rel", ["resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
                                 "resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz"])
def test_resnet_insights_add_to_the_verdict(rel):
    """The optimizer's elementwise runs are fusion candidates; a batch of 32 images is not tiny; the verdict and
    its suggestion are the ones the analysis made without insights."""
    model = load_trace(str(SHARED_TRACES / rel), cache_dir=None)
    analysis = analyze(model)
    kinds = {i.kind: i for i in analysis.insights}
    assert "fusion" in kinds and kinds["fusion"].figures["top_region"] == "Optimizer.step#SGD.step"
    assert "tiny-batch" not in kinds and "fragmentation" not in kinds
    entry = report_entry(model, analysis)
    # the report adds the one insight that needs the op tables: fp32 convolutions launch 68% of the kernel time
    assert [i["kind"] for i in entry["insights"]] == [i.kind for i in analysis.insights] + ["mixed-precision"]
    assert all(i["suggestion"] not in entry["verdict"]["suggestion"] for i in entry["insights"])
