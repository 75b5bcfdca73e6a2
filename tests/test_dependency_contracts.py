"""What Kinetoscope relies on in its dependencies, one behaviour a test, for every release we support.

`make test` runs these with the newest releases, `make test-min` with the floors (msgspec 0.19, numpy 1.24,
fsspec 2023.9, isal 1.0). When a release changes one of these behaviours, the test named after it fails here, before
a fuzz case or a user's file finds it (msgspec 0.23 changed the class of its invalid-UTF-8 error: the code had caught
only the older one). Where a behaviour differs between releases, the code catches what every one of them raises,
named once in `kinetoscope.trace.deps`, and the test says which releases do what.
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from decimal import Decimal

import fsspec
import msgspec
import numpy as np
import pytest
from kinetoscope.trace.deps import INFLATE_ERRORS, MSGSPEC_REFUSALS, inflate_lib

BAD_UTF8 = b"\xed\xa0\xbd"  # a lone surrogate's UTF-8 spelling: invalid UTF-8
MSGSPEC = tuple(int(p) for p in msgspec.__version__.split(".")[:2])


# ---- msgspec --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [b'"' + BAD_UTF8 + b'"', b'{"' + BAD_UTF8 + b'": 1}', b'["ok", "\xfc"]'],
                         ids=["string", "key", "latin-1 byte"])
def test_msgspec_refuses_invalid_utf8_with_a_decode_refusal(text):
    with pytest.raises(MSGSPEC_REFUSALS) as caught:
        msgspec.json.decode(text)
    # 0.19-0.22 raise UnicodeDecodeError, 0.23 DecodeError ("Invalid UTF-8 encoded string"): both are caught
    assert isinstance(caught.value, UnicodeDecodeError if MSGSPEC < (0, 23) else msgspec.DecodeError)


def test_msgspec_raw_keeps_invalid_utf8_unchecked_until_it_is_decoded():
    """The exact-time reader keeps each time as its Raw text and reads it later (`exact_times._raw_ns`)."""
    raws = msgspec.json.decode(b'["' + BAD_UTF8 + b'", 1.5]', type=list[msgspec.Raw])
    assert bytes(raws[0]) == b'"' + BAD_UTF8 + b'"'
    with pytest.raises(MSGSPEC_REFUSALS):
        msgspec.json.Decoder(float_hook=Decimal).decode(raws[0])
    assert msgspec.json.Decoder(float_hook=Decimal).decode(raws[1]) == Decimal("1.5")


def test_msgspec_empty_raw_is_falsy():
    """An absent time decodes to an empty Raw, which the reader takes as absent."""
    class Event(msgspec.Struct):
        ts: msgspec.Raw = msgspec.Raw()
    assert not msgspec.json.decode(b"{}", type=Event).ts
    assert msgspec.json.decode(b'{"ts": 1}', type=Event).ts


def test_msgspec_truncated_text_is_a_decode_error_that_says_truncated():
    """A piece cut inside a value is told from bad JSON by this word (`decode.typed`, `decode_trace`)."""
    for text in (b'{"traceEvents": [{"ph": "X"', b'[1, 2', b'{"a": "abc'):
        with pytest.raises(msgspec.DecodeError, match="truncated"):
            msgspec.json.decode(text)


def test_msgspec_malformed_json_is_a_decode_error_without_truncated():
    for text in (b"[NaN]", b"[01]", b'{"a" 1}', b"[1,]"):
        with pytest.raises(msgspec.DecodeError) as caught:
            msgspec.json.decode(text)
        assert "truncated" not in str(caught.value)


def test_msgspec_bad_number_is_a_validation_error_and_so_a_decode_error():
    class Event(msgspec.Struct):
        ts: float = 0.0
    assert issubclass(msgspec.ValidationError, msgspec.DecodeError)
    for text in (b'{"ts": 1e999999}', b'{"ts": "12"}', b'{"ts": ' + b"9" * 400 + b"}"):
        with pytest.raises(msgspec.ValidationError):
            msgspec.json.decode(text, type=Event)
    with pytest.raises(msgspec.ValidationError, match="out of range"):
        msgspec.json.decode(b"[1e999999]")


def test_msgspec_duplicate_key_keeps_the_last_value():
    """The lenient decode and the typed one agree on a repeated key (`traceEvents` twice: the last wins)."""
    assert msgspec.json.decode(b'{"a": 1, "a": 2}') == {"a": 2}

    class Doc(msgspec.Struct):
        traceEvents: list = []
    assert msgspec.json.decode(b'{"traceEvents": [1], "traceEvents": []}', type=Doc).traceEvents == []
    assert json.loads('{"a": 1, "a": 2}') == {"a": 2}  # the forgiving decode's reader


def test_msgspec_integers_beyond_int64_decode_up_to_a_limit_then_are_refused():
    """`_kineto_ns` takes ints of up to 30 digits as exact times; a longer one must be a refusal, not a crash."""
    assert msgspec.json.decode(b"1" * 30) == int("1" * 30)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b"1" * 5000)


def test_python_json_refuses_a_huge_integer_with_a_plain_value_error():
    """The forgiving decode (`forgiving._loads`) names this refusal; it is a ValueError, not a JSONDecodeError."""
    if not hasattr(sys, "set_int_max_str_digits"):
        pytest.skip("this Python has no integer string conversion limit")
    with pytest.raises(ValueError) as caught:
        json.loads("[" + "1" * 5000 + "]")
    assert not isinstance(caught.value, json.JSONDecodeError)


# ---- numpy ----------------------------------------------------------------------------------------------------

def test_numpy_int64_array_arithmetic_wraps_without_raising():
    """Time arithmetic checks its bounds itself (the counter buckets' edges, the ns of absurd times)."""
    with np.errstate(all="ignore"):
        wrapped = np.array([2**62], np.int64) * np.int64(4)
    assert wrapped[0] == 0


def test_numpy_refuses_a_python_int_beyond_int64_as_a_scalar():
    """A rebase outside int64 is refused before it reaches an array (`finish._to_ns`, `_INT_LIMIT`)."""
    with pytest.raises(OverflowError):
        np.int64(2**63)


def test_numpy_float_to_int64_truncates_and_float64_holds_integers_to_2_53():
    us = np.array([1.9, -1.9, 2.0**53, 1700000000000123.0])
    assert np.floor(us).astype(np.int64).tolist() == [1, -2, 2**53, 1700000000000123]
    assert us.astype(np.int64).tolist()[:2] == [1, -1]


def test_numpy_rint_rounds_half_to_even():
    """A fraction of a µs in ns, as the reference rounds it."""
    assert np.rint(np.array([0.5, 1.5, 2.5, -0.5])).tolist() == [0.0, 2.0, 2.0, -0.0]


def test_numpy_in_place_add_of_floats_into_ints_is_refused():
    """Same-kind casting: a float column never lands silently in an int64 one."""
    ns = np.zeros(2, np.int64)
    with pytest.raises(TypeError):  # numpy's UFuncTypeError subclasses TypeError
        ns += np.array([0.5, 1.5])


# ---- fsspec ---------------------------------------------------------------------------------------------------

def test_fsspec_missing_file_is_file_not_found(tmp_path):
    for url in (str(tmp_path / "absent.json"), "memory://kinetoscope-contract/absent.json"):
        fs, inner = fsspec.core.url_to_fs(url)
        with pytest.raises(FileNotFoundError):
            fs.open(inner, "rb")
        with pytest.raises(FileNotFoundError):
            fs.info(inner)


def test_fsspec_unreadable_local_file_is_a_permission_error(tmp_path):
    """Run as a user who may not read the file: as root (CI), in a child that gives its privileges up once fsspec
    is imported (its interpreter lives where that user may not read)."""
    secret = tmp_path / "secret.pt.trace.json"
    secret.write_bytes(b"{}")
    secret.chmod(0o000)
    probe = ("import os, sys, fsspec\n"
             "fs, inner = fsspec.core.url_to_fs(sys.argv[1])\n"
             "if os.geteuid() == 0:\n    os.setgid(65534)\n    os.setuid(65534)\n"
             "try:\n    fs.open(inner, 'rb').read()\nexcept PermissionError:\n    print('PermissionError')\n"
             "except Exception as exc:\n    print(type(exc).__name__)\nelse:\n    print('read')\n")
    out = subprocess.run([sys.executable, "-c", probe, str(secret)], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "PermissionError", out.stderr[-2000:]


# ---- gzip, zlib and ISA-L -------------------------------------------------------------------------------------

PAYLOAD = b'{"traceEvents": [' + b'{"ph": "X", "name": "k", "ts": 1, "dur": 2},' * 200 + b"{}]}"


@pytest.mark.parametrize("lib", [zlib, inflate_lib], ids=["zlib", "in use"])
def test_a_truncated_gzip_stream_ends_without_an_error_and_without_eof(lib):
    """`storage._gunzip_blocks` tells a cut file by `eof`, not by an exception."""
    cut = gzip.compress(PAYLOAD)[:-12]
    inflater = lib.decompressobj(wbits=31)
    out = inflater.decompress(cut)
    assert not inflater.eof and PAYLOAD.startswith(out)


@pytest.mark.parametrize("lib", [zlib, inflate_lib], ids=["zlib", "in use"])
def test_a_corrupt_gzip_stream_raises_an_inflate_error(lib):
    data = bytearray(gzip.compress(PAYLOAD))
    data[12:40] = b"\xff" * 28
    with pytest.raises(INFLATE_ERRORS):
        lib.decompressobj(wbits=31).decompress(bytes(data))


def test_the_gzip_readers_raise_eof_error_for_a_truncated_file():
    """The sniff of a `.json.gz` head (`discovery._sniff`) and whole-file reads catch EOFError."""
    cut = gzip.compress(PAYLOAD)[:-12]
    with pytest.raises(EOFError):
        gzip.decompress(cut)
    igzip = pytest.importorskip("isal.igzip")
    with pytest.raises(EOFError):
        igzip.decompress(cut)


def test_isal_error_is_not_a_zlib_error():
    """Why INFLATE_ERRORS names both: catching zlib.error alone lets ISA-L's escape."""
    if inflate_lib is zlib:
        pytest.skip("ISA-L is not installed")
    assert not issubclass(inflate_lib.error, zlib.error)
    assert inflate_lib.error in INFLATE_ERRORS
