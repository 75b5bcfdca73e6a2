"""The rules that decide whether a trace can be judged and what its judged time is, each on a tiny trace whose
numbers a person can derive (issue 25): index spaces, a copy waiting behind queued work, steps from serving
annotations, graph capture, work launched before the trace, work the trace does not show, host preprocessing."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import kernel, launch, op, trace_doc
from kinetoscope.analysis.core.selectors import iteration_rows
from kinetoscope.analysis.judgement.sufficiency import index_spaces, waits_on_device
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.loader import decode_bytes


def _model(events, **top):
    return decode_bytes(json.dumps(trace_doc(events, **top)).encode())


def _busy_steps(n_kernels=30, gap_us=10.0, kernel_us=400.0, t0=0.0, host_us=2.0):
    """A step of back-to-back launches: a kernel of `kernel_us` every `kernel_us + gap_us`."""
    events, t = [], t0
    for i in range(n_kernels):
        events += [launch(t, host_us, 1000 + i), kernel(f"gemm{i}", t + 5, kernel_us, 1000 + i)]
        t += kernel_us + gap_us
    return events, t


@pytest.mark.parametrize("spaces, sampled", [
    ([[0, 4811, 4812], [30037380, 30052611, 15230]], False),  # with_stack: ops and Python frames, each dense
    ([[37160, 37222, 63], [1206287, 1207112, 821]], False),  # a file cut from a longer profile: starts at an offset
    ([[27169, 265455, 2402]], True),  # 1% kept: sparse inside the one space
    ([[0, 999, 1000], [10_000, 19_999, 2000]], True),  # the second space is 20% kept
])
def test_sampling_is_judged_per_index_space(spaces, sampled):
    events, _ = _busy_steps()
    model = _model(events)
    index = {"count": sum(c for *_, c in spaces), "min": spaces[0][0], "max": spaces[-1][1], "spaces": spaces}
    model.meta["event_index"] = index
    assert index_spaces(index).shape == (len(spaces), 3)
    assert ("sampled" in analyze(model).verdict.reasons[0] if analyze(model).verdict.reasons else False) == sampled


def test_an_old_summary_without_spaces_is_one_space():
    assert index_spaces({"count": 10, "min": 5, "max": 14}).tolist() == [[5, 14, 10]]


def test_a_copy_behind_queued_work_is_not_start_up():
    """30 kernels of 400 µs are queued in 0.1 ms; a 12 ms cudaMemcpyAsync then waits for them (the GPU is busy
    through it): 12 of about 12.3 ms of trace, yet not start-up. The same call with an idle device is."""
    events, t = _busy_steps(host_us=2.0, gap_us=0.0)
    queued = [e for e in events if e["cat"] == "cuda_runtime"]
    for i, e in enumerate(queued):  # the host issues all 30 at once, 3 µs apart
        e["ts"] = 3.0 * i
    copy_end = 30 * 400.0 + 10
    events += [launch(100.0, copy_end - 100.0, 2000, name="cudaMemcpyAsync"),
               kernel("Memcpy DtoH (Device -> Pageable)", copy_end - 8, 5, 2000, cat="gpu_memcpy")]
    verdict = analyze(_model(events)).verdict
    assert verdict.bound == "compute-bound", verdict.evidence
    model = _model(events)
    call = np.flatnonzero(np.array(model.names)[model.name_id] == "cudaMemcpyAsync")
    busy = analyze(model).idle.busiest()
    assert waits_on_device(model, call, (busy.busy_starts_ns, busy.busy_ends_ns)).tolist() == [True]
    lazy_load = [launch(0.0, 9000.0, 1), kernel("first", 9005.0, 5, 1)] + _busy_steps(t0=9020.0)[0]
    verdict = analyze(_model(lazy_load)).verdict  # a 9 ms first launch with the device idle and nothing queued
    assert verdict.bound == "not enough data" and "start-up work" in verdict.reasons[0]


def test_serving_iterations_are_the_steps_and_are_judged_to_their_device_work():
    """No ProfilerStep: one `execute_...` iteration issues 30 kernels in 0.1 ms, then the GPU runs them for 12 ms.
    The iteration is the step (nested `step[...]` inside it is part of it) and its judged time runs to 12 ms."""
    events, _ = _busy_steps(gap_us=0.0)
    for i, e in enumerate(x for x in events if x["cat"] == "cuda_runtime"):
        e["ts"] = 3.0 * i + 1
    events += [op("execute_32_context_0_generation_32", 0, 100, cat="user_annotation"),
               op("step[DECODE bs=32]", 10, 80, cat="user_annotation")]
    model = _model(events)
    rows = iteration_rows(model)
    assert [model.names[model.name_id[r]] for r in rows] == ["execute_32_context_0_generation_32"]
    analysis = analyze(model)
    assert analysis.steps.count == 1
    assert analysis.breakdown.judged_ns >= 30 * 400_000  # the whole GPU phase, not the 0.1 ms host phase
    assert analysis.verdict.bound == "compute-bound"


def test_graph_capture_only_is_not_enough_data():
    """A capture of 40 launches (no device work) over 20 ms with 25 real kernels of 10 µs: capture only."""
    events = [op("hipStreamBeginCapture", 0, 5, cat="cuda_runtime")]
    events += [launch(10 + 500 * i, 20, 100 + i, name="hipLaunchKernel") for i in range(40)]
    events += [op("hipStreamEndCapture", 20_000, 5, cat="cuda_runtime")]
    events += [x for i in range(25) for x in (launch(21_000 + 50 * i, 5, 500 + i), kernel(f"k{i}", 21_008 + 50 * i, 10, 500 + i))]
    verdict = analyze(_model(events)).verdict
    assert verdict.bound == "not enough data"
    assert any("graph capture" in r for r in verdict.reasons) and not any("device records" in r for r in verdict.reasons)


def test_kernels_launched_before_the_trace_are_not_unlinked_host_idle():
    """Five 300 µs kernels without launch calls, 20 µs apart, before the first linked kernel: their gaps are
    `launch` (the launch came before the file), the device is busy: compute-bound."""
    events = [kernel(f"prev{i}", 320.0 * i, 300, None) for i in range(5)]
    more, _ = _busy_steps(t0=1700.0)
    events += more
    events[5]["ts"] = 1600.0  # the first linked launch is issued while the old kernels still run
    idle = analyze(_model(events)).idle.busiest()
    assert idle.pre_window_rows == 5
    causes = dict(zip(*np.unique(idle.gap_cause[:5], return_counts=True)))
    assert causes.get(4, 0) == 0  # Cause.UNLINKED
    assert analyze(_model(events)).verdict.bound == "compute-bound"


def test_time_held_behind_unseen_work_is_not_judged():
    """A kernel launched at 10 µs starts only at 400 ms with the device idle (a stream wait on work not in the
    file); then 10 ms of kernels. The 400 ms are not judged: compute-bound over ~10 ms."""
    events = [launch(0.0, 3, 1), kernel("first", 5, 4, 1), launch(10.0, 5, 2), kernel("held", 400_000, 300, 2)]
    more, _ = _busy_steps(n_kernels=25, t0=400_310.0)
    events += more
    analysis = analyze(_model(events))
    idle = analysis.idle.busiest()
    assert idle.unseen_starts_ns.size == 1
    assert idle.unseen_ends_ns[0] - idle.unseen_starts_ns[0] == pytest.approx((400_000 - 15) * 1000, abs=1000)
    assert analysis.breakdown.judged_ns < 11_000_000
    assert analysis.verdict.bound == "compute-bound", analysis.verdict.evidence


def test_host_preprocessing_before_the_first_kernel_is_host_bound_with_its_culprit():
    """A 100 ms step: 80 ms of Python preprocessing (no ATen op) before 20 ms of kernels. The lead is judged,
    and the culprit is the innermost Python frame covering half of it."""
    events = [op("ProfilerStep#6", 0, 100_000, cat="user_annotation"),
              op("pipeline.py(10): __call__", 0, 100_000, cat="python_function"),
              op("video.py(129): preprocess", 100, 79_800, cat="python_function"),
              op("image_processing.py(235): preprocess", 200, 79_000, cat="python_function"),
              op("image_processing.py(178): _preprocess_image", 40_000, 900, cat="python_function")]
    more, _ = _busy_steps(n_kernels=40, kernel_us=480, gap_us=5, t0=80_000)
    events += more
    verdict = analyze(_model(events)).verdict
    assert verdict.bound == "host-bound", verdict.evidence
    assert "image_processing.py(235): preprocess" in verdict.evidence
