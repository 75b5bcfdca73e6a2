"""The decoder child process, both ends of its protocol: `spawn` starts `python -m kinetoscope.server.decoder`
under a memory limit, `Child.assign` hands it its job (PATH, CACHE_DIR, MODE) as one JSON line on its stdin,
`result` collects the model it pickles to stdout, and `main` is the child itself. MODE `decode` decodes the trace
and hands the model over, then fills the disk cache while the parent goes on (the parent reaps it in the
background, under the same wall-time limit); MODE `sidecar` reads the model from the trace's `kinetoscope index` sidecar
(`index.reader.open_model`: hashed, capped, checked), so that a hostile sidecar costs this child's memory, never
TensorBoard's, and ends with `("miss", reason)` when it is refused.

A child is spawned before it has a job: the service keeps one spare (`TraceService`), which has started its
interpreter and imported numpy and the decoder (0.3-0.4 s here) by the time a load needs it, and hands it the
job then. The job line names only the file; everything else a child obeys (the roots, the memory limit, every
KINETOSCOPE_* budget, the storage options) came from its environment and argv at spawn, so the service hands a
spare a job only while the environment it would spawn a child with is the same (`Child.key`), else it spawns
a fresh one.

The memory limit (RLIMIT_AS) is set by the child itself, first thing, before it imports anything but the
standard library (`_BOOT`): no `preexec_fn`, which runs Python between fork and exec in a process that may hold
TensorBoard's threads' locks (gRPC), and can deadlock there.
The child reads only inside the roots its parent gives it (`storage.confined`, the ROOTS_ENV variable).

Why a child: the JSON decoder holds the GIL for the whole buffer (about 60 ms per 35 MB here), which would stall
every TensorBoard request meanwhile. A plain child rather than multiprocessing: spawn re-runs the parent's
main script, which is not ours to guard. The child writes its progress (the share of the file decoded) on a pipe
of its own, one line per percent at most, and ends with `("ok", model)` or `("error", message, transient)` on
stdout (a sidecar read sends `("model", model)` once the model passes its checks, then `("ok", None)` once the
trace's hash matches, or `("miss", reason)`): a TraceError does not survive pickling (custom __init__), hence
its text. Whatever else the child meets while reading a file (a 5,000-digit integer literal, an unexpected
exception) is a content error naming it, never a traceback: only a child that dies (killed, out of memory) leaves
no outcome.

Each child runs under a memory limit (RLIMIT_AS) and a wall-time limit, both settings:
KINETOSCOPE_DECODER_MEMORY_BYTES and KINETOSCOPE_DECODE_TIMEOUT_S.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import fields
from typing import Any, Callable, Optional

from ..index import reader as sidecar
from ..trace import heap
from ..trace.budgets import setting
from ..trace.loader import TraceError, load_trace, resource_message
from ..trace.model import TraceModel
from ..trace.storage import ROOTS_ENV, confined
from . import handover

DECODER_MEMORY_ENV, DECODE_TIMEOUT_ENV = "KINETOSCOPE_DECODER_MEMORY_BYTES", "KINETOSCOPE_DECODE_TIMEOUT_S"
# A 300 MB trace decodes within 1 GiB of address space; 8 GiB (a third of a 24 GiB machine) covers GB-scale
# files while two loading slots cannot exhaust the machine.
DEFAULT_DECODER_MEMORY = 8 << 30
DEFAULT_DECODE_TIMEOUT_S = 600.0  # a 900 MB trace decodes in about 4 s


DECODE, SIDECAR = "decode", "sidecar"
# A sidecar read whose trace the parent hashes itself: the child checks everything else and answers the sha256 the
# sidecar is bound to, which the parent compares with its own (`sidecar_result`'s third value).
SIDECAR_BOUND = "sidecar-bound"


# The child's first lines: its address-space limit (argv[1], 0 for none), then the decoder module as __main__.
_BOOT = ("import sys\nlimit = int(sys.argv[1])\nif limit > 0:\n    try:\n        import resource\n"
         "    except ImportError:\n        resource = None\n    if resource is not None:\n"
         "        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
         "del sys.argv[1]\nimport runpy\nrunpy.run_module('kinetoscope.server.decoder', run_name='__main__', alter_sys=True)\n")

BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"  # as the CLI (`cli/__init__.py`): its threads would only spin beside the decode's
CHILD_ENV_DEFAULTS = {BLAS_THREADS_ENV: "1", heap.ARENA_ENV: "1"}  # unless set: one BLAS thread, one malloc arena


class Child:
    """A decoder child (`popen`), spawned by `spawn` before its job is known; `assign` gives it one."""

    def __init__(self, popen: subprocess.Popen, key: tuple, progress: list) -> None:
        self.popen, self.key, self._progress = popen, key, progress

    def assign(self, path: str, cache_dir: Any, mode: str, on_progress: Callable[[float], None]) -> subprocess.Popen:
        """Give the child its job; returns its process, for `result` or `sidecar_result`.

        Raises:
            OSError: the child has exited (its stdin is closed).
        """
        self._progress[0] = on_progress
        job = {"path": path, "cache_dir": "" if cache_dir is None else str(cache_dir), "mode": mode}
        self.popen.stdin.write(json.dumps(job).encode() + b"\n")
        self.popen.stdin.flush()
        return self.popen

    def alive(self) -> bool:
        return self.popen.poll() is None

    def discard(self) -> None:
        """End a child that will get no job (it exits on its own when its stdin closes; killed to be sure)."""
        try:
            self.popen.kill()
            self.popen.communicate(timeout=5)
        except (OSError, ValueError, subprocess.SubprocessError):
            pass


def spawn_key(roots: tuple[str, ...] = ()) -> tuple:
    """What a child spawned now would obey: the memory limit, the roots and the environment."""
    limit = int(setting(DECODER_MEMORY_ENV, DEFAULT_DECODER_MEMORY)) if os.name == "posix" else 0
    env = {**CHILD_ENV_DEFAULTS, **os.environ, ROOTS_ENV: os.pathsep.join(roots)}
    return limit, tuple(sorted(env.items()))


def spawn(roots: tuple[str, ...] = ()) -> Child:
    """Start a decoder child that reads only inside `roots`, waiting for its job (`Child.assign`); its progress
    goes to the callback its job names, from a thread of its own until it exits."""
    key = spawn_key(roots)
    handover.sweep()  # files of children killed between writing and handing over
    read_end, write_end = os.pipe()
    command = [sys.executable, "-c", _BOOT, str(key[0]), "--wait", str(write_end)]
    try:
        popen = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=(write_end,),
                                 env=dict(key[1]))
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    progress: list = [lambda share: None]
    threading.Thread(target=_follow_progress, args=(read_end, lambda share: progress[0](share)),
                     name="kinetoscope-progress", daemon=True).start()
    return Child(popen, key, progress)


def start(path: str, cache_dir: Any, on_progress: Callable[[float], None], roots: tuple[str, ...] = (),
          mode: str = DECODE) -> subprocess.Popen:
    """Spawn the decoder of `path` (filling the disk cache at `cache_dir`, None for none), reading only inside
    `roots`, and give it its job at once."""
    child = spawn(roots)
    try:
        return child.assign(path, cache_dir, mode, on_progress)
    except OSError:
        return child.popen  # it died starting: `result` says so


def result(child: subprocess.Popen, path: str) -> TraceModel:
    """Wait for a child of `start` (at most KINETOSCOPE_DECODE_TIMEOUT_S, then it is killed) and return its model.

    Raises:
        TraceError: the file cannot be decoded (its reason), or the child ran out of time or died (transient).
    """
    with _Outcomes(child, path) as outcomes:
        outcome = outcomes.next()
    if outcome[0] != "ok":
        raise TraceError(path, outcome[1], transient=bool(outcome[2:] and outcome[2]))
    return _refrozen(outcome[1])


def sidecar_result(child: subprocess.Popen, path: str, on_model: Optional[Callable[[TraceModel], None]] = None
                   ) -> tuple[Optional[TraceModel], Optional[str], Optional[str]]:
    """(model, None, bound) from a child started in SIDECAR or SIDECAR_BOUND mode once it has made its checks, or
    (None, why the sidecar was not used, None): refused, or the child failed (it ran out of time or memory). In
    SIDECAR mode the child has compared the trace's hash (`bound` is None); in SIDECAR_BOUND mode it has not, and
    `bound` is the sha256 the sidecar is bound to: the caller compares it with its own hash of the trace before
    anything of the model is used.

    The child sends the model as soon as its own checks hold, then its verdict: `on_model` gets the model in
    between, for work that must publish nothing (TensorBoard builds the lane index meanwhile), since the model is
    returned only when the verdict is "ok"."""
    try:
        with _Outcomes(child, path) as outcomes:
            outcome = outcomes.next()
            if outcome[0] != "model":
                return None, str(outcome[1]), None
            model = _refrozen(outcome[1])
            if on_model is not None:
                on_model(model)
            verdict = outcomes.next()
    except TraceError as exc:
        return None, f"sidecar not read: {exc.message}", None
    if verdict[0] != "ok":
        return None, str(verdict[1]), None
    return model, None, (verdict[1] if isinstance(verdict[1], str) else None)


class _Outcomes:
    """The pickled outcome tuples a child writes to its stdout, read one by one (`next`) under the decoding
    timeout (the child is killed when it passes); leaving the block closes the pipe and reaps the child."""

    def __init__(self, child: subprocess.Popen, path: str) -> None:
        self.child, self.path = child, path
        self.timeout = setting(DECODE_TIMEOUT_ENV, DEFAULT_DECODE_TIMEOUT_S)
        self.timer = threading.Timer(self.timeout, _kill, args=(child,))
        self.timer.daemon = True

    def __enter__(self) -> _Outcomes:
        self.timer.start()
        if self.child.stdin is not None:
            try:
                self.child.stdin.close()  # its job is written; it reads nothing more
            except OSError:
                pass
        return self

    def next(self) -> tuple:
        """The next outcome tuple (raises TraceError when the child ran out of time, or died before writing it)."""
        try:
            outcome = handover.receive(self.child.stdout)
            if not isinstance(outcome, tuple) or len(outcome) < 2:
                raise ValueError("no outcome")
            return outcome
        except Exception:  # noqa: BLE001 - no (further) result: the child died or was killed
            self.child.kill()
            self.child.wait()
            if _killed(self.child):
                raise TraceError(self.path, f"decoding took longer than {self.timeout:g} s (raise {DECODE_TIMEOUT_ENV} "
                                            "to allow more)", transient=True) from None
            limit = int(setting(DECODER_MEMORY_ENV, DEFAULT_DECODER_MEMORY))
            raise TraceError(self.path, f"the decoder process failed (exit code {self.child.returncode}: it was killed, "
                                        f"or ran out of memory; it may use {limit:,} bytes, {DECODER_MEMORY_ENV})",
                             transient=True) from None

    def __exit__(self, *exc: Any) -> None:
        try:
            self.child.stdout.close()
        except OSError:
            pass
        if self.child.poll() is not None:
            self.timer.cancel()
            return
        # still writing its disk cache (or exiting): reaped in the background, under the same timeout, so the
        # model is used at once
        threading.Thread(target=_reap, args=(self.child, self.timer), name="kinetoscope-reap", daemon=True).start()


def _reap(child: subprocess.Popen, timer: threading.Timer) -> None:
    """Wait for a child that has handed its outcome over (the decoding timeout still kills it), then cancel its
    timer."""
    try:
        child.wait()
    finally:
        timer.cancel()


def _kill(child: subprocess.Popen) -> None:
    """The decoding timeout: the child is killed (its stdout then closes, which ends the parent's read)."""
    child.timed_out = True
    try:
        child.kill()
    except OSError:
        pass


def _killed(child: subprocess.Popen) -> bool:
    return bool(getattr(child, "timed_out", False))


def main(argv: list[str]) -> int:
    """The child: decode one trace (filling the disk cache), or read its sidecar, and pickle the outcome to stdout.

    argv: ["--wait", progress fd or ""]: the job comes as one JSON line on stdin (`Child.assign`; none: exit);
    or [path, cache_dir or "", progress fd (optional), mode (optional: DECODE or SIDECAR)].
    """
    heap.hold_freed()  # a process that decodes one trace and ends: what it frees is its next allocation (trace/heap.py)
    if argv and argv[0] == "--wait":
        line = sys.stdin.buffer.readline()
        if not line.strip():
            return 0  # discarded before it got a job
        job = json.loads(line)
        path, cache_dir, fd, mode = job["path"], job["cache_dir"] or None, argv[1] if len(argv) > 1 else "", job["mode"]
    else:
        path, cache_dir = argv[0], argv[1] or None
        fd, mode = (argv[2] if len(argv) > 2 else ""), (argv[3] if len(argv) > 3 else DECODE)
    report = _progress_writer(int(fd)) if fd else None
    roots = tuple(r for r in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if r)
    with confined(roots):
        if mode in (SIDECAR, SIDECAR_BOUND):
            outcome = _read_sidecar(path, _send, bound=mode == SIDECAR_BOUND)
        else:
            outcome = _decode(path, cache_dir, report)
    if outcome is not None:
        _send(outcome)
    return 0


def _send(outcome: tuple) -> None:
    """In the child: one outcome tuple to the parent (stdout; its columns through shared memory, `handover`)."""
    handover.send(outcome, sys.stdout.buffer)


def _decode(path: str, cache_dir: Optional[str], report: Optional[Callable[[float], None]]) -> Optional[tuple]:
    """("ok", model) or ("error", message, transient): every failure named, none raised. A model it decoded (not
    one read from the disk cache) is sent to the parent before the disk cache is written, and None returned: the
    parent goes on while this child writes the cache and exits."""
    sent: list[bool] = []

    def hand_over(model: TraceModel) -> None:
        _send(("ok", model))
        sent.append(True)
    try:
        outcome: tuple = ("ok", load_trace(path, cache_dir=cache_dir, progress=report, before_store=hand_over))
    except TraceError as exc:
        outcome = ("error", exc.message, exc.transient)
    except (MemoryError, RecursionError) as exc:
        outcome = ("error", resource_message(exc), False)
    except Exception as exc:  # noqa: BLE001 - content the decoder did not foresee: named, not a crash
        outcome = ("error", f"cannot decode this file ({type(exc).__name__}: {str(exc)[:200]})", False)
    # once the model is handed over the parent has closed the pipe: a failure writing the cache is not its news
    return None if sent else outcome


def _read_sidecar(path: str, send: Callable[[tuple], None], bound: bool = False) -> tuple:
    """The trace's sidecar: ("model", model) sent as soon as the model passes its checks, then the verdict returned:
    ("ok", None) once the trace's hash matches (it runs meanwhile), or, with `bound` (the parent hashes the trace),
    ("ok", the sha256 the sidecar is bound to) at once; else ("miss", why not)."""
    try:
        if bound:
            _model, sha = sidecar.open_model_bound(path, early=lambda model: send(("model", model)))
            return "ok", sha
        sidecar.open_model(path, early=lambda model: send(("model", model)))
        return "ok", None
    except sidecar.SidecarMiss as miss:
        return "miss", miss.reason
    except (MemoryError, RecursionError) as exc:
        return "miss", f"sidecar refused: {resource_message(exc)}"
    except Exception as exc:  # noqa: BLE001 - a sidecar never takes a load down: decode instead
        return "miss", f"sidecar unreadable ({type(exc).__name__}: {str(exc)[:200]})"


def _progress_writer(fd: int) -> Callable[[float], None]:
    """In the child: writes the share decoded to the parent's pipe, one line per percent at most."""
    pipe = os.fdopen(fd, "w", buffering=1)
    last = [-1]

    def report(share: float) -> None:
        percent = int(share * 100)
        if percent > last[0]:
            last[0] = percent
            try:
                pipe.write(f"{share:.3f}\n")
            except OSError:  # the parent stopped listening; decoding goes on
                pass
    return report


def _follow_progress(fd: int, on_progress: Callable[[float], None]) -> None:
    """In the parent: reads a child's progress lines until it closes its end (it exits, or dies)."""
    with os.fdopen(fd, "r") as lines:
        for line in lines:
            try:
                share = float(line)
            except ValueError:
                continue
            if 0.0 <= share <= 1.0:
                on_progress(share)


def _refrozen(model: TraceModel) -> TraceModel:
    """Unpickled arrays come back writeable; rebuilding runs the model's own freezing."""
    return TraceModel(**{f.name: getattr(model, f.name) for f in fields(model)})


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Its outcome is written and flushed: exit at once, without tearing down the model and the modules (a
    # tenth of a second under load), which the parent waits for before it answers.
    os._exit(code)
