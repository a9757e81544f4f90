"""The package's layer contract (``[tool.trt-scatter] layers`` in pyproject.toml): every import, at module
level or inside a function, goes to the importer's own layer or a lower one, and no modules import each
other in a circle. Read from the sources (the package maps plugins/ and networks/ into trt_scatter)."""

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FOLDERS = {"trt_scatter": ROOT / "trt_scatter", "trt_scatter.plugins": ROOT / "plugins", "trt_scatter.networks": ROOT / "networks"}


def _modules():
    """``{module name: path}`` of every module of the package, as setuptools maps the folders."""
    modules = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _imports(name, path):
    """The package's modules that module ``name`` imports (``from . import x`` and ``import a.b`` alike)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
            # `from package import module` runs the package's __init__ but depends on the module (as import-linter reads it)
            targets = names + ([base] if any(target not in MODULES for target in names) else [])
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # `from trt_scatter.oracle import rules` -> trt_scatter.oracle.rules
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(name):
    """The index of the layer ``name`` belongs to (0 = the top), or None for the package's own ``__init__``."""
    for index, layer in enumerate(PYPROJECT["tool"]["trt-scatter"]["layers"]):
        if any(name == prefix or name.startswith(prefix + ".") for prefix in (part.strip() for part in layer.split("|"))):
            return index
    return None


def test_every_module_has_a_layer():
    assert [name for name in MODULES if name != "trt_scatter" and _layer(name) is None] == []


def test_imports_go_down_the_layers():
    upward = [f"{name} -> {target}" for name, targets in GRAPH.items() if name != "trt_scatter"
              for target in sorted(targets) if target != "trt_scatter" and _layer(target) < _layer(name)]  # fmt: skip
    assert upward == []


def _circles():
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(name):
        index[name] = low[name] = counter[0]
        counter[0] += 1
        stack.append(name)
        on_stack.add(name)
        for target in GRAPH.get(name, ()):
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in on_stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == name:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for name in GRAPH:
        if name not in index:
            visit(name)
    return found


def test_no_import_circles():
    assert _circles() == []


def test_the_checker_sees_what_it_checks():
    """It reads relative and function-level imports: plugins.slice_scatter uses plugins.kernels (``from . import
    kernels``), engine imports passes.aot inside a function."""
    assert "trt_scatter.plugins.kernels" in GRAPH["trt_scatter.plugins.slice_scatter"]
    assert "trt_scatter.passes.aot" in GRAPH["trt_scatter.engine"]
    assert _layer("trt_scatter.cli.check") < _layer("trt_scatter.engine") < _layer("trt_scatter.passes.lower") < _layer("trt_scatter.log")


def test_every_package_of_the_tree_is_one_setuptools_installs():
    """pyproject.toml lists the packages by hand: one left out (trt_scatter.model was) is missing from every wheel and
    non-editable install, while an editable one, as the tests run, still finds it."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert FOLDERS == {package: ROOT / folder for package, folder in setuptools["package-dir"].items()}
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    assert sorted(setuptools["packages"]) == sorted(packages)
