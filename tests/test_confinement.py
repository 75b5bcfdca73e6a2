"""Issue 26: no route and no command reads, writes or deletes anything outside the logdir (or outside what the
user named), through links (to a file, to a folder, to the parent, to /proc/self/environ), FIFOs or files
swapped after the scan; credentials in a logdir URL are refused and redacted; content errors are named.

Everything lives under pytest's tmp_path; links point at files there (and at /proc/self/environ, which is
only ever read, never written); every wait is bounded.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, gloo_rank, kernel, launch, memory, op, trace_doc, write_trace
from kinetoscope import pipeline
from kinetoscope.cli.main import main as cli_main
from kinetoscope.index.readers import SidecarIndex
from kinetoscope.index.tasks import index_trace
from kinetoscope.server.plugin import KinetoscopePlugin
from kinetoscope.server.service import TraceService
from kinetoscope.server.tb_loader import KinetoscopeLoader
from kinetoscope.trace import remote
from kinetoscope.trace.discovery import scan_logdir
from kinetoscope.trace.storage import StorageError, confined, read_bytes
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

PREFIX = "/data/plugin/kinetoscope"
SECRET = "OUTSIDE-SECRET-7f3a"  # in every file outside the logdir: must never appear in an answer or output
ENV_MARK = "KINETOSCOPE_TEST_ENVIRON_MARK"


def secret_trace() -> dict:
    """A valid trace outside the logdir, its names carrying the secret (so a read of it would show)."""
    return trace_doc([op("ProfilerStep#1", 0, 100), op(SECRET, 1, 50), launch(2, 3, 1), kernel(SECRET, 10, 20, 1),
                      memory(3, 1024, total=1024)])


@pytest.fixture
def hostile_logdir(tmp_path, monkeypatch):
    """A logdir holding one good trace and links out of it, and an outside folder to watch."""
    monkeypatch.setenv(ENV_MARK, SECRET)
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    outside = tmp_path / "outside"
    write_trace(outside / "creds.pt.trace.json", secret_trace())
    (outside / "passwd.json").write_text(f'{{"traceEvents": [], "note": "{SECRET}"}}')
    (outside / ".x.kidx.0123456789abcdef.kinetoscope-tmp").write_text(SECRET)
    (outside / ".old.tmp").write_text(SECRET)
    os.utime(outside / ".x.kidx.0123456789abcdef.kinetoscope-tmp", (1, 1))
    os.utime(outside / ".old.tmp", (1, 1))
    logdir = tmp_path / "logs"
    write_trace(logdir / "run" / "good.1.pt.trace.json", gloo_rank(0, world=1))
    (logdir / "run" / "environ.2.pt.trace.json").symlink_to("/proc/self/environ")
    (logdir / "run" / "creds.3.pt.trace.json").symlink_to(outside / "creds.pt.trace.json")
    (logdir / "run" / "passwd.json").symlink_to(outside / "passwd.json")
    (logdir / "up").symlink_to(tmp_path)  # the parent folder: everything, including `outside`
    (logdir / "linked").symlink_to(outside)
    (logdir / "inside").symlink_to(logdir / "run")  # a link whose target lies inside: kept
    return logdir, outside


def snapshot(folder: Path) -> dict:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def test_the_scan_lists_nothing_outside_and_keeps_links_inside(hostile_logdir):
    logdir, _ = hostile_logdir
    found = scan_logdir(str(logdir))
    # the inside link is the same folder as `run`: listed once, under the name the walk meets first
    assert [os.path.basename(f.path) for f in found] == ["good.1.pt.trace.json"]
    assert all(SECRET not in f.path for f in found)


def test_opening_through_a_link_out_is_refused(hostile_logdir, tmp_path):
    logdir, outside = hostile_logdir
    with confined([str(logdir)]):
        for name in ("environ.2.pt.trace.json", "creds.3.pt.trace.json"):
            with pytest.raises(StorageError, match="outside the logdir"):
                read_bytes(str(logdir / "run" / name))
        os.mkfifo(logdir / "run" / "fifo.4.pt.trace.json")
        started = time.monotonic()
        with pytest.raises(StorageError, match="a FIFO"):
            read_bytes(str(logdir / "run" / "fifo.4.pt.trace.json"))
        assert time.monotonic() - started < 5


@pytest.fixture
def plugin(hostile_logdir, tmp_path):
    logdir, _ = hostile_logdir
    instance = KinetoscopePlugin(base_plugin.TBContext(logdir=str(logdir), multiplexer=None))
    instance._service = TraceService(str(logdir), cache_dir=tmp_path / "cache", rescan_s=3600, decode_in_child=False,
                                     prepare=pipeline.prepare, index=SidecarIndex(), stages=pipeline.STAGES)
    yield instance
    instance._service.close()


QUERIES = ["runs", "status", "summary", "verdict", "markdown", "ranks", "gaps", "launches", "memory?max_points=100000",
           "stalls", "lanes", "event?row=0", "event?row=1&args=1", "export", "export?whole=1", "export?check=1",
           "compare?b={sid}", "tables", "search?q=aten", "whatif?edit=dataloader=0", "critical_path", "counters",
           "name?key=0123456789abcdef"]


def test_the_confinement_check_covers_every_data_route(plugin):
    routes = {r.strip("/") for r in plugin.get_plugin_apps()} - {"index.js", "static/*", "static/bundle.js"}  # the frontend
    assert routes == {q.partition("?")[0] for q in QUERIES}


def _all_answers(apps: dict, sid: str) -> list[tuple[str, int, bytes]]:
    """Every route of the plugin for one span, with its usual parameters."""
    queries = [q.format(sid=sid) for q in QUERIES]
    out = []
    for query in queries:
        route, _, rest = query.partition("?")
        url = f"{PREFIX}/{route}?span={sid}" + (f"&{rest}" if rest else "")
        response = Client(apps["/" + route]).get(url)
        body = b"".join(response.response) if not response.is_streamed or response.status_code == 200 else b""
        if response.headers.get("Content-Encoding") == "gzip" or body[:2] == b"\x1f\x8b":
            import gzip
            body = gzip.decompress(body)
        out.append((url, response.status_code, body))
    return out


def test_no_route_answers_a_byte_from_outside_even_when_a_trace_is_swapped_for_a_link(plugin, hostile_logdir):
    logdir, outside = hostile_logdir
    before = snapshot(outside)
    apps = plugin.get_plugin_apps()
    service = plugin.service()
    service.scan_now()
    spans = service.snapshot()
    assert spans and all(SECRET not in f.path for _, f, _ in spans)
    for sid, _f, _ in spans:
        service.get(sid, wait_s=60)
    good = logdir / "run" / "good.1.pt.trace.json"
    answers = []
    for target in ("/proc/self/environ", str(outside / "creds.pt.trace.json")):
        good.rename(logdir / "run" / "kept.json.bak")
        good.symlink_to(target)  # swapped after the scan and the load
        for sid, _f, _ in spans:
            answers += _all_answers(apps, sid)
        good.unlink()
        (logdir / "run" / "kept.json.bak").rename(good)
    assert answers
    for url, _status, body in answers:
        assert SECRET.encode() not in body and ENV_MARK.encode() not in body, url
        assert len(body) < 2 << 20, (url, len(body))
    whole = [a for a in answers if "whole=1" in a[0]]
    assert whole and all(status != 200 for _, status, _ in whole)
    assert snapshot(outside) == before


def test_export_whole_serves_only_a_loaded_trace(plugin, hostile_logdir):
    logdir, _ = hostile_logdir
    write_trace(logdir / "run" / "bad.5.pt.trace.json", '{"traceEvents": [{"ph": "X", "na')
    apps = plugin.get_plugin_apps()
    service = plugin.service()
    service.scan_now()
    (bad, _f, _), = [s for s in service.snapshot() if s[1].path.endswith("bad.5.pt.trace.json")]
    response = Client(apps["/export"]).get(f"{PREFIX}/export?span={bad}&whole=1")
    assert response.status_code == 422 and b"traceEvents" not in b"".join(response.response)  # failed: not served
    (sid, _f, _), = [s for s in service.snapshot() if s[1].path.endswith("good.1.pt.trace.json")][:1]
    response = Client(apps["/export"]).get(f"{PREFIX}/export?span={sid}&whole=1")
    assert response.status_code == 200
    import gzip
    assert json.loads(gzip.decompress(b"".join(response.response)))["traceEvents"]


def test_every_command_reads_and_writes_only_inside(hostile_logdir, capsys):
    logdir, outside = hostile_logdir
    before = snapshot(outside)
    assert cli_main(["index", str(logdir), "--jobs", "1"]) == 0
    # a `.kinetoscope` folder linked out of the logdir is never written through
    (logdir / "run" / ".kinetoscope").rename(logdir / "run" / "kept-index")
    (logdir / "run" / ".kinetoscope").symlink_to(outside)
    status = cli_main(["index", str(logdir), "--jobs", "1", "--force"])
    assert status == 1
    for command in (["report", str(logdir), "--format", "json"], ["report", str(logdir)],
                    ["table", str(logdir / "run" / "good.1.pt.trace.json")],
                    ["diff", str(logdir), str(logdir)],
                    ["report", str(logdir / "run" / "environ.2.pt.trace.json")]):
        cli_main(command)
    out, err = capsys.readouterr()
    assert SECRET not in out + err and ENV_MARK not in out + err
    assert snapshot(outside) == before  # nothing written, nothing deleted (not even the stale temp files there)


def test_report_through_a_link_to_the_parent_reads_only_the_logdir(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    logdir = tmp_path / "logs"
    write_trace(logdir / "run" / "w.1.pt.trace.json", gloo_rank(0, world=1))
    write_trace(tmp_path / "big" / "other.9.pt.trace.json", secret_trace())
    (logdir / "parent").symlink_to(tmp_path)
    assert cli_main(["report", str(logdir), "--format", "json"]) == 0
    out, _ = capsys.readouterr()
    assert [t["path"] for t in json.loads(out)["traces"]] == [str(logdir / "run" / "w.1.pt.trace.json")]


def test_a_sidecar_folder_link_out_is_neither_read_nor_written(tmp_path):
    logdir, outside = tmp_path / "logs", tmp_path / "outside"
    path = write_trace(logdir / "run" / "w.1.pt.trace.json", gloo_rank(0, world=1))
    outside.mkdir()
    (logdir / "run" / ".kinetoscope").symlink_to(outside)
    with confined([str(logdir)]):
        outcome = index_trace(str(path), roots=(str(logdir),))
    assert outcome.status == "failed" and "link" in outcome.reason
    assert list(outside.iterdir()) == []


CREDENTIAL_URLS = ["s3://user:hunter2pass@bucket/logs", "gs://oauth2:hunter2pass@bucket/logs",
                   "simplecache::s3://AKIAX:hunter2pass@bucket/logs"]


@pytest.mark.parametrize("url", CREDENTIAL_URLS)
def test_credentials_in_a_logdir_url_are_refused_and_never_shown(url, capsys):
    for command in (["report", url], ["index", url], ["table", url], ["diff", url, url]):
        assert cli_main(command) == 2
        _, err = capsys.readouterr()
        assert "hunter2pass" not in err and "carries credentials" in err and "storage options" in err
    service = TraceService(url, cache_dir=None, rescan_s=3600)
    try:
        service.scan_now()
        assert "carries credentials" in service.scan_error and "hunter2pass" not in service.scan_error
    finally:
        service.close()
    loader = KinetoscopeLoader()
    flags = type("Flags", (), {"logdir": url, "logdir_spec": None})()
    with pytest.raises(base_plugin.FlagsError) as refused:
        loader.fix_flags(flags)
    assert "hunter2pass" not in str(refused.value)


@pytest.mark.parametrize("text", [
    "s3://user:hunter2pass@bucket/x", "cannot reach user:hunter2pass@bucket (endpoint)",
    "https://hunter2pass@host/x", "url=https://h/x?X-Amz-Signature=hunter2pass&a=1",
])
def test_redaction_covers_every_form(text):
    assert "hunter2pass" not in remote.redact(text)


def test_a_too_long_integer_is_a_named_content_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "logs" / "run" / "w.1.pt.trace.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, '
                    '"dur": ' + "9" * 4400 + "}]}")
    run = subprocess.run([sys.executable, "-m", "kinetoscope.cli", "report", str(path)], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO / "tb_plugin")})
    assert run.returncode == 1 and "number too long" in run.stderr and "Traceback" not in run.stderr
    assert "internal error" not in run.stderr
    service = TraceService(str(tmp_path / "logs"), cache_dir=None, rescan_s=3600, prepare=pipeline.prepare)
    try:
        service.scan_now()
        (sid, _f, _), = service.snapshot()
        service.request_load(sid, wait_s=60)
        (_, _, state), = service.snapshot(sid)
        assert state["state"] == "error" and "number too long" in state["error"] and "retrying" not in state["error"]
        assert "out of memory" not in state["error"]
    finally:
        service.close()


ADVERSARIAL = ["a" * 1_000_000, "a:" * 500_000, "x://" + "a" * 1_000_000, "k=v&" * 250_000, "a://" * 250_000,
               ":@" * 500_000, "a=b:c" * 200_000, "u:p@" * 250_000, " x://u:p@h" * 100_000, "Ab9+.-" * 166_666 + "://",
               "a " * 500_000, "password=" * 111_111]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda t: repr(t[:6]))
def test_a_megabyte_is_redacted_in_linear_bounded_time(text):
    # The patterns were quadratic on runs of letters (4 s of CPU, holding the GIL, for 60,000 characters)
    best = min(_timed(remote.redact, text) for _ in range(3))
    assert best < 0.010, f"{best * 1e3:.1f} ms"
    assert len(remote.redact(text)) <= remote.MAX_REDACTED_CHARS + 64
    # within the cut, the patterns themselves run in linear time: 100 times the text, not 10,000 times the time
    small, large = text[:400], text[:40_000]
    t_small = min(_timed(remote.redact, small, 10**6) for _ in range(5))
    t_large = min(_timed(remote.redact, large, 10**6) for _ in range(3))
    assert t_large < 400 * max(t_small, 2e-5), (t_small, t_large)


def _timed(fn, *args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


@pytest.mark.parametrize("cut_at", [5, 12, 20, 30])
def test_a_cut_never_leaves_a_secrets_head(cut_at):
    text = "x " * 10 + "s3://user:hunter2pass@bucket/key and more"
    out = remote.redact(text, limit=20 + cut_at)
    assert "hunter" not in out and "user:" not in out
    assert out.endswith("characters not shown)")
    assert remote.redact("x://u:hunter2pass@h", limit=1000) == "x://***@h"


def test_a_schemes_whole_run_is_the_scheme():
    assert remote.redact("9abc://u:hunter2pass@h/x") == "9abc://***@h/x"
    assert "hunter2pass" not in remote.redact("key=user:hunter2pass@host")
