"""Harness side of the peer measurements: process-tree measurement and runners.

Every runner starts a *fresh* interpreter on one trace file (``.json`` or
``.json.gz``) and returns a :class:`RunResult`:

* :func:`run_tbprof`  - torch-tb-profiler 0.4.3, its loader producing the run
  (parse + generate run profile), single process, in the peers venv;
* :func:`run_tbprof_plugin` - the same through the plugin's real multi-process
  ``RunLoader.load()`` (optional tool);
* :func:`run_hta`     - HolisticTraceAnalysis 0.5.0: ``TraceAnalysis`` +
  ``get_idle_time_breakdown`` + ``get_cuda_kernel_launch_stats``;
* :func:`run_floor`   - the physical reference, in the project interpreter:
  read + gunzip + decode to Python objects with one plain decoder;
* :func:`measure`     - runs any command with a timeout, sampling the RSS of
  the whole process tree.

A peer that fails, times out or exceeds the memory cap is a result
(``status`` != ``"ok"``, with its message), never an exception.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from layout import FLOOR_SITE, PEER_WORKER, main_python, peers_python

SAMPLE_INTERVAL_S = 0.02
"""RSS sampling period."""

TREE_REFRESH_EVERY = 5
"""Re-list the descendants every N samples (listing costs ~1 ms, reading one RSS ~10 us)."""

FLOOR_DECODERS: tuple[str, ...] = ("msgspec", "orjson", "simdjson")


# --------------------------------------------------------------------------- measure


class _TreeSampler(threading.Thread):
    """Samples the summed RSS of a process and all its descendants until stopped.

    Calls ``on_cap`` once if the sum exceeds ``cap_bytes``.
    """

    def __init__(self, pid: int, interval_s: float, cap_bytes: int | None, on_cap: Any) -> None:
        super().__init__(daemon=True)
        import psutil

        self._psutil = psutil
        self._root = psutil.Process(pid)
        self._interval_s = interval_s
        self._cap_bytes = cap_bytes
        self._on_cap = on_cap
        self._stop_event = threading.Event()
        self._procs: list[Any] = [self._root]
        self._status_path = f"/proc/{pid}/status"
        self.peak_bytes = 0
        self.root_hwm_bytes = 0
        self.capped = False

    def _refresh_tree(self) -> None:
        with contextlib.suppress(self._psutil.Error):
            self._procs = [self._root, *self._root.children(recursive=True)]

    def _root_hwm(self) -> int:
        """The root's ``VmHWM``: its own exact RSS high-water mark since exec (0 once it has exited)."""
        try:
            with open(self._status_path, "rb") as fh:
                for line in fh:
                    if line.startswith(b"VmHWM:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return 0

    def _sample(self) -> int:
        total = 0
        for proc in self._procs:
            try:
                total += proc.memory_info().rss
            except self._psutil.Error:
                continue
        return total

    def run(self) -> None:
        tick = 0
        while not self._stop_event.is_set():
            if tick % TREE_REFRESH_EVERY == 0:
                self._refresh_tree()
            tick += 1
            rss = self._sample()
            self.peak_bytes = max(self.peak_bytes, rss)
            self.root_hwm_bytes = max(self.root_hwm_bytes, self._root_hwm())
            if self._cap_bytes is not None and rss > self._cap_bytes and not self.capped:
                self.capped = True
                self._on_cap()
            self._stop_event.wait(self._interval_s)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def _kill_tree(pid: int) -> None:
    """SIGKILL the process group started for ``pid`` and any descendant that left it."""
    import psutil

    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:  # the root may already be gone
        descendants = []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # the child leads its own session: pgid == pid
    for proc in descendants:
        with contextlib.suppress(psutil.Error):
            proc.kill()


def _tail(fh: Any, max_chars: int) -> str:
    fh.flush()
    size = fh.seek(0, os.SEEK_END)
    fh.seek(max(0, size - max_chars))
    return fh.read().decode("utf-8", errors="replace")


def measure(
    cmd: list[str],
    timeout_s: float,
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    mem_cap_bytes: int | None = None,
    sample_interval_s: float = SAMPLE_INTERVAL_S,
    tail_chars: int = 4000,
) -> dict[str, Any]:
    """Run ``cmd`` to completion (or kill it) and measure it.

    Returns ``wall_s`` (spawn to exit, ``time.perf_counter``),
    ``peak_rss_bytes`` (max of the summed RSS of the whole process tree sampled
    every ``sample_interval_s``, and of the child's own ``VmHWM`` high-water
    mark, which catches its spikes shorter than a sample; ``ru_maxrss`` is not
    used: after fork+exec it still counts the harness's own RSS), ``rc``,
    ``stderr_tail`` (last
    ``tail_chars`` of stdout+stderr, which share one file), ``timed_out`` and
    ``mem_capped`` (killed for exceeding ``mem_cap_bytes``).  The child runs in
    its own session so the whole tree can be killed on timeout.
    """
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            _kill_tree(proc.pid)

        sampler = _TreeSampler(proc.pid, sample_interval_s, mem_cap_bytes, lambda: _kill_tree(proc.pid))
        sampler.start()
        timer = threading.Timer(timeout_s, on_timeout)
        timer.start()
        _, status = os.waitpid(proc.pid, 0)
        wall_s = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        timer.cancel()
        sampler.stop()
        _kill_tree(proc.pid)  # leftovers (e.g. a peer's helper processes), by our own group id
        return {
            "wall_s": wall_s,
            "peak_rss_bytes": max(sampler.peak_bytes, sampler.root_hwm_bytes),
            "rc": proc.returncode,
            "stderr_tail": _tail(log, tail_chars),
            "timed_out": timed_out.is_set(),
            "mem_capped": sampler.capped,
        }


# --------------------------------------------------------------------------- results


@dataclass
class RunResult:
    """One measured run of one tool on one trace.

    ``time_s`` is the number the report compares: the wall time of the fresh
    process (interpreter start, imports, load, analysis; teardown excluded)
    for every tool except ``kinetoscope_warm``, where it is the in-process
    time of the second, cache-served load.  ``None`` unless ``status == "ok"``.
    """

    tool: str
    trace: str
    status: str  # ok | failed | timeout | memcap | skipped
    time_s: float | None = None
    wall_s: float | None = None
    peak_rss_bytes: int | None = None
    rc: int | None = None
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    stderr_tail: str | None = None

    @property
    def finished(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "finished": self.finished}


def _read_worker_result(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _status_and_error(
    m: dict[str, Any], worker: dict[str, Any] | None, timeout_s: float, mem_cap_bytes: int | None
) -> tuple[str, str | None]:
    if m["timed_out"]:
        return "timeout", f"did not finish in {timeout_s:g} s"
    if m["mem_capped"]:
        return "memcap", f"killed: process tree RSS exceeded {mem_cap_bytes / 2**30:.1f} GiB"
    if worker is not None and worker.get("ok") and m["rc"] == 0:
        return "ok", None
    if worker is not None and worker.get("error"):
        return "failed", worker["error"]
    last_line = next((ln for ln in reversed(m["stderr_tail"].splitlines()) if ln.strip()), "")
    return "failed", f"exit code {m['rc']}: {last_line}"[:2000]


def run_worker(
    tool: str,
    trace: Path,
    python: Path,
    script: Path,
    args: list[str],
    timeout_s: float,
    mem_cap_bytes: int | None = None,
    env_extra: dict[str, str] | None = None,
) -> RunResult:
    """Run ``python script ...args --result-json F --scratch D`` under :func:`measure`.

    ``script`` must write the worker result JSON (``ok``, ``error``,
    ``timings``, ``info``) to ``F``; ``D`` is a fresh scratch directory, removed
    afterwards.
    """
    scratch = Path(tempfile.mkdtemp(prefix=f"kinetoscope-bench-{tool}-"))
    try:
        result_json = scratch / "result.json"
        work = scratch / "work"
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.update(env_extra or {})
        cmd = [str(python), str(script), *args, "--result-json", str(result_json), "--scratch", str(work)]
        m = measure(cmd, timeout_s, env=env, mem_cap_bytes=mem_cap_bytes)
        worker = _read_worker_result(result_json)
        status, error = _status_and_error(m, worker, timeout_s, mem_cap_bytes)
        return RunResult(
            tool=tool,
            trace=str(trace),
            status=status,
            time_s=m["wall_s"] if status == "ok" else None,
            wall_s=m["wall_s"],
            peak_rss_bytes=m["peak_rss_bytes"],
            rc=m["rc"],
            error=error,
            timings=(worker or {}).get("timings", {}),
            info=(worker or {}).get("info", {}),
            stderr_tail=None if status == "ok" else m["stderr_tail"],
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --------------------------------------------------------------------------- runners


def run_tbprof(trace: Path, timeout_s: float, mem_cap_bytes: int | None = None) -> RunResult:
    """torch-tb-profiler: cold time to a loaded run (parse + generate), single process."""
    return run_worker("tbprof", trace, peers_python(), PEER_WORKER, ["tbprof", str(trace)], timeout_s, mem_cap_bytes)


def run_tbprof_plugin(trace: Path, timeout_s: float, mem_cap_bytes: int | None = None) -> RunResult:
    """torch-tb-profiler: cold time through the plugin's own multi-process ``RunLoader.load()``."""
    return run_worker(
        "tbprof_plugin", trace, peers_python(), PEER_WORKER, ["tbprof_plugin", str(trace)], timeout_s, mem_cap_bytes
    )


def run_hta(trace: Path, timeout_s: float, mem_cap_bytes: int | None = None) -> RunResult:
    """HTA: TraceAnalysis construction + idle time breakdown + kernel launch stats."""
    return run_worker("hta", trace, peers_python(), PEER_WORKER, ["hta", str(trace)], timeout_s, mem_cap_bytes)


def run_floor(trace: Path, timeout_s: float, mem_cap_bytes: int | None = None, decoder: str = "orjson") -> RunResult:
    """Floor with one decoder, in the project interpreter (decoders from ``.bench/floor-site``)."""
    return run_worker(
        f"floor:{decoder}",
        trace,
        main_python(),
        PEER_WORKER,
        ["floor", str(trace), "--decoder", decoder],
        timeout_s,
        mem_cap_bytes,
        env_extra={"PYTHONPATH": str(FLOOR_SITE)},
    )
