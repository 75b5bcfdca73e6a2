"""Shared test helpers: where the real traces are, and builders for tiny hand-made Kineto traces."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Optional

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_TRACES = SHARED / "traces"
ORACLE = SHARED / "oracle" / "reference.jsonl"
SAMPLES = REPO / "samples"

requires_shared = pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is not beside the repo")


def shared_trace_files() -> list[Path]:
    """Every real trace under ../shared/traces (empty when it is absent)."""
    if not SHARED_TRACES.is_dir():
        return []
    return sorted(p for p in SHARED_TRACES.rglob("*") if p.name.endswith((".json", ".json.gz")))


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


def trace_doc(events: list[dict], **top) -> dict:
    return {"schemaVersion": 1, "deviceProperties": [], "traceEvents": events, **top}


def write_trace(path: Path, doc: Any, gz: bool = False) -> Path:
    """Write a trace document (or raw bytes/str) to `path`, gzipped when asked."""
    data = doc if isinstance(doc, bytes) else (doc if isinstance(doc, str) else json.dumps(doc)).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.fixture
def no_cache(monkeypatch, tmp_path):
    """Point the default cache at a temp dir so tests never touch the user's cache."""
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"
