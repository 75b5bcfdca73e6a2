"""tests/min-versions.txt pins exactly the floors setup.py declares (runtime and test extras), so that
`make test-min` tests the declared minimums; in that venv (KINETOSCOPE_MIN_VERSIONS=1) the installed
versions and the Python are those floors, torch is absent, and the oldest ruff reads ruff.toml."""
from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO
from packaging.version import Version

PINS_FILE = REPO / "tests" / "min-versions.txt"
IN_MIN_VENV = os.environ.get("KINETOSCOPE_MIN_VERSIONS") == "1"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def setup_floors() -> tuple[str, dict[str, Version]]:
    """(python_requires floor, {package: floor}) of install_requires and the `test` extra, read without
    running setup.py."""
    tree = ast.parse((REPO / "setup.py").read_text())
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup")
    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords
          if k.arg in ("python_requires", "install_requires", "extras_require")}
    floors = {}
    for req in kw["install_requires"] + kw["extras_require"]["test"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?>=([0-9][0-9A-Za-z.]*)", req)
        assert match, f"setup.py: {req!r} has no plain `>=` floor"
        floors[_norm(match.group(1))] = Version(match.group(2))
    python = re.fullmatch(r">=\s*([0-9.]+)", kw["python_requires"])
    assert python, kw["python_requires"]
    return python.group(1), floors


def pins() -> dict[str, Version]:
    out = {}
    for line in PINS_FILE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{PINS_FILE.name}: {line!r} is not an exact `==` pin"
            out[_norm(name)] = Version(version)
    return out


def test_pins_are_exactly_the_declared_floors():
    _, floors = setup_floors()
    assert pins() == floors, f"{PINS_FILE.name} and setup.py disagree: raise both together"


@pytest.mark.skipif(not IN_MIN_VENV, reason="only in the minimum-versions venv (make test-min)")
def test_min_venv_holds_the_floors():
    python, floors = setup_floors()
    assert "{}.{}".format(*sys.version_info[:2]) == python, f"python {sys.version.split()[0]}, python_requires >={python}"
    installed = {name: Version(importlib.metadata.version(name)) for name in floors}
    assert installed == floors
    assert importlib.util.find_spec("torch") is None, "torch must not be in the minimum-versions venv"


@pytest.mark.skipif(not IN_MIN_VENV, reason="only in the minimum-versions venv (make test-min)")
def test_the_oldest_ruff_reads_the_lint_config():
    # `make lint` itself is no test; the floor of the `test` extra must at least understand ruff.toml's rules
    # (a rule code it does not know is a config error, exit 2). Findings are `make lint`'s business.
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--exit-zero", "--quiet", "tb_plugin", "tests", "samples"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
