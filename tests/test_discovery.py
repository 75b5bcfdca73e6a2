"""trace.discovery: runs, workers, spans on local and memory:// logdirs; rescans see changes."""
from __future__ import annotations

import os

import fsspec
import pytest
from conftest import op, trace_doc, write_trace
from kinetoscope.trace.discovery import classify, diff_scans, looks_like_trace, scan_logdir

DOC = trace_doc([op("a", 0, 1)])


@pytest.mark.parametrize("name, expected", [
    ("worker0.1623143089861.pt.trace.json.gz", ("worker0", 1623143089861, False)),
    ("vm_13690.1795262577621679077.pt.trace.json", ("vm_13690", 1795262577621679077, False)),
    ("host.example.com_12.1795262577621679077.pt.trace.json", ("host.example.com_12", 1795262577621679077, False)),
    ("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", ("rank-0.Apr_03_18_51_38", 1102, False)),
    ("worker0.pt.trace.json", ("worker0", None, False)),
    ("export.json", ("export", None, True)),
    ("control.json.gz", ("control", None, True)),
    ("worker0.1.pt.trace.json.tmp", None),
    ("events.out.tfevents.1623143089.host", None),
    ("notes.txt", None),
])
def test_classify_file_names(name, expected):
    assert classify(name) == expected


def test_runs_workers_and_numeric_span_order(tmp_path):
    write_trace(tmp_path / "a" / "w.1795262577621679077.pt.trace.json", DOC)  # 19-digit ns
    write_trace(tmp_path / "a" / "w.1623143089861.pt.trace.json.gz", DOC, gz=True)  # 13-digit ms: earlier
    write_trace(tmp_path / "a" / "w.99.pt.trace.json.tmp", "{")
    write_trace(tmp_path / "a" / "x.5.pt.trace.json", DOC)
    write_trace(tmp_path / "b" / "nested" / "hta_export.json", DOC)
    write_trace(tmp_path / "b" / "nested" / "not_a_trace.json", {"schema": "1.0", "nodes": []})
    write_trace(tmp_path / "b" / "memory_timeline.json", [[1, 2, 3]])
    write_trace(tmp_path / "c" / "events.out.tfevents.1.host", b"\x00\x01")
    found = scan_logdir(str(tmp_path))
    assert [(f.run, f.worker, f.span) for f in found] == [
        ("a", "w", 1623143089861), ("a", "w", 1795262577621679077), ("a", "x", 5), ("b/nested", "hta_export", None)]
    assert all(os.path.isabs(f.path) for f in found)


def test_logdir_that_is_itself_a_run_is_named_by_its_basename(tmp_path):
    write_trace(tmp_path / "profile" / "w.1.pt.trace.json", DOC)
    assert [f.run for f in scan_logdir(str(tmp_path / "profile"))] == ["profile"]


def test_missing_logdir_is_empty_not_an_error(tmp_path):
    assert scan_logdir(str(tmp_path / "nope")) == []


def test_rescan_sees_added_changed_and_removed_files(tmp_path):
    first = write_trace(tmp_path / "r" / "w.1.pt.trace.json", DOC)
    second = write_trace(tmp_path / "r" / "w.2.pt.trace.json", DOC)
    before = scan_logdir(str(tmp_path))
    write_trace(tmp_path / "r" / "w.3.pt.trace.json", DOC)
    write_trace(first, trace_doc([op("a", 0, 1), op("b", 1, 1)]))
    second.unlink()
    diff = diff_scans(before, scan_logdir(str(tmp_path)))
    assert [f.span for f in diff.added] == [3]
    assert [f.span for f in diff.changed] == [1]
    assert [f.span for f in diff.removed] == [2]


def test_memory_filesystem_logdir():
    fs = fsspec.filesystem("memory")
    import json
    fs.pipe("/ks-test/run1/w.1623143089861.pt.trace.json", json.dumps(DOC).encode())
    fs.pipe("/ks-test/run1/sub/w.1795262577621679077.pt.trace.json", json.dumps(DOC).encode())
    fs.pipe("/ks-test/run1/readme.json", b'{"x": 1}')
    try:
        found = scan_logdir("memory://ks-test")
        assert [(f.run, f.span) for f in found] == [("run1", 1623143089861), ("run1/sub", 1795262577621679077)]
        assert found[0].path == "memory://ks-test/run1/w.1623143089861.pt.trace.json"
        from kinetoscope.trace.loader import load_trace
        assert load_trace(found[0].path, cache_dir=None).n_events == 1
    finally:
        fs.rm("/ks-test", recursive=True)


@pytest.mark.parametrize("head, verdict", [
    (b'{"schemaVersion": 1, "traceEvents": [', True),
    (b'  {"traceEvents": []}', True),
    (b'{"displayTimeUnit": "ms", "x": [{"ph": "X", "ts": 1, "pid": 1}', True),
    (b'{"schema": "1.0.1", "pid": 1, "nodes": []}', False),
    (b'[[1, 2, 3]]', False),
    (b'', False),
])
def test_sniffing(head, verdict):
    assert looks_like_trace(head) is verdict


def test_symlinked_traces_are_found_with_their_targets_identity(tmp_path, monkeypatch):
    target = write_trace(tmp_path / "elsewhere" / "real.json", DOC)
    (tmp_path / "logs" / "run").mkdir(parents=True)
    (tmp_path / "logs" / "run" / "w.7.pt.trace.json").symlink_to(target)
    (tmp_path / "logs" / "run" / "w.8.pt.trace.json").symlink_to(tmp_path / "missing")
    assert scan_logdir(str(tmp_path / "logs")) == []  # a link out of the logdir is not followed (issue 26)
    monkeypatch.setenv("KINETOSCOPE_ALLOW_LINKS_TO", str(tmp_path / "elsewhere"))  # unless allowed
    (found,) = scan_logdir(str(tmp_path / "logs"))
    assert (found.run, found.worker, found.span, found.size) == ("run", "w", 7, target.stat().st_size)
    assert found.mtime == target.stat().st_mtime


def test_a_fifo_in_the_logdir_never_blocks_the_scan(tmp_path):
    write_trace(tmp_path / "run" / "w.1.pt.trace.json", trace_doc([op("a", 0, 1)]))
    os.mkfifo(tmp_path / "run" / "odd.json")  # a name that needs sniffing: reading it would block forever
    names = [os.path.basename(t.path) for t in scan_logdir(str(tmp_path))]
    assert names == ["w.1.pt.trace.json"]


def test_symlinked_run_folders_are_followed_without_looping(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere" / "runB"
    write_trace(elsewhere / "w.2.pt.trace.json", trace_doc([op("b", 0, 1)]))
    logs = tmp_path / "logs"
    write_trace(logs / "runA" / "w.1.pt.trace.json", trace_doc([op("a", 0, 1)]))
    (logs / "runB").symlink_to(elsewhere, target_is_directory=True)
    (logs / "runA" / "loop").symlink_to(logs, target_is_directory=True)  # a link back to the logdir
    (logs / "runC").symlink_to(logs / "runA", target_is_directory=True)  # inside: followed, listed once
    assert [(f.run, os.path.basename(f.path)) for f in scan_logdir(str(logs))] == [("runA", "w.1.pt.trace.json")]
    monkeypatch.setenv("KINETOSCOPE_ALLOW_LINKS_TO", str(tmp_path / "elsewhere"))  # runs linked in from there
    found = scan_logdir(str(logs))
    assert sorted((f.run, os.path.basename(f.path)) for f in found) == [("runA", "w.1.pt.trace.json"),
                                                                         ("runB", "w.2.pt.trace.json")]
