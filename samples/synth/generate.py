"""Generation of a synthetic run, span by span: the library entry points.

A run is a sequence of profiler cycles (spans) like ``schedule(repeat=N)`` records them:
each span gets its own random generator derived from the arguments, while time, ids and
the allocator state carry over from one span to the next, skipping the unrecorded wait and
warmup steps in between.
"""
from __future__ import annotations

import random
from typing import Any

from .core import CPU_KEY, CUDA_KEY, MIB, RESERVE_BLOCK, Carry, Timeline
from .ops import Loop
from .render import BASE_NS_2024, ERAS, START_NS_2021, render_trace
from .scenarios import SCENARIO_BUILDERS, SCENARIOS
from .truth import span_truth


def _check_args(scenario: str, era: str, steps: int) -> None:
    """Validates the public arguments."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose from {', '.join(SCENARIOS)}")
    if era not in ERAS:
        raise ValueError(f"unknown era {era!r}; choose from {', '.join(ERAS)}")
    if steps < 2:
        raise ValueError("steps must be at least 2")


def effective_steps(scenario: str, steps: int) -> int:
    """Recorded steps per span: ``cpu_only`` always records 2."""
    return 2 if scenario == "cpu_only" else steps


def _first_carry(era: str, seed: int) -> Carry:
    """Start time, ids and allocator state of a run's first span."""
    rng = random.Random(f"carry|{era}|{seed}")
    if era == "2024":
        start = BASE_NS_2024 + 3600 * 10**9 + rng.randrange(10**12)
    else:
        start = START_NS_2021 + rng.randrange(10**9) * 1000
    cuda = 48 * MIB + 512 * rng.randrange(4096)
    memory = {CUDA_KEY: [cuda, -(-cuda // RESERVE_BLOCK) * RESERVE_BLOCK + 20 * MIB], CPU_KEY: [3 * MIB, 0]}
    return Carry(start, rng.randrange(1, 50), 100_000 + rng.randrange(50_000), memory)


def _next_carry(tl: Timeline, steps: int, end: int) -> Carry:
    """Skips the two unrecorded (wait + warmup) steps of a ``schedule(repeat>1)`` cycle."""
    skipped = 2 * (end - tl.begin) // steps + 5_000_000
    ext = tl.ext + 2 * (tl.ext - tl.first_ext) // steps
    corr = tl.corr + 2 * (tl.corr - tl.first_corr) // steps
    return Carry(end + skipped // tl.quantum * tl.quantum, ext, corr, tl.memory)


def make_spans(
    scenario: str, *, era: str = "2024", seed: int = 0, steps: int = 6, spans: int = 1
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Generates ``spans`` consecutive profiler cycles of one synthetic run.

    Args:
        scenario: One of :data:`SCENARIOS`.
        era: ``"2024"`` (torch 2.4+ format) or ``"2021"`` (PyTorch 1.9 format).
        seed: Seed of all jitter; the same arguments always give the same traces.
        steps: Recorded steps per span (``cpu_only`` always records 2).
        spans: Number of cycles; step numbers and ids continue like ``schedule(repeat=N)``.

    Returns:
        One ``(trace_object, truth)`` pair per span.

    Raises:
        ValueError: On an unknown scenario or era, or too few steps.
        AmbiguousDesign: If jitter put a planted quantity too close to a threshold.
    """
    _check_args(scenario, era, steps)
    steps = effective_steps(scenario, steps)
    carry = _first_carry(era, seed)
    pid = 10_000 + random.Random(f"pid|{seed}").randrange(50_000)
    result = []
    for index in range(spans):
        rng = random.Random(f"{scenario}|{era}|{seed}|{index}")
        tl = Timeline(rng, 1000 if era == "2021" else 1, pid, carry)
        loop = Loop(steps, 2 + index * (steps + 2), steps // 2)
        tl.work(150.0)
        SCENARIO_BUILDERS[scenario](tl, loop)
        end = max([tl.t] + [g.end for g in tl.gpu]) + tl.ns(80.0)
        result.append((render_trace(tl, era, tl.begin, end), span_truth(tl, scenario, era, tl.begin, end, loop)))
        carry = _next_carry(tl, steps, end)
    return result


def make_trace(
    scenario: str, *, era: str = "2024", seed: int = 0, steps: int = 6
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Generates one synthetic span.

    Args:
        scenario: One of :data:`SCENARIOS`.
        era: ``"2024"`` or ``"2021"``.
        seed: Seed of all jitter.
        steps: Recorded steps (``cpu_only`` always records 2; ``mixed`` needs at least 6).

    Returns:
        ``(trace_object, truth)``; the truth times are absolute epoch nanoseconds.
    """
    return make_spans(scenario, era=era, seed=seed, steps=steps, spans=1)[0]
