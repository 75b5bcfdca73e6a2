"""The tables torch-tb-profiler and HTA have beyond the op and kernel tables (memory per op, kernel rows by
launch configuration), on the traces of torch-tb-profiler's own tests (tb_plugin/test/test_profiler.py:
test_memory_view, test_group_by_kernel_columns), rebuilt here event by event, asserting its expected values."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import op, trace_doc, write_trace
from kinetoscope.analysis import tables as T
from kinetoscope.analysis.op_memory import op_memory_table
from kinetoscope.trace.loader import load_trace


def _legacy_op(name: str, ts: float, dur: float) -> dict:
    return op(name, ts, dur, tid="123", pid=13721, cat="Operator")


def _mem(ts: float, device_type: int, device_id: int, addr: int, nbytes: int) -> dict:
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": 13721, "tid": 123, "ts": ts,
            "args": {"Device Type": device_type, "Device Id": device_id, "Addr": addr, "Bytes": nbytes}}


# test_memory_view's operators (µs) and memory events (ts, device type, device id, address, bytes)
MEMORY_VIEW_OPS = [("aten::to", 10, 10), ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 180),
                   ("aten::to", 200, 60), ("aten::nll_loss_backward", 340, 70), ("ProfilerStep#1", 50, 400),
                   ("ProfilerStep#2", 500, 500), ("aten::to", 510, 150), ("aten::copy_", 520, 100),
                   ("aten::liner", 700, 100), ("aten::t", 705, 40), ("aten::transpose", 710, 30),
                   ("aten::tranas_stride", 720, 10), ("aten::addmm", 750, 40), ("aten::to", 900, 100)]
MEMORY_VIEW_EVENTS = [
    (90, 0, -1, 90, 4), (150, 0, -1, 150, 4), (200, 0, -1, 200, 4), (210, 1, 0, 210, 4), (265, 1, 0, 265, 4),
    (300, 1, 0, 300, 4), (350, 1, 0, 350, 10), (360, 1, 0, 350, -10), (450, 0, -1, 450, 1000000), (515, 1, 0, 515, 100),
    (520, 1, 0, 520, 100), (600, 1, 0, 520, -100), (690, 1, 0, 690, 100), (701, 1, 0, 701, 100), (796, 1, 0, 515, -100),
    (708, 1, 0, 708, 100), (742, 1, 0, 708, -100), (715, 1, 0, 715, 50), (735, 1, 0, 715, -50), (725, 1, 0, 725, 50),
    (728, 1, 0, 725, -50), (729, 0, -1, 729, 50), (746, 0, -1, 746, 100), (747, 1, 0, 747, 20), (749, 0, -1, 690, -100),
    (760, 1, 0, 760, 30), (780, 1, 0, 760, -30), (795, 1, 0, 795, 10), (799, 1, 0, 795, -10)]
# its expected [self increase, self allocation size, self allocation count, increase, allocation size,
# allocation count, calls] per device and op
TBPROF_GPU = {"aten::to": [104, 104, 2, 104, 204, 3, 4], "aten::nll_loss_backward": [0, 10, 1, 0, 10, 1, 1],
              "aten::copy_": [0, 100, 1, 0, 100, 1, 1], "aten::addmm": [0, 30, 1, 0, 30, 1, 1],
              "aten::tranas_stride": [0, 50, 1, 0, 50, 1, 1], "aten::transpose": [0, 50, 1, 0, 100, 2, 1],
              "aten::t": [0, 100, 1, 0, 200, 3, 1], "aten::liner": [20, 130, 3, 20, 360, 7, 1]}
TBPROF_CPU = {"aten::to": [4, 4, 1, 4, 4, 1, 4], "aten::liner": [0, 100, 1, 50, 150, 2, 1],
              "aten::tranas_stride": [50, 50, 1, 50, 50, 1, 1], "aten::transpose": [0, 0, 0, 50, 50, 1, 1],
              "aten::t": [0, 0, 0, 50, 50, 1, 1]}
TBPROF_COLUMNS = ("self_increase_bytes", "self_alloc_bytes", "self_alloc_count", "increase_bytes", "alloc_bytes",
                  "alloc_count", "calls")


@pytest.fixture(scope="module")
def memory_view(tmp_path_factory):
    events = [_legacy_op(*o) for o in MEMORY_VIEW_OPS] + [_mem(*m) for m in MEMORY_VIEW_EVENTS]
    path = write_trace(tmp_path_factory.mktemp("peers") / "memory_view.pt.trace.json", trace_doc(events))
    return load_trace(str(path), cache_dir=None)


def _memory_rows(model, table) -> dict[str, dict[str, list[int]]]:
    out: dict[str, dict[str, list[int]]] = {}
    for i in range(table.name_id.size):
        out.setdefault(table.devices[table.device[i]], {})[model.names[table.name_id[i]]] = \
            [int(getattr(table, k)[i]) for k in TBPROF_COLUMNS]
    return out


def test_memory_per_op_matches_torch_tb_profiler(memory_view):
    table = op_memory_table(memory_view)
    assert _memory_rows(memory_view, table) == {"CPU": TBPROF_CPU, "GPU0": TBPROF_GPU}
    # events outside every op (in a step or the DataLoader annotation, or before any node) are not counted
    assert table.counted_events + table.unowned_events == len(MEMORY_VIEW_EVENTS)
    assert table.unowned_events == 6


def test_memory_freed_and_peak_by_hand(memory_view):
    table = op_memory_table(memory_view)
    rows = {(table.devices[d], memory_view.names[n]): i for i, (n, d) in enumerate(zip(table.name_id.tolist(), table.device.tolist()))}
    liner = rows[("GPU0", "aten::liner")]
    # aten::liner 700-800 on GPU0: +100 @701, +100 @708 (t), +50 @715, -50 @735, +50 @725, -50 @728 (tranas_stride),
    # -100 @742 (t), +20 @747, +30 @750s (addmm) -30, +10 @795, -10 @799 (liner), -100 @796 (a free of aten::to's block)
    assert int(table.self_freed_bytes[liner]) == 110 and int(table.freed_bytes[liner]) == 340
    # running level: 100, 200, 250, 300(725), 250(728), 200(735), 100(742), 120, 150(760), 120, 130(795), 30, 20
    assert int(table.peak_increase_bytes[liner]) == 300
    t = rows[("GPU0", "aten::t")]
    assert int(table.peak_increase_bytes[t]) == 200  # 705-745: +100 @708, +50 @715, +50 @725 -> 200 before 728


def test_memory_window_keeps_events_inside(memory_view):
    base = memory_view.start_ns
    window = (base + (700 - 10) * 1000, base + (730 - 10) * 1000)  # trace starts at 10 µs: 700-730 µs
    rows = _memory_rows(memory_view, op_memory_table(memory_view, window))
    assert rows["GPU0"]["aten::tranas_stride"][:6] == [0, 50, 1, 0, 50, 1]
    assert "aten::addmm" not in rows["GPU0"]  # 750-790: outside the window


def test_memory_table_of_a_trace_without_memory_events(tmp_path):
    path = write_trace(tmp_path / "none.pt.trace.json", trace_doc([op("aten::mm", 0, 10)]))
    table = op_memory_table(load_trace(str(path), cache_dir=None))
    assert table.name_id.size == 0 and table.devices == () and table.counted_events == 0


def _kernel(ts: float, dur: float, corr: int, ext: int, block: list[int]) -> dict:
    return {"ph": "X", "cat": "Kernel", "name": "kernel1", "pid": 0, "tid": "stream 7", "ts": ts, "dur": dur,
            "args": {"correlation": corr, "external id": ext, "device": 0, "grid": [16, 1, 1], "block": block,
                     "registers per thread": 18, "shared memory": 0}}


def _runtime(ts: float, corr: int, ext: int) -> dict:
    return op("cudaLaunchKernel", ts, 5, tid="456", pid=13721, cat="Runtime", correlation=corr, **{"external id": ext})


@pytest.fixture(scope="module")
def kernel_columns(tmp_path_factory):
    """test_group_by_kernel_columns' trace; its two ops run on the thread of their launch calls here (there op1
    ran on another thread than its launches, which only an External id links; Kinetoscope's launch attribution
    takes the op enclosing the call)."""
    events = [op("op1", 200, 60, tid="456", pid=13721, cat="Operator", **{"External id": 3}),
              op("op2", 340, 70, tid="456", pid=13721, cat="Operator", **{"External id": 4}),
              _kernel(230, 15, 1000, 3, [16, 16, 16]), _runtime(210, 1000, 3),
              _kernel(250, 10, 1001, 3, [16, 16, 16]), _runtime(215, 1001, 3),
              _kernel(250, 13, 1002, 3, [16, 16, 64]), _runtime(220, 1002, 3),
              _kernel(250, 17, 1003, 4, [16, 16, 64]), _runtime(350, 1003, 4)]
    path = write_trace(tmp_path_factory.mktemp("peers") / "kernel_columns.pt.trace.json", trace_doc(events))
    model = load_trace(str(path), cache_dir=None)
    return model, T.TableIndex.build(model)


def test_kernel_rows_by_op_and_launch_configuration_match_torch_tb_profiler(kernel_columns):
    model, index = kernel_columns
    rows = T.records(model, T.kernel_table(model, index, split="op_launch"))
    mine = sorted((r["op"], r["block"], r["calls"], r["total_ns"], r["min_ns"], r["max_ns"], r["mean_ns"]) for r in rows)
    # its expected rows: (op, block x*y*z, calls, total, min, max, mean) in µs
    theirs = sorted([("op1", 16 * 16 * 16, 2, 25, 10, 15, 12.5), ("op1", 16 * 16 * 64, 1, 13, 13, 13, 13),
                     ("op2", 16 * 16 * 64, 1, 17, 17, 17, 17)])
    assert [(o, b, c, t * 1000, lo * 1000, hi * 1000, int(m * 1000)) for o, b, c, t, lo, hi, m in theirs] == mine
    assert all((r["grid"], r["registers"], r["shared_mem"]) == (16, 18, 0) for r in rows)


def test_kernel_rows_by_launch_configuration(kernel_columns):
    model, index = kernel_columns
    plain = T.kernel_table(model, index)
    split = T.kernel_table(model, index, split="launch")
    assert plain.name_id.size == 1 and split.name_id.size == 2
    assert split.calls.tolist() == [2, 2] and split.total_ns.tolist() == [30_000, 25_000]  # by total time
    assert split.block.tolist() == [16384.0, 4096.0] and split.op_id is None
    assert int(split.total_ns.sum()) == int(plain.total_ns.sum()) and np.allclose(split.share.sum(), 1.0)
    window = (model.start_ns, model.start_ns + 45_000)  # 200-245 µs: only the first kernel (230-245)
    assert T.kernel_table(model, index, window, split="launch").calls.tolist() == [1]
    with pytest.raises(ValueError):
        T.kernel_table(model, index, split="grid")
