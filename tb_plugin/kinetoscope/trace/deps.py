"""What our dependencies raise for bad input, named once for every release we support.

A decode turns a dependency's refusal into a named error (a content error for the file, never an "internal error"),
so each place catches the refusals listed here, not the exception one release happened to raise. When a release
changes its mind (msgspec 0.23 raises `DecodeError` for invalid UTF-8 held in a `Raw`, where 0.19-0.22 raised
`UnicodeDecodeError`), this module is where it is mended, and tests/test_dependency_contracts.py names the behaviour
that changed.

- msgspec (0.19-0.23): malformed or truncated JSON is `DecodeError`; a value of the wrong type or out of range
  (`1e999999`) is `ValidationError`, a subclass of it; invalid UTF-8 is `UnicodeDecodeError` before 0.23 and
  `DecodeError` from 0.23 on.
- zlib and ISA-L: a corrupt deflate stream is `zlib.error` or ISA-L's `IsalError` (not a subclass of either zlib's
  error or OSError); a stream cut short is `EOFError` from the gzip readers of both.
"""
from __future__ import annotations

import zlib

import msgspec

MSGSPEC_REFUSALS: tuple[type[BaseException], ...] = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)
"""What a msgspec decode raises for text it will not take: bad JSON, bad UTF-8 (either class), a bad value."""

try:  # ISA-L inflates about 3x faster than zlib, with the same API
    from isal import isal_zlib as inflate_lib
    INFLATE_ERRORS: tuple[type[BaseException], ...] = (zlib.error, inflate_lib.error)
except ImportError:  # pragma: no cover - isal is a declared dependency; zlib keeps things working without it
    inflate_lib = zlib
    INFLATE_ERRORS = (zlib.error,)
"""What a corrupt deflate stream raises, from zlib or ISA-L (`inflate_lib`, whichever is in use)."""
