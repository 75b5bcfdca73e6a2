"""index/local_cache.py: a second `kinetoscope report` of the same file answers from the analyses cached beside its
model, byte for byte what a fresh decode gives, without decoding or analysing; any entry that is damaged, planted,
of another file, another code or another graph reference is refused by name and the trace is decoded again."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.cli import main as cli_main
from kinetoscope.cli import report as cli_report
from kinetoscope.index import header, local_cache, readers
from kinetoscope.trace.storage import identity

DOC = trace_doc([op("ProfilerStep#1", 0, 100, cat="user_annotation"), op("aten::add", 10, 5), launch(11, 2, corr=1),
                 kernel("k", 20, 3, corr=1)], deviceProperties=[{"id": 0, "name": "GPU"}])


def _report(capsys, *args: str) -> str:
    assert cli_main.main(["report", *args]) == 0
    return capsys.readouterr().out


@pytest.fixture
def traced(tmp_path):
    return str(write_trace(tmp_path / "logs" / "t.pt.trace.json", DOC)), tmp_path / "cache"


def _no_decode(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("decoded")
    monkeypatch.setattr(cli_report, "load_trace", refuse)
    monkeypatch.setattr(cli_report, "analyze_and_report", refuse)


@pytest.mark.parametrize("fmt", ["json", "text", "markdown"])
def test_a_second_report_answers_from_the_cache_as_a_fresh_decode(traced, capsys, monkeypatch, fmt):
    path, cache = traced
    fresh = _report(capsys, "--no-cache", "--format", fmt, path)
    first = _report(capsys, "--cache-dir", str(cache), "--format", fmt, path)
    assert list(cache.glob("*.summary")) and first == fresh
    _no_decode(monkeypatch)
    assert _report(capsys, "--cache-dir", str(cache), "--format", fmt, path) == fresh


def test_a_changed_trace_is_analysed_again(traced, capsys):
    path, cache = traced
    _report(capsys, "--cache-dir", str(cache), "--format", "json", path)
    write_trace(Path(path), trace_doc([op("ProfilerStep#1", 0, 50, cat="user_annotation"), op("aten::mul", 10, 5)]))
    os.utime(path, (time.time() + 5, time.time() + 5))
    again = json.loads(_report(capsys, "--cache-dir", str(cache), "--format", "json", path))
    assert again == json.loads(_report(capsys, "--no-cache", "--format", "json", path))


def _entry(path, cache):
    (entry,) = cache.glob("*.summary")
    return entry


def _miss(path, cache) -> str:
    found, said = readers.report_from_cache(path, "t", cache)
    assert found is None
    try:
        local_cache.load_summary(cache, identity(path), readers.sidecar.reference_identity(path))
    except local_cache.CacheMiss as miss:
        assert (said is not None) == miss.damaged  # a damaged entry is named to the user, an outdated one not
        return miss.reason
    raise AssertionError("the entry was used")


def test_damaged_and_planted_entries_are_refused_by_name(traced, capsys):
    path, cache = traced
    _report(capsys, "--cache-dir", str(cache), "--format", "json", path)
    entry = _entry(path, cache)
    good = entry.read_bytes()
    length = int.from_bytes(good[len(local_cache.MAGIC):len(local_cache.MAGIC) + 8], "little")
    head_end = len(local_cache.MAGIC) + 8 + length
    meta = json.loads(good[len(local_cache.MAGIC) + 8:head_end])

    def planted(data: bytes) -> str:
        entry.write_bytes(data)
        return _miss(path, cache)

    def with_header(**changes) -> bytes:
        text = json.dumps({**meta, **changes}).encode()
        return local_cache.MAGIC + len(text).to_bytes(8, "little") + text + good[head_end:]

    assert "truncated" in planted(good[:-10])
    assert cli_main.main(["report", "--cache-dir", str(cache), "--format", "json", path]) == 0
    assert "cached analyses not used (cached analyses are truncated); decoding" in capsys.readouterr().err
    assert "checksum" in planted(good[:-1] + bytes([good[-1] ^ 1]))
    assert "after its body" in planted(good + b"x")
    assert "this format" in planted(b"garbage" * 4)
    assert "header of" in planted(local_cache.MAGIC + (1 << 40).to_bytes(8, "little"))
    assert "corrupt cached analyses header" in planted(with_header(extra=1))
    assert "where the summary belongs" in planted(with_header(kind="prepared"))
    assert "another file" in planted(with_header(key="0" * 32))
    assert "other analysis code" in planted(with_header(analysis="0" * 16))
    assert "graph reference" in planted(with_header(graph_reference={"path": "x"}))
    assert "more than" in planted(with_header(bytes=1 << 40))
    entry.write_bytes(good)
    assert readers.report_from_cache(path, "t", cache)[0] is not None


def test_a_forged_body_with_its_own_checksum_is_checked_for_its_shape(traced, capsys):
    import hashlib

    from kinetoscope.index import codec
    path, cache = traced
    _report(capsys, "--cache-dir", str(cache), "--format", "json", path)
    body = codec.encode({"report": {"a": 1}, "digest": {"not": "a digest"}})
    header_bytes = json.dumps({"format": local_cache.FORMAT, "kind": "summary", "key": local_cache.cache_key(identity(path)),
                               "analysis": header.analysis_fingerprint(), "graph_reference": None, "bytes": len(body),
                               "sha256": hashlib.sha256(body).hexdigest()}).encode()
    _entry(path, cache).write_bytes(local_cache.MAGIC + len(header_bytes).to_bytes(8, "little") + header_bytes + body)
    assert "digest" in _miss(path, cache)


def test_a_link_or_a_folder_in_its_place_is_refused(traced, capsys, tmp_path):
    path, cache = traced
    _report(capsys, "--cache-dir", str(cache), "--format", "json", path)
    entry = _entry(path, cache)
    outside = tmp_path / "elsewhere.summary"
    shutil.move(entry, outside)
    os.symlink(outside, entry)
    assert "unreadable" in _miss(path, cache)
    entry.unlink()
    entry.mkdir()
    assert "not a regular file" in _miss(path, cache)


def test_a_capture_trace_put_beside_the_trace_refuses_the_entry(traced, capsys):
    path, cache = traced
    _report(capsys, "--cache-dir", str(cache), "--format", "json", path)
    folder = os.path.join(os.path.dirname(path), "capture_traces")
    os.mkdir(folder)
    write_trace(Path(folder) / "capture.pt.trace.json", DOC)
    assert "graph reference" in _miss(path, cache)


def test_the_cache_prunes_summaries_with_the_models(traced, capsys):
    from kinetoscope.trace import cache as model_cache
    path, cache = traced
    _report(capsys, "--cache-dir", str(cache), "--format", "json", path)
    other = write_trace(Path(path).parent / "u.pt.trace.json", DOC)
    _report(capsys, "--cache-dir", str(cache), "--format", "json", str(other))
    model_cache._prune(cache, 1)  # noqa: SLF001 - the cap below every entry: only the newest stays
    assert len(list(cache.glob("*.summary")) + list(cache.glob("*.npz"))) == 1


def _service(logdir: Path, cache: Path, rest=None):
    from kinetoscope import pipeline
    from kinetoscope.server.service import TraceService
    service = TraceService(str(logdir), cache_dir=cache, decode_in_child=False, rescan_s=3600,
                           analyses=readers.AnalysesCache(),
                           stages=(pipeline.prepare_lanes, rest or pipeline.prepare_rest))
    service.scan_now()
    (sid, _, _), *_ = service.snapshot()
    return service, sid


def test_a_restarted_service_serves_a_span_from_the_cached_analyses(tmp_path):
    from conftest import one_step_doc
    from kinetoscope.server import routes
    logdir, cache = tmp_path / "logs", tmp_path / "cache"
    write_trace(logdir / "run" / "w.1.pt.trace.json", one_step_doc(3, spacing=300, step_us=2000))
    first, sid = _service(logdir, cache)
    try:
        first.get(sid, wait_s=30)
        assert routes.status_impl(first, sid)["traces"][0]["analyses"] == "computed"
        answers = [routes.summary_impl(first, sid), routes.lanes_impl(first, sid, width_px=400),
                   routes.tables_impl(first, sid, by="op")]
        deadline = time.monotonic() + 30
        while not list(cache.glob("*.prepared")) and time.monotonic() < deadline:  # written in the background
            time.sleep(0.02)
        assert list(cache.glob("*.prepared"))
    finally:
        first.close()

    def never(model, early):
        raise AssertionError("analysed again")
    again, sid = _service(logdir, cache, rest=never)
    try:
        again.get(sid, wait_s=30)
        state = routes.status_impl(again, sid)["traces"][0]
        assert (state["state"], state["source"], state["analyses"]) == ("ready", "cache", "cache")
        assert [routes.summary_impl(again, sid), routes.lanes_impl(again, sid, width_px=400),
                routes.tables_impl(again, sid, by="op")] == answers
    finally:
        again.close()


def test_a_damaged_cached_analyses_entry_is_computed_again(tmp_path, caplog):
    from conftest import one_step_doc
    from kinetoscope.server import routes
    logdir, cache = tmp_path / "logs", tmp_path / "cache"
    write_trace(logdir / "run" / "w.1.pt.trace.json", one_step_doc(2))
    first, sid = _service(logdir, cache)
    first.get(sid, wait_s=30)
    first.close()
    deadline = time.monotonic() + 30
    while not list(cache.glob("*.prepared")) and time.monotonic() < deadline:
        time.sleep(0.02)
    (entry,) = cache.glob("*.prepared")
    entry.write_bytes(entry.read_bytes()[:-100])
    again, sid = _service(logdir, cache)
    try:
        again.get(sid, wait_s=30)
        assert routes.status_impl(again, sid)["traces"][0]["analyses"] == "computed"
        assert "cached analyses not used (cached analyses are truncated)" in caplog.text
    finally:
        again.close()
