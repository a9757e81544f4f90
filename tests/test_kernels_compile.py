"""The kernels compile with NVRTC on the CPU (no GPU needed), under the names the launchers look up.

CUBINs (NVRTC, then ptxas): one instantiation of each op's launched entry for sm_90 (an H100/H200), and a reduction
for each other arch tested (their atomics and sorts are what an arch could refuse), and a write's AOT entry for sm_75
(ptxas on the AOT entries' bodies; the reductions' AOT entries are in the sample above). PTX: AOT entries, the PTX the AOT
plugins hand TensorRT, with exactly the parameter list TensorRT launches them with (inputs, the int32 scalars of
plugins.kernels, the output): each op's, with every element size and index type among them. Every instantiation, as
CUBIN for every arch and as PTX, with ``TRT_SCATTER_TEST_ALL_ARCHS=1``: ptxas takes seconds of CPU for each, NVRTC
about one, and an instantiation differs from its op's others only in the types its template is given; a GPU machine's
check compiles all 64 for its own arch. The CPU shim builds every instantiation from the same sources with g++;
NVRTC's name for an instantiation is the symbol g++ gave it, the name the stand-in driver
(tests/kernel_shim/fakecuda.c) looks up. Also: the generated code uses 128-bit loads and stores, and NVRTC errors
come back with the compiler's log.
"""

import os
import re

import pytest

from conftest import needs_gxx
from kernel_shim import host
from trt_scatter.plugins import cuda, kernels
from trt_scatter.plugins import scatter_elements_reduce as elements_reduce_kernel, scatter_nd_reduce as nd_reduce_kernel
from trt_scatter.plugins import slice_scatter as slice_kernel, scatter_update as update_kernel, tensor_scatter as cache_kernel


def _nvrtc_or_skip():
    try:
        return cuda.nvrtc()
    except cuda.CudaUnavailableError as error:
        pytest.skip(f"NVRTC unavailable: {error}")


def _supported_archs():
    try:
        return set(cuda.nvrtc().nvrtcGetSupportedArchs()[1])
    except cuda.CudaUnavailableError:
        return set()


REDUCE_OPS = ("scatter_elements_reduce", "scatter_nd_reduce")
INSTANTIATIONS = [("slice_scatter", size, None) for size in kernels.ELEMENT_SIZES] + [
    (op, size, index) for op in ("scatter_update",) + REDUCE_OPS for size in kernels.ELEMENT_SIZES for index in kernels.INDEX_ITEMSIZES
] + [("tensor_scatter", size, None) for size in kernels.ELEMENT_SIZES]
AOT_INSTANTIATIONS = [(kernel + "_aot", size, index) for kernel, size, index in INSTANTIATIONS]
ALL_ARCHS = os.environ.get("TRT_SCATTER_TEST_ALL_ARCHS", "0") == "1"
SAMPLE_90 = [("slice_scatter", 1, None), ("scatter_update", 2, 8), ("tensor_scatter", 4, None), ("scatter_elements_reduce", 2, 4),
             ("scatter_nd_reduce", 8, 8)]
SAMPLES = {90: SAMPLE_90, 75: [("scatter_elements_reduce", 2, 8), ("scatter_update_aot", 4, 8)], 80: [("scatter_nd_reduce_aot", 2, 4)],
           120: [("scatter_elements_reduce_aot", 8, 4)]}
MATRIX = [(k, e, i, arch) for arch, sample in SAMPLES.items() for k, e, i in (INSTANTIATIONS + AOT_INSTANTIATIONS if ALL_ARCHS else sample)]
# Each AOT entry, and each element size and index type at least twice among them.
AOT_SAMPLE = [("slice_scatter_aot", 1, None), ("slice_scatter_aot", 8, None), ("scatter_update_aot", 2, 4), ("scatter_update_aot", 8, 8),
              ("tensor_scatter_aot", 4, None), ("scatter_elements_reduce_aot", 1, 8), ("scatter_elements_reduce_aot", 4, 4),
              ("scatter_nd_reduce_aot", 2, 8)]
AOT_COMPILED = AOT_INSTANTIATIONS if ALL_ARCHS else AOT_SAMPLE


@pytest.mark.parametrize("kernel, element_size, index_itemsize, arch", MATRIX)
def test_instantiation_compiles_to_cubin(kernel, element_size, index_itemsize, arch):
    _nvrtc_or_skip()
    if arch not in _supported_archs():
        pytest.skip(f"this NVRTC does not support sm_{arch}")
    image, lowered = cuda.cubin(kernel, element_size, index_itemsize, arch)  # NVRTC, or the run's cache (kernel_cache)
    assert image[:4] == b"\x7fELF", "NVRTC did not return a CUBIN (ELF) image"
    assert lowered.startswith(f"_Z{len(kernel)}{kernel}")  # the mangled template instance
    assert lowered.encode() in image  # the function cuModuleGetFunction will look up


@needs_gxx
@pytest.mark.parametrize("kernel, element_size, index_itemsize", SAMPLE_90 + AOT_COMPILED)
def test_nvrtc_names_each_instantiation_as_g_plus_plus_does(kernel, element_size, index_itemsize):
    """An instantiation's lowered name (from its CUBIN, or an AOT entry's from its PTX) is the symbol the CPU shim's g++
    build gave it: the GPU check's rehearsal (tests/test_gpu_check_script.py) loads the shim's kernels by these names."""
    _nvrtc_or_skip()
    lowered = (cuda.aot_ptx(kernel, element_size, index_itemsize)[0] if kernel.endswith(cuda.AOT_SUFFIX)
               else cuda.cubin(kernel, element_size, index_itemsize, 90)[1])
    assert lowered == host.kernel_symbol(host.shared_library(), kernel, element_size, index_itemsize)


def test_row_copies_use_128_bit_loads_and_stores():
    _nvrtc_or_skip()
    ptx, _ = cuda.compile_ptx("scatter_update", 1, 4, 90)
    assert re.search(r"ld\.global(\.nc)?\.v(4\.u32|2\.u64|4\.b32|2\.b64)", ptx), "no 128-bit global load"
    assert re.search(r"st\.global\.v(4\.u32|2\.u64|4\.b32|2\.b64)", ptx), "no 128-bit global store"


def test_compile_errors_carry_the_nvrtc_log(tmp_path, monkeypatch):
    _nvrtc_or_skip()
    for name in cuda.HEADERS:
        (tmp_path / name).write_bytes((cuda.SOURCE_DIR / name).read_bytes())
    (tmp_path / "slice_scatter.cu").write_text('#include "scatter_common.cuh"\ntemplate <typename T> __global__ void slice_scatter(SliceScatterArgs a) { undeclared_thing(a); }\n')
    monkeypatch.setattr(cuda, "SOURCE_DIR", tmp_path)
    with pytest.raises(cuda.CudaError, match=r"compiling slice_scatter<unsigned int> for sm_90 failed: NVRTC_ERROR_COMPILATION(.|\n)*undeclared_thing"):
        cuda.compile_cubin("slice_scatter", 4, None, 90)


AOT_INPUTS = {"slice_scatter_aot": 6, "scatter_update_aot": 4, "tensor_scatter_aot": 3, "scatter_elements_reduce_aot": 3,
              "scatter_nd_reduce_aot": 3}  # AOT forms take every input
AOT_SCALARS = {
    "slice_scatter_aot": slice_kernel.scalars(data_shape=(1,), updates_shape=(1,), axes_count=2,
                                                           param_itemsize=8, axes_itemsize=8),
    "scatter_update_aot": update_kernel.scalars(data_shape=(1,), indices_shape=(), updates_shape=(),
                                                             axis_itemsize=8),
    "tensor_scatter_aot": cache_kernel.scalars(data_shape=(1, 1), update_shape=(1, 1), index_count=1, axis=1, mode="linear",
                                               index_itemsize=8),
    "scatter_elements_reduce_aot": elements_reduce_kernel.scalars(data_shape=(1,), indices_shape=(1,), updates_shape=(1,), axis=0,
                                                                  reduction="add"),
    "scatter_nd_reduce_aot": nd_reduce_kernel.scalars(data_shape=(1,), indices_shape=(1, 1), updates_shape=(1,), reduction="add"),
}


def _entry_params(ptx, name):
    """The PTX types of an .entry's parameters, in order."""
    header = ptx[ptx.index(f".entry {name}(") :]
    header = header[: header.index(")")]
    return re.findall(r"\.param \.(\w+)", header)


@pytest.mark.parametrize("kernel, element_size, index_itemsize", AOT_COMPILED)
def test_aot_entry_compiles_to_ptx_with_tensorrts_argument_list(kernel, element_size, index_itemsize):
    _nvrtc_or_skip()
    lowered, ptx = cuda.aot_ptx(kernel, element_size, index_itemsize)
    assert lowered.startswith(f"_Z{len(kernel)}{kernel}")
    assert f".target sm_{cuda.aot_ptx_arch()}" in ptx and cuda.ptx_isa_version(ptx)
    params = _entry_params(ptx, lowered)
    expected = ["u64"] * AOT_INPUTS[kernel] + ["u32"] * len(AOT_SCALARS[kernel]) + ["u64"]
    assert params == expected, f"{lowered}: PTX parameters {params}"
    assert cuda.aot_ptx(kernel, element_size, index_itemsize) is cuda.aot_ptx(kernel, element_size, index_itemsize)
