"""The package's modules import one another down the layers, with no cycle (docs/contributing.md).

Three checks: a module imports modules of its own layer and of the layers below only; the
graph of imports between the package's own modules has no cycle (an import deferred into a
function counts too: it hides a cycle rather than removing it); and each module, imported first
into an interpreter that holds no module of the package, loads.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ardselect

PACKAGE = Path(ardselect.__file__).parent
CLI = PACKAGE.parent / "cli"


def _modules():
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(("ardselect", *parts))] = path
    for path in sorted(CLI.glob("*.py")):
        stem = path.stem
        names["ardselect_cli" if stem == "__init__" else f"ardselect_cli.{stem}"] = path
    return names


def _imports(name, path, known):
    """The package modules ``name`` imports, at module level or inside a function."""
    package = name if path.stem == "__init__" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()

    def visit(body):
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    mod = f"{base}.{node.module}" if node.module else base
                else:
                    mod = node.module
                found.add(mod)
                found.update(f"{mod}.{a.name}" for a in node.names)

    visit(tree.body)
    return {m for m in found if m in known and m != name}


def test_no_import_cycle():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    state = {}  # 1: on the current path, 2: done

    def walk(node, trail):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*trail[trail.index(nxt):], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                walk(nxt, [*trail, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])


def test_every_module_imports_first():
    names = [n for n in _modules() if n != "ardselect_cli.__main__"]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    for loaded in [m for m in sys.modules if m.split('.')[0] in "
        "('ardselect', 'ardselect_cli')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr


def _private_sklearn_imports(path):
    """The private scikit-learn modules or names ``path`` imports (anywhere in it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            mods = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found += [m for m in mods if m.split(".")[0] == "sklearn"
                  and any(part.startswith("_") for part in m.split(".")[1:])]
    return found


def test_no_private_scikit_learn_import():
    # scikit-learn may change its private modules in any release; the library and the command
    # line use its public API only (the bound in pyproject.toml relies on it).
    found = {name: bad for name, path in _modules().items()
             if (bad := _private_sklearn_imports(path))}
    assert found == {}
    # (the check itself finds one)
    probe = PACKAGE.parent / "tests" / "test_contract.py"
    assert _private_sklearn_imports(probe)


# The layers, lowest first (STYLE.md sec. 1, docs/contributing.md): a module imports modules of its
# own layer and of the layers below, never one above; an import deferred into a function counts.
# "base" is the package-wide bottom (the lazy __init__, the version, the exceptions). A module in a
# layer's folder belongs to that layer; the public modules keep a file at the top of the package
# that only re-exports the layer's code (test_public_modules_only_re_export), placed here.
LAYERS = ("base", "numerics", "engine", "estimators", "dataio", "signature", "cli")
FOLDERS = {"dataio", "engine", "estimators", "numerics", "signature"}
TOP_LEVEL = {
    "ardselect": "base",
    "ardselect._version": "base",
    "ardselect.choices": "base",
    "ardselect.exceptions": "base",
    "ardselect.io": "dataio",
    "ardselect.model": "dataio",
    "ardselect.preprocessing": "dataio",
    "ardselect.datasets": "dataio",
    "ardselect.diagnostics": "estimators",
    "ardselect.get": "signature",
    "ardselect.pl": "signature",
    "ardselect.model_selection": "signature",
}
# The imports that go up a layer: none. A new one fails the test (move the code down instead).
KNOWN_UPWARD = set()


def _layer(name):
    parts = name.split(".")
    if parts[0] == "ardselect_cli":
        return "cli"
    if len(parts) > 1 and parts[1] in FOLDERS:
        return parts[1]
    assert name in TOP_LEVEL, f"{name}: move it into a layer's folder or give it a layer here"
    return TOP_LEVEL[name]


def _upward(modules):
    return {(name, imported) for name, path in modules.items()
            for imported in _imports(name, path, modules)
            if LAYERS.index(_layer(imported)) > LAYERS.index(_layer(name))}


def test_imports_flow_down_the_layers():
    modules = _modules()
    folders = {n.split(".")[1] for n in modules
               if n.count(".") == 1 and modules[n].name == "__init__.py"}
    assert folders == FOLDERS
    assert _upward(modules) == KNOWN_UPWARD


def test_layer_check_sees_an_upward_import(tmp_path):
    # (the check itself finds one: a numerics module importing an estimator, deferred)
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ..estimators._base import _FamilyEstimator\n")
    modules = {**_modules(), "ardselect.numerics.probe": probe}
    assert _upward(modules) - KNOWN_UPWARD == {("ardselect.numerics.probe",
                                                "ardselect.estimators._base")}


#: The style guide's limit on a function's code lines (its docstring, comments and blank lines
#: not counted).
MAX_FUNCTION_LINES = 100


def _code_lines(func, source_lines):
    body = func.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        body = body[1:]
    lines = set()
    for node in body:
        for number in range(node.lineno, node.end_lineno + 1):
            text = source_lines[number - 1].strip()
            if text and not text.startswith("#"):
                lines.add(number)
    return len(lines)


def _long_functions(paths):
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _code_lines(node, lines)
                if n > MAX_FUNCTION_LINES:
                    found.append(f"{path.name}:{node.name} ({n} lines)")
    return found


def test_no_function_over_a_hundred_code_lines():
    assert _long_functions(_modules().values()) == []


def test_function_length_check_counts_code_not_docstrings(tmp_path):
    long = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES + 1))
    probe = tmp_path / "probe.py"
    doc = '    """' + "\n".join(["doc"] * 50) + '"""\n'
    probe.write_text(f"def short():\n{doc}    # a comment\n\n    return 1\n\n\ndef long():\n{long}\n")
    assert _long_functions([probe]) == [f"probe.py:long ({MAX_FUNCTION_LINES + 1} lines)"]


#: The style guide's limit on a module's lines (split a longer module by what its parts do).
MAX_MODULE_LINES = 800


def test_no_module_over_eight_hundred_lines():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_public_modules_only_re_export():
    # A public module above the base holds imports and its __all__: its code lives in its layer.
    held = {}
    for name, layer in TOP_LEVEL.items():
        if layer == "base":
            continue
        tree = ast.parse(_modules()[name].read_text(encoding="utf-8"))
        body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
        code = [type(node).__name__ for node in body
                if not isinstance(node, (ast.Import, ast.ImportFrom))
                and not (isinstance(node, ast.Assign)
                         and [getattr(t, "id", None) for t in node.targets] == ["__all__"])]
        if code:
            held[name] = code
    assert held == {}
