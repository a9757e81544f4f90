"""plugins/scatter_nd_reduce.cu on the CPU (host shim), through the real launch code, against the oracle; and the
determinism proof of the reduction kernels: bit-identical outputs over launch grids, block sizes, shuffled block
and thread orders and splits of the sort, next to a float-atomic scatter-add whose sums change with the order."""

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings

from conftest import needs_gxx
from kernel_shim import cases, host
from trt_scatter.oracle.scatter_nd_reduce import scatter_nd_reduce

pytestmark = needs_gxx


@settings(max_examples=cases.scaled(2))
@given(case=cases.reduce_cases("scatter_nd_reduce"))
def test_matches_the_oracle_and_counts_rows_out_of_range(shim, case):
    cases.check_reduce(shim, case)


@settings(max_examples=cases.scaled(1))
@given(case=cases.reduce_cases("scatter_nd_reduce", aot=True))
def test_aot_entry_matches_the_oracle_for_what_it_takes(shim, case):
    cases.check_reduce(shim, case)


@settings(max_examples=cases.scaled(1))
@given(case=cases.reduce_cases("scatter_nd_reduce", disagree=True))
def test_aot_entry_writes_nothing_where_shapes_disagree(shim, case):
    """An engine launches the AOT entry with whatever shapes the inputs have (TensorRT checks none at run time)."""
    cases.check_reduce(shim, case)


def _gnn_like(rng, rows=3000, targets=37, columns=8):
    """index_add's shape: many rows into few targets, float32 values of very different magnitudes (the order of
    the additions changes the rounding)."""
    data = np.zeros((targets, columns), np.float32)
    indices = rng.integers(0, targets, size=(rows, 1))
    updates = (rng.standard_normal((rows, columns)) * np.exp2(rng.integers(-20, 20, size=(rows, columns)))).astype(np.float32)
    return data, indices, updates


LAUNCHES = [  # (grid, block, shuffle seed, chunk, segment): None = the launcher's
    (None, None, 0, None, None), (1, 1, 0, None, None), (3, 5, 7, None, None), (None, 32, 12345, 1, 2), (17, 7, 99, 64, 3),
    (2, 256, 4242, 5, 7),
]


@pytest.mark.parametrize("reduction", ["add", "mean", "mul", "max"])
def test_bit_identical_over_grids_block_orders_and_sort_splits(shim, reduction):
    data, indices, updates = _gnn_like(np.random.default_rng(11))
    outputs = []
    for grid, block, shuffle, chunk, segment in LAUNCHES:
        device = host.ShimDevice(shim, grid=grid, block=block, shuffle=shuffle)
        output, count = host.run_reduce(device, host.Memory(), "scatter_nd_reduce", data, indices, updates, reduction=reduction,
                                        include_self=1, chunk=chunk, segment=segment)
        assert count == 0
        outputs.append(output.view(np.uint32))
    assert all(np.array_equal(output, outputs[0]) for output in outputs)
    cases.same_bits(outputs[0].view(np.float32), scatter_nd_reduce(data, indices, updates, reduction))


def _atomic_scatter_add(shim, data, targets, updates, grid, block, shuffle):
    class Args(ctypes.Structure):
        _fields_ = [("output", ctypes.c_void_p), ("updates", ctypes.c_void_p), ("targets", ctypes.c_void_p),
                    ("rows", ctypes.c_int64), ("columns", ctypes.c_int64)]

    output = np.array(data, copy=True)
    targets = np.ascontiguousarray(targets.reshape(-1), np.int64)
    updates = np.ascontiguousarray(updates)
    args = Args(output.ctypes.data, updates.ctypes.data, targets.ctypes.data, updates.shape[0], updates.shape[1])
    shim.shim_shuffle(shuffle)
    shim.run_atomic_scatter_add(ctypes.byref(args), grid, block)
    shim.shim_shuffle(0)
    return output


def test_a_float_atomic_scatter_add_differs_from_run_to_run(shim):
    """The same inputs through float atomicAdd (what NVIDIA's scatterElementsPlugin and torch's index_add_ do on a
    GPU), with the blocks run in other orders: other sums. The reduction kernel above gives one answer."""
    data, indices, updates = _gnn_like(np.random.default_rng(11))
    runs = [_atomic_scatter_add(shim, data, indices, updates, grid or 8, block or 256, shuffle) for grid, block, shuffle, _, _ in LAUNCHES[1:]]
    distinct = {run.tobytes() for run in runs}
    assert len(distinct) > 1, "the float-atomic variant happened to give one answer for every order"
    ordered = scatter_nd_reduce(data, indices, updates)
    assert any(not np.array_equal(run, ordered) for run in runs)
    np.testing.assert_allclose(runs[0], ordered, rtol=1e-4, atol=1e-3 * np.abs(updates).max())  # the same sums, rounded otherwise


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_index_add_shape_with_rows_out_of_range(shim, index_dtype):
    rng = np.random.default_rng(2)
    data = rng.standard_normal((300, 3, 4)).astype(np.float32)
    indices = rng.integers(-300, 300, size=(500, 1)).astype(index_dtype)
    indices[::50] = 300  # 10 rows out of range: skipped, counted
    updates = rng.standard_normal((500, 3, 4)).astype(np.float32)
    case = cases.ReduceCase("scatter_nd_reduce", data, indices, updates, 0, "add", 1, {**cases.SETUP, "chunk": 3, "segment": 2})
    cases.check_reduce(shim, case)


def test_under_address_sanitizer():
    result = host.run_under_asan("scatter_nd_reduce", examples=40)
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    assert "AddressSanitizer" not in result.stderr
    assert "40 cases passed under AddressSanitizer through each entry point" in result.stdout


def test_rows_of_no_element_still_count_indices_out_of_range(shim):
    case = cases.ReduceCase("scatter_nd_reduce", np.zeros((2, 0), np.float32), np.array([[9], [2], [1]], np.int32),
                            np.zeros((3, 0), np.float32), 0, "add", 0, dict(cases.SETUP))
    cases.check_reduce(shim, case)  # 2 rows out of range, counted although they write nothing


@pytest.mark.parametrize("include_self", [0, 1])
@pytest.mark.parametrize("reduction", ["add", "mul", "min", "max", "mean"])
def test_targets_of_every_row_count_around_the_load_batch(shim, reduction, include_self):
    """The reduction loads a target's rows TRT_SCATTER_REDUCE_BATCH (8) at a time: targets of 1, 7, 8, 9, 15, 16,
    17 and 25 rows (and one of none), in shuffled order, the last target's rows ending the sorted keys."""
    rng = np.random.default_rng(reduction.encode()[0] + include_self)
    counts = [1, 7, 8, 9, 0, 15, 16, 17, 25]
    indices = rng.permutation(np.repeat(np.arange(len(counts)), counts)).reshape(-1, 1).astype(np.int32)
    data = rng.standard_normal((len(counts), 3)).astype(np.float32)
    updates = (rng.standard_normal((len(indices), 3)) * np.exp2(rng.integers(-12, 12, size=(len(indices), 3)))).astype(np.float32)
    case = cases.ReduceCase("scatter_nd_reduce", data, indices, updates, 0, reduction, include_self, dict(cases.SETUP))
    cases.check_reduce(shim, case, exact=True)


@pytest.mark.parametrize("field, value", [("segment", 1), ("segment", 0), ("chunk", 0), ("chunk", -4)])
def test_a_plan_refuses_a_split_that_never_ends_or_takes_no_keys(field, value):
    """A scan segment of 1 never reduces the counts to one segment (the plan's levels looped until memory ran out);
    a chunk below 1 takes no keys."""
    from trt_scatter.plugins.reductions import Plan

    with pytest.raises(ValueError, match=rf"^Plan: {field} must be at least {2 if field == 'segment' else 1} \(got {value}\)$"):
        Plan(100, 10, **{field: value})
