"""Record a real multi-rank DDP job with ``torch.profiler``: gloo on CPU, spawned ranks on 127.0.0.1.

Each rank trains a small MLP wrapped in ``DistributedDataParallel`` (gradients all-reduced by gloo) on
its shard of a synthetic dataset (``DistributedSampler``), one thread per rank, and profiles it under
``schedule(wait=1, warmup=1, active=--active)``; ``tensorboard_trace_handler`` writes one gzipped trace
per rank into OUTDIR (worker names ``rank0`` ...). ``--slow-rank R`` makes rank R do ``--slow-ms`` of
extra real compute (matrix products, under ``record_function("slow_rank_work")``) before each backward,
so the other ranks wait for it in the all-reduce: a straggler.

Usage::

    python samples/record_distributed.py OUTDIR [--ranks 4] [--slow-rank R] [--slow-ms 40] [--active 5]
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from collections.abc import Sequence

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

BATCH_SIZE = 32
FEATURES = 256
CLASSES = 10


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slow_work(ms: float) -> None:
    """Real compute for `ms` milliseconds (the straggler's extra work)."""
    a = torch.randn(256, 256) / 16
    deadline = time.perf_counter() + ms / 1000
    with record_function("slow_rank_work"):
        while time.perf_counter() < deadline:
            a = torch.tanh(a @ a)


def run_rank(rank: int, args: argparse.Namespace, port: int) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.ranks)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(FEATURES, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                                  nn.Linear(512, CLASSES)))
    generator = torch.Generator().manual_seed(1)
    steps = 2 + args.active
    data = TensorDataset(torch.randn(BATCH_SIZE * steps * args.ranks, FEATURES, generator=generator),
                         torch.randint(0, CLASSES, (BATCH_SIZE * steps * args.ranks,), generator=generator))
    loader = DataLoader(data, batch_size=BATCH_SIZE, sampler=DistributedSampler(data, args.ranks, rank, shuffle=False))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    handler = tensorboard_trace_handler(args.out, worker_name=f"rank{rank}", use_gzip=True)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=args.active, repeat=1),
                 on_trace_ready=handler, record_shapes=True) as prof:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            if rank == args.slow_rank:
                slow_work(args.slow_ms)
            loss.backward()
            optimizer.step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the logdir to write (one trace per rank)")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--slow-rank", type=int, default=None, help="this rank does extra compute each step")
    parser.add_argument("--slow-ms", type=float, default=40.0)
    parser.add_argument("--active", type=int, default=5, help="profiled steps")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    mp.spawn(run_rank, args=(args, free_port()), nprocs=args.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
