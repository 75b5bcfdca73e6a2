"""The committed real CUDA recordings (samples/record_cuda.py on one NVIDIA H200 and, separately, one H100 80GB HBM3,
torch 2.11 + CUDA 13, with_stack and with_modules): each scenario's planted cause of idle time is what the report
judges on both, and the trace-health checks read a healthy Hopper recording as healthy (PDL overlaps, warm-up work
spilling into the window).

The traces were recorded once on a lent GPU each (samples/truth/<recording>/manifest.json names the device and
versions); CI only reads them."""
from __future__ import annotations

import json

import pytest
from conftest import SAMPLES
from kinetoscope.analysis.report import analyze, report_entry
from kinetoscope.trace.discovery import scan_logdir
from kinetoscope.trace.loader import load_trace

# What differs between the recordings: the device's name and memory, and the copy bandwidths Kineto measured
# (pinned host-to-device, device-to-device).
DEVICES = {
    "cuda_h200": {"name": "NVIDIA H200", "memory_gb": (130, 150), "htod_gbps": 55.0, "dtod_gbps": 522.0},
    "cuda_h100": {"name": "NVIDIA H100 80GB HBM3", "memory_gb": (75, 85), "htod_gbps": 54.0, "dtod_gbps": 511.7},
}
RECORDINGS = pytest.mark.parametrize("recording", sorted(DEVICES))
_entries: dict = {}


def entry_of(recording: str, scenario: str) -> dict:
    """The report entry of one scenario's trace (computed once per test session)."""
    folder = SAMPLES / "logs" / recording / scenario
    if not folder.is_dir():
        pytest.skip(f"{folder} is missing")
    if (recording, scenario) not in _entries:
        (trace,) = scan_logdir(str(folder))
        model = load_trace(trace.path, cache_dir=None)
        _entries[recording, scenario] = report_entry(model, analyze(model))
    return _entries[recording, scenario]


@RECORDINGS
def test_the_manifest_names_a_real_recording(recording):
    manifest = json.loads((SAMPLES / "truth" / recording / "manifest.json").read_text())
    assert manifest["device"] == DEVICES[recording]["name"] and manifest["capability"] == "9.0"
    assert all(s["ok"] for s in manifest["scenarios"].values())
    assert sorted(manifest["scenarios"]) == sorted(p.name for p in (SAMPLES / "logs" / recording).iterdir() if p.is_dir())


@pytest.mark.parametrize("scenario, bound", [("fp32_convnet", "compute-bound"), ("amp_bf16", "compute-bound"),
                                             ("dataloader", "dataloader-bound")])
@RECORDINGS
def test_planted_bound(recording, scenario, bound):
    verdict = entry_of(recording, scenario)["verdict"]
    assert verdict["bound"] == bound and verdict["confidence"] == "high"


@pytest.mark.parametrize("scenario", ["launch_bound", "compiled"])
@RECORDINGS
def test_tiny_kernels_behind_the_host_are_never_compute_bound(recording, scenario):
    # batch 4 through 24 Linear+GELU layers: 1-2 µs kernels behind 5 µs launch calls and Python between them
    verdict = entry_of(recording, scenario)["verdict"]
    assert {verdict["bound"], verdict["runner_up"]} == {"host-bound", "launch-overhead-bound"}


@RECORDINGS
def test_item_sync_is_among_the_top_two(recording):
    verdict = entry_of(recording, "sync_item")["verdict"]
    assert "sync-bound" in (verdict["bound"], verdict["runner_up"])
    assert verdict["shares"]["sync-bound"] > 0.1


@RECORDINGS
def test_graph_replay_counts_its_bubbles_as_compute(recording):
    entry = entry_of(recording, "cuda_graph")
    (device,) = entry["devices"]
    assert device["gaps"]["by_cause_us"]["graph"] > 0 and entry["verdict"]["bound"] == "compute-bound"


@pytest.mark.parametrize("scenario", ["fp32_convnet", "amp_bf16"])
@RECORDINGS
def test_hopper_pdl_overlaps_are_not_called_damage(recording, scenario):
    # cuDNN launches its Hopper kernels with cudaLaunchKernelExC and programmatic dependent launch: the next
    # kernel starts before the last one ends. Some of them were launched before the window opened (no launch call).
    health = {h["check"]: h for h in entry_of(recording, scenario)["health"]}
    assert health["same_stream_overlap"]["severity"] == "info"
    assert "programmatic dependent launch" in health["same_stream_overlap"]["found"]


@RECORDINGS
def test_copies_beside_compute(recording):
    entry = entry_of(recording, "copies")
    assert entry["verdict"]["bound"] == "compute-bound"
    assert entry["counts"]["memcpy"] >= 9  # three 64 MiB copies per step, 3 steps


@RECORDINGS
def test_gpu_summary_of_a_hopper_gpu(recording):
    # deviceProperties as torch 2.11 writes them on an H200 and an H100; torch-tb-profiler's Tensor-Core name list
    # predates Hopper, Kinetoscope's own signatures see the bf16 and tf32 xmma kernels
    device = DEVICES[recording]
    low, high = device["memory_gb"]
    for scenario in ("fp32_convnet", "amp_bf16"):
        (gpu,) = entry_of(recording, scenario)["gpu_summary"]
        assert gpu["name"] == device["name"] and gpu["compute_capability"] == "9.0" and low < gpu["memory_gb"] < high
        assert gpu["utilization_pct"] > 90 and gpu["tensor_cores_pct"] < 1 and gpu["kinetoscope_tensor_cores_pct"] > 10
    (gpu,) = entry_of(recording, "launch_bound")["gpu_summary"]
    assert gpu["utilization_pct"] < 10


@RECORDINGS
def test_memcpy_bandwidth_of_known_copies(recording):
    # every step copies exactly 64 MiB host-to-device (pinned), device-to-device and device-to-host (pinned);
    # Kineto's own `memory bandwidth (GB/s)` arg reads about 55 and 510-520 GB/s for them on these GPUs
    by_type = {b["type"]: b for b in entry_of(recording, "copies")["counters"]["memory_bandwidth"]}
    for kind, gbps in (("Memcpy HtoD", DEVICES[recording]["htod_gbps"]), ("Memcpy DtoD", DEVICES[recording]["dtod_gbps"])):
        assert by_type[kind]["count"] == 3 and by_type[kind]["bytes"] == 3 * (64 << 20)
        assert by_type[kind]["average_gbps"] == pytest.approx(gbps, rel=0.03)
    assert by_type["Memcpy DtoH"]["bytes"] == 3 * (64 << 20) + 3 * 4  # and loss.item()'s three 4-byte copies
