"""plugins/slice_scatter.cu on the CPU (host shim), through the real launch code, against the oracle.

Every case runs slice_kernel.launch_slice_scatter with a CPU stand-in for the driver
(tests/kernel_shim), so argument packing, the copy path and the error counter are covered too.
The case tests run once per kernel entry point (``entry``): the Python plugins' struct entry and
the AOT entry that TensorRT launches from an engine (slice_kernel.launch_slice_scatter_aot), which share
the kernel body. Output buffers have guard bytes on both sides; the AddressSanitizer test reruns
the properties on exact-size buffers in a sanitized process, through both entries.
"""

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import needs_gxx
from kernel_shim import cases, host
from trt_scatter import oracle
from trt_scatter.plugins import cuda, kernels

pytestmark = needs_gxx


scaled, SETUP = cases.scaled, cases.SETUP
INT32, INT64 = np.dtype(np.int32), np.dtype(np.int64)
I64_MIN, I64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
I32_MIN, I32_MAX = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)


ENTRIES = pytest.mark.parametrize("entry", host.ENTRIES)


@ENTRIES
@settings(max_examples=scaled(2.5))
@given(case=cases.slice_scatter_cases())
def test_matches_oracle(shim, case, entry):
    cases.check_slice_scatter(shim, cases.with_entry(case, entry))


@ENTRIES
@settings(max_examples=scaled(1.5))
@given(case=cases.slice_scatter_cases(broken=True))
def test_invalid_geometry_writes_nothing_and_counts_one(shim, case, entry):
    cases.check_slice_scatter(shim, cases.with_entry(case, entry))


INT64_VALUES = st.one_of(st.integers(I64_MIN, I64_MAX), st.integers(-20, 20), st.sampled_from([I64_MIN, I64_MAX, I64_MIN + 1, I64_MAX - 1]))


@settings(max_examples=scaled(5))
@given(start=INT64_VALUES, stop=INT64_VALUES, step=INT64_VALUES.filter(bool),
       dim=st.one_of(st.integers(0, 20), st.integers(0, I64_MAX)))
def test_device_slice_geometry_equals_oracle_over_all_int64(shim, start, stop, step, dim):
    first = ctypes.c_int64()
    count = shim.shim_slice_count(start, stop, step, dim, ctypes.byref(first))
    expected_first, expected_count = oracle.slice_geometry(start, stop, step, dim)
    assert count == expected_count
    if count:
        assert first.value == expected_first


@settings(max_examples=scaled(3))
@given(a=st.one_of(st.integers(0, 2**32 + 5), st.integers(0, I64_MAX)), b=st.one_of(st.integers(1, 2**32 + 5), st.integers(1, I64_MAX)))
def test_row_division_is_exact_for_64_bit_operands(shim, a, b):
    assert shim.shim_quotient(a, b) == a // b


@pytest.mark.parametrize("bits, unit", [(0, 16), (32, 16), (24, 8), (4, 4), (6, 2), (0x1003, 1)])
def test_copy_unit_is_the_widest_power_of_two_dividing_all_offsets(shim, bits, unit):
    assert shim.shim_unit_bytes(bits) == unit


def _case(shape, updates_shape, start, stop, step, axes=None, dtype=np.float32, param_dtype=INT64, broken=None, **setup):
    rng = np.random.default_rng(0)
    return cases.SliceScatterCase(
        data=cases.random_array(rng, shape, dtype), updates=cases.random_array(rng, updates_shape, dtype),
        start=start, stop=stop, step=step, axes=axes, param_dtype=np.dtype(param_dtype), axes_dtype=INT32,
        setup={**SETUP, **setup}, broken=broken)


@pytest.mark.parametrize(
    "shape, updates_shape, start, stop, step, axes, param_dtype",
    [
        ((7,), (7,), [I64_MAX], [I64_MIN], [-1], None, INT64),  # whole axis reversed from int64 extremes
        ((7,), (1,), [I64_MIN], [I64_MAX], [I64_MAX], None, INT64),  # one element, huge step
        ((7,), (1,), [I64_MAX], [I64_MIN], [I64_MIN], None, INT64),  # |INT64_MIN| must not overflow
        ((7,), (4,), [I32_MAX], [I32_MIN], [-2], [-1], INT32),
        ((7,), (0,), [I32_MIN], [0], [-1], None, INT32),  # empty: starts before the first element
        ((5, 6), (5, 0), [3], [3], [1], [1], INT64),  # empty slice on an inner axis
        ((4, 3, 1000), (2, 3, 500), [1, 0], [3, 1000], [1, 2], [0, 2], INT32),  # long strided rows
        ((4, 3, 1000), (4, 2, 1000), [-2], [I64_MAX], [1], [1], INT64),  # long contiguous rows
        ((3, 2, 20000), (3, 1, 20000), [1], [2], [1], [1], INT32),  # rows of several tiles: whole and partial tiles
        ((3, 5000), (3, 1250), [4999], [I64_MIN], [-4], [1], INT64),  # one-element rows, groups of several tiles
        ((40, 2, 600), (40, 1, 300), [1, 0], [2, 600], [1, 2], [1, 2], INT32),  # more groups than blocks
        ((2, 3, 4, 5, 6, 7), (1, 3, 2, 5, 3, 7), [1, 3, 5], [2, 0, 0], [1, -2, -2], [0, -4, 4], INT64),
    ],
)
@pytest.mark.parametrize("dtype", [np.bool_, np.float16, np.int32, np.float64])
@ENTRIES
def test_edge_geometries(shim, shape, updates_shape, start, stop, step, axes, param_dtype, dtype, entry):
    cases.check_slice_scatter(shim, _case(shape, updates_shape, start, stop, step, axes, dtype, param_dtype, entry=entry))


@pytest.mark.parametrize("block, grid", [(1, 1), (7, 3), (256, 40)])
@pytest.mark.parametrize("shift_elements", [0, 1, 3])
@ENTRIES
def test_any_grid_and_alignment(shim, block, grid, shift_elements, entry):
    case = _case((6, 40, 9), (3, 40, 9), [1], [6], [2], dtype=np.uint8, block=block, grid=grid,
                 shift_elements=shift_elements, entry=entry)
    cases.check_slice_scatter(shim, case)


@pytest.mark.parametrize(
    "updates_shape, start, stop, step, axes, broken",
    [
        ((2, 3), [0], [2], [1], [2], "axis_out_of_range"),
        ((2, 3), [0], [2], [1], [-3], "axis_out_of_range"),
        ((2, 3), [0, 0], [2, 2], [1, 1], [0, -2], "duplicate_axis"),
        ((2, 3), [0], [2], [0], [0], "zero_step"),
        ((3, 3), [0], [2], [1], [0], "updates_shape"),
        ((2, 3), [0, 0, 0], [1, 1, 1], [1, 1, 1], None, "more_axes_than_rank"),
    ],
)
@ENTRIES
def test_invalid_inputs_write_nothing_even_without_error_flag(shim, updates_shape, start, stop, step, axes, broken, entry):
    case = _case((4, 3), updates_shape, start, stop, step, axes, broken=broken, entry=entry)
    cases.check_slice_scatter(shim, case)
    memory = host.Memory()
    output, count = host.run_slice_scatter(
        host.ShimDevice(shim), memory, case.data, case.updates, start, stop, step, axes, param_dtype=INT64,
        axes_dtype=INT32, in_place=True, error_flag=False, entry=entry)
    assert count in (0, None)
    np.testing.assert_array_equal(output, case.data)


@pytest.mark.parametrize("entry, copy_path, in_place", [
    ("struct", ["memset", "memcpy", "launch", "sync"], ["memset", "launch", "sync"]),
    ("aot", ["memcpy", "launch"], ["launch"]),  # no counter to zero or read; the copy is TensorRT's
])
def test_copy_path_copies_data_then_launches_on_the_given_stream(shim, entry, copy_path, in_place):
    case = _case((5, 4), (2, 4), [0], [4], [2])
    device, memory = host.ShimDevice(shim), host.Memory()
    host.run_slice_scatter(device, memory, case.data, case.updates, [0], [4], [2], None, param_dtype=INT64,
                           axes_dtype=INT32, in_place=False, stream=77, entry=entry)
    kinds = [call[0] for call in device.calls]
    assert kinds == copy_path
    assert device.calls[kinds.index("memcpy")][3] == case.data.nbytes
    assert all(call[-1] == 77 for call in device.calls)
    device.calls.clear()
    host.run_slice_scatter(device, memory, case.data, case.updates, [0], [4], [2], None, param_dtype=INT64,
                           axes_dtype=INT32, in_place=True, entry=entry)
    assert [call[0] for call in device.calls] == in_place
    assert kernels.device is cuda  # the shim was used for those launches only


def test_under_address_sanitizer():
    result = host.run_under_asan("slice_scatter", examples=60)
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "AddressSanitizer" not in result.stderr
    assert "60 valid and 60 broken cases passed under AddressSanitizer through each entry point (struct, aot)" in result.stdout
