"""Which traces of a run are ranks of one job, and which are independent profiles.

A folder is not a job: five single-GPU profiles of five models recorded hours apart are five answers,
not five ranks. Traces are ranks of one job only when they say so (issue 25, item 2):

1. `distributedInfo` with `world_size` > 1: traces whose job signature (`ranks.job_signature`: backend,
   world size, number of process groups, the default group's members) is equal and whose ranks differ
   are one job. Every rank of a job creates every process group (`new_group` is collective), so the
   count and the default group agree across ranks; the per-rank singleton groups some frameworks make
   (vLLM) differ and are left out. Two traces claiming the same rank of one signature are not one job.
2. The run's own naming: workers named `rank<N>` / `worker<N>` (any separator, the same stem) with
   distinct numbers, in traces that carry no `distributedInfo` at all.
3. Matching collectives: traces without `distributedInfo` whose collective calls match (by process group
   and `Seq`, else by step, type and ordinal) for at least half of the smaller one's calls.

Everything else is independent: its own verdict, no ranks view, no pooled run verdict. Missing ranks are
only those a `distributedInfo.world_size` names (`ranks.ranks_view`).
"""
from __future__ import annotations

from typing import Any, Optional

import msgspec

from .ranks import RankDigest, call_keys, merge_spans, rank_from_name

# Traces without distributedInfo are one job when this share of the smaller one's collective calls match
# the other's: ranks of one job issue the same collectives; two unrelated DDP runs share a few by chance.
COLLECTIVE_MATCH_SHARE = 0.5

DISTRIBUTED, NAMING, COLLECTIVES, INDEPENDENT = "distributedInfo", "naming", "collectives", "independent"


class JobGroup(msgspec.Struct, frozen=True):
    """Workers of one run that are one job (or one independent worker), and what says so."""

    workers: tuple[str, ...]
    basis: str  # DISTRIBUTED, NAMING, COLLECTIVES or INDEPENDENT
    world_size: Optional[int] = None  # from distributedInfo only

    @property
    def is_job(self) -> bool:
        """Ranks of one distributed job (possibly one rank of it), not an independent profile."""
        return self.basis != INDEPENDENT

    def entry(self) -> dict[str, Any]:
        """JSON form: workers, basis, world_size."""
        return {"workers": list(self.workers), "basis": self.basis, "world_size": self.world_size}


def job_groups(digests: list[RankDigest]) -> list[JobGroup]:
    """Every worker of one run in exactly one group: jobs first (by distributedInfo, naming, collectives),
    then the independent workers, each alone; workers in their first-seen order within a group."""
    merged = merge_spans(digests)
    groups, left = _by_distributed_info(merged)
    unnamed = [d for d in left if d.signature is None]  # no distributedInfo at all
    named, rest = _by_naming(unnamed)
    groups += named
    matched, rest = _by_collectives(rest)
    groups += matched
    done = {w for g in groups for w in g.workers}
    groups += [JobGroup((d.worker,), INDEPENDENT) for d in merged if d.worker not in done]
    return groups


def _by_distributed_info(digests: list[RankDigest]) -> tuple[list[JobGroup], list[RankDigest]]:
    by_key: dict[str, list[RankDigest]] = {}
    for d in digests:
        if d.signature:
            by_key.setdefault(d.signature, []).append(d)
    groups, placed = [], set()
    for members in by_key.values():
        ranks = [d.rank for d in members]
        if len(set(ranks)) != len(ranks):
            continue  # two traces claim one rank: two jobs with one signature, or copies; not told apart
        worlds = [d.world_size for d in members if d.world_size]
        groups.append(JobGroup(tuple(d.worker for d in members), DISTRIBUTED, max(worlds) if worlds else None))
        placed.update(d.worker for d in members)
    return groups, [d for d in digests if d.worker not in placed]


def _by_naming(digests: list[RankDigest]) -> tuple[list[JobGroup], list[RankDigest]]:
    by_stem: dict[str, list[tuple[int, RankDigest]]] = {}
    for d in digests:
        named = rank_from_name(d.worker)
        if named is not None:
            by_stem.setdefault(named[0], []).append((named[1], d))
    groups, placed = [], set()
    for members in by_stem.values():
        numbers = [n for n, _ in members]
        if len(members) > 1 and len(set(numbers)) == len(numbers):
            groups.append(JobGroup(tuple(d.worker for _, d in members), NAMING))
            placed.update(d.worker for _, d in members)
    return groups, [d for d in digests if d.worker not in placed]


def _by_collectives(digests: list[RankDigest]) -> tuple[list[JobGroup], list[RankDigest]]:
    """Union of the pairs whose collective calls match (`COLLECTIVE_MATCH_SHARE`)."""
    keyed = [(d, set(zip(call_keys(d.calls), d.calls.kind))) for d in digests if d.calls.count]
    parent = list(range(len(keyed)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(keyed)):
        for j in range(i + 1, len(keyed)):
            a, b = keyed[i][1], keyed[j][1]
            if len(a & b) >= COLLECTIVE_MATCH_SHARE * min(len(a), len(b)):
                parent[root(j)] = root(i)
    members: dict[int, list[RankDigest]] = {}
    for i, (d, _) in enumerate(keyed):
        members.setdefault(root(i), []).append(d)
    groups = [JobGroup(tuple(d.worker for d in m), COLLECTIVES) for m in members.values() if len(m) > 1]
    placed = {w for g in groups for w in g.workers}
    return groups, [d for d in digests if d.worker not in placed]


def group_of_worker(groups: list[JobGroup]) -> dict[str, int]:
    """worker -> index of its group."""
    return {w: k for k, g in enumerate(groups) for w in g.workers}


def multi_rank_jobs(groups: list[JobGroup]) -> list[JobGroup]:
    """The groups that are jobs with two ranks or more present: those get a ranks view."""
    return [g for g in groups if g.is_job and len(g.workers) > 1]
