"""Before/after pairs with planted truth, for the what-if replay (kinetoscope whatif): each pair is the same
synthetic run recorded twice, once with a cause of idle time and once with it fixed, and the edit that stands
for the fix. The replay of the "before" trace under the edit should predict the "after" trace's steps.

- ``sync_removed``: the ``sync`` scenario (``loss.item()`` / ``cuda.synchronize()`` mid-step, then 1.2 ms of
  logging) and the same loop without the syncs (the copy of the loss stays, asynchronous);
- ``launch_fused``: 100 tiny kernels per step inside a ``## pointwise ##`` region, each behind its own 6 µs
  launch call, and the same region launching one kernel as long as the 100 (the ops' own host time stays);
- ``graph_captured``: the ``launch_fused`` "before" loop, and the same loop with the pointwise region captured in a
  CUDA graph and replayed by one ``cudaGraphLaunch`` (36.8 µs, its nodes 0.256 µs apart: the H200 ``cuda_graph``
  sample's measured costs); the batch's host-to-device copy stays eager before it;
- ``prep_moved``: 0.8 ms of host preprocessing at the start of each step, before its first launch, then the
  ``launch_fused`` "before" loop; and the same loop with the preprocessing moved to a prefetch thread;
- ``straggler_fixed`` (multi-rank, ``multirank.make_job``): 4 NCCL ranks with rank 2 arriving 20 ms late at each
  all-reduce, and the same job without the straggler.

Usage: ``make_pair(name, seed=0) -> (before_docs, after_docs, edits)``, each docs a list of trace objects (one
per rank for the multi-rank pair). The traces are generated at test time; nothing is committed.
"""
from __future__ import annotations

import random
from typing import Any, Callable

from . import ops
from .core import Timeline
from .generate import _first_carry
from .multirank import make_job
from .ops import Loop
from .render import render_trace
from .scenarios import sync

PAIRS = ("sync_removed", "launch_fused", "graph_captured", "prep_moved", "straggler_fixed")
PREP_US = 800.0  # the prep_moved pair's host preprocessing per step
GRAPH_CALL_US, NODE_GAP_US = 36.766, 0.256  # the H200 cuda_graph sample's cudaGraphLaunch call and node gap
TINY_OPS = 100


def _launch_loop(tl: Timeline, loop: Loop, fused: bool) -> None:
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 25.0, False)
        inp = ops.h2d(tl, batch, 8.0)
        with tl.op("## pointwise ##", annotation=True):
            if fused:
                for index in range(TINY_OPS - 1):  # each op's own host time stays; only its launch call goes
                    with tl.op(ops.TINY_OPS[index % len(ops.TINY_OPS)], pre=1.0, post=1.0):
                        pass
                with tl.op(ops.TINY_OPS[(TINY_OPS - 1) % len(ops.TINY_OPS)], pre=1.0, post=1.0):
                    tl.kernel(ops.K_ELEMENTWISE, 2.0 * TINY_OPS, call=6.0, lat=9.0)
            else:
                ops.tiny_ops(tl, TINY_OPS)
        tl.free(inp)

    ops.run_steps(tl, loop, body)


def _prep_loop(tl: Timeline, loop: Loop, moved: bool) -> None:
    def body(i: int) -> None:
        if not moved:
            ops.pure_cpu(tl, "preprocess", PREP_US)
        batch = ops.dataloader(tl, 25.0, False)
        inp = ops.h2d(tl, batch, 8.0)
        with tl.op("## pointwise ##", annotation=True):
            ops.tiny_ops(tl, TINY_OPS)
        tl.free(inp)

    ops.run_steps(tl, loop, body)


def _graph_loop(tl: Timeline, loop: Loop) -> None:
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 25.0, False)
        inp = ops.h2d(tl, batch, 8.0)
        with tl.op("## pointwise ##", annotation=True):
            tl.graph_launch([(ops.K_ELEMENTWISE, 2.0, NODE_GAP_US)] * TINY_OPS, call=GRAPH_CALL_US, lat=9.0)
        tl.free(inp)

    ops.run_steps(tl, loop, body)


def _single(builder: Callable[[Timeline, Loop], None], seed: int, steps: int) -> dict[str, Any]:
    carry = _first_carry("2024", seed)
    tl = Timeline(random.Random(f"pair|{seed}"), 1, 10_000 + seed, carry)
    loop = Loop(steps, 2, steps // 2)
    tl.work(150.0)
    builder(tl, loop)
    end = max([tl.t] + [g.end for g in tl.gpu]) + tl.ns(80.0)
    return render_trace(tl, "2024", tl.begin, end)


def make_pair(name: str, seed: int = 0, steps: int = 6) -> tuple[list[dict], list[dict], list[str]]:
    """The pair's "before" and "after" traces and the edits that stand for the fix."""
    if name == "sync_removed":
        before = _single(lambda tl, loop: sync.build(tl, loop, synced=True), seed, steps)
        after = _single(lambda tl, loop: sync.build(tl, loop, synced=False), seed, steps)
        return [before], [after], ["sync:aten::_local_scalar_dense=0", "sync:cudaDeviceSynchronize=0"]
    if name == "launch_fused":
        before = _single(lambda tl, loop: _launch_loop(tl, loop, False), seed, steps)
        after = _single(lambda tl, loop: _launch_loop(tl, loop, True), seed, steps)
        return [before], [after], ["fuse:## pointwise ##"]
    if name == "graph_captured":
        before = _single(lambda tl, loop: _launch_loop(tl, loop, False), seed, steps)
        after = _single(_graph_loop, seed, steps)
        return [before], [after], ["graph"]
    if name == "prep_moved":
        before = _single(lambda tl, loop: _prep_loop(tl, loop, False), seed, steps)
        after = _single(lambda tl, loop: _prep_loop(tl, loop, True), seed, steps)
        return [before], [after], ["prep=overlap"]
    if name == "straggler_fixed":
        slow, _ = make_job(ranks=4, steps=steps, straggler=2, straggler_ms=20.0)
        fixed, _ = make_job(ranks=4, steps=steps, straggler=None)
        return [slow[r] for r in sorted(slow)], [fixed[r] for r in sorted(fixed)], ["straggler=median"]
    raise ValueError(f"unknown pair {name!r}; choose from {', '.join(PAIRS)}")

