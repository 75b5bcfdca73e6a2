"""What every part of the truth shares: interval arithmetic, name rules, what each CPU thread ran.

Everything works on the simulation model (:mod:`..core`), never on rendered JSON. The name rules
restate the trace format's conventions: the DataLoader wait and collective names, and how a 2021
``Operator`` file tells a user annotation from an operator (by its name; 2024 files say so in the
category).
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Optional

from ..core import CpuSpan, Timeline

NO_OP = "(no op)"
MARGIN_NS = 1000  # a planted boundary closer than this to a deciding instant is ambiguous
LOADER_PREFIX = "enumerate(DataLoader)#"
COLLECTIVE_PREFIXES = ("nccl:", "gloo:", "c10d::", "record_param_comms")
GRAPH_CALLS = frozenset({"cudaGraphLaunch"})
POLL_CALLS = frozenset({"cudaEventQuery", "cudaStreamQuery"})
LAUNCH_CALLS = frozenset({"cudaLaunchKernel", "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync"})
_STEP = re.compile(r"ProfilerStep#\d+")
_AUTOGRAD_NODE = re.compile(r"Backward\d*$")

Merged = list[tuple[int, int]]


class AmbiguousDesign(RuntimeError):
    """A planted quantity lies too close to a threshold to be a trustworthy truth."""


def require(condition: bool, what: str) -> None:
    """Raises :class:`AmbiguousDesign` unless ``condition`` holds."""
    if not condition:
        raise AmbiguousDesign(what)


def away(value: float, threshold: float, rel: float, what: str) -> None:
    """Requires ``value`` to lie outside ``threshold * (1 ± rel)``."""
    require(not threshold * (1 - rel) < value < threshold * (1 + rel), f"{what}: {value:.4g} is near {threshold:.4g}")


def union(intervals: Iterable[tuple[int, int]]) -> Merged:
    """Merges intervals into sorted, disjoint ones (touching ones merge)."""
    merged: Merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def covered(merged: Sequence[tuple[int, int]], start: int, end: int) -> int:
    """Length of ``[start, end)`` covered by disjoint ``merged`` intervals."""
    return sum(max(0, min(e, end) - max(s, start)) for s, e in merged)


def total(merged: Sequence[tuple[int, int]]) -> int:
    """Length of a union."""
    return sum(e - s for s, e in merged)


def subtract(a: Merged, b: Merged) -> Merged:
    """The union ``a`` minus the union ``b`` (both disjoint and sorted)."""
    out: Merged = []
    for start, end in a:
        at = start
        for s, e in b:
            if e <= at or s >= end:
                continue
            if s > at:
                out.append((at, s))
            at = max(at, e)
        if at < end:
            out.append((at, end))
    return out


def is_step(name: str) -> bool:
    """``ProfilerStep#N``."""
    return _STEP.fullmatch(name) is not None


def is_loader(name: str) -> bool:
    """A DataLoader wait (``enumerate(DataLoader)#...__next__``)."""
    return name.startswith(LOADER_PREFIX) and "__next__" in name


def is_collective(name: str) -> bool:
    """A CPU-side collective op or annotation."""
    return name.startswith(COLLECTIVE_PREFIXES)


def is_comm_kernel(name: str) -> bool:
    """An NCCL/RCCL kernel."""
    return "nccl" in name.lower() or "rccl" in name.lower()


def is_annotation(span: CpuSpan, era: str) -> bool:
    """A user annotation rather than an operator, as the era's file shows it.

    2024 files write annotations as ``user_annotation``; 2021 files write both as ``Operator``, where an
    annotation is a name without ``::`` that is no autograd node (``...Backward0``) and no collective.
    """
    if era == "2024":
        return span.annotation
    name = span.name
    return "::" not in name and _AUTOGRAD_NODE.search(name) is None and not is_collective(name)


class Threads:
    """What each CPU thread ran: its operators and its annotations (``ProfilerStep#N`` in neither)."""

    def __init__(self, tl: Timeline, era: str) -> None:
        self.ops: dict[int, list[CpuSpan]] = defaultdict(list)
        self.annotations: dict[int, list[CpuSpan]] = defaultdict(list)
        for span in tl.cpu:
            if not is_step(span.name):
                (self.annotations if is_annotation(span, era) else self.ops)[span.tid].append(span)

    @staticmethod
    def innermost(spans: Sequence[CpuSpan], at: int) -> Optional[CpuSpan]:
        """The innermost span running at ``at`` (latest start; the shorter of two with one start)."""
        running = [s for s in spans if s.start <= at < s.end]
        return max(running, key=lambda s: (s.start, s.start - s.end), default=None)

    def culprit(self, tid: int, at: int) -> tuple[str, bool, Optional[str]]:
        """``(op, after, annotation)``: the innermost op running on ``tid`` at ``at``, else the op that
        ended last at or before it (``after``), else :data:`NO_OP`; and the innermost annotation then."""
        op = self.innermost(self.ops[tid], at)
        after = False
        if op is None:
            ended = [s for s in self.ops[tid] if s.end <= at]
            op = max(ended, key=lambda s: (s.end, s.start, s.start - s.end), default=None)
            after = op is not None
        annotation = self.innermost(self.annotations[tid], at)
        return (op.name if op else NO_OP), after, (annotation.name if annotation else None)

    def op_at(self, tid: int, at: int) -> tuple[Optional[str], Optional[str]]:
        """``(op, annotation)`` running on ``tid`` at ``at`` (innermost of each, None when none runs)."""
        op, annotation = self.innermost(self.ops[tid], at), self.innermost(self.annotations[tid], at)
        return (op.name if op else None), (annotation.name if annotation else None)

    def op_count(self) -> int:
        """Operators in the trace (every thread)."""
        return sum(len(spans) for spans in self.ops.values())
