"""``polls``: the host spins on ``cudaEventQuery``/``cudaStreamQuery`` while the GPU runs dry.

After the forward pass, :data:`POLL_OP` (inside ``## wait_ready ##``) polls 60 times, one 1 µs query
every 25 µs, for 1.5 ms; the GPU finishes about 0.45 ms into it. Then ``aten::argmax`` runs 0.3 ms on
the CPU before the backward pass is launched. Polls never block, so the gap is ``host`` (never
``sync``), and its midpoint falls inside the polling op: culprit :data:`POLL_OP`, annotation
``## wait_ready ##``. ``loss.item()`` ends every step (a ``sync`` gap between steps). Verdict
``host-bound``, runner-up ``sync-bound``.
"""
from __future__ import annotations

from .. import ops
from ..core import Timeline
from ..ops import Loop

POLL_OP = "aten::_poll_until_ready"


def _poll(tl: Timeline, count: int = 60) -> None:
    """``count`` non-blocking queries, alternating event and stream, 25 µs apart."""
    with tl.op("## wait_ready ##", annotation=True), tl.op(POLL_OP):
        for n in range(count):
            tl.call("cudaEventQuery" if n % 2 else "cudaStreamQuery", 1.0)
            tl.work(24.0)


def build(tl: Timeline, loop: Loop) -> None:
    """Forward, 1.5 ms of polls, 0.3 ms of CPU work, then backward: one host gap per step."""
    def body(i: int) -> None:
        batch = ops.dataloader(tl, 30.0, i == loop.peak)
        inp = ops.h2d(tl, batch, 60.0)
        acts = ops.forward(tl, 200.0, spike=i == loop.peak)
        _poll(tl)
        ops.pure_cpu(tl, "aten::argmax", 300.0)
        ops.backward(tl, 200.0, acts)
        ops.optimizer(tl, 150.0)
        ops.loss_item(tl)
        tl.free(inp)
        tl.work(120.0)

    ops.run_steps(tl, loop, body)
    loop.expected.update(host=loop.steps, sync=loop.steps - 1)
