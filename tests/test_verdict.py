"""analysis.verdict on tiny traces, one per bound."""
from __future__ import annotations

from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.loader import load_trace

DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _bound(tmp_path, events):
    model = load_trace(str(write_trace(tmp_path / "v.pt.trace.json", trace_doc(events))), cache_dir=None)
    return analyze(model).verdict


def _loop(gap_maker, n=6):
    """n iterations of 100 µs kernels separated by 100 µs gaps that `gap_maker(i, t)` explains."""
    events = []
    for i in range(n):
        t = i * 200
        events += gap_maker(i, t)
        events.append(kernel(f"k{i}", t + 100, 100, corr=i + 1))
    return events


def test_cpu_only(tmp_path):
    assert _bound(tmp_path, [op("aten::add", 0, 5)]).bound == "cpu-only"


def test_compute_bound(tmp_path):
    events = [launch(i * 100, 2, corr=i + 1) for i in range(5)] + [kernel(f"k{i}", 10 + i * 100, 98, corr=i + 1) for i in range(5)]
    assert _bound(tmp_path, events).bound == "compute-bound"


def test_host_bound_names_the_culprit(tmp_path):
    verdict = _bound(tmp_path, _loop(lambda i, t: [op("aten::nonzero", t + 10, 85), launch(t + 96, 10, corr=i + 1)]))
    assert verdict.bound == "host-bound" and "aten::nonzero" in verdict.evidence


def test_short_kernels_make_host_gaps_launch_overhead(tmp_path):
    events = []
    for i in range(6):
        events += [launch(i * 20, 15, corr=i + 1), kernel(f"tiny{i}", i * 20 + 16, 2, corr=i + 1)]
    verdict = _bound(tmp_path, events)
    assert verdict.bound == "launch-overhead-bound" and "CUDA graphs" in verdict.suggestion


def test_sync_bound_names_the_call(tmp_path):
    gap = lambda i, t: [op("aten::item", t - 5, 90), op("cudaStreamSynchronize", t - 4, 60, cat="cuda_runtime"),  # noqa: E731
                        launch(t + 60, 5, corr=i + 1)]
    verdict = _bound(tmp_path, _loop(gap))
    assert verdict.bound == "sync-bound" and "cudaStreamSynchronize in aten::item" in verdict.suggestion


def test_dataloader_bound(tmp_path):
    gap = lambda i, t: [op(f"ProfilerStep#{i}", t, 200, cat="user_annotation"), op(DL, t, 95, cat="user_annotation"),  # noqa: E731
                        launch(t + 96, 3, corr=i + 1)]
    verdict = _bound(tmp_path, _loop(gap))
    assert verdict.bound == "dataloader-bound" and "num_workers" in verdict.suggestion
