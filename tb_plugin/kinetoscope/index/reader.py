"""Reading a sidecar as untrusted input (the checks are listed in `sidecar.py`): the file through a confined
handle (`SidecarFile`), each section capped and checksummed (`section`), the trace's bytes checked against the
header, and the model section decoded and validated (`open_model`; the summary section is `summary.py`'s, so that the
decoder child, which reads only models, never imports the analyses).

The trace's sha256 is verified before anything read from the sidecar is returned, but no longer before the
sections are read: once the cheap checks hold (size, head and tail), the full hash runs in a thread of its own
while this one reads, checksums, decodes and validates the sections (hashlib and file reads release the GIL),
and the result is returned only once the hash matches. A trace that changed is refused with that reason, ahead
of whatever its sections would have been refused for. `open_model(path, early=...)` hands the checked model to
`early` while the hash still runs, for work that publishes nothing before `open_model` returns (the decoder
child sends it to TensorBoard, which builds the lane index meanwhile and serves it only once the child confirms
the hash).
"""
from __future__ import annotations

import contextvars
import hashlib
import os
import threading
from typing import Any, Callable, Optional

import numpy as np

from ..trace.cache import model_from_arrays
from ..trace.model import TraceModel
from ..trace.storage import StorageError, split_url
from . import npz, validate
from .header import MODEL, TRACE_MEMBER, SidecarMiss, check_header, is_local, parse_header, section_cap, sidecar_path
from .identity import check_reference, full_sha256, local_handle, read_exactly, trace_identity


class SidecarFile:
    """Ranges of one sidecar: one open handle locally (a rename by a writer meanwhile does not affect it; the
    storage layer's confined open: no link out, no FIFO, no device), range requests elsewhere (a replacement
    meanwhile fails a section's checksum)."""

    def __init__(self, path: str) -> None:
        self.path, self._handle, self._fs = path, None, None
        try:
            if is_local(path):
                if not os.path.lexists(path):
                    raise FileNotFoundError(path)
                self._handle = local_handle(path)
                self.size = os.fstat(self._handle.fileno()).st_size
            else:
                self._fs, self._inner = split_url(path)
                self.size = int(self._fs.info(self._inner).get("size") or 0)
        except FileNotFoundError:
            raise SidecarMiss("not indexed (no sidecar)") from None
        except StorageError as exc:
            raise SidecarMiss(f"sidecar refused: {exc}") from None
        except (OSError, ValueError) as exc:
            raise SidecarMiss(f"sidecar unreadable: {exc}") from None

    def read(self, start: int, length: int) -> bytes:
        if length <= 0 or start >= self.size:
            return b""
        try:
            if self._handle is not None:
                self._handle.seek(start)
                return read_exactly(self._handle, length)
            return self._fs.cat_file(self._inner, start=start, end=min(self.size, start + length))
        except (OSError, ValueError) as exc:
            raise SidecarMiss(f"sidecar unreadable: {exc}") from None

    def __enter__(self) -> SidecarFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._handle is not None:
            self._handle.close()


def section(reader: SidecarFile, header: dict, body: int, name: str) -> bytes:
    """One section's bytes: its size checked against the trace's before any is read, its sha256 before it is
    returned (raises SidecarMiss)."""
    entry = next(s for s in header["sections"] if s["name"] == name)
    offset, length = entry["offset"], entry["bytes"]
    cap = section_cap(name, header["trace"]["size"])
    if length > cap:
        raise SidecarMiss(f"sidecar refused: its {name} section claims {length:,} bytes, more than a sidecar of "
                          f"this {header['trace']['size']:,}-byte trace can hold ({cap:,})")
    blob = reader.read(body + offset, length)
    if len(blob) != length or hashlib.sha256(blob).hexdigest() != entry["sha256"]:
        raise SidecarMiss(f"corrupt sidecar ({name} section fails its checksum)")
    return blob


class TraceHash:
    """The sha256 of every stored byte of a trace, computed in a thread of its own (`result` waits for it), under
    the caller's confinement (`storage.confined` is a context variable, which a new thread does not inherit)."""

    def __init__(self, path: str) -> None:
        self._path, self._sha, self._error = path, None, None
        self._stop = threading.Event()
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._run,), name="kinetoscope-trace-hash",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._sha = full_sha256(self._path, self._stop)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by `result`
            self._error = exc

    def result(self) -> str:
        self._thread.join()
        if self._error is not None:
            if isinstance(self._error, StorageError):
                raise SidecarMiss(f"cannot read the trace to check its sidecar: {self._error}")
            raise self._error
        return self._sha

    def cancel(self) -> None:
        """Stop hashing (when the result is no longer wanted: the sidecar was refused anyway)."""
        self._stop.set()

    def check(self, bound: Optional[str]) -> Optional[str]:
        """None when the trace's bytes hash to `bound` (the sha256 a sidecar's header and sections are bound to),
        else why not (never raises)."""
        try:
            sha = self.result()
        except SidecarMiss as miss:
            return miss.reason
        except Exception as exc:  # noqa: BLE001 - a trace that cannot be hashed is one whose sidecar is not used
            return f"cannot read the trace to check its sidecar ({type(exc).__name__}: {str(exc)[:200]})"
        try:
            check_header_sha(bound, sha)
        except SidecarMiss as miss:
            return miss.reason
        return None


def check_header_sha(recorded: Optional[str], sha: str) -> None:
    """Raise SidecarMiss unless the trace's sha256 is the one recorded (the message `check_header` gives)."""
    if recorded != sha:
        raise SidecarMiss(f"trace changed since it was indexed: content (sha256) {_short(recorded)} -> {_short(sha)}")


def _short(value: Any) -> str:
    return repr(value[:16] + "...") if isinstance(value, str) and len(value) > 16 else repr(value)


def checked(trace_path: str, names: tuple[str, ...], use: Callable[[dict, dict[str, bytes]], Any],
             early: Optional[Callable[[Any], None]] = None, hashed: bool = True,
             then: Optional[Callable[[SidecarFile, dict, int], None]] = None) -> tuple[dict, Any]:
    """(header, use(header, {section name: bytes})) of the trace's sidecar once every check holds: the header's
    shape and versions, the trace's size and head-tail checksum, each section's cap and checksum, whatever `use`
    checks, and the sha256 of every stored byte of the trace, computed meanwhile (raises SidecarMiss). `early`
    gets use's result once it holds, before the hash is compared: nothing it makes may reach a user unless this
    returns. With `hashed` false the trace's full hash is left to the caller (`open_model_bound`). `then(reader,
    header, body offset)` runs once every check held, on the same open sidecar and the header checked (never a
    second open by path: `writer.restamp_checked`)."""
    with SidecarFile(sidecar_path(trace_path)) as reader:
        header, body = parse_header(reader.read, reader.size)
        try:
            trace = trace_identity(trace_path)
        except StorageError as exc:
            raise SidecarMiss(f"cannot read the trace to check its sidecar: {exc}") from None
        check_header(header, trace)
        check_reference(header, trace_path)
        hashing = TraceHash(trace_path) if hashed else None
        refused: Optional[SidecarMiss] = None
        try:
            out = use(header, {name: section(reader, header, body, name) for name in names})
            if early is not None:
                early(out)
        except SidecarMiss as miss:
            refused = miss
        finally:
            sha = hashing.result() if hashing is not None else None  # a changed trace is the reason, before any
        if sha is not None:
            check_header(header, {**trace, "sha256": sha})
        if refused is not None:
            raise refused
        if then is not None:
            then(reader, header, body)
    return header, out


def check_bound(value: Any, header: dict, name: str) -> None:
    """A section's copy of the trace's sha256 must be the header's (which the trace's bytes are checked against)."""
    if value != header["trace"]["sha256"]:
        raise SidecarMiss(f"sidecar refused: its {name} section was computed from other bytes than this trace's "
                          "(copied from another sidecar?)")


def read_model(header: dict, blob: bytes) -> TraceModel:
    """The model of a model section's bytes, checked column by column and bound to the header's trace (raises
    SidecarMiss)."""
    try:
        arrays = npz.read(blob)
        bound = arrays.pop(TRACE_MEMBER, np.zeros(0, np.uint8))
        check_bound(bound.tobytes().decode("ascii", "replace"), header, MODEL)
        model = model_from_arrays(arrays)
        validate.check_model(model)
    except (npz.NpzError, validate.ModelInvalid) as exc:
        raise SidecarMiss(f"corrupt sidecar (model section: {exc})") from None
    except SidecarMiss:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a damaged section raises, the reader decodes instead
        raise SidecarMiss(f"corrupt sidecar (model section: {type(exc).__name__}: {str(exc)[:200]})") from None
    return model


def open_model_bound(trace_path: str, early: Optional[Callable[[TraceModel], None]] = None) -> tuple[TraceModel, str]:
    """(model, the sha256 of the trace it is bound to) from the trace's sidecar, every check of `open_model` made
    but the trace's full hash (its size and head-tail checksum are checked): **the caller must compare the sha256
    with its own hash of the trace (`TraceHash.check`) before anything of the model is used.** TensorBoard hashes
    the trace itself from the start of a load while its decoder child starts and reads the sidecar this way.

    Raises:
        SidecarMiss: no usable sidecar for this version of the trace, as far as these checks tell.
    """
    header, model = checked(trace_path, (MODEL,), lambda header, blobs: read_model(header, blobs[MODEL]), early,
                            hashed=False)
    return model, header["trace"]["sha256"]


def open_model(trace_path: str, early: Optional[Callable[[TraceModel], None]] = None) -> TraceModel:
    """The decoded model from the trace's sidecar, checked column by column (`validate.check_model`). `early`, when
    given, gets the model once its own checks hold, while the trace's hash still runs: what it does with it must
    reach no user unless `open_model` then returns (it raises when the trace's bytes are not those of the sidecar).

    Raises:
        SidecarMiss: no usable sidecar for this version of the trace (the reason says why).
    """
    return checked(trace_path, (MODEL,), lambda header, blobs: read_model(header, blobs[MODEL]), early)[1]


def present(trace_path: str) -> bool:
    """Whether anything lies at the trace's sidecar path (a link, a FIFO: whatever it is, reading decides)."""
    path = sidecar_path(trace_path)
    if is_local(path):
        return os.path.lexists(path)
    try:
        fs, inner = split_url(path)
        return bool(fs.exists(inner))
    except Exception:  # noqa: BLE001 - unreachable: the read says why
        return True


def version(trace_path: str) -> Any:
    """What identifies the trace's sidecar now, without reading it (None when nothing lies at its path):
    locally (size, mtime, inode, ctime) of what lies there (never followed); on other filesystems what a listing
    of its folder says (`versions`)."""
    return versions([trace_path])[trace_path]


# What an object store's listing says of an object that changes with its content, in the order tried.
_STAMP_KEYS = ("ETag", "etag", "md5Hash", "content_md5", "generation", "version_id", "LastModified", "last_modified",
               "mtime", "updated", "modified", "created")


def versions(trace_paths: list[str]) -> dict[str, Any]:
    """`version` of each trace's sidecar: one `lstat` each locally; elsewhere one listing per sidecar folder
    (a run's `.kinetoscope/`), whatever the number of traces in it, giving (size, the entry's ETag or other
    content stamp). "unreadable" where the folder cannot be listed (the load then says why)."""
    out: dict[str, Any] = {}
    folders: dict[str, list[str]] = {}
    for path in trace_paths:
        target = sidecar_path(path)
        if is_local(target):
            try:
                stat = os.lstat(target)
                out[path] = (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)
            except OSError:
                out[path] = None
        else:
            folders.setdefault(target.rsplit("/", 1)[0], []).append(path)
    for folder, paths in folders.items():
        listing = _listing(folder)
        for path in paths:
            if listing is None:
                out[path] = "unreadable"
                continue
            entry = listing.get(sidecar_path(path).rsplit("/", 1)[1])
            out[path] = None if entry is None else (entry.get("size"), *(str(entry[k]) for k in _STAMP_KEYS if k in entry))
    return out


def _listing(folder: str) -> Optional[dict[str, dict]]:
    """{name: listing entry} of a remote sidecar folder ({} when it does not exist, None when it cannot be
    listed). Listings are not cached (`remote.storage_options`), so a changed sidecar shows at once."""
    try:
        fs, inner = split_url(folder)
        entries = fs.ls(inner, detail=True)
    except FileNotFoundError:
        return {}
    except Exception:  # noqa: BLE001 - every backend raises its own types; the load says why
        return None
    return {str(e.get("name", "")).rstrip("/").rsplit("/", 1)[-1]: e for e in entries if isinstance(e, dict)}


def read_header(trace_path: str) -> dict:
    """The header of the trace's sidecar as stored, once it has the expected shape and the file the size it
    implies (raises SidecarMiss when unreadable, malformed or truncated)."""
    with SidecarFile(sidecar_path(trace_path)) as reader:
        return parse_header(reader.read, reader.size)[0]
