"""Which traces of a run are ranks of one job (analysis/distributed/jobs.py): only those that say so. A folder of
unrelated profiles is never shown as ranks, and no verdict is pooled across them."""
from __future__ import annotations

import json

import pytest
from conftest import SHARED_TRACES, gloo_rank, kernel, launch, one_step_doc, op, requires_shared, trace_doc, write_trace
from kinetoscope.analysis.distributed.jobs import COLLECTIVES, DISTRIBUTED, INDEPENDENT, NAMING, job_groups
from kinetoscope.analysis.distributed.ranks import rank_digest, ranks_view
from kinetoscope.analysis.report import analyze, verdict_entry, with_run_verdicts
from kinetoscope.cli.main import main
from kinetoscope.trace.loader import decode_bytes


def digest_of(doc: dict, worker: str):
    model = decode_bytes(json.dumps(doc).encode())
    return rank_digest(model, analyze(model), worker=worker)


def profile(model_ms: float) -> dict:
    """A single-GPU profile of one model: no distributedInfo, no collectives."""
    return trace_doc([op("ProfilerStep#1", 0, model_ms * 1000, cat="user_annotation"), op("aten::mm", 10, 50),
                      launch(20, 5, corr=1), kernel("gemm", 30, model_ms * 500, corr=1)])


def basis(groups) -> dict:
    return {w: g.basis for g in groups for w in g.workers}


def test_unrelated_profiles_are_independent():
    digests = [digest_of(profile(ms), name) for ms, name in [(5, "Falconsai_nsfw"), (47, "Qwen_Qwen1.5"), (380, "timesformer")]]
    groups = job_groups(digests)
    assert [g.basis for g in groups] == [INDEPENDENT] * 3 and not any(g.is_job for g in groups)


def test_distributed_info_makes_a_job_and_names_the_missing_ranks():
    digests = [digest_of(gloo_rank(r, world=4), f"rank{r}") for r in (0, 1, 3)]
    (group,) = job_groups(digests)
    assert group.basis == DISTRIBUTED and group.world_size == 4
    assert ranks_view(digests)["missing_ranks"] == [2]


def test_a_rank_of_another_job_and_profiles_beside_a_job_are_not_its_ranks():
    digests = [digest_of(gloo_rank(r, world=4), f"rank{r}") for r in range(4)]
    digests.append(digest_of(gloo_rank(0, world=8), "other_job_rank0"))  # rank 0 of an 8-rank job: another signature
    digests += [digest_of(profile(5), "bert"), digest_of(profile(9), "vit")]
    got = basis(job_groups(digests))
    assert [w for w, b in got.items() if b == DISTRIBUTED] == ["rank0", "rank1", "rank2", "rank3", "other_job_rank0"]
    assert got["bert"] == got["vit"] == INDEPENDENT
    groups = job_groups(digests)
    assert [len(g.workers) for g in groups if g.basis == DISTRIBUTED] == [4, 1]


def test_two_traces_claiming_one_rank_are_not_one_job():
    groups = job_groups([digest_of(gloo_rank(0, world=2), "a"), digest_of(gloo_rank(0, world=2), "b")])
    assert [g.basis for g in groups] == [INDEPENDENT, INDEPENDENT]


def test_rank_naming_without_distributed_info():
    digests = [digest_of(profile(5), f"trace_rank_{r}") for r in (0, 1, 2)] + [digest_of(profile(5), "warmup")]
    got = basis(job_groups(digests))
    assert got == {"trace_rank_0": NAMING, "trace_rank_1": NAMING, "trace_rank_2": NAMING, "warmup": INDEPENDENT}
    view = ranks_view(digests[:3])
    assert view["missing_ranks"] == [] and [r["rank"] for r in view["ranks"]] == [0, 1, 2]


def test_matching_collectives_without_distributed_info():
    docs = [gloo_rank(r, world=2) for r in range(2)]
    for d in docs:
        del d["distributedInfo"]
    got = basis(job_groups([digest_of(docs[0], "host_a"), digest_of(docs[1], "host_b")]))
    assert got == {"host_a": COLLECTIVES, "host_b": COLLECTIVES}


def test_no_verdict_is_pooled_across_independent_profiles():
    def verdict(doc):
        model = decode_bytes(json.dumps(doc).encode())
        return verdict_entry(analyze(model).verdict)
    entries = [{"run": "h100", "worker": w, "verdict": verdict(profile(ms))} for w, ms in [("bert", 5), ("qwen", 47), ("qwen", 47)]]
    runs, out = with_run_verdicts(entries)
    assert [(r["workers"], r["spans"], r["basis"]) for r in runs] == [(["bert"], 1, "worker"), (["qwen"], 2, "worker")]
    assert [e["verdict"]["bound"] for e in out] == [e["verdict"]["bound"] for e in entries]


def test_the_cli_shows_a_folder_of_profiles_as_independent(tmp_path, capsys):
    for name, ms in [("bert", 5), ("qwen", 47), ("vit", 9)]:
        write_trace(tmp_path / "h100" / f"{name}.json", profile(ms))
    write_trace(tmp_path / "h100" / "eager_trace.json", trace_doc(one_step_doc()["traceEvents"],
                                                                 distributedInfo={"backend": "nccl", "rank": 0, "world_size": 8}))
    assert main(["report", str(tmp_path / "h100"), "--no-cache", "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["ranks"] == {} and all(len(r["workers"]) == 1 for r in body["runs"])
    assert {g["basis"] for g in body["jobs"]["h100"]} == {INDEPENDENT, DISTRIBUTED}
    assert main(["report", str(tmp_path / "h100"), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "3 independent profiles, not ranks of one job" in out and "ranks of run" not in out
    assert "eager_trace is one rank of a job of 8" in out and "Run verdict" not in out


@requires_shared
def test_the_modern_h100_folder_is_five_independent_profiles():
    folder = SHARED_TRACES / "modern" / "h100"
    if not folder.is_dir():
        pytest.skip("no modern traces")
    from kinetoscope.trace.discovery import scan_logdir
    from kinetoscope.trace.loader import load_trace
    digests = []
    for t in scan_logdir(str(folder)):
        model = load_trace(t.path, cache_dir=None)
        digests.append(rank_digest(model, analyze(model), worker=t.worker))
    groups = job_groups(digests)
    assert len(groups) == 5 and all(g.basis == INDEPENDENT for g in groups)
