"""The per-trace work of `kinetoscope index`, run wherever the executor puts it (this process, a process of
the local pool, a Dask worker): check the trace's sidecar, and decode, analyse and write it when it is
missing or stale. Returns a small `Outcome` (the rank digest travels back; the model never does).
"""
from __future__ import annotations

import os
import socket
import time
from typing import Any, Optional

import msgspec

from ..pipeline import prepare, with_graph_reference
from ..trace.loader import TraceError, load_trace, resource_message
from ..trace.storage import StorageError, confined
from . import sidecar, signing

FRESH, NEW, CHANGED, RESTAMPED, FAILED = "up to date", "indexed", "re-indexed", "re-stamped", "failed"


class Outcome(msgspec.Struct, frozen=True):
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


def index_trace(path: str, force: bool = False, verify: bool = False, roots: tuple[str, ...] = (),
                sign_key: Optional[bytes] = None, key_id: Optional[str] = None) -> Outcome:
    """Bring one trace's sidecar up to date. Never raises for a bad trace: the outcome says FAILED and why.

    Args:
        path: the trace (local path or fsspec URL, as discovery names it).
        force: decode even when the sidecar is up to date.
        verify: kept for compatibility: every check, the full sha256 included, runs anyway.
        roots: the folders it may read and write inside (`storage.confined`; the logdir): a link out of them is
            refused, not followed.
        sign_key: the key to sign the sidecar with (`signing`), given in the same process; None: this process's own.
        key_id: the id of the driver's key, for a task that runs in another process or machine: the key itself
            never travels in a task's arguments (issue 54); the worker signs with its own key file's key of that
            id, and fails by name when it holds none.
    """
    started = time.perf_counter()
    try:
        if key_id is not None and sign_key is None:
            sign_key = signing.trusted_keys().get(key_id)
            if sign_key is None:
                raise signing.SigningKeyError(
                    f"this worker ({_where()}) holds no sidecar key {key_id}, which the indexing run signs with: give "
                    f"it the driver's key file ({signing.KEY_ENV})")
        with confined(roots), signing.using(sign_key):
            return _index(path, force, verify, started)
    except signing.SigningKeyError as exc:
        return Outcome(path, FAILED, str(exc), None, time.perf_counter() - started, host=_where())
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
    """`verify` is kept for the command line's sake: every check a reader makes (the full sha256 included) runs
    on every `index`, so that `index` calls a sidecar up to date exactly when the readers would use it."""
    sidecar.remove_stale_temps(path)
    current = sidecar.trace_identity(path)
    if force:
        status, reason = (CHANGED if _exists(path) else NEW), "forced (--force)"
    else:
        status, reason, digest = _check(path)
        if status in (FRESH, RESTAMPED):
            return Outcome(path, status, reason, digest, time.perf_counter() - started, current["size"], host=_where())
    reference = sidecar.reference_identity(path)  # before the reference is read: a change meanwhile refuses it later
    plain = load_trace(path, cache_dir=None)  # what the sidecar keeps: a reader attaches the graph reference itself
    model = with_graph_reference(plain, path)
    prepared = prepare(model)  # the analyses the tab shows, as the server computes them
    after = sidecar.trace_identity(path, full=True)
    if any(after[k] != current[k] for k in ("size", "mtime", "head_tail")):
        raise StorageError("the trace changed while it was being indexed (still being written?); run index again",
                           transient=True)
    data = sidecar.build(after, plain, prepared, reference)
    sidecar.write(path, data)
    return Outcome(path, status, reason, prepared.digest, time.perf_counter() - started, current["size"], len(data),
                   host=_where())


def _exists(path: str) -> bool:
    try:
        sidecar.read_header(path)
    except sidecar.SidecarMiss as miss:
        return not miss.reason.startswith("not indexed")
    return True


def _check(path: str) -> tuple[str, Optional[str], Any]:
    """(FRESH, None, digest) when the readers would use the trace's sidecar as it is, (RESTAMPED, why, digest)
    when they would and only its recorded mtime was stale (its header is re-stamped), else (NEW or CHANGED,
    why not, None). The same checks as the readers, `open_summary` (report) and `open_model` (TensorBoard), in
    one pass that hashes the trace once (`open_all`)."""
    stamped: list[bool] = []

    def restamp_if_stale(reader: Any, header: dict, body: int) -> None:
        # on the sidecar open_all checked, while it is open (issue 54 N5: re-opening it by path let a sidecar
        # swapped in after the check be signed); its full sha256 was just compared: reused, not a second hash
        current = {**sidecar.trace_identity(path), "sha256": header["trace"]["sha256"]}
        if header["trace"].get("mtime") != current["mtime"]:
            sidecar.restamp_checked(path, reader, header, body, current)
            stamped.append(True)
    try:
        _header, _report, digest, _model = sidecar.open_all(path, then=restamp_if_stale)  # one hash for both sections
    except sidecar.SidecarMiss as miss:
        return (NEW if miss.reason.startswith("not indexed") else CHANGED), miss.reason, None
    if not stamped:
        return FRESH, None, digest
    return RESTAMPED, "trace's mtime changed, same content (sha256): header re-stamped", digest


def _summary_digest(path: str) -> Any:
    try:
        return sidecar.open_summary(path)[1]
    except sidecar.SidecarMiss:
        return None
