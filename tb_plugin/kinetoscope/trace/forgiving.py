"""The forgiving reading of a text msgspec refuses (NaN/Infinity, control characters, bad UTF-8, bare N/A), and the
error of bytes that hold no usable trace."""
from __future__ import annotations

import json
import re
from typing import Any


class DecodeError(Exception):
    """The bytes hold no usable trace; the message says why, for a person. `transient`: the text ends
    early, as a file still being written does (reading it again later may succeed)."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


_BARE_NA = re.compile(rb"(?<=[:\[,])\s*N/A\s*(?=[,\]}])")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _loads(text: str) -> Any:
    """`json.loads`, whose refusals of content (an integer literal of more digits than Python converts, 4,300 by
    default) are DecodeErrors naming the problem, like any other malformed text."""
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise DecodeError(f"invalid JSON: a number too long to read ({str(exc).split(';')[0]})") from None


def forgiving_json(raw: bytes, first_error: Exception) -> tuple[Any, list[str]]:
    """Second chance for text msgspec rejects: NaN/Infinity, control characters, bad UTF-8, bare N/A."""
    warnings: list[str] = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        warnings.append(f"invalid UTF-8 at byte {exc.start} replaced with U+FFFD")
    try:
        doc = _loads(text)
    except json.JSONDecodeError:
        patched = _BARE_NA.sub(b'"N/A"', text.encode("utf-8"))
        try:
            doc = _loads(patched.decode("utf-8"))  # str: bytes would be sniffed as UTF-16
        except json.JSONDecodeError as exc:
            if exc.pos >= len(patched.rstrip()) - 1:
                raise DecodeError(f"truncated JSON ({len(raw)} bytes; was the file still being written?)", transient=True) from None
            raise DecodeError(f"invalid JSON: {first_error}") from None
        warnings.append("bare N/A tokens read as strings")
    if _SURROGATE_ESCAPE.search(raw):  # json keeps a lone `\ud800` as is; no encoder downstream would accept it
        doc = _scrub_surrogates(doc)
    return doc, warnings


def _scrub_surrogates(value: Any) -> Any:
    """The same JSON value with lone surrogates in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        return {_scrub_surrogates(k): _scrub_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_surrogates(v) for v in value]
    return value
