"""Helpers shared by the subprocess scripts (:mod:`peer_worker`, :mod:`bench_kinetoscope`).

Standard library only: these run inside the measured process.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, NoReturn

_current_stage = "start-up"
_kept: list[Any] = []


def keep_alive(*objs: Any) -> None:
    """Hold the tool's result until the process exits.

    Otherwise it is freed when the runner returns, and deallocating millions
    of objects (seconds on large traces) would be counted in the wall time,
    while a real session keeps its loaded data.  :func:`exit_now` skips the
    teardown.
    """
    _kept.extend(objs)


def stage(name: str) -> None:
    """Name the step now running, so that a failure says where it happened."""
    global _current_stage
    _current_stage = name


def describe_failure(exc: BaseException) -> str:
    """``stage: Type: message (at file:line in function)``: useful even for a bare ``raise ValueError``."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        short = "/".join(Path(last.filename).parts[-3:])
        where = f" (at {short}:{last.lineno} in {last.name})"
    message = f"{type(exc).__name__}: {exc}".rstrip(": ")
    return f"{_current_stage}: {message}{where}"[:2000]


def new_result(tool: str) -> dict[str, Any]:
    """The result skeleton every worker fills: ``ok``, ``error``, ``timings`` (s), ``info``."""
    return {"tool": tool, "ok": False, "error": None, "timings": {}, "info": {}}


def write_result(path: Path, result: dict[str, Any]) -> None:
    """Write the result JSON atomically (the harness reads it after the process exits)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(path)


def record(result_json: Path, result: dict[str, Any], measure: Callable[[], tuple[dict, dict]], started: float,
           quiet: tuple[type[BaseException], ...] = ()) -> int:
    """Run a worker's measurement, fill and write its result; returns the exit status (0 ok, 3 failed).

    `measure` returns (timings, info); `process_s` (since `started`) is added to the timings. A failure is a
    result, not a crash: its traceback goes to stderr, except for `quiet` exceptions whose message says it all.
    """
    try:
        timings, info = measure()
        timings["process_s"] = time.perf_counter() - started
        result.update(ok=True, timings=timings, info=info)
    except quiet as exc:
        print(f"{result['tool']}: {exc}", file=sys.stderr)
        result["error"] = str(exc)
    except BaseException as exc:  # noqa: BLE001 - a failure is a result, not a crash
        traceback.print_exc()
        result["error"] = describe_failure(exc)
    write_result(result_json, result)
    return 0 if result["ok"] else 3


def exit_now(code: int) -> NoReturn:
    """Flush and leave without interpreter teardown (freeing a large model is not part of any timing)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def write_section(out: Path | None, text: str) -> int:
    """Echo one bench section's markdown and write it to `out` (creating its folder; None: echo only); exit status 0."""
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    return 0


def read_through(trace: Path, block: int = 16 << 20) -> None:
    """Read the trace once, untimed, before a run: every run then starts with the file in the page cache. A peer's
    10+ GiB run evicts it on a 24 GiB machine, and whoever ran next paid the disk (a 2.7 GB trace read back at about
    90 MB/s: 30 s where the same run took 5 s from memory), which measured the order of the tools, not the tools."""
    with open(trace, "rb", buffering=0) as handle:
        buf = bytearray(block)
        while handle.readinto(buf):
            pass
