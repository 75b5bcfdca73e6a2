"""What every renderer shares: durations, bytes, markdown escaping and aligned tables."""
from __future__ import annotations

import re


def human_us(us: float) -> str:
    """1234567.0 -> '1.23 s'; 1234.0 -> '1.23 ms'; 12.5 -> '12.5 µs'."""
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3g} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"


def human_bytes(n: float) -> str:
    """2791636480 -> '2.6 GiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


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
