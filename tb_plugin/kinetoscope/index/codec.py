"""Storing what `pipeline.prepare` derives from a model (frozen records, msgspec Structs, of numpy arrays, tuples,
dicts and scalars) as one uncompressed `.npz`: each array raw (loading is a read, not a parse), the rest one JSON tree.

The tree names each record by `module:qualname`. Decoding rebuilds only records of this package
(`kinetoscope.*`), through their constructors, with exactly the fields they declare; anything else is a
`CodecError` naming what it met. No pickle: a sidecar comes from a shared folder anyone may write to.
"""
from __future__ import annotations

import importlib
import io
import math
from typing import Any, Optional

import msgspec
import numpy as np

from ..trace.deps import MSGSPEC_REFUSALS
from ..trace.model import field_names
from . import npz

_TREE = "__tree__"
PACKAGE = "kinetoscope."
MAX_DEPTH = 64  # the trees `prepare` makes are under 10 deep; a deeper one is not ours


class CodecError(ValueError):
    """A stored tree that does not decode into this version's classes; the message says where."""


def encode(obj: Any) -> bytes:
    """`obj` as `.npz` bytes (raises TypeError for a value it cannot store, e.g. an object array)."""
    buf = io.BytesIO()
    encode_into(obj, buf)
    return buf.getvalue()


def encode_into(obj: Any, handle: Any) -> None:
    """`encode`, written to a seekable binary file object (member by member: no copy of the whole in memory)."""
    arrays: dict[str, np.ndarray] = {}
    tree = _enc(obj, arrays)
    np.savez(handle, **arrays, **{_TREE: np.frombuffer(msgspec.json.encode(tree), dtype=np.uint8)})


def decode(blob: bytes) -> Any:
    """The object `encode` stored; arrays come back read-only views of `blob`.

    The `.npz` is read by `npz.read`, which refuses compressed, overlapping, repeated or mis-sized members.

    Raises:
        CodecError: not an npz of ours, or a class or field this version does not have.
    """
    try:
        arrays = npz.read(blob)
    except npz.NpzError as exc:
        raise CodecError(f"not a stored tree ({exc})") from None
    raw = arrays.pop(_TREE, None)
    if raw is None:
        raise CodecError("not a stored tree (no tree)")
    try:
        tree = msgspec.json.decode(raw.tobytes())
    except MSGSPEC_REFUSALS as exc:
        raise CodecError(f"stored tree is not JSON ({exc})") from None
    except RecursionError:
        raise CodecError("stored tree nested too deeply") from None
    return _dec(tree, arrays, 0)


def _enc(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, np.generic):  # before int/float: np.float64 is a float, and must come back one
        if obj.dtype.kind not in "biuf":
            raise TypeError(f"cannot store a numpy {obj.dtype} scalar")
        return {"$s": obj.dtype.str, "v": _enc(obj.item(), arrays)}
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"$f": repr(obj)}
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError("cannot store an object array")
        key = f"a{len(arrays)}"
        arrays[key] = obj
        return {"$a": key}
    if isinstance(obj, tuple):
        return {"$t": [_enc(x, arrays) for x in obj]}
    if isinstance(obj, list):
        return [_enc(x, arrays) for x in obj]
    if isinstance(obj, dict):
        return {"$d": [[_enc(k, arrays), _enc(v, arrays)] for k, v in obj.items()]}
    if isinstance(obj, msgspec.Struct):
        cls = type(obj)
        if not cls.__module__.startswith(PACKAGE):
            raise TypeError(f"cannot store {cls.__module__}.{cls.__qualname__}: not a kinetoscope class")
        return {"$c": f"{cls.__module__}:{cls.__qualname__}",
                "f": {name: _enc(getattr(obj, name), arrays) for name in obj.__struct_fields__}}
    raise TypeError(f"cannot store a {type(obj).__name__}")


def _dec(node: Any, arrays: dict[str, np.ndarray], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise CodecError("stored tree nested too deeply")
    if node is None or isinstance(node, (bool, str, int, float)):
        return node
    if isinstance(node, list):
        return [_dec(x, arrays, depth + 1) for x in node]
    if not isinstance(node, dict) or len(node) not in (1, 2):
        raise CodecError(f"unexpected node {str(node)[:80]!r}")
    if "$a" in node:
        try:
            return arrays[node["$a"]]
        except (KeyError, TypeError):
            raise CodecError(f"missing array {str(node['$a'])[:40]!r}") from None
    if "$t" in node:
        return tuple(_dec(x, arrays, depth + 1) for x in _list(node["$t"]))
    if "$d" in node:
        out = {}
        for pair in _list(node["$d"]):
            if not isinstance(pair, list) or len(pair) != 2:
                raise CodecError("bad dict entry")
            out[_dec(pair[0], arrays, depth + 1)] = _dec(pair[1], arrays, depth + 1)
        return out
    if "$f" in node:
        if node["$f"] not in ("nan", "inf", "-inf"):
            raise CodecError(f"bad float {str(node['$f'])[:20]!r}")
        return float(node["$f"])
    if "$s" in node:
        try:
            dtype = np.dtype(node["$s"])
        except TypeError:
            raise CodecError(f"bad scalar type {str(node['$s'])[:20]!r}") from None
        if dtype.kind not in "biuf":
            raise CodecError(f"bad scalar type {dtype}")
        return dtype.type(_dec(node.get("v"), arrays, depth + 1))
    if "$c" in node:
        return _record(node, arrays, depth)
    raise CodecError(f"unexpected node {str(node)[:80]!r}")


def _list(value: Any) -> list:
    if not isinstance(value, list):
        raise CodecError("expected a list")
    return value


def _record(node: dict, arrays: dict[str, np.ndarray], depth: int) -> Any:
    cls = _class(node["$c"])
    stored = node.get("f")
    if not isinstance(stored, dict):
        raise CodecError(f"{node['$c']}: no fields")
    names = set(cls.__struct_fields__)
    if set(stored) != names:
        missing, extra = sorted(names - set(stored)), sorted(set(stored) - names)
        raise CodecError(f"{cls.__qualname__} has other fields in this version (missing {missing[:5]}, extra {extra[:5]})")
    values = {name: _dec(value, arrays, depth + 1) for name, value in stored.items()}
    try:
        obj = cls(**values)
    except (TypeError, ValueError) as exc:
        raise CodecError(f"{cls.__qualname__}: {exc}") from None
    return obj


def _class(name: Any) -> type:
    """The record class `module:qualname` names, only from this package."""
    if not isinstance(name, str) or ":" not in name:
        raise CodecError(f"bad class name {str(name)[:80]!r}")
    module_name, qualname = name.split(":", 1)
    if not module_name.startswith(PACKAGE) or "<" in qualname:
        raise CodecError(f"class {name[:80]!r} is not a kinetoscope class")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise CodecError(f"class {name[:80]!r} does not exist in this version") from None
    if not (isinstance(obj, type) and issubclass(obj, msgspec.Struct)):
        raise CodecError(f"{name[:80]!r} is not a record class")
    return obj


def difference(a: Any, b: Any, path: str = "") -> Optional[str]:
    """Where two trees differ (the path of the first difference), or None when they are equal: arrays by
    dtype, shape and values (NaN equals NaN), floats likewise, records by type and fields."""
    if type(a) is not type(b):
        return f"{path or '.'}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{path}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        same = np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        return None if same else f"{path}: values differ"
    if field_names(a):
        for name in field_names(a):
            found = difference(getattr(a, name), getattr(b, name), f"{path}.{name}")
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)[:5]} != {list(b)[:5]}"
        for k in a:
            found = difference(a[k], b[k], f"{path}[{k!r}]")
            if found:
                return found
        return None
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"
