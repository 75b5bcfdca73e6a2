"""analysis.gpu_summary, tbprof_steps, tensor_cores and the report's torch-tb-profiler entries.

References: torch-tb-profiler's own expectations. Its end-to-end check (tb_plugin/test/result_check_file.txt,
the Overview of worker0 span 1 of both ResNet samples) gives the GPU summary, the step time per category and
the mixed-precision recommendation; its unit tests (tb_plugin/test/test_profiler.py: test_all_categories,
test_no_profilerstep, test_multiple_profilersteps_*, test_last_steps_no_kernel, test_gpu_utilization*) give
small traces with hand-derived figures, re-built here with the conftest builders. The rest are traces made
for one edge case each, with figures derived by hand.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from conftest import SHARED_TRACES, kernel, launch, op, plugin_apps, requires_shared, trace_doc, write_trace
from kinetoscope.analysis.device.gpu_summary import gpu_summaries, uses_tensor_cores_tbprof
from kinetoscope.analysis.device.tbprof_steps import CATEGORIES, tbprof_steps
from kinetoscope.analysis.device.tensor_cores import tc_eligibility
from kinetoscope.analysis.report import analyze, report_entry
from kinetoscope.analysis.tables.index import TableIndex
from kinetoscope.formats.report import render_entry
from kinetoscope.trace.loader import load_trace
from werkzeug.test import Client

# result_check_file.txt: (utilization, SM efficiency, occupancy, Tensor Cores) in %, and per step
# (Kernel, Memcpy, Memset, Runtime, DataLoader, CPU Exec, Other) in whole µs, steps 5..10.
TBPROF = {
    "resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz": (
        (55.51, 54.68, 49.13, 0.0),
        [(98598, 1941, 90, 2796, 69317, 14091, 1115), (98570, 1947, 89, 2762, 57669, 12968, 1148),
         (98596, 1931, 91, 2877, 61257, 13768, 1213), (98623, 1938, 89, 2841, 56453, 13420, 1200),
         (98504, 1937, 87, 2788, 62690, 15025, 1141), (98641, 1798, 88, 3381, 48185, 12773, 1117)],
        (98589, 1915, 89, 2908, 59262, 13674, 1156, 177592)),
    "resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz": (
        (70.27, 69.22, 48.91, 0.0),
        [(99778, 3606, 98, 41028, 4341, 27460, 5995), (99208, 2948, 98, 3406, 0, 16404, 4119),
         (99114, 2949, 98, 3417, 6, 19521, 2076), (99021, 2975, 97, 3544, 0, 15464, 1978),
         (98791, 3596, 97, 8275, 1370, 43905, 7427), (98956, 2885, 98, 3714, 1400, 13235, 3910)],
        (99145, 3160, 98, 10564, 1186, 22665, 4251, 141068)),
}
SHOWN = ("kernel", "memcpy", "memset", "runtime", "dataloader", "cpu_exec", "other")  # its columns (no communication)


def _model(tmp_path, events: list[dict], name: str = "t", **top: Any):
    return load_trace(str(write_trace(tmp_path / f"{name}.pt.trace.json", trace_doc(events, **top))), cache_dir=None)


def _k(name: str, ts: float, dur: float, corr: int, device: int = 0, stream: int = 7, **args: Any) -> dict:
    """A kernel with extra args (`blocks per SM`, `est. achieved occupancy %`, ...)."""
    event = kernel(name, ts, dur, corr, stream=stream, device=device)
    event["args"].update(args)
    return event


def _legacy(name: str, ts: float, dur: float, tid: Any = "123", ext: int = 0) -> dict:
    return op(name, ts, dur, tid=tid, cat="Operator", **{"External id": ext})


def _rt(name: str, ts: float, dur: float, corr: int, tid: Any = "123") -> dict:
    return op(name, ts, dur, tid=tid, cat="Runtime", correlation=corr)


def _gpu(cat: str, name: str, ts: float, dur: float, corr: int) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": "stream 7", "ts": ts, "dur": dur,
            "args": {"stream": 7, "correlation": corr, "device": 0}}


def _costs(steps, k: int) -> dict[str, int]:
    return {c: int(round(steps.category_ns[j, k] / 1e3)) for j, c in enumerate(CATEGORIES)}


# --- the ResNet samples against torch-tb-profiler's Overview ----------------------------------------------

@pytest.fixture(scope="module", params=sorted(TBPROF))
def resnet(request):
    model = load_trace(str(SHARED_TRACES / request.param), cache_dir=None)
    return request.param, model


@requires_shared
def test_gpu_summary_matches_torch_tb_profiler_within_005pp(resnet):
    rel, model = resnet
    (s,) = gpu_summaries(model, tbprof_steps(model))
    mine = (100 * s.utilization, 100 * s.sm_efficiency, s.occupancy_pct, 100 * s.tensor_core_share)
    assert mine == pytest.approx(TBPROF[rel][0], abs=0.05)
    assert (s.name, round(s.memory_bytes / (1 << 30), 2), s.compute_capability) == ("Tesla V100-DGXS-32GB", 31.74, "7.0")


@requires_shared
def test_step_categories_match_torch_tb_profiler(resnet):
    rel, model = resnet
    steps = tbprof_steps(model)
    assert [model.names[i] for i in steps.name_id] == [f"ProfilerStep#{n}" for n in range(5, 11)]
    assert [tuple(_costs(steps, k)[c] for c in SHOWN) for k in range(steps.count)] == TBPROF[rel][1]
    average = steps.average_ns()
    assert tuple(int(round(average[c] / 1e3)) for c in (*SHOWN, "total")) == TBPROF[rel][2]
    # every moment of a step is in exactly one category
    assert np.array_equal(steps.category_ns.sum(axis=0), steps.end_ns - steps.start_ns)


@requires_shared
def test_report_carries_the_figures_and_the_68_percent_amp_insight(resnet):
    rel, model = resnet
    entry = report_entry(model, analyze(model))
    (gpu,) = entry["gpu_summary"]
    assert gpu["utilization_pct"] == pytest.approx(TBPROF[rel][0][0], abs=0.05)
    assert gpu["kinetoscope_busy_pct"] > gpu["utilization_pct"]  # its own busy time counts memcpys too, over its own window
    amp = [i for i in entry["insights"] if i["kind"] == "mixed-precision"]
    assert len(amp) == 1 and "68%" in amp[0]["evidence"] and "autocast" in amp[0]["suggestion"]
    assert round(entry["tensor_cores"]["eligible_kernel_pct"]) == 68
    tb = entry["tbprof_steps"]
    assert tb["count"] == 6 and tb["steps"]["kernel_us"][0] == TBPROF[rel][1][0][0] and tb["steps"]["name"][0] == "ProfilerStep#5"
    # its Overview's shares of the average step ("performance" extra: Kernel, DataLoader, CPU Exec)
    shares = {"resnet50_num_workers_0": (55.51, 33.37, 7.7), "resnet50_num_workers_4": (70.28, 0.84, 16.07)}[rel.split("/")[0]]
    assert tuple(round(tb["average_pct"][c], 2) for c in ("kernel", "dataloader", "cpu_exec")) == shares
    json.dumps(entry, allow_nan=False)


# --- torch-tb-profiler's unit traces ----------------------------------------------------------------------

def test_all_categories(tmp_path):
    """test_all_categories: one step, every category, on two threads."""
    dl = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    model = _model(tmp_path, [
        _legacy(dl, 100, 180, ext=2), _legacy("aten::to", 200, 60, ext=3),
        _legacy("aten::nll_loss_backward", 340, 70, tid="456", ext=4), _legacy("ProfilerStep#1", 50, 400, ext=1),
        _gpu("Memcpy", "Memcpy HtoD (Pageable -> Device)", 405, 10, 334), _rt("cudaMemcpyAsync", 360, 20, 334, "456"),
        _gpu("Memset", "Memset (Device)", 420, 5, 40344), _rt("cudaMemsetAsync", 390, 10, 40344, "456"),
        _gpu("Kernel", "void cunn_ClassNLLCriterion_updateGradInput_kernel<float>", 430, 15, 40348),
        _rt("cudaLaunchKernel", 405, 5, 40348, "456")])
    steps = tbprof_steps(model)
    assert steps.count == 1
    assert _costs(steps, 0) == {"kernel": 15, "memcpy": 10, "memset": 5, "communication": 0, "runtime": 30,
                                "dataloader": 180, "cpu_exec": 35, "other": 125}


def test_no_profilerstep_uses_one_step_over_the_host_ops_extended_to_their_kernels(tmp_path):
    model = _model(tmp_path, [
        _legacy("aten::to", 100, 60, ext=3), _legacy("aten::nll_loss_backward", 300, 70, tid="456", ext=4),
        _gpu("Kernel", "k", 320, 100, 40348), _rt("cudaLaunchKernel", 310, 20, 40348, "456")])
    steps = tbprof_steps(model)
    assert steps.count == 1 and int(steps.name_id[0]) == -1
    assert (steps.end_ns[0] - steps.start_ns[0]) / 1e3 == (320 + 100) - 100
    assert _costs(steps, 0) == {"kernel": 100, "memcpy": 0, "memset": 0, "communication": 0, "runtime": 10,
                                "dataloader": 0, "cpu_exec": 70, "other": 300 - (100 + 60)}
    (s,) = gpu_summaries(model, steps)
    assert s.utilization == pytest.approx(100 / 320)


@pytest.mark.parametrize("early_kernel, first, second", [
    # test_multiple_profilersteps_no_overlap: steps end at their device work
    (None, dict(total=320 - 100, kernel=0, memcpy=40, runtime=5, cpu_exec=55, other=200 - 60 - 20),
     dict(total=610 - 350, kernel=200, runtime=5, cpu_exec=45, other=10)),
    # test_multiple_profilersteps_with_overlap: a kernel launched before every step pushes step 1's start to its end
    ((150, 90), dict(total=380 - 240, kernel=0, memcpy=100, runtime=5, cpu_exec=260 - 240 - 5, other=20),
     dict(total=610 - 380, kernel=200, runtime=5, cpu_exec=380 - 360 + 5, other=0)),
])
def test_two_steps(tmp_path, early_kernel, first, second):
    events = [_legacy("ProfilerStep#1", 100, 200, ext=1), _legacy("aten::to", 200, 60, ext=2),
              _legacy("ProfilerStep#2", 350, 150, ext=3), _legacy("aten::mm", 360, 50, ext=4),
              _gpu("Memcpy", "Memcpy HtoD (Pageable -> Device)", 280, 40 if early_kernel is None else 100, 334),
              _rt("cudaMemcpyAsync", 250, 5, 334), _gpu("Kernel", "k", 410, 200, 40348), _rt("cudaLaunchKernel", 400, 5, 40348)]
    if early_kernel:
        events.append(_gpu("Kernel", "early", *early_kernel, 123))
    steps = tbprof_steps(_model(tmp_path, events))
    assert steps.count == 2
    for k, want in enumerate((first, second)):
        costs = _costs(steps, k)
        assert (steps.end_ns[k] - steps.start_ns[k]) / 1e3 == want["total"]
        assert {c: costs[c] for c in want if c != "total"} == {c: v for c, v in want.items() if c != "total"}


def test_trailing_steps_without_device_work_are_dropped(tmp_path):
    """test_last_steps_no_kernel: steps 2 and 3 launched nothing; step 1 starts after an earlier kernel."""
    steps = tbprof_steps(_model(tmp_path, [
        _legacy("ProfilerStep#1", 100, 200, ext=1), _legacy("aten::to", 120, 10, ext=2),
        _legacy("ProfilerStep#2", 300, 100, ext=3), _legacy("ProfilerStep#3", 400, 50, ext=4),
        _gpu("Kernel", "early", 90, 20, 123), _rt("cudaMemcpyAsync", 125, 5, 334), _gpu("Kernel", "k", 150, 180, 334)]))
    assert steps.count == 1
    assert (steps.end_ns[0] - steps.start_ns[0]) / 1e3 == (150 + 180) - (90 + 20)


def _utilization_trace() -> list[dict]:
    """test_gpu_utilization: no steps; five kernels on device 1, with blocks per SM and occupancy."""
    bps, occ = "blocks per SM", "est. achieved occupancy %"
    return [op("aten::mat_mul", 100, 100, tid=456), op("aten::mm", 120, 70, tid=456),
            _k("a", 130, 10, 334, device=1, **{bps: 0.5, occ: 0.6}), launch(120, 0, 334, tid=456),
            _k("b", 135, 15, 335, device=1, stream=8, **{bps: 0.6, occ: 0.1}),
            _k("b", 150, 0, 335, device=1, stream=8, **{bps: 0.3, occ: 0.2}), launch(120, 0, 335, tid=456),
            _k("a", 145, 25, 336, device=1, **{bps: 0.3, occ: 1.0}), launch(125, 3, 336, tid=456),
            _k("a", 200, 20, 337, device=1, **{bps: 10.5, occ: 0.3}), launch(195, 1, 337, tid=456)]


def test_gpu_utilization_sm_efficiency_and_occupancy(tmp_path):
    (s,) = gpu_summaries(model := _model(tmp_path, _utilization_trace()), tbprof_steps(model))
    assert s.device == 1 and s.window_ns == 120_000
    assert s.utilization == pytest.approx((40 + 20) / 120)
    # blocks per SM summed over the running kernels, capped at 1, over the window (220 - 100)
    assert s.sm_efficiency == pytest.approx((0.5 * 5 + 1.0 * 5 + 0.6 * 5 + 0.9 * 5 + 0.3 * 20 + 1.0 * 20) / 120)
    assert s.occupancy_pct == pytest.approx((0.6 * 10 + 0.1 * 15 + 1.0 * 25 + 0.3 * 20) / (10 + 15 + 25 + 20))
    assert s.tensor_core_share == 0.0 and s.name is None  # no deviceProperties


def test_kernels_outside_the_steps_do_not_count(tmp_path):
    """test_gpu_utilization_kernel_out_of_step: one step that launches nothing, kernels before and after it."""
    bps, occ = "blocks per SM", "est. achieved occupancy %"
    model = _model(tmp_path, [
        op("aten::mat_mul", 10, 10, tid=456), op("aten::mm", 120, 70, tid=456), op("aten::mm", 220, 20, tid=456),
        op("ProfilerStep#2", 100, 100, tid=456), _k("a", 60, 20, 334, device=1, **{bps: 0.5, occ: 0.6}),
        launch(15, 5, 334, tid=456), _k("a", 240, 25, 337, device=1, **{bps: 10.5, occ: 0.3}), launch(230, 10, 337, tid=456)])
    (s,) = gpu_summaries(model, tbprof_steps(model))
    assert s.utilization == 0.0 and s.sm_efficiency is None and s.occupancy_pct is None


# --- edge cases made here ----------------------------------------------------------------------------------

def test_missing_blocks_per_sm_counts_as_zero_and_none_without_any(tmp_path):
    step = op("ProfilerStep#1", 0, 100)
    with_one = _model(tmp_path, [step, launch(1, 1, 1), launch(2, 1, 2), _k("a", 10, 20, 1, **{"blocks per SM": 2.0}),
                                 _k("b", 50, 40, 2)], name="one")
    (s,) = gpu_summaries(with_one, tbprof_steps(with_one))
    assert s.sm_efficiency == pytest.approx(20 / 100) and s.utilization == pytest.approx(60 / 100)
    assert s.occupancy_pct is None
    without = _model(tmp_path, [step, launch(1, 1, 1), _k("a", 10, 20, 1, **{"blocks per SM": -1, "est. achieved occupancy %": "x"})],
                     name="none")
    (s,) = gpu_summaries(without, tbprof_steps(without))
    assert s.sm_efficiency is None and s.occupancy_pct is None and s.utilization == pytest.approx(0.2)


def test_two_devices_each_with_its_properties(tmp_path):
    props = [{"id": 1, "name": "B", "totalGlobalMem": 2 << 30, "computeMajor": 9, "computeMinor": 0},
             {"id": 0, "name": "A", "totalGlobalMem": 1 << 30, "computeMajor": 8, "computeMinor": 6}]
    model = _model(tmp_path, [op("ProfilerStep#1", 0, 100), launch(1, 1, 1), launch(2, 1, 2), launch(3, 1, 3),
                              _k("volta_h884gemm_64x64", 10, 50, 1, device=0), _k("a", 10, 10, 2, device=1),
                              _k("a", 20, 10, 3, device=0)], deviceProperties=props)
    a, b = gpu_summaries(model, tbprof_steps(model))
    assert (a.device, a.name, a.memory_bytes, a.compute_capability) == (0, "A", 1 << 30, "8.6")
    assert (b.device, b.name, b.compute_capability) == (1, "B", "9.0")
    assert a.utilization == pytest.approx(0.5) and b.utilization == pytest.approx(0.1)
    assert a.tensor_core_share == pytest.approx(50 / 60) and b.tensor_core_share == 0.0


def test_without_steps_the_host_span_is_the_operators_not_the_annotations(tmp_path):
    """Kernels launched 100-200 and an annotation 0-1000: the window is the ops' span extended to the kernels."""
    model = _model(tmp_path, [op("## phase ##", 0, 1000, cat="user_annotation"), op("aten::mm", 100, 20), launch(101, 1, 1),
                              kernel("k", 150, 50, 1)])
    steps = tbprof_steps(model)
    assert (steps.start_ns[0], steps.end_ns[0]) == (100_000, 200_000)
    (s,) = gpu_summaries(model, steps)
    assert s.utilization == pytest.approx(0.5)


def test_kernel_only_trace_uses_the_whole_trace(tmp_path):
    model = _model(tmp_path, [kernel("a", 0, 10, None), kernel("b", 30, 10, None)])
    steps = tbprof_steps(model)
    (s,) = gpu_summaries(model, steps)
    assert steps.count == 0 and s.window_ns == 40_000 and s.utilization == pytest.approx(0.5)
    assert s.tensor_core_share is None  # no kernel has a launch call


def test_no_kernels_no_summary_and_empty_trace(tmp_path):
    cpu_only = _model(tmp_path, [op("ProfilerStep#1", 0, 100), op("aten::add", 10, 5)], name="cpu")
    steps = tbprof_steps(cpu_only)
    assert gpu_summaries(cpu_only, steps) == () and steps.count == 1
    assert _costs(steps, 0)["cpu_exec"] == 5 and _costs(steps, 0)["other"] == 95
    empty = tbprof_steps(_model(tmp_path, [], name="empty"))
    assert empty.count == 0 and empty.average_ns()["total"] == 0.0


def test_tensor_core_signatures_are_torch_tb_profilers():
    assert uses_tensor_cores_tbprof("volta_s884cudnn_fp16_128x128") and uses_tensor_cores_tbprof("sm80_xmma_gemm_f16f16")
    assert not uses_tensor_cores_tbprof("volta_sgemm_128x64_nn") and not uses_tensor_cores_tbprof("elementwise_kernel")


def test_eligible_share_counts_the_bottom_eligible_op_once(tmp_path):
    """conv2d > cudnn_convolution (both eligible): the bottom one's 50 µs kernel counts once; aten::add_ under it
    (10 µs) and aten::relu (40 µs) are not eligible: 50 of 100 µs."""
    model = _model(tmp_path, [
        op("aten::conv2d", 0, 50), op("aten::cudnn_convolution", 1, 40), launch(2, 1, 1), op("aten::add_", 20, 5),
        launch(21, 1, 2), op("aten::relu", 60, 10), launch(61, 1, 3),
        kernel("implicit_convolve_sgemm", 100, 50, 1), kernel("bias", 150, 10, 2), kernel("relu", 160, 40, 3)])
    e = tc_eligibility(model, TableIndex.build(model))
    # the bias kernel is aten::add_'s (not eligible, under the eligible op): only the conv kernel counts
    assert (e.eligible_ns, e.launched_ns, e.eligible_ops) == (50_000, 100_000, 1)
    assert e.share == pytest.approx(0.5) and e.tensor_core_share == 0.0


@pytest.mark.parametrize("kernel_name, props, expected", [
    ("implicit_convolve_sgemm", [{"id": 0, "computeMajor": 8, "computeMinor": 0}], True),
    ("volta_s884gemm", [{"id": 0, "computeMajor": 8, "computeMinor": 0}], False),  # already on Tensor Cores
    ("implicit_convolve_sgemm", [{"id": 0, "computeMajor": 6, "computeMinor": 1}], False),  # Pascal: no Tensor Cores
    ("implicit_convolve_sgemm", [], True),  # unknown device: suggested
])
def test_amp_insight(tmp_path, kernel_name, props, expected):
    model = _model(tmp_path, [op("ProfilerStep#1", 0, 300), op("aten::mm", 1, 50), launch(2, 1, 1), op("aten::relu", 60, 10),
                              launch(61, 1, 2), kernel(kernel_name, 100, 80, 1), kernel("relu", 180, 20, 2)],
                   deviceProperties=props)
    entry = report_entry(model, analyze(model))
    amp = [i for i in entry["insights"] if i["kind"] == "mixed-precision"]
    assert bool(amp) == expected
    if expected:
        assert "80%" in amp[0]["evidence"] and amp[0]["figures"]["eligible_kernel_pct"] == pytest.approx(80)


def test_hostile_args_never_crash(tmp_path):
    model = _model(tmp_path, [op("ProfilerStep#1", 0, 100), launch(1, 1, 1),
                              _k("a", 10, 20, 1, **{"blocks per SM": 1e308, "est. achieved occupancy %": [1]})],
                   deviceProperties=[{"id": "0", "name": 7, "totalGlobalMem": -5, "computeMajor": True}, "junk"])
    (s,) = gpu_summaries(model, tbprof_steps(model))
    assert s.name is None and s.memory_bytes is None and s.compute_capability is None
    assert s.occupancy_pct is None and s.utilization == pytest.approx(0.2)
    json.dumps(report_entry(model, analyze(model)), allow_nan=False)


# --- the doors: report text/markdown and the summary route ---------------------------------------------------

def _door_events() -> list[dict]:
    return [op("ProfilerStep#1", 0, 300), op("aten::mm", 1, 50), launch(2, 1, 1), op("aten::relu", 60, 10), launch(61, 1, 2),
            _k("implicit_convolve_sgemm", 100, 80, 1, **{"blocks per SM": 0.5, "est. achieved occupancy %": 40}),
            kernel("relu", 180, 20, 2)]


def test_report_text_and_markdown_label_the_figures(tmp_path):
    props = [{"id": 0, "name": "A|<b>", "totalGlobalMem": 1 << 30, "computeMajor": 8, "computeMinor": 0}]
    model = _model(tmp_path, _door_events(), deviceProperties=props)
    entry = {"run": "r", "worker": "w", "path": "p", **report_entry(model, analyze(model))}
    text, markdown = render_entry(entry), render_entry(entry, markdown=True)
    assert "GPU summary (torch-tb-profiler's definitions):" in text and "busy (kinetoscope)" in text
    assert "Step time by torch-tb-profiler's categories:" in text and "average" in text
    # utilization: kernels 100-200 over the step extended to 300 (its host end): 100/300; SM efficiency 0.5 * 80 / 300
    assert "33.33%" in text and "13.33%" in text and "40.00%" in text
    assert "### GPU summary (torch-tb-profiler's definitions)" in markdown and "A\\|\\<b\\>" in markdown
    assert "mixed-precision" in text and "80%" in text


def test_summary_and_markdown_routes_carry_the_new_fields(tmp_path):
    prefix = "/data/plugin/kinetoscope"
    with plugin_apps(trace_doc(_door_events()), tmp_path) as (apps, sid):
        answer = Client(apps["/summary"]).get(f"{prefix}/summary?span={sid}")
        assert answer.status_code == 200
        body = json.loads(answer.get_data())
        (gpu,) = body["gpu_summary"]
        assert gpu["utilization_pct"] == pytest.approx(100 / 3) and gpu["occupancy_pct"] == pytest.approx(40)
        assert body["tbprof_steps"]["count"] == 1 and body["tbprof_steps"]["steps"]["kernel_us"] == [100.0]
        assert body["tensor_cores"]["eligible_kernel_pct"] == pytest.approx(80)
        markdown = Client(apps["/markdown"]).get(f"{prefix}/markdown?span={sid}").get_data(as_text=True)
        assert "GPU summary (torch-tb-profiler's definitions)" in markdown
