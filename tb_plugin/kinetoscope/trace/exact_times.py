"""The exact 16-digit times of 2024-03/04 nightlies: telling such a file (`needs_exact_times`) and reading its times'
JSON text as integer ns (`ns_of`), rebased to a whole second (`whole_second`) so doubles hold them to the ns."""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Callable, Optional

import msgspec

from .budgets import pure_python

_EXACT_VALUE = msgspec.json.Decoder(float_hook=Decimal)  # one time's text, as `_raw_ns` reads it
# Nightlies of 2024-03/04 wrote absolute epoch µs with a fraction, `{us}.{ns}` (zero-padded only from
# 2024-04-03, so `.5` may mean 5 ns): a double holds 16-digit values only to 0.25 µs, which fakes
# overlaps. In files whose first MiB shows such a time, ts and dur keep their JSON text (`decode._ExactEvent`), read as
# integer ns (`_raw_ns`; in C `_kineto_time.h`, also by the scanner); every other field decodes as in any file.
_SIXTEEN_DIGIT_FRACTION = re.compile(rb'"(?:ts|dur)"\s*:\s*-?\d{16,}\.\d')
EXACT_SNIFF_BYTES = 1 << 20
USABLE_NS = 2**62  # times beyond ±this many ns are out of the model's range (trace.finish's _INT_LIMIT)


def needs_exact_times(raw, start: int, end: int) -> bool:
    """Whether raw[start:end] holds a 16-digit time with a fraction (see `_SIXTEEN_DIGIT_FRACTION`)."""
    return _SIXTEEN_DIGIT_FRACTION.search(raw, start, end) is not None


def _kineto_ns(value: Any) -> Optional[int]:
    """A time written by Kineto as `{us}.{ns}` in integer ns: a fraction of up to 3 digits is the ns count
    (`.5` and `.005` are both 5 ns; the first is the unpadded writer of 2024-03). None if not a number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value * 1000 if -10**31 < value < 10**31 else None  # as a Decimal past 30 digits: no 10^400 / 1000
    if not isinstance(value, Decimal) or not value.is_finite() or value.adjusted() > 30:  # no 1e999999 ints
        return None
    sign, digits, exponent = value.as_tuple()
    if -3 <= exponent < 0:
        whole = int("".join(map(str, digits[:exponent])) or "0")
        ns = whole * 1000 + int("".join(map(str, digits[exponent:])))
        return -ns if sign else ns
    return int((value * 1000).to_integral_value())


def _raw_ns(raw: Any) -> Optional[int]:
    """`_kineto_ns` of a time's JSON text (a `msgspec.Raw`; an empty one is an absent time: None).

    Raises:
        One of `deps.MSGSPEC_REFUSALS`: the time is a string of invalid UTF-8 (a Raw keeps its text unchecked), which
            the typed decode of the value itself refuses (UnicodeDecodeError before msgspec 0.23, DecodeError since).
    """
    if not isinstance(raw, msgspec.Raw) or not raw:
        return None
    return _kineto_ns(_EXACT_VALUE.decode(raw))


def whole_second(ts_ns: list) -> Optional[int]:
    """The whole second (ns) at or before the earliest usable time (within ±2^62 ns, as the lenient decode's rebase
    and the model take them: one absurd time must not carry every other one out of range); None when there is none."""
    known = [t for t in ts_ns if t is not None and -USABLE_NS < t < USABLE_NS]
    return min(known) // 10**9 * 10**9 if known else None


def _load_ns_reader() -> Callable[[list], list]:
    """`[_raw_ns(v) for v in values]`: read in C (`_columns.kineto_ns`) unless absent or disabled, every text it does
    not read itself handed to `_raw_ns`."""
    if not pure_python():
        try:
            from ._columns import kineto_ns
        except ImportError:
            pass
        else:
            return lambda values: kineto_ns(values, msgspec.Raw, _raw_ns)
    return lambda values: list(map(_raw_ns, values))


ns_of = _load_ns_reader()
