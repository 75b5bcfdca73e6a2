"""The readable renderers: span labels, the overview table, markdown sections and escaping."""
from __future__ import annotations

import json
import random
import re
import shutil
import subprocess

import pytest
from conftest import REPO, kernel, launch, op, trace_doc, write_trace
from kinetoscope.analysis.idle.gpu_idle import CAUSE_NAMES, CAUSE_ORDER
from kinetoscope.cli.main import main
from kinetoscope.formats.report import judged_idle_pct, render_entry, render_overview, span_label
from kinetoscope.formats.units import count, human_bytes, human_us, md, percent

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


def _tab_formats(values: dict) -> dict:
    """The tab's formatters (frontend/model/format.js) run by node on `values` per formatter name."""
    script = ("import(process.argv[1]).then((m) => { const v = JSON.parse(process.argv[2]); "
              "console.log(JSON.stringify(Object.fromEntries(Object.entries(v).map(([k, xs]) => [k, xs.map((x) => m[k](x))])))); });")
    out = subprocess.run(["node", "-e", script, str(REPO / "frontend" / "model" / "format.js"), json.dumps(values)],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_cli_and_the_tab_write_numbers_the_same_way():
    """One formatter: durations, bytes, counts and shares read the same in the CLI/markdown (formats/units.py)
    and the tab (frontend/model/format.js): commas in counts, U+2212 for minus, 3 significant digits, ties up."""
    rng = random.Random(30)
    durations = [0, 0.85, 12.345, 12.25, 999, 999.5, 4560, 1.2e6, -2500, 1.234e9, 1e-4, 0.0005, 44666.0]
    durations += [rng.choice((-1, 1)) * 10 ** rng.uniform(-3, 10) for _ in range(300)]
    sizes = [0, 512, 1536, 2791636480, -1048576, 1023.5 * 1024] + [rng.uniform(-1, 1) * 10 ** rng.uniform(0, 15) for _ in range(100)]
    counts = [0, 999, 1000, 44666, 8921, 1806, -1806, 1234567] + [rng.randrange(-10 ** 9, 10 ** 9) for _ in range(100)]
    shares = [0, 0.314, 1, 0.3575, 0.6425, -0.05, -0.0004] + [rng.uniform(-1, 1) for _ in range(100)]
    tab = _tab_formats({"formatDuration": durations, "formatBytes": sizes, "formatCount": counts, "formatShare": shares})
    assert tab["formatDuration"] == [human_us(v) for v in durations]
    assert tab["formatBytes"] == [human_bytes(v) for v in sizes]
    assert tab["formatCount"] == [count(v) for v in counts]
    assert tab["formatShare"] == [percent(v) for v in shares]
    assert (human_us(-2500), count(44666), human_bytes(-1048576)) == ("\u22122.5 ms", "44,666", "\u22121 MiB")


def test_overview_idle_is_the_judged_time_idle():
    """The overview's GPU idle is the share of the time the verdict judged (its evidence's figure), not of the device
    window: a trace whose step starts long before its first kernel (the host preprocessing) is mostly idle."""
    judged = {"device": 0, "judged_us": 400.0, "by_category_us": {
        "compute": 160.0, "exposed_comm": 20.0, "host": 200.0, "sync": 10.0, "launch": 6.0, "dataloader": 4.0,
        "unlinked": 0.0, "comm": 0.0, "graph": 0.0}}
    base = {"run": "r", "worker": "w", "span": "1", "path": "p", "error": None, "steps": [],
            "verdict": {"bound": "host-bound", "confidence": "high", "share": 0.5, "runner_up": None},
            "devices": [{"device": 0, "idle_pct": 1.0, "window_us": 160.0, "idle_us": 1.6}]}
    assert judged_idle_pct({**base, "breakdown": judged}) == pytest.approx(55.0)
    assert judged_idle_pct({**base, "breakdown": None}) == 1.0  # no breakdown: the device window's share
    assert judged_idle_pct({**base, "breakdown": None, "devices": []}) is None
    rows = render_overview([{**base, "breakdown": judged}, {**base, "span": "2", "devices": []}]).splitlines()
    assert "55.0%" in rows[2] and "1.0%" not in rows[2] and rows[3].split()[7] == "-"


def test_overview_median_step_is_the_median():
    """An even number of steps: the overview's median step is the mean of the two middle ones, as the ranks table's
    and the savings' medians are (it once took the upper one: 6.59 ms beside the ranks table's 5.91 ms)."""
    base = {"run": "r", "worker": "w", "span": "1", "path": "p", "error": None, "breakdown": None, "devices": [],
            "verdict": {"bound": "cpu-only", "confidence": "high", "share": 1.0, "runner_up": None},
            "steps": [{"dur_us": us} for us in (4000.0, 1000.0, 3000.0, 2000.0)]}
    row = render_overview([base]).splitlines()[2]
    assert row.split()[-2:] == ["2.5", "ms"], row
