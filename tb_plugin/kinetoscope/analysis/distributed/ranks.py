"""The ranks of a distributed job: per-rank figures, collectives matched across ranks, stragglers.

Built from small per-rank digests (`rank_digest`, taken when a trace loads), never from the full models,
so a 64-rank run costs one model's memory at a time. Definitions: `../shared/docs/distributed.md`.

- The ranks of a run are its traces; a trace's rank is `distributedInfo.rank`, else its order among the
  run's workers. Ranks of `world_size` that no trace holds are reported as missing.
- Calls are matched across ranks by (process group, `Seq`) where the trace numbers them (torch >= 2.1),
  point-to-point calls by their ends (`Src Rank`, `Dst Rank`; `call_keys`), else by (step number, type,
  ordinal among the step's calls of that type): steps align by number, and
  every rank issues one type's collectives in the same order. Clocks of
  different hosts are never compared: only durations are.
- transfer time of an instance = the shortest duration over its ranks (the rank that arrived last did not
  wait); a rank's wait = its duration minus the transfer time. The rank the others waited for is the one
  with the shortest duration, when it is shorter than the others' by more than `TIE_NS`.
- Bandwidth (nccl-tests): algbw = S / transfer time (S: the output size for all_gather, else the input
  size), busbw = algbw x the collective's factor for n ranks (its `Group size`, else the world size).
- A rank is a straggler when it is the one waited for in at least half the matched instances, more often
  than equal ranks would be by chance (binomial tail under 1%), and the wait it caused (per instance, the
  mean of the other ranks' waits; summed) is at least 5% of the median step time per step.
"""
from __future__ import annotations

import math
import re
from typing import Any, Optional

import msgspec
import numpy as np

from ...trace.kinds import STEP_RE
from ...trace.model import TraceModel, whole
from ..core.selectors import OpIndex
from .clocks import clock_offsets, instance_uncertainty, public, wait_uncertainties
from .collectives import P2P_KINDS, CollectiveCalls, collective_call_rows, collective_calls
from .groups import process_groups
from .step_work import Work, step_work
from .straggler import StepWork, straggler_at_median

TIE_NS = 1_000  # durations within 1 µs of the shortest: no one rank was waited for
STRAGGLER_SHARE = 0.5  # of the matched instances
STRAGGLER_STEP_FRACTION = 0.05  # caused wait per step, of the median step time
# Equal ranks take turns being last (clock jitter, noisy neighbours): a rank is only named when being last
# that often would happen by chance less than 1% of the time. On 4 CPU gloo ranks with 10 collectives
# that takes 7 of 10; a rank slowed on purpose is last in all of them.
STRAGGLER_CHANCE = 0.01
MAX_INSTANCES = 200  # instances listed in the view (the figures count them all)
# `rank3`, `rank-3`, `rank_3`, `trace_rank_0`, `worker1`: the number after the word is the rank.
RANK_NAME_RE = re.compile(r"^(?P<stem>.*?(?:rank|worker))[-_.]?(?P<number>\d+)(?!\d)", re.IGNORECASE)


class RankDigest(msgspec.Struct, frozen=True):
    """What the ranks view needs from one trace (kilobytes, whatever the trace's size)."""

    worker: str
    rank: Optional[int]  # distributedInfo.rank
    world_size: Optional[int]
    backend: Optional[str]
    step_numbers: np.ndarray  # ProfilerStep numbers, in time order
    step_dur_ns: np.ndarray
    step_comm_ns: np.ndarray  # GPU communication (union) inside the step; 0 without a GPU
    step_exposed_ns: np.ndarray
    figures: dict[str, Any]  # per-rank table row (busy, idle, comm, exposed, overlap, dataloader, memory, verdict)
    calls: CollectiveCalls
    origin_ns: int = 0  # the trace's start on the rank's own clock (instance starts are given from it)
    # `jobs.job_signature` of its distributedInfo: what all ranks of its job share; "" when the info says it is
    # no rank of a job of two or more, None when the trace has no distributedInfo
    signature: Optional[str] = None
    # per step (step_numbers' order), what the rank worked on by name (`step_work.py`): its host ops' self time and
    # untraced time, its device's kernels; () for a trace without collectives (no straggler to judge)
    step_host_work: Work = ()
    step_device_work: Work = ()


def rank_digest(model: TraceModel, analysis: Any, worker: str) -> RankDigest:
    """The digest of one loaded trace (`analysis` is its `report.Analysis`)."""
    info = model.distributed
    steps = analysis.steps
    numbers = np.array([_step_number(model.names[i]) for i in steps.name_id.tolist()], np.int64)
    busiest = analysis.idle.busiest()
    comm = analysis.comm.of(busiest.device) if busiest is not None else None
    memory_peak = max((s.peak_allocated_bytes for s in analysis.memory if s.device != "cpu"), default=None)
    figures = {
        "device": busiest.device if busiest is not None else None,
        "busy_us": _us(busiest.busy_ns) if busiest is not None else None,
        "idle_us": _us(busiest.idle_ns) if busiest is not None else None,
        "idle_by_cause_us": {k: _us(v) for k, v in busiest.idle_by_cause_ns().items()} if busiest is not None else {},
        "compute_us": _us(comm.compute_ns) if comm else None, "comm_us": _us(comm.comm_ns) if comm else None,
        "exposed_comm_us": _us(comm.exposed_ns) if comm else None, "overlap_pct": comm.overlap_pct if comm else None,
        "cpu_collectives_us": _us(analysis.comm.cpu_collective_ns),
        "cpu_collectives_exposed_us": _us(analysis.comm.cpu_exposed_ns),
        "dataloader_us": _us(int(steps.dataloader_ns.sum())), "memory_peak_bytes": memory_peak,
        "verdict": analysis.verdict.bound, "confidence": analysis.verdict.confidence,
    }
    ops = OpIndex(model) if collective_call_rows(model).size else None  # one index for the calls and the work
    calls = collective_calls(model, ops)
    host, device = step_work(model, steps.start_ns, steps.end_ns, ops) if ops is not None else ((), ())
    return RankDigest(worker=worker, rank=model.rank, world_size=model.world_size,
                      backend=info.get("backend") if isinstance(info.get("backend"), str) else None,
                      step_numbers=numbers, step_dur_ns=steps.end_ns - steps.start_ns, step_comm_ns=steps.comm_ns,
                      step_exposed_ns=steps.exposed_comm_ns, figures=figures, calls=calls,
                      origin_ns=model.start_ns if model.n_events else 0,
                      signature=job_signature(info) if model.meta.get("distributed_info") is not None else None,
                      step_host_work=host, step_device_work=device)


def job_signature(info: dict) -> str:
    """What every rank of one job shares in its `distributedInfo` ("" when the trace is not a rank of a
    job of two or more: no info, or world_size <= 1)."""
    world = whole(info.get("world_size"))
    if world is None or world <= 1:
        return ""
    groups = info.get("pg_config") if isinstance(info.get("pg_config"), list) else []
    default = next((g for g in groups if isinstance(g, dict)
                    and (g.get("pg_desc") == "default_pg" or str(g.get("pg_name")) == "0")), {})
    members = default.get("ranks") if isinstance(default.get("ranks"), list) and len(default["ranks"]) <= 4096 else []
    return repr((str(info.get("backend"))[:200], world, whole(info.get("pg_count")), whole(default.get("pg_size")),
                 tuple(m for m in members if whole(m) is not None)))


def rank_from_name(worker: str) -> Optional[tuple[str, int]]:
    """(stem, number) when a worker is named like a rank (`rank3`, `trace_rank_0`, `worker1`), else None."""
    match = RANK_NAME_RE.match(worker)
    return (match.group("stem").lower(), int(match.group("number"))) if match else None


def merge_spans(digests: list[RankDigest]) -> list[RankDigest]:
    """One digest per worker: the spans of one worker (a profiler schedule that repeats) are one rank, their
    steps and calls together (step numbers keep them apart); its table row is its latest span's."""
    by_worker: dict[str, list[RankDigest]] = {}
    for d in digests:
        by_worker.setdefault(d.worker, []).append(d)
    merged = []
    for group in by_worker.values():
        if len(group) == 1:
            merged.append(group[0])
            continue
        calls = [g.calls for g in group]
        cat = np.concatenate
        joined = CollectiveCalls(
            kind=tuple(k for c in calls for k in c.kind), step=cat([c.step for c in calls]),
            ordinal=cat([c.ordinal for c in calls]), start_ns=cat([c.start_ns for c in calls]),
            dur_ns=cat([c.dur_ns for c in calls]), on_device=cat([c.on_device for c in calls]),
            cpu_start_ns=cat([c.cpu_start_ns for c in calls]), cpu_dur_ns=cat([c.cpu_dur_ns for c in calls]),
            before=tuple(b for c in calls for b in c.before), seq=cat([c.seq for c in calls]),
            group=tuple(g for c in calls for g in c.group), nbytes=cat([c.nbytes for c in calls]),
            group_size=cat([c.group_size for c in calls]),
            group_desc=tuple(g for c in calls for g in c.group_desc),
            group_ranks=tuple(g for c in calls for g in c.group_ranks),
            src_rank=cat([c.src_rank for c in calls]), dst_rank=cat([c.dst_rank for c in calls]))
        last = group[-1]
        merged.append(RankDigest(worker=last.worker, rank=last.rank, world_size=last.world_size, backend=last.backend,
                                 step_numbers=cat([g.step_numbers for g in group]),
                                 step_dur_ns=cat([g.step_dur_ns for g in group]),
                                 step_comm_ns=cat([g.step_comm_ns for g in group]),
                                 step_exposed_ns=cat([g.step_exposed_ns for g in group]),
                                 figures=last.figures, calls=joined, origin_ns=group[0].origin_ns,
                                 signature=last.signature,
                                 step_host_work=tuple(w for g in group for w in _work_of(g, "step_host_work")),
                                 step_device_work=tuple(w for g in group for w in _work_of(g, "step_device_work"))))
    return merged


def ranks_view(digests: list[RankDigest]) -> dict[str, Any]:
    """The ranks view of one run from its traces' digests (JSON-ready; times in µs); the spans of one
    worker count as one rank (`merge_spans`)."""
    digests = merge_spans(digests)
    ranks = _assign_ranks(digests)
    order = sorted(range(len(digests)), key=lambda i: ranks[i])
    digests, ranks = [digests[i] for i in order], [ranks[i] for i in order]
    told = [d.world_size for d in digests if d.world_size]  # only distributedInfo names ranks that are missing
    world = max(told + [len(digests), max(ranks, default=-1) + 1])
    missing = sorted(set(range(max(told))) - set(ranks)) if told else []
    matched = _match(digests)
    per_rank = _per_rank_waits(matched, len(digests))
    step_numbers = sorted(set().union(*(d.step_numbers.tolist() for d in digests))) if digests else []
    median_step = _median_step_ns(digests)
    stragglers = _stragglers(digests, ranks, matched, per_rank, median_step)
    straggler_rows = [i for i, r in enumerate(ranks) if any(s["rank"] == r for s in stragglers)]
    whatif = straggler_at_median(matched, step_numbers, [_step_work(d) for d in digests], straggler_rows)
    if whatif is not None:
        for row in whatif["ranks"] + whatif["extra_work"]:
            row["rank"] = ranks[row.pop("index")]
    clocks = clock_offsets(digests, ranks, matched)
    uncertain = wait_uncertainties(clocks, ranks)
    rows = []
    for i, (d, r) in enumerate(zip(digests, ranks)):
        steps = dict(zip(d.step_numbers.tolist(), d.step_dur_ns.tolist()))
        rows.append({"rank": r, "worker": d.worker, "steps": int(d.step_numbers.size),
                     "step_median_us": _us(np.median(d.step_dur_ns)) if d.step_dur_ns.size else None,
                     "collectives": d.calls.count, "wait_us": _us(per_rank["wait"][i]),
                     **uncertain[i], "waited_for": int(per_rank["last"][i]),
                     "caused_wait_us": _us(per_rank["caused"][i]),
                     **d.figures, "step_us": [_us(steps[s]) if s in steps else None for s in step_numbers]})
    return {
        "world_size": world, "ranks_present": len(digests), "missing_ranks": missing,
        "backend": next((d.backend for d in digests if d.backend), None),
        "steps": step_numbers, "median_step_us": _us(median_step) if median_step else None,
        "ranks": rows, "matched_instances": len(matched["kind"]),
        "partial": bool(missing),  # figures among the ranks present only
        "instances": _instances_entry(matched, ranks, world, clocks),
        "stragglers": stragglers,
        "wait_by_step_us": _wait_by_step(matched, len(digests), step_numbers),
        "straggler_whatif": whatif,  # straggler_whatif.py: the steps if the stragglers were as fast as the median rank
        **process_groups(digests, ranks, matched),
        **({"clock_offsets": public(clocks)} if clocks is not None else {}),  # clocks.py: instances matched by Seq
    }


def call_keys(calls: CollectiveCalls, rank: Optional[int] = None) -> list[tuple]:
    """How each call is matched across ranks: a point-to-point call by its ends, (group, source, destination, its
    ordinal among this rank's calls between them), where the trace says them (`Src Rank`, `Dst Rank`; the side a
    call is on is the rank itself, `rank`, when only the other end is written); any other call by (process group,
    `Seq`) where the trace numbers it; else by (step, type, ordinal among the step's calls of that type). A p2p
    call's `Seq` is its rank's own count of p2p calls (PyTorch's `seqP2P_`, whoever the peer): never matched on."""
    keys: list[tuple] = []
    pairs: dict[tuple, int] = {}
    for k, (group, seq, step, ordinal, kind) in enumerate(zip(calls.group, calls.seq.tolist(), calls.step.tolist(),
                                                                calls.ordinal.tolist(), calls.kind)):
        if kind in P2P_KINDS:
            ends = _p2p_ends(calls, k, kind, rank)
            if ends is not None:
                n = pairs.get((group, *ends), 0)
                pairs[(group, *ends)] = n + 1
                keys.append(("p2p", group, *ends, n))
                continue
        keys.append(("seq", group, seq) if seq >= 0 and kind not in P2P_KINDS else ("order", step, ordinal, kind))
    return keys


def _p2p_ends(calls: CollectiveCalls, k: int, kind: str, rank: Optional[int]) -> Optional[tuple[int, int]]:
    """(source, destination) of p2p call k, None when the trace does not say both."""
    src = int(calls.src_rank[k]) if calls.src_rank.size else -1
    dst = int(calls.dst_rank[k]) if calls.dst_rank.size else -1
    if rank is not None:
        src, dst = (rank if src < 0 and kind == "send" else src), (rank if dst < 0 and kind == "recv" else dst)
    return (src, dst) if src >= 0 and dst >= 0 else None


def _match(digests: list[RankDigest]) -> dict[str, Any]:
    """Instances present on at least two ranks, with every rank's duration (-1 where a rank lacks it)."""
    keys: dict[tuple, list] = {}
    for i, d in enumerate(digests):
        for j, key in enumerate(call_keys(d.calls, d.rank)):
            keys.setdefault(key, [None] * len(digests))[i] = j
    out: dict[str, list] = {"kind": [], "step": [], "dur": [], "start": [], "before": [], "nbytes": [], "group_size": [],
                            "group": [], "seq": []}
    for instance, members in sorted(keys.items(), key=lambda kv: _instance_order(digests, kv[1])):
        present = [(i, j) for i, j in enumerate(members) if j is not None]
        kinds = {digests[i].calls.kind[j] for i, j in present}
        if kinds == {"send", "recv"}:
            kinds = {"send_recv"}  # a p2p pair (`call_keys`): one instance, the sender's and the receiver's ends
        if len(present) < 2 or len(kinds) != 1:
            continue
        row = np.full(len(digests), -1, np.int64)
        starts = np.full(len(digests), -1, np.int64)
        for i, j in present:
            row[i] = digests[i].calls.dur_ns[j]
            starts[i] = digests[i].calls.start_ns[j] - digests[i].origin_ns
        i0, j0 = present[0]
        c0 = digests[i0].calls
        out["kind"].append(kinds.pop())
        out["step"].append(int(c0.step[j0]))
        out["dur"].append(row)
        out["start"].append(starts)
        out["before"].append([digests[i].calls.before[j] if j is not None else () for i, j in enumerate(members)])
        out["nbytes"].append(max(int(digests[i].calls.nbytes[j]) for i, j in present))
        out["group_size"].append(max(int(digests[i].calls.group_size[j]) for i, j in present))
        out["group"].append(c0.group[j0])
        out["seq"].append(-1 if instance[0] == "p2p" else int(c0.seq[j0]))
    matched: dict[str, Any] = dict(out)
    matched["dur"] = np.array(out["dur"], np.int64).reshape(-1, len(digests))
    matched["start"] = np.array(out["start"], np.int64).reshape(-1, len(digests))
    matched["step"] = np.array(out["step"], np.int64)
    return matched


def _instance_order(digests: list[RankDigest], members: list) -> tuple[int, int]:
    """Instances sort by step, then by their CPU start on the first rank holding them (one clock)."""
    i, j = next((i, j) for i, j in enumerate(members) if j is not None)
    return int(digests[i].calls.step[j]), int(digests[i].calls.cpu_start_ns[j])


# nccl-tests' bus bandwidth factor per collective, for n ranks (distributed.md)
def bus_factor(kind: str, n: int) -> float:
    if n <= 0:
        return float("nan")
    if kind == "all_reduce":
        return 2 * (n - 1) / n
    if kind in ("reduce_scatter", "all_gather", "all_to_all"):
        return (n - 1) / n
    return 1.0


def _per_rank_waits(matched: dict[str, Any], n: int) -> dict[str, np.ndarray]:
    dur = matched["dur"]
    present = dur >= 0
    transfer = np.where(present, dur, np.iinfo(np.int64).max).min(axis=1) if dur.size else np.zeros(0, np.int64)
    wait = np.where(present, dur - transfer[:, None], 0)
    # the rank the others waited for: the shortest, clear of the runner-up by more than TIE_NS
    masked = np.where(present, dur, np.iinfo(np.int64).max)
    two = np.sort(masked, axis=1)[:, :2] if dur.size else np.zeros((0, 2), np.int64)
    last = np.where((two[:, 1] - two[:, 0]) > TIE_NS, masked.argmin(axis=1), -1) if dur.size else np.zeros(0, np.int64)
    others = np.maximum(present.sum(axis=1) - 1, 1)
    caused_per = wait.sum(axis=1) / others
    caused = np.bincount(last[last >= 0], weights=caused_per[last >= 0], minlength=n)
    matched["transfer"], matched["wait"], matched["last"] = transfer, wait, last
    return {"wait": wait.sum(axis=0) if dur.size else np.zeros(n), "last": np.bincount(last[last >= 0], minlength=n),
            "caused": caused, "participated": present.sum(axis=0) if dur.size else np.zeros(n, np.int64),
            "ranks_per_instance": float(np.median(present.sum(axis=1))) if dur.size else float(n)}


def chance_of_being_last(k: int, n: int, ranks: float) -> float:
    """The chance that one of `ranks` equal ranks is the last to arrive in at least k of n collectives by
    jitter alone (binomial tail with p = 1 / ranks)."""
    p = 1.0 / max(ranks, 1.0)
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def _stragglers(digests, ranks, matched, per_rank, median_step) -> list[dict[str, Any]]:
    out = []
    n_steps = max(len(set().union(*(d.step_numbers.tolist() for d in digests))), 1) if digests else 1
    for i, (d, r) in enumerate(zip(digests, ranks)):
        participated, last = int(per_rank["participated"][i]), int(per_rank["last"][i])
        if participated == 0 or last < STRAGGLER_SHARE * participated:
            continue
        if chance_of_being_last(last, participated, per_rank["ranks_per_instance"]) >= STRAGGLER_CHANCE:
            continue  # no more often last than jitter alone would make it
        caused = float(per_rank["caused"][i])
        if median_step and caused / n_steps < STRAGGLER_STEP_FRACTION * median_step:
            continue
        mine = np.flatnonzero(matched["last"] == i)
        steps_last = sorted({int(s) for s in matched["step"][mine].tolist() if s >= 0})
        doing: dict[str, int] = {}
        for k in mine.tolist():
            for name, ns in matched["before"][k][i]:
                doing[name] = doing.get(name, 0) + ns
        top = sorted(doing.items(), key=lambda kv: -kv[1])[:5]
        outside = _outside_comm_ns(d)
        peers = [_outside_comm_ns(o) for o in digests]
        out.append({"rank": r, "worker": d.worker, "waited_for": int(per_rank["last"][i]), "of": participated,
                    "caused_wait_us": _us(caused), "steps_last": steps_last,
                    "doing": [{"name": name, "self_us": _us(ns)} for name, ns in top],
                    "slow_steps": _slow_outside_comm(outside, peers)})
    return out


def _work_of(d: RankDigest, field: str) -> Work:
    """A span's per-step work, or one empty entry per step where it has none (a span without collectives)."""
    work = getattr(d, field)
    return work if len(work) == d.step_numbers.size else ((),) * int(d.step_numbers.size)


def _step_work(d: RankDigest) -> dict[int, StepWork]:
    """Step number -> the rank's recorded step and its work (`straggler.StepWork`)."""
    host, device = _work_of(d, "step_host_work"), _work_of(d, "step_device_work")
    return {s: StepWork(int(ns), dict(h), dict(g))
            for s, ns, h, g in zip(d.step_numbers.tolist(), d.step_dur_ns.tolist(), host, device)}


def _outside_comm_ns(d: RankDigest) -> np.ndarray:
    return d.step_dur_ns - d.step_exposed_ns


def _slow_outside_comm(mine: np.ndarray, peers: list[np.ndarray]) -> Optional[bool]:
    """The second signal: the rank's median step time outside communication is above the ranks' median by
    more than the step-to-step spread (interquartile range of its own steps). None without steps."""
    medians = [float(np.median(p)) for p in peers if p.size]
    if not mine.size or len(medians) < 2:
        return None
    spread = float(np.subtract(*np.percentile(mine, [75, 25]))) if mine.size > 1 else 0.0
    return float(np.median(mine)) - float(np.median(medians)) > spread


def _instances_entry(matched: dict[str, Any], ranks: list[int], world: int,
                     clocks: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
    out = []
    for k in range(min(len(matched["kind"]), MAX_INSTANCES)):
        dur = matched["dur"][k]
        nbytes, transfer = matched["nbytes"][k], int(matched["transfer"][k])
        n = matched["group_size"][k] if matched["group_size"][k] > 0 else world
        algbw = nbytes / transfer if nbytes >= 0 and transfer > 0 else None  # bytes per ns = GB/s
        out.append({"kind": matched["kind"][k], "step": int(matched["step"][k]),
                    "group": matched["group"][k] or None, "seq": matched["seq"][k] if matched["seq"][k] >= 0 else None,
                    "bytes": nbytes if nbytes >= 0 else None,
                    "algbw_gbps": round(algbw, 3) if algbw is not None else None,
                    "busbw_gbps": round(algbw * bus_factor(matched["kind"][k], n), 3) if algbw is not None else None,
                    "transfer_us": _us(matched["transfer"][k]),
                    "last_rank": ranks[int(matched["last"][k])] if matched["last"][k] >= 0 else None,
                    "start_us": [_us(v) if d >= 0 else None for v, d in zip(matched["start"][k].tolist(), dur.tolist())],
                    "dur_us": [_us(v) if v >= 0 else None for v in dur.tolist()],
                    "wait_us": [_us(w) if v >= 0 else None for v, w in zip(dur.tolist(), matched["wait"][k].tolist())],
                    **({} if clocks is None else {"wait_uncertainty_us": instance_uncertainty(clocks, k)})})
    return out


def _wait_by_step(matched: dict[str, Any], n: int, step_numbers: list[int]) -> list[list[float]]:
    """Rank x step: the rank's summed wait in the step's matched instances (µs)."""
    index = {s: j for j, s in enumerate(step_numbers)}
    grid = np.zeros((n, len(step_numbers)))
    for k, s in enumerate(matched["step"].tolist()):
        if s in index:
            grid[:, index[s]] += matched["wait"][k]
    return [[_us(v) for v in row] for row in grid.tolist()]


def _median_step_ns(digests: list[RankDigest]) -> Optional[float]:
    durs = np.concatenate([d.step_dur_ns for d in digests]) if digests else np.zeros(0)
    return float(np.median(durs)) if durs.size else None


def _assign_ranks(digests: list[RankDigest]) -> list[int]:
    """Each trace's rank: its own when every trace has a distinct one, else the number its worker name gives
    (`rank3`) when every name gives a distinct one, else its order by worker name."""
    own = [d.rank for d in digests]
    if all(r is not None for r in own) and len(set(own)) == len(own):
        return [int(r) for r in own]
    named = [rank_from_name(d.worker) for d in digests]
    if all(n is not None for n in named) and len({n[1] for n in named}) == len(named):
        return [n[1] for n in named]
    order = sorted(range(len(digests)), key=lambda i: digests[i].worker)
    ranks = [0] * len(digests)
    for position, i in enumerate(order):
        ranks[i] = position
    return ranks


def _step_number(name: str) -> int:
    match = STEP_RE.match(name)
    return int(match.group(1)) if match else -1


def _us(ns: Any) -> float:
    return round(float(ns) / 1e3, 3)
