"""The ScatterElements oracle: the TensorRT cookbook's ELEMENT example and ONNX's two reference runtimes."""

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

from trt_scatter.oracle import scatter_elements

# ---------------------------------------------------------------------------------------------
# The cookbook's ELEMENT example (ModeElement.py), output typed from the page.


def test_cookbook_element_example():
    data = np.arange(60, dtype=np.float32).reshape(1, 3, 4, 5)
    h, w = np.meshgrid(np.arange(4), np.arange(5), indexing="ij")
    indices = np.broadcast_to((h + w) % 4, (1, 3, 4, 5)).astype(np.int32)
    updates = -data
    # fmt: off
    expected = np.array([[
        [[ -0., -16., -12.,  -8.,  -4.],
         [ -5.,  -1., -17., -13.,  -9.],
         [-10.,  -6.,  -2., -18., -14.],
         [-15., -11.,  -7.,  -3., -19.]],
        [[-20., -36., -32., -28., -24.],
         [-25., -21., -37., -33., -29.],
         [-30., -26., -22., -38., -34.],
         [-35., -31., -27., -23., -39.]],
        [[-40., -56., -52., -48., -44.],
         [-45., -41., -57., -53., -49.],
         [-50., -46., -42., -58., -54.],
         [-55., -51., -47., -43., -59.]],
    ]], np.float32)
    # fmt: on
    # The page's index tensor, first channel (all three are equal).
    np.testing.assert_array_equal(
        indices[0, 0], [[0, 1, 2, 3, 0], [1, 2, 3, 0, 1], [2, 3, 0, 1, 2], [3, 0, 1, 2, 3]]
    )
    out = scatter_elements(data, indices, updates, axis=2)
    np.testing.assert_array_equal(out, expected)
    assert np.signbit(out[0, 0, 0, 0])  # the page prints "-0.": -data[0,0,0,0] lands there
    assert out.dtype == np.float32


# ---------------------------------------------------------------------------------------------
# Against onnx.reference and onnxruntime on random inputs without duplicate targets.


def distinct_indices(rng, data_shape, indices_shape, axis, index_type, negative):
    """Indices whose values along ``axis`` are distinct for each position off it (no duplicate targets)."""
    size = data_shape[axis]
    keys_shape = list(indices_shape)
    keys_shape[axis] = size
    # argsort of random keys along the axis = a random permutation of range(size) per line; keep a prefix.
    permutations = np.argsort(rng.random(keys_shape), axis=axis)
    indices = np.take(permutations, np.arange(indices_shape[axis]), axis=axis)
    if negative:  # the same targets, some counted from the end
        indices = np.where(rng.random(indices.shape) < 0.5, indices - size, indices)
    return indices.astype(index_type)


@st.composite
def scatter_elements_cases(draw, dtypes=element_types):
    data_shape = draw(shapes())
    rank = len(data_shape)
    axis = draw(st.integers(-rank, rank - 1))
    # Off the axis indices may be smaller than data; along it, at most data's size (no duplicates).
    indices_shape = maybe_empty(draw, [draw(st.integers(min(1, d), d)) for d in data_shape])
    dtype = draw(dtypes)
    rng = np.random.default_rng(draw(seeds))
    indices = distinct_indices(rng, data_shape, indices_shape, axis, draw(index_types), draw(st.booleans()))
    data = random_values(rng, data_shape, dtype)
    updates = random_values(rng, indices_shape, dtype)
    return data, indices, updates, axis


def check_against(runtime, case):
    data, indices, updates, axis = case
    copies = snapshot(data, indices, updates)
    out = scatter_elements(data, indices, updates, axis)
    assert_bitwise_equal(out, run_onnx(runtime, "ScatterElements", data, indices, updates, axis=axis))
    assert out.dtype == data.dtype and out.shape == data.shape
    assert not np.shares_memory(out, data)
    assert_unchanged([data, indices, updates], copies)


@given(scatter_elements_cases())
def test_matches_onnx_reference_evaluator(case):
    check_against("reference", case)


@given(scatter_elements_cases(dtypes=st.sampled_from(ORT_ELEMENT_TYPES)))
def test_matches_onnxruntime(case):
    check_against("onnxruntime", case)


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_bfloat16_matches_onnx_reference_evaluator(index_type):
    # onnxruntime cannot take bfloat16 arrays from NumPy; the reference evaluator can.
    rng = np.random.default_rng(7)
    data = random_values(rng, (3, 4, 2), BFLOAT16)
    indices = distinct_indices(rng, (3, 4, 2), (2, 4, 2), 1, index_type, negative=True)
    updates = random_values(rng, (2, 4, 2), BFLOAT16)
    out = scatter_elements(data, indices, updates, 1)
    assert out.dtype == BFLOAT16
    assert_bitwise_equal(out, run_onnx("reference", "ScatterElements", data, indices, updates, axis=1))


@given(dtype=element_types, seed=seeds)
def test_negative_index_is_the_same_target_as_its_positive(dtype, seed):
    rng = np.random.default_rng(seed)
    data = random_values(rng, (4, 5), dtype)
    indices = np.array([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]], np.int64)
    updates = random_values(rng, (2, 5), dtype)
    positive = scatter_elements(data, indices, updates, axis=1)
    negative = scatter_elements(data, indices - 5, updates, axis=1)
    assert_bitwise_equal(positive, negative)
    # and rows 2 and 3, outside indices' extent, keep data
    assert_bitwise_equal(positive[2:], data[2:])


def test_default_axis_is_0():
    data = np.zeros((3, 2), np.int8)
    out = scatter_elements(data, np.array([[2, 0]]), np.array([[5, 6]], np.int8))
    np.testing.assert_array_equal(out, [[0, 6], [0, 0], [5, 0]])


@pytest.mark.parametrize("first, second, warned", [(2.0, 2.0, False), (2.0, 3.0, True), (0.0, -0.0, True), (np.nan, np.nan, False)],
                         ids=["same-values", "other-values", "signed-zeros", "the-same-nan"])
def test_an_element_written_twice_is_undefined_only_where_its_values_differ(first, second, warned):
    """As for ScatterND: the lowering's identity fill writes one value at repeated indices, which is defined."""
    from trt_scatter import oracle
    from trt_scatter.ops import STANDARD_OPS
    from trt_scatter.oracle.rules import Known

    repeated_target = oracle.module(STANDARD_OPS["ScatterElements"]).repeated_target
    indices = np.array([[0, 1], [-4, 3], [1, 3]])  # along axis 0: column 0 writes row 0 twice (equal values), column 1 row 3 twice
    updates = np.full((3, 2), 5.0, np.float32)
    updates[1, 1], updates[2, 1] = first, second
    known = {"data": np.zeros((4, 2), np.float32), "indices": indices, "updates": updates}
    assert repeated_target(Known(known, {"axis": 0})) == ("two elements of 'indices' on one line along axis 0 (line 1) both write position 3"
                                                         if warned else None)
    assert repeated_target(Known({"data": known["data"], "indices": indices}, {"axis": 0})) == (
        "two elements of 'indices' on one line along axis 0 (line 0) both write position 0")
