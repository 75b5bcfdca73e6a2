"""analysis.verdict on small hand-made traces: one per bound, the not-enough-data reasons, runner-up and
confidence, run-level pooling. Each trace is a loop long enough to be judged (40 iterations of 2 ms)."""
from __future__ import annotations

import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.analysis.judgement.verdict import NOT_ENOUGH_DATA, Verdict, harmonized, harmonized_by_worker, run_verdict, winner_rule
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.loader import load_trace

DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
PERIOD = 2000  # µs per iteration
N = 40


def _analysis(tmp_path, events, name="v"):
    model = load_trace(str(write_trace(tmp_path / f"{name}.pt.trace.json", trace_doc(events))), cache_dir=None)
    return analyze(model)


def _verdict(tmp_path, events) -> Verdict:
    return _analysis(tmp_path, events).verdict


def _loop(gap_maker, n=N, kernel_us=1000, steps=True, kernel_name="aten_kernel"):
    """n iterations: a gap of PERIOD - kernel_us that `gap_maker(i, t)` explains, then one kernel."""
    events = []
    for i in range(n):
        t = i * PERIOD
        if steps:
            events.append(op(f"ProfilerStep#{i}", t, PERIOD, cat="user_annotation"))
        events += gap_maker(i, t)
        events.append(kernel(f"{kernel_name}{i % 3}", t + PERIOD - kernel_us, kernel_us, corr=i + 1))
    return events


def _host(i, t):
    return [op("## forward ##", t + 10, PERIOD - 1020, cat="user_annotation"), op("aten::nonzero", t + 20, 900),
            launch(t + PERIOD - 1005, 4, corr=i + 1)]


def test_cpu_only_names_the_hot_spots(tmp_path):
    events = []
    for i in range(20):
        t = i * 1000
        events += [op(f"ProfilerStep#{i}", t, 1000, cat="user_annotation"), op("aten::conv2d", t + 10, 700),
                   op("aten::mkldnn_convolution", t + 20, 650), op("aten::relu", t + 720, 100)]
    verdict = _verdict(tmp_path, events)
    assert verdict.bound == "cpu-only" and "aten::mkldnn_convolution" in verdict.evidence
    assert "nothing to do" not in verdict.evidence + verdict.suggestion


def test_cpu_only_dataloader_bound(tmp_path):
    events = []
    for i in range(10):
        t = i * 1000
        events += [op(f"ProfilerStep#{i}", t, 1000, cat="user_annotation"), op(DL, t + 5, 940, cat="user_annotation")]
        events += [op("aten::add", t + 950 + k, 1) for k in range(6)]
    verdict = _verdict(tmp_path, events)
    assert verdict.bound == "dataloader-bound" and verdict.runner_up == "cpu-only"
    assert "94" in verdict.evidence and "10 of 10 steps" in verdict.evidence


def test_a_fragment_is_not_enough_data(tmp_path):
    verdict = _verdict(tmp_path, [op("aten::add", 0, 5)])
    assert verdict.bound == NOT_ENOUGH_DATA and "CPU ops" in verdict.evidence


def test_compute_bound(tmp_path):
    verdict = _verdict(tmp_path, _loop(lambda i, t: [launch(t + 10, 5, corr=i + 1)], kernel_us=1950))
    assert (verdict.bound, verdict.confidence, verdict.runner_up) == ("compute-bound", "high", "host-bound")
    assert verdict.share == pytest.approx(1950 / 2000, abs=0.002)


def test_launch_gaps_behind_a_queue_are_device_bubbles(tmp_path):
    """Requested in time, started late, with work queued: not launch overhead (that needs an empty queue)."""
    verdict = _verdict(tmp_path, _loop(lambda i, t: [launch(t - 500, 5, corr=i + 1)], kernel_us=1500))
    assert verdict.bound == "compute-bound" and verdict.shares["launch-overhead-bound"] == 0.0
    assert verdict.share == pytest.approx(1.0)


def test_host_bound_names_the_innermost_op_and_its_annotation(tmp_path):
    verdict = _verdict(tmp_path, _loop(_host))
    assert verdict.bound == "host-bound" and verdict.runner_up == "compute-bound"
    assert "aten::nonzero in ## forward ##" in verdict.evidence
    assert f"{100 * verdict.share:.1f}%" in verdict.evidence  # the evidence quotes the share that won


def _tiny_launches(queued: bool, graph: bool = False):
    """Kernels of 2 µs launched by 15 µs calls; queued: a long kernel keeps the stream busy ahead of each."""
    events = [op(f"ProfilerStep#{s}", s * 20_000, 20_000, cat="user_annotation") for s in range(3)]
    for i in range(3000):
        t = i * 20
        events += [launch(t, 15, corr=i + 1), kernel(f"tiny{i % 4}", t + 17, 2, corr=i + 1)]
    if queued:  # the same launches behind a backlog: each kernel waits on the stream before it runs
        events = [e for e in events if e.get("cat") != "kernel"]
        events += [kernel(f"tiny{i % 4}", 40 + i * 20, 19, corr=i + 1) for i in range(3000)]
    if graph:
        events += [launch(60_001, 5, corr=9999, name="cudaGraphLaunch"), kernel("g0", 60_010, 1, corr=9999)]
    return events


def test_launch_overhead_needs_an_empty_queue(tmp_path):
    verdict = _verdict(tmp_path, _tiny_launches(queued=False))
    assert verdict.bound == "launch-overhead-bound" and "CUDA graphs" in verdict.suggestion
    assert "queue was empty" in verdict.evidence
    assert _verdict(tmp_path, _tiny_launches(queued=True)).bound != "launch-overhead-bound"


def test_a_run_replaying_graphs_is_never_told_to_use_graphs(tmp_path):
    verdict = _verdict(tmp_path, _tiny_launches(queued=False, graph=True))
    assert verdict.bound == "launch-overhead-bound"
    assert "graph" not in verdict.suggestion.lower()


def test_sync_bound_names_the_call(tmp_path):
    def gap(i, t):
        return [op("aten::item", t + 10, 950), op("cudaStreamSynchronize", t + 11, 900, cat="cuda_runtime"),
                launch(t + 965, 5, corr=i + 1)]
    verdict = _verdict(tmp_path, _loop(gap))
    assert verdict.bound == "sync-bound" and "cudaStreamSynchronize in aten::item" in verdict.suggestion


def test_polls_are_never_syncs(tmp_path):
    def gap(i, t):
        return [op("aten::poll", t + 10, 950)] + [op("cudaEventQuery", t + 11 + 10 * k, 1, cat="cuda_runtime")
                                                  for k in range(90)] + [launch(t + 965, 5, corr=i + 1)]
    verdict = _verdict(tmp_path, _loop(gap))
    assert verdict.bound == "host-bound" and "cudaEventQuery" not in verdict.evidence + verdict.suggestion


def test_dataloader_bound(tmp_path):
    gap = lambda i, t: [op(DL, t + 5, 950, cat="user_annotation"), launch(t + 960, 3, corr=i + 1)]  # noqa: E731
    verdict = _verdict(tmp_path, _loop(gap))
    assert verdict.bound == "dataloader-bound" and "num_workers" in verdict.suggestion
    assert f"{N} of {N} steps stalled" in verdict.evidence


def test_communication_bound(tmp_path):
    def gap(i, t):
        return [launch(t, 3, corr=10_000 + i), kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 10, 1100, corr=10_000 + i,
                                                       stream=20),
                launch(t + 5, 3, corr=i + 1)]
    verdict = _verdict(tmp_path, _loop(gap, kernel_us=850))
    assert verdict.bound == "communication-bound" and verdict.runner_up == "compute-bound"
    assert "overlapped" in verdict.evidence


def test_steps_that_disagree_lower_the_confidence(tmp_path):
    events = _loop(lambda i, t: _host(i, t) if i % 2 else [launch(t, 5, corr=i + 1)],
                   kernel_us=1000)
    verdict = _verdict(tmp_path, events)
    assert verdict.step_agreement is not None and verdict.step_agreement <= 0.55
    assert verdict.confidence in ("low", "medium")


def test_start_up_only_is_not_enough_data(tmp_path):
    events = [op("cudaDeviceGetStreamPriorityRange", 0, 500_000, cat="cuda_runtime")]
    events += [e for i, e in enumerate(_loop(_host)) if True]
    for e in events[1:]:
        e["ts"] += 500_000
    verdict = _verdict(tmp_path, events)
    assert verdict.bound == NOT_ENOUGH_DATA and "cudaDeviceGetStreamPriorityRange" in verdict.evidence
    assert verdict.runner_up == "host-bound" and "warm up" in verdict.suggestion


def test_a_micro_test_is_not_enough_data(tmp_path):
    verdict = _verdict(tmp_path, _loop(_host, n=3))
    assert verdict.bound == NOT_ENOUGH_DATA and "device activities" in verdict.evidence


def test_missing_device_records_are_not_enough_data(tmp_path):
    events = _loop(_host)
    events = [e for e in events if e.get("cat") != "kernel" or e["name"].endswith("0")]
    verdict = _verdict(tmp_path, events)
    assert verdict.bound == NOT_ENOUGH_DATA and "no device activity" in verdict.evidence


def test_sampled_events_are_not_enough_data(tmp_path):
    events = _loop(_host)
    for k, e in enumerate(e for e in events if e.get("cat") in ("cpu_op", "user_annotation")):
        e["args"]["Ev Idx"] = k * 100  # 1 in 100 kept
    verdict = _verdict(tmp_path, events)
    assert verdict.bound == NOT_ENOUGH_DATA and "sampled" in verdict.evidence and "no sampling" in verdict.suggestion
    # host gaps rest on the dropped CPU events: only the device's records lean (here: compute, 50%)
    assert verdict.runner_up == "compute-bound" and "device's own figures" in verdict.evidence


def test_repeated_step_names_are_every_step(tmp_path):
    events = _loop(_host, n=30)
    for e in events:
        if e["name"].startswith("ProfilerStep#"):
            e["name"] = f"ProfilerStep#{int(e['name'].split('#')[1]) % 5}"
    analysis = _analysis(tmp_path, events)
    assert analysis.steps.count == 30 and analysis.breakdown.units == 30


def test_mtia_device_work_is_device_work(tmp_path):
    events = _loop(_host)
    for e in events:
        if e.get("cat") == "kernel":
            e["cat"] = "mtia_ccp_events"
        elif e.get("cat") == "cuda_runtime":
            e["cat"] = "mtia_runtime"
            e["name"] = "runFunction - job_prep_and_submit_for_execution"
    verdict = _verdict(tmp_path, events)
    assert verdict.bound == "host-bound"


def _span(bound, confidence, runner, shares, judged=1000):
    return Verdict(bound=bound, evidence="e", suggestion=f"do {bound}", confidence=confidence, runner_up=runner,
                   runner_up_share=shares.get(runner), share=shares[bound], shares=shares, judged_ns=judged)


def test_run_verdict_pools_spans_and_harmonizes_close_calls():
    base = {"compute-bound": 0.0, "communication-bound": 0.0, "dataloader-bound": 0.0, "sync-bound": 0.0,
            "launch-overhead-bound": 0.0}
    a = _span("compute-bound", "medium", "host-bound", {**base, "compute-bound": 0.82, "host-bound": 0.18})
    b = _span("host-bound", "medium", "compute-bound", {**base, "compute-bound": 0.77, "host-bound": 0.23})
    c = _span("compute-bound", "high", "host-bound", {**base, "compute-bound": 0.95, "host-bound": 0.05})
    run = run_verdict([a, b, c])
    assert run.bound == "compute-bound" and run.runner_up == "host-bound" and run.step_agreement == pytest.approx(2 / 3)
    assert harmonized(b, run).bound == "compute-bound" and harmonized(b, run).runner_up == "host-bound"
    assert harmonized(c, run) is c
    none = run_verdict([Verdict(NOT_ENOUGH_DATA, "e", "s", reasons=("sampled",))])
    assert none.bound == NOT_ENOUGH_DATA and none.reasons == ("sampled",)


def test_spans_follow_their_own_worker_never_another_rank():
    """Spans of one worker harmonize; a rank never follows the other ranks (a straggler computes while
    the others wait for it: both verdicts stand)."""
    base = {"compute-bound": 0.0, "communication-bound": 0.0, "dataloader-bound": 0.0, "sync-bound": 0.0,
            "launch-overhead-bound": 0.0, "host-bound": 0.0}
    waiting = _span("communication-bound", "high", "compute-bound", {**base, "communication-bound": 0.8, "compute-bound": 0.2})
    straggler = _span("compute-bound", "medium", "communication-bound",
                      {**base, "compute-bound": 0.7, "communication-bound": 0.3})
    out = harmonized_by_worker([waiting, waiting, waiting, straggler], ["rank0", "rank1", "rank2", "rank3"])
    assert [v.bound for v in out] == ["communication-bound"] * 3 + ["compute-bound"]
    assert out[3] is straggler
    same = harmonized_by_worker([waiting, waiting, straggler], ["w", "w", "w"])
    assert same[2].bound == "communication-bound" and same[2].confidence == "low" and "this worker" in same[2].evidence


def test_the_rule_says_why_a_smaller_share_wins():
    """sync-bound at 35.7% over compute at 64.3% (issue 30): the host-side causes idle the GPU 35.7% >= 20%,
    so the largest host-side cause wins; a winner with the larger share needs no rule."""
    sync = Verdict("sync-bound", "e", "s", runner_up="compute-bound", runner_up_share=0.643, share=0.357,
                   shares={"compute-bound": 0.643, "sync-bound": 0.357})
    rule = winner_rule(sync)
    assert rule and "35.7%" in rule and "20%" in rule and "compute-bound" in rule
    assert winner_rule(Verdict("compute-bound", "e", "s", runner_up="host-bound", runner_up_share=0.2, share=0.6)) is None
    # both host-side: the steps voted for the smaller one
    voted = Verdict("host-bound", "e", "s", runner_up="dataloader-bound", runner_up_share=0.3, share=0.25, step_agreement=0.75,
                    shares={"host-bound": 0.25, "dataloader-bound": 0.3, "compute-bound": 0.45})
    assert "75% of them are host-bound" in winner_rule(voted)
    assert winner_rule(Verdict(NOT_ENOUGH_DATA, "e", "s", runner_up="host-bound", runner_up_share=0.9, share=None)) is None
