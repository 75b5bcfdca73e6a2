"""Before/after pairs with planted truth (samples/synth/pairs.py): the replay of the "before" trace under the edit
that stands for the fix predicts the "after" trace's median step. The error of each prediction is printed.

An "after" trace whose device runs behind its host (no sync holds the host back any more) records host steps
shorter than the run's pace; its pace is then its own replay's step (`WhatIf.base_ns`), as for any trace."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from conftest import SAMPLES
from kinetoscope.analysis.distributed.ranks import rank_digest, ranks_view
from kinetoscope.analysis.report import analyze
from kinetoscope.analysis.whatif.edits import parse_edit
from kinetoscope.analysis.whatif.replay import whatif
from kinetoscope.trace.loader import decode_bytes

sys.path.insert(0, str(SAMPLES))
from synth.pairs import make_pair  # noqa: E402


def model(doc: dict):
    return decode_bytes(json.dumps(doc).encode())


@pytest.mark.parametrize("name, tolerance", [("sync_removed", 0.03), ("launch_fused", 0.02), ("graph_captured", 0.05),
                                                ("prep_moved", 0.03)])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_edit_predicts_the_fixed_run(name, tolerance, seed):
    (before,), (after,), edits = make_pair(name, seed)
    predicted = whatif(model(before), tuple(parse_edit(e) for e in edits))
    measured = whatif(model(after))
    assert all(predicted.matched.values())
    assert not predicted.device_behind
    error = predicted.median_predicted_ns / measured.base_ns - 1
    print(f"{name} seed {seed}: predicted {predicted.median_predicted_ns / 1e3:.1f} µs, "
          f"measured {measured.base_ns / 1e3:.1f} µs: {100 * error:+.2f}%")
    assert abs(error) < tolerance


def test_the_straggler_pair():
    slow, fixed, edits = make_pair("straggler_fixed")
    assert edits == ["straggler=median"]

    def view(docs):
        digests = []
        for rank, doc in enumerate(docs):
            m = model(doc)
            digests.append(rank_digest(m, analyze(m), worker=f"rank{rank}"))
        return ranks_view(digests)

    predicted = view(slow)["straggler_whatif"]["median_step_us"]
    measured = float(np.median([s for r in view(fixed)["ranks"] for s in r["step_us"] if s is not None]))
    print(f"straggler: predicted {predicted:.1f} µs, measured {measured:.1f} µs: {100 * (predicted / measured - 1):+.2f}%")
    assert predicted == pytest.approx(measured, rel=0.02)


def _reference_extra(work, g, s, stragglers):
    """Straggler g's extra work in step s, spelled out: per side, each name's difference from the median of the other
    ranks' (a name a rank lacks is 0 for it; negative where it spent less), summed; the larger side, at least 0."""
    peers = [work[j][s] for j in range(len(work)) if j not in stragglers and s in work[j]]
    if s not in work[g] or not peers:
        return 0
    best = 0
    for side in ("host", "device"):
        mine = getattr(work[g][s], side)
        total = 0
        for name in set(mine).union(*(getattr(p, side) for p in peers)):
            values = sorted(getattr(p, side).get(name, 0) for p in peers)
            mid = len(values) // 2
            median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
            total += int(mine.get(name, 0) - median)
        best = max(best, total)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_the_straggler_prediction_removes_its_extra_work_from_every_rank(seed):
    """Every (rank, step) `straggler_at_median` predicts: in a step where a straggler came last, the step less the
    stragglers' largest extra work, at most the longest time another rank spent in that step's collectives, and at
    most the rank's own time in them (a straggler: plus its own extra work), never below 0; every other step as
    recorded."""
    from kinetoscope.analysis.distributed.straggler import StepWork, straggler_at_median
    from kinetoscope.trace import intervals
    rng = np.random.default_rng(seed)
    n, m, steps = int(rng.integers(2, 9)), int(rng.integers(0, 80)), list(range(int(rng.integers(1, 6))))
    names = ["aten::mm", "aten::add", "(untraced)", "gemm", "copy"]

    def side():
        return {nm: int(rng.integers(0, 3000)) for nm in names if rng.random() < 0.7}

    matched = {"dur": rng.integers(-1, 50, (m, n)), "start": rng.integers(0, 1000, (m, n)),
               "last": rng.integers(-1, n, m), "step": rng.choice(steps + [99], m)}
    work = [{s: StepWork(int(rng.integers(500, 5000)), side(), side()) for s in steps if rng.random() < 0.9}
            for _ in range(n)]
    stragglers = sorted(set(rng.integers(0, n, 2).tolist()))[:n - 1]  # at least one rank that is not
    got = straggler_at_median(matched, steps, work, stragglers)
    if got is None:
        assert not any(work)
        return
    for rank in got["ranks"]:
        i = rank["index"]
        for row in rank["steps"]:
            s = row["step"]
            late = {int(g) for g, st in zip(matched["last"].tolist(), matched["step"].tolist())
                    if g in stragglers and st == s}
            def in_collectives(j, s=s):
                k = np.flatnonzero((matched["dur"][:, j] >= 0) & (matched["step"] == s))
                start = matched["start"][k, j]
                return intervals.total(*intervals.union(start, start + matched["dur"][k, j])) if k.size else 0

            removed = min(max((_reference_extra(work, g, s, stragglers) for g in late), default=0),
                          max((in_collectives(j) for j in range(n) if j not in stragglers), default=0))
            room = in_collectives(i)
            if i in stragglers and late:  # a straggler loses its own extra work too
                room += _reference_extra(work, i, s, stragglers)
            recorded = work[i][s].ns
            expected = recorded - min(removed, room, recorded)
            assert row["predicted_us"] == round(expected / 1e3, 3), (i, row)
            assert 0 <= row["predicted_us"] <= row["recorded_us"]
