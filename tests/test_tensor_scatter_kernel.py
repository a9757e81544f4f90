"""plugins/tensor_scatter.cu on the CPU (host shim), through the real launch code, against the oracle.

A batch row whose write index is below 0, or (linear) leaves the update no room, must be skipped and counted
once; everything else equal to the oracle on the other rows. Shapes that disagree (the update's off the axis,
a longer update than the cache, a write index count other than the batch) must write nothing and count one.
Every case runs through both entry points (the plugins' struct entry, and the AOT entry, which counts nothing).
"""

import numpy as np
import pytest
from hypothesis import given, settings

from conftest import needs_gxx
from kernel_shim import cases, host

pytestmark = needs_gxx

ENTRIES = pytest.mark.parametrize("entry", host.ENTRIES)


@ENTRIES
@settings(max_examples=cases.scaled(2))
@given(case=cases.tensor_scatter_cases())
def test_matches_oracle_on_valid_rows_and_counts_the_others(shim, case, entry):
    cases.check_tensor_scatter(shim, cases.with_entry(case, entry))


@ENTRIES
@settings(max_examples=cases.scaled(1))
@given(case=cases.tensor_scatter_cases(broken=True))
def test_shapes_that_disagree_write_nothing_and_count_one(shim, case, entry):
    cases.check_tensor_scatter(shim, cases.with_entry(case, entry))


def _case(shape, count, axis, indices, mode="linear", dtype=np.float16, index_dtype=np.int64, **setup):
    rng = np.random.default_rng(2)
    update_shape = list(shape)
    update_shape[axis] = count
    return cases.TensorScatterCase(
        data=cases.random_array(rng, shape, dtype), update=cases.random_array(rng, tuple(update_shape), dtype),
        write_indices=None if indices is None else np.asarray(indices, index_dtype), axis=axis, mode=mode,
        setup={**cases.SETUP, **setup})


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float16, np.int32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape, count, axis, indices, mode", [
    ((4, 8, 64, 16), 1, 2, [0, 63, 17, 5], "linear"),  # one-token decode, each row at its own position
    ((2, 8, 16, 4), 4, 2, [12, 0], "linear"),  # 4-token prefill
    ((2, 8, 16, 4), 4, 2, None, "linear"),  # no write indices: every row from 0
    ((3, 5, 6), 4, 1, [4, 11, 2**31 - 1], "circular"),  # wraps past the end
    ((3, 5, 6), 2, 1, [-1, 4, 3], "linear"),  # -1 and 4 (5 - 2 < 4): skipped and counted
    ((3, 5, 6), 2, 1, [-(2**31), 1, 7], "circular"),  # only the negative one is skipped
    ((2, 3, 4, 5, 6), 3, 3, [2, 0], "linear"),  # rank 5, entries of 6 elements
    ((2, 3, 4, 5, 6), 5, 3, [9, 3], "circular"),  # the whole axis, rotated
    ((2, 7, 3), 0, 1, [7, 0], "linear"),  # nothing to write: 7 = M - S is the last start that fits
    ((0, 7, 3), 2, 1, [], "linear"),  # no batch rows
    ((2, 0, 3), 0, 1, [0, 0], "circular"),  # M = 0 and nothing written: no modulo by zero
    ((2, 4, 0), 2, 1, [1, 2], "linear"),  # empty entries
])
@ENTRIES
def test_edge_cases(shim, shape, count, axis, indices, mode, dtype, index_dtype, entry):
    cases.check_tensor_scatter(shim, _case(shape, count, axis, indices, mode, dtype, index_dtype, entry=entry))


@pytest.mark.parametrize("block, grid", [(1, 1), (7, 3), (256, 40)])
@pytest.mark.parametrize("shift_elements", [0, 1, 3])
@ENTRIES
def test_any_grid_and_alignment(shim, block, grid, shift_elements, entry):
    case = _case((3, 4, 9, 40), 2, 2, [7, 0, 3], "circular", dtype=np.uint8, block=block, grid=grid,
                 shift_elements=shift_elements, entry=entry)
    cases.check_tensor_scatter(shim, case)


def test_work_is_the_update_not_the_cache(shim):
    """A one-token write into a large cache launches a grid for the update's elements (and the B write indices)."""
    device = host.ShimDevice(shim, sm_count=132)
    case = _case((4, 8, 4096, 16), 1, 2, [5, 4095, 0, 17], dtype=np.float16)
    memory = host.Memory()
    try:
        output, count = host.run_tensor_scatter(device, memory, case.data, case.update, case.write_indices, 2, "linear", in_place=True)
    finally:
        memory.free()
    assert count == 0
    grid = next(call[2] for call in device.calls if call[0] == "launch")
    assert grid == -(-case.update.size // 256)  # 512 elements: 2 blocks, whatever the cache's 2M elements
    np.testing.assert_array_equal(host.as_bits(output), host.as_bits(cases.expected_tensor_scatter(case)[0]))


@ENTRIES
def test_invalid_rows_write_nothing_without_error_flag(shim, entry):
    case = _case((2, 5, 3), 2, 1, [4, 1])
    output, count = host.run_tensor_scatter(host.ShimDevice(shim), host.Memory(), case.data, case.update, case.write_indices,
                                            1, "linear", in_place=True, error_flag=False, entry=entry)
    assert count in (0, None)
    expected = case.data.copy()
    expected[1, 1:3] = case.update[1]
    np.testing.assert_array_equal(host.as_bits(output), host.as_bits(expected))


def test_under_address_sanitizer():
    result = host.run_under_asan("tensor_scatter", examples=60)
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "AddressSanitizer" not in result.stderr
    assert "60 valid and 60 broken cases passed under AddressSanitizer through each entry point (struct, aot)" in result.stdout
