"""trt_scatter.passes.validate: every rule a model's trt_scatter nodes can break before TensorRT runs, one at a time.

Models are written by hand here (onnx.helper), one broken rule each, and the whole message is
asserted: the node, the input or attribute, the rule and the value. The valid forms the specs
allow (an empty slice with empty updates, 0-D indices, a 0-D axis, Constant nodes) must pass, and
build into engines (tests/test_validate_cli.py).
"""

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from polygraphy.backend.onnx import OnnxFromPath

from onnx_fixtures import info
from trt_scatter import onnx_models, oracle
from trt_scatter.oracle.slice_scatter import check_slice_scatter_static
from trt_scatter.model import Model, ModelError, ModelTensors
from trt_scatter.passes.validate import ValidateTrtScatter, validate

FLOAT = TensorProto.FLOAT


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def make_model(nodes, inputs, initializers=(), outputs=None, opsets=(("", 17), ("trt_scatter", 1))):
    outputs = outputs if outputs is not None else [info(nodes[-1].output[0], None)]
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])


def slice_scatter(start=(0,), stop=(2,), step=(1,), axes=None, data=(2, 5), updates=(2, 5), param_dtype=np.int64,
                  attrs=None, name="write_kv", dtype=FLOAT, updates_dtype=None, **kwargs):
    """SliceScatter on data (2, 5) with constant parameters; the default slice covers axis 0 whole."""
    params = {"start": start, "stop": stop, "step": step} | ({} if axes is None else {"axes": axes})
    node = helper.make_node("SliceScatter", ["data", "updates", *params], ["output"], domain="trt_scatter", name=name,
                            **({"inplace": 0} if attrs is None else attrs))
    inputs = [info("data", data, dtype), info("updates", updates, updates_dtype or dtype)]
    return make_model([node], inputs, [const(k, v, param_dtype) for k, v in params.items()], **kwargs)


def scatter_update(indices=(1,), axis=(0,), data=(3, 4), updates=(1, 4), index_dtype=np.int64, axis_dtype=np.int64, name="update"):
    node = helper.make_node("ScatterUpdate", ["data", "indices", "updates", "axis"], ["output"], domain="trt_scatter", name=name)
    return make_model([node], [info("data", data), info("updates", updates)], [const("indices", indices, index_dtype), const("axis", axis, axis_dtype)])


def refused(model):
    with pytest.raises(ModelError) as caught:
        validate(model)
    assert "\n" not in str(caught.value)
    return str(caught.value)


# ---- the node: op, domain version, outputs, attributes, inputs ----------------------------------


def test_unknown_op_of_the_domain():
    model = slice_scatter()
    model.graph.node[0].op_type = "SliceScater"
    assert refused(model) == "SliceScater node 'write_kv': domain 'trt_scatter' has no op 'SliceScater' (its ops: SliceScatter, ScatterUpdate, ScatterElementsReduce, ScatterNDReduce, CacheScatter)"


@pytest.mark.parametrize("opsets, got", [((("", 17), ("trt_scatter", 2)), "2"), ((("", 17),), "no opset import for it")])
def test_domain_version_must_be_1(opsets, got):
    message = refused(slice_scatter(opsets=opsets))
    assert message == f"SliceScatter node 'write_kv': the model must import the domain 'trt_scatter' at version 1, the only one there is (got {got})"


def test_one_output():
    model = slice_scatter()
    model.graph.node[0].output.append("extra")
    assert refused(model) == "SliceScatter node 'write_kv': must have 1 output (got 2: ['output', 'extra'])"


@pytest.mark.parametrize(
    "attrs, message",
    [
        ({"inplace": 2}, "attribute 'inplace' must be the int 0 or 1 (got 2)"),
        ({"inplace": -1}, "attribute 'inplace' must be the int 0 or 1 (got -1)"),
        ({"inplace": 1.0}, "attribute 'inplace' must be the int 0 or 1 (got 1.0)"),
        ({"inplace": "true"}, "attribute 'inplace' must be the int 0 or 1 (got 'true')"),
        ({"inplace": [1]}, "attribute 'inplace' must be the int 0 or 1 (got [1])"),
        ({"in_place": 1}, "attribute 'in_place' is not an attribute of SliceScatter (its attributes: 'inplace') (got 1)"),
    ],
)
def test_attributes(attrs, message):
    assert refused(slice_scatter(attrs=attrs)) == f"SliceScatter node 'write_kv': {message}"


def test_missing_input():
    model = slice_scatter()
    del model.graph.node[0].input[4]
    assert refused(model) == (
        "SliceScatter node 'write_kv': input 'step' is missing: SliceScatter(data, updates, start, stop, step[, axes]) "
        "(got 4 inputs: ['data', 'updates', 'start', 'stop'])"
    )


def test_required_input_left_out_by_an_empty_name():
    model = scatter_update()
    model.graph.node[0].input[3] = ""
    assert refused(model) == (
        "ScatterUpdate node 'update': input 'axis' is missing: ScatterUpdate(data, indices, updates, axis) "
        "(got 4 inputs: ['data', 'indices', 'updates', ''])"
    )


def test_too_many_inputs():
    model = scatter_update()
    model.graph.node[0].input.append("axis")
    assert refused(model) == "ScatterUpdate node 'update': takes at most 4 inputs: ScatterUpdate(data, indices, updates, axis) (got 5)"


def test_unnamed_node_is_named_by_its_position_and_output():
    model = slice_scatter(step=(0,), name="")
    assert refused(model).startswith("SliceScatter node #0 (output 'output'): slice_scatter: 'step' must not contain 0")


def test_nodes_in_subgraphs_are_checked():
    inner = slice_scatter(step=(0,)).graph
    outer_inputs = list(inner.input)  # the branch reads the main graph's data and updates
    inner.ClearField("input")
    node = helper.make_node("If", ["cond"], ["output"], then_branch=inner, else_branch=inner)
    model = make_model([node], [info("cond", (), TensorProto.BOOL), *outer_inputs], list(inner.initializer))
    assert refused(model) == ("SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 (got [0]) "
                              "(in the else_branch of If node #0 (output 'output'))")  # where: its index counts in its own graph


def test_a_body_input_named_like_a_model_input_is_the_bodys_own():
    """A Loop body's carried value named ``data`` as the model's input ``data`` is: its write is checked against the
    carried value's shape. (It was checked against the model input's: a valid model refused, an invalid one let by.)"""
    from onnx_fixtures import loop_carrying_a_value_named_like_an_input

    validate(loop_carrying_a_value_named_like_an_input(body_shape=(2, 5), input_shape=(3, 4), column=4))  # column 4 of 5
    assert refused(loop_carrying_a_value_named_like_an_input(body_shape=(2, 4), input_shape=(3, 5), column=4)) == (
        "ScatterElements node 'write': scatter_elements: 'indices' values must be in [-4, 3] for a dimension of size 4 (got 4) "
        "(in the body of Loop node 'repeat')")


def test_a_nested_body_input_named_like_a_tensor_of_the_enclosing_body_is_the_nested_bodys_own():
    """An outer Loop body makes ``t`` (3, 4); the Loop inside it carries a value it also names ``t``, (2, 5), and writes
    column 4 of it: checked against the inner (2, 5) (it was checked against the enclosing body's (3, 4), and refused)."""
    from onnx_fixtures import loop_carrying_a_value_named_like_an_input

    inner = loop_carrying_a_value_named_like_an_input(body_shape=(2, 5), input_shape=(3, 4), column=4).graph.node[0]
    inner.name, inner.output[:] = "inner_loop", ["inner_out"]
    inner_body = inner.attribute[0].g
    inner_body.input[2].name, inner_body.node[1].input[0] = "t", "t"
    outer_body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Identity", ["v"], ["t"]), inner,
                                    helper.make_node("Identity", ["t"], ["v_out"])], "outer_body",
                                   [info("j", (), TensorProto.INT64), info("c", (), TensorProto.BOOL), info("v", (3, 4))],
                                   [info("c_out", (), TensorProto.BOOL), info("v_out", (3, 4))])
    outer = helper.make_node("Loop", ["n", "cond", "data"], ["out"], name="outer_loop", body=outer_body)
    model = make_model([outer], [info("n", (), TensorProto.INT64), info("cond", (), TensorProto.BOOL), info("x0", (2, 5)), info("data", (3, 4))],
                       outputs=[info("out", (3, 4))])
    onnx.checker.check_model(model, full_check=True)
    validate(model)


def test_a_body_initializer_named_like_a_main_graph_one_is_the_bodys_own():
    """The body's constant indices ``idx`` [[4]] and the main graph's ``idx`` of another value: each node reads its own
    graph's (the main graph's write was checked with the body's)."""
    from onnx_fixtures import loop_carrying_a_value_named_like_an_input

    model = loop_carrying_a_value_named_like_an_input(body_shape=(2, 5), input_shape=(3, 4), column=4)  # idx [[4]] in the body
    model.graph.initializer.extend([numpy_helper.from_array(np.array([[3]], np.int64), "idx"),
                                    numpy_helper.from_array(np.array([[7.0]], np.float32), "upd")])
    model.graph.node.append(helper.make_node("ScatterElements", ["data", "idx", "upd"], ["written"], axis=1, name="main_write"))
    model.graph.output.append(info("written", (3, 4)))
    validate(model)  # 3 in the main graph's 4 columns, 4 in the body's 5
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array([[4]], np.int64), "idx"))
    assert refused(model).startswith("ScatterElements node 'main_write': scatter_elements: 'indices' values must be in [-4, 3]")


def test_unnamed_node_is_numbered_in_its_own_graph_whatever_the_subgraphs_before_it():
    # The lowering and the data loader number a node by its place in its graph: so must validate,
    # or one node has two names. Here an If with two nodes per branch comes first.
    body = helper.make_graph([helper.make_node("Identity", ["flag"], [f"out_{i}"]) for i in range(2)], "body", [],
                             [info("out_1", (), TensorProto.BOOL)])
    branch = helper.make_node("If", ["flag"], ["branch_out"], then_branch=body, else_branch=body)
    model = slice_scatter(step=(0,), name="")
    model.graph.node.insert(0, branch)
    model.graph.input.append(info("flag", (), TensorProto.BOOL))
    assert refused(model).startswith("SliceScatter node #1 (output 'output'): slice_scatter: 'step' must not contain 0")


# ---- element types ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "index_dtype, got", [(np.float32, "float32"), (np.uint8, "uint8"), (np.int16, "int16"), (np.uint64, "uint64")]
)
def test_indices_must_be_int32_or_int64(index_dtype, got):
    message = refused(scatter_update(index_dtype=index_dtype))
    assert message == f"ScatterUpdate node 'update': scatter_update: 'indices' must be int32 or int64 (got {got})"


def test_slice_parameters_must_be_int32_or_int64():
    message = refused(slice_scatter(param_dtype=np.float64))
    assert message == "SliceScatter node 'write_kv': slice_scatter: 'start' must be int32 or int64 (got float64)"


def test_start_stop_step_share_one_type():
    model = slice_scatter()
    model.graph.initializer[1].CopyFrom(const("stop", [2], np.int32))
    message = refused(model)
    assert message == "SliceScatter node 'write_kv': slice_scatter: 'stop' must have the element type of 'start' (int64) (got int32)"


def test_axes_may_have_its_own_index_type():
    model = slice_scatter(axes=(0,))
    model.graph.initializer[3].CopyFrom(const("axes", [0], np.int32))
    validate(model)


def test_updates_must_have_data_type():
    message = refused(slice_scatter(updates_dtype=TensorProto.FLOAT16))
    assert message == "SliceScatter node 'write_kv': slice_scatter: 'updates' must have the element type of 'data' (float32) (got float16)"


def test_output_must_have_data_type():
    model = slice_scatter(outputs=[info("output", (2, 5), TensorProto.INT32)])
    assert refused(model) == "SliceScatter node 'write_kv': slice_scatter: 'output' must have the element type of 'data' (float32) (got int32)"


def test_output_must_have_data_shape():
    """A graph output declared with another shape: TensorRT's parser and onnxruntime would each take it their own way."""
    model = slice_scatter(outputs=[info("output", (2, 7), TensorProto.FLOAT)])
    assert refused(model) == "SliceScatter node 'write_kv': slice_scatter: 'output' must have shape (2, 5) (data's shape) (got shape (2, 7))"
    validate(slice_scatter(outputs=[info("output", ("batch", 5), TensorProto.FLOAT)]))  # a symbolic dimension may be any


def test_data_must_be_numeric():
    message = refused(slice_scatter(dtype=TensorProto.STRING))
    assert message == "SliceScatter node 'write_kv': slice_scatter: 'data' must have one of the element types bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64 (got object)"


def test_rank_0_data():
    message = refused(scatter_update(data=(), updates=(1,)))
    assert message == "ScatterUpdate node 'update': scatter_update: 'data' must have rank >= 1 (got shape ())"


# ---- constant values and shapes: SliceScatter ---------------------------------------------------


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(step=(0,)), "'step' must not contain 0 (got [0])"),
        (dict(start=(0, 0), stop=(1, 1), step=(1, 1), axes=(1, -1)), "'axes' must not repeat an axis (counted from the start: [1, 1]) (got [1, -1])"),
        (dict(axes=(2,)), "'axes' must be in [-2, 1] for 'data' of rank 2 (got 2)"),
        (dict(start=(0, 0, 0), stop=(1, 1, 1), step=(1, 1, 1)), "'start' must have at most 2 entries for 'data' of rank 2 where 'axes' is not "
         "given (the default axes are 0, 1, ..., one per entry) (got 3)"),
        (dict(stop=(1, 2)), "'start/stop/step' must have equal lengths (got {'start': 1, 'stop': 2, 'step': 1})"),
        (dict(stop=(1, 2), axes=(0,)), "'start/stop/step/axes' must have equal lengths (got {'start': 1, 'stop': 2, 'step': 1, 'axes': 1})"),
        (dict(stop=(1,), updates=(2, 5)), "'updates' must have shape (1, 5) (data's shape with each sliced axis cut to its slice's length; "
         "axis 0's slice (start 0, stop 1, step 1) takes 1 of its 2) (got shape (2, 5))"),
        (dict(updates=(2, 5, 1)), "'updates' must have shape (2, 5) (data's shape with each sliced axis cut to its slice's length) (got shape (2, 5, 1))"),
        (dict(step=5), "'step' must be a 1-D tensor (got a scalar 5)"),
        (dict(start=((0,),)), "'start' must be a 1-D tensor (got shape (1, 1))"),
    ],
)
def test_slice_scatter_constants(params, message):
    assert refused(slice_scatter(**params)) == f"SliceScatter node 'write_kv': slice_scatter: {message}"


def test_step_0_in_a_constant_node():
    model = slice_scatter()
    model.graph.initializer.pop(2)  # step
    model.graph.node.insert(0, helper.make_node("Constant", [], ["step"], value_ints=[0]))
    assert refused(model) == "SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 (got [0])"


def test_constants_computed_from_constants_are_checked():
    """step = Cast(Constant [0]), indices = Unsqueeze(9): constants an exporter may leave unfolded are values
    the model fixes too (they built engines that skipped every write)."""
    model = slice_scatter()
    model.graph.initializer.pop(2)  # step
    model.graph.node.insert(0, helper.make_node("Cast", ["zero"], ["step"], to=TensorProto.INT64))
    model.graph.node.insert(0, helper.make_node("Constant", [], ["zero"], value=const("zero", [0], np.int32)))
    assert refused(model) == "SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 (got [0])"

    model = scatter_update(indices=[0])
    model.graph.initializer.pop(0)  # indices
    model.graph.initializer.extend([const("nine", 9), const("axes0", [0])])
    model.graph.node.insert(0, helper.make_node("Unsqueeze", ["nine", "axes0"], ["indices"]))
    assert refused(model) == "ScatterUpdate node 'update': scatter_update: 'indices' values must be in [0, 2] for a dimension of size 3 (got 9)"


def test_only_small_integer_tensors_computed_from_constants_are_folded():
    nodes = [helper.make_node("Add", ["pos", "one"], ["stop"]),  # pos is fed: not constant
             helper.make_node("Concat", ["one", "one"], ["two"], axis=0),
             helper.make_node("Mul", ["half", "half"], ["quarter"]),  # floats: weights, not index values
             helper.make_node("RandomUniformLike", ["one"], ["random"], dtype=TensorProto.INT64)]
    model = make_model(nodes, [info("pos", (1,), TensorProto.INT64)], [const("one", [1]), const("half", [0.5], np.float32)],
                       outputs=[info("stop", None, TensorProto.INT64)])
    tensors = ModelTensors(model)
    assert tensors.constant("stop") is None and tensors.constant("quarter") is None and tensors.constant("random") is None
    assert tensors.constant("two").tolist() == [1, 1] and tensors.constant("two").dtype == np.int64


def test_parameters_fed_at_run_time_are_checked_by_what_is_known():
    """start/stop fed by the user: step 0 is still refused, and updates must match data on the axes nobody slices."""
    node = helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step", "axes"], ["output"], domain="trt_scatter", name="n")
    inputs = [info("data", (2, 5)), info("updates", (7, 6)), info("start", (1,), TensorProto.INT64), info("stop", (1,), TensorProto.INT64)]
    model = make_model([node], inputs, [const("step", [1]), const("axes", [0])])
    assert refused(model) == (
        "SliceScatter node 'n': slice_scatter: 'updates' must have shape (?, 5) (data's shape with each sliced axis cut "
        "to its slice's length) (got shape (7, 6))"
    )
    model.graph.input[1].CopyFrom(info("updates", (7, 5)))
    assert refused(model) == "SliceScatter node 'n': slice_scatter: 'updates' dimension 0 must be at most data's (2) to be a slice of it (got 7)"
    model.graph.input[1].CopyFrom(info("updates", (1, 5)))
    validate(model)  # axis 0 may be cut to any length up to data's by the fed start/stop
    model.graph.initializer[0].CopyFrom(const("step", [0]))
    assert refused(model) == "SliceScatter node 'n': slice_scatter: 'step' must not contain 0 (got [0])"
    model.graph.initializer[0].CopyFrom(const("step", [1, 1]))
    assert "'start/stop/step/axes' must have equal lengths" in refused(model)


def test_data_computed_by_an_earlier_scatter_is_known(trt_scatter_schemas):
    """Shape inference stops at the custom ops (unless their schemas are registered); their output has data's
    shape, so a second scatter is checked too."""
    first = helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step"], ["mid"], domain="trt_scatter", name="first")
    relu = helper.make_node("Relu", ["mid"], ["relu"])
    second = helper.make_node("SliceScatter", ["relu", "updates", "start", "stop", "step2"], ["output"], domain="trt_scatter", name="second")
    params = [const("start", [0]), const("stop", [2]), const("step", [1]), const("step2", [3])]
    model = make_model([first, relu, second], [info("data", (2, 5)), info("updates", (2, 5))], params)
    assert ModelTensors(model).shape("relu") == (2, 5)
    assert refused(model) == (
        "SliceScatter node 'second': slice_scatter: 'updates' must have shape (1, 5) (data's shape with each sliced "
        "axis cut to its slice's length; axis 0's slice (start 0, stop 2, step 3) takes 1 of its 2) (got shape (2, 5))"
    )


# ---- constant values and shapes: ScatterUpdate --------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(indices=(3,)), "'indices' values must be in [0, 2] for a dimension of size 3 (got 3)"),
        (dict(indices=(-1,)), "'indices' values must be in [0, 2] for a dimension of size 3 (got -1)"),
        (dict(indices=(1,), axis=(1,), updates=(3, 1)), None),
        (dict(indices=(4,), axis=(1,), updates=(3, 1)), "'indices' values must be in [0, 3] for a dimension of size 4 (got 4)"),
        (dict(axis=(2,)), "'axis' must be in [-2, 1] for 'data' of rank 2 (got 2)"),
        (dict(axis=(0, 1)), "'axis' must be a scalar or a 1-D tensor with one element (got shape (2,))"),
        (dict(axis=(0,), axis_dtype=np.float32), "'axis' must be int32 or int64 (got float32)"),
        (dict(updates=(2, 4)), "'updates' must have shape (1, 4) (data.shape[:axis] + indices.shape + data.shape[axis+1:]) (got shape (2, 4))"),
        (dict(data=(0, 4)), "'indices' must be empty: data's dimension 0 has size 0, so no index is in range (got shape (1,))"),
    ],
)
def test_scatter_update_constants(kwargs, message):
    model = scatter_update(**kwargs)
    if message is None:
        validate(model)
    else:
        assert refused(model) == f"ScatterUpdate node 'update': scatter_update: {message}"


@pytest.mark.parametrize("form, message", [({"value_int": 5}, "'axis' must be in [-2, 1] for 'data' of rank 2 (got 5)"),
                                           ({"value_ints": [0, 0]}, "'axis' must be a scalar or a 1-D tensor with one element (got shape (2,))"),
                                           ({"value_float": 0.0}, "'axis' must be int32 or int64 (got float32)")])
def test_axis_from_constant_node_forms(form, message):
    model = scatter_update()
    model.graph.initializer.pop(1)
    model.graph.node.insert(0, helper.make_node("Constant", [], ["axis"], **form))
    assert refused(model) == f"ScatterUpdate node 'update': scatter_update: {message}"


def test_axis_fed_at_run_time_needs_some_axis_to_fit():
    node = helper.make_node("ScatterUpdate", ["data", "indices", "updates", "axis"], ["output"], domain="trt_scatter", name="u")
    model = make_model([node], [info("data", (3, 4)), info("updates", (1, 5)), info("axis", (), TensorProto.INT64)], [const("indices", [1])])
    assert refused(model) == (
        "ScatterUpdate node 'u': scatter_update: 'updates' must have shape data.shape[:axis] + indices.shape + "
        "data.shape[axis+1:] for some axis of 'data' (got shape (1, 5) with data (3, 4) and indices (1,))"
    )
    model.graph.input[1].CopyFrom(info("updates", (3, 1)))
    validate(model)
    model.graph.input[2].CopyFrom(info("axis", (2,), TensorProto.INT64))
    assert refused(model) == "ScatterUpdate node 'u': scatter_update: 'axis' must be a scalar or a 1-D tensor with one element (got shape (2,))"


# ---- the valid forms the specs allow ------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(slice_scatter(start=(1,), stop=(1,), updates=(0, 5)), id="empty-slice-empty-updates"),
        pytest.param(slice_scatter(start=(-1,), stop=(-100,), step=(-2,), axes=(-1,), updates=(2, 3)), id="negative-step-and-axis"),
        pytest.param(slice_scatter(start=(0,), stop=(2**63 - 1,), step=(1,), param_dtype=np.int64), id="int64-max-stop"),
        pytest.param(slice_scatter(attrs={}), id="no-inplace-attribute"),
        pytest.param(slice_scatter(attrs={"inplace": 1}), id="inplace"),
        pytest.param(slice_scatter(data=("n", 5), updates=("m", 5)), id="dynamic-dims"),
        pytest.param(slice_scatter(data=None, updates=None), id="unknown-ranks"),
        pytest.param(scatter_update(indices=2, updates=(4,)), id="0-d-indices"),
        pytest.param(scatter_update(axis=0), id="0-d-axis"),
        pytest.param(scatter_update(axis=-2, axis_dtype=np.int32, index_dtype=np.int32), id="int32-negative-axis"),
        pytest.param(scatter_update(indices=np.zeros((0,), np.int64), data=(0, 4), updates=(0, 4)), id="empty-indices-into-empty-dim"),
        pytest.param(scatter_update(indices=[[0, 2], [1, 0]], updates=(2, 2, 4)), id="2-d-indices"),
    ],
)
def test_valid_forms_pass_unchanged(model):
    before = model.SerializeToString()
    assert validate(model) is model
    assert model.SerializeToString() == before


def test_models_without_trt_scatter_nodes_pass():
    node = helper.make_node("Relu", ["x"], ["y"])
    validate(make_model([node], [info("x", (2,))], opsets=(("", 17),)))


# ---- files and the polygraphy loader -------------------------------------------------------------


def test_validate_a_path_and_the_loader(tmp_path):
    good, bad = tmp_path / "good.onnx", tmp_path / "bad.onnx"
    onnx.save(slice_scatter(), good)
    onnx.save(slice_scatter(step=(0,)), bad)
    assert validate(str(good)).graph.node[0].op_type == "SliceScatter"
    assert ValidateTrtScatter(str(good))() == str(good)  # a path passes through, for NetworkFromOnnxPath
    assert ValidateTrtScatter(OnnxFromPath(str(good)))().graph.node[0].name == "write_kv"
    for loader in (ValidateTrtScatter(str(bad)), ValidateTrtScatter(OnnxFromPath(str(bad)))):
        with pytest.raises(ModelError, match=r"^SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 \(got \[0\]\)$"):
            loader()


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read ONNX model '{path}': No such file or directory"),
        (b"", "'{path}' is empty, not an ONNX model"),
        (b"ftrt\0\0\0\0", "'{path}' is a serialized TensorRT engine, not an ONNX model"),
        (b"vtrt\0\0\0\0", "'{path}' is a serialized TensorRT engine, not an ONNX model"),
        (b"\xff\xff\xff\xff garbage", "'{path}' is not an ONNX model ("),
        (b"\x08\x01", "'{path}' is not an ONNX model (no graph or IR version)"),
    ],
)
def test_files_that_are_no_model(tmp_path, content, message):
    path = tmp_path / "model.onnx"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ModelError) as caught:
        Model.read(path)
    assert str(caught.value).startswith(message.format(path=path)) and "\n" not in str(caught.value)


def test_a_directory_is_no_model(tmp_path):
    with pytest.raises(ModelError, match="is a directory, not an ONNX model"):
        validate(tmp_path)


# ---- ModelTensors ------------------------------------------------------------------------------


def test_model_tensors_reads_constants_shapes_and_types():
    nodes = [
        helper.make_node("Constant", [], ["i"], value_int=3),
        helper.make_node("Constant", [], ["ints"], value_ints=[1, 2]),
        helper.make_node("Constant", [], ["f"], value_float=1.5),
        helper.make_node("Constant", [], ["t"], value=const("t", [[1, 2]], np.int32)),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Transpose", ["x"], ["xt"]),
    ]
    model = make_model(nodes, [info("x", ("n", 3), TensorProto.BFLOAT16)], [const("w", [1.0, 2.0], np.float16)], outputs=[info("xt", None, TensorProto.BFLOAT16)])
    tensors = ModelTensors(model)
    assert tensors.constant("i").tolist() == 3 and tensors.constant("i").dtype == np.int64
    assert tensors.constant("ints").tolist() == [1, 2] and tensors.shape("ints") == (2,)
    assert tensors.constant("f").dtype == np.float32
    assert tensors.constant("t").tolist() == [[1, 2]] and tensors.dtype("t") == np.int32
    assert tensors.constant("w").dtype == np.float16 and tensors.shape("w") == (2,)
    assert tensors.shape("x") == (-1, 3) and tensors.dtype("x").name == "bfloat16"
    assert tensors.shape("xt") == (3, -1)  # from shape inference
    assert tensors.shape("shape") == (2,) and tensors.dtype("shape") == np.int64
    assert tensors.constant("x") is None and tensors.constant("nothing") is None
    assert tensors.shape("nothing") is None and tensors.dtype("nothing") is None


def test_model_tensors_without_shape_inference():
    """A graph ONNX shape inference refuses keeps what it declares, and a scatter's output gets its data's shape."""
    node = helper.make_node("Add", ["x", "y"], ["z"])
    model = make_model([node], [info("x", (2, 3)), info("y", (4, 5))], outputs=[info("z", (7,))])
    tensors = ModelTensors(model)
    assert tensors.shape("x") == (2, 3) and tensors.shape("z") == (7,)
    model.graph.node.append(helper.make_node("SliceScatter", ["x", "x", "start", "stop", "step"], ["written"], domain="trt_scatter"))
    model.graph.initializer.extend([const("start", [0]), const("stop", [2]), const("step", [1])])
    tensors = ModelTensors(model)
    assert tensors.shape("written") == (2, 3) and tensors.dtype("written") == np.float32


def test_model_tensors_know_nothing_of_what_they_cannot_read():
    """A fold the evaluator refuses, an initializer whose bytes do not fill its shape, an element type
    ONNX has no NumPy type for: not known (``None``), never an exception."""
    broken = TensorProto(name="broken", data_type=TensorProto.INT64, dims=[4], raw_data=b"\x01\x02\x03")
    reshape = helper.make_node("Reshape", ["six", "four"], ["reshaped"])  # 6 elements into 4
    model = make_model([reshape, helper.make_node("Identity", ["x"], ["y"])], [info("x", (2,))],
                       [const("six", np.arange(6)), const("four", [4]), broken], outputs=[info("y", (2,))])
    model.graph.input[0].type.tensor_type.elem_type = 99  # no such TensorProto.DataType
    tensors = ModelTensors(model)
    assert tensors.constant("reshaped") is None
    assert tensors.constant("broken") is None and tensors.shape("broken") == (4,)
    assert tensors.dtype("x") is None and tensors.shape("x") == (2,)


# ---- the oracle's static checks on partly known SliceScatters (what validation and the plugin use) ----


@st.composite
def slice_cases(draw):
    """A SliceScatter (data shape, start, stop, step, axes or None); updates are the oracle's to judge."""
    rank = draw(st.integers(1, 3))
    data_shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    count = draw(st.integers(0, rank + 1))
    ints = st.integers(-6, 6)
    start, stop = (draw(st.lists(ints, min_size=count, max_size=count)) for _ in range(2))
    step = draw(st.lists(st.integers(-2, 2), min_size=count, max_size=count))
    axes = draw(st.none() | st.lists(st.integers(-rank - 1, rank), min_size=count, max_size=count))
    return data_shape, start, stop, step, axes


@given(slice_cases(), st.data())
def test_static_check_never_refuses_what_some_value_makes_valid(case, data):
    """Hide any of the values (keeping their lengths) and any dims: the static check accepts whatever the
    oracle accepts with the real values, and with every value known it refuses exactly what the oracle refuses."""
    data_shape, start, stop, step, axes = case
    try:
        normalized = oracle.check_slice_scatter(data_shape, (-1,) * len(data_shape), start, stop, step, axes)
    except oracle.ScatterInputError as err:
        with pytest.raises(oracle.ScatterInputError) as caught:
            check_slice_scatter_static(data_shape, (-1,) * len(data_shape), start, stop, step, axes)
        assert str(caught.value) == str(err)
        return
    updates = list(data_shape)
    for axis, begin, end, stride in zip(normalized, start, stop, step):
        updates[axis] = oracle.slice_geometry(begin, end, stride, data_shape[axis])[1]
    hide = lambda values: len(values) if data.draw(st.booleans()) else values
    params = [hide(v) for v in (start, stop, step)] + [None if axes is None else hide(axes)]
    shape = lambda s: tuple(-1 if data.draw(st.booleans()) else d for d in s)
    check_slice_scatter_static(shape(data_shape), shape(updates), *params)
    check_slice_scatter_static(None, None, *params)


@pytest.mark.parametrize("updates, start, stop, step, axes, axis", [((5, 3), 1, [2], [1], [0], 0), ((9, 9), [0], [2], [1], 1, 0),
                                                                  ((4, 4), [0], [2], [1], 1, 1), ((7, 3), -1, -1, -1, None, 0)])
def test_static_check_refuses_updates_longer_than_data_on_an_axis_sliced_at_run_time(updates, start, stop, step, axes, axis):
    """No start/stop/step makes a slice longer than its dimension: run-time values, axes or lengths do not lift that."""
    with pytest.raises(oracle.ScatterInputError, match=rf"'updates' dimension {axis} must be at most data's \(\d\) to be a slice of it"):
        check_slice_scatter_static((4, 3), updates, start, stop, step, axes)
    check_slice_scatter_static((4, 3), (3, 3), start, stop, step, axes)


def test_static_check_with_unknown_rank_still_refuses_step_0_and_unequal_lengths():
    with pytest.raises(oracle.ScatterInputError, match=r"'step' must not contain 0 \(got \[0\]\)"):
        check_slice_scatter_static(None, None, 1, [1], [0])
    with pytest.raises(oracle.ScatterInputError, match="must have equal lengths"):
        check_slice_scatter_static(None, None, [1], [1, 2], 1)
    check_slice_scatter_static(None, None, -1, [1, 2], 1)  # an unknown length may still be 2


def test_parameters_and_updates_of_unknown_rank():
    """A parameter fed without a shape is any 1-D length; updates of unknown rank match whatever data asks."""
    node = helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step"], ["output"], domain="trt_scatter", name="n")
    inputs = [info("data", (2, 5)), info("updates", None), info("start", None, TensorProto.INT64)]
    model = make_model([node], inputs, [const("stop", [2]), const("step", [0])])
    assert refused(model) == "SliceScatter node 'n': slice_scatter: 'step' must not contain 0 (got [0])"
    model.graph.initializer[1].CopyFrom(const("step", [1]))
    validate(model)


def test_model_tensors_of_a_path_and_values_it_cannot_show(tmp_path):
    from onnx.external_data_helper import convert_model_to_external_data

    nodes = [helper.make_node("Constant", [], ["s"], value_string="text"),
             helper.make_node("Constant", [], ["sparse"], sparse_value=helper.make_sparse_tensor(
                 const("v", [1.0], np.float32), const("i", [0]), [3]))]
    model = make_model(nodes + [helper.make_node("Identity", ["x"], ["y"])], [info("x", (2,), TensorProto.UNDEFINED)],
                       [const("weights", np.arange(1000, dtype=np.float32), np.float32)], outputs=[info("y", None, TensorProto.UNDEFINED)])
    convert_model_to_external_data(model, size_threshold=100, location="weights.bin")
    onnx.save(model, tmp_path / "m.onnx")
    (tmp_path / "weights.bin").unlink()  # the external file is gone: its tensor has no value to show
    tensors = ModelTensors(onnx.load(tmp_path / "m.onnx", load_external_data=False))
    assert tensors.constant("weights") is None
    assert tensors.constant("s") is None and tensors.constant("sparse") is None
    assert tensors.dtype("x") is None and tensors.shape("x") == (2,)
    path = tmp_path / "plain.onnx"
    onnx.save(slice_scatter(), path)
    assert ModelTensors(onnx.load(path)).shape("updates") == (2, 5)


def test_scatter_outputs_get_data_type_even_where_onnx_has_no_name_for_it(trt_scatter_schemas):
    """data of an element type ONNX inference cannot pass on: the scatter's output still gets data's shape."""
    node = helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step"], ["mid"], domain="trt_scatter")
    after = helper.make_node("Identity", ["mid"], ["output"])
    model = make_model([node, after], [info("data", (2, 5), TensorProto.UNDEFINED), info("updates", (2, 5), TensorProto.UNDEFINED)],
                       [const("start", [0]), const("stop", [2]), const("step", [1])])
    assert ModelTensors(model).shape("mid") == (2, 5)


# ---- models saved with external data ----------------------------------------------------------


def _external_scatter_update(folder, bad_index):
    """A ScatterUpdate whose 300 constant indices (2400 bytes, over onnx's 1 KiB default threshold) are
    saved in an external file, as ``onnx.save(..., save_as_external_data=True)`` does."""
    indices = list(range(300))
    indices[-1] = 300 if bad_index else 299
    model = scatter_update(indices=indices, data=(300, 4), updates=(300, 4))
    onnx.save(model, folder / "m.onnx", save_as_external_data=True, location="m.bin", size_threshold=1024)
    return folder / "m.onnx"


def test_index_constants_in_external_data_are_checked_from_any_working_directory(tmp_path, monkeypatch):
    """The external file sits beside the model: validation reads it from there, wherever it runs from
    (it read it from the working directory, so elsewhere an out-of-range index built a silent engine)."""
    path = _external_scatter_update(tmp_path, bad_index=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(ModelError) as caught:
        validate(path)
    assert str(caught.value) == "ScatterUpdate node 'update': scatter_update: 'indices' values must be in [0, 299] for a dimension of size 300 (got 300)"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelError):
        validate(str(path.name))


def test_external_tensors_without_their_file_keep_shape_and_type(tmp_path, monkeypatch):
    """A tensor whose external file is not there has no value, but its shape and type are in the model."""
    path = _external_scatter_update(tmp_path, bad_index=False)
    (tmp_path / "m.bin").unlink()
    monkeypatch.chdir(tmp_path)
    tensors = ModelTensors(onnx.load(path, load_external_data=False))
    assert tensors.constant("indices") is None
    assert tensors.shape("indices") == (300,) and tensors.dtype("indices") == np.int64


def test_an_external_data_file_that_is_not_there_is_refused_by_name(tmp_path):
    """TensorRT's parser would fail on it (exit 1, "Failed to import initializer"): it is the model's file that is missing."""
    path = _external_scatter_update(tmp_path, bad_index=False)
    (tmp_path / "m.bin").unlink()
    with pytest.raises(ModelError) as caught:
        Model.read(path)
    assert str(caught.value) == f"{str(path)!r} keeps tensor 'indices' in 'm.bin', which is not in {str(tmp_path)!r}"
    (tmp_path / "m.bin").mkdir()  # a folder of that name: said so, not "not in" the folder that holds it
    with pytest.raises(ModelError, match=r"keeps tensor 'indices' in 'm\.bin', which is a folder: an external data location names a file in the model's folder$"):
        Model.read(path)
    (tmp_path / "m.bin").rmdir()
    (tmp_path / "m.bin").write_bytes(b"\0" * 16)  # shorter than the tensor
    with pytest.raises(ModelError, match=r"keeps tensor 'indices' in 'm.bin', which holds 16 bytes, not the 2400 from offset 0"):
        Model.read(path)


@pytest.mark.parametrize("entries, size, message", [
    ({"offset": None, "length": None}, 16, "which holds 16 bytes, not the 2400 from offset 0"),
    ({"offset": "1000", "length": None}, 2400, "which holds 2400 bytes, not the 2400 from offset 1000"),
    ({"offset": "-8", "length": None}, 2400, "at offset -8: an offset is a byte count from the file's start, 0 or more"),
    ({"offset": None, "length": "16"}, 2400, "as 16 bytes, and its shape [300] and type int64 take 2400"),
], ids=["short-file-without-a-length", "offset-past-the-end", "negative-offset", "length-unlike-the-shape"])
def test_external_data_that_cannot_hold_the_tensor_is_refused_by_name(tmp_path, entries, size, message):
    """Where the model gives no length (onnx.save writes one), the file was checked for nothing: TensorRT's parser failed
    (exit 1, "INVALID_GRAPH"), check's reference on "buffer size must be a multiple of element size" with a hint at the
    inputs; a negative offset was an internal error (exit 70)."""
    path = _external_scatter_update(tmp_path, bad_index=False)
    model = onnx.load(path, load_external_data=False)
    tensor = next(init for init in model.graph.initializer if init.name == "indices")
    kept = {entry.key: entry.value for entry in tensor.external_data}
    kept.update({key: value for key, value in entries.items() if value is not None})
    del tensor.external_data[:]
    for key, value in kept.items():
        if key in entries and entries[key] is None:
            continue
        tensor.external_data.add(key=key, value=value)
    onnx.save(model, path)
    (tmp_path / "m.bin").write_bytes(b"\0" * size)
    with pytest.raises(ModelError) as caught:
        Model.read(path)
    assert str(caught.value) == f"{str(path)!r} keeps tensor 'indices' in 'm.bin' {message}".replace("in 'm.bin' which", "in 'm.bin', which")


def test_a_model_in_memory_whose_external_data_was_not_read_is_refused_by_name(tmp_path, monkeypatch):
    """``onnx.load(path, load_external_data=False)`` handed over: no file to read them beside, so every pass says which
    tensor is missing (rewrite failed with onnx's own ValidationError, reading it from the working directory)."""
    from trt_scatter.passes.lower import lower
    from trt_scatter.passes.rewrite import rewrite

    model = onnx.load(_external_scatter_update(tmp_path, bad_index=False), load_external_data=False)
    monkeypatch.chdir(tmp_path.parent)
    for run in (validate, lower, rewrite):
        with pytest.raises(ModelError) as caught:
            run(model)
        assert str(caught.value) == ("tensor 'indices' of the model is kept in an external file ('m.bin') that was not read in: "
                                     "give the model's path, or onnx.load it with its external data")
    weights = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"]), helper.make_node("ScatterND", ["y", "rows", "u"], ["out"])], "g",
                                                  [info("x", (300, 4)), info("u", (2, 4))], [info("out", (300, 4))],
                                                  [numpy_helper.from_array(np.ones((300, 4), np.float32), "w"), const("rows", np.array([[1], [3]]))]),
                                opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(weights, tmp_path / "w.onnx", save_as_external_data=True, location="w.bin", size_threshold=1024)
    model = onnx.load(tmp_path / "w.onnx", load_external_data=False)  # a weight not read in: no pass needs its values
    validate(model)
    assert [change.result for change in rewrite(model)[1].rewritten] == ["SliceScatter"]


# ---- ONNX's own ScatterND/ScatterElements: constant indices out of range ------------------------
# TensorRT's IScatterLayer has no bounds check (the builders clamp for that reason); ONNX says such an
# index is an error. A constant one is visible before TensorRT runs, so it is refused like a plugin's.


def standard_scatter(op, indices, data=(8,), axis=None, name="scatter", domain=""):
    indices = np.array(indices, np.int64)
    updates = indices.shape[:-1] + tuple(data[indices.shape[-1]:]) if op == "ScatterND" else indices.shape
    node = helper.make_node(op, ["data", "indices", "updates"], ["output"], name=name, domain=domain, **({} if axis is None else {"axis": axis}))
    return make_model([node], [info("data", data), info("updates", updates)], [const("indices", indices)], opsets=(("", 17),))


@pytest.mark.parametrize(
    "model, message",
    [
        (standard_scatter("ScatterND", [[9]]), "ScatterND node 'scatter': scatter_nd: 'indices' values must be in [-8, 7] for a dimension of size 8 (got 9)"),
        (standard_scatter("ScatterND", [[1, 0], [2, -5]], data=(3, 4)),
         "ScatterND node 'scatter': scatter_nd: 'indices' values in column 1 must be in [-4, 3] for a dimension of size 4 (got -5)"),
        (standard_scatter("ScatterElements", [[0, 3]], data=(2, 3), axis=1),
         "ScatterElements node 'scatter': scatter_elements: 'indices' values must be in [-3, 2] for a dimension of size 3 (got 3)"),
        (standard_scatter("ScatterElements", [[0, 2]], data=(2, 3), axis=-2),
         "ScatterElements node 'scatter': scatter_elements: 'indices' values must be in [-2, 1] for a dimension of size 2 (got 2)"),
        (standard_scatter("ScatterND", [[8]], domain="ai.onnx"), "ScatterND node 'scatter': scatter_nd: 'indices' values must be in [-8, 7] for a dimension of size 8 (got 8)"),
    ],
)
def test_standard_scatter_with_constant_indices_out_of_range(model, message):
    assert refused(model) == message


@pytest.mark.parametrize(
    "model",
    [
        standard_scatter("ScatterND", [[-8], [7]]),
        standard_scatter("ScatterElements", [[-3, 2]], data=(2, 3), axis=1),
        standard_scatter("ScatterND", [[9]], data=("n",)),  # data's size not known: TensorRT's run time decides
    ],
)
def test_standard_scatter_with_indices_in_range_or_unknown_sizes_passes(model):
    assert validate(model) is model


def standard_node(op, data=(4, 3), indices=(2, 3), updates=(2, 3), opset=18, data_type=np.float32, index_type=np.int64,
                  updates_type=None, inputs=("data", "indices", "updates"), **attributes):
    """ONNX's own ``op`` on graph inputs of these shapes and types (no constant: the rules that shapes and types decide)."""
    node = helper.make_node(op, list(inputs), ["output"], name="scatter", **attributes)
    types = {"data": data_type, "indices": index_type, "updates": updates_type or data_type,
             "past_cache": data_type, "update": updates_type or data_type, "write_indices": index_type}
    shapes = {"data": data, "indices": indices, "updates": updates, "past_cache": data, "update": updates, "write_indices": indices}
    return make_model([node], [info(name, shapes[name], types[name]) for name in inputs], outputs=[info("output", None, data_type)],
                      opsets=(("", opset),))


@pytest.mark.parametrize("model, message", [
    (standard_node("ScatterElements", reduction="sum"),
     "scatter_elements: 'reduction' must be one of 'none', 'add', 'mul', 'min', 'max' (got 'sum')"),
    (standard_node("ScatterElements", opset=13, reduction="add"),
     "ScatterElements at opset 13, the model's, has no attribute 'reduction' (it arrives in opset 16)"),
    (standard_node("ScatterND", indices=(2, 1), updates=(2, 3), cols=1),
     "ScatterND has no attribute 'cols' (its attributes: reduction)"),
    (standard_node("ScatterElements", opset=16, reduction="min"),
     "ScatterElements at opset 16, the model's, has no reduction 'min' (it arrives in opset 18): export at opset 18 or later, or let "
     "trt-scatter rewrite make it the reduction op's node"),
    (standard_node("ScatterND", opset=17, indices=(2, 1), updates=(2, 3), reduction="max"),
     "ScatterND at opset 17, the model's, has no reduction 'max' (it arrives in opset 18): export at opset 18 or later, or let "
     "trt-scatter rewrite make it the reduction op's node"),
    (standard_node("TensorScatter", opset=18, data=(2, 4, 8), updates=(2, 1, 8), indices=(2,), inputs=("past_cache", "update", "write_indices")),
     "ONNX has no TensorScatter at opset 18, the model's (it arrives in opset 24)"),
    (standard_node("ScatterElements", data_type=np.bool_, reduction="add"),
     "scatter_elements: 'data' must be a number type a reduction can combine (not bool) (got bool)"),
    (standard_node("ScatterElements", axis=2), "scatter_elements: 'axis' must be in [-2, 1] for 'data' of rank 2 (got 2)"),
    (standard_node("ScatterElements", indices=(5, 3), updates=(5, 3), axis=1),
     "scatter_elements: 'indices' dimension 0 must be at most data's (4) off the axis (got shape (5, 3))"),
    (standard_node("ScatterElements", index_type=np.float32), "scatter_elements: 'indices' must be int32 or int64 (got float32)"),
    (standard_node("ScatterElements", updates_type=np.float16),
     "scatter_elements: 'updates' must have the element type of 'data' (float32) (got float16)"),
    (standard_node("ScatterND", indices=(2, 3), updates=(2,)),
     "scatter_nd: 'indices' last dimension must be at most the rank of 'data' (2) (got shape (2, 3))"),
    (standard_node("ScatterND", indices=(2, 1), updates=(2, 4)),
     "scatter_nd: 'updates' must have shape (2, 3) (indices.shape[:-1] + data.shape[indices.shape[-1]:]) (got shape (2, 4))"),
    (standard_node("TensorScatter", opset=24, data=(2, 4, 8), updates=(2, 1, 8), indices=(2,), index_type=np.float32,
                   inputs=("past_cache", "update", "write_indices")),
     "tensor_scatter: 'write_indices' must be int64 (got float32)"),
    (standard_node("TensorScatter", opset=24, data=(2, 4, 8), updates=(2, 1, 8), indices=(2,), index_type=np.int32,
                   inputs=("past_cache", "update", "write_indices")),
     "tensor_scatter: 'write_indices' must be int64 in ONNX's TensorScatter: cast it (an exporter wrote another type), or export with "
     "trt_scatter.torch.export, whose ops take int32 (got int32)"),
    (standard_node("ScatterND", indices=(2, 1), updates=(2, 3), index_type=np.int32),
     "scatter_nd: 'indices' must be int64 in ONNX's ScatterND: cast it (an exporter wrote another type), or export with "
     "trt_scatter.torch.export, whose ops take int32 (got int32)"),
    (standard_node("ScatterND", indices=(2, 1), updates=(2, 3), index_type=np.uint64),
     "scatter_nd: 'indices' must be int64 (got uint64)"),  # no advice to cast: 2**64 - 1 would become -1, the last row
], ids=["reduction sum", "reduction before opset 16", "an attribute ONNX lacks", "min before opset 18", "max before opset 18",
        "TensorScatter before opset 24",
        "a reduction of bool", "axis past the rank", "indices wider than data", "float indices", "updates of another type",
        "too many index columns", "updates of another shape", "float write_indices", "int32 write_indices", "int32 ScatterND indices",
        "uint64 ScatterND indices"])
def test_standard_scatter_nodes_are_checked_against_onnx_and_the_oracle(model, message):
    """ONNX's own scatter nodes: the schema at the model's opset, then the oracle's rules on the types and shapes the
    model shows; each refused in one line before TensorRT (whose parser asserted, built the wrong engine, or ignored it)."""
    assert refused(model) == f"{model.graph.node[0].op_type} node 'scatter': {message}"


def _mutated(base, change):
    model = onnx.ModelProto()
    model.CopyFrom(base)
    change(model)
    return model


def _set_dim(model, **field):
    dim = model.graph.input[0].type.tensor_type.shape.dim[0]
    dim.Clear()
    if field:
        setattr(dim, *next(iter(field.items())))


def _recursive_function():
    """local::F, which holds a ScatterND (so the passes inline it) and calls itself."""
    nodes = [helper.make_node("F", ["x"], ["y"], domain="local"), helper.make_node("ScatterND", ["y", "i", "u"], ["z"])]
    return helper.make_function("local", "F", ["x", "i", "u"], ["z"], nodes, [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])


def _float_in_an_int(attribute):
    """An attribute whose type says INT and whose value is in ``f`` (it read as 0)."""
    attribute.ClearField("i")
    attribute.f = 1.0


_REDUCE = onnx_models.scatter_elements_reduce_model((5, 3), (2, 3))
_SLICE = onnx_models.slice_scatter_model((4, 6), [0], [4], [2], axes=[1])


@pytest.mark.parametrize("model, message", [
    pytest.param(_mutated(_REDUCE, lambda m: m.graph.node[-1].attribute.append(helper.make_attribute("reduction", "max"))),
                 r"^ScatterElementsReduce node .*: attribute 'reduction' is given 2 times \('add', 'max'\): once at most$", id="an-attribute-twice"),
    pytest.param(_mutated(_SLICE, lambda m: setattr(m.graph.node[-1], "domain", "com.microsoft")),
                 r"^SliceScatter node .*: is in domain 'com.microsoft', where TensorRT's parser, which finds plugins by op type alone, would build it as "
                 r"trt-scatter's SliceScatter: trt-scatter's ops are in domain 'trt_scatter'$", id="an-op-of-ours-in-another-domain"),
    pytest.param(_mutated(_SLICE, lambda m: _set_dim(m, dim_param="")), r"^graph input 'data': dimension 0 has an empty name \(dim_param ''\), which TensorRT builds as 0",
                 id="a-dimension-of-an-empty-name"),
    pytest.param(_mutated(_SLICE, lambda m: _set_dim(m, dim_value=-3)), r"^graph input 'data': dimension 0 is -3: a size is 0 or more \(leave it "
                 r"unset, or name it, for a dynamic one\)$", id="a-negative-size"),  # -1 stays a dynamic dimension, as exporters write it
    pytest.param(_mutated(_SLICE, lambda m: m.graph.initializer.append(m.graph.initializer[0])), r"^graph '.*': initializer '.*' is listed 2 times",
                 id="an-initializer-twice"),
    pytest.param(_mutated(_SLICE, lambda m: m.graph.input.append(m.graph.input[0])), r"^graph '.*': input 'data' is listed 2 times", id="an-input-twice"),
    pytest.param(_mutated(_SLICE, lambda m: m.graph.input.append(helper.make_tensor_value_info("", TensorProto.FLOAT, [1]))), r"^graph '.*': input #2 has no name",
                 id="an-input-without-a-name"),
    pytest.param(_mutated(_SLICE, lambda m: m.graph.ClearField("output")), r"^graph '.*' has no outputs", id="no-outputs"),
    pytest.param(_mutated(_SLICE, lambda m: m.graph.input[1].type.tensor_type.ClearField("elem_type")),
                 r"^SliceScatter node .*: input 'updates' is a graph input without a tensor element type$", id="an-input-without-an-element-type"),
    pytest.param(_mutated(_REDUCE, lambda m: setattr(next(a for a in m.graph.node[-1].attribute if a.name == "axis"), "ref_attr_name", "ax")),
                 r"^ScatterElementsReduce node .*: attribute 'axis' refers to a function's attribute \('ax'\) outside any function", id="an-attribute-of-no-function"),
    pytest.param(_mutated(onnx_models.scatter_nd_model((4, 5), (2, 1)), lambda m: m.graph.node[-1].input.append("data")),
                 r"^ScatterND node .*: ScatterND takes 3 inputs and gives 1 output \(got 4 inputs, 1 outputs\)$", id="an-onnx-scatter-of-4-inputs"),
    pytest.param(_mutated(onnx_models.scatter_nd_model((4, 5), (2, 1)), lambda m: m.graph.node[-1].input.__setitem__(1, "")),
                 r"^ScatterND node .*: input 'indices' is missing \(input 1 has an empty name\): ScatterND takes data, indices, updates$",
                 id="an-onnx-scatter-without-indices"),
    # PyTorch's TorchScript exporter writes x[..., idx] = y so: TensorRT's parser called it an invalid node, and check's
    # data loader said 'x and y have different dtype: NoneType'
    pytest.param(_mutated(_SLICE, lambda m: m.graph.node.insert(0, helper.make_node("Add", ["", ""], ["sum"], name="/Add"))),
                 r"^Add node '/Add': input 'A' is missing \(input 0 has an empty name\): Add takes A, B; the exporter that wrote the model "
                 r"left it out \(PyTorch's TorchScript exporter does for x\[\.\.\., idx\] = y, which trt_scatter\.torch\.export writes as one write\)$", id="an-onnx-op-without-a-required-input"),
    pytest.param(_mutated(onnx_models.scatter_elements_model((4, 5), (2, 5), axis=1), lambda m: _float_in_an_int(m.graph.node[-1].attribute[0])),
                 r"^ScatterElements node .*: attribute 'axis' must be an int \(got an attribute typed INT that holds f\)$",
                 id="an-onnx-scatter-int-attribute-holding-a-float"),
    pytest.param(_mutated(onnx_models.scatter_elements_model((4, 5), (2, 5), axis=1),
                          lambda m: m.graph.node[-1].attribute[0].CopyFrom(helper.make_attribute("axis", 1.0))),
                 r"^ScatterElements node .*: attribute 'axis' must be an int \(got an attribute typed FLOAT that holds f\)$",
                 id="an-onnx-scatter-float-attribute-for-an-int"),
    pytest.param(_mutated(_SLICE, lambda m: m.functions.extend([_recursive_function(), _recursive_function()])),
                 r"^the model's local functions cannot be inlined: ", id="local-functions-onnx-cannot-inline"),
    pytest.param(_mutated(_SLICE, lambda m: m.opset_import.append(helper.make_opsetid("trt_scatter", 2))),
                 r"^the model imports domain 'trt_scatter' at versions \[1, 2\]: one version at most$", id="a-domain-imported-at-two-versions"),
    pytest.param(_mutated(_SLICE, lambda m: m.opset_import.append(helper.make_opsetid("ai.onnx", 13))),
                 r"^the model imports domain '' at versions \[13, 17\]: one version at most$", id="the-default-domain-by-both-its-names"),
    pytest.param(_mutated(_SLICE, lambda m: (m.graph.node[-1].ClearField("attribute"),
                                             m.graph.node[-1].attribute.append(helper.make_attribute("inplace", numpy_helper.from_array(np.array(1)))))),
                 r"^SliceScatter node .*: attribute 'inplace' must be the int 0 or 1 \(got a tensor\)$", id="a-tensor-for-an-int-attribute"),
    pytest.param(_mutated(_REDUCE, lambda m: _float_in_an_int(next(a for a in m.graph.node[-1].attribute if a.name == "axis"))),
                 r"^ScatterElementsReduce node .*: attribute 'axis' must be an int \(got no int value: f set\)$", id="an-int-attribute-holding-a-float"),
    pytest.param(_mutated(_SLICE, lambda m: setattr(next(o for o in m.opset_import if o.domain == ""), "version", 99)),
                 r"^the model imports opset 99 of the default domain; onnx .*, installed here, knows opsets up to \d+ \(a model of a newer onnx: upgrade onnx\)$",
                 id="an-opset-onnx-does-not-know"),
    pytest.param(_mutated(_SLICE, lambda m: setattr(m, "ir_version", 99)), r"^the model has IR version 99; onnx .*, installed here, knows IR versions up to \d+",
                 id="an-ir-version-onnx-does-not-know"),
])
def test_models_onnx_would_refuse_are_refused_in_one_line(model, message):
    """Each of these built, or reached TensorRT's parser, an internal error or a rule read with float64 (the attribute given
    twice built the first value into the plugin while the reference and lower used the last)."""
    with pytest.raises(ModelError, match=message):
        validate(model)


@pytest.mark.parametrize("change, message", [
    (lambda t: t.ClearField("data_type"), r"tensor 'const_0' has no element type \(data_type 0\)$"),
    (lambda t: (t.ClearField("raw_data"), t.int64_data.extend([0, 1])), r"tensor 'const_0' of shape \[1\] holds 2 values in int64_data, not the 1 its shape takes$"),
    (lambda t: t.ClearField("raw_data"), r"tensor 'const_0' of shape \[1\] holds 0 values in int64_data, not the 1 its shape takes$"),
])
def test_initializers_whose_values_do_not_fit_their_shape_or_type_are_refused(tmp_path, change, message):
    """As a raw_data of the wrong length was: rewrite failed with an internal error, the parser with its own."""
    model = onnx_models.slice_scatter_model((4, 6), [0], [4], [2], axes=[1])
    change(model.graph.initializer[0])  # start
    onnx.save(model, tmp_path / "model.onnx")
    with pytest.raises(ModelError, match=message):
        validate(tmp_path / "model.onnx")


def test_what_onnx_allows_is_not_refused():
    """onnx.compose repeats opset imports at one version; a dimension of -1 is a dynamic one to TensorRT; an output's
    declared dimensions TensorRT does not read; a node of another domain may call the model's own function of that name."""
    repeated = _mutated(_SLICE, lambda m: m.opset_import.extend([helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)]))
    dynamic = _mutated(_SLICE, lambda m: _set_dim(m, dim_value=-1))
    outputs = _mutated(_SLICE, lambda m: m.graph.output[0].type.tensor_type.shape.dim[0].Clear())
    own = _mutated(_SLICE, lambda m: (m.graph.node.insert(0, helper.make_node("SliceScatter", ["data"], ["relu"], domain="local")),
                                     m.functions.append(helper.make_function("local", "SliceScatter", ["x"], ["y"], [helper.make_node("Relu", ["x"], ["y"])],
                                                                             [helper.make_opsetid("", 17)]))))
    for model in (repeated, dynamic, outputs, own):
        validate(model)



@pytest.mark.parametrize("shape_node, dims, message", [
    (helper.make_node("Shape", ["data"], ["shape"]), [6, 4], r"ScatterUpdate node .*: scatter_update: 'indices' values must be in \[0, 5\] for a dimension of size 6 \(got 6\)"),
    (helper.make_node("Shape", ["data"], ["shape"], start=-2, end=-1), [6, 4], r"'indices' values must be in \[0, 5\] .* \(got 6\)"),
    (helper.make_node("Shape", ["data"], ["shape"], start=1), [6, 4], None),  # 4: a row of the 6
    (helper.make_node("Size", ["data"], ["shape"]), [6, 1], r"'indices' values must be in \[0, 5\] .* \(got 6\)"),
    (helper.make_node("Shape", ["data"], ["shape"]), ["N", 4], None),  # not known before it runs: the run checks it
])
def test_values_that_static_shapes_fix_are_checked(shape_node, dims, message):
    """An index computed from the data's static shape (Shape, with start/end, or Size) is a constant, as TensorRT builds
    it: a ScatterUpdate at row Shape(data)[0] of a 6-row tensor writes out of bounds (it built, and skipped the write)."""
    gather = helper.make_node("Gather", ["shape", "zero"], ["row"], axis=0) if shape_node.op_type == "Shape" else helper.make_node("Reshape", ["shape", "one"], ["row"])
    update = helper.make_node("ScatterUpdate", ["data", "row", "updates", "axis"], ["output"], domain="trt_scatter")
    graph = helper.make_graph([shape_node, gather, update], "g", [info("data", dims), info("updates", [1, dims[1]])], [info("output", dims)],
                              [numpy_helper.from_array(np.array([0]), "zero"), numpy_helper.from_array(np.array([1]), "one"),
                               numpy_helper.from_array(np.array(0), "axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    if message is None:
        validate(model)
    else:
        with pytest.raises(ModelError, match=message):
            validate(model)


@pytest.mark.parametrize("rows, extra, refused", [(6, 0, False), (9, 10, True)])
def test_a_branch_the_static_shapes_rule_out_is_not_checked(rows, extra, refused):
    """A ScatterUpdate at row n - 8, n = Shape(data)[0] + extra, in the branch of If(n >= 8): with 6 rows the branch never
    runs (its write, at row -2, would be out of bounds, and is no mistake); with 9 rows and n = 19 it runs, at row 11."""
    then = helper.make_graph([helper.make_node("Sub", ["rows", "eight"], ["pos"]),
                              helper.make_node("ScatterUpdate", ["data", "pos", "updates", "axis"], ["written"], domain="trt_scatter", name="tail")],
                             "then", [], [info("written", [rows, 4])])
    other = helper.make_graph([helper.make_node("Identity", ["data"], ["same"])], "else", [], [info("same", [rows, 4])])
    nodes = [helper.make_node("Shape", ["data"], ["shape"], end=1), helper.make_node("Add", ["shape", "extra"], ["rows"]),
             helper.make_node("GreaterOrEqual", ["rows", "eight"], ["big"]), helper.make_node("Squeeze", ["big"], ["cond"]),
             helper.make_node("If", ["cond"], ["out"], then_branch=then, else_branch=other)]
    graph = helper.make_graph(nodes, "g", [info("data", [rows, 4]), info("updates", [1, 4])], [info("out", [rows, 4])],
                              [numpy_helper.from_array(np.array(value), name) for name, value in (("eight", [8]), ("axis", 0), ("extra", [extra]))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    if refused:
        with pytest.raises(ModelError, match=r"ScatterUpdate node 'tail': scatter_update: 'indices' values must be in \[0, 8\] .*\(got 11\)"):
            validate(model)
    else:
        validate(model)
        branch = next(attribute.g for attribute in graph.node[-1].attribute if attribute.name == "then_branch")
        branch.node[1].attribute.append(helper.make_attribute("inplace", 2))  # what TensorRT's parser reads is still checked
        with pytest.raises(ModelError, match=r"ScatterUpdate node 'tail': attribute 'inplace' must be the int 0 or 1 \(got 2\)"):
            validate(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)]))


def _scatter_of_opset(opset, indices=None):
    """ONNX's Scatter (opsets 9 and 10; deprecated from 11), which TensorRT's parser builds as ScatterElements."""
    initializers = [] if indices is None else [numpy_helper.from_array(np.array(indices, np.int64), "indices")]
    inputs = [info("data", (4, 3), np.float32), info("updates", (2, 3), np.float32)] + ([info("indices", (2, 3), np.int64)] if indices is None else [])
    graph = helper.make_graph([helper.make_node("Scatter", ["data", "indices", "updates"], ["output"], axis=0)], "g", inputs,
                              [info("output", (4, 3), np.float32)], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 5
    return model


def test_onnxs_old_scatter_is_scatter_elements_to_every_rule_and_the_reference():
    """Scatter (opset 9/10) was never validated: an index of 9 into 4 rows built, and the reference could not run it."""
    import onnxruntime

    from trt_scatter.reference import Reference

    with pytest.raises(ModelError, match=r"^Scatter node #0 \(output 'output'\): scatter_elements: 'indices' values must be in \[-4, 3\] "
                                         r"for a dimension of size 4 \(got 9\)$"):
        validate(_scatter_of_opset(10, [[9, 0, 0], [1, 1, 1]]))
    model = _scatter_of_opset(10)
    validate(model)
    feeds = {"data": np.zeros((4, 3), np.float32), "indices": np.array([[3, -1, 0], [1, 2, -3]]), "updates": np.arange(6, dtype=np.float32).reshape(2, 3)}
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(Reference(model).run(feeds)["output"], session.run(None, feeds)[0])
    with pytest.raises(ModelError, match=r"^Scatter node #0 \(output 'output'\): ONNX deprecates Scatter from opset 11, and the model's is 13: "
                                         r"write it as ScatterElements, which computes the same$"):
        validate(_scatter_of_opset(13))


@pytest.mark.parametrize("op, attributes, message", [
    ("ScatterElements", dict(reduction="bogus"), r"scatter_elements: 'reduction' must be one of"),
    ("ScatterND", dict(reduction="bogus"), r"scatter_nd: 'reduction' must be one of"),
    ("ScatterElements", dict(axis=5), None),  # a rule of shapes: a branch that never runs may have others
    ("TensorScatter", dict(mode="bogus"), r"tensor_scatter: 'mode' must be"),
])
def test_what_the_parser_reads_of_onnxs_own_scatter_in_a_branch_that_never_runs_is_checked(op, attributes, message):
    """An ONNX ScatterElements/ScatterND with reduction 'bogus' in a branch a constant condition rules out passed (its
    attributes are checked for trt_scatter ops there): TensorRT's parser reads the branch all the same."""
    cache = op == "TensorScatter"  # (past_cache, update, write_indices) of a [1, 2, 3, 4] cache
    indices = np.zeros(1 if cache else (3, 1), np.int64)
    shape, updates = ([1, 2, 3, 4], [1, 2, 1, 4]) if cache else ([3, 4], [3, 1] if op == "ScatterElements" else [3, 4])
    inputs = ["data", "updates", "indices"] if cache else ["data", "indices", "updates"]
    then = helper.make_graph([helper.make_node(op, inputs, ["written"], name="dead", **attributes)], "then", [],
                             [info("written", shape)])
    other = helper.make_graph([helper.make_node("Identity", ["data"], ["same"])], "else", [], [info("same", shape)])
    graph = helper.make_graph([helper.make_node("If", ["cond"], ["out"], then_branch=then, else_branch=other)], "g",
                              [info("data", shape), info("updates", updates)], [info("out", shape)],
                              [numpy_helper.from_array(np.array(False), "cond"), numpy_helper.from_array(indices, "indices")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24 if cache else 18)])
    if message is None:
        validate(model)
    else:
        with pytest.raises(ModelError, match=rf"^{op} node 'dead': {message}"):
            validate(model)


def test_an_input_whose_initializer_holds_another_type_is_refused_by_name():
    """A graph input declared int32 that an int64 initializer fills: TensorRT's parser takes the initializer, onnxruntime
    refuses the model in its own words; validation passed it."""
    node = helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"])
    graph = helper.make_graph([node], "g", [info("data", [4]), info("indices", [2], np.int32), info("updates", [2])], [info("output", [4])],
                              [numpy_helper.from_array(np.array([3, 1], np.int64), "indices")])
    with pytest.raises(ModelError, match=r"^graph 'g': input 'indices' is declared int32 and its initializer holds int64: one tensor has one type$"):
        validate(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    graph.input[1].type.tensor_type.elem_type = TensorProto.INT64
    validate(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    graph.input[1].type.tensor_type.shape.dim[0].dim_value = 3  # onnxruntime: "Shape of initializer indices does not match"
    with pytest.raises(ModelError, match=r"^graph 'g': input 'indices' is declared of shape \(3,\) and its initializer holds shape \(2,\): "
                                         r"one tensor has one shape$"):
        validate(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    graph.input[1].type.tensor_type.shape.dim[0].dim_param = "n"  # a named dimension: the initializer's 2
    validate(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    sparse = graph.sparse_initializer.add()
    sparse.values.CopyFrom(numpy_helper.from_array(np.array([1.0], np.float32), "weights"))
    sparse.indices.CopyFrom(numpy_helper.from_array(np.array([0], np.int64), ""))
    sparse.dims.append(4)
    with pytest.raises(ModelError, match=r"^graph 'g': sparse initializer 'weights': trt-scatter reads no sparse initializers: store it as a dense one$"):
        validate(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))


def test_a_sparse_constant_is_refused_as_a_sparse_initializer_is():
    """A SliceScatter's step from a Constant's sparse_value (0 at every position): validation passed it, whose readers
    see no value there, so lower and rewrite wrote models with a step of 0, check failed in the reference with a hint
    at the inputs, and build in TensorRT's parser."""
    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model([4, 6], [0], [6], [2], [1])
    graph = model.graph
    step = graph.node[0].input[4]
    graph.initializer.remove(next(init for init in graph.initializer if init.name == step))
    sparse = helper.make_sparse_tensor(helper.make_tensor("v", TensorProto.INT64, [0], []), helper.make_tensor("i", TensorProto.INT64, [0], []), [1])
    graph.node.insert(0, helper.make_node("Constant", [], [step], sparse_value=sparse))
    with pytest.raises(ModelError, match=rf"^Constant node #0 \(output '{step}'\): attribute 'sparse_value': trt-scatter reads no sparse constants "
                                         r"\(nor does TensorRT's parser\): give the value as a dense one \('value'\)$"):
        validate(model)


@pytest.mark.parametrize("impl", ["plugin", "standard"])
@pytest.mark.parametrize("shortest, message", [
    (7, "in every run the profile allows, as at its largest data and smallest other inputs (update [2, 7, 4, 8]): {node}: "
        "tensor_scatter: 'write_indices' values must be at most max_sequence_length - sequence_length = 16 - 7 in linear mode "
        "(the update must fit) (got 10)"),
    (6, None),  # 10 + 6 fits: the runs of 7 and 8 are the user's to avoid (the plugin counts what it skips)
], ids=["no-run-fits", "the-shortest-fits"])
def test_constant_write_indices_no_update_length_of_the_profile_fits_are_refused_where_the_cache_is_static(impl, shortest, message):
    """A static cache of 16, constant write indices [10, 3], an update whose length only the profile bounds: with 7 or
    more positions no run fits (10 + 7 > 16), and a build with the plugins went on without a word, the plugin skipping the
    write in every run; only a cache the profile bounds was checked."""
    from trt_scatter.passes.validate import validate_profile

    model = onnx_models.tensor_scatter_model((2, 16, 4, 8), "T", axis=1, impl=impl)
    kept = [value for value in model.graph.input if value.name != "write_indices"]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    model.graph.initializer.append(numpy_helper.from_array(np.array([10, 3], np.int64), "write_indices"))
    profile = {"update": ((2, shortest, 4, 8), (2, 7, 4, 8), (2, 8, 4, 8))}
    if message is None:
        validate_profile(model, profile)
        return
    node = f"{model.graph.node[0].op_type} node '{model.graph.node[0].op_type}_0'"
    with pytest.raises(ModelError) as refused:
        validate_profile(model, profile)
    assert str(refused.value) == message.format(node=node)


def test_a_constant_divided_by_zero_is_folded_without_numpys_warnings(capfd):
    """step = Div(2, 0) of int64 constants: NumPy's floor_divide said "divide by zero encountered" in four lines of
    warnings before the one line of the error."""
    import warnings

    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model([4, 6], [0], [6], [2], [1])
    step = model.graph.node[0].input[4]
    next(init for init in model.graph.initializer if init.name == step).name = "two"
    model.graph.initializer.append(numpy_helper.from_array(np.array([0], np.int64), "zero"))
    model.graph.node.insert(0, helper.make_node("Div", ["two", "zero"], [step]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ModelError, match=r"^SliceScatter node '[^']+': slice_scatter: 'step' must not contain 0 \(got \[0\]\)$"):
            validate(model)
    assert capfd.readouterr() == ("", "")
