"""The roofline figures (analysis/roofline/figures.py, summary.py) and the `roofline:` what-if edit, on planted traces
whose kernel times are known: each op call's work over its kernels' time, the share of the device's roof, the
re-timed replay, the report's efficiency section, the table and the route.

The planted device is an H100 SXM (its deviceProperties as a real trace writes them); the figures expected are
derived here from the op's definition and the chosen peaks, never read back from the code under test.
"""
from __future__ import annotations

import json
import math

import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.analysis.report import analyze, report_entry
from kinetoscope.analysis.roofline.figures import roofline_rows, step_mfu
from kinetoscope.analysis.roofline.peaks import builtin_peaks, choose
from kinetoscope.analysis.whatif.edits import EditError, parse_edit
from kinetoscope.analysis.whatif.replay import Replayer
from kinetoscope.cli.main import main
from kinetoscope.pipeline import trace_roofline
from kinetoscope.trace.loader import load_trace
from msgspec.structs import replace

H100 = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045870592, "computeMajor": 9, "computeMinor": 0,
         "numSms": 132}]
N = 4096
BF16 = "c10::BFloat16"
MM_US, ADD_US, STEPS = 463.0, 300.0, 25  # enough for a verdict: 50 ops, 50 kernels, 19 ms busy


def planted(device=H100, shapes: bool = True) -> dict:
    """STEPS steps; each a bf16 [N,N]x[N,N] mm (MM_US of kernel) and a bf16 [N,N] + [N,N] add (ADD_US), launched
    in 100 µs of host time; the device runs them back to back, behind the host."""
    events, t_dev, corr = [], 1000.0, 0
    for k in range(STEPS):
        t = 100.0 * k
        events.append(op(f"ProfilerStep#{k + 1}", t, 100))
        for i, (name, dims, types, dur, kname) in enumerate((
                ("aten::mm", [[N, N], [N, N]], [BF16, BF16], MM_US, "sm90_xmma_gemm_bf16bf16_bf16f32"),
                ("aten::add", [[N, N], [N, N], []], [BF16, BF16, "Scalar"], ADD_US, "vectorized_elementwise_kernel"))):
            corr += 1
            args = {"Input Dims": dims, "Input type": types, "Input Strides": [[N, 1]] * 2 + [[]] * (len(dims) - 2),
                    "Concrete Inputs": [""] * len(dims)} if shapes else {}
            start = t + 10 + 40 * i
            events += [op(name, start, 30, **args), launch(start + 5, 10, corr), kernel(kname, t_dev, dur, corr)]
            t_dev += dur
    return trace_doc(events, deviceProperties=device)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    path = write_trace(tmp_path_factory.mktemp("roof") / "planted.json", planted())
    model = load_trace(str(path), cache_dir=None)
    return path, model, analysed(model)


def analysed(model):
    """`analyze` with its roofline joined in, as the pipeline does (the roofline is made from the tables' index)."""
    return replace(analyze(model), roofline=trace_roofline(model))


def peaks():
    return choose(H100).peaks


def test_the_h100_is_chosen_and_each_op_shape_gets_its_work_rate_and_roof_share(traced):
    _, model, analysis = traced
    rows, totals = roofline_rows(model, analysis.roofline)
    p = peaks()
    by_name = {r["name"]: r for r in rows}
    mm, add = by_name["aten::mm"], by_name["aten::add"]
    assert totals["device"] == p.device and totals["peak_source"] == p.source and totals["reason"] is None
    flops, moved = 2.0 * N ** 3, 3 * 2.0 * N * N
    assert (mm["category"], mm["calls"], mm["dtype"], mm["bound"]) == ("gemm", STEPS, "bf16", "compute")
    assert mm["flops"] == flops and mm["bytes"] == moved
    assert mm["kernel_us"] == pytest.approx(STEPS * MM_US)
    assert mm["achieved_tflops"] == pytest.approx(flops / (MM_US * 1e-6) / 1e12)
    assert mm["achieved_tbps"] == pytest.approx(moved / (MM_US * 1e-6) / 1e12)
    roof_s = max(flops / p.compute_peak("bf16", True), moved / p.bandwidth)
    assert mm["roof_pct"] == pytest.approx(100 * roof_s / (MM_US * 1e-6))
    assert mm["roof_us"] == pytest.approx(STEPS * roof_s * 1e6)
    assert mm["intensity"] == pytest.approx(flops / moved)
    assert (add["category"], add["bound"], add["flops"], add["bytes"]) == ("elementwise", "memory", N * N, moved)
    assert add["roof_pct"] == pytest.approx(100 * moved / p.bandwidth / (ADD_US * 1e-6))
    assert json.loads(mm["input_dims"]) == [[N, N], [N, N]] and json.loads(mm["input_types"]) == [BF16, BF16]
    assert mm["kernels"][0]["name"].startswith("sm90_xmma") and mm["kernel_count"] == STEPS
    assert len(mm["kernel_rows"]) == STEPS and all(model.names[model.name_id[r]].startswith("sm90") for r in mm["kernel_rows"])
    assert totals["unmodelled_share"] == pytest.approx(0.0) and totals["kernel_us"] == pytest.approx(STEPS * (MM_US + ADD_US))


def test_a_window_counts_the_kernels_inside_it_only(traced):
    _, model, analysis = traced
    t0 = model.start_ns
    first_mm = (1000.0 - 0) * 1e3  # the first kernel starts 1000 µs after the first event
    rows, totals = roofline_rows(model, analysis.roofline, (t0 + int(first_mm), t0 + int(first_mm + MM_US * 1e3)))
    assert [(r["name"], r["calls"]) for r in rows] == [("aten::mm", 1)]
    assert totals["kernel_us"] == pytest.approx(MM_US)


def test_the_roofline_edit_retimes_the_kernels_below_the_share_to_it(traced):
    _, model, analysis = traced
    p = peaks()
    mm_share = 2.0 * N ** 3 / p.compute_peak("bf16", True) / (MM_US * 1e-6)
    add_share = 3 * 2.0 * N * N / p.bandwidth / (ADD_US * 1e-6)
    replayer = Replayer(model, analysis.roofline)
    base = replayer.apply(())
    for text, saved_per_step in (("roofline:gemm>=60%", MM_US * (1 - mm_share / 0.6)),
                                 ("roofline:elementwise>=60%", ADD_US * (1 - add_share / 0.6)),
                                 ("roofline:gemm>=20%", 0.0)):  # the GEMM already runs above 20% of its roof
        result = replayer.apply((parse_edit(text),))
        saved = float((base.edited_ns - result.edited_ns).sum()) / 1e3
        assert saved == pytest.approx(STEPS * saved_per_step, rel=1e-6, abs=STEPS * 1e-3), text  # replayed in int ns
        assert result.matched[text] == (0 if saved_per_step == 0 else STEPS)
    both = replayer.apply((parse_edit("roofline:gemm>=60%"), parse_edit("roofline:elementwise>=60%")))
    assert float((base.edited_ns - both.edited_ns).sum()) / 1e3 == pytest.approx(
        STEPS * (MM_US * (1 - mm_share / 0.6) + ADD_US * (1 - add_share / 0.6)), rel=1e-5)


@pytest.mark.parametrize("text", ["roofline:gemm>=0%", "roofline:gemm>=101%", "roofline:fast>=60%", "roofline:gemm>60%",
                                  "roofline:communication>=50%", "roofline:gemm>=60"])
def test_bad_roofline_edits_are_refused_by_name(text):
    with pytest.raises(EditError, match="roofline"):
        parse_edit(text)


def test_the_report_has_an_efficiency_section_and_the_savings_carry_the_roofline_fixes(traced):
    _, model, analysis = traced
    entry = report_entry(model, analysis)
    eff = entry["efficiency"]
    assert eff["device"] == peaks().device and eff["unmodelled_share"] == pytest.approx(0.0)
    assert [c["category"] for c in eff["categories"]] == ["gemm", "elementwise"]
    assert [t["name"] for t in eff["top"]] == ["aten::mm", "aten::add"]
    edits = {tuple(s["edits"]): s for s in entry["savings"]}
    assert ("roofline:elementwise>=60%", "roofline:copy>=60%") not in edits  # no copy kernel: not named
    fix = edits[("roofline:elementwise>=60%",)]
    add_share = 3 * 2.0 * N * N / peaks().bandwidth / (ADD_US * 1e-6)
    assert fix["saving_us"] == pytest.approx(ADD_US * (1 - add_share / 0.6), rel=1e-3)
    assert f"{add_share:.0%} of HBM bandwidth" in fix["fix"] and "torch.compile" in fix["fix"]
    if entry["verdict"]["bound"] == "compute-bound":
        assert "kernels run at" in entry["verdict"]["suggestion"] and "per step" in entry["verdict"]["suggestion"]


def test_mfu_per_step_is_the_steps_model_flops_over_step_time_and_peak(traced):
    _, model, analysis = traced
    roof = analysis.roofline
    starts = model.ts_ns[roof.act_rows[::2]]  # each step's first kernel
    ends = model.end_ns[roof.act_rows[1::2]]  # and last
    mfu = step_mfu(roof, starts, ends)
    flops = 2.0 * N ** 3 + N * N
    assert mfu == pytest.approx([flops / ((MM_US + ADD_US) * 1e-6) / peaks().compute_peak("bf16", True)] * STEPS)


def test_an_unknown_device_shows_work_and_rates_without_roof_shares(tmp_path):
    doc = planted(device=[{"id": 0, "name": "Example Accelerator 9000", "numSms": 7}])
    model = load_trace(str(write_trace(tmp_path / "t.json", doc)), cache_dir=None)
    rows, totals = roofline_rows(model, trace_roofline(model))
    assert totals["roofs"] is None and "Example Accelerator 9000" in totals["reason"]
    assert all(r["roof_pct"] is None and r["achieved_tflops"] > 0 and r["bound"] is None for r in rows)


def test_a_trace_without_record_shapes_gets_the_health_item_not_zeros(tmp_path):
    model = load_trace(str(write_trace(tmp_path / "t.json", planted(shapes=False))), cache_dir=None)
    entry = report_entry(model, analysed(model))
    assert entry["efficiency"]["recorded_inputs"] is False
    assert all(r["flops"] is None for r in roofline_rows(model, trace_roofline(model))[0])
    item = next(h for h in entry["health"] if h["check"] == "no_record_shapes")
    assert "record_shapes=True" in item["found"] and item["affects"] == ["efficiency"]


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "text"])
def test_the_table_command_writes_the_roofline_in_each_format(traced, capsys, fmt):
    path = traced[0]
    assert main(["table", str(path), "--by", "roofline", "--format", fmt, "--no-cache"]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        doc = json.loads(out)
        assert doc["schema_version"] == 1 and doc["by"] == "roofline"
        row = doc["rows"][0]
        assert {"name", "input_dims", "input_types", "category", "calls", "flops", "bytes", "kernel_us", "achieved_tflops",
                "achieved_tbps", "intensity", "bound", "roof_pct", "peak_source"} <= set(row)
        assert "kernel_rows" not in row and math.isfinite(row["roof_pct"])
    else:
        assert "aten::mm" in out and "gemm" in out


def test_a_user_peaks_file_overrides_the_device_and_a_bad_one_is_refused(traced, capsys, tmp_path):
    path = traced[0]
    mine = tmp_path / "peaks.json"
    mine.write_text(json.dumps({"devices": [{"name": "My H100", "match": ["NVIDIA H100 80GB HBM3"], "sms": 132,
                                             "tflops": {"bf16": 100.0, "fp32": 10.0}, "tbps": 1.0,
                                             "source": "measured by me"}]}))
    assert main(["table", str(path), "--by", "roofline", "--format", "json", "--no-cache", "--peaks", str(mine)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["totals"]["device"] == "My H100" and "measured by me" in doc["totals"]["peak_source"]
    mm = next(r for r in doc["rows"] if r["name"] == "aten::mm")
    assert mm["roof_pct"] == pytest.approx(100 * 2.0 * N ** 3 / 100e12 / (MM_US * 1e-6))
    bad = tmp_path / "bad.json"
    bad.write_text('{"devices": [{"name": "x", "tflops": {"bf16": -1}, "tbps": 1}]}')
    assert main(["table", str(path), "--by", "roofline", "--no-cache", "--peaks", str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err


def test_builtin_peaks_are_the_default_candidates():
    assert choose(H100, builtin_peaks()).peaks == peaks()


def test_the_tables_route_answers_the_roofline_with_its_envelope(tmp_path):
    from conftest import plugin_apps
    from werkzeug.test import Client
    prefix = "/data/plugin/kinetoscope"
    with plugin_apps(planted(), tmp_path) as (apps, sid):
        def get(query):
            response = Client(apps["/tables"]).get(f"{prefix}/tables?span={sid}&{query}")
            return response.status_code, json.loads(response.get_data())
        code, body = get("by=roofline")
        assert code == 200 and body["by"] == "roofline" and body["sort"] == "-kernel" and body["total"] == 2
        assert [r["name"] for r in body["rows"]] == ["aten::mm", "aten::add"]
        assert body["totals"]["roofs"]["bandwidth_tbps"] == pytest.approx(peaks().bandwidth / 1e12)
        _, by_share = get("by=roofline&sort=roof_pct")
        assert [r["name"] for r in by_share["rows"]] == ["aten::add", "aten::mm"]
        _, gemm = get("by=roofline&filter=gemm")
        assert [r["name"] for r in gemm["rows"]] == ["aten::mm"]
        _, window = get(f"by=roofline&start_us=1000&end_us={1000 + MM_US}")
        assert [(r["name"], r["calls"]) for r in window["rows"]] == [("aten::mm", 1)]
        assert get("by=roofline&sort=bogus")[0] == 400 and get("by=roofline&group=shape")[0] == 400
        code, replayed = (lambda r: (r.status_code, json.loads(r.get_data())))(
            Client(apps["/whatif"]).get(f"{prefix}/whatif?span={sid}&edit=roofline:elementwise>=60%"))
        assert code == 200 and replayed["matched"]["roofline:elementwise>=60%"] == STEPS
