"""The plugin kernels on the CPU, for tests: build, memory, and a stand-in for plugins.cuda; and the
stand-in CUDA driver (fakecuda.c) that runs them behind the real cuda-bindings.

``build`` compiles driver.cpp (shim.h, then the exact plugins/*.cu sources) with g++ into a shared
library. :class:`ShimDevice` offers the functions ``plugins.kernels`` calls on ``plugins.cuda``, with
host addresses as "device" addresses: with ``kernels.device`` pointing at one, the real launch code
(argument checks, packing, grid sizing, flag zeroing, the data copy, ``kernelParams``) drives the
kernels, through either entry point (``entry``: ``"struct"``, the Python plugins' one, or ``"aot"``,
the one TensorRT launches from an engine built with the AOT plugins). :class:`Memory` hands out buffers: exact-size ``malloc`` blocks for AddressSanitizer, or
blocks with guard bytes on both sides that :meth:`Memory.check_guards` inspects.
"""

import ctypes
import importlib
import subprocess
from pathlib import Path

import numpy as np

from trt_scatter.plugins import kernels

SHIM_DIR = Path(__file__).resolve().parent
PLUGINS_DIR = SHIM_DIR.parents[1] / "plugins"


def build(out_dir, sanitize=False):
    """Compiles the kernels for the CPU; returns the shared library's path. ``sanitize``: under AddressSanitizer and
    UndefinedBehaviorSanitizer, the first undefined operation (a signed overflow, a bad shift) ending the process."""
    out = Path(out_dir) / ("kernels_asan.so" if sanitize else "kernels.so")
    command = ["g++", "-std=c++17", "-shared", "-fPIC", "-fno-strict-aliasing", "-Wall", "-g1",
               f"-I{SHIM_DIR}", f"-I{PLUGINS_DIR}", "-x", "c++", str(SHIM_DIR / "driver.cpp"), "-o", str(out)]
    command += ["-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"] if sanitize else ["-O2"]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return out


def load(path):
    lib = ctypes.CDLL(str(path))
    for name in dir_kernels():
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
        getattr(lib, name).restype = None
    i64 = ctypes.c_int64
    lib.shim_slice_count.argtypes = [i64, i64, i64, i64, ctypes.POINTER(i64)]
    lib.shim_slice_count.restype = i64
    lib.shim_quotient.argtypes = [i64, i64]
    lib.shim_quotient.restype = i64
    lib.shim_unit_bytes.argtypes = [ctypes.c_uint64]
    lib.shim_unit_bytes.restype = ctypes.c_int
    lib.layout_name.restype = ctypes.c_char_p
    lib.layout_offset.restype = ctypes.c_size_t
    lib.shim_shuffle.argtypes = [ctypes.c_uint64]
    lib.shim_shuffle.restype = None
    return lib


ENTRIES = ("struct", "aot")


def dir_kernels():
    names = []
    for suffix in ("", "_aot"):
        names += [f"run_slice_scatter{suffix}_e{size}" for size in kernels.ELEMENT_SIZES]
        names += [f"run_{op}{suffix}_e{size}_i{8 * index}" for op in ("scatter_update", "scatter_elements_reduce", "scatter_nd_reduce")
                  for size in kernels.ELEMENT_SIZES for index in kernels.INDEX_ITEMSIZES]
        names += [f"run_tensor_scatter{suffix}_e{size}" for size in kernels.ELEMENT_SIZES]
    return names + ["run_overrun", "run_atomic_scatter_add"]


def layout(lib):
    """``{"Struct.field": offset, "Struct": size}`` as the C++ compiler lays the argument structs out."""
    return {lib.layout_name(i).decode(): lib.layout_offset(i) for i in range(lib.layout_count())}


class ShimDevice:
    """plugins.cuda's launch functions, run on the CPU by the shim library.

    ``grid``/``block`` override the launch configuration the launcher chose: the kernels
    grid-stride, so they must be right for any; tests use that to reach every loop shape cheaply.
    ``shuffle``: a seed (not 0) runs every launch's blocks, and each block's threads, in an order
    drawn from it (a new order per launch), as a GPU may run them; 0 runs them in order.
    """

    def __init__(self, lib, sm_count=2, grid=None, block=None, shuffle=0):
        self.lib, self._sm_count, self.grid, self.block, self.shuffle = lib, sm_count, grid, block, shuffle
        self.calls = []
        self.capturing = False  # what stream_is_capturing answers

    def kernel(self, kernel, element_size, index_itemsize=None, stream=None):
        suffix = f"_i{8 * index_itemsize}" if index_itemsize else ""
        return getattr(self.lib, f"run_{kernel}_e{element_size}{suffix}"), self._sm_count

    def memset_u32_async(self, address, value, count, stream):
        self.calls.append(("memset", address, value, count, stream))
        (ctypes.c_uint32 * count).from_address(address)[:] = [value] * count

    def memcpy_dtod_async(self, destination, source, nbytes, stream):
        self.calls.append(("memcpy", destination, source, nbytes, stream))
        ctypes.memmove(destination, source, nbytes)

    def memcpy_dtoh(self, host_address, source, nbytes):
        ctypes.memmove(host_address, source, nbytes)

    def stream_synchronize(self, stream):
        self.calls.append(("sync", stream))

    def stream_is_capturing(self, stream):
        return self.capturing

    def launch(self, function, grid, block, stream, params_address):
        self.calls.append(("launch", function.__name__, grid, block, stream))
        self.lib.shim_shuffle(self.shuffle and self.shuffle * 1_000_003 + len(self.calls))
        # kernelParams[i] points at the i-th parameter's value: the shim reads it as cuLaunchKernel does.
        function(params_address, self.grid or grid, self.block or block)


GUARD = 64
GUARD_BYTE = 0xA5


class Memory:
    """Buffers for the kernels. ``exact``: malloc'd blocks of exactly the bytes asked for (under
    AddressSanitizer any access past them is caught); else numpy blocks with guard bytes around
    them; tensor buffers are placed ``shift`` bytes past a 64-byte boundary (unaligned bases)."""

    def __init__(self, exact=False, shift=0):
        self.exact, self.shift = exact, shift
        self.blocks = []
        if exact:
            self.libc = ctypes.CDLL(None)
            self.libc.malloc.restype = ctypes.c_void_p
            self.libc.malloc.argtypes = [ctypes.c_size_t]
            self.libc.free.argtypes = [ctypes.c_void_p]

    def alloc(self, nbytes, fill=0xCD, shift=0):
        if self.exact:
            address = self.libc.malloc(nbytes)
            self.blocks.append((address, nbytes, None))
        else:
            block = np.full(nbytes + 2 * GUARD + 64, GUARD_BYTE, np.uint8)
            start = -block.ctypes.data % 64 + GUARD + shift
            address = block.ctypes.data + start
            self.blocks.append((address, nbytes, (block, start)))
        ctypes.memset(address, fill, nbytes)
        return address

    def put(self, array, shift=0):
        array = np.ascontiguousarray(array)
        address = self.alloc(array.nbytes, shift=shift)
        ctypes.memmove(address, array.ctypes.data, array.nbytes)
        return address

    @staticmethod
    def get(address, dtype, shape):
        out = np.empty(shape, dtype)
        ctypes.memmove(out.ctypes.data, address, out.nbytes)
        return out

    def check_guards(self):
        """Raises AssertionError if a byte around any block changed (guarded mode)."""
        for _, nbytes, keep in self.blocks:
            if keep is None:
                continue
            block, start = keep
            before, after = block[:start], block[start + nbytes :]
            if (before != GUARD_BYTE).any() or (after != GUARD_BYTE).any():
                raise AssertionError(f"write outside a {nbytes}-byte buffer")

    def free(self):
        if self.exact:
            for address, _, _ in self.blocks:
                self.libc.free(address)
        self.blocks = []


def as_bits(array):
    """``array``'s bytes as unsigned ints of its element size: bitwise comparison for any dtype."""
    array = np.asarray(array)
    return array.view(f"u{array.dtype.itemsize}")


class _using:
    """Points kernels.device at ``device`` for one launch, then back (other tests use the real one)."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        self.previous, kernels.device = kernels.device, self.device

    def __exit__(self, *exc):
        kernels.device = self.previous


def _launch(device, memory, op, entry, arguments, data):
    """Launches ``launch_<op>`` of ``trt_scatter.plugins.<op>`` (or ``launch_<op>_aot``, which takes no error
    flag) with ``arguments`` on ``device``; returns (output, error count), the count None for the AOT entry."""
    launches = importlib.import_module(f"trt_scatter.plugins.{op}")
    with _using(device):
        if entry == "aot":
            del arguments["error_flag"]
            getattr(launches, f"launch_{op}_aot")(**arguments)
            count = None
        else:
            getattr(launches, f"launch_{op}")(**arguments)
            count = kernels.check_error_flag(arguments["error_flag"], arguments["stream"])
    result = memory.get(arguments["output"], data.dtype, data.shape)
    memory.check_guards()
    return result, count


def run_slice_scatter(device, memory, data, updates, start, stop, step, axes, *, param_dtype, axes_dtype,
                      in_place, error_flag=True, stream=0, entry="struct"):
    """SliceScatter through ``launch_slice_scatter`` (or ``launch_slice_scatter_aot``) on
    ``device``; returns (output, error count), the count None for the AOT entry (it counts nothing)."""
    shift = memory.shift
    output = memory.put(data, shift) if in_place else memory.alloc(data.nbytes, shift=shift)
    error_flag = error_flag and entry == "struct"
    flag = memory.put(np.array([0xDEAD], np.uint32)) if error_flag else 0  # stale count: the launch must zero it
    arguments = dict(
        output=output, data=0 if in_place else memory.put(data, shift), updates=memory.put(updates, shift),
        start=memory.put(np.asarray(start, param_dtype)), stop=memory.put(np.asarray(stop, param_dtype)),
        step=memory.put(np.asarray(step, param_dtype)), axes=0 if axes is None else memory.put(np.asarray(axes, axes_dtype)),
        num_axes=len(start), data_shape=data.shape, updates_shape=updates.shape, element_size=data.dtype.itemsize,
        param_itemsize=np.dtype(param_dtype).itemsize, axes_itemsize=np.dtype(axes_dtype).itemsize,
        error_flag=flag, stream=stream)
    return _launch(device, memory, "slice_scatter", entry, arguments, data)


def run_scatter_update(device, memory, data, indices, updates, axis, *, axis_dtype, axis_shape, in_place,
                       error_flag=True, stream=0, entry="struct"):
    """ScatterUpdate through ``launch_scatter_update`` (or ``launch_scatter_update_aot``) on
    ``device``; returns (output, error count), the count None for the AOT entry."""
    shift = memory.shift
    output = memory.put(data, shift) if in_place else memory.alloc(data.nbytes, shift=shift)
    error_flag = error_flag and entry == "struct"
    flag = memory.put(np.array([0xDEAD], np.uint32)) if error_flag else 0
    arguments = dict(
        output=output, data=0 if in_place else memory.put(data, shift), indices=memory.put(indices),
        updates=memory.put(updates, shift), axis=memory.put(np.full(axis_shape, axis, axis_dtype)), data_shape=data.shape,
        indices_shape=indices.shape, element_size=data.dtype.itemsize, index_itemsize=indices.dtype.itemsize,
        axis_itemsize=np.dtype(axis_dtype).itemsize, error_flag=flag, stream=stream,
        updates_shape=updates.shape)
    return _launch(device, memory, "scatter_update", entry, arguments, data)


def run_tensor_scatter(device, memory, data, update, write_indices, axis, mode, *, in_place, error_flag=True, stream=0,
                       entry="struct", index_count=None):
    """TensorScatter through ``launch_tensor_scatter`` (or ``launch_tensor_scatter_aot``) on ``device``; returns
    (output, error count), the count None for the AOT entry. ``write_indices`` None: none given (the AOT entry
    then gets a null pointer, as no engine would pass); ``index_count``: the length told to the kernel."""
    shift = memory.shift
    output = memory.put(data, shift) if in_place else memory.alloc(data.nbytes, shift=shift)
    error_flag = error_flag and entry == "struct"
    flag = memory.put(np.array([0xDEAD], np.uint32)) if error_flag else 0
    indices = None if write_indices is None else np.asarray(write_indices)
    arguments = dict(
        output=output, data=0 if in_place else memory.put(data, shift), update=memory.put(update, shift),
        write_indices=0 if indices is None else memory.put(indices), data_shape=data.shape, update_shape=update.shape,
        index_count=(0 if indices is None else indices.size) if index_count is None else index_count, axis=axis, mode=mode,
        element_size=data.dtype.itemsize, write_index_itemsize=8 if indices is None else indices.dtype.itemsize,
        error_flag=flag, stream=stream)
    return _launch(device, memory, "tensor_scatter", entry, arguments, data)


def run_reduce(device, memory, op, data, indices, updates, *, reduction, include_self, axis=0, in_place=False, error_flag=True,
               stream=0, entry="struct", chunk=None, segment=None):
    """ScatterElementsReduce or ScatterNDReduce (``op``: the key) through ``launch_<op>`` (with a workspace of the
    op's :func:`workspace_size`) or ``launch_<op>_aot`` on ``device``; returns (output, error count), the count None
    for the AOT entry. ``chunk``/``segment``: how the sort splits its work (None: the launcher's)."""
    from trt_scatter.dtypes import name

    launches = importlib.import_module(f"trt_scatter.plugins.{op}")
    shift = memory.shift
    output = memory.put(data, shift) if in_place else memory.alloc(data.nbytes, shift=shift)
    error_flag = error_flag and entry == "struct"
    arguments = dict(output=output, data=0 if in_place else memory.put(data, shift), indices=memory.put(indices),
                     updates=memory.put(updates, shift), data_shape=data.shape, indices_shape=indices.shape,
                     element_size=data.dtype.itemsize, element_type=name(data.dtype), index_itemsize=indices.dtype.itemsize,
                     reduction=reduction, include_self=include_self, stream=stream)
    if op == "scatter_elements_reduce":
        arguments["axis"] = axis
    if entry == "struct":
        split = {key: value for key, value in (("chunk", chunk), ("segment", segment)) if value is not None}
        size = launches.workspace_size([data.shape, indices.shape, updates.shape], [data.dtype.itemsize, indices.dtype.itemsize], **split)
        arguments.update(workspace=memory.alloc(size) if size else 0, error_flag=memory.put(np.array([0xDEAD], np.uint32)) if error_flag else 0,
                         **split)
    else:
        arguments.update(error_flag=0, updates_shape=updates.shape)
    return _launch(device, memory, op, entry, arguments, data)


_libraries = {}


def shared_library(sanitize=False):
    """The shim library built once per process (in a temporary folder removed at exit); its path."""
    if sanitize not in _libraries:
        import atexit
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="trt-scatter-shim-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _libraries[sanitize] = build(folder, sanitize)
    return _libraries[sanitize]


_ITANIUM_CODES = {1: "h", 2: "t", 4: "j", 8: "y", "i4": "i", "i8": "x"}  # unsigned char ... unsigned long long; int, long long
_symbols = {}


def kernel_symbol(library, kernel, element_size, index_itemsize=None):
    """The symbol g++ gave one kernel instantiation in the shim library ``library``: the name fakecuda's
    cuModuleGetFunction looks up, so NVRTC's lowered name for the same instantiation must be it."""
    from trt_scatter.plugins import cuda

    if library not in _symbols:
        listing = subprocess.run(["nm", "-D", "--defined-only", str(library)], check=True, capture_output=True, text=True).stdout
        _symbols[library] = [line.split()[-1] for line in listing.splitlines()]
    templated_on_index = ", " in cuda.name_expression(kernel, element_size, index_itemsize)
    prefix = f"_Z{len(kernel)}{kernel}I{_ITANIUM_CODES[element_size]}{_ITANIUM_CODES[f'i{index_itemsize}'] if templated_on_index else ''}E"
    (symbol,) = [name for name in _symbols[library] if name.startswith(prefix)]
    return symbol


def build_fakecuda(out_dir):
    """Compiles fakecuda.c, the stand-in CUDA driver, as ``out_dir/libcuda.so.1``; returns ``out_dir``
    (for ``LD_LIBRARY_PATH``). Raises CalledProcessError (with gcc's message) if it does not build."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    command = ["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-o", str(out / "libcuda.so.1"), str(SHIM_DIR / "fakecuda.c"), "-ldl"]
    subprocess.run(command, check=True, capture_output=True, text=True)
    link = out / "libcuda.so"
    if not link.is_symlink():
        link.symlink_to("libcuda.so.1")
    return out


def fakecuda_environment(folder, shim, **settings):
    """The environment of a process that loads the stand-in driver from ``folder`` (before any real
    one) with the shim library ``shim``; ``settings`` become FAKECUDA_<NAME> variables."""
    import os

    env = dict(os.environ, FAKECUDA_SHIM=str(shim))
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(folder), env.get("LD_LIBRARY_PATH")]))
    env.update({f"FAKECUDA_{name.upper()}": str(value) for name, value in settings.items()})
    return env


def asan_environment():
    """Environment for a Python subprocess under AddressSanitizer (the runtime preloaded)."""
    import os

    runtime = subprocess.run(["gcc", "-print-file-name=libasan.so"], check=True, capture_output=True, text=True).stdout.strip()
    return dict(os.environ, LD_PRELOAD=runtime, ASAN_OPTIONS="detect_leaks=0")


def run_under_asan(what, examples=60):
    """Runs asan_main.py on the sanitized library in a subprocess; returns the CompletedProcess.
    Skips the calling test where gcc has no AddressSanitizer runtime."""
    import sys

    import pytest

    if not Path(asan_environment()["LD_PRELOAD"]).is_file():
        pytest.skip("gcc has no AddressSanitizer runtime (libasan.so)")

    return subprocess.run([sys.executable, str(SHIM_DIR / "asan_main.py"), str(shared_library(sanitize=True)), what, str(examples)],
                          env=asan_environment(), capture_output=True, text=True, timeout=300)
