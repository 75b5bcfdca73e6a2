"""Time to the first lanes in the tab against the CLI's cold report on the same file (issue 18).

For each trace, per run (fresh processes every time, a fresh model cache for every cold figure):
- CLI cold: `kinetoscope report FILE --no-cache --format json`, wall time of the whole process.
- Tab cold: a real `tensorboard` on a logdir holding only that file, a fresh cache; Chromium opens
  `/#kinetoscope` and the time runs from the navigation to the lanes drawn (TensorBoard's own page
  included). The server is started beforehand and not counted.
- Tab cold, gaps drawn: when the lanes on screen carry the analyses' gap and step overlays (the first lanes
  are drawn as soon as the server has the lane index, the overlays once it has analysed the trace).
- Tab warm: a second page on the same server (the trace in memory).
- Tab, a span picked later: the logdir holds a copy of the file as a second run; once the first span's lanes are
  analysed the script picks that run, and the time runs from the pick to its lanes drawn (TensorBoard may have
  started decoding it meanwhile: what a user who looks at the first span, then picks another, sees).
- Tab, a span picked while the first loads: the same logdir on a fresh server and cache; the script picks the second
  run as soon as the tab shows, while the preloaded first span still decodes or analyses, and the time runs from the
  pick to the picked span's lanes drawn (the span in view loads first: `server/foreground.py`).
- Tab cold without the preload (KINETOSCOPE_PRELOAD_FIRST=0): the decode starts only when the tab asks.
  With the preload (the default) TensorBoard starts decoding the default span while it starts itself, as
  it would for a user who starts TensorBoard and then opens the page; both are shown.
Prints a markdown table (and writes it with --out); ratio = tab cold / CLI cold (the target: at most 1.3).

Usage: .venv/bin/python tests/bench/first_lanes.py TRACE... [--runs 3] [--out .bench/first_lanes.md]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "browser"))
from layout import link_trace  # noqa: E402
from tbserver import TensorBoard, ensure_node_modules, run_node  # noqa: E402
from worker_common import write_section  # noqa: E402

KINETOSCOPE = REPO / ".venv" / "bin" / "kinetoscope"


def cli_cold(trace: Path) -> float:
    started = time.perf_counter()
    subprocess.run([str(KINETOSCOPE), "report", str(trace), "--no-cache", "--format", "json"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def tab(trace: Path, scratch: Path, preload: bool = True) -> tuple[float, float, float, list, float, float]:
    """(page s, first lanes cold s, first lanes warm s, progress seen, lanes with overlays cold s, first lanes of a
    span picked later s, from the pick) on a fresh server and cache."""
    logdir = scratch / "logdir" / "a_first"
    logdir.mkdir(parents=True)
    link_trace(trace, logdir / trace.name)
    later = scratch / "logdir" / "b_later"
    later.mkdir()
    shutil.copyfile(trace, later / trace.name)  # a file of its own: no disk-cache entry shared with the first
    env = {"KINETOSCOPE_CACHE_DIR": str(scratch / "cache"), "KINETOSCOPE_PRELOAD_FIRST": "1" if preload else "0"}
    with TensorBoard(logdir.parent, env=env) as server:
        cold = run_node("bench_first_lanes.mjs", server.base, "b_later", timeout_s=900)
        warm = run_node("bench_first_lanes.mjs", server.base, timeout_s=900)
    return (cold["pageMs"] / 1e3, cold["lanesMs"] / 1e3, warm["lanesMs"] / 1e3, cold["progress"],
            cold.get("analysedMs", cold["lanesMs"]) / 1e3, cold["pickLanesMs"] / 1e3)


def picked_early(trace: Path, scratch: Path) -> tuple[float, str]:
    """(first lanes of the second run picked as soon as the tab shows, from the pick, in s; the state of the first
    span then) on a fresh server and cache, the first span preloaded."""
    for run in ("a_first", "b_later"):
        (scratch / "logdir" / run).mkdir(parents=True)
        shutil.copyfile(trace, scratch / "logdir" / run / trace.name)
    env = {"KINETOSCOPE_CACHE_DIR": str(scratch / "cache"), "KINETOSCOPE_PRELOAD_FIRST": "1"}
    with TensorBoard(scratch / "logdir", env=env) as server:
        out = run_node("bench_first_lanes.mjs", server.base, "b_later", "early", timeout_s=900)
    return out["pickLanesMs"] / 1e3, out.get("statusAtPick", "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    ensure_node_modules()
    lines = ["| trace | size | CLI cold | tab: TensorBoard page | tab: first lanes cold | ratio to CLI cold | tab: first lanes warm "
             "| tab cold, no preload | its ratio | tab cold: gaps drawn | no preload: gaps drawn "
             "| picked later: first lanes from the pick | its ratio | picked while the first loads: from the pick | its ratio |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for trace in args.traces:
        clis, pages, colds, warms, lazies, overlays, lazy_overlays, picks, earlies = [], [], [], [], [], [], [], [], []
        for _ in range(args.runs):
            clis.append(cli_cold(trace))
            with tempfile.TemporaryDirectory(prefix="kinetoscope-first-lanes-") as scratch:
                page, cold, warm, progress, overlay, pick = tab(trace, Path(scratch))
            with tempfile.TemporaryDirectory(prefix="kinetoscope-first-lanes-") as scratch:
                _, lazy, _, lazy_progress, lazy_overlay, _ = tab(trace, Path(scratch), preload=False)
            with tempfile.TemporaryDirectory(prefix="kinetoscope-first-lanes-") as scratch:
                early, at_pick = picked_early(trace, Path(scratch))
            earlies.append(early)
            picks.append(pick)
            pages.append(page)
            colds.append(cold)
            warms.append(warm)
            lazies.append(lazy)
            overlays.append(overlay)
            lazy_overlays.append(lazy_overlay)
            print(f"{trace.name}: cli {clis[-1]:.2f} s, page {page:.2f} s, lanes cold {cold:.2f} s, warm {warm:.2f} s, "
                  f"no preload {lazy:.2f} s; picked later {pick:.2f} s from the pick; picked while the first loads "
                  f"{early:.2f} s (the first then: {at_pick!r}); gaps drawn {overlay:.2f} s / {lazy_overlay:.2f} s; "
                  f"progress {progress} / {lazy_progress}", file=sys.stderr)
        cli, cold, lazy = statistics.median(clis), statistics.median(colds), statistics.median(lazies)
        lines.append(f"| {trace.name} | {os.path.getsize(trace) / 1e6:.1f} MB | {cli:.2f} s | {statistics.median(pages):.2f} s | "
                     f"{cold:.2f} s | {cold / cli:.2f}x | {statistics.median(warms):.2f} s | {lazy:.2f} s | {lazy / cli:.2f}x | "
                     f"{statistics.median(overlays):.2f} s | {statistics.median(lazy_overlays):.2f} s | "
                     f"{statistics.median(picks):.2f} s | {statistics.median(picks) / cli:.2f}x | "
                     f"{statistics.median(earlies):.2f} s | {statistics.median(earlies) / cli:.2f}x |")
    table = "\n".join(lines) + f"\n\nMedians of {args.runs} runs, fresh processes and caches; command: `.venv/bin/python " \
                               f"tests/bench/first_lanes.py {' '.join(map(str, args.traces))} --runs {args.runs}`\n"
    return write_section(args.out, table)


if __name__ == "__main__":
    sys.exit(main())
