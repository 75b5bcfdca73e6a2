"""A strict reader of the `.npz` files a sidecar's sections are (what `np.savez` writes): every array a read-only
view of the section's bytes, nothing inflated, nothing read twice.

`np.load` trusts the zip's central directory: members whose ranges overlap are each read in full (a 2 MB
file whose hundred entries all point at one stored 2 MB member costs 200 MB), a member may be compressed (a
zip bomb), and a name may appear twice. A sidecar comes from a shared folder anyone may write to, so this
reader accepts only the layout `np.savez` produces, and refuses anything else by name (`NpzError`):
- one end-of-central-directory record, at the very end (no comment, one disk), its directory right before it;
- members stored (no compression, no encryption, no data descriptor), sizes declared equal, names unique and
  ending in `.npy`;
- each local header agreeing with its directory entry (name, method, sizes, zip64 extra);
- members in order and back to back from byte 0 up to the directory: no overlap, no gap, nothing after;
- each member an `.npy` of version 1-3, a plain numeric dtype (bool, int, uint, float; no objects, no
  structured or string types), at most 2 dimensions, whose data is exactly shape x itemsize bytes.
The arrays are views of the bytes given (no copy): they live as long as those bytes.
"""
from __future__ import annotations

import ast
import math
import struct
import zlib
from typing import Union

import numpy as np

Buffer = Union[bytes, memoryview]
EOCD = struct.Struct("<IHHHHIIH")  # signature, disk, cd disk, entries here, entries, cd size, cd offset, comment
CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
LOCAL = struct.Struct("<IHHHHHIIIHH")
EOCD_SIG, CENTRAL_SIG, LOCAL_SIG = 0x06054B50, 0x02014B50, 0x04034B50
ZIP64_EXTRA = 0x0001
FULL32 = 0xFFFFFFFF
NPY_MAGIC = b"\x93NUMPY"
MAX_MEMBERS = 4096  # a section holds a few hundred arrays
MAX_NPY_HEADER = 4096  # np.save pads its header to 64 or 128 bytes
MAX_NDIM = 2
DTYPE_KINDS = "biuf"


class NpzError(ValueError):
    """Not an `.npz` this reader accepts; the message says what is wrong."""


def read(blob: Buffer) -> dict[str, np.ndarray]:
    """name (without `.npy`) -> read-only array, for the `.npz` bytes `blob` (raises NpzError)."""
    view = memoryview(blob).cast("B")
    entries = _directory(view)
    arrays: dict[str, np.ndarray] = {}
    expected = 0
    for name, offset, size, extra_sizes, crc in entries:
        if offset != expected:
            raise NpzError(f"member {name[:40]!r} at byte {offset}, expected {expected}: members overlap, repeat, "
                           f"or leave gaps")
        start = _local(view, name, offset, size, extra_sizes)
        if zlib.crc32(view[start:start + size]) != crc:  # a changed byte the section checksum was recomputed over
            raise NpzError(f"member {name[:40]!r}: its bytes do not match its CRC-32")
        arrays[name[:-4]] = _npy(view[start:start + size], name)
        expected = start + size
    cd_offset = _eocd(view)[1]
    if expected != cd_offset:
        raise NpzError(f"{cd_offset - expected} bytes between the last member and the directory")
    return arrays


def _eocd(view: memoryview) -> tuple[int, int, int]:
    """(entries, directory offset, directory size) from the end record, which must end the file."""
    if len(view) < EOCD.size:
        raise NpzError("too short for a zip")
    sig, disk, cd_disk, here, total, cd_size, cd_offset, comment = EOCD.unpack_from(view, len(view) - EOCD.size)
    if sig != EOCD_SIG:
        raise NpzError("no end-of-directory record at the end (a comment or trailing bytes)")
    if disk or cd_disk or here != total or comment:
        raise NpzError("a multi-disk zip or one with a comment")
    if cd_offset + cd_size != len(view) - EOCD.size:
        raise NpzError("the directory does not end where the end record begins")
    if not 0 < total <= MAX_MEMBERS:
        raise NpzError(f"{total} members")
    return total, cd_offset, cd_size


def _directory(view: memoryview) -> list[tuple[str, int, int, bool]]:
    """(name, local header offset, size, sizes in a zip64 extra, CRC-32) of each member, in directory order."""
    total, pos, cd_size = _eocd(view)
    end = pos + cd_size
    names: set[str] = set()
    out = []
    for _ in range(total):
        if pos + CENTRAL.size > end:
            raise NpzError("directory cut short")
        (sig, _made, _need, flags, method, _t, _d, crc, csize, usize, nlen, xlen, clen, disk, _ia, _ea,
         offset) = CENTRAL.unpack_from(view, pos)
        if sig != CENTRAL_SIG:
            raise NpzError("bad directory entry")
        name = _name(view, pos + CENTRAL.size, nlen)
        extra = bytes(view[pos + CENTRAL.size + nlen:pos + CENTRAL.size + nlen + xlen])
        usize, csize, offset, zip64 = _zip64(extra, usize, csize, offset)
        _check_member(name, flags, method, csize, usize, disk or clen)
        if name in names:
            raise NpzError(f"member {name[:40]!r} appears twice")
        names.add(name)
        out.append((name, offset, usize, zip64, crc))
        pos += CENTRAL.size + nlen + xlen + clen
    if pos != end:
        raise NpzError("directory size disagrees with its entries")
    return sorted(out, key=lambda e: e[1])


def _name(view: memoryview, start: int, length: int) -> str:
    if start + length > len(view):
        raise NpzError("name cut short")
    try:
        return bytes(view[start:start + length]).decode("utf-8")
    except UnicodeDecodeError:
        raise NpzError("member name is not UTF-8") from None


def _zip64(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int, bool]:
    """Sizes and offset, from the zip64 extra field where the fixed fields say 0xFFFFFFFF."""
    pos, found = 0, False
    while pos + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4:pos + 4 + size]
        if len(body) != size:
            raise NpzError("extra field cut short")
        if tag == ZIP64_EXTRA:
            values = list(struct.unpack_from(f"<{size // 8}Q", body)) if size % 8 == 0 else None
            if values is None:
                raise NpzError("bad zip64 field")
            fixed = [usize, csize, offset]
            for i, value in enumerate(fixed):
                if value == FULL32:
                    if not values:
                        raise NpzError("zip64 field too short")
                    fixed[i] = values.pop(0)
            usize, csize, offset = fixed
            found = True
        pos += 4 + size
    if pos != len(extra):
        raise NpzError("bad extra field")
    return usize, csize, offset, found


def _check_member(name: str, flags: int, method: int, csize: int, usize: int, odd: int) -> None:
    if not name.endswith(".npy") or "/" in name or "\0" in name:
        raise NpzError(f"member {name[:40]!r} is not an array")
    if method != 0 or csize != usize:
        raise NpzError(f"member {name[:40]!r} is compressed ({csize} bytes stored for {usize}); sidecars store arrays raw")
    if flags & 0x9 or odd:
        raise NpzError(f"member {name[:40]!r} is encrypted, has a data descriptor, a comment or another disk")


def _local(view: memoryview, name: str, offset: int, size: int, zip64: bool) -> int:
    """Where the member's data starts, once its local header agrees with the directory."""
    if offset + LOCAL.size > len(view):
        raise NpzError(f"member {name[:40]!r} lies past the end")
    sig, _need, flags, method, _t, _d, _crc, csize, usize, nlen, xlen = LOCAL.unpack_from(view, offset)
    if sig != LOCAL_SIG:
        raise NpzError(f"member {name[:40]!r}: no local header at its offset")
    if _name(view, offset + LOCAL.size, nlen) != name:
        raise NpzError(f"member {name[:40]!r}: its local header names another")
    extra = bytes(view[offset + LOCAL.size + nlen:offset + LOCAL.size + nlen + xlen])
    usize, csize, _, _ = _zip64(extra, usize, csize, 0)
    if method != 0 or flags & 0x9 or usize != size or csize != size:
        raise NpzError(f"member {name[:40]!r}: its local header disagrees with the directory ({usize} vs {size} bytes)")
    start = offset + LOCAL.size + nlen + xlen
    if start + size > len(view):
        raise NpzError(f"member {name[:40]!r} is cut short")
    return start


def _npy(data: memoryview, name: str) -> np.ndarray:
    """The array an `.npy` member holds, as a read-only view of `data`."""
    if len(data) < 10 or bytes(data[:6]) != NPY_MAGIC:
        raise NpzError(f"member {name[:40]!r} is not an .npy")
    major = data[6]
    if major == 1:
        hlen, start = struct.unpack_from("<H", data, 8)[0], 10
    elif major in (2, 3) and len(data) >= 12:
        hlen, start = struct.unpack_from("<I", data, 8)[0], 12
    else:
        raise NpzError(f"member {name[:40]!r}: .npy version {major}")
    if hlen > MAX_NPY_HEADER or start + hlen > len(data):
        raise NpzError(f"member {name[:40]!r}: .npy header of {hlen} bytes")
    dtype, fortran, shape = _npy_header(bytes(data[start:start + hlen]), name)
    count = math.prod(shape)
    if count * dtype.itemsize != len(data) - start - hlen:
        raise NpzError(f"member {name[:40]!r}: {len(data) - start - hlen} data bytes for shape {shape} of {dtype}")
    array = np.frombuffer(data, dtype=dtype, count=count, offset=start + hlen)
    array = array.reshape(shape, order="F" if fortran else "C")
    array.flags.writeable = False
    return array


def _npy_header(text: bytes, name: str) -> tuple[np.dtype, bool, tuple[int, ...]]:
    try:
        header = ast.literal_eval(text.decode("latin1"))
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        raise NpzError(f"member {name[:40]!r}: unreadable .npy header") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise NpzError(f"member {name[:40]!r}: unexpected .npy header")
    descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
    if not isinstance(descr, str) or not isinstance(fortran, bool) or not isinstance(shape, tuple):
        raise NpzError(f"member {name[:40]!r}: unexpected .npy header")
    if len(shape) > MAX_NDIM or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise NpzError(f"member {name[:40]!r}: shape {str(shape)[:40]}")
    try:
        dtype = np.dtype(descr)
    except TypeError:
        raise NpzError(f"member {name[:40]!r}: dtype {descr[:20]!r}") from None
    if dtype.kind not in DTYPE_KINDS or dtype.fields is not None or dtype.subdtype is not None or dtype.byteorder == ">":
        raise NpzError(f"member {name[:40]!r}: dtype {dtype} (sidecars hold plain little-endian numbers)")
    return dtype, fortran, tuple(shape)
