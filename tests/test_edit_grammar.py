"""The page reads what-if edits with the server's grammar (frontend/model/edits.js against
analysis/whatif/edits.py): every text reads to the same edit or is refused with the same message, so the page
refuses before any request exactly what the route would refuse."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from kinetoscope.analysis.whatif.edits import MAX_FACTOR, MAX_NAME, ROOF_CATEGORIES, SPELLINGS, EditError, parse_edit

REPO = Path(__file__).resolve().parent.parent
PIECES = ["dataloader=0", "dataloader-workers=", "sync:", "host:", "kernel:", "kernel:in:", "fuse:", "comm=",
          "comm=hidden", "roofline:", "precision:", "graph", "prep=overlap", "warmup=median", "straggler=median",
          "aten::mm", "preprocess (video.py:12)", "void f<float, 4>(int, int)", "=0", "*", "*0", "*0.5", "*1e2",
          "*100", "*100.5", "*-1", "*inf", "*nan", "*1_0", "*1__0", "*0x10", "* 2 ", "*.5", "*5.", ">=", "%", "60",
          "0", "4", "12345", "gemm", "disk", "bf16", "fp8", " ", "'", '"', "\\", "\n", "\t", "é", "x" * 999, "in:",
          "\x1c", "\x85", "\xa0", "\u2003", "\u3000", "\ufeff", "\x0b", "\x7f"]


def _texts() -> list[str]:
    rng = random.Random(51)
    texts = list(SPELLINGS) + [
        "graph", "  graph  ", "dataloader-workers=0", "dataloader-workers=4", "dataloader-workers=12345",
        "sync:aten::item=0", "host:aten::mm*0", "host:f*inf", "host:f*nan", "host:*0", "host:f", "kernel:in:*0.5",
        "kernel:in:aten::mm*0.5", "roofline:gemm>=60%", "roofline:gemm>=0%", "roofline:gemm>=100.5%",
        "roofline:disk>=50%", "roofline:gemm>=1000%", "precision:bf16", "precision:fp8", "comm=exposed",
        "fuse:", "fuse:Optimizer.step#SGD.step", "host:it's*0", "host:" + "x" * MAX_NAME + "*0",
        "host:" + "x" * (MAX_NAME + 1) + "*0", "fuse:" + "y" * (MAX_NAME + 1), "nonsense " * 40, "", "warp=9"]
    for _ in range(600):
        texts.append("".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4))))
    return texts


def _python(text: str) -> dict:
    try:
        e = parse_edit(text)
    except EditError as exc:
        return {"error": str(exc)}
    return {"kind": e.kind, "target": e.target, "factor": round(e.factor, 12), "text": e.text}


def _page(texts: list[str]) -> list[dict]:
    script = ("import(process.argv[1]).then((m) => { const xs = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              " console.log(JSON.stringify(xs.map((t) => { try { const e = m.parseEdit(t);"
              " return { kind: e.kind, target: e.target, factor: Math.round(e.factor * 1e12) / 1e12, text: e.text }; }"
              " catch (err) { if (!(err instanceof m.EditError)) throw err; return { error: err.message }; } }))); });")
    out = subprocess.run(["node", "-e", script, str(REPO / "frontend" / "model" / "edits.js")], input=json.dumps(texts),
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def _constants() -> dict:
    script = ("import(process.argv[1]).then((m) => console.log(JSON.stringify({ spellings: m.SPELLINGS,"
              " categories: m.ROOF_CATEGORIES, name: m.MAX_NAME, factor: m.MAX_FACTOR })));")
    out = subprocess.run(["node", "-e", script, str(REPO / "frontend" / "model" / "edits.js")],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_page_and_the_server_read_every_edit_alike():
    texts = _texts()
    page = _page(texts)
    differ = [(t[:80], p, s) for t, p, s in zip(texts, page, map(_python, texts)) if p != s]
    assert not differ, differ[:5]
    assert sum("error" in p for p in page) > 100 and sum("error" not in p for p in page) > 40  # both sides tried


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_page_knows_the_servers_spellings_and_limits():
    assert _constants() == {"spellings": list(SPELLINGS), "categories": list(ROOF_CATEGORIES), "name": MAX_NAME,
                            "factor": MAX_FACTOR}
