"""Repeat a real Kineto trace N times in time, to make large stress-test inputs.

Copy ``k`` is shifted by ``k * (span + 1 ms)``, where span is the time the input covers,
and its ids are shifted so that links stay unique: ``correlation``, ``External id`` and
``external id``, flow ids, ``Ev Idx`` / ``Profiler Event Index``, ``Python id`` /
``Python parent id``, and the ``N`` of ``ProfilerStep#N``. The ``external ts`` argument of
2021-era runtime calls is a timestamp and is shifted like ``ts``.

The input is decoded once (msgspec, with floats as :class:`decimal.Decimal` so that every
number keeps the exact text of the input: integer µs stay integers, ``.250`` stays
``.250``); each copy is then encoded and streamed to the output, so memory stays at a few
times the decoded input whatever ``--repeat`` is.

Usage::

    python samples/scale_trace.py IN.pt.trace.json.gz OUT.pt.trace.json --repeat 30 [--gzip]
"""
from __future__ import annotations

import argparse
import gzip as gzip_module
import io
import json
import math
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

CORRELATION_KEYS = ("correlation",)
EXTERNAL_KEYS = ("External id", "external id")
EV_IDX_KEYS = ("Ev Idx", "Profiler Event Index")
PYTHON_KEYS = ("Python id", "Python parent id")
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
GAP_US = 1000


@dataclass(frozen=True)
class Plan:
    """How far copy ``k`` is shifted: ``k`` times each stride."""

    shift_us: int
    corr_stride: int
    ext_stride: int
    idx_stride: int
    python_stride: int
    step_stride: int


def _is_int(value: Any) -> bool:
    """True for real integers (not bools)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _max_arg(events: Sequence[dict[str, Any]], keys: Sequence[str]) -> int:
    """Largest integer value any of ``keys`` takes in the events' ``args``."""
    best = 0
    for event in events:
        args = event.get("args")
        if isinstance(args, dict):
            for key in keys:
                value = args.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value > best:
                    best = value
    return best


def _time_extent(events: Sequence[dict[str, Any]]) -> tuple[Decimal | int, Decimal | int]:
    """Earliest ``ts`` and latest ``ts + dur`` over every timed event."""
    starts, ends = [], []
    for event in events:
        ts = event.get("ts")
        if isinstance(ts, (int, Decimal)) and not isinstance(ts, bool):
            dur = event.get("dur")
            starts.append(ts)
            ends.append(ts + dur if isinstance(dur, (int, Decimal)) and dur > 0 else ts)
    if not starts:
        raise ValueError("the trace has no timed events")
    return min(starts), max(ends)


def make_plan(events: Sequence[dict[str, Any]]) -> Plan:
    """Computes the time shift and the id strides from the input events."""
    first, last = _time_extent(events)
    flow_ids = [e["id"] for e in events if e.get("ph") in ("s", "f", "t") and _is_int(e.get("id"))]
    corr_max = max([_max_arg(events, CORRELATION_KEYS)] + flow_ids)
    steps = [int(m.group(1)) for e in events if isinstance(e.get("name"), str) and (m := STEP_RE.match(e["name"]))]
    return Plan(
        shift_us=math.ceil(last - first) + GAP_US,
        corr_stride=corr_max + 1,
        ext_stride=_max_arg(events, EXTERNAL_KEYS) + 1,
        idx_stride=_max_arg(events, EV_IDX_KEYS) + 1,
        python_stride=_max_arg(events, PYTHON_KEYS) + 1,
        step_stride=max(steps) - min(steps) + 1 if steps else 0,
    )


def _shift_args(args: dict[str, Any], k: int, plan: Plan) -> dict[str, Any]:
    """A copy of ``args`` with ids (and ``external ts``) moved to copy ``k``."""
    out = dict(args)
    for keys, stride in ((CORRELATION_KEYS, plan.corr_stride), (EXTERNAL_KEYS, plan.ext_stride),
                         (EV_IDX_KEYS, plan.idx_stride), (PYTHON_KEYS, plan.python_stride)):
        for key in keys:
            value = out.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                out[key] = value + k * stride
    ext_ts = out.get("external ts")
    if isinstance(ext_ts, (int, Decimal)) and not isinstance(ext_ts, bool):
        out["external ts"] = ext_ts + k * plan.shift_us
    return out


def shift_event(event: dict[str, Any], k: int, plan: Plan) -> dict[str, Any]:
    """Copy ``k`` of one event (``k == 0`` returns the event itself)."""
    if k == 0:
        return event
    out = dict(event)
    ts = out.get("ts")
    if isinstance(ts, (int, Decimal)) and not isinstance(ts, bool):
        out["ts"] = ts + k * plan.shift_us
    if out.get("ph") in ("s", "f", "t") and _is_int(out.get("id")):
        out["id"] += k * plan.corr_stride
    name = out.get("name")
    if plan.step_stride and isinstance(name, str) and name.startswith("ProfilerStep#"):
        match = STEP_RE.match(name)
        if match:
            out["name"] = f"ProfilerStep#{int(match.group(1)) + k * plan.step_stride}"
    args = out.get("args")
    if isinstance(args, dict):
        out["args"] = _shift_args(args, k, plan)
    return out


def load_trace(path: Path) -> dict[str, Any]:
    """Decodes a ``.json`` or ``.json.gz`` trace once, floats as exact decimals."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip_module.decompress(raw)
    doc = msgspec.json.Decoder(float_hook=Decimal).decode(raw)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError(f"{path} is not a Chrome trace object with a traceEvents list")
    return doc


def _write_copies(out: io.BufferedIOBase, events: list[dict[str, Any]], repeat: int, plan: Plan) -> int:
    """Streams ``repeat`` shifted copies of the events as the body of a JSON array."""
    encoder = msgspec.json.Encoder(decimal_format="number")
    written = 0
    for k in range(repeat):
        chunk = encoder.encode([shift_event(e, k, plan) for e in events])[1:-1]
        if chunk:
            out.write(b",\n" + chunk if written else chunk)
            written += len(events)
    return written


def _write_document(out: io.BufferedIOBase, doc: dict[str, Any], repeat: int, plan: Plan) -> int:
    """Writes every top-level key in the input's order, ``traceEvents`` repeated."""
    encoder = msgspec.json.Encoder(decimal_format="number")
    out.write(b"{")
    written = 0
    for index, (key, value) in enumerate(doc.items()):
        out.write((b",\n" if index else b"\n") + encoder.encode(key) + b": ")
        if key == "traceEvents":
            out.write(b"[\n")
            written = _write_copies(out, value, repeat, plan)
            out.write(b"\n]")
        else:
            out.write(encoder.encode(value))
    out.write(b"\n}\n")
    return written


def scale_trace(in_path: str | Path, out_path: str | Path, repeat: int, gzip: bool = False) -> dict[str, Any]:
    """Writes ``repeat`` time-shifted copies of a trace into one file.

    Args:
        in_path: A Kineto trace, ``.json`` or ``.json.gz``, any era.
        out_path: Output file (written gzip-compressed when ``gzip`` is true).
        repeat: Number of copies (1 rewrites the input unchanged in content).
        gzip: Compress the output (level 1, for speed).

    Returns:
        Statistics: event counts, shifts/strides, output bytes and seconds taken.
    """
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    began = time.perf_counter()
    doc = load_trace(Path(in_path))
    plan = make_plan(doc["traceEvents"])
    out_path = Path(out_path)
    if gzip:
        with gzip_module.open(out_path, "wb", compresslevel=1) as out:
            written = _write_document(out, doc, repeat, plan)
    else:
        with open(out_path, "wb") as out:
            written = _write_document(out, doc, repeat, plan)
    return {
        "input": str(in_path),
        "output": str(out_path),
        "repeat": repeat,
        "events_in": len(doc["traceEvents"]),
        "events_out": written,
        **plan.__dict__,
        "bytes_out": out_path.stat().st_size,
        "seconds": round(time.perf_counter() - began, 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: prints the statistics as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--repeat", type=int, required=True)
    parser.add_argument("--gzip", action="store_true", help="gzip the output")
    args = parser.parse_args(argv)
    print(json.dumps(scale_trace(args.input, args.output, args.repeat, gzip=args.gzip), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
