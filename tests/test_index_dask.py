"""`kinetoscope index` on Dask: a 32-rank logdir indexed by a local Dask cluster (`--dask-local 2`) and by a
cluster of separate `dask scheduler` / `dask worker` processes on 127.0.0.1, one of whose workers is killed
mid-run. Every sidecar must equal what a local decode produces, and none may be lost."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import REPO, SAMPLES
from kinetoscope import pipeline
from kinetoscope.index import codec, sidecar
from kinetoscope.trace.discovery import scan_logdir
from kinetoscope.trace.loader import load_trace

distributed = pytest.importorskip("distributed")
sys.path.insert(0, str(SAMPLES))
from synth.multirank import write_job  # noqa: E402

RANKS = 32
DASK = Path(sys.executable).parent / "dask"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tb_plugin"), os.environ.get("PYTHONPATH", "")])}


def make_logdir(root: Path, ops_per_step: int = 0) -> Path:
    write_job(root / "job", ranks=RANKS, steps=4, straggler=5, ops_per_step=ops_per_step)
    return root


def index_cli(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetoscope.cli", "index", *args], env=env or ENV,
                          capture_output=True, text=True, timeout=300)


def assert_all_equal_local_decode(root: Path, every: int = 1) -> None:
    """Every sidecar is whole and of its trace; every `every`-th equals a local decode field by field."""
    traces = scan_logdir(str(root))
    assert len(traces) == RANKS
    for t in traces:
        assert sidecar.read_header(t.path)["trace"]["size"] == t.size
        sidecar.open_summary(t.path)
    for t in traces[::every]:
        model, prepared = sidecar.open_prepared(t.path)
        want_model = load_trace(t.path, cache_dir=None)
        assert codec.difference(model, want_model) is None, t.path
        assert codec.difference(prepared, pipeline.prepare(want_model)) is None, t.path


def test_dask_local_cluster_indexes_32_ranks_like_a_local_decode(tmp_path):
    root = make_logdir(tmp_path)
    done = index_cli(str(root), "--dask-local", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(lines) == RANKS and all(" indexed " in line for line in lines)  # progress, one line per trace
    assert f"{RANKS} traces" in done.stdout and "local dask cluster of 2 workers" in done.stdout
    assert f"ranks of run job: {RANKS} of {RANKS} present; stragglers: rank 5 (rank5)" in done.stdout
    assert_all_equal_local_decode(root)
    again = index_cli(str(root), "--dask-local", "2")
    assert again.returncode == 0 and f"{RANKS} up to date" in again.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not DASK.exists(), reason="no dask CLI next to the interpreter")
def test_a_killed_dask_worker_loses_no_trace(tmp_path):
    root = make_logdir(tmp_path, ops_per_step=2500)  # about 0.3 s of work per trace here
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    procs: list[subprocess.Popen] = []

    def spawn(name: str, *args: str) -> subprocess.Popen:
        proc = subprocess.Popen([str(DASK), *args], env=ENV, stdout=subprocess.DEVNULL,
                                stderr=open(logs / f"{name}.log", "w"), start_new_session=True)
        procs.append(proc)
        return proc

    try:
        spawn("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
        workers = [spawn(f"worker{i}", "worker", address, "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1",
                         "--no-dashboard") for i in range(2)]
        with distributed.Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=60)
        errors = open(logs / "index.err", "w+")
        run = subprocess.Popen([sys.executable, "-m", "kinetoscope.cli", "index", str(root), "--scheduler", address],
                               env=ENV, stdout=subprocess.PIPE, stderr=errors, text=True)
        seen = []
        for line in run.stdout:
            seen.append(line)
            if len(seen) == 6:  # mid-run: kill one worker (no nanny: it stays dead; Dask moves its task)
                os.kill(workers[0].pid, signal.SIGKILL)
                killed_at = len(seen)
                break
        # The rest through the same reader: communicate() would read the pipe's descriptor and lose the lines this
        # reader had buffered already (a progress line then went missing when it came in one read with the 6th).
        guard = threading.Timer(300, run.kill)  # bounded, as communicate(timeout=300) was
        guard.start()
        try:
            out = "".join(seen) + run.stdout.read()
            run.wait(timeout=10)
        finally:
            guard.cancel()
        errors.seek(0)
        err = errors.read()
        assert run.returncode == 0, err[-3000:]
        assert workers[0].wait(timeout=10) == -signal.SIGKILL and killed_at < RANKS
        progress = [line for line in out.splitlines() if line.startswith("[")]
        assert len(progress) == RANKS and " 0 failed" in out, out
        # a worker killed after writing a sidecar whole, before it reported: its task runs again elsewhere and finds
        # that sidecar up to date (written whole, signed, checked), so every trace is indexed once either way
        indexed = sum(1 for line in progress if "] indexed" in line or "] up to date" in line)
        assert indexed == RANKS, out
        assert_all_equal_local_decode(root, every=4)
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_unreachable_scheduler_is_a_usage_error(tmp_path):
    root = make_logdir(tmp_path)
    done = index_cli(str(root), "--scheduler", f"tcp://127.0.0.1:{_free_port()}",
                     env={**ENV, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert done.returncode == 2 and "cannot reach the Dask scheduler" in done.stderr
