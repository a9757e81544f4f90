"""plugins/scatter_elements_reduce.cu on the CPU (host shim), through the real launch code, against the oracle.

Each case runs with repeated targets, sometimes out-of-range indices (skipped and counted once each), NaN,
inf and -0.0, in any launch grid, block size and block order, and with the sort split in chunks and scan
segments of many sizes: the output must be the oracle's, bit for bit (any NaN for a NaN).
"""

import numpy as np
import pytest
from hypothesis import given, settings

from conftest import needs_gxx
from kernel_shim import cases, host

pytestmark = needs_gxx


@settings(max_examples=cases.scaled(2))
@given(case=cases.reduce_cases("scatter_elements_reduce"))
def test_matches_the_oracle_and_counts_out_of_range_indices(shim, case):
    cases.check_reduce(shim, case)


@settings(max_examples=cases.scaled(1))
@given(case=cases.reduce_cases("scatter_elements_reduce", aot=True))
def test_aot_entry_matches_the_oracle_for_what_it_takes(shim, case):
    cases.check_reduce(shim, case)


@settings(max_examples=cases.scaled(1))
@given(case=cases.reduce_cases("scatter_elements_reduce", disagree=True))
def test_aot_entry_writes_nothing_where_shapes_disagree(shim, case):
    """An engine launches the AOT entry with whatever shapes the inputs have (TensorRT checks none at run time)."""
    cases.check_reduce(shim, case)


def _case(data, indices, updates, axis=0, reduction="add", include_self=1, **setup):
    return cases.ReduceCase("scatter_elements_reduce", data, np.asarray(indices), updates, axis, reduction, include_self,
                            {**cases.SETUP, "shuffle": 0, "chunk": None, "segment": None, **setup})


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("chunk, segment", [(None, None), (1, 2), (7, 3)])
def test_many_targets_take_several_radix_passes_and_scan_levels(shim, index_dtype, chunk, segment):
    """70000 targets: 17 key bits, 3 radix passes of 8 bits; small chunks and segments make several scan levels."""
    rng = np.random.default_rng(5)
    data = rng.standard_normal(70000).astype(np.float32)
    indices = rng.integers(-70000, 70000, size=3000).astype(index_dtype)
    updates = rng.standard_normal(3000).astype(np.float32)
    cases.check_reduce(shim, _case(data, indices, updates, reduction="mean", include_self=0, chunk=chunk, segment=segment))


def test_signed_zeros_nan_and_ties_as_torch_defines_them(shim):
    nan = np.float32(np.nan)
    data = np.array([-0.0, 0.0, 1.0, nan, 3.0], np.float32)
    updates = np.array([0.0, -0.0, nan, 2.0, 3.0, -0.0], np.float32)
    indices = [0, 1, 2, 3, 4, 0]
    for reduction in ("min", "max", "add", "mul"):
        for include_self in (0, 1):
            cases.check_reduce(shim, _case(data, indices, updates, reduction=reduction, include_self=include_self))


def test_bfloat16_and_float16_round_each_step(shim):
    """1 + 2**-9 rounds back to 1 in bfloat16 (8 bits), so 256 such adds leave 1 there, where float32 gives 1.5."""
    for dtype in [np.float16, cases.BFLOAT16]:
        if dtype is None:
            continue
        updates = np.full(256, 2.0**-9 if dtype is cases.BFLOAT16 else 2.0**-12, dtype)
        case = _case(np.ones(1, dtype), np.zeros(256, np.int64), updates)
        cases.check_reduce(shim, case)
        output, _ = host.run_reduce(host.ShimDevice(shim), host.Memory(), case.op, case.data, case.indices, case.updates,
                                    reduction="add", include_self=1)
        assert float(output[0]) == 1.0


def test_under_address_sanitizer():
    result = host.run_under_asan("scatter_elements_reduce", examples=40)
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "AddressSanitizer" not in result.stderr
    assert "40 cases passed under AddressSanitizer through each entry point" in result.stdout
