"""Launching the SliceScatter and ScatterUpdate kernels: the API that plugin ``enqueue`` and the GPU
check script use.

Pointers are device addresses as Python ints, shapes are tuples of ints, ``stream`` is the
``cudaStream_t`` handle as an int (what TensorRT passes to ``enqueue``). Every launch is
asynchronous on ``stream``: an optional zeroing of the error counter, the copy of ``data`` into
``output`` unless in place (``data == 0``), then one kernel. Host-known arguments (element size,
itemsizes, ranks) are checked here and raise :class:`~trt_scatter.oracle.ScatterInputError`;
everything read from device memory (start/stop/step/axes/axis/indices) is checked by the kernel,
which writes nothing wrong and counts each problem in ``error_flag`` (see :func:`check_error_flag`).

Each op has two kernel entry points around one body (see scatter_common.cuh):

- ``launch_slice_scatter`` / ``launch_scatter_update``: the Python plugins' entry, one by-value
  argument struct (``SliceScatterArgs`` / ``ScatterUpdateArgs`` below);
- ``launch_slice_scatter_aot`` / ``launch_scatter_update_aot``: the entry that TensorRT launches
  from an engine built with the AOT plugins (:mod:`trt_scatter.plugins.aot`), called here exactly
  as TensorRT calls it: the input pointers, the int32 scalars of :func:`slice_scatter_aot_scalars`
  / :func:`scatter_update_aot_scalars`, the output pointer, on the grid of :func:`aot_grid` (from a
  CUBIN, like every launch here; :func:`trt_scatter.plugins.cuda.load_aot_ptx` checks the PTX an
  engine carries). No error counter: TensorRT gives AOT kernels no workspace.

The AOT scalars and grid are plain functions of the shapes, written once for ints (here, and in the
CPU tests) and for TensorRT's symbolic shape expressions (the registration passes its own ``ops``).

Importing this module needs no GPU; the first launch compiles (NVRTC) and loads the kernel.
"""

import ctypes
import math
import os
import struct

from trt_scatter.log import logger
from trt_scatter.oracle.rules import ScatterInputError

from . import cuda

ELEMENT_SIZES = (1, 2, 4, 8)
INDEX_ITEMSIZES = (4, 8)
MAX_RANK = 8
BLOCK = 256
BLOCKS_PER_SM = 8
DEBUG_ENV = "TRT_SCATTER_DEBUG"
# AOT form: TensorRT passes shapes as int32 kernel arguments (NvInferPythonPlugin.h, PluginArgDataType),
# and sizes the grid without knowing the GPU: a fixed cap of 8 blocks on each of 256 SMs (H100: 132,
# B200: 148) fills any current GPU; the kernels grid-stride, so any grid is correct.
AOT_MAX_DIM = 2**31 - 1
AOT_MAX_BLOCKS = 2048
AOT_LIMITS = f"the AOT form passes shapes as int32: every dimension below 2**31, rank at most {MAX_RANK}"

# The driver backend: plugins.cuda on a GPU. Tests substitute an object with the same functions
# (kernel, memset_u32_async, memcpy_dtod_async, launch, stream_synchronize, stream_is_capturing,
# memcpy_dtoh) that runs the kernels on the CPU (tests/kernel_shim/host.py).
device = cuda

_Shape = ctypes.c_int64 * MAX_RANK


class SliceScatterArgs(ctypes.Structure):
    """Mirror of ``SliceScatterArgs`` in scatter_common.cuh (the kernel's one by-value parameter).

    Launches pack it with the equivalent ``struct`` layout below (several times faster than
    building this object); this mirror documents the layout and decodes packed bytes in tests.
    """

    _fields_ = [
        ("output", ctypes.c_void_p),
        ("updates", ctypes.c_void_p),
        ("start", ctypes.c_void_p),
        ("stop", ctypes.c_void_p),
        ("step", ctypes.c_void_p),
        ("axes", ctypes.c_void_p),
        ("error_flag", ctypes.c_void_p),
        ("data_shape", _Shape),
        ("updates_shape", _Shape),
        ("rank", ctypes.c_int32),
        ("num_axes", ctypes.c_int32),
        ("param_itemsize", ctypes.c_int32),
        ("axes_itemsize", ctypes.c_int32),
    ]


class ScatterUpdateArgs(ctypes.Structure):
    """Mirror of ``ScatterUpdateArgs`` in scatter_common.cuh."""

    _fields_ = [
        ("output", ctypes.c_void_p),
        ("updates", ctypes.c_void_p),
        ("indices", ctypes.c_void_p),
        ("axis", ctypes.c_void_p),
        ("error_flag", ctypes.c_void_p),
        ("data_shape", _Shape),
        ("indices_shape", _Shape),
        ("updates_shape", _Shape),
        ("data_rank", ctypes.c_int32),
        ("indices_rank", ctypes.c_int32),
        ("updates_rank", ctypes.c_int32),
        ("axis_itemsize", ctypes.c_int32),
    ]


_SLICE_SCATTER_LAYOUT = struct.Struct(f"<7Q{2 * MAX_RANK}q4i")
_SCATTER_UPDATE_LAYOUT = struct.Struct(f"<5Q{3 * MAX_RANK}q4i")
_ZEROS = (0,) * MAX_RANK


def debug_enabled():
    """True when ``TRT_SCATTER_DEBUG=1``: callers then check the error counter after each launch."""
    return os.environ.get(DEBUG_ENV, "0") == "1"


def _choice(op, name, value, choices, unit=""):
    if value not in choices:
        raise ScatterInputError(op, name, f"must be one of {', '.join(map(str, choices))}{unit}", value)
    return value


def _shape(op, name, shape, min_rank=1):
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


def _pointers(op, **pointers):
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


def _needed(op, name, pointer, elements):
    """A null pointer is fine only for a tensor without elements (TensorRT may pass null for those)."""
    if elements and not pointer:
        raise ScatterInputError(op, name, "must be a device address (not null) when it has elements", pointer)


def _padded(shape):
    return shape + _ZEROS[len(shape):]


def _slice_scatter_checked(op, *, output, updates, start, stop, step, axes, num_axes, data_shape, updates_shape,
                           element_size, param_itemsize, axes_itemsize, error_flag=0):
    """Checks the host-known arguments of a SliceScatter launch; returns (pointers, data_shape, updates_shape)."""
    _choice(op, "element_size", element_size, ELEMENT_SIZES, " bytes")
    _choice(op, "param_itemsize", param_itemsize, INDEX_ITEMSIZES, " bytes")
    if axes:
        _choice(op, "axes_itemsize", axes_itemsize, INDEX_ITEMSIZES, " bytes")
    data_shape = _shape(op, "data_shape", data_shape)
    updates_shape = _shape(op, "updates_shape", updates_shape)
    if len(updates_shape) != len(data_shape):
        raise ScatterInputError(op, "updates_shape", f"must have the rank of data_shape ({len(data_shape)})", f"shape {updates_shape}")
    if isinstance(num_axes, bool) or not isinstance(num_axes, int) or num_axes < 0:
        raise ScatterInputError(op, "num_axes", "must be a non-negative int", num_axes)
    if num_axes and not (start and stop and step):
        raise ScatterInputError(op, "start/stop/step", "must be device addresses when num_axes > 0", (start, stop, step))
    _needed(op, "output", output, math.prod(data_shape))
    _needed(op, "updates", updates, math.prod(updates_shape))
    pointers = _pointers(op, output=output or 0, updates=updates or 0, start=start or 0, stop=stop or 0, step=step or 0,
                         axes=axes or 0, error_flag=error_flag or 0)
    return pointers, data_shape, updates_shape


def slice_scatter_args(*, output, updates, start, stop, step, axes, num_axes, data_shape, updates_shape,
                       element_size, param_itemsize, axes_itemsize, error_flag):
    """Checks the host-known arguments of a SliceScatter launch; returns the kernel's parameter
    (the bytes of a ``SliceScatterArgs``)."""
    pointers, data_shape, updates_shape = _slice_scatter_checked(
        "launch_slice_scatter", output=output, updates=updates, start=start, stop=stop, step=step, axes=axes,
        num_axes=num_axes, data_shape=data_shape, updates_shape=updates_shape, element_size=element_size,
        param_itemsize=param_itemsize, axes_itemsize=axes_itemsize, error_flag=error_flag)
    return _SLICE_SCATTER_LAYOUT.pack(*pointers, *_padded(data_shape), *_padded(updates_shape), len(data_shape),
                                      num_axes, param_itemsize, axes_itemsize if axes else 0)


def _scatter_update_checked(op, *, output, indices, updates, axis, data_shape, indices_shape, element_size,
                            index_itemsize, axis_itemsize, updates_shape, error_flag=0):
    """Checks the host-known arguments of a ScatterUpdate launch; returns (pointers, data, indices, updates shapes)."""
    _choice(op, "element_size", element_size, ELEMENT_SIZES, " bytes")
    _choice(op, "index_itemsize", index_itemsize, INDEX_ITEMSIZES, " bytes")
    _choice(op, "axis_itemsize", axis_itemsize, INDEX_ITEMSIZES, " bytes")
    data_shape = _shape(op, "data_shape", data_shape)
    indices_shape = _shape(op, "indices_shape", indices_shape, min_rank=0)
    updates_shape = _shape(op, "updates_shape", updates_shape, min_rank=0)
    if not axis:
        raise ScatterInputError(op, "axis", "must be a device address", axis)
    _needed(op, "indices", indices, math.prod(indices_shape))
    _needed(op, "output", output, math.prod(data_shape))
    _needed(op, "updates", updates, math.prod(updates_shape))
    pointers = _pointers(op, output=output or 0, updates=updates or 0, indices=indices or 0, axis=axis,
                         error_flag=error_flag or 0)
    return pointers, data_shape, indices_shape, updates_shape


def scatter_update_args(*, output, indices, updates, axis, data_shape, indices_shape, element_size,
                        index_itemsize, axis_itemsize, error_flag, updates_shape):
    """Checks the host-known arguments of a ScatterUpdate launch; returns the kernel's parameter
    (the bytes of a ``ScatterUpdateArgs``)."""
    pointers, data_shape, indices_shape, updates_shape = _scatter_update_checked(
        "launch_scatter_update", output=output, indices=indices, updates=updates, axis=axis, data_shape=data_shape,
        indices_shape=indices_shape, element_size=element_size, index_itemsize=index_itemsize,
        axis_itemsize=axis_itemsize, updates_shape=updates_shape, error_flag=error_flag)
    return _SCATTER_UPDATE_LAYOUT.pack(*pointers, *_padded(data_shape), *_padded(indices_shape), *_padded(updates_shape),
                                       len(data_shape), len(indices_shape), len(updates_shape), axis_itemsize)


# ---------------------------------------------------------------------------------------------
# The AOT entry points' argument lists (shape -> scalars, shape -> grid), for ints and shape expressions


class IntegerOps:
    """The arithmetic :func:`aot_grid` and :func:`slice_scatter_axes_count` need, on Python ints.
    plugins/aot.py has the same methods on TensorRT's shape expressions (``tensorrt.plugin``)."""

    @staticmethod
    def mul(a, b):
        return a * b

    @staticmethod
    def cdiv(a, b):
        return -(-a // b)

    @staticmethod
    def min(a, b):
        return min(a, b)

    @staticmethod
    def max(a, b):
        return max(a, b)

    @staticmethod
    def eq(a, b):
        return int(a == b)

    @staticmethod
    def add(a, b):
        return a + b


def _product(shape, ops):
    result = 1
    for dim in shape:
        result = ops.mul(result, dim)
    return result


def aot_grid(updates_shape, ops=IntegerOps):
    """Blocks of :data:`BLOCK` threads for an AOT launch: one per ``BLOCK`` updated elements, at least
    1, at most :data:`AOT_MAX_BLOCKS` (the kernels grid-stride, so any grid is correct)."""
    work = _product(updates_shape, ops)
    return ops.max(1, ops.min(ops.cdiv(work, BLOCK), AOT_MAX_BLOCKS))


def slice_scatter_axes_count(lengths, ops=IntegerOps):
    """The ``axes_count`` scalar of the SliceScatter AOT entry, from the lengths of start, stop, step and
    axes: 1 + their common length, or 0 when they differ at run time (the kernel then writes nothing).
    TensorRT cannot check dynamic lengths before the launch (the Python plugin checks them on the
    host), and its shape expressions are sizes, so the code has no negative value."""
    count = lengths[0]
    same = 1
    for length in lengths[1:]:
        same = ops.mul(same, ops.eq(length, count))
    return ops.mul(same, ops.add(count, 1))


def _padded_list(shape):
    return list(shape) + [0] * (MAX_RANK - len(shape))


def slice_scatter_aot_scalars(*, data_shape, updates_shape, axes_count, param_itemsize, axes_itemsize):
    """The int32 scalars of ``slice_scatter_aot`` (after its six input pointers, before the output), in
    order: rank, axes_count, param_itemsize, axes_itemsize, data's 8 dimensions, updates' 8 (0-padded).
    Shapes may hold ints or shape expressions; ``axes_count`` from :func:`slice_scatter_axes_count`."""
    return [len(data_shape), axes_count, param_itemsize, axes_itemsize, *_padded_list(data_shape), *_padded_list(updates_shape)]


def scatter_update_aot_scalars(*, data_shape, indices_shape, updates_shape, axis_itemsize):
    """The int32 scalars of ``scatter_update_aot`` (after its four input pointers), in order: the ranks
    of data, indices and updates, axis_itemsize, then the three shapes, 8 dimensions each (0-padded)."""
    return [len(data_shape), len(indices_shape), len(updates_shape), axis_itemsize,
            *_padded_list(data_shape), *_padded_list(indices_shape), *_padded_list(updates_shape)]


def check_aot_limits(op, shapes):
    """Raises ScatterInputError naming the first shape (``{name: dims}``, ints; the largest a dynamic
    dimension may take) that the AOT form cannot pass: :data:`AOT_LIMITS`."""
    for name, shape in shapes.items():
        shape = tuple(shape)
        if len(shape) > MAX_RANK or any(dim > AOT_MAX_DIM for dim in shape):
            raise ScatterInputError(op, name, f"does not fit the AOT form ({AOT_LIMITS})", f"shape {shape}")


def grid_size(elements, sm_count):
    """Blocks for ``elements`` work items: one per item up to a few waves (the loops grid-stride)."""
    return max(1, min(-(-elements // BLOCK), sm_count * BLOCKS_PER_SM))


def prepare(kernel, element_size, index_itemsize=None):
    """Compiles (or reads from the kernel cache) and loads one kernel into the current CUDA context
    now, so that launches need neither NVRTC nor a module load: plugins call it from
    ``on_shape_change``, before the first ``enqueue``, which may be inside a CUDA-graph capture.
    ``kernel`` is "slice_scatter" or "scatter_update" (``index_itemsize``: 4 or 8). Without a usable
    CUDA driver it does nothing: the launch itself then raises the reason.
    """
    try:
        device.kernel(kernel, element_size, index_itemsize)
    except cuda.CudaUnavailableError as error:
        logger.debug("trt-scatter: %s not loaded ahead of its launch: %s", kernel, error)


def _launch(kernel, element_size, index_itemsize, args, *, output, data, data_bytes, work, error_flag, stream):
    function, sm_count = device.kernel(kernel, element_size, index_itemsize, stream)
    if error_flag:
        device.memset_u32_async(error_flag, 0, 1, stream)
    if data and data != output and data_bytes:
        device.memcpy_dtod_async(output, data, data_bytes, stream)
    # cuLaunchKernel copies the parameters before it returns: these buffers may then go.
    packed = ctypes.create_string_buffer(args, len(args))
    params = (ctypes.c_void_p * 1)(ctypes.addressof(packed))
    device.launch(function, grid_size(work, sm_count), BLOCK, stream, ctypes.addressof(params))


def launch_slice_scatter(*, output, data, updates, start, stop, step, axes, num_axes, data_shape, updates_shape,
                         element_size, param_itemsize, axes_itemsize, error_flag, stream):
    """SliceScatter on ``stream``: ``output`` = ``data`` with ``updates`` in the slice start:stop:step over axes.

    ``data == 0``: in place (``output`` already holds data). ``start``/``stop``/``step`` point at
    ``num_axes`` ints of ``param_itemsize`` bytes, ``axes`` at as many of ``axes_itemsize`` bytes
    (``axes == 0``: axes 0..num_axes-1). If the slice they describe (clamped as
    ``oracle.slice_geometry`` does) does not have ``updates_shape``, or the axes or steps are
    invalid, nothing is written and ``error_flag`` (a device uint32, or 0) counts 1.
    """
    args = slice_scatter_args(output=output, updates=updates, start=start, stop=stop, step=step, axes=axes,
                              num_axes=num_axes, data_shape=data_shape, updates_shape=updates_shape,
                              element_size=element_size, param_itemsize=param_itemsize,
                              axes_itemsize=axes_itemsize, error_flag=error_flag)
    _launch("slice_scatter", element_size, None, args, output=output, data=data,
            data_bytes=math.prod(data_shape) * element_size, work=math.prod(updates_shape), error_flag=error_flag,
            stream=stream)


def launch_scatter_update(*, output, data, indices, updates, axis, data_shape, indices_shape, element_size,
                          index_itemsize, axis_itemsize, error_flag, stream, updates_shape):
    """ScatterUpdate on ``stream``: ``output`` = ``data`` with the slices at ``indices`` along ``axis`` replaced.

    ``data == 0``: in place. ``axis`` points at one int of ``axis_itemsize`` bytes (in [-r, r-1],
    normalized on the device). Each index outside [0, data_shape[axis]-1] is skipped and counted
    in ``error_flag``. ``updates_shape`` (optional, recommended): the kernel then checks it against
    ``data_shape[:axis] + indices_shape + data_shape[axis+1:]`` for the device's axis and writes
    nothing (counting 1) if it differs, so a wrong axis can never make it read past ``updates``.
    """
    args = scatter_update_args(output=output, indices=indices, updates=updates, axis=axis, data_shape=data_shape,
                               indices_shape=indices_shape, element_size=element_size,
                               index_itemsize=index_itemsize, axis_itemsize=axis_itemsize, error_flag=error_flag,
                               updates_shape=updates_shape)
    # Any grid is correct (the kernel grid-strides); the work only sizes it.
    work = math.prod(updates_shape if updates_shape is not None else data_shape)
    _launch("scatter_update", element_size, index_itemsize, args, output=output, data=data,
            data_bytes=math.prod(data_shape) * element_size, work=work, error_flag=error_flag, stream=stream)


def _launch_aot(kernel, element_size, index_itemsize, inputs, scalars, *, output, data, data_bytes, grid, stream):
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


def launch_slice_scatter_aot(*, output, data, updates, start, stop, step, axes, num_axes, data_shape, updates_shape,
                             element_size, param_itemsize, axes_itemsize, stream):
    """:func:`launch_slice_scatter` through the AOT entry point ``slice_scatter_aot``, launched as an engine
    built with :mod:`trt_scatter.plugins.aot` launches it (same arguments, no ``error_flag``: invalid
    geometry writes nothing and counts nothing). Shapes must fit :data:`AOT_LIMITS`."""
    op = "launch_slice_scatter_aot"
    (output, updates, start, stop, step, axes, _), data_shape, updates_shape = _slice_scatter_checked(
        op, output=output, updates=updates, start=start, stop=stop, step=step, axes=axes, num_axes=num_axes,
        data_shape=data_shape, updates_shape=updates_shape, element_size=element_size,
        param_itemsize=param_itemsize, axes_itemsize=axes_itemsize)
    check_aot_limits(op, {"data_shape": data_shape, "updates_shape": updates_shape})
    scalars = slice_scatter_aot_scalars(data_shape=data_shape, updates_shape=updates_shape, axes_count=num_axes + 1,
                                        param_itemsize=param_itemsize, axes_itemsize=axes_itemsize if axes else 0)
    _launch_aot("slice_scatter_aot", element_size, None, [output, updates, start, stop, step, axes], scalars,
                output=output, data=data, data_bytes=math.prod(data_shape) * element_size,
                grid=aot_grid(updates_shape), stream=stream)


def launch_scatter_update_aot(*, output, data, indices, updates, axis, data_shape, indices_shape, element_size,
                              index_itemsize, axis_itemsize, stream, updates_shape):
    """:func:`launch_scatter_update` through the AOT entry point ``scatter_update_aot`` (see
    :func:`launch_slice_scatter_aot`): out-of-range indices are skipped, not counted."""
    op = "launch_scatter_update_aot"
    (output, updates, indices, axis, _), data_shape, indices_shape, updates_shape = _scatter_update_checked(
        op, output=output, indices=indices, updates=updates, axis=axis, data_shape=data_shape,
        indices_shape=indices_shape, element_size=element_size, index_itemsize=index_itemsize,
        axis_itemsize=axis_itemsize, updates_shape=updates_shape)
    check_aot_limits(op, {"data_shape": data_shape, "indices_shape": indices_shape, "updates_shape": updates_shape})
    scalars = scatter_update_aot_scalars(data_shape=data_shape, indices_shape=indices_shape,
                                         updates_shape=updates_shape, axis_itemsize=axis_itemsize)
    _launch_aot("scatter_update_aot", element_size, index_itemsize, [output, indices, updates, axis], scalars,
                output=output, data=data, data_bytes=math.prod(data_shape) * element_size,
                grid=aot_grid(updates_shape), stream=stream)


_warned_capture = False


def check_error_flag(error_flag, stream):
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
