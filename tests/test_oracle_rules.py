"""Every input rule of every op: the oracle raises ScatterInputError naming the op, input, rule and value.

Each case calls an oracle function (or a ``check_*`` shape function, as the network builders do)
with exactly one rule broken; everything else about the call is valid.
"""

import re
import sys

import ml_dtypes
import numpy as np
import pytest

from trt_scatter import ScatterInputError
from trt_scatter import dtypes
from trt_scatter.oracle import (
    check_scatter_elements,
    check_scatter_nd,
    check_scatter_update,
    check_slice_scatter,
    rules,
    scatter_elements,
    scatter_nd,
    scatter_update,
    slice_scatter,
    tensor_scatter,
)

F32 = np.float32
DATA = np.arange(12, dtype=F32).reshape(3, 4)
SCALAR = np.array(1.0, F32)
RAGGED = "must be a rectangular array: its nested lists of one length at each level"


def se(data=DATA, indices=np.zeros((2, 4), np.int64), updates=np.ones((2, 4), F32), axis=0):
    return scatter_elements(data, indices, updates, axis)


def nd(data=DATA, indices=np.array([[0], [2]], np.int64), updates=np.ones((2, 4), F32)):
    return scatter_nd(data, indices, updates)


def su(data=DATA, indices=np.array([0, 2], np.int64), updates=np.ones((3, 2), F32), axis=1):
    return scatter_update(data, indices, updates, axis)


def ss(data=DATA, updates=np.ones((3, 2), F32), start=(0,), stop=(4,), step=(2,), axes=(1,)):
    return slice_scatter(data, updates, np.array(start), np.array(stop), np.array(step), None if axes is None else np.array(axes))


def case(id, call, op, input_name, rule, got):
    return pytest.param(call, op, input_name, rule, got, id=id)


CASES = [
    # data rank < 1
    case("se-data-rank-0", lambda: se(SCALAR, np.array(0), SCALAR), "scatter_elements", "data", "must have rank >= 1", "shape ()"),
    case("nd-data-rank-0", lambda: nd(SCALAR, np.zeros((0,), np.int64), SCALAR), "scatter_nd", "data", "must have rank >= 1", "shape ()"),
    case("su-data-rank-0", lambda: su(SCALAR, np.array(0), SCALAR, 0), "scatter_update", "data", "must have rank >= 1", "shape ()"),
    case("ss-data-rank-0", lambda: ss(SCALAR, SCALAR, (), (), (), None), "slice_scatter", "data", "must have rank >= 1", "shape ()"),
    # updates of the wrong shape
    case("se-updates-shape", lambda: se(updates=np.ones((2, 3), F32)), "scatter_elements", "updates", "must have shape (2, 4) (the shape of 'indices')", "shape (2, 3)"),
    case("nd-updates-shape", lambda: nd(updates=np.ones((2, 5), F32)), "scatter_nd", "updates", "must have shape (2, 4)", "shape (2, 5)"),
    case("nd-updates-rank", lambda: nd(updates=np.ones((2,), F32)), "scatter_nd", "updates", "must have shape (2, 4)", "shape (2,)"),
    case("su-updates-shape", lambda: su(updates=np.ones((3, 3), F32)), "scatter_update", "updates", "must have shape (3, 2) (data.shape[:axis] + indices.shape", "shape (3, 3)"),
    case("su-updates-shape-1d", lambda: su(np.zeros(4, F32), np.array([1, 2]), np.ones(3, F32), 0), "scatter_update", "updates", "must have shape (2,)", "shape (3,)"),
    case("ss-updates-shape", lambda: ss(updates=np.ones((3, 3), F32)), "slice_scatter", "updates", "must have shape (3, 2)", "shape (3, 3)"),
    case("ss-updates-shape-clamped", lambda: ss(updates=np.ones((3, 4), F32), start=(-9,), stop=(99,), step=(2,)), "slice_scatter", "updates", "must have shape (3, 2)", "shape (3, 4)"),
    # indices of the wrong rank or size
    case("se-indices-rank", lambda: se(indices=np.zeros(8, np.int64), updates=np.ones(8, F32)), "scatter_elements", "indices", "must have the rank of 'data' (2)", "shape (8,)"),
    case("se-indices-dim-off-axis", lambda: se(indices=np.zeros((2, 5), np.int64), updates=np.ones((2, 5), F32)), "scatter_elements", "indices", "dimension 1 must be at most data's (4) off the axis", "shape (2, 5)"),
    case("se-indices-dim-off-negative-axis", lambda: se(indices=np.zeros((4, 2), np.int64), updates=np.ones((4, 2), F32), axis=-1), "scatter_elements", "indices", "dimension 0 must be at most data's (3)", "shape (4, 2)"),
    case("nd-indices-rank-0", lambda: nd(indices=np.array(0), updates=np.ones(4, F32)), "scatter_nd", "indices", "must have rank >= 1", "shape ()"),
    case("nd-indices-last-dim", lambda: nd(indices=np.zeros((2, 3), np.int64), updates=np.ones(2, F32)), "scatter_nd", "indices", "last dimension must be at most the rank of 'data' (2)", "shape (2, 3)"),
    # axis / axes out of range
    case("se-axis-too-large", lambda: se(axis=2), "scatter_elements", "axis", "must be in [-2, 1] for 'data' of rank 2", "2"),
    case("se-axis-too-small", lambda: se(axis=-3), "scatter_elements", "axis", "must be in [-2, 1]", "-3"),
    case("su-axis-too-large", lambda: su(axis=np.array([2], np.int32)), "scatter_update", "axis", "must be in [-2, 1] for 'data' of rank 2", "2"),
    case("su-axis-too-small", lambda: su(axis=-3), "scatter_update", "axis", "must be in [-2, 1]", "-3"),
    case("ss-axes-too-large", lambda: ss(axes=(2,)), "slice_scatter", "axes", "must be in [-2, 1] for 'data' of rank 2", "2"),
    case("ss-axes-too-small", lambda: ss(axes=(-3,)), "slice_scatter", "axes", "must be in [-2, 1]", "-3"),
    case("ss-default-axes-too-many", lambda: ss(updates=np.ones((3, 4, 1), F32)[..., 0], start=(0, 0, 0), stop=(9, 9, 9), step=(1, 1, 1), axes=None), "slice_scatter", "start",
         "must have at most 2 entries for 'data' of rank 2 where 'axes' is not given", "3"),
    # axis not an integer
    case("se-axis-float", lambda: se(axis=1.0), "scatter_elements", "axis", "must be an integer", "1.0"),
    case("se-axis-bool", lambda: se(axis=True), "scatter_elements", "axis", "must be an integer", "True"),
    case("se-axis-str", lambda: se(axis="0"), "scatter_elements", "axis", "must be an integer", "'0'"),
    case("su-axis-float", lambda: su(axis=1.0), "scatter_update", "axis", "must have an integer element type", "float64"),
    case("su-axis-float-tensor", lambda: su(axis=np.array([1.0], F32)), "scatter_update", "axis", "must have an integer element type", "float32"),
    case("su-axis-bool", lambda: su(axis=np.array(True)), "scatter_update", "axis", "must have an integer element type", "bool"),
    case("ss-axes-float", lambda: ss(axes=(1.0,)), "slice_scatter", "axes", "must have an integer element type", "float64"),
    case("ss-check-axes-float", lambda: check_slice_scatter((3, 4), (3, 2), [0], [4], [2], [1.5]), "slice_scatter", "axes", "must be an integer", "1.5"),
    # scatter_update's axis: a scalar or one element
    case("su-axis-two-elements", lambda: su(axis=np.array([1, 0])), "scatter_update", "axis", "must be a scalar or a 1-D tensor with one element", "shape (2,)"),
    case("su-axis-no-element", lambda: su(axis=np.array([], np.int64)), "scatter_update", "axis", "must be a scalar or a 1-D tensor with one element", "shape (0,)"),
    case("su-axis-2d", lambda: su(axis=np.array([[1]])), "scatter_update", "axis", "must be a scalar or a 1-D tensor with one element", "shape (1, 1)"),
    # slice_scatter's start/stop/step/axes
    case("ss-duplicate-axes", lambda: ss(np.zeros((3, 4, 5), F32), np.ones((3, 2, 5), F32), (0, 0), (4, 4), (2, 2), (1, 1)), "slice_scatter", "axes", "must not repeat an axis", "[1, 1]"),
    case("ss-duplicate-axes-negative", lambda: ss(updates=np.ones((3, 2), F32), start=(0, 0), stop=(4, 4), step=(2, 2), axes=(1, -1)), "slice_scatter", "axes", "must not repeat an axis (counted from the start: [1, 1])", "[1, -1]"),
    case("ss-step-0", lambda: ss(step=(0,)), "slice_scatter", "step", "must not contain 0", "[0]"),
    case("ss-step-0-second", lambda: ss(updates=DATA, start=(0, 0), stop=(3, 4), step=(1, 0), axes=None), "slice_scatter", "step", "must not contain 0", "[1, 0]"),
    case("ss-start-longer", lambda: ss(start=(0, 0)), "slice_scatter", "start/stop/step/axes", "must have equal lengths", "{'start': 2, 'stop': 1, 'step': 1, 'axes': 1}"),
    case("ss-stop-longer", lambda: ss(stop=(4, 4)), "slice_scatter", "start/stop/step/axes", "must have equal lengths", "{'start': 1, 'stop': 2, 'step': 1, 'axes': 1}"),
    case("ss-step-longer", lambda: ss(step=(2, 2)), "slice_scatter", "start/stop/step/axes", "must have equal lengths", "{'start': 1, 'stop': 1, 'step': 2, 'axes': 1}"),
    case("ss-axes-longer", lambda: ss(axes=(1, 0)), "slice_scatter", "start/stop/step/axes", "must have equal lengths", "{'start': 1, 'stop': 1, 'step': 1, 'axes': 2}"),
    case("ss-start-scalar", lambda: slice_scatter(DATA, np.ones((3, 2), F32), np.int64(0), [4], [2], [1]), "slice_scatter", "start", "must be a 1-D tensor", "a scalar 0"),
    case("ss-start-2d", lambda: ss(start=((0,),)), "slice_scatter", "start", "must be a 1-D tensor", "shape (1, 1)"),
    case("ss-stop-2d", lambda: ss(stop=((4,),)), "slice_scatter", "stop", "must be a 1-D tensor", "shape (1, 1)"),
    case("ss-step-scalar", lambda: slice_scatter(DATA, np.ones((3, 2), F32), [0], [4], np.int32(2), [1]), "slice_scatter", "step", "must be a 1-D tensor", "a scalar 2"),
    case("ss-axes-2d", lambda: ss(axes=((1,),)), "slice_scatter", "axes", "must be a 1-D tensor", "shape (1, 1)"),
    # index inputs of a non-integer type
    case("se-indices-float", lambda: se(indices=np.zeros((2, 4), F32)), "scatter_elements", "indices", "must have an integer element type", "float32"),
    case("se-indices-bool", lambda: se(indices=np.zeros((2, 4), bool)), "scatter_elements", "indices", "must have an integer element type", "bool"),
    case("nd-indices-float", lambda: nd(indices=np.array([[0.0], [2.0]])), "scatter_nd", "indices", "must have an integer element type", "float64"),
    case("nd-indices-bool", lambda: nd(indices=np.array([[False], [True]])), "scatter_nd", "indices", "must have an integer element type", "bool"),
    case("su-indices-float", lambda: su(indices=np.array([0.0, 2.0], F32)), "scatter_update", "indices", "must have an integer element type", "float32"),
    case("su-indices-bool", lambda: su(indices=np.array([True, False])), "scatter_update", "indices", "must have an integer element type", "bool"),
    case("ss-start-float", lambda: ss(start=(0.0,)), "slice_scatter", "start", "must have an integer element type", "float64"),
    case("ss-start-bool", lambda: ss(start=(False,)), "slice_scatter", "start", "must have an integer element type", "bool"),
    case("ss-stop-float", lambda: ss(stop=(np.float16(4),)), "slice_scatter", "stop", "must have an integer element type", "float16"),
    case("ss-step-float", lambda: ss(step=(2.0,)), "slice_scatter", "step", "must have an integer element type", "float64"),
    case("ss-start-too-big-for-int64", lambda: slice_scatter(DATA, np.ones((3, 2), F32), [2**64], [4], [2], [1]), "slice_scatter", "start", "values must fit in int64 or uint64 (an integer tensor's)", str(2**64)),
    # index values out of range
    case("su-indices-negative", lambda: su(indices=np.array([0, -1])), "scatter_update", "indices", "values must be in [0, 3] for a dimension of size 4", "-1"),
    case("su-indices-too-large", lambda: su(indices=np.array([4, 0])), "scatter_update", "indices", "values must be in [0, 3] for a dimension of size 4", "4"),
    case("su-indices-0d-too-large", lambda: su(indices=np.array(3), updates=np.ones(4, F32), axis=0), "scatter_update", "indices", "values must be in [0, 2]", "3"),
    case("se-indices-below-minus-s", lambda: se(indices=np.array([[0, 1, -4, 2]]), updates=np.ones((1, 4), F32)), "scatter_elements", "indices", "values must be in [-3, 2] for a dimension of size 3", "-4"),
    case("se-indices-s", lambda: se(indices=np.array([[0, 1, 3, 2]]), updates=np.ones((1, 4), F32)), "scatter_elements", "indices", "values must be in [-3, 2] for a dimension of size 3", "3"),
    # indices into a dimension of size 0 (no value is in range; a shape rule, so builders refuse it too)
    case("se-indices-into-empty-axis", lambda: se(np.zeros((0, 4), F32), np.zeros((1, 4), np.int64), np.ones((1, 4), F32)), "scatter_elements", "indices", "must be empty: data's dimension 0 has size 0, so no index is in range", "shape (1, 4)"),
    case("nd-indices-into-empty-axis", lambda: nd(np.zeros((3, 0), F32), np.array([[0, 0]]), np.ones(1, F32)), "scatter_nd", "indices", "must be empty: data's dimension 1 has size 0", "shape (1, 2)"),
    case("su-indices-into-empty-axis", lambda: su(np.zeros((3, 0), F32), np.array([0]), np.ones((3, 1), F32)), "scatter_update", "indices", "must be empty: data's dimension 1 has size 0", "shape (1,)"),
    case("nd-indices-below-minus-s", lambda: nd(indices=np.array([[0, 1], [-4, 0]]), updates=np.ones(2, F32)), "scatter_nd", "indices", "values in column 0 must be in [-3, 2] for a dimension of size 3", "-4"),
    case("nd-indices-s-column-1", lambda: nd(indices=np.array([[0, 1], [2, 4]]), updates=np.ones(2, F32)), "scatter_nd", "indices", "values in column 1 must be in [-4, 3] for a dimension of size 4", "4"),
    case("nd-indices-s-k-1", lambda: nd(indices=np.array([[3], [0]])), "scatter_nd", "indices", "values must be in [-3, 2] for a dimension of size 3", "3"),
    # unsigned indices too large for int64, which NumPy's own indexing would wrap around to negatives
    case("se-indices-uint64-huge", lambda: se(indices=np.array([[0, 1, 2**64 - 1, 2]], np.uint64), updates=np.ones((1, 4), F32)), "scatter_elements", "indices", "values must be in [-3, 2] for a dimension of size 3", str(2**64 - 1)),
    case("nd-indices-uint64-huge", lambda: nd(indices=np.array([[0, 2**64 - 4]], np.uint64), updates=np.ones(1, F32)), "scatter_nd", "indices", "values in column 1 must be in [-4, 3]", str(2**64 - 4)),
    case("su-indices-uint64-huge", lambda: su(indices=np.array([2**63, 0], np.uint64)), "scatter_update", "indices", "values must be in [0, 3]", str(2**63)),
    # Python ints NumPy alone would hold as float64 ([2**63, 0]) or objects (2**64): the value breaks the rule, not a type
    case("se-indices-python-ints-past-int64", lambda: se(indices=[[0, 1, 2**63, 2]], updates=np.ones((1, 4), F32)), "scatter_elements", "indices", "values must be in [-3, 2] for a dimension of size 3", str(2**63)),
    case("nd-indices-python-ints-past-int64", lambda: nd(indices=[[0, 2**63]], updates=np.ones(1, F32)), "scatter_nd", "indices", "values in column 1 must be in [-4, 3]", str(2**63)),
    case("su-axis-python-int-past-uint64", lambda: su(axis=2**64), "scatter_update", "axis", "values must fit in int64 or uint64 (an integer tensor's)", str(2**64)),
    # updates of another element type than data
    case("se-updates-type", lambda: se(updates=np.ones((2, 4))), "scatter_elements", "updates", "must have the element type of 'data' (float32)", "float64"),
    case("nd-updates-type", lambda: nd(updates=np.ones((2, 4), np.int32)), "scatter_nd", "updates", "must have the element type of 'data' (float32)", "int32"),
    case("su-updates-type", lambda: su(updates=np.ones((3, 2), np.float16)), "scatter_update", "updates", "must have the element type of 'data' (float32)", "float16"),
    case("ss-updates-type", lambda: ss(updates=np.ones((3, 2), bool)), "slice_scatter", "updates", "must have the element type of 'data' (float32)", "bool"),
    # data of a non-numeric type
    case("se-data-str", lambda: se(np.array([["a"] * 4] * 3), updates=np.array([["b"] * 4] * 2)), "scatter_elements", "data", "must have one of the element types bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64", "str"),
    case("nd-data-complex", lambda: nd(DATA.astype(np.complex64), updates=np.ones((2, 4), np.complex64)), "scatter_nd", "data", "must have one of the element types bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64", "complex64"),
    case("su-data-object", lambda: su(DATA.astype(object), updates=np.ones((3, 2), object)), "scatter_update", "data", "must have one of the element types bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64", "object"),
    case("ss-data-datetime", lambda: ss(DATA.astype("datetime64[s]"), np.zeros((3, 2), "datetime64[s]")), "slice_scatter", "data", "must have one of the element types bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64", "datetime64[s]"),
    case("ss-data-bytes", lambda: ss(DATA.astype("S2"), np.zeros((3, 2), "S2")), "slice_scatter", "data", "must have one of the element types bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64", "bytes"),
    # axes not given: the default axes come from start's length, so start is what breaks a rule
    case("ss-default-axes-past-rank", lambda: slice_scatter(np.zeros(3, F32), np.zeros(3, F32), [0, 0], [3, 3], [1, 1]), "slice_scatter", "start",
         "must have at most 1 entries for 'data' of rank 1 where 'axes' is not given (the default axes are 0, 1, ..., one per entry)", "2"),
    case("ss-default-axes-lengths", lambda: slice_scatter(DATA, DATA, [0, 0], [3], [1]), "slice_scatter", "start/stop/step", "must have equal lengths",
         "{'start': 2, 'stop': 1, 'step': 1}"),
    # ragged nested lists: NumPy's own "inhomogeneous shape" words named neither the op nor the input
    case("nd-indices-ragged", lambda: scatter_nd(np.zeros((2, 3), F32), [[0], [0, 1]], np.zeros((2, 3), F32)), "scatter_nd", "indices", RAGGED, "a ragged list"),
    case("se-data-ragged", lambda: scatter_elements([[0.0, 1.0], [2.0]], [[0]], [[1.0]]), "scatter_elements", "data", RAGGED, "a ragged list"),
    case("su-updates-ragged", lambda: su(updates=[[1.0, 2.0], [3.0]]), "scatter_update", "updates", RAGGED, "a ragged list"),
    case("ss-start-ragged", lambda: slice_scatter(DATA, np.ones((3, 2), F32), [[0], [0, 1]], [4], [2], [1]), "slice_scatter", "start", RAGGED, "a ragged list"),
    case("ts-update-ragged", lambda: tensor_scatter(np.zeros((1, 4, 2), F32), [[[1.0, 2.0], [3.0]]]), "tensor_scatter", "update", RAGGED, "a ragged list"),
    # numeric, and TensorRT has it, but the rule names the types the oracle computes with
    case("su-data-longdouble", lambda: su(DATA.astype(np.longdouble), updates=np.ones((3, 2), np.longdouble)), "scatter_update", "data",
         "must have one of the element types", str(np.dtype(np.longdouble))),
    case("su-data-float8", lambda: su(DATA.astype(ml_dtypes.float8_e4m3fn), updates=np.ones((3, 2), ml_dtypes.float8_e4m3fn)), "scatter_update", "data",
         "must have one of the element types bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64", "float8_e4m3fn"),
]


@pytest.mark.parametrize("call, op, input_name, rule, got", CASES)
def test_rule(call, op, input_name, rule, got):
    with pytest.raises(ScatterInputError) as caught:
        call()
    error = caught.value
    assert isinstance(error, ValueError)
    message = str(error)
    assert message.startswith(f"{op}: '{input_name}' "), message
    assert rule in message, message
    assert message.endswith(f" (got {got})"), message
    assert (error.op, error.input_name) == (op, input_name)


def test_message_format():
    with pytest.raises(ScatterInputError) as caught:
        se(axis=5)
    assert str(caught.value) == "scatter_elements: 'axis' must be in [-2, 1] for 'data' of rank 2 (got 5)"
    assert caught.value.rule == "must be in [-2, 1] for 'data' of rank 2" and caught.value.value == 5


@pytest.mark.parametrize(
    "call",
    [
        lambda data: scatter_nd(data, np.array([[0], [3]]), np.ones((2, 4), F32)),
        lambda data: scatter_elements(data, np.array([[0, 1, 5, 2]]), np.ones((1, 4), F32), 0),
        lambda data: scatter_update(data, np.array([0, 9]), np.ones((3, 2), F32), 1),
    ],
)
def test_a_bad_index_leaves_data_unchanged(call):
    # The oracle writes only into its own copy, so nothing partial escapes an error.
    data = DATA.copy()
    with pytest.raises(ScatterInputError):
        call(data)
    np.testing.assert_array_equal(data, DATA)


# ---------------------------------------------------------------------------------------------
# The shape rules on partly known shapes (-1 or None = not known yet), as the network builders use them.


def test_empty_indices_into_an_empty_dimension_are_valid():
    empty = np.zeros((3, 0), F32)
    np.testing.assert_array_equal(nd(empty, np.zeros((0, 2), np.int64), np.ones(0, F32)), empty)
    np.testing.assert_array_equal(su(empty, np.zeros((0,), np.int64), np.ones((3, 0), F32)), empty)
    check_scatter_update((3, 0), (-1,), (3, -1), 1)  # how many indices is not known at build time: no error


def test_unknown_dimensions_satisfy_every_shape_rule():
    assert check_scatter_elements((None, 4), (2, -1), (2, 7), 0) == 0
    assert check_scatter_elements((3, -1), (2, 9), (2, 9), 0) == 0  # off-axis bound unknown
    check_scatter_nd((3, 4), (2, -1), (9, 9, 9))  # k unknown: updates cannot be checked yet
    check_scatter_nd((-1, None), (2, 1), (2, 5))
    assert check_scatter_update((None, 4), (-1,), (7, 4), 0) == 0
    assert check_slice_scatter((None, 5), (7, 3), [0], [5], [2], [1]) == [1]
    assert check_slice_scatter((3, -1), (3, 9), [0], [5], [2], [-1]) == [1]  # sliced dimension unknown
    rules.check_indices_in_range("op", "indices", np.array([99, -99]), (None,), allow_negative=True)
    rules.check_indices_in_range("op", "indices", np.array([99, 0]), (None,), allow_negative=False)
    with pytest.raises(ScatterInputError, match=r"^op: 'indices' values must not be negative, as \[0, s-1\] holds none \(got -99\)$"):
        rules.check_indices_in_range("op", "indices", np.array([99, -99]), (None,), allow_negative=False)  # in no size's range


def test_known_dimensions_still_checked_next_to_unknown_ones():
    with pytest.raises(ScatterInputError, match=r"'updates' must have shape \(2, 4\) .*\(got shape \(2, 5\)\)"):
        check_scatter_nd((-1, 4), (2, 1), (2, 5))
    with pytest.raises(ScatterInputError, match=r"'updates' must have shape \(2, \?\) .*\(got shape \(3, 2, 5\)\)"):
        check_scatter_update((3, None), (2,), (3, 2, 5), 0)
    with pytest.raises(ScatterInputError, match=r"'indices' dimension 1 must be at most data's \(4\)"):
        check_scatter_elements((None, 4), (2, 5), (2, 5), 0)
    with pytest.raises(ScatterInputError, match=r"'indices' last dimension must be at most the rank"):
        check_scatter_nd((None, None), (1, 3), (1,))
    with pytest.raises(ScatterInputError, match=r"'updates' must have shape \(\?, 3\)"):
        check_slice_scatter((None, 5), (7, 2), [0], [5], [2], [1])
    with pytest.raises(ScatterInputError, match=r"values in column 1 must be in \[-4, 3\]"):
        rules.check_indices_in_range("op", "indices", np.array([[99, 4]]), (None, 4), allow_negative=True)


def test_bfloat16_is_numeric_only_with_ml_dtypes(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # makes `import ml_dtypes` raise ImportError
    assert dtypes._bfloat16() is None
    monkeypatch.undo()
    assert dtypes._bfloat16() == rules.BFLOAT16 and rules.BFLOAT16.name == "bfloat16"


def test_index_error_the_range_rule_does_not_explain_is_not_swallowed():
    with pytest.raises(IndexError, match="not about the range"):
        with rules.indices_checked_by_numpy("op", "indices", np.array([7]), (None,)):
            raise IndexError("not about the range")


def test_python_ints_of_no_64_bit_type_are_named_as_such():
    """NumPy holds ints beyond 64 bits as objects: the rule they break is their size, not their type; Python ints that
    fit are read as numbers even when given as objects."""
    with pytest.raises(ScatterInputError, match=r"^slice_scatter: 'start' values must fit in int64 or uint64 \(an integer "
                                                r"tensor's\) \(got -1180591620717411303424\)$"):
        slice_scatter(np.zeros(5), np.zeros(0), [-2**70], [2], [1])
    written = slice_scatter(np.zeros(5), np.ones(2), np.array([0], dtype=object), np.array([2**64 - 1], dtype=object), [3])
    np.testing.assert_array_equal(written, [1, 0, 0, 1, 0])


def test_the_oracles_errors_survive_pickling():
    """``trt-scatter build`` builds in a child process that sends its error back pickled (and so do process pools):
    each error class comes back with its message and fields, not a TypeError from ``__init__``."""
    import pickle

    from trt_scatter.inputs import NamedDimensionConflict
    from trt_scatter.polygraphy_ext.references import ReferenceInputError
    from trt_scatter.reference import NodeInputError

    error = ScatterInputError("scatter_update", "axis", "must be in [-2, 1]", 5)
    node = type("Node", (), {"op_type": "ScatterUpdate", "name": "update", "output": ["y"]})()
    for original in (error, NodeInputError(node, error), ReferenceInputError(error), NamedDimensionConflict("n", (2, "x"), (3, "y"))):
        copy = pickle.loads(pickle.dumps(original))
        assert type(copy) is type(original) and str(copy) == str(original) and vars(copy) == vars(original)


def test_python_ints_past_int64_are_values_not_a_float_type():
    """NumPy makes float64 of [2**63, 0]; as an int list it is a start past every dimension: an empty slice."""
    np.testing.assert_array_equal(slice_scatter(DATA, np.ones((0, 4), F32), [2**63, 0], [3, 4], [1, 1], [0, 1]), DATA)
    np.testing.assert_array_equal(scatter_update(DATA, [2, 0], np.ones((3, 2), F32), [1]), scatter_update(DATA, np.array([2, 0]), np.ones((3, 2), F32), 1))



def test_shapes_in_messages_show_unknown_dimensions_as_question_marks():
    """A builder's dynamic dimension is -1 and a model's unnamed one None: one message printed "(-1, 3, 1)" where
    another printed "(?, 4)"."""
    from trt_scatter.oracle import rules

    with pytest.raises(rules.ScatterInputError, match=re.escape("x: 'data' must have rank >= 2 (got shape (?,))")):
        rules.check_rank_at_least("x", "data", (-1,), 2)
    with pytest.raises(rules.ScatterInputError, match=re.escape("x: 'indices' must have the rank of 'data' (2) (got shape (?, 3, 1))")):
        rules.check_elements_shapes("x", (4, 3), (None, 3, 1), (None, 3, 1), 0)
    with pytest.raises(rules.ScatterInputError, match=re.escape("(got shape (4, ?))")):
        rules.check_elements_shapes("x", (3, -1), (4, -1), (4, -1), 1)  # off the axis
    from trt_scatter.networks.scatter_elements import check_within_data_on_axis

    with pytest.raises(rules.ScatterInputError, match=re.escape("(got shape (4, ?))")):
        check_within_data_on_axis((3, -1), (4, -1), 0)
