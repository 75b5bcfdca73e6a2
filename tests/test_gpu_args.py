"""trace.gpu_args: the kernel launch shape and copy bytes kept as sparse model columns; ill-typed values are
absent (-1), never a lost event."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.trace import extractors
from kinetoscope.trace.gpu_args import FIELDS, GpuArgs, _numbers, _products
from kinetoscope.trace.loader import load_trace


@pytest.mark.parametrize("values, expected", [
    ([1, 2.5, 0], [1.0, 2.5, 0.0]),
    ([None, "12", True, -3, float("inf"), 1 << 70, 7], [math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, 7.0]),
    ([None, "abc", [1], 4], [math.nan, math.nan, math.nan, 4.0]),
])
def test_numbers(values, expected):
    np.testing.assert_array_equal(_numbers(values), np.array(expected))


@pytest.mark.parametrize("values, expected", [
    ([[2, 3, 4], [1, 1, 1]], [24.0, 1.0]),
    ([[2, 3, 4], None, [0, 1, 1], [2, "x", 1], [1.5, 1, 1], [5, 1], "7"], [24.0, math.nan, math.nan, math.nan, math.nan, math.nan,
                                                                           math.nan]),
    ([[1 << 40, 1 << 40, 1]], [math.nan]),
])
def test_products(values, expected):
    np.testing.assert_array_equal(_products(values), np.array(expected))


def _kernel_args(name: str, ts: float, dur: float, corr: int, **args) -> dict:
    event = kernel(name, ts, dur, corr)
    event["args"].update(args)
    return event


def test_model_columns_and_hostile_values(tmp_path):
    events = [op("aten::mm", 0, 50), launch(1, 2, 1), launch(5, 2, 2), launch(9, 2, 3),
              _kernel_args("gemm", 10, 5, 1, grid=[4, 2, 1], block=[128, 1, 1], **{
                  "registers per thread": 64, "shared memory": 4096, "blocks per SM": 0.1, "est. achieved occupancy %": 25}),
              _kernel_args("gemm", 20, 5, 2, grid="4,2,1", block=None, **{"registers per thread": "lots",
                                                                           "est. achieved occupancy %": -5}),
              {**_kernel_args("Memcpy HtoD", 30, 10, 3, bytes=1_000_000), "cat": "gpu_memcpy"}]
    model = load_trace(str(write_trace(tmp_path / "t.pt.trace.json", trace_doc(events))), cache_dir=None)
    assert model.n_events == 7 and not model.skipped  # the ill-typed fields cost nothing
    rows = model.gpu_arg_row.tolist()
    names = [model.names[model.name_id[r]] for r in rows]
    assert names == ["gemm", "Memcpy HtoD"]  # the second gemm has nothing usable: no row
    assert model.gpu_arg_grid.tolist() == [8.0, -1.0] and model.gpu_arg_block.tolist() == [128.0, -1.0]
    assert model.gpu_arg_registers.tolist() == [64.0, -1.0] and model.gpu_arg_shared_mem.tolist() == [4096.0, -1.0]
    assert model.gpu_arg_occupancy.tolist() == [25.0, -1.0] and model.gpu_arg_bytes.tolist() == [-1.0, 1_000_000.0]
    assert model.gpu_arg_blocks_per_sm.tolist() == [0.1, -1.0]


_SPELLINGS = ['[4, 2, 1]', '[4,2,1]', ' [ 4 ,\n2, 1 ] ', '[1.0, 2, 3]', '[2e1, 1, 1]', '[0, 1, 1]', '[-1, 1, 1]', '[1, 1]',
              '[1, 1, 1, 1]', '[true, 1, 1]', '["4", 1, 1]', '[null, 1, 1]', '[[1], 1, 1]', '{"x": 1}', '"4,2,1"', 'null', '7',
              '[4611686018427387903, 1, 1]', '[4611686018427387904, 1, 1]', '[999999999999999999, 1, 1]',
              '[9999999999999999999, 1, 1]', '[123456789012345678901234567890, 1, 1]', '[2147483648, 2147483648, 2]',
              '[1.5, 1, 1]', '[1E0, 1, 1]', '[1e999, 1, 1]', '[1, -1e999, 1]', '[1, 1, 1.00000000000000000000001]', '[]']
_NUMBERS = ['64', '0', '-1', '1.5', '1e3', 'true', '"64"', 'null', '[64]', '4611686018427387904', '4611686018427387903',
            '123456789012345678901234567890', '-0.0']


def test_compiled_reader_equals_the_reference(tmp_path):
    """Every spelling the compiled reader takes itself or hands back gives what the reference readers give."""
    if not extractors.ACCELERATED:
        pytest.skip("no compiled extractor")
    events = [launch(0, 1, 1)]
    for i, text in enumerate(_SPELLINGS):
        number = _NUMBERS[i % len(_NUMBERS)]
        events.append(f'{{"ph": "X", "cat": "kernel", "name": "k{i}", "pid": 0, "tid": 7, "ts": {10 + i}, "dur": 0.5, '
                      f'"args": {{"device": 0, "stream": 7, "correlation": 1, "grid": {text}, "block": {_SPELLINGS[-1 - i]}, '
                      f'"registers per thread": {number}, "shared memory": {_NUMBERS[-1 - i % len(_NUMBERS)]}, '
                      f'"blocks per SM": {number}, "est. achieved occupancy %": {number}}}}}')
        events.append(f'{{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy", "pid": 0, "tid": 7, "ts": {10 + i + 0.6}, '
                      f'"dur": 0.1, "args": {{"device": 0, "stream": 7, "bytes": {number}}}}}')
    import json
    first = json.dumps(events[0])
    text = '{"traceEvents": [' + ",".join([first, *events[1:]]) + ']}'
    path = tmp_path / "t.pt.trace.json"
    path.write_text(text)
    compiled = load_trace(str(path), cache_dir=None)
    original = GpuArgs.__init__

    def reference_only(self, accel=None):
        original(self, None)
    try:
        GpuArgs.__init__ = reference_only
        reference = load_trace(str(path), cache_dir=None)
    finally:
        GpuArgs.__init__ = original
    assert compiled.n_events == reference.n_events == 1 + 2 * len(_SPELLINGS)
    for name in ("row", "bytes", "grid", "block", "registers", "shared_mem", "blocks_per_sm", "occupancy"):
        np.testing.assert_array_equal(getattr(compiled, f"gpu_arg_{name}"), getattr(reference, f"gpu_arg_{name}"), err_msg=name)
    grids = dict(zip(_SPELLINGS, [compiled.gpu_arg_grid[compiled.gpu_arg_row == r] for r in
                                  np.flatnonzero(np.char.startswith(np.array(compiled.names)[compiled.name_id], "k"))]))
    assert grids["[4, 2, 1]"].tolist() == [8.0] and grids["[1.0, 2, 3]"].tolist() == [6.0] and grids["[2e1, 1, 1]"].tolist() == [20.0]


def _inverted(args: GpuArgs, kept: np.ndarray) -> dict[str, np.ndarray]:
    """The columns by inverting every event row (event row of each raw row, -1 for dropped ones), in event order."""
    raw = np.concatenate(args._rows) if args._rows else np.zeros(0, np.int64)
    values = np.concatenate(args._values) if args._values else np.zeros((0, len(FIELDS)))
    where = np.full(int(max(raw.max(initial=-1), kept.max(initial=-1))) + 1, -1, np.int64)
    where[kept] = np.arange(kept.size)
    event_row = where[raw]
    present = event_row >= 0
    order = np.argsort(event_row[present], kind="stable")
    values = values[present][order]
    return {"gpu_arg_row": event_row[present][order],
            **{f"gpu_arg_{name}": np.where(np.isnan(values[:, k]), -1.0, values[:, k]) for k, (name, *_) in enumerate(FIELDS)}}


def test_columns_found_among_candidates_equal_the_inverted_rows():
    """`columns`, with the event rows that may hold the activities (the kernels and copies, a superset) or with
    every event row, equals the inversion of every event row: activities dropped from the model (unusable times)
    stay out either way."""
    rng = np.random.default_rng(11)
    for _ in range(100):
        n_raw = int(rng.integers(1, 3000))
        kept = rng.permutation(n_raw)[:int(rng.integers(0, n_raw + 1))].astype(np.int64)  # event row -> raw row
        activities = np.unique(rng.integers(0, n_raw, int(rng.integers(0, 400)))).astype(np.int64)
        args = GpuArgs()
        for chunk in np.array_split(rng.permutation(activities), int(rng.integers(1, 5))):  # kernels, copies interleave
            args._rows.append(chunk)
            values = rng.random((chunk.size, len(FIELDS)))
            values[rng.random(values.shape) < 0.3] = np.nan
            args._values.append(values)
        candidates = np.flatnonzero(np.isin(kept, activities) | (rng.random(kept.size) < 0.2))
        want = _inverted(args, kept)
        for got in (args.columns(kept), args.columns(kept, candidates)):
            assert got.keys() == want.keys()
            for name in want:
                np.testing.assert_array_equal(got[name], want[name], err_msg=name)
                assert got[name].dtype == want[name].dtype, name
    assert GpuArgs().columns(np.arange(5), np.arange(5))["gpu_arg_row"].size == 0
