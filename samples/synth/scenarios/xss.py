"""``xss``: the ``compute`` scenario with HTML-hostile op and kernel names.

The first forward op and its kernel are named :data:`XSS_IMG`, and before the forward pass
an op named :data:`XSS_IMG` launches a kernel named :data:`XSS_QUOTE`, followed by a
0.4 ms pure-CPU op named :data:`XSS_QUOTE`: a ``host`` gap per step with a hostile culprit,
and the CUDA memory peak inside the hostile op.
"""
from __future__ import annotations

from .. import ops
from ..core import CUDA_KEY, MIB, Timeline
from ..ops import FORWARD, Layer, Loop
from .compute import compute_step

XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_QUOTE = '"quoted" & <b>bold</b>'
XSS_FORWARD: tuple[Layer, ...] = ((XSS_IMG, "aten::cudnn_convolution", XSS_IMG, 1.0),) + FORWARD[1:]


def _hostile_ops(tl: Timeline, peak: bool) -> None:
    """The hostile op (with the peak step's memory spike and a hostile kernel), then hostile CPU work."""
    with tl.op(XSS_IMG, pre=2.0):
        if peak:
            tl.free(tl.alloc(CUDA_KEY, 64 * MIB))
        tl.kernel(XSS_QUOTE, 80.0)
    ops.pure_cpu(tl, XSS_QUOTE, 400.0)


def build(tl: Timeline, loop: Loop) -> None:
    """Like ``compute`` with HTML-hostile op and kernel names (and a host gap they cause)."""
    ops.run_steps(tl, loop, lambda i: compute_step(tl, loop, i, layers=XSS_FORWARD, prelude=_hostile_ops))
    loop.expected.update(sync=loop.steps - 1, host=loop.steps)
