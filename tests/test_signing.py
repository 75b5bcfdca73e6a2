"""Sidecar signatures (index/signing.py): who may write a sidecar a reader believes. The key files, their making
and refusals; `index` and `report` end to end with the writer's key, a team's key and a stranger's."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from conftest import REPO, gloo_rank, write_trace
from kinetoscope.index import sidecar, signing
from kinetoscope.index.readers import SidecarIndex
from kinetoscope.index.tasks import index_trace


def test_the_first_index_makes_a_private_key_where_the_config_lives(tmp_path, monkeypatch):
    monkeypatch.delenv(signing.KEY_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    key = signing.signing_key()
    path = tmp_path / "config" / "kinetoscope" / "sidecar.key"
    assert path.is_file() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(key) == 64 and signing.signing_key() == key  # read back, not made twice
    assert signing.trusted_keys() == {signing.key_id(key): key}


def test_the_first_key_file_signs_and_every_one_is_trusted(tmp_path, monkeypatch):
    mine, team = tmp_path / "mine.key", tmp_path / "team.key"
    mine.write_text("m" * 32 + "\n")
    team.write_text("t" * 40)
    monkeypatch.setenv(signing.KEY_ENV, os.pathsep.join([str(mine), str(team)]))
    assert signing.signing_key() == b"m" * 32
    assert set(signing.trusted_keys().values()) == {b"m" * 32, b"t" * 40}
    signature = signing.sign(b"header bytes", b"t" * 40)
    assert signing.unsigned_reason(signature, b"header bytes") is None
    assert "edited after it was written" in signing.unsigned_reason(signature, b"header byteS")
    stranger = signing.sign(b"header bytes", b"s" * 32)
    assert "which this reader does not hold" in signing.unsigned_reason(stranger, b"header bytes")


@pytest.mark.parametrize("kind", ["fifo", "folder", "short", "long"])
def test_an_unusable_key_file_is_named_never_blocks(kind, tmp_path, monkeypatch):
    path = tmp_path / "sidecar.key"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "short":
        path.write_text("tiny")
    else:
        path.write_bytes(b"k" * (signing.MAX_KEY_BYTES + 10))
    monkeypatch.setenv(signing.KEY_ENV, str(path))
    with pytest.raises(signing.SigningKeyError, match="sidecar key file"):
        signing.signing_key()
    assert signing.trusted_keys() == {}


def _cli(*args, env):
    return subprocess.run([sys.executable, "-m", "kinetoscope.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO / "tb_plugin"), **env})


def test_index_then_report_with_the_writers_key_a_teams_key_and_a_strangers(tmp_path):
    logdir = tmp_path / "logs"
    write_trace(logdir / "run" / "w.1.pt.trace.json", gloo_rank(0, world=2))
    team = tmp_path / "team.key"
    team.write_text("team-secret-" * 4)
    done = _cli("index", str(logdir), "--jobs", "1", env={signing.KEY_ENV: str(team)})
    assert done.returncode == 0, done.stderr
    used = _cli("report", str(logdir), "--no-cache", env={signing.KEY_ENV: os.pathsep.join([str(tmp_path / "x.key"), str(team)])})
    assert used.returncode == 0 and "1 of 1 traces read from their index sidecars" in used.stderr, used.stderr
    stranger = tmp_path / "stranger.key"
    stranger.write_text("someone-else-" * 4)
    refused = _cli("report", str(logdir), "--no-cache", env={signing.KEY_ENV: str(stranger)})
    assert refused.returncode == 0 and "which this reader does not hold" in refused.stderr, refused.stderr
    assert "team-secret" not in refused.stderr + refused.stdout and "someone-else" not in refused.stderr


def test_index_says_why_when_it_cannot_sign(tmp_path):
    logdir = tmp_path / "logs"
    write_trace(logdir / "run" / "w.1.pt.trace.json", gloo_rank(0, world=2))
    os.mkfifo(tmp_path / "fifo.key")
    done = _cli("index", str(logdir), env={signing.KEY_ENV: str(tmp_path / "fifo.key")})
    assert done.returncode == 2 and "fifo.key is not a regular file" in done.stderr, done.stderr
    assert not os.path.exists(sidecar.sidecar_path(str(logdir / "run" / "w.1.pt.trace.json")))


def test_a_sidecar_indexed_under_one_key_is_re_indexed_under_another(tmp_path, monkeypatch):
    path = write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", gloo_rank(0, world=2))
    with signing.using(b"first key, handed in by a driver"):
        assert index_trace(str(path)).status == "indexed"
        assert SidecarIndex().open_model(str(path))[1] is None
    assert "which this reader does not hold" in SidecarIndex().open_model(str(path))[1]
    assert index_trace(str(path)).status == "re-indexed"
    assert SidecarIndex().open_model(str(path))[1] is None


def test_a_key_file_others_can_write_signs_and_trusts_nothing(tmp_path, monkeypatch):
    key = tmp_path / "team.key"
    key.write_text("ab" * 32 + "\n")
    for mode in (0o666, 0o620, 0o602):
        key.chmod(mode)
        monkeypatch.setenv(signing.KEY_ENV, str(key))
        signing._cache.clear()
        with pytest.raises(signing.SigningKeyError, match="writable by others"):
            signing.signing_key(create=False)
        assert signing.trusted_keys() == {}
    key.chmod(0o600)
    assert signing.signing_key(create=False) == b"ab" * 32


def test_an_unwritable_logdir_is_named_not_an_internal_error(tmp_path, monkeypatch):
    from kinetoscope.index import writer
    path = write_trace(tmp_path / "logs" / "w.1.pt.trace.json", gloo_rank(0, world=2, steps=2))
    real_mkdir = os.mkdir

    def refused(name, *args, **kwargs):
        if str(name).endswith(".kinetoscope"):
            raise PermissionError(13, "Permission denied")
        return real_mkdir(name, *args, **kwargs)
    monkeypatch.setattr(writer.os, "mkdir", refused)
    outcome = index_trace(str(path), roots=[str(tmp_path / "logs")])
    assert outcome.status == "failed" and "internal error" not in outcome.reason
    assert "Permission denied" in outcome.reason and "not writable" in outcome.reason, outcome.reason


def test_a_task_elsewhere_gets_the_key_id_never_the_key(tmp_path, monkeypatch):
    """Issue 54: the signing key travelled to Dask workers in plain task arguments; now a task gets the key's id
    and signs with its own key file's key of that id, or fails by name."""
    from kinetoscope.index import runner
    path = write_trace(tmp_path / "logs" / "w.1.pt.trace.json", gloo_rank(0, world=2, steps=2))
    outcome = index_trace(str(path), roots=[str(tmp_path / "logs")], key_id="0" * 16)
    assert outcome.status == "failed" and "holds no sidecar key 0000000000000000" in outcome.reason
    kid = signing.key_id(signing.signing_key())
    assert index_trace(str(path), roots=[str(tmp_path / "logs")], key_id=kid).status == "indexed"
    write_trace(tmp_path / "logs" / "w.2.pt.trace.json", gloo_rank(1, world=2, steps=2))  # two: a pool runs them
    sent = []
    monkeypatch.setattr(runner, "_on_pool", lambda *args: sent.append(args) or iter(()))
    runner.run_index(str(tmp_path / "logs"), jobs=2)
    (args,) = sent
    assert args[-1] == kid and not any(isinstance(a, bytes) for a in args)


def test_a_key_file_inside_the_logdir_signs_and_trusts_nothing(tmp_path, monkeypatch):
    from kinetoscope.index import runner
    logdir = tmp_path / "logs"
    write_trace(logdir / "w.1.pt.trace.json", gloo_rank(0, world=2, steps=2))
    key = logdir / "team.key"
    key.write_text("cd" * 32 + "\n")
    key.chmod(0o600)
    monkeypatch.setenv(signing.KEY_ENV, str(key))
    monkeypatch.setattr(signing, "_logdirs", set())
    signing._cache.clear()
    assert signing.signing_key(create=False) == b"cd" * 32  # outside any logdir this process serves: used
    with pytest.raises(signing.SigningKeyError, match="lies inside the logdir"):
        runner.run_index(str(logdir), jobs=1)
    assert signing.trusted_keys() == {}
