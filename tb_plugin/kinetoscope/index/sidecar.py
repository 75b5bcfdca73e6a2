"""One trace's sidecar: its decoded model and its summary (report entry and rank digest), in one file that
`kinetoscope index` writes and every reader (TensorBoard's plugin, `kinetoscope report`) may use.

Where: `DIR/.kinetoscope/NAME.kidx` for the trace `DIR/NAME` (local path or any fsspec URL). Beside the
trace rather than at the logdir's root, so a logdir opened at a sub-folder, a single trace given to
`kinetoscope report`, or a run copied elsewhere with its `.kinetoscope/` folder all still find it.

Layout: `MAGIC`, the header's length (8 bytes, little-endian), the header (JSON), then the sections:
- `summary`: the report entry and the rank digest (what `report` and the ranks view need; kilobytes);
- `model`: the decoded model's columns (`trace.cache.model_arrays`), one uncompressed `.npz`.
The header holds the sidecar's format version, the model's format version, a fingerprint of the code that
computed it, the trace's identity (size, mtime, head-tail checksum, sha256 of every stored byte) and each
section's offset, length and sha256. Each section also holds the trace's sha256 itself, so a section copied
from another trace's sidecar is refused even when the copier recomputed the checksums.

A sidecar is input from whoever can write the logdir, like a trace, and is used only when all of these hold,
else the reader decodes and says why (`SidecarMiss`):
- it is a regular file inside the logdir (no link out, no FIFO, no device), and its header is small and of
  the expected shape (versions, identity, exactly these sections, back to back, ending the file);
- the format versions are this installation's, and the header is signed (HMAC-SHA256 of its canonical bytes,
  which hold every section's sha256) under a key this reader holds (`signing`: key files outside the logdir;
  `index` signs with its user's key, or the team's one named by KINETOSCOPE_SIDECAR_KEY_FILE);
- the code fingerprint is this installation's;
- the graph reference its summary was computed with (the capture trace beside the trace, or the user's:
  `pipeline.graph_reference_for`; its path, size and head-tail checksum, `identity.reference_identity`) is the
  one the trace has now: a capture trace put beside it after it was indexed, or changed, changes its op table
  (the model section is the trace's own: a reader attaches the reference itself);
- the trace's bytes are the ones it was built from: size, then the head-tail checksum (first and last
  64 KiB), then the sha256 of every stored byte, computed at open while the sections are read and checked,
  and compared before anything read from the sidecar is returned (about 0.5-1 GB/s here, several times
  decoding speed; a gzip trace hashes its compressed bytes);
- each section is no larger than a sidecar of this trace can be (`section_cap`, checked before reading),
  matches its sha256 before it is decoded, and holds this trace's sha256;
- the `.npz` is one `index.npz` accepts (no overlapping, repeated, compressed or mis-sized members) and the
  model's columns pass `index.validate.check_model` (dtypes, lengths, index ranges, orders).
The analyses are not stored beyond the summary: TensorBoard computes them from the checked model
(`pipeline.prepare`), so nothing a sidecar holds reaches a route without being derived from columns that were
checked; the summary (for `report` and the ranks view) is checked for its types (`validate.check_summary`).
The signature is what refuses a sidecar forged with this code's own encoder for the trace's exact bytes with
other figures: every checksum of such a sidecar is right, but its forger does not hold the key. What is
left: whoever holds a trusted key is trusted, and whoever can write a trace writes its figures.

The code is split by concern: `header.py` (format, path, header shape and versions), `identity.py` (the
trace's size, head-tail checksum and sha256), `reader.py` (reading and checking, the model), `summary.py` (the summary section, and
every section with one hash for `index`), `writer.py` (writing,
re-stamping, temp-file cleanup); this module gathers their public names and adds what needs the pipeline.

Sidecars are written whole: locally to a temp name in the same folder then renamed over the old one; on
object stores as one object (a PUT is atomic). A reader therefore sees the old sidecar or the new one.
Locally the `.kinetoscope` folder must be a real folder inside the logdir (never a link), and only temp
files of Kinetoscope's own naming, in that folder, are ever removed.
"""
from __future__ import annotations

from typing import Any

import msgspec

from ..pipeline import Prepared, prepare
from ..trace.model import TraceModel
from .header import (
    FINGERPRINTED,
    FOLDER,
    MAGIC,
    MAX_HEADER_BYTES,
    SECTION_CAPS,
    SECTIONS,
    SIDECAR_FORMAT,
    SUFFIX,
    SidecarMiss,
    analysis_fingerprint,
    check_header,
    code_fingerprint,
    encode_header,
    is_local,
    parse_header,
    section_cap,
    sidecar_path,
    signed_bytes,
    split,
)
from .identity import EDGE_BYTES, HASH_BLOCK, check_reference, full_sha256, head_tail, reference_identity, trace_identity
from .reader import SidecarFile, TraceHash, open_model, open_model_bound, present, read_header, section, version, versions
from .summary import open_all, open_summary
from .writer import STALE_TMP_S, TMP_RE, TMP_SUFFIX, build, remove_stale_temps, restamp_checked, write, write_file

__all__ = ["EDGE_BYTES", "FINGERPRINTED", "FOLDER", "HASH_BLOCK", "MAGIC", "MAX_HEADER_BYTES", "SECTIONS",
           "SECTION_CAPS", "SIDECAR_FORMAT", "STALE_TMP_S", "SUFFIX", "TMP_RE", "TMP_SUFFIX", "SidecarFile",
           "SidecarMiss", "TraceHash", "analysis_fingerprint", "build", "check_header", "code_fingerprint", "encode_header",
           "full_sha256", "head_tail", "is_local", "open_all", "open_model", "open_model_bound", "open_prepared", "open_summary",
           "parse_header", "present", "read_header", "reference_identity", "check_reference", "remove_stale_temps", "restamp_checked",
           "section", "section_cap",
           "sidecar_path", "signed_bytes", "split", "trace_identity", "version", "versions", "with_worker", "write", "write_file"]


def open_prepared(trace_path: str) -> tuple[TraceModel, Prepared]:
    """(model, prepared): the checked model from the trace's sidecar and the analyses computed from it.

    Raises:
        SidecarMiss: no usable sidecar for this version of the trace (the reason says why).
    """
    model = open_model(trace_path)
    return model, prepare(model)


def with_worker(digest: Any, worker: str) -> Any:
    """The digest as the ranks view wants it: named by the trace's worker."""
    return msgspec.structs.replace(digest, worker=worker)
