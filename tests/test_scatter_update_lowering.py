"""ScatterUpdate's native lowering: its ONNX form in onnxruntime against the oracle; its TensorRT form built on the CPU."""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from lowering_support import add_input, build, layers, new_network, parse_onnx, profile_for, run_onnx, scatter_layers, symbolic, values

from trt_scatter import oracle
from trt_scatter.backend import tensorrt
from trt_scatter.networks import add_scatter_update, lower_scatter_update
from trt_scatter.networks.graph import OnnxGraph
from trt_scatter.onnx_models import scatter_update_model

DTYPES = [np.float32, np.float16, np.int8, np.int32, np.int64, np.bool_]  # onnxruntime takes no bfloat16 from Python


@st.composite
def update_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    size = shape[axis]
    indices_shape = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    if int(np.prod(indices_shape)) > size:  # unique indices only: duplicates are undefined
        indices_shape = (size,)
    dynamic = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    dynamic_indices = draw(st.lists(st.booleans(), min_size=len(indices_shape), max_size=len(indices_shape)))
    dtype = draw(st.sampled_from(DTYPES))
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    seed = draw(st.integers(0, 2**16))
    return shape, indices_shape, axis, dynamic, dynamic_indices, dtype, index_dtype, seed


@given(update_cases())
@example(((3, 5), (2,), 1, [False, False], [False], np.float32, np.int32, 0))  # the spec's example 2
@example(((3, 5), (), 0, [True, True], [], np.float32, np.int64, 0))  # a 0-D index
@example(((2, 3, 4), (2, 1), 2, [True, False, True], [True, True], np.int32, np.int32, 1))  # the last axis, 2-D indices
@example(((2, 3, 0), (2,), 1, [False, False, False], [False], np.float32, np.int64, 0))  # empty rows (no -1 beside a 0)
def test_native_lowering_matches_oracle_in_onnxruntime(case):
    shape, indices_shape, axis, dynamic, dynamic_indices, dtype, index_dtype, seed = case
    rng = np.random.default_rng(seed)
    data = values(rng, shape, dtype)
    indices = rng.permutation(shape[axis])[: int(np.prod(indices_shape))].reshape(indices_shape).astype(index_dtype)
    updates = values(rng, shape[:axis % len(shape)] + indices_shape + shape[axis % len(shape) + 1 :], dtype)
    expected = oracle.scatter_update(data, indices, updates, axis)

    data_shape, _ = symbolic(shape, dynamic, "d")
    onnx_indices_shape, _ = symbolic(indices_shape, dynamic_indices, "i")
    model = scatter_update_model(data_shape, onnx_indices_shape, axis, dtype=dtype, index_dtype=index_dtype, impl="native")
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("axis,indices_shape", [(0, (2,)), (1, (2, 2)), (-1, ())], ids=["axis0", "axis1-2d", "last-0d"])
def test_tensorrt_network_builds(axis, indices_shape, dynamic):
    trt = tensorrt()
    shape = (4, 3, 5)
    norm = axis % len(shape)
    updates_shape = shape[:norm] + indices_shape + shape[norm + 1 :]
    builder, network = new_network()
    _, data_dims = symbolic(shape, [dynamic] * 3, "d")
    _, indices_dims = symbolic(indices_shape, [dynamic] * len(indices_shape), "i")
    _, updates_dims = symbolic(updates_shape, [dynamic] * len(updates_shape), "u")
    data = add_input(network, "data", np.float16, data_dims)
    indices = add_input(network, "indices", np.int32, indices_dims)
    updates = add_input(network, "updates", np.float16, updates_dims)
    output = add_scatter_update(network, data, indices, updates, np.array([axis], dtype=np.int64))
    network.mark_output(output)

    (scatter,) = scatter_layers(network)
    assert scatter.mode == trt.ScatterMode.ND
    rows = scatter.get_input(1)  # one int64 row number per data.shape[axis+1:] block
    assert rows.dtype == trt.int64 and len(rows.shape) == norm + len(indices_shape) + 1 and rows.shape[-1] == 1
    assert len(scatter.get_input(0).shape) == len(shape) - norm  # data flattened over its first axis+1 axes
    assert scatter.get_input(2) is not None and output.dtype == trt.float16 and tuple(output.shape) == data_dims
    assert trt.LayerType.CAST in {layer.type for layer in layers(network)}  # int32 indices become int64
    low = {"data": shape, "indices": indices_shape, "updates": updates_shape}
    high = {"data": (8, 6, 10), "indices": tuple(2 * d for d in indices_shape)}
    high["updates"] = high["data"][:norm] + high["indices"] + high["data"][norm + 1 :]
    build(builder, network, profile_for(network, low, low, high))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_onnx_form_parses_and_builds_in_tensorrt(dynamic):
    data_shape, indices_shape = ((3, 5), (2,)) if not dynamic else (("n", "m"), ("k",))
    model = scatter_update_model(data_shape, indices_shape, 1, dtype=np.int32, index_dtype=np.int64, impl="native")
    builder, network, _ = parse_onnx(model)
    assert [layer.mode for layer in scatter_layers(network)] == [tensorrt().ScatterMode.ND]
    low = {"data": (3, 5), "indices": (2,), "updates": (3, 2)}
    build(builder, network, profile_for(network, low, low, {"data": (6, 10), "indices": (4,), "updates": (6, 4)}))


BAD = [
    # (data shape, indices shape, updates shape, axis)
    ((3, 5), (2,), (3, 3), 1),  # updates do not match indices
    ((3, 5), (2,), (2, 5), 2),  # axis out of range
    ((3, 5), (2,), (3, 2, 1), 1),  # updates of another rank
    ((), (1,), (1,), 0),  # data of rank 0
]


@pytest.mark.parametrize("bad", BAD)
def test_bad_inputs_fail_before_tensorrt_with_the_oracles_message(bad):
    shape, indices_shape, updates_shape, axis = bad
    data, updates = np.zeros(shape, np.float32), np.zeros(updates_shape, np.float32)
    indices = np.zeros(indices_shape, np.int32)
    with pytest.raises(oracle.ScatterInputError) as from_oracle:
        oracle.scatter_update(data, indices, updates, axis)
    _, network = new_network()
    tensors = [add_input(network, n, a.dtype, a.shape) for n, a in (("data", data), ("indices", indices), ("updates", updates))]
    with pytest.raises(oracle.ScatterInputError) as from_builder:
        add_scatter_update(network, *tensors, axis)
    assert str(from_builder.value) == str(from_oracle.value)
    assert network.num_layers == 0


def test_bad_types_and_axis_fail_before_tensorrt():
    _, network = new_network()
    data = add_input(network, "data", np.float32, (3, 5))
    updates = add_input(network, "updates", np.float32, (3, 2))
    with pytest.raises(oracle.ScatterInputError, match="'indices' must have an integer element type"):
        add_scatter_update(network, data, add_input(network, "indices", np.float32, (2,)), updates, 1)
    indices = add_input(network, "indices32", np.int32, (2,))
    with pytest.raises(oracle.ScatterInputError, match="'axis' must be a scalar or a 1-D tensor with one element"):
        add_scatter_update(network, data, indices, updates, np.array([1, 1]))
    with pytest.raises(oracle.ScatterInputError, match="'axis' must have an integer element type"):
        add_scatter_update(network, data, indices, updates, 1.0)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_forbidden_indices_write_inside_the_output(dynamic):
    """The oracle rejects indices outside [0, s-1]; the lowering clamps them (onnxruntime's ScatterND would raise)."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([-7, 9], dtype=np.int32)
    updates = -np.ones((3, 2), np.float32)
    with pytest.raises(oracle.ScatterInputError):
        oracle.scatter_update(data, indices, updates, 1)
    model = scatter_update_model(("a", "b") if dynamic else (3, 4), ("k",) if dynamic else (2,), 1, index_dtype=np.int32, impl="native")
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
    assert np.array_equal(got, oracle.scatter_update(data, np.clip(indices, 0, 3), updates, 1))


# -- a run-time axis: a graph input (or a computed tensor) decides which dimension is indexed


@st.composite
def runtime_axis_cases(draw):
    """Ranks 1-5, the axis fed as a 1-D or 0-D tensor (int32/int64, negative too), 0-D to 2-D indices."""
    rank = draw(st.integers(1, 5))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    indices_shape = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    if int(np.prod(indices_shape)) > shape[axis]:  # unique indices only: duplicates are undefined
        indices_shape = (shape[axis],)
    dynamic = draw(st.booleans())
    return shape, indices_shape, axis, draw(st.sampled_from([(1,), ()])), dynamic, draw(st.sampled_from(DTYPES)), draw(st.sampled_from([np.int32, np.int64])), draw(st.integers(0, 2**16))


def _runtime_axis_model(data_shape, indices_shape, updates_shape, axis_shape, dtype, index_dtype):
    graph = OnnxGraph()
    data = graph.add_input("data", dtype, data_shape)
    indices = graph.add_input("indices", index_dtype, indices_shape)
    updates = graph.add_input("updates", dtype, updates_shape)
    axis = graph.add_input("axis", index_dtype, axis_shape)
    return graph.model({"output": lower_scatter_update(graph, data, indices, updates, axis)})


@given(runtime_axis_cases())
@example(((3, 5), (2,), 1, (1,), False, np.float32, np.int32, 0))  # the spec's example 2
@example(((3, 5), (), -2, (), True, np.float32, np.int64, 0))  # a 0-D index and a 0-D axis
@example(((2, 3, 4, 2, 3), (2, 1), -3, (1,), True, np.int8, np.int64, 1))
@example(((2, 0, 3), (), 0, (1,), True, np.float32, np.int32, 0))  # empty data and updates
def test_runtime_axis_matches_the_oracle_in_onnxruntime(case):
    shape, indices_shape, axis, axis_shape, dynamic, dtype, index_dtype, seed = case
    rng = np.random.default_rng(seed)
    data = values(rng, shape, dtype)
    indices = rng.permutation(shape[axis])[: int(np.prod(indices_shape))].reshape(indices_shape).astype(index_dtype)
    norm = axis % len(shape)
    updates = values(rng, shape[:norm] + indices_shape + shape[norm + 1 :], dtype)
    expected = oracle.scatter_update(data, indices, updates, axis)

    shapes = [symbolic(s, [dynamic] * len(s), prefix)[0] for s, prefix in ((shape, "d"), (indices_shape, "i"), (updates.shape, "u"))]
    model = _runtime_axis_model(*shapes, axis_shape, dtype, index_dtype)
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates, "axis": np.full(axis_shape, axis, index_dtype)})
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_runtime_axes_the_spec_forbids_write_inside_the_output():
    """An axis out of range, updates that fit another axis than the one fed, or indices out of range:
    an unspecified result, never a failure or a write outside data."""
    data, indices, updates = np.zeros((3, 4), np.float32), np.array([2, 0]), np.arange(1, 7, dtype=np.float32).reshape(3, 2)
    model = scatter_update_model(("a", "b"), ("k",), 1, impl="native", runtime=["axis"])
    for axis, rows in ((5, [2, 0]), (-7, [2, 0]), (0, [2, 0]), (1, [-4, 9])):
        got = run_onnx(model, {"data": data, "indices": np.array(rows), "updates": updates, "axis": np.array([axis])})
        assert got.shape == data.shape and set(got.ravel()) <= set(updates.ravel()) | {0.0}, axis
    got = run_onnx(model, {"data": data, "indices": np.array([-4, 9]), "updates": updates, "axis": np.array([1])})
    assert np.array_equal(got, oracle.scatter_update(data, np.array([0, 3]), updates, 1))  # clamped, as with a constant axis
    assert np.array_equal(run_onnx(model, {"data": data, "indices": indices, "updates": updates, "axis": np.array([-1])}), oracle.scatter_update(data, indices, updates, 1))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("axis_shape", [(1,), ()], ids=["1-d", "0-d"])
def test_tensorrt_network_with_a_runtime_axis_builds(dynamic, axis_shape):
    """One flat ND scatter with an int64 destination per updated element; no value shapes anything."""
    trt = tensorrt()
    builder, network = new_network()
    data = add_input(network, "data", np.float16, (-1, 3, -1) if dynamic else (4, 3, 5))
    indices = add_input(network, "indices", np.int32, (-1,) if dynamic else (2,))
    updates = add_input(network, "updates", np.float16, (-1, 3, -1) if dynamic else (4, 3, 2))
    axis = add_input(network, "axis", np.int64, axis_shape)
    output = add_scatter_update(network, data, indices, updates, axis)
    network.mark_output(output)
    (scatter,) = scatter_layers(network)
    assert scatter.mode == trt.ScatterMode.ND and len(scatter.get_input(0).shape) == 1 and scatter.get_input(1).dtype == trt.int64
    assert tuple(output.shape) == tuple(data.shape) and output.dtype == trt.float16
    assert not axis.is_shape_tensor and not indices.is_shape_tensor
    low = {"data": (4, 3, 5), "indices": (2,), "updates": (4, 3, 2)}
    build(builder, network, profile_for(network, low, low, {"data": (8, 3, 10), "indices": (4,), "updates": (8, 3, 4)}))


def test_onnx_form_with_a_runtime_axis_parses_and_builds_in_tensorrt():
    model = scatter_update_model(("n", "m"), ("k",), 1, dtype=np.int32, index_dtype=np.int32, impl="native", runtime=["axis"])
    builder, network, _ = parse_onnx(model)
    low = {"data": (3, 5), "indices": (2,), "updates": (3, 2)}
    build(builder, network, profile_for(network, low, low, {"data": (6, 10), "indices": (4,), "updates": (6, 4)}))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("data_shape, indices_shape, axis", [((2, 1, 2, 1, 1, 1, 1, 5), (2,), -1), ((7,), (2, 1, 1, 1, 1, 1, 1, 3), 0)],
                         ids=["rank-8 data, last axis", "8-D indices"])
def test_a_grid_of_8_axes_lowers_within_tensorrts_8_dimensions(dynamic, data_shape, indices_shape, axis):
    """Rows over a grid of 8 axes (data's leading axes and the indices') with a row number each would be a 9-D tensor,
    which TensorRT (at most 8 dimensions) cannot hold: the grid is one axis there."""
    rng = np.random.default_rng(2)
    data = values(rng, data_shape, np.float32)
    size = data_shape[axis]
    indices = rng.permutation(size)[: int(np.prod(indices_shape))].reshape(indices_shape)  # unique: duplicates are undefined
    normalized = axis % len(data_shape)
    updates = values(rng, data_shape[:normalized] + indices_shape + data_shape[normalized + 1 :], np.float32)
    symbolic_data, _ = symbolic(data_shape, [dynamic] * len(data_shape), "d")
    symbolic_indices, _ = symbolic(indices_shape, [dynamic] * len(indices_shape), "i")
    model = scatter_update_model(symbolic_data, symbolic_indices, axis, impl="native")
    feeds = {"data": data, "indices": indices.astype(np.int64), "updates": updates}
    assert np.array_equal(run_onnx(model, feeds), oracle.scatter_update(data, indices, updates, axis))
    builder, network, _ = parse_onnx(model)
    shapes = {name: value.shape for name, value in feeds.items()}
    build(builder, network, profile_for(network, shapes, shapes, shapes))
    builder, network = new_network()
    out = add_scatter_update(network, add_input(network, "data", np.float32, data_shape), add_input(network, "indices", np.int64, indices_shape),
                             add_input(network, "updates", np.float32, updates.shape), axis)
    network.mark_output(out)
    build(builder, network)


@pytest.mark.parametrize("index_dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_indices_of_a_narrow_integer_type_are_cast_before_the_range_arithmetic(index_dtype):
    """int8, uint8, int16 and uint16 indices are cast to int64 first, as the other lowerings cast them: the clamp ran in
    their own type, which TensorRT builds no constant of (int8 'quantized', uint8 refused: the builder failed inside
    TensorRT) and onnxruntime has no Max kernel for (int16, uint16)."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([2, 0], index_dtype)
    updates = -np.arange(8, dtype=np.float32).reshape(2, 4)
    graph = OnnxGraph()
    inputs = [graph.add_input(name, array.dtype, array.shape) for name, array in (("data", data), ("indices", indices), ("updates", updates))]
    model = graph.model({"output": lower_scatter_update(graph, *inputs, 0)})
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
    np.testing.assert_array_equal(got, oracle.scatter_update(data, indices, updates, 0))
    if np.dtype(index_dtype).itemsize > 1:  # TensorRT has no 16-bit integer type
        return
    builder, network = new_network()
    output = add_scatter_update(network, add_input(network, "data", np.float32, (3, 4)), add_input(network, "indices", index_dtype, (2,)),
                                add_input(network, "updates", np.float32, (2, 4)), 0)
    output.name = "output"
    network.mark_output(output)
    assert build(builder, network)
