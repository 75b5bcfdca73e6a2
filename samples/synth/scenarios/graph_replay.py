"""``graph_replay``: a CUDA graph replayed in every step, with dependency bubbles inside the replay.

Each step runs the forward pass with ordinary launches, then one ``cudaGraphLaunch`` that replays 40
nodes (a 30 µs GEMM and three 3-4 µs elementwise kernels, over and over), each node after the first
waiting about 6 µs on the graph's own dependencies: 39 ``graph`` gaps per step, which count as
compute. Most graph nodes run shorter than the 14 µs ``cudaGraphLaunch`` call, but the replay is one
launch unit (measured at its first node, a GEMM), so the launch regime does not hold. The backward pass
and the optimizer launch as usual and ``loss.item()`` ends the step: a ``sync`` gap between steps.
Verdict ``compute-bound`` (runner-up ``sync-bound``), never launch-overhead-bound.
"""
from __future__ import annotations

from .. import ops
from ..core import Timeline
from ..ops import K_ELEMENTWISE, K_GEMM, K_RELU, Loop

NODES = tuple((kernel, us, 6.0) for _ in range(10) for kernel, us in ((K_GEMM, 30.0), (K_ELEMENTWISE, 4.0),
                                                                      (K_RELU, 3.0), (K_ELEMENTWISE, 4.0)))


def build(tl: Timeline, loop: Loop) -> None:
    """Ordinary launches around one graph replay of 40 nodes per step."""
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 30.0, i == loop.peak)
        inp = ops.h2d(tl, batch, 60.0)
        acts = ops.forward(tl, 400.0, spike=i == loop.peak)
        with tl.op("## graph replay ##", annotation=True):
            tl.graph_launch(NODES, call=14.0)
        ops.backward(tl, 400.0, acts)
        ops.optimizer(tl, 150.0)
        ops.loss_item(tl)
        tl.free(inp)
        tl.work(120.0)

    ops.run_steps(tl, loop, body)
    loop.expected.update(graph=(len(NODES) - 1) * loop.steps, sync=loop.steps - 1)
