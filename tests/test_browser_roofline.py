"""Browser tests of the Roofline panel (issue 50): the chart in a real headless Chromium against the real `tensorboard`
CLI at 1280x800, driven by `tests/browser/roofline.mjs` (which prints one JSON line; this file asserts on it).

- the H200 bf16 sample (samples/logs/cuda_h200/amp_bf16, recorded with shapes, `deviceProperties` "NVIDIA H200"): the
  route's own answer drawn with its roofs; hovering the largest point shows its op's box; a click selects its first
  kernel on the lanes (the link's `sel`, the Selection drawer), "next" the second; Escape, an arrow key and Enter do
  it from the keyboard; an area in the link (as Shift+drag in the lanes makes) draws that window's ops;
- a tiny trace on a device no peaks file knows: the point drawn, no roofs, the reason said under the chart;
- a fixture answer of 500 op shapes (served in place of the route), in the dark theme: every point placed, the
  drawing's time, the hover box inside the window, text contrast.

Screenshots: test-artifacts/roofline-{view,panel,hover}-<run>-1280x800-<theme>.png. Skipped, with the reason, when node,
npm, chromium or tensorboard is missing.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "browser"))
from tbserver import REPO, TensorBoard, ensure_node_modules, run_node, tensorboard_bin  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts"
H200_BF16 = REPO / "samples" / "logs" / "cuda_h200" / "amp_bf16"
SIZE = ("1280", "800")

_missing = [what for what, ok in (("node", shutil.which("node")), ("npm", shutil.which("npm")),
                                  (CHROMIUM, Path(CHROMIUM).exists()), ("tensorboard", tensorboard_bin()))
            if not ok]
pytestmark = [pytest.mark.skipif(bool(_missing), reason=f"browser tests need {', '.join(map(str, _missing))}"),
              # `make test-min` leaves the browser checks out (it ignores tests/test_browser.py): the page is the same
              pytest.mark.skipif(os.environ.get("KINETOSCOPE_MIN_VERSIONS") == "1", reason="browser checks run in `make test` only")]

CATEGORIES = ("gemm", "attention", "conv", "elementwise", "norm", "reduce", "copy", "communication", "other")


def _mystery_gpu_trace() -> dict:
    """One step, one fp32 matmul of recorded shapes and its kernel, on a device no peaks file lists."""
    from conftest import kernel, launch, op, trace_doc
    events = [op("ProfilerStep#1", 0, 1000),
              op("aten::mm", 10, 200, **{"Input Dims": [[256, 512], [512, 1024]], "Input type": ["float", "float"]}),
              launch(20, 5, corr=1), kernel("sgemm_128x64_nn", 40, 100, corr=1)]
    return trace_doc(events, deviceProperties=[{"id": 0, "name": "Mystery GPU 9000", "totalGlobalMem": 1 << 34,
                                                "computeMajor": 9, "computeMinor": 9, "numSms": 7}])


def _fixture_answer(n: int = 500) -> dict:
    """A `tables?by=roofline` answer of `n` op shapes spread over 4.5 decades of intensity under H200-like roofs
    (the route's layout; every figure made up, kernel rows left empty: they are no events of the span)."""
    bw, peaks = 4.8, {"bf16": 989.0, "fp32": 67.0, "vector fp32": 67.0}
    rows = []
    for i in range(n):
        category = CATEGORIES[i % 7]
        matrix = category in ("gemm", "attention", "conv")
        dtype = "bf16" if i % 3 else "fp32"
        # golden-ratio steps: intensities spread evenly on the log axis, no two shapes on one spot
        intensity = 10 ** ((i * 0.37 % 1) * 3 + 0.5) if matrix else 10 ** ((i * 0.618034 % 1) * 5 - 1.5)
        roof = min(bw * intensity, peaks[dtype] if matrix else peaks["vector fp32"])
        share = 0.05 + 0.9 * (i * 0.7548776 % 1)
        tflops, us, calls = roof * share, 5000.0 / (1 + i) ** 1.1, 1 + i % 13
        rows.append({"name": f"aten::op_{i}", "input_dims": f"[[{64 * (i + 1)}, 1024], [1024, 128]]",
                     "input_types": "['c10::BFloat16', 'c10::BFloat16']", "category": category, "calls": calls,
                     "flops": tflops * 1e6 * us / calls, "bytes": tflops * 1e6 * us / calls / intensity, "kernel_us": us,
                     "achieved_tflops": tflops, "achieved_tbps": tflops / intensity, "intensity": intensity,
                     "bound": "compute" if bw * intensity > roof else "memory", "roof_pct": 100 * share, "roof_us": us * share,
                     "dtype": dtype, "peak_source": "datasheet", "kernels": [{"name": f"kernel_{i}", "count": calls, "kernel_us": us}],
                     "kernel_rows": [], "kernel_count": calls})
    total = sum(r["kernel_us"] for r in rows)
    return {"by": "roofline", "sort": "", "filter": "", "total": n, "rows_in_window": n, "offset": 0, "limit": n, "window": None,
            "options": {}, "rows": rows,
            "totals": {"rows": n, "kernel_us": total / 0.8, "modelled_us": total, "unmodelled_us": total / 4, "unmodelled_share": 0.2,
                       "communication_us": 0.0, "device": "NVIDIA H200", "peak_source": "datasheet", "reason": None,
                       "recorded_inputs": True, "roofs": {"bandwidth_tbps": bw, "compute_tflops": peaks}}}


@pytest.fixture(scope="module")
def roofline_tb(tmp_path_factory):
    """A server on the H200 bf16 sample and the mystery-GPU trace, both loaded before the pages open."""
    if not H200_BF16.is_dir():
        pytest.skip(f"{H200_BF16} is missing")
    from conftest import write_trace
    logdir = tmp_path_factory.mktemp("logdir")
    shutil.copytree(H200_BF16, logdir / "h200_bf16")
    write_trace(logdir / "mystery" / "w.1700000000000.pt.trace.json", _mystery_gpu_trace())
    ensure_node_modules()
    server = TensorBoard(logdir, env={"KINETOSCOPE_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))})
    try:
        server.warm([s["id"] for s in server.spans()])
        yield server
    finally:
        server.stop()


def _roofline(server: TensorBoard, run: str, theme: str = "light", answer: Optional[Path] = None) -> dict:
    args = [server.base, str(ARTIFACTS), run, *SIZE, theme] + ([str(answer)] if answer else [])
    return run_node("roofline.mjs", *args, timeout_s=240)


def test_the_chart_draws_the_h200_ops_and_a_click_selects_their_kernels(roofline_tb):
    r = _roofline(roofline_tb, "h200_bf16")
    assert r["errors"] == [] and r["httpErrors"] == []
    chart = r["chart"]
    assert r["drawn"] and chart["count"] > 0 and r["pixels"] > 200, (chart["count"], r["pixels"])
    # the roofs of the H200 (the bandwidth slope and a flat line per dtype drawn), a bf16 one among them
    assert chart["roofs"] and chart["roofs"]["bandwidthTbps"] > 0
    assert "bf16" in [c["dtype"] for c in chart["roofs"]["compute"]]
    assert "has no work model" in chart["note"] and "H200" in chart["note"]
    assert chart["legend"] and set(chart["legend"]) <= set(CATEGORIES)
    # the hover box of the point under the pointer: its op, with every figure the brief lists
    largest, hover = chart["largest"], r["hover"]
    assert hover and hover["title"] == largest["name"] and hover["inside"], hover
    assert {"input dims", "input types", "calls", "kernel time", "achieved", "bandwidth", "intensity", "bound", "of the roof",
            "kernels"} <= set(hover["labels"])
    # a click: its first kernel selected on the lanes (the link's selection, the drawer's name), the lanes in view
    assert r["selAfterClick"] == str(largest["kernelRows"][0])
    assert r["drawerName"] in largest["kernels"], (r["drawerName"], largest["kernels"])
    assert r["pickedName"] == f"{largest['name']} {largest['dims']}"
    assert r["picked"].startswith(f"kernel 1 of {len(largest['kernelRows'])}") and r["lanesInView"]
    if len(largest["kernelRows"]) > 1:
        assert r["selAfterNext"] == str(largest["kernelRows"][1])
    # keys: Escape clears the selection, ArrowRight describes the point of the most kernel time, Enter selects its kernel
    assert r["selAfterEscape"] is None
    assert r["keyHover"] and r["keyHover"]["title"] == largest["ownName"]
    assert r["selAfterEnter"] == str(largest["ownKernelRows"][0])
    assert r["contrast"] == [], r["contrast"]
    # an area in the link: the chart is of that window (its own request), and says so
    assert r["area"]["asked"] and r["area"]["scope"].startswith("Selected area") and 0 < r["area"]["points"] <= chart["count"], r["area"]


def test_an_unknown_device_draws_the_points_without_roofs_and_says_why(roofline_tb):
    r = _roofline(roofline_tb, "mystery")
    assert r["errors"] == [] and r["httpErrors"] == []
    chart = r["chart"]
    assert chart["count"] == 1 and chart["roofs"] is None and chart["totals"]["roofs"] is None
    assert "No roofs: " in chart["note"]
    assert chart["largest"]["name"] == "aten::mm" and r["hover"]["title"] == "aten::mm"
    assert r["selAfterClick"] == str(chart["largest"]["kernelRows"][0]) and r["drawerName"] == "sgemm_128x64_nn"


def test_500_points_draw_fast_and_read_in_the_dark_theme(roofline_tb, tmp_path):
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(_fixture_answer(500)))
    r = _roofline(roofline_tb, "h200_bf16", "dark", answer)
    assert r["errors"] == [] and r["httpErrors"] == []
    chart = r["chart"]
    assert chart["count"] == 500 and r["pixels"] > 2000
    assert [c["dtype"] for c in chart["roofs"]["compute"]] == ["bf16", "fp32, vector fp32"]  # equal peaks: one line
    assert chart["note"].startswith("500 of 500 op shapes drawn.") and "20.0% of the kernel time" in chart["note"]
    assert r["hover"]["title"] == chart["largest"]["name"] and r["hover"]["inside"]
    # one frame's drawing of 500 points: well under a 60 Hz frame (16.7 ms)
    assert math.isfinite(chart["drawMs"]) and chart["drawMs"] < 8, chart["drawMs"]
    assert r["contrast"] == [], r["contrast"]
    print(f"roofline: 500 points drawn in {chart['drawMs']:.2f} ms per frame")
