"""A scan of the loading service's logdir: the trace files it lists, and what identifies each one's index sidecar
(a new or changed sidecar reloads the span).
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from ..trace.discovery import SkippedLink, TraceFile, noting_skipped_links, scan_logdir_checked
from ..trace.remote import credentials_in_url, redact
from ..trace.storage import StorageError, confined, is_remote
from .errors import log_once

log = logging.getLogger(__name__)


def list_traces(logdir: str, roots: tuple[str, ...],
                sniff_cache: dict) -> tuple[Optional[list[TraceFile]], Optional[str], list[SkippedLink]]:
    """(the trace files, why the logdir could not be listed, the links out of it not followed), read inside `roots`.
    The files are None when a remote listing failed (it says nothing about which traces exist: keep those found
    before), [] when a local one did; the error is None when the listing worked, and logged once when not."""
    skipped: list[SkippedLink] = []
    try:
        with confined(roots), noting_skipped_links(skipped.append):
            return scan_logdir_checked(logdir, sniff_cache), None, skipped
    except StorageError as exc:  # unreachable, denied, missing: say why
        error = redact(f"{logdir}: {exc}")
        log_once(("scan-error", logdir, str(exc)), "kinetoscope: %s", error)
        return (None if is_remote(logdir) else []), error, skipped


def scan_listing(logdir: str, roots: tuple[str, ...], sniff_cache: dict, known: list[SkippedLink]
                 ) -> tuple[Optional[list[TraceFile]], Optional[str], list[SkippedLink]]:
    """`list_traces`, but a logdir URL with credentials is refused unlisted (and never logged as given), the links
    skipped are those `known` unless the listing worked, and each newly skipped one is logged once (in TensorBoard's
    log; the tab says how many, not where to)."""
    refused = credentials_in_url(logdir)
    if refused is not None:
        log_once(("scan-error", refused), "kinetoscope: %s", refused)
        return None, refused, known
    files, error, skipped = list_traces(logdir, roots, sniff_cache)
    if error is not None:
        return files, error, known
    for link in skipped:
        if link not in known:
            log.warning("kinetoscope: %s", link.remedy("start TensorBoard with --kinetoscope_allow_links_to"))
    return files, None, skipped


def index_versions(index: Any, roots: tuple[str, ...], files: dict[str, TraceFile]) -> dict[str, Any]:
    """{span id: what identifies the trace's sidecar now} (None: no index reader, or no sidecar): when `index`
    writes, rewrites or removes it, locally or on an object store, the span reloads, so a running
    TensorBoard never keeps a model the sidecar no longer describes."""
    if index is None:
        return {sid: None for sid in files}
    try:
        with confined(roots):
            found = index.versions([f.path for f in files.values()])
        return {sid: found.get(f.path, "unreadable") for sid, f in files.items()}
    except Exception:  # noqa: BLE001 - a sidecar that cannot be stat'ed is one the load will refuse
        return {sid: "unreadable" for sid in files}
