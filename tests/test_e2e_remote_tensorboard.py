"""End to end on object storage: the real `tensorboard` CLI pointed at an `s3://` logdir served by a real
S3-compatible server on 127.0.0.1 (moto, started here). TensorBoard lists the runs in the Kinetoscope
routes, a trace loads in a decoder process that reads it from the server, lanes are drawn, and
`event?args=1` reads one byte range of the remote object. Every process started here is stopped here."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import SAMPLES, SHARED_TRACES
from s3_server import ACCESS_KEY, SECRET_KEY, bytes_requested, moto_server, s3_env, tree, upload
from test_e2e_tensorboard import PLUGIN, TENSORBOARD, fetch, tensorboard, wait_until

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")
pytest.importorskip("boto3")
pytestmark = pytest.mark.skipif(not TENSORBOARD.exists(), reason="no tensorboard next to the interpreter")

BUCKET = "team-profiles"


def remote_tensorboard(logdir: str, env: dict, tmp_path: Path, extra: tuple = ()):
    """`tensorboard --logdir s3://... --load_fast false` on a free local port; yields its base URL."""
    return tensorboard(logdir, tmp_path, extra=extra, env=env, log_name="tb-remote.err")


@pytest.fixture
def s3_logdir(tmp_path):
    """A moto server holding s3://team-profiles/logs: two synthetic runs and, when ../shared is there, a
    real ResNet run (gzip) and one of its traces as plain text. Yields (server, environment for its clients)."""
    local = tmp_path / "local"
    for run in ("compute", "dataloader"):
        shutil.copytree(SAMPLES / "logs" / "synthetic" / run, local / run)
    if SHARED_TRACES.is_dir():
        shutil.copytree(SHARED_TRACES / "resnet50_num_workers_0", local / "resnet50")
        source = sorted((SHARED_TRACES / "resnet50_num_workers_0").glob("*.gz"))[0]
        (local / "resnet50_plain").mkdir()  # 35 MB of text: three pieces of 16 MB
        (local / "resnet50_plain" / source.name[:-3]).write_bytes(gzip.decompress(source.read_bytes()))
    with moto_server(tmp_path / "server") as server:
        upload(server.endpoint, BUCKET, tree(local, "logs"))
        env = {**os.environ, **s3_env(server.endpoint, tmp_path / "home"), "KINETOSCOPE_CACHE_DIR": str(tmp_path / "cache")}
        env.pop("KINETOSCOPE_STORAGE_OPTIONS", None)
        yield server, env


def _spans(runs: dict) -> dict[str, tuple[str, str]]:
    """file name -> (span id, run) of every span listed."""
    return {s["file"]: (s["id"], r["name"]) for r in runs["runs"] for w in r["workers"] for s in w["spans"]}


def _ready(url: str, sid: str, timeout_s: float = 180) -> dict:
    def state():
        status, _, body = fetch(f"{url}{PLUGIN}/status?span={sid}&load=1")
        assert status == 200, body
        trace = body["traces"][0]
        assert trace["state"] != "error", trace["error"]
        return trace if trace["state"] == "ready" else None
    trace = wait_until(state, timeout_s, 0.5)
    assert trace, f"span {sid} did not load in {timeout_s} s"
    return trace


def test_tensorboard_on_an_s3_logdir_lists_runs_and_draws_lanes(s3_logdir, tmp_path):
    server, env = s3_logdir
    logdir = f"s3://{BUCKET}/logs"
    with remote_tensorboard(logdir, env, tmp_path) as url:
        # active once the first listing of the bucket found traces (TensorBoard scans it at start-up)
        listing = wait_until(lambda: (body := fetch(f"{url}/data/plugins_listing")[2])["kinetoscope"]["enabled"] and body, 30)
        assert listing, "the Kinetoscope tab never became active"
        status, _, runs = fetch(f"{url}{PLUGIN}/runs")
        assert status == 200 and runs["logdir"] == logdir and runs["scan_error"] is None
        names = {r["name"] for r in runs["runs"]}
        assert {"compute", "dataloader"} <= names
        spans = _spans(runs)
        assert len(spans) >= 4
        for file, (sid, run) in spans.items():
            if run not in ("compute", "dataloader", "resnet50"):
                continue
            _ready(url, sid)
            status, _, lanes = fetch(f"{url}{PLUGIN}/lanes?span={sid}&width_px=600")
            assert status == 200 and lanes["lanes"] and lanes["rects"] > 0, (file, lanes)
        status, _, verdict = fetch(f"{url}{PLUGIN}/verdict?run=compute")
        assert status == 200 and verdict["verdict"]["bound"] == "compute-bound", verdict
    log = (tmp_path / "tb-remote.err").read_text()
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]  # TensorBoard's own S3 reader (boto3) too


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is not beside the repo")
def test_event_args_reads_one_range_of_the_remote_object(s3_logdir, tmp_path):
    server, env = s3_logdir
    with remote_tensorboard(f"s3://{BUCKET}/logs", env, tmp_path) as url:
        # the bucket's first listing may still be going on when TensorBoard answers (a busy machine): wait for the run
        spans = wait_until(lambda: (found := _spans(fetch(f"{url}{PLUGIN}/runs")[2]))
                           and any(run == "resnet50_plain" for _, run in found.values()) and found, 60, 0.5)
        assert spans, "resnet50_plain was not listed in 60 s"
        name = next(f for f in spans if spans[f][1] == "resnet50_plain")
        sid = spans[name][0]
        _ready(url, sid)
        lanes = fetch(f"{url}{PLUGIN}/lanes?span={sid}&width_px=2000")[2]
        row = max(r for lane in lanes["lanes"] for r in lane["events"]["row"])
        key = f"logs/resnet50_plain/{name}"
        size = next(s["size_bytes"] for r in fetch(f"{url}{PLUGIN}/runs")[2]["runs"] for w in r["workers"]
                    for s in w["spans"] if s["id"] == sid)
        server.record()
        status, _, event = fetch(f"{url}{PLUGIN}/event?span={sid}&row={row}&args=1")
        server.stop_recording()
        assert status == 200 and event["args"] is not None and event.get("args_error") is None, event
        gets = server.gets(key)
        assert gets and all(last is not None for _, last in gets)  # ranged GETs, never the whole object
        assert bytes_requested(gets, size) <= (16 << 20) + 2 < size  # one piece of at most 16 MiB, of 35 MB


def test_storage_options_flag_gives_credentials_that_are_never_served(s3_logdir, tmp_path):
    """Credentials given by the flag (not the environment) reach the decoder processes, and TensorBoard's
    /data/environment (which serves every flag) and the routes never show them."""
    server, env = s3_logdir
    env = {k: v for k, v in env.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    options = json.dumps({"key": ACCESS_KEY, "secret": SECRET_KEY})
    with remote_tensorboard(f"s3://{BUCKET}/logs/compute", env, tmp_path,
                            extra=("--kinetoscope_storage_options", options)) as url:
        status, _, runs = fetch(f"{url}{PLUGIN}/runs")
        assert status == 200 and runs["scan_error"] is None
        sid, _ = next(iter(_spans(runs).values()))
        _ready(url, sid)
        for route in ("/data/environment", f"{PLUGIN}/runs", f"{PLUGIN}/status", f"{PLUGIN}/summary?span={sid}"):
            status, _, body = fetch(url + route)
            assert status == 200 and SECRET_KEY not in json.dumps(body), route
    assert SECRET_KEY not in (tmp_path / "tb-remote.err").read_text()


def test_an_unreachable_endpoint_is_reported_and_tensorboard_keeps_serving(tmp_path):
    """No server: the runs route says which logdir could not be listed and why, within seconds."""
    from s3_server import free_port
    env = {**os.environ, **s3_env(f"http://127.0.0.1:{free_port()}", tmp_path / "home"),
           "KINETOSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    with remote_tensorboard(f"s3://{BUCKET}/logs", env, tmp_path) as url:
        started = time.monotonic()
        runs = wait_until(lambda: (body := fetch(f"{url}{PLUGIN}/runs")[2]).get("scan_error") and body, 30, 0.5)
        assert runs and "cannot reach the storage endpoint" in runs["scan_error"], runs
        assert runs["scan_error"].startswith(f"s3://{BUCKET}/logs") and time.monotonic() - started < 30
        status, _, _ = fetch(f"{url}/data/plugins_listing")
        assert status == 200
