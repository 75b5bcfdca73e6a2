"""Record a real profile logdir with ``torch.profiler`` (CPU, or CUDA when available).

A small conv + linear model trains on a dataset whose ``__getitem__`` sleeps
``--item-delay-ms``, through a ``DataLoader`` with ``--num-workers`` workers, under
``schedule(wait=1, warmup=1, active=2, repeat=2)`` with ``profile_memory``,
``record_shapes`` and ``with_stack``. ``tensorboard_trace_handler`` writes one file per
cycle (two files for ``--steps`` >= 8).

Usage::

    python samples/record_profile.py OUTDIR [--num-workers N] [--item-delay-ms F] [--steps N] [--gzip] [--device auto|cpu|cuda]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, Dataset

BATCH_SIZE = 8
IMAGE = (3, 16, 16)
CLASSES = 10


class SlowDataset(Dataset):
    """Random images whose loading costs ``delay_s`` seconds per item."""

    def __init__(self, length: int, delay_s: float) -> None:
        """Creates ``length`` fixed random items."""
        generator = torch.Generator().manual_seed(0)
        self.images = torch.randn((length, *IMAGE), generator=generator)
        self.labels = torch.randint(0, CLASSES, (length,), generator=generator)
        self.delay_s = delay_s

    def __len__(self) -> int:
        """Number of items."""
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Sleeps (simulated decoding), then returns one image and its label."""
        time.sleep(self.delay_s)
        return self.images[index], self.labels[index]


def build_model() -> nn.Module:
    """Conv -> ReLU -> Linear classifier."""
    return nn.Sequential(
        nn.Conv2d(IMAGE[0], 8, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(8 * IMAGE[1] * IMAGE[2], CLASSES),
    )


def pick_device(choice: str) -> torch.device:
    """Resolves ``auto`` to CUDA when available, else CPU."""
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda but CUDA is not available")
    return torch.device(choice)


def record(outdir: Path, *, num_workers: int = 0, item_delay_ms: float = 2.0, steps: int = 10,
           use_gzip: bool = False, device: str = "auto") -> list[Path]:
    """Trains ``steps`` steps under the profiler and returns the trace files written.

    Args:
        outdir: Log directory for ``tensorboard_trace_handler``.
        num_workers: DataLoader worker processes (0 = load in the main process).
        item_delay_ms: Sleep per dataset item.
        steps: Training steps (``prof.step()`` calls); 8 or more give two files.
        use_gzip: Write ``.pt.trace.json.gz``.
        device: ``auto``, ``cpu`` or ``cuda``.
    """
    torch.manual_seed(0)
    target = pick_device(device)
    model = build_model().to(target)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowDataset(steps * BATCH_SIZE, item_delay_ms / 1000), batch_size=BATCH_SIZE,
                        num_workers=num_workers)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if target.type == "cuda" else [])
    before = set(outdir.glob("*.pt.trace.json*")) if outdir.exists() else set()
    with profile(
        activities=activities,
        schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
        on_trace_ready=tensorboard_trace_handler(str(outdir), use_gzip=use_gzip),
        profile_memory=True,
        record_shapes=True,
        with_stack=True,
    ) as prof:
        for images, labels in loader:
            loss = nn.functional.cross_entropy(model(images.to(target)), labels.to(target))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prof.step()
    return sorted(set(outdir.glob("*.pt.trace.json*")) - before)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: prints the files written."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--item-delay-ms", type=float, default=2.0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    args = parser.parse_args(argv)
    files = record(args.outdir, num_workers=args.num_workers, item_delay_ms=args.item_delay_ms,
                   steps=args.steps, use_gzip=args.gzip, device=args.device)
    for path in files:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
