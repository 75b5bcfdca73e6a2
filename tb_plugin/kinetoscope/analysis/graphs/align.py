"""Which reference launch each kernel of a graph replay is: a kernel sequence aligned with a reference sequence.

A replay runs the kernels its capture recorded, in the capture's order on each stream. A reference sequence is what
some run launched, in program order: the launches recorded during a capture (they own no kernel then; ROCm names
the kernel and its launch shape in the call's args), or kernels that ops launched eagerly. Both sides are keys: a
kernel name id (or WILDCARD where the reference does not name its kernel: a CUDA capture records anonymous launch
calls) and the grid and block sizes (-1 where not recorded). Two keys match when the names agree and, where both
sides record them, the launch shapes too.

    mapping, found = align(replay, reference)   # mapping[i]: reference position of replay kernel i, -1 unmatched

The alignment is anchored, then walked: each replay kernel whose name is rare in the reference votes for the
diagonal (reference position minus replay position) of each of its occurrences there; the walk from the few most
voted diagonals matches kernels in order, skipping the fewest kernels on either side where they disagree (a launch
the replay lacks, an extra copy into the graph's static inputs), and the walk with the most matches wins. When
another diagonal matches as many kernels but lands on other reference launches, the alignment is ambiguous (a
reference holding the same kernels twice, from different ops): `Alignment.ambiguous` says so.
"""
from __future__ import annotations

import msgspec
import numpy as np

WILDCARD = -2  # a reference launch whose kernel is not named: it matches any kernel, by position
LOOKAHEAD = 32  # the most kernels skipped on one side at a disagreement
ANCHORS = 64  # replay kernels that vote for a diagonal
MAX_OCCURRENCES = 256  # occurrences of an anchor's key in the reference that vote
WALKS = 3  # diagonals walked


class Keys(msgspec.Struct, frozen=True):
    """A kernel sequence: name ids (WILDCARD allowed in a reference), grid and block sizes (-1: not recorded)."""

    name: np.ndarray  # int64
    grid: np.ndarray  # float64
    block: np.ndarray  # float64

    @property
    def size(self) -> int:
        return int(self.name.size)


class Alignment(msgspec.Struct, frozen=True):
    """Per replay kernel, the reference position it is (-1: unmatched), and whether another placement fit as well."""

    mapping: np.ndarray  # int64
    matched: int
    ambiguous: bool


def align(replay: Keys, reference: Keys, label: np.ndarray) -> Alignment:
    """The best placement of `replay` in `reference` (see the module docstring); `label`: per reference launch, what
    a placement attributes (the issuing op's name): placements as good that attribute the same are not ambiguous."""
    m, n = replay.size, reference.size
    if m == 0 or n == 0:
        return Alignment(np.full(m, -1, np.int64), 0, False)
    walks = sorted((_walk(replay, reference, d) for d in _diagonals(replay, reference)),
                   key=lambda w: (-w[1], w[2]))
    best = walks[0]
    said = _labels(label, best[0])
    ambiguous = best[1] > 0 and any(w[1] == best[1] and not np.array_equal(_labels(label, w[0]), said)
                                    for w in walks[1:])
    return Alignment(best[0], int(best[1]), ambiguous)


def _labels(label: np.ndarray, mapping: np.ndarray) -> np.ndarray:
    return np.where(mapping >= 0, label[np.maximum(mapping, 0)], -1)


def _diagonals(replay: Keys, reference: Keys) -> list[int]:
    """The WALKS most voted diagonals (reference start positions), by anchor votes; the first wildcard run where
    the reference names no kernel."""
    names, counts = np.unique(reference.name, return_counts=True)
    at = np.searchsorted(names, replay.name)
    present = (at < names.size) & (names[np.minimum(at, names.size - 1)] == replay.name)
    rarity = np.where(present, counts[np.minimum(at, names.size - 1)], np.iinfo(np.int64).max)
    anchors = np.flatnonzero(present)
    votes: dict[int, int] = {}
    if anchors.size:
        anchors = anchors[np.argsort(rarity[anchors], kind="stable")[:ANCHORS]]
        by_name = np.argsort(reference.name, kind="stable")
        sorted_names = reference.name[by_name]
        for i in anchors.tolist():
            lo, hi = np.searchsorted(sorted_names, replay.name[i]), np.searchsorted(sorted_names, replay.name[i], "right")
            for j in by_name[lo:min(hi, lo + MAX_OCCURRENCES)].tolist():
                votes[j - i] = votes.get(j - i, 0) + 1
    wild = np.flatnonzero(reference.name == WILDCARD)
    if wild.size:
        votes.setdefault(int(wild[0]), 0)
    if not votes:
        return [0]
    return [d for d, _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))[:WALKS]]


def _walk(replay: Keys, reference: Keys, diagonal: int) -> tuple[np.ndarray, int, int]:
    """Match the replay in order against the reference from `diagonal` on: (mapping, matched, diagonal)."""
    m, n = replay.size, reference.size
    rn, rg, rb = replay.name.tolist(), replay.grid.tolist(), replay.block.tolist()
    sn, sg, sb = reference.name.tolist(), reference.grid.tolist(), reference.block.tolist()

    def same(i: int, j: int) -> bool:
        return ((sn[j] == rn[i] or sn[j] == WILDCARD) and (rg[i] < 0 or sg[j] < 0 or rg[i] == sg[j])
                and (rb[i] < 0 or sb[j] < 0 or rb[i] == sb[j]))

    mapping = [-1] * m
    i, j, matched = max(0, -diagonal), max(0, diagonal), 0
    while i < m and j < n:
        if same(i, j):
            mapping[i] = j
            matched += 1
            i, j = i + 1, j + 1
            continue
        skip_ref = next((a for a in range(1, LOOKAHEAD + 1) if j + a < n and same(i, j + a)), 0)
        skip_replay = next((b for b in range(1, LOOKAHEAD + 1) if i + b < m and same(i + b, j)), 0)
        if skip_ref and (not skip_replay or skip_ref <= skip_replay):
            j += skip_ref
        elif skip_replay:
            i += skip_replay
        else:
            i, j = i + 1, j + 1
    return np.array(mapping, np.int64), matched, diagonal
