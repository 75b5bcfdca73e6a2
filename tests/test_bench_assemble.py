"""`make bench` rewrites BENCHMARKS.md from its stage reports (tests/bench/assemble.py) and keeps the sections measured
by hand that it does not write itself, so a run of it never loses them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent / "bench"
sys.path.insert(0, str(BENCH))

from assemble import sections, with_kept_sections  # noqa: E402


def test_sections_skip_headings_inside_code_blocks():
    text = "intro\n# A\nalpha\n```\n# not a heading\n```\n## sub\n# B\nbeta\n"
    assert [h for h, _ in sections(text)] == ["", "# A", "# B"]
    assert "# not a heading" in dict(sections(text))["# A"] and "## sub" in dict(sections(text))["# A"]


def test_hand_written_sections_are_kept_and_generated_ones_replaced():
    previous = "# Benchmarks\nold header\n# Stage: stage1\nold figures\n# Parallel decode (issue 29)\nby hand\n## Part 5\nmore\n"
    generated = "# Benchmarks\nnew header\n\n# Stage: stage1\nnew figures\n"
    out = with_kept_sections(generated, previous)
    assert "new figures" in out and "old figures" not in out and "old header" not in out
    assert out.index("# Stage: stage1") < out.index("# Parallel decode (issue 29)")
    assert "by hand" in out and "## Part 5\nmore" in out
    assert with_kept_sections(generated, generated) == generated


def test_the_command_keeps_the_file_it_replaces(tmp_path):
    stage = tmp_path / "stage1.md"
    stage.write_text("# Benchmarks: Kinetoscope vs torch-tb-profiler vs HTA\n\n| tool | s |\n|---|---|\n| kinetoscope | 1.0 |\n")
    old = tmp_path / "BENCHMARKS.md"
    old.write_text("# Benchmarks\n\n# Stage: stage1\nstale\n\n# Layout (issue 24)\nmeasured by hand\n")
    done = subprocess.run([sys.executable, str(BENCH / "assemble.py"), str(stage), "--keep", str(old)],
                          capture_output=True, text=True, check=True)
    assert "| kinetoscope | 1.0 |" in done.stdout and "stale" not in done.stdout
    assert done.stdout.rstrip().endswith("# Layout (issue 24)\nmeasured by hand")


def test_every_hand_written_section_of_this_repo_would_survive():
    """Today's file: every top-level section stays when only the stage headings are regenerated."""
    text = (Path(__file__).resolve().parent.parent / "BENCHMARKS.md").read_text()
    generated = "".join(body for heading, body in sections(text) if heading.startswith(("# Benchmarks", "# Stage:")))
    out = with_kept_sections(generated, text)
    assert [h for h, _ in sections(out)] and {h for h, _ in sections(text)} == {h for h, _ in sections(out)}
