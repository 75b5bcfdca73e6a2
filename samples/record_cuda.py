"""Record real CUDA profile logdirs, one per scenario, each with a known cause of GPU idle time.

Every scenario trains or serves a small model under ``torch.profiler`` with
``schedule(wait=1, warmup=1, active=3)``, ``record_shapes``, ``profile_memory``, ``with_stack`` and
``with_modules``, and writes one gzipped trace with ``tensorboard_trace_handler`` into ``OUTDIR/<scenario>``:

- ``fp32_convnet``: a ResNet-like CNN in fp32, batch 64 at 96x96: the GPU is busy (compute-bound), and its
  convolutions are Tensor-Core eligible but run without autocast (the AMP insight should fire);
- ``amp_bf16``: the same model under ``torch.autocast(dtype=torch.bfloat16)``: Tensor-Core kernels;
- ``launch_bound``: a 24-layer MLP of width 64 at batch 4, eager: kernels of a few microseconds behind longer
  launch calls;
- ``cuda_graph``: the same MLP captured once in a CUDA graph and replayed each step (one launch per step);
- ``compiled``: the same MLP under ``torch.compile`` (Inductor/Triton kernels), compiled before the profile;
- ``sync_item``: the convnet at batch 8 whose loop calls ``loss.item()`` and then spends 3 ms on the host
  (logging) every step: the GPU waits on the host after each sync;
- ``dataloader``: the convnet at batch 8 fed by a DataLoader whose items take 2 ms each, ``num_workers=0``;
- ``serve_sync_eager`` / ``serve_sync_graph``: the ``launch_bound`` MLP serving eight requests per step and
  waiting for their answers at the step's end (one sync per step), eager, and with the step's eight requests
  captured whole in one CUDA graph: a measured before/after pair for the ``graph`` edit;
- ``wide_sync_eager`` / ``wide_sync_graph``: the same pair for an MLP of another shape (8 layers of width 1024,
  batch 64);
- ``compiled_sync_default`` / ``compiled_sync_reduce_overhead``: the ``serve_sync`` step under ``torch.compile``,
  its default mode, then ``mode="reduce-overhead"`` (Inductor's kernels replayed from CUDA graphs);
- ``prep_inline`` / ``prep_worker``: the batch-8 convnet whose step first prepares its batch on the host (a
  Python transform of 0.5 ms per image), then trains on it; in ``prep_worker`` the same transform runs in one
  DataLoader worker, ahead of the step: a measured before/after pair for the ``prep=overlap`` edit;
- ``copies``: each step copies 64 MiB host-to-device from pinned memory, 64 MiB device-to-device and 64 MiB
  device-to-host into pinned memory on a side stream, while a 4096x4096 fp32 matrix product runs on the default
  stream: every copy moves exactly ``COPY_BYTES``, for memcpy bandwidth and copy/compute overlap.

Usage::

    python samples/record_cuda.py OUTDIR [--scenario NAME ...] [--steps N] [--active N]

A scenario that fails (no Triton for ``compiled``, say) is reported and skipped; the others still record.
The manifest ``OUTDIR/manifest.json`` names the device, the versions and each scenario's outcome.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, Dataset


def conv_block(c_in: int, c_out: int, stride: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(c_out),
                         nn.ReLU(inplace=True))


class Residual(nn.Module):
    """Two 3x3 convolutions with a skip connection."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(conv_block(channels, channels, 1), conv_block(channels, channels, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


class ConvNet(nn.Module):
    """A small ResNet-like classifier."""

    def __init__(self, classes: int = 100) -> None:
        super().__init__()
        self.stem = conv_block(3, 64, 1)
        self.stage1 = nn.Sequential(Residual(64), conv_block(64, 128, 2))
        self.stage2 = nn.Sequential(Residual(128), conv_block(128, 256, 2))
        self.stage3 = nn.Sequential(Residual(256), Residual(256))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stage3(self.stage2(self.stage1(self.stem(x)))))


def mlp(width: int = 64, depth: int = 24) -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers)


class SlowImages(Dataset):
    """Random images whose loading costs ``delay_s`` per item."""

    def __init__(self, length: int, size: int, delay_s: float) -> None:
        generator = torch.Generator().manual_seed(0)
        self.images = torch.randn((length, 3, size, size), generator=generator)
        self.labels = torch.randint(0, 100, (length,), generator=generator)
        self.delay_s = delay_s

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        time.sleep(self.delay_s)
        return self.images[index], self.labels[index]


ACTIVE_STEPS = [3]  # the profiler schedule's active steps, set by --active


def profiled(outdir: Path, name: str, steps: int, step: Callable[[int], None]) -> None:
    """Runs ``step(i)`` ``steps`` times under the profiler, writing ``outdir/name``."""
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=1, warmup=1, active=ACTIVE_STEPS[0], repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(outdir / name), worker_name=name, use_gzip=True),
                 record_shapes=True, profile_memory=True, with_stack=True, with_modules=True) as prof:
        for i in range(steps):
            step(i)
            prof.step()
    torch.cuda.synchronize()


def train_convnet(outdir: Path, name: str, steps: int, *, batch: int, size: int, amp: bool = False,
                  item_sync_ms: float = 0.0) -> None:
    model = ConvNet().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(batch, 3, size, size, device="cuda")
    labels = torch.randint(0, 100, (batch,), device="cuda")

    def step(_: int) -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if item_sync_ms:
            value = loss.item()  # a blocking sync
            deadline = time.perf_counter() + item_sync_ms / 1000
            text = ""
            while time.perf_counter() < deadline:  # host-side logging work
                text = f"loss={value:.4f} {text[:64]}"

    for _ in range(3):
        step(0)
    torch.cuda.synchronize()
    profiled(outdir, name, steps, step)


def dataloader(outdir: Path, name: str, steps: int) -> None:
    model = ConvNet().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowImages(steps * 8, 32, 0.002), batch_size=8, num_workers=0)
    batches = iter(loader)

    def step(_: int) -> None:
        images, labels = next(batches)
        loss = nn.functional.cross_entropy(model(images.cuda(non_blocking=True)), labels.cuda(non_blocking=True))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    profiled(outdir, name, steps, step)


COPY_BYTES = 64 << 20


def copies(outdir: Path, name: str, steps: int) -> None:
    host_in = torch.empty(COPY_BYTES // 4, dtype=torch.float32).pin_memory()
    host_out = torch.empty_like(host_in).pin_memory()
    device_a = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda")
    device_b = torch.empty_like(device_a)
    left = torch.randn(4096, 4096, device="cuda")
    side = torch.cuda.Stream()

    def step(_: int) -> None:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            device_a.copy_(host_in, non_blocking=True)
            device_b.copy_(device_a)
            host_out.copy_(device_b, non_blocking=True)
        product = left @ left
        torch.cuda.current_stream().wait_stream(side)
        product.sum().item()

    for _ in range(2):
        step(0)
    profiled(outdir, name, steps, step)


def captured(fn: Callable[[torch.Tensor], torch.Tensor], static: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """`fn` warmed up off the default stream (as a capture wants), then captured once in a CUDA graph reading `static`:
    a function that copies its input into `static` and replays the graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            fn(static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        out = fn(static)

    def replay(x: torch.Tensor) -> torch.Tensor:
        static.copy_(x)
        graph.replay()
        return out
    return replay


def serve_mlp(outdir: Path, name: str, steps: int, *, mode: str) -> None:
    model = mlp().cuda().eval()
    static = torch.randn(4, 64, device="cuda")
    if mode == "compiled":
        run = torch.compile(model)
        with torch.no_grad():
            for _ in range(3):
                run(static)
    elif mode == "graph":
        run = captured(model, static)
    else:
        run = model
    inputs = torch.randn(steps, 4, 64, device="cuda")
    torch.cuda.synchronize()

    def step(i: int) -> None:
        with torch.no_grad():
            for _ in range(8):  # eight requests per step
                run(inputs[i])

    profiled(outdir, name, steps, step)


def serve_sync(outdir: Path, name: str, steps: int, *, width: int, depth: int, batch: int, graphed: bool,
               compiled: str = "") -> None:
    """Eight requests per step through an MLP, answered at the step's end; ``graphed`` captures the step whole;
    ``compiled`` names the ``torch.compile`` mode the step's eight requests run under instead."""
    model = mlp(width, depth).cuda().eval()
    inputs = torch.randn(steps, 8, batch, width, device="cuda")
    static = torch.zeros(8, batch, width, device="cuda")

    def requests(x: torch.Tensor) -> torch.Tensor:
        return torch.stack([model(x[r]) for r in range(8)])

    if compiled:  # compiled, then warmed up until its graphs (if any) are recorded and replay
        requests = torch.compile(requests, mode=compiled)
        with torch.no_grad():
            for r in range(5):
                requests(inputs[r % steps]).sum().item()
    if graphed:
        answer = captured(requests, static)
    else:
        answer = requests
        if not compiled:  # eager, warmed up as the others were
            with torch.no_grad():
                for _ in range(3):
                    requests(static)
    torch.cuda.synchronize()

    def step(i: int) -> None:
        with torch.no_grad():
            answer(inputs[i]).sum().item()  # the answers go back to the host: one sync per step

    profiled(outdir, name, steps, step)


PREP_ITEM_S = 0.0005


def prepare_image(image: torch.Tensor, index: int) -> torch.Tensor:
    """A host-side transform costing ``PREP_ITEM_S`` of Python work per image (the same in a worker)."""
    deadline = time.perf_counter() + PREP_ITEM_S
    text = ""
    while time.perf_counter() < deadline:
        text = f"{index}:{text[:32]}"
    return image.flip(-1) if index % 2 else image


class PreparedImages(Dataset):
    """Images prepared by ``prepare_image`` when loaded."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor) -> None:
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return prepare_image(self.images[index], index), self.labels[index]


def prep(outdir: Path, name: str, steps: int, *, in_worker: bool) -> None:
    """The batch-8 convnet whose batch is prepared on the host inside the step, or ahead in one worker."""
    model = ConvNet().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(0)
    count = (steps + 3) * 8
    images = torch.randn((count, 3, 32, 32), generator=generator)
    labels = torch.randint(0, 100, (count,), generator=generator)
    if in_worker:
        batches = iter(DataLoader(PreparedImages(images, labels), batch_size=8, num_workers=1, prefetch_factor=4,
                                  pin_memory=True))
    else:
        batches = ((torch.stack([prepare_image(images[k], k) for k in range(b * 8, b * 8 + 8)]),
                    labels[b * 8:b * 8 + 8]) for b in range(count // 8))

    def step(_: int) -> None:
        batch, target = next(batches)
        loss = nn.functional.cross_entropy(model(batch.cuda(non_blocking=True)), target.cuda(non_blocking=True))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    for _ in range(3):
        step(0)
    torch.cuda.synchronize()
    profiled(outdir, name, steps, step)


SCENARIOS: dict[str, Callable[[Path, str, int], None]] = {
    "fp32_convnet": lambda out, name, steps: train_convnet(out, name, steps, batch=64, size=96),
    "amp_bf16": lambda out, name, steps: train_convnet(out, name, steps, batch=64, size=96, amp=True),
    "launch_bound": lambda out, name, steps: serve_mlp(out, name, steps, mode="eager"),
    "cuda_graph": lambda out, name, steps: serve_mlp(out, name, steps, mode="graph"),
    "compiled": lambda out, name, steps: serve_mlp(out, name, steps, mode="compiled"),
    "sync_item": lambda out, name, steps: train_convnet(out, name, steps, batch=8, size=32, item_sync_ms=3.0),
    "dataloader": dataloader,
    "copies": copies,
    "serve_sync_eager": lambda out, name, steps: serve_sync(out, name, steps, width=64, depth=24, batch=4,
                                                            graphed=False),
    "serve_sync_graph": lambda out, name, steps: serve_sync(out, name, steps, width=64, depth=24, batch=4,
                                                            graphed=True),
    "wide_sync_eager": lambda out, name, steps: serve_sync(out, name, steps, width=1024, depth=8, batch=64,
                                                           graphed=False),
    "wide_sync_graph": lambda out, name, steps: serve_sync(out, name, steps, width=1024, depth=8, batch=64,
                                                           graphed=True),
    "compiled_sync_default": lambda out, name, steps: serve_sync(out, name, steps, width=64, depth=24, batch=4,
                                                                 graphed=False, compiled="default"),
    "compiled_sync_reduce_overhead": lambda out, name, steps: serve_sync(out, name, steps, width=64, depth=24,
                                                                         batch=4, graphed=False,
                                                                         compiled="reduce-overhead"),
    "prep_inline": lambda out, name, steps: prep(out, name, steps, in_worker=False),
    "prep_worker": lambda out, name, steps: prep(out, name, steps, in_worker=True),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--active", type=int, default=3, help="the profiler schedule's active steps")
    args = parser.parse_args(argv)
    ACTIVE_STEPS[0] = max(1, min(args.active, args.steps - 2))
    if not torch.cuda.is_available():
        print("error: CUDA is not available", file=sys.stderr)
        return 2
    args.outdir.mkdir(parents=True, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    manifest = {"device": props.name, "capability": f"{props.major}.{props.minor}", "torch": torch.__version__,
                "cuda": torch.version.cuda, "steps": args.steps,
                "active": ACTIVE_STEPS[0], "scenarios": {}}
    for name in args.scenario or list(SCENARIOS):
        start = time.perf_counter()
        try:
            torch.manual_seed(0)
            SCENARIOS[name](args.outdir, name, args.steps)
            files = sorted(str(p.relative_to(args.outdir)) for p in (args.outdir / name).glob("*.pt.trace.json*"))
            manifest["scenarios"][name] = {"ok": True, "files": files, "seconds": round(time.perf_counter() - start, 1)}
        except Exception as exc:  # one scenario's failure must not lose the others
            manifest["scenarios"][name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000],
                                           "traceback": traceback.format_exc()[-4000:]}
        print(name, json.dumps(manifest["scenarios"][name])[:300], flush=True)
    (args.outdir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
