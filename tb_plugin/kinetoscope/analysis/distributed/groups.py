"""The ranks view's process groups: the collectives of each group a job's ranks name (`Process Group Name`, its
`Process Group Description` and `Process Group Ranks`, which Kineto writes on every collective since 2026), with
the group's waits, skew and the rank it waited for, and the health items that only the ranks together show.

A job with several groups (FSDP's data-parallel shards over tensor-parallel ranks, a pipeline's stages) runs
each group's collectives in its own order, and a rank takes part only in its groups' calls. So calls are matched
across ranks by (group, `Seq`), each group's sequence number, wherever the trace numbers them (`ranks.call_keys`);
what the ordinal of a call in its step would pair is another group's call on another rank.

Health items:
- `group_ranks_disagree`: the ranks of one group name different members (`[0, 1]` on one, `[0, 2]` on another):
  the group names collide, or the job was set up differently on some ranks;
- `seq_gaps`: a rank of a group lacks sequence numbers that the group's other ranks recorded, inside the range it
  recorded itself: a collective missing on that rank (it would hang the job, unless the trace was cut or the
  rank's profile dropped events).

Waits are clock-free, as the ranks view's are: a rank's wait in an instance is its duration less the shortest
duration of the instance (`ranks._per_rank_waits`); the skew of an instance is its largest wait.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .collectives import P2P_KINDS

MAX_GROUPS = 64  # groups listed (a job has a few: default_pg, dp, tp, pp, and their sub-groups)
MAX_MISSING = 20  # sequence numbers named per rank in a `seq_gaps` item


def process_groups(digests: list, ranks: list[int], matched: dict[str, Any]) -> dict[str, Any]:
    """`process_groups` (one entry per group, most collectives first) and `group_health` (the items above) of a
    run's ranks view; neither key when no call names its group (the view of such a run is as it was)."""
    names = sorted({g for d in digests for g in d.calls.group if g})
    if not names:
        return {}
    groups, health = [], []
    for name in names:
        members = [(i, [k for k, g in enumerate(d.calls.group) if g == name]) for i, d in enumerate(digests)]
        members = [(i, calls) for i, calls in members if calls]
        desc = _most_common(digests[i].calls.group_desc[k] for i, calls in members for k in calls)
        said = {ranks[i]: _most_common(digests[i].calls.group_ranks[k] for k in calls) for i, calls in members}
        groups.append(_group_entry(name, desc, members, ranks, said, matched))
        health += _disagreement(name, desc, said) + _gaps(name, desc, digests, ranks, members)
    groups.sort(key=lambda g: (-g["collectives"], g["name"]))
    return {"process_groups": groups[:MAX_GROUPS], "group_health": health}


def _most_common(values) -> str:
    found = Counter(v for v in values if v)
    return found.most_common(1)[0][0] if found else ""


def _group_entry(name: str, desc: str, members: list, ranks: list[int], said: dict[int, str],
                 matched: dict[str, Any]) -> dict[str, Any]:
    """One group's figures: its ranks, calls, matched instances, waits per rank, median skew, who it waited for."""
    mine = np.flatnonzero(np.array([g == name for g in matched["group"]], bool)) if matched["group"] else np.zeros(0, np.int64)
    wait = matched["wait"][mine] if mine.size else np.zeros((0, len(ranks)), np.int64)
    last = matched["last"][mine] if mine.size else np.zeros(0, np.int64)
    waited_for = Counter(int(i) for i in last.tolist() if i >= 0)
    top = waited_for.most_common(1)
    rows = [i for i, _ in members]
    named = set(said.values()) - {""}
    return {"name": name, "desc": desc or None, "ranks": sorted(ranks[i] for i in rows),
            "ranks_said": next(iter(named)) if len(named) == 1 else None,
            "collectives": max(len(calls) for _, calls in members), "matched_instances": int(mine.size),
            "wait_us": {str(ranks[i]): round(float(wait[:, i].sum()) / 1e3, 3) for i in rows},
            "skew_us_median": round(float(np.median(wait.max(axis=1))) / 1e3, 3) if mine.size else None,
            "waited_for": ({"rank": ranks[top[0][0]], "instances": top[0][1], "of": int(mine.size)} if top else None)}


def _disagreement(name: str, desc: str, said: dict[int, str]) -> list[dict[str, Any]]:
    """A `group_ranks_disagree` item when the group's ranks name different members."""
    texts = {t for t in said.values() if t}
    if len(texts) < 2:
        return []
    by_text: dict[str, list[int]] = {}
    for rank, text in sorted(said.items()):
        if text:
            by_text.setdefault(text, []).append(rank)
    told = "; ".join(f"rank{'s' if len(r) > 1 else ''} {', '.join(map(str, r))} say {t}" for t, r in by_text.items())
    return [{"check": "group_ranks_disagree", "group": name, "desc": desc or None,
             "found": f"process group {_label(name, desc)}: its ranks name different members ({told})",
             "effect": "collectives of this group are matched among the ranks that name it; the groups' names collide, or "
                       "some ranks built the group differently"}]


def _gaps(name: str, desc: str, digests: list, ranks: list[int], members: list) -> list[dict[str, Any]]:
    """A `seq_gaps` item per rank of the group that lacks sequence numbers its other ranks recorded."""
    seqs = {i: {int(digests[i].calls.seq[k]) for k in calls if digests[i].calls.seq[k] >= 0
                and digests[i].calls.kind[k] not in P2P_KINDS} for i, calls in members}  # p2p: each rank's own count
    seqs = {i: s for i, s in seqs.items() if s}
    if len(seqs) < 2:
        return []
    out = []
    for i, own in seqs.items():
        others = set().union(*(s for j, s in seqs.items() if j != i))
        missing = sorted(s for s in others - own if min(own) <= s <= max(own))
        if missing:
            more = len(missing) - MAX_MISSING
            shown = ", ".join(map(str, missing[:MAX_MISSING])) + (f" and {more} more" if more > 0 else "")
            out.append({"check": "seq_gaps", "group": name, "desc": desc or None, "rank": ranks[i], "missing": len(missing),
                        "found": f"process group {_label(name, desc)}: rank {ranks[i]} has no collective with Seq {shown}, "
                                 f"which its other ranks recorded",
                        "effect": "a collective missing on one rank hangs the job, unless that rank's trace was cut or dropped "
                                  "events; the group's other collectives are matched by sequence number all the same"})
    return out


def _label(name: str, desc: str) -> str:
    return f"{desc!r} ({name})" if desc and desc != name else repr(name)
