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
from kinetoscope.analysis.ranks import rank_digest, ranks_view
from kinetoscope.analysis.report import analyze
from kinetoscope.analysis.whatif import parse_edit, whatif
from kinetoscope.trace.loader import decode_bytes

sys.path.insert(0, str(SAMPLES))
from synth.pairs import make_pair  # noqa: E402


def model(doc: dict):
    return decode_bytes(json.dumps(doc).encode())


@pytest.mark.parametrize("name, tolerance", [("sync_removed", 0.03), ("launch_fused", 0.02)])
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
