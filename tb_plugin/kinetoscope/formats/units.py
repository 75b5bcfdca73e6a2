"""What every renderer shares: durations, bytes, markdown escaping and aligned tables.

Numbers read the same in the CLI, the Markdown export and the tab (frontend/model/format.js; the tests run
both on the same values): counts with comma thousands separators (44,666), durations to 3 significant digits
in the unit that keeps them in 1..1000 (850 ns, 12.3 µs, 4.56 ms, 1.2 s), shares in percent with one decimal
(31.4%), and the minus sign U+2212.
"""
from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal

MINUS = "\u2212"


def _sig(value: float, digits: int = 3) -> str:
    """|value| to `digits` significant digits, trailing zeros dropped, never in exponent form; signed with MINUS."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    # ties round up, on the float's exact value, as JavaScript's toPrecision does (Python's format rounds to even)
    exact = Decimal(abs(value))
    rounded = exact.quantize(Decimal(1).scaleb(exact.adjusted() - digits + 1), rounding=ROUND_HALF_UP)
    text = f"{rounded.normalize():f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return MINUS + text if value < 0 else text


def human_us(us: float) -> str:
    """1234567.0 -> '1.23 s'; 1234.0 -> '1.23 ms'; 12.5 -> '12.5 µs'; 0.85 -> '850 ns'; -2500 -> '\u22122.5 ms'."""
    a = abs(us)
    if a == 0:
        return "0 µs"
    if a < 1:
        return f"{_sig(us * 1e3)} ns"
    if a < 1e3:
        return f"{_sig(us)} µs"
    if a < 1e6:
        return f"{_sig(us / 1e3)} ms"
    return f"{_sig(us / 1e6)} s"


def human_bytes(n: float) -> str:
    """2791636480 -> '2.6 GiB'; 512 -> '512 B'; -1048576 -> '\u22121 MiB'."""
    v = abs(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if v < 1024 or unit == "PiB":
            break
        v /= 1024
    text = f"{v:.0f}" if unit == "B" else _sig(v)
    return f"{MINUS if n < 0 else ''}{text} {unit}"


def count(n: float) -> str:
    """44666 -> '44,666'; -1806 -> '\u22121,806'."""
    text = f"{abs(round(n)):,}"
    return MINUS + text if round(n) < 0 else text


def percent(value: float) -> str:
    """0.314 -> '31.4%' (ties up, as JavaScript's toFixed)."""
    return _fixed(100 * value, 1) + "%"


def _fixed(value: float, decimals: int) -> str:
    """`value` with `decimals` decimals, ties rounded up on the float's exact value; signed with MINUS."""
    if not math.isfinite(value):
        return str(value)
    text = f"{Decimal(abs(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP):f}"
    return MINUS + text if value < 0 and Decimal(text) != 0 else text


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def md(text: object) -> str:
    """A trace string made literal in CommonMark: a backslash before ASCII punctuation keeps `<img ...>`
    text and a `|` inside a table cell; newlines become spaces."""
    return _MD_SPECIAL.sub(r"\\\1", str("" if text is None else text)).replace("\r\n", " ").replace("\n", " ")


def table_lines(header: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    """Rows of plain strings; in markdown every cell is escaped here (callers never escape)."""
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        return lines + ["| " + " | ".join(md(cell) for cell in row) + " |" for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [fmt(header)] + [fmt(r) for r in rows]


def short(name: str, chars: int = 60) -> str:
    """`name` cut to `chars` characters, the last an ellipsis when it was longer."""
    return name if len(name) <= chars else name[:chars - 1] + "\u2026"
