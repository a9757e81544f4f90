"""add_scatter_update's two implementations and the scatter_update example network."""

import numpy as np
import pytest
from lowering_support import add_input, build, builds_or_refuses, layers, new_network, scatter_layers
from lowering_support import plugin_calls  # noqa: F401  (a fixture)

from trt_scatter import oracle
from trt_scatter.backend import tensorrt
from trt_scatter.networks import add_scatter_update
from trt_scatter.networks.examples import EXAMPLES, example_inputs


@pytest.mark.parametrize("axis,dtype", [(1, None), (np.array(1, np.int32), "INT32"), (np.array([-1], np.int64), "INT64")])
def test_plugin_impl_passes_axis_as_a_one_element_constant(plugin_calls, axis, dtype):
    trt = tensorrt()
    _, network = new_network()
    tensors = [add_input(network, n, t, s) for n, t, s in (("data", np.float32, (3, 5)), ("indices", np.int32, (2,)), ("updates", np.float32, (3, 2)))]
    add_scatter_update(network, *tensors, axis, impl="plugin")
    ((op_name, inputs, fields),) = plugin_calls
    assert op_name == "ScatterUpdate" and fields is None and inputs[:3] == tensors
    axis_input = inputs[3]
    assert tuple(axis_input.shape) == (1,) and axis_input.dtype == getattr(trt, (dtype or "INT64").lower())
    (constant,) = [layer for layer in layers(network) if layer.type == trt.LayerType.CONSTANT]
    constant.__class__ = trt.IConstantLayer
    assert np.array(constant.weights).tolist() == [int(np.asarray(axis).reshape(()))]
    assert not scatter_layers(network)


def test_plugin_impl_checks_inputs_first_and_unknown_impl_is_refused(plugin_calls):
    _, network = new_network()
    tensors = [add_input(network, n, t, s) for n, t, s in (("data", np.float32, (3, 5)), ("indices", np.int32, (2,)), ("updates", np.float32, (3, 3)))]
    with pytest.raises(oracle.ScatterInputError, match="'updates' must have shape"):
        add_scatter_update(network, *tensors, 1, impl="plugin")
    assert not plugin_calls
    with pytest.raises(oracle.ScatterInputError, match=r"^scatter_update: 'impl' must be one of 'native', 'plugin' \(got 'kernel'\)$"):
        add_scatter_update(network, *tensors, 1, impl="kernel")


def test_example_is_the_specs_example_2():
    inputs = example_inputs("scatter_update", index_dtype=np.int64)
    out = oracle.scatter_update(inputs["data"], inputs["indices"], inputs["updates"], 1)
    assert out.tolist() == [[1, 1, 1, 3, 4], [1, 6, 1, 8, 9], [1, 11, 2, 13, 14]]  # ScatterUpdate-3, example 2


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_example_network_builds_natively(dynamic):
    builder, network = new_network()
    profile = EXAMPLES["scatter_update"](network, dynamic=dynamic, dtype=np.int32)
    assert [network.get_input(i).name for i in range(3)] == ["data", "indices", "updates"]
    assert scatter_layers(network)[0].mode == tensorrt().ScatterMode.ND
    build(builder, network, profile)


def test_example_with_other_parameters_has_matching_unique_indices():
    inputs = example_inputs("scatter_update", data_shape=(4, 6, 2), indices_shape=(2, 2), axis=-2)
    assert inputs["updates"].shape == (4, 2, 2, 2) and len(set(inputs["indices"].ravel().tolist())) == 4
    oracle.scatter_update(inputs["data"], inputs["indices"], inputs["updates"], -2)
    for name, params in (("scatter_nd", {"data_shape": (3, 4, 2), "indices_shape": (2, 3, 2)}), ("scatter_elements", {"data_shape": (3, 4), "indices_shape": (2, 4), "axis": -1})):
        inputs = example_inputs(name, **params)
        getattr(oracle, name)(inputs["data"], inputs["indices"], inputs["updates"], **({"axis": params["axis"]} if "axis" in params else {}))
    builder, network = new_network()
    EXAMPLES["scatter_update"](network, data_shape=(4, 6, 2), indices_shape=(2, 2), axis=-2)
    build(builder, network)


@pytest.mark.parametrize(
    "build_op, shapes",
    [
        ("scatter_update", (("data", np.float32, (3, 0)), ("indices", np.int32, (2,)), ("updates", np.float32, (3, 2)))),
        ("scatter_elements", (("data", np.float32, (0, 4)), ("indices", np.int32, (1, 4)), ("updates", np.float32, (1, 4)))),
        ("scatter_nd", (("data", np.float32, (3, 0)), ("indices", np.int32, (1, 2)), ("updates", np.float32, (1,)))),
    ],
)
def test_builders_refuse_indices_into_an_empty_dimension_before_tensorrt(build_op, shapes):
    # Clamping cannot keep such indices in range (there is no in-range value), so the builder must refuse them.
    from trt_scatter import networks

    _, network = new_network()
    tensors = [add_input(network, n, t, s) for n, t, s in shapes]
    builder = getattr(networks, f"add_{build_op}")
    args = tensors + ([1] if build_op == "scatter_update" else [0] if build_op == "scatter_elements" else [])
    with pytest.raises(oracle.ScatterInputError, match="'indices' must be empty: data's dimension"):
        builder(network, *args)
    assert network.num_layers == 0


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("rows, highest, message", [
    (3, 4, "the profile's smallest shapes break a rule the network asserts: scatter_update: 'indices' values must be in [0, s-1] where "
           "s is data's dimension 0 when the network runs (its constant values lie in [0, 4])"),
    (5, 4, None),
    (3, 100, "the network asserts a rule that no run the profile allows keeps: scatter_update: 'indices' values must be in [0, s-1] where "
             "s is data's dimension 0 when the network runs (its constant values lie in [0, 100])"),
], ids=["out-of-range-at-the-smallest", "in-range-at-every-bound", "out-of-range-at-every-bound"])
def test_constant_indices_that_a_profile_puts_out_of_range_are_refused(rows, highest, message, index_dtype):
    """Constant indices into data of a dynamic number of rows, in either index type: int32 ones went through the
    lowering's cast to int64 first, whose values the range assertion could not read (a cast layer, not a constant), and
    a profile that let the clamp write row 4 to a place the spec does not define built without a word."""


    def load():
        builder, network = new_network()
        data, updates = add_input(network, "data", np.float32, (-1, 5)), add_input(network, "updates", np.float32, (2, 5))
        indices = network.add_constant((2,), np.array([highest, 0], index_dtype)).get_output(0)
        network.mark_output(add_scatter_update(network, data, indices, updates, 0))
        return builder, network

    profile = {"data": ((rows, 5), (5, 5), (6, 5))}
    builds_or_refuses(load, profile, message)


@pytest.mark.parametrize("impl", ["native", "plugin"])
def test_negative_constant_indices_into_a_dynamic_dimension_are_refused_when_built(impl, plugin_calls):
    """ScatterUpdate takes indices in [0, s-1] only: a negative constant one is out of range whatever s is, so the
    builder names it at once; on a dynamic dimension it was left to the run-time assertion, which checks the largest
    value only, and the native lowering's clamp wrote -1 to row 0."""
    network = new_network()[1]
    data, updates = add_input(network, "data", np.float32, (-1, 5)), add_input(network, "updates", np.float32, (2, 5))
    indices = network.add_constant((2,), np.array([-1, 0], np.int64)).get_output(0)
    with pytest.raises(oracle.ScatterInputError, match=r"^scatter_update: 'indices' values must not be negative, as "
                                                       r"\[0, s-1\] holds none \(got -1\)$"):
        add_scatter_update(network, data, indices, updates, 0, impl=impl)
