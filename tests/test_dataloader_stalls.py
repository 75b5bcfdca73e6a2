"""analysis.dataloader_stalls: per-step DataLoader wait, GPU idle during it, and the stall rule."""
from __future__ import annotations

import json

import pytest
from conftest import kernel, op, trace_doc, write_trace
from kinetoscope.analysis.core.selectors import dataloader_union
from kinetoscope.analysis.idle.dataloader_stalls import step_breakdown
from kinetoscope.analysis.idle.gpu_idle import gpu_idle
from kinetoscope.trace.loader import decode_bytes, load_trace

DL = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
step = lambda n, ts: op(f"ProfilerStep#{n}", ts, 100, cat="user_annotation")  # noqa: E731
wait = lambda ts, dur: op(DL, ts, dur, cat="user_annotation")  # noqa: E731

# step 1: waits 40 µs while the GPU idles -> stalled
# step 2: waits 4 µs (4% of the step) -> not stalled
# step 3: waits 30 µs but the GPU is busy for 25 of them -> not stalled
EVENTS = [step(1, 0), wait(0, 40), kernel("k1", 45, 50, None), kernel("nccl:AllReduce_x", 60, 10, None, stream=9),
          step(2, 100), wait(100, 4), kernel("k2", 105, 85, None, cat="gpu_memcpy"),
          step(3, 200), wait(200, 30), kernel("k3", 195, 30, None), kernel("k4", 240, 10, None)]


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    path = write_trace(tmp_path_factory.mktemp("dl") / "dataloader-stall.pt.trace.json", trace_doc(EVENTS))
    model = load_trace(str(path), cache_dir=None)
    return model, step_breakdown(model, gpu_idle(model).busiest())


def test_wait_and_idle_during_wait(steps):
    model, s = steps
    assert [model.names[i] for i in s.name_id] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    assert s.dataloader_ns.tolist() == [40_000, 4_000, 30_000]
    assert s.dataloader_gpu_idle_ns.tolist() == [40_000, 4_000, 5_000]
    assert s.stalled.tolist() == [True, False, False]


def test_gpu_busy_idle_and_kinds(steps):
    _, s = steps
    assert s.gpu_busy_ns.tolist() == [50_000, 90_000, 35_000]  # k3 [195, 225) straddles steps 2 and 3
    assert (s.gpu_busy_ns + s.gpu_idle_ns).tolist() == [100_000] * 3
    assert s.comm_ns.tolist() == [10_000, 0, 0]  # the nccl kernel overlaps k1 on another stream
    assert s.compute_ns.tolist() == [50_000, 5_000, 35_000]
    assert s.memcpy_ns.tolist() == [0, 85_000, 0]


def test_without_gpu_nothing_stalls(tmp_path):
    model = load_trace(str(write_trace(tmp_path / "cpu.pt.trace.json", trace_doc([step(1, 0), wait(0, 90)]))), cache_dir=None)
    s = step_breakdown(model, None)
    assert s.dataloader_ns.tolist() == [90_000] and s.stalled.tolist() == [False]
    assert s.dataloader_gpu_idle_ns.tolist() == [0] and s.gpu_idle_ns.tolist() == [0]


def test_datapipe_iteration_is_not_dataloader_time():
    """`enumerate(DataPipe)#...` runs inside the DataLoader's own fetch (or a worker): torch-tb-profiler never
    counts it as DataLoader time, and neither do we (only the 2 ms DataLoader __next__ counts)."""
    events = [op("ProfilerStep#1", 0, 10_000, cat="user_annotation"),
              op("enumerate(DataPipe)#MapperIterDataPipe.__next__", 100, 3000, cat="user_annotation"),
              op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 5000, 2000, cat="user_annotation")]
    starts, ends = dataloader_union(decode_bytes(json.dumps(trace_doc(events)).encode()))
    assert int((ends - starts).sum()) == 2_000_000
