"""Routes that replay the trace (critical_path, whatif) are computed once per span and bounded in concurrency
(issue 54 N2: critical_path was recomputed on every request; 32 clients timed out at 30 s).

What they compute is kept with the span (`service.derived`, keyed by the span and the request); at most
COSTLY_SLOTS run at once, and a request that waits longer than COSTLY_WAIT_S for a slot is a named 503.
"""
from __future__ import annotations

import threading

import pytest
from conftest import one_span_service, one_step_doc
from kinetoscope.analysis.whatif import critical_path
from kinetoscope.server import replays, routes
from kinetoscope.server.errors import Busy


@pytest.fixture
def span(tmp_path):
    with one_span_service(one_step_doc(kernels=20), tmp_path / "logs") as service_and_sid:
        yield service_and_sid


def test_the_critical_path_is_walked_once_per_span(span, monkeypatch):
    service, sid = span
    walks = []
    real = critical_path.critical_paths
    monkeypatch.setattr(replays, "critical_paths", lambda *a, **k: walks.append(k) or real(*a, **k))
    first = replays.critical_path_impl(service, sid)
    again = replays.critical_path_impl(service, sid)
    assert first == again and len([w for w in walks if not w]) == 1  # the whole-trace walk: once
    window = replays.critical_path_impl(service, sid, start_us=0.0, end_us=500.0)
    assert window["total"] >= 1 and len([w for w in walks if not w]) == 1  # the window reads the kept walk


def test_a_whatif_answer_is_kept_per_edit_list(span, monkeypatch):
    service, sid = span
    replayer = replays._replayer(service, sid, routes.load_ready(service, sid))
    applied = []
    real = type(replayer).apply
    monkeypatch.setattr(type(replayer), "apply", lambda self, edits=(): applied.append(edits) or real(self, edits))
    a = replays.whatif_impl(service, sid, ["host:aten::mm*0"])
    b = replays.whatif_impl(service, sid, ["host:aten::mm*0"])
    c = replays.whatif_impl(service, sid, ["host:aten::mm*0.5"])
    assert a == b and a != c and len(applied) == 2
    assert replays._replayer(service, sid, routes.load_ready(service, sid)) is replayer  # the dependencies read once


def test_a_request_that_waits_too_long_for_a_slot_is_a_named_503(span, monkeypatch):
    service, sid = span
    monkeypatch.setattr(replays, "COSTLY_WAIT_S", 0.05)
    held = [replays._costly.acquire(timeout=1) for _ in range(replays.COSTLY_SLOTS)]
    try:
        with pytest.raises(Busy, match="replays are running") as busy:
            replays.critical_path_impl(service, sid)
        assert busy.value.http_code == 503 and ("Retry-After", "2") in busy.value.headers()
    finally:
        for ok in held:
            if ok:
                replays._costly.release()
    assert replays.critical_path_impl(service, sid)["total"] == 1  # a slot free again: answered


def test_concurrent_requests_share_the_slots(span):
    service, sid = span
    answers, errors = [], []

    def ask():
        try:
            answers.append(replays.whatif_impl(service, sid, ["host:aten::mm*0"])["saving_us"])
        except Exception as exc:  # noqa: BLE001 - collected and asserted on below
            errors.append(exc)
    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and len(set(answers)) == 1 and len(answers) == 8


def test_a_kept_answer_needs_no_slot(span, monkeypatch):
    service, sid = span
    first = replays.critical_path_impl(service, sid)
    shown = replays.whatif_impl(service, sid, ["host:aten::mm*0"])
    monkeypatch.setattr(replays, "COSTLY_WAIT_S", 0.05)
    held = [replays._costly.acquire(timeout=1) for _ in range(replays.COSTLY_SLOTS)]
    try:  # every slot taken by long replays: what is kept is still answered at once
        assert replays.critical_path_impl(service, sid) == first
        assert replays.whatif_impl(service, sid, ["host:aten::mm*0"]) == shown
        with pytest.raises(Busy):
            replays.whatif_impl(service, sid, ["host:aten::mm*0.25"])  # a new one waits for a slot
    finally:
        for ok in held:
            if ok:
                replays._costly.release()


def test_every_step_in_view_keeps_its_share_of_the_path(tmp_path, monkeypatch):
    # issue 55: a cap over the whole answer left the later steps of a window with no segment at all
    from conftest import kernel, launch, op, trace_doc
    events = []
    for s in range(6):
        t0 = s * 2000
        # each step: 40 times host work, a launch, its kernel and a sync on it, the step ending with the last sync:
        # a path of 161 segments per step (host, launch, kernel, sync, host ...)
        events.append(op(f"ProfilerStep#{s + 1}", t0, 10 + 45 * 39 + 45, cat="user_annotation"))
        for k in range(40):
            t, c = t0 + 10 + 45 * k, s * 100 + k + 1
            events += [op("aten::add", t, 40), launch(t + 2, 5, corr=c), kernel("k", t + 10, 20, corr=c),
                       op("cudaStreamSynchronize", t + 8, 24, cat="cuda_runtime")]
    monkeypatch.setattr(replays, "MAX_PATH_SEGMENTS", 60)
    with one_span_service(trace_doc(events), tmp_path / "logs") as (service, sid):
        answer = replays.critical_path_impl(service, sid, start_us=0.0, end_us=12_000.0)
    steps = answer["steps"]
    assert len(steps) == 6 and all(step["segments"] for step in steps)  # none left empty
    assert sum(len(step["segments"]) for step in steps) <= 60
    assert any(step.get("segments_omitted") for step in steps)  # the planted paths are longer than their share
    for step in steps:
        assert len(step["segments"]) <= 10
        if step["segments_total"] > 10:  # a longer path keeps its longest segments and says what it left out
            assert step["segments_omitted"] > 0 and step["omitted_us"] > 0
            starts = [seg["start_us"] for seg in step["segments"]]
            assert starts == sorted(starts)
