"""The two-backend graph interface: each primitive is one TensorRT layer and computes in ONNX what NumPy computes."""

import logging

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lowering_support import add_input, build, layers, new_network, run_onnx, scatter_layers

from trt_scatter.backend import tensorrt
from trt_scatter.networks import add_scatter_elements, add_scatter_nd, add_scatter_update, add_slice_scatter
from trt_scatter.dtypes import from_tensorrt as numpy_dtype, to_tensorrt as trt_dtype
from trt_scatter.networks.graph import OnnxGraph, TensorRTGraph
from trt_scatter.oracle import ScatterInputError
from trt_scatter.dtypes import BFLOAT16


def _run(build_graph, feeds, input_shapes=None):
    """Builds an OnnxGraph with inputs named like ``feeds`` (shapes: input_shapes or the arrays'), runs it."""
    graph = OnnxGraph()
    inputs = {name: graph.add_input(name, array.dtype, (input_shapes or {}).get(name, array.shape)) for name, array in feeds.items()}
    return run_onnx(graph.model({"output": build_graph(graph, **inputs)}), feeds)


def test_binary_ops_and_where_match_numpy():
    a = np.array([[-3, 0, 7]], dtype=np.int64)
    b = np.array([[2], [5]], dtype=np.int64)
    expected = {"add": a + b, "sub": a - b, "mul": a * b, "min": np.minimum(a, b), "max": np.maximum(a, b), "less": a < b}
    for op, want in expected.items():
        got = _run(lambda g, a, b, op=op: g.binary(op, a, b), {"a": a, "b": b})
        assert np.array_equal(got, want), op
    nonnegative = np.array([[0, 7, 9]], dtype=np.int64)
    assert np.array_equal(_run(lambda g, a, b: g.binary("div", a, b), {"a": nonnegative, "b": b}), nonnegative // b)
    got = _run(lambda g, a, b: g.where(g.binary("less", a, b), a, b), {"a": a, "b": b})
    assert np.array_equal(got, np.where(a < b, a, b))


def test_shape_gather_concat_reshape_cast():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert np.array_equal(_run(lambda g, x: g.shape(x), {"x": x}, {"x": ("a", "b", 4)}), [2, 3, 4])
    assert np.array_equal(_run(lambda g, x: g.gather(x, [2, 0], axis=1), {"x": x}), x[:, [2, 0]])
    assert np.array_equal(_run(lambda g, x: g.concat([x, x], axis=2), {"x": x}), np.concatenate([x, x], axis=2))
    assert np.array_equal(_run(lambda g, x: g.reshape(x, (2, -1)), {"x": x}), x.reshape(2, 12))
    assert _run(lambda g, x: g.reshape(g.gather(x, [], axis=1), (2, 0, 4)), {"x": x}).shape == (2, 0, 4)  # 0 is a size
    assert np.array_equal(_run(lambda g, x: g.reshape(x, g.constant(np.array([4, 6]))), {"x": x}), x.reshape(4, 6))
    got = _run(lambda g, x: g.cast(x, np.int32), {"x": x})
    assert got.dtype == np.int32 and np.array_equal(got, x.astype(np.int32))


@given(st.integers(0, 6))
def test_arange_on_a_run_time_length(count):
    """arange of a run-time length (Fill / Range) equals NumPy's for any length, 0 included."""
    x = np.zeros((count, 2), dtype=np.float32)
    got = _run(lambda g, x: g.arange(g.dim(x, 0)), {"x": x}, {"x": ("n", 2)})
    assert got.dtype == np.int64 and np.array_equal(got, np.arange(count))


@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.booleans())
def test_reductions_volume_and_strides_match_numpy(shape, dynamic):
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) - 5
    dims = {"x": tuple(f"d{i}" for i in range(len(shape)))} if dynamic else None
    assert np.array_equal(_run(lambda g, x: g.reduce("prod", x), {"x": x}, dims), np.prod(x, keepdims=True))
    assert np.array_equal(_run(lambda g, x: g.reduce("sum", x), {"x": x}, dims), np.sum(x, keepdims=True))
    assert _run(lambda g, x: g.as_tensor(g.volume(x)), {"x": x}, dims).tolist() == [x.size]
    assert _run(lambda g, x: g.vector(g.strides(x)), {"x": x}, dims).tolist() == [int(np.prod(shape[i + 1 :])) for i in range(len(shape))]
    assert np.array_equal(_run(lambda g, x: g.shape_vector(x), {"x": x}, dims), shape)


@given(st.lists(st.integers(-9, 9), min_size=1, max_size=4), st.integers(1, 5), st.sampled_from([np.int32, np.int64]))
def test_axes_in_range_count_negative_axes_from_the_end_and_clamp_the_rest(axes, rank, dtype):
    got = _run(lambda g, axes: g.axes_in_range(axes, rank), {"axes": np.array(axes, dtype)}, {"axes": ("n",)})
    assert got.dtype == np.int64 and got.tolist() == [min(max(a + rank if a < 0 else a, 0), rank - 1) for a in axes]


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.booleans())
def test_product_of_dimensions(shape, dynamic):
    x = np.zeros(shape, dtype=np.float32)

    def product(g, x):
        return g.as_tensor(g.product([g.dim(x, j) for j in range(len(shape))] + [3]))

    got = _run(product, {"x": x}, {"x": tuple(f"d{i}" for i in range(len(shape)))} if dynamic else None)
    assert got.tolist() == [3 * int(np.prod(shape))]


def test_dim_is_static_where_known_and_shares_one_shape_node():
    graph = OnnxGraph()
    x = graph.add_input("x", np.float32, (2, "n", "m"))
    assert graph.dim(x, 0) == 2
    graph.dim(x, 1), graph.dim(x, 2)
    assert [node.op_type for node in graph.nodes].count("Shape") == 1


@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.booleans())
def test_scatter_rows_writes_rows_of_the_flattened_leading_axes(rows, cols, depth, dynamic):
    """scatter_rows with pieces a (axis 0) and b (axis 1) writes updates[i, j] to data[a[i], b[j]]."""
    rng = np.random.default_rng(rows * 100 + cols * 10 + depth)
    data = rng.random((4, 3, depth)).astype(np.float32)
    a = rng.permutation(4)[:rows].astype(np.int64)
    b = rng.permutation(3)[:cols].astype(np.int64)
    updates = -rng.random((rows, cols, depth)).astype(np.float32)

    def scatter(g, data, a, b, updates):
        return g.scatter_rows(data, [(a, [g.dim(a, 0)]), (b, [g.dim(b, 0)])], updates)

    shapes = {"data": ("x", "y", "z"), "a": ("n",), "b": ("m",), "updates": ("n", "m", "z")} if dynamic else None
    got = _run(scatter, {"data": data, "a": a, "b": b, "updates": updates}, shapes)
    want = data.copy()
    want[np.ix_(a, b)] = updates
    assert np.array_equal(got, want)


@given(st.sampled_from([np.int32, np.int64]), st.booleans(), st.booleans())
def test_indices_in_range_wraps_negative_indices_and_clamps_the_rest(index_dtype, dynamic, negative):
    indices = np.array([[-9, -3, -1, 0, 2, 3, 40]], dtype=index_dtype)
    data = np.zeros((2, 3), dtype=np.float32)

    def in_range(g, indices, data):
        return g.indices_in_range("op", indices, data, [1], negative=negative)

    got = _run(in_range, {"indices": indices, "data": data}, {"data": ("a", "b")} if dynamic else None)
    want = [[0, 0, 2, 0, 2, 2, 2]] if negative else [[0, 0, 0, 0, 2, 2, 2]]
    assert got.dtype == index_dtype and np.array_equal(got, want)


def test_indices_in_range_of_a_0d_index_and_of_columns():
    def scalar(g, i, data):
        return g.indices_in_range("op", i, data, [0], negative=True)

    data = np.zeros((4, 2), np.float32)
    assert _run(scalar, {"i": np.array(-1, np.int64), "data": data}, {"data": ("n", 2)}).tolist() == 3

    def columns(g, i, data):
        return g.indices_in_range("op", i, data, [0, 1], negative=True)

    rows = np.array([[-1, -1], [5, 1], [-5, -3]], np.int32)
    assert _run(columns, {"i": rows, "data": data}).tolist() == [[3, 1], [3, 1], [0, 0]]


def test_tensorrt_backend_adds_one_layer_per_primitive_and_builds():
    """Each primitive adds its one layer of the table in networks/graph.py (plus constants for its parameters)."""
    trt = tensorrt()
    builder, network = new_network()
    graph = TensorRTGraph(network)
    data = add_input(network, "data", np.float32, (-1, 4))
    seen = []

    def added(layer_type, make):
        before = network.num_layers
        tensor = make()
        new = [network.get_layer(i).type for i in range(before, network.num_layers)]
        seen.append(([t for t in new if t != trt.LayerType.CONSTANT], [layer_type]))
        return tensor

    one = added(trt.LayerType.CONSTANT, lambda: graph.constant(np.array([1], dtype=np.int64)))
    seen[-1] = ([trt.LayerType.CONSTANT], [trt.LayerType.CONSTANT])  # a constant is a constant layer
    shape = added(trt.LayerType.SHAPE, lambda: graph.shape(data))
    rows = added(trt.LayerType.GATHER, lambda: graph.gather(shape, [0]))
    more = added(trt.LayerType.ELEMENTWISE, lambda: graph.binary("add", rows, one))
    less = added(trt.LayerType.ELEMENTWISE, lambda: graph.binary("less", rows, more))
    added(trt.LayerType.SELECT, lambda: graph.where(less, rows, more))
    both = added(trt.LayerType.CONCATENATION, lambda: graph.concat([rows, one]))
    added(trt.LayerType.SHUFFLE, lambda: graph.reshape(data, both))
    added(trt.LayerType.CAST, lambda: graph.cast(rows, np.int32))
    added(trt.LayerType.REDUCE, lambda: graph.reduce("prod", shape))
    count = added(trt.LayerType.FILL, lambda: graph.arange(rows))
    indices = graph.reshape(count, (-1, 1))
    output = added(trt.LayerType.SCATTER, lambda: graph.scatter(data, indices, data, "nd"))
    network.mark_output(output)
    for got, want in seen:
        assert got == want
    assert [layer.mode for layer in scatter_layers(network)] == [trt.ScatterMode.ND]
    assert len(layers(network)) == network.num_layers
    build(builder, network, {"data": ((1, 4), (2, 4), (3, 4))})


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "int32", "int64", "bool"])
def test_tensorrt_scatter_accepts_these_data_types(dtype):
    """The element types TensorRT(-RTX)'s IScatterLayer builds with, in both modes (uint8: see the next test)."""
    dtype = BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
    trt = tensorrt()
    for mode, indices_shape, updates_shape in (("element", (2, 5), (2, 5)), ("nd", (2, 1), (2, 5))):
        builder, network = new_network()
        graph = TensorRTGraph(network)
        data = add_input(network, "data", dtype, (4, 5))
        indices = add_input(network, "indices", np.int32, indices_shape)
        updates = add_input(network, "updates", dtype, updates_shape)
        output = graph.scatter(data, indices, updates, mode)
        network.mark_output(output)
        assert output.dtype == trt_dtype(dtype) and numpy_dtype(output.dtype) == dtype
        build(builder, network)
    assert trt.ScatterMode.ELEMENT != trt.ScatterMode.ND


def test_uint8_data_is_refused_before_tensorrt_builds():
    """TensorRT's IScatterLayer has no uint8 (the build would fail far from the call); ONNX's scatters have it."""
    _, network = new_network()
    graph = TensorRTGraph(network)
    with pytest.raises(ScatterInputError, match=r"^op: 'data' must not be uint8 for TensorRT's own layers"):
        graph.check_scatter_type("op", add_input(network, "data", np.uint8, (4,)))
    graph.check_scatter_type("op", add_input(network, "other", np.int8, (4,)))
    onnx_graph = OnnxGraph()
    onnx_graph.check_scatter_type("op", onnx_graph.add_input("data", np.uint8, (4,)))


def test_dtype_mapping_refuses_types_tensorrt_lacks():
    with pytest.raises(TypeError, match="float64"):
        trt_dtype(np.float64)
    with pytest.raises(TypeError):
        numpy_dtype(tensorrt().fp8)


def test_onnx_binary_operands_need_equal_ranks_like_tensorrt():
    graph = OnnxGraph()
    with pytest.raises(ValueError, match="equal ranks"):
        graph.binary("add", graph.add_input("a", np.int64, (2, 3)), graph.constant(np.array([1], dtype=np.int64)))


def test_a_graph_output_that_other_nodes_read_is_renamed_everywhere():
    """model() renames a value to its output name in the nodes that read it too."""
    def twice(g, x):
        y = g.binary("add", x, x)
        g.binary("mul", y, y)  # a reader of y that is not an output
        return y

    x = np.arange(3, dtype=np.int64)
    assert np.array_equal(_run(twice, {"x": x}), 2 * x)


class _WeaklyTyped:
    """A real network that says it is weakly typed, as full TensorRT's create_network(0) is (RTX's never are)."""

    def __init__(self, network):
        self._network = network

    def get_flag(self, flag):
        return False

    def __getattr__(self, name):
        return getattr(self._network, name)


def test_weakly_typed_networks_scatter_with_int32_indices(monkeypatch):
    """Full TensorRT 10.x (emulated: a BuilderFlag.FP16 and a network without the STRONGLY_TYPED flag)."""
    import trt_scatter.backend

    trt = tensorrt()
    builder, network = new_network()
    monkeypatch.setattr(trt_scatter.backend, "always_strongly_typed", lambda: False)
    graph = TensorRTGraph(_WeaklyTyped(network))
    data = add_input(network, "data", np.float32, (4, 2))
    rows = graph.reshape(graph.arange(3), (3, 1))
    network.mark_output(graph.scatter(data, rows, add_input(network, "updates", np.float32, (3, 2)), "nd"))
    (scatter,) = scatter_layers(network)
    assert scatter.get_input(1).dtype == trt.int32 and layers(network)[-2].type == trt.LayerType.CAST
    build(builder, network)
    assert TensorRTGraph(network)._strongly_typed()  # RTX: always strongly typed, int64 indices stay


@pytest.mark.skipif(hasattr(tensorrt().BuilderFlag, "FP16"), reason="full TensorRT 10.x has weakly typed networks")
def test_without_fp16_builder_flag_networks_are_strongly_typed_whatever_the_creation_flag_says():
    """TensorRT 11.x keeps NetworkDefinitionCreationFlag.STRONGLY_TYPED but ignores it: get_flag may say
    False of a network that is strongly typed. Its bindings (and TensorRT-RTX's) have no BuilderFlag.FP16."""
    builder, network = new_network()
    graph = TensorRTGraph(_WeaklyTyped(network))
    assert graph._strongly_typed()
    data = add_input(network, "data", np.float32, (4, 2))
    rows = graph.reshape(graph.arange(3), (3, 1))
    network.mark_output(graph.scatter(data, rows, add_input(network, "updates", np.float32, (3, 2)), "nd"))
    (scatter,) = scatter_layers(network)
    assert scatter.get_input(1).dtype == tensorrt().int64  # no cast to int32


# (builder, data shape with the indexed dimension -1, indices shape, updates shape): the data
# dimension that the indices index is known only at run time.
RUN_TIME_DIMENSION_CASES = {
    "scatter_elements": (lambda n, d, i, u: add_scatter_elements(n, d, i, u, axis=1), (2, -1), (2, -1), (2, -1)),
    "scatter_nd": (add_scatter_nd, (-1, 4), (-1, 1), (-1, 4)),
    "scatter_update": (lambda n, d, i, u: add_scatter_update(n, d, i, u, axis=0), (-1, 4), (-1,), (-1, 4)),
}


def _build_with_run_time_dimension(op, data_size, index_count, caplog):
    """Builds ``op`` for one profile where the indexed data dimension is ``data_size`` and indices
    have ``index_count`` entries along their dynamic dimension; returns (plan or None, error log)."""
    add, data_shape, indices_shape, updates_shape = RUN_TIME_DIMENSION_CASES[op]
    trt = tensorrt()
    builder, network = new_network()
    tensors = [add_input(network, n, t, s) for n, t, s in (("data", np.float32, data_shape), ("indices", np.int32, indices_shape), ("updates", np.float32, updates_shape))]
    network.mark_output(add(network, *tensors))
    assert trt.LayerType.ASSERTION in {layer.type for layer in layers(network)}
    config = builder.create_builder_config()
    profile = builder.create_optimization_profile()
    for tensor, shape in zip(tensors, (data_shape, indices_shape, updates_shape)):
        sizes = [data_size if tensor.name == "data" else index_count] * shape.count(-1)
        fixed = tuple(sizes.pop(0) if d < 0 else d for d in shape)
        profile.set_shape(tensor.name, fixed, fixed, fixed)
    config.add_optimization_profile(profile)
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="trt_scatter"):
        plan = builder.build_serialized_network(network, config)
    return plan, caplog.text


@pytest.mark.parametrize("op", sorted(RUN_TIME_DIMENSION_CASES))
def test_indices_into_a_dimension_that_is_0_at_run_time_fail_by_name(op, caplog):
    """Clamping cannot make a write into a dimension of size 0 safe: the network asserts that the
    indices are then empty. TensorRT evaluates the assertion at build time when the profile fixes
    the shapes, which is how it is tested here (no engine runs without a GPU)."""
    plan, errors = _build_with_run_time_dimension(op, data_size=0, index_count=2, caplog=caplog)
    assert plan is None and f"{op}: 'indices' must be empty when data's dimension" in errors
    for data_size, index_count in ((0, 0), (3, 2)):  # empty indices, or a dimension that is not 0
        plan, errors = _build_with_run_time_dimension(op, data_size, index_count, caplog)
        assert plan is not None, errors


@pytest.mark.parametrize("axis, data_shape", [(1, (-1, 3)), (1, (2, -1))], ids=["off-the-axis", "on-the-axis"])
def test_scatter_elements_indices_larger_than_data_at_run_time_fail_by_name(axis, data_shape, caplog):
    """Indices of a dimension larger than data's (ONNX forbids it off the axis; TensorRT's IScatterLayer on it too)
    where the shapes are known at run time only: an assertion names the rule, evaluated at build time where the profile
    fixes the shapes; indices no larger build."""
    trt = tensorrt()
    dynamic = data_shape.index(-1)

    def build(data_size, index_size):
        builder, network = new_network()
        shapes = {"data": data_shape, "indices": data_shape, "updates": data_shape}
        tensors = [add_input(network, name, np.int32 if name == "indices" else np.float32, shape) for name, shape in shapes.items()]
        network.mark_output(add_scatter_elements(network, *tensors, axis=axis))
        assert trt.LayerType.ASSERTION in {layer.type for layer in layers(network)}
        config, profile = builder.create_builder_config(), builder.create_optimization_profile()
        for tensor in tensors:
            fixed = tuple((data_size if tensor.name == "data" else index_size) if i == dynamic else d for i, d in enumerate(data_shape))
            profile.set_shape(tensor.name, fixed, fixed, fixed)
        config.add_optimization_profile(profile)
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="trt_scatter"):
            return builder.build_serialized_network(network, config), caplog.text

    plan, errors = build(data_size=2, index_size=3)
    assert plan is None and "scatter_elements: 'indices' dimensions must be at most data's when the network runs" in errors
    plan, errors = build(data_size=3, index_size=2)
    assert plan is not None, errors


def test_no_assertion_where_the_indexed_dimension_is_known():
    trt = tensorrt()
    _, network = new_network()
    data, indices, updates = (add_input(network, n, t, s) for n, t, s in (("data", np.float32, (3, -1)), ("indices", np.int64, (-1, 1)), ("updates", np.float32, (-1, -1))))
    network.mark_output(add_scatter_nd(network, data, indices, updates))
    asserted = []
    for layer in layers(network):
        if layer.type == trt.LayerType.ASSERTION:
            layer.__class__ = trt.IAssertionLayer  # the bindings' way to read a layer's own attributes
            asserted.append(layer.message)
    assert asserted == ["scatter_nd: 'updates' must have the shape indices.shape[:-1] + data.shape[indices.shape[-1]:]"]  # the dynamic updates' only


def _build_flat_scatter(add, data_rows, updates_rows, caplog):
    """Builds ``add`` (a lowering with a run-time axis) for data of ``data_rows`` rows and updates of
    ``updates_rows`` (rows of 4) fixed by the profile; returns (plan or None, error log)."""
    trt = tensorrt()
    builder, network = new_network()
    data, updates = add_input(network, "data", np.float32, (-1, 4)), add_input(network, "updates", np.float32, (-1, 4))
    indices, axis = add_input(network, "indices", np.int32, (-1,)), add_input(network, "axis", np.int64, (1,))
    network.mark_output(add(network, data, indices, updates, axis))
    assert trt.LayerType.ASSERTION in {layer.type for layer in layers(network)}
    config = builder.create_builder_config()
    profile = builder.create_optimization_profile()
    for name, shape in (("data", (data_rows, 4)), ("updates", (updates_rows, 4)), ("indices", (updates_rows,))):
        profile.set_shape(name, shape, shape, shape)
    config.add_optimization_profile(profile)
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="trt_scatter"):
        plan = builder.build_serialized_network(network, config)
    return plan, caplog.text


FLAT_SCATTERS = {
    "scatter_update": (add_scatter_update, "scatter_update: 'indices' must be empty when 'data' is empty at run time"),
    "slice_scatter": (lambda n, d, i, u, axis: add_slice_scatter(n, d, u, [0], [2], [1], axis), "slice_scatter: 'updates' must be empty when 'data' is empty at run time"),
}


@pytest.mark.parametrize("op", sorted(FLAT_SCATTERS))
def test_a_run_time_axis_into_data_that_is_empty_at_run_time_fails_by_name(op, caplog):
    """Destinations clamped into data cannot make a write into empty data safe: the network asserts
    that updates are then empty (decided at build time here, where the profile fixes the shapes)."""
    add, message = FLAT_SCATTERS[op]
    plan, errors = _build_flat_scatter(add, 0, 2, caplog)
    assert plan is None and message in errors
    for data_rows, updates_rows in ((0, 0), (3, 2)):
        plan, errors = _build_flat_scatter(add, data_rows, updates_rows, caplog)
        assert plan is not None, errors


@pytest.mark.parametrize("shape, dtype", [((0,), np.int64), ((0, 3), np.int32), ((2, 0, 5), np.float32)])
def test_an_empty_constant_has_its_shape_and_type(shape, dtype):
    """TensorRT refuses empty weights: the graph makes the empty tensor another way, of the same shape and type,
    and folds it like any constant."""
    _, network = new_network()
    graph = TensorRTGraph(network)
    tensor = graph.constant(np.zeros(shape, dtype))
    assert tuple(tensor.shape) == shape and numpy_dtype(tensor.dtype) == np.dtype(dtype)
    assert graph._constant_value(tensor).shape == shape  # folded on the host as the array it stands for


LENGTH_CASES = {  # inputs (name -> shape), builder over them; the run-time lengths of a wrong build, the message, those of a right one
    "scatter_update-axis": ({"data": (3, 4), "indices": (2,), "updates": (3, 2), "axis": (-1,)},
                            lambda n, t: add_scatter_update(n, t["data"], t["indices"], t["updates"], t["axis"]),
                            {"axis": 2}, "scatter_update: 'axis' must hold one value (an axis of data)", {"axis": 1}),
    "slice_scatter-axes": ({"data": (4, 5), "updates": (2, 5), "axes": (-1,)},
                           lambda n, t: add_slice_scatter(n, t["data"], t["updates"], [0], [2], [1], t["axes"]),
                           {"axes": 2}, "slice_scatter: 'axes' must have as many entries as 'start'", {"axes": 1}),
    "slice_scatter-start-stop": ({"data": (4, 5), "updates": (2, 5), "start": (-1,), "stop": (-1,)},
                                 lambda n, t: add_slice_scatter(n, t["data"], t["updates"], t["start"], t["stop"], t["start"], t["stop"]),
                                 {"start": 1, "stop": 2}, "slice_scatter: 'stop' must have as many entries as 'start'", {"start": 1, "stop": 1}),
}


@pytest.mark.parametrize("case", sorted(LENGTH_CASES))
def test_parameters_whose_length_is_known_at_run_time_only_assert_it_by_name(case, caplog):
    """An axis or a start/stop/step/axes vector of length ? (a network input of shape (-1,)): a wrong length failed in
    TensorRT's own words, naming a layer (broadcast dimensions must be conformable); an assertion names the rule, evaluated
    at build time where the profile fixes the length."""
    shapes, add, wrong, message, right = LENGTH_CASES[case]

    def build(lengths):
        builder, network = new_network()
        tensors = {name: add_input(network, name, np.int64 if len(shape) == 1 and name != "indices" else np.int32 if name == "indices" else np.float32, shape)
                   for name, shape in shapes.items()}
        network.mark_output(add(network, tensors))
        config, profile = builder.create_builder_config(), builder.create_optimization_profile()
        for name, length in lengths.items():
            profile.set_shape(name, (length,), (length,), (length,))
        config.add_optimization_profile(profile)
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="trt_scatter"):
            return builder.build_serialized_network(network, config), caplog.text

    plan, errors = build(wrong)
    assert plan is None and message in errors, errors
    plan, errors = build(right)
    assert plan is not None, errors


def test_an_onnx_graph_builds_no_dimensions_for_an_assertion_it_cannot_hold():
    """The builders' run-time rules of updates' shape: given as a function, the dimensions (Shape and Gather nodes) are
    made only where the backend asserts; a lowered ScatterUpdate had gained three dead nodes."""
    from trt_scatter.onnx_models import scatter_update_model
    from trt_scatter.passes.lower import lower

    graph = OnnxGraph()
    tensor = graph.add_input("x", np.float32, ("n",))
    graph.assert_shape("op", "x", tensor, lambda: pytest.fail("the dimensions were built"), "rule")
    lowered = lower(scatter_update_model(("a", "b", 5), ("k",), 0))
    shapes_of = [node.input[0] for node in lowered.graph.node if node.op_type == "Shape"]
    assert "indices" not in shapes_of, shapes_of  # the rule's dims of indices, which no node read
