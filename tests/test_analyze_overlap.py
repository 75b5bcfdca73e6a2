"""`pipeline.analyze_and_report` (issue 29): the half of the work that reads only the model (TableIndex, the
report's `tables_part`, the search index) runs in a second thread beside `analyze`; what comes out is exactly
what the serial calls give, on every shared trace and sample."""
from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from conftest import requires_shared, sample_trace_files, shared_trace_files
from kinetoscope import pipeline
from kinetoscope.analysis import report as report_module
from kinetoscope.analysis.report import analyze, report_entry
from kinetoscope.analysis.tables.search import SearchIndex
from kinetoscope.trace.loader import TraceError, load_trace


def traces() -> list:
    return shared_trace_files() + sample_trace_files()


@pytest.mark.parametrize("path", traces(), ids=str)
def test_the_overlapped_report_is_the_serial_one(path):
    try:
        model = load_trace(str(path), cache_dir=None)
    except TraceError:
        pytest.skip("not a loadable trace")
    done = pipeline.analyze_and_report(model, search=True)
    serial = report_entry(model, analyze(model))
    assert json.dumps(done.report, allow_nan=False) == json.dumps(serial, allow_nan=False)  # values and key order
    search = SearchIndex.build(model)
    assert np.array_equal(done.search.rows, search.rows) and done.search.lowered == search.lowered
    assert pipeline.analyze_and_report(model).search is None  # the CLI asks for no search index


@requires_shared
def test_the_two_halves_run_in_two_threads(monkeypatch):
    path = next(p for p in traces() if "resnet50_num_workers_0" in str(p))
    model = load_trace(str(path), cache_dir=None)
    seen = {}
    real_analyze, real_part = pipeline.analyze, pipeline.tables_part
    both = threading.Barrier(2, timeout=30)  # each half waits for the other to start: fails unless they overlap

    def analyze_(m):
        seen["analyze"] = threading.get_ident()
        both.wait()
        return real_analyze(m)

    def part_(m, **options):
        seen["tables"] = threading.get_ident()
        both.wait()
        return real_part(m, **options)

    monkeypatch.setattr(pipeline, "analyze", analyze_)
    monkeypatch.setattr(pipeline, "tables_part", part_)
    done = pipeline.analyze_and_report(model)
    assert seen["analyze"] != seen["tables"] and done.report["events"] == model.n_events


@requires_shared
def test_a_failing_analysis_waits_for_the_other_half(monkeypatch):
    path = next(p for p in traces() if "resnet50_num_workers_0" in str(p))
    model = load_trace(str(path), cache_dir=None)
    started, finished = threading.Event(), threading.Event()
    real_part = pipeline.tables_part

    def slow_part(m, **options):
        started.set()
        out = real_part(m, **options)
        finished.set()
        return out

    def broken(m):
        assert started.wait(30)  # the other half is running (one not started yet is cancelled instead)
        raise ValueError("boom")

    monkeypatch.setattr(pipeline, "tables_part", slow_part)
    monkeypatch.setattr(pipeline, "analyze", broken)
    with pytest.raises(ValueError, match="boom"):
        pipeline.analyze_and_report(model)
    assert finished.is_set()  # the side thread was not left reading the model behind the caller's back


@requires_shared
@pytest.mark.parametrize("slow", ["analyze", "tables_part"])
def test_health_and_counters_are_computed_by_whichever_thread_is_free_first(slow, monkeypatch):
    """The report's model-only parts (health, counters) go to the thread that is free first: the tables' thread when
    `analyze` takes longer, this one when the tables do; the report is the serial one either way."""
    path = next(p for p in traces() if "resnet50_num_workers_0" in str(p))
    model = load_trace(str(path), cache_dir=None)
    serial = report_entry(model, analyze(model))
    real, other_done, ran = getattr(pipeline, slow), threading.Event(), {}

    def slowed(*args, **options):
        assert other_done.wait(30)  # the other half has done its own work: it is free first
        return real(*args, **options)
    monkeypatch.setattr(pipeline, slow, slowed)
    owner, fast = (pipeline, "tables_part") if slow == "analyze" else (report_module, "savings_ahead")
    real_fast = getattr(owner, fast)

    def fast_(*args, **options):
        out = real_fast(*args, **options)
        other_done.set()
        return out
    monkeypatch.setattr(owner, fast, fast_)

    def recorded(name: str):
        real_part = getattr(report_module, name)

        def run(m):
            ran[name] = threading.current_thread().name
            return real_part(m)
        return run
    for name in ("trace_health", "counters_summary"):  # `report.model_parts` calls them
        monkeypatch.setattr(report_module, name, recorded(name))
    done = pipeline.analyze_and_report(model)
    side = slow == "analyze"
    assert all(name.startswith("kinetoscope-tables") == side for name in ran.values()) and len(ran) == 2, ran
    assert json.dumps(done.report, allow_nan=False) == json.dumps(serial, allow_nan=False)


def test_a_task_run_once_by_the_first_claim_and_its_error_raised_where_the_result_is_asked():
    started, release, calls = threading.Event(), threading.Event(), []

    def task():
        calls.append(threading.current_thread().name)
        started.set()
        assert release.wait(30)
        raise ValueError("broken part")
    once = pipeline._Once(task)
    runner = threading.Thread(target=once.claim, name="first")
    runner.start()
    assert started.wait(30)
    once.claim()  # taken by the other thread: returns at once, runs nothing
    release.set()
    with pytest.raises(ValueError, match="broken part"):
        once.result()  # waits for the first claim, then raises its error here
    runner.join(30)
    assert calls == ["first"]
