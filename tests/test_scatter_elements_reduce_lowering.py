"""ScatterElementsReduce's lowering (standard ONNX ScatterElements with a reduction) in onnxruntime against the oracle;
its TensorRT network form (the plugin only)."""

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lowering_support import add_input, new_network, plugin_calls, run_onnx, symbolic  # noqa: F401 (fixture)

from reduction_helpers import REDUCTIONS, assert_same, values
from trt_scatter.networks import add_scatter_elements_reduce, lower_scatter_elements_reduce
from trt_scatter.networks.graph import OnnxGraph
from trt_scatter.onnx_models import scatter_elements_reduce_model
from trt_scatter.oracle import ScatterInputError
from trt_scatter.oracle.scatter_elements_reduce import scatter_elements_reduce

# onnxruntime 1.32's CPU ScatterElements has no float16 add or mul, and takes no bfloat16 from Python.
DTYPES = [np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64]


@st.composite
def cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    indices_shape = tuple(draw(st.integers(0, 6)) if d == axis % rank else draw(st.integers(0, n)) for d, n in enumerate(shape))
    size = shape[axis]
    indices = rng.integers(-size, size, size=indices_shape).astype(draw(st.sampled_from([np.int32, np.int64])))
    dtype = draw(st.sampled_from(DTYPES))
    dynamic = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    return (values(rng, shape, dtype, small=True), indices, values(rng, indices_shape, dtype, small=True), axis,
            draw(st.sampled_from(REDUCTIONS)), draw(st.sampled_from([0, 1])), dynamic)


@settings(max_examples=40)
@given(case=cases())
def test_lowering_matches_the_oracle_in_onnxruntime(case):
    data, indices, updates, axis, reduction, include_self, dynamic = case
    data_shape, _ = symbolic(data.shape, dynamic, "d")
    indices_shape, _ = symbolic(indices.shape, dynamic, "i")
    model = scatter_elements_reduce_model(data_shape, indices_shape, axis, reduction, include_self, dtype=data.dtype,
                                          index_dtype=indices.dtype, impl="native")
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
    assert_same(got, scatter_elements_reduce(data, indices, updates, axis, reduction, include_self))


def test_float_order_and_identity_survive_the_lowering():
    """include_self=0 starts from -0.0 (so a first update -0.0 stays -0.0), and sums run in ascending position."""
    data = np.array([5.0, 5.0, 5.0], np.float32)
    indices = np.array([0, 0, 0, 1, 2, 2])
    updates = np.array([1e8, 1.0, -1e8, -0.0, np.inf, 1.0], np.float32)
    for include_self in (0, 1):
        model = scatter_elements_reduce_model((3,), (6,), 0, "add", include_self, impl="native")
        got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
        assert_same(got, scatter_elements_reduce(data, indices, updates, 0, "add", include_self))
    assert np.signbit(got[1]) is np.False_ and np.signbit(run_onnx(
        scatter_elements_reduce_model((3,), (6,), 0, "add", 0, impl="native"), {"data": data, "indices": indices, "updates": updates})[1])


@pytest.mark.parametrize("index_dtype", [np.int8, np.int16, np.uint8, np.uint16])
def test_indices_of_another_integer_type_are_cast_for_onnx_scatter_elements(index_dtype):
    """ONNX's ScatterElements takes int32 and int64 indices only: others are cast (negative ones still wrap)."""
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    indices = np.array([[2, 0, 1, 0], [2, 2, 0, 1]] if np.dtype(index_dtype).kind == "u" else [[-1, 0, 1, -3], [2, -1, 0, 1]], index_dtype)
    updates = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int32)
    graph = OnnxGraph()
    inputs = [graph.add_input(name, array.dtype, array.shape) for name, array in (("data", data), ("indices", indices), ("updates", updates))]
    model = graph.model({"output": lower_scatter_elements_reduce(graph, *inputs, 0, "add", 1)})
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
    assert_same(got, scatter_elements_reduce(data, indices, updates, 0, "add", 1))
    assert "Cast" in {node.op_type for node in model.graph.node}


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("include_self", [0, 1])
def test_integer_mean_floors_as_the_oracle_does(dtype, include_self):
    """An integer mean divides in 64 bits and floors (ONNX's Div truncates: negative sums need one less)."""
    signed = np.dtype(dtype).kind == "i"
    data = np.array([7, -6, 0, 5] if signed else [7, 250, 0, 5], dtype)  # with self or without, one negative sum is no multiple of its count
    indices = np.array([0, 0, 1, 1, 1, 2, 3])
    updates = np.array([2, -6, -1, -1, 1, 4, 1] if signed else [2, 6, 1, 1, 255, 4, 1], dtype)
    model = scatter_elements_reduce_model((4,), (7,), 0, "mean", include_self, dtype=dtype, impl="native")
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
    assert_same(got, scatter_elements_reduce(data, indices, updates, 0, "mean", include_self))


def test_the_lowering_is_standard_onnx_at_opset_18():
    model = scatter_elements_reduce_model((4, 3), (6, 3), 0, "max", 0, impl="native")
    onnx.checker.check_model(model, full_check=True)
    assert {opset.domain: opset.version for opset in model.opset_import} == {"": 18}
    assert {node.op_type for node in model.graph.node} <= {"ScatterElements", "Less", "Where", "Max", "Min", "Add", "Identity"}


def test_tensorrt_has_no_layer_for_it_and_the_plugin_is_added(plugin_calls):
    from trt_scatter.backend import tensorrt

    builder, network = new_network()
    data = add_input(network, "data", np.float32, (4, 3))
    indices = add_input(network, "indices", np.int64, (6, 3))
    updates = add_input(network, "updates", np.float32, (6, 3))
    with pytest.raises(ScatterInputError) as raised:
        add_scatter_elements_reduce(network, data, indices, updates, reduction="mean", impl="native")
    assert str(raised.value) == ("scatter_elements_reduce: 'impl' 'native' has no TensorRT layer (IScatterLayer has no reduction, 'mean' "
                                 "included): build the node as the plugin (impl='plugin', trt-scatter build --plugins) (got 'native')")
    add_scatter_elements_reduce(network, data, indices, updates, axis=-2, reduction="mean", include_self=0)
    assert plugin_calls == [("ScatterElementsReduce", [data, indices, updates], {"axis": 0, "reduction": "mean", "include_self": 0})]
    with pytest.raises(ScatterInputError, match="'updates' must have shape"):
        add_scatter_elements_reduce(network, data, indices, data)
    assert tensorrt() is not None


def test_the_lowerings_take_a_reduction_as_bytes_as_the_oracle_does():
    """ONNX attributes hold strings as bytes, and the oracle takes b"max"; the lowerings ended in a bare KeyError."""
    import onnxruntime

    from trt_scatter.networks import lower_scatter_elements_reduce, lower_scatter_nd_reduce
    from trt_scatter.networks.graph import OnnxGraph
    from trt_scatter.oracle.scatter_nd_reduce import scatter_nd_reduce

    data, updates = np.zeros(3, np.float32), np.array([1.0, 5.0], np.float32)
    for lower, indices, oracle in ((lower_scatter_elements_reduce, np.array([1, 1]), scatter_elements_reduce),
                                   (lower_scatter_nd_reduce, np.array([[1], [1]]), scatter_nd_reduce)):
        graph = OnnxGraph()
        output = lower(graph, graph.add_input("d", np.float32, data.shape), graph.add_input("i", np.int64, indices.shape),
                       graph.add_input("u", np.float32, updates.shape), reduction=b"max")
        session = onnxruntime.InferenceSession(graph.model({"output": output}).SerializeToString(), providers=["CPUExecutionProvider"])
        (got,) = session.run(None, {"d": data, "i": indices, "u": updates})
        np.testing.assert_array_equal(got, oracle(data, indices, updates, reduction=b"max"))
