"""The SliceScatter-15 oracle: the spec's examples, the spec's own NumPy snippet as reference, properties."""

from typing import List, Optional

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle_helpers import (
    assert_bitwise_equal,
    assert_unchanged,
    element_types,
    index_types,
    random_values,
    seeds,
    shapes,
    snapshot,
)

from trt_scatter.oracle import slice_geometry, slice_scatter

INT32_MIN, INT32_MAX = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)
INT64_MIN, INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


# Copied verbatim from the spec (../shared/seeds, "Operator SliceScatter-15 is an equivalent to
# following NumPy snippet"): the reference the oracle must agree with.
def slice_scatter_15(
    data: np.ndarray,
    updates: np.ndarray,
    start: List[int],
    stop: List[int],
    step: List[int],
    axes: Optional[List[int]] = None,
):
    out = np.copy(data)
    if axes is None:
        axes = list(range(len(start)))
    slice_list = [slice(None)] * data.ndim
    for slice_start, slice_stop, slice_step, slice_axis in zip(start, stop, step, axes):
        slice_list[slice_axis] = slice(slice_start, slice_stop, slice_step)
    out[tuple(slice_list)] = updates
    return out


# ---------------------------------------------------------------------------------------------
# The spec's examples, values typed from the spec text.

DATA_2x5 = np.array([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]], np.float32)


def test_example_1_fill_slice_over_axis_0():
    updates = np.array([[10, 20, 30, 40, 50]], np.float32)
    out = slice_scatter(
        DATA_2x5, updates, np.array([0], np.int32), np.array([1], np.int32), np.array([1], np.int32), np.array([0], np.int32)
    )
    np.testing.assert_array_equal(out, np.array([[10, 20, 30, 40, 50], [5, 6, 7, 8, 9]], np.float32))
    assert out.dtype == np.float32


def test_example_2_every_second_value_with_clamped_start_and_stop():
    updates = np.array([[10, 20, 30], [40, 50, 60]], np.float32)
    out = slice_scatter(
        DATA_2x5, updates, np.array([-25], np.int32), np.array([25], np.int32), np.array([2], np.int32), np.array([1], np.int32)
    )
    np.testing.assert_array_equal(out, np.array([[10, 1, 20, 3, 30], [40, 6, 50, 8, 60]], np.float32))


def test_example_3_both_axes_default_axes():
    data = np.array([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14]], np.float32)
    updates = np.array([[50, 60], [70, 80]], np.float32)
    out = slice_scatter(data, updates, np.array([0, 1], np.int32), np.array([3, 5], np.int32), np.array([2, 2], np.int32))
    np.testing.assert_array_equal(out, np.array([[0, 50, 2, 60, 4], [5, 6, 7, 8, 9], [10, 70, 12, 80, 14]], np.float32))


@pytest.mark.parametrize(
    "start, stop, step, dim, expected",
    [
        # (first, count) worked out by hand from the spec's rules.
        (-25, 25, 2, 5, (0, 3)),  # example 2
        (1, 5, 2, 5, (1, 2)),  # example 3, axis 1
        (0, 3, 2, 3, (0, 2)),  # example 3, axis 0
        (4, INT32_MIN, -1, 5, (4, 5)),  # "INT_MIN if slicing backwards"
        (0, INT32_MAX, 1, 5, (0, 5)),  # "INT_MAX to the end"
        (INT64_MAX, INT64_MIN, -2, 5, (4, 3)),  # 4, 2, 0
        (-1, -6, -1, 5, (4, 5)),
        (-1, -5, -1, 5, (4, 4)),  # stops before element 0
        (3, 1, 1, 5, (3, 0)),  # empty
        (7, 9, 1, 5, (5, 0)),  # starts past the end
        (0, 0, 1, 0, (0, 0)),  # zero-sized dimension
        (-1, INT64_MIN, -3, 0, (-1, 0)),
    ],
)
def test_slice_geometry_by_hand(start, stop, step, dim, expected):
    first, count = slice_geometry(start, stop, step, dim)
    assert count == expected[1]
    if count:
        assert first == expected[0]


# ---------------------------------------------------------------------------------------------
# slice_geometry against Python's own slicing of range(dim).

bounds = st.one_of(
    st.integers(-12, 12),
    st.sampled_from([INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX, INT32_MIN + 1, INT64_MAX - 1]),
)
steps = st.one_of(st.integers(-4, 4).filter(bool), st.sampled_from([INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN]))


@given(start=bounds, stop=bounds, step=steps, dim=st.integers(0, 9))
def test_slice_geometry_matches_python_slicing(start, stop, step, dim):
    taken = range(dim)[slice(start, stop, step)]
    first, count = slice_geometry(start, stop, step, dim)
    assert count == len(taken)
    if count:
        assert first == taken[0]
        assert 0 <= first < dim and 0 <= first + (count - 1) * step < dim


# ---------------------------------------------------------------------------------------------
# The oracle against the spec's snippet on random inputs.


def rarely(uncommon, common):
    """``uncommon`` about one time in eight, else ``common``."""
    return st.integers(0, 7).flatmap(lambda roll: uncommon if roll == 0 else common)


def slice_bounds(dim, info):
    """A start or stop for a dimension of size ``dim``: mostly near it, sometimes far off, rarely an extreme."""
    extremes = st.sampled_from([int(info.min), int(info.max), int(info.min) + 1, int(info.max) - 1])
    near = st.integers(-dim - 2, dim + 2)  # in range, negative, and just out of range
    return rarely(extremes, rarely(st.integers(-3 * dim - 9, 3 * dim + 9), near))


def from_start(value, dim):
    return value + dim if value < 0 else value


@st.composite
def slice_scatter_cases(draw):
    """data (rank 1-6, empty dims included), a slice over a random subset of axes, matching updates."""
    shape = draw(shapes())
    rank = len(shape)
    dtype = draw(element_types)
    param_type = draw(index_types)
    info = np.iinfo(param_type)
    use_default_axes = draw(st.booleans())
    if use_default_axes:
        axes = list(range(draw(st.integers(0, rank))))
    else:
        axes = draw(st.permutations(range(rank)))[: draw(st.integers(0, rank))]
        axes = [axis - rank if draw(st.booleans()) else axis for axis in axes]  # negative axes too
    start, stop, step = [], [], []
    for axis in axes:
        dim = shape[axis]
        begin, end = (draw(slice_bounds(dim, info)) for _ in range(2))
        stride = draw(rarely(st.sampled_from([int(info.min), int(info.max)]), st.integers(-3, 3).filter(bool)))
        # Mostly point the slice the way the step goes, so that most slices are not empty.
        if (from_start(end, dim) - from_start(begin, dim)) * stride < 0 and draw(st.integers(0, 3)):
            begin, end = end, begin
        start.append(begin), stop.append(end), step.append(stride)
    rng = np.random.default_rng(draw(seeds))
    data = random_values(rng, shape, dtype)
    # The updates' shape is what the spec's own slicing takes from data.
    index = [slice(None)] * rank
    for begin, end, stride, axis in zip(start, stop, step, axes):
        index[axis] = slice(begin, end, stride)
    updates = random_values(rng, data[tuple(index)].shape, dtype)
    start, stop, step = (np.array(values, dtype=param_type) for values in (start, stop, step))
    return data, updates, start, stop, step, (None if use_default_axes else np.array(axes, draw(index_types)))


@given(slice_scatter_cases())
def test_matches_spec_snippet(case):
    data, updates, start, stop, step, axes = case
    copies = snapshot(data, updates, start, stop, step)
    out = slice_scatter(data, updates, start, stop, step, axes)
    expected = slice_scatter_15(
        data, updates, start.tolist(), stop.tolist(), step.tolist(), None if axes is None else axes.tolist()
    )
    assert_bitwise_equal(out, expected)
    assert out.dtype == data.dtype and out.shape == data.shape
    assert not np.shares_memory(out, data)
    assert_unchanged([data, updates, start, stop, step], copies)


@given(seed=seeds, dtype=element_types, param_type=index_types)
def test_matches_spec_snippet_on_plain_random_slices(seed, dtype, param_type):
    # Hypothesis favours boundary values; these slices are drawn uniformly near each dimension.
    rng = np.random.default_rng(seed)
    for _ in range(10):
        rank = int(rng.integers(1, 7))
        shape = tuple(int(d) for d in rng.integers(1, 6, size=rank))
        axes = [int(a) for a in rng.permutation(rank)[: rng.integers(1, rank + 1)]]
        sizes = np.array([shape[a] for a in axes])
        start, stop = (rng.integers(-sizes - 2, sizes + 3).astype(param_type) for _ in range(2))
        step = rng.choice([-3, -2, -1, 1, 2, 3], size=len(axes)).astype(param_type)
        data = random_values(rng, shape, dtype)
        index = [slice(None)] * rank
        for begin, end, stride, axis in zip(start.tolist(), stop.tolist(), step.tolist(), axes):
            index[axis] = slice(begin, end, stride)
        updates = random_values(rng, data[tuple(index)].shape, dtype)
        out = slice_scatter(data, updates, start, stop, step, np.array(axes, param_type))
        assert_bitwise_equal(out, slice_scatter_15(data, updates, start.tolist(), stop.tolist(), step.tolist(), axes))


@given(slice_scatter_cases())
def test_accepts_python_lists_and_default_axes_equal_explicit_prefix(case):
    data, updates, start, stop, step, axes = case
    if axes is None:
        explicit = slice_scatter(data, updates, start.tolist(), stop.tolist(), step.tolist(), list(range(len(start))))
        assert_bitwise_equal(explicit, slice_scatter(data, updates, start, stop, step))
    else:
        assert_bitwise_equal(
            slice_scatter(data, updates, start.tolist(), stop.tolist(), step.tolist(), axes.tolist()),
            slice_scatter(data, updates, start, stop, step, axes),
        )


@given(dtype=element_types, seed=seeds)
def test_extreme_stops_cover_whole_axis_forwards_and_backwards(dtype, seed):
    rng = np.random.default_rng(seed)
    data = random_values(rng, (3, 4), dtype)
    updates = random_values(rng, (3, 4), dtype)
    for start, stop, step in ((INT64_MIN, INT64_MAX, 1), (INT32_MAX, INT32_MIN, -1), (-1, INT64_MIN, -1)):
        out = slice_scatter(data, updates, np.array([start], np.int64), np.array([stop], np.int64), np.array([step], np.int64), [1])
        assert_bitwise_equal(out, updates if step > 0 else updates[:, ::-1])


@given(dtype=element_types, seed=seeds)
def test_empty_slice_returns_an_unchanged_copy(dtype, seed):
    rng = np.random.default_rng(seed)
    data = random_values(rng, (2, 5), dtype)
    out = slice_scatter(data, np.empty((2, 0), dtype), [4], [1], [1], [-1])
    assert_bitwise_equal(out, data)
    assert not np.shares_memory(out, data)


def test_no_axes_at_all_writes_the_whole_tensor():
    data = np.arange(6, dtype=np.int16).reshape(2, 3)
    updates = -np.arange(6, dtype=np.int16).reshape(2, 3) - 1
    np.testing.assert_array_equal(slice_scatter(data, updates, [], [], []), updates)


@pytest.mark.parametrize("start, stop", [(-10, 0), (INT32_MIN, 0), (-4, -4), (-5, -9), (-4, 2)])
def test_backward_slice_clamped_before_the_first_element_is_empty(start, stop):
    # Regression: the clamped start -1 ("before the first element") was passed to NumPy as a slice
    # start, where -1 means the last element, so the empty slice became a full one and crashed.
    data = np.arange(3, dtype=np.float32)
    assert np.arange(3)[start:stop:-1].size == 0
    out = slice_scatter(data, np.empty(0, np.float32), [start], [stop], [-1])
    np.testing.assert_array_equal(out, [0, 1, 2])


def test_backward_slice_reaching_the_first_element_writes_it():
    out = slice_scatter(np.arange(4), np.array([9, 8, 7]), [2], [-10], [-1])
    np.testing.assert_array_equal(out, [7, 8, 9, 3])


def test_updates_of_another_length_than_the_slice_names_the_slice_that_set_it():
    """A KV cache written at a run-time position past its room: the slice's values, not only 'updates', are named,
    since they may be the mistake (pos=6 in a cache of 8 leaves room for 2 of the 4 new rows)."""
    data, updates = np.zeros((1, 2, 8, 8), np.float32), np.ones((1, 2, 4, 8), np.float32)
    with pytest.raises(ValueError) as caught:
        slice_scatter(data, updates, [6], [10], [1], [2])
    assert str(caught.value) == ("slice_scatter: 'updates' must have shape (1, 2, 2, 8) (data's shape with each sliced axis cut to its "
                                 "slice's length; axis 2's slice (start 6, stop 10, step 1) takes 2 of its 8) (got shape (1, 2, 4, 8))")
    with pytest.raises(ValueError, match=r"cut to its slice's length\) \(got shape \(1, 3, 2, 8\)\)$"):  # the slice fits: not named
        slice_scatter(data, np.ones((1, 3, 2, 8), np.float32), [6], [10], [1], [2])
