"""Synthetic multi-rank NCCL jobs (samples/synth/multirank.py): the ranks view finds every planted figure
exactly (waits, transfer, bandwidth, communication and overlap per rank, the straggler, missing ranks)."""
from __future__ import annotations

import gzip
import json
import sys

import pytest
from conftest import SAMPLES
from kinetoscope.analysis.distributed.ranks import rank_digest, ranks_view
from kinetoscope.analysis.report import analyze
from kinetoscope.trace.loader import decode_bytes, load_trace

sys.path.insert(0, str(SAMPLES))
from synth.multirank import make_job  # noqa: E402


def digests_of(traces: dict) -> list:
    """The rank digests of a job's traces (by rank), each decoded from its JSON text."""
    digests = []
    for r, doc in traces.items():
        model = decode_bytes(json.dumps(doc).encode())
        digests.append(rank_digest(model, analyze(model), worker=f"rank{r}"))
    return digests


def ranks_view_of(traces: dict) -> dict:
    return ranks_view(digests_of(traces))


def jittered_2d_job() -> dict:
    """The 2-D job's traces with rank 1's collective kernels ending 40 µs early or late by turns."""
    from synth.groups import KERNELS
    from synth.groups import make_job as make_2d_job

    traces, _ = make_2d_job()
    k = 0
    for e in traces[1]["traceEvents"]:
        if e["name"] in KERNELS.values():
            e["dur"] += 40.0 if k % 2 else -40.0
            k += 1
    return traces


def view_and_truth(**kwargs):
    traces, truth = make_job(**kwargs)
    return ranks_view_of(traces), truth


@pytest.mark.parametrize("kwargs", [
    {"ranks": 4, "steps": 5, "straggler": 2, "overlap": True},
    {"ranks": 4, "steps": 5, "straggler": None, "overlap": True},
    {"ranks": 4, "steps": 5, "straggler": 1, "missing": [3], "overlap": False},
    {"ranks": 4, "steps": 5, "straggler": 3, "missing": [3], "overlap": False},  # the straggler's trace is missing
    {"ranks": 16, "steps": 6, "straggler": 11, "overlap": True},
], ids=["straggler-overlap", "no-straggler", "missing-rank", "missing-straggler", "16-ranks"])
def test_every_planted_figure_is_found_exactly(kwargs):
    view, truth = view_and_truth(**kwargs)
    assert view["world_size"] == truth["world_size"] and view["missing_ranks"] == truth["missing_ranks"]
    assert [s["rank"] for s in view["stragglers"]] == truth["stragglers"]
    assert view["matched_instances"] == len(truth["instances"])
    for got, want in zip(view["instances"], truth["instances"]):
        assert (got["kind"], got["seq"], got["last_rank"], got["bytes"]) == (want["kind"], want["seq"], want["last_rank"], want["bytes"])
        assert got["transfer_us"] == pytest.approx(want["transfer_us"], abs=1e-3)
        assert got["dur_us"] == pytest.approx(want["dur_us"], abs=1e-3)
        assert got["start_us"] == pytest.approx(want["start_us"], abs=1e-3)  # each from its own trace's start
        assert got["wait_us"] == pytest.approx(want["wait_us"], abs=1e-3)
        assert got["algbw_gbps"] == pytest.approx(want["algbw_gbps"], rel=1e-3)
        assert got["busbw_gbps"] == pytest.approx(want["busbw_gbps"], rel=1e-3)
    for got, want in zip(view["ranks"], truth["ranks"]):
        assert got["rank"] == want["rank"]
        for key in ("comm_us", "compute_us", "exposed_comm_us", "wait_us"):
            assert got[key] == pytest.approx(want[key], abs=1e-3), (got["rank"], key)
        assert got["waited_for"] == want["waited_for"]
        assert got["overlap_pct"] == pytest.approx(want["overlap_pct"], abs=1e-6)


@pytest.mark.parametrize("run", ["nccl_straggler", "nccl_missing_rank"])
def test_committed_samples_are_todays_generator_output_and_are_found(run):
    truth_path = SAMPLES / "truth" / "ranks" / f"{run}.json"
    if not truth_path.is_file():
        pytest.skip(f"{truth_path} is missing")
    committed = json.loads(truth_path.read_text())
    traces, truth = make_job(**committed["job"])
    assert json.loads(json.dumps(truth)) == {k: v for k, v in committed.items() if k != "job"}
    files = sorted((SAMPLES / "logs" / "synthetic_ranks" / run).iterdir())
    assert [json.loads(gzip.decompress(f.read_bytes())) for f in files] == [traces[r] for r in sorted(traces)]
    digests = []
    for f in files:
        model = load_trace(str(f), cache_dir=None)
        digests.append(rank_digest(model, analyze(model), worker=f.name.split(".")[0]))
    view = ranks_view(digests)
    assert [s["rank"] for s in view["stragglers"]] == committed["stragglers"]
    assert view["missing_ranks"] == committed["missing_ranks"]


def test_a_2d_parallel_job_is_matched_by_group_and_sequence_number_as_planted():
    """samples/synth/groups.py: tp groups inside dp groups, whose calls interleave differently on half the ranks.
    Every group, its members, instances and waits are found as planted; the ordinal match would have paired calls
    of two groups in `ordinal_instances_mixing_groups` instances, and the (group, Seq) match pairs none."""
    import msgspec
    from kinetoscope.analysis.distributed import ranks as ranks_module
    from synth.groups import make_job as make_2d_job

    traces, truth = make_2d_job(steps=3, tp_late_ms=2.0)
    digests = digests_of(traces)
    view = ranks_view(digests)
    found = {g["name"]: g for g in view["process_groups"]}
    assert set(found) == set(truth["groups"]) and view["group_health"] == []
    for name, want in truth["groups"].items():
        got = found[name]
        assert (got["desc"], got["ranks"], got["matched_instances"]) == (want["desc"], want["ranks"], want["instances"])
        assert got["wait_us"] == pytest.approx(want["wait_us"], abs=0.01), name
    assert found["1"]["waited_for"] == {"rank": 0, "instances": 6, "of": 6}  # the slow tp rank
    assert truth["ordinal_instances_mixing_groups"] >= 1
    unnumbered = [msgspec.structs.replace(d, calls=msgspec.structs.replace(d.calls, seq=d.calls.seq * 0 - 1)) for d in digests]
    by_order = ranks_module._match(unnumbered)
    mixed = [k for k in range(len(by_order["kind"]))
             if len({GROUP_DIM[n] for n in _instance_groups(unnumbered, by_order, k)}) > 1]
    assert len(mixed) == truth["ordinal_instances_mixing_groups"]


GROUP_DIM = {"1": "tp", "2": "tp", "3": "dp", "4": "dp"}


def _instance_groups(digests, matched, k):
    """The process groups of the calls an ordinal-matched instance paired (found by each rank's start and length)."""
    out = set()
    for i, d in enumerate(digests):
        if matched["dur"][k, i] < 0:
            continue
        starts = d.calls.start_ns - d.origin_ns
        out |= {d.calls.group[j] for j in range(d.calls.count)
                if starts[j] == matched["start"][k, i] and d.calls.dur_ns[j] == matched["dur"][k, i]}
    return out


def test_the_committed_2d_parallel_sample_is_todays_generator_output_and_is_found():
    from synth.groups import make_job as make_2d_job

    committed = json.loads((SAMPLES / "truth" / "ranks" / "fsdp_tp.json").read_text())
    traces, truth = make_2d_job(**committed["job"])
    assert json.loads(json.dumps(truth)) == {k: v for k, v in committed.items() if k != "job"}
    files = sorted((SAMPLES / "logs" / "synthetic_ranks" / "fsdp_tp").iterdir())
    assert [json.loads(gzip.decompress(f.read_bytes())) for f in files] == [traces[r] for r in sorted(traces)]
    digests = [rank_digest(m, analyze(m), worker=f.name.split(".")[0])
               for f in files for m in [load_trace(str(f), cache_dir=None)]]
    found = {g["name"]: (g["desc"], g["ranks"], g["matched_instances"]) for g in ranks_view(digests)["process_groups"]}
    assert found == {n: (g["desc"], g["ranks"], g["instances"]) for n, g in committed["groups"].items()}


def test_the_ranks_clock_offsets_are_found_from_the_collectives_ends():
    """Each synthetic rank writes on its own clock (3.7 ms apart in multirank.py, 2.9 ms in groups.py, where rank 3
    shares no group with rank 0 and is placed through its partners); collectives end together, so the offsets
    come back to within the float precision of 1.7e15 µs timestamps, with no spread."""
    from synth.groups import make_job as make_2d_job
    from synth.multirank import make_job as make_1d_job

    for (traces, _truth), step_us in ((make_1d_job(ranks=4, steps=5, straggler=2), 3700.0), (make_2d_job(), 2900.0)):
        clocks = ranks_view_of(traces)["clock_offsets"]
        assert clocks["reference_rank"] == 0
        assert [c["rank"] for c in clocks["ranks"]] == [0, 1, 2, 3]
        assert [c["offset_us"] for c in clocks["ranks"]] == pytest.approx([0, step_us, 2 * step_us, 3 * step_us], abs=1.0)
        assert all(c["spread_us"] <= 1.0 for c in clocks["ranks"])


def test_ranks_whose_groups_never_meet_the_reference_have_no_offset():
    from synth.groups import make_job as make_2d_job

    traces, _ = make_2d_job()
    tp_only = {r: {**doc, "traceEvents": [e for e in doc["traceEvents"]  # {0, 1} and {2, 3} never meet
                                          if (e.get("args") or {}).get("Process Group Description", "tp") == "tp"]}
               for r, doc in traces.items()}
    rows = {c["rank"]: c for c in ranks_view_of(tp_only)["clock_offsets"]["ranks"]}
    assert rows[1]["offset_us"] == pytest.approx(2900.0, abs=1.0)
    assert rows[2]["offset_us"] is None and rows[3]["offset_us"] is None and rows[3]["instances"] > 0


def test_ranks_that_do_not_end_their_collectives_together_carry_a_wait_uncertainty():
    """Rank 1's collectives end 40 µs early or late by turns: its clock offset stays within that of the planted
    2.9 ms, its spread is about 40 µs, and its summed wait is known to within spread x sqrt(instances)."""
    view = ranks_view_of(jittered_2d_job())
    clocks = {c["rank"]: c for c in view["clock_offsets"]["ranks"]}
    assert clocks[1]["offset_us"] == pytest.approx(2900.0, abs=41.0) and 20.0 <= clocks[1]["spread_us"] <= 80.0
    rows = {r["rank"]: r for r in view["ranks"]}
    assert rows[1]["wait_uncertainty_us"] == pytest.approx(clocks[1]["spread_us"] * clocks[1]["instances"] ** 0.5, abs=0.01)
    assert rows[0]["wait_uncertainty_us"] <= rows[1]["wait_uncertainty_us"]


def test_each_instance_carries_how_far_apart_its_ranks_ended():
    """Each matched instance's waits are known to within how far apart its ranks ended once the clocks are aligned
    (clocks.instance_uncertainty): 0 where the planted collectives end together; rank 1's instances, which end 40 µs
    early or late by turns, about 40 µs plus what its offset absorbs."""
    from synth.groups import make_job as make_2d_job

    exact = ranks_view_of(make_2d_job()[0])
    assert [i["wait_uncertainty_us"] for i in exact["instances"]] == pytest.approx([0.0] * len(exact["instances"]), abs=0.5)
    assert "instance_spread_ns" not in exact["clock_offsets"]
    jittered = ranks_view_of(jittered_2d_job())
    with_rank1 = [i for i in jittered["instances"] if i["dur_us"][1] is not None]
    without = [i for i in jittered["instances"] if i["dur_us"][1] is None]
    assert all(30.0 <= i["wait_uncertainty_us"] <= 90.0 for i in with_rank1)
    assert all(i["wait_uncertainty_us"] <= 0.5 for i in without)
