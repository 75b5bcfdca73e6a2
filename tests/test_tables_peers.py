"""The tables torch-tb-profiler and HTA have beyond the op and kernel tables: memory per op, kernel rows by launch
configuration, the module tree, the user-annotation breakdown and frequent kernel sequences. Against
torch-tb-profiler's own test expectations (tb_plugin/test/test_profiler.py: test_memory_view,
test_group_by_kernel_columns, their traces rebuilt here event by event), its figures on shared traces
(tests/reference/tbprof_*.json), HTA's test on its ns-resolution trace, and traces built by hand."""
from __future__ import annotations

import gzip
import json
import statistics
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_TRACES, kernel, launch, op, requires_shared, trace_doc, write_trace
from kinetoscope.analysis.tables import index as T
from kinetoscope.analysis.tables import kernels as TK
from kinetoscope.analysis.tables import rows as TR
from kinetoscope.analysis.tables.annotations import annotation_table
from kinetoscope.analysis.tables.extra import extra_rows
from kinetoscope.analysis.tables.kernel_sequences import find_sequences, kernel_sequences, op_patterns
from kinetoscope.analysis.tables.module_tree import module_label, module_tree
from kinetoscope.analysis.tables.op_memory import op_memory_table
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
    table = op_memory_table(memory_view, T.TableIndex.build(memory_view))
    assert _memory_rows(memory_view, table) == {"CPU": TBPROF_CPU, "GPU0": TBPROF_GPU}
    # events outside every op (in a step or the DataLoader annotation, or before any node) are not counted
    assert table.counted_events + table.unowned_events == len(MEMORY_VIEW_EVENTS)
    assert table.unowned_events == 6


def test_memory_freed_and_peak_by_hand(memory_view):
    table = op_memory_table(memory_view, T.TableIndex.build(memory_view))
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
    rows = _memory_rows(memory_view, op_memory_table(memory_view, T.TableIndex.build(memory_view), window))
    assert rows["GPU0"]["aten::tranas_stride"][:6] == [0, 50, 1, 0, 50, 1]
    assert "aten::addmm" not in rows["GPU0"]  # 750-790: outside the window


def test_memory_table_of_a_trace_without_memory_events(tmp_path):
    path = write_trace(tmp_path / "none.pt.trace.json", trace_doc([op("aten::mm", 0, 10)]))
    none = load_trace(str(path), cache_dir=None)
    table = op_memory_table(none, T.TableIndex.build(none))
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
    rows = TR.records(model, TK.kernel_table(model, index, split="op_launch"))
    mine = sorted((r["op"], r["block"], r["calls"], r["total_ns"], r["min_ns"], r["max_ns"], r["mean_ns"]) for r in rows)
    # its expected rows: (op, block x*y*z, calls, total, min, max, mean) in µs
    theirs = sorted([("op1", 16 * 16 * 16, 2, 25, 10, 15, 12.5), ("op1", 16 * 16 * 64, 1, 13, 13, 13, 13),
                     ("op2", 16 * 16 * 64, 1, 17, 17, 17, 17)])
    assert [(o, b, c, t * 1000, lo * 1000, hi * 1000, int(m * 1000)) for o, b, c, t, lo, hi, m in theirs] == mine
    assert all((r["grid"], r["registers"], r["shared_mem"]) == (16, 18, 0) for r in rows)


def test_kernel_rows_by_launch_configuration(kernel_columns):
    model, index = kernel_columns
    plain = TK.kernel_table(model, index)
    split = TK.kernel_table(model, index, split="launch")
    assert plain.name_id.size == 1 and split.name_id.size == 2
    assert split.calls.tolist() == [2, 2] and split.total_ns.tolist() == [30_000, 25_000]  # by total time
    assert split.block.tolist() == [16384.0, 4096.0] and split.op_id is None
    assert int(split.total_ns.sum()) == int(plain.total_ns.sum()) and np.allclose(split.share.sum(), 1.0)
    window = (model.start_ns, model.start_ns + 45_000)  # 200-245 µs: only the first kernel (230-245)
    assert TK.kernel_table(model, index, window, split="launch").calls.tolist() == [1]
    with pytest.raises(ValueError):
        TK.kernel_table(model, index, split="grid")


REFERENCE = Path(__file__).parent / "reference"


def _load_shared(relative: str):
    model = load_trace(str(SHARED_TRACES / relative), cache_dir=None)
    return model, T.TableIndex.build(model)


@requires_shared
def test_memory_per_op_matches_torch_tb_profiler_on_resnet50():
    """torch-tb-profiler 0.4.3's memory statistics of resnet50_num_workers_0 (tests/reference/
    tbprof_modules_memory.py): every (device, op) row, all seven columns. The only difference is its merging of
    an op's sole child of the same name into it (op_tree.remove_dup_nodes): aten::div calls aten::div here, and
    torch.profiler, the op table and this table count both calls (so the nested call's memory twice with children)."""
    reference = json.loads((REFERENCE / "tbprof_memory_resnet50_nw0.json").read_text())
    model, _ = _load_shared("resnet50_num_workers_0/" + reference["trace"])
    mine = _memory_rows(model, op_memory_table(model, T.TableIndex.build(model)))
    theirs = reference["memory"]
    assert {d: set(ops) for d, ops in mine.items()} == {d: set(ops) for d, ops in theirs.items()}
    differ = {(d, name) for d in theirs for name in theirs[d] if mine[d][name] != theirs[d][name]}
    assert {name for _, name in differ} == {"aten::div"}
    div = model.names.index("aten::div")
    rows = np.flatnonzero(model.name_id == div)
    nested = int(np.sum((model.depth[rows] > 0) & np.isin(rows - 1, rows)))
    for device, name in differ:
        assert mine[device][name][6] - theirs[device][name][6] == nested > 0
        assert mine[device][name][:3] == theirs[device][name][:3]  # self figures agree


@requires_shared
@pytest.mark.parametrize("reference_file, trace", [
    ("tbprof_modules_bert_small.json", "modern/h100/gaunernst_bert-small-uncased__1016001.json.gz"),
    ("tbprof_modules_torch213_nw0.json", "torch213_cpu/nw0/vm_13690.1795262577621679077.pt.trace.json")])
def test_module_tree_and_memory_match_torch_tb_profiler(reference_file, trace):
    """torch-tb-profiler 0.4.3's Module view: the same tree (every path), and per node the same occurrences,
    operators, host and self host time (its µs are floats of the file's µs: within 0.01 µs); its memory table
    too. Its device times are all 0 on the H100 trace (it links none of that 2025 trace's kernels to their
    launches: its op table's device total is 0 as well), so device time is checked by hand below."""
    reference = json.loads((REFERENCE / reference_file).read_text())
    model, index = _load_shared(trace)
    tree = module_tree(model, index)
    paths: list[tuple[str, ...]] = []
    for i in range(tree.name_id.size):
        paths.append((paths[tree.parent[i]] if tree.parent[i] >= 0 else ()) + (module_label(model.names[tree.name_id[i]]),))
    mine = {p: i for i, p in enumerate(paths)}
    theirs = {tuple(r["path"]): r for r in reference["modules"]}
    assert set(mine) == set(theirs) and len(paths) == len(mine)
    for path, r in theirs.items():
        i = mine[path]
        assert (int(tree.occurrences[i]), int(tree.operators[i])) == (r["occurrences"], r["operators"]), path
        assert tree.host_ns[i] / 1e3 == pytest.approx(r["host_us"], abs=0.01), path
        assert tree.self_host_ns[i] / 1e3 == pytest.approx(r["self_host_us"], abs=0.01), path
    assert (tree.self_device_ns <= tree.device_ns).all() and (tree.self_host_ns <= tree.host_ns).all()
    assert _memory_rows(model, op_memory_table(model, index)) == reference["memory"]


def _module(name: str, ts: float, dur: float) -> dict:
    return op(f"nn.Module: {name}", ts, dur, cat="python_function")


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    """The module docstring's example, called twice (the second call 1000 µs later)."""
    events = []
    for base, corr in ((0, 0), (1000, 10)):
        events += [_module("Encoder_0", base, 200), _module("Linear_0", base + 10, 50), op("aten::linear", base + 15, 40),
                   launch(base + 20, 5, corr + 1), kernel("gemm", base + 300, 10, corr + 1),
                   op("aten::relu", base + 70, 30), launch(base + 75, 5, corr + 2), kernel("relu_k", base + 320, 3, corr + 2),
                   _module("Linear_1", base + 110, 80), op("aten::linear", base + 115, 60),
                   launch(base + 120, 5, corr + 3), kernel("gemm", base + 330, 12, corr + 3)]
    path = write_trace(tmp_path_factory.mktemp("peers") / "encoder.pt.trace.json", trace_doc(events))
    model = load_trace(str(path), cache_dir=None)
    return model, T.TableIndex.build(model)


def test_module_tree_by_hand(encoder):
    model, index = encoder
    tree = module_tree(model, index)
    names = [module_label(model.names[i]) for i in tree.name_id.tolist()]
    assert names == ["Encoder_0", "Linear_0", "Linear_1"] and tree.parent.tolist() == [-1, 0, 0]
    assert tree.depth.tolist() == [0, 1, 1] and tree.occurrences.tolist() == [2, 2, 2]
    assert tree.device_ns.tolist() == [2 * 25_000, 2 * 10_000, 2 * 12_000]
    assert tree.self_device_ns.tolist() == [2 * 3_000, 2 * 10_000, 2 * 12_000]
    assert tree.operators.tolist() == [2, 2, 2]  # aten::relu in the encoder; one aten::linear in each Linear
    # Encoder_0: 200 - Linear_0 50 - aten::relu 30 - Linear_1 80 = 40 µs per call
    assert tree.host_ns.tolist() == [400_000, 100_000, 160_000] and tree.self_host_ns[0] == 80_000
    assert tree.self_host_ns[1] == 2 * 10_000  # Linear_0: 50 - aten::linear 40
    first = module_tree(model, index, window=(model.start_ns, model.start_ns + 500_000))
    assert first.occurrences.tolist() == [1, 1, 1] and first.device_ns.tolist() == [25_000, 10_000, 12_000]
    inner = module_tree(model, index, window=(model.start_ns + 10_000, model.start_ns + 60_000))  # Linear_0's call
    assert inner.occurrences.tolist() == [1, 1] and inner.host_ns.tolist() == [50_000, 50_000]


def test_module_tree_of_a_trace_without_modules(tmp_path):
    path = write_trace(tmp_path / "none.pt.trace.json", trace_doc([op("aten::mm", 0, 10)]))
    model = load_trace(str(path), cache_dir=None)
    tree = module_tree(model, T.TableIndex.build(model))
    assert tree.name_id.size == 0 and not tree.truncated


@requires_shared
def test_user_annotation_breakdown_matches_hta_on_its_ns_resolution_trace():
    """HTA's test (test_trace_analysis.__test_gpu_user_annotation_common) on this trace: 3 GPU annotation names
    and 12 CPU ones, each name's sum and mean equal to a group-by of the trace's own events. HTA drops the CPU
    events that start in the last ProfilerStep (its iteration filter), which here is `ProfilerStep#105` alone:
    Kinetoscope keeps the whole trace, so 13 CPU names."""
    path = next((SHARED_TRACES / "hta" / "ns_resolution_trace").glob("*.json.gz"))
    doc = json.loads(gzip.decompress(path.read_bytes()))
    model = load_trace(str(path), cache_dir=None)
    for side, cat, hta_rows in (("gpu", "gpu_user_annotation", 3), ("cpu", "user_annotation", 12)):
        groups: dict[str, list[float]] = {}
        for e in doc["traceEvents"]:
            if e.get("cat") == cat and e.get("ph") == "X":
                groups.setdefault(e["name"], []).append(e["dur"])
        table = annotation_table(model, side)
        mine = {model.names[n]: (int(c), t / 1e3, mu / 1e3, sd / 1e3) for n, c, t, mu, sd in
                zip(table.name_id.tolist(), table.count.tolist(), table.total_ns.tolist(), table.mean_ns.tolist(), table.std_ns.tolist())}
        assert set(mine) == set(groups)
        assert len(mine) - hta_rows == (1 if side == "cpu" else 0) and "ProfilerStep#105" in mine or side == "gpu"
        for name, durs in groups.items():
            count, total, mean, std = mine[name]
            assert count == len(durs) and total == pytest.approx(sum(durs), abs=0.001 * len(durs))
            assert mean == pytest.approx(statistics.mean(durs), abs=0.001)
            assert std == pytest.approx(statistics.stdev(durs) if len(durs) > 1 else 0.0, abs=0.001)
    top = annotation_table(model, "cpu", scope="top")
    assert not any(model.names[n].startswith("ProfilerStep#") for n in top.name_id.tolist())
    assert "DistributedDataParallel.forward" not in {model.names[n] for n in top.name_id.tolist()}  # inside ## forward ##


def test_annotation_scopes_by_hand(tmp_path):
    events = [op("ProfilerStep#1", 0, 1000, cat="user_annotation"), op("## fwd ##", 10, 300, cat="user_annotation"),
              op("inner", 20, 100, cat="user_annotation"), op("## fwd ##", 400, 100, cat="user_annotation"),
              {"ph": "X", "cat": "gpu_user_annotation", "name": "## fwd ##", "pid": 0, "tid": 7, "ts": 50, "dur": 400,
               "args": {"device": 0, "stream": 7}}]
    model = load_trace(str(write_trace(tmp_path / "ann.pt.trace.json", trace_doc(events))), cache_dir=None)
    everything = annotation_table(model, "cpu")
    assert [model.names[n] for n in everything.name_id] == ["ProfilerStep#1", "## fwd ##", "inner"]
    fwd = 1
    assert everything.count[fwd] == 2 and everything.total_ns[fwd] == 400_000 and everything.min_ns[fwd] == 100_000
    assert everything.std_ns[fwd] == pytest.approx(statistics.stdev([300_000, 100_000]))
    top = annotation_table(model, "cpu", scope="top")
    assert [model.names[n] for n in top.name_id] == ["## fwd ##"] and top.total_ns.tolist() == [400_000]
    gpu = annotation_table(model, "gpu", window=(model.start_ns + 400_000, model.start_ns + 2_000_000))
    assert gpu.total_ns.tolist() == [50_000]  # 50-450 µs clipped to [400, ...)
    with pytest.raises(ValueError):
        annotation_table(model, "tpu")


def test_kernel_sequences_by_hand(tmp_path):
    """Stream 7: A B C A B C A B D (1 µs each, C 5 µs), stream 8: A B C; ops: `op1` launches each A."""
    names = "ABCABCABD"
    events, corr = [], 0
    for stream, seq, t0 in ((7, names, 0), (8, "ABC", 0)):
        for i, k in enumerate(seq):
            corr += 1
            if k == "A":
                events.append(op("op1", 1000 * stream + 10 * i, 5))
            events += [launch(1000 * stream + 10 * i + 1, 1, corr), kernel(k, 5000 + t0 + 20 * i, 5 if k == "C" else 1, corr, stream=stream)]
    model = load_trace(str(write_trace(tmp_path / "seq.pt.trace.json", trace_doc(events))), cache_dir=None)
    index = T.TableIndex.build(model)
    seqs = kernel_sequences(model, index, min_len=3, max_len=4, top=5)
    shown = [("".join(model.names[i] for i in s.name_ids), s.occurrences, s.total_ns) for s in seqs]
    # ABC: 3 times (twice on stream 7, once on 8), covering 3 x 7 µs; ABCA and BCAB twice each, their two
    # occurrences sharing a kernel (A B C A B C A: 15 µs); BCA and CAB (twice, 14 µs) are runs inside those,
    # as often: left out
    assert shown == [("ABC", 3, 21_000), ("ABCA", 2, 15_000), ("BCAB", 2, 15_000)]
    assert all(n != "ABD" for n, _, _ in shown)  # occurs once
    abc = next(s for s in seqs if len(s.name_ids) == 3 and s.occurrences == 3)
    assert abc.launched_by == ((model.names.index("op1"), 3),) and abc.mean_ns == 7_000
    with pytest.raises(ValueError):
        kernel_sequences(model, index, min_len=1)


def test_kernel_sequence_search_stays_bounded_on_a_million_kernels():
    """1M kernels on two streams with one 5-kernel pattern planted every 50: found first, with its count."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 200, 1_000_000)
    for s in range(0, ids.size - 10, 50):
        ids[s:s + 5] = [205, 206, 207, 208, 209]
    first = np.zeros(ids.size, bool)
    first[[0, ids.size // 2]] = True
    started = time.perf_counter()
    found = find_sequences(ids, np.full(ids.size, 1000), first, 3, 8, 10)
    assert time.perf_counter() - started < 30  # about 2 s on one shared core
    assert found[0][0] == (205, 206, 207, 208, 209) and found[0][1].size == 20_000 and found[0][2] == 100_000_000



def test_op_rooted_patterns_as_hta_counts_them(tmp_path):
    """HTA's frequent CUDA kernel patterns under `aten::linear`: three calls launch memset, gemm, add (2 µs
    each), one launches gemm alone (fewer than min_len: left out), and one aten::linear nested deeper
    (inside `wrapper`) is not among the shallowest calls."""
    events, corr = [], 0
    for i, kernels in enumerate((["Memset (Device)", "gemm", "add"],) * 3 + (["gemm"],)):
        t = 100 * i
        events += [op("aten::linear", t, 50), op("aten::addmm", t + 5, 40)]
        for j, name in enumerate(kernels):
            corr += 1
            cat = "gpu_memset" if name.startswith("Memset") else "kernel"
            events += [launch(t + 10 + 5 * j, 2, corr), kernel(name, 1000 + t + 10 * j, 2, corr, cat=cat)]
    events += [op("wrapper", 500, 60), op("aten::linear", 505, 50), launch(510, 2, 99), kernel("gemm", 1600, 2, 99),
               launch(515, 2, 98), kernel("gemm", 1610, 2, 98), launch(520, 2, 97), kernel("gemm", 1620, 2, 97)]
    model = load_trace(str(write_trace(tmp_path / "hta.pt.trace.json", trace_doc(events))), cache_dir=None)
    index = T.TableIndex.build(model)
    (pattern,) = op_patterns(model, index, "aten::linear", min_len=3)
    assert model.names[pattern.op_name_id] == "aten::linear"
    assert [model.names[i] for i in pattern.name_ids] == ["Memset (Device)", "gemm", "add"]
    assert (pattern.count, pattern.gpu_ns, pattern.cpu_ns) == (3, 18_000, 150_000)
    assert op_patterns(model, index, "aten::linear", min_len=1)[1].count == 1  # gemm alone, then
    assert op_patterns(model, index, "no such op") == []
    rows, totals = extra_rows(model, index, "sequences", root="aten::linear")
    assert rows[0]["op"] == "aten::linear" and rows[0]["occurrences"] == 3 and totals["root"] == "aten::linear"
    with pytest.raises(ValueError):
        op_patterns(model, index, "")
