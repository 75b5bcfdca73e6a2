"""analysis/compare/sides.py, analysis/compare/gate.py and `kinetoscope diff`: two runs compared, what changed and why,
noise, the CI gate (exit codes), multi-rank runs."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO, SAMPLES, SHARED_TRACES, requires_shared
from kinetoscope.analysis.compare.figures import PARTS
from kinetoscope.analysis.compare.gate import RuleError, check, parse_rule
from kinetoscope.analysis.compare.sides import RESOLUTION, compare_sides, ranked_changes, spread, status
from kinetoscope.analysis.tables.rows import name_key
from kinetoscope.cli.diff import load_side
from kinetoscope.cli.main import main
from kinetoscope.trace.discovery import resolve

sys.path.insert(0, str(SAMPLES))
from synth.multirank import write_job  # noqa: E402
from synth.output import write_run  # noqa: E402

RESNET0, RESNET4 = SHARED_TRACES / "resnet50_num_workers_0", SHARED_TRACES / "resnet50_num_workers_4"
CONTROL, TEST = SHARED_TRACES / "hta" / "trace_diff" / "control", SHARED_TRACES / "hta" / "trace_diff" / "test"


def compared(base, cand) -> dict:
    return compare_sides(load_side(str(base), resolve(str(base)), None), load_side(str(cand), resolve(str(cand)), None))


def diff(*argv: str, capsys) -> tuple[int, str, str]:
    code = main(["diff", *argv, "--no-cache"])
    out = capsys.readouterr()
    return code, out.out, out.err


def scaled(src, dst, factor: float):
    """A copy of a trace with every time stretched by `factor` from its first event (a uniformly slower run)."""
    doc = json.loads(src.read_text())
    t0 = min(e["ts"] for e in doc["traceEvents"] if isinstance(e.get("ts"), (int, float)))
    for e in doc["traceEvents"]:
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] = t0 + (e["ts"] - t0) * factor
        if isinstance(e.get("dur"), (int, float)):
            e["dur"] = e["dur"] * factor
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(doc))
    return dst


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    """Two seeds of one compute-bound scenario, and the first one 20% slower."""
    root = tmp_path_factory.mktemp("synth")
    for seed in (1, 2):
        write_run(root / f"seed{seed}", "compute", era="2024", seed=seed, steps=8, spans=1, use_gzip=False, worker="w")
    base = next((root / "seed1").glob("*.json"))
    scaled(base, root / "slow" / base.name, 1.2)
    return root


# ---- noise and ranked changes, by hand --------------------------------------------------------------------

@pytest.mark.parametrize("values, expected", [
    ([10.0], None),  # one step: no spread
    ([10.0, 10.0, 10.0], 0.0),
    ([10.0, 12.0, 14.0], 1.4826 * 2.0),  # median 12, deviations 2, 0, 2: MAD 2
    ([10.0, 10.0, 10.0, 10.0, 100.0], 0.0),  # one slow step does not make noise
])
def test_spread_is_a_robust_standard_deviation(values, expected):
    got = spread(np.array(values))
    assert got == expected if expected is None else got == pytest.approx(expected)


@pytest.mark.parametrize("delta, noise, base, expected", [
    (0.0, 5.0, 100.0, "unchanged"), (4.0, 5.0, 100.0, "within noise"), (-5.0, 5.0, 100.0, "within noise"),
    (6.0, 5.0, 100.0, "regression"), (-6.0, 5.0, 100.0, "gain"), (6.0, None, 100.0, "regression"),
    (RESOLUTION * 100.0 / 2, None, 100.0, "unchanged"),  # no spread: under the resolution is no change
])
def test_status(delta, noise, base, expected):
    assert status(delta, noise, base) == expected


def _steps(parts_ms: list[list[float]]) -> dict:
    parts = np.array(parts_ms, float) * 1e6
    return {"step": parts.sum(axis=1), "parts": parts}


def test_ranked_changes_add_up_to_the_step_change():
    # two steps; parts in PARTS order: compute, exposed_comm, dataloader, ...: compute +3, dataloader -10, host +1
    width = len(PARTS)
    base = [[50, 0, 20] + [0] * (width - 3), [52, 0, 20] + [0] * (width - 3)]
    cand = [[53, 0, 10] + [0] * (width - 3), [55, 0, 10] + [0] * (width - 3)]
    host = PARTS.index("host")
    cand[0][host] = cand[1][host] = 1
    ch = ranked_changes(_steps(base), _steps(cand), None, None)
    assert ch["delta_us"] == pytest.approx(-6000.0)
    assert [r["part"] for r in ch["rows"]] == ["dataloader", "compute", "host"]
    assert [r["delta_us"] for r in ch["rows"]] == pytest.approx([-10000.0, 3000.0, 1000.0])
    assert ch["rest_us"] == pytest.approx(0.0)


def test_compute_splits_into_kernels_by_their_share():
    width = len(PARTS)
    base, cand = [[10] + [0] * (width - 1)], [[14] + [0] * (width - 1)]
    kernels_b = {"gemm": (6e6, 1), "relu": (4e6, 1)}  # 60% / 40% of 10 ms
    kernels_c = {"gemm": (10e6, 1), "relu": (4e6, 1)}  # 10/14 and 4/14 of 14 ms
    ch = ranked_changes(_steps(base), _steps(cand), kernels_b, kernels_c)
    (compute,) = ch["rows"]
    assert compute["part"] == "compute" and compute["delta_us"] == pytest.approx(4000.0)
    assert [(k["kernel"], k["base_us"], k["cand_us"]) for k in compute["kernels"]] == [
        ("gemm", 6000.0, 10000.0), (None, 4000.0, 4000.0)]  # relu, 4 ms on both sides, is the "other kernels" row
    assert compute["kernels"][1]["name"] == "1 other kernels"


# ---- the grammar ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, metric, op, value, relative", [
    ("step_time > +5%", "step_time", ">", 5.0, True),
    ("step_time>5%", "step_time", ">", 5.0, True),
    ("exposed_comm >= +2ms", "exposed_comm", ">=", 2000.0, False),
    ("launch_p99 > 300us", "launch_p99", ">", 300.0, False),
    ("launch_p99 > 300µs", "launch_p99", ">", 300.0, False),
    ("step_time < -50%", "step_time", "<", -50.0, True),
    ("memory_peak > +500MB", "memory_peak", ">", 500e6, False),
    ("memory_peak > 1.5GiB", "memory_peak", ">", 1.5 * 1024 ** 3, False),
    ("dataloader_wait <= 0.5s", "dataloader_wait", "<=", 5e5, False),
])
def test_rules_parse(text, metric, op, value, relative):
    rule = parse_rule(text)
    assert (rule.metric, rule.op, rule.relative) == (metric, op, relative)
    assert rule.value == pytest.approx(value)


@pytest.mark.parametrize("text, says", [
    ("step_time", "expected METRIC OP CHANGE"), ("step_time > fast", "expected"), ("step_time = 5%", "expected"),
    ("steptime > 5%", "unknown metric 'steptime'"), ("step_time > 5MB", "unit 'MB' does not fit step_time"),
    ("memory_peak > 5ms", "unit 'ms' does not fit memory_peak"), ("step_time > 5", "expected"),
    ("x" * 10_000, "expected"),
])
def test_bad_rules_say_why(text, says):
    with pytest.raises(RuleError) as err:
        parse_rule(text)
    assert says in str(err.value) and len(str(err.value)) < 600


def test_a_change_within_noise_breaks_no_rule_unless_noise_is_ignored():
    metrics = [{"name": "step_time", "base": 100.0, "cand": 106.0, "delta": 6.0, "delta_pct": 6.0, "noise": 8.0,
                "status": "within noise"}]
    rule = parse_rule("step_time > +5%")
    assert not check([rule], metrics)[0]["broken"] and "within" in check([rule], metrics)[0]["reason"]
    assert check([rule], metrics, ignore_noise=True)[0]["broken"]
    missing = [{**metrics[0], "delta": None, "delta_pct": None, "status": "n/a"}]
    assert not check([rule], missing)[0]["broken"]


# ---- the gate, end to end ---------------------------------------------------------------------------------

def test_a_slower_candidate_fails_the_gate_and_identical_runs_pass(synth, capsys):
    base, slow = str(synth / "seed1"), str(synth / "slow")
    code, out, err = diff(base, slow, "--fail-if", "step_time > +5%", capsys=capsys)
    assert code == 1
    assert "rule broken: 'step_time > +5%'" in err and "BROKEN" in out and "+20.0%" in out
    assert "top changes per step: compute +" in err
    assert "What changed the most" in out  # the top changes come with the failure
    code, out, _ = diff(base, base, "--fail-if", "step_time > +5%", capsys=capsys)
    assert code == 0 and "Gate: passed" in out
    code, _, _ = diff(slow, base, "--fail-if", "step_time > +5%", capsys=capsys)  # 20% faster: holds
    assert code == 0


def test_noise_between_two_seeds_holds_the_gate_unless_ignored(synth, capsys):
    base, other = str(synth / "seed1"), str(synth / "seed2")
    result = compared(base, other)
    step = next(m for m in result["metrics"] if m["name"] == "step_time")
    assert step["status"] == "within noise" and abs(step["delta"]) <= step["noise"]
    rule = "step_time > +0%" if step["delta"] > 0 else "step_time < -0%"
    assert diff(base, other, "--fail-if", rule, capsys=capsys)[0] == 0
    assert diff(base, other, "--fail-if", rule, "--ignore-noise", capsys=capsys)[0] == 1


@pytest.mark.parametrize("argv", [
    ["--fail-if", "step_time > +5 parsecs"], ["--fail-if", "nonsense"], ["--fail-if", "memory_peak > 2ms"],
])
def test_bad_rules_exit_2(synth, capsys, argv):
    code, _, err = diff(str(synth / "seed1"), str(synth / "seed2"), *argv, capsys=capsys)
    assert code == 2 and "bad rule" in err


def test_bad_paths_exit_2(synth, tmp_path, capsys):
    assert diff(str(tmp_path / "nope"), str(synth / "seed1"), capsys=capsys)[0] == 2
    (tmp_path / "empty").mkdir()
    assert diff(str(synth / "seed1"), str(tmp_path / "empty"), capsys=capsys)[0] == 2
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "w.1.pt.trace.json").write_text('{"traceEvents": [')
    code, _, err = diff(str(synth / "seed1"), str(tmp_path / "broken"), capsys=capsys)
    assert code == 2 and "w.1.pt.trace.json" in err


def test_json_output_is_one_document_with_the_gate(synth, capsys):
    code, out, _ = diff(str(synth / "seed1"), str(synth / "slow"), "--format", "json", "--fail-if", "step_time > +5%",
                        capsys=capsys)
    doc = json.loads(out)
    assert code == 1 and doc["gate"][0]["broken"] and doc["steps"]["matched"] == 8
    assert {m["name"] for m in doc["metrics"]} >= {"step_time", "exposed_comm", "dataloader_wait", "memory_peak"}
    # every figure says which statistic it is (the median headline and the per-step means read apart)
    assert all(re.search(r"\((median|p90|mean|allocated)\)$| p50$| p99$", m["label"]) for m in doc["metrics"]), \
        [m["label"] for m in doc["metrics"]]


def test_the_console_script_runs(synth):
    proc = subprocess.run([sys.executable, "-m", "kinetoscope.cli", "diff", str(synth / "seed1"), str(synth / "seed1"),
                           "--no-cache", "--fail-if", "step_time > +1%"], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


# ---- real traces --------------------------------------------------------------------------------------------

@requires_shared
def test_more_dataloader_workers_the_wait_is_the_top_change_and_the_verdict_moves():
    result = compared(RESNET0, RESNET4)
    top = result["changes"]["rows"][0]
    assert top["part"] == "dataloader" and top["delta_us"] < 0
    assert result["verdict"]["base"]["bound"] == "dataloader-bound"
    assert result["verdict"]["cand"]["bound"] != "dataloader-bound" and result["verdict"]["changed"]
    wait = next(m for m in result["metrics"] if m["name"] == "dataloader_wait")
    assert wait["status"] == "gain" and wait["delta_pct"] < -90


@requires_shared
def test_markdown_is_a_pr_comment(capsys):
    code, out, _ = diff(str(RESNET0), str(RESNET4), "--format", "markdown", capsys=capsys)
    assert code == 0
    assert out.startswith("## Kinetoscope diff: ")
    for heading in ("### What changed the most", "### Summary"):
        assert f"\n{heading}\n" in out
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert table and all(line.endswith("|") for line in table)
    assert "| 1 | DataLoader wait (device idle) | −" in out
    assert "dataloader-bound" in out and "→ compute-bound" in out


@requires_shared
def test_ranked_changes_explain_the_step_change_within_5_percent():
    ch = compared(CONTROL, TEST)["changes"]
    assert ch["delta_us"] > 0 and len(ch["rows"]) <= 10
    assert sum(r["delta_us"] for r in ch["rows"]) == pytest.approx(ch["delta_us"], rel=0.05)


@requires_shared
def test_the_tables_are_joined_by_name_and_compute_splits_into_its_kernels():
    result = compared(CONTROL, TEST)
    compute = next(r for r in result["changes"]["rows"] if r["part"] == "compute")
    assert sum(k["delta_us"] for k in compute["kernels"]) == pytest.approx(compute["delta_us"])
    assert compute["kernels"][0]["kernel"] == result["kernels"]["rows"][0]["name"]  # both say what grew most
    kernels, ops = result["kernels"], result["ops"]
    assert 0 < len(kernels["rows"]) <= kernels["rows_total"] and len(ops["rows"]) <= 200
    deltas = [abs(r["delta_us"]) for r in kernels["rows"]]
    assert deltas == sorted(deltas, reverse=True)
    assert not any("nccl" in r["name"].lower() for r in kernels["rows"])  # communication is a part of its own
    assert {r["only_in"] for r in kernels["rows"]} <= {None, "base", "cand"}
    assert all(r["base_us"] == 0 for r in kernels["rows"] if r["only_in"] == "cand")


@requires_shared
@pytest.mark.parametrize("path", [RESNET0, CONTROL, SHARED_TRACES / "torch213_cpu" / "nw0"], ids=lambda p: p.name)
def test_the_parts_of_every_step_add_up_to_it(path):
    for trace in load_side(str(path), resolve(str(path)), None).traces:
        assert np.array_equal(trace.parts_ns.sum(axis=1), trace.step_ns)
        assert (trace.parts_ns >= 0).all()


# ---- multi-rank runs ----------------------------------------------------------------------------------------

def test_multi_rank_runs_are_compared_rank_by_rank_and_as_a_whole(tmp_path):
    write_job(tmp_path / "even", ranks=4, steps=5, straggler=None)
    write_job(tmp_path / "slow", ranks=4, steps=5, straggler=2, straggler_ms=20.0)
    result = compared(tmp_path / "even", tmp_path / "slow")
    assert result["base"]["ranks"] == [0, 1, 2, 3] and result["cand"]["ranks"] == [0, 1, 2, 3]
    ranks = {r["rank"]: r for r in result["ranks"]}
    assert sorted(ranks) == [0, 1, 2, 3]
    for r in ranks.values():  # every rank's step grew by the straggler's 20 ms
        step = next(m for m in r["metrics"] if m["name"] == "step_time")
        assert step["delta"] == pytest.approx(20_000.0, rel=0.05) and step["status"] == "regression"
    whole = next(m for m in result["metrics"] if m["name"] == "step_time")
    assert whole["delta"] == pytest.approx(20_000.0, rel=0.05)
    figures = {m["name"]: m for m in result["metrics"]}
    for side in ("base", "cand"):  # the job's per-step figures are the ranks' own, averaged
        traces = load_side("x", resolve(str(tmp_path / ("even" if side == "base" else "slow"))), None).traces
        assert figures["comm"][side] == pytest.approx(np.mean([t.comm_ns.mean() for t in traces]) / 1e3)
        assert figures["dataloader_wait"][side] == pytest.approx(np.mean([t.dataloader_ns.mean() for t in traces]) / 1e3)
        assert figures["exposed_comm"][side] <= figures["comm"][side]
    ch = result["changes"]
    assert sum(r["delta_us"] for r in ch["rows"]) == pytest.approx(ch["delta_us"], rel=0.05)


def test_traces_read_in_worker_processes_give_the_same_comparison(synth, capsys):
    base, slow = str(synth / "seed1"), str(synth / "slow")
    one = diff(base, slow, "--format", "json", "--jobs", "1", capsys=capsys)[1]
    two = diff(base, slow, "--format", "json", "--jobs", "2", capsys=capsys)[1]
    assert json.loads(one) == json.loads(two)


def test_a_process_with_threads_spawns_its_workers(synth):
    import threading

    from kinetoscope.cli.diff import figures_all
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()  # fork is unsafe now: the workers are spawned
    try:
        paths = [str(p) for p in sorted((synth / "seed1").glob("*.json")) + sorted((synth / "slow").glob("*.json"))]
        outcomes = figures_all([(p, "w", None) for p in paths], workers=2)
    finally:
        stop.set()
    assert [k for k, _ in outcomes] == ["ok", "ok"]
    assert outcomes[1][1].step_ns.sum() == pytest.approx(1.2 * outcomes[0][1].step_ns.sum(), rel=1e-3)


def test_a_straggler_that_appears_is_named_with_the_wait_it_caused(tmp_path, capsys):
    write_job(tmp_path / "even", ranks=4, steps=5, straggler=None)
    write_job(tmp_path / "slow", ranks=4, steps=5, straggler=2, straggler_ms=20.0)
    result = compared(tmp_path / "even", tmp_path / "slow")
    assert result["stragglers"]["base"] == []
    (found,) = result["stragglers"]["cand"]
    assert found["rank"] == 2 and found["caused_wait_us"] > 0
    code, out, _ = diff(str(tmp_path / "even"), str(tmp_path / "slow"), capsys=capsys)
    assert code == 0 and "Stragglers: none → rank 2 (made the others wait " in out
    assert "Rank by rank" in out


def test_a_side_without_steps_is_compared_as_one_step_and_says_so(tmp_path, capsys):
    from conftest import kernel, launch, op, trace_doc, write_trace
    events = [op("aten::mm", 0, 50), launch(1, 5, 1), kernel("gemm", 10, 400, 1)]
    write_trace(tmp_path / "a" / "w.1.pt.trace.json", trace_doc(events))
    write_trace(tmp_path / "b" / "w.1.pt.trace.json", trace_doc([op("ProfilerStep#1", 0, 600)] + events))
    result = compared(tmp_path / "a", tmp_path / "b")
    assert result["steps"]["matched"] == 1
    assert result["warnings"] == ["the baseline has no ProfilerStep in 1 of its 1 traces: each of those is compared as one "
                                  "step (its device window, else the whole trace)"]
    code, out, _ = diff(str(tmp_path / "a"), str(tmp_path / "b"), capsys=capsys)
    assert code == 0 and "Note: the baseline has no ProfilerStep" in out


def test_kernels_and_ops_beyond_the_cap_add_up_in_one_row(monkeypatch):
    from kinetoscope.analysis.compare import figures as compare_figures
    monkeypatch.setattr(compare_figures, "MAX_NAMES", 2)
    rows = {"a": (5.0, 1, 1.0), "b": (3.0, 2, 0.0), "c": (2.0, 3, 4.0), "d": (1.0, 4, 0.5)}
    assert compare_figures._top(rows, "(other ops)") == {"a": (5.0, 1, 1.0), "b": (3.0, 2, 0.0), "(other ops)": (3.0, 7, 4.5)}
    assert compare_figures._top({"a": (1.0, 1)}, "(other kernels)") == {"a": (1.0, 1)}


@pytest.mark.parametrize("name, shown", [
    ("void cudnn::dgrad<float, 512>(int, float const*)", "cudnn::dgrad<float, 512>"),
    ("void at::native::(anonymous namespace)::fill<float>(float*, int)", "at::native::(anonymous namespace)::fill<float>"),
    ("Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pageable -> Device)"),
    ("aten::add", "aten::add"), ("k" * 150, "k" * 99 + "…"),
])
def test_names_in_text_drop_the_parameter_list(name, shown):
    from kinetoscope.formats.compare import short_kernel_name
    assert short_kernel_name(name) == shown


def test_names_cut_to_the_same_text_stay_two_rows_and_join_by_their_full_name(synth, tmp_path):
    """Kernels and ops named past 1,000 characters are shown cut; a comparison joins rows by the full name
    (`compare_figures.join_name`): two kernels whose names differ only after the cut stay two rows, each carrying
    the tables' `name_key` and `name_chars`, and each joins the same kernel on the other side."""
    doc = json.loads(next((synth / "seed1").glob("*.json")).read_text())
    long_names = ["k" * 1200 + "_a", "k" * 1200 + "_b"]
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    assert len(kernels) > 4
    for i, event in enumerate(kernels):
        event["name"] = long_names[i % 2]
    for side in ("base", "cand"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "w.pt.trace.json").write_text(json.dumps(doc))
    result = compared(tmp_path / "base", tmp_path / "cand")
    rows = [r for r in result["kernels"]["rows"] if r["name"].startswith("kkk")]
    assert len(rows) == 2 and len({r["name"] for r in rows}) == 1  # one shown text, two kernels
    assert sorted(r["name_key"] for r in rows) == sorted(name_key(n) for n in long_names)
    assert all(r["name_chars"] == 1202 and r["only_in"] is None and r["delta_us"] == 0 for r in rows)
    assert all(r["base_count"] == r["cand_count"] > 0 for r in rows)
    assert "name_key" not in result["ops"]["rows"][0]  # names shown whole carry no key


@pytest.mark.parametrize("rule", ["step_time > +\u0665%", "step_time > +\uff15%", "step_time\u2003> +5%", "idle > 5\u0660ms"])
def test_rules_read_ascii_digits_and_blanks_only(rule):
    with pytest.raises(RuleError, match="bad rule"):
        parse_rule(rule)
    assert parse_rule("step_time > +5%").value == 5.0 and parse_rule("idle > 2µs").value == 2.0
