"""The what-if edits as the CLI (`kinetoscope whatif --edit`) and the `whatif` route spell them, read into `Edit`s:
what each one changes is analysis/whatif/replay.py's (its docstring lists them)."""
from __future__ import annotations

import math
import re

import msgspec

from ..roofline.work import CATEGORIES, COMMUNICATION

MAX_EDITS = 16  # edits one request may apply
MAX_NAME = 1000  # characters of a NAME or PATTERN
MAX_FACTOR = 100.0  # the largest scale factor an edit may give
NOT_YET = ("comm=",)  # spellings of edits this version does not replay (comm= other than hidden)
OP_SEP = "|"  # kernel:in:OP1|OP2*F names several ops
STRAGGLER = "straggler=median"  # a multi-rank edit: analysis/distributed/straggler.py, on a run's ranks view

NO_STEPS = "the trace has no steps (ProfilerStep#N or serving iterations) to re-time"
WARMUP = "warmup=median"
GRAPH = "graph"  # each step's device work captured once and replayed (analysis/whatif/capture.py)
PREP = "prep=overlap"  # the host work before each step's first launch runs ahead, beside the step before
SPELLINGS = ("dataloader=0", "dataloader-workers=K", "sync:NAME=0", "sync:NAME*F", "host:NAME*F", "kernel:PATTERN*F",
             "kernel:in:OP*F", "fuse:NAME", "comm=hidden", "roofline:CATEGORY>=P%", "precision:bf16",
             "precision:fp16", GRAPH, PREP, WARMUP, STRAGGLER)
ROOF_CATEGORIES = tuple(c for c in CATEGORIES if c != COMMUNICATION)  # what `roofline:` re-times


class EditError(ValueError):
    """An edit that cannot be read or applied; the message names it."""


class Edit(msgspec.Struct, frozen=True):
    """One change to replay: `kind` is dataloader, dataloader-workers, sync, host, kernel, kernel-in, fuse, comm,
    roofline, precision, warmup or straggler."""

    kind: str
    target: str = ""  # NAME, PATTERN or (roofline) CATEGORY
    factor: float = 0.0  # new length as a share of the recorded one (0 removes it); for dataloader-workers, K;
    # for roofline, P as a share (0.6 for 60%)
    text: str = ""


def parse_edit(text: str) -> Edit:
    """Reads one edit in the CLI's spelling (module docstring).

    Raises:
        EditError: an unknown spelling, an empty name, or a factor that is not a number in [0, MAX_FACTOR].
    """
    t = text.strip()
    if t == "dataloader=0":
        return Edit("dataloader", "", 0.0, t)
    m = re.fullmatch(r"dataloader-workers=(\d{1,4})", t)
    if m:
        workers = int(m.group(1))
        if workers < 1:
            raise EditError(f"{t!r}: K must be at least 1")
        return Edit("dataloader-workers", "", float(workers), t)
    for kind in ("sync", "host", "kernel"):
        if t.startswith(kind + ":"):
            body = t[len(kind) + 1:]
            if body.endswith("=0"):
                name, factor = body[:-2], 0.0
            else:
                name, star, number = body.rpartition("*")
                if not star:
                    raise EditError(f"{t!r}: write {kind}:NAME*F or {kind}:NAME=0")
                try:
                    factor = float(number)
                except ValueError:
                    raise EditError(f"{t!r}: {number!r} is not a number") from None
            if not name or len(name) > MAX_NAME:
                raise EditError(f"{t!r}: the name must have 1 to {MAX_NAME} characters")
            if not (math.isfinite(factor) and 0.0 <= factor <= MAX_FACTOR):
                raise EditError(f"{t!r}: the factor must be a number from 0 to {MAX_FACTOR:g}")
            if kind == "kernel" and name.startswith("in:"):
                if not name[3:]:
                    raise EditError(f"{t!r}: write kernel:in:OP*F")
                return Edit("kernel-in", name[3:], factor, t)
            return Edit(kind, name, factor, t)
    if t == STRAGGLER:
        return Edit("straggler", "", 0.0, t)
    if t == WARMUP:
        return Edit("warmup", "", 0.0, t)
    if t == GRAPH:
        return Edit("graph", "", 0.0, t)
    if t == PREP:
        return Edit("prep", "", 0.0, t)
    if t == "comm=hidden":
        return Edit("comm", "", 0.0, t)
    if t.startswith("fuse:"):
        name = t[len("fuse:"):]
        if not name or len(name) > MAX_NAME:
            raise EditError(f"{t[:200]!r}: the name must have 1 to {MAX_NAME} characters")
        return Edit("fuse", name, 0.0, t)
    if t.startswith("roofline:"):
        return _roofline(t)
    if t in ("precision:bf16", "precision:fp16"):
        return Edit("precision", t.split(":", 1)[1], 0.0, t)
    if t.startswith(NOT_YET):
        raise EditError(f"{t!r}: this edit is not replayed; the replay knows {', '.join(SPELLINGS)}")
    raise EditError(f"{t[:200]!r} is not an edit; write one of {', '.join(SPELLINGS)}")


def _roofline(t: str) -> Edit:
    """`roofline:CATEGORY>=P%`: the kernels of CATEGORY's op calls running below P% of their roof run at P%."""
    m = re.fullmatch(r"roofline:([a-z]+)>=(\d{1,3}(?:\.\d{1,3})?)%", t)
    if not m:
        raise EditError(f"{t[:200]!r}: write roofline:CATEGORY>=P% (CATEGORY one of {', '.join(ROOF_CATEGORIES)})")
    category, share = m.group(1), float(m.group(2))
    if category not in ROOF_CATEGORIES:
        raise EditError(f"{t!r}: {category!r} is not a category; one of {', '.join(ROOF_CATEGORIES)}")
    if not 0 < share <= 100:
        raise EditError(f"{t!r}: P must be above 0 and at most 100")
    return Edit("roofline", category, share / 100, t)
