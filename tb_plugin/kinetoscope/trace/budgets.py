"""Budgets that bound the work one trace file may cause, each a named setting (environment variable).

A 2 MB gzip can hold 2 GiB of whitespace; nothing in a trace's name or size says so before it is read.
These limits are checked while reading, so a hostile file fails with an error that names the budget it
hit and how to raise it, instead of exhausting the machine.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

INFLATE_RATIO_ENV = "KINETOSCOPE_MAX_INFLATE_RATIO"
INFLATE_BYTES_ENV = "KINETOSCOPE_MAX_INFLATE_BYTES"
# Kineto JSON gzips 20-30x (trace-format.md; the 10x ResNet bench trace 18x): 60x leaves twice that for
# repetitive traces, and keeps a 10 MB file under 600 MB of text (the decoder holds about 1x the text).
DEFAULT_INFLATE_RATIO = 60.0
# Small files may inflate this far whatever their ratio (a 100 KB gzip of a sparse trace is fine).
INFLATE_FLOOR_BYTES = 256 << 20
# No file inflates past this, whatever its size (a 900 MB trace gzips to about 50 MB).
DEFAULT_INFLATE_BYTES = 16 << 30


@dataclass(frozen=True)
class InflateBudget:
    """How many uncompressed bytes a gzip file of a given size may produce."""

    ratio: float = DEFAULT_INFLATE_RATIO
    max_bytes: int = DEFAULT_INFLATE_BYTES

    def limit(self, compressed_bytes: int) -> int:
        return int(min(self.max_bytes, max(INFLATE_FLOOR_BYTES, self.ratio * max(compressed_bytes, 0))))

    def refusal(self, compressed_bytes: int) -> str:
        """The error text for a file that went past its limit."""
        return (f"gzip inflates past its budget of {self.limit(compressed_bytes):,} bytes ({self.ratio:g}x the "
                f"{compressed_bytes:,}-byte file, at least {INFLATE_FLOOR_BYTES:,}, at most {self.max_bytes:,}): a "
                f"decompression bomb? To read it anyway raise {INFLATE_RATIO_ENV} or {INFLATE_BYTES_ENV}")


def inflate_budget() -> InflateBudget:
    """The budget from the environment (invalid values fall back to the defaults)."""
    return InflateBudget(ratio=setting(INFLATE_RATIO_ENV, DEFAULT_INFLATE_RATIO),
                         max_bytes=int(setting(INFLATE_BYTES_ENV, DEFAULT_INFLATE_BYTES)))


def setting(name: str, default: float) -> float:
    """A positive number from the environment variable `name`; the default when unset or invalid."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default
