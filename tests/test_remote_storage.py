"""Remote logdirs through fsspec, against a real S3-compatible HTTP server on 127.0.0.1 (moto's server mode,
started here): scanning, the CLI report, the service and its routes, streamed reads with a bounded
read-ahead, `event?args=1` as one ranged request, errors that name the problem, bounded waits, retries,
and credentials that never show."""
from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import time

import pytest
from conftest import SAMPLES, SHARED_TRACES, cli_report_json, gloo_rank, requires_shared, without_paths
from s3_server import ACCESS_KEY, SECRET_KEY, bytes_requested, free_port, moto_server, s3_env, tree, upload

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

from kinetoscope import pipeline  # noqa: E402
from kinetoscope.cli.main import main as cli_main  # noqa: E402
from kinetoscope.index.readers import SidecarIndex  # noqa: E402
from kinetoscope.index.tasks import CHANGED, NEW, index_trace  # noqa: E402
from kinetoscope.server.plugin import KinetoscopePlugin  # noqa: E402
from kinetoscope.server.service import TraceService  # noqa: E402
from kinetoscope.trace import loader, remote, storage  # noqa: E402
from kinetoscope.trace.discovery import scan_logdir, scan_logdir_checked  # noqa: E402
from kinetoscope.trace.source import event_args  # noqa: E402
from kinetoscope.trace.storage import StorageError, identity, read_range  # noqa: E402

BUCKET = "kinetoscope"
PLUGIN = "/data/plugin/kinetoscope"
RESNET = SHARED_TRACES / "resnet50_num_workers_0"
# A few real traces of several eras, gzip and plain, beside the committed samples.
SHARED_PICKS = ["resnet50_num_workers_0", "torch213_cpu/nw0", "hta/critical_path/alexnet"]


def _clear_fs_cache() -> None:
    import s3fs
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto server holding: logs/ (the samples' synthetic runs and a few shared traces, as laid out
    locally under `local`), big/ (a 35 MB plain and its gzip). The environment points at it."""
    tmp = tmp_path_factory.mktemp("s3")
    local = tmp / "local"
    shutil.copytree(SAMPLES / "logs" / "synthetic", local / "synthetic")
    if SHARED_TRACES.is_dir():
        for pick in SHARED_PICKS:
            shutil.copytree(SHARED_TRACES / pick, local / "shared" / pick)
    big = tmp / "big"
    big.mkdir()
    if RESNET.is_dir():
        source = sorted(RESNET.glob("*.gz"))[0]
        (big / "resnet.pt.trace.json").write_bytes(gzip.decompress(source.read_bytes()))
        shutil.copy(source, big / "resnet.pt.trace.json.gz")
    with moto_server(tmp / "server") as server, pytest.MonkeyPatch.context() as mp:
        for name, value in s3_env(server.endpoint, tmp / "home").items():
            mp.setenv(name, value)
        mp.delenv(remote.OPTIONS_ENV, raising=False)
        mp.setenv("KINETOSCOPE_CACHE_DIR", str(tmp / "cache"))
        upload(server.endpoint, BUCKET, {**tree(local, "logs"), **tree(big, "big")})
        _clear_fs_cache()
        server.local, server.big = local, big
        yield server
        _clear_fs_cache()


def _key(trace) -> tuple:
    return (trace.run, trace.worker, trace.span, trace.size)


def test_scan_finds_the_runs_workers_and_spans_the_local_copy_has(s3):
    remote_found = scan_logdir(f"s3://{BUCKET}/logs")
    local_found = scan_logdir(str(s3.local))
    assert len(remote_found) >= 30
    assert [_key(t) for t in remote_found] == [_key(t) for t in local_found]
    assert all(t.path.startswith(f"s3://{BUCKET}/logs/") and t.mtime > 0 for t in remote_found)
    assert scan_logdir(f"s3://{BUCKET}/logs/") == remote_found  # a trailing slash names the same logdir


def test_a_new_trace_shows_on_the_next_scan(s3, tmp_path):
    before = scan_logdir(f"s3://{BUCKET}/logs/synthetic/compute")
    extra = sorted((s3.local / "synthetic" / "compute").glob("*.gz"))[0]
    upload(s3.endpoint, BUCKET, {"logs/synthetic/compute/late.123.pt.trace.json.gz": extra})
    try:
        after = scan_logdir(f"s3://{BUCKET}/logs/synthetic/compute")  # no listing is cached between scans
        assert len(after) == len(before) + 1 and any(t.worker == "late" and t.span == 123 for t in after)
    finally:
        import boto3
        boto3.client("s3").delete_object(Bucket=BUCKET, Key="logs/synthetic/compute/late.123.pt.trace.json.gz")


@requires_shared
def test_cli_report_of_an_s3_logdir_equals_the_local_report(s3):
    env = dict(os.environ)
    code, remote_report, _, err = cli_report_json([f"s3://{BUCKET}/logs/shared"], env)
    assert code == 0, err
    code, local_report, _, err = cli_report_json([str(s3.local / "shared")], env)
    assert code == 0, err
    assert len(remote_report["traces"]) >= 5
    assert without_paths(remote_report) == without_paths(local_report)


def test_cli_says_a_missing_remote_path_does_not_exist(s3):
    code, _, _, err = cli_report_json([f"s3://{BUCKET}/no/such/logdir"], dict(os.environ))
    assert code == 2 and f"no such file or directory: s3://{BUCKET}/no/such/logdir" in err


def test_a_remote_trace_is_read_once_per_machine_through_the_model_cache(s3, tmp_path):
    path = f"s3://{BUCKET}/logs/synthetic/compute/" + sorted((s3.local / "synthetic" / "compute").glob("*.gz"))[0].name
    key = path.split(f"{BUCKET}/", 1)[1]
    first = loader.load_trace(path, cache_dir=tmp_path / "cache")
    s3.record()
    again = loader.load_trace(path, cache_dir=tmp_path / "cache")
    assert _gets_of(s3, key) == [] and again.n_events == first.n_events  # a HEAD says it is unchanged; no GET


def test_cli_takes_the_endpoint_and_credentials_from_storage_options(s3):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") or k in ("AWS_CONFIG_FILE",
                                                                                     "AWS_SHARED_CREDENTIALS_FILE",
                                                                                     "AWS_EC2_METADATA_DISABLED")}
    options = json.dumps({"endpoint_url": s3.endpoint, "key": ACCESS_KEY, "secret": SECRET_KEY,
                          "client_kwargs": {"region_name": "us-east-1"}})
    code, report, _, err = cli_report_json([f"s3://{BUCKET}/logs/synthetic/compute", "--storage-options", options], env)
    assert code == 0, err
    assert len(report["traces"]) == 2 and all(t["error"] is None for t in report["traces"])
    # without them there is no endpoint to reach (nothing beyond 127.0.0.1 is asked: no credentials either)
    code, _, _, err = cli_report_json([f"s3://{BUCKET}/logs/synthetic/compute"], env)
    assert code != 0 and SECRET_KEY not in err


def test_bad_storage_options_are_refused_without_being_echoed(s3, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["report", f"s3://{BUCKET}/logs", "--storage-options", '{"secret": "' + SECRET_KEY + '"'])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "storage options must be a JSON object" in err and SECRET_KEY not in err


def _gets_of(s3, key: str) -> list:
    s3.stop_recording()
    return s3.gets(key)


@requires_shared
def test_a_remote_trace_streams_each_byte_once_through_a_bounded_read_ahead(s3):
    path = f"s3://{BUCKET}/big/resnet.pt.trace.json"
    size = identity(path).size
    s3.record()
    model = loader.load_trace(path, cache_dir=None)
    gets = _gets_of(s3, "big/resnet.pt.trace.json")
    assert bytes_requested(gets, size) == size  # streamed, never fetched twice, never staged
    assert max(bytes_requested([g], size) for g in gets) <= remote.READ_CHUNK_BYTES
    local = loader.load_trace(str(s3.big / "resnet.pt.trace.json"), cache_dir=None)
    assert model.n_events == local.n_events and (model.ts_ns == local.ts_ns).all() and (model.launch_idx == local.launch_idx).all()


@requires_shared
def test_event_args_of_a_plain_remote_trace_is_one_ranged_request(s3):
    path = f"s3://{BUCKET}/big/resnet.pt.trace.json"
    model = loader.load_trace(path, cache_dir=None)
    assert len(model.piece_start) >= 3  # 35 MB in 16 MB pieces
    row = int(model.n_events) - 1  # an event of the last piece
    ident = identity(path)
    s3.record()
    args = event_args(ident, model, row)
    gets = _gets_of(s3, "big/resnet.pt.trace.json")
    piece = int((model.piece_first <= model.source_row[row]).sum()) - 1
    want = int(model.piece_end[piece] - model.piece_start[piece])
    assert bytes_requested(gets, ident.size) == want + 2  # the piece, and the 2 bytes that say it is no gzip
    assert want < ident.size / 2
    assert args == event_args(str(s3.big / "resnet.pt.trace.json"), model, row)


@requires_shared
def test_event_args_of_a_gzip_remote_trace_inflates_only_up_to_its_piece(s3, monkeypatch):
    monkeypatch.setattr(loader, "CHUNK_BYTES", 1 << 20)
    monkeypatch.setattr(storage, "GZIP_READ_BYTES", 64 << 10)
    path = f"s3://{BUCKET}/big/resnet.pt.trace.json.gz"
    model = loader.load_trace(path, cache_dir=None)
    assert len(model.piece_start) >= 20
    row = int(((model.piece_first[1] <= model.source_row) & (model.source_row < model.piece_first[2])).argmax())
    ident = identity(path)
    s3.record()
    args = event_args(ident, model, row)
    requested = bytes_requested(_gets_of(s3, "big/resnet.pt.trace.json.gz"), ident.size)
    assert 0 < requested < ident.size / 4  # the stream stops at the piece's end (about 2 MB of text)
    assert args == event_args(str(s3.big / "resnet.pt.trace.json.gz"), model, row)


def _client(service: TraceService):
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client
    plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=service.logdir, multiplexer=None))
    plugin._service = service
    apps = plugin.get_plugin_apps()

    def get(route: str, query: str = "") -> tuple[int, dict]:
        response = Client(apps[f"/{route}"]).get(f"{PLUGIN}/{route}?{query}")
        return response.status_code, json.loads(response.get_data())
    return get


@requires_shared
def test_the_service_loads_an_s3_trace_in_its_decoder_process_and_the_routes_answer(s3, tmp_path):
    logdir = f"s3://{BUCKET}/logs/shared"
    service = TraceService(logdir, cache_dir=tmp_path / "cache", rescan_s=3600, prepare=pipeline.prepare)
    try:
        get = _client(service)
        code, runs = get("runs")
        assert code == 200 and runs["scan_error"] is None and runs["logdir"] == logdir
        spans = {s["file"]: s["id"] for r in runs["runs"] for w in r["workers"] for s in w["spans"]}
        sid = spans["worker0.1623143089861.pt.trace.json.gz"]
        deadline = time.monotonic() + 120
        while (state := get("status", f"span={sid}&load=1")[1]["traces"][0])["state"] != "ready":
            assert state["state"] != "error", state["error"]
            assert time.monotonic() < deadline
        code, summary = get("summary", f"span={sid}")
        assert code == 200 and summary["verdict"]
        code, lanes = get("lanes", f"span={sid}&width_px=800")
        assert code == 200 and any(lane["kind"] == "gpu" for lane in lanes["lanes"])
        row = next(r for lane in lanes["lanes"] if lane["kind"] == "gpu" for r in lane["events"]["row"] if r >= 0)
        code, event = get("event", f"span={sid}&row={row}&args=1")
        assert code == 200 and event.get("args_error") is None and event["args"], event
    finally:
        service.close()


def test_a_changed_sidecar_on_s3_reloads_the_span(s3, tmp_path):
    """A running service lists each remote `.kinetoscope/` folder once per scan; a sidecar rewritten there (here
    by another client, boto3) reloads the span, which then says why the sidecar is no longer used, and a
    re-index brings the sidecar back. An unchanged sidecar reloads nothing."""
    import boto3
    prefix = f"reload-{os.getpid()}-{time.monotonic_ns()}"
    local = tmp_path / "run" / "rank0.0.pt.trace.json"
    local.parent.mkdir(parents=True)
    local.write_text(json.dumps(gloo_rank(0, world=2)))
    upload(s3.endpoint, BUCKET, {f"{prefix}/run/rank0.0.pt.trace.json": local})
    logdir = f"s3://{BUCKET}/{prefix}"
    trace = f"{logdir}/run/rank0.0.pt.trace.json"
    assert index_trace(trace).status == NEW
    service = TraceService(logdir, cache_dir=None, rescan_s=3600, prepare=pipeline.prepare, index=SidecarIndex())
    try:
        service.scan_now()
        (sid, _, _), = service.snapshot()

        def load() -> dict:
            service.get(sid, wait_s=120)
            return service.snapshot(sid)[0][2]
        assert load()["source"] == "sidecar"
        service.scan_now()
        assert service.snapshot(sid)[0][2]["state"] == "ready"  # same ETag: no reload
        garbage = tmp_path / "garbage.kidx"
        garbage.write_bytes(b"not a sidecar" * 10)
        upload(s3.endpoint, BUCKET, {f"{prefix}/run/.kinetoscope/rank0.0.pt.trace.json.kidx": garbage})
        service.scan_now()
        assert service.snapshot(sid)[0][2]["state"] == "unloaded"  # the model from the old sidecar is dropped
        state = load()
        assert state["source"] == "decoded" and state["index_reason"].startswith("not a kinetoscope sidecar")
        assert index_trace(trace).status == CHANGED
        service.scan_now()
        assert service.snapshot(sid)[0][2]["state"] == "unloaded"
        state = load()
        assert state["source"] == "sidecar" and state["index_reason"] is None
    finally:
        service.close()
        client = boto3.client("s3")
        for item in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []):
            client.delete_object(Bucket=BUCKET, Key=item["Key"])


# ---- errors -------------------------------------------------------------------------------------

def test_a_missing_bucket_is_named_and_the_server_keeps_answering(s3, caplog):
    logdir = "s3://no-such-bucket-here/logs"
    with pytest.raises(StorageError, match="no such file, folder or bucket"):
        scan_logdir_checked(logdir)
    service = TraceService(logdir, cache_dir=None, rescan_s=3600, prepare=pipeline.prepare)
    try:
        code, runs = _client(service)("runs")
        assert code == 200 and runs["runs"] == []
        assert runs["scan_error"].startswith(logdir) and "no such file, folder or bucket" in runs["scan_error"]
    finally:
        service.close()
    with pytest.raises(StorageError, match="no such file"):
        read_range(f"s3://{BUCKET}/logs/nope.pt.trace.json", 0, 10)


def test_an_unreachable_endpoint_fails_within_seconds_and_names_the_endpoint(s3, monkeypatch):
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("AWS_ENDPOINT_URL", down)
    _clear_fs_cache()
    try:
        started = time.monotonic()
        with pytest.raises(StorageError) as raised:
            scan_logdir_checked(f"s3://{BUCKET}/logs")
        assert time.monotonic() - started < 15
        assert "cannot reach the storage endpoint" in str(raised.value) and down in str(raised.value)
        assert raised.value.transient
    finally:
        _clear_fs_cache()


def test_a_transient_failure_is_retried_until_the_server_is_back(s3, tmp_path, monkeypatch):
    """The server goes away after the listing: the load fails as transient (to be retried), the routes keep
    answering, and the trace loads once a server answers again on the same endpoint."""
    with moto_server(tmp_path / "a") as server:
        port = server.port
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
        _clear_fs_cache()
        trace = sorted((SAMPLES / "logs" / "synthetic" / "compute").glob("*.gz"))[0]
        upload(server.endpoint, "flaky", {f"logs/{trace.name}": trace})
        service = TraceService("s3://flaky/logs", cache_dir=None, rescan_s=0.5, min_rescan_s=0.1,
                               decode_in_child=False, prepare=pipeline.prepare)
        service.scan_now()
        (sid, _, _), = service.snapshot()
    try:
        service.request_load(sid, wait_s=30)
        (_, _, state), = service.snapshot(sid)
        assert state["state"] == "error" and "cannot reach the storage endpoint" in state["error"]
        assert "retrying in" in state["error"]
        deadline = time.monotonic() + 30
        while True:  # the scanner's next listing fails too (within seconds); the routes still answer
            code, runs = _client(service)("runs")
            assert code == 200 and runs["runs"]  # the listing that failed keeps the trace
            if runs["scan_error"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert "cannot reach the storage endpoint" in runs["scan_error"]
        with moto_server(tmp_path / "b", port=port) as again:
            upload(again.endpoint, "flaky", {f"logs/{trace.name}": trace})
            deadline = time.monotonic() + 60
            while service.snapshot(sid)[0][2]["state"] != "ready":  # the same path, so the same span id
                assert time.monotonic() < deadline, service.snapshot(sid)
                service.request_load(sid, wait_s=1)
                time.sleep(0.2)
    finally:
        service.close()
        _clear_fs_cache()


def test_denied_credentials_are_named_and_never_shown(s3, tmp_path, monkeypatch, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    with moto_server(tmp_path / "auth", auth=True) as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.setenv(remote.OPTIONS_ENV, json.dumps({"key": ACCESS_KEY, "secret": SECRET_KEY}))
        _clear_fs_cache()
        try:
            with pytest.raises(StorageError, match="access denied") as raised:
                scan_logdir_checked(f"s3://{BUCKET}/logs")
            with pytest.raises(StorageError, match="access denied"):
                identity(f"s3://{BUCKET}/logs/x.pt.trace.json")
            service = TraceService(f"s3://{BUCKET}/logs", cache_dir=None, rescan_s=3600, prepare=pipeline.prepare)
            try:
                code, runs = _client(service)("runs")
            finally:
                service.close()
            assert code == 200 and "access denied" in runs["scan_error"]
            assert cli_main(["report", f"s3://{BUCKET}/logs"]) == 1
        finally:
            _clear_fs_cache()
    shown = " ".join([str(raised.value), json.dumps(runs), capsys.readouterr().err, caplog.text])
    assert "access denied" in shown and SECRET_KEY not in shown


def test_credentials_come_from_the_backends_config_file_and_a_wrong_one_is_denied(tmp_path):
    """A server that checks signatures and IAM policies: a teammate's key in an AWS credentials file (no
    credential in the environment) reads the logdir; the same key with a wrong secret is denied, by name."""
    import boto3
    trace = sorted((SAMPLES / "logs" / "synthetic" / "compute").glob("*.gz"))[0]
    with moto_server(tmp_path / "iam", auth=True, free_actions=5) as server:
        admin = dict(endpoint_url=server.endpoint, region_name="us-east-1", aws_access_key_id="setup",
                     aws_secret_access_key="setup-only")
        iam = boto3.client("iam", **admin)
        iam.create_user(UserName="teammate")
        iam.put_user_policy(UserName="teammate", PolicyName="read", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="teammate")["AccessKey"]
        client = boto3.client("s3", **admin)
        client.create_bucket(Bucket="team")
        client.put_object(Bucket="team", Key=f"logs/{trace.name}", Body=trace.read_bytes())  # the 5th free action
        env = {**os.environ, **s3_env(server.endpoint, tmp_path / "home")}
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", remote.OPTIONS_ENV):
            env.pop(name, None)
        credentials = tmp_path / "credentials"
        env["AWS_SHARED_CREDENTIALS_FILE"] = str(credentials)
        credentials.write_text(f"[default]\naws_access_key_id = {key['AccessKeyId']}\n"
                               f"aws_secret_access_key = {key['SecretAccessKey']}\n")
        code, report, _, err = cli_report_json(["s3://team/logs"], env)
        assert code == 0 and len(report["traces"]) == 1 and report["traces"][0]["error"] is None, err
        credentials.write_text(f"[default]\naws_access_key_id = {key['AccessKeyId']}\naws_secret_access_key = {SECRET_KEY}\n")
        code, _, _, err = cli_report_json(["s3://team/logs"], env)
    assert code == 1 and "s3://team/logs: cannot read: access denied" in err and SECRET_KEY not in err, err


# ---- secrets and options ------------------------------------------------------------------------

def test_redact_hides_option_secrets_environment_secrets_and_url_passwords(monkeypatch):
    monkeypatch.setenv(remote.OPTIONS_ENV, json.dumps({"endpoint_url": "http://127.0.0.1:9", "key": "AKIAEXAMPLEKEY",
                                                       "client_kwargs": {"aws_session_token": "tok-12345"},
                                                       "s3": {"secret": "nested-secret-value"}}))
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "azure-account-key-xyz")
    text = ("AKIAEXAMPLEKEY tok-12345 nested-secret-value azure-account-key-xyz s3://user:pa55word@bucket/x "
            "AccountKey=abc123;EndpointSuffix=core X-Amz-Signature=deadbeef&x=1 http://127.0.0.1:9")
    out = remote.redact(text)
    for secret in ("AKIAEXAMPLEKEY", "tok-12345", "nested-secret-value", "azure-account-key-xyz", "pa55word", "abc123",
                   "deadbeef"):
        assert secret not in out
    assert "http://127.0.0.1:9" in out and "s3://***@bucket/x" in out  # the endpoint is no secret: it is named


def test_options_are_flat_or_per_protocol_and_bound_the_waits(monkeypatch):
    monkeypatch.delenv("AWS_MAX_ATTEMPTS", raising=False)
    monkeypatch.delenv("AWS_RETRY_MODE", raising=False)
    monkeypatch.setenv(remote.OPTIONS_ENV, json.dumps({"anon": True, "s3": {"config_kwargs": {"read_timeout": 7}},
                                                       "gs": {"project": "p"}}))
    s3_kwargs = remote.options_for("s3")
    assert s3_kwargs["anon"] is True and "project" not in s3_kwargs and s3_kwargs["use_listings_cache"] is False
    assert s3_kwargs["config_kwargs"] == {"connect_timeout": 5, "read_timeout": 7, "retries": {"max_attempts": 3, "mode": "standard"}}
    assert remote.options_for("gs") == {"use_listings_cache": False, "anon": True, "project": "p"}
    assert remote.options_for("file") == {}
    monkeypatch.setenv("AWS_RETRY_MODE", "adaptive")  # the user's own retry settings win
    assert "retries" not in remote.options_for("s3")["config_kwargs"]


def test_options_may_come_from_a_file(tmp_path):
    path = tmp_path / "opts.json"
    path.write_text('{"anon": true}')
    assert remote.parse_options(f"@{path}") == {"anon": True}
    with pytest.raises(remote.OptionsError, match="cannot read"):
        remote.parse_options(f"@{tmp_path / 'missing.json'}")
    with pytest.raises(remote.OptionsError, match="JSON object, not a JSON list"):
        remote.parse_options("[1]")


def test_a_missing_backend_says_which_extra_to_install():
    message, transient = remote.describe(ImportError("Install s3fs to access S3"), "s3")
    assert "pip install 'kinetoscope[s3]'" in message and not transient
    message, _ = remote.describe(ValueError("Protocol not known: hdfs"), "hdfs")
    assert "kinetoscope[hdfs]" in message


@pytest.mark.parametrize("url, extra, module", [("gs://b/logs", "gcs", "gcsfs"), ("abfs://c/logs", "azure", "adlfs"),
                                                ("hdfs://namenode:8020/logs", "hdfs", "pyarrow")])
def test_a_logdir_whose_backend_is_not_installed_names_the_extra(url, extra, module):
    import importlib.util
    if importlib.util.find_spec(module) is not None:  # looked up, not imported: gcsfs reads its switches on import
        pytest.skip(f"{module} is installed here")
    with pytest.raises(StorageError, match=rf"no filesystem for \w+:// is installed \(pip install 'kinetoscope\[{extra}\]'\)") as raised:
        scan_logdir_checked(url)
    assert not raised.value.transient  # a setup problem: not retried


def test_remote_trace_urls_keep_the_logdirs_host_and_port():
    from kinetoscope.trace.discovery import _url
    assert _url("hdfs://namenode:8020/logs", "/logs", "/logs/run1", "w.1.pt.trace.json") == \
        "hdfs://namenode:8020/logs/run1/w.1.pt.trace.json"
    assert _url("s3://bucket/logs", "bucket/logs", "bucket/logs", "w.pt.trace.json") == "s3://bucket/logs/w.pt.trace.json"
    assert _url(None, "/logs", "/logs", "w.pt.trace.json") is None  # local files keep their path


def test_the_tensorboard_flag_applies_the_options_and_blanks_itself(monkeypatch, tmp_path):
    import argparse

    from kinetoscope.server.tb_loader import KinetoscopeLoader
    from tensorboard.plugins import base_plugin
    monkeypatch.setenv(remote.OPTIONS_ENV, "{}")
    parser = argparse.ArgumentParser()
    loader_ = KinetoscopeLoader()
    loader_.define_flags(parser)
    flags = parser.parse_args(["--kinetoscope_storage_options", json.dumps({"secret": SECRET_KEY, "anon": False})])
    loader_.fix_flags(flags)
    assert json.loads(os.environ[remote.OPTIONS_ENV]) == {"secret": SECRET_KEY, "anon": False}
    assert SECRET_KEY not in str(vars(flags))  # TensorBoard serves its flags at /data/environment
    bad = parser.parse_args(["--kinetoscope_storage_options", "{'secret': '" + SECRET_KEY + "'}"])
    with pytest.raises(base_plugin.FlagsError) as raised:
        loader_.fix_flags(bad)
    assert "JSON object" in str(raised.value) and SECRET_KEY not in str(raised.value)


class _SlowFile:
    """A file handle that counts what was read from it."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.size, self.closed = data, 0, len(data), False

    def read(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out

    def close(self) -> None:
        self.closed = True


def test_the_prefetcher_stays_within_its_read_ahead_and_gives_every_byte_once():
    data = os.urandom(1 << 20)
    source = _SlowFile(data)
    with remote.Prefetcher(source, 64 << 10, 256 << 10) as stream:
        assert stream.read(2) == data[:2]
        stream.seek(0)  # the gzip sniff's seek back
        first = stream.read(100_000)
        time.sleep(0.3)  # the reader dawdles: the fetcher fills its queue and waits
        # at most: the chunk being read, 4 queued (256 KiB ahead), and 1 fetched but not yet queued
        assert source.pos <= (1 + 4 + 1) * (64 << 10) < len(data)
        rest = stream.read()
    assert first + rest == data and source.closed
    with pytest.raises(OSError):
        remote.Prefetcher(_SlowFile(data), 64 << 10, 64 << 10).seek(5)  # only within the chunk being read


def test_a_failed_fetch_is_raised_by_the_read_that_reaches_it():
    class Broken(_SlowFile):
        def read(self, n):
            if self.pos >= 100:
                raise ConnectionResetError("peer went away")
            return super().read(n)
    with remote.Prefetcher(Broken(b"x" * 1000), 100, 200) as stream:
        assert stream.read(100) == b"x" * 100
        with pytest.raises(ConnectionResetError):
            stream.read(100)
