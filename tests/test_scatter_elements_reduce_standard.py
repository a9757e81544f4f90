"""ONNX's own ScatterElements and ScatterND with a reduction (opsets 16, 18), which TensorRT-RTX refuses and full TensorRT
sums with float atomics: handed to the reduction plugins (passes.plugins, as build --plugins and check do) with the same
values, built on TensorRT-RTX, and passed by ``trt-scatter check``."""

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_fixtures as fx
import plugin_models as models
from trt_scatter.passes.plugins import UsePlugins, to_plugins
from trt_scatter.reference import Reference

REDUCTIONS = ["add", "mul", "min", "max"]


def standard(op_type, reduction, dtype=TensorProto.FLOAT):
    """``op_type(data, indices, updates, reduction)`` between a Relu and an Add (other ops around it); indices a graph input."""
    elements = op_type == "ScatterElements"
    indices_shape, updates_shape = (["e", 3], ["e", 3]) if elements else (["e", 1], ["e", 3])
    nodes = [helper.make_node("Relu", ["x"], ["data"]) if dtype == TensorProto.FLOAT else helper.make_node("Identity", ["x"], ["data"]),
             helper.make_node(op_type, ["data", "indices", "updates"], ["scattered"], reduction=reduction, **({"axis": 0} if elements else {})),
             helper.make_node("Add", ["scattered", "x"], ["output"])]
    inputs = [helper.make_tensor_value_info("x", dtype, ["n", 3]), helper.make_tensor_value_info("indices", TensorProto.INT64, indices_shape),
              helper.make_tensor_value_info("updates", dtype, updates_shape)]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("output", dtype, ["n", 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _feeds(op_type, rng, dtype=np.float32):
    indices = rng.integers(-5, 5, size=(9, 3) if op_type == "ScatterElements" else (9, 1))
    return {"x": rng.standard_normal((5, 3)).astype(dtype), "indices": indices, "updates": rng.standard_normal((9, 3)).astype(dtype)}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("op_type", ["ScatterElements", "ScatterND"])
def test_the_plugin_pass_keeps_the_values_onnxruntime_computes(op_type, reduction):
    import onnxruntime

    model = standard(op_type, reduction)
    converted = to_plugins(model)
    onnx.checker.check_model(converted)
    assert [(n.op_type, n.domain) for n in converted.graph.node][1] == (f"{op_type}Reduce", "trt_scatter")
    feeds = _feeds(op_type, np.random.default_rng(1))
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(Reference(converted).run(feeds)["output"], session.run(None, feeds)[0])


@pytest.mark.parametrize("op_type", ["ScatterElements", "ScatterND"])
def test_the_polygraphy_loader_of_the_plugin_pass_hands_on_the_plugin_model(tmp_path, op_type):
    """UsePlugins (a polygraphy loader) takes a model, a path or a loader of one, and gives what the plugin pass makes."""
    from polygraphy.backend.onnx import OnnxFromPath

    model = standard(op_type, "add")
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    expected = [(n.op_type, n.domain) for n in to_plugins(model).graph.node]
    assert expected[1] == (f"{op_type}Reduce", "trt_scatter")
    for given in (model, OnnxFromPath(str(path))):
        assert [(n.op_type, n.domain) for n in UsePlugins(given)().graph.node] == expected


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("op_type", ["ScatterElements", "ScatterND"])
@models.forked
def test_builds_with_the_plugins_where_tensorrt_rtx_refuses_it(op_type, reduction):
    from trt_scatter import engine

    width = 3 if op_type == "ScatterElements" else 1  # indices' last dimension
    profile = {"x": ((1, 3), (5, 3), (10, 3)), "indices": ((1, width), (9, width), (40, width)), "updates": ((1, 3), (9, 3), (40, 3))}
    plan, _ = engine.build_engine(engine.network_from_onnx(standard(op_type, reduction), plugins=True), profile, name="r")
    assert plan
    with pytest.raises(ValueError, match=r"is one TensorRT builds wrong or not at all \(TensorRT-RTX's parser refuses a reduction, and full "
                                         r"TensorRT adds with float atomics, in no fixed order\), and trt-scatter's plugins build: add --plugins"):
        engine.network_from_onnx(standard(op_type, reduction))  # TensorRT-RTX's parser refuses it, full TensorRT sums with atomics


@pytest.mark.parametrize("op_type", ["ScatterElements", "ScatterND"])
def test_check_builds_and_passes_a_standard_model(tmp_path, op_type):
    """trt-scatter check as a user runs it on a model with ONNX's reduction: inputs made for it (indices that repeat),
    the engine built with the plugins, onnxruntime against the reference (no GPU here)."""
    path = fx.save(standard(op_type, "max"), tmp_path / "model.onnx")
    result = fx.run_tool("trt-scatter", ["check", path, "--input-shapes", "x:[6,3]", f"indices:[20,{3 if op_type == 'ScatterElements' else 1}]",
                                         "updates:[20,3]", "--allow-engine-not-run"])
    assert result.returncode == 0, result.stdout + result.stderr
    plugin = "ScatterElementsReduce" if op_type == "ScatterElements" else "ScatterNDReduce"
    assert re.fullmatch(rf"engine: built \(\d+ bytes\), with trt-scatter's plugins \({plugin} x1\): a runtime must load them to run it",
                        result.stdout.splitlines()[0]), result.stdout  # ONNX's own node: nothing else says the engine needs them
    assert "PASS output: onnxruntime vs reference: max abs diff 0 (identical)" in result.stdout


def test_build_without_plugins_says_which_flag_builds_it(tmp_path):
    path = fx.save(standard("ScatterND", "add"), tmp_path / "model.onnx")
    result = fx.run_tool("trt-scatter", ["build", path, "-o", tmp_path / "model.engine", "--min", "x:[1,3]", "indices:[1,1]", "updates:[1,3]",
                                         "--opt", "x:[5,3]", "indices:[9,1]", "updates:[9,3]", "--max", "x:[9,3]", "indices:[20,1]", "updates:[20,3]"])
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr == (f"trt-scatter build: error: {path}: ScatterND node (output 'scattered') is one TensorRT builds wrong or not at all "
                             "(TensorRT-RTX's parser refuses a reduction, and full TensorRT adds with float atomics, in no fixed order), "
                             "and trt-scatter's plugins build: add --plugins (plugins=True)\n")


@pytest.mark.parametrize("model, message", [
    (models.reduce_model("ScatterElementsReduce", [4, 3], [5, 3], [5, 3], reduction="sum"),
     "attribute 'reduction' must be one of the strings 'add', 'mul', 'min', 'max', 'mean' (got 'sum')"),
    (models.reduce_model("ScatterNDReduce", [4, 3], [5, 1], [5, 3], dtype="bool"),
     "scatter_nd_reduce: 'data' must be a number type a reduction can combine (not bool) (got bool)"),
    (models.reduce_model("ScatterNDReduce", [4, 3], [2, 1], [2, 3], indices=[[3], [4]]),
     "scatter_nd_reduce: 'indices' values must be in [-4, 3] for a dimension of size 4 (got 4)"),
    (models.reduce_model("ScatterElementsReduce", [4, 3], [5, 3], [5, 3], axis=2),
     "scatter_elements_reduce: 'axis' must be in [-2, 1] for 'data' of rank 2 (got 2)"),
    (models.reduce_model("ScatterElementsReduce", [4, 3], [5, 3], [5, 3], include_self=2),
     "attribute 'include_self' must be the int 0 or 1 (got 2)"),
])
def test_validation_refuses_a_node_in_one_line(model, message):
    from trt_scatter.model import ModelError
    from trt_scatter.passes.validate import validate

    with pytest.raises(ModelError) as raised:
        validate(model)
    assert str(raised.value).endswith(message) and "\n" not in str(raised.value)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("op_type", ["ScatterElements", "ScatterND"])
def test_the_package_models_of_onnxs_own_reductions_equal_the_oracle(op_type, reduction):
    """``scatter_elements_model``/``scatter_nd_model`` with ONNX's ``reduction``: the one node, at the opset that
    defines it, which onnxruntime computes as the oracle does, and which the plugin pass hands to the plugin."""
    import onnxruntime

    from trt_scatter import oracle
    from trt_scatter.onnx_models import scatter_elements_model, scatter_nd_model

    elements = op_type == "ScatterElements"
    model = scatter_elements_model((5, 3), (9, 3), reduction=reduction) if elements else scatter_nd_model((5, 3), (9, 1), reduction=reduction)
    onnx.checker.check_model(model, full_check=True)
    assert [(n.op_type, helper.get_attribute_value(n.attribute[-1])) for n in model.graph.node] == [(op_type, reduction.encode())]
    rng = np.random.default_rng(2)
    feeds = {"data": rng.standard_normal((5, 3)).astype(np.float32), "indices": rng.integers(-5, 5, size=(9, 3) if elements else (9, 1)),
             "updates": rng.standard_normal((9, 3)).astype(np.float32)}
    expected = (oracle.scatter_elements_reduce(*feeds.values(), axis=0, reduction=reduction) if elements
                else oracle.scatter_nd_reduce(*feeds.values(), reduction=reduction))
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, feeds)[0], expected, rtol=1e-6)
    assert [n.op_type for n in to_plugins(model).graph.node] == [f"{op_type}Reduce"]


@pytest.mark.parametrize("call, line", [
    (lambda m: m.scatter_elements_model((5, 3), (9, 3), reduction="mean"), "scatter_elements: 'reduction' must be one of 'none', 'add', 'mul', 'min', 'max' (got 'mean')"),
    (lambda m: m.scatter_nd_model((5, 3), (9, 1), dtype=np.bool_, reduction="add"), "scatter_nd: 'data' "),
    (lambda m: m.scatter_elements_reduce_model((5, 3), (9, 3), impl="standard"),
     "scatter_elements_reduce: 'impl' must be one of 'plugin', 'native'; ONNX's own node with a reduction is "
     "scatter_elements_model(..., reduction=...) (got 'standard')"),
    (lambda m: m.scatter_nd_reduce_model((5, 3), (9, 1), impl="standard"), "ONNX's own node with a reduction is scatter_nd_model(..., reduction=...)"),
])
def test_a_reduction_the_standard_models_lack_is_named(call, line):
    from trt_scatter import onnx_models
    from trt_scatter.oracle import ScatterInputError

    with pytest.raises(ScatterInputError) as caught:
        call(onnx_models)
    assert line in str(caught.value), str(caught.value)


@pytest.mark.parametrize("holder", ["Loop", "If in Loop"])
def test_build_without_plugins_names_a_reduction_in_a_subgraph(tmp_path, holder):
    """A reduction in an If or Loop body: build without --plugins looked for the node in the main graph only and ended in
    an internal error (StopIteration); it is named, with the node that holds it, in one line."""
    from trt_scatter import backend

    write = helper.make_node("ScatterND", ["d", "at", "ones"], ["written"], reduction="add")
    constants = [onnx.numpy_helper.from_array(np.array([[1]], np.int64), "at"), onnx.numpy_helper.from_array(np.ones((1, 3), np.float32), "ones")]
    value = helper.make_tensor_value_info
    carried = [value("c2", TensorProto.BOOL, []), value("d2", TensorProto.FLOAT, [4, 3])]
    if holder == "Loop":
        nodes = [write, helper.make_node("Identity", ["written"], ["d2"])]
    else:
        branch = helper.make_graph([write], "then", [], [value("written", TensorProto.FLOAT, [4, 3])], constants)
        kept = helper.make_graph([helper.make_node("Identity", ["d"], ["kept"])], "else", [], [value("kept", TensorProto.FLOAT, [4, 3])])
        nodes, constants = [helper.make_node("If", ["c"], ["d2"], then_branch=branch, else_branch=kept, name="choice")], []
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]), *nodes], "body",
                             [value("i", TensorProto.INT64, []), value("c", TensorProto.BOOL, []), value("d", TensorProto.FLOAT, [4, 3])], carried, constants)
    graph = helper.make_graph([helper.make_node("Loop", ["n", "cond", "x"], ["y"], body=body, name="repeat")], "g",
                              [value("n", TensorProto.INT64, []), value("cond", TensorProto.BOOL, []), value("x", TensorProto.FLOAT, [4, 3])],
                              [value("y", TensorProto.FLOAT, [4, 3])])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "model.onnx")
    result = fx.run_tool("trt-scatter", ["build", path, "-o", tmp_path / "model.engine"])
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    label, holder_label = ("ScatterND node #1 (output 'written')", "Loop node 'repeat'") if holder == "Loop" else ("ScatterND node #0 (output 'written')", "If node 'choice'")
    assert result.stderr.startswith(f"trt-scatter build: error: {path}: {label}, in a subgraph of {holder_label}, is one TensorRT builds wrong or not "
                                    "at all (TensorRT-RTX's parser refuses a reduction"), result.stderr
    flag = "build it with full TensorRT and --plugins" if backend.is_rtx() else "add --plugins"
    assert result.stderr.endswith(f"{flag} (plugins=True)\n"), result.stderr
