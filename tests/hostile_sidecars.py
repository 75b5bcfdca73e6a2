"""A hostile-sidecar corpus, made at test time from a real sidecar: one builder per class of attack an author
with write access to a shared logdir can mount on `kinetoscope index` sidecars (issue 26). Each builder takes
the good sidecar's bytes (and the folder it lies in) and writes its hostile version in place; the sections it
forges get checksums recomputed, so only the checks past the checksums can refuse them.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np
from kinetoscope.index import npz, sidecar, signing


def split(raw: bytes) -> tuple[dict, dict[str, bytes]]:
    """(header, name -> section bytes) of a sidecar."""
    header, body = sidecar.split(raw)
    return header, {s["name"]: raw[body + s["offset"]:body + s["offset"] + s["bytes"]] for s in header["sections"]}


def signed(header: dict, sign: bool = True) -> dict:
    """The header signed with the suite's key (a forger who holds the key, so that the checks past the signature
    are what refuses it), or, with `sign` false, keeping the signature it had (a forger without the key)."""
    if not sign:
        return header
    return {**header, "signature": signing.sign(sidecar.signed_bytes(header))}


def join(header: dict, sections: dict[str, bytes], fix_checksums: bool = True, sign: bool = True) -> bytes:
    """A sidecar of these sections (in header order), offsets and, unless told not to, checksums recomputed and
    the header re-signed with the suite's key (`signed`)."""
    offset, table = 0, []
    for entry in header["sections"]:
        blob = sections[entry["name"]]
        digest = hashlib.sha256(blob).hexdigest() if fix_checksums else entry["sha256"]
        table.append({**entry, "offset": offset, "bytes": len(blob), "sha256": digest})
        offset += len(blob)
    header = signed({**header, "sections": table}, sign)
    blob = json.dumps(header).encode()
    return b"".join([sidecar.MAGIC, struct.pack("<Q", len(blob)), blob, *(sections[e["name"]] for e in table)])


def model_arrays(raw: bytes) -> dict[str, np.ndarray]:
    return {k: np.array(v) for k, v in npz.read(split(raw)[1]["model"]).items()}


def with_model(raw: bytes, change: Callable[[dict[str, np.ndarray]], None]) -> bytes:
    """The sidecar with its model section's arrays changed by `change`, re-saved, checksums recomputed."""
    header, sections = split(raw)
    arrays = model_arrays(raw)
    change(arrays)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return join(header, {**sections, "model": buf.getvalue()})


def _overlapping_members(raw: bytes) -> bytes:
    """Every directory entry of the model's zip points at its largest member: np.load would read it per entry."""
    header, sections = split(raw)
    blob = bytearray(sections["model"])
    with zipfile.ZipFile(io.BytesIO(bytes(blob))) as archive:
        infos = archive.infolist()
    biggest = max(infos, key=lambda i: i.file_size)
    pos = blob.index(b"PK\x01\x02")
    while pos != -1 and pos < len(blob) - 46:
        nlen, xlen, clen = struct.unpack_from("<HHH", blob, pos + 28)
        struct.pack_into("<III", blob, pos + 16, biggest.CRC, biggest.compress_size, biggest.file_size)
        struct.pack_into("<I", blob, pos + 42, biggest.header_offset)
        pos = blob.find(b"PK\x01\x02", pos + 46 + nlen + xlen + clen)
    return join(header, {**sections, "model": bytes(blob)})


def _amplified_members(raw: bytes, copies: int = 4000) -> bytes:
    """`copies` more directory entries (distinct names), all pointing at the largest member: a reader that trusts
    the directory reads that member once per entry (a 1 MB member, 4 GB), from a sidecar a few MB long."""
    header, sections = split(raw)
    blob = sections["model"]
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        infos = archive.infolist()
    biggest = max(infos, key=lambda i: i.file_size)
    cd_offset, = struct.unpack_from("<I", blob, len(blob) - 22 + 16)
    directory = bytearray(blob[cd_offset:len(blob) - 22])
    for i in range(copies):
        name = f"copy{i:05d}.npy".encode()
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, biggest.CRC,
                                 biggest.compress_size, biggest.file_size, len(name), 0, 0, 0, 0, 0,
                                 biggest.header_offset) + name
    total = len(infos) + copies
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(total, 0xFFFF), min(total, 0xFFFF), len(directory),
                      cd_offset, 0)
    return join(header, {**sections, "model": blob[:cd_offset] + bytes(directory) + end})


def _duplicated_member(raw: bytes) -> bytes:
    header, sections = split(raw)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out, zipfile.ZipFile(io.BytesIO(sections["model"])) as src:
        for info in src.infolist():
            out.writestr(info.filename, src.read(info))
        first = src.infolist()[0]
        out.writestr(first.filename, src.read(first))  # zipfile warns, and writes it twice
    return join(header, {**sections, "model": buf.getvalue()})


def _compressed_member(raw: bytes) -> bytes:
    header, sections = split(raw)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out, zipfile.ZipFile(io.BytesIO(sections["model"])) as src:
        for info in src.infolist():
            out.writestr(info.filename, src.read(info))
    return join(header, {**sections, "model": buf.getvalue()})


def _size_mismatch(raw: bytes) -> bytes:
    """A member's declared size one byte more than what lies on disk (its data runs into the next header)."""
    header, sections = split(raw)
    blob = bytearray(sections["model"])
    pos = blob.index(b"PK\x01\x02")
    size = struct.unpack_from("<I", blob, pos + 24)[0]
    struct.pack_into("<II", blob, pos + 20, size + 1, size + 1)
    return join(header, {**sections, "model": bytes(blob)})


def _bad_dtype(raw: bytes) -> bytes:
    return with_model(raw, lambda a: a.__setitem__("ts_ns", a["ts_ns"].astype(np.float64)))


def _bad_index(raw: bytes) -> bytes:
    def change(a):
        a["name_id"] = a["name_id"].copy()
        a["name_id"][len(a["name_id"]) // 2] = 10**9
    return with_model(raw, change)


def _negative_index(raw: bytes) -> bytes:
    def change(a):
        a["lane"] = a["lane"].copy()
        a["lane"][-1] = -5
    return with_model(raw, change)


def _unequal_lengths(raw: bytes) -> bytes:
    return with_model(raw, lambda a: a.__setitem__("dur_ns", a["dur_ns"][:-3]))


def _unsorted_times(raw: bytes) -> bytes:
    return with_model(raw, lambda a: a.__setitem__("ts_ns", a["ts_ns"][::-1].copy()))


def _object_array(raw: bytes) -> bytes:
    """A member whose .npy header asks for Python objects (pickle), in a well-formed zip (CRCs recomputed)."""
    header, sections = split(raw)
    source, out = zipfile.ZipFile(io.BytesIO(sections["model"])), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as rezipped:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "ts_ns.npy":
                data = data.replace(b"'descr': '<i8'", b"'descr': '|O8'", 1)
            rezipped.writestr(info.filename, data)
    return join(header, {**sections, "model": out.getvalue()})


def _wrong_checksum(raw: bytes) -> bytes:
    """A valid section whose recorded checksum is not its own (the checksum is not recomputed)."""
    header, sections = split(raw)
    header["sections"][1]["sha256"] = "0" * 64
    return join(header, sections, fix_checksums=False)


def _deep_header(raw: bytes) -> bytes:
    blob = b'{"format": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
    return sidecar.MAGIC + struct.pack("<Q", len(blob)) + blob + raw[len(sidecar.MAGIC) + 8:]


def _huge_section_claim(raw: bytes) -> bytes:
    """Both sections claim 3 GiB (made a sparse file, it costs nothing on disk): the cap refuses them unread."""
    header, sections = split(raw)
    claim = 3 << 30
    table = [{**header["sections"][0], "bytes": claim}, {**header["sections"][1], "offset": claim, "bytes": claim}]
    blob = json.dumps(signed({**header, "sections": table})).encode()
    return sidecar.MAGIC + struct.pack("<Q", len(blob)) + blob


def _summary_types(raw: bytes) -> bytes:
    """The summary's digest with a string where the figures are numbers."""
    header, sections = split(raw)
    tree = json.loads(np.array(npz.read(sections["summary"])["__tree__"]).tobytes())
    arrays = {k: np.array(v) for k, v in npz.read(sections["summary"]).items() if k != "__tree__"}
    for key, value in tree["$d"]:
        if key == "digest":
            value["f"]["origin_ns"] = "soon"
    buf = io.BytesIO()
    np.savez(buf, **arrays, __tree__=np.frombuffer(json.dumps(tree).encode(), np.uint8))
    return join(header, {**sections, "summary": buf.getvalue()})


# name -> (builder of the hostile bytes from the good ones, what the refusal says)
CORPUS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "overlapping_members": (_overlapping_members, "members overlap"),
    "amplified_members": (_amplified_members, "members overlap"),
    "duplicated_member": (_duplicated_member, "appears twice"),
    "compressed_member": (_compressed_member, "is compressed"),
    "size_mismatch": (_size_mismatch, "model section"),
    "bad_dtype": (_bad_dtype, "column ts_ns is float64"),
    "bad_index": (_bad_index, "column name_id holds"),
    "negative_index": (_negative_index, "column lane holds"),
    "unequal_lengths": (_unequal_lengths, "column dur_ns has"),
    "unsorted_times": (_unsorted_times, "not sorted by time"),
    "object_array": (_object_array, "dtype object"),
    "wrong_checksum": (_wrong_checksum, "model section fails its checksum"),
    "deep_header": (_deep_header, "corrupt sidecar header"),
    "huge_section_claim": (_huge_section_claim, "section claims 3,221,225,472 bytes"),
}
SUMMARY_CORPUS = {"summary_types": (_summary_types, "summary section: RankDigest.origin_ns")}


def transplant(raw_a: bytes, raw_b: bytes) -> bytes:
    """A's header (A's identity, valid for A's bytes) with B's sections, checksums recomputed."""
    header_a, _ = split(raw_a)
    _, sections_b = split(raw_b)
    return join(header_a, sections_b)


def outside_sidecar(folder: Path, good: bytes) -> Path:
    """A good sidecar's bytes in a folder outside the logdir (the target of a link)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "elsewhere.kidx"
    target.write_bytes(good)
    return target


def make_fifo(path: Path) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)
