"""passes.aot: the attributes TensorRT's ONNX parser reads to pick the AOT plugins, SliceScatter's
default axes, and a model that means what it meant (run before and after by trt_scatter.reference)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from polygraphy.backend.onnx import OnnxFromPath

import onnx_fixtures as fx

from trt_scatter import onnx_models
from trt_scatter.ops import AOT_ATTRIBUTES, DOMAIN, is_trt_scatter
from trt_scatter.passes.aot import ToAotPlugins, to_aot
from trt_scatter.reference import Reference

RNG = np.random.default_rng(7)

# Every test in both states of the ops' ONNX schemas (conftest): trt_scatter.torch and rewrite register them, and the
# full checker then knows the trt_scatter ops and their attributes (it refused the AOT form's `plugin_namespace`,
# so these tests failed after those in the same process).
pytestmark = pytest.mark.usefixtures("trt_scatter_schemas")


def _attributes(node):
    values = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {name: value.decode() if isinstance(value, bytes) else value for name, value in values.items()}


def _scatter_nodes(model):
    return [node for node in model.graph.node if is_trt_scatter(node)]


MODELS = {
    "slice_scatter_default_axes": lambda: onnx_models.slice_scatter_model((4, 6), [1], [5], [2], inplace=True),
    "slice_scatter_axes_int32": lambda: onnx_models.slice_scatter_model((3, 5, 6), [-1, 0], [0, 6], [-1, 3], axes=[0, 2],
                                                                        index_dtype=np.int32),
    "slice_scatter_two_default_axes": lambda: onnx_models.slice_scatter_model((5, 4), [0, 1], [5, 4], [2, 2], dtype=np.float16),
    "slice_scatter_dynamic": lambda: onnx_models.slice_scatter_model(("n", 6), [1], [5], [2], axes=[1]),
    "scatter_update": lambda: onnx_models.scatter_update_model((4, 3), (2,), 0, inplace=True),
    "scatter_update_int32": lambda: onnx_models.scatter_update_model((2, 5, 3), (2, 2), -2, index_dtype=np.int32),
}


def _feeds(model):
    """Valid inputs for the example models: distinct in-range indices, random values."""
    feeds = {}
    for value in model.graph.input:
        dims = [d.dim_value if d.HasField("dim_value") else 4 for d in value.type.tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        feeds[value.name] = RNG.standard_normal(dims).astype(dtype)
    scatter = _scatter_nodes(model)[0]
    if scatter.op_type == "ScatterUpdate":
        data_shape, count = feeds["data"].shape, feeds["indices"].size
        axis = int(onnx.numpy_helper.to_array(next(i for i in model.graph.initializer if i.name == scatter.input[3])).reshape(-1)[0])
        size = data_shape[axis]
        feeds["indices"] = RNG.permutation(size)[:count].reshape(feeds["indices"].shape).astype(feeds["indices"].dtype)
    return feeds


@pytest.mark.parametrize("name", sorted(MODELS))
def test_nodes_get_the_aot_attributes_and_keep_their_meaning(name):
    model = MODELS[name]()
    before = model.SerializeToString()
    converted = to_aot(model)
    assert model.SerializeToString() == before  # the input model is not touched
    onnx.checker.check_model(converted, full_check=True)
    for node in _scatter_nodes(converted):
        assert _attributes(node) == {"plugin_namespace": "trt_scatter", "aot": 1}  # inplace dropped
        assert node.domain == DOMAIN and len(node.input) == {"SliceScatter": 6, "ScatterUpdate": 4}[node.op_type]
    feeds = _feeds(model)
    expected = Reference(model).run(feeds)["output"]
    np.testing.assert_array_equal(Reference(converted).run(feeds)["output"], expected)


def test_aot_attributes_are_the_ones_tensorrts_parser_reads():
    assert AOT_ATTRIBUTES == {"plugin_namespace": "trt_scatter", "aot": 1}
    node = _scatter_nodes(to_aot(MODELS["scatter_update"]()))[0]
    kinds = {a.name: a.type for a in node.attribute}
    assert kinds == {"plugin_namespace": onnx.AttributeProto.STRING, "aot": onnx.AttributeProto.INT}  # attrs.get<int>("aot")


def test_default_axes_for_a_constant_start_are_an_initializer():
    converted = to_aot(MODELS["slice_scatter_two_default_axes"]())
    axes = _scatter_nodes(converted)[0].input[5]
    values = {i.name: onnx.numpy_helper.to_array(i) for i in converted.graph.initializer}
    np.testing.assert_array_equal(values[axes], np.array([0, 1], np.int64))
    assert len(converted.graph.node) == 1  # no node added


def _runtime_start_model(opset=17):
    """SliceScatter whose start/stop/step are graph inputs: their length is known only at run time."""
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 6]),
              helper.make_tensor_value_info("updates", TensorProto.FLOAT, [4, 2]),
              *(helper.make_tensor_value_info(n, TensorProto.INT64, ["k"]) for n in ("start", "stop", "step"))]
    node = helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step"], ["output"], domain=DOMAIN, name="write")
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("output", TensorProto.FLOAT, [4, 6])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(DOMAIN, 1)])


def test_default_axes_for_a_runtime_start_are_computed_from_its_size():
    model = _runtime_start_model()
    converted = to_aot(model)
    onnx.checker.check_model(converted, full_check=True)
    assert [n.op_type for n in converted.graph.node] == ["Size", "Range", "SliceScatter"]
    feeds = {"data": RNG.standard_normal((4, 6)).astype(np.float32), "updates": RNG.standard_normal((4, 2)).astype(np.float32),
             "start": np.array([0, 1], np.int64), "stop": np.array([4, 6], np.int64), "step": np.array([1, 3], np.int64)}
    np.testing.assert_array_equal(Reference(converted).run(feeds)["output"], Reference(model).run(feeds)["output"])


def test_names_the_model_uses_already_are_not_taken_again():
    model = _runtime_start_model()
    model.graph.input.append(helper.make_tensor_value_info("write_default_axes", TensorProto.FLOAT, [2]))  # what the axes would be named
    model.graph.node.append(helper.make_node("Relu", ["write_default_axes"], ["other"]))
    model.graph.output.append(helper.make_tensor_value_info("other", TensorProto.FLOAT, [2]))
    converted = to_aot(model)
    onnx.checker.check_model(converted, full_check=True)
    assert _scatter_nodes(converted)[0].input[5] == "write_default_axes_1"
    feeds = {"data": RNG.standard_normal((4, 6)).astype(np.float32), "updates": RNG.standard_normal((4, 2)).astype(np.float32),
             "start": np.array([0, 1], np.int64), "stop": np.array([4, 6], np.int64), "step": np.array([1, 3], np.int64),
             "write_default_axes": np.array([-1, 2], np.float32)}
    expected, got = Reference(model).run(feeds), Reference(converted).run(feeds)
    for name in ("output", "other"):
        np.testing.assert_array_equal(got[name], expected[name])


def test_a_runtime_start_in_an_opset_without_range_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^SliceScatter node 'write': 'axes' is needed by the AOT form .* needs default-domain opset >= 11 \(got 10\)$"):
        to_aot(_runtime_start_model(opset=10))


def test_running_twice_changes_nothing_more():
    for name in ("slice_scatter_default_axes", "scatter_update"):
        once = to_aot(MODELS[name]())
        assert to_aot(once).SerializeToString() == once.SerializeToString()


def test_other_nodes_are_untouched():
    model = onnx_models.slice_scatter_model((4, 6), [1], [5], [2], impl="native")
    assert to_aot(model).SerializeToString() == model.SerializeToString()


def test_loader_takes_a_path_or_a_loader(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(MODELS["scatter_update"](), path)
    for source in (str(path), OnnxFromPath(str(path))):
        converted = ToAotPlugins(source)()
        assert _attributes(_scatter_nodes(converted)[0])["aot"] == 1


def test_validate_accepts_what_to_aot_writes_and_names_a_wrong_namespace():
    from onnx import helper

    from trt_scatter.passes.validate import ModelError, validate

    model = to_aot(onnx_models.slice_scatter_model((4, 6), [1], [5], [2], [1]))
    assert validate(model) is model
    node = next(n for n in model.graph.node if n.op_type == "SliceScatter")
    for attribute in node.attribute:
        if attribute.name == "plugin_namespace":
            attribute.CopyFrom(helper.make_attribute("plugin_namespace", "other"))
    with pytest.raises(ModelError, match=r"attribute 'plugin_namespace' must be 'trt_scatter' for trt-scatter's AOT plugins \(got 'other'\)"):
        validate(model)


@pytest.mark.parametrize("shape", [(3, 2, 6, 4), ("batch", 2, 6, 4)])
def test_a_cache_scatter_without_write_indices_gets_zeros_one_per_batch_row(shape):
    """An AOT plugin's inputs are fixed: the default the spec gives write_indices (zeros) is written in, a
    constant where the batch is static, computed from the cache's shape where it is not."""
    model = onnx_models.tensor_scatter_model(shape, 2, write_indices=False, mode="circular", inplace=True)
    converted = to_aot(model)
    onnx.checker.check_model(converted, full_check=True)
    (node,) = _scatter_nodes(converted)
    assert len(node.input) == 3 and _attributes(node) == {"axis": -2, "mode": "circular", "plugin_namespace": "trt_scatter", "aot": 1}
    static = isinstance(shape[0], int)
    assert (node.input[2] in {init.name for init in converted.graph.initializer}) is static
    assert (len(converted.graph.node) == 1) is static
    feeds = {"past_cache": RNG.standard_normal((3, 2, 6, 4)).astype(np.float32), "update": RNG.standard_normal((3, 2, 2, 4)).astype(np.float32)}
    np.testing.assert_array_equal(Reference(converted).run(feeds)["output"], Reference(model).run(feeds)["output"])


def test_a_model_it_cannot_take_is_refused_in_one_line_not_converted():
    """A mistake the model shows (validation's line), and a trt_scatter node in an If branch, which would stay on the
    Python plugin in an engine meant to run without Python."""
    from trt_scatter.model import ModelError

    wrong = onnx_models.slice_scatter_model((4, 6), [0], [4], [2], [0])
    next(value for value in wrong.graph.input if value.name == "updates").type.tensor_type.shape.dim[1].dim_value = 3
    with pytest.raises(ModelError, match=r"^SliceScatter node .*'updates' must have shape \(2, 6\)"):
        to_aot(wrong)
    nested = fx.slice_scatter_in_if_branch()
    with pytest.raises(ModelError, match=r"^SliceScatter node 'in_branch': lies in a subgraph of If node 'choice'; the AOT form takes "
                                         r"nodes of the main graph only$"):
        to_aot(nested)


def test_a_validated_model_is_not_validated_again_for_the_aot_form(monkeypatch):
    """network_from_onnx(aot=True) hands to_aot the Model itself where no standard node went to a plugin: its validation
    (shape inference over the whole model) is not done again."""
    from trt_scatter import engine
    from trt_scatter.model import Model
    from trt_scatter.passes import validate as validation

    model = Model(onnx_models.scatter_update_model((3, 5), (2,), 1))
    validation.validate(model)
    checked = []
    monkeypatch.setattr(validation, "_check_structure", lambda *args: checked.append(args))
    try:
        engine.network_from_onnx(model, aot=True)
    except Exception:  # the AOT plugins need full TensorRT >= 10.9: their registration comes after the conversion
        pass
    assert checked == []


@pytest.mark.parametrize("cut", ["mode", "aot", "write_indices"])
def test_a_hand_made_node_for_the_aot_plugins_that_leaves_something_out_is_refused(cut):
    """TensorRT hands an AOT plugin the node's attributes by position: one left out ended in a KeyError inside TensorRT's
    plugin class (a hand-made node; to_aot writes them all)."""
    from trt_scatter.model import ModelError
    from trt_scatter.passes.validate import validate

    model = to_aot(onnx_models.tensor_scatter_model((2, 3, 8, 4), 1))
    validate(model)  # whole
    (node,) = _scatter_nodes(model)
    if cut == "write_indices":
        node.input[2] = ""
    else:
        kept = [attribute for attribute in node.attribute if attribute.name != cut]
        del node.attribute[:]
        node.attribute.extend(kept)
    what = f"input '{cut}'" if cut == "write_indices" else f"attribute '{cut}'"
    with pytest.raises(ModelError, match=rf"^CacheScatter node .*: a node for trt-scatter's AOT plugins has every attribute \(but inplace\) and "
                                         rf"input of CacheScatter, as trt_scatter.passes.aot.to_aot writes them: TensorRT hands them to the "
                                         rf"plugin by position \(missing: {what}\)$"):
        validate(model)
