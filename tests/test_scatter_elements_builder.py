"""add_scatter_elements: ELEMENT-mode IScatterLayer with negative indices wrapped, checked against the oracle."""

import logging
import re

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from lowering_support import add_input, build, builds_or_refuses, layers, new_network, parse_onnx, profile_for, run_onnx, scatter_layers, symbolic, values

from trt_scatter import oracle
from trt_scatter.backend import tensorrt
from trt_scatter.networks import add_scatter_elements, lower_scatter_elements
from trt_scatter.networks.examples import EXAMPLES, example_inputs
from trt_scatter.networks.graph import OnnxGraph

DTYPES = [np.float32, np.float16, np.int8, np.int32, np.int64, np.bool_]  # onnxruntime takes no bfloat16 from Python


def unique_indices(rng, data_shape, indices_shape, axis, index_dtype, negative):
    """Indices whose targets never repeat (each line along the axis is part of a permutation), some negative."""
    size = data_shape[axis]
    draws = rng.random(indices_shape[:axis] + (size,) + indices_shape[axis + 1 :])
    indices = np.take(np.argsort(draws, axis=axis), range(indices_shape[axis]), axis=axis)
    if negative:
        indices = np.where(rng.random(indices.shape) < 0.5, indices - size, indices)
    return indices.astype(index_dtype)


@st.composite
def element_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    indices_shape = tuple(draw(st.integers(1, d)) for d in shape)
    dynamic = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    return shape, indices_shape, axis, dynamic, draw(st.sampled_from(DTYPES)), draw(st.sampled_from([np.int32, np.int64])), draw(st.integers(0, 2**16))


def _run_builder_in_onnxruntime(data, indices, updates, axis, dynamic):
    """lower_scatter_elements (the code add_scatter_elements runs) on an ONNX graph, run by onnxruntime."""
    graph = OnnxGraph()
    inputs = []
    for name, array, prefix in (("data", data, "d"), ("indices", indices, "i"), ("updates", updates, "i")):
        shape, _ = symbolic(array.shape, dynamic, prefix)
        inputs.append(graph.add_input(name, array.dtype, shape))
    model = graph.model({"output": lower_scatter_elements(graph, *inputs, axis)})
    return run_onnx(model, {"data": data, "indices": indices, "updates": updates})


@given(element_cases())
@example(((4, 3), (2, 3), -2, [True, True], np.float32, np.int32, 0))
def test_builder_matches_oracle_with_negative_indices(case):
    shape, indices_shape, axis, dynamic, dtype, index_dtype, seed = case
    rng = np.random.default_rng(seed)
    data = values(rng, shape, dtype)
    indices = unique_indices(rng, shape, indices_shape, axis % len(shape), index_dtype, negative=True)
    updates = values(rng, indices_shape, dtype)
    expected = oracle.scatter_elements(data, indices, updates, axis)
    got = _run_builder_in_onnxruntime(data, indices, updates, axis, dynamic)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_tensorrt_network_builds(dynamic, index_dtype):
    trt = tensorrt()
    builder, network = new_network()
    flags = [dynamic] * 3
    data = add_input(network, "data", np.float32, symbolic((2, 3, 4), flags, "d")[1])
    indices = add_input(network, "indices", index_dtype, symbolic((2, 2, 4), flags, "i")[1])
    updates = add_input(network, "updates", np.float32, symbolic((2, 2, 4), flags, "i")[1])
    output = add_scatter_elements(network, data, indices, updates, axis=-2)
    network.mark_output(output)
    (scatter,) = scatter_layers(network)
    assert scatter.mode == trt.ScatterMode.ELEMENT and scatter.axis == 1
    assert scatter.get_input(1).dtype == indices.dtype  # wrapped in the indices' own type
    assert trt.LayerType.SELECT in {layer.type for layer in layers(network)}
    low = {"data": (2, 3, 4), "indices": (2, 2, 4), "updates": (2, 2, 4)}
    build(builder, network, profile_for(network, low, low, {"data": (4, 6, 8), "indices": (4, 4, 8), "updates": (4, 4, 8)}))


def test_example_network_is_the_cookbooks_and_builds_static_and_dynamic():
    trt = tensorrt()
    inputs = example_inputs("scatter_elements")
    out = oracle.scatter_elements(inputs["data"], inputs["indices"], inputs["updates"], axis=2)
    # The TensorRT cookbook's ELEMENT-mode output, first rows of the first two channels.
    assert out[0, 0, 0].tolist() == [0, -16, -12, -8, -4] and out[0, 1, 3].tolist() == [-35, -31, -27, -23, -39]
    for dynamic in (False, True):
        builder, network = new_network()
        profile = EXAMPLES["scatter_elements"](network, dynamic=dynamic, index_dtype=np.int64)
        assert network.get_output(0).name == "output" and bool(profile) == dynamic
        assert [network.get_input(i).name for i in range(network.num_inputs)] == ["data", "indices", "updates"]
        assert scatter_layers(network)[0].mode == trt.ScatterMode.ELEMENT
        build(builder, network, profile)


def test_onnx_parser_on_the_builders_onnx_form():
    graph = OnnxGraph()
    data, indices, updates = (graph.add_input(n, t, s) for n, t, s in (("data", np.float32, ("a", 4)), ("indices", np.int64, ("b", 4)), ("updates", np.float32, ("b", 4))))
    builder, network, _ = parse_onnx(graph.model({"output": lower_scatter_elements(graph, data, indices, updates, 0)}))
    assert scatter_layers(network)[0].mode == tensorrt().ScatterMode.ELEMENT
    low = {"data": (3, 4), "indices": (2, 4), "updates": (2, 4)}
    build(builder, network, profile_for(network, low, low, {"data": (6, 4), "indices": (4, 4), "updates": (4, 4)}))


BAD = [
    # (data shape, indices shape, updates shape, axis)
    ((3, 4), (2, 4), (2, 4), 2),  # axis out of range
    ((3, 4), (2, 4, 1), (2, 4, 1), 0),  # indices of another rank
    ((3, 4), (2, 5), (2, 5), 0),  # indices larger than data off the axis
    ((3, 4), (2, 4), (2, 3), 0),  # updates not of indices' shape
]


@pytest.mark.parametrize("bad", BAD)
def test_bad_inputs_fail_before_tensorrt_with_the_oracles_message(bad):
    shape, indices_shape, updates_shape, axis = bad
    arrays = {"data": np.zeros(shape, np.float32), "indices": np.zeros(indices_shape, np.int32), "updates": np.zeros(updates_shape, np.float32)}
    with pytest.raises(oracle.ScatterInputError) as from_oracle:
        oracle.scatter_elements(*arrays.values(), axis)
    _, network = new_network()
    with pytest.raises(oracle.ScatterInputError) as from_builder:
        add_scatter_elements(network, *(add_input(network, n, a.dtype, a.shape) for n, a in arrays.items()), axis)
    assert str(from_builder.value) == str(from_oracle.value)
    assert network.num_layers == 0


def test_bad_types_fail_before_tensorrt():
    _, network = new_network()
    data = add_input(network, "data", np.float32, (3, 4))
    with pytest.raises(oracle.ScatterInputError, match="'indices' must have an integer element type"):
        add_scatter_elements(network, data, add_input(network, "indices", np.float32, (2, 4)), add_input(network, "updates", np.float32, (2, 4)))
    with pytest.raises(oracle.ScatterInputError, match="'updates' must have the element type of 'data'"):
        add_scatter_elements(network, data, add_input(network, "i", np.int32, (2, 4)), add_input(network, "u", np.int32, (2, 4)))


def test_other_integer_index_types_are_cast_to_int64():
    """The oracle takes any integer indices; IScatterLayer and ONNX take int32/int64."""
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    indices = np.array([[-1, 0, 1]], dtype=np.int8)
    updates = -np.ones((1, 3), np.float32)
    got = _run_builder_in_onnxruntime(data, indices, updates, 0, [False, False])
    assert np.array_equal(got, oracle.scatter_elements(data, indices, updates, 0))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_forbidden_indices_write_inside_the_output(dynamic):
    """Values outside [-s, s-1] (the oracle rejects them) are clamped; onnxruntime's ScatterElements would raise."""
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    indices = np.array([[-9, 7, 0]], dtype=np.int64)
    updates = -np.ones((1, 3), np.float32)
    with pytest.raises(oracle.ScatterInputError):
        oracle.scatter_elements(data, indices, updates, 0)
    got = _run_builder_in_onnxruntime(data, indices, updates, 0, [dynamic, dynamic])
    assert np.array_equal(got, oracle.scatter_elements(data, np.clip(indices, 0, 1), updates, 0))


def test_indices_longer_than_data_on_the_axis_are_refused_by_name_for_tensorrt_only():
    """ONNX allows indices.shape[axis] > data.shape[axis] (targets repeat); TensorRT's IScatterLayer
    refuses to build it, so the TensorRT builder says why before TensorRT fails with its own log line."""
    data = np.zeros((2, 2), np.float32)
    indices = np.array([[0, 1, 1]], np.int64)
    updates = np.array([[5, 6, 6]], np.float32)  # the repeated target gets one value: defined here
    expected = oracle.scatter_elements(data, indices, updates, 1)
    assert np.array_equal(_run_builder_in_onnxruntime(data, indices, updates, 1, [False, False]), expected)
    _, network = new_network()
    inputs = [add_input(network, n, a.dtype, a.shape) for n, a in (("data", data), ("indices", indices), ("updates", updates))]
    with pytest.raises(oracle.ScatterInputError, match=r"'indices' dimension 1 \(the axis\) must be at most data's \(2\) in TensorRT's IScatterLayer"):
        add_scatter_elements(network, *inputs, 1)
    builder, network = new_network()  # what TensorRT does without the check: no engine
    layer = network.add_scatter(*(add_input(network, n, a.dtype, a.shape) for n, a in (("data", data), ("indices", indices.astype(np.int32)), ("updates", updates))), tensorrt().ScatterMode.ELEMENT)
    layer.axis = 1
    network.mark_output(layer.get_output(0))
    assert builder.build_serialized_network(network, builder.create_builder_config()) is None


def _dynamic_network():
    builder, network = new_network()
    inputs = [add_input(network, name, dtype, (-1, 3, -1)) for name, dtype in (("data", np.float32), ("indices", np.int32), ("updates", np.float32))]
    network.mark_output(add_scatter_elements(network, *inputs, axis=2))
    return builder, network


FITS = ((1, 3, 4), (2, 3, 8), (4, 3, 16))


@pytest.mark.parametrize("profile, message", [
    ({"data": ((1, 3, 4), (2, 3, 8), (4, 3, 8)), "indices": FITS, "updates": FITS},
     re.escape("the profile's largest shapes break a rule the network asserts: scatter_elements: 'indices' dimensions must be at most data's "
               "when the network runs (on the axis too, in TensorRT's IScatterLayer)")),
    ({"data": FITS, "indices": FITS, "updates": ((1, 3, 2), (2, 3, 4), (4, 3, 8))},  # TensorRT-RTX logs the scatter layer's rule at opt only
     re.escape("the profile's smallest shapes break a rule the network asserts: scatter_elements: 'updates' must have the shape of 'indices'")),
    ({"data": ((1, 3, 4), (2, 3, 4), (4, 3, 16)), "indices": FITS, "updates": FITS},  # TensorRT-RTX logs it as a layer's rule
     re.escape("the profile's opt shapes break a rule the network asserts: scatter_elements: 'indices' dimensions must be at most data's "
               "when the network runs (on the axis too, in TensorRT's IScatterLayer)")),
], ids=["assertion-broken-at-the-largest", "updates-rule-broken-at-every-bound", "assertion-broken-at-opt"])
def test_build_engine_refuses_a_profile_that_breaks_the_networks_rules_in_one_line(profile, message, caplog):
    """A network of the builders, whose rules its assertion layers state: TensorRT-RTX built the engine of a profile that
    breaks one at its largest shapes, saying so only in a warning (its runs at those shapes fail), and at opt it failed
    with its log and polygraphy's "Invalid Engine"."""
    from trt_scatter.engine import build_engine

    with pytest.raises(ValueError, match=f"^{message}$"):
        build_engine(_dynamic_network, profile)
    assert not [record for record in caplog.records if "self-consistent" in record.getMessage() or "violate" in record.getMessage()]
    caplog.set_level(logging.CRITICAL, logger="trt_scatter")  # a user who quiets TensorRT's log: the rule is raised still
    with pytest.raises(ValueError, match=f"^{message}$"):
        build_engine(_dynamic_network, profile)
    assert build_engine(_dynamic_network, {"data": FITS, "indices": FITS, "updates": FITS})[0]  # the rules kept: it builds


@pytest.mark.parametrize("rows, lowest, message", [
    (1, -4, "the profile's smallest shapes break a rule the network asserts: scatter_elements: 'indices' values must be in [-s, s-1] where "
            "s is data's dimension 0 when the network runs (its constant values lie in [-4, 3])"),
    (4, -4, None),
    (4, -5, "the profile's smallest shapes break a rule the network asserts: scatter_elements: 'indices' values must be in [-s, s-1] where "
            "s is data's dimension 0 when the network runs (its constant values lie in [-5, 3])"),  # -5 needs 5 rows
], ids=["out-of-range-at-the-smallest", "in-range-at-every-bound", "a-negative-index-out-of-range"])
def test_constant_indices_that_a_profile_puts_out_of_range_are_refused(rows, lowest, message):
    """Constant indices up to 3 (and -4) into data of a dynamic number of rows: where the profile allows fewer than 4, the
    clamp the builder adds before the layer (no write outside the output) wrote row 0 or the last, a result the spec
    does not define, and the engine built without a word. ONNX models of the same were refused at the bound already."""

    def load():
        builder, network = new_network()
        data, updates = add_input(network, "data", np.float32, (-1, 4)), add_input(network, "updates", np.float32, (1, 4))
        indices = network.add_constant((1, 4), np.array([[3, 0, lowest, 1]], np.int32)).get_output(0)
        network.mark_output(add_scatter_elements(network, data, indices, updates, axis=0))
        return builder, network

    profile = {"data": ((rows, 4), (5, 4), (8, 4))}
    builds_or_refuses(load, profile, message)
