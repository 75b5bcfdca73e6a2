"""`kinetoscope index` sidecars: what they hold equals a local decode, readers use them only when they match
the trace and say why not, they are never half written, and discovery never lists them. Local folders and
fsspec's `memory://` (any other fsspec filesystem goes through the same calls)."""
from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import struct
import sys
import time
from pathlib import Path

import fsspec
import msgspec
import numpy as np
import pytest
from conftest import SAMPLES, gloo_rank, write_trace
from kinetoscope import pipeline
from kinetoscope.cli.main import main as cli_main
from kinetoscope.index import codec, header, sidecar, signing, writer
from kinetoscope.index.readers import SidecarIndex
from kinetoscope.index.runner import run_index
from kinetoscope.index.tasks import CHANGED, FAILED, FRESH, NEW, RESTAMPED, index_trace
from kinetoscope.server import routes
from kinetoscope.server import service as service_module
from kinetoscope.server.plugin import KinetoscopePlugin
from kinetoscope.server.service import TraceService
from kinetoscope.trace.discovery import scan_logdir
from kinetoscope.trace.loader import load_trace
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

sys.path.insert(0, str(SAMPLES))
from synth.multirank import write_job  # noqa: E402

PREFIX = "/data/plugin/kinetoscope"


def local_decode(path: str):
    model = load_trace(path, cache_dir=None)
    return model, pipeline.prepare(model)


def assert_same(path: str) -> None:
    """The sidecar's model and prepared analyses equal a local decode's, field by field."""
    model, prepared = sidecar.open_prepared(path)
    want_model, want_prepared = local_decode(path)
    assert codec.difference(model, want_model) is None
    assert codec.difference(prepared, want_prepared) is None


@pytest.fixture
def job(tmp_path):
    """Four ranks of a 5-rank NCCL job with a straggler (gzipped; rank 4 comes later) and a gloo run (plain), indexed."""
    write_job(tmp_path / "nccl", ranks=5, straggler=2, missing=[4])
    for r in range(2):
        write_trace(tmp_path / "gloo" / f"rank{r}.{10 + r}.pt.trace.json", gloo_rank(r, world=2))
    summary = run_index(str(tmp_path), jobs=1)
    assert [o.status for o in summary.outcomes] == [NEW] * 6
    return tmp_path


def traces_of(root) -> list[str]:
    return [t.path for t in scan_logdir(str(root))]


def test_sidecars_equal_a_local_decode_and_discovery_skips_them(job):
    paths = traces_of(job)
    assert len(paths) == 6  # the sidecars under .kinetoscope/ are not traces
    for path in paths:
        assert os.path.isfile(sidecar.sidecar_path(path))
        assert_same(path)
    header = sidecar.read_header(paths[0])
    assert header["format"] == sidecar.SIDECAR_FORMAT and header["trace"]["size"] == os.path.getsize(paths[0])
    assert len(header["trace"]["sha256"]) == 64 and [s["name"] for s in header["sections"]] == ["summary", "model"]
    # the ranks view of each multi-rank run, combined from the digests, beside the sidecars
    ranks = json.loads((job / "nccl" / ".kinetoscope" / "ranks.json").read_text())
    assert ranks["view"]["ranks_present"] == 4 and [s["rank"] for s in ranks["view"]["stragglers"]] == [2]


def test_index_is_incremental_and_picks_up_new_ranks(job):
    summary = run_index(str(job), jobs=1)
    assert {o.status for o in summary.outcomes} == {FRESH}
    paths, _ = write_job(job / "bigger", ranks=5, straggler=2)
    new = job / "nccl" / paths[4].name
    os.replace(paths[4], new)  # rank 4 of the same job (same distributedInfo) appears
    shutil.rmtree(job / "bigger")
    copied = job / "nccl" / paths[0].name
    os.utime(copied, (time.time() + 5, time.time() + 5))  # same bytes, new mtime (a copy, a sync)
    summary = run_index(str(job), jobs=1)
    status = {o.path: o.status for o in summary.outcomes}
    assert status.pop(str(new)) == NEW
    # same bytes, new mtime: re-stamped after a full checksum, not decoded again
    assert status.pop(str(copied)) == RESTAMPED and set(status.values()) == {FRESH}
    assert SidecarIndex().open(str(copied))[2] is None
    assert summary.ranks["nccl"]["ranks_present"] == 5
    assert_same(str(new))


def test_a_changed_trace_is_re_decoded_and_says_so(job):
    path = traces_of(job)[-1]  # nccl rank 3
    before = sidecar.read_header(path)
    doc = json.loads(gzip.decompress(open(path, "rb").read()))
    doc["traceEvents"] = doc["traceEvents"][: len(doc["traceEvents"]) // 2]
    write_trace(job / "nccl" / os.path.basename(path), doc, gz=True)
    # a reader falls back to decoding, naming the reason
    model, prepared, reason = SidecarIndex().open(path)
    assert model is None and reason.startswith("trace changed since it was indexed: size")
    outcome = index_trace(path)
    assert outcome.status == CHANGED and outcome.reason.startswith("trace changed since it was indexed: size")
    assert sidecar.read_header(path)["trace"]["sha256"] != before["trace"]["sha256"]
    assert_same(path)


def test_same_size_and_mtime_with_other_bytes_is_caught_by_the_head_tail_checksum(tmp_path):
    path = write_trace(tmp_path / "run" / "w.1.pt.trace.json", gloo_rank(0, world=1))
    assert index_trace(str(path)).status == NEW
    stat = os.stat(path)
    data = bytearray(path.read_bytes())
    at = data.index(b"aten::mm")
    data[at:at + 8] = b"aten::MM"  # same length, in the first 64 KiB
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    _, _, reason = SidecarIndex().open(str(path))
    assert reason.startswith("trace changed since it was indexed: content (head-tail checksum)")
    assert index_trace(str(path)).status == CHANGED


def _stored(path: str) -> bytes:
    with open(sidecar.sidecar_path(path), "rb") as handle:
        return handle.read()


def _restore(path: str, data: bytes) -> None:
    with open(sidecar.sidecar_path(path), "wb") as handle:
        handle.write(data)


def _with_header(raw: bytes, **changes) -> bytes:
    header, body = sidecar.split(raw)
    header.update(changes)
    header["signature"] = signing.sign(sidecar.signed_bytes(header))  # a forger holding the key
    blob = msgspec.json.encode(header)
    return sidecar.MAGIC + struct.pack("<Q", len(blob)) + blob + raw[body:]


def test_a_change_to_the_doors_keeps_every_sidecar_valid(tmp_path):
    """The fingerprint covers the code that computes what a sidecar stores (trace/, analysis/, views/,
    pipeline.py): a copy of the package whose routes, CLI and renderers were edited keeps this installation's
    fingerprint, so its sidecars stay valid; an edit to the pipeline or an analysis changes it."""
    package = Path(sidecar.__file__).resolve().parent.parent
    copy = tmp_path / "kinetoscope"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    assert sidecar.code_fingerprint(copy) == sidecar.analysis_fingerprint()
    for door in ("server/routes.py", "server/plugin.py", "cli/report.py", "formats/report.py"):
        with open(copy / door, "a") as out:
            out.write("\n# a change that computes nothing a sidecar stores\n")
    assert sidecar.code_fingerprint(copy) == sidecar.analysis_fingerprint()
    for core in ("pipeline.py", "analysis/judgement/verdict.py"):
        edited = tmp_path / "edited"
        shutil.rmtree(edited, ignore_errors=True)
        shutil.copytree(copy, edited)
        with open(edited / core, "a") as out:
            out.write("\n# a change to what a sidecar stores\n")
        assert sidecar.code_fingerprint(edited) != sidecar.analysis_fingerprint(), core


@pytest.mark.parametrize("damage, reason", [
    (lambda raw: raw[: len(raw) // 2], "truncated sidecar"),
    (lambda raw: raw[:10], "truncated sidecar"),
    (lambda raw: b"", "truncated sidecar"),
    (lambda raw: os.urandom(4096), "not a kinetoscope sidecar"),
    (lambda raw: sidecar.MAGIC + struct.pack("<Q", 1 << 40) + raw[28:], "corrupt sidecar (header of"),
    (lambda raw: sidecar.MAGIC + struct.pack("<Q", 5) + b"{not json", "corrupt sidecar header"),
    (lambda raw: raw[:-100] + bytes(100), "corrupt sidecar (model section fails its checksum)"),
    (lambda raw: _with_header(raw, format=sidecar.SIDECAR_FORMAT + 1),
     f"sidecar format {sidecar.SIDECAR_FORMAT + 1}, this kinetoscope reads {sidecar.SIDECAR_FORMAT}"),
    (lambda raw: _with_header(raw, model_format=1), "sidecar holds model format 1"),
    (lambda raw: _with_header(raw, analysis="0123456789abcdef"), "sidecar computed by other analysis code"),
    (lambda raw: _with_header(raw, sections=[]), "sidecar of another layout (sections []"),
])
def test_bad_sidecars_fall_back_with_a_reason(job, damage, reason):
    path = traces_of(job)[0]
    good = _stored(path)
    _restore(path, damage(good))
    model, prepared, why = SidecarIndex().open(path)
    assert model is None and prepared is None and why.startswith(reason), why
    digest, why_digest = SidecarIndex().digest(path)
    if digest is None:
        assert why_digest
    else:  # the digest is read from the summary section alone: intact, it is the right one
        assert codec.difference(digest, local_decode(path)[1].digest) is None
    # the service decodes instead and says why; index re-indexes it, naming the reason
    service = TraceService(str(job), cache_dir=None, rescan_s=3600, decode_in_child=False, prepare=pipeline.prepare,
                           index=SidecarIndex())
    try:
        service.scan_now()
        sid = next(s for s, f, _ in service.snapshot() if f.path == path)
        assert service.get(sid, wait_s=60).model.n_events > 0
        state = routes.status_impl(service, sid)["traces"][0]
        assert state["source"] == "decoded" and state["index_reason"].startswith(reason)
    finally:
        service.close()
    outcome = index_trace(path)
    if outcome.status == FRESH:  # same size, damage inside a section: only a full check finds it
        assert "section fails its checksum" in reason
        outcome = index_trace(path, verify=True)
    assert outcome.status == CHANGED and outcome.reason.startswith(reason.split(" (")[0]), outcome.reason
    assert_same(path)


def test_a_forged_class_in_a_sidecar_is_refused(job):
    path = traces_of(job)[0]
    def stored(tree) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, __tree__=np.frombuffer(json.dumps(tree).encode(), dtype=np.uint8))
        return buf.getvalue()

    with pytest.raises(codec.CodecError, match="not a kinetoscope class"):
        codec.decode(stored({"$c": "subprocess:Popen", "f": {"args": "true"}}))
    with pytest.raises(codec.CodecError, match="has other fields"):
        codec.decode(stored({"$c": "kinetoscope.analysis.distributed.ranks:RankDigest", "f": {"worker": "x"}}))
    with pytest.raises(codec.CodecError, match="not a stored tree"):
        codec.decode(codec.encode([1, 2])[:-30])
    with pytest.raises(codec.CodecError, match="nested too deeply"):
        codec.decode(stored(json.loads("[" * 100 + "]" * 100)))
    bomb = io.BytesIO()
    np.savez_compressed(bomb, a0=np.zeros(1 << 20), __tree__=np.frombuffer(b'{"$a": "a0"}', dtype=np.uint8))
    with pytest.raises(codec.CodecError, match="is compressed"):
        codec.decode(bomb.getvalue())
    path_model = sidecar.open_prepared(path)[0]
    assert path_model.n_events > 0


def test_a_sidecar_far_larger_than_its_trace_is_not_read(job, monkeypatch):
    path = traces_of(job)[0]
    monkeypatch.setattr(header, "SECTION_CAPS", {"summary": (0, 1), "model": (0, 1)})
    _, _, reason = SidecarIndex().open(path)
    assert reason.startswith("sidecar refused: its model section claims") and "more than a sidecar of" in reason
    with pytest.raises(codec.CodecError, match="not a kinetoscope class"):
        codec._class("os:system")
    with pytest.raises(codec.CodecError, match="is not a record class"):
        codec._class("kinetoscope.index.sidecar:SidecarMiss")


def test_a_reader_never_sees_half_a_sidecar(job):
    """Writers replace the file whole: readers running meanwhile get the old or the new sidecar."""
    path = traces_of(job)[0]
    data = _stored(path)
    errors, stop = [], time.monotonic() + 1.5
    import threading

    def read():
        while time.monotonic() < stop:
            _, _, reason = SidecarIndex().open(path)
            if reason is not None:
                errors.append(reason)

    reader = threading.Thread(target=read)
    reader.start()
    while time.monotonic() < stop:
        sidecar.write(path, data)
    reader.join()
    assert errors == []
    assert not [n for n in os.listdir(os.path.dirname(sidecar.sidecar_path(path))) if n.endswith(".tmp")]


def test_a_failed_trace_is_named_and_the_others_go_on(job, capsys):
    write_trace(job / "nccl" / "rank9.1700000000009.pt.trace.json", '{"traceEvents": [{"ph": "X", "na')
    status = cli_main(["index", str(job), "--jobs", "2"])
    out, err = capsys.readouterr()
    assert status == 1
    assert "failed" in out and "rank9.1700000000009.pt.trace.json" in err
    assert "6 up to date, 1 failed" in out


def test_report_reads_sidecars_and_says_why_not(job, capsys, no_cache):
    assert cli_main(["report", str(job), "--format", "json"]) == 0
    indexed, err = capsys.readouterr()
    assert "6 of 6 traces read from their index sidecars" in err
    assert cli_main(["report", str(job), "--format", "json", "--no-index"]) == 0
    decoded, _ = capsys.readouterr()
    assert json.loads(indexed) == json.loads(decoded)
    path = traces_of(job)[0]
    os.utime(path, (1, 1))  # a new mtime, the same bytes (a copy): the sidecar still holds for it
    assert cli_main(["report", str(job), "--format", "json"]) == 0
    _, err = capsys.readouterr()
    assert "6 of 6 traces" in err
    data = bytearray(Path(path).read_bytes())
    at = data.index(b"aten::mm")
    data[at:at + 8] = b"aten::MM"  # other bytes, same size, the mtime set back
    stat = os.stat(path)
    Path(path).write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert cli_main(["report", str(job), "--format", "json"]) == 0
    _, err = capsys.readouterr()
    assert f"{path}: index sidecar not used (trace changed since it was indexed: content" in err
    assert "5 of 6 traces" in err


def test_a_fresh_plugin_serves_lanes_from_the_sidecar_without_decoding(job, monkeypatch, no_cache):
    def no_decode(*args, **kwargs):
        raise AssertionError("decoded although the sidecar matches")

    def no_write(*args, **kwargs):
        raise AssertionError("a reader wrote to the logdir")

    monkeypatch.setattr(service_module, "load_trace", no_decode)
    monkeypatch.setattr(TraceService, "_decode_in_child", no_decode)
    monkeypatch.setattr(sidecar, "write_file", no_write)  # readers never write
    monkeypatch.setattr(writer, "write_file", no_write)
    plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=str(job), multiplexer=None))
    try:
        apps = plugin.get_plugin_apps()
        runs = json.loads(Client(apps["/runs"]).get(f"{PREFIX}/runs").get_data())
        spans = [s for run in runs["runs"] for w in run["workers"] for s in w["spans"]]
        assert len(spans) == 6
        sid = spans[0]["id"]
        deadline = time.monotonic() + 30
        while True:
            state = json.loads(Client(apps["/status"]).get(f"{PREFIX}/status?span={sid}&load=1").get_data())["traces"][0]
            if state["state"] in ("ready", "error") or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert state["state"] == "ready" and state["source"] == "sidecar" and state["index_reason"] is None
        lanes = Client(apps["/lanes"]).get(f"{PREFIX}/lanes?span={sid}")
        assert lanes.status_code == 200 and json.loads(lanes.get_data())["lanes"]
        # the ranks view of a run from the sidecars' digests alone: no model of the other ranks loaded
        ranks = json.loads(Client(apps["/ranks"]).get(f"{PREFIX}/ranks?run=nccl").get_data())
        assert ranks["pending"] == 0 and [s["rank"] for s in ranks["view"]["stragglers"]] == [2]
        runs = json.loads(Client(apps["/runs"]).get(f"{PREFIX}/runs").get_data())
        first = runs["runs"][0]["workers"][0]["spans"][0]
        assert first["source"] == "sidecar"
    finally:
        plugin.service().close()


def test_memory_filesystem_logdir(no_cache):
    """Index, report and serve a logdir on fsspec's memory:// (in this process: no worker sees it)."""
    fs = fsspec.filesystem("memory")
    root = f"/kinetoscope-index-{os.getpid()}-{time.monotonic_ns()}"
    for r in range(2):
        fs.pipe_file(f"{root}/run/rank{r}.{r}.pt.trace.json", json.dumps(gloo_rank(r, world=2)).encode())
    logdir = f"memory://{root}"
    try:
        summary = run_index(logdir, jobs=4)
        assert summary.executor.startswith("this process") and [o.status for o in summary.outcomes] == [NEW, NEW]
        assert fs.exists(f"{root}/run/.kinetoscope/rank0.0.pt.trace.json.kidx")
        assert fs.exists(f"{root}/run/.kinetoscope/ranks.json")
        assert [t.worker for t in scan_logdir(logdir)] == ["rank0", "rank1"]
        for t in scan_logdir(logdir):
            assert_same(t.path)
        assert {o.status for o in run_index(logdir).outcomes} == {FRESH}
        service = TraceService(logdir, cache_dir=None, rescan_s=3600, prepare=pipeline.prepare, index=SidecarIndex())
        try:
            service.scan_now()
            sid = service.snapshot()[0][0]
            service.request_load(sid, wait_s=30)
            assert routes.status_impl(service, sid)["traces"][0]["source"] == "sidecar"
            assert routes.lanes_impl(service, sid)["lanes"]
        finally:
            service.close()
        fs.pipe_file(f"{root}/run/.kinetoscope/rank1.1.pt.trace.json.kidx", b"garbage" * 10)
        outcome = index_trace(f"{logdir}/run/rank1.1.pt.trace.json")
        assert outcome.status == CHANGED and outcome.reason.startswith("not a kinetoscope sidecar")
    finally:
        fs.rm(root, recursive=True)


def test_a_broken_trace_fails_by_name(tmp_path):
    path = write_trace(tmp_path / "run" / "w.1.pt.trace.json", b"\x00garbage")
    outcome = index_trace(str(path))
    assert outcome.status == FAILED and outcome.reason and outcome.digest is None
    assert not os.path.exists(sidecar.sidecar_path(str(path)))


def test_a_real_tensorboard_opens_an_indexed_logdir_from_its_sidecars(job, tmp_path):
    from test_e2e_tensorboard import PLUGIN, TENSORBOARD, fetch, tensorboard, wait_until
    if not TENSORBOARD.exists():
        pytest.skip("no tensorboard next to the interpreter")
    with tensorboard(job, tmp_path) as base:
        status, _, runs = fetch(f"{base}{PLUGIN}/runs")
        assert status == 200
        spans = {s["file"]: s["id"] for run in runs["runs"] for w in run["workers"] for s in w["spans"]}
        assert len(spans) == 6 and not any(name.endswith(".kidx") for name in spans)
        sid = next(iter(spans.values()))

        def ready():
            state = fetch(f"{base}{PLUGIN}/status?span={sid}&load=1")[2]["traces"][0]
            return state if state["state"] == "ready" else None

        state = wait_until(ready, 60)
        assert state["source"] == "sidecar" and state["index_reason"] is None
        status, _, lanes = fetch(f"{base}{PLUGIN}/lanes?span={sid}")
        assert status == 200 and lanes["lanes"]


def test_a_killed_pool_worker_loses_no_trace(tmp_path):
    """The local pool: a worker process killed mid-run breaks the pool; its unfinished traces go to a new one."""
    import threading

    import psutil
    write_job(tmp_path / "job", ranks=8, steps=4, ops_per_step=1500)
    done: list = []
    thread = threading.Thread(target=lambda: done.append(run_index(str(tmp_path), jobs=2)))
    thread.start()
    me, killed = psutil.Process(), None
    deadline = time.monotonic() + 60
    while killed is None and time.monotonic() < deadline and thread.is_alive():
        workers = [c for c in me.children(recursive=True) if "spawn_main" in " ".join(c.cmdline())]
        if len(workers) == 2:  # kill at once: later, on a quiet machine, the pool may already be done
            workers[0].kill()
            killed, original = workers[0].pid, {w.pid for w in workers}
        time.sleep(0.05)
    thread.join(300)
    assert killed is not None
    summary = done[0]
    assert len(summary.outcomes) == 8 and {o.status for o in summary.outcomes} == {NEW}
    pids = {int(o.host.rsplit(":", 1)[1]) for o in summary.outcomes}
    assert killed not in pids and pids - original  # the broken pool's traces ran on a new one
    for t in scan_logdir(str(tmp_path)):
        sidecar.open_summary(t.path)


def test_a_restamp_signs_what_was_checked_never_what_is_at_the_path_after(tmp_path, monkeypatch):
    """Issue 54 N5: `index` checked a stale-stamped sidecar, then re-opened it by path and re-signed whatever was
    there: a sidecar swapped in the moment the check closed the file was signed with the indexer's own key."""
    path = write_trace(tmp_path / "logs" / "w.1.pt.trace.json", gloo_rank(0, world=2, steps=3))
    assert index_trace(str(path)).status == NEW
    target = Path(sidecar.sidecar_path(str(path)))
    original = target.read_bytes()
    body = len(header.MAGIC) + 8 + struct.unpack("<Q", original[len(header.MAGIC):len(header.MAGIC) + 8])[0]
    os.utime(path, (time.time() + 5, time.time() + 5))  # same bytes, new mtime: a re-stamp
    real = sidecar.restamp_checked

    forged = bytearray(original)
    forged[-100:] = b"x" * 100  # the attacker's content

    def swapped_then_restamped(*args):  # a new file renamed over the path the moment the check is done
        spare = target.with_name("forged.tmp")
        spare.write_bytes(bytes(forged))
        os.replace(spare, target)
        return real(*args)
    monkeypatch.setattr(sidecar, "restamp_checked", swapped_then_restamped)
    assert index_trace(str(path)).status == RESTAMPED
    stamped = target.read_bytes()
    new_body = len(header.MAGIC) + 8 + struct.unpack("<Q", stamped[len(header.MAGIC):len(header.MAGIC) + 8])[0]
    assert stamped[new_body:] == original[body:]  # the checked sections, not the forgery
    monkeypatch.setattr(sidecar, "restamp_checked", real)
    assert index_trace(str(path)).status == FRESH  # and it is believed as it is

    def overwritten_then_restamped(*args):  # the same file written over in place: its sections fail their checksums
        target.write_bytes(bytes(forged))
        return real(*args)
    os.utime(path, (time.time() + 9, time.time() + 9))
    monkeypatch.setattr(sidecar, "restamp_checked", overwritten_then_restamped)
    assert index_trace(str(path)).status == CHANGED  # not re-stamped: decoded and written afresh
    monkeypatch.setattr(sidecar, "restamp_checked", real)
    assert index_trace(str(path)).status == FRESH


def test_a_refused_summary_is_read_once_until_its_sidecar_changes(tmp_path, monkeypatch):
    """Issue 54 N6: every ranks request re-read a refused summary section (up to its cap) in TensorBoard's process."""
    logdir = tmp_path / "logs"
    path = write_trace(logdir / "run" / "w.1.pt.trace.json", gloo_rank(0, world=2, steps=2))
    assert index_trace(str(path)).status == NEW
    target = Path(sidecar.sidecar_path(str(path)))
    data = bytearray(target.read_bytes())
    with sidecar.SidecarFile(str(target)) as reader:
        head, body = header.parse_header(reader.read, reader.size)
    summary = next(s for s in head["sections"] if s["name"] == "summary")
    data[body + summary["offset"] + summary["bytes"] // 2] ^= 0xFF  # no longer matches its checksum: refused
    target.write_bytes(bytes(data))
    service = TraceService(str(logdir), cache_dir=None, rescan_s=3600, decode_in_child=False, prepare=pipeline.prepare,
                           index=SidecarIndex())
    try:
        service.scan_now()
        (sid, _, _), = service.snapshot()
        monkeypatch.setattr(service, "request_load", lambda *a, **k: None)  # the span never loads: only the sidecar
        reads = []
        real = SidecarIndex._read_digest
        monkeypatch.setattr(SidecarIndex, "_read_digest", staticmethod(lambda p: reads.append(p) or real(p)))
        assert [service.digest(sid) for _ in range(5)] == [None] * 5
        assert len(reads) == 1
        os.utime(target, (time.time() + 5, time.time() + 5))  # the sidecar changed: read again, once
        assert [service.digest(sid) for _ in range(3)] == [None] * 3
        assert len(reads) == 2
    finally:
        service.close()


def test_a_summary_section_larger_than_an_eighth_of_its_trace_is_refused_unread():
    assert header.section_cap("summary", 8 << 20) == (1 << 20) + (1 << 20)
    assert header.section_cap("model", 1000) == (8 << 20) + 32_000
