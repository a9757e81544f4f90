"""The oracle on empty slices that start "before the first element" (-1, negative step).

Found by the kernel tests: such a slice is empty, but ``slice(-1, None, -1)`` in NumPy takes the
last element, so the oracle used to reject the (valid) empty ``updates``.
"""

import numpy as np
import pytest

from trt_scatter import oracle


@pytest.mark.parametrize("start, stop", [(-(2**31), 0), (-5, -9), (-1 - 3, 2)])
def test_empty_negative_step_slice_from_before_the_start_leaves_data_unchanged(start, stop):
    data = np.arange(3 * 2).reshape(3, 2)
    first, count = oracle.slice_geometry(start, stop, -1, data.shape[0])
    assert (first, count) == (-1, 0)
    out = oracle.slice_scatter(data, np.zeros((0, 2), data.dtype), [start], [stop], [-1], [0])
    np.testing.assert_array_equal(out, data)


def test_nonempty_negative_step_slice_reaching_the_first_element_still_writes_it():
    data = np.arange(4)
    out = oracle.slice_scatter(data, np.array([9, 8, 7]), [2], [-10], [-1])
    np.testing.assert_array_equal(out, [7, 8, 9, 3])
