"""The package's layout rules, read from its imports (every `import` statement, at module level or inside a
function, resolved to the kinetoscope module it names):

- the doors are folders: `server/` (TensorBoard), `cli/` (the command) and `formats/` (the renderers) over one
  `pipeline.py`; no other module sits loose at the top of the package;
- layers only import downwards: `trace/` ← `analysis/` ← `views/` ← `pipeline.py` ← `index/` ← the doors;
  `formats/` only reads analysis constants; `server/` and `cli/` never import each other, and nothing below
  them imports either;
- imports between packages stand at module top, where a reader sees them (an import inside a function hides
  a dependency, and let `index/` reach up into the HTTP code before);
- no private name (`_x`) crosses a file: what another module needs is public. A private *module* (the C
  extractor `trace/_columns`) is private to its package and imported there only;
- `analysis/` is one package per question (`analysis/README.md`) and `report.py`, the facade; its packages import
  only down `ANALYSIS_ORDER`, so `core/`, the primitives, imports nothing of `analysis/`.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tb_plugin" / "kinetoscope"

# What each part of the package may import from the others (its own modules always).
ALLOWED = {
    "trace": set(),
    "analysis": {"trace"},
    "views": {"trace", "analysis"},
    "pipeline": {"trace", "analysis", "views"},
    "index": {"trace", "analysis", "views", "pipeline"},
    "formats": {"analysis"},
    "server": {"trace", "analysis", "views", "pipeline", "index", "formats"},
    "cli": {"trace", "analysis", "views", "pipeline", "index", "formats"},
}
TOP_LEVEL = {"__init__.py", "pipeline.py"}
# `analysis/`'s packages (and its facade), lowest first: each imports only those before it.
ANALYSIS_ORDER = ("core", "distributed", "memory", "idle", "graphs", "tables", "roofline", "judgement", "device", "whatif", "report", "compare")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted, relative to the package ("server.routes")
    target: str  # the imported kinetoscope module, dotted ("analysis.report"; "" for the package itself)
    names: tuple[str, ...]  # names taken from it (`from X import a, b`); () for `import X`
    nested: bool  # inside a function or class body
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(source: str, is_package: bool, level: int, module: str | None) -> str | None:
    """The kinetoscope module an import statement names, relative to the package; None when outside it."""
    if level == 0:
        if module is None or not (module == "kinetoscope" or module.startswith("kinetoscope.")):
            return None
        return module[len("kinetoscope."):] if module != "kinetoscope" else ""
    base = source.split(".") if source else []
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, *([module] if module else [])])


def _imports(path: Path) -> list[Import]:
    source = _module_name(path)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    found: list[Import] = []

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    target = _resolve(source, is_package, 0, alias.name)
                    if target is not None:
                        found.append(Import(source, target, (), nested, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(source, is_package, child.level, child.module)
                if target is not None:
                    found.append(Import(source, target, tuple(a.name for a in child.names), nested, child.lineno))
            visit(child, inner)

    visit(tree, False)
    return found


def _part(module: str) -> str:
    """The layer a module belongs to: its first folder, or `pipeline`; "" for the package's own __init__."""
    return module.split(".")[0] if module else ""


def _is_module(dotted: str) -> bool:
    """Whether a dotted name is a module of the package (a folder, a .py file, or a C extension's source)."""
    path = PACKAGE.joinpath(*dotted.split("."))
    return path.is_dir() or path.with_suffix(".py").exists() or path.with_suffix(".c").exists()


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
IMPORTS = [i for p in SOURCES for i in _imports(p)]


def _edges(imp: Import) -> list[tuple[str, str]]:
    """(source part, target part) of each module an import reaches (`from . import a, b` reaches a and b)."""
    modules = [f"{imp.target}.{n}".lstrip(".") for n in imp.names if _is_module(f"{imp.target}.{n}".lstrip("."))]
    return [(_part(imp.source), _part(m)) for m in modules or [imp.target]]


def test_the_doors_are_folders_over_one_pipeline():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in TOP_LEVEL)
    assert loose == [], f"modules loose at the top of the package: {loose} (put them in a door or a layer)"
    for door in ("server", "cli", "formats"):
        assert (PACKAGE / door / "__init__.py").is_file(), door
    assert set(ALLOWED) == {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} | {"pipeline"}


def test_imports_only_go_down_the_layers():
    wrong = []
    for imp in IMPORTS:
        for source, target in _edges(imp):
            if target in ("", source) or source == "":
                continue
            if target not in ALLOWED[source]:
                wrong.append(f"{imp.source}:{imp.line} imports {imp.target or 'kinetoscope'} ({source} -> {target})")
    assert wrong == []


def _analysis_package(module: str) -> str:
    """`idle` for `analysis.idle.gpu_idle`, `report` for the facade; "" outside `analysis/` or for its __init__."""
    parts = module.split(".")
    return parts[1] if parts[0] == "analysis" and len(parts) > 1 else ""


def _upward_in_analysis(imports: list[Import]) -> list[str]:
    wrong = []
    for imp in imports:
        source = _analysis_package(imp.source)
        if not source:
            continue
        modules = [f"{imp.target}.{n}".lstrip(".") for n in imp.names if _is_module(f"{imp.target}.{n}".lstrip("."))]
        for target in map(_analysis_package, modules or [imp.target]):
            if target and target != source and ANALYSIS_ORDER.index(target) > ANALYSIS_ORDER.index(source):
                wrong.append(f"{imp.source}:{imp.line} imports {imp.target} (analysis: {source} -> {target})")
    return wrong


def test_analysis_is_one_package_per_question_and_the_facade():
    analysis = PACKAGE / "analysis"
    loose = sorted(p.name for p in analysis.glob("*.py") if p.name not in ("__init__.py", "report.py"))
    assert loose == [], f"modules loose in analysis/: {loose} (put each in the package of its question)"
    packages = sorted(p.name for p in analysis.iterdir() if (p / "__init__.py").is_file())
    assert sorted(ANALYSIS_ORDER) == sorted([*packages, "report"])
    readme = (analysis / "README.md").read_text()
    for name in packages:
        doc = ast.get_docstring(ast.parse((analysis / name / "__init__.py").read_text()))
        assert doc and len(doc) < 300, f"analysis/{name}/__init__.py says in a sentence which question it answers"
        assert f"| `{name}/` |" in readme, f"analysis/README.md has a line for {name}/"


def test_analysis_imports_only_go_down_its_packages():
    assert _upward_in_analysis(IMPORTS) == []


@pytest.mark.parametrize("source, text", [
    ("analysis.core.selectors", "from ..idle.gpu_idle import gpu_idle"),
    ("analysis.core.thresholds", "from .. import report"),
    ("analysis.idle.gpu_idle", "from ..judgement import verdict"),
    ("analysis.tables.index", "from ..whatif.replay import whatif"),
    ("analysis.report", "from .compare.gate import check"),
    ("analysis.whatif.savings", "from kinetoscope.analysis.compare import sides"),
])
def test_a_planted_upward_import_in_analysis_is_caught(source, text):
    node = ast.parse(text).body[0]
    level = getattr(node, "level", 0)
    imp = Import(source, _resolve(source, False, level, node.module), tuple(a.name for a in node.names), False, 1)
    assert _upward_in_analysis([imp]), text


def test_server_and_cli_never_import_each_other():
    crossing = [f"{i.source}:{i.line} -> {i.target}" for i in IMPORTS for s, t in _edges(i) if {s, t} == {"server", "cli"}]
    assert crossing == []


def test_no_hidden_imports_between_packages():
    hidden = [f"{i.source}:{i.line} imports {i.target} inside a function" for i in IMPORTS
              if i.nested and any(s != t for s, t in _edges(i))]
    assert hidden == []


def _private_attributes(path: Path) -> list[str]:
    """`module._name` where `module` is a kinetoscope module imported into this file."""
    tree = ast.parse(path.read_text(), str(path))
    modules = set()
    for imp in _imports(path):
        for alias_node in ast.walk(tree):
            if isinstance(alias_node, (ast.Import, ast.ImportFrom)) and alias_node.lineno == imp.line:
                for alias in alias_node.names:
                    dotted = f"{imp.target}.{alias.name}".lstrip(".") if imp.names else imp.target
                    if _is_module(dotted):
                        modules.add(alias.asname or alias.name.split(".")[0])
    return [f"{_module_name(path)}:{node.lineno} uses {node.value.id}.{node.attr}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
            and node.attr.startswith("_") and not node.attr.startswith("__")]


def test_no_private_name_crosses_a_file():
    crossing = []
    for imp in IMPORTS:
        for name in imp.names:
            if not name.startswith("_") or name.startswith("__"):
                continue
            dotted = f"{imp.target}.{name}".lstrip(".")
            own_package = imp.target == imp.source.rpartition(".")[0] or imp.target == imp.source
            if _is_module(dotted) and own_package:
                continue  # a private module, imported by its own package
            crossing.append(f"{imp.source}:{imp.line} imports {name} from {imp.target or 'kinetoscope'}")
    for path in SOURCES:
        crossing += _private_attributes(path)
    assert crossing == []


@pytest.mark.parametrize("source, is_package, text", [
    ("cli.report", False, "from ..server import routes"),
    ("server.routes", False, "from kinetoscope.cli.main import main"),
    ("server", True, "from ..cli import diff"),
    ("cli.table", False, "from ..server.errors import BadRequest"),
])
def test_the_walker_sees_a_crossing_import(source, is_package, text):
    """The rules are only as good as the walker: planted crossings between the doors are resolved as such."""
    node = ast.parse(text).body[0]
    imp = Import(source, _resolve(source, is_package, node.level, node.module), tuple(a.name for a in node.names), False, 1)
    assert any({s, t} == {"server", "cli"} for s, t in _edges(imp))


MAX_MODULE_LINES = 500  # a module past this is cut along its seams (issue 49)
MAX_FUNCTION_LINES = 60  # a function or method past this is cut into named steps


def test_no_module_over_500_lines_and_no_function_over_60():
    long_modules, long_functions = [], []
    for path in SOURCES:
        text = path.read_text()
        if text.count("\n") > MAX_MODULE_LINES:
            long_modules.append(f"{_module_name(path)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long_functions.append(f"{_module_name(path)}:{node.lineno} {node.name}: {lines} lines")
    assert long_modules == [] and long_functions == []
