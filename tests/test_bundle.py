"""The frontend served as one module (server/bundle.py, `static/bundle.js`): every module ui/app.js reaches, once,
each after what it imports, exporting what the module itself exports; forms it does not handle are refused by name."""
from __future__ import annotations

import importlib.resources
import json
import posixpath
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from kinetoscope.server import plugin as plugin_module
from kinetoscope.server.bundle import BundleError, bundle
from kinetoscope.server.plugin import FrontendBundle, KinetoscopePlugin
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

FRONTEND = Path(str(importlib.resources.files("kinetoscope.frontend")))
STATEMENT = re.compile(r"^\s*(?:import|export)\b[^;'\"]*?\bfrom\s+'([^']+)'|^\s*import\s+'([^']+)'", re.M)


def _imports(module: str) -> list[str]:
    """The modules `module` imports (read independently of the bundler)."""
    return [posixpath.normpath(posixpath.join(posixpath.dirname(module), a or b))
            for a, b in STATEMENT.findall((FRONTEND / module).read_text())]


def _reachable(start: str = "ui/app.js") -> set[str]:
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += _imports(module)
    return seen


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    app = KinetoscopePlugin(base_plugin.TBContext(logdir=str(tmp_path_factory.mktemp("logs")))).get_plugin_apps()
    return Client(_dispatch(app)).get("/static/bundle.js")


def _dispatch(apps):
    """A WSGI app routing as TensorBoard does: exact paths first, then `/static/*`."""
    def app(environ, start_response):
        path = environ["PATH_INFO"]
        handler = apps.get(path) or apps["/static/*"]
        return handler(environ, start_response)
    return app


def test_the_bundle_holds_every_module_once_each_after_its_imports(served):
    assert served.status_code == 200 and served.mimetype == "text/javascript"
    text = served.get_data(as_text=True)
    order = re.findall(r"^// ---- (\S+)$", text, re.M)
    expected = _reachable()
    assert len(expected) > 50 and sorted(order) == sorted(expected) and len(order) == len(set(order))
    position = {module: k for k, module in enumerate(order)}
    for module in order:
        assert all(position[dep] < position[module] for dep in _imports(module)), module
    assert "import.meta.url" not in text.replace("new URL(path, import.meta.url)", "")


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_each_bundled_module_exports_what_the_module_itself_exports(served, tmp_path):
    """Node imports the bundle and every module file: the same export names per module, and `start`."""
    (tmp_path / "bundle.mjs").write_text(served.get_data(as_text=True))
    script = """
const [bundlePath, root] = process.argv.slice(1);
const bundled = await import(bundlePath);
const out = { start: typeof bundled.start, modules: {} };
for (const [path, exports] of Object.entries(bundled.modules)) {
  const own = await import(`${root}/${path}`);
  out.modules[path] = [Object.keys(exports).sort(), Object.keys(own).sort()];
}
console.log(JSON.stringify(out));
"""
    run = subprocess.run(["node", "--input-type=module", "-e", script, str(tmp_path / "bundle.mjs"), str(FRONTEND)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["start"] == "function" and len(out["modules"]) == len(_reachable())
    for path, (bundled, own) in out["modules"].items():
        assert bundled == own and own, path


def _modules(**files: str):
    return lambda module: files[module.replace("/", "__").replace(".js", "")]


def test_the_bundler_rewrites_imports_exports_and_import_meta():
    text, order = bundle(_modules(
        a="import { b as c, d } from './lib/b.js';\nexport function f() { return c + d + new URL('x', import.meta.url); }\n",
        lib__b="export const b = 1;\nexport class d {}\nexport async function g() {}\n"), entry="a.js")
    assert order == ["lib/b.js", "a.js"]
    assert "const {b: c, d} = __ks_m0;" in text and "return {b, d, g};" in text and "return {f};" in text
    assert "__ks_url('./a.js')" in text and "export const {f} = __ks_m1;" in text


@pytest.mark.parametrize("source, message", [
    ("export default 1;\n", "cannot bundle 'export default 1;'"),
    ("import * as x from './b.js';\n", "cannot bundle \"import * as x"),
    ("export { y };\nconst y = 1;\n", "cannot bundle 'export { y };'"),
    ("export let z = 1;\n", "cannot bundle 'export let z = 1;'"),
    ("import { q } from 'https://example.com/x.js';\n", "an import of 'https://example.com/x.js'"),
    ("import { q } from '../../outside.js';\n", "an import of '../../outside.js'"),
    ("import { q } from './c.js';\n", "an import cycle (c.js -> a.js -> c.js)"),
    ("import { q-r } from './b.js';\n", "cannot bundle the import 'q-r'"),
])
def test_the_bundler_refuses_what_it_does_not_handle(source, message):
    files = {"a": source, "b": "export const q = 1;\n", "c": "import { f } from './a.js';\nexport const q = 2;\n"}
    entry = "c.js" if "cycle" in message else "a.js"
    with pytest.raises(BundleError, match=re.escape(message)):
        bundle(_modules(**files), entry=entry)


def test_a_changed_module_rebuilds_the_bundle():
    cached = FrontendBundle()
    first = cached.get()
    assert cached.get() is first  # unchanged files: the same bytes
    cached.built = ((("ui/app.js", -5, -5),), b"stale")  # as if ui/app.js had changed since
    assert cached.get() == first


def test_a_bundle_that_cannot_be_built_is_a_500_and_the_tab_falls_back(monkeypatch, tmp_path):
    def refuse(read):
        raise BundleError("ui/app.js: cannot bundle 'export default 1;'")
    monkeypatch.setattr(plugin_module, "bundle", refuse)
    app = KinetoscopePlugin(base_plugin.TBContext(logdir=str(tmp_path))).get_plugin_apps()
    response = Client(_dispatch(app)).get("/static/bundle.js")
    assert response.status_code == 500 and b"export default" not in response.get_data()
    index = (FRONTEND / "index.js").read_text()
    assert "import('./static/bundle.js')" in index and "import('./static/ui/app.js')" in index
