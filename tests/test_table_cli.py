"""`kinetoscope table` and the report's top tables: every format, the window, and usage errors."""
from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.cli.main import main
from kinetoscope.cli.table import parse_window


@pytest.fixture
def trace(tmp_path, no_cache):
    events = [op("aten::mm", 0, 100), launch(10, 5, 1), kernel("gemm", 20, 30, 1), op("aten::add_", 200, 20),
              launch(205, 5, 2), kernel("add_k", 230, 4, 2)]
    return str(write_trace(tmp_path / "w.1.pt.trace.json", trace_doc(events)))


def test_json_rows_and_totals(trace, capsys):
    assert main(["table", trace, "--by", "op", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in doc["rows"]] == ["aten::mm", "aten::add_"]
    assert doc["rows"][0]["gpu_total_us"] == 30.0 and doc["rows"][0]["cpu_self_us"] == 95.0
    assert doc["totals"] == {"rows": 2, "linked_gpu_us": 34.0, "top_level_gpu_us": 34.0, "unowned_gpu_us": 0.0}


def test_csv_kernels_in_a_window(trace, capsys):
    assert main(["table", trace, "--by", "kernel", "--window", "0:100", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["name"], r["calls"], r["total_us"], r["launched_by"]) for r in rows] == [("gemm", "1", "30.0", "aten::mm=30.0")]


def test_text_modules_empty_and_errors(trace, capsys):
    assert main(["table", trace, "--by", "module"]) == 0
    assert capsys.readouterr().out.startswith("name")
    assert main(["table", trace, "--window", "9:3"]) == 2
    assert "--window" in capsys.readouterr().err
    assert main(["table", trace + ".missing"]) in (1, 2)
    assert main(["table", trace, "--by", "kernel", "--group", "stack"]) == 2
    assert main(["table", trace, "--group", "stack", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("name,frame,calls")
    assert main(["table", trace, "--group", "shape", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("name,shapes,calls")
    assert main(["table", trace, "--by", "kernel", "--group", "shape"]) == 2
    assert main(["table", trace, "--group", "module", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("name,module,calls")


@pytest.mark.parametrize("text, expected", [(None, None), ("1:2", (1.0, 2.0)), (":5", (None, 5.0)), ("5:", (5.0, None))])
def test_parse_window(text, expected):
    assert parse_window(text) == expected


@pytest.mark.parametrize("text", ["1", "a:b", "1:2:3", "3:3"])
def test_parse_window_refuses(text):
    with pytest.raises(ValueError):
        parse_window(text)


@pytest.mark.parametrize("fmt, marker", [("text", "Top kernels (2 of 2):"), ("markdown", "| kernel | kind |")])
def test_report_prints_top_ops_and_kernels(trace, capsys, fmt, marker):
    assert main(["report", trace, "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert marker in out and "Top operators (2 of 2):" in out


def test_report_json_has_every_table_field(trace, capsys):
    assert main(["report", trace, "--format", "json"]) == 0
    tables = json.loads(capsys.readouterr().out)["traces"][0]["tables"]
    assert tables["kernels"][0]["launched_by"] == [{"name": "aten::mm", "gpu_us": 30.0, "calls": 1}]
    assert {"calls", "cpu_total_us", "cpu_self_us", "cpu_max_us", "gpu_self_us", "gpu_total_us", "launches", "cpu_mean_us",
            "gpu_mean_us"} <= set(tables["ops"][0])
    assert tables["ops_totals"]["rows"] == 2 and tables["modules"] == []


@pytest.fixture
def modules_trace(tmp_path, no_cache):
    """Two calls of Net_0 > Linear_0 (aten::addmm: gemm 30 µs, 64 B allocated on GPU0), under `## fwd ##`."""
    events = []
    for i, t in enumerate((0, 1000)):
        events += [op("## fwd ##", t, 300, cat="user_annotation"), op("nn.Module: Net_0", t + 10, 280, cat="python_function"),
                   op("nn.Module: Linear_0", t + 20, 100, cat="python_function"), op("aten::addmm", t + 30, 80),
                   launch(t + 40, 5, 2 * i + 1), kernel("gemm", t + 400, 30, 2 * i + 1), op("aten::relu", t + 150, 50),
                   launch(t + 160, 5, 2 * i + 2), kernel("relu_k", t + 440, 5, 2 * i + 2),
                   {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100, "tid": 1, "ts": t + 50,
                    "args": {"Device Type": 1, "Device Id": 0, "Bytes": 64}}]
    return str(write_trace(tmp_path / "w.2.pt.trace.json", trace_doc(events)))


def test_module_tree_text_is_indented(modules_trace, capsys):
    assert main(["table", modules_trace, "--by", "module-tree"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("name") and lines[1].startswith("Net_0 ") and lines[2].startswith("  Linear_0 ")
    assert main(["table", modules_trace, "--by", "module-tree", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["depth"], r["occurrences"], r["device_us"], r["self_device_us"]) for r in doc["rows"]] == [
        ("Net_0", 0, 2, 70.0, 10.0), ("Linear_0", 1, 2, 60.0, 60.0)]


def test_memory_annotation_and_sequence_tables(modules_trace, capsys):
    assert main(["table", modules_trace, "--by", "memory", "--format", "csv"]) == 0
    (row,) = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert (row["name"], row["device"], row["calls"], row["alloc_bytes"], row["peak_increase_bytes"]) == \
        ("aten::addmm", "GPU0", "2", "128", "64")
    assert main(["table", modules_trace, "--by", "annotation", "--side", "cpu", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"][0]["name"] == "## fwd ##" and doc["rows"][0]["total_us"] == 600.0
    assert main(["table", modules_trace, "--by", "sequences", "--min-len", "2", "--max-len", "2", "--format", "csv"]) == 0
    (row,) = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert (row["kernels"], row["occurrences"], row["total_us"], row["launched_by"]) == ("gemm;relu_k", "2", "70.0", "aten::addmm=2")
    assert main(["table", modules_trace, "--by", "sequences", "--min-len", "9", "--max-len", "3"]) == 2
    assert "min_len" in capsys.readouterr().err


def test_kernel_split_by_launch_configuration(modules_trace, capsys):
    assert main(["table", modules_trace, "--by", "kernel", "--split", "op-launch", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["name"], r["op"], r["calls"]) for r in rows] == [("gemm", "aten::addmm", 2), ("relu_k", "aten::relu", 2)]
    assert main(["table", modules_trace, "--by", "op", "--split", "launch"]) == 2
    assert "--split" in capsys.readouterr().err


def test_names_cut_for_showing_keep_rows_apart_by_a_stable_key(tmp_path, no_cache, capsys):
    """Two kernels whose names share their first 1,500 characters: both rows show the same cut name (1,000
    characters), each carries `name_key` (16 hex of the full name's SHA-1) and `name_chars`; short names carry none."""
    import hashlib
    stem = "void k<" + "x" * 1500
    long_a, long_b = stem + "A>()", stem + "B>()"
    events = [op("aten::mm", 0, 100), launch(10, 5, 1), kernel(long_a, 20, 30, 1), launch(40, 5, 2), kernel(long_b, 60, 10, 2),
              launch(80, 5, 3), kernel("short", 90, 5, 3)]
    path = str(write_trace(tmp_path / "w.1.pt.trace.json", trace_doc(events)))
    assert main(["table", path, "--by", "kernel", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    cut = [r for r in rows if r["name"] != "short"]
    assert len(cut) == 2 and cut[0]["name"] == cut[1]["name"] and len(cut[0]["name"]) == 1000
    assert {r["name_key"] for r in cut} == {hashlib.sha1(n.encode()).hexdigest()[:16] for n in (long_a, long_b)}
    assert {r["name_chars"] for r in cut} == {len(long_a)}
    assert "name_key" not in next(r for r in rows if r["name"] == "short")
