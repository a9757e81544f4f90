"""The ScatterUpdate-3 oracle: the spec's examples, an independent loop formulation, properties."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle_helpers import (
    assert_bitwise_equal,
    assert_unchanged,
    element_types,
    index_types,
    maybe_empty,
    random_values,
    seeds,
    shapes,
    snapshot,
)

from trt_scatter.oracle import ScatterInputError, check_scatter_update, scatter_update


def scatter_update_by_loop(data, indices, updates, axis):
    """The spec's formula, one index at a time: ``data[..., indices[m..p], ...] = updates[..., m..p, ...]``.

    With ``axis`` moved to the front of data and the indices' axes moved to the front of updates,
    position ``m..p`` of indices selects one slice of each.
    """
    out = np.copy(data)
    axis = axis % data.ndim
    target = np.moveaxis(out, axis, 0)  # a view: writing it writes out
    sources = np.moveaxis(updates, list(range(axis, axis + indices.ndim)), list(range(indices.ndim)))
    for position in np.ndindex(*indices.shape):
        target[int(indices[position])] = sources[position]
    return out


# ---------------------------------------------------------------------------------------------
# The spec's examples, values typed from the spec text.


def test_example_2():
    data = np.array(
        [[-1.0, 1.0, -1.0, 3.0, 4.0], [-1.0, 6.0, -1.0, 8.0, 9.0], [-1.0, 11.0, 1.0, 13.0, 14.0]], np.float32
    )
    indices = np.array([0, 2], np.int64)
    updates = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 2.0]], np.float32)
    out = scatter_update(data, indices, updates, np.array([1], np.int64))
    expected = np.array([[1.0, 1.0, 1.0, 3.0, 4.0], [1.0, 6.0, 1.0, 8.0, 9.0], [1.0, 11.0, 2.0, 13.0, 14.0]], np.float32)
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.float32


def test_example_1_shapes():
    # data [1000, 256, 10, 15], indices [125, 20], updates [1000, 125, 20, 10, 15], axis [1]: only the
    # shapes are given, so check the shape rules (the tensors would be 150 MB).
    assert check_scatter_update((1000, 256, 10, 15), (125, 20), (1000, 125, 20, 10, 15), 1) == 1


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_examples_of_indices_rank_for_axis_0_from_the_spec(axis):
    # "indices is a 0 D tensor: data[indices, ...] = updates[...]" (here for any axis).
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    moved = np.moveaxis(data, axis, 0)
    updates = -np.ones(moved.shape[1:], np.int32)
    out = scatter_update(data, np.array(2, np.int32), updates, axis)
    expected = data.copy()
    np.moveaxis(expected, axis, 0)[2] = -1
    np.testing.assert_array_equal(out, expected)


# ---------------------------------------------------------------------------------------------
# The oracle against the loop, on random inputs without duplicate indices.


@st.composite
def scatter_update_cases(draw):
    shape = draw(shapes())
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1))
    size = shape[axis]
    # Distinct indices (duplicates are undefined), shaped 0-D to 3-D.
    indices_rank = draw(st.integers(0, 3))
    indices_shape = maybe_empty(draw, draw(st.lists(st.integers(1, 3), min_size=indices_rank, max_size=indices_rank)))
    count = int(np.prod(indices_shape))
    if count > size:
        indices_shape = (size,) if indices_rank else ()
        count = size if indices_rank else 1
    if count > size:  # a 0-D index into an empty axis: no valid index exists
        indices_shape, count = (0,), 0
    rng = np.random.default_rng(draw(seeds))
    indices = rng.permutation(size)[:count].reshape(indices_shape).astype(draw(index_types))
    dtype = draw(element_types)
    data = random_values(rng, shape, dtype)
    normalized = axis % rank
    updates = random_values(rng, shape[:normalized] + indices_shape + shape[normalized + 1 :], dtype)
    axis_as = draw(st.sampled_from(["int", "0-d", "1-d"]))
    axis_type = draw(index_types)
    axis_input = {"int": axis, "0-d": np.array(axis, axis_type), "1-d": np.array([axis], axis_type)}[axis_as]
    return data, indices, updates, axis_input


@given(scatter_update_cases())
def test_matches_loop_over_indices(case):
    data, indices, updates, axis = case
    copies = snapshot(data, indices, updates, axis)
    out = scatter_update(data, indices, updates, axis)
    assert_bitwise_equal(out, scatter_update_by_loop(data, indices, updates, int(np.asarray(axis).reshape(()))))
    assert out.dtype == data.dtype and out.shape == data.shape
    assert not np.shares_memory(out, data)
    assert_unchanged([data, indices, updates, np.asarray(axis)], copies)


@given(dtype=element_types, seed=seeds, index_type=index_types)
def test_slices_not_indexed_keep_data(dtype, seed, index_type):
    rng = np.random.default_rng(seed)
    data = random_values(rng, (2, 6, 3), dtype)
    indices = np.array([[4, 1]], index_type)
    updates = random_values(rng, (2, 1, 2, 3), dtype)
    out = scatter_update(data, indices, updates, -2)
    untouched = [0, 2, 3, 5]
    assert_bitwise_equal(out[:, untouched], data[:, untouched])
    assert_bitwise_equal(out[:, 4], updates[:, 0, 0])
    assert_bitwise_equal(out[:, 1], updates[:, 0, 1])


def test_static_check_with_shapes_not_known():
    """Before anything runs (validation, the plugin's build): only what is known is checked."""
    from trt_scatter.oracle.scatter_update import check_scatter_update_static

    assert check_scatter_update_static(None, (2,), (2, 5), 0) is None  # data's rank not known: nothing to normalize against
    assert check_scatter_update_static((3, 5), None, None, -1) == 1
    assert check_scatter_update_static((3, 5), None, (2, 5)) is None
    with pytest.raises(ScatterInputError, match="scatter_update: 'axis' must be in"):
        check_scatter_update_static((3, 5), None, None, 2)


def test_static_check_with_the_axis_not_known_names_the_rule_the_fitting_axis_breaks():
    """With the axis known only at run time (a plugin's build): where the shapes fit an axis and another rule fails there
    (data's dimension 0 has no row, so the index must be empty), that rule is named, not a shape none fits."""
    from trt_scatter.oracle.scatter_update import check_scatter_update_static

    with pytest.raises(ScatterInputError, match=r"'indices' must be empty: data's dimension 0 has size 0"):
        check_scatter_update_static((0, 8), (1,), (1, 8))
    with pytest.raises(ScatterInputError, match=r"'updates' must have shape data.shape\[:axis\] \+ indices.shape \+ data.shape\[axis\+1:\] for some axis"):
        check_scatter_update_static((3, 8), (2,), (5, 8))


@pytest.mark.parametrize("axis", [1, -2])
@pytest.mark.parametrize("first, second, warned", [(2.0, 2.0, False), (2.0, 3.0, True), (0.0, -0.0, True), (np.nan, np.nan, False)],
                         ids=["same-values", "other-values", "signed-zeros", "the-same-nan"])
def test_a_slice_named_twice_is_undefined_only_where_its_values_differ(axis, first, second, warned):
    """index_fill writes one value into every slice: a repeated index gives a defined result, and warned all the same.
    Values compare by their bits: which of 0.0 and -0.0 is written last decides the sign of the result."""
    from trt_scatter import oracle
    from trt_scatter.ops import OPS
    from trt_scatter.oracle.rules import Known

    repeated_target = oracle.module(OPS["ScatterUpdate"]).repeated_target
    indices = np.array([[0, 2], [0, 2]])  # slice 0 named at (0, 0) and (1, 0) with equal values; slice 2 at (0, 1) and (1, 1)
    updates = np.full((3, 2, 2, 4), 5.0, np.float32)
    updates[:, 0, 1], updates[:, 1, 1] = first, second
    known = {"data": np.zeros((3, 5, 4), np.float32), "indices": indices, "updates": updates, "axis": np.array([axis])}
    assert repeated_target(Known(known, {})) == ("'indices' names slice 2 twice (elements 1 and 3)" if warned else None)
    assert repeated_target(Known({"indices": indices}, {})) == "'indices' names slice 0 twice (elements 0 and 2)"  # no values known
    assert repeated_target(Known({**known, "updates": np.zeros((2, 2), np.float32)}, {})) is not None  # updates that do not fit
