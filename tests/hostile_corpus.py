"""A corpus of hostile trace files, generated at test time (never committed): one per class of attack.

Each `Case` writes one file into its own run folder and says what must come of it: a named error (the
message matches `error`), a loaded model, or either. Every file is under 10 MB as stored; what it holds
once inflated or decoded is what makes it hostile: compression and whitespace bombs, huge strings, huge
counts (threads, steps, names, flows, memory events), deep nesting, broken encodings and numbers, and
files cut short. `tests/test_hostile_corpus.py` runs every file through the CLI (in a child, measuring
its peak memory and time) and through every HTTP route.

Run as a script to write the corpus somewhere and keep it: `python tests/hostile_corpus.py OUT_DIR`.
"""
from __future__ import annotations

import gzip
import json
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

MiB = 1 << 20


@dataclass(frozen=True)
class Case:
    name: str
    write: Callable[[Path], None]  # writes the file at the given path
    expect: str  # "error", "model" or "either"
    error: str = ""  # a regex the error message must match when expect is "error"
    gz: bool = True

    @property
    def filename(self) -> str:
        return "w.1.pt.trace.json.gz" if self.gz else "w.1.pt.trace.json"


def _kernel(i: int, name: str = "k", ts: int | None = None) -> bytes:
    t = 2 * i if ts is None else ts
    return (b'{"ph":"X","cat":"kernel","name":%s,"pid":0,"tid":7,"ts":%d,"dur":1,'
            b'"args":{"device":0,"stream":7,"correlation":%d}}' % (json.dumps(name).encode(), t, i))


def _op(i: int, name: str = "aten::add", tid: int = 1, pid: int = 100) -> bytes:
    return (b'{"ph":"X","cat":"cpu_op","name":%s,"pid":%d,"tid":%d,"ts":%d,"dur":1,"args":{"External id":%d}}'
            % (json.dumps(name).encode(), pid, tid, 2 * i, i))


HEAD = b'{"schemaVersion":1,"deviceProperties":[],"traceEvents":['
TAIL = b"]}"


def _gz_stream(path: Path, parts: Iterator[bytes], level: int = 6) -> None:
    """Write one gzip member from a stream of parts (never all in memory)."""
    packer = zlib.compressobj(level, wbits=31)
    with open(path, "wb") as out:
        for part in parts:
            out.write(packer.compress(part))
        out.write(packer.flush())


def _repeated_members(path: Path, head: bytes, block: bytes, count: int, tail: bytes) -> None:
    """A multi-member gzip: head, then `block` `count` times (compressed once), then tail. Cheap to write
    however large it inflates."""
    member = gzip.compress(block, 9)
    with open(path, "wb") as out:
        out.write(gzip.compress(head))
        for _ in range(count):
            out.write(member)
        out.write(gzip.compress(tail))


def _events(path: Path, events: Iterator[bytes], gz: bool = True, head: bytes = HEAD, tail: bytes = TAIL) -> None:
    def parts():
        yield head
        first = True
        batch = []
        for e in events:
            if not first:
                batch.append(b",")
            first = False
            batch.append(e)
            if len(batch) >= 20_000:
                yield b"".join(batch)
                batch = []
        yield b"".join(batch)
        yield tail
    if gz:
        _gz_stream(path, parts())
    else:
        path.write_bytes(b"".join(parts()))


def _write(data: bytes, gz: bool = True) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(gzip.compress(data) if gz else data)


def _small_doc(*extra: bytes) -> bytes:
    events = [_op(0, "ProfilerStep#1"), _op(1), b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,'
              b'"tid":1,"ts":3,"dur":1,"args":{"correlation":9}}', _kernel(9, ts=6), *extra]
    return HEAD + b",".join(events) + TAIL


def _steps(n: int) -> Iterator[bytes]:
    for i in range(n):
        yield (b'{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":100,"tid":1,"ts":%d,"dur":9}'
               % (i, 10 * i))


def _nest(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


DEEP_ARGS = b'{"ph":"X","cat":"cpu_op","name":"n","pid":100,"tid":1,"ts":1,"dur":1,"args":{"x":%s}}' % _nest(100_000)


def _events_at_the_budget(path: Path) -> None:
    """About as many events as a file under 10 MB may hold (250 per KiB): 1.9 M tiny nested CPU ops, launches
    and kernels in about 9 MB of gzip."""
    def events() -> Iterator[bytes]:
        for i in range(475_000):
            t = 10 * i
            yield b'{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":%d,"dur":8}' % t
            yield b'{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":%d,"dur":3}' % (t + 1)
            yield (b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%d,"dur":1,'
                   b'"args":{"correlation":%d}}' % (t + 2, i))
            yield _kernel(i, ts=t + 5)
    _events(path, events())


def _cases() -> list[Case]:
    ws = b" " * (64 * MiB)
    name_1mib = "k" * MiB
    return [
        # decompression and whitespace bombs
        Case("whitespace_bomb", lambda p: _repeated_members(p, b'{"traceEvents":[', ws, 32, TAIL), "error", "budget"),
        Case("whitespace_between_events", lambda p: _repeated_members(
            p, HEAD + _kernel(1), b" " * (8 * MiB), 40, b"," + _kernel(2) + TAIL), "error", "budget"),
        Case("whitespace_run_under_the_inflate_floor", lambda p: _repeated_members(
            p, HEAD + _kernel(1) + b",", b" " * (50 * MiB), 2, _kernel(2) + TAIL), "error", "whitespace run"),
        Case("string_bomb", lambda p: _repeated_members(
            p, HEAD + b'{"ph":"X","cat":"kernel","name":"', b"a" * (64 * MiB), 24, b'","ts":1,"dur":1}' + TAIL),
            "error", "budget"),
        Case("one_100_mib_name", lambda p: _repeated_members(
            p, HEAD + _kernel(1) + b',{"ph":"X","cat":"kernel","name":"', b"n" * (25 * MiB), 4,
            b'","pid":0,"tid":7,"ts":5,"dur":1}' + TAIL), "error", "string or whitespace run"),
        Case("tiny_events_past_the_event_budget", lambda p: _events(
            p, (b'{"ph":"X","ts":1,"dur":1}' for _ in range(3_000_000))), "error", "events"),
        Case("dense_kernels_under_the_budget", lambda p: _events(p, (_kernel(i) for i in range(900_000))), "model"),
        Case("1_9m_events_near_the_event_budget", _events_at_the_budget, "either", "budget"),
        Case("nan_and_bare_na_in_a_dense_file", lambda p: _events(p, (
            _kernel(i) if i % 100_000 else b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":NaN,"dur":N/A}'
            for i in range(600_000))), "model"),
        Case("exact_16_digit_times", lambda p: _events(p, (
            b'{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1712345678901234.%d,"dur":1.5}' % (i % 1000)
            for i in range(300_000))), "model"),
        Case("multi_member_gzip", lambda p: p.write_bytes(b"".join(
            gzip.compress(_small_doc()[i:i + 97]) for i in range(0, len(_small_doc()), 97))), "model"),
        Case("truncated_gzip", lambda p: p.write_bytes(gzip.compress(_small_doc() * 1)[:-20]), "error", "truncated"),
        Case("corrupt_gzip", lambda p: p.write_bytes(gzip.compress(_small_doc())[:15] + b"\xff" * 40), "error",
             "corrupt gzip"),
        Case("truncated_json", _write(_small_doc()[:-40], gz=False), "error", "truncated", gz=False),
        # huge strings shown by the routes
        Case("shared_1_mib_kernel_name", lambda p: _events(p, (
            b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":1,"ts":%d,"dur":1,'
            b'"args":{"correlation":%d}},' % (10 * i, i) + _kernel(i, name_1mib, ts=10 * i + 5) for i in range(200))),
            "model"),
        Case("thread_names_of_1_mib", lambda p: _events(p, (
            b'{"ph":"M","name":"thread_name","pid":100,"tid":%d,"args":{"name":"%s"}},' % (t, b"t" * MiB) + _op(t, tid=t)
            for t in range(100))), "model"),
        Case("distinct_long_names", lambda p: _events(p, (_op(i, "aten::" + "x" * 4000 + str(i)) for i in range(20_000))),
             "model"),
        Case("huge_args", _write(_small_doc(b'{"ph":"X","cat":"cpu_op","name":"big","pid":100,"tid":1,"ts":20,"dur":1,'
                                            b'"args":{"Call stack":"%s","Input Dims":[%s]}}'
                                            % (b"s" * (8 * MiB), b",".join([b"[1,2]"] * 200_000)))), "model"),
        # huge counts
        Case("200k_threads", lambda p: _events(p, (_op(i, tid=i) for i in range(200_000))), "model"),
        Case("200k_processes", lambda p: _events(p, (_op(i, pid=i) for i in range(200_000))), "model"),
        Case("100k_processes_times_100k_threads", lambda p: _events(p, (_op(i, pid=i, tid=1_000_000 + i)
                                                                        for i in range(100_000))), "model"),
        Case("1m_profiler_steps", lambda p: _events(p, _steps(1_000_000)), "either", "events"),
        Case("1m_flows_one_id", lambda p: _events(p, (
            b'{"ph":"%s","id":1,"pid":100,"tid":1,"ts":%d,"cat":"ac2g","name":"ac2g"}' % (b"sf"[i % 2:i % 2 + 1], i)
            for i in range(1_000_000))), "either", "events"),
        Case("300k_memory_events", lambda p: _events(p, (
            b'{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":100,"tid":1,"ts":%d,'
            b'"args":{"Device Type":1,"Device Id":0,"Bytes":%d,"Total Allocated":%d}}' % (i, 512 - 1024 * (i % 2), i % 7)
            for i in range(300_000))), "model"),
        Case("100k_gpu_devices", lambda p: _events(p, (
            b'{"ph":"X","cat":"kernel","name":"k","pid":%d,"tid":7,"ts":%d,"dur":1,"args":{"device":%d,"stream":%d}}'
            % (i, i, i, i) for i in range(100_000))), "model"),
        # structure, encodings and numbers
        Case("args_nested_100k_deep", _write(_small_doc(DEEP_ARGS)), "either", "nested"),
        Case("document_nested_1m_deep", _write(_nest(1_000_000)), "error", "nest|array|trace"),
        Case("empty_file", _write(b"", gz=False), "error", "empty|JSON|trace", gz=False),
        Case("whitespace_only", _write(b" \n" * 1000), "error", "JSON|trace|truncated"),
        Case("json_null", _write(b"null"), "error", "not a trace"),
        Case("top_level_array", _write(b"[]"), "error", "array"),
        Case("events_not_a_list", _write(b'{"traceEvents": 5}'), "error", "traceEvents"),
        Case("binary_garbage", _write(bytes(range(256)) * 4000, gz=False), "error", "JSON|trace", gz=False),
        Case("utf16_with_bom", _write(_small_doc().decode().encode("utf-16"), gz=False), "error", "JSON|trace|UTF",
             gz=False),
        Case("invalid_utf8_and_lone_surrogates", _write(_small_doc(
            b'{"ph":"X","cat":"cpu_op","name":"bad\xff\xfe name","pid":100,"tid":1,"ts":30,"dur":1},'
            b'{"ph":"X","cat":"cpu_op","name":"\\ud800 lone","pid":100,"tid":1,"ts":31,"dur":1}')), "model"),
        Case("times_near_2_62_ns", _write(_small_doc(
            b'{"ph":"X","cat":"cpu_op","name":"far","pid":100,"tid":1,"ts":4611686018427387,"dur":1},'
            b'{"ph":"X","cat":"cpu_op","name":"before","pid":100,"tid":1,"ts":-4611686018427387,"dur":1}')), "either",
             "apart|range|time"),
        Case("huge_and_odd_numbers", _write(_small_doc(
            b'{"ph":"X","cat":"cpu_op","name":"n1","pid":1606938044258990275541962092341162602522202993782792835301376,'
            b'"tid":1,"ts":1e999999,"dur":-5},'
            b'{"ph":"X","cat":"kernel","name":"n2","pid":0,"tid":7,"ts":7,"dur":1e308,"args":{"correlation":1e400}}')),
             "model"),
        Case("duplicate_keys_and_many_args", _write(HEAD + _op(1) + b',{"ph":"X","ph":"X","cat":"cpu_op","name":"d","pid":100,'
                                                    b'"tid":1,"ts":5,"dur":1,"args":{%s}}' % b",".join(
                                                        b'"k%d":%d' % (i, i) for i in range(100_000)) + TAIL), "model"),
    ]


CASES: list[Case] = _cases()


def write_corpus(root: Path, cases: list[Case] = CASES) -> list[tuple[Case, Path]]:
    """Write each case into `root/<case name>/`; returns (case, path) pairs."""
    written = []
    for case in cases:
        path = root / case.name / case.filename
        path.parent.mkdir(parents=True, exist_ok=True)
        case.write(path)
        written.append((case, path))
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "hostile-corpus")
    for case, path in write_corpus(out):
        print(f"{path.stat().st_size:>12,}  {case.expect:6s}  {path}")
