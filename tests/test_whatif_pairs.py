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


def _reference_waits(matched, late, i, step):
    """Rank i's lost time in one step, spelled out: the union of its waits where a straggler came last."""
    from kinetoscope.trace import intervals
    k = np.flatnonzero(late & (matched["step"] == step) & (matched["dur"][:, i] >= 0) & (matched["last"] != i))
    start = matched["start"][k, i]
    return intervals.total(*intervals.union(start, start + matched["wait"][k, i])) if k.size else 0


@pytest.mark.parametrize("seed", range(40))
def test_the_straggler_prediction_equals_a_union_per_rank_and_step(seed):
    """`straggler_at_median` groups each rank's waits by step once; every (rank, step) it predicts is the step
    less the union of that rank's waits in the step (overlapping, touching, negative and absent waits alike)."""
    from kinetoscope.analysis.distributed.straggler import straggler_at_median
    rng = np.random.default_rng(seed)
    n, m, steps = int(rng.integers(2, 9)), int(rng.integers(0, 80)), list(range(int(rng.integers(1, 6))))
    matched = {"dur": rng.integers(-1, 50, (m, n)), "start": rng.integers(0, 1000, (m, n)),
               "wait": rng.integers(-5, 200, (m, n)), "last": rng.integers(0, n, m), "step": rng.choice(steps + [99], m)}
    step_ns = [{s: int(rng.integers(500, 5000)) for s in steps if rng.random() < 0.9} for _ in range(n)]
    stragglers = sorted(set(rng.integers(0, n, 2).tolist()))[:n - 1]  # at least one rank that is not
    got = straggler_at_median(matched, steps, step_ns, stragglers)
    if got is None:  # no step recorded on any rank that is not a straggler: nothing to predict
        assert not any(step_ns[j] for j in range(n) if j not in stragglers)
        return
    late = np.isin(matched["last"], stragglers)
    for rank in got["ranks"]:
        i = rank["index"]
        for row in rank["steps"]:
            if i not in stragglers:
                expected = step_ns[i][row["step"]] - _reference_waits(matched, late, i, row["step"])
                assert row["predicted_us"] == round(expected / 1e3, 3), (i, row)
