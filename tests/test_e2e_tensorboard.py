"""End to end: the real `tensorboard` CLI as a child process, every route over real logdirs, and a
trace added while it runs. Every process started here is stopped here."""
from __future__ import annotations

import gzip
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import SAMPLES, SHARED_TRACES, VERSIONS_SEEN, op, stop_process, trace_doc, write_trace

TENSORBOARD = Path(sys.executable).parent / "tensorboard"
PORT_RE = re.compile(r"http://127\.0\.0\.1:(\d+)/")
PLUGIN = "/data/plugin/kinetoscope"

pytestmark = pytest.mark.skipif(not TENSORBOARD.exists(), reason="no tensorboard next to the interpreter")
TB_VERSION = importlib.metadata.version("tensorboard") if TENSORBOARD.exists() else "absent"


@contextmanager
def tensorboard(logdir, tmp_path: Path, load_fast: Optional[str] = "false", extra: tuple = (),
                env: Optional[dict] = None, log_name: Optional[str] = None) -> Iterator[str]:
    """Start `tensorboard --logdir LOGDIR` (a path or a URL) on a free local port; yield its base URL; always
    stop it. `env` replaces the environment (default: this one, with a cache under tmp_path).

    `load_fast=None` keeps TensorBoard's default (the Rust data server; no multiplexer for plugins)."""
    log = tmp_path / (log_name or f"tb-{re.sub(r'[^A-Za-z0-9._-]', '_', str(logdir).rstrip('/').rsplit('/', 1)[-1])}.err")
    env = env if env is not None else {**os.environ, "KINETOSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    with open(log, "w") as err:
        flags = [] if load_fast is None else ["--load_fast", load_fast]
        proc = subprocess.Popen([str(TENSORBOARD), "--logdir", str(logdir), "--host", "127.0.0.1", "--port", "0", *flags,
                                 *extra],
                                stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=tmp_path)
    try:
        yield f"http://127.0.0.1:{_wait_for_port(proc, log)}"
    finally:
        stop_process(proc, 15)


def _wait_for_port(proc: subprocess.Popen, log: Path, timeout_s: float = 90) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        match = PORT_RE.search(log.read_text(errors="replace"))
        if match:
            return int(match.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"tensorboard did not report its port:\n{log.read_text(errors='replace')[-3000:]}")


def fetch(url: str) -> tuple[int, str, Any]:
    """(status, content type, parsed JSON or raw bytes)."""
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            status, ctype, data = response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        status, ctype, data = error.code, error.headers.get("Content-Type", ""), error.read()
    return status, ctype, json.loads(data) if ctype.startswith("application/json") else data


def wait_until(check, timeout_s: float, interval_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)


def spans_of(base: str) -> dict[str, str]:
    runs = fetch(f"{base}{PLUGIN}/runs")[2]["runs"]
    return {f"{r['name']}/{s['file']}": s["id"] for r in runs for w in r["workers"] for s in w["spans"]}


def assert_listed(base: str) -> None:
    listing = wait_until(lambda: (lambda body: body if body.get("kinetoscope", {}).get("enabled") else None)(
        fetch(f"{base}/data/plugins_listing")[2]), 30)
    assert listing, "kinetoscope never listed as enabled"
    entry = listing["kinetoscope"]
    assert entry["tab_name"] == "Kinetoscope"
    assert entry["loading_mechanism"] == {"type": "IFRAME", "module_path": f"{PLUGIN}/index.js"}
    status, ctype, script = fetch(f"{base}{PLUGIN}/index.js")
    assert status == 200 and ctype.startswith("text/javascript") and b"render" in script


def walk_span(base: str, sid: str) -> Optional[str]:
    """Every data route of one span; returns the load error when the trace failed to load."""
    url = f"{base}{PLUGIN}"
    status, _, summary = wait_until(lambda: (lambda r: r if r[0] != 409 else None)(fetch(f"{url}/summary?span={sid}")), 120)
    if status == 422:
        return summary["error"]["message"]
    assert status == 200, summary
    devices = [d["device"] for d in summary["devices"]]
    end_us = min(summary["duration_us"], 20_000.0) or 1.0
    queries = {"gaps": f"&device={devices[0] if devices else 0}&limit=10", "launches": "", "memory": "&max_points=64",
               "stalls": "", "lanes": "&width_px=1600", "event": "&row=0", "export": f"&start_us=0&end_us={end_us}"}
    for route, query in queries.items():
        status, ctype, data = fetch(f"{url}/{route}?span={sid}{query}")
        expected = 404 if route == "gaps" and not devices else 200
        mimetype = "application/gzip" if route == "export" and status == 200 else "application/json"
        assert status == expected and ctype.startswith(mimetype), (route, status, data)
        if mimetype == "application/gzip":
            assert "traceEvents" in json.loads(gzip.decompress(data))
    status, _, lanes = fetch(f"{url}/lanes?span={sid}&start_us=0&end_us={end_us}&width_px=400")
    assert status == 200 and lanes["width_px"] == 400
    return None


def walk_logdir(base: str) -> dict[str, str]:
    spans = wait_until(lambda: spans_of(base), 30)
    assert spans, "no spans listed"
    failures = {name: error for name, sid in spans.items() if (error := walk_span(base, sid)) is not None}
    states = {t["id"]: t["state"] for t in fetch(f"{base}{PLUGIN}/status")[2]["traces"]}
    assert set(states) == set(spans.values()) and set(states.values()) <= {"ready", "error"}
    return failures


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is not beside the repo")
def test_shared_traces_every_route(tmp_path):
    with tensorboard(SHARED_TRACES, tmp_path) as base:
        assert_listed(base)
        assert walk_logdir(base) == {}
        status, ctype, error = fetch(f"{base}{PLUGIN}/summary?span=..%2F..%2Fetc%2Fpasswd")
        assert status == 400 and ctype.startswith("application/json")
        status, _, _ = fetch(f"{base}{PLUGIN}/static/..%2F..%2Fplugin.py")
        assert status == 404


@pytest.mark.skipif(not (SAMPLES / "logs").is_dir(), reason="samples/logs not generated")
def test_sample_logdirs_every_route(tmp_path):
    with tensorboard(SAMPLES / "logs", tmp_path) as base:
        assert_listed(base)
        assert walk_logdir(base) == {}


@pytest.mark.skipif(not (SAMPLES / "logs").is_dir(), reason="samples/logs not generated")
@pytest.mark.parametrize("version", [TB_VERSION], ids=lambda v: f"tensorboard-{v}")
def test_this_tensorboard_version_loads_the_plugin(tmp_path, version, record_property):
    """Whatever TensorBoard this venv holds (the newest in `.venv`, the oldest supported in `.venv-min`, see
    `make test-min`) loads the plugin as a user starts it (default flags) and serves it, over HTTP only:
    listed in plugins_listing, `runs`, the `status?load=1` long poll until ready, then `summary`."""
    with tensorboard(SAMPLES / "logs", tmp_path, load_fast=None) as base:
        status, ctype, environment = fetch(f"{base}/data/environment")
        assert status == 200 and ctype.startswith("application/json"), (status, environment)
        served = environment.get("version")
        assert served == version, f"{TENSORBOARD} serves TensorBoard {served}, this venv has {version}"
        VERSIONS_SEEN["tensorboard served over HTTP"] = served
        record_property("tensorboard", served)
        assert_listed(base)
        status, ctype, runs = fetch(f"{base}{PLUGIN}/runs")
        assert status == 200 and ctype.startswith("application/json"), (status, runs)
        sid = runs["runs"][0]["workers"][0]["spans"][0]["id"]

        def ready() -> Optional[dict]:
            code, kind, body = fetch(f"{base}{PLUGIN}/status?span={sid}&load=1&wait_ms=1500")
            assert code == 200 and kind.startswith("application/json"), (code, body)
            (trace,) = body["traces"]
            assert trace["state"] != "error", trace
            return trace if trace["state"] == "ready" else None

        assert wait_until(ready, 120, 0), f"span {sid} never became ready under TensorBoard {version}"
        status, ctype, summary = fetch(f"{base}{PLUGIN}/summary?span={sid}")
        assert status == 200 and ctype.startswith("application/json"), (status, summary)
        assert summary["id"] == sid and summary["events"] > 0


def test_new_trace_appears_while_running_under_default_load_fast(tmp_path):
    logdir = tmp_path / "live"
    write_trace(logdir / "run" / "worker0.1.pt.trace.json", trace_doc([op("ProfilerStep#1", 0, 100), op("aten::add", 1, 5)]))
    with tensorboard(logdir, tmp_path, load_fast=None) as base:
        assert_listed(base)
        assert list(spans_of(base)) == ["run/worker0.1.pt.trace.json"]
        added = write_trace(tmp_path / "incoming.json", trace_doc([op("ProfilerStep#2", 0, 100)]))
        shutil.move(str(added), logdir / "run" / "worker0.2.pt.trace.json")  # atomic, as Kineto writes
        appeared = wait_until(lambda: "run/worker0.2.pt.trace.json" in spans_of(base), 30, 0.5)
        assert appeared, spans_of(base)
        assert walk_span(base, spans_of(base)["run/worker0.2.pt.trace.json"]) is None


def test_a_budget_given_as_a_tensorboard_flag_holds(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(20)]
    write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", trace_doc(events))
    with tensorboard(tmp_path / "logs", tmp_path, extra=("--kinetoscope_max_events", "10")) as base:
        spans = wait_until(lambda: spans_of(base), 30)
        (sid,) = spans.values()
        status, _, body = wait_until(lambda: (lambda r: r if r[0] != 409 else None)(fetch(f"{base}{PLUGIN}/summary?span={sid}")), 60)
    assert status == 422, body
    message = body["error"]["message"]
    assert "budget of 10 events" in message and "KINETOSCOPE_MAX_EVENTS" in message, message
