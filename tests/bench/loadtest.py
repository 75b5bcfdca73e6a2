"""`make loadtest`: 32 clients hammer a real TensorBoard with Kinetoscope on 127.0.0.1 while its traces load.

The logdir (a temporary copy) holds the committed sample logdirs, the real traces of ../shared/traces when
they are beside the repo, and hostile files made here (a decompression bomb, a truncated gzip, JSON nested
100,000 deep, multi-MB names). The disk cache starts empty, so traces decode while the clients ask. Every
client loops over a random mix of the documented routes with valid and abusive parameters, for a bounded
time and request count, only ever to 127.0.0.1. A failure is a 5xx answer, a connection error, or an answer
over 2 MB; 4xx answers to abusive parameters and 409 while loading are the contract. Prints markdown.

Usage: python tests/bench/loadtest.py [--clients 32] [--seconds 60] [--out FILE.md]
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "browser"))
from tbserver import TensorBoard  # noqa: E402

PREFIX = "/data/plugin/kinetoscope/"
MAX_BODY = 2_000_000
MAX_REQUESTS_PER_CLIENT = 100_000


def hostile(root: Path) -> None:
    """Files an attacker or a broken writer leaves in a shared logdir."""
    bad = root / "hostile"
    bad.mkdir(parents=True)
    with gzip.open(bad / "bomb.1.pt.trace.json.gz", "wb") as out:
        out.write(b'{"traceEvents": [')
        for _ in range(40):
            out.write(b" " * (16 << 20))
        out.write(b"]}")
    whole = gzip.compress(json.dumps({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}] * 1000})
                          .encode())
    (bad / "truncated.2.pt.trace.json.gz").write_bytes(whole[: len(whole) // 2])
    (bad / "deep.3.pt.trace.json").write_text('{"traceEvents": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    names = [{"ph": "X", "cat": "kernel", "name": "k" * (1 << 20), "pid": 0, "tid": 7, "ts": i, "dur": 1,
              "args": {"device": 0, "stream": 7}} for i in range(40)]
    (bad / "names.4.pt.trace.json").write_text(json.dumps({"traceEvents": names}))


def build_logdir(root: Path) -> None:
    shutil.copytree(REPO / "samples" / "logs", root, dirs_exist_ok=True)
    shared = REPO.parent / "shared" / "traces"
    if shared.is_dir():
        shutil.copytree(shared, root / "shared", dirs_exist_ok=True)
    hostile(root)


def requests_for(spans: list[dict], runs: list[str], rng: random.Random) -> str:
    """One request path: mostly valid, sometimes abusive."""
    sid = rng.choice(spans)["id"] if spans else "000000000000"
    pick = rng.random()
    if pick < 0.08:
        return rng.choice(["summary?span=../../etc/passwd", f"gaps?span={sid}&device=-5", f"lanes?span={sid}&start_us=1e300",
                           "static/" + "a" * 5000 + ".js", f"event?span={sid}&row=99999999999", "nope", "status?span=zz"])
    t0 = rng.uniform(0, 5e5)
    return rng.choice([
        "runs", "status", f"status?span={sid}&load=1", f"summary?span={sid}", f"stalls?span={sid}",
        f"gaps?span={sid}&device=0&limit={rng.randint(1, 500)}&sort=-dur", f"launches?span={sid}", f"memory?span={sid}",
        f"lanes?span={sid}&start_us={t0:.1f}&end_us={t0 + rng.uniform(100, 5e5):.1f}&width_px={rng.randint(200, 2000)}",
        f"event?span={sid}&row={rng.randint(0, 500)}", f"verdict?run={urllib.request.quote(rng.choice(runs))}" if runs else "runs",
        # every other documented route (issue 54: the replaying ones are kept per span and bounded: 503 when busy)
        f"tables?span={sid}&by={rng.choice(['op', 'kernel', 'module', 'module_tree', 'memory', 'roofline'])}",
        f"search?span={sid}&q={rng.choice(['aten', 'gemm', 'x' * 300])}", f"counters?span={sid}", f"markdown?span={sid}",
        f"critical_path?span={sid}", f"critical_path?span={sid}&start_us={t0:.1f}&end_us={t0 + 5e4:.1f}",
        f"whatif?span={sid}&edit={rng.choice(['dataloader%3D0', 'graph', 'host:aten::mm*0', 'comm%3Dhidden'])}",
        f"ranks?run={urllib.request.quote(rng.choice(runs))}" if runs else "runs",
        f"export?span={sid}&start_us={t0:.1f}&end_us={t0 + 1e3:.1f}",
    ])


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.codes: dict[str, int] = {}
        self.failures: list[str] = []
        self.max_body = 0

    def add(self, path: str, code: str, seconds: float, size: int) -> None:
        with self.lock:
            self.latencies.append(seconds)
            self.codes[code] = self.codes.get(code, 0) + 1
            self.max_body = max(self.max_body, size)
            if (code.startswith("5") and code != "503") or code == "error" or size > MAX_BODY:  # 503: a named Busy
                self.failures.append(f"{code} {size} B {path[:120]}")


def client(base: str, spans: list[dict], runs: list[str], deadline: float, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    for _ in range(MAX_REQUESTS_PER_CLIENT):
        if time.monotonic() >= deadline:
            return
        path = requests_for(spans, runs, rng)
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(base + PREFIX + path, timeout=30) as answer:
                size, code = len(answer.read()), str(answer.status)
        except urllib.error.HTTPError as exc:
            size, code = len(exc.read()), str(exc.code)
        except (urllib.error.URLError, OSError):
            size, code = 0, "error"
        tally.add(path, code, time.perf_counter() - start, size)


def watcher(base: str, sid: str, deadline: float, out: list[float]) -> None:
    """Another user's view: the `summary` of one span loaded before the load began, asked every 0.1 s while the
    clients run (issue 54: no request may slow it beyond 0.5 s)."""
    while time.monotonic() < deadline:
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(f"{base}{PREFIX}summary?span={sid}", timeout=30) as answer:
                answer.read()
            out.append(time.perf_counter() - start)
        except (urllib.error.URLError, OSError):
            out.append(float("inf"))
        time.sleep(0.1)


def watched_span(server, spans: list[dict]) -> str:
    """The smallest committed sample span, loaded and ready before the clients start."""
    small = min((s for s in spans if s["file"].endswith(".gz") and s["size_bytes"] > 10_000), key=lambda s: s["size_bytes"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        code, body = server.get(f"status?span={small['id']}&load=1&wait_ms=1000")
        if body["traces"][0]["state"] == "ready":
            break
    return small["id"]


def rss_mb(pid: int) -> float:
    proc = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kinetoscope-load-") as tmp:
        logdir = Path(tmp) / "logs"
        build_logdir(logdir)
        with TensorBoard(logdir, env={"KINETOSCOPE_CACHE_DIR": str(Path(tmp) / "cache")}) as server:
            deadline = time.monotonic() + 60
            code, body = server.get("runs")
            while not body.get("scan_complete") and time.monotonic() < deadline:
                time.sleep(0.2)
                code, body = server.get("runs")
            runs = [r["name"] for r in body["runs"]]
            spans = [s for r in body["runs"] for w in r["workers"] for s in w["spans"]]
            watched = watched_span(server, spans)
            before = rss_mb(server.proc.pid)
            tally, deadline, summaries = Tally(), time.monotonic() + args.seconds, []
            threads = [threading.Thread(target=client, args=(server.base, spans, runs, deadline, k, tally))
                       for k in range(args.clients)]
            threads.append(threading.Thread(target=watcher, args=(server.base, watched, deadline, summaries)))
            started = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - started
            after = rss_mb(server.proc.pid)
            code, status = server.get("status")
            states = {}
            for trace in status["traces"]:
                states[trace["state"]] = states.get(trace["state"], 0) + 1
    text = report(args, tally, elapsed, before, after, len(spans), states, summaries)
    sys.stdout.write(text)
    if args.out:
        args.out.write_text(text)
    return 1 if tally.failures or max(summaries, default=0) >= 0.5 else 0


def report(args, tally: Tally, elapsed: float, before: float, after: float, spans: int, states: dict,
           summaries: list[float]) -> str:
    lat = sorted(tally.latencies)
    pct = lambda q: 1e3 * lat[min(len(lat) - 1, int(q * len(lat)))] if lat else 0.0  # noqa: E731
    codes = ", ".join(f"{k}: {v:,}" for k, v in sorted(tally.codes.items()))
    lines = [
        "# Load test (real TensorBoard on 127.0.0.1)", "",
        f"Command: `make loadtest` (`.venv/bin/python tests/bench/loadtest.py --clients {args.clients} --seconds {args.seconds:g}`): "
        f"{args.clients} clients for {args.seconds:g} s over a cold logdir of {spans} spans (samples, ../shared/traces, hostile "
        "files: a 640 MiB whitespace gzip, a truncated gzip, JSON nested 100,000 deep, 1 MiB names), empty disk cache, "
        "valid and abusive parameters mixed.", "",
        "| requests | failures (5xx, errors, bodies > 2 MB) | req/s | p50 ms | p99 ms | max ms | largest body | RSS before -> after MiB |",
        "|---|---|---|---|---|---|---|---|",
        f"| {len(lat):,} | {len(tally.failures)} | {len(lat) / max(elapsed, 1e-9):.0f} | {pct(0.5):.1f} | {pct(0.99):.1f} | "
        f"{1e3 * (lat[-1] if lat else 0):.0f} | {tally.max_body:,} B | {before:.0f} -> {after:.0f} |", "",
        f"Status codes: {codes}. Trace states at the end: {json.dumps(states)}.", "",
        f"Another user's view meanwhile: the `summary` of one span loaded before, asked every 0.1 s ({len(summaries)} "
        f"times): median {1e3 * _median(summaries):.1f} ms, slowest {1e3 * max(summaries, default=0):.0f} ms "
        f"(goal: under 500 ms).",
    ]
    if tally.failures:
        lines += ["", "Failures (first 10):", *(f"- `{f}`" for f in tally.failures[:10])]
    return "\n".join(lines) + "\n"


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


if __name__ == "__main__":
    sys.exit(main())
