"""The ranks view: collectives matched across ranks, waits, stragglers, missing ranks; the `ranks` route and
the CLI's rank summary (definitions in ../shared/docs/distributed.md)."""
from __future__ import annotations

import json

import msgspec
import pytest
from conftest import MS, SHARED_TRACES, gloo_rank, kernel, launch, op, requires_shared, trace_doc, write_trace
from kinetoscope.analysis.distributed.collectives import collective_calls, collective_type
from kinetoscope.analysis.distributed.ranks import rank_digest, ranks_view
from kinetoscope.analysis.report import analyze
from kinetoscope.cli.main import main
from kinetoscope.trace.loader import decode_bytes, load_trace


def digest_of(doc: dict, worker: str):
    model = decode_bytes(json.dumps(doc).encode())
    return rank_digest(model, analyze(model), worker=worker)


def test_collective_types_of_every_spelling():
    for name, kind in [("nccl:all_reduce", "all_reduce"), ("gloo:all_reduce", "all_reduce"),
                       ("c10d::allreduce_", "all_reduce"), ("c10d::_allgather_base_", "all_gather"),
                       ("nccl:_all_gather_base", "all_gather"), ("c10d::reduce_scatter_tensor_coalesced_", "reduce_scatter"),
                       ("nccl:all_to_all", "all_to_all"), ("c10d::alltoall_base_", "all_to_all"),
                       ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "all_reduce"),
                       ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "all_gather"),
                       ("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", "send_recv"),
                       ("c10d::broadcast_", "broadcast"), ("record_param_comms", "collective")]:
        assert collective_type(name) == kind, name


def test_the_slow_rank_and_no_other_is_the_straggler_with_exact_waits():
    digests = [digest_of(gloo_rank(r, slow_rank=2), f"rank{r}") for r in range(4)]
    view = ranks_view(digests)
    assert view["world_size"] == 4 and view["missing_ranks"] == [] and not view["partial"]
    assert view["matched_instances"] == 5 and view["steps"] == [2, 3, 4, 5, 6]
    (straggler,) = view["stragglers"]
    assert straggler["rank"] == 2 and straggler["waited_for"] == 5 and straggler["of"] == 5
    assert straggler["steps_last"] == [2, 3, 4, 5, 6]
    assert straggler["caused_wait_us"] == pytest.approx(5 * 40 * MS)
    assert straggler["doing"][0]["name"] == "aten::mm"
    for inst in view["instances"]:
        assert inst["kind"] == "all_reduce" and inst["last_rank"] == 2
        assert inst["transfer_us"] == pytest.approx(0.3 * MS)
        assert inst["wait_us"] == [pytest.approx(40 * MS), pytest.approx(40 * MS), 0.0, pytest.approx(40 * MS)]
    waits = {row["rank"]: row["wait_us"] for row in view["ranks"]}
    assert waits == {0: pytest.approx(200 * MS), 1: pytest.approx(200 * MS), 2: 0.0, 3: pytest.approx(200 * MS)}


def test_equal_ranks_flag_no_straggler():
    view = ranks_view([digest_of(gloo_rank(r), f"rank{r}") for r in range(4)])
    assert view["matched_instances"] == 5 and view["stragglers"] == []
    assert all(inst["last_rank"] is None for inst in view["instances"])  # equal durations: nobody waited


def test_jitter_alone_names_no_straggler():
    """Equal ranks whose collectives last randomly longer or shorter (as gloo on a busy CPU does) take turns
    being last: over 50 jobs of 4 ranks and 10 collectives, at most one is named a straggler by chance."""
    import random
    named = 0
    for seed in range(50):
        rng = random.Random(seed)
        digests = []
        for r in range(4):
            doc = gloo_rank(r, steps=10)
            for e in doc["traceEvents"]:
                if e["name"] == "gloo:all_reduce":
                    e["dur"] = rng.uniform(3, 20) * MS
            digests.append(digest_of(doc, f"rank{r}"))
        named += bool(ranks_view(digests)["stragglers"])
    assert named <= 1, named


def test_a_slow_rank_among_jittery_ones_is_still_named():
    import random
    rng = random.Random(7)
    digests = []
    for r in range(4):
        doc = gloo_rank(r, steps=10, slow_rank=1, slow_ms=25)
        for e in doc["traceEvents"]:
            if e["name"] == "gloo:all_reduce":
                e["dur"] += rng.uniform(0, 8) * MS
        digests.append(digest_of(doc, f"rank{r}"))
    assert [s["rank"] for s in ranks_view(digests)["stragglers"]] == [1]


def test_a_missing_rank_is_reported_not_guessed():
    view = ranks_view([digest_of(gloo_rank(r, slow_rank=1), f"rank{r}") for r in (0, 1, 3)])
    assert view["missing_ranks"] == [2] and view["partial"] and [row["rank"] for row in view["ranks"]] == [0, 1, 3]
    assert [s["rank"] for s in view["stragglers"]] == [1]


def test_nccl_calls_take_their_kernels_duration():
    events = [op("ProfilerStep#7", 0, 1000, cat="user_annotation"),
              op("record_param_comms", 10, 50), op("nccl:all_reduce", 12, 40, cat="user_annotation"),
              launch(20, 5, corr=1), kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", 100, 300, corr=1),
              op("aten::mm", 100, 200), launch(110, 5, corr=2), kernel("gemm", 120, 100, corr=2)]
    model = decode_bytes(json.dumps(trace_doc(events)).encode())
    calls = collective_calls(model)
    assert calls.kind == ("all_reduce",) and calls.on_device.tolist() == [True]
    assert calls.dur_ns.tolist() == [300_000] and calls.step.tolist() == [7]


@requires_shared
def test_the_two_trace_filter_ranks_have_their_collectives_matched():
    folder = SHARED_TRACES / "hta" / "trace_filter"
    digests = []
    for rank in (0, 1):
        model = load_trace(str(folder / f"sampled_rank-{rank}.json.gz"), cache_dir=None)
        digests.append(rank_digest(model, analyze(model), worker=f"sampled_rank-{rank}"))
    assert [d.rank for d in digests] == [0, 1] and digests[0].world_size == 128
    assert digests[0].calls.count == digests[1].calls.count == 10
    view = ranks_view(digests)
    assert view["matched_instances"] == 10 and view["partial"] and len(view["missing_ranks"]) == 126
    kinds = [i["kind"] for i in view["instances"]]
    assert kinds.count("all_reduce") == 4 and kinds.count("all_to_all") == 4 and kinds.count("all_gather") == 2
    for inst in view["instances"]:  # transfer is the shorter of the two device durations
        assert inst["transfer_us"] == min(inst["dur_us"]) and min(inst["wait_us"]) == 0.0


def test_the_cli_prints_the_rank_summary_first(tmp_path, capsys):
    for r in range(4):
        write_trace(tmp_path / "job" / f"rank{r}.1700000000000.pt.trace.json", gloo_rank(r, slow_rank=3))
    assert main(["report", str(tmp_path / "job"), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#### ranks of run job: 4 of 4 present ####")
    assert "Straggler: rank 3 (rank3)" in out
    assert main(["report", str(tmp_path / "job"), "--no-cache", "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert [s["rank"] for s in body["ranks"]["job"]["stragglers"]] == [3]
    assert "_digest" not in body["traces"][0]


def test_the_ranks_route_works_from_digests_that_outlive_eviction(tmp_path):
    import time

    from kinetoscope import pipeline
    from kinetoscope.server import routes
    from kinetoscope.server.service import TraceService
    for r in range(4):
        write_trace(tmp_path / "job" / f"rank{r}.1700000000000.pt.trace.json", gloo_rank(r, slow_rank=1))
    service = TraceService(str(tmp_path), cache_dir=None, rescan_s=3600, decode_in_child=False, prepare=pipeline.prepare,
                           memory_budget_bytes=1)  # one model resident at a time
    try:
        service.scan_now()
        deadline = time.monotonic() + 60
        while (answer := routes.ranks_impl(service, "job"))["pending"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert answer["pending"] == 0 and answer["failed"] == 0
        assert len(service._spans.ready) == 1  # the models were evicted; their digests were kept
        view = answer["view"]
        assert [s["rank"] for s in view["stragglers"]] == [1] and view["ranks_present"] == 4
        assert all(row["id"] for row in view["ranks"])
        with pytest.raises(routes.NotFound):
            routes.ranks_impl(service, "nope")
    finally:
        service.close()


def _numbered_rank(rank: int, with_steps: bool, durations_ms: dict) -> dict:
    """NCCL-free CPU collectives carrying torch >= 2.1 fields: Seq, process group, message size."""
    events, t = [], 0.0
    if with_steps:
        events.append(op("ProfilerStep#9", 0, 100 * MS, cat="user_annotation"))
    for seq, (kind, dur_ms) in durations_ms.items():
        fields = {"Seq": seq, "Process Group Name": "0", "Collective name": kind, "In msg nelems": 1_000_000,
                  "Out msg nelems": 2_000_000 if kind == "allgather" else 1_000_000, "Group size": 2, "dtype": "Float"}
        events.append(op("record_param_comms", t + 10, dur_ms * MS + 4, **fields))
        events.append(op(f"gloo:{kind}", t + 12, dur_ms * MS, tid=2, cat="user_annotation"))
        t += 30 * MS
    return trace_doc(events, distributedInfo={"backend": "gloo", "rank": rank, "world_size": 2})


def test_seq_numbers_match_calls_and_give_the_bandwidth():
    # rank 1 has no ProfilerStep and issues the two collectives in the other order: only Seq can match them
    r0 = _numbered_rank(0, True, {5: ("allreduce", 2.0), 6: ("allgather", 1.0)})
    r1 = _numbered_rank(1, False, {6: ("allgather", 3.0), 5: ("allreduce", 1.0)})
    view = ranks_view([digest_of(r0, "rank0"), digest_of(r1, "rank1")])
    assert view["matched_instances"] == 2
    by_seq = {i["seq"]: i for i in view["instances"]}
    reduce, gather = by_seq[5], by_seq[6]
    assert (reduce["kind"], reduce["group"], reduce["last_rank"]) == ("all_reduce", "0", 1)
    assert reduce["bytes"] == 4_000_000 and reduce["transfer_us"] == pytest.approx(1 * MS)
    assert reduce["algbw_gbps"] == pytest.approx(4.0) and reduce["busbw_gbps"] == pytest.approx(4.0)  # 2(n-1)/n = 1
    assert gather["bytes"] == 8_000_000 and gather["last_rank"] == 0  # all_gather: S is the output size
    assert gather["algbw_gbps"] == pytest.approx(8.0) and gather["busbw_gbps"] == pytest.approx(4.0)  # (n-1)/n


@requires_shared
def test_rank_rows_carry_the_oracle_communication_figures():
    oracle = {json.loads(line)["trace"]: json.loads(line) for line in (SHARED_TRACES.parent / "oracle" / "comm.jsonl").open()}
    digests = []
    for rank in (0, 1):
        name = f"hta/trace_filter/sampled_rank-{rank}.json.gz"
        model = load_trace(str(SHARED_TRACES / name), cache_dir=None)
        digests.append(rank_digest(model, analyze(model), worker=f"sampled_rank-{rank}"))
    for row in ranks_view(digests)["ranks"]:
        (want,) = oracle[f"hta/trace_filter/sampled_rank-{row['rank']}.json.gz"]["devices"]
        for key in ("comm_us", "compute_us", "exposed_comm_us"):
            assert row[key] == pytest.approx(want[key], rel=0.005), key
        assert row["overlap_pct"] == pytest.approx(want["overlap_pct"], abs=0.5)


def test_the_ranks_route_builds_its_view_once_per_set_of_loads_and_again_after_a_reload(tmp_path):
    import os
    import time

    from kinetoscope import pipeline
    from kinetoscope.server import routes
    from kinetoscope.server.service import TraceService

    def settled():
        deadline = time.monotonic() + 60
        while (answer := routes.ranks_impl(service, "job"))["pending"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert answer["pending"] == 0 and answer["failed"] == 0
        return answer

    paths = [tmp_path / "job" / f"rank{r}.1700000000000.pt.trace.json" for r in range(4)]
    for r, path in enumerate(paths):
        write_trace(path, gloo_rank(r, slow_rank=1))
    service = TraceService(str(tmp_path), cache_dir=None, rescan_s=3600, decode_in_child=False, prepare=pipeline.prepare)
    try:
        service.scan_now()
        first = settled()
        assert [s["rank"] for s in first["view"]["stragglers"]] == [1]
        again = routes.ranks_impl(service, "job")
        assert again["view"] is first["view"] and again["groups"] is first["groups"]  # not built again
        for r, path in enumerate(paths):  # the same job, now rank 2 is slow: every digest is replaced
            write_trace(path, gloo_rank(r, slow_rank=2))
            os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        service.scan_now()
        after = settled()
        assert after["view"] is not first["view"]
        assert [s["rank"] for s in after["view"]["stragglers"]] == [2]
        fresh = routes._ranks_of([msgspec.structs.replace(service.digest(sid), worker=f.worker) for sid, f, _ in service.snapshot()],
                                 {f.worker: sid for sid, f, _ in service.snapshot()})
        assert json.dumps(fresh, sort_keys=True) == json.dumps((after["view"], after["groups"]), sort_keys=True)
    finally:
        service.close()


# A 2 x 2 job as FSDP over TP lays it out: tensor-parallel groups {0, 1} and {2, 3} ("tp", names "1" and "2"),
# data-parallel groups {0, 2} and {1, 3} ("dp", names "3" and "4"). Every call is an all_reduce; ranks 2 and 3 issue
# their step's dp call before the tp ones, so the k-th all_reduce of a step is another group's call on half the ranks.
GROUPS = {0: (("1", "[0, 1]"), ("3", "[0, 2]")), 1: (("1", "[0, 1]"), ("4", "[1, 3]")),
          2: (("2", "[2, 3]"), ("3", "[0, 2]")), 3: (("2", "[2, 3]"), ("4", "[1, 3]"))}


def _fsdp_tp_rank(rank: int, slow_tp_ms: float = 0.0, drop_dp_seq: int = -1, ranks_text: str = "") -> dict:
    (tp, tp_ranks), (dp, dp_ranks) = GROUPS[rank]
    events, t = [], 0.0
    for step in range(3):
        events.append(op(f"ProfilerStep#{step}", t, 90 * MS, cat="user_annotation"))
        calls = [("tp", tp, tp_ranks, 2 * step), ("tp", tp, tp_ranks, 2 * step + 1), ("dp", dp, ranks_text or dp_ranks, step)]
        if rank >= 2:
            calls = calls[2:] + calls[:2]
        for desc, name, members, seq in calls:
            dur = (3.0 if desc == "dp" else 1.0) + (slow_tp_ms if desc == "tp" and rank == 1 else 0.0)  # 1 waits for 0
            if not (desc == "dp" and seq == drop_dp_seq):
                fields = {"Seq": seq, "Process Group Name": name, "Process Group Description": desc,
                          "Process Group Ranks": members, "Collective name": "allreduce", "In msg nelems": 1 << 20,
                          "Out msg nelems": 1 << 20, "Group size": 2, "dtype": "Float"}
                events.append(op("record_param_comms", t + 1, dur * MS + 0.004, **fields))
                events.append(op("gloo:all_reduce", t + 1.002, dur * MS, tid=2, cat="user_annotation"))
            t += 20 * MS
        t += 30 * MS
    return trace_doc(events, distributedInfo={"backend": "gloo", "rank": rank, "world_size": 4})


def test_an_fsdp_over_tp_job_is_matched_by_group_and_sequence_number_not_by_ordinal():
    import msgspec
    from kinetoscope.analysis.distributed import ranks as ranks_module
    digests = [digest_of(_fsdp_tp_rank(r), f"rank{r}") for r in range(4)]
    view = ranks_view(digests)
    groups = {g["name"]: g for g in view["process_groups"]}
    assert {n: (g["desc"], g["ranks"], g["ranks_said"], g["matched_instances"]) for n, g in groups.items()} == {
        "1": ("tp", [0, 1], "[0, 1]", 6), "2": ("tp", [2, 3], "[2, 3]", 6), "3": ("dp", [0, 2], "[0, 2]", 3),
        "4": ("dp", [1, 3], "[1, 3]", 3)}
    assert view["matched_instances"] == 18 and view["group_health"] == []

    def wrong_pairs(ds) -> int:  # matched instances holding calls of two groups
        matched = ranks_module._match(ds)
        bad = 0
        for k, group in enumerate(matched["group"]):
            members = [i for i in range(len(ds)) if matched["dur"][k, i] >= 0]
            mine = {GROUPS[ds[i].rank][0][0] if group in ("1", "2") else GROUPS[ds[i].rank][1][0] for i in members}
            bad += len(mine) > 1
        return bad

    assert wrong_pairs(digests) == 0
    unnumbered = [msgspec.structs.replace(d, calls=msgspec.structs.replace(d.calls, seq=d.calls.seq * 0 - 1)) for d in digests]
    ordinal = ranks_module._match(unnumbered)  # the fallback pairs the k-th all_reduce of a step on every rank
    assert any(len({ds_group for ds_group in _groups_of(unnumbered, ordinal, k)}) > 1 for k in range(len(ordinal["kind"])))


def _groups_of(digests, matched, k):
    """The process groups of the calls an instance paired (the ordinal match's instances keep no call index: the
    rank's k-th call of that step and type)."""
    from kinetoscope.analysis.distributed import ranks as ranks_module
    out = set()
    for i, d in enumerate(digests):
        if matched["dur"][k, i] < 0:
            continue
        for j, key in enumerate(ranks_module.call_keys(d.calls)):
            if key[0] == "order" and key[1] == matched["step"][k] and d.calls.dur_ns[j] == matched["dur"][k, i] \
                    and d.calls.start_ns[j] - d.origin_ns == matched["start"][k, i]:
                out.add(d.calls.group[j])
    return out


def test_a_group_whose_ranks_disagree_or_miss_a_sequence_number_is_a_health_item():
    digests = [digest_of(_fsdp_tp_rank(0, drop_dp_seq=1), "rank0"), digest_of(_fsdp_tp_rank(1), "rank1"),
               digest_of(_fsdp_tp_rank(2), "rank2"), digest_of(_fsdp_tp_rank(3, ranks_text="[1, 2]"), "rank3")]
    view = ranks_view(digests)
    items = {(h["check"], h["group"]): h for h in view["group_health"]}
    gap = items[("seq_gaps", "3")]
    assert gap["rank"] == 0 and gap["missing"] == 1 and "rank 0 has no collective with Seq 1" in gap["found"]
    assert "'dp' (3)" in gap["found"]
    disagree = items[("group_ranks_disagree", "4")]
    assert "rank 1 say [1, 3]" in disagree["found"] and "rank 3 say [1, 2]" in disagree["found"]
    assert set(items) == {("seq_gaps", "3"), ("group_ranks_disagree", "4")}
    assert {g["name"]: g["matched_instances"] for g in view["process_groups"]}["3"] == 2  # Seq 1 is on rank 2 only


def test_a_slow_tp_rank_is_what_its_tp_group_waits_for():
    view = ranks_view([digest_of(_fsdp_tp_rank(r, slow_tp_ms=5.0), f"rank{r}") for r in range(4)])
    groups = {g["name"]: g for g in view["process_groups"]}
    tp = groups["1"]
    assert tp["waited_for"] == {"rank": 0, "instances": 6, "of": 6}
    assert tp["wait_us"]["1"] == pytest.approx(6 * 5000, rel=0.01) and tp["wait_us"]["0"] == 0
    assert tp["skew_us_median"] == pytest.approx(5000, rel=0.01) and groups["2"]["waited_for"] is None


def test_comms_id_ties_a_collective_to_its_kernel_where_no_launch_does():
    """A collective captured in a CUDA graph: its NCCL kernel's correlation is the replay's, so no launch links the
    call to it; the kernel carries the call's `Comms Id` and `Seq` (Kineto copies them), which tie the two."""
    def rank(comms: bool) -> dict:
        fields = {"Seq": 7, "Process Group Name": "0", "Collective name": "allreduce", "In msg nelems": 1024,
                  "Out msg nelems": 1024, "Group size": 2, "dtype": "Float", **({"Comms Id": 9001} if comms else {})}
        nccl = kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 2 * MS, 5 * MS, 999,
                      stream=20)
        nccl["args"].update(fields)
        events = [op("ProfilerStep#1", 0, 20 * MS, cat="user_annotation"),
                  op("record_param_comms", 1 * MS, 0.05 * MS, **fields), op("nccl:all_reduce", 1.01 * MS, 0.03 * MS), nccl]
        return trace_doc(events)
    with_id = collective_calls(decode_bytes(json.dumps(rank(True)).encode()))
    without = collective_calls(decode_bytes(json.dumps(rank(False)).encode()))
    assert with_id.on_device.tolist() == [True] and with_id.dur_ns.tolist() == [5_000_000]
    assert without.on_device.tolist() == [False] and without.dur_ns.tolist() == [30_000]


def test_a_digest_whose_call_columns_differ_in_length_is_refused():
    """A sidecar's rank digest is checked before the ranks view reads it: its per-call columns, the tuples (types,
    groups, descriptions) as well as the arrays, hold one value per call."""
    import msgspec
    from kinetoscope.analysis.distributed.ranks import RankDigest
    from kinetoscope.index.validate import ModelInvalid, check_summary
    digest = digest_of(_fsdp_tp_rank(0), "rank0")
    check_summary({}, digest, RankDigest)
    for column in ("group_desc", "kind"):
        short = msgspec.structs.replace(digest, calls=msgspec.structs.replace(digest.calls, **{column: getattr(digest.calls, column)[:-1]}))
        with pytest.raises(ModelInvalid, match="unequal lengths"):
            check_summary({}, short, RankDigest)
