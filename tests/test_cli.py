"""kinetoscope CLI: formats, exit statuses, failures reported without stopping the other traces."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import kernel, launch, op, trace_doc, write_trace
from kinetoscope.cli.main import main
from kinetoscope.trace import heap


@pytest.fixture
def logdir(tmp_path, no_cache):
    write_trace(tmp_path / "logs" / "run" / "w.1.pt.trace.json", trace_doc([op("a", 0, 5), launch(1, 1, corr=1), kernel("k", 3, 2, 1)]))
    write_trace(tmp_path / "logs" / "run" / "w.2.pt.trace.json.gz", trace_doc([op("b", 0, 5)]), gz=True)
    return tmp_path / "logs"


def test_json_document(logdir, capsys):
    assert main(["report", str(logdir), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(t["run"], t["worker"], t["span"], t["error"]) for t in doc["traces"]] == [("run", "w", "1", None), ("run", "w", "2", None)]
    first = doc["traces"][0]
    assert first["events"] == 3 and first["duration_us"] == 5.0 and first["devices"][0]["busy_us"] == 2.0
    assert {"steps", "launch", "memory", "verdict", "breakdown"} <= set(first)
    (run,) = doc["runs"]
    assert run["run"] == "run" and run["spans"] == 2 and run["verdict"]["bound"] == "not enough data"


@pytest.mark.parametrize("fmt, marker", [("text", "Verdict: "), ("markdown", "**Verdict: ")])
def test_readable_formats(logdir, capsys, fmt, marker):
    assert main(["report", str(logdir), "--format", fmt, "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert out.count(marker) == 2 and out.count("Run verdict: not enough data") == 1  # above the run's two spans
    assert out.index("Run verdict") < out.index(marker)


def test_failed_trace_exit_1_and_others_still_reported(logdir, capsys):
    write_trace(logdir / "run" / "w.3.pt.trace.json", b'{"traceEvents": [')
    assert main(["report", str(logdir), "--format", "json"]) == 1
    captured = capsys.readouterr()
    traces = json.loads(captured.out)["traces"]
    assert [t["error"] is None for t in traces] == [True, True, False]
    assert "w.3.pt.trace.json" in traces[2]["error"]["message"] and "truncated" in captured.err


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    with pytest.raises(SystemExit) as info:
        main(["report", "--format", "yaml", str(tmp_path)])
    assert info.value.code == 2


def test_single_file_and_empty_logdir(logdir, tmp_path, capsys):
    assert main(["report", str(logdir / "run" / "w.1.pt.trace.json"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["traces"][0]["span"] == "1"
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 1


@pytest.mark.parametrize("nesting", ["args", "top"])
def test_deep_nesting_is_a_named_error_and_the_good_files_are_reported(logdir, capsys, nesting):
    deep = "[" * 100_000 + "]" * 100_000
    head, tail = (('{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1, "args": {"x": ', "}}]}")
                  if nesting == "args" else ('{"traceEvents": [], "x": ', "}"))
    text = head + deep + tail
    write_trace(logdir / "run" / "w.3.pt.trace.json", text)
    assert main(["report", str(logdir), "--format", "json", "--no-cache"]) == 1
    captured = capsys.readouterr()
    traces = json.loads(captured.out)["traces"]
    assert [t["error"] is None for t in traces] == [True, True, False]
    assert "w.3.pt.trace.json" in traces[2]["error"]["message"] and "nested too deeply" in traces[2]["error"]["message"]
    assert "Traceback" not in captured.err


def test_non_regular_files_are_refused_at_once(tmp_path, capsys):
    import os
    fifo = tmp_path / "pipe.pt.trace.json"
    os.mkfifo(fifo)
    assert main(["report", str(fifo), "--no-cache"]) == 1  # a FIFO would block the reader forever
    assert "not a regular file (a FIFO)" in capsys.readouterr().err
    if os.path.exists("/dev/zero"):
        assert main(["report", "/dev/zero", "--no-cache"]) == 1  # a device would never end
        assert "not a regular file (a device)" in capsys.readouterr().err


def test_a_failing_analysis_names_the_file_and_spares_the_others(logdir, capsys, monkeypatch):
    from kinetoscope import pipeline

    def broken(model):
        if model.n_events == 1:  # only the second file
            raise ValueError("boom")
        return real(model)
    real = pipeline.analyze
    monkeypatch.setattr(pipeline, "analyze", broken)
    assert main(["report", str(logdir), "--format", "json", "--no-cache"]) == 1
    traces = json.loads(capsys.readouterr().out)["traces"]
    assert traces[0]["error"] is None and "internal error while analysing (ValueError: boom)" in traces[1]["error"]["message"]


def test_budgets_are_cli_options_too(tmp_path, capsys, monkeypatch):
    import gzip

    from kinetoscope.trace import budgets
    monkeypatch.delenv(budgets.INFLATE_RATIO_ENV, raising=False)
    monkeypatch.delenv(budgets.INFLATE_BYTES_ENV, raising=False)
    path = tmp_path / "spaces.pt.trace.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (4 << 20) + b"]}"))
    assert main(["report", str(path), "--no-cache", "--max-inflate-bytes", str(1 << 20)]) == 1
    assert "KINETOSCOPE_MAX_INFLATE_BYTES" in capsys.readouterr().err
    assert budgets.INFLATE_BYTES_ENV not in os.environ  # the option held for that run only
    assert main(["report", str(path), "--no-cache"]) == 0  # 4 MiB is well within the default budget


@pytest.mark.parametrize("setting, expected", [(None, "1"), ("3", "3")])
def test_cli_keeps_openblas_to_one_thread_unless_told(setting, expected):
    """The CLI, imported before numpy, asks OpenBLAS for one thread (its threads, one per core, would only spin beside
    the decode's); a user's own setting stands. The decoder child TensorBoard starts is given the same default."""
    import subprocess
    import sys

    from kinetoscope.server import decoder

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if setting is not None:
        env["OPENBLAS_NUM_THREADS"] = setting
    code = ("import os, kinetoscope.cli.main, numpy\nnumpy.ones((64, 64)) @ numpy.ones((64, 64))\n"
            "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')) if os.path.isdir('/proc/self/task') else 0)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    value, threads = out.split()
    assert value == expected
    if setting is None and threads != "0":
        assert threads == "1"  # no BLAS thread beside the main one (on 2 cores OpenBLAS would start one)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("OPENBLAS_NUM_THREADS", raising=False)
        if setting is not None:
            patch.setenv("OPENBLAS_NUM_THREADS", setting)
        assert dict(decoder.spawn_key()[1])["OPENBLAS_NUM_THREADS"] == expected


_HEAPS = """
import ctypes, sys, threading
if sys.argv[1] == "cli":
    import kinetoscope.cli
libc = ctypes.CDLL(None)
libc.malloc.restype = libc.open_memstream.restype = ctypes.c_void_p
held, ready = [], threading.Barrier(5)
def allocate():
    held.append(libc.malloc(1 << 16))  # this thread's first allocation: glibc gives it an arena unless told otherwise
    ready.wait()
threads = [threading.Thread(target=allocate) for _ in range(4)]
for t in threads:
    t.start()
ready.wait()
buf, size = ctypes.c_char_p(), ctypes.c_size_t()
stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
libc.malloc_info(0, ctypes.c_void_p(stream))
libc.fflush(ctypes.c_void_p(stream))
print(buf.value.decode().count("<heap nr="))
"""


@pytest.mark.skipif(heap._GLIBC is None, reason="glibc only (malloc_info)")
@pytest.mark.parametrize("setting", [None, "4"])
def test_cli_allocates_from_one_malloc_arena_unless_told(setting):
    """Imported, the CLI asks glibc for one malloc arena: the threads that allocate beside the main one use its heap
    (what the decode's threads free, the analyses reuse) instead of one heap each; a user's MALLOC_ARENA_MAX stands.
    The decoder child TensorBoard starts gets the same default by its environment."""
    import subprocess
    import sys

    from kinetoscope.server import decoder

    env = {k: v for k, v in os.environ.items() if k != heap.ARENA_ENV}
    if setting is not None:
        env[heap.ARENA_ENV] = setting

    def heaps(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", _HEAPS, mode], env=env, capture_output=True, text=True,
                             timeout=120, check=True).stdout
        return int(out)

    assert heaps("plain") > 1  # glibc's own default: an arena for each new thread (the test means something)
    assert heaps("cli") == (1 if setting is None else heaps("plain"))
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(heap.ARENA_ENV, raising=False)
        if setting is not None:
            patch.setenv(heap.ARENA_ENV, setting)
        assert dict(decoder.spawn_key()[1])[heap.ARENA_ENV] == (setting or "1")


def test_the_command_ends_with_its_output_whole_and_its_exit_status(tmp_path):
    """`kinetoscope` (here `python -m kinetoscope.cli`) ends the process without tearing the interpreter down
    (`main.run`): what it printed arrives whole through a pipe, and its exit status is main's (1: a trace failed)."""
    import subprocess
    import sys

    bad = tmp_path / "bad.pt.trace.json"
    bad.write_text('{"traceEvents": [')
    sample = next(iter(sorted((Path(__file__).resolve().parent.parent / "samples" / "logs").rglob("*.pt.trace.json*"))))
    command = [sys.executable, "-m", "kinetoscope.cli", "report", "--no-cache", "--format", "json"]
    done = subprocess.run(command + [str(sample)], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["traces"][0]["error"] is None
    done = subprocess.run(command + [str(sample), str(bad)], capture_output=True, timeout=300)
    assert done.returncode == 1
    assert [t["error"] is None for t in json.loads(done.stdout)["traces"]] == [True, False]
    several = sample.parent.parent  # every scenario of that recording: more than a pipe holds (64 KiB)
    reader = subprocess.Popen(command + [str(several)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout.read(10) == b'{\n "schema'
    reader.stdout.close()  # `kinetoscope report ... | head -c 10`
    assert reader.wait(timeout=300) == 1
    assert b"Traceback" not in reader.stderr.read()


def test_a_local_trace_is_reported_without_importing_fsspec():
    """fsspec (with asyncio, ssl and email: about 35 ms of a small report's 0.5 s) is for remote paths; a local file
    named on the command line is resolved with os.path (a folder is still listed by fsspec)."""
    import subprocess
    import sys

    sample = next(iter(sorted((Path(__file__).resolve().parent.parent / "samples" / "logs").rglob("*.pt.trace.json*"))))
    code = ("import io, sys, contextlib\nfrom kinetoscope.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    code = main(['report', '--no-cache', sys.argv[1]])\n"
            "print(code, 'fsspec' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(sample)], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["0", "False"], out.stderr
