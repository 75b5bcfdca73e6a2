"""The decoder child process, both ends of its protocol: `start` spawns `python -m kinetoscope.server.decoder
PATH CACHE_DIR FD MODE` under a memory limit, `result` collects the model it pickles to stdout, and `main` is the
child itself. MODE `decode` decodes the trace (filling the disk cache); MODE `sidecar` reads the model from the
trace's `kinetoscope index` sidecar (`index.sidecar.open_model`: hashed, capped, checked), so that a hostile
sidecar costs this child's memory, never TensorBoard's, and ends with `("miss", reason)` when it is refused.
The child reads only inside the roots its parent gives it (`storage.confined`, the ROOTS_ENV variable).

Why a child: the JSON decoder holds the GIL for the whole buffer (about 60 ms per 35 MB here), which would stall
every TensorBoard request meanwhile. A plain child rather than multiprocessing: spawn re-runs the parent's
main script, which is not ours to guard. The child writes its progress (the share of the file decoded) on a pipe
of its own, one line per percent at most, and ends with `("ok", model)` or `("error", message, transient)` on
stdout: a TraceError does not survive pickling (custom __init__), hence its text. Whatever else the child meets
while reading a file (a 5,000-digit integer literal, an unexpected exception) is a content error naming it, never
a traceback: only a child that dies (killed, out of memory) leaves no outcome.

Each child runs under a memory limit (RLIMIT_AS) and a wall-time limit, both settings:
KINETOSCOPE_DECODER_MEMORY_BYTES and KINETOSCOPE_DECODE_TIMEOUT_S.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from dataclasses import fields
from typing import Any, Callable, Optional

from ..index import sidecar
from ..trace.budgets import setting
from ..trace.loader import TraceError, load_trace, resource_message
from ..trace.model import TraceModel
from ..trace.storage import ROOTS_ENV, confined

DECODER_MEMORY_ENV, DECODE_TIMEOUT_ENV = "KINETOSCOPE_DECODER_MEMORY_BYTES", "KINETOSCOPE_DECODE_TIMEOUT_S"
# A 300 MB trace decodes within 1 GiB of address space; 8 GiB (a third of a 24 GiB machine) covers GB-scale
# files while two loading slots cannot exhaust the machine.
DEFAULT_DECODER_MEMORY = 8 << 30
DEFAULT_DECODE_TIMEOUT_S = 600.0  # a 900 MB trace decodes in about 4 s


DECODE, SIDECAR = "decode", "sidecar"


def start(path: str, cache_dir: Any, on_progress: Callable[[float], None], roots: tuple[str, ...] = (),
          mode: str = DECODE) -> subprocess.Popen:
    """Spawn the decoder of `path` (filling the disk cache at `cache_dir`, None for none), reading only inside
    `roots`; its progress goes to `on_progress` from a thread of its own until it exits."""
    read_end, write_end = os.pipe()
    command = [sys.executable, "-m", "kinetoscope.server.decoder", path, "" if cache_dir is None else str(cache_dir),
               str(write_end), mode]
    env = {**os.environ, ROOTS_ENV: os.pathsep.join(roots)}
    try:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, pass_fds=(write_end,),
                                 env=env, preexec_fn=_limits if os.name == "posix" else None)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    threading.Thread(target=_follow_progress, args=(read_end, on_progress), name="kinetoscope-progress",
                     daemon=True).start()
    return child


def result(child: subprocess.Popen, path: str) -> TraceModel:
    """Wait for a child of `start` (at most KINETOSCOPE_DECODE_TIMEOUT_S, then it is killed) and return its model.

    Raises:
        TraceError: the file cannot be decoded (its reason), or the child ran out of time or died (transient).
    """
    outcome = _outcome(child, path)
    if outcome[0] != "ok":
        raise TraceError(path, outcome[1], transient=bool(outcome[2:] and outcome[2]))
    return _refrozen(outcome[1])


def sidecar_result(child: subprocess.Popen, path: str) -> tuple[Optional[TraceModel], Optional[str]]:
    """(model, None) from a child started in SIDECAR mode, or (None, why the sidecar was not used): refused,
    or the child failed (it ran out of time or memory reading it)."""
    try:
        outcome = _outcome(child, path)
    except TraceError as exc:
        return None, f"sidecar not read: {exc.message}"
    if outcome[0] == "ok":
        return _refrozen(outcome[1]), None
    return None, str(outcome[1])


def _outcome(child: subprocess.Popen, path: str) -> tuple:
    """The child's pickled outcome tuple (raises TraceError when it ran out of time or left none)."""
    timeout = setting(DECODE_TIMEOUT_ENV, DEFAULT_DECODE_TIMEOUT_S)
    try:
        out, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise TraceError(path, f"decoding took longer than {timeout:g} s (raise {DECODE_TIMEOUT_ENV} to allow more)",
                         transient=True) from None
    try:
        outcome = pickle.loads(out)
        if not isinstance(outcome, tuple) or len(outcome) < 2:
            raise ValueError("no outcome")
        return outcome
    except Exception:  # noqa: BLE001 - no result at all: the child died
        limit = int(setting(DECODER_MEMORY_ENV, DEFAULT_DECODER_MEMORY))
        raise TraceError(path, f"the decoder process failed (exit code {child.returncode}: it was killed, or ran out of "
                               f"memory; it may use {limit:,} bytes, {DECODER_MEMORY_ENV})", transient=True) from None


def main(argv: list[str]) -> int:
    """The child: decode one trace (filling the disk cache) and pickle the outcome to stdout.

    argv: [path, cache_dir or "", progress fd (optional), mode (optional: DECODE or SIDECAR)].
    """
    path, cache_dir = argv[0], argv[1] or None
    report = _progress_writer(int(argv[2])) if len(argv) > 2 and argv[2] else None
    mode = argv[3] if len(argv) > 3 else DECODE
    roots = tuple(r for r in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if r)
    with confined(roots):
        outcome = _read_sidecar(path) if mode == SIDECAR else _decode(path, cache_dir, report)
    pickle.dump(outcome, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.buffer.flush()
    return 0


def _decode(path: str, cache_dir: Optional[str], report: Optional[Callable[[float], None]]) -> tuple:
    """("ok", model) or ("error", message, transient): every failure named, none raised."""
    try:
        return "ok", load_trace(path, cache_dir=cache_dir, progress=report)
    except TraceError as exc:
        return "error", exc.message, exc.transient
    except (MemoryError, RecursionError) as exc:
        return "error", resource_message(exc), False
    except Exception as exc:  # noqa: BLE001 - content the decoder did not foresee: named, not a crash
        return "error", f"cannot decode this file ({type(exc).__name__}: {str(exc)[:200]})", False


def _read_sidecar(path: str) -> tuple:
    """("ok", model) from the trace's sidecar, or ("miss", why not)."""
    try:
        return "ok", sidecar.open_model(path)
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


def _limits() -> None:
    """In the child, before it runs: cap its address space (a hostile file fails it, not the machine)."""
    import resource
    limit = int(setting(DECODER_MEMORY_ENV, DEFAULT_DECODER_MEMORY))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _refrozen(model: TraceModel) -> TraceModel:
    """Unpickled arrays come back writeable; rebuilding runs the model's own freezing."""
    return TraceModel(**{f.name: getattr(model, f.name) for f in fields(model)})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
