"""`make bench` rewrites BENCHMARKS.md from its stage reports (tests/bench/assemble.py): today's tables, with the dated
section of figures only a lent GPU machine can measure kept as it is, so a run of it never loses them; every other
section is the run's to rewrite (the history is in git)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent / "bench"
sys.path.insert(0, str(BENCH))

from assemble import KEPT_HEADING, sections, with_kept_sections  # noqa: E402


def test_sections_skip_headings_inside_code_blocks():
    text = "intro\n# A\nalpha\n```\n# not a heading\n```\n## sub\n# B\nbeta\n"
    assert [h for h, _ in sections(text)] == ["", "# A", "# B"]
    assert "# not a heading" in dict(sections(text))["# A"] and "## sub" in dict(sections(text))["# A"]


def test_the_gpu_section_is_kept_and_every_other_one_rewritten():
    previous = (f"# Benchmarks\nold header\n# Stage: stage1\nold figures\n# Parallel decode (issue 29)\nold log\n"
                f"{KEPT_HEADING} (dated)\n## 2026-12-04, H200\npairs\n")
    generated = "# Benchmarks\nnew header\n\n# Stage: stage1\nnew figures\n"
    out = with_kept_sections(generated, previous)
    assert "new figures" in out and "old figures" not in out and "old header" not in out
    assert "old log" not in out and "# Parallel decode" not in out  # a log of parts: in git, not here
    assert out.index("# Stage: stage1") < out.index(KEPT_HEADING) and "## 2026-12-04, H200\npairs" in out
    assert with_kept_sections(generated, generated) == generated


def test_the_command_keeps_the_gpu_section_of_the_file_it_replaces(tmp_path):
    stage = tmp_path / "stage1.md"
    stage.write_text("# Benchmarks: Kinetoscope vs torch-tb-profiler vs HTA\n\n| tool | s |\n|---|---|\n| kinetoscope | 1.0 |\n")
    old = tmp_path / "BENCHMARKS.md"
    old.write_text(f"# Benchmarks\n\n# Stage: stage1\nstale\n\n{KEPT_HEADING} (dated)\nmeasured there\n")
    done = subprocess.run([sys.executable, str(BENCH / "assemble.py"), str(stage), "--keep", str(old)],
                          capture_output=True, text=True, check=True)
    assert "| kinetoscope | 1.0 |" in done.stdout and "stale" not in done.stdout
    assert done.stdout.rstrip().endswith(f"{KEPT_HEADING} (dated)\nmeasured there")


def test_this_repos_file_is_todays_tables_and_the_gpu_section():
    """BENCHMARKS.md holds what one `make bench` run writes, and the GPU section: no log of parts."""
    text = (Path(__file__).resolve().parent.parent / "BENCHMARKS.md").read_text()
    headings = [h for h, _ in sections(text)]
    assert headings[0] == "# Benchmarks" and headings[-1].startswith(KEPT_HEADING)
    assert sum(h.startswith(KEPT_HEADING) for h in headings) == 1
    assert "## Part " not in text


def test_a_stage_measured_again_keeps_the_other_tools_runs(tmp_path):
    """`run_bench.py --reuse`: the tools not measured now keep their runs from the earlier results file, and the
    report says which were measured when."""
    from peers import RunResult
    from run_bench import _reused, render_markdown, summarize_trace
    from worker_common import read_through

    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": []}')
    read_through(trace)  # untimed page-cache warm-up: reads the file through, changes nothing
    earlier = tmp_path / "earlier.json"
    runs = [RunResult(tool, str(trace), "ok", time_s=t, wall_s=t, peak_rss_bytes=1 << 30).to_dict()
            for tool, t in (("kinetoscope", 30.0), ("hta", 500.0), ("kinetoscope", 5.0), ("hta", 520.0))]
    earlier.write_text(json.dumps({"created": "then", "traces": [{"path": str(trace), "runs": runs}]}))
    kept = _reused(json.loads(earlier.read_text()), trace, {"kinetoscope"})
    assert [(r.tool, r.time_s) for r in kept] == [("hta", 500.0), ("hta", 520.0)]
    now = [RunResult("kinetoscope", str(trace), "ok", time_s=4.0, wall_s=4.0, peak_rss_bytes=1 << 30)]
    merged = summarize_trace({"path": str(trace), "name": trace.name, "size_bytes": 19, "json_bytes": 19}, now + kept)
    assert merged["summary"]["kinetoscope"]["median_s"] == 4.0 and merged["summary"]["hta"]["median_s"] == 510.0
    assert merged["ratios"]["hta"]["vs_kinetoscope"] == 510.0 / 4.0
    with pytest.raises(SystemExit, match="no runs of"):
        _reused(json.loads(earlier.read_text()), tmp_path / "other.json", {"kinetoscope"})
    assert _reused(None, trace, {"kinetoscope"}) == []
    results = {"created": "now", "command": "make bench", "reused": {"from": str(earlier), "created": "then"},
               "machine": {"nproc": 2, "kernel": "k", "loadavg_at_start": [0.1, 0.2, 0.3]},
               "versions": {}, "config": {"runs": 1, "timeout_s": 900, "tools": ["kinetoscope"]}, "traces": [merged]}
    text = render_markdown(results)
    assert f"Measured now: kinetoscope; the other tools' runs are those of `{earlier}` (measured then)" in text
