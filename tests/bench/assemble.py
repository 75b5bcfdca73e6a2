"""Join the stage reports of `make bench` and the browser frame-time line into BENCHMARKS.md (stdout)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

KEPT_HEADING = "# Measured on a lent GPU machine"

HEADER = """# Benchmarks

Today's figures, all written by one `make bench` run (the commands below; nothing here is edited by hand except the
last section), on this project's machine kind: 2 cores, 24 GiB, no GPU. Each section names the exact command, file
and versions behind its figures. Earlier figures, and how each one moved, are in git: the log of 25 parts this file
used to be is `git show 6842b34:BENCHMARKS.md`.

**Method.** Every figure is a median of the runs named beside it, min-max after it, measured in this run. A user times
the whole command, so the first table is the whole `kinetoscope report` process (interpreter start, imports, decode,
analyses, JSON, exit) next to the in-process figure the stage tables give (`load_trace` + `analyze` inside a warm
interpreter). Peers (torch-tb-profiler, HTA) and Kinetoscope run in turn, tool by tool, in fresh processes, each after
the trace was read through once untimed, so all start from the page cache; ratios are of medians from the same run.
Peak memory is the whole process tree's (sampled RSS and the kernel's high-water mark). Traces are made by
`tests/bench/make_traces.py` (compact `samples/scale_trace.py` copies) and, for the issue's indented files, by
`../shared/tools/scale_trace.py` (`tests/bench/whole_command.py`). Figures only a lent GPU machine can give are in
the dated last section, which `make bench` keeps as it is.

Targets (from the issues): the indented 1.33 GB trace reported cold in under 1.5 s as a whole process, peak RSS at most
600 MiB, its gzip within 1.3x; a second `report` of a 0.45 GB trace under 0.3 s; cold at least 10x faster than HTA
side by side; decode at least 200 MB/s of uncompressed JSON on one core; `lanes` p99 under 50 ms with bodies under
1 MB; `summary` of a cached span under 20 ms; frame time while panning and zooming under 16 ms median; the `ranks`
route of a 64-rank job under 100 ms once loaded; the `tables` route under 100 ms p99 for any window and `search`
under 50 ms p99 on the 10x trace; the tab's first lanes within 1.3x of the CLI's cold report.
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("stages", nargs="+", type=Path)
    parser.add_argument("--frames", type=Path, help="the summary line printed by tests/browser/bench_frames.py")
    parser.add_argument("--decode", type=Path, help="the markdown printed by tests/bench/decode_rate.py")
    parser.add_argument("--loadtest", type=Path, help="the markdown written by tests/bench/loadtest.py (make loadtest)")
    parser.add_argument("--ranks", type=Path, help="the markdown written by tests/bench/ranks_bench.py")
    parser.add_argument("--first-lanes", type=Path, help="the markdown written by tests/bench/first_lanes.py")
    parser.add_argument("--section", action="append", default=[], metavar="TITLE=FILE",
                        help="a further section: its heading and the markdown file holding its body (repeatable)")
    parser.add_argument("--tables", type=Path, help="the markdown written by tests/bench/tables_bench.py")
    parser.add_argument("--keep", type=Path, help="the BENCHMARKS.md this run replaces: its dated section of figures "
                        f"measured on a lent GPU machine (heading `{KEPT_HEADING}...`) is kept, after the generated ones")
    args = parser.parse_args()
    parts = [HEADER]
    if args.decode and args.decode.is_file():
        parts.append(args.decode.read_text().strip() + "\n")
    for stage in args.stages:
        text = stage.read_text()
        parts.append(text.replace("# Benchmarks: Kinetoscope vs torch-tb-profiler vs HTA", "# Stage: " + stage.stem, 1))
    if args.frames and args.frames.is_file():
        parts.append("# Browser frame time (lanes view, headless Chromium)\n\n"
                     "Command: `.venv/bin/python tests/browser/bench_frames.py --runs 3` (the 10x trace served by the real "
                     "`tensorboard`; 40 wheel zoom-ins, a 60-step drag pan, 60 W/S/A/D presses and 40 zoom-outs per pass; "
                     "frame work includes canvas rasterisation).\n\n" + args.frames.read_text().strip() + "\n")
    if args.loadtest and args.loadtest.is_file():
        parts.append(args.loadtest.read_text().strip() + "\n")
    if args.ranks and args.ranks.is_file():
        parts.append(args.ranks.read_text().strip() + "\n")
    if args.first_lanes and args.first_lanes.is_file():
        parts.append("# Time to first lanes: the tab against the CLI's cold report\n\n" + args.first_lanes.read_text().strip() + "\n")
    for section in args.section:
        title, _, name = section.partition("=")
        if Path(name).is_file():
            parts.append(f"# {title}\n\n" + Path(name).read_text().strip() + "\n")
    if args.tables and args.tables.is_file():
        parts.append(args.tables.read_text().strip() + "\n")
    text = "\n\n".join(parts)
    if args.keep and args.keep.is_file():
        text = with_kept_sections(text, args.keep.read_text())
    sys.stdout.write(text)
    return 0


def sections(markdown: str) -> list[tuple[str, str]]:
    """The top-level sections of a markdown text, as (heading line, whole text), in order; a `#` line inside a fenced
    code block is not a heading. Text before the first heading is a section with the heading ""."""
    out: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in markdown.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("# "):
            out.append((line.strip(), []))
        out[-1][1].append(line)
    return [(heading, "".join(lines)) for heading, lines in out if heading or "".join(lines).strip()]


def with_kept_sections(generated: str, previous: str) -> str:
    """`generated`, then the sections of `previous` that only a lent GPU machine can measure (heading
    `KEPT_HEADING`...), which this run cannot write; every other section of `previous` is this run's to rewrite."""
    written = {heading for heading, _ in sections(generated)}
    kept = [body.strip() + "\n" for heading, body in sections(previous)
            if heading.startswith(KEPT_HEADING) and heading not in written]
    return "\n\n".join([generated.rstrip() + "\n", *kept]) if kept else generated


if __name__ == "__main__":
    sys.exit(main())
