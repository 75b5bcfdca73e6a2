"""analysis.gpu_idle on a tiny trace with one gap of every cause (numbers derivable by hand)."""
from __future__ import annotations

import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.analysis.idle.gpu_idle import CAUSE_NAMES, gpu_idle
from kinetoscope.trace.loader import load_trace

DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"

# µs:  10    20   30   40   50   60   70   80        100  110 115 120   130  140   150  160 170 175  180
# GPU  [ A  )     [ B  )    [ C  )    [ D  )         [ E  )   [F )[ H )      [ I )      [J1)   [J2)
# gap        host      sync      launch     dataloader     unlinked    comm       (poll)      graph
#                                                                           host, not sync
EVERY_CAUSE = [
    launch(0, 2, corr=1), kernel("A", 10, 10, corr=1),
    launch(3, 1, corr=6), kernel("G-other-stream", 12, 6, corr=6, stream=8),
    op("## forward ##", 20, 9, cat="user_annotation"), op("aten::host_work", 21, 7),
    launch(25, 2, corr=2), kernel("B", 30, 10, corr=2),
    launch(35, 1, corr=3), op("aten::item", 36, 10), op("cudaDeviceSynchronize", 36, 9, cat="cuda_runtime"),
    kernel("C", 50, 10, corr=3),
    launch(55, 1, corr=4), kernel("D", 70, 10, corr=4),
    op(DL, 78, 17, cat="user_annotation"), launch(96, 1, corr=5), kernel("E", 100, 10, corr=5),
    kernel("F-unlinked", 115, 5, corr=99),
    launch(119, 1, corr=7), kernel("H", 120, 10, corr=7),
    op("nccl:all_reduce", 130, 9, cat="user_annotation"), op("record_param_comms", 131, 7),
    launch(139, 1, corr=8), kernel("I", 140, 10, corr=8),
    op("aten::poll_loop", 150, 9), op("cudaEventQuery", 151, 1, cat="cuda_runtime"),
    op("cudaStreamQuery", 154, 1, cat="cuda_runtime"),
    launch(159, 1, corr=9, name="cudaGraphLaunch"), kernel("J1", 160, 10, corr=9), kernel("J2", 175, 5, corr=9),
    {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#1", "pid": 0, "tid": 7, "ts": 0, "dur": 200,
     "args": {"device": 0, "stream": 7}},
]


@pytest.fixture(scope="module")
def every_cause(tmp_path_factory):
    path = write_trace(tmp_path_factory.mktemp("idle") / "every-cause.pt.trace.json", trace_doc(EVERY_CAUSE))
    model = load_trace(str(path), cache_dir=None)
    return model, gpu_idle(model).devices[0]


def test_window_busy_idle(every_cause):
    _, dev = every_cause
    assert (dev.window_start_ns, dev.window_end_ns) == (10_000, 180_000)
    assert dev.busy_ns == 90_000 and dev.idle_ns == 80_000


def test_each_gap_has_its_cause(every_cause):
    model, dev = every_cause
    causes = [CAUSE_NAMES[c] for c in dev.gap_cause]
    assert list(zip(dev.gap_start_ns.tolist(), dev.gap_end_ns.tolist(), causes)) == [
        (20_000, 30_000, "host"), (40_000, 50_000, "sync"), (60_000, 70_000, "launch"),
        (80_000, 100_000, "dataloader"), (110_000, 115_000, "unlinked"), (130_000, 140_000, "comm"),
        (150_000, 160_000, "host"), (170_000, 175_000, "graph")]
    assert dev.idle_by_cause_ns() == {"host": 20_000, "sync": 10_000, "launch": 10_000, "dataloader": 20_000,
                                      "unlinked": 5_000, "comm": 10_000, "graph": 5_000}
    assert sum(dev.idle_by_cause_ns().values()) == dev.idle_ns


def test_culprits_and_links(every_cause):
    model, dev = every_cause
    name = lambda r: model.names[model.name_id[r]] if r >= 0 else None  # noqa: E731
    assert [name(r) for r in dev.gap_next_row] == ["B", "C", "D", "E", "F-unlinked", "I", "J1", "J2"]
    # host/comm: the innermost op at the gap midpoint with its annotation; sync: the call and its caller
    assert [name(r) for r in dev.gap_culprit_row] == ["aten::host_work", "cudaDeviceSynchronize", None, None, None,
                                                      "record_param_comms", "aten::poll_loop", None]
    assert [name(r) for r in dev.gap_annotation_row] == ["## forward ##", None, None, None, None, "nccl:all_reduce",
                                                         None, None]
    assert [name(r) for r in dev.gap_caller_row] == [None, "aten::item", None, None, None, None, None, None]
    assert dev.gap_launch_row[4] == -1


def test_polls_never_sync(every_cause):
    model, dev = every_cause
    polls = {"cudaEventQuery", "cudaStreamQuery"}
    culprits = {model.names[model.name_id[r]] for r in dev.gap_culprit_row if r >= 0}
    assert not culprits & polls


def test_no_op_running_names_the_last_one(tmp_path):
    events = [launch(0, 1, corr=1), kernel("A", 2, 3, corr=1), op("aten::prepare", 6, 4), launch(30, 1, corr=2),
              kernel("B", 32, 3, corr=2)]
    model = load_trace(str(write_trace(tmp_path / "after.pt.trace.json", trace_doc(events))), cache_dir=None)
    dev = gpu_idle(model).devices[0]
    assert model.names[model.name_id[dev.gap_culprit_row[0]]] == "aten::prepare"
    assert dev.gap_culprit_after.tolist() == [True]


def test_no_gpu_activity_means_no_devices(tmp_path):
    model = load_trace(str(write_trace(tmp_path / "cpu.pt.trace.json", trace_doc([op("a", 0, 5)]))), cache_dir=None)
    assert gpu_idle(model).devices == () and gpu_idle(model).busiest() is None


def test_overlapping_streams_are_not_double_counted(tmp_path):
    events = [kernel("a", 0, 10, corr=None, stream=7), kernel("b", 5, 10, corr=None, stream=8),
              kernel("c", 20, 5, corr=None, stream=9), kernel("d", 0, 3, corr=None, stream=7, device=1)]
    model = load_trace(str(write_trace(tmp_path / "overlap.pt.trace.json", trace_doc(events))), cache_dir=None)
    dev0, dev1 = gpu_idle(model).devices
    assert (dev0.busy_ns, dev0.idle_ns, dev1.busy_ns, dev1.idle_ns) == (20_000, 5_000, 3_000, 0)
