"""add_scatter_nd: ND-mode IScatterLayer with negative indices wrapped, checked against the oracle."""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from lowering_support import add_input, build, builds_or_refuses, layers, new_network, parse_onnx, profile_for, run_onnx, scatter_layers, symbolic, values

from trt_scatter import oracle
from trt_scatter.backend import tensorrt
from trt_scatter.networks import add_scatter_nd, lower_scatter_nd
from trt_scatter.networks.examples import EXAMPLES, example_inputs
from trt_scatter.networks.graph import OnnxGraph

DTYPES = [np.float32, np.float16, np.int8, np.int32, np.int64, np.bool_]  # onnxruntime takes no bfloat16 from Python


@st.composite
def nd_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    k = draw(st.integers(1, rank))
    rows = int(np.prod(shape[:k]))
    batch = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    if int(np.prod(batch)) > rows:  # unique rows only: duplicates are undefined
        batch = (rows,)
    dynamic = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    return shape, batch, k, dynamic, draw(st.sampled_from(DTYPES)), draw(st.sampled_from([np.int32, np.int64])), draw(st.integers(0, 2**16))


@given(nd_cases())
@example(((8,), (4,), 1, [False], np.float32, np.int32, 0))
def test_builder_matches_oracle_with_negative_indices(case):
    shape, batch, k, dynamic, dtype, index_dtype, seed = case
    rng = np.random.default_rng(seed)
    flat = rng.permutation(int(np.prod(shape[:k])))[: int(np.prod(batch))]
    indices = np.stack(np.unravel_index(flat, shape[:k]), axis=-1).reshape(batch + (k,))
    indices = np.where(rng.random(indices.shape) < 0.5, indices - np.array(shape[:k]), indices).astype(index_dtype)
    data = values(rng, shape, dtype)
    updates = values(rng, batch + shape[k:], dtype)
    expected = oracle.scatter_nd(data, indices, updates)

    graph = OnnxGraph()
    graph_data = graph.add_input("data", dtype, symbolic(shape, dynamic, "d")[0])
    graph_indices = graph.add_input("indices", index_dtype, tuple(f"b{i}" if dynamic[0] else d for i, d in enumerate(batch)) + (k,))
    graph_updates = graph.add_input("updates", dtype, (-1,) * len(updates.shape))
    model = graph.model({"output": lower_scatter_nd(graph, graph_data, graph_indices, graph_updates)})
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_tensorrt_network_builds(dynamic, index_dtype):
    trt = tensorrt()
    builder, network = new_network()
    flags = [dynamic] * 3
    data = add_input(network, "data", np.float32, symbolic((4, 3, 5), flags, "d")[1])
    indices = add_input(network, "indices", index_dtype, (-1 if dynamic else 2, 2))
    updates = add_input(network, "updates", np.float32, symbolic((2, 5), flags, "u")[1])
    network.mark_output(add_scatter_nd(network, data, indices, updates))
    (scatter,) = scatter_layers(network)
    assert scatter.mode == trt.ScatterMode.ND and scatter.get_input(1).dtype == indices.dtype
    assert trt.LayerType.SELECT in {layer.type for layer in layers(network)}
    low = {"data": (4, 3, 5), "indices": (2, 2), "updates": (2, 5)}
    build(builder, network, profile_for(network, low, low, {"data": (8, 6, 5), "indices": (4, 2), "updates": (4, 5)}))


def test_example_network_is_the_specs_and_builds_static_and_dynamic():
    inputs = example_inputs("scatter_nd")
    # ScatterNDUpdate-3's example 1.
    assert oracle.scatter_nd(inputs["data"], inputs["indices"], inputs["updates"]).tolist() == [1, 11, 3, 10, 9, 6, 7, 12]
    for dynamic in (False, True):
        builder, network = new_network()
        profile = EXAMPLES["scatter_nd"](network, dynamic=dynamic)
        assert network.get_input(1).shape[-1] == 1  # k stays static
        build(builder, network, profile)


def test_onnx_parser_on_the_builders_onnx_form():
    graph = OnnxGraph()
    data = graph.add_input("data", np.float32, ("n", 3))
    indices = graph.add_input("indices", np.int32, ("b", 2))
    updates = graph.add_input("updates", np.float32, ("b",))
    builder, network, _ = parse_onnx(graph.model({"output": lower_scatter_nd(graph, data, indices, updates)}))
    low = {"data": (4, 3), "indices": (2, 2), "updates": (2,)}
    build(builder, network, profile_for(network, low, low, {"data": (8, 3), "indices": (4, 2), "updates": (4,)}))


BAD = [
    # (data shape, indices shape, updates shape)
    ((4, 3), (2, 3), (2,)),  # k larger than data's rank
    ((4, 3), (2, 1), (2, 4)),  # updates not indices.shape[:-1] + data.shape[k:]
    ((4, 3), (), ()),  # indices of rank 0
]


@pytest.mark.parametrize("bad", BAD)
def test_bad_inputs_fail_before_tensorrt_with_the_oracles_message(bad):
    shape, indices_shape, updates_shape = bad
    arrays = {"data": np.zeros(shape, np.float32), "indices": np.zeros(indices_shape, np.int32), "updates": np.zeros(updates_shape, np.float32)}
    with pytest.raises(oracle.ScatterInputError) as from_oracle:
        oracle.scatter_nd(*arrays.values())
    _, network = new_network()
    with pytest.raises(oracle.ScatterInputError) as from_builder:
        add_scatter_nd(network, *(add_input(network, n, a.dtype, a.shape) for n, a in arrays.items()))
    assert str(from_builder.value) == str(from_oracle.value)
    assert network.num_layers == 0


def test_indices_last_dimension_must_be_known_when_building():
    _, network = new_network()
    with pytest.raises(oracle.ScatterInputError, match=r"last dimension must be a static size: it is the number of axes each row addresses.*shape \(2, \?\)"):
        add_scatter_nd(network, add_input(network, "data", np.float32, (4, 3)), add_input(network, "indices", np.int32, (2, -1)), add_input(network, "updates", np.float32, (-1,)))


def test_forbidden_indices_write_inside_the_output():
    """Values outside [-s_j, s_j-1] (the oracle rejects them) are clamped per column; onnxruntime would raise."""
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    indices = np.array([[9, -1], [-8, 5]], dtype=np.int32)
    updates = -np.ones(2, np.float32)
    with pytest.raises(oracle.ScatterInputError):
        oracle.scatter_nd(data, indices, updates)
    graph = OnnxGraph()
    inputs = [graph.add_input("data", np.float32, ("n", "m")), graph.add_input("indices", np.int32, ("b", 2)), graph.add_input("updates", np.float32, ("b",))]
    got = run_onnx(graph.model({"output": lower_scatter_nd(graph, *inputs)}), {"data": data, "indices": indices, "updates": updates})
    assert np.array_equal(got, oracle.scatter_nd(data, np.array([[3, 2], [0, 2]]), updates))


def test_example_inputs_of_rows_with_no_coordinates_write_data_whole_once():
    """k = 0: each index row writes the whole of data. One row gets valid inputs the oracle takes; two write one target
    twice (undefined) and are refused as the oracle's valid inputs are (NumPy failed on a 0-d unravel before)."""
    inputs = example_inputs("scatter_nd", data_shape=(4, 3), indices_shape=(1, 0))
    assert inputs["indices"].shape == (1, 0)
    np.testing.assert_array_equal(oracle.scatter_nd(inputs["data"], inputs["indices"], inputs["updates"]), inputs["updates"][0])
    with pytest.raises(oracle.ScatterInputError, match=r"^scatter_nd: 'indices' must have at most 1 rows for distinct rows \(got shape \(2, 0\)\)$"):
        example_inputs("scatter_nd", data_shape=(4, 3), indices_shape=(2, 0))


@pytest.mark.parametrize("rows, message", [
    (2, "the profile's smallest shapes break a rule the network asserts: scatter_nd: 'indices' values must be in [-s, s-1] where s is "
        "data's dimension 1 when the network runs (its constant values lie in [2, 5])"),
    (6, None),
], ids=["out-of-range-at-the-smallest", "in-range-at-every-bound"])
def test_constant_indices_that_a_profile_puts_out_of_range_are_refused(rows, message):
    """Constant rows [[1, 5], [0, 2]] into data (3, W): column 1 needs W >= 6, column 0 the static 3 rows (checked when
    the network is built). Where the profile allows W < 6, the builder's clamp wrote (1, W-1) instead, without a word."""


    def load():
        builder, network = new_network()
        data, updates = add_input(network, "data", np.float32, (3, -1)), add_input(network, "updates", np.float32, (2,))
        indices = network.add_constant((2, 2), np.array([[1, 5], [0, 2]], np.int64)).get_output(0)
        network.mark_output(add_scatter_nd(network, data, indices, updates))
        return builder, network

    profile = {"data": ((3, rows), (3, 6), (3, 8))}
    builds_or_refuses(load, profile, message)
