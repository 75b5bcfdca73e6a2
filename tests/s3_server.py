"""A real S3-compatible HTTP server for the tests: moto's server mode as a child process on 127.0.0.1.

Nothing is mocked inside the process under test: s3fs, botocore and TensorBoard speak HTTP to the server,
and the server's request recorder (moto's own) tells which byte ranges were requested. Every server
started here is stopped here; it listens on 127.0.0.1 only.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

from conftest import stop_process

ACCESS_KEY = "kinetoscope-test-access-key"
SECRET_KEY = "kinetoscope-test-secret-Zq8wX3"  # asserted never to appear in an error, a log or an answer


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def s3_env(endpoint: str, home: Path) -> dict[str, str]:
    """The environment a client of the test server needs: its endpoint (botocore's AWS_ENDPOINT_URL,
    TensorBoard's S3_ENDPOINT), credentials, a region, and no look-up of the user's or the cloud's
    configuration (no ~/.aws, no instance metadata: nothing beyond 127.0.0.1 is asked)."""
    home.mkdir(parents=True, exist_ok=True)
    empty = home / "aws-empty"
    empty.write_text("")
    return {"AWS_ENDPOINT_URL": endpoint, "S3_ENDPOINT": endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": str(empty),
            "AWS_SHARED_CREDENTIALS_FILE": str(empty)}


class MotoServer:
    """A running moto server: its endpoint, and its record of the requests since `record()`."""

    def __init__(self, proc: subprocess.Popen, port: int, recording: Path) -> None:
        self.proc, self.port, self.recording = proc, port, recording
        self.endpoint = f"http://127.0.0.1:{port}"

    def _post(self, path: str) -> None:
        request = urllib.request.Request(f"{self.endpoint}{path}", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def record(self) -> None:
        """Forget the requests so far and record from now on."""
        self._post("/moto-api/recorder/reset-recording")
        self._post("/moto-api/recorder/start-recording")

    def stop_recording(self) -> None:
        self._post("/moto-api/recorder/stop-recording")

    def requests(self) -> list[dict]:
        """The recorded requests (method, url, headers)."""
        if not self.recording.exists():
            return []
        return [json.loads(line) for line in self.recording.read_text().splitlines() if line.strip()]

    def gets(self, key: str) -> list[tuple[int, Optional[int]]]:
        """The (first byte, last byte or None for 'to the end') of every GET of object `key` recorded."""
        out = []
        for entry in self.requests():
            if entry["method"] != "GET" or not entry["url"].split("?", 1)[0].endswith("/" + key.lstrip("/")):
                continue
            rng = entry["headers"].get("Range") or entry["headers"].get("range")
            if not rng:
                out.append((0, None))
                continue
            first, _, last = rng.split("=", 1)[1].partition("-")
            out.append((int(first), int(last) if last else None))
        return out


def bytes_requested(ranges: list[tuple[int, Optional[int]]], size: int) -> int:
    """How many bytes of an object of `size` the GETs asked for (a range past the end counts to the end)."""
    return sum(min(size - 1, size - 1 if last is None else last) - first + 1 for first, last in ranges if first < size)


@contextmanager
def moto_server(tmp: Path, auth: bool = False, port: Optional[int] = None, free_actions: int = 0) -> Iterator[MotoServer]:
    """Start `python -m moto.server` on a free 127.0.0.1 port (or `port`); with `auth`, it checks credentials
    and IAM policies (unknown keys are denied, as on AWS) after the first `free_actions` requests (time to
    create a user and its keys). Always stopped on exit."""
    tmp.mkdir(parents=True, exist_ok=True)
    recording = tmp / "moto-recording.jsonl"
    env = {**os.environ, "MOTO_RECORDER_FILEPATH": str(recording)}
    env.pop("MOTO_ENABLE_RECORDING", None)
    if auth:
        env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(free_actions)
    port = port or free_port()
    log = open(tmp / "moto.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    server = MotoServer(proc, port, recording)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{server.endpoint}/moto-api/data.json", timeout=2) as response:
                    response.read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError(f"moto server did not start:\n{(tmp / 'moto.log').read_text()[-2000:]}") from None
                time.sleep(0.1)
        yield server
    finally:
        stop_process(proc, 10)
        log.close()


def upload(endpoint: str, bucket: str, files: dict[str, Path]) -> None:
    """Create `bucket` (if needed) and put each local file at its key, with boto3 (not the code under test)."""
    import boto3
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                          region_name="us-east-1")
    try:
        client.create_bucket(Bucket=bucket)
    except client.exceptions.BucketAlreadyOwnedByYou:
        pass
    for key, path in files.items():
        client.upload_file(str(path), bucket, key)


def tree(root: Path, prefix: str) -> dict[str, Path]:
    """Every file under `root`, keyed `prefix/relative/path`."""
    return {f"{prefix}/{p.relative_to(root).as_posix()}": p for p in sorted(root.rglob("*")) if p.is_file()}
