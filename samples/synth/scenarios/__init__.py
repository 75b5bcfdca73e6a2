"""The scenario registry: one module per scenario, each with a ``build(tl, loop)``.

A builder fills the span of ``tl`` with ``loop.steps`` profiler steps and adds the gap causes
it planted to ``loop.expected``; the truth computation checks that they came out exactly so.
To add a scenario, add a module here with a ``build`` function and its name to
:data:`SCENARIOS`.
"""
from __future__ import annotations

from importlib import import_module
from typing import Callable

from ..core import Timeline
from ..ops import Loop

Builder = Callable[[Timeline, Loop], None]

SCENARIOS = (
    "dataloader",
    "launch",
    "sync",
    "host",
    "compute",
    "mixed",
    "cpu_only",
    "xss",
    "graph_replay",
    "polls",
    "repeated_steps",
    "cpu_dataloader",
    "nccl_exposed",
)

SCENARIO_BUILDERS: dict[str, Builder] = {name: import_module(f"{__name__}.{name}").build for name in SCENARIOS}
