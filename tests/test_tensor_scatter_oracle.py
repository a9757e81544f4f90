"""The TensorScatter-24 oracle (trt_scatter.oracle.tensor_scatter) against the spec's own loop, onnxruntime and
onnx.reference, its rules one at a time, and what validation and the data loader make of its nodes."""

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx.reference import ReferenceEvaluator

from trt_scatter import oracle
from trt_scatter.model import as_model
from trt_scatter.model.node import OpNode
from trt_scatter.onnx_models import tensor_scatter_model
from trt_scatter.ops import CACHE_SCATTER, TENSOR_SCATTER, op_of
from trt_scatter.oracle import ScatterInputError
from trt_scatter.oracle.tensor_scatter import from_standard


def spec_loop(past_cache, update, write_indices, axis, mode):
    """The spec's pseudocode, written out (ONNX Operators.md, TensorScatter-24)."""
    present = past_cache.copy()
    axis %= past_cache.ndim
    size, count = past_cache.shape[axis], update.shape[axis]
    indices = np.zeros(past_cache.shape[0], np.int64) if write_indices is None else write_indices
    for prefix in np.ndindex(past_cache.shape[:axis]):
        for s in range(count):
            position = int(indices[prefix[0]]) + s
            if mode == "circular":
                position %= size
            present[(*prefix, position)] = update[(*prefix, s)]
    return present


@st.composite
def cases(draw, max_rank=5):
    """Valid inputs: rank 2..max_rank, any axis but 0 (either sign), both modes, write indices or none."""
    rank = draw(st.integers(2, max_rank))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    axis = draw(st.integers(1, rank - 1))
    shape[axis] = draw(st.integers(0, 6))
    mode = draw(st.sampled_from(["linear", "circular"]))
    size = shape[axis]
    count = draw(st.integers(0, size))
    update_shape = list(shape)
    update_shape[axis] = count
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    indices = None
    if draw(st.booleans()):
        high = 3 * size + 1 if mode == "circular" else size - count
        indices = rng.integers(0, high + 1, shape[0]).astype(draw(st.sampled_from([np.int32, np.int64])))
    cache = rng.standard_normal(shape).astype(np.float32)
    update = rng.standard_normal(update_shape).astype(np.float32)
    return cache, update, indices, axis - rank if draw(st.booleans()) else axis, mode


@given(cases())
def test_matches_the_specs_loop(case):
    cache, update, indices, axis, mode = case
    np.testing.assert_array_equal(oracle.tensor_scatter(cache, update, indices, axis, mode), spec_loop(cache, update, indices, axis, mode))


def _standard_model(case):
    cache, update, indices, axis, mode = case
    return tensor_scatter_model(cache.shape, update.shape[axis], axis=axis, mode=mode, write_indices=indices is not None, impl="standard")


def _feeds(case):
    cache, update, indices, _, _ = case
    return {"past_cache": cache, "update": update} | ({} if indices is None else {"write_indices": indices.astype(np.int64)})


@settings(max_examples=30)
@given(cases(max_rank=4))
def test_matches_onnxruntime(case):
    session = onnxruntime.InferenceSession(_standard_model(case).SerializeToString(), providers=["CPUExecutionProvider"])
    cache, update, indices, axis, mode = case
    np.testing.assert_array_equal(session.run(None, _feeds(case))[0], oracle.tensor_scatter(cache, update, indices, axis, mode))


@settings(max_examples=30)
@given(cases(max_rank=4))
def test_matches_onnx_reference_on_valid_inputs(case):
    """onnx.reference agrees on every valid input (it runs what the spec forbids too: see the module's docstring)."""
    cache, update, indices, axis, mode = case
    (output,) = ReferenceEvaluator(_standard_model(case)).run(None, _feeds(case))
    np.testing.assert_array_equal(output, oracle.tensor_scatter(cache, update, indices, axis, mode))


def test_onnx_reference_runs_what_the_spec_forbids():
    """The difference the oracle documents: onnx.reference counts a negative linear write index from the end."""
    cache, update = np.zeros((2, 3, 4, 1), np.float32), np.ones((2, 3, 1, 1), np.float32)
    model = tensor_scatter_model(cache.shape, 1, impl="standard")
    (output,) = ReferenceEvaluator(model).run(None, {"past_cache": cache, "update": update, "write_indices": np.array([-1, 0])})
    assert output[0, 0, :, 0].tolist() == [0, 0, 0, 1]
    with pytest.raises(ScatterInputError, match=r"'write_indices' values must be >= 0 \(got -1\)"):
        oracle.tensor_scatter(cache, update, np.array([-1, 0]))


def test_a_decode_step_and_a_prefill():
    cache = np.zeros((2, 1, 5, 1), np.int32)
    decode = oracle.tensor_scatter(cache, np.array([7, 8]).reshape(2, 1, 1, 1).astype(np.int32), np.array([3, 0]))
    assert decode[:, 0, :, 0].tolist() == [[0, 0, 0, 7, 0], [8, 0, 0, 0, 0]]
    prefill = oracle.tensor_scatter(cache, np.arange(1, 7).reshape(2, 1, 3, 1).astype(np.int32))  # no write indices: from 0
    assert prefill[:, 0, :, 0].tolist() == [[1, 2, 3, 0, 0], [4, 5, 6, 0, 0]]
    wrapped = oracle.tensor_scatter(cache, np.arange(1, 7).reshape(2, 1, 3, 1).astype(np.int32), np.array([4, 2**62]), mode="circular")
    assert wrapped[:, 0, :, 0].tolist() == [[2, 3, 0, 0, 1], [5, 6, 0, 0, 4]]  # positions 4, 0, 1 in both rows: 2**62 mod 5 = 4


def test_circular_positions_wrap_without_overflow():
    """(w mod M + s) mod M: a write index near INT64_MAX must not overflow into a negative position."""
    big = np.iinfo(np.int64).max
    positions = oracle.tensor_scatter(np.zeros((1, 7), np.int64), np.array([[1, 2, 3]]), np.array([big]), axis=1, mode="circular")
    start = big % 7
    expected = np.zeros(7, np.int64)
    expected[[(start + s) % 7 for s in range(3)]] = [1, 2, 3]
    assert positions[0].tolist() == expected.tolist()


@pytest.mark.parametrize("write_index", [2**64 - 1, 2**63, 2**63 + 5])
def test_circular_positions_of_uint64_write_indices_past_int64_are_exact(write_index):
    written = oracle.tensor_scatter(np.zeros((1, 5), np.int64), np.array([[7]]), np.array([write_index], np.uint64), axis=1, mode="circular")
    assert written[0].tolist() == [7 if p == write_index % 5 else 0 for p in range(5)]


@pytest.mark.parametrize("call, name, rule", [
    (lambda: oracle.tensor_scatter(np.zeros(3), np.zeros(1)), "past_cache", "must have rank >= 2"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3)), np.zeros((2, 1)), axis=0), "axis", "must not be the batch axis 0 (of 'past_cache' of rank 2) (got 0)"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3)), np.zeros((2, 1)), axis=-2), "axis", "must not be the batch axis 0 (of 'past_cache' of rank 2) (got -2)"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3)), np.zeros((2, 1)), axis=2), "axis", "must be in [-2, 1] for 'past_cache' of rank 2 (got 2)"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3, 4)), np.zeros((2, 2, 3))), "update", "must have shape (2, ?, 4) (past_cache's shape off the axis)"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3, 4)), np.zeros((2, 4, 4))), "update", "must have at most past_cache's 3 entries on axis 1"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3, 4)), np.zeros((2, 1, 4)), np.zeros(3, np.int64)), "write_indices", "must have shape (2,) (one write index per batch row"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3, 4)), np.zeros((2, 1, 4)), np.zeros(2)), "write_indices", "must have an integer element type"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3, 4)), np.zeros((2, 2, 4)), np.array([0, 2])), "write_indices",
     "values must be at most max_sequence_length - sequence_length = 3 - 2 in linear mode (the update must fit) (got 2)"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3, 4)), np.zeros((2, 2, 4)), np.array([0, -3]), mode="circular"), "write_indices", "values must be >= 0 (got -3)"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3, 4)), np.zeros((2, 2, 4)), mode="ring"), "mode", "must be one of 'linear', 'circular' (got 'ring')"),
    (lambda: oracle.tensor_scatter(np.zeros((2, 3, 4)), np.zeros((2, 2, 4), np.int32)), "update", "must have the element type of 'past_cache' (float64)"),
])
def test_each_rule_names_its_input(call, name, rule):
    with pytest.raises(ScatterInputError) as caught:
        call()
    assert caught.value.input_name == name and rule in str(caught.value) and str(caught.value).startswith("tensor_scatter: ")


# ---- nodes: validation and the mapping of ONNX's own nodes ----------------------------------------


def _node(model):
    loaded = as_model(model)
    node = loaded.proto.graph.node[0]
    return OpNode(node, 0, loaded.tensors, op_of(node))


def test_both_ops_run_the_same_module():
    assert op_of(_node(tensor_scatter_model((2, 3, 4, 5), 1, impl="standard")).node) is TENSOR_SCATTER
    assert op_of(_node(tensor_scatter_model((2, 3, 4, 5), 1)).node) is CACHE_SCATTER
    assert TENSOR_SCATTER.key == CACHE_SCATTER.key == "tensor_scatter" and CACHE_SCATTER.serves == TENSOR_SCATTER.name


@pytest.mark.parametrize("kwargs, kept", [
    (dict(cache_shape=(2, 3, 8, 4), sequence_length=1), True),  # what TensorRT's parser builds itself
    (dict(cache_shape=(2, 3, 8, 4), sequence_length=1, dtype=np.float16, axis=2), True),
    (dict(cache_shape=(2, 3, 8, 4), sequence_length=1, mode="circular"), False),
    (dict(cache_shape=(2, 8, 3, 4), sequence_length=1, axis=1), False),
    (dict(cache_shape=(2, 8, 4), sequence_length=1), False),
    (dict(cache_shape=(2, 3, 8, 4), sequence_length=1, dtype=np.int32), False),
    (dict(cache_shape=("batch", 3, "max_length", 4), sequence_length="tokens"), False),  # a sequence axis of no static length
    (dict(cache_shape=("batch", 3, 8, 4), sequence_length="tokens"), True),
])
def test_from_standard_leaves_tensorrt_what_its_parser_builds(kwargs, kept):
    node = _node(tensor_scatter_model(**kwargs, impl="standard"))
    mapped = from_standard(node)
    if kept:
        assert mapped is None
    else:
        axis, mode = kwargs.get("axis", -2), kwargs.get("mode", "linear")
        why = mapped.pop("why")
        assert mapped == {"inputs": ["past_cache", "update", "write_indices"], "attributes": {"axis": axis, "mode": mode, "inplace": 0}}
        assert why.startswith("its KV-cache layer "), why


def test_from_standard_maps_a_cache_tensorrt_would_not_take():
    """TensorRT's KV-cache layer needs the cache to be a graph input and the output a graph output."""
    model = tensor_scatter_model((2, 3, 8, 4), 1, impl="standard")
    graph = model.graph
    relu = onnx.helper.make_node("Relu", ["output"], ["relu"])
    graph.node.append(relu)
    graph.output[0].name = "relu"
    assert from_standard(_node(model)) is not None


def test_from_standard_maps_a_cache_that_another_node_reads():
    """TensorRT's KV-cache layers cannot both update one cache in place (its builder: "Input index already mapped to an
    output_index"), nor one update a cache that another layer reads."""
    model = tensor_scatter_model((2, 3, 8, 4), 1, impl="standard")
    graph = model.graph
    graph.node.append(onnx.helper.make_node("Relu", ["past_cache"], ["relu"]))
    graph.output.append(onnx.helper.make_tensor_value_info("relu", onnx.TensorProto.FLOAT, [2, 3, 8, 4]))
    assert from_standard(_node(model)) is not None


def test_validation_refuses_constant_write_indices_out_of_range():
    from trt_scatter.passes.validate import ModelError, validate

    model = tensor_scatter_model((2, 3, 8, 4), 2, impl="standard")
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array([0, 7], np.int64), "write_indices"))
    with pytest.raises(ModelError, match=r"^TensorScatter node 'TensorScatter_0': tensor_scatter: 'write_indices' values must be at most "
                                         r"max_sequence_length - sequence_length = 8 - 2 in linear mode \(the update must fit\) \(got 7\)$"):
        validate(model)
    plugin = tensor_scatter_model((2, 3, 8, 4), 2)
    plugin.graph.input[1].type.tensor_type.shape.dim[3].dim_value = 5
    with pytest.raises(ModelError, match=r"^CacheScatter node 'CacheScatter_0': tensor_scatter: 'update' must have shape \(2, 3, \?, 4\) "):
        validate(plugin)


def test_validation_names_a_bad_mode_and_axis_attribute():
    from trt_scatter.passes.validate import ModelError, validate

    model = tensor_scatter_model((2, 3, 8, 4), 2)
    node = model.graph.node[0]
    for attribute in node.attribute:
        if attribute.name == "mode":
            attribute.s = b"ring"
    with pytest.raises(ModelError, match=r"attribute 'mode' must be one of the strings 'linear', 'circular' \(got 'ring'\)"):
        validate(model)
    model = tensor_scatter_model((2, 3, 8, 4), 2)
    for attribute in model.graph.node[0].attribute:
        if attribute.name == "axis":
            attribute.i = 0
    with pytest.raises(ModelError, match=r"tensor_scatter: 'axis' must not be the batch axis 0"):
        validate(model)


@pytest.mark.parametrize("impl", ["plugin", "standard"])
@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_data_loader_gives_valid_write_indices(impl, mode):
    from trt_scatter.inputs import ScatterDataLoader
    from trt_scatter.reference import Reference

    model = tensor_scatter_model(("batch", 3, 6, 2), "tokens", axis=2, mode=mode, impl=impl)
    loader = ScatterDataLoader(model, iterations=6, input_shapes={"past_cache": (4, 3, 6, 2), "update": (4, 3, 5, 2)})
    reference = Reference(model)
    for feed in loader:
        indices = feed["write_indices"]
        assert indices.shape == (4,) and indices.min() >= 0
        assert indices.max() <= 1 if mode == "linear" else indices.max() < 18
        expected = oracle.tensor_scatter(feed["past_cache"], feed["update"], indices, 2, mode)
        np.testing.assert_array_equal(reference.run(feed)["output"], expected)


@pytest.mark.parametrize("cache, update, positions, message", [
    (8, "T", [0, 9], r"values must be at most max_sequence_length = 8, less sequence_length, in linear mode \(the update must fit\) \(got 9\)"),
    ("S", "T", [-3, 6], r"values must be >= 0 \(got -3\)"),
])
def test_validation_refuses_constant_write_indices_no_run_can_take(cache, update, positions, message):
    """A position past a static cache of 8 fits no update, whatever its length; a negative one fits no cache: both were left
    to the run (the data loader then grew the cache, or shrank the update to nothing, and every run failed)."""
    from trt_scatter.passes.validate import ModelError, validate

    model = tensor_scatter_model((2, 3, 8, 4), 2, impl="standard")
    for value, dim in zip(model.graph.input[:2], (cache, update)):
        value.type.tensor_type.shape.dim[2].Clear()
        setattr(value.type.tensor_type.shape.dim[2], "dim_value" if isinstance(dim, int) else "dim_param", dim)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array(positions, np.int64), "write_indices"))
    with pytest.raises(ModelError, match=rf"^TensorScatter node 'TensorScatter_0': tensor_scatter: 'write_indices' {message}$"):
        validate(model)
