"""The kernels on a real GPU (skipped without one; failed instead under TRT_SCATTER_REQUIRE_GPU=1): the
same hypothesis cases as the CPU shim tests (through both entry points, the plugins' struct one and
the AOT one; the reductions' bit-identical outputs over launch grids), launched by plugins.kernels with the CUDA driver and the launch grid, block and SM count
each case asks for, buffers with guard bytes (and unaligned bases), plus 64-bit offsets past 4 GiB,
and the PTX that AOT engines carry loading through this driver's JIT. Run by bench/gpu_check.sh on a
GPU machine (an H100/H200).

A kernel fault leaves the CUDA context unusable (the error is sticky): the first faulting case is
recorded, every later case fails with the same GpuFault naming it (so hypothesis reports the fault,
not a flaky failure), and the next test stops the session."""

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from conftest import gpu_skip, needs_gpu
from kernel_shim import cases, host
from trt_scatter.plugins import cuda, kernels
from trt_scatter.plugins import slice_scatter as slice_kernel, scatter_update as update_kernel

pytestmark = needs_gpu

_spec = importlib.util.spec_from_file_location("gpu_check", Path(__file__).resolve().parents[1] / "bench" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_check)

GUARD, GUARD_BYTE = 64, 0xA5


class GpuMemory:
    """host.Memory's interface on cuMemAlloc'd blocks, with guard bytes checked after each case."""

    def __init__(self, shift=0):
        self.shift, self.blocks, self.driver = shift, [], cuda.driver()

    def alloc(self, nbytes, fill=0xCD, shift=0):
        total = nbytes + 2 * GUARD + shift
        base = int(cuda.check(self.driver.cuMemAlloc(total), "cuMemAlloc"))
        cuda.check(self.driver.cuMemsetD8(base, GUARD_BYTE, total), "cuMemsetD8")
        address = base + GUARD + shift
        if nbytes:
            cuda.check(self.driver.cuMemsetD8(address, fill, nbytes), "cuMemsetD8")
        self.blocks.append((base, total, address, nbytes))
        return address

    def put(self, array, shift=0):
        array = np.ascontiguousarray(array)
        address = self.alloc(array.nbytes, shift=shift)
        if array.nbytes:
            cuda.check(self.driver.cuMemcpyHtoD(address, array.ctypes.data, array.nbytes), "cuMemcpyHtoD")
        return address

    def get(self, address, dtype, shape):
        out = np.empty(shape, dtype)
        if out.nbytes:
            cuda.check(self.driver.cuMemcpyDtoH(out.ctypes.data, address, out.nbytes), "cuMemcpyDtoH")
        return out

    def check_guards(self):
        for base, total, address, nbytes in self.blocks:
            whole = self.get(base, np.uint8, (total,))
            inside = slice(address - base, address - base + nbytes)
            whole[inside] = GUARD_BYTE
            assert (whole == GUARD_BYTE).all(), f"write outside a {nbytes}-byte buffer"

    def free(self):
        """Frees every block; a refusal (after a kernel fault the context refuses everything) must
        not hide the fault that the case reports."""
        for base, *_ in self.blocks:
            try:
                cuda.check(self.driver.cuMemFree(base), "cuMemFree")
            except cuda.CudaError:
                pass
        self.blocks = []


FAULT = {}  # the first case after which the CUDA context was unusable
HAS_CONTEXT = False  # set once the gpu fixture made a context current


class GpuFault(Exception):
    """A sticky CUDA error: the context is unusable; the message names the first faulting case."""


def run_case(check, gpu, case):
    """``check(gpu, case)``; once the context is unusable, fails with GpuFault from this one place."""
    if not FAULT:
        try:
            check(gpu, case)
            return
        except Exception as error:
            context = gpu_check.context_error(cuda)
            if not context:
                raise
            FAULT.update(test=os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0], error=f"{type(error).__name__}: {error}",
                         context=context, case=describe(case))
    raise GpuFault(f"sticky CUDA error: first in {FAULT['test']} ({FAULT['error']}; the context then says {FAULT['context']}) "
                   f"on the case {FAULT['case']}; every later case fails with this error")


def describe(case):
    """A case's fields with arrays as their shape and dtype (indices also by value): what reproduces it."""
    import dataclasses

    fields = {}
    for name, value in dataclasses.asdict(case).items():
        if isinstance(value, np.ndarray):
            value = f"{value.dtype.name}{list(value.shape)}" + (f" {value.reshape(-1)[:16].tolist()}" if name == "indices" else "")
        fields[name] = value
    return fields


@pytest.fixture(autouse=True)
def stop_after_a_fault():
    """After a kernel fault nothing more can run in this process: stop the session, naming the case."""
    if FAULT or (HAS_CONTEXT and gpu_check.context_error(cuda)):
        pytest.exit(f"a sticky CUDA error stopped the GPU tests: {FAULT or 'in the test before this one'}", returncode=3)
    yield



@pytest.fixture(scope="module")
def gpu():
    global HAS_CONTEXT
    cuda.device_arch()  # makes a context current
    HAS_CONTEXT = True

    def backend(setup, dtype):
        # The launch grid, block and SM count the case asks for: any grid must be right.
        device = gpu_check.Relaunch(cuda, grid=setup["grid"], block=setup["block"], sm_count=setup["sm_count"])
        return device, GpuMemory(shift=setup["shift_elements"] * np.dtype(dtype).itemsize)

    previous = kernels.device
    kernels.device = cuda
    yield backend
    kernels.device = previous


@settings(max_examples=cases.scaled(10 / 3))  # 200 with the ci profile
@given(case=cases.slice_scatter_cases())
def test_slice_scatter_matches_oracle(gpu, case):
    run_case(cases.check_slice_scatter, gpu, case)


@settings(max_examples=cases.scaled(5 / 3))
@given(case=cases.slice_scatter_cases(broken=True))
def test_slice_scatter_invalid_geometry_writes_nothing(gpu, case):
    run_case(cases.check_slice_scatter, gpu, case)


@settings(max_examples=cases.scaled(10 / 3))
@given(case=cases.scatter_update_cases())
def test_scatter_update_matches_oracle(gpu, case):
    run_case(cases.check_scatter_update, gpu, case)


@settings(max_examples=cases.scaled(5 / 3))
@given(case=cases.scatter_update_cases(broken=True))
def test_scatter_update_invalid_axis_writes_nothing(gpu, case):
    run_case(cases.check_scatter_update, gpu, case)


@settings(max_examples=cases.scaled(10 / 3))
@given(case=cases.tensor_scatter_cases())
def test_tensor_scatter_matches_oracle(gpu, case):
    run_case(cases.check_tensor_scatter, gpu, case)


@settings(max_examples=cases.scaled(5 / 3))
@given(case=cases.tensor_scatter_cases(broken=True))
def test_tensor_scatter_shapes_that_disagree_write_nothing(gpu, case):
    run_case(cases.check_tensor_scatter, gpu, case)


@settings(max_examples=cases.scaled(5 / 3))
@given(case=cases.reduce_cases("scatter_elements_reduce"))
def test_scatter_elements_reduce_matches_oracle(gpu, case):
    run_case(cases.check_reduce, gpu, case)


@settings(max_examples=cases.scaled(5 / 3))
@given(case=cases.reduce_cases("scatter_nd_reduce"))
def test_scatter_nd_reduce_matches_oracle(gpu, case):
    run_case(cases.check_reduce, gpu, case)


@settings(max_examples=cases.scaled(2 / 3))
@given(case=cases.reduce_cases("scatter_nd_reduce", aot=True), elements=cases.reduce_cases("scatter_elements_reduce", aot=True))
def test_reductions_aot_entries_match_oracle(gpu, case, elements):
    run_case(cases.check_reduce, gpu, case)
    run_case(cases.check_reduce, gpu, elements)


def test_reductions_are_bit_identical_over_launch_grids(gpu):
    """The same sums, whose rounding depends on their order, launched with 8 grids and block sizes: one output."""
    rng = np.random.default_rng(4)
    data = np.zeros((300, 8), np.float32)
    indices = rng.integers(0, 300, size=(20000, 1))
    updates = (rng.standard_normal((20000, 8)) * np.exp2(rng.integers(-20, 20, size=(20000, 8)))).astype(np.float32)
    outputs = set()
    for grid, block, sm_count in [(None, None, 132), (1, 32, 1), (3, 5, 1), (7, 1024, 2), (None, 64, 16), (2, 1, 1), (500, 128, 4), (None, 256, 1)]:
        case = cases.ReduceCase("scatter_nd_reduce", data, indices, updates, 0, "add", 1,
                                {**cases.SETUP, "grid": grid, "block": block, "sm_count": sm_count})
        run_case(cases.check_reduce, gpu, case)  # against the oracle, bit for bit
        device, memory = gpu(case.setup, np.float32)
        try:
            output, _ = host.run_reduce(device, memory, "scatter_nd_reduce", data, indices, updates, reduction="add", include_self=1)
        finally:
            memory.free()
        outputs.add(output.tobytes())
    assert len(outputs) == 1


def _free_bytes():
    return cuda.check(cuda.driver().cuMemGetInfo(), "cuMemGetInfo")[0]


def test_offsets_past_4_gib(gpu):
    """In place on 5 GiB of uint8: the last rows' bytes lie past 2**32."""
    rows, cols = 5, 2**30
    if _free_bytes() < rows * cols + (1 << 30):
        gpu_skip("needs about 6 GiB of free GPU memory")
    memory = GpuMemory()
    try:
        data = memory.alloc(rows * cols, fill=0)
        updates = memory.put(np.arange(rows * 16, dtype=np.uint8).reshape(rows, 16))
        flag = memory.alloc(4)
        slice_kernel.launch_slice_scatter(
            output=data, data=0, updates=updates, start=memory.put(np.array([-16], np.int64)),
            stop=memory.put(np.array([2**62], np.int64)), step=memory.put(np.array([1], np.int64)),
            axes=memory.put(np.array([-1], np.int32)), num_axes=1, data_shape=(rows, cols), updates_shape=(rows, 16),
            element_size=1, param_itemsize=8, axes_itemsize=4,
            error_flag=flag, stream=0)
        assert kernels.check_error_flag(flag, 0) == 0
        # rows 0..4 end at (r+1)*2**30: compare the last 32 bytes of each row
        for r in range(rows):
            tail = memory.get(data + (r + 1) * cols - 32, np.uint8, (32,))
            np.testing.assert_array_equal(tail[:16], 0)
            np.testing.assert_array_equal(tail[16:], np.arange(r * 16, r * 16 + 16, dtype=np.uint8))
        indices = memory.put(np.array([4], np.int32))
        update_kernel.launch_scatter_update(
            output=data, data=0, indices=indices, updates=memory.put(np.full(cols, 7, np.uint8)),
            axis=memory.put(np.array([0], np.int32)), data_shape=(rows, cols), indices_shape=(1,), element_size=1,
            index_itemsize=4, axis_itemsize=4, error_flag=flag, stream=0, updates_shape=(1, cols))
        assert kernels.check_error_flag(flag, 0) == 0
        np.testing.assert_array_equal(memory.get(data + 4 * cols, np.uint8, (64,)), 7)
        np.testing.assert_array_equal(memory.get(data + 5 * cols - 64, np.uint8, (64,)), 7)
        np.testing.assert_array_equal(memory.get(data + 4 * cols - 16, np.uint8, (16,)), np.arange(48, 64, dtype=np.uint8))
    finally:
        memory.free()


def test_debug_flag_counts_out_of_range_indices(gpu):
    memory = GpuMemory()
    try:
        data = memory.put(np.zeros((4, 3), np.float32))
        flag = memory.alloc(4)
        update_kernel.launch_scatter_update(
            output=data, data=0, indices=memory.put(np.array([1, -1, 4, 2**40], np.int64)),
            updates=memory.put(np.ones((4, 3), np.float32)), axis=memory.put(np.array(0, np.int64)), data_shape=(4, 3),
            indices_shape=(4,), element_size=4, index_itemsize=8, axis_itemsize=8, error_flag=flag, stream=0,
            updates_shape=(4, 3))
        assert kernels.check_error_flag(flag, 0) == 3
        np.testing.assert_array_equal(memory.get(data, np.float32, (4, 3)), [[0] * 3, [1] * 3, [0] * 3, [0] * 3])
    finally:
        memory.free()


AOT_INSTANTIATIONS = [("slice_scatter_aot", size, None) for size in kernels.ELEMENT_SIZES] + [
    (f"{op}_aot", size, index) for op in ("scatter_update", "scatter_elements_reduce", "scatter_nd_reduce")
    for size in kernels.ELEMENT_SIZES for index in kernels.INDEX_ITEMSIZES] + [
    ("tensor_scatter_aot", size, None) for size in kernels.ELEMENT_SIZES]


@pytest.mark.parametrize("kernel, element_size, index_itemsize", AOT_INSTANTIATIONS)
def test_aot_ptx_loads_through_this_driver(gpu, kernel, element_size, index_itemsize):
    """What an engine built with the AOT plugins needs of the driver: its PTX JIT-compiles here
    (fails with the PTX ISA version when the driver is older than the NVRTC that wrote it)."""
    assert cuda.load_aot_ptx(kernel, element_size, index_itemsize) is not None
