"""Browser tests: the Kinetoscope tab in a real headless Chromium against the real `tensorboard` CLI.

Three TensorBoard servers (module-scoped): the sample logdirs (`samples/logs`, cold: an empty cache
and nothing loaded, so pages open on traces still loading), the shared real traces (`../shared/traces`,
read in place) and a temporary logdir with a trace whose names are markup (`<img src=x
onerror=alert(1)>`) and a trace that cannot load; plus one per live test, on a logdir it changes while
the page is open. Every check asserts a clean console and no refused request (no 4xx, not even while
a trace loads). Each check is a subcommand of
`tests/browser/checks.mjs` (Playwright's `playwright-core` driving Debian's /usr/bin/chromium) that
prints JSON. Screenshots go to `test-artifacts/` (git-ignored). Skipped, with the reason, when node,
npm, chromium or tensorboard is missing.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "browser"))
from tbserver import REPO, TensorBoard, ensure_node_modules, run_node, tensorboard_bin  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TRACES = (REPO.parent / "shared" / "traces").resolve()
SAMPLES = REPO / "samples" / "logs"
ARTIFACTS = REPO / "test-artifacts"
XSS = "<img src=x onerror=alert(1)>"

_missing = [what for what, ok in (("node", shutil.which("node")), ("npm", shutil.which("npm")),
                                  (CHROMIUM, Path(CHROMIUM).exists()), ("tensorboard", tensorboard_bin()))
            if not ok]
pytestmark = pytest.mark.skipif(bool(_missing), reason=f"browser tests need {', '.join(map(str, _missing))}")


def _server(logdir: Path, warm_runs: Optional[tuple[str, ...]] = (), cache_dir: Optional[Path] = None):
    """A TensorBoard on `logdir`; the spans of `warm_runs` (all for `()`, none for None) loaded first."""
    ensure_node_modules()
    server = TensorBoard(logdir, env={"KINETOSCOPE_CACHE_DIR": str(cache_dir)} if cache_dir else None)
    try:
        if warm_runs is not None:
            server.warm([s["id"] for s in server.spans() if not warm_runs or s["run"] in warm_runs])  # quicker pages
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def traces_tb():
    if not TRACES.is_dir():
        pytest.skip(f"{TRACES} is missing")
    yield from _server(TRACES, ("resnet50_num_workers_0", "resnet50_num_workers_4"))


@pytest.fixture(scope="module")
def samples_tb(tmp_path_factory):
    if not SAMPLES.is_dir():
        pytest.skip(f"{SAMPLES} is missing")
    yield from _server(SAMPLES, None, cache_dir=tmp_path_factory.mktemp("cache"))


def _xss_trace() -> dict:
    """Two steps; markup as thread, op and kernel names, a host gap it causes and the peak memory op.

        CPU  [ProfilerStep#1 ...........................)[ProfilerStep#2 ...
             [DataLoader wait)[<img> op .......)[<img> op)[aten::add]
                                 [cudaLaunchKernel)           [cudaLaunchKernel)
        GPU                        [<img> kernel)   gap         [add kernel)
    """
    pid, tid = 100, 100
    ev: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": XSS}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
    ]
    cpu = {"pid": pid, "tid": tid}
    gpu = {"pid": 0, "tid": 7}
    for k in range(2):
        t, corr, ext = 1000.0 + 10000.0 * k, 500 + 10 * k, 50 + 10 * k
        kernel_args = {"device": 0, "stream": 7, "context": 1}
        ev += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k + 1}", "ts": t, "dur": 9000.0, **cpu, "args": {"External id": ext}},
            {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
             "ts": t + 10, "dur": 4000.0, **cpu, "args": {"External id": ext + 1}},
            {"ph": "X", "cat": "cpu_op", "name": XSS, "ts": t + 4100, "dur": 3000.0, **cpu, "args": {"External id": ext + 2}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 4200, "dur": 10.0, **cpu,
             "args": {"External id": ext + 2, "correlation": corr}},
            {"ph": "X", "cat": "kernel", "name": XSS, "ts": t + 4300, "dur": 2000.0, **gpu,
             "args": {"External id": ext + 2, "correlation": corr, **kernel_args}},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "ts": t + 4200, **cpu},
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": corr, "ts": t + 4300, "bp": "e", **gpu},
            {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "ts": t + 4150, **cpu,
             "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096 + k, "Bytes": 1 << 20,
                      "Total Allocated": (1 << 20) * (k + 1), "Total Reserved": 2 << 20}},
            {"ph": "X", "cat": "cpu_op", "name": XSS, "ts": t + 7200, "dur": 1500.0, **cpu, "args": {"External id": ext + 3}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": t + 8750, "dur": 200.0, **cpu, "args": {"External id": ext + 4}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 8800, "dur": 10.0, **cpu,
             "args": {"External id": ext + 4, "correlation": corr + 1}},
            {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "ts": t + 8850, "dur": 100.0, **gpu,
             "args": {"External id": ext + 4, "correlation": corr + 1, **kernel_args}},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr + 1, "ts": t + 8800, **cpu},
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": corr + 1, "ts": t + 8850, "bp": "e", **gpu},
        ]
    return {"schemaVersion": 1, "baseTimeNanoseconds": 1_700_000_000_000_000_000, "traceEvents": ev}


@pytest.fixture(scope="module")
def xss_tb(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("logdir")
    (logdir / "xss").mkdir()
    (logdir / "xss" / "worker0.1700000000000.pt.trace.json").write_text(json.dumps(_xss_trace()))
    (logdir / "broken").mkdir()
    with gzip.open(logdir / "broken" / "worker0.1700000000001.pt.trace.json.gz", "wt") as f:
        f.write('{"traceEvents": [{"ph": "X", "name": "cut here')  # truncated mid-string
    yield from _server(logdir)


def _check(name: str, server: TensorBoard, *args: object) -> dict:
    return run_node("checks.mjs", name, server.base, str(ARTIFACTS), *map(str, args))


def test_tab_loads_and_draws_cpu_and_gpu_lanes(traces_tb):
    r = _check("smoke", traces_tb, "resnet50_num_workers_0")
    assert r["errors"] == [] and r["httpErrors"] == []
    assert "cpu" in r["kinds"] and "gpu" in r["kinds"]
    assert r["cpuPixels"] > 1000 and r["gpuPixels"] > 1000
    assert r["verdict"] == "dataloader-bound"
    assert {"Memory", "Steps", "GPU idle gaps", "Launch offsets"} <= set(r["sections"])


@pytest.mark.parametrize("run", ["synthetic/mixed", "synthetic/xss"])
def test_first_load_of_a_span_has_no_console_errors_no_4xx_and_no_injected_markup(samples_tb, run):
    assert {s["state"] for s in samples_tb.spans() if s["run"] == run} == {"unloaded"}  # a cold first load
    r = _check("smoke", samples_tb, run)
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["dialogs"] == [] and r["imgs"] == 0
    assert r["cpuPixels"] > 100 and r["gpuPixels"] > 100


@pytest.mark.parametrize("run, stalled", [("resnet50_num_workers_0", True), ("resnet50_num_workers_4", False)])
def test_stalled_steps_flagged_in_table_and_step_bar(traces_tb, run, stalled):
    r = _check("stalls", traces_tb, run)
    assert r["errors"] == [] and r["httpErrors"] == []
    assert len(r["spans"]) == 2
    for span in r["spans"]:
        assert span["stalledRows"], span
        assert span["stalledRows"] == [stalled] * len(span["stalledRows"]), span
        assert span["stepBarRed"] == [stalled] * len(span["stepBarRed"]), span


def test_wheel_keys_drag_double_click_and_collapse(traces_tb):
    r = _check("interact", traces_tb, "resnet50_num_workers_0")
    assert r["errors"] == [] and r["httpErrors"] == []
    span = lambda w: w[1] - w[0]  # noqa: E731
    assert r["afterWheel"] and span(r["afterWheel"]) < 0.5 * r["duration"]
    assert span(r["afterW"]) < span(r["afterWheel"])
    assert r["afterA"][0] < r["afterW"][0] and span(r["afterA"]) == pytest.approx(span(r["afterW"]))
    assert r["afterDrag"][0] > r["afterA"][0]
    assert r["afterReset"] is None  # the whole trace: no window in the link
    assert r["afterDbl"] and span(r["afterDbl"]) < 0.3 * r["duration"]
    full, collapsed, expanded = r["laneH"]
    assert collapsed == r["rowH"] + r["lanePad"] < full == expanded


def test_clicking_a_gap_row_zooms_to_the_gap(traces_tb):
    r = _check("gaprow", traces_tb, "resnet50_num_workers_0")
    assert r["errors"] == [] and r["httpErrors"] == []
    start, dur, _ = r["gap"]
    t0, t1 = r["window"]
    assert t0 <= start and t1 >= start + dur
    assert t1 - t0 == pytest.approx(2 * dur, rel=0.01)
    assert r["active"] == 1


def test_select_kernel_export_and_shared_link_restores_the_view(traces_tb):
    # the run (two spans) verdict answered 2 s late: the page waited for it, so the click's point was read after it
    r = _check("select", traces_tb, "resnet50_num_workers_0", 100000, 100400, 2000)
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["clicked"] and r["moved"] == 0
    assert r["offset"] and r["offset"].startswith("Launch offset")
    assert {"correlation", "grid", "block"} <= set(r["args"])  # the kernel's args, re-read from the gzip file
    assert r["state"]["sel"] is not None and r["state"]["t"] == [100000, 100400]
    exported = r["exported"]
    assert exported["traceName"].startswith("kinetoscope-resnet50_num_workers_0") and exported["completeEvents"] > 10
    assert exported["mdName"].endswith(".md") and exported["mdHead"].startswith("# Kinetoscope") and exported["mdHasVerdict"]
    assert r["restored"]["name"] == r["name"]
    assert r["restored"]["state"] == r["state"]


def test_markup_in_trace_names_is_text_and_broken_trace_is_a_message(xss_tb):
    r = _check("xss", xss_tb)
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["dialogs"] == [] and r["imgs"] == 0
    assert r["textHits"] >= 2  # e.g. the gap culprit and the memory peak op, as text
    assert r["tooltipHasName"]
    assert "failed to load" in r["brokenMessage"]
    assert r["brokenErrors"] == []  # the failure is a `status` state: no 422 answer in the console
    assert r["recovered"]


def test_what_would_it_save_and_the_critical_path(samples_tb):
    # synthetic/dataloader: 10 ms DataLoader waits in every step: the top saving removes them
    r = _check("whatif", samples_tb, "synthetic/dataloader")
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["underVerdict"] and r["underVerdict"][0].startswith("no DataLoader wait:")
    assert r["rows"] >= 2 and r["edits"] == "dataloader=0"
    assert r["bars"] == 6 and "predicted" in r["summaryLine"]
    assert r["pathStatus"] == 200
    assert r["lanesChanged"] > 1000, r["lanesChanged"]  # drawn on the lanes too, not only as the strip
    # a CPU event picked on the lanes offers its own host edits, and one click replays the first
    assert r["selectedEdits"] and r["selectedEdits"][0].startswith("host:") and r["selectedEdits"][0].endswith("*0")
    assert r["boxAfter"] == r["selectedEdits"][0] and r["selectedAnswer"], r
    # an edit the route would refuse (tests/test_edit_grammar.py: one grammar) is refused before any request
    assert "'lots' is not a number" in (r["invalidMessage"] or "") and r["invalidRequests"] == 0, r


def test_run_verdict_with_confidence_shows_above_the_span_verdict_of_a_multi_span_run(samples_tb):
    # synthetic/mixed: 2 spans, communication kernels; synthetic/mixed_2021: byte-delta memory (2021 Kineto).
    r = _check("runverdict", samples_tb, "synthetic/mixed", "synthetic/mixed_2021")
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["shown"] and r["runAboveSpan"]
    run, span = r["run"], r["span"]
    assert run["label"] == "Run verdict:" and run["bound"] == "compute-bound" and run["confidence"] == "medium confidence"
    assert run["spans"] == "2 of 2 spans" and run["pending"] == "0"
    assert run["runnerUp"].startswith("runner-up: ")
    assert "judged spans" in run["evidence"]
    assert span["label"] == "Span verdict:" and span["bound"] == "compute-bound"
    assert span["confidence"] in {"high confidence", "medium confidence", "low confidence"}
    assert span["share"].endswith("% of the judged time") and span["runnerUp"].startswith("runner-up: ")
    assert span["asRun"] is None  # the span says compute-bound on its own too
    assert r["comm"] and all("comm:" in c and "exposed" in c and "overlapped" in c for c in r["comm"])
    assert {"comm", "graph"} <= set(r["legend"]) and {"comm", "graph"} <= set(r["filters"])
    assert {"compute", "comm", "exposed comm", "memcpy"} <= set(r["stepHeads"])
    assert r["culpritCells"] and "top_culprits" in r["culpritLists"]
    # Another run: its own run verdict, asked for once its summary is in; the 2021 trace's memory caveats.
    assert r["shown2"] and r["run2"]["bound"] == "compute-bound" and r["run2"]["spans"] == "2 of 2 spans"
    assert set(r["runsAsked"]) == {"synthetic/mixed", "synthetic/mixed_2021"}
    assert any("relative to the start of the trace" in n and "reserved: not recorded" in n for n in r["memoryNotes"])


@pytest.fixture
def live_tb(tmp_path):
    """A cold server on a logdir holding a copy of the sample run `synthetic/mixed` as `mixed`."""
    source = SAMPLES / "synthetic" / "mixed"
    if not source.is_dir():
        pytest.skip(f"{source} is missing")
    logdir = tmp_path / "logdir"
    shutil.copytree(source, logdir / "mixed")
    for server in _server(logdir, None, cache_dir=tmp_path / "cache"):
        yield server, logdir, min(source.iterdir())


def test_new_traces_appear_without_a_reload_and_a_deleted_one_stays_on_screen(live_tb):
    server, logdir, sample = live_tb
    r = run_node("checks.mjs", "live", server.base, str(ARTIFACTS), "mixed", str(logdir), str(sample), timeout_s=150)
    assert r["errors"] == [] and r["httpErrors"] == []
    before, added, gone = r["before"], r["afterAdd"], r["afterGone"]
    assert before["state"]["t"] is not None and before["notice"] == ""
    # New run and span: listed by the periodic refresh (5 s) without a reload, the view untouched.
    assert r["listed"] and r["appeared"] and r["appearedMs"] < 17000, r["appearedMs"]
    assert "fresh" in [v for v, _ in added["options"]["run"]]
    assert len(added["options"]["span"]) == len(before["options"]["span"]) + 1
    for key in ("state", "selects", "marker", "canvasMarker", "verdict", "gapRows"):
        assert added[key] == before[key], key
    assert added["marker"] == "no reload" and added["canvasMarker"] == "same canvas"
    # The shown span's file deleted: no request while TensorBoard hides the tab, a refresh as soon as
    # it shows it again, and the span stays selected and drawn, marked gone.
    assert r["unlisted"] and r["hiddenRequests"] == []
    assert r["gone"] and r["goneMs"] < 3000, r["goneMs"]
    assert "no longer in the logdir" in gone["notice"]
    for key in ("state", "selects", "marker", "canvasMarker", "verdict", "gapRows"):
        assert gone[key] == before[key], key
    span_text = dict(gone["options"]["span"])[before["state"]["span"]]
    assert span_text.endswith("(gone)")


def test_a_replaced_trace_is_followed_by_the_tab(live_tb):
    server, logdir, _ = live_tb
    source = SAMPLES / "synthetic" / "dataloader"
    if not source.is_dir():
        pytest.skip(f"{source} is missing")
    other = min(source.iterdir())  # a dataloader-bound trace where a compute-bound one was
    r = run_node("checks.mjs", "replaced", server.base, str(ARTIFACTS), "mixed", str(logdir), str(other), timeout_s=90)
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["verdictBefore"] == "compute-bound" and r["verdictAfter"] == "dataloader-bound" and r["sameSpan"]
    assert r["followed"] and r["followedMs"] < 15000, r["followedMs"]


def test_a_half_written_trace_is_shown_once_it_is_complete(live_tb):
    server, logdir, sample = live_tb
    r = run_node("checks.mjs", "completed", server.base, str(ARTIFACTS), "writing", str(logdir), str(sample), timeout_s=120)
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["halfShown"] and "still being written" in r["halfError"], r["halfError"]
    assert r["followed"] and r["followedMs"] < 10000, r["followedMs"]
    assert r["verdict"] and r["errorsLeft"] == 0


def test_the_ranks_panel_names_the_straggler_and_opens_a_rank(tmp_path):
    from conftest import gloo_rank, write_trace
    for r in range(4):
        write_trace(tmp_path / "logdir" / "ddp" / f"rank{r}.1700000000000.pt.trace.json", gloo_rank(r, slow_rank=1))
    for server in _server(tmp_path / "logdir", (), cache_dir=tmp_path / "cache"):
        r = run_node("checks.mjs", "ranks", server.base, str(ARTIFACTS), "ddp", timeout_s=90)
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["straggler"] and r["straggler"].startswith("Rank 1 (rank1) holds the others back"), r["straggler"]
    assert r["saving"] and "straggler=median" in r["saving"] and "per step" in r["saving"], r["saving"]
    assert r["rows"] == ["0", "1", "2", "3"] and r["heatCells"] == 20
    assert r["opened"], r


def test_the_ranks_panel_shows_a_2d_jobs_process_groups_and_clocks(tmp_path):
    import shutil
    shutil.copytree(SAMPLES / "synthetic_ranks" / "fsdp_tp", tmp_path / "logdir" / "fsdp_tp")
    for server in _server(tmp_path / "logdir", (), cache_dir=tmp_path / "cache"):
        r = run_node("checks.mjs", "rankgroups", server.base, str(ARTIFACTS), "fsdp_tp", timeout_s=90)
    assert r["errors"] == [] and r["httpErrors"] == []
    assert sorted(r["groups"]) == [["1", "tp"], ["2", "tp"], ["3", "dp"], ["4", "dp"]], r["groups"]
    assert r["clocks"] and "rank 1 +2.9" in r["clocks"] and "rank 3 +8.7" in r["clocks"], r["clocks"]
    assert r["faults"] == [] or not any("ks-groups" in str(f) for f in r["faults"]), r["faults"]


@pytest.fixture(scope="module")
def tour_tb():
    """The shared traces on a server that caps window exports at 20,000 events (a ResNet span holds 44,666)."""
    if not TRACES.is_dir():
        pytest.skip(f"{TRACES} is missing")
    ensure_node_modules()
    server = TensorBoard(TRACES, env={"KINETOSCOPE_EXPORT_MAX_EVENTS": "20000"})
    try:
        server.warm([s["id"] for s in server.spans() if s["run"] in ("resnet50_num_workers_0", "resnet50_num_workers_4",
                                                                      "hta/critical_path/alexnet")])
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("width", [1280, 1920])
def test_a_new_users_tour_at_two_widths(tour_tb, width):
    """Issue 18's tour: nothing overlaps or is clipped, keys work before any click, one click selects and a
    double click zooms, lanes pin and groups fold, dark mode follows TensorBoard, the export button says
    when a window is too large, a link to a missing run says so, and an empty memory panel folds.
    Screenshots: test-artifacts/tour-<width>*.png."""
    r = _check("tour", tour_tb, "resnet50_num_workers_0", width, "hta/critical_path/alexnet", "resnet50_num_workers_4")
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["faults"] == [] and r["bareFaults"] == [] and r["ranksFaults"] == [] and r["compareFaults"] == []
    assert r["compareDrawn"] == 2 and r["shapes"] and all(s.startswith("[") for s in r["shapes"])
    assert r["ranksShown"] >= 2
    assert r["afterKey"] is not None  # 'w' zoomed with TensorBoard's page focused
    assert r["afterClick"] is None and not r["tooltipAfterClick"]  # one click: no zoom, no hover box left
    assert r["afterDbl"] is not None
    full, zoomed = r["exportFull"], r["exportZoomed"]
    assert full["disabled"] and "too large" in full["text"] and "44,666" in full["title"].replace("\u202f", ",")
    assert not zoomed["disabled"] and zoomed["text"] == "Export window (Perfetto)"
    lanes = r["lanes"]
    assert lanes["pinned"][0] == lanes["last"] and sorted(lanes["pinned"]) == sorted(lanes["before"])
    assert lanes["folded"] == [lanes["last"]]  # the CPU group folded to its header
    assert r["dark"] and max(r["darkBg"][:3]) < 80 and r["light"]
    assert r["notice"] and "no-such-run" in r["notice"] and "instead" in r["notice"]
    assert r["missingState"]["t"] is None  # the link's window belonged to another span: not applied
    assert r["memory"] and r["memory"]["folded"] and r["memory"]["height"] < 60 and "none recorded" in r["memory"]["text"]


def test_the_tab_loads_a_trace_from_an_s3_logdir(tmp_path):
    """TensorBoard on `s3://bucket/logs`, served by a real S3 server on 127.0.0.1 (moto, started here): the
    tab opens a real trace read from the bucket and draws its lanes, as it does from local disk."""
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    if not TRACES.is_dir():
        pytest.skip(f"{TRACES} is missing")
    from s3_server import moto_server, s3_env, tree, upload
    with moto_server(tmp_path / "s3") as s3:
        upload(s3.endpoint, "profiles", tree(TRACES / "resnet50_num_workers_0", "logs/resnet50"))
        env = {**s3_env(s3.endpoint, tmp_path / "home"), "KINETOSCOPE_CACHE_DIR": str(tmp_path / "cache")}
        server = TensorBoard("s3://profiles/logs", env=env)
        try:
            server.warm([s["id"] for s in server.spans()])
            r = _check("remote", server, "resnet50")
        finally:
            server.stop()
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["logdir"] == "s3://profiles/logs" and r["scanError"] is None
    assert "cpu" in r["kinds"] and "gpu" in r["kinds"] and r["cpuPixels"] > 1000 and r["gpuPixels"] > 1000
    assert r["verdict"] == "dataloader-bound"


def test_the_tab_says_why_a_remote_logdir_cannot_be_listed(tmp_path):
    """No S3 server answers at the endpoint: the tab names the logdir and the problem (and the secret in
    the environment shows nowhere)."""
    pytest.importorskip("s3fs")
    from s3_server import SECRET_KEY, free_port, s3_env
    env = {**s3_env(f"http://127.0.0.1:{free_port()}", tmp_path / "home"), "KINETOSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    server = TensorBoard("s3://profiles/logs", env=env)
    try:
        r = _check("scanerror", server)
    finally:
        server.stop()
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["shown"].startswith("Cannot list the logdir: s3://profiles/logs: cannot list: cannot reach the storage endpoint")
    assert SECRET_KEY not in r["shown"]


def test_the_compare_panel_from_a_link_and_a_baseline_picked_in_it(traces_tb):
    r = _check("compare", traces_tb, "resnet50_num_workers_4", "resnet50_num_workers_0")
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["headline"].startswith("Step time (median)") and "gain" in r["headline"], r["headline"]
    assert "dataloader-bound" in r["status"] and "\u2192 compute-bound" in r["status"], r["status"]
    assert r["firstChange"][:2] == ["1", "DataLoader wait (device idle)"], r["firstChange"]
    assert any(s.startswith("Kernels joined by name") for s in r["joined"]), r["joined"]
    assert [lane["side"] for lane in r["strip"]] == ["base", "cand"]
    assert all(lane["steps"] == ["#1", "#2", "#3", "#4", "#5", "#6"] and lane["parts"] >= 6 for lane in r["strip"]), r["strip"]
    assert r["aligned"] == ["#3", "#3"]
    assert r["followed"] and r["spanBaseline"], r
    # The stacked lanes of two run sides: each side draws its run's first span at step 1.
    assert [(s["side"], s["step"]) for s in r["stacked"]] == [("base", "ProfilerStep#5"), ("cand", "ProfilerStep#5")], r["stacked"]
    assert all(s["rects"] > 0 for s in r["stacked"])


def test_area_selection_changes_the_tables_and_search_steps_through_occurrences(traces_tb):
    """Shift+drag over 20-40% of the lanes: the kernel table shows that window only (fewer calls), the area
    is in the link and reopening the link shows the same window; search says "n of m" and selects each hit."""
    r = _check("area", traces_tb, "resnet50_num_workers_0")
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["windowed"] and r["linkArea"] and r["tableWindow"] == r["restoredWindow"]
    start, end = map(float, r["tableWindow"].split(","))
    assert (start, end) == pytest.approx(tuple(map(float, r["linkArea"].split(","))), abs=1e-3)
    before, after = dict(r["before"]), dict(r["after"])
    assert sum(after.values()) < sum(before.values())
    assert all(after[name] <= before.get(name, after[name]) for name in after)
    first, second = r["search"]
    assert first.startswith("1 of ") and second.startswith("2 of ") and first.split(" of ")[1] == second.split(" of ")[1]
    assert r["selected"] == "aten::cudnn_convolution_backward_input"


def test_compare_lanes_stacks_both_spans_at_a_step_and_zooms_both(traces_tb):
    """Issue 17: the Compare panel's stacked lanes for two spans (resnet50_num_workers_0's first span as the
    baseline, resnet50_num_workers_4's on screen): both sides' lanes are drawn, the aligned step moves each
    side's request to that step, a wheel zooms both, hovering names an event, and the link reopens the view."""
    r = _check("comparelanes", traces_tb, "resnet50_num_workers_4", "resnet50_num_workers_0")
    assert r["errors"] == [] and r["httpErrors"] == []
    first, stepped, zoomed = r["first"], r["stepped"], r["zoomed"]
    assert [s["side"] for s in first] == ["base", "cand"] and first[0]["span"] == r["baseSpan"]
    assert all(s["rects"] > 0 and "gpu" in s["lanes"] and "cpu" in s["lanes"] for s in first), first
    assert all(n > 500 for n in r["firstPixels"]), r["firstPixels"]
    # Each side asks its own clock's window around its own step 1, and the view starts just before 0.
    for s in first:
        assert s["step"].startswith("ProfilerStep#") and s["fetched"][0] <= s["anchorUs"] < s["fetched"][1], s
    assert r["firstWin"][0] < 0 < r["firstWin"][1]
    assert r["firstWin"][1] >= max(s["stepUs"] for s in first)
    # Step 3: another step on each side, each side's request moved with it, and the link says so.
    assert r["linkStep"] == "3"
    for before, after in zip(first, stepped):
        assert after["step"] != before["step"] and after["anchorUs"] > before["anchorUs"] + before["stepUs"] * 0.9
        assert after["fetched"][0] > before["fetched"][0]
    # The wheel zooms both sides: narrower windows at a finer resolution, and both still drawn.
    assert r["zoomedWin"][1] - r["zoomedWin"][0] < 0.7 * (r["steppedWin"][1] - r["steppedWin"][0])
    assert all(z["fetched"][2] < 0.7 * s["fetched"][2] for s, z in zip(stepped, zoomed))
    assert all(n > 0 for n in r["zoomedPixels"]), r["zoomedPixels"]
    assert r["hover"] and "duration" in r["hover"] and "from the step start" in r["hover"], r["hover"]
    assert r["reopened"]["sides"] == [[s["span"], s["step"], s["anchorUs"]] for s in zoomed]
    assert r["reopened"]["win"] == pytest.approx(r["keyZoom"], abs=1e-3)  # the link as the keys left it
    # Four wheel notches: at most one request per notch for the baseline's side (one in flight, bursts merged).
    assert 1 <= r["zoomRequests"] <= 4, r["zoomRequests"]
    assert r["keyReset"] == pytest.approx(r["steppedWin"]) and r["keyZoom"][1] - r["keyZoom"][0] < r["keyReset"][1] - r["keyReset"][0]
    assert r["mainWindowKept"], "keys on the stacked view left the main lanes alone"
    assert r["busiestOnly"] == [2, 2] and all(n >= 2 for n in r["allThreads"]), (r["allThreads"], r["busiestOnly"])
    assert r["draw"]["count"] > 0 and max(r["gutterDark"][:3]) < 80, (r["draw"], r["gutterDark"])
    print(f"compare lanes: draw {r['draw']}, baseline lanes requests (ms) {r['lanesMs']}, zoom requests {r['zoomRequests']}, "
          f"threads {r['allThreads']}")


# Issue 30: the tab on a 1280x800 laptop (and 1440x900, 1920x1080), light and dark.
SIZES = ((1280, 800), (1440, 900), (1920, 1080))
# What TensorBoard's page leaves its plugin frame at these sizes: the window less its 64 px toolbar.
FOLD_BELOW = 900


@pytest.mark.parametrize("width,height", SIZES)
@pytest.mark.parametrize("theme", ("light", "dark"))
def test_the_tab_at_laptop_and_desktop_sizes(traces_tb, width, height, theme):
    """The header is one line in a short window (the verdict's bound and share readable in it), the first GPU
    lane is on screen without scrolling, hover boxes along it stay inside the window and describe what is under
    the pointer after a wheel zoom, a search hit is zoomed to at least 40 px with its "n of m" in view, the
    selection opens in a drawer in view, a link pasted into the open tab is followed (an area, then another
    run), nothing overlaps or is clipped, and every text on screen reads at 4.5:1 or more.
    Screenshots: test-artifacts/laptop-<width>x<height>-<theme>.png."""
    r = run_node("checks.mjs", "laptop", traces_tb.base, str(ARTIFACTS), "resnet50_num_workers_0", str(width), str(height), theme,
                 "resnet50_num_workers_4", timeout_s=400)
    assert r["errors"] == [] and r["httpErrors"] == [] and r["faults"] == []
    header = r["header"]
    if height <= FOLD_BELOW:
        assert header["folded"] and header["lines"] == 1 and header["height"] < 48
        assert header["briefShown"] and not header["briefCut"]  # the whole brief reads on the one line
        assert header["brief"].startswith("dataloader-bound") and "% of the time" in header["brief"] and "top saving" in header["brief"]
    assert r["gpuVisible"], r["gpuLane"]
    assert r["tooltips"] and all(t["inside"] for t in r["tooltips"]), r["tooltips"]
    assert r["beforeZoom"] and r["afterZoom"] != r["beforeZoom"]  # a wheel zoom redescribes the hover box
    s = r["search"]
    assert s and s["count"].startswith("1 of ") and s["hitPx"] >= 40 - 1e-6, s
    assert s["counterInView"] and s["drawerInView"] and s["drawerName"] == s["query"]
    assert r["drawerClosed"] is True
    assert tuple(map(float, r["areaFollowed"].split(","))) == pytest.approx(tuple(map(float, r["linkedArea"].split(","))), abs=1e-3)
    assert r["runFollowed"] == "resnet50_num_workers_4"
    assert r["contrast"] == [], r["contrast"]


def test_the_first_gpu_lane_is_on_screen_on_load_for_every_shared_trace(traces_tb):
    """At 1280x800, every run of the shared traces opens with its first GPU lane inside the frame's window,
    under the sticky header, without scrolling (the GPU streams are pinned on top when the host's threads
    would push them below the fold)."""
    runs = sorted({s["run"] for s in traces_tb.spans()})
    r = run_node("checks.mjs", "firstview", traces_tb.base, str(ARTIFACTS), "1280", "800", *runs, timeout_s=1800)
    assert len(r["views"]) == len(runs)
    for v in r["views"]:
        assert "failed" not in v and v["errors"] == [] and v["httpErrors"] == [], v
        if v["gpuTop"] is not None:
            assert v["header"] <= v["gpuTop"] and v["gpuBottom"] <= v["innerHeight"], v


@pytest.mark.parametrize("width, height", [(1440, 900), (1920, 1080)])
def test_the_first_gpu_lane_is_on_screen_at_larger_windows_multi_rank_runs_included(traces_tb, width, height):
    """Issue 55: at the other two tour sizes, a multi-rank run (its Ranks panel loaded, below the lanes now) and
    single-rank ones open with their first GPU lane under the sticky header, without scrolling."""
    runs = ["hta/trace_filter", "resnet50_num_workers_0", "modern/h100"]
    r = run_node("checks.mjs", "firstview", traces_tb.base, str(ARTIFACTS), str(width), str(height), *runs, timeout_s=900)
    assert [v["run"] for v in r["views"]] == runs
    for v in r["views"]:
        assert "failed" not in v and v["errors"] == [] and v["httpErrors"] == [], v
        assert v["gpuTop"] is not None and v["header"] <= v["gpuTop"] and v["gpuBottom"] <= v["innerHeight"], v
        # scrolled down, the pinned header is its one line (it took 39% of a 1920x1080 window with the verdicts)
        sc = v["scrolled"]
        assert sc["scrollY"] > 0 and sc["top"] == 0 and sc["header"] <= 0.08 * sc["innerHeight"], sc
        assert sc["briefShown"] and "%" in sc["brief"], sc  # and says the verdict in brief
    assert r["views"][0]["ranksRows"] >= 2  # the job's Ranks panel had its rows when the lanes were measured


def test_the_compare_lanes_fit_the_window_at_1280x800(traces_tb):
    """Issue 30: ResNet nw0 against nw4 in the Compare panel at 1280x800: both sides' stacked lanes fit the frame's
    window under the sticky header at once (threads fold until each side takes at most half of it)."""
    r = run_node("checks.mjs", "comparefit", traces_tb.base, str(ARTIFACTS), "resnet50_num_workers_0", "resnet50_num_workers_4",
                 "1280", "800", timeout_s=300)
    assert r["errors"] == [] and r["httpErrors"] == []
    assert len(r["sides"]) == 2 and all(s["hCss"] > 0 for s in r["sides"])
    assert r["canvasH"] <= r["innerHeight"] - r["header"]


def test_a_name_cut_at_1000_characters_shows_whole_on_demand(tmp_path):
    """Two kernels whose names differ only after character 1,500: their rows show the same cut name but carry
    different keys, the title says the name was cut, and "whole name" shows it all (the `name` route), in the
    Tables panel and in the Selection drawer of a selected occurrence."""
    from conftest import kernel, launch, op, trace_doc, write_trace
    stem = "void k<" + "x" * 1500
    events = [op("ProfilerStep#1", 0, 200), op("aten::mm", 0, 100), launch(10, 5, 1), kernel(stem + "A>()", 20, 30, 1),
              launch(40, 5, 2), kernel(stem + "B>()", 60, 10, 2)]
    write_trace(tmp_path / "logs" / "long" / "w.1.pt.trace.json", trace_doc(events))
    servers = _server(tmp_path / "logs", cache_dir=tmp_path / "cache")
    server = next(servers)
    try:
        r = _check("fullname", server)
    finally:
        servers.close()
    assert r["errors"] == [] and r["httpErrors"] == []
    assert len(r["keys"]) == 2 and len(set(r["keys"])) == 2 and all(r["keys"])
    assert all("cut: the trace's name has 1,511 characters" in t for t in r["shown"])
    assert r["whole"] == stem + "A>()" and "1,511 characters" in r["head"]
    assert r["drawer"] == stem + "A>()"  # the Selection drawer of the first occurrence shows it whole too


@pytest.fixture()
def graphs_tb(tmp_path):
    """A logdir with the H200 graph-replay sample and, in its `capture_traces/`, its eager twin as reference."""
    (trace,), (eager,) = (SAMPLES / "cuda_h200" / "cuda_graph").glob("*.json.gz"), (SAMPLES / "cuda_h200" / "launch_bound").glob("*.json.gz")
    run = tmp_path / "logdir" / "graphs"
    (run / "capture_traces").mkdir(parents=True)
    shutil.copy(trace, run / trace.name)
    shutil.copy(eager, run / "capture_traces" / eager.name)
    yield from _server(tmp_path / "logdir")


def test_the_ops_graph_replays_ran_are_drawn_above_their_stream_and_named_on_hover(graphs_tb, tmp_path):
    from kinetoscope.analysis.tables.index import TableIndex
    from kinetoscope.pipeline import with_graph_reference
    from kinetoscope.trace.loader import load_trace
    (trace,) = (tmp_path / "logdir" / "graphs").glob("*.json.gz")
    model = with_graph_reference(load_trace(str(trace), cache_dir=None), str(trace))
    graphs = TableIndex.build(model).graphs
    first = graphs.call_replay == 0
    t0, t1 = ((int(graphs.call_start_ns[first].min()) - model.start_ns) / 1e3, (int(graphs.call_end_ns[first].max()) - model.start_ns) / 1e3)
    r = _check("replayed", graphs_tb, "graphs", round(t0 - 1, 3), round(t1 + 1, 3))
    assert r["errors"] == [] and r["httpErrors"] == []
    assert r["ids"] is not None and r["drawn"] and r["above"] and r["pixels"] > 500
    assert r["tooltip"] and "replayed_op" in r["tooltip"] and "launch_bound" in r["tooltip"]
    assert "aten::linear" in r["tooltip"] or "aten::gelu" in r["tooltip"]
