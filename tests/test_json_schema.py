"""The CLI's JSON documents (`report`, `table`, `diff`, `whatif` with --format json) carry `schema_version` and
validate against the JSON Schemas shipped in the package (formats/schemas/, formats/schema.py)."""
from __future__ import annotations

import copy
import json
import shutil

import jsonschema
import pytest
from conftest import REPO
from kinetoscope.cli.main import main
from kinetoscope.formats.schema import DOCUMENTS, SCHEMA_VERSION, schema, versioned

SAMPLES = REPO / "samples" / "logs"
SYNTH = SAMPLES / "synthetic"
TABLES = ("op", "kernel", "module", "module-tree", "memory", "annotation", "sequences")


def _doc(capsys, *argv: str, code: int = 0) -> dict:
    assert main(list(argv)) == code
    return json.loads(capsys.readouterr().out)


def _errors(name: str, doc: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema(name))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"[:300] for e in validator.iter_errors(doc)]


@pytest.fixture(scope="module")
def one_trace():
    return str(next((SYNTH / "mixed").glob("*.pt.trace.json.gz")))


@pytest.mark.parametrize("name", DOCUMENTS)
def test_each_schema_is_a_valid_draft_2020_12_schema_shipped_in_the_package(name):
    s = schema(name)
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["properties"]["schema_version"] == {**s["properties"]["schema_version"], "const": SCHEMA_VERSION}
    assert "schema_version" in s["required"]
    with pytest.raises(KeyError):
        schema("nope")


def test_report_of_every_sample_and_a_broken_trace_validates(capsys, tmp_path):
    """Every sample (CPU-only, CUDA, multi-rank jobs, synthetic) plus a file that cannot load (its error entry)."""
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLES, logs)
    (logs / "broken").mkdir()
    (logs / "broken" / "w.1.pt.trace.json").write_text('{"traceEvents": [')
    assert main(["report", str(logs), "--format", "json", "--no-cache"]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == SCHEMA_VERSION and list(doc)[0] == "schema_version"
    assert _errors("report", doc) == []
    assert any(t["error"] for t in doc["traces"]) and any(not t["error"] for t in doc["traces"])
    assert doc["ranks"] and doc["runs"]  # multi-rank samples: the ranks view and pooled verdicts are covered


@pytest.mark.parametrize("by", TABLES)
def test_table_of_each_kind_validates(capsys, one_trace, by):
    doc = _doc(capsys, "table", one_trace, "--by", by, "--format", "json", "--no-cache")
    assert doc["schema_version"] == SCHEMA_VERSION and _errors("table", doc) == []


def test_diff_validates_with_and_without_a_gate(capsys):
    base, cand = str(SYNTH / "compute"), str(SYNTH / "sync")
    for extra in ((), ("--fail-if", "step_time>+1000%")):
        doc = _doc(capsys, "diff", base, cand, "--format", "json", "--no-cache", *extra)
        assert doc["schema_version"] == SCHEMA_VERSION and _errors("diff", doc) == []
        assert (doc["gate"] is None) == (not extra)


def test_whatif_validates_per_trace_and_per_job(capsys):
    doc = _doc(capsys, "whatif", str(SYNTH / "sync"), "--edit", "dataloader=0", "--format", "json", "--no-cache")
    assert doc["traces"] and _errors("whatif", doc) == []
    jobs = _doc(capsys, "whatif", str(SAMPLES / "ddp_gloo_4_straggler"), "--edit", "straggler=median", "--format", "json", "--no-cache")
    assert jobs["runs"] and _errors("whatif", jobs) == []


def test_the_schemas_reject_what_consumers_must_not_get(capsys, one_trace):
    """A document without its version, a verdict with an unknown confidence, a row without a name: each fails."""
    table = _doc(capsys, "table", one_trace, "--by", "kernel", "--format", "json", "--no-cache")
    assert _errors("table", {k: v for k, v in table.items() if k != "schema_version"})
    assert _errors("table", {**table, "schema_version": SCHEMA_VERSION + 1})
    nameless = copy.deepcopy(table)
    del nameless["rows"][0]["name"]
    assert _errors("table", nameless)
    report = versioned({"runs": [], "ranks": {}, "jobs": {}, "traces": []})
    assert _errors("report", report) == []
    bad = copy.deepcopy(report)
    bad["runs"] = [{"run": "r", "workers": [], "basis": "run", "spans": 1, "verdict": {
        "bound": "compute-bound", "confidence": "very", "evidence": "", "suggestion": "", "share": 0.5, "runner_up": None,
        "runner_up_share": None}}]
    assert any("confidence" in e or "very" in e for e in _errors("report", bad))
