"""Budgets that bound the work one trace file may cause, each a named setting (environment variable).

A 2 MB gzip can hold 2 GiB of whitespace; nothing in a trace's name or size says so before it is read.
These limits are checked while reading, so a hostile file fails with an error that names the budget it
hit and how to raise it, instead of exhausting the machine.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import msgspec

INFLATE_RATIO_ENV = "KINETOSCOPE_MAX_INFLATE_RATIO"
INFLATE_BYTES_ENV = "KINETOSCOPE_MAX_INFLATE_BYTES"
# Kineto JSON gzips 20-30x (trace-format.md; the 10x ResNet bench trace 18x): 60x leaves twice that for
# repetitive traces, and keeps a 10 MB file under 600 MB of text (the decoder holds about 1x the text).
DEFAULT_INFLATE_RATIO = 60.0
# Small files may inflate this far whatever their ratio (a 100 KB gzip of a sparse trace is fine).
INFLATE_FLOOR_BYTES = 256 << 20
# No file inflates past this, whatever its size (a 900 MB trace gzips to about 50 MB).
DEFAULT_INFLATE_BYTES = 16 << 30


class InflateBudget(msgspec.Struct, frozen=True):
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


EVENTS_PER_KB_ENV = "KINETOSCOPE_MAX_EVENTS_PER_KB"
MAX_EVENTS_ENV = "KINETOSCOPE_MAX_EVENTS"
EVENT_BYTES_ENV = "KINETOSCOPE_MAX_EVENT_BYTES"
NAMES_PER_KB_ENV = "KINETOSCOPE_MAX_NAMES_PER_KB"
WHOLE_BYTES_ENV = "KINETOSCOPE_MAX_WHOLE_BYTES"
# Real traces hold one event per 15-30 bytes of gzip (per 220-470 bytes of text); a model costs about 250
# bytes per event while it is built. 250 events per KiB (4 bytes each) is 4x the densest real trace and keeps
# a 10 MB file under 2.5 M events, about 0.7 GB; a plain file can never get near it (an event is 25+ bytes).
DEFAULT_EVENTS_PER_KB = 250.0
EVENTS_FLOOR = 1_000_000  # any file may hold this many, whatever its size
DEFAULT_MAX_EVENTS = 400_000_000
# Distinct event names: each costs a string and its table entries in every process that holds the model (about
# 400 bytes with the analyses' per-name lists), beside the 250 bytes of its event. Real traces name a few thousand
# (ResNet: 300; with_stack Python frames: tens of thousands); a file of 1.75M `ProfilerStep#N` annotations (9.7 MB
# gzipped, inside the event budget) took 1.3 GB. 25 per KiB keeps a 10 MB file under 250,000 names.
DEFAULT_NAMES_PER_KB = 25.0
NAMES_FLOOR = 200_000  # any file may name this many
# Kineto's largest events (a templated kernel name, a long call stack) are kilobytes; 16 MiB also bounds one
# string and one whitespace run, the two ways a small gzip becomes one huge token.
DEFAULT_EVENT_BYTES = 16 << 20
# A file that cannot be cut into pieces (no `traceEvents` near its start, no event boundaries) is decoded
# whole, at several times its text in memory: only this much.
DEFAULT_WHOLE_BYTES = 128 << 20


class BudgetExceeded(Exception):
    """A file went past one of these budgets; the message names it and how to raise it."""


class EventBudget(msgspec.Struct, frozen=True):
    """How many events a file of a given stored size may hold, and how large one event's text may be."""

    per_kb: float = DEFAULT_EVENTS_PER_KB
    max_events: int = DEFAULT_MAX_EVENTS
    event_bytes: int = DEFAULT_EVENT_BYTES
    whole_bytes: int = DEFAULT_WHOLE_BYTES
    names_per_kb: float = DEFAULT_NAMES_PER_KB

    def limit(self, stored_bytes: int) -> int:
        return int(min(self.max_events, max(EVENTS_FLOOR, self.per_kb * max(stored_bytes, 0) / 1024)))

    def name_limit(self, stored_bytes: int) -> int:
        return int(max(NAMES_FLOOR, self.names_per_kb * max(stored_bytes, 0) / 1024))

    def too_many_names(self, stored_bytes: int) -> str:
        return (f"names more than its budget of {self.name_limit(stored_bytes):,} distinct events ({self.names_per_kb:g} "
                f"per KiB of the {stored_bytes:,}-byte file, at least {NAMES_FLOOR:,}; real traces name a few thousand): "
                f"a hostile file? To read it anyway raise {NAMES_PER_KB_ENV}")

    def too_many(self, stored_bytes: int) -> str:
        return (f"holds more than its budget of {self.limit(stored_bytes):,} events ({self.per_kb:g} per KiB of the "
                f"{stored_bytes:,}-byte file, at least {EVENTS_FLOOR:,}, at most {self.max_events:,}; real traces hold "
                f"under 70 per KiB): a hostile file? To read it anyway raise {EVENTS_PER_KB_ENV} or {MAX_EVENTS_ENV}")

    def too_large_event(self) -> str:
        return (f"one event, string or whitespace run is longer than its budget of {self.event_bytes:,} bytes: a "
                f"hostile or corrupt file? To read it anyway raise {EVENT_BYTES_ENV}")

    def too_large_whole(self, text_bytes: int) -> str:
        return (f"its {text_bytes:,} bytes of text cannot be cut into events (no `traceEvents` array of objects near "
                f"the start), and a file read whole may hold only {self.whole_bytes:,}: raise {WHOLE_BYTES_ENV} to read it")


def event_budget() -> EventBudget:
    """The budget from the environment (invalid values fall back to the defaults)."""
    return EventBudget(per_kb=setting(EVENTS_PER_KB_ENV, DEFAULT_EVENTS_PER_KB),
                       max_events=int(setting(MAX_EVENTS_ENV, DEFAULT_MAX_EVENTS)),
                       event_bytes=int(setting(EVENT_BYTES_ENV, DEFAULT_EVENT_BYTES)),
                       whole_bytes=int(setting(WHOLE_BYTES_ENV, DEFAULT_WHOLE_BYTES)),
                       names_per_kb=setting(NAMES_PER_KB_ENV, DEFAULT_NAMES_PER_KB))


# The budgets the CLI takes as options (option, environment variable, metavar, what it bounds); TensorBoard's
# plugin reads the same variables.
CLI_OPTIONS = (
    ("--max-inflate-ratio", INFLATE_RATIO_ENV, "R", "how far a .gz may inflate, times its size"),
    ("--max-inflate-bytes", INFLATE_BYTES_ENV, "N", "the most a .gz may inflate to"),
    ("--max-events-per-kb", EVENTS_PER_KB_ENV, "N", "events a file may hold per KiB of its size"),
    ("--max-events", MAX_EVENTS_ENV, "N", "the most events a file may hold"),
    ("--max-names-per-kb", NAMES_PER_KB_ENV, "N", "distinct event names a file may hold per KiB of its size"),
    ("--max-event-bytes", EVENT_BYTES_ENV, "N", "the longest one event's text (a string, a whitespace run) may be"),
    ("--max-whole-bytes", WHOLE_BYTES_ENV, "N", "the most text of a file that cannot be cut into events"),
)


DECODE_WORKERS_ENV = "KINETOSCOPE_DECODE_WORKERS"
MAX_DECODE_WORKERS = 256
# `auto` (and the default): the cores this process may use, up to this many. Past a few threads the thread that cuts
# the text, merges the pieces and builds the model is the critical path (BENCHMARKS.md, the decode on 16 cores in
# its GPU-machine section); more threads only hold more pieces in memory.
AUTO_DECODE_WORKERS = 8
# Text below this stays serial whatever the setting: starting workers and merging their columns costs more than
# decoding a few chunks.
PARALLEL_MIN_BYTES = 64 << 20


class SettingError(ValueError):
    """A setting's value is not usable; the message names the variable, the value and what it takes."""


def parse_decode_workers(text: str) -> int:
    """`KINETOSCOPE_DECODE_WORKERS`: a whole number of workers, 1 (the serial decode) to MAX_DECODE_WORKERS;
    `auto`: the cores this process may use, up to AUTO_DECODE_WORKERS."""
    value = text.strip()
    if value.lower() == "auto":
        return max(1, min(AUTO_DECODE_WORKERS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                          else os.cpu_count() or 1))
    try:
        workers = int(value)
    except ValueError:
        raise SettingError(f"{DECODE_WORKERS_ENV}={text!r} is not a whole number (1 decodes serially, 'auto' uses "
                           f"every core this process may use)") from None
    if not 1 <= workers <= MAX_DECODE_WORKERS:
        raise SettingError(f"{DECODE_WORKERS_ENV}={text!r} is out of range: 1 (serial) to {MAX_DECODE_WORKERS}")
    return workers


def decode_workers() -> tuple[int, str]:
    """The decode workers for one large trace, from the environment (unset: `auto`), and the problem with the setting ("" when
    none; an unusable value decodes serially, and the caller logs the problem)."""
    text = os.environ.get(DECODE_WORKERS_ENV)
    if text is None or not text.strip():
        return parse_decode_workers("auto"), ""
    try:
        return parse_decode_workers(text), ""
    except SettingError as exc:
        return 1, str(exc)


PURE_PYTHON_ENV = "KINETOSCOPE_PURE_PYTHON"


def pure_python() -> bool:
    """Whether the compiled parts (`trace/_columns.c`, and `_scan.c` with it) are left aside: any non-empty value
    (the pure-Python twins build the same model, slower; the tests run both)."""
    return bool(os.environ.get(PURE_PYTHON_ENV))


FAST_DECODE_ENV = "KINETOSCOPE_FAST_DECODE"


def fast_decode() -> bool:
    """Whether clean middle pieces go straight from text to columns (`trace/_scan.c`, issue 29); `0` turns it off
    (every piece then takes the typed decode and `_columns.c`, which build the same model, slower)."""
    return os.environ.get(FAST_DECODE_ENV, "1").strip() not in ("0", "off", "false", "no")


DECODE_POOL_ENV = "KINETOSCOPE_DECODE_POOL"


def decode_in_threads() -> bool:
    """Whether the parallel decode (`KINETOSCOPE_DECODE_WORKERS` > 1) runs in threads (the default, when pieces are
    scanned from text without the GIL) or, with `processes`, in worker processes (as it does without the scanner)."""
    return os.environ.get(DECODE_POOL_ENV, "threads").strip().lower() != "processes"


@contextmanager
def in_environment(values: Mapping[str, str]) -> Iterator[None]:
    """`values` set in this process's environment for the block (where the storage layer, the budgets and the decoder
    processes read them), each variable restored after: to what it was, or unset."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
