"""On-disk cache of decoded models, keyed by file identity and the model's format version.

A cached model is one uncompressed `.npz` (each column stored raw, so loading is a read, not a
parse) plus a small JSON blob for the string tables and metadata.
"""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Optional

import msgspec
import numpy as np

from .budgets import setting
from .model import FORMAT_VERSION, TraceModel, array_fields
from .storage import FileIdentity

log = logging.getLogger(__name__)
_STRINGS = "__strings__"
DEFAULT_MAX_BYTES = 20 << 30
MAX_BYTES_ENV = "KINETOSCOPE_CACHE_MAX_BYTES"
STALE_TMP_S = 3600.0  # a temp file this old belongs to a writer that died: removed on the next prune


def cache_max_bytes() -> int:
    """The cache's size cap: `$KINETOSCOPE_CACHE_MAX_BYTES`, else 20 GiB."""
    return int(setting(MAX_BYTES_ENV, DEFAULT_MAX_BYTES))


def default_cache_dir() -> Path:
    """`$KINETOSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/kinetoscope`, else `~/.cache/kinetoscope`."""
    explicit = os.environ.get("KINETOSCOPE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kinetoscope"


def cache_key(ident: FileIdentity) -> str:
    """Stable name of the cache entry for one version of one file.

    Local files are keyed by their real path, so the symlinks and copies of a path that point at one file
    share one entry; inode and ctime make a replaced file with the same size and mtime another entry.
    """
    path = ident.path if "://" in ident.path or "::" in ident.path else os.path.realpath(os.path.expanduser(ident.path))
    text = f"v{FORMAT_VERSION}|{path}|{ident.size}|{ident.mtime!r}|{ident.inode}|{ident.ctime!r}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def load_cached(cache_dir: Path, ident: FileIdentity) -> Optional[TraceModel]:
    """The cached model for this file version, or None (missing or unreadable entries are misses)."""
    entry = Path(cache_dir) / f"{cache_key(ident)}.npz"
    try:
        return read_model(entry)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, msgspec.DecodeError) as exc:
        log.warning("ignoring unreadable cache entry %s: %s", entry, exc)
        return None


def read_model(source) -> TraceModel:
    """The model `write_model` stored in `source` (a path or a binary file object).

    Raises:
        OSError, ValueError, KeyError, TypeError, msgspec.DecodeError: not a stored model of this layout.
    """
    with np.load(source, allow_pickle=False) as npz:
        return model_from_arrays({name: npz[name] for name in [*array_fields(), _STRINGS]})


def model_from_arrays(arrays: dict[str, np.ndarray]) -> TraceModel:
    """The model from the arrays `model_arrays` made (raises KeyError, TypeError, ValueError or
    msgspec.DecodeError when they are not of this layout)."""
    strings = msgspec.json.decode(arrays[_STRINGS].tobytes())
    if not isinstance(strings, dict):
        raise TypeError("stored strings are not an object")
    return TraceModel(**{name: arrays[name] for name in array_fields()}, names=tuple(strings["names"]),
                      cats=tuple(strings["cats"]), lane_label=tuple(strings["lane_label"]), meta=strings["meta"],
                      skipped=strings["skipped"], warnings=tuple(strings["warnings"]),
                      source_bytes=strings["source_bytes"], coll_strings=tuple(strings.get("coll_strings", ())),
                      shape_strings=tuple(strings.get("shape_strings", ())),
                      inputs_strings=tuple(strings.get("inputs_strings", ())),
                      hwc_names=tuple(strings.get("hwc_names", ())))


def model_arrays(model: TraceModel) -> dict[str, np.ndarray]:
    """The model as named arrays: each column, plus one JSON blob for the string tables and metadata."""
    strings = {"names": model.names, "cats": model.cats, "lane_label": model.lane_label, "meta": model.meta,
               "skipped": model.skipped, "warnings": model.warnings, "source_bytes": model.source_bytes,
               "coll_strings": model.coll_strings, "shape_strings": model.shape_strings,
               "inputs_strings": model.inputs_strings, "hwc_names": model.hwc_names}
    blob = np.frombuffer(msgspec.json.encode(strings), dtype=np.uint8)
    return {**{name: getattr(model, name) for name in array_fields()}, _STRINGS: blob}


def write_model(handle, model: TraceModel) -> None:
    """Store the model in a binary file object as one uncompressed `.npz` (`model_arrays`; raises OSError,
    TypeError or msgspec.EncodeError)."""
    np.savez(handle, **model_arrays(model))


def store(cache_dir: Path, ident: FileIdentity, model: TraceModel, max_bytes: Optional[int] = None) -> None:
    """Write the model atomically (temp file + rename); failures are logged, never raised."""
    cache_dir = Path(cache_dir)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            write_model(handle, model)
        os.replace(tmp, cache_dir / f"{cache_key(ident)}.npz")
        _prune(cache_dir, cache_max_bytes() if max_bytes is None else max_bytes)
    except (OSError, TypeError, msgspec.EncodeError) as exc:
        log.warning("could not cache %s in %s: %s", ident.path, cache_dir, exc)


def _prune(cache_dir: Path, max_bytes: int) -> None:
    """Drop the least recently written entries (models, and the analyses `index.local_cache` keeps beside them)
    while the cache is larger than `max_bytes`, and temp files left by writers that died (older than STALE_TMP_S)."""
    now = time.time()
    for tmp in cache_dir.glob("*.tmp"):
        try:
            if now - tmp.stat().st_mtime > STALE_TMP_S:
                tmp.unlink()
        except OSError:
            continue
    entries = sorted([p for pattern in ("*.npz", "*.summary", "*.prepared") for p in cache_dir.glob(pattern)],
                     key=lambda p: p.stat().st_mtime)
    total = sum(p.stat().st_size for p in entries)
    for entry in entries[:-1]:
        if total <= max_bytes:
            break
        total -= entry.stat().st_size
        entry.unlink(missing_ok=True)
