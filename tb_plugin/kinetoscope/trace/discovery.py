"""Finding runs, workers and spans in a logdir (local path or fsspec URL).

- A run is every directory holding at least one trace, named by its path relative to the logdir
  (the logdir's own basename when the logdir itself holds traces).
- A worker is the file-name prefix, a span the numeric suffix: `worker0.1623143089861.pt.trace.json.gz`
  is worker `worker0`, span 1623143089861. Spans sort numerically (13-digit ms and 19-digit ns
  suffixes both occur; sorting them as strings, as torch-tb-profiler did, misorders them).
- Besides `*.pt.trace.json[.gz]`, any other `*.json[.gz]` whose head looks like a Chrome trace counts
  (users of `export_chrome_trace` and HTA name files freely). `*.tmp`, non-trace JSON and TensorFlow
  event files are ignored.
"""
from __future__ import annotations

import hashlib
import logging
import os
import posixpath
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from stat import S_ISREG
from typing import Callable, Optional

import msgspec

from .deps import INFLATE_ERRORS
from .storage import (
    LINKED_ROOTS_ENV,
    NOT_STORAGE_ERRORS,
    StorageError,
    confinement_roots,
    contained,
    identity,
    is_remote,
    modified_time,
    read_bytes,
    remote_error,
    roots_for,
    split_url,
)

log = logging.getLogger(__name__)

TRACE_RE = re.compile(r"^(?P<worker>.*?)(?:\.(?P<span>\d+))?\.pt\.trace\.json(?:\.gz)?$")
OTHER_JSON_RE = re.compile(r"^(?P<stem>.+?)\.json(?:\.gz)?$")
SNIFF_BYTES = 64 * 1024
INDEX_FOLDER = ".kinetoscope"  # `kinetoscope index` sidecars: never traces, never a run


class SkippedLink(msgspec.Struct, frozen=True):
    """A link in a local logdir that the scan did not follow: its real path lies outside the logdir (and outside
    the folders KINETOSCOPE_ALLOW_LINKS_TO or --allow-links-to name). A shared logdir must not be able to point
    the server at `/proc/self/environ` or a home folder, so such links are refused unless the user trusts them."""

    link: str  # the link's path
    target: str  # the real path it leads to
    in_logdir: str  # the link's path below the logdir (`runs/resnet`): what may be shown to whoever reads the logdir

    def remedy(self, how: str = "pass --allow-links-to") -> str:
        """One line for a person: what was skipped and how to read it (`how`: the option of the door in use)."""
        return (f"{self.link}: a link to {self.target}, outside the logdir, not followed; to read it, {how} "
                f"{self.target} (or set {LINKED_ROOTS_ENV})")


_LINK_SINK: ContextVar[Optional[Callable[[SkippedLink], None]]] = ContextVar("kinetoscope_link_sink", default=None)


@contextmanager
def noting_skipped_links(sink: Callable[[SkippedLink], None]) -> Iterator[None]:
    """Scans in this block (this thread) tell `sink` of each link they do not follow (`SkippedLink`)."""
    token = _LINK_SINK.set(sink)
    try:
        yield
    finally:
        _LINK_SINK.reset(token)


def _skipped(link: str, target: str, root: str) -> None:
    log.info("not following %s: it leads outside the logdir", link)
    sink = _LINK_SINK.get()
    if sink is not None:
        sink(SkippedLink(link, target, posixpath.relpath(link, root)))


class TraceFile(msgspec.Struct, frozen=True):
    """One trace file of a run: one span of one worker."""

    run: str
    worker: str
    span: Optional[int]  # None when the name carries no number
    path: str  # full path or URL, as the storage layer opens it
    size: int
    mtime: float
    inode: int = 0  # local files: a replaced file has another inode or ctime (storage.FileIdentity)
    ctime: float = 0.0

    @property
    def identity(self) -> tuple[str, int, float, int, float]:
        """What changes when the file's content changes (the fields of storage.FileIdentity)."""
        return (self.path, self.size, self.mtime, self.inode, self.ctime)

    @property
    def version(self) -> str:
        """A short token that changes whenever the file's identity does (size, mtime, inode, ctime)."""
        return hashlib.sha256(repr(self.identity[1:]).encode()).hexdigest()[:12]

    @property
    def span_text(self) -> Optional[str]:
        """The span number as the routes and reports give it ("3"), None when the name carries none."""
        return None if self.span is None else str(self.span)


def looks_like_trace(head: bytes) -> bool:
    """Cheap sniff of a file's first bytes: a JSON object with `traceEvents`, or Chrome-trace events."""
    text = head.lstrip()
    if not text.startswith(b"{"):
        return False
    return b'"traceEvents"' in text or (b'"ph"' in text and b'"ts"' in text and b'"pid"' in text)


def classify(name: str) -> Optional[tuple[str, Optional[int], bool]]:
    """(worker, span, needs_sniff) for a candidate file name, or None if it cannot be a trace."""
    if name.endswith(".tmp"):
        return None
    match = TRACE_RE.match(name)
    if match:
        span = match.group("span")
        return match.group("worker"), int(span) if span else None, False
    other = OTHER_JSON_RE.match(name)
    if other:
        return other.group("stem"), None, True
    return None


def scan_logdir(logdir: str, sniff_cache: Optional[dict] = None) -> list[TraceFile]:
    """Every trace under `logdir`, sorted by (run, worker, span).

    Args:
        logdir: local path or fsspec URL (`s3://bucket/logs`, `memory://logs`, ...).
        sniff_cache: optional dict reused across scans so unchanged non-standard JSON files are
            sniffed once, keyed by (path, size, mtime).

    Returns:
        The trace files; unreadable entries are logged and skipped, never raised; a logdir that cannot
        be listed is logged and gives none (`scan_logdir_checked` raises instead).
    """
    try:
        return scan_logdir_checked(logdir, sniff_cache)
    except StorageError as exc:
        log.warning("cannot list %s: %s", logdir, exc)
        return []


def scan_logdir_checked(logdir: str, sniff_cache: Optional[dict] = None) -> list[TraceFile]:
    """`scan_logdir`, raising StorageError (naming the problem, secrets redacted) when the logdir cannot be
    listed: a listing that failed says nothing about which traces exist."""
    try:
        fs, root = split_url(logdir)
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        root = root.rstrip("/") or "/"
        walk = _local_walk(root, confinement_roots() or roots_for([root])) if protocol in ("file", "local") else \
            list(fs.walk(root, detail=True, on_error="raise"))
        if not walk and is_remote(logdir) and not fs.exists(root):
            raise FileNotFoundError(f"{logdir} does not exist")
    except NOT_STORAGE_ERRORS:
        raise
    except (OSError, ValueError) as exc:
        if not is_remote(logdir):
            raise StorageError(f"cannot list: {exc}", transient=True) from None
        raise remote_error(exc, logdir, "list") from None
    except Exception as exc:  # noqa: BLE001 - every backend raises its own types (botocore, aiohttp, azure...)
        raise remote_error(exc, logdir, "list") from None
    prefix = logdir.rstrip("/") if is_remote(logdir) else None
    found = []
    for dirpath, _dirs, files in walk:
        if INDEX_FOLDER in posixpath.relpath(dirpath.rstrip("/") or "/", root).split("/"):
            continue
        run = _run_name(root, dirpath)
        for name, info in sorted(files.items()):
            info = _followed(fs, info)
            if info is None:
                continue
            traced = _trace_file(fs, protocol, run, dirpath, name, info, sniff_cache, _url(prefix, root, dirpath, name))
            if traced is not None:
                found.append(traced)
    return sorted(found, key=lambda f: (f.run, f.worker, -1 if f.span is None else f.span, f.path))


def resolve(path: str) -> list[TraceFile]:
    """The traces a path names: itself if it is a file, else every trace under it (the CLI's PATH arguments).

    Raises:
        FileNotFoundError: PATH does not exist. StorageError: a remote PATH cannot be reached or read.
    """
    try:
        if is_remote(path):
            fs, inner = split_url(path)
            exists = fs.exists(inner)
            folder = exists and fs.isdir(inner)
        else:  # as fsspec's local filesystem answers, without importing fsspec for one file
            inner = os.path.abspath(os.path.expanduser(path))
            exists, folder = os.path.exists(inner), os.path.isdir(inner)
    except (FileNotFoundError, MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - remote backends raise their own types: name the problem
        if not is_remote(path) and isinstance(exc, (ValueError, ImportError)):
            raise
        raise remote_error(exc, path, "read") from None
    if not exists:
        raise FileNotFoundError(path)
    if folder:
        return scan_logdir_checked(path)
    name = os.path.basename(inner.rstrip("/"))
    worker, span, _ = classify(name) or (name, None, False)
    try:
        ident = identity(path)
        size, mtime = ident.size, ident.mtime
    except StorageError:
        size, mtime = 0, 0.0
    return [TraceFile(run=os.path.basename(os.path.dirname(inner.rstrip("/"))), worker=worker, span=span,
                      path=path, size=size, mtime=mtime)]


def _local_walk(root: str, roots: tuple[str, ...]) -> list[tuple[str, list, dict]]:
    """A local logdir's folders as fs.walk gives them, following symlinked folders whose real path lies inside
    `roots` (the logdir, or folders KINETOSCOPE_ALLOW_LINKS_TO names), never into a folder twice (a link to a
    parent would loop forever) and never out of them: a link to the parent folder, to /proc or to a home
    folder lists nothing. Files likewise: a link is listed only when its target lies inside."""
    if not os.path.isdir(root):
        raise OSError(f"not a directory: {root}")
    seen: set[tuple[int, int]] = set()
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        stat = os.stat(dirpath)
        if (stat.st_dev, stat.st_ino) in seen:
            log.info("not following %s: seen already", dirpath)
            dirnames[:] = []
            continue
        real = os.path.realpath(dirpath)
        if not contained(real, roots):
            _skipped(dirpath, real, root)
            dirnames[:] = []
            continue
        seen.add((stat.st_dev, stat.st_ino))
        dirnames[:] = sorted(d for d in dirnames if d != INDEX_FOLDER)
        files = {}
        for name in filenames:
            info = _local_info(posixpath.join(dirpath, name), roots, root)
            if info is not None:
                files[name] = info
        out.append((dirpath, dirnames, files))
    return out


def _local_info(path: str, roots: tuple[str, ...], root: str) -> Optional[dict]:
    """fs.info's fields for a local file (its target when it is a link, if that lies inside `roots`); None for
    broken links, links out and non-files."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    if not S_ISREG(stat.st_mode):
        return None
    real = os.path.realpath(path)
    if not contained(real, roots):
        if classify(posixpath.basename(path)) is not None:  # a link out named like a trace: say so
            _skipped(path, real, root)
        return None
    return {"name": path, "size": stat.st_size, "type": "file", "mtime": stat.st_mtime, "ino": stat.st_ino,
            "created": stat.st_ctime}


def _followed(fs, info: dict) -> Optional[dict]:
    """A file entry as the trace's identity should see it: symlinks resolved to their target (size and
    mtime of the target, so a rewritten target reloads); None for directories, broken links and the like."""
    if info.get("islink") or info.get("type") == "other":
        try:
            target = fs.info(info.get("destination") or info["name"])
        except (OSError, ValueError, KeyError):
            return None
        return target if target.get("type") == "file" else None
    return info if info.get("type") in (None, "file") else None


def _run_name(root: str, dirpath: str) -> str:
    rel = posixpath.relpath(dirpath.rstrip("/") or "/", root)
    return posixpath.basename(root) or root if rel == "." else rel


def _url(prefix: Optional[str], root: str, dirpath: str, name: str) -> Optional[str]:
    """A remote file's URL: the logdir's URL as given (its protocol, host and port: `hdfs://nn:8020/logs`)
    and the file's path below the logdir; None for local files."""
    if prefix is None:
        return None
    rel = posixpath.relpath(posixpath.join(dirpath, name), root)
    return f"{prefix}/{rel}"


def _trace_file(fs, protocol, run, dirpath, name, info, sniff_cache, url: Optional[str] = None) -> Optional[TraceFile]:
    parsed = classify(name)
    if parsed is None:
        return None
    worker, span, needs_sniff = parsed
    inner = posixpath.join(dirpath, name)
    path = url or (inner if protocol in ("file", "local") else f"{protocol}://{inner.lstrip('/')}")
    size, mtime = int(info.get("size") or 0), modified_time(info)
    if needs_sniff and not _sniff(path, (path, size, mtime), sniff_cache):
        return None
    local = protocol in ("file", "local")
    return TraceFile(run=run, worker=worker, span=span, path=path, size=size, mtime=mtime,
                     inode=int(info.get("ino") or 0) if local else 0, ctime=float(info.get("created") or 0.0) if local else 0.0)


def _sniff(path: str, key: tuple, cache: Optional[dict]) -> bool:
    if cache is not None and key in cache:
        return cache[key]
    try:
        verdict = looks_like_trace(read_bytes(path, limit=SNIFF_BYTES))
    except (StorageError, *INFLATE_ERRORS, EOFError) as exc:
        log.info("not sniffing %s: %s", path, exc)
        verdict = False
    if cache is not None:
        cache[key] = verdict
    return verdict


class ScanDiff(msgspec.Struct, frozen=True):
    """What changed between two scans of one logdir."""

    added: tuple[TraceFile, ...]
    changed: tuple[TraceFile, ...]
    removed: tuple[TraceFile, ...]


def diff_scans(before: Iterable[TraceFile], after: Iterable[TraceFile]) -> ScanDiff:
    """Files added, changed (size or mtime) and removed between two scans."""
    old = {f.path: f for f in before}
    new = {f.path: f for f in after}
    return ScanDiff(
        added=tuple(f for p, f in new.items() if p not in old),
        changed=tuple(f for p, f in new.items() if p in old and old[p].identity != f.identity),
        removed=tuple(f for p, f in old.items() if p not in new),
    )
