"""Synthetic PyTorch-profiler (Kineto) traces with planted, known truth.

Each scenario simulates a single-GPU training loop: a main CPU thread with
``ProfilerStep#N`` annotations, ops nested inside them, CUDA runtime calls nested
inside the ops, and GPU activities that a per-stream queue model places on the GPU.
The generator renders the simulation in the exact Kineto JSON format of one of two
eras and computes the truth (idle gaps and their causes, launch statistics, steps,
memory peaks, verdict) from its own model, so the numbers are known by construction.

Modules: :mod:`.core` (the timeline and queue model), :mod:`.ops` (training-loop
building blocks), :mod:`.scenarios` (one module per scenario and their registry),
:mod:`.truth` (the truth definitions), :mod:`.render` (Kineto JSON per era),
:mod:`.generate` (runs of spans), :mod:`.output` (text and files) and :mod:`.cli`;
:mod:`.multirank` writes multi-rank NCCL jobs (one trace per rank) with their own planted truth.

Library use::

    sys.path.insert(0, "<repo>/samples")
    import synth
    trace, truth = synth.make_trace("mixed", era="2024", seed=0, steps=6)

Command line::

    python samples/synth OUTDIR --scenario mixed --spans 2 --gzip --truth truth.json
"""
from __future__ import annotations

from .cli import main
from .generate import effective_steps, make_spans, make_trace
from .ops import DATALOADER
from .output import dumps_trace, dumps_truth, write_run
from .render import ERAS
from .scenarios import SCENARIO_BUILDERS, SCENARIOS
from .scenarios.xss import XSS_IMG, XSS_QUOTE
from .truth import NO_OP, AmbiguousDesign

__all__ = [
    "DATALOADER",
    "ERAS",
    "NO_OP",
    "SCENARIOS",
    "SCENARIO_BUILDERS",
    "XSS_IMG",
    "XSS_QUOTE",
    "AmbiguousDesign",
    "dumps_trace",
    "dumps_truth",
    "effective_steps",
    "main",
    "make_spans",
    "make_trace",
    "write_run",
]
