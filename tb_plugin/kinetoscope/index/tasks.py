"""The per-trace work of `kinetoscope index`, run wherever the executor puts it (this process, a process of
the local pool, a Dask worker): check the trace's sidecar, and decode, analyse and write it when it is
missing or stale. Returns a small `Outcome` (the rank digest travels back; the model never does).
"""
from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any, Optional

from ..pipeline import prepare
from ..trace.loader import TraceError, load_trace, resource_message
from ..trace.storage import StorageError
from . import sidecar

FRESH, NEW, CHANGED, RESTAMPED, FAILED = "up to date", "indexed", "re-indexed", "re-stamped", "failed"


@dataclass(frozen=True)
class Outcome:
    """What indexing one trace did."""

    path: str
    status: str  # FRESH, NEW, CHANGED, RESTAMPED or FAILED
    reason: Optional[str]  # why it was (re-)indexed, or why it failed
    digest: Any  # the rank digest (worker ""), None when failed
    seconds: float
    trace_bytes: int = 0
    sidecar_bytes: int = 0
    host: str = ""  # where it ran: host:pid


def _where() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def index_trace(path: str, force: bool = False, verify: bool = False) -> Outcome:
    """Bring one trace's sidecar up to date. Never raises for a bad trace: the outcome says FAILED and why.

    Args:
        path: the trace (local path or fsspec URL, as discovery names it).
        force: decode even when the sidecar is up to date.
        verify: also compare the sha256 of every stored byte with the recorded one (a full read).
    """
    started = time.perf_counter()
    try:
        return _index(path, force, verify, started)
    except TraceError as exc:
        return Outcome(path, FAILED, exc.message, None, time.perf_counter() - started, host=_where())
    except StorageError as exc:
        return Outcome(path, FAILED, str(exc), None, time.perf_counter() - started, host=_where())
    except (RecursionError, MemoryError) as exc:
        return Outcome(path, FAILED, resource_message(exc), None, time.perf_counter() - started, host=_where())
    except Exception as exc:  # noqa: BLE001 - one bad trace never stops the others
        return Outcome(path, FAILED, f"internal error ({type(exc).__name__}: {str(exc)[:300]})", None,
                       time.perf_counter() - started, host=_where())


def _index(path: str, force: bool, verify: bool, started: float) -> Outcome:
    sidecar.remove_stale_temps(path)
    current = sidecar.trace_identity(path)
    status, reason = NEW, "not indexed"
    try:
        header = sidecar.read_header(path)
    except sidecar.SidecarMiss as miss:
        header, reason = None, miss.reason
        status = NEW if reason.startswith("not indexed") else CHANGED
    if header is not None:
        status = CHANGED
        try:
            sidecar.check_header(header, current)
            if force:
                raise sidecar.SidecarMiss("forced (--force)")
            if verify and (header.get("trace") or {}).get("sha256") != sidecar.full_sha256(path):
                raise sidecar.SidecarMiss("trace changed since it was indexed: content (full sha256)")
            if verify:  # every section against its checksum, and decodable
                sidecar.open_prepared(path)
            _report, digest = sidecar.open_summary(path)
            return Outcome(path, FRESH, None, digest, time.perf_counter() - started, current["size"], host=_where())
        except sidecar.SidecarMiss as miss:
            reason = miss.reason
        restamped = _restamp(path, header, current, reason)
        if restamped is not None:
            return Outcome(path, RESTAMPED, restamped, _summary_digest(path), time.perf_counter() - started,
                           current["size"], host=_where())
    model = load_trace(path, cache_dir=None)
    prepared = prepare(model)  # the analyses the tab shows, as the server computes them
    after = sidecar.trace_identity(path, full=True)
    if any(after[k] != current[k] for k in ("size", "mtime", "head_tail")):
        raise StorageError("the trace changed while it was being indexed (still being written?); run index again",
                           transient=True)
    data = sidecar.build(after, model, prepared)
    sidecar.write(path, data)
    return Outcome(path, status, reason, prepared.digest, time.perf_counter() - started, current["size"], len(data),
                   host=_where())


def _restamp(path: str, header: dict, current: dict, reason: str) -> Optional[str]:
    """When only the trace's mtime changed and its bytes are those indexed (full sha256), rewrite the
    sidecar's header instead of decoding again; returns the reason, or None when it does not apply."""
    recorded = header.get("trace") or {}
    if not reason.startswith("trace changed since it was indexed: mtime") or recorded.get("size") != current["size"]:
        return None
    if recorded.get("head_tail") != current["head_tail"] or not recorded.get("sha256"):
        return None
    full = sidecar.full_sha256(path)
    if full != recorded["sha256"]:
        return None
    sidecar.restamp(path, {**current, "sha256": full})
    return f"{reason}; same content (sha256), header re-stamped"


def _summary_digest(path: str) -> Any:
    try:
        return sidecar.open_summary(path)[1]
    except sidecar.SidecarMiss:
        return None
