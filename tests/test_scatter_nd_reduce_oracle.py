"""The ScatterNDReduce oracle against the loop that defines it, eager PyTorch (``index_add``, ``index_reduce``,
``index_put(accumulate=True)``), ONNX's evaluator and onnxruntime. Index rows repeat in every case."""

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from oracle_helpers import seeds
from reduction_helpers import ORACLE_TYPES, REDUCTIONS, assert_same, sequential, values
from trt_scatter.oracle import ScatterInputError
from trt_scatter.oracle.scatter_nd_reduce import scatter_nd_reduce

TORCH_INDEX_REDUCE = {"mul": "prod", "min": "amin", "max": "amax", "mean": "mean"}


def _case(rng, data_shape, k, rows, dtype, index_dtype=np.int64, small=False):
    lead = np.array(data_shape[:k], np.int64)
    indices = rng.integers(0, np.maximum(lead, 1), size=(rows, k)) if k else np.zeros((rows, 0), np.int64)
    indices = np.where(rng.random(indices.shape) < 0.5, indices - lead, indices).astype(index_dtype)
    return values(rng, data_shape, dtype, small), indices, values(rng, (rows,) + tuple(data_shape[k:]), dtype, small)


def _by_loop(data, indices, updates, reduction, include_self):
    k = indices.shape[-1]
    lead = data.shape[:k]
    targets = [np.ravel_multi_index([int(v) % n for v, n in zip(row, lead)], lead) if k else 0 for row in indices.reshape(math.prod(indices.shape[:-1]), k)]
    columns = math.prod(data.shape[k:])
    out = sequential(data.reshape(-1, columns), np.array(targets, np.int64), updates.reshape(-1, columns), reduction, include_self)
    return out.reshape(data.shape)


@st.composite
def cases(draw, dtypes=ORACLE_TYPES, small=False, k=None):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    k = draw(st.integers(0, rank)) if k is None else k
    rng = np.random.default_rng(draw(seeds))
    data, indices, updates = _case(rng, shape, k, draw(st.integers(0, 7)), draw(st.sampled_from(dtypes)),
                                   draw(st.sampled_from([np.int32, np.int64])), small)
    if draw(st.booleans()) and indices.shape[0] % 2 == 0:  # index rows of rank 2
        indices = indices.reshape(2, indices.shape[0] // 2, k)
        updates = updates.reshape((2, indices.shape[1]) + shape[k:])
    return data, indices, updates, draw(st.sampled_from(REDUCTIONS)), draw(st.sampled_from([0, 1]))


@settings(max_examples=150)
@given(case=cases())
def test_matches_the_loop_that_defines_it(case):
    data, indices, updates, reduction, include_self = case
    assert_same(scatter_nd_reduce(data, indices, updates, reduction, include_self), _by_loop(data, indices, updates, reduction, include_self))


TORCH_TYPES = [np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float64)]


@settings(max_examples=60)
@given(case=cases(dtypes=TORCH_TYPES, small=True, k=1))
def test_matches_torch_index_add_and_index_reduce(case):
    """One index column: ``index_add`` (add, include_self=1) and ``index_reduce`` (the others) along axis 0."""
    data, indices, updates, reduction, include_self = case
    index = torch.from_numpy(indices.reshape(-1).astype(np.int64) % data.shape[0])
    source = torch.from_numpy(updates.reshape((-1,) + data.shape[1:]))
    if reduction == "add":
        if not include_self:
            return  # index_add has no include_self
        expected = torch.from_numpy(data).index_add(0, index, source)
    else:
        warnings.filterwarnings("ignore", "index_reduce\\(\\) is in beta")
        expected = torch.from_numpy(data).index_reduce(0, index, source, TORCH_INDEX_REDUCE[reduction], include_self=bool(include_self))
    assert_same(scatter_nd_reduce(data, indices, updates, reduction, include_self), expected.numpy())


@settings(max_examples=40)
@given(case=cases(dtypes=TORCH_TYPES, small=True))
def test_add_matches_torch_index_put_with_accumulate(case):
    data, indices, updates, _, _ = case
    k = indices.shape[-1]
    if k == 0:
        return  # index_put needs an index tensor
    rows = indices.reshape(-1, k).astype(np.int64)
    expected = torch.from_numpy(data).index_put(tuple(torch.from_numpy(rows[:, j]) for j in range(k)),
                                                torch.from_numpy(updates.reshape((-1,) + data.shape[k:])), accumulate=True)
    assert_same(scatter_nd_reduce(data, indices, updates, "add", 1), expected.numpy())


@settings(max_examples=40)
@given(case=cases(dtypes=[np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int64)], small=True))
def test_add_mul_min_max_are_onnx_scatter_nd_with_that_reduction(case):
    import onnxruntime
    from onnx.reference import ReferenceEvaluator

    data, indices, updates, reduction, _ = case
    reduction = "add" if reduction == "mean" else reduction
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64}
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"], reduction=reduction)
    inputs = [helper.make_tensor_value_info("data", types[data.dtype], data.shape),
              helper.make_tensor_value_info("indices", TensorProto.INT64, indices.shape),
              helper.make_tensor_value_info("updates", types[data.dtype], updates.shape)]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("output", types[data.dtype], data.shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    feed = {"data": data, "indices": indices.astype(np.int64), "updates": updates}
    ours = scatter_nd_reduce(data, indices, updates, reduction, 1)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert_same(ours, session.run(None, feed)[0])
    assert_same(ours, ReferenceEvaluator(model).run(None, feed)[0])


def test_rows_combine_in_ascending_position_column_by_column():
    data = np.zeros((2, 2), np.float32)
    updates = np.array([[1e8, 1e8], [1.0, -1e8], [-1e8, 1.0]], np.float32)
    out = scatter_nd_reduce(data, np.array([[1], [-1], [1]]), updates)
    assert out.tolist() == [[0.0, 0.0], [0.0, 1.0]]  # float32: (1e8 + 1) - 1e8 = 0, (1e8 - 1e8) + 1 = 1


def test_k_zero_combines_every_row_into_all_of_data():
    data = np.array([[1, 2], [3, 4]], np.int64)
    out = scatter_nd_reduce(data, np.zeros((3, 0), np.int64), np.stack([data, data, data]), "mean", include_self=0)
    assert out.tolist() == data.tolist()


@pytest.mark.parametrize("arguments, message", [
    (dict(reduction="prod"), "scatter_nd_reduce: 'reduction' must be one of 'add', 'mul', 'min', 'max', 'mean' (got 'prod')"),
    (dict(indices=np.array([[0], [4]])), r"scatter_nd_reduce: 'indices' values must be in [-4, 3] for a dimension of size 4 (got 4)"),
    (dict(indices=np.array([[0], [2**64 - 1]], np.uint64)),  # checked before int64, which would make it -1
     "scatter_nd_reduce: 'indices' values must be in [-4, 3] for a dimension of size 4 (got 18446744073709551615)"),
    (dict(updates=np.ones((2, 2), np.float32)),
     "scatter_nd_reduce: 'updates' must have shape (2, 3) (indices.shape[:-1] + data.shape[indices.shape[-1]:]) (got shape (2, 2))"),
    (dict(data=np.zeros((4, 3), bool), updates=np.ones((2, 3), bool)),
     "scatter_nd_reduce: 'data' must be a number type a reduction can combine (not bool) (got bool)"),
])
def test_broken_rules_are_one_line(arguments, message):
    inputs = dict(data=np.zeros((4, 3), np.float32), indices=np.array([[0], [-4]]), updates=np.ones((2, 3), np.float32)) | arguments
    with pytest.raises(ScatterInputError) as raised:
        scatter_nd_reduce(**inputs)
    assert str(raised.value) == message


def test_the_package_names_the_function_the_readme_lists():
    from trt_scatter import oracle

    data, indices, updates = np.zeros((3, 2), np.float32), np.array([[1], [1]]), np.ones((2, 2), np.float32)
    expected = data.copy()
    np.add.at(expected, indices[:, 0], updates)
    np.testing.assert_array_equal(oracle.scatter_nd_reduce(data, indices, updates), expected)
    assert oracle.check_scatter_nd_reduce is not None
