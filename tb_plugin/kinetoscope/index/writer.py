"""Writing sidecars and the other files of a `.kinetoscope` folder, whole: locally to a temp name in the same
folder then renamed over the old one; on object stores as one object (a PUT is atomic). A reader therefore sees
the old file or the new one. Locally the `.kinetoscope` folder must be a real folder inside the logdir (never a
link), and only temp files of Kinetoscope's own naming, in that folder, are ever removed.
"""
from __future__ import annotations

import hashlib
import io
import os
import posixpath
import re
import secrets
import time
from stat import S_ISDIR, S_ISREG
from typing import Any, Optional

import numpy as np

from .. import __version__
from ..trace.cache import model_arrays
from ..trace.model import FORMAT_VERSION, TraceModel
from ..trace.storage import StorageError, confined_real_path, split_url
from . import codec
from .header import (
    FOLDER,
    MODEL,
    SIDECAR_FORMAT,
    SUMMARY,
    TRACE_MEMBER,
    SidecarMiss,
    analysis_fingerprint,
    encode_header,
    is_local,
    sidecar_path,
)
from .reader import SidecarFile

STALE_TMP_S = 3600.0
TMP_SUFFIX = ".kinetoscope-tmp"
TMP_RE = re.compile(r"^\..+\.[0-9a-f]{16}" + re.escape(TMP_SUFFIX) + "$")  # what `write_file` names its temp files


def build(trace: dict[str, Any], model: TraceModel, prepared: Any, reference: Optional[dict[str, Any]] = None) -> bytes:
    """The bytes of a sidecar for `model` and the summary of `prepared` (a `pipeline.Prepared`), of the trace
    `trace_identity(path, full=True)` describes; `reference`: the graph reference its analyses were computed with
    (`identity.reference_identity`), recorded in the header."""
    bound = trace["sha256"]
    model_buf = io.BytesIO()
    np.savez(model_buf, **model_arrays(model), **{TRACE_MEMBER: np.frombuffer(bound.encode(), np.uint8)})
    summary = codec.encode({"trace_sha256": bound, "report": prepared.report, "digest": prepared.digest})
    sections = [(SUMMARY, summary), (MODEL, model_buf.getvalue())]
    table, offset = [], 0
    for name, blob in sections:
        table.append({"name": name, "offset": offset, "bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()})
        offset += len(blob)
    header = encode_header({"format": SIDECAR_FORMAT, "model_format": FORMAT_VERSION,
                            "analysis": analysis_fingerprint(), "kinetoscope": __version__,
                            "created_unix": round(time.time(), 3), "trace": trace, "graph_reference": reference,
                            "sections": table})
    return b"".join([header, *(blob for _, blob in sections)])


def write(trace_path: str, data: bytes) -> str:
    """Write a trace's sidecar whole (`write_file`); returns its path."""
    return write_file(sidecar_path(trace_path), data)


def write_file(target: str, data: bytes) -> str:
    """Write a file of the `.kinetoscope` folder whole: locally to a temp name in that folder, then renamed over
    the old one (`_write_local`); on other filesystems as one object (a PUT is atomic). A reader sees the old
    file or the new one, never half."""
    if is_local(target):
        _write_local(target, data)
        return target
    fs, inner = split_url(target)
    try:
        fs.makedirs(posixpath.dirname(inner), exist_ok=True)
    except (OSError, NotImplementedError):
        pass  # object stores have no folders
    fs.pipe_file(inner, data)
    return target


def _folder_fd(folder: str) -> int:
    """A descriptor on a local `.kinetoscope` folder, made if missing: its parent must lie inside the roots in
    force, and the folder itself must be a real folder (a link there is refused, never followed).

    Raises:
        StorageError: a link, not a folder, or outside the logdir.
    """
    parent = confined_real_path(os.path.dirname(folder))
    name = os.path.basename(folder)
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        parent_fd = os.open(parent, flags)
    except OSError as exc:
        raise StorageError(f"cannot open the folder of {folder}: {exc.strerror}") from None
    try:
        try:
            os.mkdir(name, 0o755, dir_fd=parent_fd)
        except FileExistsError:
            pass
        except OSError as exc:  # an unwritable logdir (a teammate's, read-only storage): named, not an internal error
            raise StorageError(f"cannot make {folder}: {exc.strerror} (the logdir is not writable here; `index` "
                               "writes its sidecars there)") from None
        try:
            fd = os.open(name, flags | getattr(os, "O_NOFOLLOW", 0), dir_fd=parent_fd)
        except OSError as exc:
            raise StorageError(f"{folder} is not a folder of its own ({exc.strerror}; a link there is not "
                               "followed)") from None
        if not S_ISDIR(os.fstat(fd).st_mode):
            os.close(fd)
            raise StorageError(f"{folder} is not a folder")
        return fd
    finally:
        os.close(parent_fd)


def _write_local(target: str, data: bytes) -> None:
    folder, base = os.path.split(target)
    folder_fd = _folder_fd(folder)
    tmp = f".{base}.{secrets.token_hex(8)}{TMP_SUFFIX}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                     0o644, dir_fd=folder_fd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                os.fchmod(handle.fileno(), 0o644)  # teammates read it, whatever the umask
            os.replace(tmp, base, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)  # replaces a link, never follows it
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder_fd)
            except OSError:
                pass
            raise
    except OSError as exc:  # a full disk, a folder this user may not write
        raise StorageError(f"cannot write {target}: {exc.strerror}") from None
    finally:
        os.close(folder_fd)


def restamp_checked(trace_path: str, reader: SidecarFile, header: dict, body: int, trace: dict[str, Any]) -> str:
    """Rewrite a sidecar that `reader.checked` has just checked with a new trace identity (same content, e.g. a copy
    with a new mtime), from what was checked: the header in memory, never parsed again, and the sections read from
    the same open file, each compared with the checked header's checksum again (a remote object replaced meanwhile
    is refused). A sidecar swapped in by path after the check is never the one signed."""
    raw = reader.read(body, reader.size - body)
    for entry in header["sections"]:
        blob = raw[entry["offset"]:entry["offset"] + entry["bytes"]]
        if len(blob) != entry["bytes"] or hashlib.sha256(blob).hexdigest() != entry["sha256"]:
            raise SidecarMiss("the sidecar changed while it was checked: not re-stamped")
    return write(trace_path, encode_header({**header, "trace": trace}) + raw)


def remove_stale_temps(trace_path: str) -> None:
    """Delete temp files of writers that died (older than STALE_TMP_S) beside a local sidecar: only regular
    files named as `write_file` names them, owned by this user, in a `.kinetoscope` folder that is no link."""
    if not is_local(trace_path):
        return
    folder = os.path.dirname(sidecar_path(trace_path))
    try:
        parent = confined_real_path(os.path.dirname(folder))
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        folder_fd = os.open(os.path.join(parent, FOLDER), flags)
    except (OSError, StorageError):
        return
    try:
        _remove_stale(folder_fd)
    finally:
        os.close(folder_fd)


def _remove_stale(folder_fd: int) -> None:
    now = time.time()
    for name in os.listdir(folder_fd):
        if not TMP_RE.match(name):
            continue
        try:
            stat = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
            if S_ISREG(stat.st_mode) and stat.st_uid == os.getuid() and now - stat.st_mtime > STALE_TMP_S:
                os.unlink(name, dir_fd=folder_fd)
        except OSError:
            continue
