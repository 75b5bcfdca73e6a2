"""What the readers of a logdir take from its sidecars: TraceService (the plugin) the model and its prepared
analyses, `kinetoscope report` the report entry and the rank digest. Reading only: the plugin never needs
write access to the logdir. A sidecar that does not match gives its reason instead, and the reader decodes.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Optional

from ..pipeline import LanesStage, Prepared, prepare
from ..trace.loader import resource_message
from ..trace.model import TraceModel
from ..trace.storage import StorageError, identity
from . import local_cache, sidecar, signing

log = logging.getLogger(__name__)


class SidecarIndex:
    """The sidecar reader TraceService is given (`TraceService(..., index=SidecarIndex())`)."""

    MAX_MISSES = 4096  # refused summaries remembered (`digest`)

    def __init__(self) -> None:
        # summaries whose digest was refused, by trace: (the sidecar's version then, why), so a ranks request never
        # reads a refused section again until the sidecar changes (issue 54 N6: every request re-read one of up
        # to its cap, 445 MB, in TensorBoard's process: 8 requests held 6.75 GB); one such read at a time
        self._misses: dict[str, tuple[Any, Optional[str]]] = {}
        self._reading = threading.Lock()

    def open(self, path: str) -> tuple[Optional[TraceModel], Any, Optional[str]]:
        """(model, prepared, None) from the trace's sidecar (the analyses computed from its checked model), or
        (None, None, why not)."""
        model, reason = self.open_model(path)
        return (None, None, reason) if model is None else (model, prepare(model), None)

    def open_model(self, path: str) -> tuple[Optional[TraceModel], Optional[str]]:
        """(model, None) from the trace's sidecar once every check holds (`sidecar.open_model`), or (None, why not)."""
        try:
            return sidecar.open_model(path), None
        except sidecar.SidecarMiss as miss:
            return None, miss.reason
        except (MemoryError, RecursionError) as exc:
            return None, f"sidecar refused: {resource_message(exc)}"
        except Exception as exc:  # noqa: BLE001 - a sidecar never takes a load down: decode instead
            log.warning("kinetoscope: reading the sidecar of %s failed: %s: %s", path, type(exc).__name__, exc)
            return None, f"sidecar unreadable ({type(exc).__name__}: {str(exc)[:200]})"

    @staticmethod
    def hash_trace(path: str) -> Any:
        """The trace's sha256, started now in a thread of its own (`reader.TraceHash`: `check(bound)` says whether
        a sidecar bound to `bound` holds for the trace's bytes, `cancel()` stops it)."""
        return sidecar.TraceHash(path)

    @staticmethod
    def refuse_keys_inside(roots: tuple[str, ...]) -> None:
        """Trust no key file inside these folders (a served logdir: `signing.refuse_inside`)."""
        signing.refuse_inside(roots)

    @staticmethod
    def present(path: str) -> bool:
        """Whether the trace has something at its sidecar's path (worth a child to read it)."""
        return sidecar.present(path)

    @staticmethod
    def version(path: str) -> Any:
        """What identifies the trace's sidecar now (None when it has none): a change means reload."""
        return sidecar.version(path)

    @staticmethod
    def versions(paths: list[str]) -> dict[str, Any]:
        """`version` of many traces' sidecars: one listing per remote sidecar folder, not one request each."""
        return sidecar.versions(paths)

    def digest(self, path: str) -> tuple[Any, Optional[str]]:
        """(rank digest, None) from the sidecar's summary section alone, or (None, why not): a sidecar refused once
        is not read again while it stays the same."""
        with self._reading:
            version = sidecar.version(path)
            held = self._misses.get(path)
            if version is None or (held is not None and held[0] == version):
                return None, held[1] if held is not None else "not indexed (no sidecar)"
            digest, reason = self._read_digest(path)
            if digest is None:
                self._misses[path] = (version, reason)
                while len(self._misses) > self.MAX_MISSES:
                    self._misses.pop(next(iter(self._misses)))
            return digest, reason

    @staticmethod
    def _read_digest(path: str) -> tuple[Any, Optional[str]]:
        try:
            return sidecar.open_summary(path)[1], None
        except sidecar.SidecarMiss as miss:
            return None, miss.reason
        except Exception as exc:  # noqa: BLE001
            log.warning("kinetoscope: reading the sidecar of %s failed: %s: %s", path, type(exc).__name__, exc)
            return None, f"sidecar unreadable ({type(exc).__name__}: {str(exc)[:200]})"


def report_from_index(path: str, worker: str) -> tuple[Optional[dict], Optional[str]]:
    """A `kinetoscope report` entry's figures (with `_digest`) from the trace's sidecar, or (None, why not);
    reads only the sidecar's header and summary section."""
    try:
        report, digest = sidecar.open_summary(path)
    except sidecar.SidecarMiss as miss:
        return None, miss.reason
    except Exception as exc:  # noqa: BLE001 - the report then decodes the trace
        return None, f"sidecar unreadable ({type(exc).__name__}: {str(exc)[:200]})"
    return {**report, "_digest": sidecar.with_worker(digest, worker)}, None


def report_from_cache(path: str, worker: str, cache_dir: Path) -> tuple[Optional[dict], Optional[str]]:
    """A `kinetoscope report` entry's figures (with `_digest`) from the local cache (`local_cache`), or (None, why
    not, only where the entry is damaged: a missing or outdated one is no news): the trace is only stat'ed, its
    summary read and checked."""
    try:
        report, digest = local_cache.load_summary(cache_dir, identity(path), sidecar.reference_identity(path))
    except local_cache.CacheMiss as miss:
        return None, miss.reason if miss.damaged else None
    except StorageError:
        return None, None  # the decode that follows names the problem
    return {**report, "_digest": sidecar.with_worker(digest, worker)}, None


def cache_report(path: str, cache_dir: Path, report: dict, digest: Any) -> None:
    """Keep a trace's report entry and digest in the local cache beside its model; a failure is logged, never
    raised (the report goes on)."""
    try:
        local_cache.store_summary(cache_dir, identity(path), sidecar.reference_identity(path), report, digest)
    except (OSError, TypeError, ValueError, StorageError) as exc:
        log.warning("kinetoscope: could not cache the analyses of %s in %s: %s", path, cache_dir, exc)


class AnalysesCache:
    """The analyses TraceService keeps in its local cache (`TraceService(..., analyses=AnalysesCache())`): a load
    whose trace version has them (`local_cache.load_prepared`) serves its span without analysing; one that
    computes them writes them there, in the background."""

    def load(self, cache_dir: Path, path: str) -> tuple[Any, Optional[tuple[Any, Prepared]]]:
        """(what `store` needs, (the lanes' stage, the prepared analyses) or None)."""
        try:
            token = (identity(path), sidecar.reference_identity(path))
            found = local_cache.load_prepared(cache_dir, *token)
        except local_cache.CacheMiss as miss:
            if miss.damaged:
                log.warning("kinetoscope: %s: cached analyses not used (%s)", path, miss.reason)
            return token, None
        except (StorageError, OSError):
            return None, None
        return token, (LanesStage(found.index), found)

    @staticmethod
    def store(cache_dir: Path, token: Any, prepared: Prepared) -> None:
        if token is None or not isinstance(prepared, Prepared):
            return

        def write() -> None:
            try:
                local_cache.store_prepared(cache_dir, *token, prepared)
            except (OSError, TypeError, ValueError) as exc:
                log.warning("kinetoscope: could not cache the analyses of %s in %s: %s", token[0].path, cache_dir, exc)
        threading.Thread(target=write, name="kinetoscope-cache-analyses", daemon=True).start()


def missing(reason: Optional[str]) -> bool:
    """Whether a reason only says the trace has no sidecar (not worth a warning)."""
    return bool(reason) and reason.startswith("not indexed")
