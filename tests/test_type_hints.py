"""Public functions have type hints: every function and method whose name does not start with ``_``, in the
package's folders (trt_scatter/, networks/, plugins/; modules whose own name starts with ``_`` are private,
``__init__.py`` is public), including the methods of public classes and their constructors, annotates each parameter but self/cls
(``*args`` and ``**kwargs`` too) and its return. Read from the sources' syntax trees: nothing is imported.

One kind of function has none, on purpose: the translations that ``trt_scatter.torch.dynamo.translation_table``
hands to ``torch.onnx.export(dynamo=True)``. The exporter reads a custom translation's annotations
(``typing.get_type_hints`` in torch.onnx's ``op_signature_from_function``) to tell ONNX inputs from attributes
and to match overloads; without them every parameter is an input of any type, which is what the translations
take (graph values, Python ints, ``SymInt``). Annotating them would change the export.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("trt_scatter", "networks", "plugins")
TRANSLATIONS = Path("trt_scatter/torch/dynamo.py")


def _public_modules():
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if not any(part.startswith("_") and part != "__init__.py" for part in path.relative_to(ROOT).parts):
                yield path


def _public_functions(body, in_class=False):
    """The public functions of a module's or a public class's body, nested public classes included, and a public
    class's ``__init__`` (its constructor's parameters are the class's API)."""
    for node in body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            yield from _public_functions(node.body, in_class=True)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (not node.name.startswith("_") or in_class and node.name == "__init__"):
            yield node


def _parameters(function):
    arguments = function.args
    parameters = [a for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs if a.arg not in ("self", "cls")]
    return parameters + [a for a in (arguments.vararg, arguments.kwarg) if a is not None]


def _lacks_hints(function):
    return function.returns is None or any(a.annotation is None for a in _parameters(function))


def _translations():
    """The names of the functions ``translation_table`` returns (the values of its dict literal)."""
    tree = ast.parse((ROOT / TRANSLATIONS).read_text())
    table = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "translation_table")
    returned = next(node.value for node in ast.walk(table) if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict))
    return {value.id for value in returned.values if isinstance(value, ast.Name)}


def _unhinted():
    """``path:line name`` of every public function that lacks a parameter's or its return's annotation (the dynamo
    translations aside), and how many public functions were read."""
    offenders, total, translations = [], 0, _translations()
    for path in _public_modules():
        relative = path.relative_to(ROOT)
        for function in _public_functions(ast.parse(path.read_text(), filename=str(path)).body):
            total += 1
            if _lacks_hints(function) and not (relative == TRANSLATIONS and function.name in translations):
                offenders.append(f"{relative}:{function.lineno} {function.name}")
    return offenders, total


def test_public_functions_have_type_hints():
    offenders, total = _unhinted()
    if offenders:
        pytest.fail(f"{len(offenders)} of {total} public functions lack type hints:\n" + "\n".join(offenders), pytrace=False)


def test_the_dynamo_translations_have_no_annotations():
    """What the exporter reads stays as it expects: no annotation on any parameter or return of a translation."""
    functions = {node.name: node for node in ast.parse((ROOT / TRANSLATIONS).read_text()).body if isinstance(node, ast.FunctionDef)}
    translations = _translations()
    assert len(translations) >= 10 and translations <= set(functions)
    annotated = [name for name in sorted(translations) if functions[name].returns is not None or any(a.annotation is not None for a in _parameters(functions[name]))]
    assert annotated == []


def test_the_walk_sees_what_it_checks():
    """It reads methods of public classes and __init__ modules, and skips private names and modules."""
    tree = ast.parse("def f(a: int) -> int: ...\ndef g(a): ...\ndef _h(a): ...\nclass C:\n    def m(self, *args, **kwargs) -> None: ...\n"
                     "    def n(self, x: int): ...\n    def o(self) -> None: ...\nclass _D:\n    def m(self, a): ...\n")
    assert [(f.name, _lacks_hints(f)) for f in _public_functions(tree.body)] == [("f", False), ("g", True), ("m", True), ("n", True), ("o", False)]
    paths = {str(path.relative_to(ROOT)) for path in _public_modules()}
    assert {"trt_scatter/__init__.py", "plugins/base.py", "networks/graph.py"} <= paths and "trt_scatter/cli/__main__.py" not in paths
    assert _unhinted()[1] > 400
