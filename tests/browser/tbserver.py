"""Start and stop a real `tensorboard` CLI for the browser checks, and wait for Kinetoscope's traces.

Used by tests/test_browser.py and tests/browser/bench_frames.py. The server always runs as a child
process group of ours and is always terminated (SIGTERM, then SIGKILL) by `TensorBoard.stop()`.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional

BROWSER_DIR = Path(__file__).resolve().parent
REPO = BROWSER_DIR.parents[1]
PORT_RE = re.compile(r"http://127\.0\.0\.1:(\d+)/")


def tensorboard_bin() -> Optional[Path]:
    """The project's tensorboard executable (the .venv one, else the one beside this Python)."""
    for candidate in (REPO / ".venv" / "bin" / "tensorboard", Path(sys.executable).parent / "tensorboard"):
        if candidate.exists():
            return candidate
    return None


class TensorBoard:
    """`tensorboard --logdir LOGDIR --host 127.0.0.1 --port 0 --load_fast false` as a child process."""

    def __init__(self, logdir: Path, timeout_s: float = 60.0, env: Optional[dict[str, str]] = None) -> None:
        exe = tensorboard_bin()
        if exe is None:
            raise RuntimeError("tensorboard is not installed (expected .venv/bin/tensorboard)")
        self.log = tempfile.NamedTemporaryFile(prefix="kinetoscope-tb-", suffix=".log", delete=False)
        env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        self.proc = subprocess.Popen(
            [str(exe), "--logdir", str(logdir), "--host", "127.0.0.1", "--port", "0", "--load_fast", "false"],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env, start_new_session=True)
        self.base = self._wait_port(timeout_s)

    def _wait_port(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tensorboard exited with {self.proc.returncode}:\n{self.stderr()}")
            match = PORT_RE.search(self.stderr())
            if match:
                return f"http://127.0.0.1:{match.group(1)}"
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"tensorboard did not print its URL within {timeout_s} s:\n{self.stderr()}")

    def stderr(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def get(self, route: str, timeout_s: float = 30.0) -> tuple[int, Any]:
        """GET a Kinetoscope route: (status, parsed JSON or None)."""
        url = f"{self.base}/data/plugin/kinetoscope/{route}"
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as err:
            body = err.read()
            try:
                return err.code, json.loads(body)
            except ValueError:
                return err.code, None

    def spans(self) -> list[dict[str, Any]]:
        """Every span of the `runs` answer, with its run and worker names."""
        _, body = self.get("runs")
        return [dict(span, run=run["name"], worker=worker["name"])
                for run in body["runs"] for worker in run["workers"] for span in worker["spans"]]

    def warm(self, span_ids: list[str], timeout_s: float = 120.0) -> dict[str, int]:
        """Requests each span's summary until it is no longer loading (so pages open on loaded traces).

        Returns the final HTTP status per span (200 ready, 422 failed to load, ...).
        """
        deadline = time.monotonic() + timeout_s
        final: dict[str, int] = {}
        pending = list(span_ids)
        while pending and time.monotonic() < deadline:
            for sid in list(pending):
                code, _ = self.get(f"summary?span={sid}")
                if code != 409:
                    final[sid] = code
                    pending.remove(sid)
            if pending:
                time.sleep(0.3)
        for sid in pending:
            final[sid] = 409
        return final

    def stop(self) -> None:
        """Terminates the server's process group; kills it if it has not exited after 10 s."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)

    def __enter__(self) -> TensorBoard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def ensure_node_modules(browser_dir: Path = BROWSER_DIR) -> None:
    """Installs playwright-core (package-lock.json) into tests/browser/node_modules when missing."""
    if (browser_dir / "node_modules" / "playwright-core").is_dir():
        return
    command = ["npm", "ci"] if (browser_dir / "package-lock.json").exists() else ["npm", "install"]
    subprocess.run(command + ["--no-audit", "--no-fund"], cwd=browser_dir, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)


def run_node(script: str, *args: str, timeout_s: float = 120.0) -> dict[str, Any]:
    """Runs `node tests/browser/<script> ARGS...` and parses the JSON it prints on its last line.

    node runs in its own process group, so a timeout also ends the Chromium it launched.
    """
    proc = subprocess.Popen(["node", str(BROWSER_DIR / script), *args], cwd=BROWSER_DIR, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise RuntimeError(f"node {script} timed out after {timeout_s} s:\n{stdout}\n{stderr}") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    lines = [line for line in stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"node {script} {' '.join(args)} failed ({proc.returncode}):\n{stdout}\n{stderr}")
    return json.loads(lines[-1])
