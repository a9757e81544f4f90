"""Launching the kernels: what every op's launch shares (each op's own is ``plugins/<key>.py``).

Pointers are device addresses as Python ints, shapes are tuples of ints, ``stream`` is the
``cudaStream_t`` handle as an int (what TensorRT passes to ``enqueue``). Every launch is
asynchronous on ``stream``: an optional zeroing of the error counter, the copy of ``data`` into
``output`` unless in place (``data == 0``), then one kernel. Host-known arguments (element size,
itemsizes, ranks) are checked here and raise :class:`~trt_scatter.oracle.ScatterInputError`;
everything read from device memory (start/stop/step/axes/axis/indices) is checked by the kernel,
which writes nothing wrong and counts each problem in ``error_flag`` (see :func:`check_error_flag`).

Each op has two kernel entry points around one body (see scatter_common.cuh), launched by
:func:`launch` (or :func:`launch_sequence`, several launches of it) and :func:`launch_aot`:

- ``<key>``: the Python plugins' entry, one by-value argument struct (packed by the op's module);
- ``<key>_aot``: the entry that TensorRT launches from an engine built with the AOT plugins
  (:mod:`trt_scatter.plugins.aot`), called here exactly as TensorRT calls it: the input pointers,
  the op's int32 scalars, the output pointer, on the grid of :func:`aot_grid` (from a CUBIN, like
  every launch here; :func:`trt_scatter.plugins.cuda.load_aot_ptx` checks the PTX an engine
  carries). No error counter: TensorRT gives AOT kernels no workspace.

The AOT scalars and grid are plain functions of the shapes, written once for ints (here, and in the
CPU tests) and for TensorRT's symbolic shape expressions (the registration passes its own ``ops``).

Importing this module needs no GPU; the first launch compiles (NVRTC) and loads the kernel.
"""

from __future__ import annotations

import collections
import ctypes
import importlib
from typing import TYPE_CHECKING, Any

from trt_scatter.log import env_flag, logger
from trt_scatter.oracle.rules import ScatterInputError

from . import cuda

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import ModuleType

    import tensorrt.plugin as trtp

    from trt_scatter.ops import Op

ELEMENT_SIZES = (1, 2, 4, 8)
INDEX_ITEMSIZES = (4, 8)
MAX_RANK = 8
BLOCK = 256
BLOCKS_PER_SM = 8
DEBUG_ENV = "TRT_SCATTER_DEBUG"
# AOT form: TensorRT passes shapes as int32 kernel arguments (NvInferPythonPlugin.h, PluginArgDataType),
# and sizes the grid without knowing the GPU: a fixed cap of 8 blocks on each of 128 SMs, one wave on an
# H100 or H200 (132 SMs). The kernels grid-stride, so any grid is correct, but blocks beyond one wave cost
# time even with no work: a cap of 2048 took 2-3 us more per launch than the Python entry's one wave
# (bench/results/gpu_check_h200_2026-11-26_1d0f1e4).
AOT_MAX_DIM = 2**31 - 1
AOT_MAX_BLOCKS = 1024
AOT_LIMITS = f"the AOT form passes shapes as int32: every dimension below 2**31, rank at most {MAX_RANK}"

# The driver backend: plugins.cuda on a GPU. Tests substitute an object with the same functions
# (kernel, memset_u32_async, memcpy_dtod_async, launch, stream_synchronize, stream_is_capturing,
# memcpy_dtoh) that runs the kernels on the CPU (tests/kernel_shim/host.py).
device = cuda

Shape = ctypes.c_int64 * MAX_RANK  #: a shape in the kernels' argument structs
AOT_SUFFIX = cuda.AOT_SUFFIX


def module(op: Op) -> ModuleType:
    """The kernel module of a ``trt_scatter`` op: ``trt_scatter.plugins.<op.key>`` (needs no TensorRT)."""
    return importlib.import_module(f"{__package__}.{op.key}")


class PluginError(RuntimeError):
    """A plugin cannot be created, registered or used as asked; the message says what to do instead."""


_counted_errors = []  # what enqueue counted in debug mode, newest last


def report_counted_error(message: str) -> None:
    """Records what a plugin's kernel counted in debug mode (``TRT_SCATTER_DEBUG=1``), for :func:`counted_errors`."""
    _counted_errors.append(message)


def counted_errors() -> list[str]:
    """The messages of the errors the kernels counted in debug mode since the last call (each names its op), and forgets them.

    A plugin's ``enqueue`` raises on a counted error, but TensorRT catches that exception and only
    fails the inference; this is how a caller (``trt-scatter check``) learns which op it was.
    """
    errors = list(_counted_errors)
    _counted_errors.clear()
    return errors


_refused_shapes = collections.deque(maxlen=16)  # what the plugins' shape checks refused while TensorRT built or ran them, newest last


_refusal_listeners = []  # callables told each refusal as it happens (listen_to_refusals)

#: What a Python plugin's refusal says where its sort's workspace cannot be sized (the AOT plugins need no workspace).
WORKSPACE_UNSIZED = "so the workspace its sort needs cannot be sized"


def report_refused_shapes(message: str) -> None:
    """Records a plugin's refusal of the shapes TensorRT gave it, for :func:`refused_shapes`, and tells the listeners."""
    _refused_shapes.append(message)
    for listener in _refusal_listeners:
        listener(message)


def listen_to_refusals(listener: Callable[[str], None]) -> None:
    """Has ``listener(message)`` told each refusal of the plugins' shape checks from now on in this process: a build
    that TensorRT then aborts (it does, after a refusal in a model of two such plugins) ends before anyone could ask
    :func:`refused_shapes`."""
    _refusal_listeners.append(listener)


def refused_shapes() -> list[str]:
    """What the plugins' shape checks refused since the last call (each names its op and the rule), and forgets them.

    TensorRT catches a plugin's exception and says only that "output shape computation failed with a non-zero return
    code"; this is how a caller (:func:`trt_scatter.engine.build_engine`) learns the rule a profile's shapes broke.
    """
    refused = list(_refused_shapes)
    _refused_shapes.clear()
    return refused


def debug_enabled() -> bool:
    """True when ``TRT_SCATTER_DEBUG=1`` (or another value :func:`trt_scatter.log.env_flag` reads as on): callers then
    check the error counter after each launch."""
    return env_flag(DEBUG_ENV)


def choice(op: str, name: str, value: int | str, choices: Sequence[int | str], unit: str = "") -> int | str:
    """``value``, one of ``choices``; a ScatterInputError naming ``name`` otherwise."""
    if value not in choices:
        raise ScatterInputError(op, name, f"must be one of {', '.join(map(str, choices))}{unit}", value)
    return value


def checked_shape(op: str, name: str, shape: Sequence[int], min_rank: int = 1) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative ints of rank ``min_rank``..:data:`MAX_RANK`; a ScatterInputError otherwise."""
    shape = tuple(shape)
    if not min_rank <= len(shape) <= MAX_RANK:
        raise ScatterInputError(op, name, f"must have rank {min_rank}..{MAX_RANK}", f"shape {shape}")
    try:
        negative = bool(shape) and min(shape) < 0
    except TypeError:
        negative = True
    if negative or not all(type(dim) is int or _is_int(dim) for dim in shape):
        raise ScatterInputError(op, name, "must be a tuple of non-negative ints", f"shape {shape}")
    return shape


def _is_int(value):
    return hasattr(value, "__index__") and not isinstance(value, bool)


def pointers(op: str, **pointers: int) -> list[int]:
    """The device addresses as ints in [0, 2**64) (what TensorRT passes: ints)."""
    values = list(pointers.values())
    if all(type(pointer) is int and 0 <= pointer < 1 << 64 for pointer in values):  # every launch: keep it short
        return values
    values = []
    for name, pointer in pointers.items():
        if not _is_int(pointer) or not 0 <= int(pointer) < 1 << 64:
            raise ScatterInputError(op, name, "must be a device address (an int)", repr(pointer))
        values.append(int(pointer))
    return values


def needed(op: str, name: str, pointer: int, elements: int) -> None:
    """A null pointer is fine only for a tensor without elements (TensorRT may pass null for those)."""
    if elements and not pointer:
        raise ScatterInputError(op, name, "must be a device address (not null) when it has elements", pointer)


def padded(shape: Sequence[int | trtp.ShapeExpr]) -> list[int | trtp.ShapeExpr]:
    """A shape's dimensions and zeros up to :data:`MAX_RANK` (ints, or shape expressions), as a list."""
    return list(shape) + [0] * (MAX_RANK - len(shape))


# ---------------------------------------------------------------------------------------------
# The AOT entry points' argument lists (shape -> scalars, shape -> grid), for ints and shape expressions


class IntegerOps:
    """The arithmetic :func:`aot_grid` and the ops' AOT scalars need, on Python ints.
    plugins/aot.py has the same methods on TensorRT's shape expressions (``tensorrt.plugin``)."""

    @staticmethod
    def mul(a: int, b: int) -> int:
        return a * b

    @staticmethod
    def cdiv(a: int, b: int) -> int:
        return -(-a // b)

    @staticmethod
    def min(a: int, b: int) -> int:
        return min(a, b)

    @staticmethod
    def max(a: int, b: int) -> int:
        return max(a, b)

    @staticmethod
    def eq(a: int, b: int) -> int:
        return int(a == b)

    @staticmethod
    def add(a: int, b: int) -> int:
        return a + b


def _product(shape, ops):
    result = 1
    for dim in shape:
        result = ops.mul(result, dim)
    return result


def aot_grid(updates_shape: Sequence[int | trtp.ShapeExpr], ops: Any = IntegerOps) -> int | trtp.ShapeExpr:
    """Blocks of :data:`BLOCK` threads for an AOT launch: one per ``BLOCK`` updated elements, at least
    1, at most :data:`AOT_MAX_BLOCKS` (the kernels grid-stride, so any grid is correct)."""
    work = _product(updates_shape, ops)
    return ops.max(1, ops.min(ops.cdiv(work, BLOCK), AOT_MAX_BLOCKS))


def check_aot_limits(op: str, shapes: dict[str, Sequence[int]]) -> None:
    """Raises ScatterInputError naming the first shape (``{name: dims}``, ints; the largest a dynamic
    dimension may take) that the AOT form cannot pass: :data:`AOT_LIMITS`."""
    for name, shape in shapes.items():
        shape = tuple(shape)
        if len(shape) > MAX_RANK or any(dim > AOT_MAX_DIM for dim in shape):
            raise ScatterInputError(op, name, f"does not fit the AOT form ({AOT_LIMITS})", f"shape {shape}")


def grid_size(elements: int, sm_count: int) -> int:
    """Blocks for ``elements`` work items: one per item up to a few waves (the loops grid-stride)."""
    return max(1, min(-(-elements // BLOCK), sm_count * BLOCKS_PER_SM))


def prepare(kernel: str, element_size: int, index_itemsize: int | None = None) -> None:
    """Compiles (or reads from the kernel cache) and loads one kernel into the current CUDA context
    now, so that launches need neither NVRTC nor a module load: plugins call it from
    ``on_shape_change``, before the first ``enqueue``, which may be inside a CUDA-graph capture.
    ``kernel`` is an op's key, e.g. "slice_scatter" (``index_itemsize``: 4 or 8 where the op's kernel is
    instantiated per index type). Without a usable
    CUDA driver it does nothing: the launch itself then raises the reason.
    """
    try:
        device.kernel(kernel, element_size, index_itemsize)
    except cuda.CudaUnavailableError as error:
        logger.debug("trt-scatter: %s not loaded ahead of its launch: %s", kernel, error)


def launch(kernel: str, element_size: int, index_itemsize: int | None, args: bytes, *, output: int, data: int, data_bytes: int, work: int, error_flag: int, stream: int) -> None:
    """A Python plugin's launch of ``kernel`` on ``stream``: the error counter zeroed (if any), ``data`` copied
    into ``output`` (unless in place), the kernel on its packed argument struct ``args``, one thread per
    item of ``work`` up to a few waves."""
    launch_sequence(kernel, element_size, index_itemsize, [(args, work)], output=output, data=data, data_bytes=data_bytes,
                    error_flag=error_flag, stream=stream)


def launch_sequence(kernel: str, element_size: int, index_itemsize: int | None, launches: Sequence[tuple[bytes, int]], *, output: int, data: int, data_bytes: int, error_flag: int, stream: int) -> None:
    """:func:`launch` of several launches of one kernel in order on ``stream``: ``launches`` holds ``(packed args,
    work)`` pairs. For work whose steps need the whole grid's results before the next one starts (a sort):
    the stream orders the launches, and the counter is zeroed and data copied once, before the first."""
    function, sm_count = device.kernel(kernel, element_size, index_itemsize, stream)
    if error_flag:
        device.memset_u32_async(error_flag, 0, 1, stream)
    if data and data != output and data_bytes:
        device.memcpy_dtod_async(output, data, data_bytes, stream)
    if not launches:
        return
    # cuLaunchKernel copies the parameters before it returns: one buffer serves every launch, and may then go.
    packed = ctypes.create_string_buffer(max(len(args) for args, _ in launches))
    params = (ctypes.c_void_p * 1)(ctypes.addressof(packed))
    for args, work in launches:
        ctypes.memmove(packed, args, len(args))
        device.launch(function, grid_size(work, sm_count), BLOCK, stream, ctypes.addressof(params))


def launch_aot(kernel: str, element_size: int, index_itemsize: int | None, inputs: Sequence[int], scalars: Sequence[int], *, output: int, data: int, data_bytes: int, grid: int, stream: int) -> None:
    """Launches an AOT entry as TensorRT does: kernelParams = the input pointers, the int32 scalars, the
    output pointer. The output is aliased with data in TensorRT; where it is not (``data`` given and
    not ``output``) the copy TensorRT would insert comes first."""
    function, _ = device.kernel(kernel, element_size, index_itemsize, stream)
    if data and data != output and data_bytes:
        device.memcpy_dtod_async(output, data, data_bytes, stream)
    values = [ctypes.c_void_p(pointer) for pointer in inputs] + [ctypes.c_int32(value) for value in scalars]
    values.append(ctypes.c_void_p(output))
    params = (ctypes.c_void_p * len(values))(*(ctypes.addressof(value) for value in values))
    device.launch(function, grid, BLOCK, stream, ctypes.addressof(params))


_warned_capture = False


def check_error_flag(error_flag: int, stream: int) -> int | None:
    """Waits for ``stream`` and returns the error count of the launches since the flag was zeroed (0 if no flag).

    While ``stream`` is being captured into a CUDA graph, nothing has run yet and waiting would end
    the capture with an error: then it returns None (the count is not read) and says so once.
    """
    global _warned_capture
    if not error_flag:
        return 0
    if device.stream_is_capturing(stream):
        if not _warned_capture:
            _warned_capture = True
            logger.warning("trt-scatter: %s=1 cannot read the kernels' error count while the stream is "
                           "being captured into a CUDA graph; launches captured there are not checked", DEBUG_ENV)
        return None
    device.stream_synchronize(stream)
    count = ctypes.c_uint32()
    device.memcpy_dtoh(ctypes.addressof(count), error_flag, 4)
    return count.value
