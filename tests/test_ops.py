"""The op registry (trt_scatter.ops): every registered op has its modules, side by side, with what the
rest of trt-scatter asks of an op; nothing outside them lists the ops. A new op is its modules and one
registration line: these tests then hold it to the same contract as the others."""

import ast
import importlib
from pathlib import Path

import pytest

from trt_scatter import ops

ROOT = Path(__file__).resolve().parents[1]
ALL_OPS = [*ops.OPS.values(), *ops.STANDARD_OPS.values()]
PLUGIN_OPS = list(ops.OPS.values())

#: module -> the functions every op's module of that layer has
ORACLE = ("evaluate", "check_node", "repeated_target", "input_relations", "input_capacity", "plan_inputs")
NETWORKS = ("lower_node",)
PLUGINS = ("check_shapes", "launch_args", "launch", "describe_errors", "aot_scalars")


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: op.name)
def test_every_op_has_its_oracle_module(op):
    module = importlib.import_module(f"trt_scatter.oracle.{op.key}")
    assert [name for name in ORACLE if not callable(getattr(module, name, None))] == []
    if not op.is_plugin:  # ONNX's own op: what TensorRT's parser reads of it in a branch that never runs (a trt_scatter
        assert callable(getattr(module, "check_attributes", None))  # op's attributes are checked against the registry)
    assert list(ROOT.glob(f"tests/test_{op.key}_*.py")), f"no tests/test_{op.key}_*.py"


@pytest.mark.parametrize("op", PLUGIN_OPS, ids=lambda op: op.name)
def test_every_trt_scatter_op_has_a_lowering_a_kernel_and_its_launch(op):
    from trt_scatter import networks, plugins

    assert [name for name in NETWORKS if not callable(getattr(networks.module(op), name, None))] == []
    assert [name for name in PLUGINS if not callable(getattr(plugins.module(op), name, None))] == []
    assert (ROOT / "plugins" / f"{op.key}.cu").is_file()
    assert op.name in plugins.register()  # its plugin creator, made from the registry


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: op.name)
def test_the_examples_are_those_the_ops_network_modules_declare(op):
    from trt_scatter import networks
    from trt_scatter.networks.example import Example
    from trt_scatter.networks.examples import EXAMPLES

    example = getattr(networks.module(op), "EXAMPLE", None)
    assert (op.key in EXAMPLES) == (example is not None)
    if example is not None:
        assert isinstance(example, Example) and set(example.static_dims) <= set(op.inputs)
        first = next(other for other in (*ops.STANDARD_OPS.values(), *ops.OPS.values()) if other.key == op.key)  # Scatter took it once
        assert EXAMPLES[op.key].__doc__.startswith(f"Adds the {first.name} example")


def test_registering_an_op_twice_or_under_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="op 'SliceScatter' is registered already"):
        ops.register(ops.Op("SliceScatter", "slice_scatter", ("data",), 1, {}))


def test_op_of_tells_domains_apart():
    from onnx import helper

    assert ops.op_of(helper.make_node("ScatterND", ["d", "i", "u"], ["o"])) is ops.SCATTER_ND
    assert ops.op_of(helper.make_node("ScatterND", ["d", "i", "u"], ["o"], domain="ai.onnx")) is ops.SCATTER_ND
    assert ops.op_of(helper.make_node("SliceScatter", ["d"], ["o"], domain=ops.DOMAIN)) is ops.SLICE_SCATTER
    # TensorRT's parser finds a plugin by op type in any domain: a SliceScatter in ONNX's own is the plugin's node too
    assert ops.op_of(helper.make_node("SliceScatter", ["d"], ["o"])) is ops.SLICE_SCATTER and ops.is_trt_scatter(helper.make_node("SliceScatter", ["d"], ["o"]))
    assert ops.op_of(helper.make_node("ScatterND", ["d"], ["o"], domain=ops.DOMAIN)) is None  # not trt_scatter's
    assert ops.is_trt_scatter(helper.make_node("SliceScater", ["d"], ["o"], domain=ops.DOMAIN))  # the domain's, which validation names
    assert ops.op_of(helper.make_node("Add", ["a", "b"], ["o"])) is None


def _branches_on_an_op(path):
    """Comparisons of an op type or key with a string literal naming a registered op (``op.name == "SliceScatter"``,
    ``kernel.startswith("slice_scatter")``): the branches on which op a node is that the registry replaces."""
    names = {op.name for op in ALL_OPS} | {op.key for op in ALL_OPS}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        literals = []
        if isinstance(node, ast.Compare):
            literals = [c.value for c in [node.left, *node.comparators] if isinstance(c, ast.Constant)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("startswith", "endswith"):
            literals = [a.value for a in node.args if isinstance(a, ast.Constant)]
        found += [f"{path.relative_to(ROOT)}:{node.lineno} {value!r}" for value in literals if value in names]
    return found


def test_no_code_outside_an_ops_modules_branches_on_which_op_it_is():
    """Code that names an op in a comparison would send a new op down an old op's path. The rewrite pass's
    patterns are by nature about the ops they end in (ScatterND, ScatterElements, nested SliceScatters)."""
    own = {f"{op.key}.py" for op in ALL_OPS}
    allowed = {"trt_scatter/passes/rewrite.py"}
    files = [p for folder in ("trt_scatter", "networks", "plugins") for p in (ROOT / folder).rglob("*.py")]
    found = [hit for path in files if path.name not in own and str(path.relative_to(ROOT)) not in allowed for hit in _branches_on_an_op(path)]
    assert found == []
