"""Tests of the sample tools: synthetic truth, formats, CLI, scale_trace, record_profile.

The truth of every synthetic trace is recomputed here by brute force from the rendered
JSON only (sweep-line coverage, linear scans), sharing no code with the generator.
"""
from __future__ import annotations

import gzip
import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
sys.path.insert(0, str(SAMPLES))

import scale_trace  # noqa: E402
import synth  # noqa: E402

SYNC_NAMES = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
CPU_CATS = {"cpu_op", "user_annotation", "operator"}
RUNTIME_CATS = {"cuda_runtime", "runtime"}
CAUSE_VERDICT = {"host": "host-bound", "launch": "launch-overhead-bound", "sync": "sync-bound",
                 "dataloader": "dataloader-bound", "unlinked": "host-bound"}
CASES = [(s, e, seed) for s in synth.SCENARIOS for e in synth.ERAS for seed in (0, 1)]
HAS_TORCH = importlib.util.find_spec("torch") is not None


# ----------------------------------------------------------------------------------------
# Independent brute-force reading of a trace
# ----------------------------------------------------------------------------------------


@dataclass
class Ev:
    """One complete event in absolute ns."""

    cat: str
    name: str
    pid: Any
    tid: Any
    start: int
    end: int
    args: dict[str, Any]


def clock(trace: dict[str, Any]) -> Callable[[Any], int]:
    """Maps a written ``ts``/``dur`` to ns (relative + base, or absolute integer µs)."""
    base = trace.get("baseTimeNanoseconds")
    if base is None:
        return lambda value: int(value) * 1000
    return lambda value: base + round(value * 1000)


def read_events(trace: dict[str, Any]) -> tuple[list[Ev], list[dict[str, Any]]]:
    """All ``X`` events as :class:`Ev` (CPU tids as ints) and the ``[memory]`` instants."""
    to_ns = clock(trace)
    complete, memory = [], []
    for event in trace["traceEvents"]:
        if event.get("name") == "[memory]":
            memory.append({**event, "ts_ns": to_ns(event["ts"])})
        elif event.get("ph") == "X":
            cat = event["cat"].lower()
            tid = int(event["tid"]) if cat in CPU_CATS | RUNTIME_CATS else event["tid"]
            start = to_ns(event["ts"])
            dur = event["dur"] * 1000 if "baseTimeNanoseconds" not in trace else round(event["dur"] * 1000)
            complete.append(Ev(cat, event["name"], event["pid"], tid, start, start + dur, event.get("args") or {}))
    return complete, memory


def sweep(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Covered stretches of a set of intervals, by a +1/-1 sweep over their boundaries."""
    points = sorted([(s, 1) for s, e in intervals if e > s] + [(e, -1) for s, e in intervals if e > s],
                    key=lambda p: (p[0], -p[1]))
    covered, depth, opened = [], 0, 0
    for at, delta in points:
        if depth == 0 and delta == 1:
            opened = at
        depth += delta
        if depth == 0:
            covered.append((opened, at))
    return [c for c in covered if c[1] > c[0]]


def covered_in(covered: list[tuple[int, int]], lo: int, hi: int) -> int:
    """Nanoseconds of ``[lo, hi]`` inside the covered stretches."""
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in covered)


def outermost(cpu: list[Ev], tid: int, at: int) -> str:
    """Outermost non-ProfilerStep op/annotation on ``tid`` running at ``at``."""
    running = [e for e in cpu if e.tid == tid and e.start <= at < e.end and not e.name.startswith("ProfilerStep#")]
    return min(running, key=lambda e: (e.start, -e.end)).name if running else "(no op)"


def gap_cause(gap: tuple[int, int], gpu: list[Ev], runtime: list[Ev], cpu: list[Ev]) -> dict[str, Any]:
    """Cause (and culprit) of one idle gap, straight from the definition."""
    start, end = gap
    row: dict[str, Any] = {"start_ns": start, "end_ns": end, "culprit": None}
    loader = sweep([(e.start, e.end) for e in cpu if e.name.startswith("enumerate(DataLoader)#") and "__next__" in e.name])
    if 2 * covered_in(loader, start, end) >= end - start:
        return {**row, "cause": "dataloader"}
    nxt = [g for g in gpu if g.start == end]
    launches = [r for r in runtime if r.args.get("correlation") == nxt[0].args.get("correlation")]
    if not launches:
        return {**row, "cause": "unlinked"}
    launch = launches[0]
    if any(r.tid == launch.tid and r.name in SYNC_NAMES and start < r.end < end for r in runtime):
        return {**row, "cause": "sync"}
    if launch.start > start:
        return {**row, "cause": "host", "culprit": outermost(cpu, launch.tid, (start + end) // 2)}
    return {**row, "cause": "launch"}


def brute_devices(gpu: list[Ev], runtime: list[Ev], cpu: list[Ev]) -> dict[str, Any]:
    """Window, busy, idle and gaps per device."""
    devices: dict[str, Any] = {}
    for device in sorted({g.args.get("device", g.pid) for g in gpu}):
        acts = [g for g in gpu if g.args.get("device", g.pid) == device]
        covered = sweep([(g.start, g.end) for g in acts])
        window = [covered[0][0], covered[-1][1]]
        busy = sum(e - s for s, e in covered)
        gaps = [gap_cause((a[1], b[0]), acts, runtime, cpu) for a, b in zip(covered, covered[1:])]
        devices[str(device)] = {"window_ns": window, "busy_ns": busy, "idle_ns": window[1] - window[0] - busy, "gaps": gaps}
    return devices


def brute_steps(cpu: list[Ev], busy: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Per-step DataLoader wait, GPU idle and stall flag."""
    loader = [(e.start, e.end) for e in cpu if e.name.startswith("enumerate(DataLoader)#") and "__next__" in e.name]
    rows = []
    for step in sorted((e for e in cpu if re.fullmatch(r"ProfilerStep#\d+", e.name)), key=lambda e: e.start):
        waits = sweep([(max(s, step.start), min(e, step.end)) for s, e in loader])
        wait = sum(e - s for s, e in waits)
        idle = wait - sum(covered_in(busy, s, e) for s, e in waits)
        length = step.end - step.start
        rows.append({"name": step.name, "start_ns": step.start, "end_ns": step.end, "dataloader_ns": wait,
                     "gpu_idle_ns": length - covered_in(busy, step.start, step.end),
                     "stalled": 20 * wait >= length and 2 * idle >= wait})
    return rows


def brute_launch(gpu: list[Ev], runtime: list[Ev]) -> dict[str, Any]:
    """Launch offsets, queueing, latency and short kernels."""
    offsets, queued, latency, short = [], [], [], 0
    lanes: dict[Any, list[Ev]] = defaultdict(list)
    for act in gpu:
        lanes[(act.args.get("device", act.pid), act.args.get("stream", act.tid))].append(act)
    for acts in lanes.values():
        acts.sort(key=lambda a: (a.start, a.end))
        for index, act in enumerate(acts):
            launch = next((r for r in runtime if r.args.get("correlation") == act.args.get("correlation")), None)
            if launch is None:
                continue
            prev = acts[index - 1].end if index else None
            offsets.append(act.start - launch.start)
            queued.append(max(0, prev - launch.end) if prev is not None else 0)
            latency.append(act.start - max(launch.end, prev or 0))
            short += act.cat == "kernel" and act.end - act.start < launch.end - launch.start
    return {"pairs": len(offsets), "short_kernels": short, "offset_ns": sorted(offsets),
            "queued_ns": sorted(queued), "latency_ns": sorted(latency)}


def brute_memory(memory: list[dict[str, Any]], cpu: list[Ev]) -> dict[str, Any]:
    """Peak allocated/reserved per device and the op running at the peak."""
    result = {}
    keys = sorted({(m["args"]["Device Type"], m["args"]["Device Id"]) for m in memory})
    for dtype, did in keys:
        rows = sorted((m for m in memory if (m["args"]["Device Type"], m["args"]["Device Id"]) == (dtype, did)),
                      key=lambda m: m["ts_ns"])
        total, curve = 0, []
        for row in rows:
            total += row["args"]["Bytes"]
            curve.append(row["args"].get("Total Allocated", total))
        peak = rows[curve.index(max(curve))]
        reserved = [r["args"]["Total Reserved"] for r in rows if "Total Reserved" in r["args"]]
        result["cpu" if dtype == 0 else f"cuda:{did}"] = {
            "peak_allocated_bytes": max(curve), "peak_reserved_bytes": max(reserved) if reserved else None,
            "peak_at_ns": peak["ts_ns"], "peak_op": outermost(cpu, int(peak["tid"]), peak["ts_ns"])}
    return result


def brute_verdict(devices: dict[str, Any], steps: list[dict[str, Any]]) -> str:
    """The verdict, from the brute-force devices and steps."""
    if not devices:
        return "cpu-only"
    if 2 * sum(s["stalled"] for s in steps) >= len(steps):
        return "dataloader-bound"
    device = max(devices.values(), key=lambda d: d["busy_ns"])
    if device["idle_ns"] < 0.2 * (device["window_ns"][1] - device["window_ns"][0]):
        return "compute-bound"
    by_cause: Counter[str] = Counter()
    for gap in device["gaps"]:
        by_cause[CAUSE_VERDICT[gap["cause"]]] += gap["end_ns"] - gap["start_ns"]
    return by_cause.most_common(1)[0][0]


def brute_truth(trace: dict[str, Any]) -> dict[str, Any]:
    """The whole truth, recomputed from the trace's events alone."""
    complete, memory = read_events(trace)
    gpu = [e for e in complete if e.cat in GPU_CATS]
    runtime = [e for e in complete if e.cat in RUNTIME_CATS]
    cpu = [e for e in complete if e.cat in CPU_CATS]
    devices = brute_devices(gpu, runtime, cpu)
    busiest = max(devices, key=lambda d: devices[d]["busy_ns"], default=None)
    busy = sweep([(g.start, g.end) for g in gpu if str(g.args.get("device", g.pid)) == busiest])
    steps = brute_steps(cpu, busy)
    return {"trace_start_ns": min(e.start for e in complete), "devices": devices, "steps": steps,
            "launch": brute_launch(gpu, runtime), "memory": brute_memory(memory, cpu),
            "verdict": brute_verdict(devices, steps)}


# ----------------------------------------------------------------------------------------
# Generator truth and format
# ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated() -> dict[tuple[str, str, int], tuple[dict[str, Any], dict[str, Any], str]]:
    """Every scenario x era x seed, as (trace parsed back from its text, truth, text)."""
    out = {}
    for scenario, era, seed in CASES:
        trace, truth = synth.make_trace(scenario, era=era, seed=seed)
        text = synth.dumps_trace(trace)
        out[(scenario, era, seed)] = (json.loads(text), truth, text)
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_truth_matches_brute_force(generated: dict, case: tuple[str, str, int]) -> None:
    trace, truth, _ = generated[case]
    expected = {k: v for k, v in truth.items() if k not in ("scenario", "era")}
    assert brute_truth(trace) == expected
    assert json.loads(json.dumps(truth)) == truth
    assert (truth["scenario"], truth["era"]) == case[:2]


@pytest.mark.parametrize("scenario", synth.SCENARIOS)
def test_planted_verdicts(generated: dict, scenario: str) -> None:
    verdict = {"dataloader": "dataloader-bound", "launch": "launch-overhead-bound", "sync": "sync-bound",
               "host": "host-bound", "compute": "compute-bound", "mixed": "host-bound", "cpu_only": "cpu-only",
               "xss": "compute-bound"}[scenario]
    for era in synth.ERAS:
        assert generated[(scenario, era, 0)][1]["verdict"] == verdict


def test_planted_causes_and_culprits(generated: dict) -> None:
    def causes(scenario: str) -> Counter[str]:
        return Counter(g["cause"] for g in generated[(scenario, "2024", 0)][1]["devices"]["0"]["gaps"])

    assert causes("dataloader") == {"dataloader": 5}
    assert causes("launch") == {"launch": 600, "dataloader": 5}
    assert causes("sync") == {"sync": 6}
    assert causes("mixed") == {"sync": 4, "dataloader": 1, "host": 2, "launch": 11, "unlinked": 1}
    host = generated[("host", "2024", 0)][1]["devices"]["0"]["gaps"]
    assert Counter(g["culprit"] for g in host) == {"aten::nonzero": 6, "## postprocess ##": 6}
    mixed = generated[("mixed", "2021", 0)][1]["devices"]["0"]["gaps"]
    assert sorted(g["culprit"] for g in mixed if g["cause"] == "host") == ["(no op)", "aten::nonzero"]
    xss = generated[("xss", "2024", 0)][1]
    assert {g["culprit"] for g in xss["devices"]["0"]["gaps"] if g["cause"] == "host"} == {synth.XSS_QUOTE}
    assert xss["memory"]["cuda:0"]["peak_op"] == synth.XSS_IMG


def test_launch_scenario_is_launch_bound(generated: dict) -> None:
    launch = generated[("launch", "2024", 0)][1]["launch"]
    assert launch["short_kernels"] == 600
    assert launch["pairs"] == 606
    assert sum(q > 0 for q in launch["queued_ns"]) <= 6


def test_steps_and_memory(generated: dict) -> None:
    loader = generated[("dataloader", "2024", 0)][1]
    assert all(s["stalled"] for s in loader["steps"]) and len(loader["steps"]) == 6
    assert [s["name"] for s in loader["steps"]] == [f"ProfilerStep#{n}" for n in range(2, 8)]
    mixed = generated[("mixed", "2024", 0)][1]
    assert [s["stalled"] for s in mixed["steps"]] == [False, True, False, False, False, False]
    assert mixed["memory"]["cpu"]["peak_op"] == synth.DATALOADER
    assert mixed["memory"]["cuda:0"]["peak_op"] == "aten::conv2d"
    old = generated[("mixed", "2021", 0)][1]["memory"]["cuda:0"]
    assert old["peak_reserved_bytes"] is None and old["peak_allocated_bytes"] > 64 << 20
    cpu_only = generated[("cpu_only", "2024", 0)][1]
    assert cpu_only["devices"] == {} and len(cpu_only["steps"]) == 2 and "cuda:0" not in cpu_only["memory"]


def test_mixed_plants(generated: dict) -> None:
    for era in synth.ERAS:
        trace = generated[("mixed", era, 0)][0]
        events = trace["traceEvents"]
        kernels = [e for e in events if e.get("cat") in ("kernel", "Kernel")]
        runtime = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "Runtime")}
        graph = [c for c, r in runtime.items() if r["name"] == "cudaGraphLaunch"]
        assert len(graph) == 1 and sum(k["args"]["correlation"] == graph[0] for k in kernels) == 3
        assert sum(k["args"]["correlation"] not in runtime for k in kernels) == 1
        assert any(k["name"].startswith(("ncclKernel", "ncclDevKernel")) for k in kernels)
        copies = {"gpu_memcpy", "gpu_memset"} if era == "2024" else {"Memcpy", "Memset"}
        assert copies <= {e.get("cat") for e in events}
        side = [(k["ts"], k["ts"] + k["dur"]) for k in kernels if k["args"]["stream"] == 20]
        main = [(k["ts"], k["ts"] + k["dur"]) for k in kernels if k["args"]["stream"] == 7]
        assert side and all(any(a < d and c < b for c, d in main) for a, b in side)
    marks = [e for e in generated[("mixed", "2024", 0)][0]["traceEvents"] if e.get("cat") == "gpu_user_annotation"]
    assert any(m["name"] == "## metrics ##" for m in marks)
    gaps = generated[("mixed", "2024", 0)][1]["devices"]["0"]["gaps"]
    base = generated[("mixed", "2024", 0)][0]["baseTimeNanoseconds"]
    spans = [(base + round(m["ts"] * 1000), base + round((m["ts"] + m["dur"]) * 1000)) for m in marks]
    assert any(s < g["start_ns"] and g["end_ns"] < e for s, e in spans for g in gaps)


def test_xss_names(generated: dict) -> None:
    events = generated[("xss", "2024", 0)][0]["traceEvents"]
    for cat in ("cpu_op", "kernel"):
        names = {e["name"] for e in events if e.get("cat") == cat}
        assert {synth.XSS_IMG, synth.XSS_QUOTE} <= names


def test_2024_format(generated: dict) -> None:
    for scenario in synth.SCENARIOS:
        trace, _, text = generated[(scenario, "2024", 0)]
        assert trace["baseTimeNanoseconds"] % (7_889_238 * 10**9) == 0
        assert list(trace)[-1] == "traceName" and isinstance(trace["traceEvents"], list)
        numbers = re.findall(r'"(?:ts|dur)": (-?[0-9.]+)', text)
        assert numbers and all(re.fullmatch(r"\d+\.\d{3}", n) for n in numbers)
        cats = {e.get("cat") for e in trace["traceEvents"]}
        assert cats <= {None, "cpu_op", "user_annotation", "cuda_runtime", "kernel", "gpu_memcpy", "gpu_memset",
                        "gpu_user_annotation", "cpu_instant_event", "ac2g", "Trace"}
        for event in trace["traceEvents"]:
            if event.get("cat") not in (None, "Trace"):
                assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
            if event.get("name") == "[memory]":
                assert {"Total Allocated", "Total Reserved", "Addr", "Bytes"} <= set(event["args"])


def test_2021_format(generated: dict) -> None:
    for scenario in synth.SCENARIOS:
        trace = generated[(scenario, "2021", 0)][0]
        assert "baseTimeNanoseconds" not in trace
        for event in trace["traceEvents"]:
            assert isinstance(event["ts"], int) and isinstance(event.get("dur", 0), int)
            cat = event.get("cat")
            assert cat in (None, "Operator", "Runtime", "Kernel", "Memcpy", "Memset", "async", "Trace")
            if cat in ("Kernel", "Memcpy", "Memset"):
                assert event["tid"] == f"stream {event['args']['stream']}"
            if cat in ("Operator", "Runtime"):
                assert isinstance(event["tid"], str)
            if cat == "async":
                assert event["name"] == "launch"
            if event.get("name") == "[memory]":
                assert cat is None and set(event["args"]) == {"Device Type", "Device Id", "Bytes"}


def test_flows_pair_up(generated: dict) -> None:
    for era in synth.ERAS:
        events = generated[("mixed", era, 0)][0]["traceEvents"]
        starts = {e["id"] for e in events if e["ph"] == "s"}
        gpu_ends = {e["id"] for e in events if e["ph"] == "f" and e["pid"] == 0}
        assert starts == gpu_ends


def test_deterministic() -> None:
    first = synth.dumps_trace(synth.make_trace("mixed", seed=3)[0])
    assert first == synth.dumps_trace(synth.make_trace("mixed", seed=3)[0])
    assert first != synth.dumps_trace(synth.make_trace("mixed", seed=4)[0])


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        synth.make_trace("nope")
    with pytest.raises(ValueError):
        synth.make_trace("mixed", era="2019")
    with pytest.raises(ValueError):
        synth.make_trace("mixed", steps=3)


# ----------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------


def run_synth(*args: str) -> subprocess.CompletedProcess[str]:
    """Runs the ``samples/synth`` package directory in a subprocess."""
    return subprocess.run([sys.executable, str(SAMPLES / "synth"), *args], capture_output=True, text=True, check=False)


def test_cli_writes_spans(tmp_path: Path) -> None:
    outdir, truth_file = tmp_path / "logs" / "run", tmp_path / "truth.json"
    done = run_synth(str(outdir), "--scenario", "mixed", "--spans", "2", "--gzip", "--worker", "w0",
                     "--truth", str(truth_file))
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in outdir.iterdir())
    assert len(files) == 2 and all(re.fullmatch(r"w0\.\d{19}\.pt\.trace\.json\.gz", f) for f in files)
    run = json.loads(truth_file.read_text())
    assert [s["file"] for s in run["spans"]] == files
    traces = [json.loads(gzip.decompress((outdir / f).read_bytes())) for f in files]
    steps = [[e["name"] for e in t["traceEvents"] if e["name"].startswith("ProfilerStep#")] for t in traces]
    assert steps == [[f"ProfilerStep#{n}" for n in range(2, 8)], [f"ProfilerStep#{n}" for n in range(10, 16)]]
    corr = [[e["args"]["correlation"] for e in t["traceEvents"] if e.get("cat") == "cuda_runtime"] for t in traces]
    assert max(corr[0]) < min(corr[1])
    for trace, span in zip(traces, run["spans"]):
        assert brute_truth(trace) == {k: v for k, v in span.items() if k not in ("scenario", "era", "file")}


def test_cli_plain_2021(tmp_path: Path) -> None:
    done = run_synth(str(tmp_path / "run"), "--scenario", "cpu_only", "--era", "2021")
    assert done.returncode == 0, done.stderr
    (name,) = [p.name for p in (tmp_path / "run").iterdir()]
    assert re.fullmatch(r"synth_\d+\.\d{19}\.pt\.trace\.json", name)
    assert isinstance(json.loads((tmp_path / "run" / name).read_text())["traceEvents"], list)


def test_cli_refuses_truth_inside_outdir(tmp_path: Path) -> None:
    done = run_synth(str(tmp_path), "--scenario", "compute", "--truth", str(tmp_path / "t.json"))
    assert done.returncode == 2 and not list(tmp_path.iterdir())


def test_committed_truth_matches_generator() -> None:
    truth_dir = SAMPLES / "truth"
    if not truth_dir.is_dir():
        pytest.skip("samples/truth not generated")
    for path in sorted(truth_dir.glob("*.json")):
        run = json.loads(path.read_text())
        logdir = SAMPLES / "logs" / "synthetic" / path.stem
        for span in run["spans"]:
            trace = json.loads(gzip.decompress((logdir / span["file"]).read_bytes()))
            assert brute_truth(trace) == {k: v for k, v in span.items() if k not in ("scenario", "era", "file")}


# ----------------------------------------------------------------------------------------
# scale_trace
# ----------------------------------------------------------------------------------------


def ids_of(events: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The linking ids whose uniqueness scale_trace must preserve."""
    return {
        "correlation": [e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "Runtime")],
        "external": [e["args"]["External id"] for e in events if e.get("cat") in ("cpu_op", "user_annotation", "Operator")],
        "flow": [(e["cat"], e["id"]) for e in events if e.get("ph") == "s"],
        "ev_idx": [e["args"]["Ev Idx"] for e in events if "Ev Idx" in (e.get("args") or {})],
        "steps": [e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")],
    }


@pytest.mark.parametrize("era", synth.ERAS)
def test_scale_trace_synthetic(tmp_path: Path, era: str) -> None:
    source = tmp_path / f"in_{era}.pt.trace.json"
    source.write_text(synth.dumps_trace(synth.make_trace("mixed", era=era)[0]))
    stats = scale_trace.scale_trace(source, tmp_path / "out.json.gz", 3, gzip=True)
    original = json.loads(source.read_text())
    scaled = json.loads(gzip.decompress((tmp_path / "out.json.gz").read_bytes()))
    events, n = scaled["traceEvents"], len(original["traceEvents"])
    assert stats["events_out"] == len(events) == 3 * n
    assert list(scaled) == list(original) and scaled["deviceProperties"] == original["deviceProperties"]
    for kind, values in ids_of(events).items():
        assert len(values) == len(set(values)) == 3 * len(ids_of(original["traceEvents"])[kind]), kind
    copies = [events[k * n:(k + 1) * n] for k in range(3)]
    assert copies[0] == original["traceEvents"]
    for earlier, later in zip(copies, copies[1:]):
        assert max(e["ts"] + e.get("dur", 0) for e in earlier) < min(e["ts"] for e in later)
    for k, copy in enumerate(copies):
        assert [e["ts"] for e in copy] == [e["ts"] + k * stats["shift_us"] for e in original["traceEvents"]]
    one = scale_trace.scale_trace(source, tmp_path / "one.json", 1)
    assert json.loads((tmp_path / "one.json").read_text()) == original and one["events_out"] == n


def test_scale_trace_keeps_number_text(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_text('{"baseTimeNanoseconds": 1790857026000000000, "traceEvents": ['
                      '{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#4", "pid": 1, "tid": 1, '
                      '"ts": 4405551510882.250, "dur": 10.000, "args": {"External id": 5, "Ev Idx": 0}}],'
                      ' "traceName": "x"}')
    scale_trace.scale_trace(source, tmp_path / "out.json", 2)
    text = (tmp_path / "out.json").read_text()
    assert re.findall(r'"ts":([0-9.]+)', text) == ["4405551510882.250", "4405551511892.250"]
    assert "ProfilerStep#5" in text and '"dur":10.000' in text and '"traceName":"x"' in text.replace(" ", "")


REAL_TRACE = REPO.parent / "shared" / "traces" / "torch213_cpu" / "nw2_gzip"


@pytest.mark.skipif(not REAL_TRACE.is_dir(), reason="shared real traces not available")
def test_scale_trace_real(tmp_path: Path) -> None:
    source = sorted(REAL_TRACE.glob("*.pt.trace.json.gz"))[0]
    stats = scale_trace.scale_trace(source, tmp_path / "out.json", 2)
    original = json.loads(gzip.decompress(source.read_bytes()))
    scaled = json.loads((tmp_path / "out.json").read_text())
    assert len(scaled["traceEvents"]) == 2 * len(original["traceEvents"]) == stats["events_out"]
    assert list(scaled) == list(original)
    steps = ids_of(scaled["traceEvents"])["steps"]
    assert len(steps) == len(set(steps)) == 4


# ----------------------------------------------------------------------------------------
# record_profile
# ----------------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_record_profile(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SAMPLES / "record_profile.py"), str(tmp_path), "--steps", "8",
                           "--item-delay-ms", "1", "--gzip", "--device", "cpu"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    files = sorted(tmp_path.glob("*.pt.trace.json.gz"))
    assert len(files) == 2 and all(re.fullmatch(r".+\.\d{19}\.pt\.trace\.json\.gz", f.name) for f in files)
    traces = [json.loads(gzip.decompress(f.read_bytes())) for f in files]
    names = [{e.get("name") for e in t["traceEvents"]} for t in traces]
    assert {"ProfilerStep#2", "ProfilerStep#3", synth.DATALOADER, "[memory]"} <= names[0]
    assert {"ProfilerStep#6", "ProfilerStep#7"} <= names[1]
    assert all("baseTimeNanoseconds" in t for t in traces)
