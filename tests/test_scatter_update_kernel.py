"""plugins/scatter_update.cu on the CPU (host shim), through the real launch code, against the oracle.

Out-of-range indices must be skipped and counted once each, everything else equal to the oracle
applied to the in-range indices; an axis out of range or an updates shape that does not follow
from the device's axis must write nothing and count one error. The case tests run once per kernel
entry point (the plugins' struct entry, and the AOT entry, which counts nothing).
"""

import numpy as np
import pytest
from hypothesis import given, settings

from conftest import needs_gxx
from kernel_shim import cases, host

pytestmark = needs_gxx


scaled, SETUP = cases.scaled, cases.SETUP


ENTRIES = pytest.mark.parametrize("entry", host.ENTRIES)


@ENTRIES
@settings(max_examples=scaled(2.5))
@given(case=cases.scatter_update_cases())
def test_matches_oracle_on_in_range_indices_and_counts_the_others(shim, case, entry):
    cases.check_scatter_update(shim, cases.with_entry(case, entry))


@ENTRIES
@settings(max_examples=scaled(1.5))
@given(case=cases.scatter_update_cases(broken=True))
def test_invalid_axis_or_updates_shape_writes_nothing_and_counts_one(shim, case, entry):
    cases.check_scatter_update(shim, cases.with_entry(case, entry))


def _case(shape, indices, axis, dtype=np.float32, index_dtype=np.int64, device_axis=None, updates_shape=None,
          broken=None, **setup):
    rng = np.random.default_rng(1)
    indices = np.asarray(indices, index_dtype)
    normalized = axis % len(shape)
    if updates_shape is None:
        updates_shape = shape[:normalized] + indices.shape + shape[normalized + 1 :]
    return cases.ScatterUpdateCase(
        data=cases.random_array(rng, shape, dtype), indices=indices, updates=cases.random_array(rng, updates_shape, dtype),
        axis=axis if device_axis is None else device_axis, axis_dtype=np.dtype(np.int32), axis_shape=(),
        setup={**SETUP, **setup}, broken=broken, notes={"axis": normalized})


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float16, np.int32, np.float64])
@pytest.mark.parametrize(
    "shape, indices, axis",
    [
        ((5,), 3, 0),  # 0-D index into a 1-D tensor: 0-D updates
        ((4, 3), 2, -1),  # 0-D index, negative axis
        ((6, 2, 3), [[5, 0], [2, 4]], 0),
        ((2, 7, 3), [6, -1, 7, 0], 1),  # -1 and 7 are out of range: skipped and counted
        ((3, 2), [], 0),  # no indices
        ((3, 0, 4), [1, 2], 0),  # empty rows
        ((2, 3, 300), [[2, 0]], 1),  # long rows
        ((4, 5), [2**31 - 1, -(2**31), 1], -2),
        # one-element rows in groups of several tiles (copy_rows' grouped path), out-of-range indices among them
        ((3, 1500), [(7 * i) % 1500 if i % 97 else 1500 + i for i in range(1300)], -1),
        ((40, 300), [299 - i if i % 50 else -1 for i in range(260)], 1),
    ],
)
@ENTRIES
def test_edge_cases(shim, shape, indices, axis, dtype, index_dtype, entry):
    cases.check_scatter_update(shim, _case(shape, indices, axis, dtype, index_dtype, entry=entry))


@pytest.mark.parametrize("block, grid", [(1, 1), (7, 3), (256, 40)])
@pytest.mark.parametrize("shift_elements", [0, 1, 3])
@ENTRIES
def test_any_grid_and_alignment(shim, block, grid, shift_elements, entry):
    case = _case((3, 9, 40), [8, 0, 4, 9], 1, dtype=np.uint8, block=block, grid=grid, shift_elements=shift_elements,
                 entry=entry)
    cases.check_scatter_update(shim, case)


@ENTRIES
def test_without_updates_shape_the_axis_is_still_checked(shim, entry):
    case = _case((4, 3), [1], 0, device_axis=2, broken="axis_out_of_range", entry=entry)
    cases.check_scatter_update(shim, case)


@ENTRIES
def test_updates_for_another_axis_are_refused(shim, entry):
    # updates made for axis 1 while the device says axis 0: reading them as axis-0 rows would run past them
    case = _case((2, 8), [0, 1, 2, 3, 4, 5, 6], 1, device_axis=0, broken="other_axis", entry=entry)
    cases.check_scatter_update(shim, case)


@ENTRIES
def test_invalid_inputs_write_nothing_without_error_flag(shim, entry):
    case = _case((4, 3), [1], 0, device_axis=-3, broken="axis_out_of_range")
    output, count = host.run_scatter_update(
        host.ShimDevice(shim), host.Memory(), case.data, case.indices, case.updates, case.axis,
        axis_dtype=np.int64, axis_shape=(1,), in_place=True, error_flag=False, entry=entry)
    assert count in (0, None)
    np.testing.assert_array_equal(output, case.data)


def test_under_address_sanitizer():
    result = host.run_under_asan("scatter_update", examples=60)
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "AddressSanitizer" not in result.stderr
    assert "60 valid and 60 broken cases passed under AddressSanitizer through each entry point (struct, aot)" in result.stdout
