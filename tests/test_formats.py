"""The readable renderers: span labels, the overview table, markdown sections and escaping."""
from __future__ import annotations

import re

from conftest import REPO, kernel, launch, op, trace_doc, write_trace
from kinetoscope.analysis.gpu_idle import CAUSE_NAMES, CAUSE_ORDER
from kinetoscope.cli.main import main
from kinetoscope.formats.report import render_entry, render_overview, span_label
from kinetoscope.formats.units import md

XSS = "<img src=x onerror=alert(1)>"


def test_md_escapes_markup_and_table_breakers():
    assert md(XSS) == "\\<img src=x onerror=alert(1)\\>"
    assert md("a|b\nc") == "a\\|b c"
    assert md("ProfilerStep#3 *x* _y_ `z` [l]") == "ProfilerStep\\#3 \\*x\\* \\_y\\_ \\`z\\` \\[l\\]"


def test_span_labels_are_the_number_or_else_the_file_name():
    assert span_label({"span": "1623143089861", "path": "/x/worker0.1623143089861.pt.trace.json.gz"}) == "span 1623143089861"
    assert span_label({"span": None, "path": "/t/rank-1.Jan_24_13_36_25.pt.trace.json.gz"}) == "rank-1.Jan_24_13_36_25"
    assert span_label({"span": None, "path": "s3://b/control.json.gz"}) == "control"


def _entry(tmp_path, capsys, events):
    write_trace(tmp_path / "logs" / "run" / "odd_name.json", trace_doc(events))
    assert main(["report", str(tmp_path / "logs"), "--format", "markdown", "--no-cache"]) == 0
    return capsys.readouterr().out


def test_markdown_has_headed_sections_and_separate_paragraphs(tmp_path, capsys, no_cache):
    events = [op("ProfilerStep#1", 0, 400), op(XSS, 10, 30), launch(12, 5, 1), kernel("k|1", 30, 20, 1)]
    out = _entry(tmp_path, capsys, events)
    assert "## run / odd\\_name / odd\\_name" in out and "span None" not in out
    lines = out.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("**Verdict: "))
    assert lines[verdict + 1] == "" and any(line.startswith("Evidence: ") for line in lines)
    evidence = next(i for i, line in enumerate(lines) if line.startswith("Evidence: "))
    assert lines[evidence + 1] == "" and lines[evidence + 2].startswith("Suggestion: ")
    assert "### Device 0" in out and "### Steps" in out
    assert XSS not in out


def test_an_empty_trace_is_named_so(tmp_path, capsys, no_cache):
    write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", trace_doc([]))
    assert main(["report", str(tmp_path / "logs"), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "Empty trace" in out and "an empty trace" in out and "cpu-only" not in out and "lean" not in out


def test_several_traces_open_with_one_overview_table(tmp_path, capsys, no_cache):
    for i in (1, 2, 3):
        write_trace(tmp_path / "logs" / f"run{i}" / f"w.{i}.pt.trace.json", trace_doc([op("a", 0, 5)]))
    write_trace(tmp_path / "logs" / "bad" / "w.9.pt.trace.json", '{"traceEvents": [')
    assert main(["report", str(tmp_path / "logs"), "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("#### 4 traces ####\nrun ")
    overview = out.split("\n\n")[0]
    assert overview.count("\n") == 5 and "ERROR" in overview and "span 2" in overview
    assert out.index("#### 4 traces") < out.index("== run1")


def test_overview_in_markdown_escapes_names():
    entries = [{"run": XSS, "worker": "w", "span": "1", "path": "p", "error": None, "verdict": {"bound": "cpu-only",
                "confidence": "high", "share": 0.9, "runner_up": None}, "devices": [], "steps": []},
               {"run": "r", "worker": "w", "span": None, "path": "/a/b.json", "error": {"message": "boom"}}]
    out = render_overview(entries, markdown=True)
    assert out.startswith("# 2 traces\n\n| run |") and XSS not in out and "| b |" in out and "ERROR" in out


def test_render_entry_error_in_markdown_is_escaped():
    out = render_entry({"run": "r", "worker": "w", "span": "1", "path": "p", "error": {"message": XSS}}, markdown=True)
    assert "**Error:**" in out and XSS not in out


def test_every_cause_list_follows_the_one_order():
    """Causes are listed in one order (analysis.gpu_idle.CAUSE_ORDER): the reports' idle-by-cause tables and the
    tab's legend and colours (frontend/model/colors.js GAP_CAUSES)."""
    assert sorted(CAUSE_ORDER) == sorted(CAUSE_NAMES)
    colors = (REPO / "frontend" / "model" / "colors.js").read_text()
    block = colors[colors.index("export const GAP_CAUSES"):]
    block = block[:block.index("]);")]
    assert tuple(re.findall(r"cause: '(\w+)'", block)) == CAUSE_ORDER
    entry = {"path": "t.json", "run": "r", "worker": "w", "span": None, "events": 9, "duration_us": 10.0,
             "verdict": {"bound": "host-bound", "confidence": "high", "share": 0.5, "evidence": "e", "suggestion": "s"},
             "devices": [{"device": 0, "idle_pct": 50.0, "window_us": 10.0, "idle_us": 7.0,
                          "gaps": {"count": 7, "by_cause_us": {c: 1.0 for c in reversed(CAUSE_NAMES)}},
                          "comm": {"kernels": 0}}],
             "steps": [], "launch": {"pairs": 0}, "memory": []}
    text = render_entry(entry)
    assert [c for c in re.findall(r"^(\w+)\s+1 µs", text, flags=re.M)] == list(CAUSE_ORDER)
