"""Issue 48: traces that cannot be judged say why, by name, with every supported msgspec.

- A file whose events the decode refused, every one, is a content error naming the reasons (exit 1), not an
  "empty trace", and never an "internal error" (msgspec 0.23 raised a DecodeError for invalid UTF-8 in a time
  where 0.19-0.22 raised UnicodeDecodeError: the exact-time reader caught only the latter).
- A trace that launched GPU work but recorded no device activity is not a CPU-only run: a health item and the
  not-enough-data reason ask whether ProfilerActivity.CUDA was in the activities.
- The report's device section names the window of its idle share, so it is not read as the verdict's.
"""
from __future__ import annotations

import json

import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.cli.main import main as cli_main
from kinetoscope.pipeline import analyze_and_report
from kinetoscope.trace.loader import TraceError, load_trace

# The document of the issue: an exact-time file (16-digit float) whose second event's dur is a string of invalid
# UTF-8 (the bytes of a lone surrogate) and whose times are otherwise absent or ill-typed.
HOSTILE = (b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "", "ts": {"a": [1]}, "dur": 1000000000000000.0},'
           b'\n {"ph": "X", "name": "", "ts": null, "dur": "\xed\xa0\xbd\xed\xb8\x80"}]}')


@pytest.mark.parametrize("text", [
    HOSTILE,
    b'{"traceEvents": [{"ph": "X", "name": "a", "ts": "abc", "dur": 1}]}',
    b'{"traceEvents": [{"ph": "B", "name": "a", "ts": 1, "pid": 1, "tid": 1}, {"ph": "E", "ts": 2, "pid": 1, "tid": 1}]}',
    b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1700000000000123.5, "dur": "\xff"}]}',
], ids=["issue-48", "ill-typed-ts", "begin-end-only", "exact-time-bad-utf8-dur"])
def test_a_file_whose_every_event_is_refused_is_a_named_content_error(tmp_path, capsys, text):
    path = write_trace(tmp_path / "bad.pt.trace.json", text)
    with pytest.raises(TraceError, match="no usable event: the decode refused") as caught:
        load_trace(str(path), cache_dir=None)
    assert str(path) in str(caught.value) and len(str(caught.value)) < 1000
    assert cli_main(["report", str(path), "--no-cache"]) == 1
    out = capsys.readouterr()
    assert "no usable event" in out.out + out.err and "internal error" not in out.out + out.err


def test_an_empty_events_list_is_still_an_empty_trace(tmp_path, capsys):
    path = write_trace(tmp_path / "empty.pt.trace.json", trace_doc([]))
    assert cli_main(["report", str(path), "--no-cache", "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["traces"]
    assert entry["error"] is None and entry["verdict"]["bound"] == "not enough data"


def launches_without_device_events(n: int = 3) -> dict:
    events = [op("ProfilerStep#1", 0, 5000)]
    for i in range(n):
        events += [op("aten::add", 10 + 400 * i, 300), launch(20 + 400 * i, 50, 100 + i),
                   launch(100 + 400 * i, 80, 200 + i, name="cudaMemcpyAsync")]
    return trace_doc(events)


@pytest.mark.parametrize("n", [1, 3, 40])
def test_launches_without_device_activity_ask_for_profiler_activity_cuda(tmp_path, n):
    model = load_trace(str(write_trace(tmp_path / "t.pt.trace.json", launches_without_device_events(n))), cache_dir=None)
    report = analyze_and_report(model).report
    verdict = report["verdict"]
    assert verdict["bound"] == "not enough data" and verdict["runner_up"] is None  # not a cpu-only run
    (reason,) = verdict["reasons"]
    assert f"GPU work was launched ({2 * n} runtime calls: cudaLaunchKernel {n}, cudaMemcpyAsync {n})" in reason
    assert "ProfilerActivity.CUDA" in reason and "CPU ops" not in reason
    (item,) = [h for h in report["health"] if h["check"] == "no_device_activity"]
    assert item["severity"] == "warn" and item["count"] == 2 * n and "verdict" in item["affects"]


def test_a_cpu_only_run_has_no_such_item(tmp_path):
    events = [op("ProfilerStep#1", 0, 50_000)] + [op("aten::mm", 10 + 100 * i, 80) for i in range(400)]
    report = analyze_and_report(load_trace(str(write_trace(tmp_path / "c.pt.trace.json", trace_doc(events))),
                                           cache_dir=None)).report
    assert not [h for h in report["health"] if h["check"] == "no_device_activity"]
    assert report["verdict"]["bound"] == "cpu-only"


def test_the_device_section_names_the_window_of_its_idle_share(tmp_path, capsys):
    """One step of 10 ms, device work only in its first 2 ms: idle is small in the device's span, large in the step."""
    events = [op("ProfilerStep#1", 0, 10_000)]
    for i in range(40):
        events += [launch(10 + 40 * i, 5, 100 + i), kernel(f"k{i % 3}", 20 + 50 * i, 45, 100 + i)]
    path = write_trace(tmp_path / "w.pt.trace.json", trace_doc(events))
    assert cli_main(["report", str(path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    device_line = next(line for line in out.splitlines() if line.startswith("Idle "))
    assert "of the device's active span" in device_line
    judged = next(line for line in out.splitlines() if line.startswith("Of the judged time"))
    assert "idle" in judged and "%" in judged
