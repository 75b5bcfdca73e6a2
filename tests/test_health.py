"""Trace health (analysis/judgement/health.py): each check finds what is planted in a tiny trace, and nothing on a clean
one; on the real modern traces, what the expert's "Trace health" notes say is there (verdicts-modern.md)."""
from __future__ import annotations

import json

import pytest
from conftest import MS, SHARED_TRACES, kernel, launch, op, requires_shared, trace_doc
from kinetoscope.analysis.judgement.health import FIGURES, trace_health
from kinetoscope.analysis.report import analyze, report_entry
from kinetoscope.formats.report import render_entry
from kinetoscope.trace.loader import decode_bytes, load_trace

META = [{"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python"}}]
SPAN = [op("PyTorch Profiler (0)", 0, 10 * MS, cat="Trace", tid=0)]


def clean(extra=(), **top) -> dict:
    """Two ops launching one kernel each, recorded with their shapes, with a Trace span and process metadata:
    nothing to report."""
    shapes = {"Input Dims": [[8, 8], [8, 8]], "Input type": ["float", "float"]}
    events = [*META, *SPAN, op("aten::mm", 10, 100, **shapes), launch(20, 5, corr=1), kernel("gemm", 40, 50, corr=1),
              op("aten::add", 200, 100, **shapes), launch(210, 5, corr=2), kernel("add", 230, 20, corr=2), *extra]
    return trace_doc(events, **top)


def checks_of(doc: dict) -> dict:
    model = decode_bytes(json.dumps(doc).encode())
    return {h.check: h for h in trace_health(model)}


def test_a_clean_trace_has_no_finding():
    assert checks_of(clean()) == {}


def test_ops_without_recorded_shapes_say_efficiency_needs_record_shapes():
    doc = clean()
    for event in doc["traceEvents"]:
        event.get("args", {}).pop("Input Dims", None)
        event.get("args", {}).pop("Input type", None)
    item = checks_of(doc)["no_record_shapes"]
    assert item.severity == "info" and item.affects == ("efficiency",) and item.count == 2
    assert "efficiency needs record_shapes=True" in item.found


def test_cropped_file_without_span_or_metadata():
    doc = clean()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") != "M" and e.get("cat") != "Trace"]
    found = checks_of(doc)["cropped"]
    assert found.severity == "warn" and set(found.affects) == {"busy_idle", "verdict"}


def test_device_work_launched_before_the_window():
    # correlations 1 and 2 are below every launch call's (5): launched before the file began
    early = [kernel("prior", 0, 300, corr=1), kernel("prior2", 300, 100, corr=2)]
    doc = clean(early)
    for e in doc["traceEvents"]:
        if e.get("cat") in ("cuda_runtime", "kernel") and e["args"].get("correlation") in (1, 2) and e["name"] not in ("prior", "prior2"):
            e["args"]["correlation"] += 4  # this window's own launches: 5 and 6
    found = checks_of(doc)["pre_window"]
    assert found.count == 2 and "busy_idle" in found.affects and "first 0.40 ms" in found.found


@pytest.mark.parametrize("launch_name, hopper, severity", [("cuLaunchKernelEx", True, "info"),
                                                            ("cudaLaunchKernel", True, "warn"),
                                                            ("cuLaunchKernelEx", False, "warn")])
def test_same_stream_overlap_is_pdl_only_with_ex_launches_on_hopper(launch_name, hopper, severity):
    events = [*META, *SPAN, launch(10, 5, corr=1), kernel("a", 20, 100, corr=1),
              launch(30, 5, corr=2, name=launch_name), kernel("b", 110, 50, corr=2)]  # b starts 10 µs before a ends
    props = [{"id": 0, "name": "NVIDIA H100", "computeMajor": 9 if hopper else 8}]
    found = checks_of(trace_doc(events, deviceProperties=props))["same_stream_overlap"]
    assert found.count == 1 and found.severity == severity and ("programmatic dependent launch" in found.found) == (severity == "info")


def test_lazy_loading_events():
    found = checks_of(clean([op("Lazy Function Loading", 30, 60, cat="overhead", tid=5)]))["lazy_loading"]
    assert found.count == 1 and "60.0 µs" in found.found


def test_first_call_stall_inside_the_launching_op():
    events = [*META, *SPAN, op("aten::mm", 0, 100), launch(10, 5, corr=1), kernel("k1", 20, 30, corr=1),
              op("aten::addmm", 200, 3 * MS), launch(200 + 2.5 * MS, 5, corr=2), kernel("gemm_first", 210 + 2.5 * MS, 30, corr=2),
              # a long host gap between ops (not inside the launching op) is no first-call stall
              op("aten::relu", 6 * MS, 100), launch(6 * MS + 10, 5, corr=3), kernel("relu_first", 6 * MS + 20, 10, corr=3)]
    found = checks_of(trace_doc(events))["first_call_stall"]
    assert found.count == 1 and "gemm_first" in found.found and "relu_first" not in found.found


def test_python_stack_inflation_is_said():
    found = checks_of(clean([op("<built-in method x>", 10, 5, cat="python_function")]))["python_stack"]
    assert found.count == 1 and found.affects == ("host_gaps", "verdict")


def test_rocm_device_pid_and_empty_names():
    found = checks_of(clean(deviceProperties=[{"id": 9, "name": ""}]))
    assert set(found) == {"device_id_mismatch", "empty_device_name"}
    assert "pid 0" in found["device_id_mismatch"].found and found["empty_device_name"].count == 1


def test_one_rank_of_a_job():
    found = checks_of(clean(distributedInfo={"backend": "nccl", "rank": 3, "world_size": 8}))["partial_job"]
    assert "rank 3 of a job of 8" in found.found and found.affects == ("comm",)


def test_kernel_before_its_launch_call():
    found = checks_of(clean([launch(500, 5, corr=9), kernel("early", 490, 5, corr=9)]))["kernel_causality"]
    assert found.count == 1 and "launch" in found.affects


def test_stream_waits_without_an_earlier_event_record():
    wait = {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7, "ts": 100, "dur": 1,
            "args": {"cuda_sync_kind": "Stream Wait Event", "wait_on_cuda_event_record_corr_id": 50, "stream": 7, "device": 0}}
    lost = {**wait, "ts": 120, "args": {**wait["args"], "wait_on_cuda_event_record_corr_id": -1}}
    linked = {**wait, "ts": 140, "args": {**wait["args"], "wait_on_cuda_event_record_corr_id": 60}}
    record_late = launch(130, 2, corr=50, name="cudaEventRecord")  # after the wait that names it
    record_ok = launch(135, 2, corr=60, name="cudaEventRecord")
    found = checks_of(clean([wait, lost, linked, record_late, record_ok]))["stream_wait_link"]
    assert found.count == 2 and "1 with no id" in found.found


def test_stream_sync_while_a_kernel_runs():
    sync = {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 60, "dur": 5,
            "args": {"cuda_sync_kind": "Stream Sync", "stream": 7, "device": 0}}  # gemm runs 40..90
    after = {**sync, "ts": 95}
    assert checks_of(clean([sync, after]))["sync_overlap"].count == 1


def test_record_param_comms_without_its_fields():
    full = {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 4, "Out msg nelems": 4, "Group size": 2}
    found = checks_of(clean([op("record_param_comms", 400, 10, **full), op("record_param_comms", 420, 10, dtype="Float")]))
    assert found["nccl_metadata"].count == 1 and found["nccl_metadata"].affects == ("comm",)


def test_one_sequence_number_on_two_backward_ops():
    bw = "autograd::engine::evaluate_function: "
    found = checks_of(clean([op(bw + "MmBackward0", 400, 10, **{"Sequence number": 7}),
                             op(bw + "AddBackward0", 420, 10, **{"Sequence number": 7}),
                             op(bw + "MmBackward0", 440, 10, **{"Sequence number": 8})]))["backward_seq"]
    assert found.count == 1


def test_the_summary_lists_health_and_the_report_marks_the_figures():
    doc = clean([kernel("prior", 0, 300, corr=1)])
    for e in doc["traceEvents"]:
        if e["name"] != "prior" and e["args"].get("correlation") is not None:
            e["args"]["correlation"] += 4
    model = decode_bytes(json.dumps(doc).encode())
    entry = {"path": "t.json", "run": "r", "worker": "w", "span": None, "error": None, **report_entry(model, analyze(model))}
    item = next(h for h in entry["health"] if h["check"] == "pre_window")
    assert item["severity"] == "warn" and set(item["affects"]) <= set(FIGURES)
    text = render_entry(entry)
    assert "Trace health:" in text and text.count("Unreliable (pre_window)") >= 2  # under the verdict and the device idle


EXPERT_NOTES = [  # (trace, check, what the expert's "Trace health" note says is there)
    ("b200/eager_trace.json.gz", "cropped", "no 'Trace' span"),
    ("b200/eager_trace.json.gz", "same_stream_overlap", "programmatic dependent launch"),
    ("b200/eager_trace.json.gz", "lazy_loading", "8 'Lazy Function Loading'"),
    ("b200/eager_trace.json.gz", "first_call_stall", "2.6/1.9/1.7/1.5 ms"),
    ("b200/eager_trace.json.gz", "partial_job", "rank 0 of a job of 8"),
    ("h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "pre_window", "509 of 1,707"),
    ("inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz", "cropped", "Ev Idx starts at 37,160"),
    ("inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz", "device_id_mismatch", "pid 9"),
    ("inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz", "cropped", "Ev Idx starts at 33,212"),
    ("inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz", "device_id_mismatch", "pid 9"),
    ("inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
     "empty_device_name", "8 of 8"),
    ("h100/Falconsai_nsfw_image_detection__1016002.json.gz", "python_stack", "with_stack=True"),
]


@requires_shared
@pytest.mark.parametrize("trace, check, text", EXPERT_NOTES, ids=[f"{t.split('/')[-1][:24]}-{c}" for t, c, _ in EXPERT_NOTES])
def test_the_expert_notes_are_found(trace, check, text):
    found = {h.check: h for h in trace_health(load_trace(str(SHARED_TRACES / "modern" / trace), cache_dir=None))}
    assert check in found and text in found[check].found, found.get(check)


@requires_shared
@pytest.mark.parametrize("trace", ["h100/Falconsai_nsfw_image_detection__1016002.json.gz",
                                   "h100/gaunernst_bert-small-uncased__1016001.json.gz",
                                   "h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz"])
def test_traces_the_expert_calls_clean_have_no_warning(trace):
    """'Clean: all device events linked, Ev Idx dense, no overlaps': nothing but the with_stack note."""
    found = trace_health(load_trace(str(SHARED_TRACES / "modern" / trace), cache_dir=None))
    assert [h.check for h in found if h.severity == "warn"] == []


def test_pdl_overlap_with_a_kernel_launched_before_the_window():
    # the earlier two kernels have no launch call in the file (launched before it began) and overlap each other
    events = [*META, *SPAN, op("aten::mm", 0, 40), kernel("prior", 5, 100, corr=1), kernel("prior2", 95, 50, corr=2),
              launch(30, 5, corr=7, name="cudaLaunchKernelExC"), kernel("b", 140, 50, corr=7)]
    props = [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9}]
    found = checks_of(trace_doc(events, deviceProperties=props))["same_stream_overlap"]
    assert found.count == 2 and found.severity == "info"
    # with no *Ex launch among the overlaps there is nothing to call PDL
    events[-2] = launch(30, 5, corr=7, name="cudaLaunchKernel")
    assert checks_of(trace_doc(events, deviceProperties=props))["same_stream_overlap"].severity == "warn"
