"""How a decoder child hands its outcome (a model: tens to hundreds of MB of numpy columns) to TensorBoard: the
columns through a shared-memory file, the rest as a small pickle on the pipe.

Pickled in-band, every byte of every column crosses the pipe in 64 KiB writes and is copied again into a new
array in the parent (about 0.1 s per 50 MB here, most of it while TensorBoard holds the GIL). Instead the
child pickles the outcome with protocol 5, whose out-of-band buffers are the columns' own memory, writes those
buffers back to back (64-byte aligned) into a file of its own under a tmpfs folder (`/dev/shm`, or
KINETOSCOPE_SHM_DIR), and sends the pickle's small head, the file's name and the buffers' offsets. The parent
opens the file (no link followed; owned by this user, mode 0600, the size it was told), maps it read-only,
removes its name at once, and unpickles the head over views of the mapping: no copy, read-only columns. The
pages are freed when the model is.

The files live in a folder of this user's own inside that one (`kinetoscope-<uid>`, mode 0700, checked on every
use: a link, another owner or a mode others may enter makes the handover go in-band), so no other user can swap
one while a child writes it or the parent opens it, in whatever folder KINETOSCOPE_SHM_DIR names (issue 54 N7: a
shared folder without the sticky bit let another user substitute a file of the same owner). Each file's name
carries its child's pid: `sweep` removes the files of children that are no longer running, at every spawn and when
a server starts, and any left over STALE_S (issue 54 N9).

Outcomes under SHM_MIN_BYTES (KINETOSCOPE_SHM_MIN_BYTES), or when the folder is missing, full (tmpfs is often small in containers) or not
writable, go in-band through the pipe as before. A file a child made and never handed over (it was killed
between writing and sending) is removed by the child itself on any error; a killed child's file is left in
tmpfs under its `kinetoscope-handover-` prefix until reboot or the next sweep (`sweep`, at spawn: files older
than STALE_S).
"""
from __future__ import annotations

import mmap
import os
import pickle
import secrets
import stat
import time
from typing import Any, BinaryIO, Optional

SHM_DIR_ENV = "KINETOSCOPE_SHM_DIR"
DEFAULT_SHM_DIR = "/dev/shm"
PREFIX = "kinetoscope-handover-"
SHM_MIN_ENV = "KINETOSCOPE_SHM_MIN_BYTES"
SHM_MIN_BYTES = 4 << 20  # smaller outcomes go in-band: a file and a mapping cost more than the copy
ALIGN = 64
STALE_S = 3600.0
TAG = "shm"


def shm_dir() -> str:
    return os.environ.get(SHM_DIR_ENV) or DEFAULT_SHM_DIR


def private_dir(create: bool = True) -> Optional[str]:
    """This user's handover folder inside `shm_dir()` (made mode 0700 when missing and `create`), or None when it
    cannot be made or is not safe: a link, not a folder, another owner, or open to others."""
    folder = os.path.join(shm_dir(), f"kinetoscope-{os.getuid()}")
    if create:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return folder


def send(outcome: tuple, stream: BinaryIO) -> None:
    """Writes one outcome tuple to `stream`: its columns through shared memory when large enough, else in-band."""
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(outcome, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    total = sum(v.nbytes for v in views)
    frame = None
    try:
        least = int(os.environ.get(SHM_MIN_ENV, SHM_MIN_BYTES))
    except ValueError:
        least = SHM_MIN_BYTES
    if views and total >= least:
        frame = _write_shm(views, head)
    if frame is None:
        pickle.dump(outcome, stream, protocol=pickle.HIGHEST_PROTOCOL)
    else:
        pickle.dump(frame, stream, protocol=pickle.HIGHEST_PROTOCOL)
    stream.flush()


def _write_shm(views: list[memoryview], head: bytes) -> Any:
    """(TAG, name, [(offset, length)], head), or None when the shared-memory folder cannot take it."""
    folder = private_dir()
    if folder is None:
        return None
    name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(12)}"
    path = os.path.join(folder, name)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                     0o600)
    except OSError:
        return None
    spans, offset = [], 0
    try:
        with os.fdopen(fd, "wb", buffering=0) as handle:
            for view in views:
                pad = (-offset) % ALIGN
                if pad:
                    handle.write(b"\0" * pad)
                    offset += pad
                written = 0
                while written < view.nbytes:
                    written += handle.write(view[written:])
                spans.append((offset, view.nbytes))
                offset += view.nbytes
    except OSError:  # ENOSPC: a small tmpfs
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    return (TAG, name, spans, head)


def receive(stream: BinaryIO) -> Any:
    """The next outcome a child sent (`send`), its columns mapped from shared memory when they came that way.

    Raises:
        ValueError: a frame that does not hold together (a file missing, of another size or owner).
        Whatever pickle.load raises on a closed or broken pipe.
    """
    outcome = pickle.load(stream)
    if not (isinstance(outcome, tuple) and len(outcome) == 4 and outcome[0] == TAG):
        return outcome
    _, name, spans, head = outcome
    if not isinstance(name, str) or not name.startswith(PREFIX) or "/" in name:
        raise ValueError("a handover frame names no handover file")
    folder = private_dir(create=False)
    if folder is None:
        raise ValueError("the handover folder is missing or open to others")
    path = os.path.join(folder, name)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.unlink(path)  # the mapping keeps the pages; nothing is left behind
        st = os.fstat(fd)
        end = max((o + n for o, n in spans), default=0)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size < end:
            raise ValueError("the handover file is not the one the child wrote")
        mapped = mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ) if st.st_size else None
    finally:
        os.close(fd)
    view = memoryview(mapped) if mapped is not None else memoryview(b"")
    return pickle.loads(head, buffers=[view[o:o + n] for o, n in spans])


def sweep() -> None:
    """Removes this user's handover files that no child will hand over: those of children no longer running (the
    pid in the name) and any older than STALE_S; and the files an older version left in the shared folder itself."""
    now = time.time()
    for folder in (private_dir(create=False), shm_dir()):
        if folder is None:
            continue
        try:
            names = [n for n in os.listdir(folder) if n.startswith(PREFIX)]
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            try:
                st = os.stat(path, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and (
                        now - st.st_mtime > STALE_S or not _running(name)):
                    os.unlink(path)
            except OSError:
                continue


def _running(name: str) -> bool:
    """Whether the child a handover file's name carries is still running (names without one: assumed so)."""
    pid = name[len(PREFIX):].split("-", 1)[0]
    if not pid.isdigit() or not name[len(PREFIX):].count("-"):
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True
