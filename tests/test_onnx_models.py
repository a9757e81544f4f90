"""trt_scatter.onnx_models: valid models, the plugin-node contract, standard ops against the oracle, TensorRT's parser."""

import textwrap

import numpy as np
import onnx
import pytest
import onnx_fixtures as fx
from hypothesis import given
from hypothesis import strategies as st
from lowering_support import build, parse_onnx, profile_for, run_onnx, scatter_layers

from trt_scatter import onnx_models, oracle
from trt_scatter.backend import tensorrt
from trt_scatter.onnx_models import scatter_elements_model, scatter_nd_model, scatter_update_model, slice_scatter_model
from trt_scatter.reference import Reference

STANDARD_OPS = {"Shape", "Gather", "Add", "Sub", "Mul", "Div", "Min", "Max", "Less", "Where", "Concat", "Reshape", "Cast", "Range", "ConstantOfShape", "ScatterElements", "ScatterND"}


def _plugin_models(index_dtype=np.int64):
    return {
        "SliceScatter": slice_scatter_model(("n", 5), [-25], [25], [2], [1], index_dtype=index_dtype),
        "SliceScatter-no-axes": slice_scatter_model((3, 5), [0, 1], [3, 5], [2, 2], index_dtype=index_dtype),
        "ScatterUpdate": scatter_update_model((3, "m"), ("k",), 1, index_dtype=index_dtype),
    }


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_plugin_nodes_follow_the_contract(index_dtype):
    for name, model in _plugin_models(index_dtype).items():
        onnx.checker.check_model(model, full_check=True)
        (node,) = model.graph.node
        assert node.op_type == name.split("-")[0] and node.domain == "trt_scatter" and [(a.name, a.i) for a in node.attribute] == [("inplace", 0)]
        assert {(o.domain, o.version) for o in model.opset_import} == {("", 17), ("trt_scatter", 1)}
        initializers = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
        graph_inputs = [i.name for i in model.graph.input]
        if node.op_type == "SliceScatter":
            assert graph_inputs == ["data", "updates"] and list(node.input[:2]) == ["data", "updates"]
            params = [initializers[n] for n in node.input[2:]]
            assert len(params) == (4 if name == "SliceScatter" else 3)
            if name == "SliceScatter":
                assert [p.tolist() for p in params] == [[-25], [25], [2], [1]]
        else:
            assert graph_inputs == ["data", "indices", "updates"] and list(node.input[:3]) == graph_inputs
            params = [initializers[node.input[3]]]
            assert params[0].tolist() == [1]
        assert all(p.dtype == index_dtype and p.ndim == 1 for p in params)
        (output,) = model.graph.output
        assert output.name == "output" and list(node.output) == ["output"]
        assert output.type.tensor_type.elem_type == model.graph.input[0].type.tensor_type.elem_type


def test_symbolic_sliced_dimension_gets_its_own_name():
    model = slice_scatter_model(("n", "m"), [0], [5], [2], [1])
    dims = [d.dim_param or d.dim_value for d in model.graph.input[1].type.tensor_type.shape.dim]
    assert dims == ["n", "updates_1"]


@pytest.mark.parametrize("impl", ["native"])
def test_native_models_use_standard_onnx_ops_only(impl):
    models = [slice_scatter_model(("n", "m", 4), [1, -1], [8, -8], [3, -2], [0, 1], impl=impl), scatter_update_model(("a", 3, "b"), ("k", 2), -1, index_dtype=np.int32, impl=impl)]
    for model in models:
        onnx.checker.check_model(model, full_check=True)
        assert {node.op_type for node in model.graph.node} <= STANDARD_OPS
        assert {node.domain for node in model.graph.node} == {""} and [o.domain for o in model.opset_import] == [""]


@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.integers(0, 2),
    st.booleans(),
    st.sampled_from([np.int32, np.int64]),
    st.sampled_from([np.float32, np.int64, np.bool_]),
    st.integers(0, 2**16),
)
def test_standard_scatter_elements_matches_oracle(shape, axis, dynamic, index_dtype, dtype, seed):
    shape = tuple(shape)
    axis = axis % len(shape)
    rng = np.random.default_rng(seed)
    data = rng.integers(-9, 9, size=shape).astype(dtype)
    indices = np.argsort(rng.random(shape), axis=axis).astype(index_dtype)
    indices = np.where(rng.random(shape) < 0.5, indices - shape[axis], indices).astype(index_dtype)
    updates = rng.integers(-9, 9, size=shape).astype(dtype)
    names = tuple(f"d{i}" for i in range(len(shape))) if dynamic else shape
    model = scatter_elements_model(names, names, axis=axis, dtype=dtype, index_dtype=index_dtype)
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
    assert np.array_equal(got, oracle.scatter_elements(data, indices, updates, axis))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dynamic", [False, True])
def test_standard_scatter_nd_matches_oracle(index_dtype, dynamic):
    data = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    indices = np.array([[0, 1], [-1, -3], [2, 2]], dtype=index_dtype)
    updates = -np.arange(6, dtype=np.float32).reshape(3, 2)
    model = scatter_nd_model(("a", "b", 2) if dynamic else (4, 3, 2), ("r", 2) if dynamic else (3, 2), index_dtype=index_dtype)
    assert ("Cast" in {n.op_type for n in model.graph.node}) == (index_dtype == np.int32)  # ONNX ScatterND: int64 only
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
    assert np.array_equal(got, oracle.scatter_nd(data, indices, updates))


def test_standard_models_parse_and_build_in_tensorrt():
    trt = tensorrt()
    for model, mode, low, high in (
        (scatter_elements_model(("n", 4), ("k", 4), axis=0, dtype=np.float16), trt.ScatterMode.ELEMENT, {"data": (3, 4), "indices": (2, 4), "updates": (2, 4)}, {"data": (6, 4), "indices": (4, 4), "updates": (4, 4)}),
        (scatter_nd_model((8,), (4, 1), index_dtype=np.int32), trt.ScatterMode.ND, {}, {}),
    ):
        builder, network, _ = parse_onnx(model)
        assert [layer.mode for layer in scatter_layers(network)] == [mode]
        build(builder, network, profile_for(network, low, low, high))


def test_plugin_models_parse_into_plugins_when_they_are_registered():
    """Needs trt_scatter.plugins.register (the plugins' part); runs in a subprocess, since a missing
    libtensorrt_rtx.so link aborts the process (see ENVIRONMENT.md)."""
    script = textwrap.dedent(
        """
        from trt_scatter.backend import tensorrt
        from trt_scatter.backend import trt_logger
        from trt_scatter.backend import new_builder
        from trt_scatter.onnx_models import slice_scatter_model, scatter_update_model
        from trt_scatter.plugins import register
        register()
        trt = tensorrt()
        for model in (slice_scatter_model((2, 5), [-25], [25], [2], [1]), scatter_update_model((3, 5), (2,), 1)):
            builder = new_builder()
            network = builder.create_network(0)
            parser = trt.OnnxParser(network, trt_logger())
            assert parser.parse(model.SerializeToString()), [str(parser.get_error(i)) for i in range(parser.num_errors)]
            kinds = [network.get_layer(i).type for i in range(network.num_layers)]
            assert trt.LayerType.PLUGIN_V3 in kinds, kinds
            assert builder.build_serialized_network(network, builder.create_builder_config())
        print("ok")
        """
    )
    result = fx.run_python(script)  # in a forked child: the TensorRT-RTX heap bug (README) after a plugin parse
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-2000:]


@pytest.mark.parametrize("build, error, message", [
    (lambda: onnx_models.tensor_scatter_model((2, 3.5, 4), 1), TypeError, "tensor_scatter: cache_shape must hold ints >= 0"),
    (lambda: onnx_models.tensor_scatter_model((2, -3, 4), 1), TypeError, "tensor_scatter: cache_shape must hold ints >= 0"),
    (lambda: onnx_models.tensor_scatter_model("abc", 1), TypeError, "tensor_scatter: cache_shape must be a sequence of dimensions"),
    (lambda: onnx_models.tensor_scatter_model(None, 1), TypeError, "tensor_scatter: cache_shape must be a sequence of dimensions"),
    (lambda: onnx_models.tensor_scatter_model((2, 3, 8, 4), 1.5), TypeError, "tensor_scatter: sequence_length must hold ints >= 0"),
    (lambda: onnx_models.tensor_scatter_model((2, 3, 8, 4), True), TypeError, "tensor_scatter: sequence_length must hold ints >= 0"),
    (lambda: onnx_models.scatter_elements_reduce_model((-2, 3), (2, 3)), TypeError, "scatter_elements_reduce: data_shape must hold ints >= 0"),
    (lambda: onnx_models.scatter_nd_reduce_model((2.5, 3), (2, 1)), TypeError, "scatter_nd_reduce: data_shape must hold ints >= 0"),
    (lambda: onnx_models.scatter_nd_reduce_model("ab", (2, 1)), TypeError, "scatter_nd_reduce: data_shape must be a sequence of dimensions"),
    (lambda: onnx_models.scatter_elements_model((4, 3), (2, 3), dtype=None), TypeError, "scatter_elements: dtype must be a type, e.g. np.float32 (got None)"),
    (lambda: onnx_models.slice_scatter_model((4, 6), [1], [4], [1], index_dtype=None), TypeError, "slice_scatter: index_dtype must be a type"),
    (lambda: onnx_models.slice_scatter_model((4, 6), [1], [4], [1], runtime=["stat"]), ValueError,
     "slice_scatter: runtime must be a collection of the names 'start', 'stop', 'step', 'axes' (got ['stat'])"),
    (lambda: onnx_models.slice_scatter_model((4, 6), [1], [4], [1], runtime="start"), ValueError, "slice_scatter: runtime must be a collection"),
    (lambda: onnx_models.scatter_update_model((4, 6), (2,), 0, runtime=["axes"]), ValueError,
     "scatter_update: runtime must be a collection of the names 'axis' (got ['axes'])"),
    (lambda: onnx_models.scatter_update_model((4, 6), (2,), 0, inplace="yes"), TypeError, "scatter_update: inplace must be True or False (got 'yes')"),
    (lambda: onnx_models.scatter_nd_reduce_model((4, 3), (2, 1), inplace=2), TypeError, "scatter_nd_reduce: inplace must be True or False (got 2)"),
    (lambda: onnx_models.slice_scatter_model((4, 6), [1], [4], [1], impl="native", inplace=True), ValueError,
     "slice_scatter: inplace=True is the plugin node's attribute (impl='plugin'): the 'native' model has no node that writes in place"),
    (lambda: onnx_models.tensor_scatter_model((2, 3, 8, 4), 1, impl="standard", inplace=True), ValueError,
     "tensor_scatter: inplace=True is the plugin node's attribute (impl='plugin'): the 'standard' model"),
], ids=["float dim", "negative dim", "a string", "None", "float sequence_length", "bool sequence_length", "reduce negative dim",
        "reduce float dim", "reduce string", "dtype None", "index_dtype None", "misspelt runtime name", "runtime a bare name",
        "runtime name of another builder", "inplace a word", "inplace 2", "inplace native", "inplace standard"])
def test_builder_arguments_that_would_make_another_model_are_refused_by_name(build, error, message):
    """Each would have built a model of another shape or type than asked (a float dim truncated, a negative one made
    dynamic, a string read as one dimension per letter, None as ONNX's UNDEFINED type), ignored a name or inplace=True
    (a model without the plugin node) or raised a bare KeyError."""
    with pytest.raises(error) as raised:
        build()
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize("build, message", [
    (lambda: onnx_models.tensor_scatter_model((2, 3, 8, 4), 1, impl="standard", index_dtype=np.int32),
     "tensor_scatter: 'write_indices' must be int64 in ONNX's TensorScatter (got int32)"),
    (lambda: onnx_models.scatter_nd_reduce_model((4, 3), (2, "k")), "scatter_nd_reduce: 'indices' last dimension must be a known int (got shape (2, 'k'))"),
    (lambda: onnx_models.scatter_nd_reduce_model((4, 3), ()), "scatter_nd_reduce: 'indices' last dimension must be a known int (got shape ())"),
], ids=["standard int32 write_indices", "symbolic row length", "rank-0 indices"])
def test_builder_arguments_the_op_cannot_take_are_refused_by_the_oracles_rule(build, message):
    """ONNX's TensorScatter takes int64 write indices only; ScatterNDReduce's updates shape follows from the indices' last
    dimension, which must then be known."""
    with pytest.raises(oracle.ScatterInputError) as raised:
        build()
    assert str(raised.value) == message


def test_builder_dims_may_be_numpy_ints_and_parameters_beyond_int32_clamp():
    """``np.int64(1)`` is a known dimension like 1; INT64's bounds as int32 slice parameters clamp to int32's (the same
    slice: OpenVINO clamps them to the dimension)."""
    model = onnx_models.scatter_nd_model((4, 3), (2, np.int64(1)))
    assert [d.dim_value for d in model.graph.input[1].type.tensor_type.shape.dim] == [2, 1]
    plugin = onnx_models.slice_scatter_model((4, 6), [-(2**63)], [2**63 - 1], [2], [1], index_dtype=np.int32)
    values = {init.name: onnx.numpy_helper.to_array(init) for init in plugin.graph.initializer}
    assert sorted(int(v) for array in values.values() for v in array.ravel()) == [-(2**31), 1, 2, 2**31 - 1]
    data, updates = np.arange(24, dtype=np.float32).reshape(4, 6), np.ones((4, 3), np.float32)
    written = Reference(plugin).run({"data": data, "updates": updates})["output"]
    np.testing.assert_array_equal(written, oracle.slice_scatter(data, updates, [-(2**63)], [2**63 - 1], [2], [1]))


def test_bad_parameters_are_refused_with_the_oracles_rules():
    with pytest.raises(oracle.ScatterInputError, match=r"^slice_scatter: 'impl' must be one of 'plugin', 'native' \(got 'lowered'\)$"):
        slice_scatter_model((2, 5), [0], [5], [2], impl="lowered")
    with pytest.raises(oracle.ScatterInputError, match="'indices' must be int32 or int64"):
        scatter_update_model((3, 5), (2,), 1, index_dtype=np.float32)
    with pytest.raises(oracle.ScatterInputError, match="slice_scatter: 'start/stop/step/axes' must be int32 or int64"):
        slice_scatter_model((2, 5), [0], [5], [2], index_dtype=np.int8)
    with pytest.raises(oracle.ScatterInputError, match="'step' must not contain 0"):
        slice_scatter_model((2, 5), [0], [5], [0], impl="native")
    with pytest.raises(oracle.ScatterInputError, match="'updates' must have shape"):
        slice_scatter_model((2, 5), [0], [5], [2], [1], updates_shape=(2, 2))
    with pytest.raises(oracle.ScatterInputError, match="'axis' must be in"):
        scatter_elements_model((3, 4), (2, 4), axis=2)
    with pytest.raises(oracle.ScatterInputError, match="last dimension must be a known int"):
        scatter_nd_model((3, 4), (2, "k"))
    with pytest.raises(oracle.ScatterInputError, match="'axis' must be in"):
        scatter_update_model((3, 5), (2,), -3, impl="native")
    with pytest.raises(oracle.ScatterInputError, match="slice_scatter: 'axes' must be given to be a graph input"):
        slice_scatter_model((2, 5), [0], [5], [1], runtime=("axes",))


@pytest.mark.parametrize("impl", ["plugin", "native"])
@pytest.mark.parametrize("build, message", [
    (lambda impl: onnx_models.scatter_elements_reduce_model((4, 5), (2, 5), reduction="sum", impl=impl),
     "scatter_elements_reduce: 'reduction' must be one of 'add', 'mul', 'min', 'max', 'mean' (got 'sum')"),
    (lambda impl: onnx_models.scatter_nd_reduce_model((4, 5), (2, 1), include_self=2, impl=impl), "scatter_nd_reduce: 'include_self' must be 0 or 1 (got 2)"),
    (lambda impl: onnx_models.scatter_nd_reduce_model((4, 5), (2, 1), include_self=0.5, impl=impl), "scatter_nd_reduce: 'include_self' must be 0 or 1 (got 0.5)"),
    (lambda impl: onnx_models.scatter_nd_reduce_model((4, 5), (2, 1), dtype=bool, impl=impl),
     "scatter_nd_reduce: 'data' must be a number type a reduction can combine (not bool) (got bool)"),
])
def test_reduction_models_refuse_what_the_oracle_refuses_before_they_are_built(impl, build, message):
    with pytest.raises(oracle.ScatterInputError) as raised:
        build(impl)
    assert str(raised.value) == message
