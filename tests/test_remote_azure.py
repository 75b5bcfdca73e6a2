"""Logdirs on Azure Blob Storage, through adlfs, against Microsoft's own emulator on 127.0.0.1: Azurite's blob
service (npm, `tests/cloud`, installed by `make test`'s node dependencies). The same checks as the S3 and GCS ones
where they apply: the CLI's report of an abfs:// logdir equals the local one, TensorBoard's service lists and
loads an abfs:// trace in its decoder process and its routes answer, a missing container is named, and the
account key of the connection string appears in no output.

The connection string is Azurite's documented development account (`devstoreaccount1` and its published key), given
as a storage option: nothing beyond 127.0.0.1 is asked.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
AZURITE = REPO / "tests" / "cloud" / "node_modules" / ".bin" / "azurite-blob"
if importlib.util.find_spec("adlfs") is None or not AZURITE.exists():
    pytest.skip("adlfs or Azurite (make browser-deps installs tests/cloud) is not installed", allow_module_level=True)

from conftest import cli_report_json, without_paths  # noqa: E402
from kinetoscope import pipeline  # noqa: E402
from kinetoscope.server.service import TraceService  # noqa: E402
from kinetoscope.trace.remote import OPTIONS_ENV  # noqa: E402

ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="  # Azurite's
CONTAINER = "kinetoscope-logs"
RUNS = ("compute", "dataloader", "sync")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def azure(tmp_path_factory):
    """Azurite holding abfs://CONTAINER/logs/<run>/... (copies of samples/logs/synthetic), the local copy, and the
    environment every client here uses."""
    tmp = tmp_path_factory.mktemp("azure")
    local = tmp / "logs"
    for run in RUNS:
        shutil.copytree(REPO / "samples" / "logs" / "synthetic" / run, local / run)
    port = _free_port()
    proc = subprocess.Popen([str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(tmp / "data"),
                             "--silent", "--skipApiVersionCheck", "--loose"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "Azurite did not start"
                time.sleep(0.1)
        connection = (f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={ACCOUNT_KEY};"
                      f"BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;")
        import adlfs
        fs = adlfs.AzureBlobFileSystem(connection_string=connection)
        fs.mkdir(CONTAINER)
        for path in sorted(local.rglob("*.json.gz")):
            fs.put(str(path), f"{CONTAINER}/logs/{path.relative_to(local).as_posix()}")
        env = {OPTIONS_ENV: json.dumps({"abfs": {"connection_string": connection}, "az": {"connection_string": connection}}),
               "HOME": str(tmp / "home")}
        with pytest.MonkeyPatch.context() as mp:
            for name, value in env.items():
                mp.setenv(name, value)
            yield type("Azure", (), {"local": local, "env": {**os.environ, **env}})()
    finally:
        proc.kill()
        proc.wait(10)


def test_cli_report_of_an_azure_logdir_equals_the_local_report(azure):
    code, remote, out, err = cli_report_json([f"abfs://{CONTAINER}/logs"], azure.env)
    assert code == 0, err
    code, local, _, err2 = cli_report_json([str(azure.local)], azure.env)
    assert code == 0, err2
    assert len(remote["traces"]) == 2 * len(RUNS) and all(t["error"] is None for t in remote["traces"])
    assert without_paths(remote) == without_paths(local)
    assert ACCOUNT_KEY not in out + err


def test_cli_names_a_missing_container_and_never_shows_the_key(azure):
    code, _, out, err = cli_report_json(["abfs://no-such-container/logs"], azure.env)
    assert code == 2 and "abfs://no-such-container/logs" in err
    assert ACCOUNT_KEY not in out + err


def test_the_service_loads_an_azure_trace_in_its_decoder_process_and_the_routes_answer(azure, tmp_path):
    from kinetoscope.server import routes
    service = TraceService(f"abfs://{CONTAINER}/logs", cache_dir=tmp_path / "cache", rescan_s=3600, stages=pipeline.STAGES)
    try:
        service.scan_now()
        assert service.scan_error is None
        spans = {(f.run, Path(f.path).name): sid for sid, f, _ in service.snapshot()}
        assert {run for run, _ in spans} == set(RUNS) and len(spans) == 2 * len(RUNS)
        (run, name), sid = sorted(spans.items())[-1]
        service.get(sid, wait_s=120)
        summary = routes.summary_impl(service, sid)
        code, local, _, err = cli_report_json([str(azure.local / run / name)], azure.env)
        assert code == 0, err
        assert summary["verdict"] == local["traces"][0]["verdict"] and summary["events"] == local["traces"][0]["events"]
        assert any(lane["kind"] == "gpu" for lane in routes.lanes_impl(service, sid, width_px=800)["lanes"])
    finally:
        service.close()
