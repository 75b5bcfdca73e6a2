"""The decoder child's outcome through shared memory (server/handover.py): the same model, its columns mapped
read-only with no copy, no file left behind, and the pipe when shared memory cannot take it."""
from __future__ import annotations

import io
import os
import pickle
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_TRACES, requires_shared
from kinetoscope.index import codec
from kinetoscope.server import handover
from kinetoscope.trace.loader import load_trace

RESNET = SHARED_TRACES / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz"


def _roundtrip(outcome: tuple) -> tuple:
    stream = io.BytesIO()
    handover.send(outcome, stream)
    stream.seek(0)
    return handover.receive(stream), stream.getbuffer().nbytes


def _left(folder) -> list[str]:
    """Handover files left in the shared folder or in this user's folder inside it."""
    private = os.path.join(folder, f"kinetoscope-{os.getuid()}")
    return [n for f in (folder, private) if os.path.isdir(f) for n in os.listdir(f) if n.startswith(handover.PREFIX)]


def test_large_columns_come_through_shared_memory_read_only(tmp_path, monkeypatch):
    monkeypatch.setenv(handover.SHM_DIR_ENV, str(tmp_path))
    columns = {"ts": np.arange(2_000_000, dtype=np.int64), "dur": np.arange(3, dtype=np.int32), "odd": np.ones(7, np.float32)}
    (tag, got), sent = _roundtrip(("ok", columns))
    assert tag == "ok" and sent < 4096  # the pipe carried the head only
    for key, value in columns.items():
        assert np.array_equal(got[key], value) and got[key].dtype == value.dtype
        assert not got[key].flags.writeable
    assert got["ts"].ctypes.data % handover.ALIGN == 0
    assert _left(tmp_path) == []  # the name is removed once mapped


def test_small_outcomes_and_a_missing_folder_go_through_the_pipe(tmp_path, monkeypatch):
    monkeypatch.setenv(handover.SHM_DIR_ENV, str(tmp_path / "no-such-folder"))
    big = np.arange(2_000_000, dtype=np.int64)
    (tag, got), sent = _roundtrip(("ok", big))
    assert np.array_equal(got, big) and sent > big.nbytes
    monkeypatch.setenv(handover.SHM_DIR_ENV, str(tmp_path))
    (_, small, _), sent = _roundtrip(("error", "named", False))
    assert small == "named" and _left(tmp_path) == []


@pytest.mark.parametrize("forgery", ["not_a_handover_name", "traversal", "short_file", "missing"])
def test_a_frame_that_does_not_hold_together_is_refused(forgery, tmp_path, monkeypatch):
    monkeypatch.setenv(handover.SHM_DIR_ENV, str(tmp_path))
    name = handover.PREFIX + "0" * 24
    (Path(handover.private_dir()) / name).write_bytes(b"x" * 10)
    frame = {"not_a_handover_name": ("shm", "passwd", [(0, 10)], b""),
             "traversal": ("shm", handover.PREFIX + "/../../etc/passwd", [(0, 10)], b""),
             "short_file": ("shm", name, [(0, 1 << 20)], b""),
             "missing": ("shm", handover.PREFIX + "1" * 24, [(0, 10)], b"")}[forgery]
    stream = io.BytesIO(pickle.dumps(frame))
    with pytest.raises((ValueError, OSError)):
        handover.receive(stream)


def test_the_files_live_in_a_folder_only_this_user_may_enter(tmp_path, monkeypatch):
    # issue 54 N7: in a shared folder without the sticky bit another user could put a file of the same owner (a
    # hard link to another handover file) at the name the parent then maps
    monkeypatch.setenv(handover.SHM_DIR_ENV, str(tmp_path))
    big = ("ok", np.arange(2_000_000, dtype=np.int64))
    folder = Path(handover.private_dir())
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and folder.parent == tmp_path
    stream = io.BytesIO()
    handover.send(big, stream)
    assert stream.getbuffer().nbytes < 4096 and len(_left(tmp_path)) == 1  # through the private folder
    stream.seek(0)
    folder.chmod(0o755)  # opened to others meanwhile: refused, never mapped
    with pytest.raises(ValueError, match="open to others"):
        handover.receive(stream)
    (_, got), sent = _roundtrip(big)  # a folder open to others takes nothing: the pipe carries it
    assert sent > big[1].nbytes and np.array_equal(got, big[1])
    folder.chmod(0o700)
    for leftover in folder.iterdir():
        leftover.unlink()
    folder.rmdir()
    os.symlink(tmp_path / "elsewhere", folder)  # a link at the folder's name: not followed, the pipe again
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (_, got), sent = _roundtrip(big)
    assert sent > big[1].nbytes and os.listdir(tmp_path / "elsewhere") == []


def test_sweep_removes_the_files_of_children_no_longer_running(tmp_path, monkeypatch):
    # issue 54 N9: a killed child's file stayed an hour in shared memory
    monkeypatch.setenv(handover.SHM_DIR_ENV, str(tmp_path))
    folder = Path(handover.private_dir())
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    dead, alive = folder / f"{handover.PREFIX}{done.pid}-ab", folder / f"{handover.PREFIX}{os.getpid()}-cd"
    for path in (dead, alive):
        path.write_bytes(b"x")
    handover.sweep()
    assert not dead.exists() and alive.exists()


def test_sweep_removes_only_stale_handover_files_of_this_user(tmp_path, monkeypatch):
    monkeypatch.setenv(handover.SHM_DIR_ENV, str(tmp_path))
    stale, fresh, other = tmp_path / (handover.PREFIX + "a"), tmp_path / (handover.PREFIX + "b"), tmp_path / "mine.bin"
    for path in (stale, fresh, other):
        path.write_bytes(b"x")
    old = os.path.getmtime(stale) - 2 * handover.STALE_S
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    handover.sweep()
    assert not stale.exists() and fresh.exists() and other.exists()


@requires_shared
def test_a_real_model_through_a_decoder_child_is_the_same_model(tmp_path, monkeypatch):
    from kinetoscope.server import decoder
    monkeypatch.setenv(handover.SHM_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(handover.SHM_MIN_ENV, "0")
    child = decoder.start(str(RESNET), None, lambda share: None)
    model = decoder.result(child, str(RESNET))
    assert codec.difference(model, load_trace(str(RESNET), cache_dir=None)) is None
    assert not model.ts_ns.flags.writeable and _left(tmp_path) == []
