"""Shared test helpers: where the real traces are, and builders for tiny hand-made Kineto traces."""
from __future__ import annotations

import atexit
import gzip
import json
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_TRACES = SHARED / "traces"
ORACLE = SHARED / "oracle" / "reference.jsonl"
SAMPLES = REPO / "samples"

# Sidecars are signed (index/signing.py): the suite signs with, and trusts, a key of its own (made on the first
# `index`), never the user's; subprocesses (TensorBoard, the CLI) inherit it.
_KEY_DIR = tempfile.mkdtemp(prefix="kinetoscope-test-key-")
os.environ["KINETOSCOPE_SIDECAR_KEY_FILE"] = os.path.join(_KEY_DIR, "sidecar.key")
atexit.register(shutil.rmtree, _KEY_DIR, True)

requires_shared = pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is not beside the repo")

# What the session ran against, printed at its end (`make test-min` runs the suite at the declared minimum
# versions, `make test` at the newest): the installed versions, plus what tests saw at run time.
VERSIONS_SEEN: dict[str, str] = {}
_REPORTED = ("tensorboard", "werkzeug", "protobuf", "numpy", "msgspec", "fsspec", "isal")


def pytest_terminal_summary(terminalreporter) -> None:
    import importlib.metadata
    import platform

    def version(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "absent"
    installed = [f"python {platform.python_version()}"] + [f"{name} {version(name)}" for name in _REPORTED]
    terminalreporter.write_line("ran against: " + ", ".join(installed))
    for what, value in VERSIONS_SEEN.items():
        terminalreporter.write_line(f"{what}: {value}")


def stop_process(proc: subprocess.Popen, wait_s: float) -> None:
    """Stop a server the tests started: SIGTERM, then SIGKILL if it has not exited within `wait_s`."""
    proc.terminate()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(wait_s)


def shared_trace_files() -> list[Path]:
    """Every real trace under ../shared/traces (empty when it is absent)."""
    if not SHARED_TRACES.is_dir():
        return []
    return sorted(p for p in SHARED_TRACES.rglob("*") if p.name.endswith((".json", ".json.gz")))


def sample_trace_files() -> list[Path]:
    """Every trace of the sample logdirs (samples/logs)."""
    return sorted(p for p in (SAMPLES / "logs").rglob("*") if p.name.endswith((".json", ".json.gz")))


# Builders for 2024-era events (cpu_op / cuda_runtime / kernel); times in µs, as Kineto writes them.
def op(name: str, ts: float, dur: float, tid: Any = 1, cat: str = "cpu_op", pid: Any = 100, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def launch(ts: float, dur: float, corr: int, name: str = "cudaLaunchKernel", tid: Any = 1, **args) -> dict:
    return op(name, ts, dur, tid=tid, cat="cuda_runtime", correlation=corr, **args)


def kernel(name: str, ts: float, dur: float, corr: Optional[int], stream: int = 7, device: int = 0,
           cat: str = "kernel") -> dict:
    args = {"device": device, "stream": stream}
    if corr is not None:
        args["correlation"] = corr
    return {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": ts, "dur": dur, "args": args}


def memory(ts: float, nbytes: int, total: Optional[int] = None, device_type: int = 1, device_id: int = 0,
           tid: Any = 1, reserved: Optional[int] = None) -> dict:
    args = {"Device Type": device_type, "Device Id": device_id, "Bytes": nbytes}
    if total is not None:
        args["Total Allocated"] = total
    if reserved is not None:
        args["Total Reserved"] = reserved
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100, "tid": tid, "ts": ts,
            "args": args}


def one_step_doc(kernels: int = 2, spacing: float = 100, step_us: float = 1000) -> dict:
    """One ProfilerStep; each of `kernels` ops launches one kernel, `spacing` µs apart, leaving GPU idle gaps
    between the kernels (1 + 3 * kernels complete events)."""
    events = [op("ProfilerStep#1", 0, step_us)]
    for i in range(kernels):
        t = 10 + spacing * i
        events += [op("aten::mm", t, 20), launch(t + 2, 5, corr=i + 1), kernel(f"k{i}", t + 30, 10, corr=i + 1)]
    return trace_doc(events)


def trace_doc(events: list[dict], **top) -> dict:
    return {"schemaVersion": 1, "deviceProperties": [], "traceEvents": events, **top}


def write_trace(path: Path, doc: Any, gz: bool = False) -> Path:
    """Write a trace document (or raw bytes/str) to `path`, gzipped when asked."""
    data = doc if isinstance(doc, bytes) else (doc if isinstance(doc, str) else json.dumps(doc)).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


MS = 1000.0  # µs


def gloo_rank(rank: int, world: int = 4, slow_rank: int = -1, slow_ms: float = 40.0, steps: int = 5,
              transfer_ms: float = 0.3) -> dict:
    """A gloo DDP rank: per step, forward/backward ops, then an all_reduce whose annotation (on the gloo
    thread) lasts until the slowest rank arrives. `slow_rank` does `slow_ms` of extra work first."""
    events, t = [], 0.0
    for s in range(steps):
        step_start = t
        events.append(op("aten::mm", t + 1, 10 * MS))
        t += 10 * MS + 2
        if rank == slow_rank:
            events.append(op("slow_rank_work", t, slow_ms * MS, cat="user_annotation"))
            events.append(op("aten::mm", t + 1, slow_ms * MS - 2))
            t += slow_ms * MS
            wait = 0.0
        else:  # the others start at t and wait until the slow rank arrives
            wait = slow_ms * MS if slow_rank >= 0 else 0.0
        dur = wait + transfer_ms * MS
        events.append(op("c10d::allreduce_", t, 0.05 * MS))
        events.append(op("gloo:all_reduce", t + 10, dur, tid=2, cat="user_annotation"))
        t += dur + 20
        events.append(op(f"ProfilerStep#{s + 2}", step_start, t - step_start, cat="user_annotation"))
        t += 5
    return trace_doc(events, distributedInfo={"backend": "gloo", "rank": rank, "world_size": world})


@pytest.fixture
def no_cache(monkeypatch, tmp_path):
    """Point the default cache at a temp dir so tests never touch the user's cache."""
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@contextmanager
def one_span_service(doc: Any, root: Path):
    """A TraceService (in-process decoding, no cache) on a logdir holding `doc` as its one trace, loaded:
    yields (service, span id)."""
    from kinetoscope import pipeline
    from kinetoscope.server.service import TraceService
    write_trace(root / "run" / "w.1.pt.trace.json", doc)
    service = TraceService(str(root), cache_dir=None, rescan_s=3600, decode_in_child=False, prepare=pipeline.prepare)
    try:
        service.scan_now()
        (sid, _, _), = service.snapshot()
        service.request_load(sid, wait_s=60)
        yield service, sid
    finally:
        service.close()


@contextmanager
def plugin_apps(doc: Any, root: Path):
    """The plugin's route table on a logdir holding `doc` as its one trace, once it has loaded: yields
    (apps, span id)."""
    import time

    from kinetoscope import pipeline
    from kinetoscope.server.plugin import KinetoscopePlugin
    from kinetoscope.server.service import TraceService
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client
    write_trace(root / "run" / "w.1.pt.trace.json", doc)
    plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=str(root), multiplexer=None))
    plugin._service = TraceService(str(root), cache_dir=None, rescan_s=3600, decode_in_child=False, prepare=pipeline.prepare)
    try:
        apps = plugin.get_plugin_apps()
        prefix = "/data/plugin/kinetoscope"
        runs = json.loads(Client(apps["/runs"]).get(f"{prefix}/runs").get_data())["runs"]
        sid = runs[0]["workers"][0]["spans"][0]["id"]
        deadline = time.monotonic() + 30
        while Client(apps["/summary"]).get(f"{prefix}/summary?span={sid}").status_code == 409 and time.monotonic() < deadline:
            time.sleep(0.05)
        yield apps, sid
    finally:
        plugin._service.close()


def cli_report_json(args: list[str], env: dict) -> tuple[int, dict, str, str]:
    """`kinetoscope report ARGS --format json --no-cache` in a child process with `env`: (exit code, the parsed
    report or {}, its stdout, its stderr); what the remote-logdir tests compare with the local report."""
    import sys
    proc = subprocess.run([sys.executable, "-m", "kinetoscope.cli", "report", *args, "--format", "json", "--no-cache"],
                          capture_output=True, text=True, env=env, timeout=300)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stdout, proc.stderr


def without_paths(report: dict) -> dict:
    """A report with its traces' paths removed: the same logdir read remotely and locally compares equal."""
    for entry in report["traces"]:
        entry.pop("path")
    return report
