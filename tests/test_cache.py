"""trace.cache: reopening an unchanged trace skips decoding; a changed file misses; bad entries are ignored."""
from __future__ import annotations

import os
import time

import numpy as np
from conftest import kernel, launch, memory, op, trace_doc, write_trace
from kinetoscope.trace import cache, loader
from kinetoscope.trace.model import array_fields
from kinetoscope.trace.storage import identity

DOC = trace_doc([op("aten::add", 10, 5), launch(11, 2, corr=1), kernel("k", 20, 3, corr=1), memory(12, 64, total=64)],
                deviceProperties=[{"id": 0, "name": "GPU"}])


def test_round_trip_is_identical(tmp_path):
    path = str(write_trace(tmp_path / "t.pt.trace.json", DOC))
    fresh = loader.load_trace(path, cache_dir=tmp_path / "c")
    again = cache.load_cached(tmp_path / "c", identity(path))
    assert again is not None
    for name in array_fields():
        assert np.array_equal(getattr(fresh, name), getattr(again, name)), name
    assert (again.names, again.lane_label, again.meta) == (fresh.names, fresh.lane_label, fresh.meta)


def test_cached_reopen_does_not_decode(tmp_path, monkeypatch):
    path = str(write_trace(tmp_path / "t.pt.trace.json", DOC))
    loader.load_trace(path, cache_dir=tmp_path / "c")
    monkeypatch.setattr(loader, "decode_bytes", lambda *a, **k: (_ for _ in ()).throw(AssertionError("decoded")))
    assert loader.load_trace(path, cache_dir=tmp_path / "c").n_events == 3


def test_changed_file_is_decoded_again(tmp_path):
    path = write_trace(tmp_path / "t.pt.trace.json", DOC)
    loader.load_trace(str(path), cache_dir=tmp_path / "c")
    write_trace(path, trace_doc([op("only", 0, 1)]))
    os.utime(path, (time.time() + 5, time.time() + 5))
    assert loader.load_trace(str(path), cache_dir=tmp_path / "c").n_events == 1


def test_corrupt_cache_entry_is_a_miss(tmp_path):
    path = str(write_trace(tmp_path / "t.pt.trace.json", DOC))
    loader.load_trace(path, cache_dir=tmp_path / "c")
    for entry in (tmp_path / "c").glob("*.npz"):
        entry.write_bytes(b"not a zip")
    assert loader.load_trace(path, cache_dir=tmp_path / "c").n_events == 3


def test_unwritable_cache_dir_does_not_fail_the_load(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    path = str(write_trace(tmp_path / "t.pt.trace.json", DOC))
    assert loader.load_trace(path, cache_dir=blocker / "sub").n_events == 3


def test_default_cache_dir_honours_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "x"))
    assert cache.default_cache_dir() == tmp_path / "x"


def test_a_replaced_file_with_the_same_size_and_mtime_is_not_served_stale(tmp_path):
    path = write_trace(tmp_path / "t.pt.trace.json", trace_doc([op("aaaa", 0, 5)]))
    stamp = os.stat(path).st_mtime_ns
    first = loader.load_trace(str(path), cache_dir=tmp_path / "cache")
    replacement = write_trace(tmp_path / "new.json", trace_doc([op("bbbb", 0, 5)]))  # same size
    os.utime(replacement, ns=(stamp, stamp))
    os.replace(replacement, path)  # another inode, size and mtime kept (as cp -p or rsync -t would)
    second = loader.load_trace(str(path), cache_dir=tmp_path / "cache")
    assert (first.names, second.names) == (("aaaa",), ("bbbb",))
    path.write_text(path.read_text().replace("bbbb", "cccc"))  # rewritten in place: same inode, new ctime
    os.utime(path, ns=(stamp, stamp))
    assert loader.load_trace(str(path), cache_dir=tmp_path / "cache").names == ("cccc",)


def test_links_to_one_file_share_one_entry(tmp_path):
    path = write_trace(tmp_path / "real" / "t.pt.trace.json", trace_doc([op("a", 0, 5)]))
    for k in range(5):
        (tmp_path / f"link{k}.pt.trace.json").symlink_to(path)
        loader.load_trace(str(tmp_path / f"link{k}.pt.trace.json"), cache_dir=tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1


def test_stale_temp_files_are_removed_and_the_cap_is_a_setting(tmp_path, monkeypatch):
    (tmp_path / "cache").mkdir()
    stale, fresh = tmp_path / "cache" / "dead.tmp", tmp_path / "cache" / "writing.tmp"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    old = time.time() - 2 * cache.STALE_TMP_S
    os.utime(stale, (old, old))
    monkeypatch.setenv(cache.MAX_BYTES_ENV, "1")  # every entry but the newest goes
    for k in range(3):
        path = write_trace(tmp_path / f"t{k}.pt.trace.json", trace_doc([op(f"op{k}", 0, 5)]))
        loader.load_trace(str(path), cache_dir=tmp_path / "cache")
    assert not stale.exists() and fresh.exists()
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1
