"""The network builders take ITensors for an op's tensors, ints for their axis attributes and ints, lists, NumPy arrays
or ITensors for their parameters; either passed where the other is wanted is refused by name, before TensorRT is called."""

import numpy as np
import pytest
from lowering_support import plugin_calls  # noqa: F401 (fixture)

from trt_scatter.backend import tensorrt
from trt_scatter.backend import new_builder
from trt_scatter.networks import (add_scatter_elements, add_scatter_elements_reduce, add_scatter_nd, add_scatter_nd_reduce, add_scatter_update,
                                  add_slice_scatter, add_tensor_scatter)
from trt_scatter.oracle import ScatterInputError

trt = tensorrt()
TENSOR_RULE = "must be an ITensor of the network (an array becomes one with network.add_constant(shape, array).get_output(0))"
CONSTANT_RULE = "must be an int (a Python or NumPy integer): its value is used when the network is built"


@pytest.fixture
def net():
    network = new_builder().create_network(0)
    tensors = {
        "data": network.add_input("data", trt.float32, (4, 5)),
        "updates": network.add_input("updates", trt.float32, (4, 3)),
        "indices": network.add_input("indices", trt.int32, (2,)),
        "rows": network.add_input("rows", trt.float32, (2, 5)),
    }
    return network, tensors


CASES = [
    ("slice-scatter-data", lambda n, t: add_slice_scatter(n, np.zeros((4, 5), np.float32), t["updates"], [0], [3], [1], [1]),
     "slice_scatter: 'data' " + TENSOR_RULE + " (got ndarray float32 (4, 5))"),
    ("slice-scatter-updates-list", lambda n, t: add_slice_scatter(n, t["data"], [[1.0]], [0], [3], [1], [1]),
     "slice_scatter: 'updates' " + TENSOR_RULE + " (got list)"),
    ("slice-scatter-start", lambda n, t: add_slice_scatter(n, t["data"], t["updates"], t["rows"], [3], [1], [1]),  # run-time start: an int tensor
     "slice_scatter: 'start' must have an integer element type (got float32)"),
    ("slice-scatter-start-none", lambda n, t: add_slice_scatter(n, t["data"], t["updates"], None, [3], [1], [1]),
     "slice_scatter: 'start' must be given (1-D integers) (got None)"),
    ("slice-scatter-stop-string", lambda n, t: add_slice_scatter(n, t["data"], t["updates"], [0], "3", [1], [1]),
     "slice_scatter: 'stop' must have an integer element type (got str)"),
    ("slice-scatter-plugin-step-none", lambda n, t: add_slice_scatter(n, t["data"], t["updates"], [0], [3], None, [1], impl="plugin"),
     "slice_scatter: 'step' must be given (1-D integers) (got None)"),
    ("scatter-update-axis-none", lambda n, t: add_scatter_update(n, t["data"], t["indices"], t["rows"], None),
     "scatter_update: 'axis' must be given (an integer) (got None)"),
    ("scatter-update-indices", lambda n, t: add_scatter_update(n, t["data"], np.array([0, 1]), t["rows"], 0),
     "scatter_update: 'indices' " + TENSOR_RULE + " (got ndarray int64 (2,))"),
    ("scatter-elements-axis", lambda n, t: add_scatter_elements(n, t["data"], t["indices"], t["updates"], t["indices"]),
     "scatter_elements: 'axis' " + CONSTANT_RULE + " (got ITensor 'indices')"),
    ("tensor-scatter-axis", lambda n, t: add_tensor_scatter(n, t["data"], t["updates"], None, t["indices"]),
     "tensor_scatter: 'axis' " + CONSTANT_RULE + " (got ITensor 'indices')"),
    ("tensor-scatter-mode", lambda n, t: add_tensor_scatter(n, t["data"], t["updates"], None, 1, t["indices"]),
     "tensor_scatter: 'mode' must be 'linear' or 'circular' (a string attribute) (got ITensor 'indices')"),
    ("scatter-elements-updates", lambda n, t: add_scatter_elements(n, t["data"], t["indices"], np.zeros(2), 0),
     "scatter_elements: 'updates' " + TENSOR_RULE + " (got ndarray float64 (2,))"),
    ("scatter-nd-indices", lambda n, t: add_scatter_nd(n, t["data"], np.zeros((2, 1), np.int64), t["rows"]),
     "scatter_nd: 'indices' " + TENSOR_RULE + " (got ndarray int64 (2, 1))"),
    # The plugins' kernels read int32 and int64 indices only (the native lowerings cast any integer type).
    ("slice-scatter-plugin-int8-start", lambda n, t: add_slice_scatter(n, t["data"], t["updates"], n.add_input("s", trt.int8, (1,)), [3], [1], [1], impl="plugin"),
     "slice_scatter: 'start' must be int32 or int64 (got int8)"),
    ("scatter-update-plugin-uint8-indices", lambda n, t: add_scatter_update(n, t["data"], n.add_input("i", trt.uint8, (2,)), t["rows"], 0, impl="plugin"),
     "scatter_update: 'indices' must be int32 or int64 (got uint8)"),
]


@pytest.mark.parametrize("add, message", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_swapped_arguments_are_refused_by_name(net, add, message):
    network, tensors = net
    layers = network.num_layers
    with pytest.raises(ScatterInputError) as caught:
        add(network, tensors)
    assert str(caught.value) == message
    assert network.num_layers == layers  # refused before anything was added


def test_the_right_kinds_still_build(net):
    network, t = net
    add_slice_scatter(network, t["data"], t["updates"], np.array([0]), [3], [1], axes=[1])
    add_scatter_update(network, t["data"], t["indices"], t["rows"], np.array(0))
    assert network.num_layers > 0


@pytest.mark.parametrize("network", [None, "network", object()])
def test_a_network_that_is_not_one_is_refused_in_one_line(net, network):
    _, t = net
    with pytest.raises(ScatterInputError) as caught:  # named by the op, as its other arguments are
        add_slice_scatter(network, t["data"], t["updates"], [0], [3], [1], [1])
    assert str(caught.value) == f"slice_scatter: 'network' must be a TensorRT INetworkDefinition (got {type(network).__name__})"


@pytest.mark.parametrize("add", [
    lambda n, foreign, t: add_slice_scatter(n, foreign, t["updates"], [0], [5], [2], [1]),
    lambda n, foreign, t: add_scatter_elements(n, t["data"], t["indices"], foreign, 0),
], ids=["data", "updates"])
def test_a_tensor_of_another_network_is_refused_by_name(net, add):
    """TensorRT logs a usage error and returns no layer for it, and the builder failed later on a None."""
    network, tensors = net
    other = new_builder().create_network(0)
    foreign = other.add_identity(other.add_input("data", trt.float32, (4, 5))).get_output(0)
    layers = network.num_layers
    with pytest.raises(ScatterInputError, match=r"must be an ITensor of this network \(it is another network's\)"):
        add(network, foreign, tensors)
    assert network.num_layers == layers
    made = network.add_identity(tensors["data"]).get_output(0)  # one of its own layers' outputs is its own
    network.mark_output(add_slice_scatter(network, made, tensors["updates"], [0], [5], [2], [1]))


@pytest.mark.parametrize("add, name", [
    (lambda n, foreign, t: add_slice_scatter(n, t["data"], t["updates"], foreign, [5], [2], [1]), "start"),
    (lambda n, foreign, t: add_slice_scatter(n, t["data"], t["updates"], [0], [5], [2], foreign), "axes"),
    (lambda n, foreign, t: add_scatter_update(n, t["data"], n.add_input("picked", trt.int64, (2,)), n.add_input("picked_rows", trt.float32, (2, 5)), foreign),
     "axis"),
])
def test_a_parameter_tensor_of_another_network_is_refused_by_name(net, add, name):
    """start/stop/step/axes and ScatterUpdate's axis may be ITensors: another network's is refused before any layer
    (TensorRT logged a usage error, and the builder failed on a None with an AttributeError)."""
    network, tensors = net
    other = new_builder().create_network(0)
    foreign = other.add_input("parameter", trt.int64, (1,))
    layers = network.num_layers
    with pytest.raises(ScatterInputError, match=rf"'{name}' must be an ITensor of this network \(it is another network's\)"):
        add(network, foreign, tensors)
    assert network.num_layers == layers


@pytest.mark.parametrize("type_name", [name for name in ("fp8", "int4", "fp4", "e8m0") if hasattr(trt, name)])
def test_element_types_numpy_lacks_are_refused_by_name(net, type_name):
    """TensorRT's fp8/int4/fp4/e8m0 have no NumPy type: one line naming the input (it was a TypeError naming neither)."""
    network, tensors = net
    data = network.add_input(f"{type_name}_data", getattr(trt, type_name), (4, 5))
    with pytest.raises(ScatterInputError, match=rf"^scatter_elements: 'data' must have an element type NumPy has \(bool, integers, floats, "
                                                rf"bfloat16\) \(got DataType.{type_name.upper()}\)$"):
        add_scatter_elements(network, data, tensors["indices"], data, 0)


UINT8_RULE = "must not be uint8 for TensorRT's own layers (IScatterLayer has no uint8): cast the element inputs to int32 and the output back (got uint8)"


@pytest.mark.parametrize("add, message", [
    (lambda n, d, u, i: add_scatter_elements(n, d, i, u, 0), "scatter_elements: 'data' "),
    (lambda n, d, u, i: add_scatter_nd(n, d, n.add_input("rows", trt.int64, (2, 1)), u), "scatter_nd: 'data' "),
    (lambda n, d, u, i: add_scatter_update(n, d, n.add_input("rows", trt.int64, (2,)), u, 0), "scatter_update: 'data' "),
    (lambda n, d, u, i: add_slice_scatter(n, d, u, [0], [2], [1], [0]), "slice_scatter: 'data' "),
], ids=["scatter_elements", "scatter_nd", "scatter_update", "slice_scatter"])
def test_uint8_data_is_refused_by_name_before_any_layer(add, message):
    """TensorRT's IScatterLayer has no uint8: the native builders say so before they add a layer."""
    network = new_builder().create_network(0)
    data, updates = network.add_input("data", trt.uint8, (4, 3)), network.add_input("updates", trt.uint8, (2, 3))
    indices = network.add_input("indices", trt.int64, (2, 3))
    with pytest.raises(ScatterInputError) as caught:
        add(network, data, updates, indices)
    assert str(caught.value) == message + UINT8_RULE
    assert network.num_layers == 0


@pytest.mark.parametrize("add, op", [
    (lambda n, t: add_slice_scatter(n, t["data"], t["updates"], [0], [3], [1], [1], impl="cuda"), "slice_scatter"),
    (lambda n, t: add_scatter_update(n, t["data"], t["indices"], t["rows"], 0, impl="cuda"), "scatter_update"),
    (lambda n, t: add_tensor_scatter(n, t["data"], t["updates"], impl="cuda"), "tensor_scatter"),
    (lambda n, t: add_scatter_elements_reduce(n, t["data"], t["indices"], t["rows"], impl="cuda"), "scatter_elements_reduce"),
    (lambda n, t: add_scatter_nd_reduce(n, t["data"], t["indices"], t["rows"], impl="cuda"), "scatter_nd_reduce"),
], ids=["slice_scatter", "scatter_update", "tensor_scatter", "scatter_elements_reduce", "scatter_nd_reduce"])
def test_an_unknown_impl_is_refused_by_name_in_one_format(net, add, op):
    network, tensors = net
    with pytest.raises(ScatterInputError, match=rf"^{op}: 'impl' must be one of '\w+', '\w+' \(got 'cuda'\)$"):
        add(network, tensors)
    assert network.num_layers == 0


def _constant(network, values):
    values = np.asarray(values, np.int64)
    return network.add_constant(values.shape, values).get_output(0)


FIXED = [  # (id, builder over (network, data (4, 3), rows (1, 3), cache (2, 1, 8, 4), update (2, 1, 2, 4), constant), message)
    ("scatter_elements", lambda n, d, r, c, u, k: add_scatter_elements(n, d, k([[7, 0, 1]]), r, 0),
     "scatter_elements: 'indices' values must be in [-4, 3] for a dimension of size 4 (got 7)"),
    ("scatter_nd", lambda n, d, r, c, u, k: add_scatter_nd(n, d, k([[-5]]), r),
     "scatter_nd: 'indices' values must be in [-4, 3] for a dimension of size 4 (got -5)"),
    ("scatter_update", lambda n, d, r, c, u, k: add_scatter_update(n, d, k([4]), r, 0),
     "scatter_update: 'indices' values must be in [0, 3] for a dimension of size 4 (got 4)"),
    ("scatter_update-axis", lambda n, d, r, c, u, k: add_scatter_update(n, d, k([1]), r, k(5), impl="plugin"),
     "scatter_update: 'axis' must be in [-2, 1] for 'data' of rank 2 (got 5)"),
    ("slice_scatter-step", lambda n, d, r, c, u, k: add_slice_scatter(n, d, r, k([0]), k([1]), k([0]), k([0])),
     "slice_scatter: 'step' must not contain 0 (got [0])"),
    ("tensor_scatter", lambda n, d, r, c, u, k: add_tensor_scatter(n, c, u, k([7, 0])),
     "tensor_scatter: 'write_indices' values must be at most max_sequence_length - sequence_length = 8 - 2 in linear mode "
     "(the update must fit) (got 7)"),
    ("scatter_elements_reduce", lambda n, d, r, c, u, k: add_scatter_elements_reduce(n, d, k([[4, 0, 0]]), r, impl="native"),
     "scatter_elements_reduce: 'indices' values must be in [-4, 3] for a dimension of size 4 (got 4)"),
    ("scatter_nd_reduce", lambda n, d, r, c, u, k: add_scatter_nd_reduce(n, d, k([[4]]), r),
     "scatter_nd_reduce: 'indices' values must be in [-4, 3] for a dimension of size 4 (got 4)"),
]


def _fixed_network():
    network = new_builder().create_network(0)
    return (network, network.add_input("data", trt.float32, (4, 3)), network.add_input("rows", trt.float32, (1, 3)),
            network.add_input("cache", trt.float32, (2, 1, 8, 4)), network.add_input("update", trt.float32, (2, 1, 2, 4)))


@pytest.mark.parametrize("add, message", [case[1:] for case in FIXED], ids=[case[0] for case in FIXED])
def test_values_a_constant_layer_fixes_are_held_to_the_rules_a_models_constants_are(add, message):
    """Indices (and parameters) made by network.add_constant are known when the network is built: out of range they are
    refused in the line validation gives a model's initializer, not clamped into a write the spec leaves undefined."""
    network, data, rows, cache, update = _fixed_network()
    with pytest.raises(ScatterInputError) as caught:
        add(network, data, rows, cache, update, lambda values: _constant(network, values))
    assert str(caught.value) == message


def test_constant_layer_values_in_range_build_and_a_computed_index_is_left_to_the_run():
    network, data, rows, cache, update = _fixed_network()
    k = lambda values: _constant(network, values)  # noqa: E731
    outputs = [add_scatter_elements(network, data, k([[-4, 0, 3]]), rows, 0), add_scatter_nd(network, data, k([[3]]), rows),
               add_scatter_update(network, data, k([3]), rows, k(0)), add_slice_scatter(network, data, rows, k([1]), k([2]), k([1]), k([0])),
               add_tensor_scatter(network, cache, update, k([6, 0]))]
    computed = network.add_elementwise(k([[9, 9, 9]]), k([[1, 1, 1]]), trt.ElementWiseOperation.SUM).get_output(0)  # not a constant layer's
    outputs.append(add_scatter_elements(network, data, computed, rows, 0))
    for output in outputs:
        network.mark_output(output)
    assert network.num_outputs == 6


def test_the_plugins_get_their_fields_as_the_rules_read_them(net, plugin_calls):
    """include_self=1.0, reduction=b"max" and mode=b"circular" pass the oracle's rules, which read them as 1, "max" and
    "circular"; the builders handed the plugin the values as given, which full TensorRT's plugin fields refuse
    (TypeError: plugin field 'include_self' must be an int or a str)."""
    network, t = net
    cache, update = network.add_input("cache", trt.float32, (2, 1, 8, 4)), network.add_input("update", trt.float32, (2, 1, 2, 4))
    rows = network.add_input("nd_rows", trt.int64, (1, 1))
    add_scatter_elements_reduce(network, t["data"], network.add_input("i", trt.int64, (4, 5)), t["data"], reduction=b"max", include_self=1.0)
    add_scatter_nd_reduce(network, t["data"], rows, network.add_input("r", trt.float32, (1, 5)), reduction=b"mul", include_self=np.int64(0))
    add_tensor_scatter(network, cache, update, mode=b"circular", impl="plugin")
    fields = [call[2] for call in plugin_calls]
    assert fields == [{"axis": 0, "reduction": "max", "include_self": 1}, {"reduction": "mul", "include_self": 0}, {"axis": 2, "mode": "circular"}]
    assert [type(value) for field in fields for value in field.values()] == [int, str, int, str, int, int, str]


def test_constant_layers_of_other_types_are_left_to_the_builders_own_rules():
    """Only integer constants set a rule's values: bfloat16 data from a constant layer (whose weights are no NumPy array)
    builds, and float indices from one are refused for their type, not read as integers ('got 4' for 4.5)."""
    import ml_dtypes

    network, data, rows, cache, update = _fixed_network()
    weights = np.zeros((4, 3), ml_dtypes.bfloat16)
    constant = network.add_constant((4, 3), trt.Weights(trt.bfloat16, weights.ctypes.data, weights.size)).get_output(0)
    row = network.add_input("bf16_rows", trt.bfloat16, (1, 3))
    network.mark_output(add_scatter_elements(network, constant, _constant(network, [[3, 0, 1]]), row, 0))
    floats = network.add_constant((1,), np.array([4.5], np.float32)).get_output(0)
    with pytest.raises(ScatterInputError, match=r"^scatter_update: 'indices' must have an integer element type \(got float32\)$"):
        add_scatter_update(network, data, floats, rows, 0)


def test_a_refusal_after_run_time_lengths_leaves_the_network_as_it_was():
    """start/stop/step of run-time length without axes cannot say how many axes are sliced: refused, with no layer
    added (the length assertions came first and stayed behind)."""
    network = new_builder().create_network(0)
    data, rows = network.add_input("data", trt.float32, (4, 5)), network.add_input("rows", trt.float32, (2, 5))
    start, stop, step = (network.add_input(name, trt.int64, (-1,)) for name in ("start", "stop", "step"))
    with pytest.raises(ScatterInputError, match=r"^slice_scatter: 'start' must have a static length"):
        add_slice_scatter(network, data, rows, start, stop, step)
    assert network.num_layers == 0
