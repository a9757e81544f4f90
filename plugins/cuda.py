"""CUDA plumbing for the kernels: NVRTC compilation to CUBIN with a memory and disk cache, and the
few driver calls the launcher needs.

Why CUBIN and not PTX: the GPUs this runs on may have an older driver whose JIT rejects the PTX
version a newer NVRTC emits, while a CUBIN for the device's own compute capability always loads.
The AOT plugins are the exception: TensorRT takes only PTX from them (NVIDIA/TensorRT
python/packaging/bindings_wheel/tensorrt/plugin/_lib.py, ``aot_impl``: "Presently, only PTX is
supported"), so :func:`aot_ptx` compiles the ``*_aot`` entry points to PTX for the engine.
Launches from Python (tests, the GPU check) use CUBINs for them too; :func:`load_aot_ptx` checks
that a driver can JIT-compile the PTX an engine would carry.

Nothing here touches the driver at import time: without a GPU (or without cuda-python) importing
works and the first use raises :class:`CudaUnavailableError` naming the cause.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trt_scatter.log import logger
from trt_scatter.ops import OPS

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType

    from cuda.bindings.driver import CUfunction

SOURCE_DIR = Path(__file__).resolve().parent
AOT_SUFFIX = "_aot"
_OPS_BY_KEY = {op.key: op for op in OPS.values()}  # every trt_scatter op has a kernel: plugins/<key>.cu
SOURCES = {key: f"{key}.cu" for key in _OPS_BY_KEY}
KERNELS = tuple(key + suffix for key in _OPS_BY_KEY for suffix in ("", AOT_SUFFIX))  # two entries per source
# The virtual architecture of the AOT PTX: the oldest TensorRT 10 supports (Turing), so the PTX an
# engine carries JIT-compiles on any GPU the engine may run on; the kernels use nothing newer.
AOT_PTX_ARCH = 75
HEADERS = tuple(sorted(path.name for path in SOURCE_DIR.glob("*.cuh")))  # every header the sources may include
CACHE_ENV = "TRT_SCATTER_CACHE_DIR"
# -lineinfo: compute-sanitizer and profilers name source lines (unlike -G it keeps every optimization).
NVRTC_OPTIONS = ("-std=c++17", "-default-device", "-lineinfo")


class CudaError(RuntimeError):
    """A CUDA driver or NVRTC call failed; the message names the call and the CUDA error."""


class CudaUnavailableError(CudaError):
    """The CUDA driver (or NVRTC) cannot be used in this process: no GPU, no driver, no cuda-python."""


def _result_name(result):
    return getattr(result, "name", str(result))


# ---------------------------------------------------------------------------------------------
# NVRTC


def _preload_nvrtc():
    """Loads libnvrtc from a ``nvidia/*/lib`` folder on ``sys.path``.

    cuda-pathfinder looks only in the interpreter's own site-packages; a venv that reaches its
    packages through a ``.pth`` file (or PYTHONPATH) would otherwise not find the NVRTC wheel.
    Once the library is loaded under its soname, cuda-bindings uses it.
    """
    for entry in sys.path:
        for pattern in ("nvidia/cu*/lib/libnvrtc.so.*", "nvidia/cuda_nvrtc/lib/libnvrtc.so.*"):
            for candidate in sorted(Path(entry).glob(pattern)) if entry and Path(entry).is_dir() else ():
                if "builtins" in candidate.name or "alt" in candidate.name:
                    continue
                try:
                    ctypes.CDLL(str(candidate), mode=os.RTLD_GLOBAL)
                    return True
                except OSError:
                    continue
    return False


def _binding(name):
    """``cuda.bindings.<name>`` (cuda-python >= 12.6), or ``cuda.<name>`` from older releases."""
    import importlib

    try:
        return importlib.import_module(f"cuda.bindings.{name}")
    except ImportError:
        return importlib.import_module(f"cuda.{name}")


_nvrtc_module = None


def nvrtc() -> ModuleType:
    """The ``cuda.bindings.nvrtc`` module with its library loaded, or CudaUnavailableError."""
    global _nvrtc_module
    if _nvrtc_module is not None:
        return _nvrtc_module
    try:
        module = _binding("nvrtc")
    except ImportError as error:
        raise CudaUnavailableError(f"NVRTC is unavailable: cuda-python is not installed ({error})") from error
    try:
        module.nvrtcVersion()
    except Exception as first_error:  # cuda-pathfinder's DynamicLibNotFoundError and friends
        if not _preload_nvrtc():
            raise CudaUnavailableError(
                f"NVRTC is unavailable: libnvrtc not found ({first_error}); install nvidia-cuda-nvrtc"
            ) from first_error
        module.nvrtcVersion()
    _nvrtc_module = module
    return module


def nvrtc_version() -> tuple[int, int]:
    err, major, minor = nvrtc().nvrtcVersion()
    return major, minor


def source_name(kernel: str) -> str:
    """The .cu file that holds ``kernel`` (either entry point of an op)."""
    return SOURCES[kernel.removesuffix(AOT_SUFFIX)]


def name_expression(kernel: str, element_size: int, index_itemsize: int | None = None) -> str:
    """The C++ name of one kernel instantiation, e.g. ``scatter_update_aot<unsigned int, long long>``: templated
    on an unsigned type of the element's size, and on the index type where the op says its kernel is
    (:attr:`trt_scatter.ops.Op.kernel_index`)."""
    element = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}[element_size]
    if _OPS_BY_KEY[kernel.removesuffix(AOT_SUFFIX)].kernel_index is None:
        return f"{kernel}<{element}>"
    index = {4: "int", 8: "long long"}[index_itemsize]
    return f"{kernel}<{element}, {index}>"


def source_digest() -> str:
    """Hash of everything a CUBIN depends on besides its key: sources, NVRTC version, options."""
    digest = hashlib.sha256()
    for name in sorted(SOURCES.values()) + sorted(HEADERS):
        digest.update(name.encode() + b"\0" + (SOURCE_DIR / name).read_bytes())
    digest.update(repr((nvrtc_version(), NVRTC_OPTIONS)).encode())
    return digest.hexdigest()[:16]


def cache_key(kernel: str, element_size: int, index_itemsize: int | None, arch: int) -> str:
    """The cache file stem for one instantiation on one architecture (``arch`` as 90 for sm_90): ``<stem>.cubin`` holds
    its CUBIN, ``<stem>.ptx`` an AOT entry's PTX for compute_<arch>."""
    index = f"i{8 * index_itemsize}" if index_itemsize else "any"
    return f"{kernel}-e{element_size}-{index}-sm{arch}-{source_digest()}"


def cache_dir() -> Path:
    """``$TRT_SCATTER_CACHE_DIR`` (blank is unset), else ``$XDG_CACHE_HOME/trt-scatter`` (an absolute path, as the
    XDG spec requires), else ``~/.cache/trt-scatter``."""
    if os.environ.get(CACHE_ENV, "").strip():
        return Path(os.environ[CACHE_ENV])
    xdg = Path(os.environ.get("XDG_CACHE_HOME", ""))
    return (xdg if xdg.is_absolute() else Path.home() / ".cache") / "trt-scatter"


def _check_nvrtc(result, what, program=None):
    module = nvrtc()
    if result == module.nvrtcResult.NVRTC_SUCCESS:
        return
    log = ""
    if program is not None:
        _, size = module.nvrtcGetProgramLogSize(program)
        buffer = b" " * size
        module.nvrtcGetProgramLog(program, buffer)
        log = "\n" + buffer.decode(errors="replace").rstrip("\0 \n")
    raise CudaError(f"{what} failed: {_result_name(result)}{log}")


def _compile(kernel, element_size, index_itemsize, architecture, *outputs):
    """Runs NVRTC on one instantiation; returns the lowered name and the requested outputs
    (("CUBIN" or "PTX") as bytes)."""
    module = nvrtc()
    source = (SOURCE_DIR / source_name(kernel)).read_bytes()
    headers = [(SOURCE_DIR / name).read_bytes() for name in HEADERS]
    expression = name_expression(kernel, element_size, index_itemsize)
    err, program = module.nvrtcCreateProgram(source, source_name(kernel).encode(), len(headers), headers,
                                             [name.encode() for name in HEADERS])
    _check_nvrtc(err, "nvrtcCreateProgram")
    try:
        _check_nvrtc(module.nvrtcAddNameExpression(program, expression.encode())[0], "nvrtcAddNameExpression")
        options = [f"--gpu-architecture={architecture}".encode()] + [option.encode() for option in NVRTC_OPTIONS]
        (err,) = module.nvrtcCompileProgram(program, len(options), options)
        _check_nvrtc(err, f"compiling {expression} for {architecture}", program)
        err, lowered = module.nvrtcGetLoweredName(program, expression.encode())
        _check_nvrtc(err, "nvrtcGetLoweredName")
        results = []
        for output in outputs:
            err, size = getattr(module, f"nvrtcGet{output}Size")(program)
            _check_nvrtc(err, f"nvrtcGet{output}Size")
            buffer = b" " * size
            _check_nvrtc(getattr(module, f"nvrtcGet{output}")(program, buffer)[0], f"nvrtcGet{output}")
            results.append(buffer)
    finally:
        module.nvrtcDestroyProgram(program)
    return (lowered.decode() if isinstance(lowered, bytes) else lowered, *results)


def compile_cubin(kernel: str, element_size: int, index_itemsize: int | None, arch: int) -> tuple[bytes, str]:
    """Compiles one instantiation with NVRTC for ``sm_<arch>``; returns ``(cubin bytes, lowered name)``."""
    lowered, image = _compile(kernel, element_size, index_itemsize, f"sm_{arch}", "CUBIN")
    return image, lowered


def compile_ptx(kernel: str, element_size: int, index_itemsize: int | None, arch: int) -> tuple[str, str]:
    """Compiles one instantiation with NVRTC for ``compute_<arch>``; returns ``(PTX text, lowered name)``."""
    lowered, ptx = _compile(kernel, element_size, index_itemsize, f"compute_{arch}", "PTX")
    return ptx.rstrip(b"\0").decode(), lowered


def aot_ptx_arch(supported: Sequence[int] | None = None) -> int:
    """:data:`AOT_PTX_ARCH`, or the oldest architecture above it this NVRTC supports."""
    if supported is None:
        supported = nvrtc().nvrtcGetSupportedArchs()[1]
    newer = [arch for arch in supported if arch >= AOT_PTX_ARCH]
    if not newer:
        raise CudaError(f"NVRTC {nvrtc_version()} supports no architecture >= sm_{AOT_PTX_ARCH} (supported: {sorted(supported)})")
    return min(newer)


_aot_ptx = {}


def aot_ptx(kernel: str, element_size: int, index_itemsize: int | None = None) -> tuple[str, str]:
    """``(lowered name, PTX text)`` of an AOT entry point (a name of :data:`KERNELS` ending in ``_aot``, e.g.
    ``slice_scatter_aot``; ``element_size`` the data's bytes, ``index_itemsize`` the indices' where the op has them):
    what the AOT plugin hands TensorRT to embed in the engine. From memory, else from the kernel cache (beside the
    CUBINs, as ``<key>.ptx``), else NVRTC."""
    if not kernel.endswith(AOT_SUFFIX):
        raise ValueError(f"aot_ptx: {kernel!r} is not an AOT entry point (one of {KERNELS[1::2]})")
    key = (kernel, element_size, index_itemsize)
    with _cubins_lock:
        if key not in _aot_ptx:
            arch = aot_ptx_arch()

            def compile_text():
                ptx, lowered = compile_ptx(kernel, element_size, index_itemsize, arch)
                return ptx.encode(), lowered

            path = cache_dir() / f"{cache_key(kernel, element_size, index_itemsize, arch)}.ptx"
            ptx, lowered = _read_or_compile(path, f"{name_expression(kernel, element_size, index_itemsize)} to PTX for compute_{arch}", compile_text)
            _aot_ptx[key] = (lowered, ptx.decode())
        return _aot_ptx[key]


def ptx_isa_version(ptx: str) -> str | None:
    """The ``.version`` of a PTX text (e.g. ``"9.0"``): a driver JIT-compiles only versions it knows."""
    for line in ptx.splitlines():
        if line.startswith(".version"):
            return line.split()[1]
    return None


_MAGIC = b"trt-scatter-cubin-2\n"  # then the SHA-256 (hex) of the rest, the lowered name and the image (CUBIN or PTX), the first two each ending a line
_cubins = {}
_cubins_lock = threading.Lock()


def _read_cache_file(path):
    """``(image, lowered name)`` from a cache file (a CUBIN or a PTX text), or None where it is missing, unreadable, of
    another format or damaged (truncated, overwritten): its digest must match, so a damaged image is compiled again,
    never loaded."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    digest, _, rest = blob.removeprefix(_MAGIC).partition(b"\n") if blob.startswith(_MAGIC) else (b"", b"", b"")
    name, _, cubin = rest.partition(b"\n")
    if not cubin or hashlib.sha256(name + b"\n" + cubin).hexdigest().encode() != digest:
        logger.info("trt-scatter: kernel cache file %s is damaged or of another version: compiling again", path)
        return None
    return cubin, name.decode()


def _write_cache_file(path, cubin, lowered):
    body = lowered.encode() + b"\n" + cubin
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(_MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        os.replace(temporary, path)  # atomic: concurrent processes never see half a file
    except OSError as error:
        logger.warning("trt-scatter: cannot write the kernel cache %s: %s", path, error)
        with contextlib.suppress(OSError):  # a write that failed midway (a full disk) leaves no temporary file
            temporary.unlink()


def cubin(kernel: str, element_size: int, index_itemsize: int | None, arch: int) -> tuple[bytes, str]:
    """``(cubin, lowered name)`` for one instantiation: from memory, else from disk, else NVRTC."""
    key = cache_key(kernel, element_size, index_itemsize, arch)
    with _cubins_lock:
        if key in _cubins:
            return _cubins[key]
        entry = _read_or_compile(cache_dir() / f"{key}.cubin", f"{name_expression(kernel, element_size, index_itemsize)} for sm_{arch}",
                                 lambda: compile_cubin(kernel, element_size, index_itemsize, arch))
        _cubins[key] = entry
        return entry


def _read_or_compile(path, what, compile_image):
    """``(image, lowered name)`` from the cache file ``path``, else from ``compile_image()``, then written there."""
    entry = _read_cache_file(path)
    if entry is None:
        logger.info("trt-scatter: compiling %s", what)
        entry = compile_image()
        _write_cache_file(path, *entry)
    return entry


# ---------------------------------------------------------------------------------------------
# Driver


_driver_module = None
_driver_lock = threading.Lock()


def driver() -> ModuleType:
    """``cuda.bindings.driver`` after a successful ``cuInit``, or CudaUnavailableError saying why."""
    global _driver_module
    if _driver_module is not None:
        return _driver_module
    with _driver_lock:
        if _driver_module is not None:
            return _driver_module
        try:
            module = _binding("driver")
        except ImportError as error:
            raise CudaUnavailableError(f"the CUDA driver is unavailable: cuda-python is not installed ({error})") from error
        try:
            (err,) = module.cuInit(0)
        except Exception as error:  # libcuda.so not found: no driver on this machine
            raise CudaUnavailableError(f"the CUDA driver is unavailable: {error}") from error
        if err != module.CUresult.CUDA_SUCCESS:
            raise CudaUnavailableError(f"the CUDA driver is unavailable: cuInit failed with {_result_name(err)}")
        _driver_module = module
        return module


def check(result: tuple, what: str) -> Any:
    """Unpacks a cuda-python driver result ``(err, *values)``; raises CudaError naming ``what``."""
    err, *values = result
    if err != driver().CUresult.CUDA_SUCCESS:
        raise CudaError(f"{what} failed: {_result_name(err)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


class _ContextState:
    """What one CUDA context needs remembered: the context, its arch, SM count and loaded functions."""

    def __init__(self, context, arch, sm_count):
        self.context, self.arch, self.sm_count, self.functions = context, arch, sm_count, {}


_contexts = {}


class _made_current:
    """Makes ``context`` current on this thread for a block (pushed and popped if another one is)."""

    def __init__(self, cuda, context):
        self.cuda, self.context, self.pushed = cuda, context, False

    def __enter__(self):
        if int(check(self.cuda.cuCtxGetCurrent(), "cuCtxGetCurrent")) != int(self.context):
            check(self.cuda.cuCtxPushCurrent(self.context), "cuCtxPushCurrent")
            self.pushed = True

    def __exit__(self, *exc):
        if self.pushed:
            check(self.cuda.cuCtxPopCurrent(), "cuCtxPopCurrent")


def _context(stream=None):
    """The state of ``stream``'s own context; without a stream (or for the legacy stream when no
    context is current), the current context, else the primary context of device 0 made current.

    The stream's context, not the current one: TensorRT may call ``enqueue`` on a thread where
    another context (or none) is current, and a function loaded in another context cannot launch there.
    """
    cuda = driver()
    context = None
    if stream is not None:
        err, context = cuda.cuStreamGetCtx(stream)
        if err == cuda.CUresult.CUDA_ERROR_INVALID_CONTEXT:  # the legacy stream, no context current
            context = None
        else:
            check((err,), "cuStreamGetCtx")
    if context is None or int(context) == 0:
        context = check(cuda.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if int(context) == 0:
            device = check(cuda.cuDeviceGet(0), "cuDeviceGet")
            context = check(cuda.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
            check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    handle = int(context)
    state = _contexts.get(handle)
    if state is None:
        with _made_current(cuda, context):
            device = check(cuda.cuCtxGetDevice(), "cuCtxGetDevice")
        attribute = cuda.CUdevice_attribute
        major = check(cuda.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "cuDeviceGetAttribute")
        minor = check(cuda.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "cuDeviceGetAttribute")
        sms = check(cuda.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device), "cuDeviceGetAttribute")
        state = _contexts[handle] = _ContextState(context, 10 * major + minor, sms)
    return state


def device_arch() -> int:
    """The current device's compute capability as an int (90 for sm_90)."""
    return _context().arch


def sm_count() -> int:
    return _context().sm_count


_functions_lock = threading.Lock()


def kernel(name: str, element_size: int, index_itemsize: int | None = None, stream: int | None = None) -> tuple[CUfunction, int]:
    """``(CUfunction, SM count)`` of one instantiation in ``stream``'s context (without a stream:
    the current one), compiled and loaded on first use; one context lookup serves both."""
    state = _context(stream)
    key = (name, element_size, index_itemsize)
    found = state.functions.get(key)
    if found is None:
        with _functions_lock:  # enqueue may run on several threads: load each module once
            found = state.functions.get(key)
            if found is None:
                cuda = driver()
                image, lowered = cubin(name, element_size, index_itemsize, target_arch(state.arch))
                with _made_current(cuda, state.context):
                    module = check(cuda.cuModuleLoadData(image), f"cuModuleLoadData({lowered})")
                found = check(cuda.cuModuleGetFunction(module, lowered.encode()), f"cuModuleGetFunction({lowered})")
                state.functions[key] = found
    return found, state.sm_count


def load_aot_ptx(name: str, element_size: int, index_itemsize: int | None = None) -> CUfunction:
    """Loads the PTX of an AOT entry point (what an engine built with the AOT plugins carries) through
    the driver's JIT into the current context; returns the CUfunction. A driver older than the NVRTC
    that wrote the PTX rejects its ISA version: the CudaError then names that version."""
    _context()
    cuda = driver()
    lowered, ptx = aot_ptx(name, element_size, index_itemsize)
    module = check(cuda.cuModuleLoadData(ptx.encode() + b"\0"), f"cuModuleLoadData(PTX ISA {ptx_isa_version(ptx)} of {lowered})")
    return check(cuda.cuModuleGetFunction(module, lowered.encode()), f"cuModuleGetFunction({lowered})")


def target_arch(device_arch: int, supported: Sequence[int] | None = None) -> int:
    """The arch to build a CUBIN for: the device's own, else (an NVRTC that does not know it) the
    newest supported one of the same major version not above it, which the device also runs."""
    if supported is None:
        supported = nvrtc().nvrtcGetSupportedArchs()[1]
    if device_arch in supported:
        return device_arch
    same_major = [arch for arch in supported if arch // 10 == device_arch // 10 and arch <= device_arch]
    if not same_major:
        raise CudaError(f"NVRTC {nvrtc_version()} cannot build for sm_{device_arch} (supported: {sorted(supported)})")
    return max(same_major)


def launch(kernel_function: CUfunction, grid: int, block: int, stream: int, params_address: int) -> None:
    """``cuLaunchKernel`` with ``kernelParams`` = the address of a ``void*[]`` array."""
    check(driver().cuLaunchKernel(kernel_function, grid, 1, 1, block, 1, 1, 0, stream, params_address, 0), "cuLaunchKernel")


def memset_u32_async(address: int, value: int, count: int, stream: int) -> None:
    check(driver().cuMemsetD32Async(address, value, count, stream), "cuMemsetD32Async")


def memcpy_dtod_async(destination: int, source: int, nbytes: int, stream: int) -> None:
    check(driver().cuMemcpyDtoDAsync(destination, source, nbytes, stream), "cuMemcpyDtoDAsync")


def memcpy_dtoh(host_address: int, source: int, nbytes: int) -> None:
    check(driver().cuMemcpyDtoH(host_address, source, nbytes), "cuMemcpyDtoH")


def stream_synchronize(stream: int) -> None:
    check(driver().cuStreamSynchronize(stream), "cuStreamSynchronize")


def stream_is_capturing(stream: int) -> bool:
    """True while ``stream`` is being captured into a CUDA graph, when waiting for it is illegal."""
    cuda = driver()
    err, status = cuda.cuStreamIsCapturing(stream)
    if err == cuda.CUresult.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:  # the legacy stream while another one captures
        return True
    check((err,), "cuStreamIsCapturing")
    return status != cuda.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
