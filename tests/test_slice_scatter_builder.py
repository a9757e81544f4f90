"""add_slice_scatter's two implementations and the slice_scatter example network."""

import numpy as np
import pytest
from lowering_support import INT64_MAX, add_input, build, layers, new_network, scatter_layers
from lowering_support import plugin_calls  # noqa: F401  (a fixture)

from trt_scatter import oracle
from trt_scatter.backend import tensorrt
from trt_scatter.networks import add_slice_scatter
from trt_scatter.networks.examples import EXAMPLES, example_inputs


def _constant_values(network, tensor):
    trt = tensorrt()
    for layer in layers(network):
        if layer.type == trt.LayerType.CONSTANT and layer.get_output(0).name == tensor.name:
            layer.__class__ = trt.IConstantLayer
            return np.array(layer.weights)
    raise AssertionError(f"{tensor.name} is not a constant")


@pytest.mark.parametrize("params_dtype", [np.int32, np.int64, None])
def test_plugin_impl_passes_data_updates_and_the_constants(plugin_calls, params_dtype):
    trt = tensorrt()
    _, network = new_network()
    data = add_input(network, "data", np.float32, (2, 5))
    updates = add_input(network, "updates", np.float32, (2, 3))
    as_given = (lambda v: np.array(v, dtype=params_dtype)) if params_dtype else list
    stop = 2**31 - 1 if params_dtype == np.int32 else INT64_MAX
    add_slice_scatter(network, data, updates, as_given([-25]), as_given([stop]), as_given([2]), as_given([1]), impl="plugin")
    ((op_name, inputs, fields),) = plugin_calls
    assert op_name == "SliceScatter" and fields is None and inputs[:2] == [data, updates]
    expected_type = trt.int32 if params_dtype == np.int32 else trt.int64
    assert [t.dtype for t in inputs[2:]] == [expected_type] * 4
    assert [_constant_values(network, t).tolist() for t in inputs[2:]] == [[-25], [stop], [2], [1]]
    assert not scatter_layers(network)


def test_plugin_impl_passes_runtime_parameters_as_they_are(plugin_calls):
    """ITensor start/stop/step/axes reach the plugin as its inputs; constants beside them become constant layers."""
    _, network = new_network()
    data, updates = add_input(network, "data", np.float32, (2, 3, 8, 4)), add_input(network, "updates", np.float32, (2, 3, 1, 4))
    pos, end, axes = (add_input(network, name, np.int64, (1,)) for name in ("pos", "end", "axes"))
    add_slice_scatter(network, data, updates, pos, end, [1], axes, impl="plugin")
    ((_, inputs, _),) = plugin_calls
    assert inputs[:4] == [data, updates, pos, end] and inputs[5] is axes
    assert _constant_values(network, inputs[4]).tolist() == [1]
    with pytest.raises(oracle.ScatterInputError, match="must have equal lengths"):  # what is known is still checked
        add_slice_scatter(network, data, updates, pos, end, [1, 1], axes, impl="plugin")


def test_plugin_impl_without_axes_passes_five_inputs(plugin_calls):
    _, network = new_network()
    data = add_input(network, "data", np.float32, (3, 5))
    add_slice_scatter(network, data, add_input(network, "updates", np.float32, (2, 2)), [0, 1], [3, 5], [2, 2], impl="plugin")
    assert len(plugin_calls[0][1]) == 5


def test_plugin_impl_checks_inputs_before_adding_the_plugin(plugin_calls):
    _, network = new_network()
    data = add_input(network, "data", np.float32, (2, 5))
    with pytest.raises(oracle.ScatterInputError, match="'step' must not contain 0"):
        add_slice_scatter(network, data, add_input(network, "updates", np.float32, (2, 3)), [0], [5], [0], [1], impl="plugin")
    assert not plugin_calls


def test_unknown_impl_is_refused():
    _, network = new_network()
    data = add_input(network, "data", np.float32, (2, 5))
    with pytest.raises(oracle.ScatterInputError, match=r"^slice_scatter: 'impl' must be one of 'native', 'plugin' \(got 'cuda'\)$"):
        add_slice_scatter(network, data, add_input(network, "updates", np.float32, (2, 3)), [0], [5], [2], [1], impl="cuda")


def test_example_is_the_specs_example_2():
    inputs = example_inputs("slice_scatter")
    out = oracle.slice_scatter(inputs["data"], inputs["updates"], [-25], [25], [2], [1])
    assert out.tolist() == [[10, 1, 20, 3, 30], [40, 6, 50, 8, 60]]  # SliceScatter-15, example 2


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_example_network_builds_natively(dynamic):
    builder, network = new_network()
    profile = EXAMPLES["slice_scatter"](network, dynamic=dynamic, dtype=np.float16)
    assert network.get_output(0).name == "output" and network.get_output(0).dtype == tensorrt().float16
    assert bool(profile) == dynamic and (not dynamic or profile["updates"] == ((2, 3), (2, 3), (4, 5)))
    build(builder, network, profile)


def test_example_with_other_parameters_has_matching_inputs():
    params = {"data_shape": (3, 4, 5), "start": [0, 10], "stop": [3, -10], "step": [2, -1], "axes": [0, -1]}
    inputs = example_inputs("slice_scatter", dtype=np.int32, **params)
    assert inputs["data"].dtype == np.int32 and inputs["updates"].shape == (2, 4, 5)
    oracle.slice_scatter(inputs["data"], inputs["updates"], params["start"], params["stop"], params["step"], params["axes"])
    builder, network = new_network()
    EXAMPLES["slice_scatter"](network, dtype=np.int32, index_dtype=np.int64, **params)
    assert tuple(network.get_input(1).shape) == (2, 4, 5)
    build(builder, network)
    with pytest.raises(TypeError, match="no parameter"):
        EXAMPLES["slice_scatter"](new_network()[1], axis=1)


def test_example_plugin_impl_goes_through_add_plugin_layer(plugin_calls):
    _, network = new_network()
    EXAMPLES["slice_scatter"](network, impl="plugin", index_dtype=np.int32)
    assert plugin_calls[0][0] == "SliceScatter" and plugin_calls[0][1][2].dtype == tensorrt().int32


def test_example_parameters_are_checked_with_the_oracles_rules():
    with pytest.raises(oracle.ScatterInputError, match="'step' must not contain 0"):
        example_inputs("slice_scatter", step=[0])
    with pytest.raises(oracle.ScatterInputError, match="'axes' must be in"):
        EXAMPLES["slice_scatter"](new_network()[1], axes=[2])
    with pytest.raises(oracle.ScatterInputError, match="'start/stop/step/axes' must have equal lengths"):
        example_inputs("slice_scatter", start=[0, 1])


def test_plugin_impl_does_not_wrap_huge_unsigned_parameters(plugin_calls):
    trt = tensorrt()
    _, network = new_network()
    data, updates = add_input(network, "data", np.float32, (2, 5)), add_input(network, "updates", np.float32, (2, 3))
    huge = np.array([2**64 - 1], np.uint64)  # would wrap to -1 as int64: a different slice
    add_slice_scatter(network, data, updates, np.array([0], np.uint64), huge, [2], [1], impl="plugin")
    ((_, inputs, _),) = plugin_calls
    stop = [layer for layer in layers(network) if layer.type == trt.LayerType.CONSTANT][1]
    stop.__class__ = trt.IConstantLayer
    assert inputs[3].dtype == trt.int64 and np.array(stop.weights).tolist() == [2**63 - 1]


@pytest.mark.parametrize("data_shape, updates_shape, start, stop, step, axes", [
    ((2, 1), (0, 1), [0], [0], [1], [0]),  # an empty slice of a full dimension
    ((0, 3), (0, 2), [0], [2], [1], [1]),  # data itself empty
    ((-1, 3), (-1, 0), [0], [0], [1], [1]),  # an empty slice beside a dynamic dimension
    ((0,), (0,), [], [], [], []),  # no axes, empty data
])
def test_an_empty_write_builds_an_engine(data_shape, updates_shape, start, stop, step, axes):
    """TensorRT refuses empty constants: the lowering's empty index tensors must still build (data comes back)."""
    builder, network = new_network()
    data, updates = add_input(network, "data", np.float32, data_shape), add_input(network, "updates", np.float32, updates_shape)
    network.mark_output(add_slice_scatter(network, data, updates, start, stop, step, axes))
    profile = {"data": [(2, 3)] * 3, "updates": [(2, 0)] * 3} if -1 in data_shape else None
    build(builder, network, profile)


def _columns_of_a_dynamic_axis():
    """data (4, n), updates (4, 5), a constant slice [0:100:2] of axis 1: 5 columns where n is 9 or 10 only."""
    builder, network = new_network()
    data, updates = add_input(network, "data", np.float32, (4, -1)), add_input(network, "updates", np.float32, (4, 5))
    network.mark_output(add_slice_scatter(network, data, updates, [0], [100], [2], [1]))
    return builder, network


@pytest.mark.parametrize("bound, shapes", [("smallest", ((4, 6), (4, 10), (4, 10))), ("opt", ((4, 9), (4, 12), (4, 12))),
                                           ("largest", ((4, 9), (4, 10), (4, 12)))])
def test_a_slice_whose_length_a_dynamic_dimension_sets_is_asserted_to_fit_updates(bound, shapes):
    """The slice's length follows data's dimension: at n = 6 it is 3 columns, which the 5 of updates do not fit. The
    native lowering asserted nothing, so the engine built for a profile whose every shape but opt breaks the rule."""
    import re

    from trt_scatter.engine import build_engine

    with pytest.raises(ValueError, match="^" + re.escape(f"the profile's {bound} shapes break a rule the network asserts: slice_scatter: 'updates' "
                                                         "must have data's shape with each sliced axis cut to its slice's length") + "$"):
        build_engine(_columns_of_a_dynamic_axis, {"data": shapes})
    assert build_engine(_columns_of_a_dynamic_axis, {"data": ((4, 9), (4, 10), (4, 10))})[0]  # 5 columns at 9 and at 10
