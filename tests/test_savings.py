"""Every suggestion with its expected saving (analysis/whatif/savings.py): the verdict's fix, the runner-up's and each
top culprit's, each re-timed by the what-if replay with its edit, largest first, in the report and the JSON."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import SAMPLES, SHARED_TRACES, requires_shared
from kinetoscope.analysis.report import analyze, report_entry
from kinetoscope.formats.report import render_entry
from kinetoscope.formats.units import human_us
from kinetoscope.trace.discovery import scan_logdir
from kinetoscope.trace.loader import load_trace

LOGS = SAMPLES / "logs" / "synthetic"


def entries(run: str) -> list[tuple[dict, dict]]:
    truth = json.loads((SAMPLES / "truth" / f"{run}.json").read_text())
    out = []
    for trace, span in zip(scan_logdir(str(LOGS / run)), truth["spans"]):
        model = load_trace(trace.path, cache_dir=None)
        out.append(({"path": trace.path, "run": run, "worker": trace.worker, "span": trace.span, "error": None,
                     **report_entry(model, analyze(model))}, span))
    return out


def test_savings_are_ordered_and_complete():
    for entry, _ in entries("host") + entries("sync") + entries("dataloader") + entries("nccl_exposed"):
        savings = entry["savings"]
        assert savings and [s["saving_us"] for s in savings] == sorted((s["saving_us"] for s in savings), reverse=True)
        for s in savings:
            assert set(s) == {"source", "fix", "edits", "saving_us", "steps", "saving_share", "median_step_us",
                              "recorded_median_step_us", "total_saving_us", "share_of", "share_base_us"}
            judged = entry["breakdown"]["judged_us"] / entry["breakdown"]["units"]
            assert s["share_of"] == "judged" and s["share_base_us"] == pytest.approx(judged, abs=0.01)
            assert s["saving_share"] == pytest.approx(min(s["saving_us"] / judged, 1.0), abs=1e-4)
            assert s["source"] in ("verdict", "runner-up", "culprit", "insight:fusion", "insight:mixed-precision") and s["edits"]
            assert s["total_saving_us"] == pytest.approx(s["saving_us"] * s["steps"], abs=0.01 * s["steps"])  # rounded to ns


def test_the_planted_host_culprit_saves_its_own_time():
    # synthetic/host: aten::nonzero runs 1.8 ms on the host each step with no launches, the GPU waiting on it
    # (it launches nothing and syncs nothing, so capturing the step in a graph takes it away too, with the launches)
    for entry, _ in entries("host"):
        own = next(s for s in entry["savings"] if s["edits"] == ["host:aten::nonzero*0"])
        assert own["source"] == "verdict" and own["saving_us"] == pytest.approx(1800, rel=0.05)
        graph = next(s for s in entry["savings"] if s["edits"] == ["graph"])
        assert graph["source"] == "verdict" and graph["saving_us"] >= own["saving_us"]


def test_the_dataloader_wait_saving_is_bounded_by_the_wait():
    for entry, span in entries("dataloader"):
        waits = np.array([s["dataloader_ns"] for s in span["steps"]]) / 1e3
        top = entry["savings"][0]
        assert top["edits"] == ["dataloader=0"] and top["source"] == "verdict"
        # the wait is gone, but the step still needs the work that followed it (host and about 2 ms of GPU)
        assert 0.6 * waits.mean() < top["saving_us"] <= waits.mean() * 1.001


def test_sync_culprits_are_edited_by_the_op_that_made_them():
    for entry, _ in entries("sync"):
        edits = [e for s in entry["savings"] for e in s["edits"]]
        assert "sync:aten::_local_scalar_dense=0" in edits and "sync:cudaDeviceSynchronize=0" in edits
        assert all(s["saving_us"] > 0 for s in entry["savings"] if s["edits"][0].startswith("sync:"))


def test_the_report_shows_them():
    entry, _ = entries("host")[0]
    text = render_entry(entry)
    assert "What a fix would save" in text and "aten::nonzero costs no host time" in text
    markdown = render_entry(entry, markdown=True)
    assert "What a fix would save" in markdown and r"host:aten::nonzero\*0" in markdown


def test_no_steps_no_savings():
    for trace in scan_logdir(str(SAMPLES / "logs" / "synthetic" / "cpu_only"))[:1]:
        model = load_trace(trace.path, cache_dir=None)
        assert isinstance(report_entry(model, analyze(model))["savings"], list)


def test_communication_bound_and_fusion_carry_savings():
    for entry, _ in entries("nccl_exposed"):
        hidden = [s for s in entry["savings"] if s["edits"] == ["comm=hidden"]]
        assert hidden and hidden[0]["source"] == "verdict" and hidden[0]["saving_share"] > 0.5


@requires_shared
def test_the_fusion_insight_carries_its_saving():
    path = sorted((SHARED_TRACES / "resnet50_num_workers_0").glob("*.json*"))[0]
    model = load_trace(str(path), cache_dir=None)
    entry = report_entry(model, analyze(model))
    assert any(i["kind"] == "fusion" for i in entry["insights"])
    fusion = [s for s in entry["savings"] if s["source"] == "insight:fusion"]
    assert fusion and fusion[0]["edits"][0].startswith("fuse:") and fusion[0]["saving_us"] > 0


@requires_shared
def test_mixed_precision_carries_its_saving_and_no_saving_is_negative():
    for path in sorted((SHARED_TRACES / "resnet50_num_workers_4").glob("*.json*")):
        model = load_trace(str(path), cache_dir=None)
        entry = report_entry(model, analyze(model))
        amp = [s for s in entry["savings"] if s["source"] == "insight:mixed-precision"]
        (edit,) = amp[0]["edits"]
        assert edit.startswith("kernel:in:") and edit.endswith("*0.5") and "|aten::cudnn_convolution|" in edit
        # every edit here only removes or shortens work: the replay never makes the run longer
        assert all(s["total_saving_us"] >= 0 for s in entry["savings"])


def test_the_warm_up_insight_carries_its_saving(tmp_path):
    """A 9 ms first step before five 3 ms ones: profiling after warm-up takes 6 ms off the run, 1 ms per step."""
    from conftest import MS, kernel, launch, op, trace_doc
    from kinetoscope.trace.loader import decode_bytes
    events, t = [], 0.0
    for n in range(6):
        length = 9 * MS if n == 0 else 3 * MS
        events += [op(f"ProfilerStep#{n + 1}", t, length), op("aten::mm", t + 1, length - 2)]
        for k in range(40):  # enough device work to be judged (a trace that cannot be judged gets no saving)
            corr = 100 * n + k + 1
            events += [launch(t + 5 + k * 10, 5, corr=corr), kernel(f"mm_{n}", t + 20 + k * length / 120, length / 120, corr=corr)]
        t += length + 1
    model = decode_bytes(json.dumps(trace_doc(events)).encode())
    entry = report_entry(model, analyze(model))
    assert any(i["kind"] == "warm-up" for i in entry["insights"])
    (warm,) = [s for s in entry["savings"] if s["source"] == "insight:warm-up"]
    assert warm["edits"] == ["warmup=median"]
    assert warm["total_saving_us"] == pytest.approx(6000, rel=0.01) and warm["saving_us"] == pytest.approx(1000, rel=0.01)


@requires_shared
@pytest.mark.parametrize("folder", ["resnet50_num_workers_4", "modern"])
def test_the_savings_replayed_ahead_are_the_savings(folder):
    """`savings_ahead` replays before the tables say whether the mixed-precision insight applies (it replays that
    one too): with the insight or without, what `savings(..., ahead=)` keeps is what `savings` replays afterwards."""
    from kinetoscope.analysis.whatif.savings import AMP_SOURCE, savings, savings_ahead
    paths = sorted(p for p in (SHARED_TRACES / folder).rglob("*.json*") if p.is_file())[:4]
    assert paths
    for path in paths:
        model = load_trace(str(path), cache_dir=None)
        analysis = analyze(model)
        ahead = savings_ahead(model, analysis)
        for amp in (None, object()):
            assert savings(model, analysis, amp=amp, ahead=ahead) == savings(model, analysis, amp=amp), path.name
        assert all(s.source != AMP_SOURCE for s in savings(model, analysis, ahead=ahead))


def test_when_no_listed_fix_recovers_half_the_lost_share_one_line_says_why():
    from kinetoscope.analysis.whatif.savings import savings, shortfall
    from msgspec.structs import replace as with_
    (trace,) = (SAMPLES / "logs" / "cuda_h200" / "launch_bound").glob("*.json.gz")
    model = load_trace(str(trace), cache_dir=None)
    analysis = analyze(model)
    found = savings(model, analysis)
    assert analysis.verdict.bound == "host-bound" and shortfall(model, analysis, found) is None  # graph: 94%
    small = tuple(s for s in found if s.edits == ("host:aten::gelu*0",))
    line = shortfall(model, analysis, small)
    assert line.startswith("no listed fix recovers half of the 74% the verdict says is lost (the largest: 22%)")
    assert "spread over" in line and "ops, the largest" in line
    sync = with_(analysis, verdict=with_(analysis.verdict, bound="sync-bound"))
    assert shortfall(model, sync, small).endswith("the device work the syncs waited for, which the step still needs")


@requires_shared
def test_the_savings_share_the_verdicts_denominator():
    # SGLang decode: one 466 ms step, 455 ms of it device time held behind a blocking copy the trace does not show;
    # the verdict judges 10.6 ms of it. A saving's share of the 466 ms step (0.3%) beside "compute-bound 95%" of
    # the 10.6 ms told two stories: both are shares of the judged step now, and the report says which step it is.
    (path,) = (SHARED_TRACES / "modern" / "inference" / "sglang_decode").glob("*.json.gz")
    model = load_trace(str(path), cache_dir=None)
    entry = {"path": str(path), "run": "sglang_decode", "worker": "w", "span": "", "error": None,
             **report_entry(model, analyze(model))}
    judged = entry["breakdown"]["judged_us"] / entry["breakdown"]["units"]
    assert judged < 0.05 * entry["savings"][0]["recorded_median_step_us"]
    for s in entry["savings"]:
        assert s["share_of"] == "judged" and s["share_base_us"] == pytest.approx(judged, abs=0.01)
        assert 0 < s["saving_share"] <= 1 and s["saving_share"] == pytest.approx(s["saving_us"] / judged, abs=1e-4)
    assert entry["savings"][0]["saving_share"] > 0.1
    text = render_entry(entry, markdown=False)
    assert f"shares of the {human_us(entry['savings'][0]['share_base_us'])} step the verdict judges" in text
