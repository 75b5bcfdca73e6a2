"""Issue 26: a sidecar is untrusted input. Every class of the hostile corpus (`hostile_sidecars.py`, made at
test time from a real sidecar) is refused with a named reason, in bounded memory and time, and what is then
served equals a fresh decode of the trace's current bytes; a property-based fuzz flips bytes in real
sidecars and asserts the same; `index` and the readers agree, and `index --force` replaces any sidecar."""
from __future__ import annotations

import gzip
import os
import shutil
import time
import tracemalloc
from pathlib import Path

import hostile_sidecars as hs
import pytest
from conftest import SHARED_TRACES, gloo_rank, requires_shared, write_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kinetoscope import pipeline
from kinetoscope.index import codec, sidecar, signing
from kinetoscope.index.readers import SidecarIndex, report_from_index
from kinetoscope.index.tasks import CHANGED, FRESH, index_trace
from kinetoscope.server import routes
from kinetoscope.server.service import TraceService
from kinetoscope.trace.loader import load_trace
from kinetoscope.trace.storage import confined

READ_BUDGET_BYTES = 64 << 20  # what reading any hostile sidecar of a trace this small may allocate
RESNET = SHARED_TRACES / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz"


def fresh(path: str):
    return load_trace(path, cache_dir=None)


@pytest.fixture(scope="module")
def corpus_source(tmp_path_factory):
    """Two traces, indexed: the good sidecar bytes of each."""
    root = tmp_path_factory.mktemp("source")
    a = write_trace(root / "run" / "a.1.pt.trace.json", gloo_rank(0, world=2))
    b = write_trace(root / "run" / "b.2.pt.trace.json", gloo_rank(1, world=2, slow_rank=1, steps=3))
    for path in (a, b):
        assert index_trace(str(path)).status == "indexed"
    return {**{p.name: (p.read_bytes(), Path(sidecar.sidecar_path(str(p))).read_bytes()) for p in (a, b)},
            "path_a": a, "path_b": b}


def _plant(tmp_path: Path, corpus_source, hostile: bytes) -> str:
    trace_bytes, _good = corpus_source["a.1.pt.trace.json"]
    path = write_trace(tmp_path / "logs" / "run" / "a.1.pt.trace.json", trace_bytes)
    target = Path(sidecar.sidecar_path(str(path)))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(hostile)
    return str(path)


def _refused_in_bounded_memory(path: str) -> str:
    tracemalloc.start()
    started = time.monotonic()
    try:
        model, reason = SidecarIndex().open_model(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert model is None and reason, "a hostile sidecar was used"
    assert peak < READ_BUDGET_BYTES, f"reading it allocated {peak:,} bytes"
    assert time.monotonic() - started < 10
    return reason


def _served_equals_fresh(path: str, logdir: str, reason_part: str) -> None:
    service = TraceService(logdir, cache_dir=None, rescan_s=3600, decode_in_child=False,
                           prepare=pipeline.prepare, index=SidecarIndex())
    try:
        service.scan_now()
        (sid, _f, _), = [e for e in service.snapshot() if e[1].path == path]
        loaded = service.get(sid, wait_s=60)
        assert codec.difference(loaded.model, fresh(path)) is None
        state = routes.status_impl(service, sid)["traces"][0]
        assert state["source"] == "decoded" and reason_part in state["index_reason"], state
    finally:
        service.close()


@pytest.mark.parametrize("name", sorted(hs.CORPUS))
def test_each_hostile_sidecar_is_refused_by_name_and_the_decode_is_served(name, corpus_source, tmp_path):
    build, says = hs.CORPUS[name]
    good = corpus_source["a.1.pt.trace.json"][1]
    path = _plant(tmp_path, corpus_source, build(good))
    if name == "huge_section_claim":  # sparse: the file claims 3 GiB and holds none of it
        target = sidecar.sidecar_path(path)
        os.truncate(target, os.path.getsize(target) + (6 << 30))
        assert report_from_index(path, "a")[0] is None
    reason = _refused_in_bounded_memory(path)
    assert says in reason, reason
    _served_equals_fresh(path, str(tmp_path / "logs"), says)
    # `index` agrees with the readers (never "up to date"), and replaces it
    outcome = index_trace(path)
    assert outcome.status == CHANGED and says in outcome.reason, outcome.reason
    assert SidecarIndex().open_model(path)[1] is None


def test_a_summary_of_the_wrong_types_is_refused(corpus_source, tmp_path):
    build, says = hs.SUMMARY_CORPUS["summary_types"]
    path = _plant(tmp_path, corpus_source, build(corpus_source["a.1.pt.trace.json"][1]))
    entry, reason = report_from_index(path, "a")
    assert entry is None and says in reason, reason
    assert SidecarIndex().digest(path)[0] is None


def test_another_traces_sections_are_refused_even_with_checksums_recomputed(corpus_source, tmp_path):
    good_a, good_b = corpus_source["a.1.pt.trace.json"][1], corpus_source["b.2.pt.trace.json"][1]
    path = _plant(tmp_path, corpus_source, hs.transplant(good_a, good_b))
    reason = _refused_in_bounded_memory(path)
    assert "computed from other bytes than this trace's" in reason
    assert report_from_index(path, "a")[0] is None
    _served_equals_fresh(path, str(tmp_path / "logs"), "other bytes")


def _forged(corpus_source, key: bytes) -> bytes:
    """A sidecar made by this very encoder for trace a's exact bytes, holding trace b's model and figures: every
    checksum, cap and binding is right (the sections carry a's sha256), so only the signature can refuse it."""
    trace_a = corpus_source["a.1.pt.trace.json"]
    identity = sidecar.trace_identity(str(corpus_source["path_a"]), full=True)
    model_b = fresh(str(corpus_source["path_b"]))
    with signing.using(key):
        forged = sidecar.build(identity, model_b, pipeline.prepare(model_b))
    assert trace_a[0] == Path(corpus_source["path_a"]).read_bytes()
    return forged


def test_a_sidecar_forged_with_our_encoder_for_the_exact_bytes_is_refused(corpus_source, tmp_path):
    """The forger knows the format and the trace's bytes, but not the key the reader trusts: refused, named, and
    the decode is served. Signed with the trusted key, the same bytes are used (the key is the boundary)."""
    forged = _forged(corpus_source, b"a key the forger made up, not the reader's")
    path = _plant(tmp_path, corpus_source, forged)
    reason = _refused_in_bounded_memory(path)
    assert "which this reader does not hold" in reason, reason
    assert report_from_index(path, "a")[0] is None
    _served_equals_fresh(path, str(tmp_path / "logs"), "which this reader does not hold")
    assert index_trace(path).status == CHANGED  # index does not call it up to date, and replaces it
    assert SidecarIndex().open_model(path)[1] is None
    trusted = _forged(corpus_source, signing.signing_key())
    _plant(tmp_path, corpus_source, trusted)
    model, reason = SidecarIndex().open_model(path)
    assert reason is None and codec.difference(model, fresh(str(corpus_source["path_b"]))) is None


@pytest.mark.parametrize("edit", ["unsigned", "signature_of_another_header", "header_edited", "bad_signature"])
def test_a_header_not_signed_by_a_trusted_key_is_refused(edit, corpus_source, tmp_path):
    good_a, good_b = corpus_source["a.1.pt.trace.json"][1], corpus_source["b.2.pt.trace.json"][1]
    header, sections = hs.split(good_a)
    if edit == "unsigned":
        header.pop("signature")
        says = "unsigned sidecar"
    elif edit == "signature_of_another_header":
        header["signature"] = hs.split(good_b)[0]["signature"]
        says = "edited after it was written"
    elif edit == "header_edited":
        header["created_unix"] += 1.0
        says = "edited after it was written"
    else:
        header["signature"] = {"key": "0" * 16, "hmac": "x" * 64}
        says = "corrupt sidecar signature"
    path = _plant(tmp_path, corpus_source, hs.join(header, sections, sign=False))
    reason = _refused_in_bounded_memory(path)
    assert says in reason, reason
    _served_equals_fresh(path, str(tmp_path / "logs"), says)


@pytest.mark.parametrize("name", sorted(hs.CORPUS))
def test_each_hostile_sidecar_forged_without_the_key_is_refused(name, corpus_source, tmp_path):
    """The corpus again, as a forger without the key makes it: the old signature kept over edited sections."""
    build, says = hs.CORPUS[name]
    good = corpus_source["a.1.pt.trace.json"][1]
    old_signature = hs.split(good)[0]["signature"]
    hostile = build(good)
    try:
        header, sections = hs.split(hostile)
    except sidecar.SidecarMiss:
        return  # refused before any signature is read (the first test of this corpus names why)
    if name == "huge_section_claim":
        return
    hostile = hs.join({**header, "signature": old_signature}, sections, fix_checksums=False, sign=False)
    path = _plant(tmp_path, corpus_source, hostile)
    reason = _refused_in_bounded_memory(path)
    assert "edited after it was written" in reason or says in reason, reason


def test_a_reader_without_any_key_uses_no_sidecar(corpus_source, tmp_path, monkeypatch):
    path = _plant(tmp_path, corpus_source, corpus_source["a.1.pt.trace.json"][1])
    assert SidecarIndex().open_model(path)[1] is None
    monkeypatch.setenv(signing.KEY_ENV, str(tmp_path / "no-such.key"))
    reason = _refused_in_bounded_memory(path)
    assert "which this reader does not hold" in reason and "no-such.key" not in reason, reason  # no path reaches a browser


def test_a_same_size_same_mtime_edit_in_the_middle_is_caught(tmp_path):
    """99.6% of a trace's bytes lie outside the head-tail checksum: the full sha256 catches an edit there."""
    doc = gloo_rank(0, world=2, steps=1600)
    path = write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", doc)
    assert path.stat().st_size > 4 * sidecar.EDGE_BYTES
    assert index_trace(str(path)).status == "indexed"
    data = bytearray(path.read_bytes())
    at = data.index(b"aten::mm", len(data) // 2)
    data[at:at + 8] = b"aten::MM"
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    _, reason = SidecarIndex().open_model(str(path))
    assert reason.startswith("trace changed since it was indexed: content (sha256)")
    assert report_from_index(str(path), "w")[0] is None
    _served_equals_fresh(str(path), str(tmp_path / "logs"), "content (sha256)")
    assert index_trace(str(path)).status == CHANGED


def test_a_running_service_reloads_when_the_sidecar_changes(corpus_source, tmp_path):
    path = _plant(tmp_path, corpus_source, hs.CORPUS["bad_index"][0](corpus_source["a.1.pt.trace.json"][1]))
    service = TraceService(str(tmp_path / "logs"), cache_dir=None, rescan_s=3600, decode_in_child=False,
                           prepare=pipeline.prepare, index=SidecarIndex())
    try:
        service.scan_now()
        (sid, _f, _), = service.snapshot()
        service.get(sid, wait_s=60)
        assert routes.status_impl(service, sid)["traces"][0]["source"] == "decoded"
        assert index_trace(path).status == CHANGED  # `index` rewrites the sidecar: the span reloads from it
        service.scan_now()
        service.get(sid, wait_s=60)
        assert routes.status_impl(service, sid)["traces"][0]["source"] == "sidecar"
    finally:
        service.close()


def test_a_fifo_sidecar_never_blocks(corpus_source, tmp_path):
    path = _plant(tmp_path, corpus_source, b"")
    hs.make_fifo(Path(sidecar.sidecar_path(path)))
    started = time.monotonic()
    reason = _refused_in_bounded_memory(path)
    assert "a FIFO" in reason and time.monotonic() - started < 5
    assert sidecar.version(path) is not None
    # nor do two of them hold the loading slots: the service (decoder children, as in TensorBoard) serves a decode
    second = write_trace(tmp_path / "logs" / "run" / "b.2.pt.trace.json", corpus_source["b.2.pt.trace.json"][0])
    hs.make_fifo(Path(sidecar.sidecar_path(str(second))))
    service = TraceService(str(tmp_path / "logs"), cache_dir=None, rescan_s=3600, prepare=pipeline.prepare,
                           index=SidecarIndex())
    try:
        service.scan_now()
        for sid, _f, _ in service.snapshot():
            assert service.get(sid, wait_s=60).model.n_events > 0
            assert "a FIFO" in routes.status_impl(service, sid)["traces"][0]["index_reason"]
    finally:
        service.close()


def test_a_sidecar_linked_out_of_the_logdir_is_not_read(corpus_source, tmp_path):
    good = corpus_source["a.1.pt.trace.json"][1]
    path = _plant(tmp_path, corpus_source, b"")
    link = Path(sidecar.sidecar_path(path))
    link.unlink()
    link.symlink_to(hs.outside_sidecar(tmp_path / "outside", good))
    with confined([str(tmp_path / "logs")]):
        reason = _refused_in_bounded_memory(path)
    assert "outside the logdir" in reason
    _served_equals_fresh(path, str(tmp_path / "logs"), "outside the logdir")


def test_index_force_replaces_any_sidecar(corpus_source, tmp_path):
    path = _plant(tmp_path, corpus_source, hs.CORPUS["deep_header"][0](corpus_source["a.1.pt.trace.json"][1]))
    assert index_trace(path, force=True).status == CHANGED
    assert index_trace(path).status == FRESH
    Path(sidecar.sidecar_path(path)).unlink()
    hs.make_fifo(Path(sidecar.sidecar_path(path)))
    assert index_trace(path, force=True).status == CHANGED  # a FIFO is replaced, never opened
    assert SidecarIndex().open_model(path)[1] is None


@requires_shared
def test_a_real_sidecar_passes_every_check(tmp_path):
    path = tmp_path / "logs" / "run" / RESNET.name
    path.parent.mkdir(parents=True)
    shutil.copy(RESNET, path)
    assert index_trace(str(path)).status == "indexed"
    model, reason = SidecarIndex().open_model(str(path))
    assert reason is None and codec.difference(model, fresh(str(path))) is None
    assert index_trace(str(path)).status == FRESH


@pytest.fixture(scope="module")
def fuzz_source(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    path = write_trace(root / "run" / "w.1.pt.trace.json.gz", gzip.decompress(gzip.compress(
        __import__("json").dumps(gloo_rank(0, world=2)).encode())), gz=True)
    assert index_trace(str(path)).status == "indexed"
    return str(path), Path(sidecar.sidecar_path(str(path))).read_bytes(), fresh(str(path))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_flipped_bytes_are_refused_or_change_nothing(fuzz_source, data):
    """Flip bytes of a real sidecar anywhere (header, summary, model), then recompute the section checksums
    or not: the reader refuses it by name, or what it reads equals a fresh decode."""
    path, good, want = fuzz_source
    raw = bytearray(good)
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] ^= data.draw(st.integers(1, 255))
    hostile = bytes(raw)
    if data.draw(st.booleans()):
        try:
            header, sections = hs.split(hostile)
            hostile = hs.join(header, sections)
        except sidecar.SidecarMiss:
            pass  # the header itself broke: use it as it is
    target = Path(sidecar.sidecar_path(path))
    target.write_bytes(hostile)
    try:
        tracemalloc.start()
        model, reason = SidecarIndex().open_model(path)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < READ_BUDGET_BYTES
        if model is None:
            assert reason and not reason.startswith("sidecar unreadable"), reason  # named, not a crash
        else:
            assert codec.difference(model, want) is None
        summary, why = report_from_index(path, "w")
        assert summary is not None or why
    finally:
        target.write_bytes(good)


def test_the_decoder_child_path_publishes_nothing_before_the_traces_hash_matches(tmp_path, monkeypatch):
    """TensorBoard reads a sidecar in a decoder child that sends the checked model before the trace's sha256 is
    compared (the lane index is built meanwhile): for a trace edited in the middle (same size, same mtime),
    nothing from the sidecar is ever published; the lanes served are those of the decode."""
    doc = gloo_rank(0, world=2, steps=1600)
    path = write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", doc)
    assert index_trace(str(path)).status == "indexed"
    data = bytearray(path.read_bytes())
    at = data.index(b"aten::mm", len(data) // 2)
    data[at:at + 8] = b"aten::MM"
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    want = fresh(str(path))
    published = []
    original = TraceService._publish_lanes
    monkeypatch.setattr(TraceService, "_publish_lanes",
                        lambda self, sid, loaded: (published.append(loaded.model), original(self, sid, loaded))[1])
    service = TraceService(str(tmp_path / "logs"), cache_dir=None, rescan_s=3600, prepare=pipeline.prepare,
                           index=SidecarIndex(), stages=pipeline.STAGES)
    try:
        service.scan_now()
        (sid, _f, _), = service.snapshot()
        loaded = service.get(sid, wait_s=60)
        state = routes.status_impl(service, sid)["traces"][0]
        assert state["source"] == "decoded" and "content (sha256)" in state["index_reason"], state
        assert published and all(codec.difference(model, want) is None for model in published)
        assert codec.difference(loaded.model, want) is None
        assert index_trace(str(path)).status == CHANGED  # re-indexed: the child path serves the sidecar
        service.scan_now()
        service.get(sid, wait_s=60)
        assert routes.status_impl(service, sid)["traces"][0]["source"] == "sidecar"
        assert codec.difference(published[-1], want) is None
    finally:
        service.close()


def test_the_trace_hash_runs_under_the_callers_confinement(corpus_source, tmp_path, monkeypatch):
    """The trace's sha256 runs in a thread of its own: it must read under the same roots as its caller, so a
    trace swapped for a link out of the logdir between the cheap checks and the hash is refused, not hashed."""
    from kinetoscope.index import reader
    from kinetoscope.trace.storage import confinement_roots
    seen = []
    original = reader.full_sha256

    def spy(path, stop=None):
        seen.append(confinement_roots())
        return original(path, stop)
    monkeypatch.setattr(reader, "full_sha256", spy)
    path = _plant(tmp_path, corpus_source, corpus_source["a.1.pt.trace.json"][1])
    with confined([str(tmp_path / "logs")]):
        assert SidecarIndex().open_model(path)[1] is None
    assert seen and seen[0] and all(str(tmp_path / "logs") in root or root.startswith(os.path.realpath(tmp_path))
                                    for root in seen[0])
