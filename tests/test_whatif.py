"""What-if replay (analysis/whatif/replay.py, `kinetoscope whatif`): the unedited replay gives back every recorded
time; each edit's prediction on constructed traces whose answer follows from first principles; and real
before/after pairs (the "before" trace edited, against the "after" trace's measured median step)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import MS, REPO, SAMPLES, SHARED_TRACES, kernel, launch, op, requires_shared, trace_doc, write_trace
from kinetoscope.analysis.whatif.edits import EditError, parse_edit
from kinetoscope.analysis.whatif.plan import plan_of
from kinetoscope.analysis.whatif.replay import replayed_ends, whatif, whatif_entry
from kinetoscope.trace.discovery import scan_logdir
from kinetoscope.trace.loader import decode_bytes, load_trace

DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def model_of(events: list[dict]):
    return decode_bytes(json.dumps(trace_doc(events)).encode())


def predicted(events: list[dict], *edits: str) -> np.ndarray:
    return whatif(model_of(events), tuple(parse_edit(e) for e in edits)).predicted_ns / 1e3


# --- edits as the CLI spells them


@pytest.mark.parametrize("text, kind, target, factor", [
    ("dataloader=0", "dataloader", "", 0.0), ("dataloader-workers=4", "dataloader-workers", "", 4.0),
    ("sync:aten::item=0", "sync", "aten::item", 0.0), ("sync:cudaStreamSynchronize*0.5", "sync", "cudaStreamSynchronize", 0.5),
    ("host:## forward ##*0.25", "host", "## forward ##", 0.25), ("kernel:*gemm**0.5", "kernel", "*gemm*", 0.5),
    ("kernel:nccl=0", "kernel", "nccl", 0.0), ("warmup=median", "warmup", "", 0.0)])
def test_edits_parse(text, kind, target, factor):
    edit = parse_edit(text)
    assert (edit.kind, edit.target, edit.factor, edit.text) == (kind, target, factor, text)


@pytest.mark.parametrize("text, says", [("dataloader=1", "not an edit"), ("dataloader-workers=0", "at least 1"),
                                        ("sync:=0", "1 to"), ("host:x*abc", "not a number"), ("host:x*-1", "from 0 to"),
                                        ("kernel:x*1e9", "from 0 to"), ("kernel:x*nan", "from 0 to"), ("host:x", r"host:NAME\*F"),
                                        ("comm=exposed", "not replayed"), ("fuse:", "1 to"), ("x" * 100_000, "not an edit")])
def test_bad_edits_are_named(text, says):
    with pytest.raises(EditError, match=says) as info:
        parse_edit(text)
    assert len(str(info.value)) < 1000


# --- constructed traces: the answer follows from the dependencies


def sync_steps(kernel_us: float = 2000, steps: int = 4) -> list[dict]:
    """Each step: an op launches one kernel; `aten::item` waits for it in cudaStreamSynchronize (5 µs return);
    then 1 ms of host logging. The host is blocked on the device, then the device waits for the host."""
    events, t = [], 0.0
    for n in range(steps):
        sync_end = t + 20 + kernel_us + 5
        events += [op(f"ProfilerStep#{n + 1}", t, sync_end + 1015 - t),
                   op("aten::mm", t + 1, 30), launch(t + 10, 5, corr=n + 1), kernel(f"gemm_{n}", t + 20, kernel_us, corr=n + 1),
                   op("aten::item", t + 40, sync_end + 2 - (t + 40)), op("aten::_local_scalar_dense", t + 41, sync_end - (t + 41)),
                   op("cudaStreamSynchronize", t + 42, sync_end - (t + 42), cat="cuda_runtime"),
                   op("## log ##", sync_end + 10, 1000, cat="user_annotation")]
        t = sync_end + 1016
    return events


def test_no_edit_gives_back_the_recorded_steps():
    events = sync_steps()
    result = whatif(model_of(events))
    assert np.array_equal(result.predicted_ns, result.recorded_ns)
    # the device keeps up: the replay's own step is the recorded one plus the 1 µs between steps
    assert np.allclose(result.replayed_ns, result.recorded_ns, atol=1000)


def test_faster_kernels_shorten_the_sync_wait():
    # the host waits for the kernel: half the kernel is 1 ms less per step, nothing else moves
    base = predicted(sync_steps())
    assert np.allclose(base - predicted(sync_steps(), "kernel:gemm*0.5"), 1000, atol=1)


def test_removing_the_sync_leaves_the_device_as_the_bound():
    # without the wait, the host issues a step in about 1.06 ms, but each step's kernel takes 2 ms on one stream:
    # the steps take the device's 2 ms (the first: from its start to the end of its kernel, 20 µs + 2 ms)
    steps = predicted(sync_steps(), "sync:aten::item=0")
    assert np.all(steps[1:] >= 2000 - 1) and np.all(steps[1:] <= 2100)
    assert steps[0] == pytest.approx(2020, abs=1)
    # the sync matched by its call's name, by the op around it, and by an op further out
    for edit in ("sync:cudaStreamSynchronize=0", "sync:aten::_local_scalar_dense=0"):
        assert np.array_equal(predicted(sync_steps(), edit), steps)
    assert whatif(model_of(sync_steps()), (parse_edit("sync:aten::nothing=0"),)).matched == {"sync:aten::nothing=0": 0}


def test_shortening_the_sync_by_half():
    full, half = predicted(sync_steps(kernel_us=4000)), predicted(sync_steps(kernel_us=4000), "sync:aten::item*0.5")
    # a half-length wait returns 2 ms early; the host then needs 1.0 ms, the device 4 ms: the device bounds it
    assert np.all(half <= full) and np.all(half[1:] >= 4000 - 1)


def loader_steps(wait_us: float = 10 * MS, work_us: float = 2 * MS, steps: int = 5) -> list[dict]:
    """Each step: a DataLoader wait, then `work_us` of host work that launches a 100 µs kernel at its end."""
    events, t = [], 0.0
    for n in range(steps):
        events += [op(f"ProfilerStep#{n + 1}", t, wait_us + work_us + 10),
                   op(DL, t + 1, wait_us, cat="user_annotation"), op("aten::conv2d", t + wait_us + 2, work_us),
                   launch(t + wait_us + work_us - 8, 5, corr=n + 1), kernel(f"conv_{n}", t + wait_us + work_us, 100, corr=n + 1)]
        t += wait_us + work_us + 10
    return events


def test_removing_the_dataloader_wait():
    assert np.allclose(predicted(loader_steps(), "dataloader=0"), 2 * MS + 10, atol=1)


@pytest.mark.parametrize("workers, wait", [(2, 5 * MS - (2 * MS + 10)), (4, 2.5 * MS - (2 * MS + 10)), (8, 0.0)])
def test_dataloader_workers_overlap_loading_with_the_step(workers, wait):
    # K workers deliver a 10 ms batch every 10/K ms; the step's own work takes 2.01 ms
    steps = predicted(loader_steps(), f"dataloader-workers={workers}")
    assert np.median(steps) == pytest.approx(2 * MS + 10 + max(wait, 0), abs=1)


def test_scaling_host_time():
    events = loader_steps(wait_us=0.5, work_us=4 * MS)
    assert np.median(predicted(events) - predicted(events, "host:aten::conv2d*0.25")) == pytest.approx(3 * MS, abs=1)


def test_a_trace_without_steps_is_replayed_over_its_launching_threads_span_and_says_so():
    events = [op("aten::mm", 0, 10), launch(2, 3, corr=1), kernel("k", 8, 5, corr=1)]
    entry = whatif_entry(whatif(model_of(events), (parse_edit("dataloader-workers=2"), parse_edit("kernel:k*2"))))
    (step,) = entry["steps"]
    assert step["name"].startswith("no steps: the launching thread's span 0.000-10.000")
    assert step["recorded_us"] == 10 and step["replay_us"] == 13 and step["replay_edited_us"] == 18  # k ends at 13, now 18
    cpu_only = whatif_entry(whatif(model_of([op("aten::mm", 0, 10)]), (parse_edit("kernel:k*2"),)))
    assert cpu_only["steps"] == [] and cpu_only["median_step_us"] is None and "no steps" in cpu_only["note"]


# --- the unedited replay on real traces


REAL = [p for p in (SHARED_TRACES / "resnet50_num_workers_0").glob("*.json*")] + \
       [SHARED_TRACES / "hta" / "trace_diff" / "test" / "test.json.gz",
        SHARED_TRACES / "hta" / "critical_path" / "cuda_event_sync" / "event_sync_trace.json.gz",
        SHARED_TRACES / "modern" / "b200" / "eager_trace.json.gz"] + \
       sorted((SAMPLES / "logs" / "cuda_h200").rglob("*.json.gz"))


@requires_shared
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:40])
def test_the_unedited_replay_gives_back_every_recorded_time(path):
    model = load_trace(str(path), cache_dir=None)
    rows, recorded, replayed = replayed_ends(model)
    assert rows.size > 0 and np.array_equal(recorded, replayed)
    result = whatif(model)
    assert np.array_equal(result.predicted_ns, result.recorded_ns)


# --- real before/after pairs: predicted from "before", measured in "after"


def median_step_ms(folder: Path, *edits: str) -> list[float]:
    out = []
    for trace in scan_logdir(str(folder)):
        result = whatif(load_trace(trace.path, cache_dir=None), tuple(parse_edit(e) for e in edits))
        out.append(result.median_predicted_ns / 1e6)
    return out


@requires_shared
def test_resnet_with_four_dataloader_workers():
    # ResNet-50 on a V100: 0 workers (about 70 ms of DataLoader wait in each 176 ms step) and, re-run, 4 workers
    after = float(np.median(median_step_ms(SHARED_TRACES / "resnet50_num_workers_4")))
    for before in median_step_ms(SHARED_TRACES / "resnet50_num_workers_0", "dataloader-workers=4"):
        error = before / after - 1
        print(f"predicted {before:.1f} ms, measured {after:.1f} ms: {100 * error:+.1f}%")
        assert abs(error) < 0.15


def test_cpu_run_with_two_dataloader_workers():
    # torch 2.13 on CPU: 25 ms per item, 8 items a batch, 0 workers; re-run with 2 workers
    after = float(np.median(median_step_ms(SAMPLES / "logs" / "torch213_cpu" / "workers2")))
    for before in median_step_ms(SAMPLES / "logs" / "torch213_cpu" / "stall", "dataloader-workers=2"):
        error = before / after - 1
        print(f"predicted {before:.1f} ms, measured {after:.1f} ms: {100 * error:+.1f}%")
        assert abs(error) < 0.15


# --- the command


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetoscope.cli", "whatif", *args], capture_output=True, text=True,
                          timeout=300, cwd=REPO, check=False)


def test_cli_json_and_text(tmp_path):
    path = write_trace(tmp_path / "run" / "w.1.pt.trace.json", trace_doc(loader_steps()))
    done = cli(str(path.parent), "--edit", "dataloader=0", "--format", "json", "--no-cache")
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)["traces"]
    result = entry["whatif"]
    assert result["edits"] == ["dataloader=0"] and result["matched"] == {"dataloader=0": 5}
    assert result["median_step_us"] == pytest.approx(2010, abs=1) and result["recorded_median_step_us"] == pytest.approx(12010, abs=1)
    assert [s["predicted_us"] for s in result["steps"]] == pytest.approx([2010] * 5, abs=1)
    text = cli(str(path), "--edit", "dataloader=0", "--no-cache")
    assert text.returncode == 0 and "predicted" in text.stdout
    assert "saved per step (83.1%; shares of the 12 ms step the verdict judges)" in text.stdout
    markdown = cli(str(path), "--edit", "dataloader=0", "--format", "markdown", "--no-cache")
    assert markdown.returncode == 0 and "| step | recorded | predicted | saved |" in markdown.stdout


def test_cli_errors(tmp_path):
    bad = cli(str(tmp_path), "--edit", "comm=exposed")
    assert bad.returncode == 2 and "not replayed" in bad.stderr and "Traceback" not in bad.stderr
    path = write_trace(tmp_path / "w.1.pt.trace.json", trace_doc([op("aten::mm", 0, 10)]))
    none = cli(str(path), "--no-cache")
    assert none.returncode == 0 and "no steps" in none.stdout
    missing = cli(str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


@requires_shared
@pytest.mark.parametrize("path", REAL[:4] + REAL[-3:], ids=lambda p: p.name[:40])
def test_the_compiled_pass_equals_the_numpy_pass(path):
    from kinetoscope.analysis.whatif import replay as W
    if not W.ACCELERATED:
        pytest.skip("the C replay is not built")
    model = load_trace(str(path), cache_dir=None)
    replayer = W.Replayer(model)
    edits = [(), ("dataloader=0",), ("kernel:a*0.5", "host:aten::mm*0.3"), ("sync:cudaStreamSynchronize*0.5",),
             ("kernel:e*3",)]
    for texts in edits:
        plan = plan_of(replayer.ctx, tuple(parse_edit(t) for t in texts), {})
        fast = W._replay(replayer.ctx, plan, accelerated=True)
        slow = W._replay(replayer.ctx, plan, accelerated=False)
        for a, b in zip(fast, slow):
            assert np.array_equal(a, b), texts


# --- straggler=median on multi-rank runs


def straggler_run(folder: Path) -> subprocess.CompletedProcess:
    return cli(str(folder), "--edit", "straggler=median", "--format", "json", "--no-cache")


def test_the_planted_straggler_costs_its_lateness():
    # synthetic NCCL ranks: 60 ms steps, rank 2 arrives 20 ms late at every all-reduce and the others wait for it
    done = straggler_run(SAMPLES / "logs" / "synthetic_ranks" / "nccl_straggler")
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert run["stragglers"] == [2] and run["whatif"]["median_step_us"] == pytest.approx(40_000, rel=0.01)
    assert run["whatif"]["recorded_median_step_us"] == pytest.approx(60_000, rel=0.01)


def test_a_real_ddp_job_without_its_slow_rank():
    # 4 gloo ranks on CPU (samples/record_distributed.py): rank 2 with 40 ms of extra compute per step, and the same
    # job re-run with no slow rank
    (before,) = json.loads(straggler_run(SAMPLES / "logs" / "ddp_gloo_4_straggler").stdout)["runs"]
    after = json.loads(subprocess.run([sys.executable, "-m", "kinetoscope.cli", "report", str(SAMPLES / "logs" / "ddp_gloo_4"),
                                       "--format", "json", "--no-cache"], capture_output=True, text=True, timeout=300,
                                      cwd=REPO, check=False).stdout)
    (view,) = after["ranks"].values()
    measured = float(np.median([s for r in view["ranks"] for s in r["step_us"] if s is not None]))
    error = before["whatif"]["median_step_us"] / measured - 1
    print(f"predicted {before['whatif']['median_step_us'] / 1e3:.1f} ms, measured {measured / 1e3:.1f} ms: {100 * error:+.1f}%")
    assert abs(error) < 0.15


def test_no_straggler_no_prediction():
    done = straggler_run(SAMPLES / "logs" / "ddp_gloo_4")
    (run,) = json.loads(done.stdout)["runs"]
    assert done.returncode == 0 and run["whatif"] is None and "no straggler" in run["note"]
    mixed = cli(str(SAMPLES / "logs" / "ddp_gloo_4"), "--edit", "straggler=median", "--edit", "dataloader=0")
    assert mixed.returncode == 2 and "cannot be combined" in mixed.stderr


# --- fuse:NAME and comm=hidden


def fusable_steps(steps: int = 4) -> list[dict]:
    """Each step: 20 µs of host work, then a region launching 10 kernels of 2 µs (5 µs launch calls, 3 µs apart)."""
    events, t, corr = [], 0.0, 0
    for n in range(steps):
        events += [op(f"ProfilerStep#{n + 1}", t, 101), op("aten::prep", t + 1, 19),
                   op("## elementwise ##", t + 20, 80, cat="user_annotation")]
        for k in range(10):
            corr += 1
            events += [launch(t + 20 + 8 * k, 5, corr=corr), kernel(f"add_{k}", t + 20 + 8 * k + 6, 2, corr=corr)]
        t += 102
    return events


def test_fusing_a_region_saves_its_launch_calls():
    events = fusable_steps()
    result = whatif(model_of(events), (parse_edit("fuse:## elementwise ##"),))
    assert result.matched == {"fuse:## elementwise ##": 40}
    # nine launch calls of 5 µs per step no longer cost the host; the fused kernel (20 µs) starts after the first
    # call and ends before the host has finished the step
    saved = (result.recorded_ns - result.predicted_ns) / 1e3
    assert np.allclose(saved[1:], 45, atol=1)


def test_hiding_communication():
    # synthetic/nccl_exposed: per step a 1 ms all-reduce under backward, a 3 ms one alone, 0.5 ms of gloo on the host
    truth = json.loads((SAMPLES / "truth" / "nccl_exposed.json").read_text())
    for trace, span in zip(scan_logdir(str(SAMPLES / "logs" / "synthetic" / "nccl_exposed")), truth["spans"]):
        result = whatif(load_trace(trace.path, cache_dir=None), (parse_edit("comm=hidden"),))
        expected = np.median([(s["end_ns"] - s["start_ns"] - s["exposed_comm_ns"]) / 1e3 - 500 for s in span["steps"]])
        assert result.median_predicted_ns / 1e3 == pytest.approx(expected, rel=0.1)


def warm_steps(first_us: float = 9 * MS, rest_us: float = 3 * MS, steps: int = 4) -> list[dict]:
    """Each step: host work for its whole length launching one kernel a third as long; the first step is slow."""
    events, t = [], 0.0
    for n in range(steps):
        length = first_us if n == 0 else rest_us
        events += [op(f"ProfilerStep#{n + 1}", t, length), op("aten::mm", t + 1, length - 2),
                   launch(t + 5, 5, corr=n + 1), kernel(f"mm_{n}", t + 20, length / 3, corr=n + 1)]
        t += length + 1
    return events


def test_warmup_makes_the_first_step_as_fast_as_the_median():
    # 9 ms then three 3 ms steps: the first step's host time and kernel scale by 3/9; the others do not move
    base, warm = predicted(warm_steps()), predicted(warm_steps(), "warmup=median")
    assert warm[0] == pytest.approx(3 * MS, rel=0.01) and np.allclose(warm[1:], base[1:], atol=2)
    result = whatif(model_of(warm_steps()), (parse_edit("warmup=median"),))
    assert result.matched == {"warmup=median": 2}  # the first step and its kernel
    # no warm-up (the first step no slower than the rest), or one step: nothing to edit
    assert whatif(model_of(warm_steps(first_us=3 * MS)), (parse_edit("warmup=median"),)).matched == {"warmup=median": 0}
    assert whatif(model_of(warm_steps(steps=1)), (parse_edit("warmup=median"),)).matched == {"warmup=median": 0}
