"""The ScatterND / ScatterNDUpdate-3 oracle: the specs' examples and ONNX's two reference runtimes."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle_helpers import (
    BFLOAT16,
    ORT_ELEMENT_TYPES,
    assert_bitwise_equal,
    assert_unchanged,
    element_types,
    index_types,
    maybe_empty,
    random_values,
    run_onnx,
    seeds,
    shapes,
    snapshot,
)

from trt_scatter.oracle import scatter_nd, scatter_nd_update

# ---------------------------------------------------------------------------------------------
# The examples of ScatterNDUpdate-3 and of the TensorRT cookbook, values typed from the pages.


def test_openvino_example_1_single_elements():
    data = np.array([1, 2, 3, 4, 5, 6, 7, 8], np.int32)
    indices = np.array([[4], [3], [1], [7]], np.int64)
    updates = np.array([9, 10, 11, 12], np.int32)
    out = scatter_nd_update(data, indices, updates)
    np.testing.assert_array_equal(out, [1, 11, 3, 10, 9, 6, 7, 12])
    assert out.dtype == np.int32


def test_openvino_example_2_slices():
    # fmt: off
    data = np.array([[[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]],
                     [[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]],
                     [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]],
                     [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]]], np.float32)
    indices = np.array([[0], [2]], np.int32)
    updates = np.array([[[5, 5, 5, 5], [6, 6, 6, 6], [7, 7, 7, 7], [8, 8, 8, 8]],
                        [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3], [4, 4, 4, 4]]], np.float32)
    expected = np.array([[[5, 5, 5, 5], [6, 6, 6, 6], [7, 7, 7, 7], [8, 8, 8, 8]],
                         [[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]],
                         [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3], [4, 4, 4, 4]],
                         [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]]], np.float32)
    # fmt: on
    np.testing.assert_array_equal(scatter_nd_update(data, indices, updates), expected)


def test_openvino_shape_example():
    # data [1000, 256, 10, 15], indices [25, 125, 3], updates [25, 125, 15]: shapes only.
    from trt_scatter.oracle import check_scatter_nd

    check_scatter_nd((1000, 256, 10, 15), (25, 125, 3), (25, 125, 15))


def test_cookbook_nd_example():
    data = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    # fmt: off
    indices = np.array([[[0, 2, 1, 1], [1, 0, 3, 2], [0, 1, 2, 3]],
                        [[1, 2, 1, 1], [0, 0, 3, 2], [1, 1, 2, 3]]], np.int32)
    # fmt: on
    updates = -np.array([[0, 1, 2], [3, 4, 5]], np.float32)
    out = scatter_nd(data, indices, updates)
    # The page's output differs from data in these six cells (read off the printed tensor).
    changed = {(0, 2, 1, 1): -0.0, (1, 0, 3, 2): -1.0, (0, 1, 2, 3): -2.0, (1, 2, 1, 1): -3.0, (0, 0, 3, 2): -4.0, (1, 1, 2, 3): -5.0}
    # and the page shows those cells' old values at those places: 46, 77, 33, 106, 17, 93
    assert [data[cell] for cell in changed] == [46, 77, 33, 106, 17, 93]
    expected = data.copy()
    for cell, value in changed.items():
        expected[cell] = value
    np.testing.assert_array_equal(out, expected)
    assert np.signbit(out[0, 2, 1, 1])  # printed "-0."
    assert int((out != data).sum()) == 6


# ---------------------------------------------------------------------------------------------
# Against onnx.reference and onnxruntime on random inputs without duplicate rows.


def distinct_rows(rng, data_shape, batch_shape, k, index_type, negative):
    """``batch_shape + (k,)`` indices addressing distinct elements/slices of data's first k dimensions."""
    leading = data_shape[:k]
    count = int(np.prod(batch_shape))
    flat = rng.choice(int(np.prod(leading)), size=count, replace=False)
    rows = np.stack(np.unravel_index(flat, leading), axis=-1) if k else np.zeros((count, 0), np.int64)
    if negative:  # the same targets, some coordinates counted from the end
        rows = np.where(rng.random(rows.shape) < 0.5, rows - np.array(leading, np.int64), rows)
    return rows.reshape(tuple(batch_shape) + (k,)).astype(index_type)


@st.composite
def scatter_nd_cases(draw, dtypes=element_types):
    data_shape = draw(shapes(rank_max=5))
    rank = len(data_shape)
    k = draw(st.integers(0, rank))
    room = int(np.prod(data_shape[:k]))  # distinct rows available
    batch_shape = maybe_empty(draw, draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    if int(np.prod(batch_shape)) > room:
        batch_shape = (room,)
    dtype = draw(dtypes)
    rng = np.random.default_rng(draw(seeds))
    indices = distinct_rows(rng, data_shape, batch_shape, k, draw(index_types), draw(st.booleans()))
    data = random_values(rng, data_shape, dtype)
    updates = random_values(rng, tuple(batch_shape) + tuple(data_shape[k:]), dtype)
    return data, indices, updates


def check_against(runtime, case):
    data, indices, updates = case
    copies = snapshot(data, indices, updates)
    out = scatter_nd(data, indices, updates)
    # ONNX ScatterND takes int64 indices only; the oracle takes int32 too.
    assert_bitwise_equal(out, run_onnx(runtime, "ScatterND", data, indices.astype(np.int64), updates))
    assert out.dtype == data.dtype and out.shape == data.shape
    assert not np.shares_memory(out, data)
    assert_unchanged([data, indices, updates], copies)


@given(scatter_nd_cases())
def test_matches_onnx_reference_evaluator(case):
    check_against("reference", case)


@given(scatter_nd_cases(dtypes=st.sampled_from(ORT_ELEMENT_TYPES)))
def test_matches_onnxruntime(case):
    check_against("onnxruntime", case)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_bfloat16_matches_onnx_reference_evaluator(k):
    # onnxruntime cannot take bfloat16 arrays from NumPy; the reference evaluator can.
    rng = np.random.default_rng(k)
    data = random_values(rng, (3, 4, 2), BFLOAT16)
    indices = distinct_rows(rng, (3, 4, 2), (2,), k, np.int32, negative=True)
    updates = random_values(rng, (2,) + (3, 4, 2)[k:], BFLOAT16)
    out = scatter_nd(data, indices, updates)
    assert out.dtype == BFLOAT16
    assert_bitwise_equal(out, run_onnx("reference", "ScatterND", data, indices.astype(np.int64), updates))


@pytest.mark.parametrize("runtime", ["reference", "onnxruntime"])
@pytest.mark.parametrize("indices_shape", [(0,), (1, 0)])
def test_empty_index_row_addresses_all_of_data(runtime, indices_shape):
    # k = 0: one row (indices.shape[:-1] has one element) whose target is the whole tensor.
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    indices = np.zeros(indices_shape, np.int64)
    updates = -np.arange(6, dtype=np.float32).reshape(indices_shape[:-1] + (2, 3)) - 1
    out = scatter_nd(data, indices, updates)
    np.testing.assert_array_equal(out.reshape(2, 3), updates.reshape(2, 3))
    assert_bitwise_equal(out, run_onnx(runtime, "ScatterND", data, indices, updates))


@pytest.mark.parametrize("runtime", ["reference", "onnxruntime"])
def test_no_rows_at_all_keep_data(runtime):
    data = np.arange(6, dtype=np.int16).reshape(2, 3)
    for indices, updates in ((np.zeros((0, 0), np.int64), np.zeros((0, 2, 3), np.int16)), (np.zeros((0, 2), np.int64), np.zeros((0,), np.int16))):
        out = scatter_nd(data, indices, updates)
        assert_bitwise_equal(out, data)
        assert_bitwise_equal(out, run_onnx(runtime, "ScatterND", data, indices, updates))


def test_scatter_nd_update_is_scatter_nd():
    assert scatter_nd_update is scatter_nd


@pytest.mark.parametrize("first, second, warned", [(2.0, 2.0, False), (2.0, 3.0, True), (0.0, -0.0, True), (np.nan, np.nan, False)],
                         ids=["same-values", "other-values", "signed-zeros", "the-same-nan"])
def test_a_target_written_twice_is_undefined_only_where_its_values_differ(first, second, warned):
    """A lowered include_self=0 reduction first writes the reduction's identity at every index: repeated rows then write
    the same value, a defined result that the reference warned of in every run. Values compare by their bits."""
    from trt_scatter import oracle
    from trt_scatter.ops import STANDARD_OPS
    from trt_scatter.oracle.rules import Known

    repeated_target = oracle.module(STANDARD_OPS["ScatterND"]).repeated_target
    indices = np.array([[0], [2], [-6], [2]])  # row 0 twice (0 and -6 into 6 rows) with equal values; row 2 twice
    updates = np.full((4, 3), 5.0, np.float32)
    updates[1], updates[3] = first, second
    known = {"data": np.zeros((6, 3), np.float32), "indices": indices, "updates": updates}
    assert repeated_target(Known(known, {})) == ("rows 1 and 3 of 'indices' both write (2,)" if warned else None)
    assert repeated_target(Known({"data": known["data"], "indices": indices}, {})) == "rows 0 and 2 of 'indices' both write (0,)"
    assert repeated_target(Known({**known, "updates": np.zeros((2, 3), np.float32)}, {})) is not None  # updates that do not fit
