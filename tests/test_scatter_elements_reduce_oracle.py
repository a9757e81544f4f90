"""The ScatterElementsReduce oracle against the loop that defines it, eager PyTorch, ONNX's evaluator and onnxruntime.

Repeated targets are the point: every case draws indices with repetition, about half of them negative.
"""

import numpy as np
import onnx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from oracle_helpers import seeds
from reduction_helpers import KERNEL_TYPES, ORACLE_TYPES, REDUCTIONS, TORCH_REDUCE, assert_same, sequential, values
from trt_scatter.onnx_models import scatter_elements_reduce_model
from trt_scatter.oracle import ScatterInputError
from trt_scatter.oracle.scatter_elements_reduce import scatter_elements_reduce


def _case(rng, data_shape, axis, length, dtype, index_dtype=np.int64, small=False):
    """data, indices, updates with ``length`` updates along ``axis`` per line (repeats and negative indices)."""
    indices_shape = tuple(length if d == axis else int(rng.integers(0, n + 1)) for d, n in enumerate(data_shape))
    size = data_shape[axis]
    indices = rng.integers(0, max(size, 1), size=indices_shape)
    indices = np.where(rng.random(indices_shape) < 0.5, indices - size, indices).astype(index_dtype)
    return values(rng, data_shape, dtype, small), indices, values(rng, indices_shape, dtype, small)


def _by_loop(data, indices, updates, axis, reduction, include_self):
    """The targets written out position by position (C order), then the defining loop."""
    targets = []
    for position in np.ndindex(indices.shape):
        target = list(position)
        target[axis] = int(indices[position]) % data.shape[axis]
        targets.append(np.ravel_multi_index(target, data.shape))
    out = sequential(data.reshape(-1, 1), np.array(targets, np.int64), updates.reshape(-1, 1), reduction, include_self)
    return out.reshape(data.shape)


@st.composite
def cases(draw, dtypes=ORACLE_TYPES, small=False):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    rng = np.random.default_rng(draw(seeds))
    data, indices, updates = _case(rng, shape, axis % rank, draw(st.integers(0, 7)), draw(st.sampled_from(dtypes)),
                                   draw(st.sampled_from([np.int32, np.int64])), small)
    return data, indices, updates, axis, draw(st.sampled_from(REDUCTIONS)), draw(st.sampled_from([0, 1]))


@settings(max_examples=150)
@given(case=cases())
def test_matches_the_loop_that_defines_it(case):
    data, indices, updates, axis, reduction, include_self = case
    out = scatter_elements_reduce(data, indices, updates, axis, reduction, include_self)
    assert_same(out, _by_loop(data, indices, updates, axis % data.ndim, reduction, include_self))


@settings(max_examples=60)
@given(case=cases(dtypes=[np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float64)], small=True))
def test_matches_torch_scatter_reduce(case):
    """Eager ``torch.scatter_reduce`` (no overflow here: torch may add wider than the element type)."""
    data, indices, updates, axis, reduction, include_self = case
    expected = torch.from_numpy(data).scatter_reduce(axis, torch.from_numpy(indices.astype(np.int64) % data.shape[axis % data.ndim]),
                                                     torch.from_numpy(updates), TORCH_REDUCE[reduction], include_self=bool(include_self))
    assert_same(scatter_elements_reduce(data, indices, updates, axis, reduction, include_self), expected.numpy())


def _standard_model(data, indices, axis, reduction):
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
             np.dtype(np.float64): TensorProto.DOUBLE}
    node = helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"], axis=axis, reduction=reduction)
    inputs = [helper.make_tensor_value_info("data", types[data.dtype], data.shape),
              helper.make_tensor_value_info("indices", TensorProto.INT64, indices.shape),
              helper.make_tensor_value_info("updates", types[data.dtype], indices.shape)]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("output", types[data.dtype], data.shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@settings(max_examples=40)
@given(case=cases(dtypes=[np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int64)], small=True))
def test_add_mul_min_max_are_onnx_scatter_elements_with_that_reduction(case):
    """ONNX's ScatterElements (opset 18) in onnxruntime and in ONNX's evaluator: include_self=1."""
    import onnxruntime
    from onnx.reference import ReferenceEvaluator

    data, indices, updates, axis, reduction, _ = case
    if reduction == "mean":
        reduction = "add"
    model = _standard_model(data, indices, axis, reduction)
    feed = {"data": data, "indices": indices.astype(np.int64), "updates": updates}
    ours = scatter_elements_reduce(data, indices, updates, axis, reduction, 1)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert_same(ours, session.run(None, feed)[0])
    assert_same(ours, ReferenceEvaluator(model).run(None, feed)[0])


def test_floats_combine_in_ascending_position():
    """(0 + 1e8) + 1 rounds back to 1e8 in float32; the order 1e8, 1, -1e8 gives 0, any other 1 or 0 differently."""
    updates = np.array([1e8, 1.0, -1e8, 1.0], np.float32)
    out = scatter_elements_reduce(np.zeros(2, np.float32), np.array([0, 0, 0, 1]), updates)
    assert out.tolist() == [0.0, 1.0]
    out = scatter_elements_reduce(np.zeros(1, np.float32), np.array([0, 0, 0]), np.array([1.0, 1e8, -1e8], np.float32))
    assert out.tolist() == [0.0]  # 1 + 1e8 = 1e8 in float32
    out = scatter_elements_reduce(np.zeros(1, np.float32), np.array([0, 0, 0]), np.array([1e8, -1e8, 1.0], np.float32))
    assert out.tolist() == [1.0]


def test_min_max_nan_and_signed_zero_follow_numpy():
    nan = np.nan
    data = np.array([-0.0, 0.0, 1.0, nan], np.float32)
    updates = np.array([0.0, -0.0, nan, 2.0, 5.0], np.float32)
    indices = np.array([0, 1, 2, 2, 3])
    out = scatter_elements_reduce(data, indices, updates, reduction="max")
    assert np.signbit(out[0]) and not np.signbit(out[1]) and np.isnan(out[2]) and np.isnan(out[3])  # ties keep what is there
    out = scatter_elements_reduce(data, indices, updates, reduction="min", include_self=0)
    assert not np.signbit(out[0]) and np.signbit(out[1]) and np.isnan(out[2]) and out[3] == 5.0


def test_mean_of_integers_is_floor_division_and_untouched_elements_keep_data():
    data = np.array([10, -7, 5, 3], np.int32)
    indices, updates = np.array([0, 0, 1, 1, 1]), np.array([3, 4, -1, -1, 0], np.int32)
    assert scatter_elements_reduce(data, indices, updates, reduction="mean").tolist() == [5, -3, 5, 3]
    assert scatter_elements_reduce(data, indices, updates, reduction="mean", include_self=0).tolist() == [3, -1, 5, 3]
    assert scatter_elements_reduce(np.array([0, 9], np.uint8), np.array([0, 0]), np.array([255, 2], np.uint8),
                                   reduction="mean", include_self=0).tolist() == [0, 9]  # 255 + 2 wraps to 1


def test_inputs_are_not_changed_and_the_type_is_kept():
    rng = np.random.default_rng(0)
    for dtype in KERNEL_TYPES:
        data, indices, updates = _case(rng, (3, 4), 1, 6, dtype)
        before = [a.copy() for a in (data, indices, updates)]
        out = scatter_elements_reduce(data, indices, updates, axis=1, reduction="mul")
        assert out.dtype == dtype and out.shape == data.shape
        for array, copy in zip((data, indices, updates), before):
            assert_same(array, copy)


@pytest.mark.parametrize("arguments, message", [
    (dict(reduction="sum"), "scatter_elements_reduce: 'reduction' must be one of 'add', 'mul', 'min', 'max', 'mean' (got 'sum')"),
    (dict(include_self=2), "scatter_elements_reduce: 'include_self' must be 0 or 1 (got 2)"),
    (dict(include_self=0.5), "scatter_elements_reduce: 'include_self' must be 0 or 1 (got 0.5)"),
    (dict(include_self=np.array([1])), "scatter_elements_reduce: 'include_self' must be 0 or 1 (got array([1]))"),
    (dict(include_self="True"), "scatter_elements_reduce: 'include_self' must be 0 or 1 (got 'True')"),
    (dict(data=np.zeros(3, bool), updates=np.ones(2, bool)),
     "scatter_elements_reduce: 'data' must be a number type a reduction can combine (not bool) (got bool)"),
    (dict(indices=np.array([0, 3])), r"scatter_elements_reduce: 'indices' values must be in [-3, 2] for a dimension of size 3 (got 3)"),
    (dict(indices=np.array([0.0, 1.0])), "scatter_elements_reduce: 'indices' must have an integer element type (got float64)"),
    (dict(updates=np.ones(3, np.float32)), "scatter_elements_reduce: 'updates' must have shape (2,) (the shape of 'indices') (got shape (3,))"),
    (dict(axis=1), "scatter_elements_reduce: 'axis' must be in [-1, 0] for 'data' of rank 1 (got 1)"),
])
def test_broken_rules_are_one_line(arguments, message):
    inputs = dict(data=np.zeros(3, np.float32), indices=np.array([0, -3]), updates=np.ones(2, np.float32)) | arguments
    with pytest.raises(ScatterInputError) as raised:
        scatter_elements_reduce(**inputs)
    assert str(raised.value) == message


@pytest.mark.parametrize("flag, value", [(True, 1), (False, 0), (np.True_, 1)])
def test_include_self_takes_pytorchs_bool_as_onnxs_int(flag, value):
    rng = np.random.default_rng(3)
    data, indices, updates = _case(rng, (3, 4), 1, 6, np.float32)
    assert_same(scatter_elements_reduce(data, indices, updates, axis=1, reduction="mean", include_self=flag),
                scatter_elements_reduce(data, indices, updates, axis=1, reduction="mean", include_self=value))
    model = scatter_elements_reduce_model([3, 4], [3, 6], axis=1, reduction="mean", include_self=flag)
    assert [(a.name, a.type, a.i) for a in model.graph.node[0].attribute if a.name == "include_self"] == [("include_self", onnx.AttributeProto.INT, value)]


def test_the_package_names_the_function_the_readme_lists():
    from trt_scatter import oracle

    data, indices, updates = np.zeros(3, np.float32), np.array([0, 0, 2]), np.ones(3, np.float32)
    expected = data.copy()
    np.add.at(expected, indices, updates)
    np.testing.assert_array_equal(oracle.scatter_elements_reduce(data, indices, updates), expected)
    assert oracle.check_scatter_elements_reduce is not None
