"""Serialisation and files: Kineto-style JSON text, ``tensorboard_trace_handler`` runs, truth JSON."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from .generate import effective_steps, make_spans


def _encode(value: Any) -> str:
    """JSON text of ``value``; floats get exactly three decimals (Kineto's ns precision)."""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_encode(v) for v in value) + "]"
    return json.dumps(value)


def dumps_trace(trace: dict[str, Any]) -> str:
    """Serialises a trace object like Kineto: one event per line, ``traceEvents`` keys in order."""
    lines = []
    for key, value in trace.items():
        if key == "traceEvents":
            body = ",\n  ".join(_encode(e) for e in value)
            lines.append(f'  "traceEvents": [\n  {body}\n  ]' if value else '  "traceEvents": []')
        else:
            lines.append(f"  {json.dumps(key)}: {_encode(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _file_ns(trace: dict[str, Any]) -> int:
    """The 19-digit ns of the file name: the trace's end plus ~40 ms of export time."""
    base = trace.get("baseTimeNanoseconds", 0)
    last = max(e["ts"] + e.get("dur", 0) for e in trace["traceEvents"] if e["ph"] == "X")
    return base + round(last * 1000) + 40_000_000


def write_run(outdir: Path, scenario: str, *, era: str = "2024", seed: int = 0, steps: int = 6, spans: int = 1,
              use_gzip: bool = False, worker: str | None = None) -> dict[str, Any]:
    """Writes ``tensorboard_trace_handler``-style files and returns the run's truth.

    Returns:
        ``{"scenario", "era", "seed", "steps", "worker", "spans": [truth + {"file"}]}``.
    """
    pairs = make_spans(scenario, era=era, seed=seed, steps=steps, spans=spans)
    worker = worker or f"synth_{pairs[0][0]['traceEvents'][0]['pid']}"
    outdir.mkdir(parents=True, exist_ok=True)
    run: dict[str, Any] = {"scenario": scenario, "era": era, "seed": seed, "steps": effective_steps(scenario, steps),
                           "worker": worker, "spans": []}
    for trace, truth in pairs:
        name = f"{worker}.{_file_ns(trace)}.pt.trace.json" + (".gz" if use_gzip else "")
        if "traceName" in trace:
            trace["traceName"] = f"/tmp/tmp{trace['trace_id'][:8].lower()}.json" if use_gzip else str(outdir / name)
        data = dumps_trace(trace).encode()
        if use_gzip:
            with gzip.GzipFile(outdir / name, "wb", mtime=0) as handle:
                handle.write(data)
        else:
            (outdir / name).write_bytes(data)
        run["spans"].append({"file": name, **truth})
    return run


def dumps_truth(value: Any, indent: int = 0) -> str:
    """Indented truth JSON in which every container of plain values stays on one line."""
    nested = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    if not any(isinstance(item, (dict, list)) for item in nested):
        return json.dumps(value, separators=(", ", ": ")) + ("\n" if indent == 0 else "")
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {dumps_truth(v, indent + 1)}" for k, v in value.items()]
        opening, closing = "{", "}"
    else:
        items = [pad + dumps_truth(v, indent + 1) for v in value]
        opening, closing = "[", "]"
    text = opening + "\n" + ",\n".join(items) + "\n" + " " * indent + closing
    return text + ("\n" if indent == 0 else "")
