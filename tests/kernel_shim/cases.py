"""Hypothesis cases for the kernels and the checks that compare them with the oracle.

Shared by the pytest files (guarded buffers) and asan_main.py (exact-size buffers under
AddressSanitizer), so both run the same properties. Element values are random bit patterns,
compared bitwise: the kernels move bytes, whatever the type. ``setup["entry"]`` picks the kernel
entry point (``"struct"`` or ``"aot"``, see host.py); the AOT entry counts no errors, so for it the
checks compare the output only (a broken case must still leave data unchanged).
"""

import math
import dataclasses
from dataclasses import dataclass, field

import numpy as np
from hypothesis import assume, settings
from hypothesis import strategies as st

from trt_scatter import oracle
from trt_scatter.oracle.rules import BFLOAT16

from . import host

DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.float16, np.int16, np.int32, np.float32, np.int64, np.float64, np.uint64)]
if BFLOAT16 is not None:
    DTYPES.append(BFLOAT16)
INDEX_DTYPES = [np.dtype(np.int32), np.dtype(np.int64)]
MAX_ELEMENTS = 3000
SETUP = {"grid": None, "block": None, "sm_count": 2, "shift_elements": 0, "in_place": False,
         "entry": "struct"}  # the launcher's own grid


def scaled(factor):
    """Examples relative to the hypothesis profile (ci: 60): these cases are cheap, so run more."""
    return int(settings.default.max_examples * factor)


def random_array(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    bits = rng.integers(0, 256, size=math.prod(shape) * dtype.itemsize, dtype=np.uint8)
    return bits.view(dtype).reshape(shape)


@st.composite
def shapes(draw, min_rank=1, max_rank=6):
    """Small shapes (0-size dims included), sometimes with a long last axis to reach the kernels'
    long-row loop; at most MAX_ELEMENTS elements."""
    rank = draw(st.integers(min_rank, max_rank))
    dims = st.integers(0, 9).map(lambda x: x % 5 + 1 if x else 0)  # an empty dimension 1 time in 10
    shape = draw(st.lists(dims, min_size=rank, max_size=rank))
    if rank and draw(st.integers(0, 3)) == 0:
        shape[-1] = draw(st.integers(6, 400))
    while math.prod(shape) > MAX_ELEMENTS:
        shape[shape.index(max(shape))] //= 2
    return tuple(shape)


@st.composite
def launch_setups(draw):
    """How the shim runs a launch: grid/block overrides (any grid must be right), unaligned buffers."""
    return {
        "grid": draw(st.sampled_from([None, None, 1, 3])),
        "block": draw(st.sampled_from([None, 1, 5, 32])),
        "sm_count": draw(st.sampled_from([1, 2])),
        "shift_elements": draw(st.sampled_from([0, 0, 1, 3])),
        "in_place": draw(st.booleans()),
        "entry": draw(st.sampled_from(host.ENTRIES)),
    }


@dataclass
class SliceScatterCase:
    data: np.ndarray
    updates: np.ndarray
    start: list
    stop: list
    step: list
    axes: list | None
    param_dtype: np.dtype
    axes_dtype: np.dtype
    setup: dict
    broken: str | None = None  # why the inputs are invalid (the kernel must write nothing)
    notes: dict = field(default_factory=dict)


def _bound(draw, dim, dtype):
    info = np.iinfo(dtype)
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from([int(info.min), int(info.max), int(info.min) + 1, int(info.max) - 1]))
    return draw(st.integers(-dim - 3, dim + 3))


@st.composite
def slice_scatter_cases(draw, broken=False):
    """Valid SliceScatter inputs, or (``broken``) inputs that break one rule of the op."""
    shape = draw(shapes())
    rank = len(shape)
    param_dtype, axes_dtype = draw(st.sampled_from(INDEX_DTYPES)), draw(st.sampled_from(INDEX_DTYPES))
    info = np.iinfo(param_dtype)
    num_axes = draw(st.integers(0, rank))
    axes = draw(st.permutations(range(rank)))[:num_axes]
    default_axes = draw(st.booleans())
    if default_axes:
        axes = list(range(num_axes))
    else:
        axes = [axis - rank if draw(st.booleans()) else axis for axis in axes]
    start = [_bound(draw, shape[axis], param_dtype) for axis in axes]
    stop = [_bound(draw, shape[axis], param_dtype) for axis in axes]
    steps = st.sampled_from([-3, -2, -1, -1, 1, 1, 1, 2, 3, 4, int(info.min), int(info.max)])
    step = [draw(steps) for _ in axes]

    for i, axis in enumerate(axes):  # mostly non-empty slices: swap the bounds of most empty ones
        if oracle.slice_geometry(start[i], stop[i], step[i], shape[axis])[1] == 0 and draw(st.integers(0, 3)):
            start[i], stop[i] = stop[i], start[i]
    updates_shape = list(shape)
    for axis, begin, end, stride in zip(axes, start, stop, step):
        updates_shape[axis] = oracle.slice_geometry(begin, end, stride, shape[axis])[1]
    how = None
    if broken:
        how = draw(st.sampled_from(["updates_shape", "axis_out_of_range", "duplicate_axis", "zero_step"]))
        if how == "updates_shape":
            axis = draw(st.integers(0, rank - 1))
            updates_shape[axis] += draw(st.sampled_from([1, -1])) if updates_shape[axis] else 1
        elif how == "axis_out_of_range":
            position = draw(st.integers(0, num_axes))
            bad = draw(st.sampled_from([rank, rank + 1, -rank - 1, int(np.iinfo(axes_dtype).min), int(np.iinfo(axes_dtype).max)]))
            axes.insert(position, bad)
            start.insert(position, 0), stop.insert(position, 1), step.insert(position, 1)
            default_axes = False
        elif how == "duplicate_axis":
            assume(num_axes >= 1)
            i = draw(st.integers(0, num_axes - 1))  # the same slice again: only the repetition is wrong
            axes.append(draw(st.sampled_from([axes[i] % rank, axes[i] % rank - rank])))
            start.append(start[i]), stop.append(stop[i]), step.append(step[i])
            default_axes = False
        else:
            assume(num_axes >= 1)
            step[draw(st.integers(0, num_axes - 1))] = 0
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    return SliceScatterCase(
        data=random_array(rng, shape, dtype), updates=random_array(rng, tuple(updates_shape), dtype),
        start=start, stop=stop, step=step, axes=None if default_axes else axes, param_dtype=param_dtype,
        axes_dtype=axes_dtype, setup=draw(launch_setups()), broken=how)


def _oracle_refuses(case, op, *inputs):
    """A case meant to break a rule must break it for the oracle too, or it proves nothing."""
    try:
        op(*inputs)
    except oracle.ScatterInputError:
        return
    raise AssertionError(f"case meant to break a rule ({case.broken}) is valid for the oracle")


def device_and_memory(lib, setup, exact, dtype):
    """The shim device and host memory for ``setup``; ``lib`` may instead be a callable
    ``(setup, dtype) -> (device, memory)`` that runs the same cases elsewhere (the GPU tests)."""
    if callable(lib):
        return lib(setup, dtype)
    device = host.ShimDevice(lib, sm_count=setup["sm_count"], grid=setup["grid"], block=setup["block"])
    memory = host.Memory(exact=exact, shift=setup["shift_elements"] * np.dtype(dtype).itemsize)
    return device, memory


def check_slice_scatter(lib, case, exact=False):
    """Runs ``case`` through the launcher on the shim; asserts it matches the oracle (or wrote nothing)."""
    device, memory = device_and_memory(lib, case.setup, exact, case.data.dtype)
    try:
        output, count = host.run_slice_scatter(
            device, memory, case.data, case.updates, case.start, case.stop, case.step, case.axes,
            param_dtype=case.param_dtype, axes_dtype=case.axes_dtype, in_place=case.setup["in_place"],
            entry=case.setup["entry"])
    finally:
        memory.free()
    if case.broken:
        _oracle_refuses(case, oracle.slice_scatter, case.data, case.updates, case.start, case.stop, case.step, case.axes)
        expected, expected_count = case.data, 1
    else:
        expected = oracle.slice_scatter(case.data, case.updates, case.start, case.stop, case.step, case.axes)
        expected_count = 0
    _check_count(case, count, expected_count)
    np.testing.assert_array_equal(host.as_bits(output), host.as_bits(expected))


@dataclass
class ScatterUpdateCase:
    data: np.ndarray
    indices: np.ndarray
    updates: np.ndarray
    axis: int  # the value on the device
    axis_dtype: np.dtype
    axis_shape: tuple
    setup: dict
    broken: str | None = None
    notes: dict = field(default_factory=dict)


@st.composite
def scatter_update_cases(draw, broken=False):
    """ScatterUpdate inputs with unique in-range indices plus (sometimes) out-of-range ones, or
    (``broken``) an axis or updates shape that breaks the op's rules."""
    shape = draw(shapes(max_rank=5))
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    index_dtype = draw(st.sampled_from(INDEX_DTYPES))
    info = np.iinfo(index_dtype)
    indices_shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=min(3, 9 - rank))))
    size, count = shape[axis], math.prod(indices_shape)
    valid = draw(st.permutations(range(size)))[: draw(st.integers(0, min(size, count)))]
    invalid_values = st.sampled_from([-1, -size - 1, size, size + 7, int(info.min), int(info.max)])
    values = list(valid) + [draw(invalid_values) for _ in range(count - len(valid))]
    values = draw(st.permutations(values)) if values else values
    indices = np.array(values, index_dtype).reshape(indices_shape)

    updates_shape = shape[:axis] + indices_shape + shape[axis + 1 :]
    device_axis = axis - rank if draw(st.booleans()) else axis
    how = None
    if broken:
        how = draw(st.sampled_from(["axis_out_of_range", "updates_shape", "other_axis"]))
        if how == "axis_out_of_range":
            axis_info = np.iinfo(np.int64)
            device_axis = draw(st.sampled_from([rank, rank + 3, -rank - 1, int(axis_info.min), int(axis_info.max)]))
        elif how == "updates_shape":
            assume(len(updates_shape) >= 1)
            position = draw(st.integers(0, len(updates_shape) - 1))
            updates_shape = list(updates_shape)
            updates_shape[position] += 1
            updates_shape = tuple(updates_shape)
        else:  # updates made for another axis than the device's
            assume(rank >= 2)
            device_axis = draw(st.sampled_from([a for a in range(rank) if a != axis]))
            try:
                oracle.check_scatter_update(shape, indices_shape, updates_shape, device_axis)
                assume(False)  # the shapes happen to fit both axes
            except oracle.ScatterInputError:
                pass
    axis_dtype = np.dtype(np.int64) if how == "axis_out_of_range" and abs(device_axis) > 2**31 else draw(st.sampled_from(INDEX_DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    return ScatterUpdateCase(
        data=random_array(rng, shape, dtype), indices=indices, updates=random_array(rng, updates_shape, dtype),
        axis=device_axis, axis_dtype=axis_dtype, axis_shape=draw(st.sampled_from([(), (1,)])),
        setup=draw(launch_setups()), broken=how,
        notes={"axis": axis})


def check_scatter_update(lib, case, exact=False):
    """Runs ``case`` on the shim; asserts: equal to the oracle on the in-range indices, each
    out-of-range index skipped and counted (or, if broken, nothing written and one error)."""
    device, memory = device_and_memory(lib, case.setup, exact, case.data.dtype)
    try:
        output, count = host.run_scatter_update(
            device, memory, case.data, case.indices, case.updates, case.axis, axis_dtype=case.axis_dtype,
            axis_shape=case.axis_shape, in_place=case.setup["in_place"], entry=case.setup["entry"])
    finally:
        memory.free()
    if case.broken:
        _oracle_refuses(case, oracle.scatter_update, case.data, case.indices, case.updates,
                        np.full(case.axis_shape, case.axis, case.axis_dtype))
        expected, expected_count = case.data, 1
    else:
        axis = case.notes["axis"]
        flat = case.indices.reshape(-1)
        in_range = (flat >= 0) & (flat < case.data.shape[axis])
        rows = case.updates.reshape(case.data.shape[:axis] + (flat.size,) + case.data.shape[axis + 1 :])
        expected = oracle.scatter_update(case.data, flat[in_range], np.compress(in_range, rows, axis=axis),
                                         np.full(case.axis_shape, case.axis, case.axis_dtype))
        expected_count = int((~in_range).sum())
    _check_count(case, count, expected_count)
    np.testing.assert_array_equal(host.as_bits(output), host.as_bits(expected))


def _check_count(case, count, expected_count):
    if count is None:  # the AOT entry has no error counter
        assert case.setup["entry"] == "aot", "only the AOT entry may return no error count"
        return
    assert count == expected_count, f"error count {count}, expected {expected_count} ({case.broken or 'valid'})"


def with_entry(case, entry):
    """``case`` launched through ``entry`` ("struct" or "aot")."""
    return dataclasses.replace(case, setup={**case.setup, "entry": entry})


@dataclass
class TensorScatterCase:
    data: np.ndarray  # past_cache
    update: np.ndarray
    write_indices: np.ndarray | None
    axis: int  # in [1, rank-1]
    mode: str
    setup: dict
    broken: str | None = None  # shapes that disagree: the kernel must write nothing and count one
    notes: dict = field(default_factory=dict)


@st.composite
def tensor_scatter_cases(draw, broken=False):
    """TensorScatter inputs: any rank 2-6 and axis, both modes, write indices (int32 or int64, or none) in range
    plus (sometimes) rows whose index is negative or, linear, leaves the update no room (skipped and counted);
    or (``broken``) an update or write_indices whose shape disagrees with the cache's."""
    shape = draw(shapes(min_rank=2, max_rank=6))
    rank = len(shape)
    axis = draw(st.integers(1, rank - 1))
    mode = draw(st.sampled_from(["linear", "circular"]))
    size, batch = shape[axis], shape[0]
    count = draw(st.integers(0, size))
    update_shape = list(shape)
    update_shape[axis] = count
    index_dtype = draw(st.sampled_from(INDEX_DTYPES))
    info = np.iinfo(index_dtype)
    indices = None
    if draw(st.integers(0, 4)):
        if mode == "circular":
            valid = st.one_of(st.integers(0, 3 * size + 2), st.sampled_from([int(info.max), int(info.max) - 1]))
        else:
            valid = st.integers(0, size - count)
        invalid = st.sampled_from([-1, int(info.min)] + ([size - count + 1, int(info.max)] if mode == "linear" else []))
        values = [draw(invalid) if draw(st.integers(0, 5)) == 0 else draw(valid) for _ in range(batch)]
        indices = np.array(values, index_dtype)
    how = None
    if broken:
        how = draw(st.sampled_from(["update_shape", "too_long", "index_count"]))
        if how == "update_shape":
            others = [d for d in range(rank) if d != axis]
            update_shape[draw(st.sampled_from(others))] += 1
        elif how == "too_long":
            update_shape[axis] = size + 1
        else:
            indices = np.zeros(batch + draw(st.sampled_from([1, -1])) if batch else 1, index_dtype)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    return TensorScatterCase(data=random_array(rng, shape, dtype), update=random_array(rng, tuple(update_shape), dtype),
                             write_indices=indices, axis=axis - rank if draw(st.booleans()) else axis, mode=mode,
                             setup=draw(launch_setups()), broken=how)


def expected_tensor_scatter(case):
    """The oracle on the batch rows whose write index is valid (the others keep the cache), and how many were
    skipped; a broken case: the cache unchanged and one error."""
    if case.broken:
        _oracle_refuses(case, oracle.tensor_scatter, case.data, case.update, case.write_indices, case.axis, case.mode)
        return case.data, 1
    axis = case.axis % case.data.ndim
    size, count = case.data.shape[axis], case.update.shape[axis]
    if case.write_indices is None:
        return oracle.tensor_scatter(case.data, case.update, None, case.axis, case.mode), 0
    indices = case.write_indices.astype(np.int64)
    fits = (indices >= 0) & ((indices <= size - count) | (case.mode == "circular"))
    expected = case.data.copy()
    if fits.any():
        expected[fits] = oracle.tensor_scatter(case.data[fits], case.update[fits], indices[fits], case.axis, case.mode)
    return expected, int((~fits).sum())


def check_tensor_scatter(lib, case, exact=False):
    """Runs ``case`` on the shim; asserts: equal to the oracle on the batch rows with a valid write index, each
    other row skipped and counted (or, if broken, nothing written and one error)."""
    device, memory = device_and_memory(lib, case.setup, exact, case.data.dtype)
    try:
        output, count = host.run_tensor_scatter(device, memory, case.data, case.update, case.write_indices,
                                                case.axis % case.data.ndim, case.mode, in_place=case.setup["in_place"],
                                                entry=case.setup["entry"])
    finally:
        memory.free()
    expected, expected_count = expected_tensor_scatter(case)
    _check_count(case, count, expected_count)
    np.testing.assert_array_equal(host.as_bits(output), host.as_bits(expected))


# ---- the reduction ops (ScatterElementsReduce, ScatterNDReduce) ---------------------------------------------

REDUCE_DTYPES = [np.dtype(t) for t in (np.float32, np.float16, np.int8, np.uint8, np.int32, np.int64)]
if BFLOAT16 is not None:
    REDUCE_DTYPES.append(BFLOAT16)
REDUCTIONS = ("add", "mul", "min", "max", "mean")
REDUCE_OPS = ("scatter_elements_reduce", "scatter_nd_reduce")


@dataclass
class ReduceCase:
    op: str
    data: np.ndarray
    indices: np.ndarray
    updates: np.ndarray
    axis: int
    reduction: str
    include_self: int
    setup: dict
    notes: dict = field(default_factory=dict)
    disagree: str | None = None  # (AOT entry) shapes that disagree: the kernel must write nothing


def reduce_values(rng, shape, dtype, special=False):
    """Values whose sums and products mean something in ``dtype``: floats of mixed sign and magnitude (``special``:
    some NaN, inf, -0.0), integers over a small range (products stay in range often, wrap sometimes)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        low = 0 if dtype.kind == "u" else -9
        return rng.integers(low, 10, size=shape).astype(dtype)
    values = rng.standard_normal(size=shape) * np.exp2(rng.integers(-4, 12, size=shape))
    if special and values.size:
        chosen = rng.random(size=shape)
        values = np.where(chosen < 0.05, np.nan, np.where(chosen < 0.1, np.inf, np.where(chosen < 0.15, -0.0, values)))
    return values.astype(np.float32).astype(dtype)


@st.composite
def reduce_setups(draw, entry=None):
    """How the shim runs a reduction: grid/block overrides, shuffled block orders, the sort's chunk and segment."""
    return {**draw(launch_setups()), "entry": entry or "struct", "shuffle": draw(st.sampled_from([0, 0, 1, 7, 12345])),
            "chunk": draw(st.sampled_from([None, None, 1, 3, 64])), "segment": draw(st.sampled_from([None, None, 2, 3, 5]))}


@st.composite
def reduce_cases(draw, op, aot=False, disagree=False):
    """Valid inputs with repeated targets and (sometimes) out-of-range indices; ``aot``: what the AOT entry takes;
    ``disagree``: (AOT entry) shapes of data, indices and updates that no model allows, which an engine still
    launches (TensorRT checks no shapes at run time): the kernel must write nothing."""
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(0, 9).map(lambda x: x % 5 + 1 if x else 0), min_size=rank, max_size=rank)))
    if draw(st.integers(0, 3)) == 0:
        shape = shape[:-1] + (draw(st.integers(6, 300)),)
    index_dtype = draw(st.sampled_from(INDEX_DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    invalid = draw(st.booleans())
    axis = 0
    if op == "scatter_elements_reduce":
        axis = draw(st.integers(0, rank - 1))
        indices_shape = tuple(draw(st.integers(0, 12)) if d == axis else draw(st.integers(0, n)) for d, n in enumerate(shape))
        if shape[axis] == 0:  # no index can be in range: the spec asks for none
            indices_shape = indices_shape[:axis] + (0,) + indices_shape[axis + 1 :]
        while math.prod(indices_shape) > MAX_ELEMENTS:
            indices_shape = tuple(d // 2 for d in indices_shape)
        lead = np.array([shape[axis]])
        indices = _reduce_indices(rng, indices_shape, lead[0], index_dtype, invalid)
        updates_shape = indices_shape
    else:
        k = draw(st.integers(0, rank))
        rows = draw(st.integers(0, 40)) if 0 not in shape[:k] else 0
        while rows * math.prod(shape[k:]) > MAX_ELEMENTS:
            rows //= 2
        indices = np.stack([_reduce_indices(rng, (rows,), n, index_dtype, invalid) for n in shape[:k]], axis=-1) if k else np.zeros((rows, 0), index_dtype)
        indices = indices.astype(index_dtype).reshape(rows, k)
        updates_shape = (rows,) + shape[k:]
    broken = None
    if disagree:
        indices, updates_shape, broken = _disagreeing(draw, op, shape, axis, indices, updates_shape, rng)
    if aot or disagree:
        dtype, reduction, include_self = draw(st.sampled_from([np.dtype(np.int32), np.dtype(np.int64)])), draw(st.sampled_from(REDUCTIONS[:4])), 1
    else:
        dtype, reduction, include_self = draw(st.sampled_from(REDUCE_DTYPES)), draw(st.sampled_from(REDUCTIONS)), draw(st.sampled_from([0, 1]))
    special = draw(st.booleans())
    return ReduceCase(op, reduce_values(rng, shape, dtype, special), indices, reduce_values(rng, updates_shape, dtype, special),
                      axis, reduction, include_self, draw(reduce_setups("aot" if aot or disagree else "struct")), disagree=broken)


def _disagreeing(draw, op, shape, axis, indices, updates_shape, rng):
    """(indices, updates shape, what disagrees) for shapes an engine may launch the AOT entry with and no model allows."""
    rank = len(shape)
    if op == "scatter_elements_reduce":
        others = [d for d in range(rank) if d != axis]
        if others and draw(st.booleans()):  # indices past data off the axis: targets outside the output
            d = draw(st.sampled_from(others))
            grown = tuple(shape[d] + 1 if i == d else n for i, n in enumerate(indices.shape))
            values = rng.integers(-max(shape[axis], 1), max(shape[axis], 1), size=grown).astype(indices.dtype)
            return values, grown, f"indices {grown} past data {shape} on axis {d}"
    elif draw(st.booleans()):  # k above data's rank
        rows = max(indices.shape[0], 1)
        values = np.zeros((rows, rank + 1), indices.dtype)
        return values, (rows,), f"indices of k = {rank + 1} for data of rank {rank}"
    d = draw(st.integers(0, len(updates_shape) - (op == "scatter_elements_reduce")))  # (ranks are fixed at build time)
    if d == len(updates_shape):  # ScatterNDReduce: updates of one more axis
        return indices, tuple(updates_shape) + (1,), "updates of another rank"
    changed = tuple((n - 1 if n else 1) if i == d else n for i, n in enumerate(updates_shape))  # fewer: reads past them
    return indices, changed, f"updates {changed} for indices {indices.shape}"


def _reduce_indices(rng, shape, size, dtype, invalid):
    """Indices in [-size, size-1] with repeats; ``invalid``: about one in ten outside, extremes included."""
    values = rng.integers(-size, max(size, 1), size=shape).astype(np.int64) if size else np.zeros(shape, np.int64)
    if invalid or not size:
        info = np.iinfo(dtype)
        bad = rng.choice(np.array([-size - 1, size, size + 7, info.min, info.max], np.int64), size=shape)
        values = np.where((rng.random(shape) < 0.1) | (not size), bad, values)
    return values.astype(dtype)


def expected_reduce(case):
    """The oracle on the updates whose indices are in range, and how many positions (or rows) are not."""
    from trt_scatter.oracle import reductions
    from trt_scatter.oracle.scatter_nd_reduce import scatter_nd_reduce

    data, indices, updates = case.data, case.indices.astype(np.int64), case.updates
    if case.op == "scatter_nd_reduce":
        k = indices.shape[-1]
        lead = np.array(data.shape[:k], np.int64)
        valid = ((indices >= -lead) & (indices < lead)).all(axis=-1) if k else np.ones(indices.shape[0], bool)
        return scatter_nd_reduce(data, indices[valid], updates[valid], case.reduction, case.include_self), int((~valid).sum())
    size = data.shape[case.axis]
    valid = (indices >= -size) & (indices < size)
    coordinates = list(np.indices(indices.shape))
    coordinates[case.axis] = np.where(indices < 0, indices + size, indices)
    targets = np.ravel_multi_index(tuple(c[valid] for c in coordinates), data.shape) if valid.any() else np.zeros(0, np.int64)
    out = reductions.reduce_rows(data.reshape(-1, 1), targets, updates[valid].reshape(-1, 1), case.reduction, case.include_self)
    return out.reshape(data.shape), int((~valid).sum())


def check_reduce(lib, case, exact=False):
    """Runs ``case`` through the launcher; asserts: the oracle on the in-range indices, each out-of-range position
    (ScatterNDReduce: row) skipped and counted once."""
    device, memory = device_and_memory(lib, case.setup, exact, case.data.dtype)
    if hasattr(device, "shuffle"):
        device.shuffle = case.setup.get("shuffle", 0)
    try:
        output, count = host.run_reduce(device, memory, case.op, case.data, case.indices, case.updates, reduction=case.reduction,
                                        include_self=case.include_self, axis=case.axis, in_place=case.setup["in_place"],
                                        entry=case.setup["entry"], chunk=case.setup.get("chunk"), segment=case.setup.get("segment"))
    finally:
        memory.free()
    expected, expected_count = (case.data, None) if case.disagree else expected_reduce(case)
    if count is not None:
        assert count == expected_count, f"error count {count}, expected {expected_count}"
    same_bits(output, expected)


def same_bits(actual, expected):
    """Bitwise equal, any NaN equal to any NaN (the definition leaves NaN payloads open)."""
    bits = np.dtype(f"u{actual.dtype.itemsize}")
    same = actual.view(bits) == expected.view(bits)
    if actual.dtype.kind == "f" or actual.dtype == BFLOAT16:
        same |= np.isnan(actual.astype(np.float64)) & np.isnan(expected.astype(np.float64))
    assert same.all(), f"{(~same).sum()} of {same.size} elements differ: {actual[~same][:4]} vs {expected[~same][:4]}"
